/**
 * The contracts this stage reads: `ByteDfa` is the regex stage's own type; `VocabularyBytes` is
 * the part of `vocab/`'s `Vocabulary` the trie needs (a `Vocabulary` satisfies it as-is, and
 * tests can build small ones by hand).
 */
export type { ByteDfa } from "../regex/index.js";

/** The part of `vocab/`'s `Vocabulary` the trie reads. */
export interface VocabularyBytes {
  readonly size: number;
  /** size + 1 entries; bytes of token i = data[offsets[i] .. offsets[i + 1]). */
  readonly offsets: Uint32Array;
  readonly data: Uint8Array;
  /** TokenKind per token. */
  readonly kinds: Uint8Array;
}

/** Same values as `vocab/`'s TokenKind. */
export const TokenKindValue = {
  Normal: 0,
  Control: 1,
  EndOfGeneration: 2,
  Byte: 3,
  Unused: 4,
  UserDefined: 5,
} as const;

/**
 * Any byte-level automaton with integer states, for walks that are not a plain DFA (the grammar
 * stage's lexer DFA + parser check). `step` returns the next state, or -1 when the byte is
 * impossible. It must be pure for a given (state, byte): masks are cached per state.
 */
export interface ByteAutomaton {
  step(state: number, byte: number): number;
}

/** Mask words for a vocabulary: bit `id & 31` of word `id >>> 5`. */
export function maskWords(vocabSize: number): number {
  return (vocabSize + 31) >>> 5;
}
