/**
 * Embeddings (OpenAI's /v1/embeddings) on the served model: a small embedding context of its own
 * beside the generation context, on the same loaded weights.
 *
 * Why a context of its own rather than toggling llama_set_embeddings on the shared one between
 * rounds: an embedding context outputs every row and pools per sequence, and its pooling type
 * is fixed when the context is made, so on the shared context every embedding round would take
 * sequence ids and KV cells from generations (an embedding admitted while a generation waits for
 * cells, or the reverse) and pay for logits of every row. Its own context keeps generation's KV
 * cache and sequences untouched, costs only a KV cache of `inputTokens` cells, and needs no
 * change to the decode jobs.
 *
 * Fairness: the lane is a SideWork of the scheduler (scheduler.ts). Its decodes take turns with
 * the generation rounds, one step after each round, never at the same time, so a long embedding
 * request delays a generation by at most one step per token, and a busy generation delays an
 * embedding by one round per step. Inside the lane, requests are served round-robin, an input of
 * each in turn, so one large request does not hold the small ones behind it. Decodes run on
 * native threads (decodeAsync): the event loop stays free.
 *
 * llama.cpp pools a sequence's rows per micro-batch, so an input goes whole into one decode, and
 * one decode is at most the context's size in rows (n_batch = n_ubatch: `inputTokens`, rounded up
 * to a multiple of the sequences). Several
 * short inputs share a decode as sequences of their own. Packing changes the shape of the matrix
 * products, so the same text alone or in a batch gives the same vector up to float rounding
 * (about 1e-7 on the CPU).
 */
import { type LlamaBatch, type LlamaContext, type LlamaModel, PoolingType } from "../model/index.js";
import { InvalidRequestError, OverloadedError } from "../compile/index.js";
import type { SideWork } from "./scheduler.js";

export interface EmbeddingLaneOptions {
  /** Most tokens one input may have: the embedding context's size and its batch. */
  inputTokens: number;
  /** Sequences (inputs) one decode may pack. */
  maxSequences?: number;
}

/** Sequences one embedding decode packs by default: many short inputs in one forward pass. */
const DEFAULT_SEQUENCES = 32;

/** One embeddings request in the lane. */
interface EmbeddingTask {
  readonly inputs: readonly Int32Array[];
  readonly vectors: Float32Array[];
  /** The next input to put into a decode. */
  next: number;
  /** Inputs whose vector has been read. */
  done: number;
  readonly signal: AbortSignal | undefined;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

/**
 * The pooling an embedding context uses on `model`: what its GGUF names (`<arch>.pooling_type`),
 * else mean. A causal LM names none: its mean-pooled last hidden states are what it has.
 */
export function embeddingPooling(model: LlamaModel): PoolingType {
  const arch = model.meta("general.architecture");
  const named = arch === null ? null : model.meta(`${arch}.pooling_type`);
  const value = named === null ? Number.NaN : Number(named);
  if (value === PoolingType.Mean || value === PoolingType.Cls || value === PoolingType.Last || value === PoolingType.Rank) return value;
  return PoolingType.Mean;
}

export class EmbeddingLane implements SideWork {
  private context: LlamaContext | null = null;
  private batch: LlamaBatch | null = null;
  private readonly tasks: EmbeddingTask[] = [];
  /** Where the round-robin continues (an index into tasks). */
  private turn = 0;
  private stepping = false;
  private closed = false;
  readonly pooling: PoolingType;

  constructor(
    private readonly model: LlamaModel,
    private readonly options: EmbeddingLaneOptions,
    /** Called when work arrives (the scheduler's wake). */
    private readonly wake: () => void,
  ) {
    this.pooling = embeddingPooling(model);
  }

  get inputTokens(): number {
    return this.options.inputTokens;
  }

  get pending(): boolean {
    return this.tasks.length > 0;
  }

  /** No step running and nothing queued (close() waits for it). */
  get idle(): boolean {
    return this.tasks.length === 0 && !this.stepping;
  }

