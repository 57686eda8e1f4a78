/**
 * The gather pass: the one read of the whole vocabulary per token, which gathers the allowed
 * candidates into the scratch arrays (greedy's argmax, top_k's heap, or every candidate), and its
 * dispatch between the addon's loop and the script loops here.
 *
 * C++ counterpart: native/gather-loop.inc is gatherGreedy/gatherTopK/gatherAll below, candidate
 * for candidate (same order, same heap, same state); native/kernels.cc includes it (plain and
 * AVX2) next to its SiftDown and GatherCandidates, the dispatch on the mode; native/kernels.h
 * declares GatherMode (GATHER_GREEDY/TOP_K/ALL here) and GatherState (gatherState here).
 * test/sampling-sampler.test.ts holds the two side by side and compares the tokens drawn.
 *
 * Cost model (152k vocabulary): one pass over the mask words gathers the allowed candidates
 * into scratch arrays (zero words skipped, full words looped directly, other set bits found with
 * Math.clz32); the seen (penalised) tokens are cleared from each word and added afterwards with
 * their penalty (gatherPenalised, in script for both kernels), so the caller's logits (a zero-copy
 * view of llama.cpp's buffer) are never written and the per-token loop has no penalty branch.
 * Greedy and top_k keep a rising floor (best / k-th best so far, a bounded min-heap) so only a
 * few hundred candidates are stored.
 */
import { nativeRowKernels, type GatherCandidatesKernel } from "../model/index.js";
import { maskWords } from "../support/index.js";
import type { Scratch } from "./scratch.js";

// The gather pass (one read of the whole vocabulary per token) runs in the addon when it is
// built: native/kernels.cc is the same loop as gatherGreedy/gatherTopK/gatherAll below, candidate
// for candidate, with AVX2 skipping groups of 8 logits that cannot enter. On a GPU the decode
// takes about a millisecond and the script loop was most of each step (bench/gpu/README.md).
// Chosen on first use (the addon is loaded then, not when this module is imported), or by
// useGatherKernel.
let nativeGather: GatherCandidatesKernel | null | undefined;
const gatherState = new Float64Array(4);

/**
 * Which gather loop sample() runs: "native" (the addon's, when built; the default) or "script"
 * (the TypeScript one). Both give the same tokens; tests and benches compare them.
 */
export function useGatherKernel(kind: "native" | "script"): boolean {
  nativeGather = kind === "native" ? (nativeRowKernels()?.gather ?? null) : null;
  return nativeGather !== null;
}

/** The gather kernel, chosen on first need: the addon's when it is built. */
export function gatherKernel(): GatherCandidatesKernel | null {
  if (nativeGather === undefined) nativeGather = nativeRowKernels()?.gather ?? null;
  return nativeGather;
}

export function gatherKernelInUse(): "native-avx2" | "native" | "script" {
  if (!gatherKernel()) return "script";
  return nativeRowKernels()?.avx2 ? "native-avx2" : "native";
}

/**
 * Results of the gather functions, and softmaxBucketed's total (module state: sampling is
 * synchronous and never nested).
 */
export const gathered = { count: 0, maxValue: -Infinity, argmax: -1, floor: -Infinity, total: 0 };

// The gather loops visit the mask word by word: zero words are skipped, full words looped
// directly, other set bits found with Math.clz32; `exclude` (the penalised tokens) is cleared
// from each word first. They are separate small functions, one per mode, so that V8 optimises
// each with complete type feedback (one big function deoptimised over and over).

export const GATHER_GREEDY = 0;
export const GATHER_TOP_K = 1;
export const GATHER_ALL = 2;

/** The TypeScript gather pass (mode as the kernel's: 0 greedy, 1 top_k over k, 2 all). */
export function gatherScript(
  mode: 0 | 1 | 2,
  logits: Float32Array,
  mask: Uint32Array | null,
  exclude: Uint32Array | null,
  n: number,
  scratch: Scratch,
  k: number,
): void {
  if (mode === GATHER_GREEDY) gatherGreedy(logits, mask, exclude, n, scratch);
  else if (mode === GATHER_TOP_K) gatherTopK(logits, mask, exclude, n, scratch, k);
  else gatherAll(logits, mask, exclude, n, scratch);
}

