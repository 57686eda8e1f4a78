// Lark's LALR_Analyzer (lark/parsers/lalr_analysis.py 135–303), one function per phase as
// compute_lalr runs them after computeLr0States (145–171, lr0-states.ts): computeReadsRelations
// (173–206), computeIncludesLookback (208–235), computeLookaheads (237–244) with digraph
// (85–132), and computeLalr1States (246–296). DeRemer–Pennello lookaheads: shift/reduce conflicts resolve to
// shift, reduce/reduce conflicts by rule priority or are refused with Lark's message. State
// numbering, conflict resolution and messages follow the order Lark's analysis has.
//
// Each phase takes the grammar's Analysis (grammar-analysis.ts: ids, items, the arena and the
// budget) and the tables of the phases before it, and returns its own.

import type { LalrTable } from "../lalr-table.js";
import { GrammarError } from "../errors.js";
import { tooComplex, type GrammarLimits } from "../limits.js";
import { ruleText, type Analysis } from "./grammar-analysis.js";
import type { Lr0States } from "./lr0-states.js";

// ---------------------------------------------------------------------------------------------
// compute_reads_relations

/**
 * The relations over nonterminal transitions (reads, then includes), as singly linked lists in
 * one pool of edges: a head per transition, entries appended in order.
 */
export class Relations {
  readonly relTo: number[] = [];
  readonly relNext: number[] = [];
  readonly readsHead: Int32Array;
  readonly readsTail: Int32Array;
  readonly includesHead: Int32Array;
  readonly includesTail: Int32Array;

  constructor(
    a: Analysis,
    X: number,
    private readonly limits: GrammarLimits,
  ) {
    this.readsHead = a.arena.take(X, -1);
    this.readsTail = a.arena.take(X, -1);
    this.includesHead = a.arena.take(X, -1);
    this.includesTail = a.arena.take(X, -1);
  }

  /** x R y, for the relation whose lists are `head`/`tail`. */
  relate(head: Int32Array, tail: Int32Array, x: number, y: number): void {
    const relTo = this.relTo,
      relNext = this.relNext,
      limits = this.limits;
    const e = relTo.length;
    // Nested optional and repeated parts make states whose every item reads through nullable
    // symbols: millions of relations (and their lists' memory) from a short rule.
    if (e >= limits.maxTableCells)
      throw tooComplex(limits, "maxTableCells", e + 1, "LALR lookahead relations (nullable rules nested deep?)");
    relTo.push(y);
    relNext.push(-1);
    if (tail[x] === -1) head[x] = e;
    else relNext[tail[x]!] = e;
    tail[x] = e;
  }
}

/** The nonterminal transitions x = (state, nt), numbered in closure order, and their sets. */
export interface NtTransitions {
  readonly X: number;
  /** Words of a terminal bitset. */
  readonly W: number;
  /** ntTransIndex[state * NT + nt] → x, or -1. */
  readonly ntTransIndex: Int32Array;
  readonly ntTransState: readonly number[];
  readonly ntTransNt: readonly number[];
  /** Terminal bitsets per x: the direct reads, then (in place) Read, then Follow. */
  readonly follow: Int32Array;
  readonly relations: Relations;
}

/** DeRemer–Pennello's DR and reads: per nonterminal transition, its direct reads and reads edges. */
export function computeReadsRelations(a: Analysis, lr0: Lr0States, nullable: Int32Array): NtTransitions {
  const { arena, clock, limits, TT, NT, SYMS, itemBase, itemNext, rootRule } = a;
  const { S, startState, closures, closureStart, next } = lr0;
  const sym = (r: number, i: number): number => itemNext[itemBase[r]! + i]!;
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
  if (X * W > limits.maxTableCells) throw tooComplex(limits, "maxTableCells", X * W, "words of LALR lookahead sets");
  const follow = arena.take(X * W);
  const relations = new Relations(a, X, limits);
  const { readsHead, readsTail } = relations;
  for (let x = 0; x < X; x++) {
    const s = ntTransState[x]!,
      nt = ntTransNt[x]!;
    if (s === startState && nt === sym(rootRule, 0)) follow[x * W]! |= 1;
    const target = next[s * SYMS + nt]!;
    clock.spend(closureStart[target + 1]! - closureStart[target]!);
    for (let c = closureStart[target]!; c < closureStart[target + 1]!; c++) {
      const s2 = itemNext[closures[c]!]!;
      if (s2 < 0) continue;
      if (s2 < TT) follow[x * W + (s2 >>> 5)]! |= 1 << (s2 & 31);
      if (nullable[s2]) relations.relate(readsHead, readsTail, x, ntTransIndex[target * NT + s2 - TT]!);
    }
  }
  return { X, W, ntTransIndex, ntTransState, ntTransNt, follow, relations };
}