  /**
   * One unit-length vector per input. Inputs must be non-empty, at most `inputTokens` long, with
   * ids the model has; `fields` names each input's request field for the 400.
   */
  embed(inputs: readonly Int32Array[], fields: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (this.pooling === PoolingType.Rank) {
      return Promise.reject(new InvalidRequestError("this model is a reranker (pooling rank): it gives scores, not embeddings", "model"));
    }
    const nVocab = this.model.nVocab;
    for (let i = 0; i < inputs.length; i++) {
      const tokens = inputs[i]!;
      const field = fields[i] ?? `input[${i}]`;
      if (tokens.length === 0) return Promise.reject(new InvalidRequestError(`${field} must not be empty`, field));
      if (tokens.length > this.inputTokens) {
        return Promise.reject(
          new InvalidRequestError(`${field} is ${tokens.length} tokens; an embedding input may have at most ${this.inputTokens}`, field),
        );
      }
      for (let j = 0; j < tokens.length; j++) {
        const id = tokens[j]!;
        if (id < 0 || id >= nVocab) {
          return Promise.reject(
            new InvalidRequestError(`${field}[${j}] is token ${id}, not in the model's ${nVocab}-token vocabulary`, field),
          );
        }
      }
    }
    if (this.closed) return Promise.reject(new OverloadedError("the service is shutting down", 5));
    if (inputs.length === 0) return Promise.resolve([]);
    return new Promise<Float32Array[]>((resolve, reject) => {
      this.tasks.push({ inputs, vectors: new Array<Float32Array>(inputs.length), next: 0, done: 0, signal, resolve, reject });
      this.wake();
    });
  }

  /** Refuses new requests; queued ones finish. */
  close(): void {
    this.closed = true;
  }

  private open(): { context: LlamaContext; batch: LlamaBatch } {
    if (!this.context || !this.batch) {
      const sequences = Math.max(1, Math.min(this.options.maxSequences ?? DEFAULT_SEQUENCES, this.options.inputTokens));
      // llama.cpp sizes a pooled graph's rows per sequence as n_ubatch / n_seq_max: a remainder
      // aborts the process (GGML_ASSERT) when the context is made.
      const size = Math.ceil(this.options.inputTokens / sequences) * sequences;
      this.context = this.model.createContext({
        nCtx: size,
        nBatch: size,
        nUbatch: size,
        nSeqMax: sequences,
        embeddings: true,
        pooling: this.pooling,
      });
      this.batch = this.context.createBatch();
    }
    return { context: this.context, batch: this.batch };
  }

  /** One decode: inputs of the waiting requests, round-robin, while they fit. */
  async step(): Promise<void> {
    this.dropAborted();
    if (this.tasks.length === 0) return;
    this.stepping = true;
    const placed: { task: EmbeddingTask; index: number; seq: number }[] = [];
    try {
      const { context, batch } = this.open();
      batch.clear();
      let idle = 0;
      // Round-robin: each waiting request in turn puts its next input in, until one does not fit
      // or every request has put all of its inputs in.
      while (idle < this.tasks.length && placed.length < context.nSeqMax) {
        if (this.turn >= this.tasks.length) this.turn = 0;
        const task = this.tasks[this.turn]!;
        this.turn++;
        if (task.next >= task.inputs.length) {
          idle++;
          continue;
        }
        const tokens = task.inputs[task.next]!;
        if (tokens.length > batch.capacity - batch.length) {
          this.turn--; // its input goes first in the next decode
          break;
        }
        const seq = placed.length;
        batch.addSequence(tokens, 0, seq, false);
        placed.push({ task, index: task.next, seq });
        task.next++;
        idle = 0;
      }
      await context.decodeAsync(batch);
      for (const { task, index, seq } of placed) {
        const pooled = context.embeddingSeq(seq);
        if (!pooled) throw new Error(`llama.cpp pooled no vector for sequence ${seq}`);
        task.vectors[index] = normalized(pooled);
        task.done++;
      }
      context.clearMemory();
    } catch (error) {
      // The decode failed: every request with an input in it fails (the others go on). Nothing
      // placed: the context could not be made, and every waiting request fails (none could run).
      const failed = placed.length > 0 ? new Set(placed.map((p) => p.task)) : new Set(this.tasks);
      for (const task of failed) this.remove(task, error);
      try {
        this.context?.clearMemory();
      } catch {
        // a context that cannot even clear is disposed with the model
      }
    } finally {
      this.stepping = false;
    }
    for (const task of [...this.tasks]) if (task.done === task.inputs.length) this.remove(task);
  }

  private dropAborted(): void {
    for (const task of [...this.tasks]) {
      if (task.signal?.aborted) this.remove(task, task.signal.reason ?? new Error("aborted"));
    }
  }

  private remove(task: EmbeddingTask, error?: unknown): void {
    const at = this.tasks.indexOf(task);
    if (at < 0) return;
    this.tasks.splice(at, 1);
    if (at < this.turn) this.turn--;
    if (error !== undefined) task.reject(error);
    else task.resolve(task.vectors);
  }
}

/** `v` scaled to unit L2 norm (summed in double), as OpenAI returns embeddings; a zero vector stays zero. */
export function normalized(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  if (sum === 0) return v;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * scale;
  return v;
}