/**
 * gatherScript behind the kernel's signature, so tests can hold the two side by side candidate
 * for candidate (scratch arrays are the caller's).
 */
export const gatherCandidatesScript: GatherCandidatesKernel = (mode, logits, mask, exclude, n, k, ids, values, heap, state) => {
  gathered.count = state[0]!;
  gathered.maxValue = state[1]!;
  gathered.argmax = state[2]!;
  gathered.floor = -Infinity;
  gatherScript(mode, logits, mask, exclude, n, { ids, values, heap } as Scratch, k);
  state[0] = gathered.count;
  state[1] = gathered.maxValue;
  state[2] = gathered.argmax;
  state[3] = gathered.floor;
};

/** The addon's gather pass (gatherScript's arguments) into the same scratch and state. */
export function gatherNative(
  mode: 0 | 1 | 2,
  logits: Float32Array,
  mask: Uint32Array | null,
  exclude: Uint32Array | null,
  n: number,
  scratch: Scratch,
  k: number,
): void {
  const state = gatherState;
  state[0] = gathered.count;
  state[1] = gathered.maxValue;
  state[2] = gathered.argmax;
  state[3] = -Infinity;
  nativeGather!(mode, logits, mask, exclude, n, k, scratch.ids, scratch.values, scratch.heap, state);
  gathered.count = state[0]!;
  gathered.maxValue = state[1]!;
  gathered.argmax = state[2]!;
  gathered.floor = state[3]!;
}

/** Greedy: only candidates at least as good as the best so far are stored. */
function gatherGreedy(logits: Float32Array, mask: Uint32Array | null, exclude: Uint32Array | null, n: number, scratch: Scratch): void {
  const { ids, values } = scratch;
  let count = gathered.count;
  let maxValue = gathered.maxValue;
  let argmax = gathered.argmax;
  const words = maskWords(n);
  for (let w = 0; w < words; w++) {
    let bits = mask ? mask[w]! | 0 : -1;
    if (exclude) bits &= ~exclude[w]!;
    if (bits === 0) continue;
    const base = w << 5;
    if (bits === -1 && base + 32 <= n) {
      for (let id = base; id < base + 32; id++) {
        const v: number = logits[id]!;
        if (v > maxValue) {
          maxValue = v;
          argmax = id;
        }
      }
      continue;
    }
    while (bits !== 0) {
      const low = bits & -bits;
      const id = base + 31 - Math.clz32(low);
      bits ^= low;
      if (id >= n) break;
      const v: number = logits[id]!;
      if (v > maxValue) {
        maxValue = v;
        argmax = id;
      }
    }
  }
  if (argmax >= 0) {
    ids[count] = argmax;
    values[count++] = maxValue;
  }
  gathered.count = count;
  gathered.maxValue = maxValue;
  gathered.argmax = argmax;
  gathered.floor = maxValue;
}

/** top_k: a min-heap of the k best so far; candidates below its minimum are never stored. */
function gatherTopK(
  logits: Float32Array,
  mask: Uint32Array | null,
  exclude: Uint32Array | null,
  n: number,
  scratch: Scratch,
  k: number,
): void {
  const { ids, values, heap } = scratch;
  let count = gathered.count;
  let maxValue = gathered.maxValue;
  let argmax = gathered.argmax;
  let floor = -Infinity;
  const words = maskWords(n);
  for (let w = 0; w < words; w++) {
    let bits = mask ? mask[w]! | 0 : -1;
    if (exclude) bits &= ~exclude[w]!;
    if (bits === 0) continue;
    const base = w << 5;
    if (bits === -1 && base + 32 <= n) {
      for (let id = base; id < base + 32; id++) {
        const v: number = logits[id]!;
        if (v >= floor && v !== -Infinity) {
          ids[count] = id;
          values[count++] = v;
          if (v > maxValue) {
            maxValue = v;
            argmax = id;
          }
          if (v > heap[0]!) {
            heap[0] = v;
            siftDown(heap, 0, k);
            floor = heap[0]!;
          }
        }
      }
      continue;
    }
    while (bits !== 0) {
      const low = bits & -bits;
      const id = base + 31 - Math.clz32(low);
      bits ^= low;
      if (id >= n) break;
      const v: number = logits[id]!;
      if (v >= floor && v !== -Infinity) {
        ids[count] = id;
        values[count++] = v;
        if (v > maxValue) {
          maxValue = v;
          argmax = id;
        }
        if (v > heap[0]!) {
          heap[0] = v;
          siftDown(heap, 0, k);
          floor = heap[0]!;
        }
      }
    }
  }
  gathered.count = count;
  gathered.maxValue = maxValue;
  gathered.argmax = argmax;
  gathered.floor = floor;
}

