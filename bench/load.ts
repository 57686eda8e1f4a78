/**
 * Load test on loopback: the service with stories260K.gguf (real engine) or the fake engine
 * (`--fake`), 32 concurrent clients for 60 s by default, a mix of regex / grammar / categorize
 * requests.
 *
 * `--hostile`: the same load, alternating clean phases with phases where 10% of the requests are
 * hostile (test/support/hostile-cases.ts: slow-to-refuse patterns, exploding grammars, huge
 * categorize requests) — two rounds of clean then mixed, each a quarter of the duration, so drift
 * of the machine hits both alike. It reports the legitimate requests' latency in each and their
 * p99 ratio (mixed / clean).
 *
 * Prints one JSON object: requests/s, latency p50/p99, status counts, RSS before/after.
 * Exits 1 if any answer was a 5xx other than the documented 503, or a request failed.
 *
 * Env: TRELLIS_BENCH_DURATION (seconds, default 60), TRELLIS_BENCH_THREADS (llama.cpp threads; default the service's), TRELLIS_BENCH_CONNECTIONS (default 32),
 *      TRELLIS_BENCH_RATE_LIMIT (per-key requests/minute, default 0 = off).
 */
import { existsSync } from "node:fs";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { defaultConfig, engineOptions, type Config } from "../src/config.js";
import type { Engine } from "../src/generate/index.js";
import { STORIES_260K } from "../test/support/paths.js";
import { hostileCases, type HostileCase } from "../test/support/hostile-cases.js";
import { createFakeEngine } from "../test/support/fake-engine.js";

const durationS = Number(process.env.TRELLIS_BENCH_DURATION ?? 60);
const connections = Number(process.env.TRELLIS_BENCH_CONNECTIONS ?? 32);
const rateLimit = Number(process.env.TRELLIS_BENCH_RATE_LIMIT ?? 0);
const wantFake = process.argv.includes("--fake") || process.env.TRELLIS_BENCH_FAKE === "1";
const hostileMode = process.argv.includes("--hostile");
const HOSTILE_SHARE = 0.1;
const KEY = "bench-key";
/** The hostile requests come from another API key, as an attacker's would. */
const HOSTILE_KEY = "bench-hostile-key";

interface Request {
  path: string;
  body: string;
}

const LEGIT: Request[] = [
  {
    path: "/v1/completion/regex",
    body: JSON.stringify({ prompt: "Once upon a time", pattern: "[a-z ]{1,12}", max_new_tokens: 5, temperature: 0.7, seed: 1 }),
  },
  {
    path: "/v1/completion/cfg",
    body: JSON.stringify({ prompt: "The answer is", grammar: "start: WORD\nWORD: /[a-z]+/", max_new_tokens: 5 }),
  },
  { path: "/v1/categorize", body: JSON.stringify({ prompt: "The dog barked at the cat.", categories: ["dog", "cat", "bird"] }) },
];

const asRequest = (c: HostileCase): Request => ({ path: c.path, body: c.raw ?? JSON.stringify(c.body) });

/** The service's configuration for the bench (its defaults, as `trellis serve` would run). */
function benchConfig(): Config {
  return {
    ...defaultConfig(),
    host: "127.0.0.1",
    port: 0,
    apiKeys: [KEY, HOSTILE_KEY],
    rateLimit,
    dataDir: ":memory:",
    concurrency: 4,
    contextSize: 512,
    // TRELLIS_BENCH_THREADS: llama.cpp's threads instead of the service's default (thread layouts).
    ...(process.env.TRELLIS_BENCH_THREADS ? { threads: Number(process.env.TRELLIS_BENCH_THREADS) } : {}),
    queueSize: 64,
    requestTimeoutMs: 30_000,
  };
}

async function makeEngine(config: Config): Promise<{ engine: Engine; label: string }> {
  if (!wantFake) {
    const module = await import("../src/engine.js");
    if (!existsSync(STORIES_260K)) throw new Error(`${STORIES_260K} missing`);
    const engine = await module.createEngine(engineOptions(config, STORIES_260K));
    return { engine, label: "real:stories260K.gguf" };
  }
  const engine = createFakeEngine();
  engine.delayMs = 2;
  engine.record = false;
  return { engine, label: "fake (--fake)" };
}

const rssMb = () => Math.round((process.memoryUsage().rss / 1_048_576) * 10) / 10;

interface PhaseStats {
  latencies: number[];
  statuses: Record<string, number>;
  failures: number;
}

const emptyStats = (): PhaseStats => ({ latencies: [], statuses: {}, failures: 0 });

