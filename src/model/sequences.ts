/**
 * Sequence-slot bookkeeping for continuous batching: one context, up to nSeqMax sequences, each
 * with its own next position. A step = fill one LlamaBatch with every active sequence's next
 * token (plus the prompt tokens of sequences joining now), then one decode. The request scheduler
 * itself lives in src/generate.
 */
import type { LlamaBatch, LlamaContext } from "./runtime.js";

export class NoFreeSequenceError extends Error {
  override name = "NoFreeSequenceError";
}

export class SequenceSlots {
  /** Next position (= tokens in the KV cache) per sequence id. */
  readonly lengths: Int32Array;
  private readonly used: Uint8Array;
  private free: number;

  constructor(readonly context: LlamaContext) {
    this.lengths = new Int32Array(context.nSeqMax);
    this.used = new Uint8Array(context.nSeqMax);
    this.free = context.nSeqMax;
  }

  get capacity(): number {
    return this.used.length;
  }

  get available(): number {
    return this.free;
  }

  inUse(seq: number): boolean {
    return this.used[seq] === 1;
  }

  /** A free sequence id with an empty KV history, or -1 when all are taken. */
  acquire(): number {
    for (let seq = 0; seq < this.used.length; seq++) {
      if (this.used[seq] === 0) {
        this.used[seq] = 1;
        this.free--;
        this.lengths[seq] = 0;
        return seq;
      }
    }
    return -1;
  }

  /** Frees the id and drops its KV cells (shared prefix cells stay while another seq uses them). */
  release(seq: number): void {
    this.assertUsed(seq);
    this.context.seqRemove(seq, -1, -1);
    this.used[seq] = 0;
    this.lengths[seq] = 0;
    this.free++;
  }

  /**
   * Starts a new sequence sharing the first `length` tokens of `src` (default: all of them) —
   * no re-evaluation. Returns the new sequence id.
   */
  fork(src: number, length = this.lengths[src]!): number {
    this.assertUsed(src);
    if (length > this.lengths[src]!) throw new RangeError(`fork: sequence ${src} has only ${this.lengths[src]} tokens`);
    const dst = this.acquire();
    if (dst < 0) throw new NoFreeSequenceError(`all ${this.capacity} sequences are in use`);
    if (length > 0) this.context.seqCopy(src, dst, 0, length);
    this.lengths[dst] = length;
    return dst;
  }

  /** Keeps only the first `length` tokens of `seq`. */
  truncate(seq: number, length: number): void {
    this.assertUsed(seq);
    if (length < 0 || length > this.lengths[seq]!) throw new RangeError(`truncate: bad length ${length}`);
    if (!this.context.seqRemove(seq, length, -1)) throw new Error(`seq_rm failed for sequence ${seq}`);
    this.lengths[seq] = length;
  }

  /**
   * Adds `token` as the next position of `seq` to `batch`; returns its row. The position counts
   * as taken from now on: if the decode fails, truncate() the sequences back.
   */
  append(batch: LlamaBatch, seq: number, token: number, wantLogits: boolean): number {
    const pos = this.lengths[seq]!;
    this.lengths[seq] = pos + 1;
    return batch.add(token, pos, seq, wantLogits);
  }

  /** Adds several tokens of `seq` (e.g. the prompt of a joining request); returns the last row. */
  appendTokens(batch: LlamaBatch, seq: number, tokens: ArrayLike<number>, wantLastLogits: boolean): number {
    const row = batch.addSequence(tokens, this.lengths[seq]!, seq, wantLastLogits);
    this.lengths[seq]! += tokens.length;
    return row;
  }

  /** Evaluates a whole prompt for `seq` (chunked to nBatch); returns the last token's logits. */
  prefill(seq: number, tokens: ArrayLike<number>): Float32Array {
    this.assertUsed(seq);
    const logits = this.context.evaluate(tokens, seq, this.lengths[seq]!);
    this.lengths[seq]! += tokens.length;
    return logits;
  }

  async prefillAsync(seq: number, tokens: ArrayLike<number>): Promise<Float32Array> {
    this.assertUsed(seq);
    const logits = await this.context.evaluateAsync(tokens, seq, this.lengths[seq]!);
    this.lengths[seq]! += tokens.length;
    return logits;
  }

  private assertUsed(seq: number): void {
    if (this.used[seq] !== 1) throw new RangeError(`sequence ${seq} is not in use`);
  }
}
