// Alphabet compression, the subset construction's first phase: the NFA's byte-range edges in
// flat (CSR) tables, and the partition of the 256 bytes into the classes no edge, embedded DFA,
// '$' or lookaround set tells apart, so the construction steps per class instead of per byte.

import { regexClock } from "../clock.js";
import type { ByteNfa } from "../nfa.js";
import type { ByteDfa } from "./types.js";
import { dfaArena } from "./scratch.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/** An NFA's edges over byte classes, in the arena's scratch. */
export interface ClassedNfa {
  /** Byte edges of state q: [edgeOff[q], edgeOff[q + 1]) of edgeRange (a range id) and edgeTo. */
  readonly edgeOff: Int32Array;
  readonly edgeRange: Int32Array;
  readonly edgeTo: Int32Array;
  /** ε-edges of state q: [epsOff[q], epsOff[q + 1]) of epsTo. */
  readonly epsOff: Int32Array;
  readonly epsTo: Int32Array;
  /** Byte classes. */
  readonly k: number;
  readonly classOfByte: Int32Array;
  /** The class of "\n" when the NFA has assertions, else -1. */
  readonly newlineClass: number;
  /** Classes covered by range r: rangeClasses[rangeClassOff[r] .. rangeClassOff[r + 1]). */
  readonly rangeClassOff: Int32Array;
  readonly rangeClasses: Int32Array;
  /** [set * k + class]: 1 where the class is inside lookaround byte set `set`. */
  readonly inAssertSet: Int32Array;
  /** Per lookaround byte set: 1 where it holds "\n". */
  readonly newlineInSet: Int32Array;
  /**
   * Per NFA state: the index of the embedded DFA (ByteNfa.blocks) it is a state of, else -1.
   * Such a state has no byte edges here: with r = blockRows[b], its state s = q - blockBase[b]
   * moves on its class r.cls[i] to blockBase[b] + r.to[i] (i in r.off[s] .. r.off[s + 1]), and
   * an embedded class d is our classes blockClassList[b][blockClassOff[b][d] .. [d + 1]]. Its
   * ε-edge to the block's exit, when accepting, is in epsOff/epsTo like any other.
   */
  readonly blockOf: Int32Array;
  readonly blockBase: Int32Array;
  readonly blockRows: readonly SparseRows[];
  readonly blockClassOff: readonly Int32Array[];
  readonly blockClassList: readonly Int32Array[];
}

/** A DFA's transitions, state by state, without the dead ones (see sparseRows). */
export interface SparseRows {
  readonly off: Int32Array;
  readonly cls: Int32Array;
  readonly to: Int32Array;
}

/**
 * The live transitions of each state of a DFA: a state of an embedded DFA has a few (a string's
 * content, a number's digits) among dozens of classes. Cached per DFA: embedded DFAs are shared.
 * Not counted as work: a table kept across compiles would count in the first compile that asks
 * and in no other, and a compile's count must not depend on what its thread compiled before (it
 * is no more than the DFA's own build counted).
 */
function sparseRows(dfa: ByteDfa): SparseRows {
  const known = rowsOf.get(dfa);
  if (known) return known;
  const { numStates, numClasses, next } = dfa;
  const off = new Int32Array(numStates + 1);
  let count = 0;
  for (let i = 0; i < numStates * numClasses; i++) if (next[i]! >= 0) count++;
  const cls = new Int32Array(count);
  const to = new Int32Array(count);
  let n = 0;
  for (let s = 0; s < numStates; s++) {
    for (let c = 0; c < numClasses; c++) {
      const t = next[s * numClasses + c]!;
      if (t >= 0) {
        cls[n] = c;
        to[n++] = t;
      }
    }
    off[s + 1] = n;
  }
  const rows = { off, cls, to };
  rowsOf.set(dfa, rows);
  return rows;
}

const rowsOf = new WeakMap<ByteDfa, SparseRows>();

/**
 * Alphabet compression: bytes that every NFA edge treats alike share a class. Refine the
 * partition of 0..255 by each distinct edge range.
 */
