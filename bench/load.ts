/**
 * Load test on loopback: the service with stories260K.gguf (real engine) or the fake engine
 * (`--fake`, or automatically while src/engine.ts does not exist), 32 concurrent
 * clients for 60 s by default, a mix of regex / grammar / categorize requests.
 *
 * Prints one JSON object: requests/s, latency p50/p99, status counts, RSS before/after.
 * Exits 1 if any answer was a 5xx other than the documented 503, or a socket error/timeout.
 *
 * Env: TRELLIS_BENCH_DURATION (seconds, default 60), TRELLIS_BENCH_CONNECTIONS (default 32),
 *      TRELLIS_BENCH_RATE_LIMIT (per-key requests/minute, default 0 = off).
 */
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { createService } from "../src/dashboard/index.js";
import { KeyStore, sha256Hex } from "../src/store/keys.js";
import { defaultConfig, type Config } from "../src/config.js";
import type { Engine } from "../src/generate/types.js";
import type { EngineFactoryOptions } from "../src/cli.js";
import { STORIES_260K } from "../test/helpers/paths.js";
import { createFakeEngine } from "../test/server-helpers.js";

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number; average: number };
  statusCodeStats: Record<string, { count: number }>;
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const durationS = Number(process.env.TRELLIS_BENCH_DURATION ?? 60);
const connections = Number(process.env.TRELLIS_BENCH_CONNECTIONS ?? 32);
const rateLimit = Number(process.env.TRELLIS_BENCH_RATE_LIMIT ?? 0);
const wantFake = process.argv.includes("--fake") || process.env.TRELLIS_BENCH_FAKE === "1";
const KEY = "bench-key";

async function makeEngine(): Promise<{ engine: Engine; label: string }> {
  if (!wantFake) {
    const module = await import("../src/engine.js");
    if (!existsSync(STORIES_260K)) throw new Error(`${STORIES_260K} missing`);
    const engine = await module.createEngine({ modelPath: STORIES_260K, threads: 2, contextSize: 512, maxSequences: 4, gpu: "" });
    return { engine, label: "real:stories260K.gguf" };
  }
  const engine = createFakeEngine();
  engine.delayMs = 2;
  engine.record = false;
  return { engine, label: "fake (--fake)" };
}

const rssMb = () => Math.round((process.memoryUsage().rss / 1_048_576) * 10) / 10;

async function main(): Promise<number> {
  const { engine, label } = await makeEngine();
  const config: Config = {
    ...defaultConfig(),
    host: "127.0.0.1",
    port: 0,
    apiKeys: [KEY],
    rateLimit,
    dataDir: ":memory:",
    threads: 2,
    concurrency: 4,
    queueSize: 64,
    requestTimeoutMs: 30_000,
  };
  const store = new KeyStore({ dataDir: ":memory:" });
  const app = await createService({ engine, config, store, adminTokenHash: sha256Hex("unused") });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

  const rssBefore = rssMb();
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    timeout: 30,
    requests: [
      { method: "POST", path: "/v1/completion/regex", headers, body: JSON.stringify({ prompt: "Once upon a time", pattern: "[a-z ]{1,12}", max_new_tokens: 5, temperature: 0.7, seed: 1 }) },
      { method: "POST", path: "/v1/completion/cfg", headers, body: JSON.stringify({ prompt: "The answer is", grammar: "start: WORD\nWORD: /[a-z]+/", max_new_tokens: 5 }) },
      { method: "POST", path: "/v1/categorize", headers, body: JSON.stringify({ prompt: "The dog barked at the cat.", categories: ["dog", "cat", "bird"] }) },
    ],
  });
  if (typeof global.gc === "function") global.gc();
  const rssAfter = rssMb();
  await app.close();
  await engine.close();
  store.close();

  const statusCounts: Record<string, number> = {};
  for (const [status, stat] of Object.entries(result.statusCodeStats)) statusCounts[status] = stat.count;
  const bad = Object.entries(statusCounts).filter(([s]) => !["200", "429", "503"].includes(s));
  const report = {
    bench: "load",
    engine: label,
    duration_s: durationS,
    connections,
    requests_total: result.requests.total,
    requests_per_s: Math.round(result.requests.average * 10) / 10,
    latency_ms: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    status_counts: statusCounts,
    socket_errors: result.errors,
    timeouts: result.timeouts,
    rss_mb: { before: rssBefore, after: rssAfter },
    ok: bad.length === 0 && result.errors === 0 && result.timeouts === 0,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
  return report.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
