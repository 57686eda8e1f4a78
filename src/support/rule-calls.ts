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
