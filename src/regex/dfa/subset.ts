// The subset construction over byte classes: DFA states are ε-closed sets of NFA threads, a
// thread being an NFA state with a mode saying what a pending end assertion or lookahead still
// demands of the rest of the input ('^' and lookbehinds are decided from the previous byte).
// `determinize` runs it between the alphabet compression (alphabet.ts) and finishDfa (finish.ts).

import { RegexSyntaxError, RegexTooComplexError } from "../errors.js";
import { regexClock } from "../clock.js";
import type { ByteNfa, EmbeddedDfa } from "../nfa.js";
import { Assertion } from "../parser.js";
import { compressAlphabet, type ClassedNfa } from "./alphabet.js";
import { emptyDfa, finishDfa } from "./finish.js";
import { dfaArena } from "./scratch.js";
import type { DfaLimits, MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

// Thread modes: what a pending end assertion still demands of the remaining input.
const MODE_FREE = 0;
const MODE_EOL = 1; // next byte is "\n" or the text ends
const MODE_END_OR_NL = 2; // the rest is "" or "\n"
const MODE_END = 3; // the rest is ""
// Modes 4 + 2j / 5 + 2j: the next byte must be in / must not be in (or the text ends) assertion set j.
const MODE_LOOKAHEAD_BASE = 4;
const DROP = -1;

/**
 * Subset construction over byte classes, then dead-state pruning, minimization (minimize.ts),
 * BFS renumbering and merging of classes whose columns agree.
 *
 * Without assertions, a DFA state's language is the union of its NFA states': it is dead when all
 * of theirs are, and its distance to acceptance is the least of theirs (nfaBytesToAccept).
 * Dead states are then never made, and `minimal: false` returns the construction's DFA as it
 * stands (states in breadth-first order already, classes unmerged): for a JSON Schema document,
 * whose subset construction is within a few percent of minimal, the finishing was ~half of its
 * compile. With assertions the DFA is always finished.
 */
export function determinize(nfa: ByteNfa, start: number, numPatterns: number, limits: DfaLimits, minimal = true): MultiByteDfa {
  arena.reset();
  // Embedded DFAs are stepped through their own tables only where every thread is free.
  if (nfa.hasAssertions) nfa.materializeBlocks();
  const alphabet = compressAlphabet(nfa);
  const nfaDistance = nfa.hasAssertions ? null : nfaBytesToAccept(alphabet, nfa.accept, nfa.blocks);
  const subset = new SubsetConstruction(nfa, alphabet, limits, nfaDistance);
  subset.explore(start);
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const { rawMask, rawAccepting } = subset.acceptance(acceptWords);
  const rawDist = nfaDistance === null ? null : subset.rawDist;
  if (!minimal && rawDist !== null && numPatterns === 1) return unfinishedDfa(subset, alphabet, rawAccepting, rawDist);
  return finishDfa(subset.numRaw, alphabet.k, subset.trans, rawMask, rawAccepting, acceptWords, numPatterns, alphabet.classOfByte, rawDist);
}

/**
 * Per NFA state: the fewest bytes from it to an accepting state (ε-edges free), -1 where none is
 * reachable, in scratch. Assertions are not followed (determinize asks only NFAs without them).
 * A search backwards, level by level: a state is settled once, queued at most once per edge.
 * An embedded DFA's states are settled with its exit: each is its own distance to acceptance
 * (minBytesToAccept) further, and its start is queued for that level, for the states before it.
 */
function nfaBytesToAccept(nfa: ClassedNfa, accept: Int32Array, blocks: readonly EmbeddedDfa[]): Int32Array {
  const n = accept.length;
  const { edgeOff, edgeTo, epsOff, epsTo } = nfa;
  const epsEdges = epsOff[n]!;
  const byteEdges = edgeOff[n]!;
  // Predecessors by ε and by a byte, per state (the CSR tables reversed).
  const epsIn = arena.take(n + 1);
  const byteIn = arena.take(n + 1);
  for (let i = 0; i < epsEdges; i++) epsIn[epsTo[i]! + 1]!++;
  for (let i = 0; i < byteEdges; i++) byteIn[edgeTo[i]! + 1]!++;
  for (let q = 0; q < n; q++) {
    epsIn[q + 1]! += epsIn[q]!;
    byteIn[q + 1]! += byteIn[q]!;
  }
  const epsFrom = arena.take(epsEdges);
  const byteFrom = arena.take(byteEdges);
  const fill = arena.copy(epsIn);
  for (let q = 0; q < n; q++) for (let i = epsOff[q]!; i < epsOff[q + 1]!; i++) epsFrom[fill[epsTo[i]!]!++] = q;
  fill.set(byteIn);
  for (let q = 0; q < n; q++) for (let i = edgeOff[q]!; i < edgeOff[q + 1]!; i++) byteFrom[fill[edgeTo[i]!]!++] = q;
  clock.tick(2 * (n + epsEdges + byteEdges));
  const dist = arena.take(n, -1);
  const exitOf = arena.take(n, -1);
  for (let b = 0; b < blocks.length; b++) exitOf[blocks[b]!.exit] = b;
  // Block starts queued for a later level than the next: [level, state, ...].
  const pending: number[] = [];
  // A level holds the states queued by bytes into it and by ε within it, and block starts: under
  // n + all edges + blocks.
  const capacity = n + epsEdges + byteEdges + blocks.length;
  let level = arena.take(capacity);
  let nextLevel = arena.take(capacity);
  let size = 0;
  for (let q = 0; q < n; q++) if (accept[q]! >= 0) level[size++] = q;
  for (let d = 0; size > 0 || pending.length > 0; d++) {
    for (let i = 0; i < pending.length; ) {
      if (pending[i] === d) {
        level[size++] = pending[i + 1]!;
        pending[i] = pending[pending.length - 2]!;
        pending[i + 1] = pending[pending.length - 1]!;
        pending.length -= 2;
      } else i += 2;
    }
    let nextSize = 0;
    for (let i = 0; i < size; i++) {
      const q = level[i]!;
      if (dist[q] !== -1) continue;
      dist[q] = d;
      for (let j = epsIn[q]!; j < epsIn[q + 1]!; j++) if (dist[epsFrom[j]!] === -1) level[size++] = epsFrom[j]!;
      for (let j = byteIn[q]!; j < byteIn[q + 1]!; j++) if (dist[byteFrom[j]!] === -1) nextLevel[nextSize++] = byteFrom[j]!;
      const b = exitOf[q]!;
      if (b >= 0) {
        const { dfa, base } = blocks[b]!;
        const min = dfa.minBytesToAccept;
        clock.tick(dfa.numStates);
        for (let s = 0; s < dfa.numStates; s++) if (s !== dfa.start && min[s]! >= 0) dist[base + s] = d + min[s]!;
        const w = min[dfa.start]!;
        // w = 0: the start is accepting, and already queued by its ε-edge to the exit.
        if (w > 0) pending.push(d + w, base + dfa.start);
      }
    }
    [level, nextLevel] = [nextLevel, level];
    size = nextSize;
  }
  return dist;
}

/**
 * The subset construction's one-pattern DFA, every state live (see determinize), out of scratch:
 * its six tables views of one buffer (one off-heap allocation instead of six, each filled by a
 * loop, not by a constructor converting another typed array).
 */
function unfinishedDfa(subset: SubsetConstruction, alphabet: ClassedNfa, rawAccepting: Int32Array, rawDist: Int32Array): MultiByteDfa {
  const n = subset.numRaw;
  if (rawDist[0] === -1) return emptyDfa(1, 1);
  const k = alphabet.k;
  const buffer = new ArrayBuffer(4 * (n * k + 3 * n) + n + 256);
  const next = new Int32Array(buffer, 0, n * k);
  next.set(subset.trans.subarray(0, n * k));
  const minBytesToAccept = new Int32Array(buffer, 4 * n * k, n);
  const acceptMask = new Uint32Array(buffer, 4 * (n * k + n), n);
  const reachMask = new Uint32Array(buffer, 4 * (n * k + 2 * n), n);
  const accepting = new Uint8Array(buffer, 4 * (n * k + 3 * n), n);
  for (let s = 0; s < n; s++) {
    minBytesToAccept[s] = rawDist[s]!;
    acceptMask[s] = accepting[s] = rawAccepting[s]!;
    reachMask[s] = 1;
  }
  const byteClass = new Uint8Array(buffer, 4 * (n * k + 3 * n) + n, 256);
  for (let b = 0; b < 256; b++) byteClass[b] = alphabet.classOfByte[b]!;
  return {
    numStates: n,
    start: 0,
    numClasses: k,
    byteClass,
    next,
    accepting,
    minBytesToAccept,
    numPatterns: 1,
    acceptWords: 1,
    acceptMask,
    reachMask,
  };
}

/** The most ints of transition table a subset construction starts with (16 MB). */
const INITIAL_TRANS_INTS = 1 << 22;

/** Sorts list[0..n) in place by insertion: a closure's few threads, a sparse state's few classes. */
function sortAscending(list: Int32Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const x = list[i]!;
    let j = i - 1;
    while (j >= 0 && list[j]! > x) {
      list[j + 1] = list[j]!;
      j--;
    }
    list[j + 1] = x;
  }
}

