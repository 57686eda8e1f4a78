/**
 * OpenAI's logit adjustments, before the sampler: `logit_bias` (a constant per token id),
 * `presence_penalty` (once per token already generated) and `frequency_penalty` (per occurrence),
 * over the generated tokens only (as OpenAI and vLLM count them). The model's logits are read
 * only; adjusted ones go to a buffer the adjuster owns, so there is no per-token allocation.
 *
 * Also the log-probabilities OpenAI's `logprobs` report: of the distribution the token was drawn
 * from after the constraint's mask and these adjustments, at the request's temperature (1 when
 * greedy), before top_k / top_p cut it (README, "logprobs").
 */
export interface LogitAdjustments {
  /** Token id → bias added to its logit (OpenAI clamps it to [-100, 100]; so does the route). */
  readonly logitBias?: ReadonlyMap<number, number>;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
}

export class LogitAdjuster {
  private readonly adjusted: Float32Array;
  private readonly counts = new Map<number, number>();

  constructor(
    vocabSize: number,
    private readonly adjustments: LogitAdjustments,
  ) {
    this.adjusted = new Float32Array(vocabSize);
  }

  /** True when some adjustment changes logits (otherwise callers use the model's logits as they are). */
  static needed(adjustments: LogitAdjustments): boolean {
    return (adjustments.logitBias?.size ?? 0) > 0 || (adjustments.presencePenalty ?? 0) !== 0 || (adjustments.frequencyPenalty ?? 0) !== 0;
  }

  /** Records a generated token (for the penalties). */
  accept(token: number): void {
    this.counts.set(token, (this.counts.get(token) ?? 0) + 1);
  }

  /** The logits with every adjustment applied, in the adjuster's own buffer. */
  apply(logits: Float32Array): Float32Array {
    const out = this.adjusted;
    out.set(logits.subarray(0, out.length));
    const presence = this.adjustments.presencePenalty ?? 0;
    const frequency = this.adjustments.frequencyPenalty ?? 0;
    if (presence !== 0 || frequency !== 0) {
      for (const [token, count] of this.counts) out[token] = out[token]! - presence - frequency * count;
    }
    if (this.adjustments.logitBias) for (const [token, bias] of this.adjustments.logitBias) out[token] = out[token]! + bias;
    return out;
  }
}

export interface TokenLogprob {
  readonly token: number;
  readonly logprob: number;
}

/**
 * log P(chosen) and the `top` most probable tokens under softmax(logits / temperature) over the
 * tokens `mask` allows (null: all). One pass for the normaliser, one for the top list.
 */
export function maskedLogprobs(
  logits: Float32Array,
  mask: Uint32Array | null,
  vocabSize: number,
  temperature: number,
  chosen: number,
  top: number,
): { logprob: number; top: TokenLogprob[] } {
  const inv = temperature > 0 && Number.isFinite(1 / temperature) ? 1 / temperature : 1;
  let max = -Infinity;
  for (let id = 0; id < vocabSize; id++) {
    if (mask && (mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
    const v = logits[id]! * inv;
    if (v > max) max = v;
  }
  let sum = 0;
  if (max > -Infinity) {
    for (let id = 0; id < vocabSize; id++) {
      if (mask && (mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      const v = logits[id]! * inv;
      if (v === v) sum += Math.exp(v - max);
    }
  }
  const norm = max + Math.log(sum);
  const logprobOf = (id: number): number => {
    const v = logits[id]! * inv;
    return v === v && max > -Infinity ? Math.max(v - norm, -9999) : -9999;
  };
  const best: TokenLogprob[] = [];
  if (top > 0) {
    for (let id = 0; id < vocabSize; id++) {
      if (mask && (mask[id >>> 5]! & (1 << (id & 31))) === 0) continue;
      const v = logits[id]!;
      if (v !== v) continue;
      if (best.length === top && !(v > best[top - 1]!.logprob)) continue;
      let at = best.length < top ? best.length : top - 1;
      if (best.length < top) best.push({ token: id, logprob: v });
      else best[at] = { token: id, logprob: v };
      while (at > 0 && best[at - 1]!.logprob < best[at]!.logprob) {
        const t = best[at - 1]!;
        best[at - 1] = best[at]!;
        best[at] = t;
        at--;
      }
    }
  }
  return { logprob: logprobOf(chosen), top: best.map((b) => ({ token: b.token, logprob: logprobOf(b.token) })) };
}
