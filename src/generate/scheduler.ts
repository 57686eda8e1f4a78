/**
 * Continuous batching over one llama.cpp context: every admitted job contributes its rows for
 * this round (a sampled token, a prompt chunk, a scoring branch) to ONE batch, one decode runs,
 * then each job reads the logits of its rows. A job that arrives joins at the next round; a
 * finished one leaves and frees its sequences at once.
 */
import { KvCacheFullError, type LlamaBatch, type LlamaContext, SequenceSlots } from "../model/index.js";
import { OverloadedError } from "../compile/index.js";
import { PrefixCache, type PrefixCacheOptions } from "./prefix-cache.js";

/**
 * Most time per round for jobs' work ahead of the logits (DecodeJob.aheadOfLogits): a new
 * grammar's walks ahead fit in it, and a round whose decode is shorter waits at most this long.
 */
export const AHEAD_OF_LOGITS_MS = 12;

export interface DecodeJob {
  /** Sequence ids the job holds while admitted. */
  readonly seqsNeeded: number;
  /**
   * Most KV cells the job can occupy (prompt + every token it may add, over all its sequences).
   * The context's cells are shared by every sequence, so jobs are admitted only while their
   * reservations fit: otherwise concurrent valid requests overflow the cache mid-decode
   * (KvCacheFullError for everyone in that batch). Undefined: not reserved (the job's risk).
   */
  readonly kvCells?: number;
  /** True while the job still feeds prompt tokens: such jobs fill after the decoding ones. */
  readonly prefilling: boolean;
  /**
   * The tokens its first sequence begins with (its prompt): the prefix cache may give that
   * sequence the KV cells of a cached prefix of them. Absent: the job takes empty sequences.
   */
  readonly promptTokens?: Int32Array;
  /**
   * Once, at admission, with the job's own sequence ids: empty, except that the first holds
   * the first `reused` tokens of promptTokens when the prefix cache had them (0: none).
   */
  begin(seqs: Int32Array, slots: SequenceSlots, reused: number): void;
  /**
   * When it has finished or was cancelled: the tokens whose KV cells its first sequence holds
   * (for the prefix cache), or null when there is nothing to keep.
   */
  keptTokens?(): Int32Array | null;
  /**
   * Adds this round's rows (at most `room`). May add none (waiting for nothing is a bug: a job
   * that adds no row and is not finished after consume() would spin, so the scheduler fails it).
   */
  fill(batch: LlamaBatch, slots: SequenceSlots, room: number): void;
  /**
   * Work that does not need this round's logits, until `deadline` (performance.now() time) where
   * it can stop: run while the model evaluates the round (the decode runs on native threads) when
   * the scheduler's overlapDecode allows (`whileDecoding`), else just before the decode.
   */
  aheadOfLogits?(deadline: number, whileDecoding: boolean): void;
  /** Reads the logits of its rows after the decode; true when the job has finished. */
  consume(ctx: LlamaContext): boolean;
  /** The abort signal of the request, checked every round. */
  readonly signal: AbortSignal | undefined;
  /** Called exactly once: with no error on success. */
  settle(error?: unknown): void;
}

/**
 * Work on another context of the same model (the embedding lane, embeddings.ts) that takes turns
 * with the decode rounds: after each round, one step of each pending side work. Never at the same
 * time as a round's decode: both would run ggml's threads on the same cores (or the same device),
 * and spinning threads of two graphs stall each other. Taking turns bounds what each side waits
 * for to one step of the other.
 */
export interface SideWork {
  /** Something is waiting for a step. */
  readonly pending: boolean;
  /** One bounded step (one decode). Failures settle the side work's own requests; it never throws. */
  step(): Promise<void>;
}

interface Admitted {
  job: DecodeJob;
  seqs: Int32Array;
  cells: number;
}

export interface SchedulerOptions {
  /** Jobs waiting for sequences before submit() refuses with OverloadedError. */
  maxQueue: number;
  /**
   * Whether jobs' work ahead of the logits (DecodeJob.aheadOfLogits) runs while the model
   * evaluates, or just before. Only when the decode leaves a core free (GPU, or fewer llama.cpp
   * threads than cores): ggml's threads spin-wait for each other, and one of them preempted by
   * this thread stalls them all (see DESIGN.md, Threads).
   */
  overlapDecode?: boolean;
  /** The prefix cache's limits (prefix-cache.ts); absent or maxTokens 0: off. */
  prefixCache?: PrefixCacheOptions;
}

