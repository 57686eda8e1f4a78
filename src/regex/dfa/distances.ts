// Backward searches over a DFA's transitions (reverse edges in CSR form): the fewest bytes to
// acceptance per pattern, and which patterns' acceptance each state can still reach (finishDfa
// finds the fewest bytes to any acceptance on its raw transitions).

import { regexClock } from "../clock.js";
import { dfaArena } from "./scratch.js";
import type { MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/** Reverse adjacency in CSR form (sources of each target), ignoring labels. */
function reverseEdges(n: number, k: number, trans: Int32Array): { offsets: Int32Array; sources: Int32Array } {
  const counts = arena.take(n + 1);
  for (let s = 0; s < n; s++) {
    clock.tick(k);
    for (let i = s * k; i < (s + 1) * k; i++) if (trans[i]! >= 0) counts[trans[i]! + 1]!++;
  }
  for (let i = 0; i < n; i++) counts[i + 1]! += counts[i]!;
  const sources = arena.take(counts[n]!);
  const fill = arena.take(n);
  fill.set(counts.subarray(0, n));
  for (let s = 0; s < n; s++) {
    clock.tick(k);
    for (let c = 0; c < k; c++) {
      const t = trans[s * k + c]!;
      if (t >= 0) sources[fill[t]!++] = s;
    }
  }
  return { offsets: counts, sources };
}

/**
 * Per state and pattern, the fewest bytes until that pattern accepts: dist[state * numPatterns +
 * p], -1 when it never can. A breadth-first search per pattern backwards from its accepting
 * states (the grammar lexer's budgets need each terminal's own distance, not the nearest one's).
 */
export function patternDistances(dfa: MultiByteDfa, timeoutMs = Infinity): Int32Array {
  const previous = clock.start(timeoutMs);
  try {
    return distancesPerPattern(dfa);
  } finally {
    clock.stop(previous);
  }
}

function distancesPerPattern(dfa: MultiByteDfa): Int32Array {
  arena.reset(); // a stage of its own: nothing of a determinize call is alive here
  const n = dfa.numStates;
  const P = dfa.numPatterns;
  const words = dfa.acceptWords;
  const dist = new Int32Array(n * P).fill(-1);
  const queue = arena.take(n);
  const { offsets, sources } = reverseEdges(n, dfa.numClasses, dfa.next);
  for (let p = 0; p < P; p++) {
    let head = 0;
    let tail = 0;
    clock.tick(n);
    for (let s = 0; s < n; s++) {
      if ((dfa.acceptMask[s * words + (p >>> 5)]! & (1 << (p & 31))) !== 0) {
        dist[s * P + p] = 0;
        queue[tail++] = s;
      }
    }
    while (head < tail) {
      const t = queue[head++]!;
      clock.tick(offsets[t + 1]! - offsets[t]! + 1);
      const d = dist[t * P + p]! + 1;
      for (let i = offsets[t]!; i < offsets[t + 1]!; i++) {
        const from = sources[i]!;
        if (dist[from * P + p]! < 0) {
          dist[from * P + p] = d;
          queue[tail++] = from;
        }
      }
    }
  }
  return dist;
}

/** Backward fixed point: a state reaches every pattern that any successor reaches. */
export function reachableAcceptance(n: number, k: number, next: Int32Array, acceptMask: Uint32Array, words: number): Uint32Array {
  const reach = acceptMask.slice();
  const { offsets, sources } = reverseEdges(n, k, next);
  // A stack holding each state at most once (queued), so n slots suffice.
  const queue = arena.take(n);
  const queued = arena.take(n, 1);
  for (let s = 0; s < n; s++) queue[s] = s;
  let top = n;
  while (top > 0) {
    const t = queue[--top]!;
    queued[t] = 0;
    clock.tick((offsets[t + 1]! - offsets[t]!) * words + 1);
    for (let i = offsets[t]!; i < offsets[t + 1]!; i++) {
      const s = sources[i]!;
      let changed = false;
      for (let w = 0; w < words; w++) {
        // `|` gives a signed int32 and reach holds uint32: unsigned, or bit 31 never compares equal.
        const merged = (reach[s * words + w]! | reach[t * words + w]!) >>> 0;
        if (merged !== reach[s * words + w]) {
          reach[s * words + w] = merged;
          changed = true;
        }
      }
      if (changed && !queued[s]) {
        queued[s] = 1;
        queue[top++] = s;
      }
    }
  }
  return reach;
}