/** Whether seeds[a..a+n) and seeds[b..b+n) are the same threads. */
function sameSeeds(seeds: Int32Array, a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (seeds[a + i] !== seeds[b + i]) return false;
  return true;
}

function hashThreads(src: Int32Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ src[i]!, 0x01000193);
  return h >>> 0;
}

/**
 * The raw DFA of one determinize call, built state by state in the arena's scratch: its states
 * (sorted thread lists in a pool, found through an open-addressing hash table) and transitions.
 */
class SubsetConstruction {
  /** Thread ids are nfaState << modeBits | mode (modes rounded up to a power of two: shifts, no division). */
  private readonly modeBits: number;
  private readonly modeMask: number;
  private readonly assertion: Int32Array;
  private readonly assertSet: Int32Array;
  private readonly assertTarget: Int32Array;
  private readonly acceptOf: Int32Array;
  /** No closure reads the class just crossed: no '^' of a line and no lookbehind in the NFA. */
  private readonly classFree: boolean;
  /** 1 for the NFA states a closure keeps: those with byte edges or accepting. */
  private readonly important: Int32Array;
  // Epsilon closure of thread ids (nfaState << modeBits | mode) into closureOut, sorted.
  private readonly visitStamp: Int32Array;
  private stamp = 0;
  private readonly stack: Int32Array; // each thread is pushed at most once per closure
  private closureOut: Int32Array;
  // DFA states: sorted thread lists in a pool, found through an open-addressing hash table.
  private pool: Int32Array;
  private poolUsed = 0;
  private stateOff: Int32Array;
  numRaw = 0;
  private table: Int32Array;
  /** trans[state * k + class]: the raw DFA's transitions, -1 where none. */
  trans: Int32Array;
  /** Per raw state, its fewest bytes to acceptance (only with `nfaDistance`; -1: dead). */
  rawDist: Int32Array;
  /** Per NFA state: 0 not known yet, 1 its byte edges cover disjoint classes, 2 they overlap. */
  private readonly disjointEdges: Int32Array;
  /** hasDisjointEdges' marks per class, by stamp. */
  private readonly classSeen: Int32Array;
  private classStamp = 0;
  /**
   * Per NFA state q: the state made of the closure of a free thread at q (-1: dead), -2 not known
   * yet. exploreSingle's targets: without class-reading closures it depends on q alone, and the
   * same targets are met from many states (a string's content, an embedded DFA's loops).
   */
  private readonly singleClosed: Int32Array;

