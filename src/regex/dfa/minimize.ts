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
 * A refinable partition of 0..n-1: `elems` grouped by set (set s holds elems[first..past), its
 * bounds in `ofSet`), each element's place in `elems` and its set. `mark` moves an element to the front of its set;
 * `split` separates each touched set's marked part from the rest, the smaller part becoming a new
 * set (so an element changes set O(log n) times in all). An element's place and set are side by
 * side in `ofElem`, a set's first, past and marked count in `ofSet`: a mark's reads are a few
 * cache lines instead of one per array (the transitions' partition outgrows the cache).
 */
class RefinablePartition {
  readonly elems: Int32Array;
  /** [2e]: e's place in elems; [2e + 1]: its set. */
  readonly ofElem: Int32Array;
  /** [3s]: first; [3s + 1]: past; [3s + 2]: marked elements of set s. */
  readonly ofSet: Int32Array;
  private readonly touched: Int32Array;
  private numTouched = 0;
  count = 0;

  constructor(n: number) {
    this.elems = arena.take(n);
    this.ofElem = arena.take(2 * n);
    // At most n sets exist; +1 so that n = 0 still has room for the empty set's bounds.
    this.ofSet = arena.take(3 * (n + 1));
    this.touched = arena.take(n + 1);
  }

  /** Elements grouped by `groupOf` (ids < numGroups, each group non-empty or left out). */
  initGrouped(n: number, groupOf: Int32Array, numGroups: number): void {
    const { elems, ofElem, ofSet } = this;
    const start = arena.take(numGroups + 1);
    for (let e = 0; e < n; e++) start[groupOf[e]! + 1]!++;
    for (let g = 0; g < numGroups; g++) start[g + 1]! += start[g]!;
    // Empty groups are dropped: the sets are numbered densely in group order.
    const setOf = arena.take(numGroups, -1);
    let count = 0;
    for (let g = 0; g < numGroups; g++) {
      if (start[g + 1]! === start[g]!) continue;
      setOf[g] = count;
      ofSet[3 * count] = start[g]!;
      ofSet[3 * count + 1] = start[g + 1]!;
      count++;
    }
    for (let e = 0; e < n; e++) {
      const g = groupOf[e]!;
      const at = start[g]!++;
      elems[at] = e;
      ofElem[2 * e] = at;
      ofElem[2 * e + 1] = setOf[g]!;
    }
    this.count = count;
  }

  /** Each element's set, as an array by element (out of scratch). */
  sets(n: number): Int32Array {
    const set = arena.take(n);
    for (let e = 0; e < n; e++) set[e] = this.ofElem[2 * e + 1]!;
    return set;
  }

  mark(e: number): void {
    const { elems, ofElem, ofSet } = this;
    const s = ofElem[2 * e + 1]!;
    const i = ofElem[2 * e]!;
    const marked = ofSet[3 * s + 2]!;
    const j = ofSet[3 * s]! + marked;
    const other = elems[j]!;
    elems[i] = other;
    ofElem[2 * other] = i;
    elems[j] = e;
    ofElem[2 * e] = j;
    ofSet[3 * s + 2] = marked + 1;
    if (marked === 0) this.touched[this.numTouched++] = s;
  }

  split(): void {
    const { elems, ofElem, ofSet, touched } = this;
    while (this.numTouched > 0) {
      const s = touched[--this.numTouched]!;
      const first = ofSet[3 * s]!;
      const past = ofSet[3 * s + 1]!;
      const marked = ofSet[3 * s + 2]!;
      ofSet[3 * s + 2] = 0;
      const j = first + marked;
      if (j === past) continue;
      const z = this.count++;
      let from: number;
      let to: number;
      if (marked <= past - j) {
        from = first;
        to = j;
        ofSet[3 * s] = j;
      } else {
        from = j;
        to = past;
        ofSet[3 * s + 1] = j;
      }
      ofSet[3 * z] = from;
      ofSet[3 * z + 1] = to;
      ofSet[3 * z + 2] = 0;
      clock.tick(to - from + 1);
      for (let i = from; i < to; i++) ofElem[2 * elems[i]! + 1] = z;
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
  const cordSet = cords.ofSet;
  const blockElems = blocks.elems;
  const blockSet = blocks.ofSet;
  let b = 1;
  for (let c = 0; c < cords.count; c++) {
    const cordFirst = cordSet[3 * c]!;
    const cordPast = cordSet[3 * c + 1]!;
    clock.tick(cordPast - cordFirst + 1);
    for (let i = cordFirst; i < cordPast; i++) blocks.mark(tail[cordElems[i]!]!);
    blocks.split();
    for (; b < blocks.count; b++) {
      let work = 0;
      const blockPast = blockSet[3 * b + 1]!;
      for (let i = blockSet[3 * b]!; i < blockPast; i++) {
        const q = blockElems[i]!;
        const to = inOffsets[q + 1]!;
        work += to - inOffsets[q]! + 1;
        for (let j = inOffsets[q]!; j < to; j++) cords.mark(incoming[j]!);
      }
      clock.tick(work);
      cords.split();
    }
  }
  return blocks.sets(n);
}
