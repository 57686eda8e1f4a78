/**
 * What the grammar matcher needs of an automaton: `CompletableAutomaton` (any byte automaton that
 * can say how far it is from a complete sentence) and, when the grammar stage's automaton offers
 * its stack-independent view, `LexerLevelAutomaton`, recognised by duck typing (`isLexerLevel`):
 * the grammar stage does not import this one, so its automaton cannot declare that it implements
 * the interface.
 */
import type { ByteAutomaton } from "../types.js";

/** What the grammar stage's incremental recognizer offers. */
export interface CompletableAutomaton extends ByteAutomaton {
  readonly start: number;
  isComplete(state: number): boolean;
  /** Admissible lower bound on bytes to a complete sentence (Infinity when dead). */
  minBytesLowerBound(state: number): number;
  /** Exact fewest bytes to a complete sentence, or -1 when the search gave up. */
  minBytesToComplete(state: number, maxExpansions?: number): number;
  /**
   * One shortest completing byte string, where the automaton knows it without a search (a rule
   * network's exact distances); absent or null: the token layer searches.
   */
  completingBytes?(state: number): Uint8Array | null;
  /** The bytes a sentence can contain, as 8 words (a superset); absent: any. */
  sentenceBytes?(): Uint32Array;
  /**
   * Work the automaton did by itself so far, in steps that cost about what a trie node's does
   * (making lexer steps and scanner DFAs); the matcher's meter charges its growth. Absent: none.
   */
  readonly lexerWork?: number;
}

/** The grammar stage's stack-independent view of its states (GrammarAutomaton has it). */
export interface LexerLevelAutomaton extends CompletableAutomaton {
  /** (stack, lexer state) pairs of a state. */
  hypotheses(state: number): Int32Array;
  /** (continued lexer state + 1, or 0) | LEXER_COMMITS when a terminal may end at the byte. */
  lexerStep(lex: number, byte: number): number;
  /** Lexer state after an ignored terminal ends at the byte (same stack), or -1. */
  lexerRestart(lex: number, byte: number): number;
  /** Bytes of ignored run behind a lexer state (see GrammarAutomaton.lexerIgnoredRun). */
  lexerIgnoredRun(lex: number): number;
  /** Ending the text here: the terminal fed (≥ 0), LEXER_END_KEEPS_STACK, or -1 (cannot end). */
  lexerEndKey(lex: number): number;
  /** The lexer state at a token start of each scanner. */
  tokenStartLexers(): Int32Array;
  /** One byte per class of bytes that step the lexer state alike. */
  lexerByteReps(lex: number): Uint8Array;
  /** Per byte, a label equal for the bytes that step the lexer state alike. */
  lexerByteLabels(lex: number): Uint8Array;
  /**
   * lexerStep of all 256 bytes at once into `out`, where the automaton can read them off a row
   * (a rule network); only an automaton whose lexerRestart is always -1 has it.
   */
  lexerRow?(lex: number, out: Int32Array): void;
  /** The terminal commit at the byte, as a key for afterCommit; -1 when none. */
  lexerCommitKey(lex: number, byte: number): number;
  /** The one-hypothesis state after the commit on `stack`; -1 when the parser refuses it. */
  afterCommit(stack: number, commitKey: number): number;
  /** minBytesLowerBound of afterCommit's state, without making it (Infinity when refused). */
  lowerBoundAfterCommit(stack: number, commitKey: number): number;
  /** isComplete of afterCommit's state, without making it (false when refused). */
  completeAfterCommit(stack: number, commitKey: number): boolean;
  /** The state of hypotheses (stack, l) for each lexer state l. */
  withStack(stack: number, lexers: readonly number[]): number;
  /** isComplete of withStack(stack, [lex]), without making that state. */
  completeAt(stack: number, lex: number): boolean;
  /**
   * The class of lexer states equal but for their ignored run (lexerIgnoredRun): within one, the
   * texts that can follow a longer run are among those that can follow a shorter one. Absent:
   * no runs.
   */
  lexerRunClass?(lex: number): number;
  /** The bytes a whole sentence can end with, as 8 words; absent or null: any. */
  finalBytes?(): Uint32Array | null;
  /**
   * True when two distinct lexer-state sets rarely behave alike: a rule network's part used in
   * several places is one shared rule, so its states are one already. The walks then do not look
   * for an equivalent set to take a walk over from (equivalence.ts). Absent: false.
   */
  readonly lexerSetsRarelyAlike?: boolean;
}

export function isLexerLevel(a: CompletableAutomaton): a is LexerLevelAutomaton {
  const l = a as Partial<LexerLevelAutomaton>;
  return (
    typeof l.hypotheses === "function" &&
    typeof l.lexerStep === "function" &&
    typeof l.lexerRestart === "function" &&
    typeof l.lexerByteReps === "function" &&
    typeof l.lexerByteLabels === "function" &&
    typeof l.tokenStartLexers === "function" &&
    typeof l.lexerEndKey === "function" &&
    typeof l.lexerIgnoredRun === "function" &&
    typeof l.lexerCommitKey === "function" &&
    typeof l.afterCommit === "function" &&
    typeof l.lowerBoundAfterCommit === "function" &&
    typeof l.completeAfterCommit === "function" &&
    typeof l.withStack === "function" &&
    typeof l.completeAt === "function"
  );
}
