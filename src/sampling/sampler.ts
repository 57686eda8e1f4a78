/**
 * Masked token sampling with Hugging Face transformers semantics:
 * repetition_penalty (CTRL) → temperature → top_k → top_p → multinomial draw; temperature 0 is
 * greedy (argmax after the repetition penalty, lowest id on ties, like torch.argmax). This file
 * holds the parameters, their validation and the Sampler pipeline; the steps are gather.ts (the
 * one pass over the vocabulary, in the addon or in script), softmax.ts (cuts, softmax, draws)
 * over scratch.ts's shared arrays.
 *
 * Only tokens whose bit is set in the mask can be returned, whatever the knobs or logits:
 * NaN counts as -Infinity; when every allowed token has zero probability (all -Infinity/NaN, or a
 * penalty overflowing to -Infinity) the sampler falls back deterministically to the allowed token
 * with the highest raw logit (lowest id on ties, lowest allowed id if none is comparable). An
 * empty mask is a caller bug and throws EmptyMaskError. If some allowed logits are +Infinity, the
 * draw is uniform over exactly those tokens (the limit of the softmax).
 *
 * Arithmetic is in doubles (HF works in float32), so at an exact top_p boundary — the kept mass
 * equal to top_p to the last bit — the two can differ by that one boundary token.
 */
import { maskWords } from "../support/index.js";
import { GATHER_ALL, GATHER_GREEDY, GATHER_TOP_K, gatherKernel, gatherNative, gatherPenalised, gatherScript, gathered } from "./gather.js";
import { Xoshiro128 } from "./rng.js";
import { sharedScratch, type Scratch } from "./scratch.js";
import { drawFrom, drawNucleus, drawUniformOverInfinite, keepAtLeast, softmax, softmaxBucketed } from "./softmax.js";

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

    // Gather the allowed candidates with a probability above zero (see gather.ts);
    // seen tokens are left out of that pass and added with their penalty afterwards.
    gathered.count = 0;
    gathered.maxValue = -Infinity;
    gathered.argmax = -1;
    gathered.floor = -Infinity;
    const mode = greedy ? GATHER_GREEDY : topK > 0 && topK < n ? GATHER_TOP_K : GATHER_ALL;
    if (mode === GATHER_TOP_K) scratch.heap.fill(-Infinity, 0, topK);
    (gatherKernel() ? gatherNative : gatherScript)(mode, logits, mask, exclude, n, scratch, topK);
    if (penalize)
      gatherPenalised(logits, mask, this.seenIds, penalty, scratch, mode === GATHER_GREEDY ? -1 : mode === GATHER_TOP_K ? topK : 0);

    let count = gathered.count;
    if (count === 0) return this.fallback(logits, mask);
    if (count === 1 || greedy) return gathered.argmax;
    const maxValue = gathered.maxValue;
    if (maxValue === Infinity) return drawUniformOverInfinite(scratch, count, this.rng);
    // HF keeps every token scoring at least the k-th best (ties included).
    if (topK > 0 && topK < n) count = keepAtLeast(scratch, count, scratch.heap[0]!);

    if (this.params.topP < 1) {
      const lastBucket = softmaxBucketed(scratch, count, maxValue, invTemperature);
      return drawNucleus(scratch, count, gathered.total, lastBucket, this.params.topP, this.rng);
    }
    const total = softmax(scratch, count, maxValue, invTemperature);
    const id = drawFrom(scratch, count, this.rng.nextDouble() * total);
    return id >= 0 ? id : gathered.argmax; // rounding left the draw past the last candidate
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
