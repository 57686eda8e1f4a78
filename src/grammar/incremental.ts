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

import { grownTo, IdMap, IntMap, TableSlab, uint8Of } from "../support/index.js";
import type { Grammar } from "./grammar.js";
import { GrammarError } from "./lalr.js";
import type { Scanner } from "./lexer.js";
import { resolveLimits, type GrammarLimits } from "./limits.js";
import { buildGrammarScanners, buildScannerDfa, committedTerminal, refuseUnsupportedTerminals, scannerDfaBytes, type ScannerDfa, type ScannerParts } from "./scanner-dfa.js";
import { searchCheapestGoal } from "./search.js";

export interface IncrementalOptions {
  /** Most consecutive bytes of %ignore'd text (whitespace, comments) allowed anywhere. */
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
 * In a `lexerStep` code: a (non-ignored) terminal may end at this byte, so the parser is needed.
 * Bit 29, not 30: codes then stay within V8's small integers (31 bits), which a call returns
 * without allocating a heap number (a walk's step codes were a quarter of its allocations).
 * Lexer states and their sets stay far below 2^29.
 */
export const LEXER_COMMITS = 0x20000000;

/** lexerEndKey: the text may end here and the parser stack stays as it is. */
export const LEXER_END_KEEPS_STACK = -2;

/** Letters, digits, then the rest of printable ASCII, then every other byte. */
const BYTES_PRINTABLE_FIRST: readonly number[] = (() => {
  const rank = (b: number): number => (b >= 0x61 && b <= 0x7a ? 0 : b >= 0x30 && b <= 0x39 ? 1 : b >= 0x41 && b <= 0x5a ? 2 : b >= 0x20 && b < 0x7f ? 3 : 4);
  return Array.from({ length: 256 }, (_, b) => b).sort((x, y) => rank(x) - rank(y) || x - y);
})();
/** Per rule r, base[r] + dot indexes rest: the fewest bytes from the dot to the rule's end; root[r]: r is $root_*. */
interface ItemCosts {
  readonly base: Int32Array;
  readonly rest: Float64Array;
  readonly root: Uint8Array;
}
/** stackCostMemo's value for Infinity. */
const COST_INFINITY = 0x7fffffff;
const LEX_FIELDS = 6; // scanner, dfa state, first accepted, token length, ignored run, constraints id
const STEP_FIELDS = 4; // see GrammarAutomaton.lexSteps
/** Entries of a memo map before its first growth. */
const MEMO_CAPACITY = 128;
/**
 * Six IntMaps' first tables (256 slots of two doubles), two IdMaps' (MEMO_CAPACITY ints), the first
 * step and lexer tables.
 */
const AUTOMATON_SLAB_BYTES = 6 * 256 * 2 * 8 + 2 * MEMO_CAPACITY * 4 + 256 * 4 * STEP_FIELDS * 4 + LEX_FIELDS * 8 * 4;

/**
 * States are sets of hypotheses (parser stack, lexer state). A lexer state is everything about the
 * token in progress: scanner, its DFA state, the lowest terminal that accepted so far, the token's
 * length and the ignored run before it (only kept exactly while the token may still end up
 * ignored: otherwise they cannot change what is accepted, and leaving them out keeps the number
 * of states small), and the pending "earlier terminal must not match" constraints. Lexer states
 * and their byte steps do not depend on the stack; that is what `lexerStep` offers the token layer.
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
  private readonly maxIgnoredRun: number;
  /** Per scanner id: its terminals, and its byte DFA once built (see scannerDfa). */
  private readonly scanners: Scanner[] = [];
  private readonly scannerDfas: (ScannerDfa | undefined)[] = [];
  private readonly scannerOfState: Int32Array;
  // Interned parser stacks: parent id, LALR state.
  private readonly stackParent: number[] = [-1];
  /** The first tables of the memo maps and step tables below (see TableSlab). */
  private readonly tables = new TableSlab(AUTOMATON_SLAB_BYTES);
  private readonly stackTop: number[];
  /** (parent * LALR states + state) → stack id: numeric keys, no string per lookup. */
  private readonly stackIds = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly feedMemo = new IntMap(MEMO_CAPACITY, this.tables);
  // Interned lexer states and their byte steps (slot = lexer state * 256 + byte).
  // Sized for a few lexer states and doubled as they come: a small grammar should not fill
  // 256 KB of step tables when it is compiled.
  private lexFields = this.tables.int32(LEX_FIELDS * 8);
  private numLex = 0;
  private readonly lexIds = new Map<string, number>();
  private readonly constraintLists: number[][] = [[]];
  private readonly constraintIds = new Map<string, number>([["", 0]]);
  // Per slot, STEP_FIELDS ints side by side (one cache line for a step, one allocation), offset
  // so that a fresh zeroed table means "not computed yet": continued lexer state + 2 (1: none),
  // restarted lexer state + 1 (0: none), committed terminal + 1 (0: none), the constraints
  // the next token inherits after that commit.
  private lexSteps = this.tables.int32(256 * 4 * STEP_FIELDS);
  private readonly startLexMemo = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly byteRepsMemo = new Map<number, Uint8Array>();
  private readonly byteLabelsMemo = new Map<number, Uint8Array>();
  private readonly afterCommitMemo = new IntMap(MEMO_CAPACITY, this.tables);
  // Interned hypothesis sets: sorted (stack, lexer state) pairs.
  private readonly sets: Int32Array[] = [];
  private readonly setIds = new Map<string, number>();
  /** Sets of several hypotheses by a hash of their pairs (see intern). */
  private readonly multiSetIds = new Map<number, number[]>();
  private readonly sortScratch: number[] = [];
  /** One-hypothesis sets (most of them) by stack * 2^24 + lexer state, without a string key. */
  private readonly singleSetIds = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly stepMemo = new IntMap(MEMO_CAPACITY, this.tables);
  /** 1 / 0 per state: whether the text so far is a complete sentence. */
  private readonly completeMemo = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly scratch: number[] = [];

  private readonly prebuilt: ScannerParts | undefined;

  constructor(readonly grammar: Grammar, opts: IncrementalOptions = {}) {
    this.maxIgnoredRun = opts.maxIgnoredRun ?? 8;
    this.prebuilt = opts.prebuilt;
    for (const name of opts.prebuilt?.approximate ?? []) this.approximate.add(name);
    this.scannerOfState = new Int32Array(grammar.table.numStates);
    this.stackTop = [grammar.table.startState];
    try {
      this.start = this.build(resolveLimits(opts.limits));
    } catch (e) {
      if (e instanceof GrammarError) throw e;
      throw new GrammarError(`Grammar terminals cannot be turned into a byte automaton: ${(e as Error).message}`);
    }
  }

  private build(limits: GrammarLimits): number {
    const grammar = this.grammar;
    const table = grammar.table;
    refuseUnsupportedTerminals(grammar);
    const scanners = buildGrammarScanners(grammar, limits, this.approximate, this.prebuilt);
    this.scanners.push(...scanners.scanners);
    this.scannerDfas.push(...scanners.scannerDfas);
    this.scannerOfState.set(scanners.scannerOfState);
    return this.intern([0, this.startLex(this.scannerOfState[table.startState]!, 0)]);
  }

  /** The scanner DFAs built so far, for another automaton of this grammar (IncrementalOptions.prebuilt). */
  scannerParts(): ScannerParts {
    return { scannerDfas: [...this.scannerDfas], approximate: [...this.approximate] };
  }

  /** A scanner's byte DFA, built on first use when the compile left it (see build). */
  private scannerDfa(id: number): ScannerDfa {
    return this.scannerDfas[id] ?? (this.scannerDfas[id] = buildScannerDfa(this.scanners[id]!, this.approximate));
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
    let bytes = AUTOMATON_SLAB_BYTES + this.lexFields.byteLength + this.lexSteps.byteLength;
    for (const map of [this.stackIds, this.feedMemo, this.startLexMemo, this.afterCommitMemo, this.singleSetIds, this.stepMemo]) bytes += map.byteLength;
    bytes += this.completeMemo.byteLength;
    let setInts = 0;
    for (const set of this.sets) setInts += set.length;
    // A set: its Int32Array (header and store) and its keys in setIds / multiSetIds.
    bytes += this.sets.length * 200 + setInts * 8;
    bytes += this.numLex * 160 + (this.stackParent.length + this.stackTop.length) * 16;
    bytes += (this.byteRepsMemo.size + this.byteLabelsMemo.size) * 400;
    for (let id = 0; id < this.scannerDfas.length; id++) {
      // Built here on first use (the compile's DFAs are accounted with the grammar).
      const dfa = this.scannerDfas[id];
      if (dfa !== undefined && this.prebuilt?.scannerDfas[id] === undefined) bytes += scannerDfaBytes(dfa);
    }
    return bytes;
  }

  /** Lexer states met so far (the token layer sizes its tables by it). */
  get numLexerStates(): number {
    return this.numLex;
  }

  private pushStack(parent: number, state: number): number {
    const key = parent * this.grammar.table.numStates + state;
    let id = this.stackIds.get(key);
    if (id === IntMap.MISSING) {
      id = this.stackTop.length;
      this.stackTop.push(state);
      this.stackParent.push(parent);
      this.stackIds.set(key, id);
    }
    return id;
  }

  /** LALR feed on an interned stack: new stack id, -1 on error, -2 on acceptance ($END). */
  private feed(stack: number, terminal: number): number {
    const memoKey = stack * this.grammar.table.terminals.length + terminal;
    const hit = this.feedMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const t = this.grammar.table;
    const TT = t.terminals.length, NT = t.nonterminals.length;
    let st = stack;
    let result: number;
    for (;;) {
      const a = t.action[this.stackTop[st]! * TT + terminal]!;
      if (a > 0) { result = this.pushStack(st, a - 1); break; }
      if (a === 0) { result = -1; break; }
      const r = -a - 1;
      for (let k = t.ruleLen[r]!; k > 0; k--) st = this.stackParent[st]!;
      const g = t.goto[this.stackTop[st]! * NT + t.ruleLhs[r]!]!;
      if (g < 0) { result = -1; break; }
      st = this.pushStack(st, g);
      if (terminal === 0 && g === t.endState) { result = -2; break; }
    }
    this.feedMemo.set(memoKey, result);
    return result;
  }

  private scannerFor(stack: number): number {
    return this.scannerOfState[this.stackTop[stack]!]!;
  }

  private internConstraints(list: number[]): number {
    if (list.length === 0) return 0;
    const key = list.join(".");
    let id = this.constraintIds.get(key);
    if (id === undefined) {
      id = this.constraintLists.length;
      this.constraintLists.push(list);
      this.constraintIds.set(key, id);
    }
    return id;
  }

  private internLex(scanner: number, dfaState: number, first: number, tokenLen: number, ignoredRun: number, constraints: number): number {
    const key = `${scanner},${dfaState},${first},${tokenLen},${ignoredRun},${constraints}`;
    let id = this.lexIds.get(key);
    if (id !== undefined) return id;
    id = this.numLex++;
    this.lexIds.set(key, id);
    if (this.numLex * LEX_FIELDS > this.lexFields.length) this.lexFields = grownTo(this.lexFields, this.lexFields.length * 2);
    const fields = this.lexFields;
    const f = id * LEX_FIELDS;
    fields[f] = scanner;
    fields[f + 1] = dfaState;
    fields[f + 2] = first;
    fields[f + 3] = tokenLen;
    fields[f + 4] = ignoredRun;
    fields[f + 5] = constraints;
    if (this.numLex * 256 * STEP_FIELDS > this.lexSteps.length) this.lexSteps = grownTo(this.lexSteps, this.lexSteps.length * 2);
    return id;
  }

  /** The lexer state at a token boundary of a scanner, with pending constraints. */
  private startLex(scanner: number, constraints: number): number {
    const key = scanner * 0x100000 + constraints;
    let id = this.startLexMemo.get(key);
    if (id === IntMap.MISSING) {
      id = this.internLex(scanner, this.scannerDfa(scanner).dfa.start, -1, 0, 0, constraints);
      this.startLexMemo.set(key, id);
    }
    return id;
  }

  /** The lexer state at a token start of each scanner (no inherited constraints): where most tokens begin. */
  tokenStartLexers(): Int32Array {
    const out = new Int32Array(this.scanners.length);
    for (let scanner = 0; scanner < out.length; scanner++) out[scanner] = this.startLex(scanner, 0);
    return out;
  }

  /** Slot of (lexer state, byte) in the step tables, computed on first use. */
  private lexSlot(lex: number, byte: number): number {
    const slot = lex * 256 + byte;
    if (this.lexSteps[slot * STEP_FIELDS] === 0) this.computeLexClass(lex, byte);
    return slot;
  }

  /**
   * The step of `byte`, written for every byte the lexer cannot tell from it (see byteLabels):
   * token-level walks ask for all 256 bytes of a state, and most share a handful of classes.
   */
  private computeLexClass(lex: number, byte: number): void {
    const base = lex * 256 * STEP_FIELDS;
    this.computeLexStep(lex, byte, lex * 256 + byte);
    const steps = this.lexSteps; // after the step, which may have grown it
    const labels = this.byteLabels(lex);
    const label = labels[byte]!;
    const from = base + byte * STEP_FIELDS;
    for (let b = 0; b < 256; b++) {
      if (labels[b] !== label || b === byte) continue;
      const to = base + b * STEP_FIELDS;
      for (let k = 0; k < STEP_FIELDS; k++) steps[to + k] = steps[from + k]!;
    }
  }

  private computeLexStep(lex: number, byte: number, slot: number): void {
    this.lexSteps[slot * STEP_FIELDS] = 1; // no continuation (until found)
    const f = lex * LEX_FIELDS;
    const fields = this.lexFields;
    const scId = fields[f]!, dfaState = fields[f + 1]!, first0 = fields[f + 2]!, tokenLen0 = fields[f + 3]!, ignoredRun = fields[f + 4]!;
    const old = this.constraintLists[fields[f + 5]!]!;
    // Advance pending constraints: a forbidden terminal accepting kills the hypothesis.
    const constraints: number[] = [];
    for (let c = 0; c < old.length; c += 3) {
      const cs = this.scannerDfa(old[c]!);
      const ns = cs.dfa.next[old[c + 1]! * cs.dfa.numClasses + cs.dfa.byteClass[byte]!]!;
      if (ns < 0) continue;
      const upTo = old[c + 2]!;
      for (let p = 0; p <= upTo; p++) if (cs.accept[ns * cs.numPatterns + p]) return;
      let alive = false;
      for (let p = 0; p <= upTo && !alive; p++) if (cs.canAccept[ns * cs.numPatterns + p]) alive = true;
      if (alive) constraints.push(old[c]!, ns, upTo);
    }
    const sc = this.scannerDfa(scId);
    if (sc.broken) return;
    const d = sc.dfa;
    const P = sc.numPatterns;
    const ns = d.next[dfaState * d.numClasses + d.byteClass[byte]!]!;
    if (ns < 0) return;
    // The winner is the lowest-index terminal that ever matches at the token start.
    let first = first0;
    const limit = first < 0 ? sc.numOrdered : first;
    for (let p = 0; p < limit; p++) if (sc.accept[ns * P + p]) { first = p; break; }
    const tokenLen = Math.min(tokenLen0 + 1, this.maxIgnoredRun + 2);
    const newlyAccepted = first >= 0 && first !== first0;
    if (first >= 0 && sc.accept[ns * P + first] && (!sc.shortest[first] || newlyAccepted)) {
      const term = committedTerminal(sc, first, ns);
      // Longest match: no terminal up to the winner may match a longer run from here. Only kept
      // while one still can (most commits, a closing quote or a keyword, end every such run).
      const upTo = sc.shortest[first] ? first - 1 : first;
      const after = this.internConstraints(upTo < 0 || sc.minLaterPattern[ns]! > upTo ? constraints : [...constraints, scId, ns, upTo]);
      if (term.ignored) {
        const run = ignoredRun + tokenLen;
        if (run <= this.maxIgnoredRun) {
          const restart = this.internLex(scId, d.start, -1, 0, run, after); // may grow the table
          this.lexSteps[slot * STEP_FIELDS + 1] = restart + 1;
        }
      } else if (term.tableIndex >= 0) {
        this.lexSteps[slot * STEP_FIELDS + 2] = term.tableIndex + 1;
        this.lexSteps[slot * STEP_FIELDS + 3] = after;
      }
    }
    // Continuing pays off only if a later byte can make a terminal ≤ the winner-to-be accept
    // (strictly earlier terminals for a lazy winner, which never grows).
    const contBound = first < 0 ? sc.numOrdered - 1 : sc.shortest[first] ? first - 1 : first;
    if (contBound < 0 || sc.minLaterPattern[ns]! > contBound) return;
    let onlyIgnored = true;
    let mayBeIgnored = false;
    for (let p = 0; p <= contBound; p++) {
      if (!sc.canAccept[ns * P + p] && p !== first) continue;
      if (!sc.terms[sc.termOf[p]!]!.ignored) onlyIgnored = false;
      if (sc.ignorable[p]) mayBeIgnored = true;
    }
    // Ignored-run limit for a token that can only end up ignored.
    if (onlyIgnored && ignoredRun + tokenLen > this.maxIgnoredRun) return;
    const cont = mayBeIgnored
      ? this.internLex(scId, ns, first, tokenLen, ignoredRun, this.internConstraints(constraints))
      : this.internLex(scId, ns, first, 1, 0, this.internConstraints(constraints));
    this.lexSteps[slot * STEP_FIELDS] = cont + 2; // after interning, which may have grown the table
  }

  /**
   * One byte of the token in progress, whatever the stack: (continued lexer state + 1, or 0 when
   * the token cannot continue), | LEXER_COMMITS when a non-ignored terminal may end at this byte.
   */
  lexerStep(lex: number, byte: number): number {
    const slot = this.lexSlot(lex, byte);
    const steps = this.lexSteps;
    return (steps[slot * STEP_FIELDS]! - 1) | (steps[slot * STEP_FIELDS + 2]! > 0 ? LEXER_COMMITS : 0);
  }

  /**
   * One byte per class of bytes that step `lex` alike (the lexer sees a byte only through its
   * scanners' byte classes), printable ASCII first: searches over lexer states try these instead
   * of all 256 bytes. Read only.
   */
  lexerByteReps(lex: number): Uint8Array {
    const f = lex * LEX_FIELDS;
    const key = this.lexFields[f]! * 0x100000 + this.lexFields[f + 5]!;
    let reps = this.byteRepsMemo.get(key);
    if (reps === undefined) {
      const label = this.byteLabels(lex);
      const seen = new Uint8Array(256);
      const out: number[] = [];
      for (const b of BYTES_PRINTABLE_FIRST) {
        if (seen[label[b]!] === 0) {
          seen[label[b]!] = 1;
          out.push(b);
        }
      }
      reps = uint8Of(out);
      this.byteRepsMemo.set(key, reps);
    }
    return reps;
  }

  /** Per byte, a label equal for the bytes that step `lex` alike (see byteLabels). Read only. */
  lexerByteLabels(lex: number): Uint8Array {
    return this.byteLabels(lex);
  }

  /**
   * Per byte, a label equal for bytes that step `lex` alike: alike in the classes of its scanner's
   * DFA and of every DFA its pending constraints run (the lexer sees a byte only through them).
   * Refined one DFA at a time: label = class tuple so far, renumbered densely. Read only.
   */
  private byteLabels(lex: number): Uint8Array {
    const f = lex * LEX_FIELDS;
    const cs = this.constraintLists[this.lexFields[f + 5]!]!;
    const scannerClasses = this.scannerDfa(this.lexFields[f]!).dfa.byteClass;
    if (cs.length === 0) return scannerClasses;
    const key = this.lexFields[f]! * 0x100000 + this.lexFields[f + 5]!;
    let labels = this.byteLabelsMemo.get(key);
    if (labels === undefined) {
      labels = scannerClasses.slice();
      let numLabels = this.scannerDfa(this.lexFields[f]!).dfa.numClasses;
      for (let c = 0; c < cs.length; c += 3) {
        const { byteClass, numClasses } = this.scannerDfa(cs[c]!).dfa;
        const renumber = new Int32Array(numLabels * numClasses).fill(-1);
        let next = 0;
        for (let b = 0; b < 256; b++) {
          const pair = labels[b]! * numClasses + byteClass[b]!;
          if (renumber[pair] === -1) renumber[pair] = next++;
          labels[b] = renumber[pair]!;
        }
        numLabels = next;
      }
      this.byteLabelsMemo.set(key, labels);
    }
    return labels;
  }

  /** Lexer state after an ignored terminal ends at `byte` (same stack, new token), or -1. */
  lexerRestart(lex: number, byte: number): number {
    return this.lexSteps[this.lexSlot(lex, byte) * STEP_FIELDS + 1]! - 1;
  }

  /**
   * The terminal commit that may happen at `byte` as a key for `afterCommit` (the terminal and the
   * constraints the next token inherits), or -1 when no terminal ends there.
   */
  lexerCommitKey(lex: number, byte: number): number {
    const slot = this.lexSlot(lex, byte);
    const term = this.lexSteps[slot * STEP_FIELDS + 2]! - 1;
    return term < 0 ? -1 : this.lexSteps[slot * STEP_FIELDS + 3]! * this.grammar.table.terminals.length + term;
  }

  /**
   * The one-hypothesis state after a commit (`lexerCommitKey`) on `stack`: the parser fed the
   * terminal, a new token starts in the new top state's scanner. -1 when the parser refuses it.
   */
  afterCommit(stack: number, commitKey: number): number {
    const memoKey = commitKey < 0x400000 ? stack * 0x400000 + commitKey : -1; // exact below 2^53
    const hit = memoKey < 0 ? IntMap.MISSING : this.afterCommitMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const TT = this.grammar.table.terminals.length;
    const term = commitKey % TT;
    const st = this.feed(stack, term);
    const result = st < 0 ? -1 : this.intern([st, this.startLex(this.scannerFor(st), (commitKey - term) / TT)]);
    if (memoKey >= 0) this.afterCommitMemo.set(memoKey, result);
    return result;
  }

  /**
   * minBytesLowerBound(afterCommit(stack, commitKey)) without interning that state: a new token
   * starts there, so the bound is the stack's own. A greedy completion weighs every commit a
   * configuration offers and keeps one; interning the others' states would be wasted work.
   */
  lowerBoundAfterCommit(stack: number, commitKey: number): number {
    const st = this.feed(stack, commitKey % this.grammar.table.terminals.length);
    return st < 0 ? Infinity : this.stackCost(st);
  }

  /** The hypotheses of `state` as (stack, lexer state) pairs. Read only. */
  hypotheses(state: number): Int32Array {
    return this.sets[state]!;
  }

  /** The state of hypotheses (stack, l) for each lexer state l of `lexers` (-1 when empty). */
  withStack(stack: number, lexers: readonly number[]): number {
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
      const s = pairs[2 * i]!, l = pairs[2 * i + 1]!;
      let at = sorted.length;
      while (at > 0 && (sorted[at - 2]! > s || (sorted[at - 2] === s && sorted[at - 1]! > l))) at -= 2;
      if (at > 0 && sorted[at - 2] === s && sorted[at - 1] === l) continue;
      sorted.splice(at, 0, s, l);
    }
    if (sorted.length === 2) return this.internSingle(sorted[0]!, sorted[1]!);
    // By a hash of the pairs, candidates compared pair by pair (no string key per lookup).
    let h = 0x811c9dc5;
    for (let i = 0; i < sorted.length; i++) h = Math.imul(h ^ sorted[i]!, 0x01000193);
    let bucket = this.multiSetIds.get(h);
    if (bucket !== undefined) {
      for (let b = 0; b < bucket.length; b++) {
        const set = this.sets[bucket[b]!]!;
        if (set.length !== sorted.length) continue;
        let same = true;
        for (let i = 0; i < set.length && same; i++) if (set[i] !== sorted[i]) same = false;
        if (same) return bucket[b]!;
      }
    } else {
      bucket = [];
      this.multiSetIds.set(h, bucket);
    }
    const id = this.sets.length;
    this.sets.push(new Int32Array(sorted));
    bucket.push(id);
    return id;
  }

