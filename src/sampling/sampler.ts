/**
 * Masked token sampling with Hugging Face transformers semantics:
 * repetition_penalty (CTRL) → temperature → top_k → top_p → multinomial draw; temperature 0 is
 * greedy (argmax after the repetition penalty, lowest id on ties, like torch.argmax).
 *
 * Only tokens whose bit is set in the mask can be returned, whatever the knobs or logits:
 * NaN counts as -Infinity; when every allowed token has zero probability (all -Infinity/NaN, or a
 * penalty overflowing to -Infinity) the sampler falls back deterministically to the allowed token
 * with the highest raw logit (lowest id on ties, lowest allowed id if none is comparable). An
 * empty mask is a caller bug and throws EmptyMaskError. If some allowed logits are +Infinity, the
 * draw is uniform over exactly those tokens (the limit of the softmax).
 *
 * Arithmetic is in doubles (HF works in float32), so at an exact top_p boundary — the kept mass
 * equal to top_p to the last bit — the two can differ by that one boundary token. The draw walks
 * the kept candidates in a fixed order with one xoshiro128** double per token: the same seed,
 * inputs and history give the same token.
 *
 * Cost model (152k vocabulary): one pass over the mask words gathers the allowed candidates
 * into scratch arrays (zero words skipped, full words looped directly, other set bits found with
 * Math.clz32); the seen (penalised) tokens are cleared from each word and added afterwards with
 * their penalty, so the caller's logits (a zero-copy view of llama.cpp's buffer) are never
 * written and the per-token loop has no penalty branch. Greedy and top_k keep a rising floor
 * (best / k-th best so far, a bounded min-heap) so only a few hundred candidates are stored.
 * The softmax uses a table-based exp (Math.exp and Math.round are several times slower) over the
 * kept candidates only, and top_p finds its cut through 1/32-octave probability buckets plus a
 * weighted quickselect of the one bucket where the cut falls — no sort. Scratch arrays are
 * shared by all samplers of one vocabulary size (sampling is synchronous, so calls never
 * overlap) and nothing is allocated per call.
 */
import { nativeRowKernels, type GatherCandidatesKernel } from "../model/index.js";
import { Xoshiro128 } from "./rng.js";
import { maskWords } from "../support/index.js";

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
function gatherKernel(): GatherCandidatesKernel | null {
  if (nativeGather === undefined) nativeGather = nativeRowKernels()?.gather ?? null;
  return nativeGather;
}

export function gatherKernelInUse(): "native-avx2" | "native" | "script" {
  if (!gatherKernel()) return "script";
  return nativeRowKernels()?.avx2 ? "native-avx2" : "native";
}

/** The knobs; structurally the same as generate/'s SamplingOptions. */
export interface SamplingParams {
  /** 0 = greedy; otherwise logits are divided by it. */
  temperature: number;
  /** Keep the k highest-scoring tokens (all tokens tied with the k-th too, as HF does); 0 = off. */
  topK: number;
  /** Keep the smallest set of most probable tokens whose probability reaches top_p; 1 = off. */
  topP: number;
  /** CTRL penalty over the prompt and generated tokens; 1 = off. */
  repetitionPenalty: number;
  /** Same seed + same inputs → same tokens. Omitted: a random seed. */
  seed?: number;
}

export class SamplingParamsError extends Error {
  constructor(
    readonly field: keyof SamplingParams,
    message: string,
  ) {
    super(message);
    this.name = "SamplingParamsError";
  }
}

export class EmptyMaskError extends Error {
  constructor() {
    super("token mask allows no token");
    this.name = "EmptyMaskError";
  }
}

/** Throws SamplingParamsError unless the parameters are usable. */
export function validateSamplingParams(p: SamplingParams): void {
  if (!(Number.isFinite(p.temperature) && p.temperature >= 0)) {
    throw new SamplingParamsError("temperature", `temperature must be a finite number >= 0, got ${p.temperature}`);
  }
  if (!(Number.isInteger(p.topK) && p.topK >= 0)) {
    throw new SamplingParamsError("topK", `top_k must be an integer >= 0, got ${p.topK}`);
  }
  if (!(p.topP > 0 && p.topP <= 1)) {
    throw new SamplingParamsError("topP", `top_p must be in (0, 1], got ${p.topP}`);
  }
  if (!(Number.isFinite(p.repetitionPenalty) && p.repetitionPenalty > 0)) {
    throw new SamplingParamsError("repetitionPenalty", `repetition_penalty must be a finite number > 0, got ${p.repetitionPenalty}`);
  }
  if (p.seed !== undefined && !Number.isFinite(p.seed)) {
    throw new SamplingParamsError("seed", `seed must be a finite number, got ${p.seed}`);
  }
}