  /** `nfaDistance`: nfaBytesToAccept's, given when the NFA has no assertions (see determinize). */
  constructor(
    private readonly nfa: ByteNfa,
    private readonly alphabet: ClassedNfa,
    private readonly limits: DfaLimits,
    private readonly nfaDistance: Int32Array | null,
  ) {
    const nStates = nfa.size;
    const modeBits = 32 - Math.clz32(MODE_LOOKAHEAD_BASE + 2 * nfa.assertSets.length - 1);
    const numModes = 1 << modeBits;
    if (nStates * numModes > 1 << 25) {
      throw new RegexTooComplexError("pattern too complex: too many distinct lookaround sets for its size", "nfaStates");
    }
    this.modeBits = modeBits;
    this.modeMask = numModes - 1;
    const assertion = (this.assertion = arena.copy(nfa.assertion));
    this.assertSet = arena.copy(nfa.assertSet);
    this.assertTarget = arena.copy(nfa.assertTarget);
    const acceptOf = (this.acceptOf = arena.copy(nfa.accept));
    let classFree = true;
    for (let q = 0; q < nStates; q++) {
      const a = assertion[q]!;
      if (a === Assertion.StartOfLine || a === Assertion.PrecededBy || a === Assertion.NotPrecededBy) classFree = false;
    }
    this.classFree = classFree;
    const edgeOff = alphabet.edgeOff;
    const important = (this.important = arena.take(nStates));
    for (let q = 0; q < nStates; q++) if (edgeOff[q + 1]! > edgeOff[q]! || acceptOf[q]! >= 0) important[q] = 1;
    for (let b = 0; b < alphabet.blockRows.length; b++) {
      const { off } = alphabet.blockRows[b]!;
      const base = alphabet.blockBase[b]!;
      for (let s = 0; s + 1 < off.length; s++) if (off[s + 1]! > off[s]!) important[base + s] = 1;
    }
    this.visitStamp = arena.take(nStates * numModes);
    this.stack = arena.take(nStates * numModes);
    this.closureOut = arena.take(64);
    this.pool = arena.take(1024);
    this.stateOff = arena.take(65);
    this.rawDist = arena.take(64);
    this.disjointEdges = arena.take(nStates);
    this.classSeen = arena.take(alphabet.k);
    this.singleClosed = arena.take(nStates, -2);
    this.table = arena.take(256, -1);
    // As many rows as NFA states to begin with, up to INITIAL_TRANS_INTS: a JSON Schema's DFA
    // has about as many states as its NFA, most of them an embedded DFA's (MaskBench's builds of
    // over 2,048 NFA states: 854 of 977 end with 0.5–1 DFA state per NFA state), and doubling
    // from a small table wrote and copied twice the final one (~5% of its slowest compiles).
    const rows = Math.max(64, Math.min(nStates, Math.floor(INITIAL_TRANS_INTS / alphabet.k)));
    this.trans = arena.take(rows * alphabet.k, -1);
  }

