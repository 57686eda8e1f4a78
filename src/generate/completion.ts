/**
 * One constrained completion as a scheduler job: prefill the prompt, then per round sample one
 * token among those the constraint allows within the remaining budget, advance, stop.
 *
 * Budget planning: the constraint's mask for `remaining` tokens only admits tokens after which a full match
 * is still reachable with the tokens left, so the text is a full match whenever we stop — at the
 * first accepting boundary (stop_after_match), when the model ends (EOG, only admitted while the
 * text is a full match), when the pattern admits nothing longer, or when the budget is spent.
 */
import type { TokenConstraint } from "../constraint/index.js";
import type { LlamaBatch, LlamaContext, SequenceSlots } from "../model/index.js";
import { maskedLogprobs, type LogitAdjuster, type Sampler } from "../sampling/index.js";
import { maskWords } from "../support/index.js";
import { concatTokenBytes, type Vocabulary } from "../vocab/index.js";
import type { DecodeJob } from "./scheduler.js";
import { type ForcedSpeller, forcedTokens } from "./fast-forward.js";
import { TextStream } from "./stream.js";
import type { CompletionResult, GeneratedToken, StopReason } from "./types.js";

/**
 * Most time one job walks ahead just before decodes (the scheduler does so when llama.cpp has
 * every core): what a new grammar's token starts and bodies take; the rest of its walks wait for
 * need rather than hold up every decode round.
 */
const AHEAD_BEFORE_DECODE_MS = 12;

export interface CompletionJobOptions {
  /** Tokens fed to the model (the prompt, less a healed last token). */
  promptTokens: Int32Array;
  constraint: TokenConstraint;
  sampler: Sampler;
  vocab: Vocabulary;
  maxNewTokens: number;
  stopAfterMatch: boolean;
  /** Bytes the first generated token repeats from the prompt (healing); stripped from the text. */
  forcedPrefixLength: number;
  signal: AbortSignal | undefined;
  settle: (error?: unknown) => void;
  /** Stop strings: the text ends before the first one (see TextStream). */
  stop?: readonly string[];
  /** Streaming: each final piece of text, with the tokens generated since the previous piece. */
  onText?: (delta: string, tokens: readonly GeneratedToken[]) => void;
  /** Record each token's log-probability and this many alternatives. */
  logprobs?: number;
  /** The sampler's temperature (the distribution logprobs are reported under). */
  temperature?: number;
  /** logit_bias and the presence / frequency penalties, applied before sampling. */
  adjuster?: LogitAdjuster;
  /**
   * Fast-forward (fast-forward.ts): how forced text is spelled in tokens, to append what the
   * constraint forces as tokens fed in one batched decode; absent: every token is sampled.
   */
  fastForward?: ForcedSpeller;
}

/** A budget larger than any request: "does the pattern admit any longer text at all". */
export const UNBOUNDED = 0x3fffffff;

export class CompletionJob implements DecodeJob {
  readonly seqsNeeded = 1;
  readonly kvCells: number;
  readonly signal: AbortSignal | undefined;
  private readonly o: CompletionJobOptions;
  private seq = -1;
  private prefilled = 0;
  /** Prompt tokens whose KV cells the prefix cache gave (not evaluated). */
  private reused = 0;
  /** Generated tokens fed back to the model (all but a last one its decode never needed). */
  private fedGenerated = 0;
  private row = -1;
  /** Tokens to feed next round: the sampled one, then any the constraint forced after it. */
  private readonly feed: number[] = [];
  /** Of the generated tokens, those fast-forward appended (not sampled). */
  private forced = 0;
  private readonly generated: number[] = [];
  private stop: StopReason = "pattern_match";
  /**
   * This job's mask, written by the constraint each step (no allocation per token); end-of-
   * generation tokens are added to it in place. Filled ahead of the logits when it can be.
   */
  private readonly mask: Uint32Array;
  private maskReady = false;
  private walkedAhead = false;
  /**
   * Time this job walked ahead just before decodes (a scheduler without overlap), which delays
   * them: past one round's slice it walks ahead only while the model decodes.
   */
  private aheadBeforeDecodeMs = 0;
  /** Set while walkAhead runs: after a throw it is not called again. */
  private aheadFailed = false;
  /** Text as it becomes final, when the request has stop strings or streams. */
  private readonly text: TextStream | null = null;
  /** Every generated token, when logprobs are asked for. */
  private readonly tokens: GeneratedToken[] | null = null;
  /** Tokens not yet handed to onText. */
  private unsent: GeneratedToken[] = [];
  /**
   * Text ready for onText, handed over in the next aheadOfLogits: while the model evaluates the
   * next token when the decode leaves a core free, so a stream's writes do not lengthen the step.
   */
  private outbox: { delta: string; tokens: readonly GeneratedToken[] }[] = [];

