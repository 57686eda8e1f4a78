/**
 * npm run bench:hostile — the service under hostile input, timed: `trellis serve` from dist/ (the
 * build, as `npm start` runs it) over stories260K.gguf in its own process, at its defaults except
 * the rate limit (off, so that every case reaches the compiler rather than a 429). Every case of
 * test/support/hostile-cases.ts is sent in turn (the suite test/server-hostile.test.ts sends the
 * same ones and asserts what they are answered), `--rounds` times (default 2: the first compiles,
 * later ones meet the constraint cache), while another client polls /healthz every 50 ms from its
 * own thread.
 *
 * Target (the issue's): /healthz p99 under 100 ms while the hostile requests run, and nothing
 * grows without bound (resident memory after each round, the constraint cache against its budget).
 *
 * Prints one JSON object: each case's status and milliseconds (first round), how many were
 * answered otherwise than the case states, /healthz p50/p99/max while idle (`--idle-s`, default 2)
 * and during the hostile requests (`slowPolls`: those at or over the target, with the first round's
 * requests in flight meanwhile), the service's own event-loop delay (perf_hooks
 * monitorEventLoopDelay in the serving process, read from /metrics: since its start, so the idle
 * phase is in it), the service's resident memory before, after each round and at its peak, and
 * `target` with `pass`. Exits 1 when a request or a /healthz poll failed, a 5xx came back or a
 * case was answered otherwise than it states (a missed target is `pass: false`, not an exit status).
 *
 * Usage: npm run bench:hostile [-- --rounds N --idle-s S]
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import {
  hostileCases,
  HOSTILE_KEY,
  sendHostile,
  startHealthPoller,
  startHostileService,
  type HealthPolls,
} from "../test/support/hostile-cases.js";
import { argValue, percentile } from "./stats.js";

const TARGET = { healthP99Ms: 100 };
const rounds = Number(argValue("rounds") ?? 2);
const idleS = Number(argValue("idle-s") ?? 2);

const round1 = (x: number): number => Math.round(x * 10) / 10;
const load = (): number[] => loadavg().map((x) => Math.round(x * 100) / 100);

/** One unlabelled (or `{label}`) sample of the Prometheus text, NaN when absent. */
function metric(text: string, name: string, label = ""): number {
  const escaped = (name + label).replace(/[{}".]/g, "\\$&");
  const match = new RegExp(`^${escaped} ([0-9.e+-]+|NaN)$`, "m").exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** Resident and peak resident memory of `pid` in MB, from /proc (null off Linux). */
function processMemoryMb(pid: number): { rss: number; peak: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
    return { rss: round1(kb("VmRSS") / 1024), peak: round1(kb("VmHWM") / 1024) };
  } catch {
    return null;
  }
}

function healthSummary(polls: HealthPolls) {
  const answered = polls.latencies.filter((_, i) => polls.statuses[i] === 200);
  const sorted = [...answered].sort((a, b) => a - b);
  return {
    polls: polls.latencies.length,
    notOk: polls.statuses.filter((s, i) => s !== 200 || polls.bodies[i] !== '{"status":"ok"}').length,
    p50Ms: round1(percentile(sorted, 0.5)),
    p99Ms: round1(percentile(sorted, 0.99)),
    maxMs: round1(sorted.at(-1) ?? Number.NaN),
  };
}

async function main(): Promise<number> {
  const cases = hostileCases();
  const loadAtStart = load();
  const service = await startHostileService(["dist/cli.js"]);
  try {
    const metrics = async (): Promise<string> => (await fetch(`${service.base}/metrics`)).text();
    const memory = async (): Promise<number> =>
      processMemoryMb(service.pid)?.rss ?? round1(metric(await metrics(), "trellis_process_resident_memory_bytes") / 1_048_576);

    // One ordinary request first: the model and a compile worker are warm, as in service.
    const warm = await fetch(`${service.base}/v1/completion/regex`, {
      method: "POST",
      headers: { authorization: `Bearer ${HOSTILE_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "Hi", pattern: "[a-z]{3}", seed: 1 }),
    });
    await warm.text();
    if (warm.status !== 200) throw new Error(`warm-up request answered ${warm.status}`);

    const idlePoller = startHealthPoller(service.base);
    await new Promise((resolve) => setTimeout(resolve, idleS * 1000));
    const idle = healthSummary(await idlePoller.stop());

    const rssBefore = await memory();
    const perCase: Record<string, { status: number; ms: number }> = {};
    const statusCounts: Record<string, number> = {};
    const mismatches: string[] = [];
    /** When each request of the first round was in flight (timeOrigin-based ms, as the poller's). */
    const inFlight: { name: string; from: number; to: number }[] = [];
    const roundSummaries: { round: number; totalMs: number; caseP50Ms: number; caseMaxMs: number; rssAfterMb: number }[] = [];
    let failedRequests = 0;
    const poller = startHealthPoller(service.base);
    for (let round = 1; round <= rounds; round++) {
      const times: number[] = [];
      const t0 = performance.now();
      for (const c of cases) {
        const from = performance.timeOrigin + performance.now();
        try {
          const { status, ms } = await sendHostile(service.base, c);
          if (round === 1) inFlight.push({ name: c.name, from, to: from + ms });
          times.push(ms);
          statusCounts[status] = (statusCounts[status] ?? 0) + 1;
          if (round === 1) perCase[c.name] = { status, ms: round1(ms) };
          if (status !== c.status) mismatches.push(`round ${round}: ${c.name}: ${status}, the case states ${c.status}`);
        } catch (error) {
          failedRequests++;
          mismatches.push(`round ${round}: ${c.name}: ${(error as Error).message}`);
        }
      }
      const sorted = times.sort((a, b) => a - b);
      roundSummaries.push({
        round,
        totalMs: Math.round(performance.now() - t0),
        caseP50Ms: round1(percentile(sorted, 0.5)),
        caseMaxMs: round1(sorted.at(-1) ?? Number.NaN),
        rssAfterMb: await memory(),
      });
    }
    const healthPolls = await poller.stop();
    const health = healthSummary(healthPolls);
    // The polls over the target, slowest first, with the first round's requests they overlapped.
    const slowPolls = healthPolls.latencies
      .map((ms, i) => ({ ms, from: healthPolls.startedAt[i]! }))
      .filter((p) => p.ms >= TARGET.healthP99Ms)
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10)
      .map((p) => ({
        ms: round1(p.ms),
        during: inFlight.filter((r) => r.from < p.from + p.ms && r.to > p.from).map((r) => r.name),
      }));
    const rssAfter = await memory();
    const text = await metrics();
    const delay = (q: string): number => round1(metric(text, "trellis_event_loop_delay_seconds", `{quantile="${q}"}`) * 1000);
    const serverErrors = Object.entries(statusCounts)
      .filter(([status]) => Number(status) >= 500)
      .reduce((n, [, count]) => n + count, 0);

    const report = {
      bench: "hostile",
      engine: "real:stories260K.gguf",
      service: "node dist/cli.js serve: defaults, except TRELLIS_RATE_LIMIT=0",
      node: process.version,
      cpus: availableParallelism(),
      loadAverageAtStart: loadAtStart,
      rounds,
      cases: cases.length,
      statusCounts,
      statusMismatches: mismatches,
      failedRequests,
      serverErrors5xx: serverErrors,
      roundSummaries,
      healthIdle: idle,
      healthDuringHostile: { ...health, slowPolls },
      eventLoopDelayMs: {
        p50: delay("0.5"),
        p99: delay("0.99"),
        max: delay("1"),
        samples: metric(text, "trellis_event_loop_delay_samples"),
        note: "the serving process's monitorEventLoopDelay (10 ms resolution) since its start, from /metrics",
      },
      rssMb: { before: rssBefore, after: rssAfter, peak: processMemoryMb(service.pid)?.peak ?? null },
      constraintCache: {
        entries: metric(text, "trellis_constraint_cache_entries"),
        mb: round1(metric(text, "trellis_constraint_cache_bytes") / 1_048_576),
        budgetMb: round1(metric(text, "trellis_constraint_cache_budget_bytes") / 1_048_576),
        hits: metric(text, "trellis_constraint_cache_hits_total"),
      },
      compileWorkerDeaths: metric(text, "trellis_compile_worker_deaths_total"),
      perCaseRound1: perCase,
      loadAverageAtEnd: load(),
      target: TARGET,
      pass: { healthP99Ms: health.p99Ms < TARGET.healthP99Ms },
    };
    process.stdout.write(JSON.stringify(report, null, 2) + "\n");
    return mismatches.length === 0 && serverErrors === 0 && health.notOk === 0 && idle.notOk === 0 ? 0 : 1;
  } finally {
    await service.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
