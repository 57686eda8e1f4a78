import { RegexTooComplexError } from "./errors.js";
import type { ByteNfa } from "./nfa.js";
import { Assertion } from "./parser.js";

/** Contract in DESIGN.md: a byte DFA holding only live states. */
export interface ByteDfa {
  readonly numStates: number;
  readonly start: number;
  readonly numClasses: number;
  readonly byteClass: Uint8Array;
  readonly next: Int32Array;
  readonly accepting: Uint8Array;
  readonly minBytesToAccept: Int32Array;
}

/** A DFA for several patterns at once: which patterns fully match at each state. */
export interface MultiByteDfa extends ByteDfa {
  readonly numPatterns: number;
  /** Uint32 words per state in acceptMask. */
  readonly acceptWords: number;
  /** Bit p of word (state * acceptWords + (p >>> 5)) set ⇔ pattern p fully matches here. */
  readonly acceptMask: Uint32Array;
}

export interface DfaLimits {
  maxDfaStates: number;
  timeoutMs: number;
}

// Thread modes: what a pending end assertion still demands of the remaining input.
const MODE_FREE = 0;
const MODE_EOL = 1; // next byte is "\n" or the text ends
const MODE_END_OR_NL = 2; // the rest is "" or "\n"
const MODE_END = 3; // the rest is ""

function modeAfter(mode: number, assertion: number): number {
  const demanded =
    assertion === Assertion.EndOfLine ? MODE_EOL : assertion === Assertion.EndOrFinalNewline ? MODE_END_OR_NL : MODE_END;
  return Math.max(mode, demanded); // the modes are ordered by strictness
}

/**
 * Subset construction over byte intervals, then dead-state pruning, Hopcroft minimization,
 * BFS renumbering and merging of bytes whose columns agree into equivalence classes.
 */
