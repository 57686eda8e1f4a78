/**
 * A small pool of worker threads for work that must not run on the event loop: each task runs on
 * one worker under a wall-clock limit, and a task past it is stopped by terminating its worker
 * (a loop that never yields cannot be interrupted any other way), which is then replaced.
 *
 * Fairness: tasks wait in one queue per client (an API key, say) and are taken round-robin across
 * clients, with at most `perClientRunning` of one client's tasks running at once and at most
 * `perClientQueued` waiting; a client past that is refused at once (PoolClientLimitError), so one
 * client can never hold the whole pool. `maxQueued` bounds the waiting tasks of all clients.
 *
 * Protocol with the worker script: once loaded it posts `{ ready: true }` (tasks go only to ready
 * workers, so a worker's boot never counts against a task's limit); then it receives
 * `{ id, payload }` and answers `{ id, value }` or
 * `{ id, error }` (any structured-cloneable description), plus `heapUsed` (bytes) so a worker
 * whose heap has grown past `recycleHeapBytes` is replaced after its task. A worker that dies
 * (uncaught error, out of memory under its resource limits) fails only the task it was running.
 * Idle workers are unref'd: an idle pool never keeps the process alive.
 */
import type { Worker } from "node:worker_threads";

export interface WorkerPoolOptions {
  /** Workers at most (started on first need). */
  size: number;
  /** Starts one worker. */
  spawn: () => Worker;
  /** Tasks of one client running at once. */
  perClientRunning: number;
  /** Tasks of one client waiting; past it the task is refused. */
  perClientQueued: number;
  /** Tasks waiting in all; past it the task is refused. */
  maxQueued: number;
  /** A worker whose heap reports more than this after a task is replaced (0: never). */
  recycleHeapBytes?: number;
}

export interface TaskOptions {
  /** Who asked (fairness unit). */
  client: string;
  /** Wall-clock limit once the task runs; past it the worker is terminated. */
  timeoutMs: number;
  /** Aborts the task while it waits (a running task finishes: its result may be cached). */
  signal?: AbortSignal;
}

/** The worker answered with an error description (the caller interprets it). */
export class WorkerTaskError extends Error {
  constructor(readonly detail: unknown) {
    super("worker task failed");
    this.name = "WorkerTaskError";
  }
}

/** The task ran past its time limit; its worker was terminated. */
export class PoolTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`task took longer than ${timeoutMs} ms`);
    this.name = "PoolTimeoutError";
  }
}

/** The worker running the task died: out of memory under its resource limits, or a crash. */
export class PoolWorkerDiedError extends Error {
  constructor(
    message: string,
    /** Node's error code, e.g. ERR_WORKER_OUT_OF_MEMORY. */
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = "PoolWorkerDiedError";
  }
}

/** Too many tasks of this client (or of all clients) are waiting. */
export class PoolBusyError extends Error {
  constructor(
    message: string,
    /** True when it is this client's own share that is spent. */
    readonly perClient: boolean,
  ) {
    super(message);
    this.name = "PoolBusyError";
  }
}

export class PoolClosedError extends Error {
  constructor() {
    super("worker pool is closed");
    this.name = "PoolClosedError";
  }
}

interface Task {
  id: number;
  client: string;
  payload: unknown;
  timeoutMs: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface Slot {
  worker: Worker;
  /** The worker has loaded its script. */
  ready: boolean;
  task: Task | null;
  timer: NodeJS.Timeout | undefined;
}

export interface WorkerPoolStats {
  workers: number;
  busy: number;
  queued: number;
  completed: number;
  timeouts: number;
  deaths: number;
  refused: number;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  /** Waiting tasks per client, in arrival order; clients in `rotation` order. */
  private readonly waiting = new Map<string, Task[]>();
  private readonly rotation: string[] = [];
  private readonly runningByClient = new Map<string, number>();
  private queuedCount = 0;
  private nextId = 1;
  private closed = false;
  private readonly counters = { completed: 0, timeouts: 0, deaths: 0, refused: 0 };

  constructor(private readonly options: WorkerPoolOptions) {
    if (!(options.size >= 1)) throw new RangeError("a worker pool needs at least one worker");
  }

  stats(): WorkerPoolStats {
    return {
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.task !== null).length,
      queued: this.queuedCount,
      ...this.counters,
    };
  }

  /** Starts the workers ahead of the first task (each start costs tens of ms), unref'd. */
  warm(): void {
    while (!this.closed && this.slots.length < this.options.size) this.startWorker();
  }

  /** Runs `payload` on a worker; resolves with its `value`, rejects with one of the errors above. */
  run(payload: unknown, options: TaskOptions): Promise<unknown> {
    if (this.closed) return Promise.reject(new PoolClosedError());
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    const queue = this.waiting.get(options.client);
    if ((queue?.length ?? 0) >= this.options.perClientQueued) {
      this.counters.refused++;
      return Promise.reject(new PoolBusyError(`${queue!.length} compiles of this client are already waiting`, true));
    }
    if (this.queuedCount >= this.options.maxQueued) {
      this.counters.refused++;
      return Promise.reject(new PoolBusyError(`${this.queuedCount} compiles are already waiting`, false));
    }
    return new Promise((resolve, reject) => {
      const task: Task = {
        id: this.nextId++,
        client: options.client,
        payload,
        timeoutMs: options.timeoutMs,
        resolve,
        reject,
        signal: options.signal,
        onAbort: undefined,
      };
      if (options.signal) {
        task.onAbort = () => this.dropWaiting(task);
        options.signal.addEventListener("abort", task.onAbort, { once: true });
      }
      this.enqueue(task);
      this.dispatch();
    });
  }

