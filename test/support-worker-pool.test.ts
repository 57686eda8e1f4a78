// The worker pool under hostile work: a task that never yields is stopped at its limit and its
// worker replaced; a worker that runs out of memory fails only its task; one client cannot hold
// the pool (round-robin, per-client running and waiting caps); a waiting task can be aborted;
// a worker's start never counts against a task's limit; burst workers serve another client's task
// while one client's long task runs.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import { PoolBusyError, PoolTimeoutError, PoolWorkerDiedError, WorkerPool, WorkerTaskError } from "../src/support/index.js";

/**
 * A worker answering `{ op }` payloads: "echo" (value back after `ms`, busy-waiting: no yield),
 * "spin" (loops forever), "grow" (allocates until the heap limit), "fail" (an error answer),
 * "heap" (reports a large heap so the pool recycles it), "sleep" (value back after `ms` asleep:
 * a long task that leaves the 2 cores to the others).
 */
const SCRIPT = `
const { parentPort, threadId } = require("node:worker_threads");
parentPort.on("message", ({ id, payload }) => {
  const { op, value, ms } = payload;
  if (op === "spin") for (;;) {}
  if (op === "grow") { const keep = []; for (;;) keep.push(new Array(1e6).fill(keep.length)); }
  if (op === "fail") return parentPort.postMessage({ id, error: { reason: "bad input" } });
  if (op === "sleep") Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  else {
  const until = Date.now() + (ms ?? 0);
  while (Date.now() < until) {}
  }
  parentPort.postMessage({ id, value: { value, threadId }, heapUsed: op === "heap" ? 1e12 : 0 });
});
parentPort.postMessage({ ready: true });
`;

const pools: WorkerPool[] = [];
function pool(options: Partial<ConstructorParameters<typeof WorkerPool>[0]> = {}): WorkerPool {
  const p = new WorkerPool({
    size: 1,
    spawn: () => new Worker(SCRIPT, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 32 } }),
    perClientRunning: 1,
    perClientQueued: 8,
    maxQueued: 64,
    recycleHeapBytes: 1e9,
    ...options,
  });
  pools.push(p);
  return p;
}
after(async () => {
  for (const p of pools) await p.close();
});

type Answer = { value: unknown; threadId: number };

/** Waits until every worker of the pool has loaded (a first task each), as a warm service's are. */
async function warm(p: WorkerPool, workers = 1): Promise<void> {
  await Promise.all(Array.from({ length: workers }, (_, i) => p.run({ op: "echo", ms: 50 }, { client: `warm${i}`, timeoutMs: 10_000 })));
}

test("a task answers with its value; an error answer rejects with its description", async () => {
  const p = pool();
  const answer = (await p.run({ op: "echo", value: 42 }, { client: "a", timeoutMs: 5000 })) as Answer;
  assert.equal(answer.value, 42);
  await assert.rejects(
    p.run({ op: "fail" }, { client: "a", timeoutMs: 5000 }),
    (e: unknown) => e instanceof WorkerTaskError && (e.detail as { reason: string }).reason === "bad input",
  );
});

test("a task that never yields is stopped at its limit; its worker is replaced and the next task runs", async () => {
  const p = pool();
  const first = (await p.run({ op: "echo", value: 1 }, { client: "a", timeoutMs: 5000 })) as Answer;
  // Not before its limit: a shorter timer started before the task fires first (timers fire in
  // the order they are due), while the task still runs.
  let settled = false;
  const sooner = new Promise<boolean>((resolve) => setTimeout(() => resolve(settled), 100));
  const spin = p.run({ op: "spin" }, { client: "a", timeoutMs: 200 });
  spin.then(
    () => (settled = true),
    () => (settled = true),
  );
  // The task never answers: only its limit can end it, with the error naming that limit.
  await assert.rejects(spin, (e: unknown) => e instanceof PoolTimeoutError && e.timeoutMs === 200);
  assert.equal(await sooner, false, "the task was stopped before its limit");
  const next = (await p.run({ op: "echo", value: 2 }, { client: "a", timeoutMs: 5000 })) as Answer;
  assert.equal(next.value, 2);
  assert.notEqual(next.threadId, first.threadId, "the spinning worker was not replaced");
  assert.equal(p.stats().timeouts, 1);
});

test("a worker out of memory fails only its task, with Node's out-of-memory code", async () => {
  const p = pool();
  await assert.rejects(
    p.run({ op: "grow" }, { client: "a", timeoutMs: 30_000 }),
    (e: unknown) => e instanceof PoolWorkerDiedError && e.code === "ERR_WORKER_OUT_OF_MEMORY",
  );
  assert.equal(((await p.run({ op: "echo", value: 3 }, { client: "a", timeoutMs: 5000 })) as Answer).value, 3);
  assert.equal(p.stats().deaths, 1);
});

test("clients are served round-robin: a client with many tasks does not delay another's", async () => {
  // One worker and no burst worker: a burst worker still booting would take polite's task and
  // finish it after greedy's, which says nothing of the rotation.
  const p = pool({ perClientRunning: 2, perClientQueued: 20, burstSize: 0 });
  await warm(p);
  const order: string[] = [];
  const run = (client: string, i: number) =>
    p
      .run({ op: "echo", value: `${client}${i}`, ms: 20 }, { client, timeoutMs: 5000 })
      .then((a) => order.push((a as Answer).value as string));
  const greedy = Array.from({ length: 6 }, (_, i) => run("greedy", i));
  const polite = run("polite", 0);
  await Promise.all([...greedy, polite]);
  // One worker: the first greedy task was running, then the rotation reaches polite next.
  assert.ok(order.indexOf("polite0") <= 2, `polite waited behind greedy: ${order.join(" ")}`);
});

