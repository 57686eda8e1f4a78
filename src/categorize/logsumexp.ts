/**
 * The normaliser of every row scoring reads: log Σ exp over a whole vocabulary of logits, and in
 * the same pass over the token sets read after a branch (membership bytes, one bit per set). The
 * script kernels here and their dispatch to the addon's.
 *
 * C++ counterpart: LogSumExp in native/kernels.cc (declared in native/kernels.h, which also states
 * its float/double precision); a membership byte gives it its limit of MAX_READ_SETS sets.
 * test/categorize-scoring.test.ts compares the two.
 */
import { nativeRowKernels, type LogSumExpKernel } from "../model/index.js";

/** Token sets read after a branch, at most (one bit each in a membership byte). */
export const MAX_READ_SETS = 8;
const memberships = new WeakMap<readonly Int32Array[], Uint8Array>();

/** Per token, bit k set when the token is in sets[k]; cached per sets array (fixed per vocabulary). */
export function setMembership(sets: readonly Int32Array[], vocabSize: number): Uint8Array {
  let m = memberships.get(sets);
  if (m === undefined || m.length !== vocabSize) {
    if (sets.length > MAX_READ_SETS) throw new RangeError(`at most ${MAX_READ_SETS} token sets can be read after a branch`);
    m = new Uint8Array(vocabSize);
    sets.forEach((set, k) => {
      for (let i = 0; i < set.length; i++) m![set[i]!]! |= 1 << k;
    });
    memberships.set(sets, m);
  }
  return m;
}

// The normaliser of every row read (a whole vocabulary of exps) runs in the addon when it is
// built (native/kernels.h: AVX2, exp in float, sums in double; these loops' Math.exp cost about
// 1 ms a row at 152k here, several on a GPU host's slower cores). Both agree to ~1e-7.
// Chosen on first use (the addon is loaded then, not when this module is imported), or by
// useLogSumExpKernel.
let nativeLogSumExp: LogSumExpKernel | null | undefined;

/** Which normaliser scoring uses: the addon's ("native", default when built) or these loops. */
export function useLogSumExpKernel(kind: "native" | "script"): boolean {
  nativeLogSumExp = kind === "native" ? (nativeRowKernels()?.logSumExp ?? null) : null;
  return nativeLogSumExp !== null;
}

export function logSumExpOf(logits: Float32Array, membership: Uint8Array | null, numSets: number, out: Float64Array | null): number {
  if (nativeLogSumExp === undefined) nativeLogSumExp = nativeRowKernels()?.logSumExp ?? null;
  if (nativeLogSumExp) return nativeLogSumExp(logits, membership, numSets, out);
  return membership && out ? logSumExpWithSets(logits, membership, numSets, out) : logSumExp(logits);
}

/**
 * log Σ exp over all logits, and into out[k] log Σ exp over the tokens of set k, in one pass
 * (NaN counts as -Infinity; an empty or all -Infinity set gives -Infinity).
 */
export function logSumExpWithSets(logits: Float32Array, membership: Uint8Array, numSets: number, out: Float64Array): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > max) max = v;
  }
  if (!Number.isFinite(max)) {
    out.fill(max, 0, numSets);
    return max;
  }
  const sums = out;
  sums.fill(0, 0, numSets);
  let total = 0;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v !== v) continue;
    const e = Math.exp(v - max);
    total += e;
    const bits = membership[i]!;
    if (bits !== 0) {
      for (let k = 0; k < numSets; k++) if (bits & (1 << k)) sums[k]! += e;
    }
  }
  for (let k = 0; k < numSets; k++) sums[k] = max + Math.log(sums[k]!);
  return max + Math.log(total);
}

/** log Σ exp(x) over all logits, in doubles (NaN counts as -Infinity). */
export function logSumExp(logits: Float32Array): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > max) max = v;
  }
  if (!Number.isFinite(max)) return max;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v === v) sum += Math.exp(v - max);
  }
  return max + Math.log(sum);
}
