/** Shared fixtures for test/constraint-*.test.ts: random DFAs, small vocabularies, brute force. */
import type { ByteDfa, VocabularyBytes } from "../../src/constraint/index.js";
import { TokenKind } from "../../src/vocab/index.js";

export { seededRandom as rng } from "../../src/support/index.js";

/** A vocabulary from byte strings (kinds default Normal). */
export function makeVocab(tokens: (string | Uint8Array)[], kinds?: number[]): VocabularyBytes {
  const enc = new TextEncoder();
  const parts = tokens.map((t) => (typeof t === "string" ? enc.encode(t) : t));
  const offsets = new Uint32Array(parts.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i]! + parts[i]!.length;
  const data = new Uint8Array(offsets[parts.length]!);
  for (let i = 0; i < parts.length; i++) data.set(parts[i]!, offsets[i]!);
  return {
    size: parts.length,
    offsets,
    data,
    kinds: Uint8Array.from(kinds ?? parts.map(() => TokenKind.Normal)),
  };
}

/**
 * Builds a ByteDfa from an explicit table (numStates × numClasses), keeping only states that are
 * reachable from `start` and can reach acceptance (the regex/ contract), and filling
 * minBytesToAccept. Returns null when the start state is dead.
 */
export function finishDfa(
  numStates: number,
  numClasses: number,
  byteClass: Uint8Array,
  table: Int32Array,
  accepting: Uint8Array,
  start: number,
): ByteDfa | null {
  // Byte distances (via classes that some byte uses).
  const usedClass = new Uint8Array(numClasses);
  for (let b = 0; b < 256; b++) usedClass[byteClass[b]!] = 1;
  const dist = new Int32Array(numStates).fill(-1);
  const queue: number[] = [];
  for (let s = 0; s < numStates; s++)
    if (accepting[s]) {
      dist[s] = 0;
      queue.push(s);
    }
  while (queue.length > 0) {
    const t = queue.shift()!;
    for (let s = 0; s < numStates; s++) {
      if (dist[s] !== -1) continue;
      for (let c = 0; c < numClasses; c++) {
        if (usedClass[c] && table[s * numClasses + c] === t) {
          dist[s] = dist[t]! + 1;
          queue.push(s);
          break;
        }
      }
    }
  }
  if (dist[start] === -1) return null;
  const reach = new Uint8Array(numStates);
  const stack = [start];
  reach[start] = 1;
  while (stack.length > 0) {
    const s = stack.pop()!;
    for (let c = 0; c < numClasses; c++) {
      const t = table[s * numClasses + c]!;
      if (usedClass[c] && t >= 0 && dist[t] !== -1 && !reach[t]) {
        reach[t] = 1;
        stack.push(t);
      }
    }
  }
  const newId = new Int32Array(numStates).fill(-1);
  let n = 0;
  for (let s = 0; s < numStates; s++) if (reach[s]) newId[s] = n++;
  const next = new Int32Array(n * numClasses).fill(-1);
  const acc = new Uint8Array(n);
  const minBytes = new Int32Array(n);
  for (let s = 0; s < numStates; s++) {
    if (!reach[s]) continue;
    const ns = newId[s]!;
    acc[ns] = accepting[s]!;
    minBytes[ns] = dist[s]!;
    for (let c = 0; c < numClasses; c++) {
      const t = table[s * numClasses + c]!;
      if (usedClass[c] && t >= 0 && dist[t] !== -1) next[ns * numClasses + c] = newId[t]!;
    }
  }
  return { numStates: n, start: newId[start]!, numClasses, byteClass, next, accepting: acc, minBytesToAccept: minBytes };
}

/** Byte groups that real tokens tend to stay within, so random DFAs see long live paths. */
function byteGroup(b: number): number {
  if (b >= 0x61 && b <= 0x7a) return 0; // a-z
  if (b >= 0x41 && b <= 0x5a) return 1; // A-Z
  if (b >= 0x30 && b <= 0x39) return 2; // 0-9
  if (b === 0x20) return 3;
  if (b === 0x0a) return 4;
  if (b >= 0x80) return 5;
  if (b < 0x20) return 6;
  return 7 + (b % 3); // punctuation, split three ways
}

