// Byte-level incremental recognizer for constrained generation: integer states, `step(state, byte)`
// → state or -1, `isComplete(state)`. Implements `ByteAutomaton` from constraint/ structurally.
//
// Lexing model (Lark's contextual lexer on byte DFAs): a token starts in the scanner of the current
// parser state; the scanner's terminals run in one multi-pattern DFA (src/regex). Lark takes the
// FIRST terminal (in its order) that matches at the position, with that terminal's own match.
// We model a terminal's own match as its longest match (its shortest for patterns with lazy
// quantifiers), which is what Python's backtracking returns for the usual terminal shapes.
// Whether an earlier terminal matches, or the chosen one matches longer, depends on bytes not
// seen yet, so one automaton state is a SET of hypotheses; committing terminal i at length L adds
// a constraint "terminals 0..i of that scanner must never accept on the continued run" that lives
// until that run's DFA dies.
//
// Its parts: parser stacks (stacks.ts), lexer states and their byte steps (lexer-states.ts),
// completion distances (distance.ts); this file holds the hypothesis sets that are its states.

import { IdMap, IntMap, TableSlab } from "../../support/index.js";
import { GrammarError } from "../errors.js";
import type { Grammar } from "../grammar.js";
import { resolveLimits, type GrammarLimits } from "../limits.js";
import { buildGrammarScanners, refuseUnsupportedTerminals, type ScannerDfa, type ScannerParts } from "../scanner-dfa.js";
import { CompletionDistances, DISTANCE_TABLE_BYTES, fewestBytesToComplete } from "./distance.js";
import { lastTerminalsByIndex, sentenceBytes, sentenceFinalBytes } from "../final-bytes.js";
import { LEXER_END_KEEPS_STACK, LEXER_TABLE_BYTES, LexerStates, STEP_FIELDS as LEXER_STEP_FIELDS } from "./lexer-states.js";
import { ParserStacks, STACK_TABLE_BYTES } from "./stacks.js";
import { ID_MAP_FIRST_BYTES, INT_MAP_FIRST_BYTES, IntListIds, MEMO_CAPACITY, walkText } from "./tables.js";

/** Kept in a const of this module for step and the lexer steps (see regex/clock.ts). */
const STEP_FIELDS = LEXER_STEP_FIELDS;

/**
 * In a `lexerStep` code: a (non-ignored) terminal may end at this byte, so the parser is needed.
 * Bit 29, not 30: codes then stay within V8's small integers (31 bits), which a call returns
 * without allocating a heap number (a walk's step codes were a quarter of its allocations).
 * Lexer states and their sets stay far below 2^29.
 */
export const LEXER_COMMITS = 0x20000000;

/** IncrementalOptions.maxIgnoredRun when left out (compile/'s MAX_IGNORED_RUN is the requests' default). */
export const DEFAULT_MAX_IGNORED_RUN = 8;

export interface IncrementalOptions {
  /** Most consecutive bytes of %ignore'd text (whitespace, comments) allowed anywhere (DEFAULT_MAX_IGNORED_RUN). */
  maxIgnoredRun?: number;
  /**
   * Scanner DFAs another automaton of the same grammar built (`scannerParts()`), e.g. in a
   * compile worker: reused instead of built again. They do not depend on maxIgnoredRun.
   */
  prebuilt?: ScannerParts;
  /**
   * The compile's limits (DEFAULT_GRAMMAR_LIMITS for what is left out): the scanner DFAs built
   * with the automaton are bounded by maxDfaStates, maxNfaStates and maxScannerCells, and get
   * what compileGrammar left of timeoutMs (Grammar.compileMs).
   */
  limits?: Partial<GrammarLimits>;
}

/**
 * The slab: the first tables of the memo maps and step tables of the automaton and its parts, six
 * IntMaps' first tables (256 slots of two doubles), two IdMaps' (MEMO_CAPACITY ints), the first
 * step and lexer tables in all. The parts count theirs; the automaton has three IntMaps and an IdMap.
 */
const AUTOMATON_SLAB_BYTES = STACK_TABLE_BYTES + LEXER_TABLE_BYTES + DISTANCE_TABLE_BYTES + 3 * INT_MAP_FIRST_BYTES + ID_MAP_FIRST_BYTES;