// ---------------------------------------------------------------------------------------------
// compute_includes_lookback

/** lookback: per entry k, rule lookbackRule[k] is reduced in lookbackState[k] on x's Follow. */
export interface Lookback {
  readonly lookbackX: readonly number[];
  readonly lookbackState: readonly number[];
  readonly lookbackRule: readonly number[];
}

/** DeRemer–Pennello's includes (into `nt.relations`) and lookback. */
export function computeIncludesLookback(a: Analysis, lr0: Lr0States, nullable: Int32Array, nt: NtTransitions): Lookback {
  const { arena, clock, R, TT, NT, SYMS, ITEMS, itemBase, itemNext, itemRule, lhs } = a;
  const { closures, closureStart, next } = lr0;
  const { X, ntTransIndex, ntTransState, ntTransNt, relations } = nt;
  const { includesHead, includesTail } = relations;
  const sym = (r: number, i: number): number => itemNext[itemBase[r]! + i]!;
  const lenOf = (r: number): number => itemBase[r + 1]! - itemBase[r]! - 1;
  const lookbackState: number[] = [],
    lookbackRule: number[] = [],
    lookbackX: number[] = [];
  // suffixNullable[item]: every symbol from the item's dot to the rule's end is nullable.
  const suffixNullable = arena.take(ITEMS);
  for (let r = 0; r < R; r++) {
    const b = itemBase[r]!;
    suffixNullable[b + lenOf(r)] = 1;
    for (let i = lenOf(r) - 1; i >= 0; i--) suffixNullable[b + i] = suffixNullable[b + i + 1]! && nullable[sym(r, i)]! ? 1 : 0;
  }
  for (let x = 0; x < X; x++) {
    const s = ntTransState[x]!,
      nt = ntTransNt[x]!;
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
        if (y >= TT && suffixNullable[itemBase[r]! + i + 1])
          relations.relate(includesHead, includesTail, ntTransIndex[s2 * NT + y - TT]!, x);
        s2 = next[s2 * SYMS + y]!;
      }
      if (dot === 0) {
        lookbackX.push(x);
        lookbackState.push(s2);
        lookbackRule.push(r);
      }
    }
  }
  return { lookbackX, lookbackState, lookbackRule };
}

// ---------------------------------------------------------------------------------------------
// digraph, compute_lookaheads

/** The traversal's scratch: N (depth), the stack S, and its own frames. */
interface DigraphScratch {
  readonly depth: Int32Array;
  readonly stack: Int32Array;
  // The traversal's own frames (node, edge being followed): a chain of relations as long as the
  // grammar would overflow the call stack as recursion.
  readonly frameNode: Int32Array;
  readonly frameEdge: Int32Array;
  readonly frameDepth: Int32Array;
}

/**
 * Digraph (DeRemer–Pennello's SCC closure, Lark's digraph + traverse): F[x] = F[x] ∪ F[y] over
 * the relation whose list heads are `head`, in place, for the nonterminal transitions of `nt`.
 */
export function digraph(a: Analysis, nt: NtTransitions, head: Int32Array, F: Int32Array, scratch: DigraphScratch): void {
  const { clock } = a;
  const { X, W } = nt;
  const { relTo, relNext } = nt.relations;
  const { depth, stack, frameNode, frameEdge, frameDepth } = scratch;
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
}