  constructor(options: CompletionJobOptions) {
    this.o = options;
    this.signal = options.signal;
    this.kvCells = options.promptTokens.length + options.maxNewTokens;
    this.mask = new Uint32Array(maskWords(options.vocab.size));
    if (options.logprobs !== undefined) this.tokens = [];
    if ((options.stop && options.stop.length > 0) || options.onText) {
      const onText = options.onText;
      this.text = new TextStream(
        options.stop ?? [],
        options.forcedPrefixLength,
        onText
          ? (delta) => {
              this.outbox.push({ delta, tokens: this.unsent });
              this.unsent = [];
            }
          : undefined,
      );
    }
  }

  get prefilling(): boolean {
    return this.prefilled < this.o.promptTokens.length;
  }

  /** The batch row whose logits this job reads next (-1: none this round). */
  get currentRow(): number {
    return this.row;
  }

  get promptLength(): number {
    return this.o.promptTokens.length;
  }

  get promptTokens(): Int32Array {
    return this.o.promptTokens;
  }

  get maxNewTokens(): number {
    return this.o.maxNewTokens;
  }

  /**
   * For a choice that shares another's prompt (ChoicesJob): its sequence already holds the
   * prompt's KV cells, and `row` holds the logits after the prompt.
   */
  adoptPrompt(row: number, reused: number): void {
    this.prefilled = this.o.promptTokens.length;
    this.reused = reused;
    this.row = row;
  }

  /** `reused`: the first prompt tokens already in the sequence's KV (the prefix cache's). */
  begin(seqs: Int32Array, _slots?: SequenceSlots, reused = 0): void {
    this.seq = seqs[0]!;
    this.prefilled = reused;
    this.reused = reused;
  }

  /** Prompt tokens the prefix cache spared (ChoicesJob reports them for every choice). */
  get reusedTokens(): number {
    return this.reused;
  }

  /** The tokens in its sequence's KV cells: the prompt fed so far, then the generated tokens fed back. */
  keptTokens(): Int32Array {
    const out = new Int32Array(this.prefilled + this.fedGenerated);
    out.set(this.o.promptTokens.subarray(0, this.prefilled));
    for (let i = 0; i < this.fedGenerated; i++) out[this.prefilled + i] = this.generated[i]!;
    return out;
  }

  fill(batch: LlamaBatch, slots: SequenceSlots, room: number): void {
    const prompt = this.o.promptTokens;
    if (this.prefilled < prompt.length) {
      const end = Math.min(prompt.length, this.prefilled + room);
      this.row = slots.appendTokens(batch, this.seq, prompt.subarray(this.prefilled, end), end === prompt.length);
      this.prefilled = end;
      if (end < prompt.length) this.row = -1;
      return;
    }
    // The sampled token and the forced ones after it: rows of one decode, logits after the last
    // (a run longer than the batch's room goes on next round).
    const feed = this.feed;
    const n = Math.min(room, feed.length);
    for (let i = 0; i < n; i++) this.row = slots.append(batch, this.seq, feed[i]!, n === feed.length && i === n - 1);
    // Nearly always the whole run fits: emptied in place, no array made per token.
    if (n === feed.length) feed.length = 0;
    else feed.splice(0, n);
    this.fedGenerated += n;
    if (feed.length > 0) this.row = -1;
  }

  /**
   * While the model evaluates: the mask this round's logits will meet (it depends only on the
   * tokens so far), so consume() does not compute it after the logits. Then, either way, the
   * constraint's work ahead. Just before a decode the mask would only cost a copy more.
   */
  aheadOfLogits(deadline: number, whileDecoding: boolean): void {
    this.flushText();
    const constraint = this.o.constraint;
    if (whileDecoding && this.row >= 0) {
      // Into this job's own buffer: a matcher may hand every caller the same scratch mask (a
      // regex's small lists), and other jobs of this round ask for theirs before consume().
      constraint.writeMask(this.o.maxNewTokens - this.generated.length, this.mask);
      this.maskReady = true;
    }
    // While the model decodes, every round (a grammar walks its next step's sets); just before a
    // decode, until done or AHEAD_BEFORE_DECODE_MS.
    if (this.aheadFailed || constraint.walkAhead === undefined) return;
    if (!whileDecoding && (this.walkedAhead || this.aheadBeforeDecodeMs >= AHEAD_BEFORE_DECODE_MS)) return;
    const began = performance.now();
    this.aheadFailed = true; // a throw is not retried every round
    this.walkedAhead = constraint.walkAhead(deadline);
    this.aheadFailed = false;
    if (!whileDecoding) this.aheadBeforeDecodeMs += performance.now() - began;
  }