/** afterCommit's memo key (-1: none), exact below 2^53. */
function afterCommitMemoKey(stack: number, commitKey: number): number {
  return commitKey < 0x400000 ? stack * 0x400000 + commitKey : -1;
}

/**
 * States are sets of hypotheses (parser stack, lexer state); a lexer state is everything about
 * the token in progress (see LexerStates). Lexer states and their byte steps do not depend on
 * the stack; that is what `lexerStep` offers the token layer.
 */
export class GrammarAutomaton {
  readonly start: number;
  /**
   * Terminals whose Python-preferred match the automaton only approximates (mixed greedy/lazy
   * quantifiers, alternations or repeats whose choice is not decided by the next character).
   * Empty means the automaton's lexing is exactly Lark's for this grammar (up to \\d \\w \\s being
   * ASCII in the byte DFAs).
   */
  readonly approximate = new Set<string>();
  /** The first tables of the memo maps and step tables below and of the parts (see TableSlab). */
  private readonly tables = new TableSlab(AUTOMATON_SLAB_BYTES);
  private readonly stacks: ParserStacks;
  private readonly lexers: LexerStates;
  private readonly distances: CompletionDistances;
  /** Per scanner id: its byte DFA once built (the array the lexer states fill on first use). */
  private readonly scannerDfas: readonly (ScannerDfa | undefined)[];
  /** Per LALR state, the id of its scanner. */
  private readonly scannerOfState: Int32Array;
  private readonly afterCommitMemo = new IntMap(MEMO_CAPACITY, this.tables);
  // Interned hypothesis sets: sorted (stack, lexer state) pairs.
  private readonly setIds = new IntListIds();
  private readonly sets = this.setIds.lists;
  /** One-hypothesis sets past singleSetIds' numeric keys, by string. */
  private readonly bigSingleSetIds = new Map<string, number>();
  private readonly sortScratch: number[] = [];
  /** One-hypothesis sets (most of them) by stack * 2^24 + lexer state, without a string key. */
  private readonly singleSetIds = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly stepMemo = new IntMap(MEMO_CAPACITY, this.tables);
  /** 1 / 0 per state: whether the text so far is a complete sentence. */
  private readonly completeMemo = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly scratch: number[] = [];

  constructor(
    readonly grammar: Grammar,
    opts: IncrementalOptions = {},
  ) {
    const maxIgnoredRun = opts.maxIgnoredRun ?? DEFAULT_MAX_IGNORED_RUN;
    for (const name of opts.prebuilt?.approximate ?? []) this.approximate.add(name);
    this.stacks = new ParserStacks(grammar, this.tables);
    try {
      const limits = resolveLimits(opts.limits);
      refuseUnsupportedTerminals(grammar);
      const scanners = buildGrammarScanners(grammar, limits, this.approximate, opts.prebuilt);
      this.scannerDfas = scanners.scannerDfas;
      this.scannerOfState = scanners.scannerOfState;
      this.lexers = new LexerStates(scanners, maxIgnoredRun, this.approximate, opts.prebuilt, this.tables);
      this.start = this.intern([0, this.lexers.startLex(this.scannerOfState[grammar.table.startState]!, 0)]);
    } catch (e) {
      if (e instanceof GrammarError) throw e;
      throw new GrammarError(`Grammar terminals cannot be turned into a byte automaton: ${(e as Error).message}`);
    }
    this.distances = new CompletionDistances(grammar, this.stacks, this.lexers, this.tables);
  }

  /** The scanner DFAs built so far, for another automaton of this grammar (IncrementalOptions.prebuilt). */
  scannerParts(): ScannerParts {
    return { scannerDfas: [...this.scannerDfas], approximate: [...this.approximate] };
  }

  get numStates(): number {
    return this.sets.length;
  }

  /**
   * An estimate of the heap bytes its memos hold beyond the grammar and the DFAs the compile
   * built (the constraint cache's budget): the typed tables exactly, Maps and per-state records
   * at a generous per-entry cost, so that it errs high.
   */
  retainedBytes(): number {
    let bytes = AUTOMATON_SLAB_BYTES + this.stacks.retainedBytes() + this.lexers.retainedBytes();
    for (const map of [this.afterCommitMemo, this.singleSetIds, this.stepMemo]) bytes += map.byteLength;
    bytes += this.completeMemo.byteLength;
    // A set: its Int32Array (header and store) and its keys in setIds.
    bytes += this.sets.length * 200 + this.setIds.totalLength() * 8;
    return bytes;
  }

