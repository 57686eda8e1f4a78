// Hostile input against the service as the README runs it (stories260K.gguf, its own process):
// every hostile request is answered with a 200, 400 or 422 in the JSON error shape, while the
// service's own event-loop delay (from /metrics: what its serving thread was blocked) stays under
// 100 ms at the 99th percentile, and another client polling /healthz every 50 ms is never stalled
// (p99 under 500 ms: its latency also holds the machine's other load — test files run two at a
// time, one of them with CPU hogs — so the 100 ms goal for it is measured alone, and printed here).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { REPO_ROOT, STORIES_260K } from "./support/paths.js";
import { hostileCases, type HostileCase } from "./support/hostile-cases.js";

const KEY = "hostile-suite-key";
/**
 * A hang detector, not a speed target: verdicts are counted work now, and a compile may use
 * TRELLIS_COMPILE_MAX_WORK (~0.5 s idle here) on a worker that a killed one's replacement (trie,
 * TypeScript: ~0.8 s) may still be starting, on two cores shared with the other test file.
 */
const ANSWER_WITHIN_MS = 5000;
/** The serving thread's own event-loop delay, p99. */
const EVENT_LOOP_P99_MS = 100;
/** A /healthz client's p99: a stall detector (the machine's other load is in it too). */
const HEALTH_P99_MS = 500;

let server: ChildProcess;
let base = "";
const dataDir = mkdtempSync(join(tmpdir(), "trellis-hostile-"));

/** Starts `trellis serve` as a child process and resolves with its URL (from its start-up line). */
function startService(): Promise<string> {
  server = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", "serve"], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TRELLIS_MODEL: STORIES_260K,
      TRELLIS_API_KEYS: KEY,
      TRELLIS_DATA_DIR: dataDir,
      TRELLIS_ADMIN_TOKEN: "hostile-suite-admin-token-0123456789",
      TRELLIS_THREADS: "1",
      TRELLIS_RATE_LIMIT: "0",
      TRELLIS_LOG_LEVEL: "error",
      HOST: "127.0.0.1",
      PORT: "0",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let log = "";
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${log}`)), 60_000);
    server.stderr!.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      const match = /listening on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    server.once("exit", (code) => reject(new Error(`service exited with ${code}:\n${log}`)));
  });
}

before(async () => {
  base = await startService();
});

after(async () => {
  if (server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Polls /healthz every 50 ms from its own thread (so this file's work does not delay it). */
function startPoller(url: string): { stop: () => Promise<number[]> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     const latencies = [];
     let stopping = false;
     async function poll() {
       while (!stopping) {
         const t0 = performance.now();
         try { const r = await fetch(workerData + "/healthz"); await r.text(); latencies.push(performance.now() - t0); }
         catch { latencies.push(Infinity); }
         await new Promise((r) => setTimeout(r, 50));
       }
       parentPort.postMessage(latencies);
     }
     parentPort.once("message", () => { stopping = true; });
     poll();`,
    { eval: true, workerData: url },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once("message", (latencies: number[]) => {
          void worker.terminate();
          resolve(latencies);
        });
        worker.postMessage("stop");
      }),
  };
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function send(c: HostileCase): Promise<{ status: number; ms: number; body: unknown; text: string }> {
  const t0 = performance.now();
  const response = await fetch(base + c.path, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: c.raw ?? JSON.stringify(c.body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  const ms = performance.now() - t0;
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // judged below
  }
  return { status: response.status, ms, body, text };
}

test("every hostile request is answered fast, in the JSON shape, while /healthz stays responsive", async () => {
  const cases = hostileCases();
  assert.ok(cases.length >= 110, `only ${cases.length} cases`);
  // One harmless request first: the model and the compile worker are warm, as in service.
  assert.equal((await send({ name: "warm", path: "/v1/completion/regex", body: { prompt: "Hi", pattern: "[a-z]{3}" } })).status, 200);
  const poller = startPoller(base);
  const failures: string[] = [];
  const timings: Record<string, number> = {};
  const statusCounts: Record<string, number> = {};
  for (const c of cases) {
    const { status, ms, body, text } = await send(c);
    timings[c.name] = Math.round(ms);
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    const allowed = c.expect ?? [200, 400, 422];
    const where = `${c.name}: ${status} in ${Math.round(ms)} ms: ${text.slice(0, 200)}`;
    if (!allowed.includes(status)) failures.push(`status not in ${allowed.join("/")}: ${where}`);
    if (ms > ANSWER_WITHIN_MS) failures.push(`slower than ${ANSWER_WITHIN_MS} ms: ${where}`);
    if (body === null || typeof body !== "object") {
      failures.push(`not JSON: ${where}`);
      continue;
    }
    if (status !== 200) {
      const e = body as { error?: unknown; code?: unknown };
      if (typeof e.error !== "string" || e.error.length === 0 || e.code !== status) failures.push(`not the error shape: ${where}`);
      else if (c.message && !c.message.test(e.error)) failures.push(`message does not match ${c.message}: ${where}`);
    }
  }
  const health = await poller.stop();
  const metrics = await (await fetch(base + "/metrics")).text();
  const delay99 = Number(/trellis_event_loop_delay_seconds\{quantile="0\.99"\} ([0-9.e+-]+)/.exec(metrics)?.[1]);
  const slowest = Object.entries(timings)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5);
  const summary = {
    cases: cases.length,
    statusCounts,
    slowestMs: Object.fromEntries(slowest),
    healthPolls: health.length,
    healthP50Ms: Math.round(quantile(health, 0.5)),
    healthP99Ms: Math.round(quantile(health, 0.99)),
    healthMaxMs: Math.round(Math.max(...health)),
    eventLoopDelayP99Ms: Math.round(delay99 * 1000),
  };
  process.stdout.write(`# ${JSON.stringify(summary)}\n`);
  assert.deepEqual(failures, []);
  assert.ok(health.length >= 20, `only ${health.length} health polls`);
  assert.ok(quantile(health, 0.99) <= HEALTH_P99_MS, `/healthz p99 ${quantile(health, 0.99)} ms`);
  assert.ok(Number.isFinite(delay99), "no event-loop delay in /metrics");
  assert.ok(delay99 <= EVENT_LOOP_P99_MS / 1000, `event-loop delay p99 ${delay99} s`);
});