class Scratch {
  /** Candidate token ids, then (after top_k) the kept ones. */
  readonly ids: Int32Array;
  /** Candidate scores (penalised logits), doubles so nothing overflows to ±Infinity. */
  readonly values: Float64Array;
  /** Unnormalised probabilities of the kept candidates. */
  readonly probs: Float64Array;
  /** top_k min-heap, then top_p work order (positions into probs). */
  readonly heap: Float64Array;
  readonly order: Int32Array;
  /** Probability bucket per candidate for top_p: round(-log2(p)·32), 0 = the best. */
  readonly bucket: Uint16Array;
  /** Mass per bucket; all zero between calls (drawNucleus clears what it used). */
  readonly bucketMass = new Float64Array(NUCLEUS_BUCKETS);
  constructor(size: number) {
    this.bucket = new Uint16Array(size);
    this.ids = new Int32Array(size);
    this.values = new Float64Array(size);
    this.probs = new Float64Array(size);
    this.heap = new Float64Array(size);
    this.order = new Int32Array(size);
  }
}

const scratchBySize = new Map<number, Scratch>();
function sharedScratch(size: number): Scratch {
  let s = scratchBySize.get(size);
  if (!s) {
    s = new Scratch(size);
    scratchBySize.set(size, s);
  }
  return s;
}

// exp(x) for x <= 0 without Math.exp (which costs several times more over 152k candidates):
// x = -(m/32)·ln2 + r with |r| <= ln2/64, so exp(x) = 2^-(m>>5) · 2^-((m&31)/32) · exp(r), the
// first two from tables and exp(r) by its degree-4 Taylor polynomial (relative error < 2e-12,
// far finer than the float32 softmax HF computes). m orders probabilities in 1/32-octave buckets,
// which is how top_p finds its cut without sorting.
const EXP_SCALE = 32 * 1.4426950408889634; // 32 / ln 2
const LN2_32_HI = 0.6931471803691238 / 32;
const LN2_32_LO = 1.9082149292705877e-10 / 32;
const EXP_UNDERFLOW = -745.1332191019411;
const EXP_BUCKETS = 1077;
/** m ranges over [0, 34400]; the last bucket holds the candidates whose exp underflows to 0. */
const NUCLEUS_BUCKETS = 34402;
const POW2_NEG = (() => {
  const t = new Float64Array(EXP_BUCKETS);
  for (let i = 0; i < EXP_BUCKETS; i++) t[i] = Math.pow(2, -i);
  return t;
})();
const POW2_NEG_FRACTION = (() => {
  const t = new Float64Array(32);
  for (let j = 0; j < 32; j++) t[j] = Math.pow(2, -j / 32);
  return t;
})();

/** Below this many items the top_p selection finishes with an insertion sort. */
const SMALL_SELECT = 48;

export class Sampler {
  readonly vocabSize: number;
  readonly params: Readonly<SamplingParams>;
  private readonly rng: Xoshiro128;
  private readonly scratch: Scratch;
  /** Bit set (mask layout) of the tokens in the prompt or generated so far: the penalised ones. */
  private readonly seenBits: Uint32Array;
  private readonly seenIds: number[] = [];

  constructor(vocabSize: number, params: SamplingParams) {
    if (!(Number.isInteger(vocabSize) && vocabSize > 0)) throw new RangeError(`bad vocabulary size ${vocabSize}`);
    validateSamplingParams(params);
    if (!warmedUp) warmUp();
    this.vocabSize = vocabSize;
    this.params = { ...params };
    this.rng = new Xoshiro128(params.seed);
    this.scratch = sharedScratch(vocabSize);
    this.seenBits = new Uint32Array(maskWords(vocabSize));
  }

  /** Forgets the penalty history and starts it with `promptTokens`. The RNG stream continues. */
  reset(promptTokens?: ArrayLike<number>): void {
    for (const id of this.seenIds) this.seenBits[id >>> 5] = 0;
    this.seenIds.length = 0;
    if (promptTokens) this.acceptAll(promptTokens);
  }