  /** Lexer states met so far (the token layer sizes its tables by it). */
  get numLexerStates(): number {
    return this.lexers.numLex;
  }

  private scannerFor(stack: number): number {
    return this.scannerOfState[this.stacks.stackTop[stack]!]!;
  }

  /** The lexer state at a token start of each scanner (no inherited constraints): where most tokens begin. */
  tokenStartLexers(): Int32Array {
    return this.lexers.tokenStartLexers();
  }

  // The three reads of the lexer states' step table below are written here, as in step, rather
  // than delegated to LexerStates: a call more per lexerStep made warm lexer steps 12–25% slower
  // (one level of inlining less).

  /**
   * One byte of the token in progress, whatever the stack: (continued lexer state + 1, or 0 when
   * the token cannot continue), | LEXER_COMMITS when a non-ignored terminal may end at this byte.
   */
  lexerStep(lex: number, byte: number): number {
    const lexers = this.lexers;
    const slot = lexers.lexSlot(lex, byte);
    const steps = lexers.lexSteps;
    return (steps[slot * STEP_FIELDS]! - 1) | (steps[slot * STEP_FIELDS + 2]! > 0 ? LEXER_COMMITS : 0);
  }

  /** Lexer state after an ignored terminal ends at `byte` (same stack, new token), or -1. */
  lexerRestart(lex: number, byte: number): number {
    const lexers = this.lexers;
    return lexers.lexSteps[lexers.lexSlot(lex, byte) * STEP_FIELDS + 1]! - 1;
  }

  /**
   * The terminal commit that may happen at `byte` as a key for `afterCommit` (the terminal and the
   * constraints the next token inherits), or -1 when no terminal ends there.
   */
  lexerCommitKey(lex: number, byte: number): number {
    const lexers = this.lexers;
    const slot = lexers.lexSlot(lex, byte);
    const term = lexers.lexSteps[slot * STEP_FIELDS + 2]! - 1;
    return term < 0 ? -1 : lexers.lexSteps[slot * STEP_FIELDS + 3]! * this.grammar.table.terminals.length + term;
  }

  /**
   * One byte per class of bytes that step `lex` alike (the lexer sees a byte only through its
   * scanners' byte classes), printable ASCII first: searches over lexer states try these instead
   * of all 256 bytes. Read only.
   */
  lexerByteReps(lex: number): Uint8Array {
    return this.lexers.lexerByteReps(lex);
  }

  /** Per byte, a label equal for the bytes that step `lex` alike (see LexerStates.byteLabels). Read only. */
  lexerByteLabels(lex: number): Uint8Array {
    return this.lexers.byteLabels(lex);
  }

  /**
   * Bytes of the ignored run a lexer state has behind it, its token included while that may still
   * end up ignored (a constant for every other state: see LexerStates.computeLexStep).
   */
  lexerIgnoredRun(lex: number): number {
    return this.lexers.lexerIgnoredRun(lex);
  }

  /** The class of lexer states equal but for their ignored run (see LexerStates.lexerRunClass). */
  lexerRunClass(lex: number): number {
    return this.lexers.lexerRunClass(lex);
  }

  /**
   * What ending the text here does to a lexer state's token in progress: the terminal the parser
   * is then fed (≥ 0), LEXER_END_KEEPS_STACK, or -1 (see LexerStates.lexerEndKey).
   */
  lexerEndKey(lex: number): number {
    return this.lexers.lexerEndKey(lex);
  }

  /**
   * The one-hypothesis state after a commit (`lexerCommitKey`) on `stack`: the parser fed the
   * terminal, a new token starts in the new top state's scanner. -1 when the parser refuses it.
   */
  afterCommit(stack: number, commitKey: number): number {
    const memoKey = afterCommitMemoKey(stack, commitKey);
    const hit = memoKey < 0 ? IntMap.MISSING : this.afterCommitMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const st = this.stacks.feed(stack, commitKey % this.grammar.table.terminals.length);
    const result = st < 0 ? -1 : this.intern([st, this.lexAfterCommit(st, commitKey)]);
    if (memoKey >= 0) this.afterCommitMemo.set(memoKey, result);
    return result;
  }

