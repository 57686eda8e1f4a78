// A scanner's byte DFA: one multi-pattern DFA (src/regex) over its terminals in Lark's order,
// each terminal's top-level alternatives as ordered patterns and its `unless` keywords as
// shadows, with the per-pattern tables the lexer states read (acceptance, reachability,
// distances). Also which scanners of a grammar are built with the compile (refused then if too
// big) and which wait for first use. Patterns are read from each terminal's syntax tree
// (regex/syntax.ts, read once by the lexer): its top-level alternatives and lazy quantifiers.

import {
  compileMultiRegexNodes,
  lowerSyntax,
  patternDistances,
  readRegexSyntax,
  syntaxChildren,
  RegexSyntaxError,
  RegexTooComplexError,
  type MultiByteDfa,
} from "../regex/index.js";
import { int32Of, uint8Of } from "../support/index.js";
import { ESCAPED_STRING_REGULAR } from "./common-lark.js";
import { patternToRegexp } from "./lark/patterns.js";
import { GrammarError } from "./errors.js";
import type { Grammar } from "./grammar.js";
import type { LexTerminal, Scanner } from "./lexer.js";
import {
  CompileClock,
  GrammarTooComplexError,
  nestingTooDeep,
  resolveLimits,
  shortName,
  timeExceeded,
  workExceeded,
  tooComplex,
  type GrammarLimits,
} from "./limits.js";
import { pythonPreferenceModelled } from "./python-preference.js";
import type { RegexSyntaxNode } from "./pyregex.js";

const LARK_ESCAPED_STRING = String.raw`".*?(?<!\\)(\\\\)*?"`;

export interface ScannerDfa {
  readonly dfa: MultiByteDfa;
  /** Terminals in Lark's order. */
  readonly terms: readonly LexTerminal[];
  /** Ordered patterns (a terminal's top-level alternatives, in order) → index in `terms`. */
  readonly termOf: Int32Array;
  /** Patterns [0, numOrdered) are ordered alternatives; the rest are `unless` shadows. */
  readonly numOrdered: number;
  /** For pattern i: 1 where the pattern is Python-lazy (its match is the shortest). */
  readonly shortest: Uint8Array;
  /** canAccept[state * numPatterns + p]: pattern p still reachable from state. */
  readonly canAccept: Uint8Array;
  /** Lowest pattern index that can still accept after at least one more byte (large: none). */
  readonly minLaterPattern: Int32Array;
  /** dist[state * numPatterns + p]: fewest bytes until pattern p accepts (-1: never). */
  readonly dist: Int32Array;
  /** accept[state * numPatterns + p] */
  readonly accept: Uint8Array;
  /** For terminal i: [shadow pattern index, string terminal] pairs (Lark's unless). */
  readonly unless: readonly (readonly [number, LexTerminal])[][];
  readonly numPatterns: number;
  /** Lark cannot compile this scanner's joined regexp (see Scanner.broken): nothing lexes. */
  readonly broken: boolean;
  /** For ordered pattern i: 1 when committing it may give an ignored terminal (itself or a shadow). */
  readonly ignorable: Uint8Array;
}

/**
 * The terminal a token of ordered pattern `pattern` commits as at scanner DFA state `dfaState`:
 * the pattern's own, or the string terminal it shadows when that matches too (Lark's unless).
 */
export function committedTerminal(sc: ScannerDfa, pattern: number, dfaState: number): LexTerminal {
  const t = sc.termOf[pattern]!;
  for (const [shadow, str] of sc.unless[t]!) if (sc.accept[dfaState * sc.numPatterns + shadow]) return str;
  return sc.terms[t]!;
}

/** What an automaton's compile built for its scanners, as plain data (structured-cloneable). */
export interface ScannerParts {
  /** Per scanner id; undefined where the DFA is built on first use (see surelyBuiltStates). */
  readonly scannerDfas: readonly (ScannerDfa | undefined)[];
  readonly approximate: readonly string[];
}

/** What building a grammar's scanner DFAs may still spend. */
export interface ScannerBudget {
  readonly limits: GrammarLimits;
  readonly clock: CompileClock;
  /** Cells (states × (byte classes + patterns)) of the scanner DFAs so far, or bounds on them. */
  cells: number;
}

