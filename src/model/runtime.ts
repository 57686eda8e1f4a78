/**
 * The llama.cpp runtime for our own decode loop: models, contexts with many sequences, a reusable
 * typed-array batch, zero-copy logits. See DESIGN.md (`model/`).
 */
import { availableParallelism } from "node:os";
import { ggufStringArray, readGguf } from "../vocab/index.js";
import { initRuntime, nativeAddon, type NativeContext, type NativeModel, type LlamaRuntimeOptions } from "./native.js";
import { tokenCodePoints, tokenizeInPieces } from "./tokenize-pieces.js";

export interface LoadModelOptions extends LlamaRuntimeOptions {
  /** Default threads for contexts of this model; default = the machine's core count. */
  threads?: number;
  /** Layers to offload to a GPU; default all when a GPU device is present, else 0. */
  gpuLayers?: number;
  /** Only the vocabulary (tokenize, token pieces, metadata); no weights, no contexts. */
  vocabOnly?: boolean;
  /** Memory-map the file (default true). */
  useMmap?: boolean;
}

export interface TokenizeOptions {
  /** Add BOS/EOS as the model's metadata asks. */
  addSpecial?: boolean;
  /** Parse special/control token text (e.g. "<|im_start|>") into its token. */
  parseSpecial?: boolean;
}

export interface ContextOptions {
  /** Total KV cells shared by every sequence (kvUnified) — default min(4096, nCtxTrain). */
  nCtx?: number;
  /** Max sequences in this context (seq ids 0 .. nSeqMax-1); default 1. */
  nSeqMax?: number;
  /** Max tokens per decode call; default min(512, nCtx). */
  nBatch?: number;
  /** Physical micro-batch; default nBatch. */
  nUbatch?: number;
  /** Default: the model's thread count. */
  threads?: number;
  threadsBatch?: number;
  /**
   * llama.cpp flash attention: "auto", true, false. Default: "auto" on a GPU, off on the CPU.
   * On the CPU its result for a row depends on the rest of the batch (measured on AVX2: logits
   * move by up to 1e-2 when a prompt is split differently), so a categorization's scores would
   * depend on what shared its decode; without it a row of a decode of two or more rows comes out
   * the same to the last bit whatever else is there. Costs ~15% of prompt speed there (Qwen2-0.5B
   * shape, 1,024 tokens), none for decode steps.
   */
  flashAttn?: boolean | "auto";
  /** One KV buffer shared by all sequences (default true): makes seqCopy of a prefix free. */
  kvUnified?: boolean;
  /**
   * An embedding context: every row is an output and vectors are read (embeddingSeq/embeddingRow)
   * instead of logits. Each sequence's rows must arrive in one decode of at most nUbatch rows:
   * llama.cpp pools per micro-batch.
   */
  embeddings?: boolean;
  /** How an embedding context pools a sequence's rows; default the model's own (GGUF `<arch>.pooling_type`). */
  pooling?: PoolingType;
}

/** llama.cpp's llama_pooling_type. */
export const PoolingType = { None: 0, Mean: 1, Cls: 2, Last: 3, Rank: 4 } as const;
export type PoolingType = (typeof PoolingType)[keyof typeof PoolingType];

/** llama_token_attr bits, as returned by tokenAttributes(). */
export const TokenAttr = {
  Unknown: 1 << 0,
  Unused: 1 << 1,
  Normal: 1 << 2,
  Control: 1 << 3,
  UserDefined: 1 << 4,
  Byte: 1 << 5,
  Normalized: 1 << 6,
  LStrip: 1 << 7,
  RStrip: 1 << 8,
  SingleWord: 1 << 9,
} as const;

/** llama.cpp's LLAMA_VOCAB_TYPE_SPM (SentencePiece), whose byte fallback is quadratic in a run. */
const VOCAB_SPM = 1;
/**
 * SentencePiece texts longer than this go to llama.cpp in pieces of about this many UTF-16 units
 * (tokenize-pieces.ts): 64k CJK characters on stories260K took 620-660 ms whole, about 20 ms in
 * pieces of 512 (128 to 2048 were alike; 2048 a third slower).
 */
export const TOKENIZE_PIECE_CHARS = 512;

export class ModelDisposedError extends Error {
  override name = "ModelDisposedError";
}

/** llama_decode found no room in the KV cache for the batch (status 1). */
export class KvCacheFullError extends Error {
  override name = "KvCacheFullError";
  constructor(readonly batchSize: number) {
    super(`no room in the KV cache for a batch of ${batchSize} tokens`);
  }
}