export function determinize(nfa: ByteNfa, start: number, numPatterns: number, limits: DfaLimits): MultiByteDfa {
  const nStates = nfa.size;
  // Interval classes: maximal byte runs no edge boundary splits.
  const boundary = new Uint8Array(257);
  boundary[0] = 1;
  for (const list of nfa.edges) {
    for (let i = 0; i < list.length; i += 3) {
      boundary[list[i]!] = 1;
      boundary[list[i + 1]! + 1] = 1;
    }
  }
  if (nfa.hasAssertions) {
    boundary[0x0a] = 1;
    boundary[0x0b] = 1;
  }
  const intervalOf = new Uint8Array(256);
  const intervalStart: number[] = [];
  for (let b = 0; b < 256; b++) {
    if (boundary[b]) intervalStart.push(b);
    intervalOf[b] = intervalStart.length - 1;
  }
  const numIntervals = intervalStart.length;
  const newlineInterval = nfa.hasAssertions ? intervalOf[0x0a]! : -1;

  // Edges rewritten as interval ranges: [cLo, cHi, target].
  const classEdges: Int32Array[] = nfa.edges.map((list) => {
    const out = new Int32Array(list.length);
    for (let i = 0; i < list.length; i += 3) {
      out[i] = intervalOf[list[i]!]!;
      out[i + 1] = intervalOf[list[i + 1]!]!;
      out[i + 2] = list[i + 2]!;
    }
    return out;
  });
  const important = new Uint8Array(nStates);
  for (let q = 0; q < nStates; q++) if (classEdges[q]!.length > 0 || nfa.accept[q]! >= 0) important[q] = 1;

  const visitStamp = new Int32Array(nStates * 4);
  let stamp = 0;
  const stack: number[] = [];
  const closure = (seeds: number[], atStart: boolean, atLineStart: boolean): number[] => {
    stamp++;
    const out: number[] = [];
    stack.length = 0;
    for (const t of seeds) {
      if (visitStamp[t] !== stamp) {
        visitStamp[t] = stamp;
        stack.push(t);
      }
    }
    while (stack.length > 0) {
      const thread = stack.pop()!;
      const q = thread >> 2;
      const mode = thread & 3;
      if (important[q] && (mode !== MODE_END || nfa.accept[q]! >= 0)) out.push(thread);
      for (const e of nfa.eps[q]!) {
        const t = (e << 2) | mode;
        if (visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack.push(t);
        }
      }
      const assertion = nfa.assertion[q]!;
      if (assertion !== 0) {
        let t = -1;
        if (assertion === Assertion.StartOfText) {
          if (atStart) t = (nfa.assertTarget[q]! << 2) | mode;
        } else if (assertion === Assertion.StartOfLine) {
          if (atLineStart) t = (nfa.assertTarget[q]! << 2) | mode;
        } else {
          t = (nfa.assertTarget[q]! << 2) | modeAfter(mode, assertion);
        }
        if (t >= 0 && visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack.push(t);
        }
      }
    }
    out.sort((a, b) => a - b);
    return out;
  };

  const startTime = performance.now();
  const dfaThreads: number[][] = [];
  const index = new Map<string, number>();
  let trans = new Int32Array(64 * numIntervals).fill(-1);
  const addState = (threads: number[]): number => {
    const key = threads.join(",");
    const found = index.get(key);
    if (found !== undefined) return found;
    const id = dfaThreads.length;
    if (id >= limits.maxDfaStates) {
      throw new RegexTooComplexError(
        `pattern too complex: its DFA needs more than ${limits.maxDfaStates} states`,
        "dfaStates",
      );
    }
    if ((id & 63) === 0 && id > 0 && performance.now() - startTime > limits.timeoutMs) {
      throw new RegexTooComplexError(`pattern too complex: DFA construction exceeded ${limits.timeoutMs} ms`, "time");
    }
    dfaThreads.push(threads);
    index.set(key, id);
    if ((id + 1) * numIntervals > trans.length) {
      const grown = new Int32Array(trans.length * 2).fill(-1);
      grown.set(trans);
      trans = grown;
    }
    return id;
  };

  addState(closure([start << 2], true, true));
  const buckets: number[][] = Array.from({ length: numIntervals }, () => []);
  const seedMemo = new Map<string, number>();
  for (let s = 0; s < dfaThreads.length; s++) {
    const threads = dfaThreads[s]!;
    for (const thread of threads) {
      const q = thread >> 2;
      const mode = thread & 3;
      const list = classEdges[q]!;
      for (let i = 0; i < list.length; i += 3) {
        const target = list[i + 2]! << 2;
        let lo = list[i]!;
        let hi = list[i + 1]!;
        if (mode !== MODE_FREE) {
          if (mode === MODE_END || newlineInterval < lo || newlineInterval > hi) continue;
          lo = hi = newlineInterval;
          buckets[lo]!.push(target | (mode === MODE_EOL ? MODE_FREE : MODE_END));
          continue;
        }
        for (let c = lo; c <= hi; c++) buckets[c]!.push(target);
      }
    }
    let previousKey = "";
    let previousTarget = -1;
    for (let c = 0; c < numIntervals; c++) {
      const bucket = buckets[c]!;
      if (bucket.length === 0) continue;
      // Many intervals (e.g. all UTF-8 continuation bytes) lead to the same pre-closure
      // thread set; the closure is memoized on that set.
      bucket.sort((a, b) => a - b);
      let w = 1;
      for (let r = 1; r < bucket.length; r++) if (bucket[r] !== bucket[w - 1]) bucket[w++] = bucket[r]!;
      bucket.length = w;
      const key = c === newlineInterval ? "n" + bucket.join(",") : bucket.join(",");
      bucket.length = 0;
      let target: number;
      if (key === previousKey) {
        target = previousTarget;
      } else {
        const memo = seedMemo.get(key);
        if (memo !== undefined) {
          target = memo;
        } else {
          const seeds = key.charCodeAt(0) === 0x6e ? key.slice(1) : key;
          const threadsNext = closure(seeds.split(",").map(Number), false, c === newlineInterval);
          target = threadsNext.length === 0 ? -1 : addState(threadsNext);
          seedMemo.set(key, target);
        }
        previousKey = key;
        previousTarget = target;
      }
      if (target >= 0) trans[s * numIntervals + c] = target;
    }
  }

  const rawCount = dfaThreads.length;
  if (process.env.REGEX_DEBUG) console.log("raw", rawCount, "nfa", nStates, "intervals", numIntervals, "avgThreads", dfaThreads.reduce((a, t) => a + t.length, 0) / rawCount);
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const rawMask = new Uint32Array(rawCount * acceptWords);
  for (let s = 0; s < rawCount; s++) {
    for (const thread of dfaThreads[s]!) {
      const p = nfa.accept[thread >> 2]!;
      if (p >= 0) rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
    }
  }
  return finishDfa(rawCount, numIntervals, trans, rawMask, acceptWords, numPatterns, intervalOf);
}

function isAcceptingRaw(mask: Uint32Array, words: number, s: number): boolean {
  for (let w = 0; w < words; w++) if (mask[s * words + w] !== 0) return true;
  return false;
}

