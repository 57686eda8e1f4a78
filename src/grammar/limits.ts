// Resource limits of a grammar compile (compileGrammar + the automaton's scanner DFAs), so that a
// hostile grammar of a few hundred bytes is refused in milliseconds with a typed error instead of
// hanging the compile or exhausting the heap. Every limit is checked before the structure it
// bounds is built (sizes are computed first, over the shared DAGs the compile makes), or as it
// grows (states, rules), never after.
//
// Errors: a resource limit throws GrammarTooComplexError (the server answers 422 "too complex"),
// naming the limit; nesting deeper than maxNesting throws a plain GrammarError with the line and
// column (400: the text itself is refused, as Lark's own recursion would refuse it).

import { regexClock } from "../regex/index.js";
import { GrammarError } from "./errors.js";

/**
 * Default work budget of a grammar compile, scanners included. Measured here: python.lark takes
 * ~N units (~0.4 s); ~65k units are a millisecond of the heaviest loops.
 */
export const GRAMMAR_MAX_WORK = 400_000_000;

export interface GrammarLimits {
  /**
   * Deepest nesting of `()`, `[]` and `{}` in the grammar text, of groups in one of its regexps,
   * and of groups in a terminal's pattern once terminal references are substituted. The compile's
   * tree and regexp passes recurse on it; Lark itself fails past about 300.
   */
  maxNesting: number;
  /** Terminals after compile (named + anonymous + ignored): the lexer's and the tables' width. */
  maxTerminals: number;
  /**
   * BNF rules after EBNF, templates and `~` repeats are expanded (Lark's alternatives are
   * distributed out, so `[a] [b] [c]…` counts 2^n); counted before they are made. Template
   * instances count too, so recursive templates (`a{x}: a{b{x}}`) stop here.
   */
  maxRules: number;
  /** Longest chain of terminal references (`A: B`, `B: C`, …). */
  maxReferenceDepth: number;
  /** Longest terminal pattern (regexp characters) after references are substituted. */
  maxPatternChars: number;
  /**
   * All terminals' patterns together, after references are substituted: what the grammar keeps
   * of them (the text, its parsed form: ~180 bytes a character) and what the lexers compile.
   */
  maxTotalPatternChars: number;
  /** Per scanner DFA (as regex's maxDfaStates). */
  maxDfaStates: number;
  /** Per scanner NFA (as regex's maxNfaStates): counted repeats in terminals, `("a"~1000)~1000`. */
  maxNfaStates: number;
  /**
   * Σ over a grammar's scanner DFAs of states × (byte classes + patterns): the automaton's lexer
   * tables (a transition is 4 bytes; per pattern a state has a distance, 4 bytes, and 2 flags).
   * A scanner of many terminals has about states × terminals cells: 1,000 six-letter keywords
   * acceptable in one parser state give 4,500 states × 1,000 (4.6M cells, 29 MB).
   */
  maxScannerCells: number;
  /** Σ symbols over the BNF rules (the LALR items), and the size a `~` repeat spells out. */
  maxRuleSymbols: number;
  /**
   * LALR states × (terminals + nonterminals): the action and goto tables, 4 bytes a cell. The
   * analysis's other sizes are held to it too: closure items over all states, and lookahead
   * relations (deeply nested optional parts make millions of them from one short rule).
   */
  maxTableCells: number;
  /**
   * Longest rule name a template instance may get: its arguments' names are spelled inside it,
   * so templates passing instances of instances double it at each step.
   */
  maxNameChars: number;
  /**
   * Work budget of compileGrammar + the automaton's scanner DFAs together, in units of about one
   * inner-loop iteration (see CompileClock): the deterministic bound.
   */
  maxWork: number;
  /** Wall-clock safety valve of the same (Infinity: none); what it stops depends on load. */
  timeoutMs: number;
}

