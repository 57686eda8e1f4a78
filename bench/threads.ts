/**
 * npm run bench:threads — the thread layout measured: how many threads llama.cpp should get on
 * this machine. One real server per layout (createServer on 127.0.0.1, TRELLIS_THREADS = 1 … the
 * cores, every other setting the service's default but the prefix cache, off so that every prompt
 * is evaluated), over the synthetic Qwen2-0.5B-shape model (random weights, the real 152k
 * vocabulary and ChatML template). Per round, each layout in turn (the order alternating):
 *
 *   prompt   a ~500-token chat prompt, max_tokens 1: prompt tokens per second (usage over the
 *            request's time);
 *   decode   free text, max_tokens 48, streamed: tokens per second after the first token;
 *   json     the same under a JSON Schema (masks computed on the serving thread between decodes):
 *            tokens per second after the first;
 *   health   a client polls /healthz every 25 ms during all of the above: its p50 / p99 / max
 *            (the serving thread's responsiveness while llama.cpp's threads spin).
 *
 * Usage: npm run bench:threads -- [--rounds 2] [--layouts 1,2] [--out FILE]
 * Prints one JSON object to stdout (and to --out); progress on stderr.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { defaultConfig } from "../src/config.js";
import { type BenchService, startBenchService, streamedChat } from "./chat-service.js";
import { argValue, percentile, round3 } from "./stats.js";

const ROUNDS = Number(argValue("rounds") ?? 2);
const LAYOUTS = (argValue("layouts") ?? Array.from({ length: availableParallelism() }, (_, i) => i + 1).join(",")).split(",").map(Number);
const OUT = argValue("out");
const KEY = "bench-threads-key";

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const quantile = (xs: readonly number[], q: number) =>
  round3(
    percentile(
      [...xs].sort((a, b) => a - b),
      q,
    ),
  );
const median = (xs: readonly number[]) => quantile(xs, 0.5);

const PROSE = (
  "the keeper walked along the rocky shore at dawn and watched the grey waves roll in from the north while gulls circled above " +
  "the old lighthouse whose lamp had burned every night for a hundred years "
).repeat(12);
const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 24 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    tags: { type: "array", items: { type: "string", maxLength: 12 }, maxItems: 4 },
  },
  required: ["name", "age", "tags"],
  additionalProperties: false,
};

type Served = BenchService & { threads: number };

/** A streamed chat completion: its usage, time to the first content and from it to the end. */
async function chat(s: Served, body: Record<string, unknown>) {
  const r = await streamedChat(s, KEY, body);
  return { usage: r.usage, totalMs: r.totalMs, afterFirstMs: r.totalMs - r.firstMs };
}

/** Polls /healthz every 25 ms until stopped; the latencies. */
function healthPoller(s: Served) {
  const latencies: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const t = performance.now();
      await (await fetch(`${s.url}/healthz`)).text();
      latencies.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return latencies;
    },
  };
}

async function measure(s: Served, round: number) {
  const health = healthPoller(s);
  const prompt = await chat(s, { messages: [{ role: "user", content: `${PROSE} ${round}` }], max_tokens: 1, seed: round });
  const decode = await chat(s, { messages: [{ role: "user", content: `Tell a story ${round}.` }], max_tokens: 48, seed: round });
  const json = await chat(s, {
    messages: [{ role: "user", content: `A person as JSON ${round}.` }],
    max_tokens: 120,
    seed: round,
    fast_forward: false,
    response_format: { type: "json_schema", json_schema: { name: "person", schema: SCHEMA, strict: true } },
  });
  const latencies = await health.stop();
  return {
    promptTokensPerSecond: round3(prompt.usage.prompt_tokens / (prompt.totalMs / 1000)),
    decodeTokensPerSecond: round3((decode.usage.completion_tokens - 1) / (decode.afterFirstMs / 1000)),
    jsonTokensPerSecond: round3((json.usage.completion_tokens - 1) / (json.afterFirstMs / 1000)),
    health: latencies,
  };
}

const modelPath = ensureSyntheticModel("qwen2-0.5b");
log(`opening ${modelPath} once per layout: threads ${LAYOUTS.join(", ")}`);
const servers: Served[] = [];
// Without the prefix cache: every prompt is evaluated.
for (const threads of LAYOUTS) servers.push({ ...(await startBenchService(modelPath, KEY, { threads, prefixCacheTokens: 0 })), threads });
const load0 = loadavg()[0]!;
for (const s of servers) await chat(s, { messages: [{ role: "user", content: "Hello" }], max_tokens: 2, seed: 1 }); // pages the weights in
const samples = new Map(servers.map((s) => [s.threads, [] as Awaited<ReturnType<typeof measure>>[]]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? servers : [...servers].reverse();
  for (const s of order) {
    log(`round ${round}: threads ${s.threads}`);
    samples.get(s.threads)!.push(await measure(s, round));
  }
}
for (const s of servers) await s.close();

const layouts = Object.fromEntries(
  [...samples].map(([threads, runs]) => {
    const health = runs.flatMap((r) => r.health);
    return [
      `threads${threads}`,
      {
        promptTokensPerSecond: median(runs.map((r) => r.promptTokensPerSecond)),
        decodeTokensPerSecond: median(runs.map((r) => r.decodeTokensPerSecond)),
        jsonTokensPerSecond: median(runs.map((r) => r.jsonTokensPerSecond)),
        healthz: { polls: health.length, p50Ms: quantile(health, 0.5), p99Ms: quantile(health, 0.99), maxMs: round3(Math.max(...health)) },
      },
    ];
  }),
);
const result = {
  bench: "threads",
  model: "synthetic qwen2-0.5b q8_0 (random weights, real vocabulary and ChatML template)",
  settings: "service defaults but TRELLIS_THREADS (each layout) and the prefix cache (off: every prompt evaluated)",
  node: process.version,
  cpus: availableParallelism(),
  defaultThreads: defaultConfig().threads,
  loadAverage: { start: round3(load0), end: round3(loadavg()[0]!) },
  rounds: ROUNDS,
  layouts,
};
const json = JSON.stringify(result, null, 2);
process.stdout.write(`${json}\n`);
if (OUT) writeFileSync(OUT, `${json}\n`);