  private refuseCombination(q: number): never {
    throw new RegexSyntaxError(
      "a lookahead combined with another lookahead or end assertion at the same place is not supported",
      Math.max(0, this.nfa.assertPosition[q]!),
      "lookahead combination",
    );
  }

  /** The mode after crossing end/lookahead assertion `a` (state q) in `mode`, or DROP. */
  private modeAfter(mode: number, a: number, q: number): number {
    const newlineInSet = this.alphabet.newlineInSet;
    if (a === Assertion.EndOfLine || a === Assertion.EndOrFinalNewline || a === Assertion.EndOfText) {
      const demanded = a === Assertion.EndOfLine ? MODE_EOL : a === Assertion.EndOrFinalNewline ? MODE_END_OR_NL : MODE_END;
      if (mode <= MODE_END) return Math.max(mode, demanded); // ordered by strictness
      const j = (mode - MODE_LOOKAHEAD_BASE) >> 1;
      const positive = ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
      if (positive) {
        if (!newlineInSet[j] || demanded === MODE_END) return DROP;
        return this.refuseCombination(q);
      }
      return demanded === MODE_END || newlineInSet[j] ? MODE_END : demanded;
    }
    const j = this.assertSet[q]!;
    const positive = a === Assertion.FollowedBy;
    const own = MODE_LOOKAHEAD_BASE + 2 * j + (positive ? 0 : 1);
    if (mode === MODE_FREE || mode === own) return own;
    if (mode === MODE_END) return positive ? DROP : MODE_END;
    if (mode === MODE_EOL || mode === MODE_END_OR_NL) {
      if (!positive) return newlineInSet[j] ? MODE_END : mode;
      if (!newlineInSet[j]) return DROP;
    }
    return this.refuseCombination(q);
  }

