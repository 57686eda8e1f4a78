/**
 * Continuous batching over one llama.cpp context: every admitted job contributes its rows for
 * this round (a sampled token, a prompt chunk, a scoring branch) to ONE batch, one decode runs,
 * then each job reads the logits of its rows. A job that arrives joins at the next round; a
 * finished one leaves and frees its sequences at once.
 */
import { type LlamaBatch, type LlamaContext, SequenceSlots } from "../model/index.js";
import { OverloadedError } from "../compile/index.js";

/**
 * Most time per round for jobs' work ahead of the logits (DecodeJob.aheadOfLogits): a new
 * grammar's walks ahead fit in it, and a round whose decode is shorter waits at most this long.
 */
const AHEAD_OF_LOGITS_MS = 12;

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
  /** Once, at admission, with the job's own sequence ids (empty KV). */
  begin(seqs: Int32Array, slots: SequenceSlots): void;
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

  constructor(
    readonly context: LlamaContext,
    private readonly options: SchedulerOptions,
  ) {
    this.slots = new SequenceSlots(context);
    this.batch = context.createBatch();
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
    while (
      this.waiting.length > 0 &&
      this.slots.available >= this.waiting[0]!.seqsNeeded &&
      this.reservedCells + (this.waiting[0]!.kvCells ?? 0) <= this.context.nCtx
    ) {
      const job = this.waiting.shift()!;
      if (job.signal?.aborted) {
        job.settle(job.signal.reason ?? new Error("aborted"));
        continue;
      }
      const seqs = new Int32Array(job.seqsNeeded);
      for (let i = 0; i < seqs.length; i++) seqs[i] = this.slots.acquire();
      const entry = { job, seqs, cells: job.kvCells ?? 0 };
      this.reservedCells += entry.cells;
      try {
        job.begin(seqs, this.slots);
      } catch (error) {
        this.finish(entry, error);
        continue;
      }
      this.running.push(entry);
    }
  }

  private finish(entry: Admitted, error?: unknown): void {
    const at = this.running.indexOf(entry);
    if (at >= 0) this.running.splice(at, 1);
    for (const seq of entry.seqs) if (this.slots.inUse(seq)) this.slots.release(seq);
    this.reservedCells -= entry.cells;
    entry.cells = 0;
    entry.job.settle(error);
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
          this.finish(entry, signal.reason ?? new Error("aborted"));
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
      const decoding = this.context.decodeAsync(batch);
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