  /**
   * isComplete(afterCommit(stack, commitKey)) without interning that state: a one-token budget
   * asks it of every commit its targets' tokens end with, and most such states are never stepped.
   */
  completeAfterCommit(stack: number, commitKey: number): boolean {
    const memoKey = afterCommitMemoKey(stack, commitKey);
    const hit = memoKey < 0 ? IntMap.MISSING : this.afterCommitMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return this.isComplete(hit);
    const st = this.stacks.feed(stack, commitKey % this.grammar.table.terminals.length);
    return st >= 0 && this.completeAt(st, this.lexAfterCommit(st, commitKey));
  }

  /** The lexer state a new token starts in after a commit left the parser in `st`. */
  private lexAfterCommit(st: number, commitKey: number): number {
    return this.lexers.startLex(this.scannerFor(st), Math.floor(commitKey / this.grammar.table.terminals.length));
  }

  /**
   * minBytesLowerBound(afterCommit(stack, commitKey)) without interning that state: a new token
   * starts there, so the bound is the stack's own. A greedy completion weighs every commit a
   * configuration offers and keeps one; interning the others' states would be wasted work.
   */
  lowerBoundAfterCommit(stack: number, commitKey: number): number {
    const st = this.stacks.feed(stack, commitKey % this.grammar.table.terminals.length);
    return st < 0 ? Infinity : this.distances.stackCost(st);
  }

  /** The hypotheses of `state` as (stack, lexer state) pairs. Read only. */
  hypotheses(state: number): Int32Array {
    return this.sets[state]!;
  }

  /** The state of hypotheses (stack, l) for each lexer state l of `lexers` (-1 when empty). */
  withStack(stack: number, lexers: readonly number[]): number {
    if (lexers.length === 1) return this.internSingle(stack, lexers[0]!);
    const out = this.scratch;
    out.length = 0;
    for (let j = 0; j < lexers.length; j++) out.push(stack, lexers[j]!);
    return this.intern(out);
  }

  /** Interns a list of (stack, lexer) pairs (consumed), sorted and deduplicated. */
  private intern(pairs: number[]): number {
    const n = pairs.length >>> 1;
    if (n === 0) return -1;
    if (n === 1) return this.internSingle(pairs[0]!, pairs[1]!);
    // Insertion sort by (stack, lexer state), dropping repeats: sets have a few pairs.
    const sorted = this.sortScratch;
    sorted.length = 0;
    for (let i = 0; i < n; i++) {
      const s = pairs[2 * i]!,
        l = pairs[2 * i + 1]!;
      let at = sorted.length;
      while (at > 0 && (sorted[at - 2]! > s || (sorted[at - 2] === s && sorted[at - 1]! > l))) at -= 2;
      if (at > 0 && sorted[at - 2] === s && sorted[at - 1] === l) continue;
      sorted.splice(at, 0, s, l);
    }
    if (sorted.length === 2) return this.internSingle(sorted[0]!, sorted[1]!);
    return this.setIds.idOf(sorted);
  }

  private internSingle(stack: number, lex: number): number {
    // Numeric key while it stays exact (stack < 2^29, lexer state < 2^24); a string beyond.
    const numeric = stack < 0x20000000 && lex < 0x1000000;
    const key = numeric ? stack * 0x1000000 + lex : `${stack},${lex}`;
    let id = numeric ? this.singleSetIds.get(key as number) : (this.bigSingleSetIds.get(key as string) ?? IntMap.MISSING);
    if (id === IntMap.MISSING) {
      id = this.setIds.append(Int32Array.of(stack, lex));
      if (numeric) this.singleSetIds.set(key as number, id);
      else this.bigSingleSetIds.set(key as string, id);
    }
    return id;
  }

