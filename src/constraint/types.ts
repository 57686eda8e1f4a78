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

/** A constraint state's position while a healed prompt's forced prefix is still to come. */
export const PREFIX_PENDING = -2;
