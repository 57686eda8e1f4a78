/**
 * A small pool of worker threads for work that must not run on the event loop: each task runs on
 * one worker under a wall-clock limit, and a task past it is stopped by terminating its worker
 * (a loop that never yields cannot be interrupted any other way), which is then replaced.
 *
 * Fairness: tasks wait in one queue per client (an API key, say) and are taken round-robin across
 * clients, with at most `perClientRunning` of one client's tasks running at once and at most
 * `perClientQueued` waiting; a client past that is refused at once (PoolBusyError), so one
 * client can never hold the whole pool. `maxQueued` bounds the waiting tasks of all clients.
 *
 * Burst workers: past the `size` workers any client may use, up to `burstSize` more run only a task
 * of a client that has none running. One client's expensive tasks then never make another's cheap
 * one wait (on `size` workers they would, whatever the round-robin: a running task is not
 * preempted), and one client never holds every worker, whatever `perClientRunning`. They are
 * started ahead (`warm`) and kept, since a compile worker takes ~0.7–1 s to become ready (its
 * trie, the TypeScript compiler), far longer than the cheap task it is there for.
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
  /** Workers for any client's tasks (started by `warm`, or on first need). */
  size: number;
  /**
   * Workers beyond `size`, each running only a task of a client that has none running while
   * `size` tasks run (default 1; 0: none).
   */
  burstSize?: number;
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
  /** `warm` was called: burst workers are started once the first `size` are ready. */
  private warmed = false;
  private readonly burstSize: number;
  private readonly counters = { completed: 0, timeouts: 0, deaths: 0, refused: 0 };

  constructor(private readonly options: WorkerPoolOptions) {
    if (!(options.size >= 1)) throw new RangeError("a worker pool needs at least one worker");
    this.burstSize = options.burstSize ?? 1;
    if (!(Number.isInteger(this.burstSize) && this.burstSize >= 0)) throw new RangeError("burstSize must be a whole number");
  }

  stats(): WorkerPoolStats {
    return {
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.task !== null).length,
      queued: this.queuedCount,
      ...this.counters,
    };
  }

  /**
   * Starts the workers ahead of the first task, unref'd: the `size` first, then the burst workers
   * once those are ready, so that they do not slow the first ones' start.
   */
  warm(): void {
    this.warmed = true;
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

  /**
   * Where in `rotation` the next client to serve is: the first with fewer than `share` tasks
   * running (round-robin, since a served client goes to the back), or -1.
   */
  private nextClient(share: number): number {
    for (let i = 0; i < this.rotation.length; i++) {
      if ((this.runningByClient.get(this.rotation[i]!) ?? 0) < share) return i;
    }
    return -1;
  }

  private take(at: number): Task {
    const client = this.rotation[at]!;
    const queue = this.waiting.get(client)!;
    const task = queue.shift()!;
    this.queuedCount--;
    this.rotation.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(client);
    else this.rotation.push(client); // to the back of the round
    return task;
  }

  private dispatch(): void {
    const { size, perClientRunning } = this.options;
    const most = size + this.burstSize;
    while (!this.closed) {
      let running = 0;
      let booting = 0;
      let idle: Slot | undefined;
      for (const slot of this.slots) {
        if (slot.task) running++;
        else if (!slot.ready) booting++;
        else idle ??= slot;
      }
      // Past `size` running, a worker is only for a client with nothing running.
      const share = running < size ? perClientRunning : running < most ? 1 : 0;
      const at = share > 0 ? this.nextClient(share) : -1;
      if (at < 0) return;
      if (!idle) {
        // Booting workers take the waiting tasks once ready: start one more only while they are
        // fewer than the tasks that could run now.
        if (this.slots.length < most && booting < Math.min(this.queuedCount, most - running)) this.startWorker();
        return;
      }
      this.start(idle, this.take(at));
    }
  }

  /** After `warm`, with the first `size` workers ready: the burst workers, kept ready. */
  private warmBurst(): void {
    if (!this.warmed || this.closed) return;
    const { size } = this.options;
    if (this.slots.length < size || this.slots.length >= size + this.burstSize) return;
    if (this.slots.every((s) => s.ready)) this.startWorker();
  }

  private startWorker(): Slot {
    const worker = this.options.spawn();
    const slot: Slot = { worker, ready: false, task: null, timer: undefined };
    worker.unref();
    worker.on("message", (message: { id: number; value?: unknown; error?: unknown; heapUsed?: number; ready?: boolean }) => {
      if (message.ready === true) {
        slot.ready = true;
        this.dispatch();
        this.warmBurst();
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
   * wait so long for a worker to boot (tasks go to it once it is ready, as to any worker).
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