export function compressAlphabet(nfa: ByteNfa): ClassedNfa {
  const edges = flatEdges(nfa);
  const { rangeLo, rangeHi, partitions } = edges;
  const { classOfByte, k } = byteClasses(rangeLo, rangeHi, partitions);
  const newlineClass = nfa.hasAssertions ? classOfByte[0x0a]! : -1;
  const { rangeClassOff, rangeClasses } = classesOfRanges(rangeLo, rangeHi, classOfByte, k);
  const inAssertSet = arena.take(nfa.assertSets.length * k); // [set * k + class]
  const newlineInSet = arena.take(nfa.assertSets.length);
  nfa.assertSets.forEach((set, j) => {
    for (let i = 0; i < set.length; i += 2) {
      for (let b = set[i]!; b <= set[i + 1]!; b++) inAssertSet[j * k + classOfByte[b]!] = 1;
      if (set[i]! <= 0x0a && 0x0a <= set[i + 1]!) newlineInSet[j] = 1;
    }
  });
  const { edgeOff, edgeRange, edgeTo, epsOff, epsTo, blockOf } = edges;
  // Each embedded DFA's classes in terms of ours (its class boundaries were ranges above).
  const blocks = nfa.blocks;
  const blockBase = arena.take(blocks.length);
  const blockRows: SparseRows[] = [];
  const blockClassOff: Int32Array[] = [];
  const blockClassList: Int32Array[] = [];
  const classesOf = new Map<ByteDfa, [Int32Array, Int32Array]>();
  for (let b = 0; b < blocks.length; b++) {
    const { dfa, base } = blocks[b]!;
    let classes = classesOf.get(dfa);
    if (classes === undefined) {
      classes = ourClassesOf(dfa, classOfByte, k);
      classesOf.set(dfa, classes);
    }
    blockBase[b] = base;
    blockRows.push(sparseRows(dfa));
    blockClassOff.push(classes[0]);
    blockClassList.push(classes[1]);
  }
  return {
    edgeOff,
    edgeRange,
    edgeTo,
    epsOff,
    epsTo,
    k,
    classOfByte,
    newlineClass,
    rangeClassOff,
    rangeClasses,
    inAssertSet,
    newlineInSet,
    blockOf,
    blockBase,
    blockRows,
    blockClassOff,
    blockClassList,
  };
}

/** Per class d of an embedded DFA, ours that are within it (CSR: [off[d], off[d + 1]) of list). */
function ourClassesOf(dfa: ByteDfa, classOfByte: Int32Array, k: number): [Int32Array, Int32Array] {
  const kd = dfa.numClasses;
  // Our class c is within the DFA's class of its first byte (ours refine its edges' ranges).
  const theirs = arena.take(k, -1);
  for (let byte = 0; byte < 256; byte++) {
    const c = classOfByte[byte]!;
    if (theirs[c] === -1) theirs[c] = dfa.byteClass[byte]!;
  }
  const off = arena.take(kd + 1);
  for (let c = 0; c < k; c++) off[theirs[c]! + 1]!++;
  for (let d = 0; d < kd; d++) off[d + 1]! += off[d]!;
  const list = arena.take(k);
  const fill = arena.copy(off);
  for (let c = 0; c < k; c++) list[fill[theirs[c]!]!++] = c;
  clock.tick(256 + 2 * k + kd);
  return [off, list];
}

/**
 * flatEdges' interned ranges, by lo * 256 + hi: the id where the stamp is this call's (a Map's
 * lookups were a fifth of flatEdges).
 */
const rangeIdOf = new Int32Array(1 << 16);
const rangeStampOf = new Int32Array(1 << 16);
let rangeStamp = 0;

/**
 * The NFA's edges in CSR form, byte edges labelled by interned ranges (rangeLo[r]..rangeHi[r]),
 * and the ranges "\n" and the lookaround sets add as class boundaries.
 */
