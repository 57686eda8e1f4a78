// LALR(1) table construction mirroring lark/parsers/lalr_analysis.py (DeRemer–Pennello lookaheads):
// shift/reduce conflicts resolve to shift, reduce/reduce conflicts are resolved by rule priority
// or refused with Lark's message.

import { Int32Arena } from "../support/index.js";
import { GrammarError } from "./errors.js";
import { compileBudget, tooComplex, type CompileBudget } from "./limits.js";

export { GrammarError };

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

const ruleText = (r: BnfRule): string => `<${r.origin} : ${r.expansion.join(" ")}>`;

/** Scratch tables of one build (see Int32Arena: a typed array of its own costs 1–3 µs here). */
const arena = new Int32Arena();

/**
 * Sorts `a[from..to)` ascending. Kernels and closures are short (a few to a few dozen items):
 * insertion sort; long ones (nested optional parts give closures of thousands) go through a
 * typed array's sort, since insertion sort is quadratic.
 */
function sortRange(a: number[] | Int32Array, from: number, to: number): void {
  if (to - from > 64) {
    const sorted = Int32Array.from(a.slice(from, to)).sort();
    for (let i = from; i < to; i++) a[i] = sorted[i - from]!;
    return;
  }
  for (let i = from + 1; i < to; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= from && a[j]! > v) { a[j + 1] = a[j]!; j--; }
    a[j + 1] = v;
  }
}

/**
 * Everything below runs on integer ids (symbols: terminals 0..TT-1, then nonterminals; items:
 * itemBase[rule] + dot) and bitsets of terminals, in arena tables and plain integer lists: grammars
 * are compiled per request, and for a small one the Maps and Sets of symbol sets, and the typed
 * arrays of their own, cost more than the analysis. State numbering, conflict resolution and
 * messages follow the order Lark's analysis has.
 */