/** `connections` client loops for `seconds`; each request is hostile with probability `hostileShare`. */
async function phase(url: string, seconds: number, hostileShare: number, legit: PhaseStats, hostile: PhaseStats): Promise<void> {
  const cases = hostileCases().map(asRequest);
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
  const hostileHeaders = { authorization: `Bearer ${HOSTILE_KEY}`, "content-type": "application/json" };
  const until = performance.now() + seconds * 1000;
  let turn = 0;
  let hostileTurn = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < until) {
      const isHostile = Math.random() < hostileShare;
      const request = isHostile ? cases[hostileTurn++ % cases.length]! : LEGIT[turn++ % LEGIT.length]!;
      const stats = isHostile ? hostile : legit;
      const t0 = performance.now();
      try {
        const response = await fetch(url + request.path, {
          method: "POST",
          headers: isHostile ? hostileHeaders : headers,
          body: request.body,
          signal: AbortSignal.timeout(30_000),
        });
        await response.arrayBuffer();
        stats.latencies.push(performance.now() - t0);
        stats.statuses[response.status] = (stats.statuses[response.status] ?? 0) + 1;
      } catch {
        stats.failures++;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
}

function summary(stats: PhaseStats, seconds: number) {
  const sorted = [...stats.latencies].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted.length === 0 ? 0 : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 10) / 10;
  return {
    requests: sorted.length,
    requests_per_s: Math.round((sorted.length / seconds) * 10) / 10,
    latency_ms: { p50: at(0.5), p99: at(0.99), max: at(1) },
    status_counts: stats.statuses,
    failures: stats.failures,
  };
}

async function main(): Promise<number> {
  const config = benchConfig();
  const { engine, label } = await makeEngine(config);
  const store = new KeyStore({ dataDir: ":memory:" });
  const app = await createService({ engine, config, store, adminTokenHash: sha256Hex("unused") });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

  // The legitimate requests' constraints compiled once, as in a service that has been running.
  await phase(url, 1, 0, emptyStats(), emptyStats());
  const rssBefore = rssMb();
  const clean = emptyStats();
  const mixedLegit = emptyStats();
  const mixedHostile = emptyStats();
  let cleanSeconds = 0;
  let mixedSeconds = 0;
  if (hostileMode) {
    const quarter = durationS / 4;
    for (let round = 0; round < 2; round++) {
      await phase(url, quarter, 0, clean, emptyStats());
      cleanSeconds += quarter;
      await phase(url, quarter, HOSTILE_SHARE, mixedLegit, mixedHostile);
      mixedSeconds += quarter;
    }
  } else {
    await phase(url, durationS, 0, clean, emptyStats());
    cleanSeconds = durationS;
  }
  if (typeof global.gc === "function") global.gc();
  const rssAfter = rssMb();
  const constraints = engine.constraintStats?.();
  await app.close();
  await engine.close();
  store.close();

  const all = [clean, mixedLegit, mixedHostile];
  const serverErrors = all.reduce(
    (n, s) =>
      n +
      Object.entries(s.statuses)
        .filter(([status]) => Number(status) >= 500 && status !== "503")
        .reduce((m, [, c]) => m + c, 0),
    0,
  );
  const failures = all.reduce((n, s) => n + s.failures, 0);
  const cleanSummary = summary(clean, cleanSeconds);
  const report: Record<string, unknown> = {
    bench: hostileMode ? "load-hostile" : "load",
    engine: label,
    duration_s: durationS,
    connections,
    ...(hostileMode
      ? {
          clean: cleanSummary,
          mixed_legitimate: summary(mixedLegit, mixedSeconds),
          mixed_hostile: summary(mixedHostile, mixedSeconds),
          legit_p99_ratio_mixed_over_clean:
            Math.round((summary(mixedLegit, mixedSeconds).latency_ms.p99 / Math.max(1e-9, cleanSummary.latency_ms.p99)) * 100) / 100,
        }
      : {
          requests_total: cleanSummary.requests,
          requests_per_s: cleanSummary.requests_per_s,
          latency_ms: cleanSummary.latency_ms,
          status_counts: cleanSummary.status_counts,
        }),
    server_errors_5xx: serverErrors,
    failed_requests: failures,
    rss_mb: { before: rssBefore, after: rssAfter },
    ...(constraints
      ? {
          constraint_cache: {
            entries: constraints.entries,
            mb: Math.round(constraints.bytes / 1_048_576),
            evictions: constraints.evictions,
            compiles: constraints.compiles,
            hits: constraints.hits,
            refusals: constraints.refusals,
          },
        }
      : {}),
    ok: serverErrors === 0 && failures === 0,
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