  /** Records a prompt or generated token for the repetition penalty. */
  accept(token: number): void {
    if (!(token >= 0 && token < this.vocabSize)) return;
    const bit = 1 << (token & 31);
    if ((this.seenBits[token >>> 5]! & bit) === 0) {
      this.seenBits[token >>> 5]! |= bit;
      this.seenIds.push(token);
    }
  }

  acceptAll(tokens: ArrayLike<number>): void {
    for (let i = 0; i < tokens.length; i++) this.accept(tokens[i]!);
  }

  /** Distinct tokens the repetition penalty applies to. */
  get historySize(): number {
    return this.seenIds.length;
  }

  /**
   * Picks the next token from `logits` (read only) among the tokens allowed by `mask`
   * (null = every token). Does not record the token: call accept() with what is decoded.
   */
  sample(logits: Float32Array, mask: Uint32Array | null = null): number {
    const n = this.vocabSize;
    if (logits.length < n) throw new RangeError(`logits have ${logits.length} entries, vocabulary ${n}`);
    if (mask && mask.length < maskWords(n)) throw new RangeError(`mask has ${mask.length} words, need ${maskWords(n)}`);
    const scratch = this.scratch;
    const penalty = this.params.repetitionPenalty;
    const penalize = penalty !== 1 && this.seenIds.length > 0;
    const exclude = penalize ? this.seenBits : null;
    const temperature = this.params.temperature;
    const invTemperature = 1 / temperature;
    const greedy = temperature === 0 || !Number.isFinite(invTemperature);
    const topK = greedy ? 0 : this.params.topK;

    // Gather the allowed candidates with a probability above zero (see the gather functions);
    // seen tokens are left out of that pass and added with their penalty afterwards.
    gathered.count = 0;
    gathered.maxValue = -Infinity;
    gathered.argmax = -1;
    gathered.floor = -Infinity;
    const mode = greedy ? GATHER_GREEDY : topK > 0 && topK < n ? GATHER_TOP_K : GATHER_ALL;
    if (mode === GATHER_TOP_K) scratch.heap.fill(-Infinity, 0, topK);
    (gatherKernel() ? gatherNative : gatherScript)(mode, logits, mask, exclude, n, scratch, topK);
    if (penalize) gatherPenalised(logits, mask, this.seenIds, penalty, scratch, mode === GATHER_GREEDY ? -1 : mode === GATHER_TOP_K ? topK : 0);

    let count = gathered.count;
    if (count === 0) return this.fallback(logits, mask);
    if (count === 1 || greedy) return gathered.argmax;
    const maxValue = gathered.maxValue;
    if (maxValue === Infinity) return this.uniformOverInfinite(count);
    // HF keeps every token scoring at least the k-th best (ties included).
    if (topK > 0 && topK < n) count = keepAtLeast(scratch, count, scratch.heap[0]!);

    if (this.params.topP < 1) {
      const lastBucket = softmaxBucketed(scratch, count, maxValue, invTemperature);
      return this.drawNucleus(count, gathered.total, lastBucket);
    }
    const total = softmax(scratch, count, maxValue, invTemperature);
    const id = drawFrom(scratch, count, this.rng.nextDouble() * total);
    return id >= 0 ? id : gathered.argmax; // rounding left the draw past the last candidate
  }

