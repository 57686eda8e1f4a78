// Hopcroft's partition refinement, the minimization of finishDfa: the coarsest partition of a
// total DFA's states that respects the initial blocks and every transition.

import { regexClock } from "../clock.js";
import { dfaArena } from "./scratch.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/**
 * Hopcroft partition refinement on a total DFA (n states, k symbols). Returns each state's
 * block id. The initial partition is `initialBlock` (ids < numInitial); the block holding
 * `skipState` is left off the initial worklist (all but one initial block suffice).
 */
export function minimize(
  n: number,
  k: number,
  delta: Int32Array,
  initialBlock: Int32Array,
  numInitial: number,
  skipState: number,
): Int32Array {
  const { invOffsets, invSources } = inverseTransitions(n, k, delta);
  const elems = arena.take(n);
  const pos = arena.take(n);
  const blk = arena.take(n);
  // At most n blocks exist and each is on the worklist at most once at a time.
  const bStart = arena.take(n);
  const bEnd = arena.take(n);
  const bMarked = arena.take(n);
  const inWork = arena.take(n);
  const work = arena.take(n);
  let numBlocks = numInitial;
  let workSize = 0;

  // Counting sort of states by initial block.
  for (let s = 0; s < n; s++) bEnd[initialBlock[s]!]!++;
  let p = 0;
  for (let b = 0; b < numInitial; b++) {
    const size = bEnd[b]!;
    bStart[b] = p;
    bEnd[b] = p;
    p += size;
  }
  for (let s = 0; s < n; s++) {
    const b = initialBlock[s]!;
    const at = bEnd[b]!++;
    elems[at] = s;
    pos[s] = at;
    blk[s] = b;
  }
  for (let b = 0; b < numInitial; b++) {
    if (b === initialBlock[skipState] || bEnd[b] === bStart[b]) continue;
    inWork[b] = 1;
    work[workSize++] = b;
  }

  const touched = arena.take(n);
  const splitterElems = arena.take(n);
  while (workSize > 0) {
    const a = work[--workSize]!;
    inWork[a] = 0;
    let splitterSize = 0;
    for (let i = bStart[a]!; i < bEnd[a]!; i++) splitterElems[splitterSize++] = elems[i]!;
    for (let c = 0; c < k; c++) {
      clock.tick(splitterSize);
      let touchedCount = 0;
      for (let x = 0; x < splitterSize; x++) {
        const t = splitterElems[x]!;
        const from = invOffsets[t * k + c]!;
        const to = invOffsets[t * k + c + 1]!;
        for (let i = from; i < to; i++) {
          const s = invSources[i]!;
          const b = blk[s]!;
          const target = bStart[b]! + bMarked[b]!;
          const ps = pos[s]!;
          if (ps < target) continue; // already marked
          const other = elems[target]!;
          elems[target] = s;
          pos[s] = target;
          elems[ps] = other;
          pos[other] = ps;
          if (bMarked[b]! === 0) touched[touchedCount++] = b;
          bMarked[b]!++;
        }
      }
      clock.tick(touchedCount);
      for (let x = 0; x < touchedCount; x++) {
        const b = touched[x]!;
        const marked = bMarked[b]!;
        bMarked[b] = 0;
        const size = bEnd[b]! - bStart[b]!;
        if (marked === size) continue;
        const nb = numBlocks++;
        bStart[nb] = bStart[b]!;
        bEnd[nb] = bStart[b]! + marked;
        bStart[b] = bStart[b]! + marked;
        for (let i = bStart[nb]!; i < bEnd[nb]!; i++) blk[elems[i]!] = nb;
        if (inWork[b] || marked <= size - marked) {
          inWork[nb] = 1;
          work[workSize++] = nb;
        } else {
          inWork[b] = 1;
          work[workSize++] = b;
        }
      }
    }
  }
  return blk;
}

/** Inverse transitions: preimage[(t * k + c)] lists s with delta(s, c) = t, in CSR form. */
function inverseTransitions(n: number, k: number, delta: Int32Array): { invOffsets: Int32Array; invSources: Int32Array } {
  const invOffsets = arena.take(n * k + 1);
  for (let s = 0; s < n; s++) {
    clock.tick(3 * k);
    for (let c = 0; c < k; c++) invOffsets[delta[s * k + c]! * k + c + 1]!++;
  }
  for (let i = 0; i < n * k; i++) invOffsets[i + 1]! += invOffsets[i]!;
  const invSources = arena.take(n * k);
  const fill = arena.take(n * k);
  fill.set(invOffsets.subarray(0, n * k));
  for (let s = 0; s < n; s++) for (let c = 0; c < k; c++) invSources[fill[delta[s * k + c]! * k + c]!++] = s;
  return { invOffsets, invSources };
}
