// The DFAs the regex stage makes: ByteDfa (DESIGN.md's contract) and MultiByteDfa, one DFA for
// several patterns (a lexer's), with the limit the subset construction is given.

/** Contract in DESIGN.md: a byte DFA holding only live states. */
export interface ByteDfa {
  readonly numStates: number;
  readonly start: number;
  readonly numClasses: number;
  readonly byteClass: Uint8Array;
  readonly next: Int32Array;
  readonly accepting: Uint8Array;
  readonly minBytesToAccept: Int32Array;
}

/** A DFA for several patterns at once: which patterns fully match at each state. */
export interface MultiByteDfa extends ByteDfa {
  readonly numPatterns: number;
  /** Uint32 words per state in acceptMask. */
  readonly acceptWords: number;
  /** Bit p of word (state * acceptWords + (p >>> 5)) set ⇔ pattern p fully matches here. */
  readonly acceptMask: Uint32Array;
  /**
   * Same layout: bit p set ⇔ pattern p's acceptance is still reachable from this state
   * (itself included). A lexer intersects it with the terminals its parser allows.
   */
  readonly reachMask: Uint32Array;
}

export interface DfaLimits {
  maxDfaStates: number;
}

/** True when the DFA accepts nothing (its only state is a non-accepting start). */
export function isEmptyLanguage(dfa: ByteDfa): boolean {
  return dfa.minBytesToAccept[dfa.start] === -1;
}

/**
 * The bytes some transition of the DFA reads, as 8 words (one bit per byte). Its states are all
 * live, so these are the bytes its matches can contain: a lower bound in tokens over them may use
 * the longest token made only of them.
 */
export function bytesRead(dfa: ByteDfa): Uint32Array {
  const { next, numClasses, byteClass } = dfa;
  const used = new Uint8Array(numClasses);
  for (let i = 0; i < next.length; i++) if (next[i]! >= 0) used[i % numClasses] = 1;
  const out = new Uint32Array(8);
  for (let b = 0; b < 256; b++) if (used[byteClass[b]!] === 1) out[b >>> 5]! |= 1 << (b & 31);
  return out;
}

/** Whether two DFAs have the same tables (start, classes, transitions, acceptance): the same DFA. */
export function sameDfa(a: ByteDfa, b: ByteDfa): boolean {
  if (a === b) return true;
  if (a.numStates !== b.numStates || a.start !== b.start || a.numClasses !== b.numClasses) return false;
  return sameInts(a.byteClass, b.byteClass) && sameInts(a.accepting, b.accepting) && sameInts(a.next, b.next);
}

function sameInts(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const hashes = new WeakMap<ByteDfa, number>();

/** A hash of what sameDfa compares (FNV-1a, kept per DFA object). */
export function dfaHash(dfa: ByteDfa): number {
  let h = hashes.get(dfa);
  if (h !== undefined) return h;
  h = Math.imul(0x811c9dc5 ^ dfa.numStates, 0x01000193) ^ dfa.start;
  const { byteClass, accepting, next } = dfa;
  for (let i = 0; i < byteClass.length; i++) h = Math.imul(h ^ byteClass[i]!, 0x01000193);
  for (let i = 0; i < accepting.length; i++) h = Math.imul(h ^ accepting[i]!, 0x01000193);
  for (let i = 0; i < next.length; i++) h = Math.imul(h ^ next[i]!, 0x01000193);
  h >>>= 0;
  hashes.set(dfa, h);
  return h;
}