  /** Next state after `byte`, or -1 when no continuation of the text can be accepted by Lark. */
  step(state: number, byte: number): number {
    if (state < 0) return -1;
    const memoKey = state * 256 + byte;
    const hit = this.stepMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const hyps = this.sets[state]!;
    const lexers = this.lexers;
    const out: number[] = [];
    for (let i = 0; i < hyps.length; i += 2) {
      const stack = hyps[i]!;
      const at = lexers.lexSlot(hyps[i + 1]!, byte) * STEP_FIELDS;
      const steps = lexers.lexSteps; // after lexSlot, which may have grown it
      const cont = steps[at]! - 2;
      if (cont >= 0) out.push(stack, cont);
      const restart = steps[at + 1]! - 1;
      if (restart >= 0) out.push(stack, restart);
      const term = steps[at + 2]! - 1;
      if (term >= 0) {
        const st = this.stacks.feed(stack, term);
        if (st >= 0) out.push(st, lexers.startLex(this.scannerFor(st), steps[at + 3]!));
      }
    }
    const id = this.intern(out);
    this.stepMemo.set(memoKey, id);
    return id;
  }

  private finalBytesMade: Uint32Array | null = null;
  /** Per table terminal: 1 when a sentence may end with it (lastTerminalsByIndex); made on first need. */
  private canBeLast: Uint8Array | null = null;

  /** The bytes a whole sentence can end with (see sentenceFinalBytes); made on first need. */
  finalBytes(): Uint32Array {
    this.canBeLast ??= lastTerminalsByIndex(this.grammar.table);
    return (this.finalBytesMade ??= sentenceFinalBytes(this.grammar, this.canBeLast));
  }

  /** The work of its lexer steps and scanner DFAs made so far (see LexerStates.work). */
  get lexerWork(): number {
    return this.lexers.work;
  }

  private sentenceBytesMade: Uint32Array | null = null;

  /** The bytes a sentence can contain (see sentenceBytes); made on first need. */
  sentenceBytes(): Uint32Array {
    return (this.sentenceBytesMade ??= sentenceBytes(this.grammar));
  }

  /** isComplete of the one-hypothesis state (stack, lex), without making that state. */
  completeAt(stack: number, lex: number): boolean {
    const key = this.lexers.lexerEndKey(lex);
    if (key === LEXER_END_KEEPS_STACK) return this.stacks.acceptsAtEnd(stack, -1);
    if (key < 0) return false;
    // A terminal no sentence ends with is refused by $END whatever the stack.
    this.canBeLast ??= lastTerminalsByIndex(this.grammar.table);
    return this.canBeLast[key] === 1 && this.stacks.acceptsAtEnd(stack, key);
  }

  /** Whether the text so far is a complete sentence (Lark would parse it). */
  isComplete(state: number): boolean {
    if (state < 0) return false;
    const hit = this.completeMemo.get(state);
    if (hit !== IntMap.MISSING) return hit === 1;
    let result = false;
    const hyps = this.sets[state]!;
    for (let i = 0; i < hyps.length && !result; i += 2) result = this.completeAt(hyps[i]!, hyps[i + 1]!);
    this.completeMemo.set(state, result ? 1 : 0);
    return result;
  }

  /** Feeds a whole string (UTF-8); -1 when rejected on the way. */
  walk(state: number, text: string): number {
    return walkText(this, state, text);
  }

  /** Bytes that may come next from `state`. */
  allowedBytes(state: number): number[] {
    const out: number[] = [];
    for (let b = 0; b < 256; b++) if (this.step(state, b) >= 0) out.push(b);
    return out;
  }

  /**
   * Admissible lower bound on the bytes still needed from `state` to a complete sentence
   * (Infinity for a dead state). Ignores token separation, so it can undercount.
   */
  minBytesLowerBound(state: number): number {
    if (state < 0) return Infinity;
    return this.distances.lowerBound(this.sets[state]!);
  }

  /**
   * Fewest bytes from `state` to a complete sentence: A* over the automaton with
   * `minBytesLowerBound` as heuristic. -1 when none is found within `maxExpansions` states.
   */
  minBytesToComplete(state: number, maxExpansions = 20000): number {
    return fewestBytesToComplete(this, state, maxExpansions);
  }
}

export function createGrammarAutomaton(grammar: Grammar, opts?: IncrementalOptions): GrammarAutomaton {
  return new GrammarAutomaton(grammar, opts);
}