/** Reverse adjacency in CSR form (sources of each target), ignoring labels. */
function reverseEdges(n: number, k: number, trans: Int32Array): { offsets: Int32Array; sources: Int32Array } {
  const counts = new Int32Array(n + 1);
  for (let i = 0; i < n * k; i++) if (trans[i]! >= 0) counts[trans[i]! + 1]!++;
  for (let i = 0; i < n; i++) counts[i + 1]! += counts[i]!;
  const sources = new Int32Array(counts[n]!);
  const fill = counts.slice(0, n);
  for (let s = 0; s < n; s++) {
    for (let c = 0; c < k; c++) {
      const t = trans[s * k + c]!;
      if (t >= 0) sources[fill[t]!++] = s;
    }
  }
  return { offsets: counts, sources };
}

/** Multi-source BFS backwards from accepting states: shortest byte distance, -1 if none. */
function distancesToAccept(n: number, k: number, trans: Int32Array, accepting: (s: number) => boolean): Int32Array {
  const dist = new Int32Array(n).fill(-1);
  const queue = new Int32Array(n);
  let head = 0;
  let tail = 0;
  for (let s = 0; s < n; s++) {
    if (accepting(s)) {
      dist[s] = 0;
      queue[tail++] = s;
    }
  }
  const { offsets, sources } = reverseEdges(n, k, trans);
  while (head < tail) {
    const t = queue[head++]!;
    for (let i = offsets[t]!; i < offsets[t + 1]!; i++) {
      const s = sources[i]!;
      if (dist[s] === -1) {
        dist[s] = dist[t]! + 1;
        queue[tail++] = s;
      }
    }
  }
  return dist;
}

function finishDfa(
  rawCount: number,
  k: number,
  rawTrans: Int32Array,
  rawMask: Uint32Array,
  acceptWords: number,
  numPatterns: number,
  intervalOf: Uint8Array,
): MultiByteDfa {
  // 1. Prune states that cannot reach acceptance.
  const dist = distancesToAccept(rawCount, k, rawTrans, (s) => isAcceptingRaw(rawMask, acceptWords, s));
  if (dist[0] === -1) {
    return emptyDfa(numPatterns, acceptWords);
  }
  const liveId = new Int32Array(rawCount).fill(-1);
  let n = 0;
  for (let s = 0; s < rawCount; s++) if (dist[s]! >= 0) liveId[s] = n++;
  // 2. Hopcroft minimization on the live states plus an explicit dead sink (id n).
  const total = n + 1;
  const dead = n;
  const delta = new Int32Array(total * k);
  const maskOf: Uint32Array[] = [];
  for (let s = 0; s < rawCount; s++) {
    const id = liveId[s]!;
    if (id < 0) continue;
    maskOf[id] = rawMask.subarray(s * acceptWords, (s + 1) * acceptWords);
    for (let c = 0; c < k; c++) {
      const t = rawTrans[s * k + c]!;
      delta[id * k + c] = t >= 0 && liveId[t]! >= 0 ? liveId[t]! : dead;
    }
  }
  for (let c = 0; c < k; c++) delta[dead * k + c] = dead;
  maskOf[dead] = new Uint32Array(acceptWords);
  const block = minimize(total, k, delta, (s) => Array.prototype.join.call(maskOf[s]!, ","));

  // 3. Renumber blocks by BFS from the start block, dropping the dead block.
  const deadBlock = block[dead]!;
  let blockCount = 0;
  for (let s = 0; s < total; s++) if (block[s]! >= blockCount) blockCount = block[s]! + 1;
  const representative = new Int32Array(blockCount).fill(-1);
  for (let s = 0; s < total; s++) if (representative[block[s]!] === -1) representative[block[s]!] = s;
  const order = new Int32Array(blockCount).fill(-1);
  const queue: number[] = [block[0]!];
  order[block[0]!] = 0;
  let numStates = 1;
  for (let h = 0; h < queue.length; h++) {
    const rep = representative[queue[h]!]!;
    for (let c = 0; c < k; c++) {
      const b = block[delta[rep * k + c]!]!;
      if (b !== deadBlock && order[b] === -1) {
        order[b] = numStates++;
        queue.push(b);
      }
    }
  }
  const interval = new Int32Array(numStates * k);
  const acceptMask = new Uint32Array(numStates * acceptWords);
  const accepting = new Uint8Array(numStates);
  for (let i = 0; i < numStates; i++) {
    const rep = representative[queue[i]!]!;
    for (let c = 0; c < k; c++) {
      const b = block[delta[rep * k + c]!]!;
      interval[i * k + c] = b === deadBlock ? -1 : order[b]!;
    }
    acceptMask.set(maskOf[rep]!, i * acceptWords);
    accepting[i] = isAcceptingRaw(acceptMask, acceptWords, i) ? 1 : 0;
  }

  // 4. Merge intervals whose columns are identical into byte classes.
  const classOfInterval = new Int32Array(k);
  const columnIndex = new Map<number, number[]>();
  let numClasses = 0;
  const columnsEqual = (a: number, b: number): boolean => {
    for (let s = 0; s < numStates; s++) if (interval[s * k + a] !== interval[s * k + b]) return false;
    return true;
  };
  const firstIntervalOfClass: number[] = [];
  for (let c = 0; c < k; c++) {
    let h = 0x811c9dc5;
    for (let s = 0; s < numStates; s++) h = Math.imul(h ^ (interval[s * k + c]! + 1), 0x01000193);
    const candidates = columnIndex.get(h);
    let found = -1;
    if (candidates) for (const cls of candidates) if (columnsEqual(firstIntervalOfClass[cls]!, c)) { found = cls; break; }
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
    for (let cls = 0; cls < numClasses; cls++) next[s * numClasses + cls] = interval[s * k + firstIntervalOfClass[cls]!]!;
  }
  const minBytesToAccept = distancesToAccept(numStates, numClasses, next, (s) => accepting[s] === 1);
  return { numStates, start: 0, numClasses, byteClass, next, accepting, minBytesToAccept, numPatterns, acceptWords, acceptMask };
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
  };
}

