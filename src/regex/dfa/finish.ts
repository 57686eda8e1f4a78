// Finishing a raw DFA (the subset construction's or the literal trie's) into the canonical
// MultiByteDfa: dead states pruned, minimized (minimize.ts), renumbered breadth-first
// from the start, byte intervals with identical columns merged into classes, and the distances
// and reachable acceptance the DFA carries (distances.ts).

import { regexClock } from "../clock.js";
import { byHead, distancesToAccept, reachableAcceptance, transitionLists, type TransitionLists } from "./distances.js";
import { minimize } from "./minimize.js";
import { dfaArena } from "./scratch.js";
import type { ByteDfa, MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/**
 * finishDfa's minimized DFAs (and singleDfa's of them): numbered breadth-first over classes in
 * byte order, so one language always gets the same tables, and finishing such a DFA's language
 * again gives its own tables back.
 */
const canonical = new WeakSet<ByteDfa>();

/** `dfa`, known from now on to be finishDfa's minimal DFA (see isCanonical). */
export function markCanonical<T extends ByteDfa>(dfa: T): T {
  canonical.add(dfa);
  return dfa;
}

/** Whether `dfa` was made of finishDfa's minimal DFA (markCanonical). */
export function isCanonical(dfa: ByteDfa): boolean {
  return canonical.has(dfa);
}

export function finishDfa(
  rawCount: number,
  k: number,
  /** trans[state * k + class] (-1: none); null where `rawEdges` are given sorted by state, then class (a product's). */
  rawTrans: Int32Array | null,
  rawMask: Int32Array,
  /** 1 where rawMask's row is not all zero (read per state, it was states × words of scanning). */
  rawAccepting: Int32Array,
  acceptWords: number,
  numPatterns: number,
  intervalOf: Int32Array,
  /** Each raw state's distance when the construction knew them (then every state but the start is live). */
  rawDist: Int32Array | null = null,
  /** rawTrans's transitions as lists (transitionLists'), where the construction made them: out of scratch, written over. */
  rawEdges: TransitionLists | null = null,
): MultiByteDfa {
  // 1. Prune states that cannot reach acceptance.
  if (rawTrans === null && rawEdges === null) throw new Error("finishDfa: a raw DFA's transitions are needed");
  const edges = rawEdges ?? transitionLists(rawCount, k, rawTrans!);
  const dist = rawDist ?? distancesToAccept(rawCount, byHead(rawCount, edges, "tail"), rawAccepting);
  if (dist[0] === -1) {
    return emptyDfa(numPatterns, acceptWords);
  }
  const liveId = arena.take(rawCount, -1);
  const rawOf = arena.take(rawCount);
  let n = 0;
  for (let s = 0; s < rawCount; s++) {
    if (dist[s]! >= 0) {
      rawOf[n] = s;
      liveId[s] = n++;
    }
  }
  // 2. Minimization over the live states' transitions (minimize.ts).
  const live = liveTransitions(edges, liveId);
  const { initialBlock, numInitial } = initialPartition(n, rawOf, acceptWords, rawMask);
  const block = minimize(n, k, live, initialBlock, numInitial);
  // 3. Renumber blocks by BFS from the start block; 4. merge intervals whose columns are
  // identical into byte classes (found on the lists first where there is no table: the rows
  // are then written merged, not k wide and gathered again).
  const members = blockMembers(n, block);
  const rows = rawTrans === null ? liveRows(n, live) : rawTrans;
  const classes = rows instanceof Int32Array ? null : listClasses(k, rows, block, members);
  const { numStates, interval, acceptMask, accepting, representative } = renumberBlocks(
    k,
    rows,
    rawOf,
    liveId,
    block,
    members,
    rawMask,
    acceptWords,
    classes,
  );
  const { numClasses, byteClass, next } =
    classes === null ? mergeColumns(numStates, k, interval, intervalOf) : mergedTable(numStates, k, interval, intervalOf, classes);
  // Equivalent states have the same language, so the same distance: the raw search's holds.
  const minBytesToAccept = new Int32Array(numStates);
  for (let i = 0; i < numStates; i++) minBytesToAccept[i] = dist[rawOf[representative[i]!]!]!;
  // One pattern: every state left is live, so each reaches it (the search is for lexers' several).
  const reachMask =
    numPatterns === 1 ? new Uint32Array(numStates).fill(1) : reachableAcceptance(numStates, numClasses, next, acceptMask, acceptWords);
  const dfa = {
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
  return markCanonical(dfa);
}

/** The ByteDfa fields of a one-pattern MultiByteDfa (its masks repeat `accepting`), canonical where it is. */
export function singleDfa(multi: MultiByteDfa): ByteDfa {
  const { numStates, start, numClasses, byteClass, next, accepting, minBytesToAccept } = multi;
  const dfa = { numStates, start, numClasses, byteClass, next, accepting, minBytesToAccept };
  return isCanonical(multi) ? markCanonical(dfa) : dfa;
}

/**
 * finishDfa without minimization for a one-pattern raw DFA (start: raw 0): its live states
 * numbered breadth-first, the classes as they are, exact distances. Returns the empty DFA when
 * the start is dead.
 */
export function pruneDfa(rawCount: number, k: number, rawTrans: Int32Array, rawAccepting: Int32Array, classOfByte: Int32Array): ByteDfa {
  const edges = transitionLists(rawCount, k, rawTrans);
  const dist = distancesToAccept(rawCount, byHead(rawCount, edges, "tail"), rawAccepting);
  if (dist[0] === -1) {
    const { numStates, start, numClasses, byteClass, next, accepting, minBytesToAccept } = emptyDfa(1, 1);
    return { numStates, start, numClasses, byteClass, next, accepting, minBytesToAccept };
  }
  const order = arena.take(rawCount, -1);
  const rawOf = arena.take(rawCount);
  order[0] = 0;
  let numStates = 1;
  for (let h = 0; h < numStates; h++) {
    clock.tick(k);
    const raw = rawOf[h]!;
    for (let c = 0; c < k; c++) {
      const t = rawTrans[raw * k + c]!;
      if (t >= 0 && dist[t]! >= 0 && order[t] === -1) {
        order[t] = numStates;
        rawOf[numStates++] = t;
      }
    }
  }
  const next = new Int32Array(numStates * k);
  const accepting = new Uint8Array(numStates);
  const minBytesToAccept = new Int32Array(numStates);
  for (let h = 0; h < numStates; h++) {
    const raw = rawOf[h]!;
    for (let c = 0; c < k; c++) {
      const t = rawTrans[raw * k + c]!;
      next[h * k + c] = t >= 0 && dist[t]! >= 0 ? order[t]! : -1;
    }
    accepting[h] = rawAccepting[raw]!;
    minBytesToAccept[h] = dist[raw]!;
  }
  return { numStates, start: 0, numClasses: k, byteClass: Uint8Array.from(classOfByte), next, accepting, minBytesToAccept };
}

/** The transitions between live states, in live ids (written over the raw lists). */
function liveTransitions(edges: TransitionLists, liveId: Int32Array): TransitionLists {
  const { tail, label, head } = edges;
  let m = 0;
  clock.tick(edges.m);
  for (let e = 0; e < edges.m; e++) {
    const from = liveId[tail[e]!]!;
    const to = liveId[head[e]!]!;
    if (from < 0 || to < 0) continue;
    tail[m] = from;
    label[m] = label[e]!;
    head[m] = to;
    m++;
  }
  return { m, tail, label, head };
}

/** Initial partition of the live states: by acceptance mask. */
function initialPartition(
  n: number,
  rawOf: Int32Array,
  acceptWords: number,
  rawMask: Int32Array,
): { initialBlock: Int32Array; numInitial: number } {
  const initialBlock = arena.take(n);
  if (acceptWords === 1) {
    // One word a state (every one-pattern DFA: a product, a schema's minimal DFA): ids by a
    // small array where the words are few distinct small numbers, as the Map below would give.
    const idOf = arena.take(64, -1);
    let count = 0;
    let s = 0;
    for (; s < n; s++) {
      const word = rawMask[rawOf[s]!]!;
      if (word < 0 || word >= 64) break;
      let b = idOf[word]!;
      if (b === -1) b = idOf[word] = count++;
      initialBlock[s] = b;
    }
    if (s === n) {
      clock.tick(n);
      return { initialBlock, numInitial: count };
    }
  }
  const blockOfMask = new Map<string | number, number>();
  for (let s = 0; s < n; s++) {
    clock.tick(acceptWords);
    const raw = rawOf[s]!;
    const key = acceptWords === 1 ? rawMask[raw]! : rawMask.subarray(raw * acceptWords, (raw + 1) * acceptWords).join(",");
    let b = blockOfMask.get(key);
    if (b === undefined) {
      b = blockOfMask.size;
      blockOfMask.set(key, b);
    }
    initialBlock[s] = b;
  }
  return { initialBlock, numInitial: blockOfMask.size };
}

function isAcceptingRaw(mask: Int32Array | Uint32Array, words: number, s: number): boolean {
  for (let w = 0; w < words; w++) if (mask[s * words + w] !== 0) return true;
  return false;
}

/**
 * The minimal DFA's states, numbered breadth-first from the start block: their transitions over
 * the byte intervals (-1: dead), acceptance, and a live state of each (`representative`). Rows
 * are read off the raw table, or off the live transitions where they are sorted by state and
 * then class (the same rows in the same order).
 */
function renumberBlocks(
  k: number,
  rows: Int32Array | LiveRows,
  rawOf: Int32Array,
  liveId: Int32Array,
  block: Int32Array,
  { blockCount, memberOf }: BlockMembers,
  rawMask: Int32Array,
  acceptWords: number,
  /** listClasses' classes: the list rows are written that narrow (`interval` is then the merged table). */
  classes: ListClasses | null,
): { numStates: number; interval: Int32Array; acceptMask: Uint32Array; accepting: Uint8Array; representative: Int32Array } {
  const order = arena.take(blockCount, -1);
  const representative = arena.take(blockCount);
  // The start state is raw 0, live (the caller returned the empty DFA otherwise).
  const startBlock = block[liveId[0]!]!;
  representative[0] = memberOf[startBlock]!;
  order[startBlock] = 0;
  let numStates = 1;
  if (rows instanceof Int32Array) {
    const interval = arena.take(blockCount * k);
    for (let h = 0; h < numStates; h++) {
      clock.tick(k);
      const raw = rawOf[representative[h]!]!;
      for (let c = 0; c < k; c++) {
        const t = rows[raw * k + c]!;
        const to = t >= 0 ? liveId[t]! : -1;
        if (to < 0) {
          interval[h * k + c] = -1;
          continue;
        }
        const b = block[to]!;
        if (order[b] === -1) {
          representative[numStates] = memberOf[b]!;
          order[b] = numStates++;
        }
        interval[h * k + c] = order[b]!;
      }
    }
    return blocksTaken(numStates, k, interval, rawOf, representative, rawMask, acceptWords);
  }
  const { label, head } = rows.live;
  const rowStart = rows.rowStart;
  const width = classes === null ? k : classes.numClasses;
  const classOf = classes === null ? null : classes.classOf;
  const interval = classes === null ? arena.take(blockCount * k, -1) : new Int32Array(blockCount * width).fill(-1);
  for (let h = 0; h < numStates; h++) {
    clock.tick(k);
    const s = representative[h]!;
    for (let e = rowStart[s]!; e < rowStart[s + 1]!; e++) {
      const b = block[head[e]!]!;
      if (order[b] === -1) {
        representative[numStates] = memberOf[b]!;
        order[b] = numStates++;
      }
      interval[h * width + (classOf === null ? label[e]! : classOf[label[e]!]!)] = order[b]!;
    }
  }
  return blocksTaken(numStates, width, interval, rawOf, representative, rawMask, acceptWords);
}

/** renumberBlocks's result: the states' rows, acceptance and representatives. */
function blocksTaken(
  numStates: number,
  k: number,
  interval: Int32Array,
  rawOf: Int32Array,
  representative: Int32Array,
  rawMask: Int32Array,
  acceptWords: number,
): { numStates: number; interval: Int32Array; acceptMask: Uint32Array; accepting: Uint8Array; representative: Int32Array } {
  const acceptMask = new Uint32Array(numStates * acceptWords);
  const accepting = new Uint8Array(numStates);
  for (let i = 0; i < numStates; i++) {
    const raw = rawOf[representative[i]!]!;
    for (let w = 0; w < acceptWords; w++) acceptMask[i * acceptWords + w] = rawMask[raw * acceptWords + w]!;
    accepting[i] = isAcceptingRaw(acceptMask, acceptWords, i) ? 1 : 0;
  }
  return { numStates, interval: interval.subarray(0, numStates * k), acceptMask, accepting, representative };
}

/** Each block's first live state (its representative), and how many blocks there are. */
interface BlockMembers {
  readonly blockCount: number;
  readonly memberOf: Int32Array;
}

function blockMembers(n: number, block: Int32Array): BlockMembers {
  let blockCount = 0;
  for (let s = 0; s < n; s++) if (block[s]! >= blockCount) blockCount = block[s]! + 1;
  const memberOf = arena.take(blockCount, -1);
  for (let s = 0; s < n; s++) if (memberOf[block[s]!] === -1) memberOf[block[s]!] = s;
  return { blockCount, memberOf };
}

/** The live transitions as rows: live state s's are [rowStart[s], rowStart[s + 1]) of the lists. */
interface LiveRows {
  readonly live: TransitionLists;
  readonly rowStart: Int32Array;
}

/**
 * Where each live state's row begins in lists sorted by state, then class (a product's: the
 * order a table is read in, so renumbering from them numbers as from the table; checked).
 */
function liveRows(n: number, live: TransitionLists): LiveRows {
  const { m, tail, label } = live;
  const rowStart = arena.take(n + 1);
  for (let e = 0; e < m; e++) {
    if (e > 0 && (tail[e]! < tail[e - 1]! || (tail[e] === tail[e - 1] && label[e]! <= label[e - 1]!))) {
      throw new Error("finishDfa: transition lists given without a table must be sorted by state, then class");
    }
    rowStart[tail[e]! + 1]!++;
  }
  for (let s = 0; s < n; s++) rowStart[s + 1]! += rowStart[s]!;
  return { live, rowStart };
}

/** Intervals merged into byte classes before the table is written (listClasses). */
interface ListClasses {
  readonly numClasses: number;
  /** Per interval, its class: numbered in interval order, as mergeColumns numbers them. */
  readonly classOf: Int32Array;
}

/**
 * The byte classes of the minimal DFA, read off the live transitions (sorted by state, then
 * class) and the blocks: two intervals are one class when in each block's row they lead to the
 * same block, or both nowhere. Columns are hashed per block's row (sums over the entries there:
 * an absent entry adds nothing), and every merge is checked entry by entry; null where a hash
 * joined two different columns (the table is then merged as before, by mergeColumns).
 */
function listClasses(k: number, rows: LiveRows, block: Int32Array, { blockCount, memberOf }: BlockMembers): ListClasses | null {
  const { label, head } = rows.live;
  const rowStart = rows.rowStart;
  const hashes = arena.take(k);
  const counts = arena.take(k);
  for (let b = 0; b < blockCount; b++) {
    const s = memberOf[b]!;
    const rowKey = Math.imul(b + 1, 0x9e3779b1);
    for (let e = rowStart[s]!; e < rowStart[s + 1]!; e++) {
      const c = label[e]!;
      hashes[c] = (hashes[c]! + Math.imul(rowKey ^ Math.imul(block[head[e]!]! + 1, 0x85ebca6b), 0xc2b2ae35)) | 0;
      counts[c]!++;
    }
  }
  // Each interval's first interval of the same hash (itself when none came before); one of
  // another count is a collision.
  const repOf = arena.take(k);
  const firstOfHash = new Map<number, number>();
  for (let c = 0; c < k; c++) {
    const first = firstOfHash.get(hashes[c]!);
    if (first === undefined) {
      firstOfHash.set(hashes[c]!, c);
      repOf[c] = c;
    } else if (counts[first] !== counts[c]) return null;
    else repOf[c] = first;
  }
  // Checked: in every row, an interval's entry is its first's (same block); equal counts then
  // leave no row where only the first has one.
  const rowValue = arena.take(k);
  const rowStamp = arena.take(k, -1);
  for (let b = 0; b < blockCount; b++) {
    const s = memberOf[b]!;
    for (let e = rowStart[s]!; e < rowStart[s + 1]!; e++) {
      rowValue[label[e]!] = block[head[e]!]!;
      rowStamp[label[e]!] = b;
    }
    for (let e = rowStart[s]!; e < rowStart[s + 1]!; e++) {
      const c = label[e]!;
      const r = repOf[c]!;
      if (r !== c && (rowStamp[r] !== b || rowValue[r] !== rowValue[c])) return null;
    }
  }
  const classOf = new Int32Array(k);
  let numClasses = 0;
  for (let c = 0; c < k; c++) classOf[c] = repOf[c] === c ? numClasses++ : classOf[repOf[c]!]!;
  return { numClasses, classOf };
}

/** mergeColumns's result for a table renumberBlocks wrote already merged (charged the same work). */
function mergedTable(
  numStates: number,
  k: number,
  next: Int32Array,
  intervalOf: Int32Array,
  classes: ListClasses,
): { numClasses: number; byteClass: Uint8Array; next: Int32Array } {
  const { numClasses, classOf } = classes;
  clock.tick(numStates * (k + (k - numClasses) + numClasses));
  const byteClass = new Uint8Array(256);
  for (let b = 0; b < 256; b++) byteClass[b] = classOf[intervalOf[b]!]!;
  return { numClasses, byteClass, next: next.length === numStates * numClasses ? next : next.slice(0, numStates * numClasses) };
}

/** Byte classes: the intervals whose columns (a target per state) are identical, merged. */
function mergeColumns(
  numStates: number,
  k: number,
  interval: Int32Array,
  intervalOf: Int32Array,
): { numClasses: number; byteClass: Uint8Array; next: Int32Array } {
  const classOfInterval = arena.take(k);
  // Column hashes in one row-major pass (a column at a time strides the table k apart).
  const hashes = arena.take(k, 0x811c9dc5);
  for (let s = 0; s < numStates; s++) {
    clock.tick(k);
    const row = s * k;
    for (let c = 0; c < k; c++) hashes[c] = Math.imul(hashes[c]! ^ (interval[row + c]! + 1), 0x01000193);
  }
  const columnIndex = new Map<number, number[]>();
  let numClasses = 0;
  const columnsEqual = (a: number, b: number): boolean => {
    for (let s = 0; s < numStates; s++) if (interval[s * k + a] !== interval[s * k + b]) return false;
    return true;
  };
  const firstIntervalOfClass: number[] = [];
  for (let c = 0; c < k; c++) {
    const h = hashes[c]!;
    const candidates = columnIndex.get(h);
    let found = -1;
    if (candidates)
      for (const cls of candidates)
        if (columnsEqual(firstIntervalOfClass[cls]!, c)) {
          clock.tick(numStates);
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
  if (numClasses === k) {
    // No two columns alike: the table as it is (a copy out of scratch, not a gather).
    clock.tick(numStates * k);
    return { numClasses, byteClass, next: interval.slice(0, numStates * k) };
  }
  const next = new Int32Array(numStates * numClasses);
  for (let s = 0; s < numStates; s++) {
    clock.tick(numClasses);
    for (let cls = 0; cls < numClasses; cls++) next[s * numClasses + cls] = interval[s * k + firstIntervalOfClass[cls]!]!;
  }
  return { numClasses, byteClass, next };
}

export function emptyDfa(numPatterns: number, acceptWords: number): MultiByteDfa {
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
