// Lark's LALR_Analyzer.compute_lr0_states (lark/parsers/lalr_analysis.py 145–171): the LR(0)
// automaton, breadth first from the root rule's state, each state's kernel and closure (the
// closure through GrammarAnalyzer.expand_rule, grammar-analysis.ts) and its transitions. States
// are numbered as they are met, kernels found again by a hash.

import { tooComplex } from "../limits.js";
import { RuleExpansions, type Analysis } from "./grammar-analysis.js";

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
    while (j >= from && a[j]! > v) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
}

/** The LR(0) automaton: states' kernels and closures (item ids, ascending), and transitions. */
export interface Lr0States {
  readonly S: number;
  readonly startState: number;
  /** State s's kernel is kernels[kernelStart[s] .. kernelStart[s + 1]); closures the same. */
  readonly kernels: readonly number[];
  readonly kernelStart: readonly number[];
  readonly closures: readonly number[];
  readonly closureStart: readonly number[];
  /** State s's transitions are at [transStart[s] .. transStart[s + 1]), in closure order. */
  readonly transSym: readonly number[];
  readonly transTarget: readonly number[];
  readonly transStart: readonly number[];
  /** next[state * SYMS + symbol] → state, or -1. */
  readonly next: Int32Array;
}

/**
 * compute_lr0_states's `cache` (kernel → state): states made as their kernels are met, each
 * with its closure, flat; found again by a kernel hash.
 */
class Lr0StateCache {
  readonly kernels: number[] = [];
  readonly kernelStart: number[] = [0];
  readonly closures: number[] = [];
  readonly closureStart: number[] = [0];
  private readonly byHash = new Map<number, number>();
  private readonly sameHash: number[] = [];
  private readonly expansions: RuleExpansions;
  private readonly itemMark: Int32Array;
  private markStamp = 0;

  constructor(private readonly a: Analysis) {
    this.expansions = new RuleExpansions(a);
    this.itemMark = a.arena.take(a.ITEMS);
  }

  /** The state whose kernel is `kernel[from..to)` (sorted here), made if new. */
  makeState(kernel: Int32Array, from: number, to: number): number {
    const { kernels, kernelStart, closures, closureStart, byHash, sameHash, itemMark, expansions } = this;
    const { itemNext, TT, SYMS, limits, clock } = this.a;
    const ntExpansion = expansions.items,
      ntExpansionStart = expansions.start,
      ntExpansionEnd = expansions.end;
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
      throw tooComplex(
        limits,
        "maxTableCells",
        (id + 1) * SYMS,
        `LALR table cells (${SYMS.toLocaleString("en-US")} symbols × more than ${id.toLocaleString("en-US")} states)`,
      );
    sameHash.push(byHash.get(h) ?? -1);
    byHash.set(h, id);
    for (let i = from; i < to; i++) kernels.push(kernel[i]!);
    kernelStart.push(kernels.length);
    const stamp = ++this.markStamp;
    const c0 = closures.length;
    for (let i = from; i < to; i++) {
      const it = kernel[i]!;
      if (itemMark[it] !== stamp) {
        itemMark[it] = stamp;
        closures.push(it);
      }
    }
    for (let i = from; i < to; i++) {
      const nx = itemNext[kernel[i]!]! - TT;
      if (nx < 0) continue;
      expansions.expand(nx);
      for (let k = ntExpansionStart[nx]!; k < ntExpansionEnd[nx]!; k++) {
        const it = ntExpansion[k]!;
        if (itemMark[it] !== stamp) {
          itemMark[it] = stamp;
          closures.push(it);
        }
      }
    }
    sortRange(closures, c0, closures.length);
    clock.spend(closures.length - c0 + to - from);
    if (closures.length > limits.maxTableCells)
      throw tooComplex(limits, "maxTableCells", closures.length, "LALR closure items (nullable rules nested deep?)");
    closureStart.push(closures.length);
    return id;
  }
}

/**
 * The LR(0) states, breadth first from the root rule's: transitions per state in the order their
 * symbols first appear in the closure; the kernel of each target is built in `group` (counted
 * per symbol, then placed).
 */
export function computeLr0States(a: Analysis): Lr0States {
  const { arena, clock, ITEMS, SYMS, itemBase, itemNext, rootRule } = a;
  const cache = new Lr0StateCache(a);
  const { kernelStart, closures, closureStart } = cache;
  const transSym: number[] = [];
  const transTarget: number[] = [];
  const transStart: number[] = [];
  const symStamp = arena.take(SYMS);
  const symCount = arena.take(SYMS);
  const symAt = arena.take(SYMS);
  const order: number[] = [];
  const group = arena.take(ITEMS);
  const seed = arena.take(1, itemBase[rootRule]!);
  const startState = cache.makeState(seed, 0, 1);
  for (let s = 0; s < kernelStart.length - 1; s++) {
    transStart.push(transSym.length);
    const c0 = closureStart[s]!,
      c1 = closureStart[s + 1]!;
    clock.spend(2 * (c1 - c0));
    order.length = 0;
    for (let c = c0; c < c1; c++) {
      const nx = itemNext[closures[c]!]!;
      if (nx < 0) continue;
      if (symStamp[nx] !== s + 1) {
        symStamp[nx] = s + 1;
        symCount[nx] = 0;
        order.push(nx);
      }
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
      transTarget.push(cache.makeState(group, from, to));
      from = to;
    }
  }
  const S = kernelStart.length - 1;
  transStart.push(transSym.length);
  const next = arena.take(S * SYMS, -1);
  for (let s = 0; s < S; s++) {
    for (let k = transStart[s]!; k < transStart[s + 1]!; k++) next[s * SYMS + transSym[k]!] = transTarget[k]!;
  }
  return { S, startState, kernels: cache.kernels, kernelStart, closures, closureStart, transSym, transTarget, transStart, next };
}