export class DecodeScheduler {
  readonly slots: SequenceSlots;
  private readonly batch: LlamaBatch;
  private readonly waiting: DecodeJob[] = [];
  private readonly running: Admitted[] = [];
  private loopActive = false;
  private closed = false;
  /** KV cells reserved by the admitted jobs. */
  private reservedCells = 0;
  private readonly sideWork: SideWork[] = [];
  /** Finished sequences kept for the prompts that begin like them (prefix-cache.ts). */
  readonly prefixCache: PrefixCache;

  constructor(
    readonly context: LlamaContext,
    private readonly options: SchedulerOptions,
  ) {
    this.slots = new SequenceSlots(context);
    this.batch = context.createBatch();
    this.prefixCache = new PrefixCache(this.slots, options.prefixCache ?? { maxTokens: 0, maxEntries: 0 });
  }

  get queueDepth(): number {
    return this.waiting.length;
  }

  get activeJobs(): number {
    return this.running.length;
  }

  /** Share of the context's KV cells reserved by admitted jobs, 0 … 1 (what routers balance on). */
  get kvCacheUtilization(): number {
    return this.context.nCtx > 0 ? this.reservedCells / this.context.nCtx : 0;
  }

  /** Queues the job; it settles through job.settle(). */
  submit(job: DecodeJob): void {
    if (this.closed) {
      job.settle(new OverloadedError("the service is shutting down", 5));
      return;
    }
    if (job.seqsNeeded > this.slots.capacity) {
      job.settle(new Error(`job needs ${job.seqsNeeded} sequences, the context has ${this.slots.capacity}`));
      return;
    }
    if ((job.kvCells ?? 0) > this.context.nCtx) {
      job.settle(new Error(`job needs ${job.kvCells} KV cells, the context has ${this.context.nCtx}`));
      return;
    }
    if (this.waiting.length >= this.options.maxQueue) {
      job.settle(new OverloadedError(`generation queue is full (${this.options.maxQueue} waiting)`, 1));
      return;
    }
    this.waiting.push(job);
    if (!this.loopActive) void this.loop();
  }

  /** Takes `work` into the turns (see SideWork); wake() when it has something pending. */
  addSideWork(work: SideWork): void {
    this.sideWork.push(work);
  }

  /** Starts the loop if it is idle (a side work got something to do). */
  wake(): void {
    if (!this.loopActive) void this.loop();
  }

  /** Refuses new jobs; running and queued ones finish. */
  close(): void {
    this.closed = true;
  }

  private admit(): void {
    const cache = this.prefixCache;
    while (this.waiting.length > 0) {
      const job = this.waiting[0]!;
      const prompt = job.promptTokens;
      const cells = job.kvCells ?? 0;
      // Blocked by running jobs, not by the cache: wait without scanning the cache every round.
      if (this.slots.available + cache.size < job.seqsNeeded || this.reservedCells + cells > this.context.nCtx) break;
      // The cached prefix to reuse, found first so that making room does not evict it, unless
      // nothing else can go.
      let hit = prompt !== undefined && prompt.length > 1 ? cache.match(prompt, prompt.length - 1) : null;
      const fits = () => this.slots.available >= job.seqsNeeded && this.reservedCells + cache.tokens + cells <= this.context.nCtx;
      while (!fits() && cache.evictOne(hit?.seq ?? -1)) {}
      if (!fits() && hit !== null && cache.evictOne()) hit = null;
      while (!fits() && cache.evictOne()) {}
      if (!fits()) break;
      this.waiting.shift();
      if (job.signal?.aborted) {
        job.settle(job.signal.reason ?? new Error("aborted"));
        continue;
      }
      const seqs = new Int32Array(job.seqsNeeded);
      for (let i = 0; i < seqs.length; i++) seqs[i] = this.slots.acquire();
      let reused = 0;
      if (prompt !== undefined) cache.admitted(prompt.length);
      if (hit !== null && cache.holds(hit.seq)) {
        this.context.seqCopy(hit.seq, seqs[0]!, 0, hit.length);
        this.slots.lengths[seqs[0]!] = hit.length;
        cache.use(hit.seq, hit.length);
        reused = hit.length;
      }
      const entry = { job, seqs, cells };
      this.reservedCells += entry.cells;
      try {
        job.begin(seqs, this.slots, reused);
      } catch (error) {
        this.finish(entry, error);
        continue;
      }
      this.running.push(entry);
    }
  }