export class DecodeAbortedError extends Error {
  override name = "DecodeAbortedError";
}

/**
 * Env TRELLIS_LLAMA_THREADS, else the machine's core count. Never more: ggml's threads meet at
 * spinning barriers after every op, so one preempted thread stalls the others (a 2-core machine
 * with other busy processes ran a decode step 20-50x slower).
 */
export function defaultThreadCount(): number {
  const fromEnv = Number(process.env.TRELLIS_LLAMA_THREADS);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return Math.max(1, availableParallelism());
}

/**
 * Reusable decode input: one row per token (token id, position, sequence id, logits wanted).
 * Preallocated typed arrays, no per-token objects. `add` returns the row index that
 * `LlamaContext.logits(row)` takes after the decode.
 */
export class LlamaBatch {
  readonly tokens: Int32Array;
  readonly positions: Int32Array;
  readonly seqIds: Int32Array;
  readonly wantLogits: Uint8Array;
  /** Sequences per row (1 unless added with addShared); the others are in extraSeqs. */
  readonly seqCounts: Int32Array;
  /** Second and later sequence ids of shared rows, in row order. */
  extraSeqs: Int32Array;
  extraLength = 0;
  length = 0;

  constructor(readonly capacity: number) {
    this.tokens = new Int32Array(capacity);
    this.positions = new Int32Array(capacity);
    this.seqIds = new Int32Array(capacity);
    this.wantLogits = new Uint8Array(capacity);
    this.seqCounts = new Int32Array(capacity);
    this.extraSeqs = new Int32Array(64);
  }

  clear(): void {
    this.length = 0;
    this.extraLength = 0;
  }

  /** Whether some row belongs to several sequences. */
  get hasSharedRows(): boolean {
    return this.extraLength > 0;
  }

  add(token: number, position: number, seq: number, wantLogits: boolean): number {
    const row = this.length;
    if (row >= this.capacity) throw new RangeError(`batch is full (${this.capacity} tokens)`);
    this.tokens[row] = token;
    this.positions[row] = position;
    this.seqIds[row] = seq;
    this.seqCounts[row] = 1;
    this.wantLogits[row] = wantLogits ? 1 : 0;
    this.length = row + 1;
    return row;
  }

  /**
   * Adds a token that belongs to every sequence in `seqs` (e.g. a prompt shared by several
   * continuations decoded in the same batch): its KV cell is visible to all of them.
   */
  addShared(token: number, position: number, seqs: ArrayLike<number>, wantLogits: boolean): number {
    if (seqs.length === 0) throw new RangeError("addShared: no sequence");
    const row = this.add(token, position, seqs[0]!, wantLogits);
    const extra = seqs.length - 1;
    if (this.extraLength + extra > this.extraSeqs.length) {
      const grown = new Int32Array(Math.max(this.extraSeqs.length * 2, this.extraLength + extra));
      grown.set(this.extraSeqs.subarray(0, this.extraLength));
      this.extraSeqs = grown;
    }
    for (let k = 1; k < seqs.length; k++) this.extraSeqs[this.extraLength++] = seqs[k]!;
    this.seqCounts[row] = seqs.length;
    return row;
  }

  /** Adds tokens[i] at positions start+i; logits only for the last one when asked. */
  addSequence(tokens: ArrayLike<number>, start: number, seq: number, wantLastLogits: boolean): number {
    let row = -1;
    for (let i = 0; i < tokens.length; i++) {
      row = this.add(tokens[i]!, start + i, seq, wantLastLogits && i === tokens.length - 1);
    }
    return row;
  }
}

export class LlamaModel {
  readonly nVocab: number;
  readonly nCtxTrain: number;
  readonly nEmbd: number;
  readonly nLayer: number;
  readonly description: string;
  readonly sizeBytes: number;
  readonly nParams: number;
  /** -1 when the vocabulary has none. */
  readonly bosToken: number;
  readonly eosToken: number;
  readonly addBos: boolean;
  readonly vocabOnly: boolean;
  readonly threads: number;
  /** Whether layers run on a GPU (then a decode leaves the CPU cores mostly idle). */
  readonly offloaded: boolean;
  private native: NativeModel | null;
  private readonly contexts = new Set<LlamaContext>();
  private eog: Int32Array | null = null;
  /** llama_vocab_type (1: SentencePiece). */
  readonly vocabType: number;
  /** Code points in some token's text (from the GGUF): at load for a served model, else at the first long text. */
  private codePoints: Uint32Array | null = null;

