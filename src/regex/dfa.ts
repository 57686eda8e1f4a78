import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
import type { ByteNfa } from "./nfa.js";
import { Assertion } from "./parser.js";
import { Int32Arena } from "../support/index.js";
import { regexClock } from "./clock.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;

/** Temporaries of one determinize call (finishDfa and minimize included); reset per call. */
const arena = new Int32Arena();

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
  /**
   * Same layout: bit p set ⇔ pattern p's acceptance is still reachable from this state
   * (itself included). A lexer intersects it with the terminals its parser allows.
   */
  readonly reachMask: Uint32Array;
}

export interface DfaLimits {
  maxDfaStates: number;
}

// Thread modes: what a pending end assertion still demands of the remaining input.
const MODE_FREE = 0;
const MODE_EOL = 1; // next byte is "\n" or the text ends
const MODE_END_OR_NL = 2; // the rest is "" or "\n"
const MODE_END = 3; // the rest is ""
// Modes 4 + 2j / 5 + 2j: the next byte must be in / must not be in (or the text ends) assertion set j.
const MODE_LOOKAHEAD_BASE = 4;
const DROP = -1;


/**
 * Subset construction over byte classes, then dead-state pruning, Hopcroft minimization,
 * BFS renumbering and merging of classes whose columns agree.
 */