  consume(ctx: LlamaContext): boolean {
    if (this.row < 0) return false; // a prompt chunk that is not the last
    const o = this.o;
    const modelLogits = ctx.logits(this.row);
    const logits = o.adjuster ? o.adjuster.apply(modelLogits) : modelLogits;
    const remaining = o.maxNewTokens - this.generated.length;
    const accepting = o.constraint.isAccepting();
    const mask = this.mask;
    if (!this.maskReady) o.constraint.writeMask(remaining, mask);
    this.maskReady = false;
    const eogAllowed = !o.stopAfterMatch && accepting;
    if (eogAllowed) this.addEog(mask);
    const token = o.sampler.sample(logits, mask);
    if (eogAllowed && o.vocab.isEog(token)) return this.end("pattern_match");
    if (!o.constraint.advance(token)) throw new Error(`sampled token ${token} outside the constraint`);
    o.sampler.accept(token);
    o.adjuster?.accept(token);
    this.generated.push(token);
    if (this.tokens !== null || this.text !== null) {
      const record = this.record(token, logits, mask);
      if (this.text?.push(record.bytes)) return this.end("stop_sequence");
    }
    if (this.endsWith(remaining - 1)) return true;
    this.feed.push(token);
    return o.fastForward !== undefined && this.fastForward(o.fastForward, remaining - 1);
  }

  /** After a token, with `left` tokens left: whether the generation ends here (then ended). */
  private endsWith(left: number): boolean {
    const constraint = this.o.constraint;
    if (constraint.isAccepting()) {
      if (this.o.stopAfterMatch) return this.end("pattern_match");
      if (!constraint.hasAnyToken(UNBOUNDED)) return this.end("pattern_match");
      if (left === 0 || !constraint.hasAnyToken(left)) return this.end("token_limit");
    } else if (left === 0) {
      // Budget planning makes this unreachable: the mask only admits tokens that can finish.
      throw new Error("budget spent before a full match");
    }
    return false;
  }

  /**
   * Appends the tokens the constraint forces from here (fast-forward.ts), each only while it is
   * in its step's budget mask; they are fed with the sampled token. True when the generation ended.
   */
  private fastForward(speller: ForcedSpeller, left: number): boolean {
    const o = this.o;
    const tokens = forcedTokens(o.constraint, speller);
    if (tokens === null) return false;
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      if (!o.constraint.allowsWithin!(token, left) || !o.constraint.advance(token)) break;
      o.sampler.accept(token);
      this.generated.push(token);
      this.forced++;
      left--;
      if (this.text !== null) {
        const record: GeneratedToken = { id: token, bytes: o.vocab.tokenBytes(token) };
        if (o.onText) this.unsent.push(record);
        if (this.text.push(record.bytes)) return this.end("stop_sequence");
      }
      if (this.endsWith(left)) return true;
      this.feed.push(token);
    }
    return false;
  }

  /** The token as logprobs and streaming report it (allocated only when they are asked for). */
  private record(token: number, logits: Float32Array, mask: Uint32Array): GeneratedToken {
    const o = this.o;
    let record: GeneratedToken = { id: token, bytes: o.vocab.tokenBytes(token) };
    if (o.logprobs !== undefined) {
      const lp = maskedLogprobs(logits, mask, o.vocab.size, o.temperature ?? 1, token, o.logprobs);
      const top = lp.top.map((t) => ({ id: t.token, bytes: o.vocab.tokenBytes(t.token), logprob: t.logprob }));
      record = { ...record, logprob: lp.logprob, top };
    }
    this.tokens?.push(record);
    if (o.onText) this.unsent.push(record);
    return record;
  }

  /** The generation is over: the held-back text goes out, then any tokens not reported yet. */
  private end(reason: StopReason): true {
    this.stop = reason;
    this.text?.finish();
    if (this.o.onText && this.unsent.length > 0) {
      this.outbox.push({ delta: "", tokens: this.unsent });
      this.unsent = [];
    }
    this.flushText();
    return true;
  }

  /** Hands the text made final so far to onText. */
  private flushText(): void {
    const onText = this.o.onText;
    if (!onText || this.outbox.length === 0) return;
    const outbox = this.outbox;
    this.outbox = [];
    for (const { delta, tokens } of outbox) onText(delta, tokens);
  }

  /** End-of-generation tokens allowed: the text is a complete match. */
  private addEog(mask: Uint32Array): void {
    const eog = this.o.vocab.eogTokens;
    for (let i = 0; i < eog.length; i++) {
      const id = eog[i]!;
      mask[id >>> 5]! |= 1 << (id & 31);
    }
  }

  settle(error?: unknown): void {
    this.o.settle(error);
  }

  result(): CompletionResult {
    const result: CompletionResult = {
      completion: this.text ? this.text.text : completionText(this.o.vocab, this.generated, this.o.forcedPrefixLength),
      tokensGenerated: this.generated.length,
      stopReason: this.stop,
      ...(this.reused > 0 ? { cachedTokens: this.reused } : {}),
      ...(this.forced > 0 ? { fastForwardedTokens: this.forced } : {}),
    };
    const reasoningTokens = this.o.constraint.reasoningTokenCount?.();
    if (reasoningTokens !== undefined) result.reasoningTokens = reasoningTokens;
    return this.tokens ? { ...result, tokens: this.tokens } : result;
  }
}

