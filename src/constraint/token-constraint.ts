/**
 * The decode loop's contract with every constraint (regex, grammar, JSON Schema, free text): what
 * one request's position in a constraint must answer each step. `DfaConstraintState` and
 * `GrammarConstraintState` implement it; generate/'s `FreeTextConstraint` too.
 */

/** One request's position in a constraint. */
export interface TokenConstraint {
  /**
   * Writes the tokens allowed with `remaining` tokens left (this one included) into `out`, one
   * bit per token id (maskWords(vocabulary size) words), replacing what was there. The caller owns
   * `out`: it may add bits (end-of-generation tokens) without touching the constraint's caches.
   */
  writeMask(remaining: number, out: Uint32Array): void;
  /** The text so far is a complete match. */
  isAccepting(): boolean;
  /** Some token is allowed with `remaining` tokens left. */
  hasAnyToken(remaining: number): boolean;
  /** Moves past the token; false when it is not allowed (then nothing changed). */
  advance(token: number): boolean;
  /** Exact minimum tokens to a complete match; Infinity when none within `cap` tokens. */
  minTokensToAccept(cap: number): number;
  /**
   * A proven lower bound on the tokens of any complete match, searching budgets up to `cap`: the
   * number of a 422's message, asked once the budget is known not to fit. Within
   * LOWER_BOUND_WORK_SHARE of the work limit: a grammar's searches give up there (a smaller
   * bound), a DFA's operation throws ConstraintTooCostlyError (the matcher spent).
   */
  minTokensAtLeast?(cap: number): number;
  /**
   * Work ahead of need until `deadline` (performance.now() time), done while the model evaluates
   * (a new grammar's trie walks). True when nothing is left.
   */
  walkAhead?(deadline: number): boolean;
  /**
   * Fast-forward (generate/fast-forward.ts): the bytes every match continues with from here, at
   * most `max` (while exactly one byte can follow and the text is not a complete match), or null
   * when none is forced. Absent: the constraint offers no fast-forward.
   */
  forcedBytes?(max: number): ForcedBytes | null;
  /**
   * Whether `token` is allowed with `remaining` tokens left (this one included), i.e. in the mask
   * writeMask would write, without writing it. With forcedBytes.
   */
  allowsWithin?(token: number, remaining: number): boolean;
  /** A reasoning section before the answer (ReasoningConstraint): the tokens it has taken so far, its markers included. */
  reasoningTokenCount?(): number;
}

/** Bytes a constraint forces, and what may follow them. */
export interface ForcedBytes {
  readonly bytes: Uint8Array;
  /** The text is a complete match after them and nothing can follow. */
  readonly ends: boolean;
  /** The bytes that may follow them on the way to a match: 8 words, bit b for byte b. */
  readonly then: Uint32Array;
}

/**
 * A constraint's mask copied into `out` (the two must have the same length: a mask of another
 * vocabulary is a bug, not a request error).
 */
export function copyMaskInto(mask: Uint32Array, out: Uint32Array): void {
  if (mask.length !== out.length) throw new RangeError(`a mask of ${mask.length} words written into a buffer of ${out.length}`);
  out.set(mask);
}