  /**
   * The ε-closure of seeds[from..to) into closureOut, sorted; returns its size.
   * prevClass: class of the byte just consumed, -1 at the start of the text.
   */
  private closure(seeds: Int32Array, from: number, to: number, prevClass: number): number {
    const { modeBits, modeMask, important, acceptOf, assertion, assertTarget, assertSet, visitStamp, stack } = this;
    const { epsOff, epsTo, inAssertSet, k, newlineClass } = this.alphabet;
    let closureOut = this.closureOut;
    const atStart = prevClass < 0;
    const atLineStart = atStart || prevClass === newlineClass;
    const stamp = ++this.stamp;
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
      const q = thread >> modeBits;
      const mode = thread & modeMask;
      if (important[q] && (mode !== MODE_END || acceptOf[q]! >= 0)) {
        if (n === closureOut.length) {
          const grown = arena.take(closureOut.length * 2);
          grown.set(closureOut);
          closureOut = this.closureOut = grown;
        }
        closureOut[n++] = thread;
      }
      for (let i = epsOff[q]!; i < epsOff[q + 1]!; i++) {
        const t = (epsTo[i]! << modeBits) | mode;
        if (visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
      const a = assertion[q]!;
      if (a !== 0) {
        let t = -1;
        if (a === Assertion.StartOfText) {
          if (atStart) t = (assertTarget[q]! << modeBits) | mode;
        } else if (a === Assertion.StartOfLine) {
          if (atLineStart) t = (assertTarget[q]! << modeBits) | mode;
        } else if (a === Assertion.PrecededBy || a === Assertion.NotPrecededBy) {
          const inside = !atStart && inAssertSet[assertSet[q]! * k + prevClass] === 1;
          if (inside === (a === Assertion.PrecededBy)) t = (assertTarget[q]! << modeBits) | mode;
        } else {
          const next = this.modeAfter(mode, a, q);
          if (next !== DROP) t = (assertTarget[q]! << modeBits) | next;
        }
        if (t >= 0 && visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
    }
    // Most closures of a JSON Schema's NFA hold one or two threads: sorted in place, without a
    // subarray view (an allocation) per call.
    if (n > 16) closureOut.subarray(0, n).sort();
    else sortAscending(closureOut, n);
    clock.tick(n + to - from);
    return n;
  }

  private sameThreads(id: number, n: number): boolean {
    const { pool, stateOff, closureOut } = this;
    const off = stateOff[id]!;
    if (stateOff[id + 1]! - off !== n) return false;
    for (let i = 0; i < n; i++) if (pool[off + i] !== closureOut[i]) return false;
    return true;
  }

  private insertInTable(id: number, h: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let slot = h & mask;
    while (table[slot] !== -1) slot = (slot + 1) & mask;
    table[slot] = id;
  }

  /** The fewest bytes to acceptance from the threads closureOut[0..n), -1 if none gets there. */
  private closureDistance(n: number, nfaDistance: Int32Array): number {
    const { closureOut, modeBits } = this;
    let best = -1;
    for (let i = 0; i < n; i++) {
      const d = nfaDistance[closureOut[i]! >> modeBits]!;
      if (d >= 0 && (best === -1 || d < best)) best = d;
    }
    return best;
  }

  /**
   * Looks up or adds the state whose threads are closureOut[0..n); with `nfaDistance`, -1 when
   * they are all dead (the first state, the start, is made even then).
   */
  private internState(n: number): number {
    const h = hashThreads(this.closureOut, 0, n);
    let table = this.table;
    const mask = table.length - 1;
    let slot = h & mask;
    for (;;) {
      const id = table[slot]!;
      if (id === -1) break;
      if (this.sameThreads(id, n)) return id;
      slot = (slot + 1) & mask;
    }
    // Only new sets are measured: the ones already made are live (or the start).
    const distance = this.nfaDistance === null ? 0 : this.closureDistance(n, this.nfaDistance);
    if (distance === -1 && this.numRaw > 0) return -1;
    const id = this.numRaw;
    if (id >= this.limits.maxDfaStates) {
      throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${this.limits.maxDfaStates} states`, "dfaStates");
    }
    const numRaw = ++this.numRaw;
    if (this.poolUsed + n > this.pool.length) {
      const grown = arena.take(Math.max(this.pool.length * 2, this.poolUsed + n));
      grown.set(this.pool);
      this.pool = grown;
    }
    // A loop, not set(subarray(…)): a view per new state was garbage for one or two threads.
    const { pool, closureOut } = this;
    for (let i = 0; i < n; i++) pool[this.poolUsed + i] = closureOut[i]!;
    this.poolUsed += n;
    if (numRaw + 1 > this.stateOff.length) {
      const grown = arena.take(this.stateOff.length * 2);
      grown.set(this.stateOff);
      this.stateOff = grown;
    }
    this.stateOff[numRaw] = this.poolUsed;
    if (id === this.rawDist.length) {
      const grown = arena.take(this.rawDist.length * 2);
      grown.set(this.rawDist);
      this.rawDist = grown;
    }
    this.rawDist[id] = distance;
    if (numRaw * this.alphabet.k > this.trans.length) {
      const grown = arena.take(this.trans.length * 2, -1);
      grown.set(this.trans);
      this.trans = grown;
    }
    if (numRaw * 2 > table.length) {
      table = this.table = arena.take(table.length * 2, -1);
      const { pool, stateOff } = this;
      for (let other = 0; other < numRaw - 1; other++) {
        this.insertInTable(other, hashThreads(pool, stateOff[other]!, stateOff[other + 1]!));
      }
    }
    this.insertInTable(id, h);
    return id;
  }

  /** The states reachable from NFA state `start` at the start of the text, and their transitions. */
  explore(start: number): void {
    const { modeBits, modeMask } = this;
    const { edgeOff, edgeRange, edgeTo, rangeClassOff, rangeClasses, inAssertSet, k, newlineClass } = this.alphabet;
    const { blockOf, blockBase, blockRows, blockClassOff, blockClassList } = this.alphabet;
    const seed = arena.take(1);
    seed[0] = start << modeBits;
    this.internState(this.closure(seed, 0, 1, -1));
    const classCount = arena.take(k + 1);
    // A state's classes with seeds, and where each one's begin (sparse states only: see below).
    const touched = arena.take(k);
    const touchedFrom = arena.take(k);
    let dirty = false;
    let moves = arena.take(256); // seeds grouped by class
    for (let s = 0; s < this.numRaw; s++) {
      // This state's threads (internState, below, may move them to larger tables).
      const pool = this.pool;
      const stateOff = this.stateOff;
      if (stateOff[s + 1]! - stateOff[s]! === 1 && this.exploreSingle(s, pool[stateOff[s]!]!, seed)) continue;
      // Pass 1 counts seeds per class, pass 2 places them (counting sort, no per-class arrays).
      // A state of a few threads moving on a few classes (a key's first bytes among an object's
      // keys) is sparse: its classes are sorted and summed alone, not all k of them, and
      // classCount is left all zero again.
      if (dirty) classCount.fill(0);
      let numTouched = 0;
      let sparse = false;
      let total = 0;
      for (let pass = 0; pass < 2; pass++) {
        for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
          const thread = pool[i]!;
          const q = thread >> modeBits;
          const mode = thread & modeMask;
          if (mode === MODE_END) continue;
          const b = blockOf[q]!;
          if (b >= 0) {
            // An embedded DFA's state (the NFA has no assertions: the thread is free).
            const base = blockBase[b]!;
            const { off, cls, to } = blockRows[b]!;
            const classOff = blockClassOff[b]!;
            const classList = blockClassList[b]!;
            // Each pass its own loop: the most-run loop of the construction (a class per edge).
            const edgesTo = off[q - base + 1]!;
            if (pass === 0) {
              for (let j = off[q - base]!; j < edgesTo; j++) {
                const classesTo = classOff[cls[j]! + 1]!;
                for (let x = classOff[cls[j]!]!; x < classesTo; x++) {
                  const c = classList[x]!;
                  if (classCount[c + 1]!++ === 0) touched[numTouched++] = c;
                }
              }
            } else {
              for (let j = off[q - base]!; j < edgesTo; j++) {
                const target = (base + to[j]!) << modeBits;
                const classesTo = classOff[cls[j]! + 1]!;
                for (let x = classOff[cls[j]!]!; x < classesTo; x++) moves[classCount[classList[x]!]!++] = target;
              }
            }
            continue;
          }
          for (let j = edgeOff[q]!; j < edgeOff[q + 1]!; j++) {
            const r = edgeRange[j]!;
            const target = edgeTo[j]! << modeBits;
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
              if (pass === 0) {
                if (classCount[c + 1]!++ === 0) touched[numTouched++] = c;
              } else moves[classCount[c]!++] = t;
            }
          }
        }
        if (pass === 0) {
          sparse = numTouched * 8 <= k;
          if (sparse) {
            // Ascending, as the dense loop below meets them; each count read and cleared.
            sortAscending(touched, numTouched);
            for (let i = 0; i < numTouched; i++) {
              const c = touched[i]!;
              const count = classCount[c + 1]!;
              classCount[c + 1] = 0;
              classCount[c] = total;
              touchedFrom[i] = total;
              total += count;
            }
          } else {
            for (let c = 0; c < k; c++) classCount[c + 1]! += classCount[c]!;
            total = classCount[k]!;
          }
          if (total > moves.length) moves = arena.take(total * 2);
        }
      }
      dirty = !sparse;
      // After pass 2, classCount[c] is the end of class c's seeds (and the start of c + 1's).
      clock.tick(k + 2 * (stateOff[s + 1]! - stateOff[s]!) + total);
      // Classes that one edge's range splits into (a string's content: dozens) share their seeds,
      // and then their target, as the closure reads the class only for lookbehinds and a line's
      // '^' (none in the NFA: `classFree`): such a class reuses the target of the one before.
      let from = 0;
      let lastFrom = 0;
      let lastTo = 0;
      let lastTarget = -1;
      for (let i = 0; i < (sparse ? numTouched : k); i++) {
        const c = sparse ? touched[i]! : i;
        if (sparse) from = touchedFrom[i]!;
        const to = classCount[c]!;
        if (sparse) classCount[c] = 0;
        if (to > from) {
          if (this.classFree && to - from === lastTo - lastFrom && sameSeeds(moves, from, lastFrom, to - from)) {
            if (lastTarget >= 0) this.trans[s * k + c] = lastTarget;
          } else {
            const n = this.closure(moves, from, to, c);
            lastTarget = n > 0 ? this.internState(n) : -1;
            if (lastTarget >= 0) this.trans[s * k + c] = lastTarget;
            lastFrom = from;
            lastTo = to;
          }
        }
        from = to;
      }
    }
  }

  /**
   * A state of one free thread whose NFA state's edges cover disjoint classes (most states of a
   * JSON Schema's DFA: its NFA embeds DFAs and literals): each edge's target, closed once, is the
   * transition on all of its classes, with no pass over every class. False when it does not apply.
   */
  private exploreSingle(s: number, thread: number, seed: Int32Array): boolean {
    if (!this.classFree || (thread & this.modeMask) !== MODE_FREE) return false;
    const q = thread >> this.modeBits;
    if (this.alphabet.blockOf[q]! >= 0) {
      this.exploreBlockState(s, q, seed);
      return true;
    }
    if (!this.hasDisjointEdges(q)) return false;
    const { edgeOff, edgeRange, edgeTo, rangeClassOff, rangeClasses } = this.alphabet;
    for (let j = edgeOff[q]!; j < edgeOff[q + 1]!; j++) {
      const r = edgeRange[j]!;
      this.moveOnClasses(s, edgeTo[j]!, rangeClasses, rangeClassOff[r]!, rangeClassOff[r + 1]!, seed);
    }
    return true;
  }

  /** exploreSingle for a thread at q, a state of an embedded DFA: its live transitions. */
  private exploreBlockState(s: number, q: number, seed: Int32Array): void {
    const { blockOf, blockBase, blockRows, blockClassOff, blockClassList } = this.alphabet;
    const b = blockOf[q]!;
    const base = blockBase[b]!;
    const { off, cls, to } = blockRows[b]!;
    const classOff = blockClassOff[b]!;
    const classList = blockClassList[b]!;
    for (let j = off[q - base]!; j < off[q - base + 1]!; j++) {
      this.moveOnClasses(s, base + to[j]!, classList, classOff[cls[j]!]!, classOff[cls[j]! + 1]!, seed);
    }
  }

  /**
   * State s's transitions on classes[from..to) go to the state of the closure of a free thread
   * at NFA state `next` (memoised: singleClosed). No class is read by that closure (classFree),
   * so any of them stands for them all.
   */
  private moveOnClasses(s: number, next: number, classes: Int32Array, from: number, to: number, seed: Int32Array): void {
    if (from === to) return;
    let target = this.singleClosed[next]!;
    if (target === -2) {
      seed[0] = next << this.modeBits;
      const n = this.closure(seed, 0, 1, classes[from]!);
      target = this.singleClosed[next] = n > 0 ? this.internState(n) : -1;
    }
    clock.tick(to - from + 1);
    if (target < 0) return;
    const trans = this.trans;
    const row = s * this.alphabet.k;
    for (let x = from; x < to; x++) trans[row + classes[x]!] = target;
  }

  /** Whether no two byte edges of NFA state q share a class (memoised per state). */
  private hasDisjointEdges(q: number): boolean {
    const known = this.disjointEdges[q]!;
    if (known !== 0) return known === 1;
    const { edgeOff, edgeRange, rangeClassOff, rangeClasses } = this.alphabet;
    const stamp = ++this.classStamp;
    let disjoint = true;
    for (let j = edgeOff[q]!; j < edgeOff[q + 1]! && disjoint; j++) {
      const r = edgeRange[j]!;
      for (let x = rangeClassOff[r]!; x < rangeClassOff[r + 1]!; x++) {
        const c = rangeClasses[x]!;
        if (this.classSeen[c] === stamp) {
          disjoint = false;
          break;
        }
        this.classSeen[c] = stamp;
      }
    }
    this.disjointEdges[q] = disjoint ? 1 : 2;
    return disjoint;
  }

  /** Per raw state, the patterns accepting there (acceptWords words each) and whether any does. */
  acceptance(acceptWords: number): { rawMask: Int32Array; rawAccepting: Int32Array } {
    const { modeBits, modeMask, acceptOf, pool, stateOff } = this;
    const rawCount = this.numRaw;
    const rawMask = arena.take(rawCount * acceptWords);
    const rawAccepting = arena.take(rawCount);
    for (let s = 0; s < rawCount; s++) {
      clock.tick(stateOff[s + 1]! - stateOff[s]! + 1);
      for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
        const thread = pool[i]!;
        const q = thread >> modeBits;
        const mode = thread & modeMask;
        const p = acceptOf[q]!;
        // A pending positive lookahead needs one more character, so it cannot accept at the end.
        const needsMore = mode >= MODE_LOOKAHEAD_BASE && ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
        if (p >= 0 && !needsMore) {
          rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
          rawAccepting[s] = 1;
        }
      }
    }
    return { rawMask, rawAccepting };
  }
}
