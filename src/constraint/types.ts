/**
 * The contracts this stage reads: `ByteDfa` is the regex stage's own type; `VocabularyBytes` is
 * the part of `vocab/`'s `Vocabulary` the trie needs (a `Vocabulary` satisfies it as-is, and
 * tests can build small ones by hand).
 */
import type { Vocabulary } from "../vocab/index.js";
export type { ByteDfa } from "../regex/index.js";

/** The part of `vocab/`'s `Vocabulary` the trie reads (`kinds`: vocab's TokenKind per token). */
export type VocabularyBytes = Pick<Vocabulary, "size" | "offsets" | "data" | "kinds">;

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

/** Sets the bits of the tokens tokenIds[from .. to) (a trie subtree's tokens are one such range). */
export function setTokenRange(mask: Uint32Array, tokenIds: Int32Array, from: number, to: number): void {
  for (let k = from; k < to; k++) {
    const id = tokenIds[k]!;
    mask[id >>> 5]! |= 1 << (id & 31);
  }
}

/** ORs every word of `from` into `into` (same length). */
export function orInto(into: Uint32Array, from: Uint32Array): void {
  for (let w = 0; w < into.length; w++) into[w]! |= from[w]!;
}

/** Sets the bits of every token in `ids`. */
export function setTokenList(mask: Uint32Array, ids: Int32Array): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    mask[id >>> 5]! |= 1 << (id & 31);
  }
}