/** A grammar's distinct scanners, numbered, and the DFAs its compile builds for them. */
export interface GrammarScanners {
  /** Per scanner id: its terminals. */
  readonly scanners: Scanner[];
  /** Per scanner id: its byte DFA, or undefined until its first use (see surelyBuiltStates). */
  readonly scannerDfas: (ScannerDfa | undefined)[];
  /** Per LALR state: the id of its scanner. */
  readonly scannerOfState: Int32Array;
}

/**
 * Numbers the scanners of the grammar's parser states and builds their DFAs, under `limits`
 * with what compileGrammar left of its time. Terminals in `approximate` are recorded there.
 */
export function buildGrammarScanners(
  grammar: Grammar,
  limits: GrammarLimits,
  approximate: Set<string>,
  prebuilt: ScannerParts | undefined,
): GrammarScanners {
  const table = grammar.table;
  const clock = new CompileClock(limits.maxWork, limits.timeoutMs, grammar.compileWork ?? 0, performance.now(), grammar.compileMs ?? 0);
  const budget: ScannerBudget = { limits, clock, cells: 0 };
  const scanners: Scanner[] = [];
  const scannerDfas: (ScannerDfa | undefined)[] = [];
  const scannerOfState = new Int32Array(table.numStates);
  const byScanner = new Map<Scanner, number>();
  for (let s = 0; s < table.numStates; s++) {
    const sc = grammar.scanners[s]!;
    let id = byScanner.get(sc);
    if (id === undefined) {
      id = scanners.length;
      scanners.push(sc);
      // Built now, so a scanner that cannot become a DFA (too many states, a timeout) is a
      // GrammarError of the compile (a 400), never of a later request's walk. Only scanners
      // that provably cannot fail wait for their first use: a small grammar's first mask
      // reaches two of its five scanners, and each costs a DFA construction. Their tables
      // count against maxScannerCells now, by a bound on their size. A DFA another automaton of
      // this grammar built (a compile worker's) is taken as it is.
      const built = prebuilt?.scannerDfas[id];
      const surelyBuilt = surelyBuiltStates(sc);
      if (built === undefined && surelyBuilt > 0) addScannerCells(budget, surelyBuilt * (surelyBuilt + 1 + scannerPatterns(sc)));
      scannerDfas.push(built ?? (surelyBuilt > 0 ? undefined : buildScannerDfa(sc, approximate, budget)));
      byScanner.set(sc, id);
    }
    scannerOfState[s] = id;
  }
  return { scanners, scannerDfas, scannerOfState };
}

const excerpt = (s: string): string => (s.length <= 80 ? s : `${s.slice(0, 77)}...`);

/**
 * Terminals the byte automaton cannot represent, refused by name. A backreference is the one
 * construct the lexer leaves out of its scanners (Lark's joined regexp renumbers groups, so such a
 * terminal never matches or breaks its scanner), so the DFAs never meet it: without this check
 * the grammar compiled and matched nothing, and requests failed later with a 422.
 */
export function refuseUnsupportedTerminals(grammar: Grammar): void {
  for (const t of grammar.terminals.values()) {
    const ref = firstBackref(t.parsed.root);
    if (ref !== null)
      throw new GrammarError(
        `terminal ${shortName(t.name)}: backreference \\${ref} is unsupported: the byte automaton cannot represent it (in /${excerpt(patternToRegexp(t.def.pattern))}/)`,
      );
  }
}

function firstBackref(n: RegexSyntaxNode): number | null {
  if (n.k === "backref") return n.index;
  for (const child of syntaxChildren(n)) {
    const ref = firstBackref(child);
    if (ref !== null) return ref;
  }
  return null;
}

/** Whether a node has a lazy quantifier (Python then prefers the shortest match of the pattern). */
function hasLazy(n: RegexSyntaxNode): boolean {
  return (n.k === "rep" && n.lazy) || syntaxChildren(n).some(hasLazy);
}

/**
 * Python tries a top-level alternation's branches in order, like a scanner's terminals: the
 * branches of the pattern's tree, through non-capturing and scoped-flag groups (which the tree
 * already dissolved, their flags kept on each node), not through capturing ones.
 */
