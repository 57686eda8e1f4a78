/**
 * How a rule network's DFA (a JSON Schema's pushdown form) spells "a value of rule r here": 0xFE
 * (never in UTF-8, nor a control marker's lead 0xFF) then r as two bytes. The schema stage writes
 * calls with it; the grammar stage's rule automaton reads each as a push of r, never as text.
 */

/** The byte every call's spelling starts with. */
export const RULE_CALL_LEAD = 0xfe;

/** Rules a network may have: r fits the two bytes after the lead. */
export const MAX_RULES = 0x10000;

/** The spelling of a call of rule `rule`. */
export function ruleCallBytes(rule: number): Uint8Array {
  if (!Number.isInteger(rule) || rule < 0 || rule >= MAX_RULES) throw new RangeError(`rule ${rule} out of range`);
  return Uint8Array.of(RULE_CALL_LEAD, rule >>> 8, rule & 0xff);
}

/** What reading a DFA's calls needs of it (regex/'s ByteDfa has it). */
export interface CallSpellingDfa {
  readonly numClasses: number;
  readonly byteClass: Uint8Array;
  readonly next: Int32Array;
}

const bytesOfClasses = new WeakMap<CallSpellingDfa, number[][]>();

/**
 * Each call state `q` of `dfa` spells, as visit(rule, state after the call, the states after the
 * lead and after the rule's first byte); rules from `numRules` on are passed over. The rule's two
 * bytes are found byte class by byte class, not as 65,536 pairs.
 */
export function forEachCall(
  dfa: CallSpellingDfa,
  q: number,
  numRules: number,
  visit: (rule: number, after: number, afterLead: number, afterFirst: number) => void,
): void {
  const { numClasses, byteClass, next } = dfa;
  const s1 = next[q * numClasses + byteClass[RULE_CALL_LEAD]!]!;
  if (s1 < 0) return;
  let bytesOf = bytesOfClasses.get(dfa);
  if (bytesOf === undefined) {
    bytesOf = Array.from({ length: numClasses }, () => []);
    for (let b = 0; b < 256; b++) bytesOf[byteClass[b]!]!.push(b);
    bytesOfClasses.set(dfa, bytesOf);
  }
  for (let c1 = 0; c1 < numClasses; c1++) {
    const s2 = next[s1 * numClasses + c1]!;
    if (s2 < 0) continue;
    for (let c2 = 0; c2 < numClasses; c2++) {
      const s3 = next[s2 * numClasses + c2]!;
      if (s3 < 0) continue;
      for (const hi of bytesOf[c1]!) for (const lo of bytesOf[c2]!) if (hi * 256 + lo < numRules) visit(hi * 256 + lo, s3, s1, s2);
    }
  }
}