export function determinize(nfa: ByteNfa, start: number, numPatterns: number, limits: DfaLimits): MultiByteDfa {
  const nStates = nfa.size;
  arena.reset();

  // Alphabet compression: bytes that every NFA edge treats alike share a class. Refine the
  // partition of 0..255 by each distinct edge range.
  const rangeIds = new Map<number, number>();
  const rangeLo: number[] = [];
  const rangeHi: number[] = [];
  const internRange = (lo: number, hi: number): number => {
    const key = lo * 256 + hi;
    let id = rangeIds.get(key);
    if (id === undefined) {
      id = rangeLo.length;
      rangeIds.set(key, id);
      rangeLo.push(lo);
      rangeHi.push(hi);
    }
    return id;
  };
  let edgeCount = 0;
  let epsCount = 0;
  for (let q = 0; q < nStates; q++) {
    edgeCount += nfa.edges[q]!.length / 3;
    epsCount += nfa.eps[q]!.length;
  }
  clock.tick(nStates);
  const edgeOff = arena.take(nStates + 1);
  const edgeRange = arena.take(edgeCount);
  const edgeTo = arena.take(edgeCount);
  const epsOff = arena.take(nStates + 1);
  const epsTo = arena.take(epsCount);
  let e = 0;
  let ep = 0;
  for (let q = 0; q < nStates; q++) {
    const list = nfa.edges[q]!;
    // A range is interned through a Map: a few units each.
    clock.tick(list.length + nfa.eps[q]!.length + 1);
    for (let i = 0; i < list.length; i += 3) {
      edgeRange[e] = internRange(list[i]!, list[i + 1]!);
      edgeTo[e++] = list[i + 2]!;
    }
    edgeOff[q + 1] = e;
    for (const t of nfa.eps[q]!) epsTo[ep++] = t;
    epsOff[q + 1] = ep;
  }
  if (nfa.hasAssertions) internRange(0x0a, 0x0a);
  // Lookaround byte sets become class boundaries, so a class is entirely inside or outside each.
  for (const set of nfa.assertSets) for (let i = 0; i < set.length; i += 2) internRange(set[i]!, set[i + 1]!);
  const byteClassRaw = arena.take(256);
  let nextClassId = 1;
  const remap = new Map<number, number>();
  for (let r = 0; r < rangeLo.length; r++) {
    clock.tick(4 * (rangeHi[r]! - rangeLo[r]! + 1));
    remap.clear();
    for (let b = rangeLo[r]!; b <= rangeHi[r]!; b++) {
      const old = byteClassRaw[b]!;
      let renamed = remap.get(old);
      if (renamed === undefined) {
        renamed = nextClassId++;
        remap.set(old, renamed);
      }
      byteClassRaw[b] = renamed;
    }
  }
  const dense = arena.take(nextClassId, -1);
  const classOfByte = arena.take(256);
  let numIntervals = 0;
  for (let b = 0; b < 256; b++) {
    const raw = byteClassRaw[b]!;
    if (dense[raw] === -1) dense[raw] = numIntervals++;
    classOfByte[b] = dense[raw]!;
  }
  const k = numIntervals;
  const newlineClass = nfa.hasAssertions ? classOfByte[0x0a]! : -1;
  // Classes covered by each distinct range (CSR).
  const rangeClassOff = arena.take(rangeLo.length + 1);
  const rangeClassList: number[] = [];
  const seen = arena.take(k, -1);
  for (let r = 0; r < rangeLo.length; r++) {
    clock.tick(rangeHi[r]! - rangeLo[r]! + 1);
    for (let b = rangeLo[r]!; b <= rangeHi[r]!; b++) {
      const c = classOfByte[b]!;
      if (seen[c] !== r) {
        seen[c] = r;
        rangeClassList.push(c);
      }
    }
    rangeClassOff[r + 1] = rangeClassList.length;
  }
  const rangeClasses = arena.copy(rangeClassList);
  const assertion = arena.copy(nfa.assertion);
  const assertSet = arena.copy(nfa.assertSet);
  const inAssertSet = arena.take(nfa.assertSets.length * k); // [set * k + class]
  const newlineInSet = arena.take(nfa.assertSets.length);
  nfa.assertSets.forEach((set, j) => {
    for (let i = 0; i < set.length; i += 2) {
      for (let b = set[i]!; b <= set[i + 1]!; b++) inAssertSet[j * k + classOfByte[b]!] = 1;
      if (set[i]! <= 0x0a && 0x0a <= set[i + 1]!) newlineInSet[j] = 1;
    }
  });
  const numModes = MODE_LOOKAHEAD_BASE + 2 * nfa.assertSets.length;
  if (nStates * numModes > 1 << 25) {
    throw new RegexTooComplexError("pattern too complex: too many distinct lookaround sets for its size", "nfaStates");
  }
  const refuseCombination = (q: number): never => {
    throw new RegexSyntaxError(
      "a lookahead combined with another lookahead or end assertion at the same place is not supported",
      Math.max(0, nfa.assertPosition[q]!),
      "lookahead combination",
    );
  };
  /** The mode after crossing end/lookahead assertion `a` (state q) in `mode`, or DROP. */
  const modeAfter = (mode: number, a: number, q: number): number => {
    if (a === Assertion.EndOfLine || a === Assertion.EndOrFinalNewline || a === Assertion.EndOfText) {
      const demanded = a === Assertion.EndOfLine ? MODE_EOL : a === Assertion.EndOrFinalNewline ? MODE_END_OR_NL : MODE_END;
      if (mode <= MODE_END) return Math.max(mode, demanded); // ordered by strictness
      const j = (mode - MODE_LOOKAHEAD_BASE) >> 1;
      const positive = ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
      if (positive) {
        if (!newlineInSet[j] || demanded === MODE_END) return DROP;
        return refuseCombination(q);
      }
      return demanded === MODE_END || newlineInSet[j] ? MODE_END : demanded;
    }
    const j = assertSet[q]!;
    const positive = a === Assertion.FollowedBy;
    const own = MODE_LOOKAHEAD_BASE + 2 * j + (positive ? 0 : 1);
    if (mode === MODE_FREE || mode === own) return own;
    if (mode === MODE_END) return positive ? DROP : MODE_END;
    if (mode === MODE_EOL || mode === MODE_END_OR_NL) {
      if (!positive) return newlineInSet[j] ? MODE_END : mode;
      if (!newlineInSet[j]) return DROP;
    }
    return refuseCombination(q);
  };
  const assertTarget = arena.copy(nfa.assertTarget);
  const acceptOf = arena.copy(nfa.accept);
  const important = arena.take(nStates);
  for (let q = 0; q < nStates; q++) if (edgeOff[q + 1]! > edgeOff[q]! || acceptOf[q]! >= 0) important[q] = 1;

  // Epsilon closure of thread ids (nfaState * numModes + mode) into closureOut, sorted.
  const visitStamp = arena.take(nStates * numModes);
  let stamp = 0;
  const stack = arena.take(nStates * numModes); // each thread is pushed at most once per closure
  let closureOut = arena.take(64);
  // prevClass: class of the byte just consumed, -1 at the start of the text.
  const closure = (seeds: Int32Array, from: number, to: number, prevClass: number): number => {
    const atStart = prevClass < 0;
    const atLineStart = atStart || prevClass === newlineClass;
    stamp++;
    let sp = 0;
    let n = 0;
    for (let i = from; i < to; i++) {
      const t = seeds[i]!;
      if (visitStamp[t] !== stamp) {
        visitStamp[t] = stamp;
        stack[sp++] = t;
      }
    }
    while (sp > 0) {
      const thread = stack[--sp]!;
      const q = (thread / numModes) | 0;
      const mode = thread - q * numModes;
      if (important[q] && (mode !== MODE_END || acceptOf[q]! >= 0)) {
        if (n === closureOut.length) {
          const grown = arena.take(closureOut.length * 2);
          grown.set(closureOut);
          closureOut = grown;
        }
        closureOut[n++] = thread;
      }
      for (let i = epsOff[q]!; i < epsOff[q + 1]!; i++) {
        const t = epsTo[i]! * numModes + mode;
        if (visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
      const a = assertion[q]!;
      if (a !== 0) {
        let t = -1;
        if (a === Assertion.StartOfText) {
          if (atStart) t = assertTarget[q]! * numModes + mode;
        } else if (a === Assertion.StartOfLine) {
          if (atLineStart) t = assertTarget[q]! * numModes + mode;
        } else if (a === Assertion.PrecededBy || a === Assertion.NotPrecededBy) {
          const inside = !atStart && inAssertSet[assertSet[q]! * k + prevClass] === 1;
          if (inside === (a === Assertion.PrecededBy)) t = assertTarget[q]! * numModes + mode;
        } else {
          const next = modeAfter(mode, a, q);
          if (next !== DROP) t = assertTarget[q]! * numModes + next;
        }
        if (t >= 0 && visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
    }
    closureOut.subarray(0, n).sort();
    clock.tick(n + to - from);
    return n;
  };

  // DFA states: sorted thread lists in a pool, found through an open-addressing hash table.
  let pool = arena.take(1024);
  let poolUsed = 0;
  let stateOff = arena.take(65);
  let numRaw = 0;
  let table = arena.take(256, -1);
  let trans = arena.take(64 * k, -1);
  const hashThreads = (src: Int32Array, from: number, to: number): number => {
    let h = 0x811c9dc5;
    for (let i = from; i < to; i++) h = Math.imul(h ^ src[i]!, 0x01000193);
    return h >>> 0;
  };
  const sameThreads = (id: number, n: number): boolean => {
    const off = stateOff[id]!;
    if (stateOff[id + 1]! - off !== n) return false;
    for (let i = 0; i < n; i++) if (pool[off + i] !== closureOut[i]) return false;
    return true;
  };
  const insertInTable = (id: number, h: number): void => {
    const mask = table.length - 1;
    let slot = h & mask;
    while (table[slot] !== -1) slot = (slot + 1) & mask;
    table[slot] = id;
  };
  /** Looks up or adds the state whose threads are closureOut[0..n). */
  const internState = (n: number): number => {
    const h = hashThreads(closureOut, 0, n);
    const mask = table.length - 1;
    let slot = h & mask;
    for (;;) {
      const id = table[slot]!;
      if (id === -1) break;
      if (sameThreads(id, n)) return id;
      slot = (slot + 1) & mask;
    }
    const id = numRaw;
    if (id >= limits.maxDfaStates) {
      throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${limits.maxDfaStates} states`, "dfaStates");
    }
    numRaw++;
    if (poolUsed + n > pool.length) {
      const grown = arena.take(Math.max(pool.length * 2, poolUsed + n));
      grown.set(pool);
      pool = grown;
    }
    pool.set(closureOut.subarray(0, n), poolUsed);
    poolUsed += n;
    if (numRaw + 1 > stateOff.length) {
      const grown = arena.take(stateOff.length * 2);
      grown.set(stateOff);
      stateOff = grown;
    }
    stateOff[numRaw] = poolUsed;
    if (numRaw * k > trans.length) {
      const grown = arena.take(trans.length * 2, -1);
      grown.set(trans);
      trans = grown;
    }
    if (numRaw * 2 > table.length) {
      table = arena.take(table.length * 2, -1);
      for (let other = 0; other < numRaw - 1; other++) {
        insertInTable(other, hashThreads(pool, stateOff[other]!, stateOff[other + 1]!));
      }
    }
    insertInTable(id, h);
    return id;
  };

  const seed = arena.take(1);
  seed[0] = start * numModes;
  internState(closure(seed, 0, 1, -1));
  const classCount = arena.take(k + 1);
  let moves = arena.take(256); // seeds grouped by class
  for (let s = 0; s < numRaw; s++) {
    // Pass 1 counts seeds per class, pass 2 places them (counting sort, no per-class arrays).
    classCount.fill(0);
    for (let pass = 0; pass < 2; pass++) {
      for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
        const thread = pool[i]!;
        const q = (thread / numModes) | 0;
        const mode = thread - q * numModes;
        if (mode === MODE_END) continue;
        for (let j = edgeOff[q]!; j < edgeOff[q + 1]!; j++) {
          const r = edgeRange[j]!;
          const target = edgeTo[j]! * numModes;
          for (let x = rangeClassOff[r]!; x < rangeClassOff[r + 1]!; x++) {
            const c = rangeClasses[x]!;
            let t = target;
            if (mode >= MODE_LOOKAHEAD_BASE) {
              const la = mode - MODE_LOOKAHEAD_BASE;
              const inside = inAssertSet[(la >> 1) * k + c] === 1;
              if (inside !== ((la & 1) === 0)) continue;
            } else if (mode !== MODE_FREE) {
              if (c !== newlineClass) continue;
              t = target + (mode === MODE_EOL ? MODE_FREE : MODE_END);
            }
            if (pass === 0) classCount[c + 1]!++;
            else moves[classCount[c]!++] = t;
          }
        }
      }
      if (pass === 0) {
        for (let c = 0; c < k; c++) classCount[c + 1]! += classCount[c]!;
        if (classCount[k]! > moves.length) moves = arena.take(classCount[k]! * 2);
      }
    }
    // After pass 2, classCount[c] is the end of class c's seeds (and the start of c + 1's).
    clock.tick(k + 2 * (stateOff[s + 1]! - stateOff[s]!) + classCount[k]!);
    let from = 0;
    for (let c = 0; c < k; c++) {
      const to = classCount[c]!;
      if (to > from) {
        const n = closure(moves, from, to, c);
        if (n > 0) {
          const target = internState(n);
          trans[s * k + c] = target;
        }
      }
      from = to;
    }
  }

  const rawCount = numRaw;
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const rawMask = arena.take(rawCount * acceptWords);
  const rawAccepting = arena.take(rawCount);
  for (let s = 0; s < rawCount; s++) {
    clock.tick(stateOff[s + 1]! - stateOff[s]! + 1);
    for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
      const thread = pool[i]!;
      const q = (thread / numModes) | 0;
      const mode = thread - q * numModes;
      const p = acceptOf[q]!;
      // A pending positive lookahead needs one more character, so it cannot accept at the end.
      const needsMore = mode >= MODE_LOOKAHEAD_BASE && ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
      if (p >= 0 && !needsMore) {
        rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
        rawAccepting[s] = 1;
      }
    }
  }
  return finishDfa(rawCount, k, trans, rawMask, rawAccepting, acceptWords, numPatterns, classOfByte);
}

/**
 * The DFA determinize makes for patterns that are each one literal byte string (keywords and
 * punctuation: most of a grammar's terminals) or one class of ASCII bytes (128 flags: a range
 * such as a palindrome's middle letter), built as the literals' trie plus the one-byte strings of
 * the classes, and finished the same way (finishDfa's minimization and numbering are canonical,
 * so the result is the same DFA). It skips the NFA and the subset construction, which made a
 * one-literal scanner cost about ten times more.
 */
export function determinizeLiterals(patterns: readonly (readonly number[] | Uint8Array)[]): MultiByteDfa {
  arena.reset();
  const numPatterns = patterns.length;
  // Byte intervals as determinize refines 0..255, numbered by their first byte: each byte some
  // literal uses on its own, the others grouped by the classes they are in (all other bytes
  // together when there are none).
  const literalByte = arena.take(256);
  const classes: Uint8Array[] = [];
  let total = 1;
  for (const pattern of patterns) {
    if (pattern instanceof Uint8Array) {
      classes.push(pattern);
      total++;
    } else {
      total += pattern.length;
      for (const b of pattern) literalByte[b] = 1;
    }
  }
  const classOfByte = arena.take(256);
  let k = 0;
  let otherBytes = -1;
  const byMembership = classes.length === 0 ? null : new Map<string, number>();
  for (let b = 0; b < 256; b++) {
    if (literalByte[b] === 1) {
      classOfByte[b] = k++;
      continue;
    }
    let key = "";
    if (b < 128) for (let c = 0; c < classes.length; c++) if (classes[c]![b] === 1) key += c + ",";
    if (key === "") {
      if (otherBytes < 0) otherBytes = k++;
      classOfByte[b] = otherBytes;
      continue;
    }
    let id = byMembership!.get(key);
    if (id === undefined) {
      id = k++;
      byMembership!.set(key, id);
    }
    classOfByte[b] = id;
  }
  // A class's bytes take the root to at most one node per interval; bounded by the intervals.
  if (classes.length > 0) total += k;
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const trans = arena.take(total * k, -1);
  const rawMask = arena.take(total * acceptWords);
  const rawAccepting = arena.take(total);
  let nodes = 1;
  for (let p = 0; p < numPatterns; p++) {
    const pattern = patterns[p]!;
    if (pattern instanceof Uint8Array) {
      // One byte from the root: the literal trie's node for it when there is one, else a node of
      // its own (classes only ever end there; minimization merges the equal ones).
      for (let b = 0; b < 128; b++) {
        if (pattern[b] !== 1) continue;
        const at = classOfByte[b]!;
        if (trans[at]! < 0) trans[at] = nodes++;
        rawMask[trans[at]! * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
        rawAccepting[trans[at]!] = 1;
      }
      continue;
    }
    let s = 0;
    clock.tick(pattern.length + 1);
    for (const b of pattern) {
      const at = s * k + classOfByte[b]!;
      if (trans[at]! < 0) trans[at] = nodes++;
      s = trans[at]!;
    }
    rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
    rawAccepting[s] = 1;
  }
  return finishDfa(nodes, k, trans, rawMask, rawAccepting, acceptWords, numPatterns, classOfByte);
}

function isAcceptingRaw(mask: Int32Array | Uint32Array, words: number, s: number): boolean {
  for (let w = 0; w < words; w++) if (mask[s * words + w] !== 0) return true;
  return false;
}

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

/** Multi-source BFS backwards from accepting states: shortest byte distance, -1 if none. `kept`: a result, not scratch. */
function distancesToAccept(n: number, k: number, trans: Int32Array, accepting: (s: number) => boolean, kept: boolean): Int32Array {
  const dist = kept ? new Int32Array(n).fill(-1) : arena.take(n, -1);
  const queue = arena.take(n);
  let head = 0;
  let tail = 0;
  for (let s = 0; s < n; s++) {
    if (accepting(s)) {
      dist[s] = 0;
      queue[tail++] = s;
    }
  }
  const { offsets, sources } = reverseEdges(n, k, trans);
  clock.tick(n);
  while (head < tail) {
    const t = queue[head++]!;
    clock.tick(offsets[t + 1]! - offsets[t]! + 1);
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
  // Initial partition: by acceptance mask, with the dead sink alone (its language is empty,
  // unlike every live state's), so it can be left off the initial worklist.
  const initialBlock = arena.take(total);
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
  const block = minimize(total, k, delta, initialBlock, blockOfMask.size + 1, dead);

  // 3. Renumber blocks by BFS from the start block, dropping the dead block.
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

  // 4. Merge intervals whose columns are identical into byte classes.
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
    clock.tick(numClasses);
    for (let cls = 0; cls < numClasses; cls++) next[s * numClasses + cls] = interval[s * k + firstIntervalOfClass[cls]!]!;
  }
  const minBytesToAccept = distancesToAccept(numStates, numClasses, next, (s) => accepting[s] === 1, true);
  const reachMask = reachableAcceptance(numStates, numClasses, next, acceptMask, acceptWords);
  return {
    numStates, start: 0, numClasses, byteClass, next, accepting, minBytesToAccept,
    numPatterns, acceptWords, acceptMask, reachMask,
  };
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
function reachableAcceptance(n: number, k: number, next: Int32Array, acceptMask: Uint32Array, words: number): Uint32Array {
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

/** True when the DFA accepts nothing (its only state is a non-accepting start). */
export function isEmptyLanguage(dfa: ByteDfa): boolean {
  return dfa.minBytesToAccept[dfa.start] === -1;
}

/**
 * Hopcroft partition refinement on a total DFA (n states, k symbols). Returns each state's
 * block id. The initial partition is `initialBlock` (ids < numInitial); the block holding
 * `skipState` is left off the initial worklist (all but one initial block suffice).
 */
function minimize(
  n: number,
  k: number,
  delta: Int32Array,
  initialBlock: Int32Array,
  numInitial: number,
  skipState: number,
): Int32Array {
  // Inverse transitions: preimage[(t * k + c)] lists s with delta(s, c) = t.
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