/**
 * Far above what real grammars use, so that only hostile or generated ones meet them. The
 * largest real grammars we have, Lark's python.lark (10.7 KB; its STRING terminals simplified to
 * what the byte automaton takes) and the corpus in test/grammars, use at most: 101 terminals,
 * 540 BNF rules, 1,283 rule symbols, 798 LALR states × 281 symbols = 224k table cells, 150
 * scanners with 911k scanner cells, patterns of 225 characters (994 in all), reference chains
 * of 6, nesting of 6, template instance names of 32 characters; python.lark compiles in ~100 ms
 * and builds its scanners in ~300 ms here. Defaults are 10× or more above those, except the
 * scanner cells (6.6×), which dominate memory; maxWork is ~10× python.lark's total, for 64 KB
 * grammars and slower machines.
 *
 * Worst case retained by one compiled grammar + its automaton under these defaults, from what
 * each limit bounds (rates measured with grammars near each limit, heap + array buffers):
 *   - LALR tables and the scanners' terminal lists: ~6 B per table cell measured (action + goto
 *     4 B; accept lists and scanner lists at most 4 B + 8 B more): 18 MB, at most 48 MB;
 *   - scanner DFAs: ~6.5 B per scanner cell (a transition 4 B; per pattern a distance 4 B and two
 *     flag bytes): 39 MB;
 *   - terminal patterns: ~180 B per character (the regexp, its parsed form, the lexer terminal):
 *     12 MB;
 *   - BNF rules: ~100 B per rule and 8 B per symbol: 4 MB;
 * about 75 MB at the rates measured (100 MB at the most), against 9 MB for python.lark
 * (3 MB grammar, 6 MB automaton). Before the limits, 64 KB grammars of many overlapping terminals
 * took ~145 MB each. Lexer states and steps the automaton memoizes while it is used come on top
 * (generate/ bounds them per automaton).
 */
export const DEFAULT_GRAMMAR_LIMITS: Readonly<GrammarLimits> = Object.freeze({
  maxNesting: 100,
  maxTerminals: 5_000,
  maxRules: 20_000,
  maxReferenceDepth: 100,
  maxPatternChars: 32_768,
  maxTotalPatternChars: 65_536,
  maxDfaStates: 20_000,
  maxNfaStates: 200_000,
  maxScannerCells: 6_000_000,
  maxRuleSymbols: 200_000,
  maxTableCells: 3_000_000,
  maxNameChars: 4_096,
  maxWork: GRAMMAR_MAX_WORK,
  timeoutMs: Number.POSITIVE_INFINITY,
});

/** The defaults with `partial`'s entries over them (an entry left undefined keeps its default). */
export function resolveLimits(partial?: Partial<GrammarLimits>): GrammarLimits {
  const limits = { ...DEFAULT_GRAMMAR_LIMITS };
  if (partial) {
    for (const key of Object.keys(partial) as (keyof GrammarLimits)[]) {
      const v = partial[key];
      if (v !== undefined) limits[key] = v;
    }
  }
  return limits;
}

/** A resource limit of GrammarLimits was exceeded (HTTP 422: the grammar is valid but too big). */
export class GrammarTooComplexError extends GrammarError {
  constructor(
    message: string,
    readonly limit: keyof GrammarLimits,
    /** The amount that went over (terminals, rules, characters…), when it was counted. */
    readonly value?: number,
  ) {
    super(message);
    this.name = "GrammarTooComplexError";
  }
}

/** A name as the messages print it: a literal's terminal or a template instance can be kilobytes long. */
export function shortName(name: string): string {
  return name.length <= 48 ? name : `${name.slice(0, 45)}…`;
}

/** A count as the messages print it: digits grouped, astronomically large ones as a power. */
export function formatCount(n: number): string {
  if (!Number.isFinite(n) || n >= 1e15) return "more than 10^15";
  return Math.round(n).toLocaleString("en-US");
}

/**
 * `grammar too complex: 1,204 terminals, more than the limit of 1,000 (maxTerminals)`; `where`
 * says what had that much when it is one part of the grammar (a terminal, a rule).
 */
export function tooComplex(
  limits: GrammarLimits,
  limit: keyof GrammarLimits,
  value: number,
  unit: string,
  where?: string,
): GrammarTooComplexError {
  const subject = where === undefined ? "" : `${where}: `;
  return new GrammarTooComplexError(
    `grammar too complex: ${subject}${formatCount(value)} ${unit}, more than the limit of ${formatCount(limits[limit])} (${limit})`,
    limit,
    Number.isFinite(value) ? value : undefined,
  );
}

