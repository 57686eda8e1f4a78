// Alphabet compression, the subset construction's first phase: the NFA's byte-range edges in
// flat (CSR) tables, and the partition of the 256 bytes into the classes no edge, '$' or
// lookaround set tells apart, so the construction steps per class instead of per byte.

import { regexClock } from "../clock.js";
import type { ByteNfa } from "../nfa.js";
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
}

/**
 * Alphabet compression: bytes that every NFA edge treats alike share a class. Refine the
 * partition of 0..255 by each distinct edge range.
 */
export function compressAlphabet(nfa: ByteNfa): ClassedNfa {
  const edges = flatEdges(nfa);
  const { rangeLo, rangeHi } = edges;
  const { classOfByte, k } = byteClasses(rangeLo, rangeHi);
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
  const { edgeOff, edgeRange, edgeTo, epsOff, epsTo } = edges;
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
  };
}

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
  rangeLo: number[];
  rangeHi: number[];
} {
  const nStates = nfa.size;
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
  return { edgeOff, edgeRange, edgeTo, epsOff, epsTo, rangeLo, rangeHi };
}

/** The partition of 0..255 refined by each range, its classes numbered by their first byte. */
function byteClasses(rangeLo: readonly number[], rangeHi: readonly number[]): { classOfByte: Int32Array; k: number } {
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