export function topAlternatives(root: RegexSyntaxNode): RegexSyntaxNode[] {
  return root.k === "alt" ? root.alts.flatMap(topAlternatives) : [root];
}

/** ESCAPED_STRING_REGULAR's tree (Lark's ESCAPED_STRING stands for it; read once). */
let escapedStringTree: RegexSyntaxNode | undefined;

/** Raw DFA states below which determinization neither checks its clock nor nears a limit. */
const SURELY_BUILT_STATES = 48;

/**
 * Whether a regexp is one class of printable ASCII characters and ordered ranges, nothing else
 * (no negation, escapes or stray '-'): `[a-z]`, a Lark range `"a".."z"`. Such a class matches one
 * byte, and its regexp surely compiles.
 */
function isSimpleAsciiClass(re: string): boolean {
  const n = re.length - 1;
  if (n < 2 || re.charCodeAt(0) !== 0x5b || re.charCodeAt(n) !== 0x5d) return false;
  const plain = (c: number): boolean => c >= 0x20 && c <= 0x7e && c !== 0x5b && c !== 0x5c && c !== 0x5d && c !== 0x5e && c !== 0x2d;
  for (let i = 1; i < n; ) {
    const c = re.charCodeAt(i);
    if (!plain(c)) return false;
    if (i + 1 < n && re.charCodeAt(i + 1) === 0x2d) {
      const d = re.charCodeAt(i + 2);
      if (i + 2 >= n || !plain(d) || d < c) return false;
      i += 3;
    } else i++;
  }
  return true;
}

/**
 * A bound on the states of the scanner's DFA when buildScannerDfa surely succeeds and records
 * nothing in `approximate`, else 0: every terminal (and every keyword its `unless` holds) a plain
 * literal or one ASCII character of a class, and few of them. Each live prefix of such patterns
 * is a literal's prefix or one class character, so the DFA has at most 2 + Σ literal bytes +
 * #classes states: far under every limit, and a few microseconds of work.
 */
function surelyBuiltStates(sc: Scanner): number {
  if (sc.broken) return 0;
  let states = 2;
  const add = (t: LexTerminal): boolean => {
    const p = t.def.pattern;
    if (p.flags !== "") return false;
    if (p.type === "str") states += Buffer.byteLength(p.value, "utf8");
    else if (isSimpleAsciiClass(p.value)) states += 1;
    else return false;
    return states < SURELY_BUILT_STATES;
  };
  for (const t of sc.order) if (!add(t)) return 0;
  for (const keywords of sc.unless.values()) for (const t of keywords) if (!add(t)) return 0;
  return states;
}

/** A bound on a scanner DFA's patterns: its terminals and their unless keywords (simple ones are not split). */
function scannerPatterns(sc: Scanner): number {
  let n = sc.order.length;
  for (const keywords of sc.unless.values()) n += keywords.length;
  return n;
}

function addScannerCells(budget: ScannerBudget, cells: number): void {
  budget.cells += cells;
  if (budget.cells > budget.limits.maxScannerCells)
    throw tooComplex(
      budget.limits,
      "maxScannerCells",
      budget.cells,
      "cells in the lexers' tables (scanner DFA states × (byte classes + terminals))",
    );
}

/**
 * A regex-stage refusal of a scanner's patterns as a GrammarError naming the terminal: a
 * construct the byte DFA cannot represent is "unsupported" (400), a limit is
 * GrammarTooComplexError (422).
 */