/**
 * Nesting past maxNesting: a plain GrammarError (400), at the line and column where it happens.
 * The position is in its fields, not its message: the refusal adds it once (refusalOf).
 */
export function nestingTooDeep(maxNesting: number, what: string, line?: number, column?: number): GrammarError {
  return new GrammarError(`${what} nesting deeper than ${maxNesting} (maxNesting)`, line, column);
}

/** Work units between two readings of the wall clock: ~0.1 ms of the cheapest loops. */
const CLOCK_STRIDE = 4096;

/**
 * The compile's budget. Passes report their work in units (a loop iteration, a character), and
 * regex compiles inside it (terminals, scanner DFAs) are charged what they count (`sub`):
 * - past `maxWork` units the grammar is refused ("maxWork"): the same verdict on any machine;
 * - `timeoutMs` is only a wall-clock safety valve ("timeoutMs", depends on load; never kept),
 *   read once per CLOCK_STRIDE units, so a check costs an addition and a comparison.
 * Lives only during a compile: the Grammar and the automaton keep none of it.
 */
export class CompileClock {
  private work: number;
  private nextCheck: number;
  readonly deadline: number;

  /**
   * `maxWork`, `timeoutMs`: the limits (what messages name); `workBefore`, `msBefore`: what an
   * earlier stage used of them (the automaton's scanners after compileGrammar).
   */
  constructor(
    readonly maxWork: number,
    readonly timeoutMs: number,
    workBefore = 0,
    start = performance.now(),
    msBefore = 0,
  ) {
    this.work = workBefore;
    this.nextCheck = workBefore + CLOCK_STRIDE;
    this.deadline = start + timeoutMs - msBefore;
  }

  /** Units spent so far, earlier stages' included. */
  get workUsed(): number {
    return this.work;
  }

  spend(units: number): void {
    if ((this.work += units) >= this.nextCheck) this.check();
  }

  /** Checks both limits now (before and after steps whose work is not counted in units). */
  check(): void {
    this.nextCheck = this.work + CLOCK_STRIDE;
    if (this.work > this.maxWork) throw workExceeded(this.maxWork);
    if (this.deadline !== Infinity && performance.now() > this.deadline) throw timeExceeded(this.timeoutMs);
  }

  /** What is left of the wall-clock valve, in ms (0 when spent). */
  remainingMs(): number {
    return Math.max(0, this.deadline - performance.now());
  }

  /** What is left of the work budget, in units. */
  workLeft(): number {
    return Math.max(0, this.maxWork - this.work);
  }

  /**
   * A regex compile inside this one: `compile` gets what is left of both limits, and the units
   * the regex clock counted for it are spent here (a refusal for either limit is then this
   * compile's own, from check()).
   */
  sub<T>(compile: (limits: { maxWork: number; timeoutMs: number }) => T): T {
    const before = regexClock.used;
    try {
      return compile({ maxWork: this.workLeft(), timeoutMs: this.remainingMs() });
    } finally {
      this.work += regexClock.used - before;
    }
  }
}

export function workExceeded(maxWork: number): GrammarTooComplexError {
  return new GrammarTooComplexError(
    `grammar too complex: compiling it needs more than the limit of ${formatCount(maxWork)} units of work (maxWork)`,
    "maxWork",
  );
}

export function timeExceeded(timeoutMs: number): GrammarTooComplexError {
  return new GrammarTooComplexError(
    `grammar too complex: compiling it takes more than the limit of ${formatCount(timeoutMs)} ms (timeoutMs)`,
    "timeoutMs",
  );
}

/** What the compile passes carry: the limits in force and the clock. */
export interface CompileBudget {
  readonly limits: GrammarLimits;
  readonly clock: CompileClock;
}

export function compileBudget(partial?: Partial<GrammarLimits>, start?: number): CompileBudget {
  const limits = resolveLimits(partial);
  return { limits, clock: new CompileClock(limits.maxWork, limits.timeoutMs, 0, start) };
}
