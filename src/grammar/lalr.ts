// LALR(1) table construction mirroring lark/parsers/lalr_analysis.py (DeRemer–Pennello lookaheads):
// shift/reduce conflicts resolve to shift, reduce/reduce conflicts are resolved by rule priority
// or refused with Lark's message.

export class GrammarError extends Error {
  constructor(message: string, readonly line?: number, readonly column?: number) {
    super(message);
    this.name = "GrammarError";
  }
}

/** One BNF production. `expansion` holds symbol names; terminals are the names in `terminals`. */
export interface BnfRule {
  origin: string;
  expansion: string[];
  priority: number | null;
  /** Lark's `Rule.order` within its origin (used only in messages). */
  order: number;
  alias?: string | null;
}

export interface LalrTable {
  readonly numStates: number;
  /** Terminal names; index 0 is "$END". */
  readonly terminals: readonly string[];
  readonly nonterminals: readonly string[];
  readonly rules: readonly BnfRule[];
  /** action[state * numTerminals + terminal]: v > 0 shift to v-1, v < 0 reduce rule -v-1, 0 error. */
  readonly action: Int32Array;
  /** goto[state * numNonterminals + nonterminal] → state or -1. */
  readonly goto: Int32Array;
  readonly ruleLhs: Int32Array; // nonterminal index
  readonly ruleLen: Int32Array;
  readonly startState: number;
  /** Reaching this state by a reduction while feeding $END means acceptance (Lark's end_state). */
  readonly endState: number;
  readonly terminalIndex: ReadonlyMap<string, number>;
  /** Terminals with a non-error action per state (what Lark's contextual lexer accepts there). */
  readonly acceptsByState: readonly Int32Array[];
  /** LR(0) kernel items per state as (rule, dot) pairs, flattened. */
  readonly kernels: readonly Int32Array[];
}

/** `n` fresh values of `make` (Array.from with a map function is several times slower in V8). */
function freshList<T>(n: number, make: () => T): T[] {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(make());
  return out;
}

const ruleText = (r: BnfRule): string => `<${r.origin} : ${r.expansion.join(" ")}>`;