  /**
   * Ends a job. `consistent`: its sequences' cells hold exactly the tokens it fed (it finished, or
   * was cancelled between rounds), so the prefix cache may keep its first; after a failure (a
   * decode that failed or was aborted midway, a throw) they may not.
   */
  private finish(entry: Admitted, error?: unknown, consistent = error === undefined): void {
    const at = this.running.indexOf(entry);
    if (at >= 0) this.running.splice(at, 1);
    const kept = consistent ? this.keptTokensOf(entry) : null;
    for (let i = 0; i < entry.seqs.length; i++) {
      const seq = entry.seqs[i]!;
      if (!this.slots.inUse(seq)) continue;
      if (i === 0 && kept !== null) this.prefixCache.keep(seq, kept);
      else this.slots.release(seq);
    }
    this.reservedCells -= entry.cells;
    entry.cells = 0;
    entry.job.settle(error);
  }

  /** The tokens the job's first sequence holds, when they agree with the slots' count (else null). */
  private keptTokensOf(entry: Admitted): Int32Array | null {
    if (!this.prefixCache.enabled || entry.seqs.length === 0 || entry.job.keptTokens === undefined) return null;
    const tokens = entry.job.keptTokens();
    return tokens !== null && tokens.length === this.slots.lengths[entry.seqs[0]!] ? tokens : null;
  }

  /** The round's jobs' work ahead of the logits; a failure here is left to consume(). */
  private aheadOfLogits(filled: Admitted[], whileDecoding: boolean): void {
    const deadline = performance.now() + AHEAD_OF_LOGITS_MS;
    for (const entry of filled) {
      try {
        entry.job.aheadOfLogits?.(deadline, whileDecoding);
      } catch {
        // consume() repeats whatever failed and fails the job there, with the decode's logits in hand.
      }
    }
  }

  private async loop(): Promise<void> {
    this.loopActive = true;
    try {
      for (;;) {
        this.admit();
        const sidePending = this.sideWork.some((work) => work.pending);
        if (this.running.length === 0 && !sidePending) break;
        if (this.running.length > 0) await this.round();
        for (const work of this.sideWork) if (work.pending) await work.step();
        // Let I/O (new requests, disconnects) run between rounds.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.loopActive = false;
    }
  }

  /**
   * The round's decode. Reservations keep the admitted jobs' cells within the context, but the
   * cells the prefix cache holds may still leave no slot for a batch (llama.cpp places a batch
   * in free cells, and cached entries fragment them): the cache is emptied and the decode tried
   * again once.
   */
  private async decode(batch: LlamaBatch): Promise<void> {
    try {
      await this.context.decodeAsync(batch);
    } catch (error) {
      if (!(error instanceof KvCacheFullError) || this.prefixCache.size === 0) throw error;
      this.prefixCache.clear();
      await this.context.decodeAsync(batch);
    }
  }

  /** One decode for every admitted job: fill, decode, consume. */
  private async round(): Promise<void> {
    const batch = this.batch;
    batch.clear();
    const filled: Admitted[] = [];
    for (const pass of [false, true]) {
      for (const entry of [...this.running]) {
        if (entry.job.prefilling !== pass) continue;
        const signal = entry.job.signal;
        if (signal?.aborted) {
          // Between rounds: every decode it took part in completed.
          this.finish(entry, signal.reason ?? new Error("aborted"), true);
          continue;
        }
        const room = batch.capacity - batch.length;
        if (room <= 0) continue;
        const before = batch.length;
        try {
          entry.job.fill(batch, this.slots, room);
        } catch (error) {
          batch.length = before;
          this.finish(entry, error);
          continue;
        }
        if (batch.length > before) filled.push(entry);
      }
    }
    if (batch.length === 0) {
      // Nobody needs the model this round: every remaining job is stuck.
      for (const entry of [...this.running]) this.finish(entry, new Error("decode job made no progress"));
      return;
    }
    try {
      const overlap = this.options.overlapDecode === true;
      if (!overlap) this.aheadOfLogits(filled, false);
      const decoding = this.decode(batch);
      if (overlap) this.aheadOfLogits(filled, true);
      await decoding;
    } catch (error) {
      for (const entry of filled) this.finish(entry, error);
      return;
    }
    for (const entry of filled) {
      let done: boolean;
      try {
        done = entry.job.consume(this.context);
      } catch (error) {
        this.finish(entry, error);
        continue;
      }
      if (done) this.finish(entry);
    }
  }
}

/** Runs a job through the scheduler as a promise. */
export function runJob<T>(
  scheduler: DecodeScheduler,
  make: (settle: (error?: unknown) => void) => DecodeJob & { result(): T },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const job = make((error) => {
      if (error !== undefined) reject(error);
      else resolve(job.result());
    });
    scheduler.submit(job);
  });
}