  /** Use loadModel(). `path` (the GGUF) lets long SentencePiece texts go to llama.cpp in pieces. */
  constructor(
    native: NativeModel,
    vocabOnly: boolean,
    threads: number,
    offloaded = false,
    private readonly path: string | null = null,
  ) {
    this.native = native;
    this.vocabOnly = vocabOnly;
    this.threads = threads;
    this.offloaded = offloaded;
    const info = native.info();
    this.nVocab = info.nVocab;
    this.nCtxTrain = info.nCtxTrain;
    this.nEmbd = info.nEmbd;
    this.nLayer = info.nLayer;
    this.description = info.description;
    this.sizeBytes = info.sizeBytes;
    this.nParams = info.nParams;
    this.bosToken = info.bos;
    this.eosToken = info.eos;
    this.addBos = info.addBos;
    this.vocabType = info.vocabType;
    // A served model reads its token texts now (tens of ms for 32k tokens), not in a request.
    if (!vocabOnly && path !== null && this.vocabType === VOCAB_SPM) this.codePointsOf(path);
  }

  private get live(): NativeModel {
    if (!this.native) throw new ModelDisposedError("model is disposed");
    return this.native;
  }

  /**
   * Tokenizes UTF-8 text with llama.cpp's tokenizer. Defaults: addSpecial false, parseSpecial false.
   * A long SentencePiece text goes in pieces, with the same tokens, in time linear in its length.
   */
  tokenize(text: string, opts: TokenizeOptions = {}): Int32Array {
    const native = this.live;
    const addSpecial = opts.addSpecial ?? false;
    const parseSpecial = opts.parseSpecial ?? false;
    if (text.length <= 2 * TOKENIZE_PIECE_CHARS || this.vocabType !== VOCAB_SPM || this.path === null) {
      return native.tokenize(text, addSpecial, parseSpecial);
    }
    return tokenizeInPieces(
      text,
      addSpecial,
      parseSpecial,
      (t, a, p) => native.tokenize(t, a, p),
      this.codePointsOf(this.path),
      this.addBos,
      TOKENIZE_PIECE_CHARS,
    );
  }

  private codePointsOf(path: string): Uint32Array {
    if (!this.codePoints) {
      const tokens = ggufStringArray(readGguf(path), "tokenizer.ggml.tokens");
      // Without the token texts every code point counts as present: no boundary, texts go whole.
      this.codePoints = tokens ? tokenCodePoints(tokens) : new Uint32Array(0x110000 >>> 5).fill(0xffffffff);
    }
    return this.codePoints;
  }

  /**
   * llama.cpp's rendering of one token (token_to_piece, no leading-space strip). `special`
   * renders control tokens as their text instead of nothing. For exact token bytes prefer
   * src/vocab, which reads them from the GGUF.
   */
  tokenPiece(token: number, special = false): Uint8Array {
    return this.live.tokenPiece(token, special);
  }

  /** llama_token_attr bit set per token (see TokenAttr). */
  tokenAttributes(): Uint32Array {
    return this.live.tokenAttributes();
  }

  /** Every end-of-generation token id (eos, eot, eom, ...), as llama.cpp classifies them. */
  eogTokens(): Int32Array {
    this.eog ??= this.live.eogTokens();
    return this.eog;
  }

  /** The GGUF chat template (tokenizer.chat_template, or a named variant), or null. */
  chatTemplate(name?: string): string | null {
    return this.live.chatTemplate(name ?? null);
  }

  /** A GGUF metadata value rendered as a string, or null when absent. */
  meta(key: string): string | null {
    return this.live.meta(key);
  }

  metaKeys(): string[] {
    return this.live.metaKeys();
  }

