/**
 * What follows the gather, over the few candidates it kept: top_k's cut (ties with the k-th
 * included), the softmax, top_p's nucleus cut and the draws.
 *
 * The softmax uses a table-based exp (Math.exp and Math.round are several times slower) over the
 * kept candidates only, and top_p finds its cut through 1/32-octave probability buckets plus a
 * weighted quickselect of the one bucket where the cut falls — no sort. The draws walk the kept
 * candidates in a fixed order with one xoshiro128** double per token, so the same seed, inputs
 * and history give the same token.
 */
import { gathered } from "./gather.js";
import type { Xoshiro128 } from "./rng.js";
import { NUCLEUS_BUCKETS, type Scratch } from "./scratch.js";

// exp(x) for x <= 0 without Math.exp (which costs several times more over 152k candidates):
// x = -(m/32)·ln2 + r with |r| <= ln2/64, so exp(x) = 2^-(m>>5) · 2^-((m&31)/32) · exp(r), the
// first two from tables and exp(r) by its degree-4 Taylor polynomial (relative error < 2e-12,
// far finer than the float32 softmax HF computes). m orders probabilities in 1/32-octave buckets,
// which is how top_p finds its cut without sorting.
const EXP_SCALE = 32 * Math.LOG2E; // 32 / ln 2
const LN2_32_HI = 0.6931471803691238 / 32;
const LN2_32_LO = 1.9082149292705877e-10 / 32;
const EXP_UNDERFLOW = -745.1332191019411;
const EXP_BUCKETS = 1077;
const POW2_NEG = (() => {
  const t = new Float64Array(EXP_BUCKETS);
  for (let i = 0; i < EXP_BUCKETS; i++) t[i] = 2 ** -i;
  return t;
})();
const POW2_NEG_FRACTION = (() => {
  const t = new Float64Array(32);
  for (let j = 0; j < 32; j++) t[j] = 2 ** (-j / 32);
  return t;
})();

/** Below this many items the top_p selection finishes with an insertion sort. */
const SMALL_SELECT = 48;

/** Keeps the candidates scoring at least `threshold`; returns the new count. */
export function keepAtLeast(scratch: Scratch, count: number, threshold: number): number {
  const { ids, values } = scratch;
  let kept = 0;
  for (let i = 0; i < count; i++) {
    const v = values[i]!;
    if (v >= threshold) {
      ids[kept] = ids[i]!;
      values[kept++] = v;
    }
  }
  return kept;
}

/** probs[i] = exp((values[i] - max) / T) with the table-based exp; returns the sum. */
export function softmax(scratch: Scratch, count: number, maxValue: number, invTemperature: number): number {
  const { values, probs } = scratch;
  let total = 0;
  for (let i = 0; i < count; i++) {
    const x = (values[i]! - maxValue) * invTemperature;
    let p = 0;
    if (x >= EXP_UNDERFLOW) {
      const m = (x * -EXP_SCALE + 0.5) | 0; // round(-x·32/ln2) in [0, 34400]; Math.round is ~3x slower here
      const r = x + m * LN2_32_HI + m * LN2_32_LO;
      p = (1 + r * (1 + r * (0.5 + r * (1 / 6 + r * (1 / 24))))) * POW2_NEG_FRACTION[m & 31]! * POW2_NEG[m >> 5]!;
    }
    probs[i] = p;
    total += p;
  }
  return total;
}

/** softmax() that also records each candidate's bucket m and the mass per bucket; returns the last bucket used. */
export function softmaxBucketed(scratch: Scratch, count: number, maxValue: number, invTemperature: number): number {
  const { values, probs, bucket, bucketMass } = scratch;
  let total = 0;
  let lastBucket = 0;
  for (let i = 0; i < count; i++) {
    const x = (values[i]! - maxValue) * invTemperature;
    let p = 0;
    let m = NUCLEUS_BUCKETS - 1;
    if (x >= EXP_UNDERFLOW) {
      m = (x * -EXP_SCALE + 0.5) | 0;
      const r = x + m * LN2_32_HI + m * LN2_32_LO;
      p = (1 + r * (1 + r * (0.5 + r * (1 / 6 + r * (1 / 24))))) * POW2_NEG_FRACTION[m & 31]! * POW2_NEG[m >> 5]!;
    }
    probs[i] = p;
    total += p;
    bucket[i] = m;
    bucketMass[m]! += p;
    if (m > lastBucket) lastBucket = m;
  }
  gathered.total = total;
  return lastBucket;
}

/** The candidate where the running sum of probs passes r, or -1. */
export function drawFrom(scratch: Scratch, count: number, r: number): number {
  const { ids, probs } = scratch;
  for (let i = 0; i < count; i++) {
    r -= probs[i]!;
    if (r < 0) return ids[i]!;
  }
  return -1;
}