/** A random live DFA: classes follow byte groups (sometimes one vowel class split off). */
export function randomDfa(rand: () => number, maxStates = 8): ByteDfa {
  for (;;) {
    const numGroups = 10;
    const numClasses = 2 + Math.floor(rand() * 5);
    const groupClass = Array.from({ length: numGroups }, () => Math.floor(rand() * numClasses));
    const byteClass = new Uint8Array(256);
    const splitVowels = rand() < 0.5;
    // Sometimes classes ignore byte groups entirely (bytes scattered over classes).
    const scattered = rand() < 0.25;
    for (let b = 0; b < 256; b++) {
      byteClass[b] = scattered
        ? Math.floor(rand() * numClasses)
        : splitVowels && "aeiou".includes(String.fromCharCode(b))
          ? numClasses
          : groupClass[byteGroup(b)]!;
    }
    const classes = numClasses + (splitVowels ? 1 : 0);
    const numStates = 1 + Math.floor(rand() * maxStates);
    const table = new Int32Array(numStates * classes);
    const deadRate = 0.2 + rand() * 0.5;
    for (let i = 0; i < table.length; i++) table[i] = rand() < deadRate ? -1 : Math.floor(rand() * numStates);
    const accepting = new Uint8Array(numStates);
    for (let s = 0; s < numStates; s++) accepting[s] = rand() < 0.3 ? 1 : 0;
    const dfa = finishDfa(numStates, classes, byteClass, table, accepting, 0);
    if (dfa !== null) return dfa;
  }
}

export function runDfa(dfa: ByteDfa, state: number, bytes: Uint8Array): number {
  let s = state;
  for (let i = 0; i < bytes.length && s >= 0; i++) s = dfa.next[s * dfa.numClasses + dfa.byteClass[bytes[i]!]!]!;
  return s;
}

export function isGenerable(vocab: VocabularyBytes, id: number): boolean {
  const k = vocab.kinds[id];
  return (k === TokenKind.Normal || k === TokenKind.Byte || k === TokenKind.UserDefined) && vocab.offsets[id + 1]! > vocab.offsets[id]!;
}

/** Brute-force token transition table: trans[state][token] (−1 dead or not generable). */
export function bruteTransitions(dfa: ByteDfa, vocab: VocabularyBytes): Int32Array[] {
  const out: Int32Array[] = [];
  for (let s = 0; s < dfa.numStates; s++) {
    const row = new Int32Array(vocab.size).fill(-1);
    for (let id = 0; id < vocab.size; id++) {
      if (!isGenerable(vocab, id)) continue;
      row[id] = runDfa(dfa, s, vocab.data.subarray(vocab.offsets[id]!, vocab.offsets[id + 1]!));
    }
    out.push(row);
  }
  return out;
}

/** Brute-force minimum tokens to acceptance per state (Infinity when unreachable). */
export function bruteMinTokens(dfa: ByteDfa, trans: Int32Array[]): number[] {
  const dist = new Array<number>(dfa.numStates).fill(Infinity);
  for (let s = 0; s < dfa.numStates; s++) if (dfa.accepting[s]) dist[s] = 0;
  const targets = trans.map((row) => {
    const seen = new Set<number>();
    for (let id = 0; id < row.length; id++) if (row[id]! >= 0) seen.add(row[id]!);
    return [...seen];
  });
  for (let changed = true; changed; ) {
    changed = false;
    for (let s = 0; s < dfa.numStates; s++) {
      for (const t of targets[s]!) {
        if (dist[t]! + 1 < dist[s]!) {
          dist[s] = dist[t]! + 1;
          changed = true;
        }
      }
    }
  }
  return dist;
}

export function maskHas(mask: Uint32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

export function maskCount(mask: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) {
    let w = mask[i]!;
    while (w !== 0) {
      w &= w - 1;
      n++;
    }
  }
  return n;
}

/** First token ids where `mask` and `expected` (as predicate) disagree, for messages. */
export function maskDiff(mask: Uint32Array, size: number, expected: (id: number) => boolean, limit = 5): number[] {
  const out: number[] = [];
  for (let id = 0; id < size && out.length < limit; id++) if (maskHas(mask, id) !== expected(id)) out.push(id);
  return out;
}

/** A token of each byte that is a token by itself: texts fed byte by byte. */
export function singleByteTokens(vocab: { size: number; tokenBytes(id: number): Uint8Array }): Map<number, number> {
  const single = new Map<number, number>();
  for (let t = 0; t < vocab.size; t++) {
    const b = vocab.tokenBytes(t);
    if (b.length === 1 && !single.has(b[0]!)) single.set(b[0]!, t);
  }
  return single;
}

/**
 * Arithmetic with ignored whitespace (bench:grammar-mask's workload, without its aliases): a run
 * of each length is a lexer state of its own, and names and numbers end at commits.
 */
export const ARITHMETIC_GRAMMAR = `?start: sum
?sum: product | sum "+" product | sum "-" product
?product: atom | product "*" atom | product "/" atom
?atom: NUMBER | "-" atom | NAME | "(" sum ")"
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`;