/**
 * Several choices of one request (OpenAI's `n`) as one job: the first choice evaluates the prompt,
 * its KV cells are then shared with the others' sequences (seq_cp: no copy, no re-evaluation), and
 * every choice samples its first token from the same logits and goes on on its own sequence.
 */
export class ChoicesJob implements DecodeJob {
  readonly seqsNeeded: number;
  readonly kvCells: number;
  readonly signal: AbortSignal | undefined;
  private seqs: Int32Array = new Int32Array(0);
  private slots: SequenceSlots | null = null;
  private shared = false;
  private readonly done: boolean[];
  /** Whether each choice added a row this round (a full batch may leave some out). */
  private readonly filled: boolean[];

  constructor(
    private readonly choices: readonly CompletionJob[],
    private readonly settleAll: (error?: unknown) => void,
  ) {
    const first = choices[0]!;
    this.seqsNeeded = choices.length;
    this.kvCells = first.promptLength + choices.reduce((sum, c) => sum + c.maxNewTokens, 0);
    this.signal = first.signal;
    this.done = choices.map(() => false);
    this.filled = choices.map(() => false);
  }

  get prefilling(): boolean {
    return this.choices[0]!.prefilling;
  }

  get promptTokens(): Int32Array {
    return this.choices[0]!.promptTokens;
  }

  begin(seqs: Int32Array, slots: SequenceSlots, reused: number): void {
    this.seqs = seqs;
    this.slots = slots;
    this.choices.forEach((choice, i) => choice.begin(seqs.subarray(i, i + 1), slots, i === 0 ? reused : 0));
  }

  /** The first choice's sequence (the prompt, then its tokens) is the one worth keeping. */
  keptTokens(): Int32Array {
    return this.choices[0]!.keptTokens();
  }

  fill(batch: LlamaBatch, slots: SequenceSlots, room: number): void {
    this.filled.fill(false);
    if (!this.shared) {
      this.choices[0]!.fill(batch, slots, room);
      this.filled[0] = true;
      return;
    }
    for (let i = 0; i < this.choices.length; i++) {
      if (this.done[i] || batch.length >= batch.capacity) continue;
      this.choices[i]!.fill(batch, slots, 1);
      this.filled[i] = true;
    }
  }

  aheadOfLogits(deadline: number, whileDecoding: boolean): void {
    for (let i = 0; i < this.choices.length; i++) if (this.filled[i]) this.choices[i]!.aheadOfLogits(deadline, whileDecoding);
  }

  consume(ctx: LlamaContext): boolean {
    if (!this.shared) {
      const first = this.choices[0]!;
      const row = first.currentRow;
      if (first.prefilling || row < 0) return false; // a prompt chunk that is not the last
      const length = first.promptLength;
      for (let i = 1; i < this.choices.length; i++) {
        ctx.seqCopy(this.seqs[0]!, this.seqs[i]!, 0, length);
        this.slots!.lengths[this.seqs[i]!] = length;
        this.choices[i]!.adoptPrompt(row, first.reusedTokens);
        this.filled[i] = true;
      }
      this.shared = true;
    }
    let all = true;
    for (let i = 0; i < this.choices.length; i++) {
      if (!this.done[i] && this.filled[i]) this.done[i] = this.choices[i]!.consume(ctx);
      all &&= this.done[i]!;
    }
    return all;
  }

  settle(error?: unknown): void {
    this.settleAll(error);
  }

  result(): CompletionResult[] {
    return this.choices.map((c) => c.result());
  }
}

const utf8 = new TextDecoder("utf-8");

/** UTF-8 text of the generated tokens' bytes, less the healed prefix repeated from the prompt. */
export function completionText(vocab: Vocabulary, tokens: ArrayLike<number>, skipBytes: number): string {
  const bytes = concatTokenBytes(vocab, tokens);
  return utf8.decode(bytes.subarray(Math.min(skipBytes, bytes.length)));
}