function flatEdges(nfa: ByteNfa): {
  edgeOff: Int32Array;
  edgeRange: Int32Array;
  edgeTo: Int32Array;
  epsOff: Int32Array;
  epsTo: Int32Array;
  blockOf: Int32Array;
  rangeLo: number[];
  rangeHi: number[];
  partitions: Uint8Array[];
} {
  const nStates = nfa.size;
  const rangeLo: number[] = [];
  const rangeHi: number[] = [];
  if (rangeStamp === 0x7fffffff) {
    rangeStampOf.fill(0);
    rangeStamp = 0;
  }
  const stamp = ++rangeStamp;
  const internRange = (lo: number, hi: number): number => {
    const key = lo * 256 + hi;
    if (rangeStampOf[key] === stamp) return rangeIdOf[key]!;
    const id = rangeLo.length;
    rangeStampOf[key] = stamp;
    rangeIdOf[key] = id;
    rangeLo.push(lo);
    rangeHi.push(hi);
    return id;
  };
  // Embedded DFAs: their states' ε-edges to the exit, and their byte classes, which ours refine
  // (byteClasses). Their states have no edges of their own in the logs (checked below): each
  // block is read as a whole.
  const blocks = nfa.blocks;
  const blockOf = arena.take(nStates, -1);
  const seenDfas = new Set<ByteDfa>();
  const partitions: Uint8Array[] = [];
  let epsCount = 0;
  for (let b = 0; b < blocks.length; b++) {
    const { dfa, base } = blocks[b]!;
    blockOf.fill(b, base, base + dfa.numStates);
    for (let s = 0; s < dfa.numStates; s++) epsCount += dfa.accepting[s]!;
    if (!seenDfas.has(dfa)) {
      seenDfas.add(dfa);
      clock.tick(256);
      partitions.push(dfa.byteClass);
    }
  }
  // The logs in per-state order (a stable counting sort: each state's edges in the order added).
  const epsLog = nfa.epsLog.a;
  const epsLogged = nfa.epsLog.n;
  const edgeLog = nfa.edgeLog.a;
  const edgeCount = nfa.edgeLog.n >> 2;
  epsCount += epsLogged >> 1;
  const edgeOff = arena.take(nStates + 1);
  const edgeRange = arena.take(edgeCount);
  const edgeTo = arena.take(edgeCount);
  const epsOff = arena.take(nStates + 1);
  const epsTo = arena.take(epsCount);
  for (let i = 0; i < edgeCount; i++) {
    const from = edgeLog[4 * i]!;
    // A block's states read their DFA's table: an edge of their own would be passed over.
    if (blockOf[from] !== -1) throw new Error(`NFA state ${from} of an embedded DFA has an edge of its own`);
    edgeOff[from + 1]!++;
  }
  for (let i = 0; i < epsLogged; i += 2) epsOff[epsLog[i]! + 1]!++;
  for (let b = 0; b < blocks.length; b++) {
    const { dfa, base } = blocks[b]!;
    const accepting = dfa.accepting;
    for (let s = 0; s < dfa.numStates; s++) if (accepting[s] === 1) epsOff[base + s + 1]!++;
  }
  // The work is counted as it is done (a refusal comes as the count passes the limit): two per
  // state outside the blocks and one per block state (whose other is counted below), three per
  // edge, one per ε-edge, as when each state's own lists were read in turn.
  for (let q = 0; q < nStates; q++) {
    clock.tick(blockOf[q] === -1 ? 2 : 1);
    edgeOff[q + 1]! += edgeOff[q]!;
    epsOff[q + 1]! += epsOff[q]!;
  }
  const edgeFill = arena.copy(edgeOff);
  const epsFill = arena.copy(epsOff);
  for (let i = 0; i < edgeCount; i++) {
    const at = edgeFill[edgeLog[4 * i]!]!++;
    // A range is interned through a Map: a few units each.
    clock.tick(3);
    edgeRange[at] = internRange(edgeLog[4 * i + 1]!, edgeLog[4 * i + 2]!);
    edgeTo[at] = edgeLog[4 * i + 3]!;
  }
  for (let i = 0; i < epsLogged; i += 2) {
    clock.tick(1);
    epsTo[epsFill[epsLog[i]!]!++] = epsLog[i + 1]!;
  }
  for (let b = 0; b < blocks.length; b++) {
    const { dfa, base, exit } = blocks[b]!;
    const accepting = dfa.accepting;
    clock.tick(dfa.numStates);
    for (let s = 0; s < dfa.numStates; s++) if (accepting[s] === 1) epsTo[epsFill[base + s]!++] = exit;
  }
  if (nfa.hasAssertions) internRange(0x0a, 0x0a);
  // Lookaround byte sets become class boundaries, so a class is entirely inside or outside each.
  for (const set of nfa.assertSets) for (let i = 0; i < set.length; i += 2) internRange(set[i]!, set[i + 1]!);
  return { edgeOff, edgeRange, edgeTo, epsOff, epsTo, blockOf, rangeLo, rangeHi, partitions };
}