/** True when the DFA accepts nothing (its only state is a non-accepting start). */
export function isEmptyLanguage(dfa: ByteDfa): boolean {
  return dfa.minBytesToAccept[dfa.start] === -1;
}

/**
 * Hopcroft partition refinement on a total DFA (n states, k symbols). Returns each state's
 * block id; the initial partition groups states by `initialKey`.
 */
function minimize(n: number, k: number, delta: Int32Array, initialKey: (s: number) => string): Int32Array {
  // Inverse transitions: preimage[(t * k + c)] lists s with delta(s, c) = t.
  const invOffsets = new Int32Array(n * k + 1);
  for (let s = 0; s < n; s++) for (let c = 0; c < k; c++) invOffsets[delta[s * k + c]! * k + c + 1]!++;
  for (let i = 0; i < n * k; i++) invOffsets[i + 1]! += invOffsets[i]!;
  const invSources = new Int32Array(n * k);
  const fill = invOffsets.slice(0, n * k);
  for (let s = 0; s < n; s++) for (let c = 0; c < k; c++) invSources[fill[delta[s * k + c]! * k + c]!++] = s;

  const elems = new Int32Array(n);
  const pos = new Int32Array(n);
  const blk = new Int32Array(n);
  const bStart: number[] = [];
  const bEnd: number[] = [];
  const bMarked: number[] = [];
  const inWork: number[] = [];
  const work: number[] = [];

  const groups = new Map<string, number[]>();
  for (let s = 0; s < n; s++) {
    const key = initialKey(s);
    const g = groups.get(key);
    if (g) g.push(s);
    else groups.set(key, [s]);
  }
  let p = 0;
  for (const members of groups.values()) {
    const b = bStart.length;
    bStart.push(p);
    for (const s of members) {
      elems[p] = s;
      pos[s] = p;
      blk[s] = b;
      p++;
    }
    bEnd.push(p);
    bMarked.push(0);
    inWork.push(1);
    work.push(b);
  }

  const touched: number[] = [];
  const splitterElems: number[] = [];
  while (work.length > 0) {
    const a = work.pop()!;
    inWork[a] = 0;
    splitterElems.length = 0;
    for (let i = bStart[a]!; i < bEnd[a]!; i++) splitterElems.push(elems[i]!);
    for (let c = 0; c < k; c++) {
      touched.length = 0;
      for (const t of splitterElems) {
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
          if (bMarked[b]! === 0) touched.push(b);
          bMarked[b]!++;
        }
      }
      for (const b of touched) {
        const marked = bMarked[b]!;
        bMarked[b] = 0;
        const size = bEnd[b]! - bStart[b]!;
        if (marked === size) continue;
        const nb = bStart.length;
        bStart.push(bStart[b]!);
        bEnd.push(bStart[b]! + marked);
        bMarked.push(0);
        bStart[b] = bStart[b]! + marked;
        for (let i = bStart[nb]!; i < bEnd[nb]!; i++) blk[elems[i]!] = nb;
        if (inWork[b]) {
          inWork.push(1);
          work.push(nb);
        } else if (marked <= size - marked) {
          inWork.push(1);
          work.push(nb);
        } else {
          inWork.push(0);
          inWork[b] = 1;
          work.push(b);
        }
      }
    }
  }
  return blk;
}