function scannerDfaError(e: unknown, specOwner: readonly LexTerminal[], specSource: readonly string[], limits: GrammarLimits): Error {
  if (e instanceof RegexSyntaxError) {
    const i = e.alternative;
    const owner = i === undefined ? undefined : specOwner[i];
    const where = owner === undefined ? "a terminal" : `terminal ${shortName(owner.name)}`;
    const what =
      e.construct === undefined
        ? "cannot be turned into a byte automaton"
        : `${e.construct} is unsupported: the byte automaton cannot represent it`;
    return new GrammarError(`${where}: ${what} (${e.message} in /${excerpt(specSource[i ?? 0] ?? "")}/)`);
  }
  if (e instanceof RegexTooComplexError) {
    const names = specOwner.filter((t, j) => specOwner.indexOf(t) === j).map((t) => shortName(t.name));
    const scanner = `the lexer of ${names.slice(0, 5).join(", ")}${names.length > 5 ? `, … (${names.length} terminals)` : ""}`;
    switch (e.limit) {
      case "dfaStates":
        return new GrammarTooComplexError(
          `grammar too complex: ${scanner} needs a DFA of more than the limit of ${limits.maxDfaStates.toLocaleString("en-US")} states (maxDfaStates)`,
          "maxDfaStates",
        );
      case "nfaStates":
        return new GrammarTooComplexError(
          `grammar too complex: ${scanner} needs an NFA of more than the limit of ${limits.maxNfaStates.toLocaleString("en-US")} states (maxNfaStates; large counted repeats?)`,
          "maxNfaStates",
        );
      case "time":
        return timeExceeded(limits.timeoutMs);
      case "work":
        return workExceeded(limits.maxWork);
      case "nesting":
        return nestingTooDeep(limits.maxNesting, `${scanner}: regexp groups`);
    }
  }
  if (e instanceof GrammarError) return e;
  return new GrammarError(`Grammar terminals cannot be turned into a byte automaton: ${(e as Error).message}`);
}

/** A scanner's patterns in DFA order: the ordered alternatives of its terminals, then the unless shadows. */
interface ScannerPatterns {
  readonly specs: RegexSyntaxNode[];
  /** Per pattern, the source of the terminal it comes from (for the refusals' messages). */
  readonly sources: string[];
  readonly shortest: number[];
  readonly termOf: number[];
  readonly numOrdered: number;
  readonly unless: (readonly [number, LexTerminal])[][];
  /** Per pattern, the terminal it is of (for the refusals' messages). */
  readonly specOwner: LexTerminal[];
}

/** The patterns of a scanner's terminals; those whose Python match is only approximated go into `approximate`. */
function orderedPatterns(sc: Scanner, approximate: Set<string>, clock: CompileClock | undefined): ScannerPatterns {
  const terms = sc.order;
  const specs: RegexSyntaxNode[] = [];
  const sources: string[] = [];
  const shortest: number[] = [];
  const termOf: number[] = [];
  terms.forEach((t, ti) => {
    const isRe = t.def.pattern.type === "re";
    const source = patternToRegexp(t.def.pattern);
    const escapedString = source === LARK_ESCAPED_STRING;
    const root = escapedString ? (escapedStringTree ??= readRegexSyntax(ESCAPED_STRING_REGULAR, { python: true }).root) : t.parsed.root;
    for (const alt of isRe ? topAlternatives(root) : [root]) {
      if (isRe && !escapedString && !pythonPreferenceModelled(alt, clock)) approximate.add(t.name);
      specs.push(alt);
      sources.push(source);
      shortest.push(isRe && hasLazy(alt) ? 1 : 0);
      termOf.push(ti);
    }
  });
  const numOrdered = specs.length;
  const unless: (readonly [number, LexTerminal])[][] = terms.map(() => []);
  terms.forEach((t, i) => {
    for (const s of sc.unless.get(t.name) ?? []) {
      unless[i]!.push([specs.length, s]);
      specs.push(s.parsed.root);
      sources.push(patternToRegexp(s.def.pattern));
    }
  });
  const specOwner: LexTerminal[] = termOf.map((ti) => terms[ti]!);
  for (const list of unless) for (const [, s] of list) specOwner.push(s);
  return { specs, sources, shortest, termOf, numOrdered, unless, specOwner };
}