  createContext(opts: ContextOptions = {}): LlamaContext {
    if (this.vocabOnly) throw new Error("a vocab-only model cannot create contexts");
    const nCtx = opts.nCtx ?? Math.min(4096, this.nCtxTrain > 0 ? this.nCtxTrain : 4096);
    const nBatch = opts.nBatch ?? Math.min(512, nCtx);
    const nSeqMax = opts.nSeqMax ?? 1;
    const threads = opts.threads ?? this.threads;
    const flash = opts.flashAttn ?? (this.offloaded ? "auto" : false);
    const nUbatch = opts.nUbatch ?? nBatch;
    if (opts.embeddings && nUbatch % nSeqMax !== 0) {
      // llama.cpp would abort the process (GGML_ASSERT) reserving the pooled graph.
      throw new RangeError(`an embedding context needs nUbatch (${nUbatch}) to be a multiple of nSeqMax (${nSeqMax})`);
    }
    const native = new (nativeAddon().Context)(
      this.live,
      nCtx,
      nBatch,
      nUbatch,
      nSeqMax,
      threads,
      opts.threadsBatch ?? threads,
      flash === "auto" ? -1 : flash ? 1 : 0,
      opts.kvUnified ?? true,
      opts.embeddings ?? false,
      opts.pooling ?? -1,
    );
    const ctx = new LlamaContext(this, native, opts.kvUnified ?? true, () => this.contexts.delete(ctx));
    this.contexts.add(ctx);
    return ctx;
  }

  /** Frees the weights, disposing this model's contexts first. */
  dispose(): void {
    if (!this.native) return;
    for (const ctx of [...this.contexts]) ctx.dispose();
    this.native.dispose();
    this.native = null;
  }
}

export class LlamaContext {
  readonly nCtx: number;
  readonly nBatch: number;
  readonly nSeqMax: number;
  readonly nVocab: number;
  /** Length of an output vector (llama_model_n_embd_out). */
  readonly nEmbd: number;
  /** An embedding context (ContextOptions.embeddings). */
  readonly embeddings: boolean;
  /** The pooling llama.cpp applies in an embedding context (PoolingType). */
  readonly pooling: PoolingType;
  private native: NativeContext | null;
  private readonly promptBatch: LlamaBatch;

  /** Use LlamaModel.createContext(). */
  constructor(
    readonly model: LlamaModel,
    native: NativeContext,
    /** One KV buffer for all sequences; otherwise one stream per sequence. */
    readonly kvUnified: boolean,
    private readonly onDispose: () => void,
  ) {
    this.native = native;
    const info = native.info();
    this.nCtx = info.nCtx;
    this.nBatch = info.nBatch;
    this.nSeqMax = info.nSeqMax;
    this.nVocab = info.nVocab;
    this.nEmbd = info.nEmbd;
    this.embeddings = info.embeddings;
    this.pooling = info.poolingType as PoolingType;
    this.promptBatch = new LlamaBatch(this.nBatch);
  }

  private get live(): NativeContext {
    if (!this.native) throw new ModelDisposedError("context is disposed");
    return this.native;
  }

  /** A batch sized for this context's nBatch. */
  createBatch(): LlamaBatch {
    return new LlamaBatch(this.nBatch);
  }

  private check(status: number, size: number): void {
    if (status === 1) throw new KvCacheFullError(size);
    if (status === 2) throw new DecodeAbortedError("decode aborted");
    if (status !== 0) throw new Error(`llama_decode returned ${status}`);
  }

  /** Evaluates the batch synchronously (blocks the event loop for the duration). */
  decode(batch: LlamaBatch): void {
    const status = batch.hasSharedRows
      ? this.live.decode(batch.length, batch.tokens, batch.positions, batch.seqIds, batch.wantLogits, batch.seqCounts, batch.extraSeqs)
      : this.live.decode(batch.length, batch.tokens, batch.positions, batch.seqIds, batch.wantLogits);
    this.check(status, batch.length);
  }

  /**
   * Evaluates the batch on the libuv thread pool. Until it settles every other call on this
   * context throws; the batch arrays were already copied, so the caller may refill them.
   */
  async decodeAsync(batch: LlamaBatch): Promise<void> {
    const status = await (batch.hasSharedRows
      ? this.live.decodeAsync(batch.length, batch.tokens, batch.positions, batch.seqIds, batch.wantLogits, batch.seqCounts, batch.extraSeqs)
      : this.live.decodeAsync(batch.length, batch.tokens, batch.positions, batch.seqIds, batch.wantLogits));
    this.check(status, batch.length);
  }

  /**
   * Logits of a batch row that asked for them in the last decode: a Float32Array of nVocab over
   * llama.cpp's own buffer (no copy). Writable — a sampler may mask in place. Valid until the
   * next decode, which detaches it (it then reads as length 0).
   */
  logits(row: number): Float32Array {
    return this.live.logits(row);
  }

  /** An embedding context with pooling: `seq`'s pooled vector after the last decode (a copy); null when it had no row there. */
  embeddingSeq(seq: number): Float32Array | null {
    return this.live.embeddingSeq(seq);
  }

