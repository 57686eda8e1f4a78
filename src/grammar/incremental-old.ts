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

import { compileMultiRegex, compileRegex, type ByteDfa, type MultiByteDfa } from "../regex/index.js";
import { ESCAPED_STRING_REGULAR } from "./common-lark.js";
import { patternToRegexp } from "./compile.js";
import type { Grammar } from "./index.js";
import { GrammarError } from "./lalr.js";
import type { LexTerminal, Scanner } from "./lexer.js";
import { parsePyRegex, type RegexNode } from "./pyregex.js";

const LARK_ESCAPED_STRING = String.raw`".*?(?<!\\)(\\\\)*?"`;

interface ScannerDfa {
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
}

interface Hyp {
  stack: number; // interned parser stack
  dfaState: number; // current token's DFA state in the top state's scanner
  firstAccepted: number; // lowest terminal index that accepted within this token, or -1
  tokenLen: number; // 0 = at a token boundary (capped)
  ignoredRun: number; // consecutive ignored bytes, capped at limit + 1
  constraints: number[]; // triples: scanner id, dfa state, forbidden-up-to index
}

export interface IncrementalOptions {
  /** Most consecutive bytes of %ignore'd text (whitespace, comments) allowed anywhere. */
  maxIgnoredRun?: number;
}

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
  private readonly scannerDfas: ScannerDfa[] = [];
  private readonly scannerOfState: Int32Array;
  // Interned parser stacks: parent id, LALR state.
  private readonly stackParent: number[] = [-1];
  private readonly stackTop: number[];
  private readonly stackIds = new Map<string, number>();
  private readonly feedMemo = new Map<number, number>();
  // Interned hypothesis sets
  private readonly sets: Hyp[][] = [];
  private readonly setIds = new Map<string, number>();
  private readonly stepMemo = new Map<number, number>();
  private readonly completeMemo = new Map<number, boolean>();

  constructor(readonly grammar: Grammar, opts: IncrementalOptions = {}) {
    this.maxIgnoredRun = opts.maxIgnoredRun ?? 8;
    this.scannerOfState = new Int32Array(grammar.table.numStates);
    this.stackTop = [grammar.table.startState];
    try {
      this.start = this.build();
    } catch (e) {
      if (e instanceof GrammarError) throw e;
      throw new GrammarError(`Grammar terminals cannot be turned into a byte automaton: ${(e as Error).message}`);
    }
  }

  private build(): number {
    const grammar = this.grammar;
    const table = grammar.table;
    const byScanner = new Map<Scanner, number>();
    for (let s = 0; s < table.numStates; s++) {
      const sc = grammar.scanners[s]!;
      let id = byScanner.get(sc);
      if (id === undefined) {
        id = this.scannerDfas.length;
        this.scannerDfas.push(buildScannerDfa(sc, this.approximate));
        byScanner.set(sc, id);
      }
      this.scannerOfState[s] = id;
    }
    return this.intern([{ stack: 0, dfaState: this.scannerDfas[this.scannerOfState[table.startState]!]!.dfa.start, firstAccepted: -1, tokenLen: 0, ignoredRun: 0, constraints: [] }]);
  }

  get numStates(): number {
    return this.sets.length;
  }

  private pushStack(parent: number, state: number): number {
    const key = parent + ":" + state;
    let id = this.stackIds.get(key);
    if (id === undefined) {
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
    if (hit !== undefined) return hit;
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

  private intern(hyps: Hyp[]): number {
    if (hyps.length === 0) return -1;
    const hypKey = (h: Hyp): string => `${h.stack},${h.dfaState},${h.firstAccepted},${h.tokenLen},${h.ignoredRun},${h.constraints.join(".")}`;
    let key: string;
    let members: Hyp[];
    if (hyps.length === 1) {
      key = hypKey(hyps[0]!);
      members = hyps;
    } else {
      const keyed = new Map<string, Hyp>();
      for (const h of hyps) keyed.set(hypKey(h), h);
      const keys = [...keyed.keys()].sort();
      key = keys.join("|");
      members = keys.map((k) => keyed.get(k)!);
    }
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.sets.length;
      this.sets.push(members);
      this.setIds.set(key, id);
    }
    return id;
  }

  private scannerFor(stack: number): number {
    return this.scannerOfState[this.stackTop[stack]!]!;
  }

  /** Commits the current token of `h` (which must be committable); returns the follow-up or null. */
  private commit(h: Hyp, sc: ScannerDfa, scId: number): Hyp | null {
    const i = h.firstAccepted;
    let term = sc.terms[sc.termOf[i]!]!;
    for (const [shadow, str] of sc.unless[sc.termOf[i]!]!) {
      if (sc.accept[h.dfaState * sc.numPatterns + shadow]) { term = str; break; }
    }
    const upTo = sc.shortest[i] ? i - 1 : i;
    const constraints = upTo < 0 ? h.constraints.slice() : [...h.constraints, scId, h.dfaState, upTo];
    if (term.ignored) {
      const run = h.ignoredRun + h.tokenLen;
      if (run > this.maxIgnoredRun) return null;
      return { stack: h.stack, dfaState: this.scannerDfas[this.scannerFor(h.stack)]!.dfa.start, firstAccepted: -1, tokenLen: 0, ignoredRun: run, constraints };
    }
    if (term.tableIndex < 0) return null;
    const stack = this.feed(h.stack, term.tableIndex);
    if (stack < 0) return null;
    return { stack, dfaState: this.scannerDfas[this.scannerFor(stack)]!.dfa.start, firstAccepted: -1, tokenLen: 0, ignoredRun: 0, constraints };
  }


  /** Next state after `byte`, or -1 when no continuation of the text can be accepted by Lark. */
  step(state: number, byte: number): number {
    if (state < 0) return -1;
    const memoKey = state * 256 + byte;
    const hit = this.stepMemo.get(memoKey);
    if (hit !== undefined) return hit;
    const out: Hyp[] = [];
    for (const h of this.sets[state]!) {
      const scId = this.scannerFor(h.stack);
      const sc = this.scannerDfas[scId]!;
      if (sc.broken) continue;
      const d = sc.dfa;
      const ns = d.next[h.dfaState * d.numClasses + d.byteClass[byte]!]!;
      if (ns < 0) continue; // the common case in trie walks: decide before allocating anything
      // Advance pending constraints: a forbidden terminal accepting kills the hypothesis.
      const constraints: number[] = [];
      let ok = true;
      for (let c = 0; c < h.constraints.length && ok; c += 3) {
        const cs = this.scannerDfas[h.constraints[c]!]!;
        const d = cs.dfa;
        const ns = d.next[h.constraints[c + 1]! * d.numClasses + d.byteClass[byte]!]!;
        if (ns < 0) continue;
        const upTo = h.constraints[c + 2]!;
        for (let p = 0; p <= upTo; p++) if (cs.accept[ns * cs.numPatterns + p]) { ok = false; break; }
        let alive = false;
        for (let p = 0; p <= upTo && !alive; p++) if (cs.canAccept[ns * cs.numPatterns + p]) alive = true;
        if (alive) constraints.push(h.constraints[c]!, ns, upTo);
      }
      if (!ok) continue;
      // The winner is the lowest-index terminal that ever matches at the token start.
      let first = h.firstAccepted;
      const limit = first < 0 ? sc.numOrdered : first;
      for (let p = 0; p < limit; p++) if (sc.accept[ns * sc.numPatterns + p]) { first = p; break; }
      const next: Hyp = { stack: h.stack, dfaState: ns, firstAccepted: first, tokenLen: Math.min(h.tokenLen + 1, this.maxIgnoredRun + 2), ignoredRun: h.ignoredRun, constraints };
      const newlyAccepted = first >= 0 && first !== h.firstAccepted;
      if (first >= 0 && sc.accept[ns * sc.numPatterns + first] && (!sc.shortest[first] || newlyAccepted)) {
        const committed = this.commit(next, sc, scId);
        if (committed) out.push(committed);
      }
      // Continuing pays off only if a later byte can make a terminal ≤ the winner-to-be accept
      // (strictly earlier terminals for a lazy winner, which never grows).
      const contBound = first < 0 ? sc.numOrdered - 1 : sc.shortest[first] ? first - 1 : first;
      if (contBound < 0 || sc.minLaterPattern[ns]! > contBound) continue;
      // Ignored-run limit for a token that can only end up ignored.
      let onlyIgnored = true;
      for (let p = 0; p <= contBound && onlyIgnored; p++) {
        if ((sc.canAccept[ns * sc.numPatterns + p] || p === first) && !sc.terms[sc.termOf[p]!]!.ignored) onlyIgnored = false;
      }
      if (onlyIgnored && h.ignoredRun + next.tokenLen > this.maxIgnoredRun) continue;
      out.push(next);
    }
    const id = this.intern(out);
    this.stepMemo.set(memoKey, id);
    return id;
  }

  /** Whether the text so far is a complete sentence (Lark would parse it). */
  isComplete(state: number): boolean {
    if (state < 0) return false;
    const hit = this.completeMemo.get(state);
    if (hit !== undefined) return hit;
    let result = false;
    for (const h of this.sets[state]!) {
      let at: Hyp | null = h;
      if (h.tokenLen > 0) {
        const scId = this.scannerFor(h.stack);
        const sc = this.scannerDfas[scId]!;
        // At the end of the text the pending token ends here (a lazy winner only at its first match,
        // which a surviving hypothesis with that winner has just reached or already committed).
        const i = h.firstAccepted;
        const endsHere = i >= 0 && sc.accept[h.dfaState * sc.numPatterns + i] === 1 && !sc.shortest[i];
        at = endsHere ? this.commit(h, sc, scId) : null;
      }
      if (at && this.feed(at.stack, 0) === -2) { result = true; break; }
    }
    this.completeMemo.set(state, result);
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
  private symbolMin: Map<string, number> | null = null;
  private readonly stackCostMemo = new Map<number, number>();

  private symbolCosts(): Map<string, number> {
    if (this.symbolMin) return this.symbolMin;
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
    this.symbolMin = m;
    return m;
  }

  /** Lower bound on the bytes that complete the parse from an interned stack. */
  private stackCost(stack: number, depth = 0): number {
    const hit = this.stackCostMemo.get(stack);
    if (hit !== undefined) return hit;
    if (depth > 200) return 0; // keep it a lower bound on pathological chains
    this.stackCostMemo.set(stack, Infinity); // cycles cannot be cheaper
    const t = this.grammar.table;
    const m = this.symbolCosts();
    const top = this.stackTop[stack]!;
    let best = Infinity;
    const kernel = t.kernels[top]!;
    for (let k = 0; k < kernel.length; k += 2) {
      const rule = t.rules[kernel[k]!]!;
      const dot = kernel[k + 1]!;
      let rest = 0;
      for (let i = dot; i < rule.expansion.length; i++) rest += m.get(rule.expansion[i]!) ?? Infinity;
      if (rest >= best) continue;
      if (rule.origin.startsWith("$root_")) { best = Math.min(best, rest); continue; }
      let st = stack;
      for (let i = 0; i < dot; i++) st = this.stackParent[st]!;
      const g = t.goto[this.stackTop[st]! * t.nonterminals.length + t.ruleLhs[kernel[k]!]!]!;
      if (g < 0) continue;
      best = Math.min(best, rest + this.stackCost(this.pushStack(st, g), depth + 1));
    }
    this.stackCostMemo.set(stack, best);
    return best;
  }

  /**
   * Admissible lower bound on the bytes still needed from `state` to a complete sentence
   * (Infinity for a dead state). Ignores token separation, so it can undercount.
   */
  minBytesLowerBound(state: number): number {
    if (state < 0) return Infinity;
    let best = Infinity;
    for (const h of this.sets[state]!) {
      if (h.tokenLen === 0) { best = Math.min(best, this.stackCost(h.stack)); continue; }
      const scId = this.scannerFor(h.stack);
      const sc = this.scannerDfas[scId]!;
      const bound = h.firstAccepted < 0 ? sc.numOrdered - 1 : h.firstAccepted;
      for (let p = 0; p <= bound; p++) {
        const d = sc.dist[h.dfaState * sc.numPatterns + p]!;
        if (d < 0 || d >= best) continue;
        const term = sc.terms[sc.termOf[p]!]!;
        let after: number;
        if (term.ignored) after = this.stackCost(h.stack);
        else {
          if (term.tableIndex < 0) continue;
          const st = this.feed(h.stack, term.tableIndex);
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
    const g = new Map<number, number>([[state, 0]]);
    // Bucket queue keyed by f = g + h (small integers).
    const buckets: number[][] = [];
    let f = 0;
    const push = (s: number, cost: number): void => {
      const h = this.minBytesLowerBound(s);
      if (h === Infinity) return;
      (buckets[Math.max(f, cost + h)] ??= []).push(s);
    };
    push(state, 0);
    let expansions = 0;
    for (; f < buckets.length; f++) {
      const bucket = buckets[f];
      if (!bucket) continue;
      while (bucket.length) {
        const s = bucket.pop()!;
        const cost = g.get(s)!;
        if (Math.max(f, cost + this.minBytesLowerBound(s)) !== f) continue; // stale entry
        if (this.isComplete(s)) return cost;
        if (++expansions > maxExpansions) return -1;
        for (let b = 0; b < 256; b++) {
          const ns = this.step(s, b);
          if (ns < 0) continue;
          const old = g.get(ns);
          if (old !== undefined && old <= cost + 1) continue;
          g.set(ns, cost + 1);
          push(ns, cost + 1);
        }
      }
    }
    return -1;
  }
}

function preferenceModelled(src: string): boolean {
  try {
    return pythonPreferenceModelled(parsePyRegex(src).root);
  } catch {
    return false;
  }
}

function hasLazy(src: string): boolean {
  return /(\*|\+|\?|\})\?/.test(src.replace(/\\./g, ""));
}

// ASCII characters 0..127 plus slot 128 for "some non-ASCII character".
type CharSet = Uint8Array;
const NON_ASCII = 128;
const emptySet = (): CharSet => new Uint8Array(129);
const overlaps = (a: CharSet, b: CharSet): boolean => {
  for (let i = 0; i < 129; i++) if (a[i] && b[i]) return true;
  return false;
};
const union = (a: CharSet, b: CharSet): CharSet => {
  const out = a.slice();
  for (let i = 0; i < 129; i++) if (b[i]) out[i] = 1;
  return out;
};

function firstCharsOfSet(n: Extract<RegexNode, { k: "set" }>): CharSet {
  const out = emptySet();
  const member = emptySet();
  for (let i = 0; i < n.ranges.length; i += 2) {
    for (let c = n.ranges[i]!; c <= Math.min(n.ranges[i + 1]!, 127); c++) member[c] = 1;
    if (n.ranges[i + 1]! > 127) member[NON_ASCII] = 1;
  }
  for (const e of n.classes) {
    const re = e === "d" ? /\d/ : e === "D" ? /\D/ : e === "w" ? /\w/ : e === "W" ? /\W/ : e === "s" ? /\s/ : /\S/;
    for (let c = 0; c < 128; c++) if (re.test(String.fromCharCode(c))) member[c] = 1;
    member[NON_ASCII] = 1;
  }
  if (n.caseless) for (let c = 65; c <= 90; c++) if (member[c] || member[c + 32]) { member[c] = 1; member[c + 32] = 1; }
  for (let c = 0; c < 129; c++) out[c] = n.negated ? (c === NON_ASCII ? 1 : 1 - member[c]!) : member[c]!;
  return out;
}

/** Python source for an AST node (for the byte-DFA checks below); throws on non-regular nodes. */
function toPySource(n: RegexNode): string {
  const cp = (c: number): string => (c > 0xffff ? `\\U${c.toString(16).padStart(8, "0")}` : `\\u${c.toString(16).padStart(4, "0")}`);
  switch (n.k) {
    case "set": {
      let body = "";
      for (let i = 0; i < n.ranges.length; i += 2) body += n.ranges[i] === n.ranges[i + 1] ? cp(n.ranges[i]!) : `${cp(n.ranges[i]!)}-${cp(n.ranges[i + 1]!)}`;
      for (const c of n.classes) body += "\\" + c;
      const cls = body === "" && !n.negated ? "(?!)" : `[${n.negated ? "^" : ""}${body}]`;
      return n.caseless ? `(?i:${cls})` : cls;
    }
    case "any": return n.dotAll ? "(?s:.)" : ".";
    case "seq": return n.items.map(toPySource).join("");
    case "alt": return `(?:${n.alts.map(toPySource).join("|")})`;
    case "group": return `(?:${toPySource(n.body)})`;
    case "rep": return `(?:${toPySource(n.body)}){${n.min},${n.max === Infinity ? "" : n.max}}`;
    default: throw new Error("not regular");
  }
}

/** True when no string of `earlier` is a proper prefix of a string of `later` (byte DFAs). */
function noProperPrefix(earlier: RegexNode, later: RegexNode): boolean {
  let a: ByteDfa, b: ByteDfa;
  try {
    a = compileRegex(toPySource(earlier));
    b = compileRegex(toPySource(later));
  } catch {
    return false;
  }
  const seen = new Set<number>();
  const queue = [a.start * b.numStates + b.start];
  seen.add(queue[0]!);
  while (queue.length) {
    const key = queue.pop()!;
    const qa = Math.floor(key / b.numStates), qb = key % b.numStates;
    if (a.accepting[qa]) {
      // `later` continues beyond this point to a longer string?
      for (let c = 0; c < b.numClasses; c++) if (b.next[qb * b.numClasses + c]! >= 0) return false;
    }
    for (let byte = 0; byte < 256; byte++) {
      const na = a.next[qa * a.numClasses + a.byteClass[byte]!]!;
      const nb = b.next[qb * b.numClasses + b.byteClass[byte]!]!;
      if (na < 0 || nb < 0) continue;
      const k = na * b.numStates + nb;
      if (!seen.has(k)) { seen.add(k); queue.push(k); }
    }
  }
  return true;
}

/**
 * Whether Python's preferred match of this pattern is what the automaton models: the longest
 * match (greedy, and every choice decided by the next character: alternation branches and
 * repeat-vs-continue start with disjoint characters), or the shortest (a single variable-length
 * part, lazy). Anything else is approximated.
 */
export function pythonPreferenceModelled(root: RegexNode): boolean {
  let unsafe = false;
  let variableParts = 0;
  let lazyParts = 0;
  let counting = true; // the first pass over a repeat body only computes its FIRST set
  let overlappingAlternation = false; // "longest" there, which a lazy (shortest) pattern is not
  const walk = (n: RegexNode, follow: CharSet): { first: CharSet; nullable: boolean } => {
    switch (n.k) {
      case "set": return { first: firstCharsOfSet(n), nullable: false };
      case "any": {
        const f = emptySet().fill(1);
        if (!n.dotAll) f[10] = 0;
        return { first: f, nullable: false };
      }
      case "assert": case "look": return { first: emptySet(), nullable: true };
      case "backref": unsafe = true; return { first: emptySet().fill(1), nullable: true };
      case "group": return walk(n.body, follow);
      case "seq": {
        // Right to left so each item knows what can follow it.
        let after = follow;
        let first = emptySet();
        let nullable = true;
        for (let i = n.items.length - 1; i >= 0; i--) {
          const r = walk(n.items[i]!, after);
          first = r.nullable ? union(r.first, first) : r.first;
          nullable = nullable && r.nullable;
          after = r.nullable ? union(r.first, after) : r.first;
        }
        return { first, nullable };
      }
      case "alt": {
        let first = emptySet();
        let nullable = false;
        const tail = follow.every((x) => x === 0);
        n.alts.forEach((a, i) => {
          const r = walk(a, follow);
          if (r.nullable && nullable) unsafe = true;
          // Python takes the first branch that matches. That is the longest match when branches
          // start differently, or (in tail position) when no earlier branch's string is a proper
          // prefix of a later branch's string.
          if (overlaps(first, r.first)) {
            overlappingAlternation = true;
            if (!(tail && n.alts.slice(0, i).every((e) => noProperPrefix(e, a)))) unsafe = true;
          }
          first = union(first, r.first);
          nullable = nullable || r.nullable;
        });
        if (nullable) unsafe = true;
        return { first, nullable };
      }
      case "rep": {
        const saved = counting;
        const savedUnsafe = unsafe;
        counting = false;
        const inner = walk(n.body, follow);
        counting = saved;
        unsafe = savedUnsafe;
        const r = walk(n.body, n.max > 1 ? union(inner.first, follow) : follow);
        if (n.min !== n.max && counting) {
          variableParts++;
          if (n.lazy) lazyParts++;
          else if (overlaps(r.first, follow) || r.nullable) unsafe = true;
        }
        // A lazy repeat stops as soon as what follows matches: overlap there is its purpose.
        return { first: r.first, nullable: n.min === 0 || r.nullable };
      }
    }
  };
  walk(root, emptySet());
  if (lazyParts > 0) return lazyParts === 1 && variableParts === 1 && !unsafe && !overlappingAlternation;
  return !unsafe;
}

/** Python tries a top-level alternation's branches in order, like a scanner's terminals. */
export function splitTopAlternatives(src: string): string[] {
  const wrapped = /^\(\?([a-zA-Z]*)(?:-[a-zA-Z]+)?:/.exec(src);
  if (wrapped && closingParen(src, 0) === src.length - 1) {
    const prefix = src.slice(0, wrapped[0].length);
    if (prefix.includes("x")) return [src];
    const inner = src.slice(wrapped[0].length, -1);
    const parts = splitTopAlternatives(inner);
    return prefix === "(?:" ? parts : parts.map((p) => `${prefix}${p})`);
  }
  const parts: string[] = [];
  let depth = 0, inClass = false, last = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") { i++; continue; }
    if (inClass) { if (c === "]") inClass = false; continue; }
    if (c === "[") { inClass = true; if (src[i + 1] === "^") i++; if (src[i + 1] === "]") i++; continue; }
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) { parts.push(src.slice(last, i)); last = i + 1; }
  }
  if (parts.length === 0) return [src];
  parts.push(src.slice(last));
  return parts.flatMap(splitTopAlternatives);
}

function closingParen(src: string, open: number): number {
  let depth = 0, inClass = false;
  for (let i = open; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") { i++; continue; }
    if (inClass) { if (c === "]") inClass = false; continue; }
    if (c === "[") { inClass = true; if (src[i + 1] === "^") i++; if (src[i + 1] === "]") i++; continue; }
    if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i;
  }
  return -1;
}

function buildScannerDfa(sc: Scanner, approximate: Set<string>): ScannerDfa {
  const terms = sc.order;
  const specs: { source: string }[] = [];
  const shortest: number[] = [];
  const termOf: number[] = [];
  terms.forEach((t, ti) => {
    let src = patternToRegexp(t.def.pattern);
    if (src === LARK_ESCAPED_STRING) src = ESCAPED_STRING_REGULAR;
    const alts = t.def.pattern.type === "re" ? splitTopAlternatives(src) : [src];
    for (const alt of alts) {
      if (t.def.pattern.type === "re" && src !== ESCAPED_STRING_REGULAR && !preferenceModelled(alt)) approximate.add(t.name);
      specs.push({ source: alt });
      shortest.push(t.def.pattern.type === "re" && hasLazy(alt) ? 1 : 0);
      termOf.push(ti);
    }
  });
  const numOrdered = specs.length;
  const unless: (readonly [number, LexTerminal])[][] = terms.map(() => []);
  terms.forEach((t, i) => {
    for (const s of sc.unless.get(t.name) ?? []) {
      unless[i]!.push([specs.length, s]);
      specs.push({ source: patternToRegexp(s.def.pattern) });
    }
  });
  let dfa: MultiByteDfa;
  try {
    dfa = compileMultiRegex(specs);
  } catch (e) {
    throw new GrammarError(`Grammar terminals cannot be turned into a byte automaton: ${(e as Error).message}`);
  }
  const P = specs.length;
  const S = dfa.numStates;
  const accept = new Uint8Array(S * P);
  for (let s = 0; s < S; s++) {
    for (let p = 0; p < P; p++) {
      if ((dfa.acceptMask[s * dfa.acceptWords + (p >>> 5)]! & (1 << (p & 31))) !== 0) accept[s * P + p] = 1;
    }
  }
  // canAccept: reverse reachability per pattern.
  const canAccept = accept.slice();
  for (let changed = true; changed; ) {
    changed = false;
    for (let s = 0; s < S; s++) {
      for (let c = 0; c < dfa.numClasses; c++) {
        const ns = dfa.next[s * dfa.numClasses + c]!;
        if (ns < 0) continue;
        for (let p = 0; p < P; p++) {
          if (canAccept[ns * P + p] && !canAccept[s * P + p]) { canAccept[s * P + p] = 1; changed = true; }
        }
      }
    }
  }
  // dist: per-pattern shortest distance to acceptance (Bellman-Ford style relaxation).
  const dist = new Int32Array(S * P).fill(-1);
  for (let i = 0; i < S * P; i++) if (accept[i]) dist[i] = 0;
  for (let changed = true; changed; ) {
    changed = false;
    for (let s = 0; s < S; s++) {
      for (let c = 0; c < dfa.numClasses; c++) {
        const ns = dfa.next[s * dfa.numClasses + c]!;
        if (ns < 0) continue;
        for (let p = 0; p < P; p++) {
          const dn = dist[ns * P + p]!;
          if (dn >= 0 && (dist[s * P + p]! < 0 || dist[s * P + p]! > dn + 1)) { dist[s * P + p] = dn + 1; changed = true; }
        }
      }
    }
  }
  const minLaterPattern = new Int32Array(S).fill(0x7fffffff);
  for (let st = 0; st < S; st++) {
    for (let c = 0; c < dfa.numClasses; c++) {
      const ns = dfa.next[st * dfa.numClasses + c]!;
      if (ns < 0) continue;
      for (let p = 0; p < minLaterPattern[st]! && p < P; p++) if (canAccept[ns * P + p]) { minLaterPattern[st] = p; break; }
    }
  }
  return { dfa, dist, minLaterPattern, terms, termOf: Int32Array.from(termOf), numOrdered, shortest: Uint8Array.from(shortest), canAccept, accept, unless, numPatterns: P, broken: sc.broken };
}

export function createGrammarAutomaton(grammar: Grammar, opts?: IncrementalOptions): GrammarAutomaton {
  return new GrammarAutomaton(grammar, opts);
}
