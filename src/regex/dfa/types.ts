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