/** No top_k: every candidate with a probability above zero is stored. */
function gatherAll(logits: Float32Array, mask: Uint32Array | null, exclude: Uint32Array | null, n: number, scratch: Scratch): void {
  const { ids, values } = scratch;
  let count = gathered.count;
  let maxValue = gathered.maxValue;
  let argmax = gathered.argmax;
  const words = maskWords(n);
  for (let w = 0; w < words; w++) {
    let bits = mask ? mask[w]! | 0 : -1;
    if (exclude) bits &= ~exclude[w]!;
    if (bits === 0) continue;
    const base = w << 5;
    if (bits === -1 && base + 32 <= n) {
      for (let id = base; id < base + 32; id++) {
        const v: number = logits[id]!;
        if (v > -Infinity) {
          ids[count] = id;
          values[count++] = v;
          if (v > maxValue) {
            maxValue = v;
            argmax = id;
          }
        }
      }
      continue;
    }
    while (bits !== 0) {
      const low = bits & -bits;
      const id = base + 31 - Math.clz32(low);
      bits ^= low;
      if (id >= n) break;
      const v: number = logits[id]!;
      if (v > -Infinity) {
        ids[count] = id;
        values[count++] = v;
        if (v > maxValue) {
          maxValue = v;
          argmax = id;
        }
      }
    }
  }
  gathered.count = count;
  gathered.maxValue = maxValue;
  gathered.argmax = argmax;
  gathered.floor = -Infinity;
}

/**
 * Adds the seen tokens with the CTRL penalty. topK: -1 greedy, 0 keep all, k the heap size.
 * Ties go to the lowest id, as if the ids had been visited in order.
 */
export function gatherPenalised(
  logits: Float32Array,
  mask: Uint32Array | null,
  seenIds: readonly number[],
  penalty: number,
  scratch: Scratch,
  topK: number,
): void {
  const { ids, values, heap } = scratch;
  let count = gathered.count;
  let maxValue = gathered.maxValue;
  let argmax = gathered.argmax;
  let floor = gathered.floor;
  for (let s = 0; s < seenIds.length; s++) {
    const id = seenIds[s]!;
    if (mask && (mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
    let v: number = logits[id]!;
    v = v > 0 ? v / penalty : v * penalty;
    if (!(v >= floor && v !== -Infinity)) continue;
    if (v > maxValue || (v === maxValue && id < argmax)) {
      maxValue = v;
      argmax = id;
      if (topK < 0) floor = v;
    }
    if (topK < 0) continue; // greedy keeps just the argmax
    ids[count] = id;
    values[count++] = v;
    if (topK > 0 && v > heap[0]!) {
      heap[0] = v;
      siftDown(heap, 0, topK);
      floor = heap[0]!;
    }
  }
  if (topK < 0 && argmax >= 0) {
    // greedy stores only the winner
    count = 0;
    ids[count] = argmax;
    values[count++] = maxValue;
  }
  gathered.count = count;
  gathered.maxValue = maxValue;
  gathered.argmax = argmax;
  gathered.floor = floor;
}

function siftDown(heap: Float64Array, start: number, size: number): void {
  let i = start;
  const v = heap[i]!;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= size) break;
    if (child + 1 < size && heap[child + 1]! < heap[child]!) child++;
    if (heap[child]! >= v) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = v;
}