  /**
   * top_p: draws from the smallest set of most probable candidates whose mass reaches
   * topP * total (HF keeps a token iff the mass strictly before it, in descending order, is
   * below top_p). Buckets settle every candidate except those in the bucket where the
   * cumulative mass crosses the target; a weighted quickselect orders just that bucket.
   */
  private drawNucleus(count: number, total: number, lastBucket: number): number {
    const { ids, probs, order, bucket, bucketMass } = this.scratch;
    const target = this.params.topP * total;
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
    const crossingEnd = this.selectMass(crossingStart, count, massAbove, target);

    let keptMass = 0;
    for (let i = 0; i < settled; i++) keptMass += probs[order[i]!]!;
    for (let i = crossingStart; i < crossingEnd; i++) keptMass += probs[order[i]!]!;
    let r = this.rng.nextDouble() * keptMass;
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
  private selectMass(lo: number, hi: number, massAbove: number, target: number): number {
    const { probs, order } = this.scratch;
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

  private uniformOverInfinite(count: number): number {
    const { ids, values } = this.scratch;
    let m = 0;
    for (let i = 0; i < count; i++) if (values[i] === Infinity) ids[m++] = ids[i]!;
    return ids[Math.min(m - 1, Math.floor(this.rng.nextDouble() * m))]!;
  }

  /** No allowed token has a positive probability: pick one deterministically, or throw. */
  private fallback(logits: Float32Array, mask: Uint32Array | null): number {
    const n = this.vocabSize;
    let best = -1;
    let bestValue = NaN;
    let firstAllowed = -1;
    for (let id = 0; id < n; id++) {
      if (mask && (mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      if (firstAllowed < 0) firstAllowed = id;
      const v = logits[id]!;
      if (v === v && (best < 0 || v > bestValue)) {
        best = id;
        bestValue = v;
      }
    }
    if (firstAllowed < 0) throw new EmptyMaskError();
    return best >= 0 ? best : firstAllowed;
  }
}

let warmedUp = false;

/**
 * Runs every sampling path on a tiny vocabulary once per process. The hot loops are long enough
 * that V8 compiles them on-stack mid-loop on their first big call; code after a loop that has
 * never run then has no type feedback, and the cached on-stack code deoptimises there on every
 * later call. Collecting the feedback first on small inputs avoids that.
 */
function warmUp(): void {
  warmedUp = true;
  const n = 96;
  const logits = new Float32Array(n);
  for (let i = 0; i < n; i++) logits[i] = ((i * 37) % 23) / 3 - 2;
  const mask = new Uint32Array(maskWords(n));
  mask[0] = 0xffffffff;
  mask[1] = 0x0f0f0f0f;
  mask[2] = 0xffffffff;
  const settings: SamplingParams[] = [
    { temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1 },
    { temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1.3 },
    { temperature: 1, topK: 5, topP: 1, repetitionPenalty: 1 },
    { temperature: 0.7, topK: 5, topP: 0.9, repetitionPenalty: 1.3 },
    { temperature: 1, topK: 0, topP: 1, repetitionPenalty: 1.3 },
    { temperature: 1, topK: 0, topP: 0.5, repetitionPenalty: 1 },
  ];
  for (const params of settings) {
    const sampler = new Sampler(n, { ...params, seed: 0 });
    sampler.reset([1, 2, 40, 70]);
    for (let i = 0; i < 40; i++) {
      sampler.sample(logits, null);
      sampler.sample(logits, mask);
    }
  }
}

/** Results of the gather functions (module state: sampling is synchronous and never nested). */
const gathered = { count: 0, maxValue: -Infinity, argmax: -1, floor: -Infinity, total: 0 };

// The gather loops visit the mask word by word: zero words are skipped, full words looped
// directly, other set bits found with Math.clz32; `exclude` (the penalised tokens) is cleared
// from each word first. They are separate small functions, one per mode, so that V8 optimises
// each with complete type feedback (one big function deoptimised over and over).

const GATHER_GREEDY = 0;
const GATHER_TOP_K = 1;
const GATHER_ALL = 2;

/** The TypeScript gather pass (mode as the kernel's: 0 greedy, 1 top_k over k, 2 all). */
function gatherScript(mode: 0 | 1 | 2, logits: Float32Array, mask: Uint32Array | null, exclude: Uint32Array | null, n: number, scratch: Scratch, k: number): void {
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
function gatherNative(mode: 0 | 1 | 2, logits: Float32Array, mask: Uint32Array | null, exclude: Uint32Array | null, n: number, scratch: Scratch, k: number): void {
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
function gatherPenalised(
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

/** Keeps the candidates scoring at least `threshold`; returns the new count. */
function keepAtLeast(scratch: Scratch, count: number, threshold: number): number {
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
function softmax(scratch: Scratch, count: number, maxValue: number, invTemperature: number): number {
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
function softmaxBucketed(scratch: Scratch, count: number, maxValue: number, invTemperature: number): number {
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
function drawFrom(scratch: Scratch, count: number, r: number): number {
  const { ids, probs } = scratch;
  for (let i = 0; i < count; i++) {
    r -= probs[i]!;
    if (r < 0) return ids[i]!;
  }
  return -1;
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