/**
 * top_p: draws from the smallest set of most probable candidates whose mass reaches
 * topP * total (HF keeps a token iff the mass strictly before it, in descending order, is
 * below top_p). Buckets settle every candidate except those in the bucket where the
 * cumulative mass crosses the target; a weighted quickselect orders just that bucket.
 */
export function drawNucleus(scratch: Scratch, count: number, total: number, lastBucket: number, topP: number, rng: Xoshiro128): number {
  const { ids, probs, order, bucket, bucketMass } = scratch;
  const target = topP * total;
  let crossing = lastBucket;
  let massAbove = 0; // mass of the buckets before `crossing`
  for (let b = 0; b <= lastBucket; b++) {
    const m = bucketMass[b]!;
    if (massAbove + m >= target) {
      crossing = b;
      break;
    }
    massAbove += m;
  }
  bucketMass.fill(0, 0, lastBucket + 1);
  // order = [settled: buckets before the crossing ... | ... crossing bucket, filled from the end]
  let settled = 0;
  let crossingStart = count;
  for (let i = 0; i < count; i++) {
    const b = bucket[i]!;
    if (b < crossing) order[settled++] = i;
    else if (b === crossing) order[--crossingStart] = i;
  }
  const crossingEnd = selectMass(scratch, crossingStart, count, massAbove, target);

  let keptMass = 0;
  for (let i = 0; i < settled; i++) keptMass += probs[order[i]!]!;
  for (let i = crossingStart; i < crossingEnd; i++) keptMass += probs[order[i]!]!;
  let r = rng.nextDouble() * keptMass;
  for (let i = 0; i < settled; i++) {
    const o = order[i]!;
    r -= probs[o]!;
    if (r < 0) return ids[o]!;
  }
  for (let i = crossingStart; i < crossingEnd; i++) {
    const o = order[i]!;
    r -= probs[o]!;
    if (r < 0) return ids[o]!;
  }
  return ids[order[settled > 0 ? 0 : crossingStart]!]!;
}

/**
 * Reorders order[lo, hi) so the most probable come first and returns the end of the shortest
 * such prefix at which massAbove plus its mass reaches target (hi if it never does).
 */
function selectMass(scratch: Scratch, lo: number, hi: number, massAbove: number, target: number): number {
  const { probs, order } = scratch;
  for (;;) {
    if (hi - lo <= SMALL_SELECT) {
      for (let i = lo + 1; i < hi; i++) {
        const o = order[i]!;
        const p = probs[o]!;
        let j = i - 1;
        while (j >= lo && probs[order[j]!]! < p) {
          order[j + 1] = order[j]!;
          j--;
        }
        order[j + 1] = o;
      }
      for (let i = lo; i < hi; i++) {
        massAbove += probs[order[i]!]!;
        if (massAbove >= target) return i + 1;
      }
      return hi;
    }
    // Three-way partition of [lo, hi) around a median-of-three pivot: > | == | <.
    const a = probs[order[lo]!]!;
    const b = probs[order[(lo + hi) >>> 1]!]!;
    const c = probs[order[hi - 1]!]!;
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
    let gt = lo; // [lo, gt): > pivot
    let i = lo; // [gt, i): == pivot
    let lt = hi; // [lt, hi): < pivot
    let massGreater = 0;
    let equalCount = 0;
    while (i < lt) {
      const o = order[i]!;
      const p = probs[o]!;
      if (p > pivot) {
        order[i] = order[gt]!;
        order[gt++] = o;
        massGreater += p;
        i++;
      } else if (p < pivot) {
        order[i] = order[--lt]!;
        order[lt] = o;
      } else {
        equalCount++;
        i++;
      }
    }
    if (massAbove + massGreater >= target) {
      hi = gt;
      continue;
    }
    const massEqual = equalCount * pivot;
    if (massAbove + massGreater + massEqual >= target) {
      const need = Math.ceil((target - massAbove - massGreater) / pivot);
      return gt + Math.min(Math.max(need, 1), equalCount);
    }
    massAbove += massGreater + massEqual;
    lo = lt;
    if (lo >= hi) return hi;
  }
}

/** Some allowed logits are +Infinity: a uniform draw over exactly those (the limit of the softmax). */
export function drawUniformOverInfinite(scratch: Scratch, count: number, rng: Xoshiro128): number {
  const { ids, values } = scratch;
  let m = 0;
  for (let i = 0; i < count; i++) if (values[i] === Infinity) ids[m++] = ids[i]!;
  return ids[Math.min(m - 1, Math.floor(rng.nextDouble() * m))]!;
}