export function buildLalrTable(rules: readonly BnfRule[], terminalNames: readonly string[], start = "start", budget: CompileBudget = compileBudget()): LalrTable {
  const { limits, clock } = budget;
  const terminals = ["$END"];
  const terminalIndex = new Map<string, number>([["$END", 0]]);
  for (const t of terminalNames) if (t !== "$END") { terminalIndex.set(t, terminals.length); terminals.push(t); }

  const rootName = "$root_" + start;
  const allRules: BnfRule[] = [...rules, { origin: rootName, expansion: [start], priority: null, order: 0 }];

  // Duplicate rules (GrammarAnalyzer)
  const seen = new Set<string>();
  const dups: BnfRule[] = [];
  for (const r of allRules) {
    const key = r.origin + "\0" + r.expansion.join("\0");
    if (seen.has(key)) dups.push(r);
    else seen.add(key);
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
  arena.reset();
  const NT = ntNames.length;
  const TT = terminals.length;
  const SYMS = TT + NT;
  const R = allRules.length;
  const rootRule = R - 1;

  // Items: itemBase[rule] + dot; itemNext = the symbol after the dot, or -1.
  const itemBase = arena.take(R + 1);
  for (let r = 0; r < R; r++) itemBase[r + 1] = itemBase[r]! + allRules[r]!.expansion.length + 1;
  const ITEMS = itemBase[R]!;
  const itemRule = arena.take(ITEMS);
  const itemNext = arena.take(ITEMS);
  const lhs = arena.take(R);
  for (let r = 0; r < R; r++) {
    const rule = allRules[r]!;
    const b = itemBase[r]!;
    lhs[r] = TT + ntIndex.get(rule.origin)!;
    for (let d = 0; d < rule.expansion.length; d++) {
      const name = rule.expansion[d]!;
      const t = terminalIndex.get(name);
      itemRule[b + d] = r;
      itemNext[b + d] = t !== undefined ? t : TT + ntIndex.get(name)!;
    }
    itemRule[b + rule.expansion.length] = r;
    itemNext[b + rule.expansion.length] = -1;
  }
  const sym = (r: number, i: number): number => itemNext[itemBase[r]! + i]!;
  const lenOf = (r: number): number => itemBase[r + 1]! - itemBase[r]! - 1;

  // NULLABLE (DeRemer–Pennello needs no FIRST sets): a worklist over each rule's count of
  // symbols not yet known nullable (the fixed point rescanning all rules is quadratic in a chain).
  const nullable = arena.take(SYMS);
  const pending = arena.take(R);
  const usesStart = arena.take(SYMS + 1);
  for (let r = 0; r < R; r++) {
    pending[r] = lenOf(r);
    for (let i = 0; i < lenOf(r); i++) usesStart[sym(r, i) + 1]!++;
  }
  for (let x = 0; x < SYMS; x++) usesStart[x + 1]! += usesStart[x]!;
  const usesRule = arena.take(usesStart[SYMS]!);
  {
    const fill = arena.copy(usesStart);
    for (let r = 0; r < R; r++) for (let i = 0; i < lenOf(r); i++) usesRule[fill[sym(r, i)]!++] = r;
  }
  const nullQueue = arena.take(SYMS);
  let nullTail = 0;
  for (let r = 0; r < R; r++) if (pending[r] === 0 && !nullable[lhs[r]!]) { nullable[lhs[r]!] = 1; nullQueue[nullTail++] = lhs[r]!; }
  for (let head = 0; head < nullTail; head++) {
    const x = nullQueue[head]!;
    for (let k = usesStart[x]!; k < usesStart[x + 1]!; k++) {
      const r = usesRule[k]!;
      if (--pending[r]! === 0 && !nullable[lhs[r]!]) { nullable[lhs[r]!] = 1; nullQueue[nullTail++] = lhs[r]!; }
    }
  }
  clock.spend(ITEMS);

  // Per nonterminal, the initial items of every rule reachable through leftmost nonterminals.
  const ntRulesStart = arena.take(NT + 1);
  for (let r = 0; r < R; r++) ntRulesStart[lhs[r]! - TT + 1]!++;
  for (let n = 0; n < NT; n++) ntRulesStart[n + 1]! += ntRulesStart[n]!;
  const rulesByNt = arena.take(R);
  {
    const fill = arena.copy(ntRulesStart);
    for (let r = 0; r < R; r++) rulesByNt[fill[lhs[r]! - TT]!++] = r;
  }
  const ntExpansion: number[] = [];
  const ntExpansionStart = arena.take(NT, -1);
  const ntExpansionEnd = arena.take(NT);
  const ntSeen = arena.take(NT);
  const ntQueue = arena.take(NT);
  const expandNt = (nt: number): void => {
    if (ntExpansionStart[nt] !== -1) return;
    ntExpansionStart[nt] = ntExpansion.length;
    ntSeen[nt] = nt + 1;
    let head = 0, tail = 0;
    ntQueue[tail++] = nt;
    while (head < tail) {
      const n = ntQueue[head++]!;
      for (let k = ntRulesStart[n]!; k < ntRulesStart[n + 1]!; k++) {
        const r = rulesByNt[k]!;
        ntExpansion.push(itemBase[r]!);
        const nx = itemNext[itemBase[r]!]! - TT;
        if (nx >= 0 && ntSeen[nx] !== nt + 1) { ntSeen[nx] = nt + 1; ntQueue[tail++] = nx; }
      }
    }
    ntExpansionEnd[nt] = ntExpansion.length;
  };

  // LR(0) states: kernels and closures (item ids, ascending), flat; found again by a kernel hash.
  const kernels: number[] = [];
  const kernelStart: number[] = [0];
  const closures: number[] = [];
  const closureStart: number[] = [0];
  const byHash = new Map<number, number>();
  const sameHash: number[] = [];
  const itemMark = arena.take(ITEMS);
  let markStamp = 0;
  const makeState = (kernel: Int32Array, from: number, to: number): number => {
    sortRange(kernel, from, to);
    let h = to - from;
    for (let i = from; i < to; i++) h = (Math.imul(h, 31) + kernel[i]!) | 0;
    for (let s = byHash.get(h) ?? -1; s >= 0; s = sameHash[s]!) {
      const k0 = kernelStart[s]!;
      if (kernelStart[s + 1]! - k0 !== to - from) continue;
      let same = true;
      for (let i = 0; i < to - from && same; i++) if (kernels[k0 + i] !== kernel[from + i]) same = false;
      if (same) return s;
    }
    const id = kernelStart.length - 1;
    // The tables hold a row of terminals + nonterminals per state (and the build a few more).
    if ((id + 1) * SYMS > limits.maxTableCells)
      throw tooComplex(limits, "maxTableCells", (id + 1) * SYMS, `LALR table cells (${SYMS.toLocaleString("en-US")} symbols × more than ${id.toLocaleString("en-US")} states)`);
    sameHash.push(byHash.get(h) ?? -1);
    byHash.set(h, id);
    for (let i = from; i < to; i++) kernels.push(kernel[i]!);
    kernelStart.push(kernels.length);
    const stamp = ++markStamp;
    const c0 = closures.length;
    for (let i = from; i < to; i++) {
      const it = kernel[i]!;
      if (itemMark[it] !== stamp) { itemMark[it] = stamp; closures.push(it); }
    }
    for (let i = from; i < to; i++) {
      const nx = itemNext[kernel[i]!]! - TT;
      if (nx < 0) continue;
      expandNt(nx);
      for (let k = ntExpansionStart[nx]!; k < ntExpansionEnd[nx]!; k++) {
        const it = ntExpansion[k]!;
        if (itemMark[it] !== stamp) { itemMark[it] = stamp; closures.push(it); }
      }
    }
    sortRange(closures, c0, closures.length);
    clock.spend(closures.length - c0 + to - from);
    if (closures.length > limits.maxTableCells)
      throw tooComplex(limits, "maxTableCells", closures.length, "LALR closure items (nullable rules nested deep?)");
    closureStart.push(closures.length);
    return id;
  };

  // Transitions per state in the order their symbols first appear in the closure; the kernel of
  // each target is built in `group` (counted per symbol, then placed).
  const transSym: number[] = [];
  const transTarget: number[] = [];
  const transStart: number[] = [];
  const symStamp = arena.take(SYMS);
  const symCount = arena.take(SYMS);
  const symAt = arena.take(SYMS);
  const order: number[] = [];
  const group = arena.take(ITEMS);
  const seed = arena.take(1, itemBase[rootRule]!);
  const startState = makeState(seed, 0, 1);
  for (let s = 0; s < kernelStart.length - 1; s++) {
    transStart.push(transSym.length);
    const c0 = closureStart[s]!, c1 = closureStart[s + 1]!;
    clock.spend(2 * (c1 - c0));
    order.length = 0;
    for (let c = c0; c < c1; c++) {
      const nx = itemNext[closures[c]!]!;
      if (nx < 0) continue;
      if (symStamp[nx] !== s + 1) { symStamp[nx] = s + 1; symCount[nx] = 0; order.push(nx); }
      symCount[nx]!++;
    }
    let at = 0;
    for (let i = 0; i < order.length; i++) {
      const x = order[i]!;
      symAt[x] = at;
      at += symCount[x]!;
    }
    for (let c = c0; c < c1; c++) {
      const it = closures[c]!;
      const nx = itemNext[it]!;
      if (nx >= 0) group[symAt[nx]!++] = it + 1;
    }
    for (let i = 0, from = 0; i < order.length; i++) {
      const x = order[i]!;
      const to = from + symCount[x]!;
      transSym.push(x);
      transTarget.push(makeState(group, from, to));
      from = to;
    }
  }
  const S = kernelStart.length - 1;
  transStart.push(transSym.length);
  const next = arena.take(S * SYMS, -1);
  for (let s = 0; s < S; s++) {
    for (let k = transStart[s]!; k < transStart[s + 1]!; k++) next[s * SYMS + transSym[k]!] = transTarget[k]!;
  }

  // DeRemer–Pennello over the nonterminal transitions x = (state, nt), numbered in closure order.
  const ntTransIndex = arena.take(S * NT, -1);
  const ntTransState: number[] = [];
  const ntTransNt: number[] = [];
  for (let s = 0; s < S; s++) {
    clock.spend(closureStart[s + 1]! - closureStart[s]!);
    for (let c = closureStart[s]!; c < closureStart[s + 1]!; c++) {
      const nx = itemNext[closures[c]!]!;
      if (nx >= TT && ntTransIndex[s * NT + nx - TT] === -1) {
        ntTransIndex[s * NT + nx - TT] = ntTransState.length;
        ntTransState.push(s);
        ntTransNt.push(nx);
      }
    }
  }
  const X = ntTransState.length;
  const W = (TT + 31) >>> 5;
  if (X * W > limits.maxTableCells)
    throw tooComplex(limits, "maxTableCells", X * W, "words of LALR lookahead sets");
  // Terminal bitsets per x: the direct reads, then (in place) Read, then Follow.
  const follow = arena.take(X * W);
  // Relations as singly linked lists (head per x; entries appended in order).
  const readsHead = arena.take(X, -1), readsTail = arena.take(X, -1);
  const includesHead = arena.take(X, -1), includesTail = arena.take(X, -1);
  const relTo: number[] = [], relNext: number[] = [];
  const relate = (head: Int32Array, tail: Int32Array, x: number, y: number): void => {
    const e = relTo.length;
    // Nested optional and repeated parts make states whose every item reads through nullable
    // symbols: millions of relations (and their lists' memory) from a short rule.
    if (e >= limits.maxTableCells) throw tooComplex(limits, "maxTableCells", e + 1, "LALR lookahead relations (nullable rules nested deep?)");
    relTo.push(y);
    relNext.push(-1);
    if (tail[x] === -1) head[x] = e;
    else relNext[tail[x]!] = e;
    tail[x] = e;
  };
  const lookbackState: number[] = [], lookbackRule: number[] = [], lookbackX: number[] = [];
  for (let x = 0; x < X; x++) {
    const s = ntTransState[x]!, nt = ntTransNt[x]!;
    if (s === startState && nt === sym(rootRule, 0)) follow[x * W]! |= 1;
    const target = next[s * SYMS + nt]!;
    clock.spend(closureStart[target + 1]! - closureStart[target]!);
    for (let c = closureStart[target]!; c < closureStart[target + 1]!; c++) {
      const s2 = itemNext[closures[c]!]!;
      if (s2 < 0) continue;
      if (s2 < TT) follow[x * W + (s2 >>> 5)]! |= 1 << (s2 & 31);
      if (nullable[s2]) relate(readsHead, readsTail, x, ntTransIndex[target * NT + s2 - TT]!);
    }
  }
  // suffixNullable[item]: every symbol from the item's dot to the rule's end is nullable.
  const suffixNullable = arena.take(ITEMS);
  for (let r = 0; r < R; r++) {
    const b = itemBase[r]!;
    suffixNullable[b + lenOf(r)] = 1;
    for (let i = lenOf(r) - 1; i >= 0; i--) suffixNullable[b + i] = suffixNullable[b + i + 1]! && nullable[sym(r, i)]! ? 1 : 0;
  }
  for (let x = 0; x < X; x++) {
    const s = ntTransState[x]!, nt = ntTransNt[x]!;
    clock.spend(closureStart[s + 1]! - closureStart[s]!);
    for (let c = closureStart[s]!; c < closureStart[s + 1]!; c++) {
      const it = closures[c]!;
      const r = itemRule[it]!;
      if (lhs[r] !== nt) continue;
      // Like Lark, items past their first symbol also contribute `includes` (an over-approximation
      // Lark makes; mirrored so that our conflicts are Lark's conflicts).
      const dot = it - itemBase[r]!;
      const len = lenOf(r);
      clock.spend(len - dot + 1);
      let s2 = s;
      for (let i = dot; i < len; i++) {
        const y = sym(r, i);
        if (y >= TT && suffixNullable[itemBase[r]! + i + 1]) relate(includesHead, includesTail, ntTransIndex[s2 * NT + y - TT]!, x);
        s2 = next[s2 * SYMS + y]!;
      }
      if (dot === 0) { lookbackX.push(x); lookbackState.push(s2); lookbackRule.push(r); }
    }
  }
  const depth = arena.take(X);
  const stack = arena.take(X);
  // The traversal's own frames (node, edge being followed): a chain of relations as long as the
  // grammar would overflow the call stack as recursion.
  const frameNode = arena.take(X);
  const frameEdge = arena.take(X);
  const frameDepth = arena.take(X);
  // Digraph (DeRemer–Pennello's SCC closure): F[x] = F[x] ∪ F[y] over the relation, in place.
  const digraph = (head: Int32Array, F: Int32Array): void => {
    depth.fill(0);
    let sp = 0;
    for (let root = 0; root < X; root++) {
      if (depth[root] !== 0) continue;
      let fp = 0;
      stack[sp++] = root;
      depth[root] = sp;
      frameNode[fp] = root;
      frameDepth[fp] = sp;
      frameEdge[fp++] = head[root]!;
      while (fp > 0) {
        const x = frameNode[fp - 1]!;
        const e = frameEdge[fp - 1]!;
        if (e >= 0) {
          const y = relTo[e]!;
          if (depth[y] === 0) {
            // Descend; the edge is finished (the merge below) when y's frame returns.
            stack[sp++] = y;
            depth[y] = sp;
            frameNode[fp] = y;
            frameDepth[fp] = sp;
            frameEdge[fp++] = head[y]!;
            continue;
          }
          if (depth[y]! > 0 && depth[y]! < depth[x]!) depth[x] = depth[y]!;
          clock.spend(W);
          for (let w = 0; w < W; w++) F[x * W + w]! |= F[y * W + w]!;
          frameEdge[fp - 1] = relNext[e]!;
          continue;
        }
        // x is done: close its SCC if it roots one, then finish the parent's edge to x.
        clock.spend(W + 1);
        if (depth[x] === frameDepth[fp - 1]) {
          for (;;) {
            const z = stack[--sp]!;
            depth[z] = -1;
            if (z === x) break;
            for (let w = 0; w < W; w++) F[z * W + w] = F[x * W + w]!;
          }
        }
        fp--;
        if (fp > 0) {
          const parent = frameNode[fp - 1]!;
          if (depth[x]! > 0 && depth[x]! < depth[parent]!) depth[parent] = depth[x]!;
          for (let w = 0; w < W; w++) F[parent * W + w]! |= F[x * W + w]!;
          frameEdge[fp - 1] = relNext[frameEdge[fp - 1]!]!;
        }
      }
    }
  };
  digraph(readsHead, follow);
  digraph(includesHead, follow);

  // Lookaheads: per (state, terminal) the reducible rules, in the order Lark's sets meet them.
  const laHead = arena.take(S * TT, -1), laTail = arena.take(S * TT, -1);
  const laRule: number[] = [], laNext: number[] = [];
  for (let k = 0; k < lookbackX.length; k++) {
    const x = lookbackX[k]!, st = lookbackState[k]!, r = lookbackRule[k]!;
    clock.spend(W);
    for (let w = 0; w < W; w++) {
      for (let bits = follow[x * W + w]!; bits !== 0; bits &= bits - 1) {
        const la = w * 32 + (31 - Math.clz32(bits & -bits));
        const cell = st * TT + la;
        let dup = false;
        for (let e = laHead[cell]!; e >= 0 && !dup; e = laNext[e]!) if (laRule[e] === r) dup = true;
        if (dup) continue;
        const e = laRule.length;
        laRule.push(r);
        laNext.push(-1);
        if (laTail[cell] === -1) laHead[cell] = e;
        else laNext[laTail[cell]!] = e;
        laTail[cell] = e;
      }
    }
  }

  // The tables kept with the grammar share one buffer (one allocation instead of 4 + 2 per state).
  let acceptCount = 0;
  for (let s = 0; s < S; s++) {
    for (let k = transStart[s]!; k < transStart[s + 1]!; k++) if (transSym[k]! < TT) acceptCount++;
    for (let la = 0; la < TT; la++) if (laHead[s * TT + la]! >= 0) acceptCount++;
  }
  const kept = new Int32Array(S * TT + S * NT + 2 * R + acceptCount + 2 * kernels.length);
  let carved = 0;
  const carve = (n: number): Int32Array => {
    const view = new Int32Array(kept.buffer, carved * 4, n);
    carved += n;
    return view;
  };
  const action = carve(S * TT);
  const gotoT = carve(S * NT).fill(-1);
  const rrMessages: string[] = [];
  for (let s = 0; s < S; s++) {
    for (let k = transStart[s]!; k < transStart[s + 1]!; k++) {
      const y = transSym[k]!;
      if (y < TT) action[s * TT + y] = transTarget[k]! + 1;
      else gotoT[s * NT + (y - TT)] = transTarget[k]!;
    }
    for (let la = 0; la < TT; la++) {
      const e0 = laHead[s * TT + la]!;
      if (e0 < 0) continue;
      let chosen = laRule[e0]!;
      if (laNext[e0]! >= 0) {
        const rs: number[] = [];
        for (let e = e0; e >= 0; e = laNext[e]!) rs.push(laRule[e]!);
        const p = rs.map((r) => ({ pr: allRules[r]!.priority ?? 0, r })).sort((a, b) => b.pr - a.pr);
        if (p[0]!.pr > p[1]!.pr) chosen = p[0]!.r;
        else rrMessages.push(`Reduce/Reduce collision in Terminal('${terminals[la]}') between the following rules: ${rs.map((r) => "\n\t- " + ruleText(allRules[r]!)).join("")}`);
      }
      if (action[s * TT + la] !== 0) continue; // shift wins
      action[s * TT + la] = -(chosen + 1);
    }
  }
  if (rrMessages.length) throw new GrammarError(rrMessages.join("\n\n"));

  const ruleLhs = carve(R);
  const ruleLen = carve(R);
  for (let r = 0; r < R; r++) {
    ruleLhs[r] = lhs[r]! - TT;
    ruleLen[r] = lenOf(r);
  }
  const acceptsByState: Int32Array[] = [];
  const kernelPairs: Int32Array[] = [];
  for (let s = 0; s < S; s++) {
    let n = 0;
    for (let t = 0; t < TT; t++) if (action[s * TT + t] !== 0) n++;
    const acc = carve(n);
    for (let t = 0, i = 0; t < TT; t++) if (action[s * TT + t] !== 0) acc[i++] = t;
    acceptsByState.push(acc);
    const k0 = kernelStart[s]!, k1 = kernelStart[s + 1]!;
    const k = carve((k1 - k0) * 2);
    for (let i = 0; i < k1 - k0; i++) {
      const it = kernels[k0 + i]!;
      k[2 * i] = itemRule[it]!;
      k[2 * i + 1] = it - itemBase[itemRule[it]!]!;
    }
    kernelPairs.push(k);
  }
  return {
    numStates: S,
    terminals,
    nonterminals: ntNames,
    rules: allRules,
    action,
    goto: gotoT,
    ruleLhs,
    ruleLen,
    startState,
    endState: next[startState * SYMS + sym(rootRule, 0)]!,
    terminalIndex,
    acceptsByState,
    kernels: kernelPairs,
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