/** The patterns' multi-pattern DFA and its per-pattern distances, a refusal as the grammar's error. */
function compileScannerPatterns(patterns: ScannerPatterns, budget: ScannerBudget | undefined): { dfa: MultiByteDfa; dist: Int32Array } {
  const { specs, sources, specOwner } = patterns;
  const limits = budget?.limits;
  // Read the clock before each DFA: the compile may have used up the budget already.
  budget?.clock.check();
  let dfa: MultiByteDfa;
  let dist: Int32Array;
  try {
    const nodes = specs.map((node, i) => {
      try {
        return lowerSyntax(node);
      } catch (e) {
        if (e instanceof RegexSyntaxError) e.alternative = i;
        throw e;
      }
    });
    if (budget === undefined || limits === undefined) {
      dfa = compileMultiRegexNodes(nodes, {});
      dist = patternDistances(dfa);
    } else {
      const { maxDfaStates, maxNfaStates } = limits;
      const built = budget.clock.sub((left) => compileMultiRegexNodes(nodes, { maxDfaStates, maxNfaStates, ...left }));
      // The per-pattern tables below are states × patterns: counted before they are made.
      addScannerCells(budget, built.numStates * (built.numClasses + specs.length));
      dfa = built;
      dist = budget.clock.sub((left) => patternDistances(built, left.maxWork, left.timeoutMs));
    }
  } catch (e) {
    throw scannerDfaError(e, specOwner, sources, limits ?? resolveLimits());
  }
  return { dfa, dist };
}

/** Per state and pattern, acceptance and reachability; per state, the lowest pattern still reachable a byte on. */
function patternTables(
  dfa: MultiByteDfa,
  dist: Int32Array,
  P: number,
  clock: CompileClock | undefined,
): { accept: Uint8Array; canAccept: Uint8Array; minLaterPattern: Int32Array } {
  const S = dfa.numStates;
  clock?.spend(S * P);
  const accept = new Uint8Array(S * P);
  for (let s = 0; s < S; s++) {
    for (let p = 0; p < P; p++) {
      if ((dfa.acceptMask[s * dfa.acceptWords + (p >>> 5)]! & (1 << (p & 31))) !== 0) accept[s * P + p] = 1;
    }
  }
  const canAccept = new Uint8Array(S * P);
  for (let i = 0; i < S * P; i++) if (dist[i]! >= 0) canAccept[i] = 1;
  const minLaterPattern = new Int32Array(S).fill(0x7fffffff);
  for (let st = 0; st < S; st++) {
    let scanned = dfa.numClasses;
    for (let c = 0; c < dfa.numClasses; c++) {
      const ns = dfa.next[st * dfa.numClasses + c]!;
      if (ns < 0) continue;
      let p = 0;
      for (; p < minLaterPattern[st]! && p < P; p++)
        if (canAccept[ns * P + p]) {
          minLaterPattern[st] = p;
          break;
        }
      scanned += p;
    }
    clock?.spend(scanned);
  }
  return { accept, canAccept, minLaterPattern };
}

/** A scanner's DFA and tables; `budget`: the compile's (none when built on first use, see buildGrammarScanners). */
export function buildScannerDfa(sc: Scanner, approximate: Set<string>, budget?: ScannerBudget): ScannerDfa {
  const terms = sc.order;
  const patterns = orderedPatterns(sc, approximate, budget?.clock);
  const { numOrdered, termOf, unless } = patterns;
  const { dfa, dist } = compileScannerPatterns(patterns, budget);
  const P = patterns.specs.length;
  const { accept, canAccept, minLaterPattern } = patternTables(dfa, dist, P, budget?.clock);
  const ignorable = new Uint8Array(numOrdered);
  for (let p = 0; p < numOrdered; p++) {
    const ti = termOf[p]!;
    if (terms[ti]!.ignored || unless[ti]!.some(([, s]) => s.ignored)) ignorable[p] = 1;
  }
  return {
    dfa,
    dist,
    minLaterPattern,
    terms,
    termOf: int32Of(termOf),
    numOrdered,
    shortest: uint8Of(patterns.shortest),
    canAccept,
    accept,
    unless,
    numPatterns: P,
    broken: sc.broken,
    ignorable,
  };
}

/** Bytes of a scanner DFA's typed tables (its terminals belong to the grammar). */
export function scannerDfaBytes(sc: ScannerDfa): number {
  let bytes = 400;
  for (const part of [sc.dfa, sc]) for (const v of Object.values(part)) if (ArrayBuffer.isView(v)) bytes += v.byteLength;
  return bytes;
}