  /** An embedding context without pooling: the output vector of a row of the last decode (a copy). */
  embeddingRow(row: number): Float32Array {
    return this.live.embeddingRow(row);
  }

  /**
   * Evaluates tokens for one sequence starting at position `start`, in nBatch-sized chunks, and
   * returns the logits after the last token (valid until the next decode).
   */
  evaluate(tokens: ArrayLike<number>, seq: number, start = 0): Float32Array {
    if (tokens.length === 0) throw new RangeError("evaluate: no tokens");
    const batch = this.promptBatch;
    for (let offset = 0; offset < tokens.length; offset += this.nBatch) {
      const end = Math.min(tokens.length, offset + this.nBatch);
      batch.clear();
      for (let i = offset; i < end; i++) batch.add(tokens[i]!, start + i, seq, i === tokens.length - 1);
      this.decode(batch);
    }
    return this.logits(batch.length - 1);
  }

  /** evaluate() with every chunk decoded off the main thread. */
  async evaluateAsync(tokens: ArrayLike<number>, seq: number, start = 0): Promise<Float32Array> {
    if (tokens.length === 0) throw new RangeError("evaluate: no tokens");
    const batch = this.promptBatch;
    for (let offset = 0; offset < tokens.length; offset += this.nBatch) {
      const end = Math.min(tokens.length, offset + this.nBatch);
      batch.clear();
      for (let i = offset; i < end; i++) batch.add(tokens[i]!, start + i, seq, i === tokens.length - 1);
      await this.decodeAsync(batch);
    }
    return this.logits(batch.length - 1);
  }

  /** Removes positions [p0, p1) of `seq` from the KV cache (seq -1: all sequences; p < 0: open end). */
  seqRemove(seq: number, p0 = -1, p1 = -1): boolean {
    return this.live.seqRemove(seq, p0, p1);
  }

  /**
   * Gives `dst` the cells of `src` at positions [p0, p1) (p < 0: open end). With the unified KV
   * cache (default) the cells are shared, no copy, and `dst` keeps its other cells. With
   * per-sequence streams (kvUnified false) llama.cpp can only copy a whole stream, so `dst` must be
   * empty unless the whole of `src` is copied.
   */
  seqCopy(src: number, dst: number, p0 = -1, p1 = -1): void {
    if (this.kvUnified || (p0 <= 0 && p1 < 0)) {
      this.live.seqCopy(src, dst, p0, p1);
      return;
    }
    // A partial cross-stream copy would abort the process (GGML_ASSERT in llama.cpp): copy the
    // whole stream, then cut it to the range.
    if (this.live.seqPosRange(dst)[0] >= 0) {
      throw new Error(`seqCopy: sequence ${dst} is not empty (partial copies need kvUnified)`);
    }
    this.live.seqCopy(src, dst, -1, -1);
    if (p1 >= 0) this.live.seqRemove(dst, p1, -1);
    if (p0 > 0) this.live.seqRemove(dst, 0, p0);
  }

  /** Drops every sequence except `seq`. */
  seqKeep(seq: number): void {
    this.live.seqKeep(seq);
  }

  /** [min, max] position of `seq` in the KV cache; [-1, -1] when empty. */
  seqPosRange(seq: number): [number, number] {
    return this.live.seqPosRange(seq);
  }

  clearMemory(): void {
    this.live.clearMemory();
  }

  setThreads(threads: number, threadsBatch = threads): void {
    this.live.setThreads(threads, threadsBatch);
  }

  dispose(): void {
    if (!this.native) return;
    this.native.dispose();
    this.native = null;
    this.onDispose();
  }
}

/** Loads a GGUF model. The first call also loads llama.cpp (backend chosen by opts / env). */
export function loadModel(path: string, opts: LoadModelOptions = {}): LlamaModel {
  const info = initRuntime(opts);
  const hasGpu = info.devices.some((d) => d.type === "gpu" || d.type === "igpu");
  const gpuLayers = opts.gpuLayers ?? (hasGpu ? -1 : 0);
  const vocabOnly = opts.vocabOnly ?? false;
  const native = new (nativeAddon().Model)(path, vocabOnly, gpuLayers, opts.useMmap ?? true);
  return new LlamaModel(native, vocabOnly, opts.threads ?? defaultThreadCount(), hasGpu && gpuLayers !== 0, path);
}
