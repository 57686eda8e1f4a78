// Finishing a raw DFA (the subset construction's or the literal trie's) into the canonical
// MultiByteDfa: dead states pruned, Hopcroft-minimized (minimize.ts), renumbered breadth-first
// from the start, byte intervals with identical columns merged into classes, and the distances
// and reachable acceptance the DFA carries (distances.ts).

import { regexClock } from "../clock.js";
import { distancesToAccept, reachableAcceptance } from "./distances.js";
import { minimize } from "./minimize.js";
import { dfaArena } from "./scratch.js";
import type { MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

export function finishDfa(
  rawCount: number,
  k: number,
  rawTrans: Int32Array,
  rawMask: Int32Array,
  /** 1 where rawMask's row is not all zero (read per state, it was states × words of scanning). */
  rawAccepting: Int32Array,
  acceptWords: number,
  numPatterns: number,
  intervalOf: Int32Array,
): MultiByteDfa {
  // 1. Prune states that cannot reach acceptance.
  const dist = distancesToAccept(rawCount, k, rawTrans, (s) => rawAccepting[s] === 1, false);
  if (dist[0] === -1) {
    return emptyDfa(numPatterns, acceptWords);
  }
  const liveId = arena.take(rawCount, -1);
  let n = 0;
  for (let s = 0; s < rawCount; s++) if (dist[s]! >= 0) liveId[s] = n++;
  // 2. Hopcroft minimization on the live states plus an explicit dead sink (id n).
  const total = n + 1;
  const dead = n;
  const { delta, liveMask } = totalLiveDfa(rawCount, k, rawTrans, rawMask, acceptWords, liveId, n);
  const { initialBlock, numInitial } = initialPartition(n, acceptWords, liveMask);
  const block = minimize(total, k, delta, initialBlock, numInitial, dead);
  // 3. Renumber blocks by BFS from the start block, dropping the dead block.
  const { numStates, interval, acceptMask, accepting } = renumberBlocks(total, dead, k, delta, block, liveMask, acceptWords);
  // 4. Merge intervals whose columns are identical into byte classes.
  const { numClasses, byteClass, next } = mergeColumns(numStates, k, interval, intervalOf);
  const minBytesToAccept = distancesToAccept(numStates, numClasses, next, (s) => accepting[s] === 1, true);
  // One pattern: every state left is live, so each reaches it (the search is for lexers' several).
  const reachMask =
    numPatterns === 1 ? new Uint32Array(numStates).fill(1) : reachableAcceptance(numStates, numClasses, next, acceptMask, acceptWords);
  return {
    numStates,
    start: 0,
    numClasses,
    byteClass,
    next,
    accepting,
    minBytesToAccept,
    numPatterns,
    acceptWords,
    acceptMask,
    reachMask,
  };
}

/** The live states' transitions made total by a dead sink (id n), and their acceptance masks. */
function totalLiveDfa(
  rawCount: number,
  k: number,
  rawTrans: Int32Array,
  rawMask: Int32Array,
  acceptWords: number,
  liveId: Int32Array,
  n: number,
): { delta: Int32Array; liveMask: Int32Array } {
  const total = n + 1;
  const dead = n;
  const delta = arena.take(total * k);
  const liveMask = arena.take(total * acceptWords); // the dead sink's mask stays 0
  for (let s = 0; s < rawCount; s++) {
    const id = liveId[s]!;
    if (id < 0) continue;
    clock.tick(k + acceptWords);
    for (let w = 0; w < acceptWords; w++) liveMask[id * acceptWords + w] = rawMask[s * acceptWords + w]!;
    for (let c = 0; c < k; c++) {
      const t = rawTrans[s * k + c]!;
      delta[id * k + c] = t >= 0 && liveId[t]! >= 0 ? liveId[t]! : dead;
    }
  }
  for (let c = 0; c < k; c++) delta[dead * k + c] = dead;
  return { delta, liveMask };
}

/**
 * Initial partition: by acceptance mask, with the dead sink alone (its language is empty,
 * unlike every live state's), so it can be left off the initial worklist.
 */
function initialPartition(n: number, acceptWords: number, liveMask: Int32Array): { initialBlock: Int32Array; numInitial: number } {
  const dead = n;
  const initialBlock = arena.take(n + 1);
  const blockOfMask = new Map<string | number, number>();
  for (let s = 0; s < n; s++) {
    clock.tick(acceptWords);
    const key = acceptWords === 1 ? liveMask[s]! : liveMask.subarray(s * acceptWords, (s + 1) * acceptWords).join(",");
    let b = blockOfMask.get(key);
    if (b === undefined) {
      b = blockOfMask.size;
      blockOfMask.set(key, b);
    }
    initialBlock[s] = b;
  }
  initialBlock[dead] = blockOfMask.size;
  return { initialBlock, numInitial: blockOfMask.size + 1 };
}

function isAcceptingRaw(mask: Int32Array | Uint32Array, words: number, s: number): boolean {
  for (let w = 0; w < words; w++) if (mask[s * words + w] !== 0) return true;
  return false;
}

/**
 * The minimal DFA's states, numbered breadth-first from the start block without the dead block:
 * their transitions over the byte intervals (-1: dead) and acceptance.
 */
function renumberBlocks(
  total: number,
  dead: number,
  k: number,
  delta: Int32Array,
  block: Int32Array,
  liveMask: Int32Array,
  acceptWords: number,
): { numStates: number; interval: Int32Array; acceptMask: Uint32Array; accepting: Uint8Array } {
  const deadBlock = block[dead]!;
  let blockCount = 0;
  for (let s = 0; s < total; s++) if (block[s]! >= blockCount) blockCount = block[s]! + 1;
  const representative = arena.take(blockCount, -1);
  for (let s = 0; s < total; s++) if (representative[block[s]!] === -1) representative[block[s]!] = s;
  const order = arena.take(blockCount, -1);
  const queue = arena.take(blockCount);
  queue[0] = block[0]!;
  order[block[0]!] = 0;
  let numStates = 1;
  for (let h = 0; h < numStates; h++) {
    clock.tick(k);
    const rep = representative[queue[h]!]!;
    for (let c = 0; c < k; c++) {
      const b = block[delta[rep * k + c]!]!;
      if (b !== deadBlock && order[b] === -1) {
        queue[numStates] = b;
        order[b] = numStates++;
      }
    }
  }
  const interval = arena.take(numStates * k);
  const acceptMask = new Uint32Array(numStates * acceptWords);
  const accepting = new Uint8Array(numStates);
  for (let i = 0; i < numStates; i++) {
    clock.tick(k + acceptWords);
    const rep = representative[queue[i]!]!;
    for (let c = 0; c < k; c++) {
      const b = block[delta[rep * k + c]!]!;
      interval[i * k + c] = b === deadBlock ? -1 : order[b]!;
    }
    for (let w = 0; w < acceptWords; w++) acceptMask[i * acceptWords + w] = liveMask[rep * acceptWords + w]!;
    accepting[i] = isAcceptingRaw(acceptMask, acceptWords, i) ? 1 : 0;
  }
  return { numStates, interval, acceptMask, accepting };
}

/** Byte classes: the intervals whose columns (a target per state) are identical, merged. */
function mergeColumns(
  numStates: number,
  k: number,
  interval: Int32Array,
  intervalOf: Int32Array,
): { numClasses: number; byteClass: Uint8Array; next: Int32Array } {
  const classOfInterval = arena.take(k);
  const columnIndex = new Map<number, number[]>();
  let numClasses = 0;
  const columnsEqual = (a: number, b: number): boolean => {
    for (let s = 0; s < numStates; s++) if (interval[s * k + a] !== interval[s * k + b]) return false;
    return true;
  };
  const firstIntervalOfClass: number[] = [];
  for (let c = 0; c < k; c++) {
    clock.tick(numStates);
    let h = 0x811c9dc5;
    for (let s = 0; s < numStates; s++) h = Math.imul(h ^ (interval[s * k + c]! + 1), 0x01000193);
    const candidates = columnIndex.get(h);
    let found = -1;
    if (candidates)
      for (const cls of candidates)
        if (columnsEqual(firstIntervalOfClass[cls]!, c)) {
          found = cls;
          break;
        }
    if (found === -1) {
      found = numClasses++;
      firstIntervalOfClass.push(c);
      if (candidates) candidates.push(found);
      else columnIndex.set(h, [found]);
    }
    classOfInterval[c] = found;
  }
  const byteClass = new Uint8Array(256);
  for (let b = 0; b < 256; b++) byteClass[b] = classOfInterval[intervalOf[b]!]!;
  const next = new Int32Array(numStates * numClasses);
  for (let s = 0; s < numStates; s++) {
    clock.tick(numClasses);
    for (let cls = 0; cls < numClasses; cls++) next[s * numClasses + cls] = interval[s * k + firstIntervalOfClass[cls]!]!;
  }
  return { numClasses, byteClass, next };
}

function emptyDfa(numPatterns: number, acceptWords: number): MultiByteDfa {
  return {
    numStates: 1,
    start: 0,
    numClasses: 1,
    byteClass: new Uint8Array(256),
    next: new Int32Array([-1]),
    accepting: new Uint8Array(1),
    minBytesToAccept: new Int32Array([-1]),
    numPatterns,
    acceptWords,
    acceptMask: new Uint32Array(acceptWords),
    reachMask: new Uint32Array(acceptWords),
  };
}