test("a client past its waiting share is refused at once; others are not", async () => {
  const p = pool({ perClientRunning: 1, perClientQueued: 2 });
  await warm(p);
  const running = [0, 1, 2].map((i) => p.run({ op: "echo", value: i, ms: 100 }, { client: "x", timeoutMs: 5000 }));
  await assert.rejects(
    p.run({ op: "echo", value: 3 }, { client: "x", timeoutMs: 5000 }),
    (e: unknown) => e instanceof PoolBusyError && e.perClient,
  );
  assert.equal(((await p.run({ op: "echo", value: "y" }, { client: "y", timeoutMs: 5000 })) as Answer).value, "y");
  await Promise.all(running);
  assert.equal(p.stats().refused, 1);
});

test("one client never runs more than its share at once, even with workers free", async () => {
  const p = pool({ size: 2, perClientRunning: 1 });
  await warm(p, 2);
  const threads = new Set<number>();
  let busyMax = 0;
  const timer = setInterval(() => (busyMax = Math.max(busyMax, p.stats().busy)), 2);
  await Promise.all(
    [0, 1, 2].map((i) =>
      p.run({ op: "echo", value: i, ms: 60 }, { client: "solo", timeoutMs: 5000 }).then((a) => threads.add((a as Answer).threadId)),
    ),
  );
  clearInterval(timer);
  assert.equal(busyMax, 1);
});

test("an aborted waiting task is dropped and rejects with the abort reason", async () => {
  const p = pool({ burstSize: 0 });
  await warm(p);
  const blocker = p.run({ op: "echo", value: 0, ms: 150 }, { client: "a", timeoutMs: 5000 });
  const controller = new AbortController();
  const waiting = p.run({ op: "echo", value: 1 }, { client: "b", timeoutMs: 5000, signal: controller.signal });
  controller.abort(new Error("client gone"));
  await assert.rejects(waiting, /client gone/);
  assert.equal(p.stats().queued, 0);
  await blocker;
});

test("tasks wait for a worker to load: its start (1.5 s here) counts against no task's limit, a recycled one's neither", async () => {
  // Asleep before it reports ready, as a compile worker is while it builds its trie and loads TypeScript.
  const slowStart = `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);\n${SCRIPT}`;
  const p = pool({ spawn: () => new Worker(slowStart, { eval: true }), recycleHeapBytes: 1e6, burstSize: 0 });
  const first = (await p.run({ op: "heap", value: "late" }, { client: "a", timeoutMs: 500 })) as Answer;
  assert.equal(first.value, "late");
  // Its heap report retired it: the task that comes meanwhile waits for the successor to start.
  const next = (await p.run({ op: "echo", value: "again" }, { client: "a", timeoutMs: 500 })) as Answer;
  assert.equal(next.value, "again");
  assert.notEqual(next.threadId, first.threadId);
  assert.equal(p.stats().timeouts, 0);
});

/** Runs `op` for `client`, recording `label` in `order` when it answers. */
function recorder(p: WorkerPool, order: string[]) {
  return (label: string, client: string, payload: object) =>
    p.run(payload, { client, timeoutMs: 10_000 }).then((answer) => {
      order.push(label);
      return answer as Answer;
    });
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

test("a burst worker answers another client's short task while one client's long task holds the only worker", async () => {
  const p = pool({ size: 1 });
  const order: string[] = [];
  const run = recorder(p, order);
  const long = run("a-long", "a", { op: "sleep", ms: 2000 });
  await until(() => p.stats().busy === 1);
  const short = await run("b-short", "b", { op: "echo", ms: 10 });
  assert.deepEqual(order, ["b-short"]);
  assert.notEqual(short.threadId, (await long).threadId);
  assert.deepEqual(order, ["b-short", "a-long"]);
  assert.equal(p.stats().workers, 2);
});

// With perClientRunning 2, client a could run 2 tasks on 2 general workers, but size is 1: the
// burst worker is only for clients with nothing running.
for (const perClientRunning of [1, 2]) {
  test(`a client's second task waits for its first, a burst worker idle or not (perClientRunning ${perClientRunning})`, async () => {
    const p = pool({ size: 1, perClientRunning });
    const order: string[] = [];
    const run = recorder(p, order);
    const first = run("a1", "a", { op: "sleep", ms: 600 });
    await until(() => p.stats().busy === 1);
    const second = run("a2", "a", { op: "echo", ms: 10 });
    const other = run("b", "b", { op: "echo", ms: 10 });
    await Promise.all([first, second, other]);
    assert.deepEqual(order, ["b", "a1", "a2"]);
  });
}

test("burst workers: warm starts them after the first ones and keeps them", async () => {
  const kept = pool({ size: 1, burstSize: 1 });
  kept.warm();
  await until(() => kept.stats().workers === 2);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(kept.stats().workers, 2, "a kept burst worker retired");
});

test("a worker reporting a large heap is replaced after its task", async () => {
  const p = pool({ recycleHeapBytes: 1e6 });
  const a = (await p.run({ op: "heap", value: 1 }, { client: "a", timeoutMs: 5000 })) as Answer;
  const b = (await p.run({ op: "echo", value: 2 }, { client: "a", timeoutMs: 5000 })) as Answer;
  assert.notEqual(a.threadId, b.threadId);
});
