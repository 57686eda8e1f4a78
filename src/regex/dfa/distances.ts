// A DFA's transitions as lists and grouped by their head (CSR), and the backward searches over
// them: the fewest bytes to any acceptance (finishDfa's pruning) or to each pattern's, and which
// patterns' acceptance each state can still reach.

import { regexClock } from "../clock.js";
import { dfaArena } from "./scratch.js";
import type { MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/** A DFA's transitions as lists, tail[t] --label[t]--> head[t], read off its dense table (-1: none). */
export interface TransitionLists {
  readonly m: number;
  readonly tail: Int32Array;
  readonly label: Int32Array;
  readonly head: Int32Array;
}

export function transitionLists(n: number, k: number, trans: Int32Array): TransitionLists {
  let m = 0;
  for (let i = 0; i < n * k; i++) if (trans[i]! >= 0) m++;
  clock.tick(n * k);
  const tail = arena.take(m);
  const label = arena.take(m);
  const head = arena.take(m);
  let e = 0;
  for (let s = 0; s < n; s++) {
    clock.tick(k);
    for (let c = 0; c < k; c++) {
      const t = trans[s * k + c]!;
      if (t < 0) continue;
      tail[e] = s;
      label[e] = c;
      head[e] = t;
      e++;
    }
  }
  return { m, tail, label, head };
}

/**
 * The transitions into each state, in CSR form: items[offsets[q]..offsets[q + 1]) are their tails
 * (`of` "tail": the reverse adjacency the searches below walk) or their ids ("id").
 */
export function byHead(n: number, edges: TransitionLists, of: "tail" | "id"): { offsets: Int32Array; items: Int32Array } {
  const { m, tail, head } = edges;
  const offsets = arena.take(n + 1);
  for (let t = 0; t < m; t++) offsets[head[t]! + 1]!++;
  for (let q = 0; q < n; q++) offsets[q + 1]! += offsets[q]!;
  const fill = arena.take(n);
  fill.set(offsets.subarray(0, n));
  const items = arena.take(m);
  for (let t = 0; t < m; t++) items[fill[head[t]!]!++] = of === "tail" ? tail[t]! : t;
  clock.tick(2 * m + n);
  return { offsets, items };
}

/** Multi-source BFS backwards from the accepting states: the fewest bytes to acceptance, -1 if none (scratch). */
export function distancesToAccept(n: number, into: { offsets: Int32Array; items: Int32Array }, accepting: ArrayLike<number>): Int32Array {
  const { offsets, items } = into;
  const dist = arena.take(n, -1);
  const queue = arena.take(n);
  let tail = 0;
  for (let s = 0; s < n; s++) {
    if (accepting[s] === 1) {
      dist[s] = 0;
      queue[tail++] = s;
    }
  }
  clock.tick(n);
  for (let head = 0; head < tail; head++) {
    const t = queue[head]!;
    clock.tick(offsets[t + 1]! - offsets[t]! + 1);
    for (let i = offsets[t]!; i < offsets[t + 1]!; i++) {
      const s = items[i]!;
      if (dist[s] === -1) {
        dist[s] = dist[t]! + 1;
        queue[tail++] = s;
      }
    }
  }
  return dist;
}

/**
 * Per state and pattern, the fewest bytes until that pattern accepts: dist[state * numPatterns +
 * p], -1 when it never can. A breadth-first search per pattern backwards from its accepting
 * states (the grammar lexer's budgets need each terminal's own distance, not the nearest one's).
 */
export function patternDistances(dfa: MultiByteDfa, maxWork = Infinity, timeoutMs = Infinity): Int32Array {
  const previous = clock.start(maxWork, timeoutMs);
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
  const { offsets, items: sources } = byHead(n, transitionLists(n, dfa.numClasses, dfa.next), "tail");
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
  const { offsets, items: sources } = byHead(n, transitionLists(n, k, next), "tail");
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
