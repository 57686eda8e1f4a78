// The minimization of finishDfa: the coarsest partition of a DFA's states that respects the
// initial blocks and every transition, by Valmari and Lehtinen's partition refinement over the
// transitions that exist ("Efficient minimization of DFAs with partial transition functions",
// STACS 2008; the "fast brief practical" form of 2012). Our DFAs are sparse — a JSON Schema's has
// about one live transition in six of its states × classes — and this works on the live ones
// only: O(m log n) for m transitions, against Hopcroft's O(k n log n) over a DFA made total
// with a dead sink, which was ~1 ms of a median schema's 4 ms compile.

import { regexClock } from "../clock.js";
import { byHead, type TransitionLists } from "./distances.js";
import { dfaArena } from "./scratch.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/**
 * A refinable partition of 0..n-1: `elems` grouped by set (set s holds elems[first[s]..past[s])),
 * `loc` the inverse of `elems`, `set` each element's set. `mark` moves an element to the front of
 * its set; `split` separates each touched set's marked part from the rest, the smaller part
 * becoming a new set (so an element changes set O(log n) times in all).
 */
class RefinablePartition {
  readonly elems: Int32Array;
  readonly loc: Int32Array;
  readonly set: Int32Array;
  readonly first: Int32Array;
  readonly past: Int32Array;
  private readonly marked: Int32Array;
  private readonly touched: Int32Array;
  private numTouched = 0;
  count = 0;

  constructor(n: number) {
    this.elems = arena.take(n);
    this.loc = arena.take(n);
    this.set = arena.take(n);
    // At most n sets exist; +1 so that n = 0 still has room for the empty set's bounds.
    this.first = arena.take(n + 1);
    this.past = arena.take(n + 1);
    this.marked = arena.take(n + 1);
    this.touched = arena.take(n + 1);
  }

  /** Elements grouped by `groupOf` (ids < numGroups, each group non-empty or left out). */
  initGrouped(n: number, groupOf: Int32Array, numGroups: number): void {
    const { elems, loc, set, first, past } = this;
    const start = arena.take(numGroups + 1);
    for (let e = 0; e < n; e++) start[groupOf[e]! + 1]!++;
    for (let g = 0; g < numGroups; g++) start[g + 1]! += start[g]!;
    // Empty groups are dropped: the sets are numbered densely in group order.
    const setOf = arena.take(numGroups, -1);
    let count = 0;
    for (let g = 0; g < numGroups; g++) {
      if (start[g + 1]! === start[g]!) continue;
      setOf[g] = count;
      first[count] = start[g]!;
      past[count] = start[g + 1]!;
      count++;
    }
    for (let e = 0; e < n; e++) {
      const g = groupOf[e]!;
      const at = start[g]!++;
      elems[at] = e;
      loc[e] = at;
      set[e] = setOf[g]!;
    }
    this.count = count;
  }

  mark(e: number): void {
    const { elems, loc, marked } = this;
    const s = this.set[e]!;
    const i = loc[e]!;
    const j = this.first[s]! + marked[s]!;
    const other = elems[j]!;
    elems[i] = other;
    loc[other] = i;
    elems[j] = e;
    loc[e] = j;
    if (marked[s]!++ === 0) this.touched[this.numTouched++] = s;
  }

  split(): void {
    const { elems, set, first, past, marked, touched } = this;
    while (this.numTouched > 0) {
      const s = touched[--this.numTouched]!;
      const j = first[s]! + marked[s]!;
      if (j === past[s]) {
        marked[s] = 0;
        continue;
      }
      const z = this.count++;
      if (marked[s]! <= past[s]! - j) {
        first[z] = first[s]!;
        past[z] = j;
        first[s] = j;
      } else {
        past[z] = past[s]!;
        first[z] = j;
        past[s] = j;
      }
      clock.tick(past[z]! - first[z]! + 1);
      for (let i = first[z]!; i < past[z]!; i++) set[elems[i]!] = z;
      marked[s] = 0;
      marked[z] = 0;
    }
  }
}

/**
 * The coarsest partition of n states refining `initialBlock` (ids < numInitial) in which states
 * of a block go, on every label, to the same block or all nowhere. `edges` are the transitions,
 * labels < k; missing ones lead nowhere (a dead state, left implicit). Returns each state's block
 * id.
 */
export function minimize(n: number, k: number, edges: TransitionLists, initialBlock: Int32Array, numInitial: number): Int32Array {
  const { m, tail, label } = edges;
  const blocks = new RefinablePartition(n);
  blocks.initGrouped(n, initialBlock, numInitial);
  // Cords: the transitions grouped by label.
  const cords = new RefinablePartition(m);
  cords.initGrouped(m, label, k);
  // Transitions into each state, for marking those into a block.
  const { offsets: inOffsets, items: incoming } = byHead(n, edges, "id");

  // Every cord splits the blocks once, and every block but the first (all but one initial block
  // suffice) and every new one (the smaller half of a split) splits the cords once.
  const cordElems = cords.elems;
  const cordFirst = cords.first;
  const cordPast = cords.past;
  const blockElems = blocks.elems;
  const blockFirst = blocks.first;
  const blockPast = blocks.past;
  let b = 1;
  for (let c = 0; c < cords.count; c++) {
    clock.tick(cordPast[c]! - cordFirst[c]! + 1);
    for (let i = cordFirst[c]!; i < cordPast[c]!; i++) blocks.mark(tail[cordElems[i]!]!);
    blocks.split();
    for (; b < blocks.count; b++) {
      let work = 0;
      for (let i = blockFirst[b]!; i < blockPast[b]!; i++) {
        const q = blockElems[i]!;
        const to = inOffsets[q + 1]!;
        work += to - inOffsets[q]! + 1;
        for (let j = inOffsets[q]!; j < to; j++) cords.mark(incoming[j]!);
      }
      clock.tick(work);
      cords.split();
    }
  }
  return blocks.set;
}