export function buildLalrTable(rules: readonly BnfRule[], terminalNames: readonly string[], start = "start"): LalrTable {
  const terminals = ["$END", ...terminalNames.filter((t) => t !== "$END")];
  const terminalIndex = new Map<string, number>();
  terminals.forEach((t, i) => terminalIndex.set(t, i));

  const rootName = "$root_" + start;
  const allRules: BnfRule[] = [...rules, { origin: rootName, expansion: [start], priority: null, order: 0 }];

  // Duplicate rules (GrammarAnalyzer)
  const seen = new Map<string, BnfRule>();
  const dups: BnfRule[] = [];
  for (const r of allRules) {
    const key = r.origin + "\0" + r.expansion.join("\0");
    if (seen.has(key)) dups.push(r);
    else seen.set(key, r);
  }
  if (dups.length) throw new GrammarError("Rules defined twice: " + dups.map(ruleText).join(", "));

  const ntNames: string[] = [];
  const ntIndex = new Map<string, number>();
  for (const r of allRules) if (!ntIndex.has(r.origin)) { ntIndex.set(r.origin, ntNames.length); ntNames.push(r.origin); }
  for (const r of allRules) {
    for (const s of r.expansion) {
      if (!terminalIndex.has(s) && !ntIndex.has(s)) {
        if (/^_?[A-Z]/.test(s) || s.startsWith("__")) {
          // An unknown terminal name: treat as a terminal, as Lark does (it is a Terminal symbol).
          terminalIndex.set(s, terminals.length);
          terminals.push(s);
        } else throw new GrammarError(`Using an undefined rule: NonTerminal('${s}')`);
      }
    }
  }
  if (!ntIndex.has(start)) throw new GrammarError(`Using an undefined rule: NonTerminal('${start}')`);
  const NT = ntNames.length;
  const TT = terminals.length;
  // Symbol ids: terminals 0..TT-1, nonterminals TT..TT+NT-1
  const symOf = (s: string): number => (terminalIndex.has(s) ? terminalIndex.get(s)! : TT + ntIndex.get(s)!);
  const R = allRules.length;
  const rhs: Int32Array[] = allRules.map((r) => {
    const out = new Int32Array(r.expansion.length);
    for (let i = 0; i < out.length; i++) out[i] = symOf(r.expansion[i]!);
    return out;
  });
  const lhs = new Int32Array(allRules.length);
  for (let r = 0; r < allRules.length; r++) lhs[r] = TT + ntIndex.get(allRules[r]!.origin)!;
  const rootRule = R - 1;
  // item id = itemBase[rule] + dot
  const itemBase = new Int32Array(R + 1);
  for (let r = 0; r < R; r++) itemBase[r + 1] = itemBase[r]! + rhs[r]!.length + 1;
  const itemRule = new Int32Array(itemBase[R]!);
  for (let r = 0; r < R; r++) for (let d = 0; d <= rhs[r]!.length; d++) itemRule[itemBase[r]! + d] = r;
  const itemDot = (it: number): number => it - itemBase[itemRule[it]!]!;
  const itemNext = (it: number): number => {
    const r = itemRule[it]!;
    const d = it - itemBase[r]!;
    return d < rhs[r]!.length ? rhs[r]![d]! : -1;
  };
  const rulesByNt = freshList<number[]>(NT, () => []);
  for (let r = 0; r < R; r++) rulesByNt[lhs[r]! - TT]!.push(r);

  // NULLABLE / FIRST (only NULLABLE is needed for DeRemer–Pennello)
  const nullable = new Uint8Array(TT + NT);
  for (let changed = true; changed; ) {
    changed = false;
    for (let r = 0; r < R; r++) {
      if (nullable[lhs[r]!]) continue;
      if (rhs[r]!.every((s) => nullable[s])) { nullable[lhs[r]!] = 1; changed = true; }
    }
  }

  const closureCache = new Map<number, number[]>(); // nonterminal → initial items reachable
  const expandNt = (nt: number): number[] => {
    let c = closureCache.get(nt);
    if (c) return c;
    const out: number[] = [];
    const seenNt = new Set<number>([nt]);
    const queue = [nt];
    while (queue.length) {
      const n = queue.shift()!;
      for (const r of rulesByNt[n - TT]!) {
        out.push(itemBase[r]!);
        const nx = rhs[r]!.length ? rhs[r]![0]! : -1;
        if (nx >= TT && !seenNt.has(nx)) { seenNt.add(nx); queue.push(nx); }
      }
    }
    c = out;
    closureCache.set(nt, c);
    return c;
  };

  interface State { kernel: number[]; closure: number[]; transitions: Map<number, number>; }
  const states: State[] = [];
  const stateByKernel = new Map<string, number>();
  const makeState = (kernel: number[]): number => {
    kernel.sort((a, b) => a - b);
    const key = kernel.join(",");
    const found = stateByKernel.get(key);
    if (found !== undefined) return found;
    const set = new Set(kernel);
    for (const it of kernel) {
      const nx = itemNext(it);
      if (nx >= TT) for (const x of expandNt(nx)) set.add(x);
    }
    const closure = [...set].sort((a, b) => a - b);
    states.push({ kernel, closure, transitions: new Map() });
    stateByKernel.set(key, states.length - 1);
    return states.length - 1;
  };
  const startState = makeState([itemBase[rootRule]!]);
  for (let s = 0; s < states.length; s++) {
    const bySym = new Map<number, number[]>();
    for (const it of states[s]!.closure) {
      const nx = itemNext(it);
      if (nx < 0) continue;
      let l = bySym.get(nx);
      if (!l) bySym.set(nx, (l = []));
      l.push(it + 1);
    }
    for (const [sym, kernel] of bySym) states[s]!.transitions.set(sym, makeState(kernel));
  }
  const S = states.length;

  // DeRemer–Pennello: nonterminal transitions (state, nt)
  const ntTransIndex = new Map<number, number>(); // key state*(NT)+nt → index
  const ntTrans: [number, number][] = [];
  const keyOf = (s: number, nt: number): number => s * NT + (nt - TT);
  for (let s = 0; s < S; s++) {
    for (const it of states[s]!.closure) {
      const nx = itemNext(it);
      if (nx >= TT && !ntTransIndex.has(keyOf(s, nx))) {
        ntTransIndex.set(keyOf(s, nx), ntTrans.length);
        ntTrans.push([s, nx]);
      }
    }
  }
  const X = ntTrans.length;
  const directReads = freshList(X, () => new Set<number>());
  const reads = freshList<number[]>(X, () => []);
  for (let x = 0; x < X; x++) {
    const [s, nt] = ntTrans[x]!;
    if (s === startState && nt === rhs[rootRule]![0]) directReads[x]!.add(0);
    const next = states[s]!.transitions.get(nt)!;
    for (const it of states[next]!.closure) {
      const s2 = itemNext(it);
      if (s2 < 0) continue;
      if (s2 < TT) directReads[x]!.add(s2);
      if (nullable[s2]) reads[x]!.push(ntTransIndex.get(keyOf(next, s2))!);
    }
  }
  const includes = freshList<number[]>(X, () => []);
  const lookback = freshList<[number, number][]>(X, () => []);
  for (let x = 0; x < X; x++) {
    const [s, nt] = ntTrans[x]!;
    for (const it of states[s]!.closure) {
      const r = itemRule[it]!;
      if (lhs[r] !== nt) continue;
      // Like Lark, items past their first symbol also contribute `includes` (an over-approximation
      // Lark makes; mirrored so that our conflicts are Lark's conflicts).
      const dot = itemDot(it);
      const exp = rhs[r]!;
      let s2 = s;
      for (let i = dot; i < exp.length; i++) {
        const sym = exp[i]!;
        if (sym >= TT) {
          let restNullable = true;
          for (let j = i + 1; j < exp.length; j++) if (!nullable[exp[j]!]) { restNullable = false; break; }
          if (restNullable) includes[ntTransIndex.get(keyOf(s2, sym))!]!.push(x);
        }
        s2 = states[s2]!.transitions.get(sym)!;
      }
      if (dot === 0) lookback[x]!.push([s2, r]);
    }
  }
  const digraph = (rel: number[][], base: Set<number>[]): Set<number>[] => {
    const N = new Int32Array(X);
    const F: Set<number>[] = base.map((b) => new Set(b));
    const stack: number[] = [];
    const traverse = (x: number): void => {
      stack.push(x);
      const d = stack.length;
      N[x] = d;
      for (const y of rel[x]!) {
        if (N[y] === 0) traverse(y);
        if (N[y]! > 0 && N[y]! < N[x]!) N[x] = N[y]!;
        for (const v of F[y]!) F[x]!.add(v);
      }
      if (N[x] === d) {
        for (;;) {
          const z = stack.pop()!;
          N[z] = -1;
          if (z !== x) F[z] = new Set(F[x]!);
          if (z === x) break;
        }
      }
    };
    for (let x = 0; x < X; x++) if (N[x] === 0) traverse(x);
    return F;
  };
  const readSets = digraph(reads, directReads);
  const followSets = digraph(includes, readSets);

  const lookaheads = freshList(S, () => new Map<number, Set<number>>());
  for (let x = 0; x < X; x++) {
    for (const [st, r] of lookback[x]!) {
      for (const la of followSets[x]!) {
        let set = lookaheads[st]!.get(la);
        if (!set) lookaheads[st]!.set(la, (set = new Set()));
        set.add(r);
      }
    }
  }

  const action = new Int32Array(S * TT);
  const gotoT = new Int32Array(S * NT).fill(-1);
  const rrMessages: string[] = [];
  for (let s = 0; s < S; s++) {
    for (const [sym, next] of states[s]!.transitions) {
      if (sym < TT) action[s * TT + sym] = next + 1;
      else gotoT[s * NT + (sym - TT)] = next;
    }
    const las = [...lookaheads[s]!.keys()].sort((a, b) => a - b);
    for (const la of las) {
      let rs = [...lookaheads[s]!.get(la)!];
      if (rs.length > 1) {
        const p = rs.map((r) => ({ pr: allRules[r]!.priority ?? 0, r })).sort((a, b) => b.pr - a.pr);
        if (p[0]!.pr > p[1]!.pr) rs = [p[0]!.r];
        else rrMessages.push(`Reduce/Reduce collision in Terminal('${terminals[la]}') between the following rules: ${rs.map((r) => "\n\t- " + ruleText(allRules[r]!)).join("")}`);
      }
      if (action[s * TT + la] !== 0) continue; // shift wins
      action[s * TT + la] = -(rs[0]! + 1);
    }
  }
  if (rrMessages.length) throw new GrammarError(rrMessages.join("\n\n"));

  const endState = states[startState]!.transitions.get(rhs[rootRule]![0]!)!;
  const ruleLengths = new Int32Array(R);
  for (let r = 0; r < R; r++) ruleLengths[r] = rhs[r]!.length;
  const acceptsByState: Int32Array[] = [];
  for (let s = 0; s < S; s++) {
    let n = 0;
    for (let t = 0; t < TT; t++) if (action[s * TT + t] !== 0) n++;
    const acc = new Int32Array(n);
    for (let t = 0, i = 0; t < TT; t++) if (action[s * TT + t] !== 0) acc[i++] = t;
    acceptsByState.push(acc);
  }
  return {
    numStates: S,
    terminals,
    nonterminals: ntNames,
    rules: allRules,
    action,
    goto: gotoT,
    ruleLhs: lhs.map((l) => l - TT),
    ruleLen: ruleLengths,
    startState,
    endState,
    terminalIndex,
    acceptsByState,
    kernels: states.map((st) => {
      const k = new Int32Array(st.kernel.length * 2);
      for (let i = 0; i < st.kernel.length; i++) {
        k[2 * i] = itemRule[st.kernel[i]!]!;
        k[2 * i + 1] = itemDot(st.kernel[i]!);
      }
      return k;
    }),
  };
}

/** Runs the LALR automaton over a token-id sequence (ending implicitly with $END). */
export class LalrRunner {
  readonly stack: number[];
  constructor(readonly table: LalrTable) {
    this.stack = [table.startState];
  }
  get state(): number {
    return this.stack[this.stack.length - 1]!;
  }
  /** Feeds one terminal; returns false on a syntax error (stack is then unspecified). */
  feed(terminal: number): boolean {
    const t = this.table;
    const TT = t.terminals.length;
    const NT = t.nonterminals.length;
    const st = this.stack;
    for (;;) {
      const a = t.action[st[st.length - 1]! * TT + terminal]!;
      if (a > 0) { st.push(a - 1); return true; }
      if (a === 0) return false;
      const r = -a - 1;
      st.length -= t.ruleLen[r]!;
      const g = t.goto[st[st.length - 1]! * NT + t.ruleLhs[r]!]!;
      if (g < 0) return false;
      st.push(g);
      if (terminal === 0 && g === t.endState) return true;
    }
  }
}