/** byteClasses' pair ids (class so far * 256 + an embedded DFA's class), where the stamp is the current one's. */
const pairIdOf = new Int32Array(1 << 16);
const pairStampOf = new Int32Array(1 << 16);
let pairStamp = 0;

/**
 * The partition of 0..255 refined by each embedded DFA's classes and by each range, its classes
 * numbered by their first byte. A DFA's classes are taken whole, not as the byte ranges of its
 * edges: a class of several runs (a string's characters around '"' and '\\') stays one class
 * where its runs, as ranges, were one each (MaskBench's DFAs: 11% fewer table cells, the same
 * states; a median band's compile −5%), and no pass over the DFA's table is needed. A class a
 * range covers only in part is split, the covered part under a new id; one it holds whole keeps
 * its id (partition refinement: at most 256 ids, counted in typed arrays).
 */
function byteClasses(
  rangeLo: readonly number[],
  rangeHi: readonly number[],
  partitions: readonly Uint8Array[],
): { classOfByte: Int32Array; k: number } {
  const byteClassRaw = arena.take(256);
  /** Bytes per class id; bytes of it the current range covers; the id its covered part takes. */
  const size = arena.take(256);
  const covered = arena.take(256);
  const splitTo = arena.take(256);
  size[0] = 256;
  let nextClassId = 1;
  if (partitions.length > 0) {
    // Each embedded DFA's classes first: a byte's class is the pair (its class so far, its
    // class there), renumbered densely after each.
    let count = 1;
    for (const theirs of partitions) {
      if (pairStamp === 0x7fffffff) {
        pairStampOf.fill(0);
        pairStamp = 0;
      }
      const stamp = ++pairStamp;
      count = 0;
      for (let b = 0; b < 256; b++) {
        const key = byteClassRaw[b]! * 256 + theirs[b]!;
        if (pairStampOf[key] !== stamp) {
          pairStampOf[key] = stamp;
          pairIdOf[key] = count++;
        }
        byteClassRaw[b] = pairIdOf[key]!;
      }
    }
    size[0] = 0;
    for (let b = 0; b < 256; b++) size[byteClassRaw[b]!]!++;
    nextClassId = count;
  }
  for (let r = 0; r < rangeLo.length; r++) {
    const lo = rangeLo[r]!;
    const hi = rangeHi[r]!;
    clock.tick(4 * (hi - lo + 1));
    for (let b = lo; b <= hi; b++) covered[byteClassRaw[b]!]!++;
    for (let b = lo; b <= hi; b++) {
      const old = byteClassRaw[b]!;
      const n = covered[old]!;
      if (n === 0) continue; // met before in this range: renamed or kept below
      covered[old] = 0;
      if (n < size[old]!) {
        size[old]! -= n;
        size[nextClassId] = n;
        splitTo[old] = nextClassId++;
      } else splitTo[old] = -1;
    }
    // Each byte read before it is renamed: the entries read are those set just above.
    for (let b = lo; b <= hi; b++) {
      const to = splitTo[byteClassRaw[b]!]!;
      if (to >= 0) byteClassRaw[b] = to;
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
  return { classOfByte, k: numIntervals };
}

/** Classes covered by each distinct range (CSR). */
function classesOfRanges(
  rangeLo: readonly number[],
  rangeHi: readonly number[],
  classOfByte: Int32Array,
  k: number,
): { rangeClassOff: Int32Array; rangeClasses: Int32Array } {
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
  return { rangeClassOff, rangeClasses: arena.copy(rangeClassList) };
}