/** Per (state, terminal) the rules to reduce: state * TT + la's list, laRule/laNext linked. */
export interface Lookaheads {
  readonly laHead: Int32Array;
  readonly laRule: readonly number[];
  readonly laNext: readonly number[];
}

/**
 * Read sets (digraph over reads), then Follow sets (digraph over includes), both in place in
 * `nt.follow`; then per (state, terminal) the reducible rules, in the order Lark's sets meet them.
 */
export function computeLookaheads(a: Analysis, lr0: Lr0States, nt: NtTransitions, lookback: Lookback): Lookaheads {
  const { arena, clock, TT } = a;
  const { S } = lr0;
  const { X, W, follow, relations } = nt;
  const scratch: DigraphScratch = {
    depth: arena.take(X),
    stack: arena.take(X),
    frameNode: arena.take(X),
    frameEdge: arena.take(X),
    frameDepth: arena.take(X),
  };
  digraph(a, nt, relations.readsHead, follow, scratch);
  digraph(a, nt, relations.includesHead, follow, scratch);

  const { lookbackX, lookbackState, lookbackRule } = lookback;
  const laHead = arena.take(S * TT, -1),
    laTail = arena.take(S * TT, -1);
  const laRule: number[] = [],
    laNext: number[] = [];
  for (let k = 0; k < lookbackX.length; k++) {
    const x = lookbackX[k]!,
      st = lookbackState[k]!,
      r = lookbackRule[k]!;
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
  return { laHead, laRule, laNext };
}

// ---------------------------------------------------------------------------------------------
// compute_lalr1_states

/**
 * The action and goto tables (shifts from the transitions, reductions from the lookaheads; a
 * shift wins a shift/reduce conflict, priority a reduce/reduce one, else Lark's message), and
 * what the contextual lexer and the automaton keep per state, as the LalrTable. The tables kept
 * with the grammar share one buffer (one allocation instead of 4 + 2 per state).
 */
export function computeLalr1States(a: Analysis, lr0: Lr0States, la: Lookaheads): LalrTable {
  const { TT, NT, R, SYMS, rules: allRules, terminals, itemBase, itemRule, itemNext, lhs, rootRule } = a;
  const { S, startState, kernels, kernelStart, transSym, transStart, next } = lr0;
  const { laHead } = la;
  const sym = (r: number, i: number): number => itemNext[itemBase[r]! + i]!;
  const lenOf = (r: number): number => itemBase[r + 1]! - itemBase[r]! - 1;
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
  fillActions(a, lr0, la, action, gotoT);

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
    const k0 = kernelStart[s]!,
      k1 = kernelStart[s + 1]!;
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
    nonterminals: a.nonterminals,
    rules: allRules,
    action,
    goto: gotoT,
    ruleLhs,
    ruleLen,
    startState,
    endState: next[startState * SYMS + sym(rootRule, 0)]!,
    terminalIndex: a.terminalIndex,
    acceptsByState,
    kernels: kernelPairs,
  };
}

/**
 * Each state's row of `action` (v > 0 shift to v-1, v < 0 reduce rule -v-1) and `goto`: a shift
 * wins over a reduction, the higher priority between reductions, and a tie is Lark's
 * Reduce/Reduce refusal (every colliding cell's message, together).
 */
function fillActions(a: Analysis, lr0: Lr0States, la: Lookaheads, action: Int32Array, gotoT: Int32Array): void {
  const { TT, NT, rules: allRules, terminals } = a;
  const { S, transSym, transTarget, transStart } = lr0;
  const { laHead, laRule, laNext } = la;
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
        else
          rrMessages.push(
            `Reduce/Reduce collision in Terminal('${terminals[la]}') between the following rules: ${rs.map((r) => "\n\t- " + ruleText(allRules[r]!)).join("")}`,
          );
      }
      if (action[s * TT + la] !== 0) continue; // shift wins
      action[s * TT + la] = -(chosen + 1);
    }
  }
  if (rrMessages.length) throw new GrammarError(rrMessages.join("\n\n"));
}