  private internSingle(stack: number, lex: number): number {
    // Numeric key while it stays exact (stack < 2^29, lexer state < 2^24); a string beyond.
    const numeric = stack < 0x20000000 && lex < 0x1000000;
    const key = numeric ? stack * 0x1000000 + lex : `${stack},${lex}`;
    let id = numeric ? this.singleSetIds.get(key as number) : (this.setIds.get(key as string) ?? IntMap.MISSING);
    if (id === IntMap.MISSING) {
      id = this.sets.length;
      this.sets.push(Int32Array.of(stack, lex));
      if (numeric) this.singleSetIds.set(key as number, id);
      else this.setIds.set(key as string, id);
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
    const out: number[] = [];
    for (let i = 0; i < hyps.length; i += 2) {
      const stack = hyps[i]!;
      const at = this.lexSlot(hyps[i + 1]!, byte) * STEP_FIELDS;
      const cont = this.lexSteps[at]! - 2;
      if (cont >= 0) out.push(stack, cont);
      const restart = this.lexSteps[at + 1]! - 1;
      if (restart >= 0) out.push(stack, restart);
      const term = this.lexSteps[at + 2]! - 1;
      if (term >= 0) {
        const st = this.feed(stack, term);
        if (st >= 0) out.push(st, this.startLex(this.scannerFor(st), this.lexSteps[at + 3]!));
      }
    }
    const id = this.intern(out);
    this.stepMemo.set(memoKey, id);
    return id;
  }

  /**
   * Bytes of the ignored run a lexer state has behind it, its token included while that may still
   * end up ignored (a constant for every other state: see computeLexStep).
   */
  lexerIgnoredRun(lex: number): number {
    const f = lex * LEX_FIELDS;
    return this.lexFields[f + 4]! + this.lexFields[f + 3]!;
  }

  /**
   * What ending the text here does to a lexer state's token in progress: the terminal the parser
   * is then fed (≥ 0), LEXER_END_KEEPS_STACK (a token boundary, or an ignored terminal within the
   * run limit), or -1 (the token cannot end here). A lazy winner ends only at its first match,
   * which a surviving hypothesis with that winner has just reached or already committed.
   */
  lexerEndKey(lex: number): number {
    const f = lex * LEX_FIELDS;
    const fields = this.lexFields;
    if (fields[f + 3] === 0) return LEXER_END_KEEPS_STACK;
    const sc = this.scannerDfa(fields[f]!);
    const dfaState = fields[f + 1]!, i = fields[f + 2]!;
    if (i < 0 || sc.accept[dfaState * sc.numPatterns + i] !== 1 || sc.shortest[i]) return -1;
    const term = committedTerminal(sc, i, dfaState);
    if (term.ignored) return this.lexerIgnoredRun(lex) <= this.maxIgnoredRun ? LEXER_END_KEEPS_STACK : -1;
    return term.tableIndex < 0 ? -1 : term.tableIndex;
  }

  /** The stack after the token in progress ends at the end of the text, or -1. */
  private stackAtEnd(stack: number, lex: number): number {
    const key = this.lexerEndKey(lex);
    return key >= 0 ? this.feed(stack, key) : key === LEXER_END_KEEPS_STACK ? stack : -1;
  }

  /** Whether the text so far is a complete sentence (Lark would parse it). */
  isComplete(state: number): boolean {
    if (state < 0) return false;
    const hit = this.completeMemo.get(state);
    if (hit !== IntMap.MISSING) return hit === 1;
    let result = false;
    const hyps = this.sets[state]!;
    for (let i = 0; i < hyps.length && !result; i += 2) {
      const st = this.stackAtEnd(hyps[i]!, hyps[i + 1]!);
      if (st >= 0 && this.feed(st, 0) === -2) result = true;
    }
    this.completeMemo.set(state, result ? 1 : 0);
    return result;
  }

  /** Feeds a whole string (UTF-8); -1 when rejected on the way. */
  walk(state: number, text: string): number {
    let s = state;
    for (const b of new TextEncoder().encode(text)) {
      s = this.step(s, b);
      if (s < 0) return -1;
    }
    return s;
  }

  /** Bytes that may come next from `state`. */
  allowedBytes(state: number): number[] {
    const out: number[] = [];
    for (let b = 0; b < 256; b++) if (this.step(state, b) >= 0) out.push(b);
    return out;
  }

  // Lower bounds for minimal completion: bytes per terminal / nonterminal, then per parser stack.
  private itemCosts: ItemCosts | null = null;
  /** Per stack; COST_INFINITY for Infinity. */
  private readonly stackCostMemo = new IdMap(MEMO_CAPACITY, this.tables);

  /**
   * Fewest bytes of each symbol (terminals: their shortest match; rules: a fixpoint), summed per
   * LR item from the dot to the rule's end: stackCost reads one number per kernel item.
   */
  private restCosts(): ItemCosts {
    if (this.itemCosts) return this.itemCosts;
    const m = new Map<string, number>();
    for (const [name, t] of this.grammar.terminals) m.set(name, t.minWidth);
    const rules = this.grammar.table.rules;
    for (let changed = true; changed; ) {
      changed = false;
      for (const r of rules) {
        let c = 0;
        for (const s of r.expansion) {
          const v = m.get(s);
          if (v === undefined) { c = Infinity; break; }
          c += v;
        }
        if (c < (m.get(r.origin) ?? Infinity)) { m.set(r.origin, c); changed = true; }
      }
    }
    const base = new Int32Array(rules.length + 1);
    for (let r = 0; r < rules.length; r++) base[r + 1] = base[r]! + rules[r]!.expansion.length + 1;
    const rest = new Float64Array(base[rules.length]!);
    const root = new Uint8Array(rules.length);
    for (let r = 0; r < rules.length; r++) {
      const expansion = rules[r]!.expansion;
      for (let dot = expansion.length - 1; dot >= 0; dot--) rest[base[r]! + dot] = rest[base[r]! + dot + 1]! + (m.get(expansion[dot]!) ?? Infinity);
      root[r] = rules[r]!.origin.startsWith("$root_") ? 1 : 0;
    }
    return (this.itemCosts = { base, rest, root });
  }

  /** Lower bound on the bytes that complete the parse from an interned stack. */
  private stackCost(stack: number, depth = 0): number {
    const hit = this.stackCostMemo.get(stack);
    if (hit !== IntMap.MISSING) return hit === COST_INFINITY ? Infinity : hit;
    if (depth > 200) return 0; // keep it a lower bound on pathological chains
    this.stackCostMemo.set(stack, COST_INFINITY); // cycles cannot be cheaper
    const t = this.grammar.table;
    const { base, rest: restOf, root } = this.restCosts();
    const top = this.stackTop[stack]!;
    let best = Infinity;
    const kernel = t.kernels[top]!;
    for (let k = 0; k < kernel.length; k += 2) {
      const rule = kernel[k]!;
      const dot = kernel[k + 1]!;
      const rest = restOf[base[rule]! + dot]!;
      if (rest >= best) continue;
      if (root[rule] === 1) { best = Math.min(best, rest); continue; }
      let st = stack;
      for (let i = 0; i < dot; i++) st = this.stackParent[st]!;
      const g = t.goto[this.stackTop[st]! * t.nonterminals.length + t.ruleLhs[rule]!]!;
      if (g < 0) continue;
      best = Math.min(best, rest + this.stackCost(this.pushStack(st, g), depth + 1));
    }
    this.stackCostMemo.set(stack, best >= COST_INFINITY ? COST_INFINITY : best);
    return best;
  }

  /**
   * Admissible lower bound on the bytes still needed from `state` to a complete sentence
   * (Infinity for a dead state). Ignores token separation, so it can undercount.
   */
  minBytesLowerBound(state: number): number {
    if (state < 0) return Infinity;
    let best = Infinity;
    const hyps = this.sets[state]!;
    const fields = this.lexFields;
    for (let i = 0; i < hyps.length; i += 2) {
      const stack = hyps[i]!;
      const f = hyps[i + 1]! * LEX_FIELDS;
      if (fields[f + 3] === 0) { best = Math.min(best, this.stackCost(stack)); continue; }
      const sc = this.scannerDfa(fields[f]!);
      const dfaState = fields[f + 1]!, first = fields[f + 2]!;
      const bound = first < 0 ? sc.numOrdered - 1 : first;
      for (let p = 0; p <= bound; p++) {
        const d = sc.dist[dfaState * sc.numPatterns + p]!;
        if (d < 0 || d >= best) continue;
        const term = sc.terms[sc.termOf[p]!]!;
        let after: number;
        if (term.ignored) after = this.stackCost(stack);
        else {
          if (term.tableIndex < 0) continue;
          const st = this.feed(stack, term.tableIndex);
          if (st < 0) continue;
          after = this.stackCost(st);
        }
        best = Math.min(best, d + after);
      }
    }
    return best;
  }

  /**
   * Fewest bytes from `state` to a complete sentence: A* over the automaton with
   * `minBytesLowerBound` as heuristic. -1 when none is found within `maxExpansions` states.
   */
  minBytesToComplete(state: number, maxExpansions = 20000): number {
    if (state < 0) return -1;
    const found = searchCheapestGoal([state], {
      lowerBound: (s) => this.minBytesLowerBound(s),
      isGoal: (s) => this.isComplete(s),
      expand: (s, relax) => {
        for (let b = 0; b < 256; b++) {
          const ns = this.step(s, b);
          if (ns >= 0) relax(ns, 1);
        }
      },
    }, maxExpansions);
    return found === null ? -1 : found.cost;
  }
}

export function createGrammarAutomaton(grammar: Grammar, opts?: IncrementalOptions): GrammarAutomaton {
  return new GrammarAutomaton(grammar, opts);
}