  /** Terminates every worker; waiting tasks are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.waiting.values()) for (const task of queue) this.settle(task, new PoolClosedError(), false);
    this.waiting.clear();
    this.rotation.length = 0;
    this.queuedCount = 0;
    const slots = this.slots.splice(0);
    await Promise.all(
      slots.map((slot) => {
        if (slot.timer) clearTimeout(slot.timer);
        if (slot.task) this.settle(slot.task, new PoolClosedError(), false);
        return slot.worker.terminate();
      }),
    );
  }

  private enqueue(task: Task): void {
    let queue = this.waiting.get(task.client);
    if (!queue) {
      queue = [];
      this.waiting.set(task.client, queue);
      this.rotation.push(task.client);
    }
    queue.push(task);
    this.queuedCount++;
  }

  private dropWaiting(task: Task): void {
    const queue = this.waiting.get(task.client);
    const index = queue ? queue.indexOf(task) : -1;
    if (index < 0) return; // already running: it finishes (its result may serve later requests)
    queue!.splice(index, 1);
    this.queuedCount--;
    if (queue!.length === 0) this.forgetClient(task.client);
    task.reject(task.signal!.reason);
  }

  private forgetClient(client: string): void {
    this.waiting.delete(client);
    const at = this.rotation.indexOf(client);
    if (at >= 0) this.rotation.splice(at, 1);
  }

  /** The next task by round-robin over clients with running share left, or null. */
  private takeNext(): Task | null {
    for (let i = 0; i < this.rotation.length; i++) {
      const client = this.rotation[i]!;
      if ((this.runningByClient.get(client) ?? 0) >= this.options.perClientRunning) continue;
      const queue = this.waiting.get(client)!;
      const task = queue.shift()!;
      this.queuedCount--;
      this.rotation.splice(i, 1);
      if (queue.length === 0) this.waiting.delete(client);
      else this.rotation.push(client); // to the back of the round
      return task;
    }
    return null;
  }

  private dispatch(): void {
    while (!this.closed) {
      if (this.slots.length < this.options.size && this.queuedCount > 0) this.startWorker();
      const slot = this.slots.find((s) => s.ready && s.task === null);
      if (!slot) return;
      const task = this.takeNext();
      if (!task) return;
      this.start(slot, task);
    }
  }

  private startWorker(): Slot {
    const worker = this.options.spawn();
    const slot: Slot = { worker, ready: false, task: null, timer: undefined };
    worker.unref();
    worker.on("message", (message: { id: number; value?: unknown; error?: unknown; heapUsed?: number; ready?: boolean }) => {
      if (message.ready === true) {
        slot.ready = true;
        this.dispatch();
      } else this.onMessage(slot, message);
    });
    worker.on("error", (error: Error & { code?: string }) => this.onDeath(slot, error));
    worker.on("exit", (code) => this.onDeath(slot, new PoolWorkerDiedError(`worker exited with code ${code}`, undefined)));
    this.slots.push(slot);
    return slot;
  }

  private start(slot: Slot, task: Task): void {
    if (task.signal && task.onAbort) task.signal.removeEventListener("abort", task.onAbort);
    slot.task = task;
    this.runningByClient.set(task.client, (this.runningByClient.get(task.client) ?? 0) + 1);
    slot.worker.ref();
    slot.timer = setTimeout(() => this.onTimeout(slot), task.timeoutMs);
    slot.worker.postMessage({ id: task.id, payload: task.payload });
  }

  /** The slot's task is over: frees its share and the slot. */
  private finish(slot: Slot): Task | null {
    const task = slot.task;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.task = null;
    if (task) {
      const running = (this.runningByClient.get(task.client) ?? 1) - 1;
      if (running > 0) this.runningByClient.set(task.client, running);
      else this.runningByClient.delete(task.client);
    }
    return task;
  }

  private onMessage(slot: Slot, message: { id: number; value?: unknown; error?: unknown; heapUsed?: number }): void {
    if (!slot.task || slot.task.id !== message.id) return;
    const task = this.finish(slot)!;
    this.counters.completed++;
    if ("error" in message) this.settle(task, new WorkerTaskError(message.error), false);
    else this.settle(task, message.value, true);
    const recycle = this.options.recycleHeapBytes ?? 0;
    if (recycle > 0 && (message.heapUsed ?? 0) > recycle) this.replace(slot);
    else slot.worker.unref();
    this.dispatch();
  }

  private onTimeout(slot: Slot): void {
    const task = this.finish(slot);
    if (!task) return;
    this.counters.timeouts++;
    this.replace(slot);
    this.settle(task, new PoolTimeoutError(task.timeoutMs), false);
    this.dispatch();
  }

  private onDeath(slot: Slot, error: Error & { code?: string }): void {
    const index = this.slots.indexOf(slot);
    if (index < 0) return; // replaced or closed already
    this.slots.splice(index, 1);
    const task = this.finish(slot);
    void slot.worker.terminate();
    if (task) {
      this.counters.deaths++;
      this.settle(task, error instanceof PoolWorkerDiedError ? error : new PoolWorkerDiedError(error.message, error.code), false);
    }
    // A worker that dies with no task (its script failed to load) is not restarted until a task
    // comes, so a broken script cannot spin.
    this.dispatch();
  }

  /**
   * Terminates the slot's worker and starts its successor at once, so the next task does not
   * wait for a worker to boot.
   */
  private replace(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    void slot.worker.terminate();
    if (!this.closed) this.startWorker();
  }

  private settle(task: Task, outcome: unknown, ok: boolean): void {
    if (task.signal && task.onAbort) task.signal.removeEventListener("abort", task.onAbort);
    if (ok) task.resolve(outcome);
    else task.reject(outcome);
  }
}
