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
import { type Config, defaultConfig, engineOptions } from "../src/config.js";
import { createEngine } from "../src/engine.js";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { argValue, percentile, round3 } from "./stats.js";

const ROUNDS = Number(argValue("rounds") ?? 2);
const LAYOUTS = (argValue("layouts") ?? Array.from({ length: availableParallelism() }, (_, i) => i + 1).join(",")).split(",").map(Number);
const OUT = argValue("out");
const KEY = "bench-threads-key";
const MODEL_ID = "synthetic-qwen2-0.5b-q8_0";

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

interface Served {
  threads: number;
  url: string;
  close(): Promise<void>;
}

async function serve(threads: number, modelPath: string): Promise<Served> {
  const config: Config = {
    ...defaultConfig(),
    host: "127.0.0.1",
    port: 0,
    apiKeys: [KEY],
    rateLimit: 0,
    dataDir: ":memory:",
    requestTimeoutMs: 600_000,
    threads,
    prefixCacheTokens: 0,
  };
  const engine = await createEngine(engineOptions(config, modelPath));
  const store = new KeyStore({ dataDir: ":memory:" });
  const app = await createServer({ engine, config, store });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    threads,
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    async close() {
      await app.close();
      await engine.close();
      store.close();
    },
  };
}

const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

/** A streamed chat completion: tokens, the time to the first content event and from it to the end. */
async function chat(s: Served, body: Record<string, unknown>) {
  const sent = performance.now();
  const response = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: MODEL_ID, stream: true, stream_options: { include_usage: true }, ...body }),
  });
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  let first = Number.NaN;
  let usage = { prompt_tokens: 0, completion_tokens: 0 };
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const data = buffer.slice(6, at);
      buffer = buffer.slice(at + 2);
      if (data === "[DONE]" || data === "") continue;
      const parsed = JSON.parse(data) as { choices: { delta?: { content?: string } }[]; usage?: typeof usage };
      if ((parsed.choices[0]?.delta?.content ?? "").length > 0 && Number.isNaN(first)) first = performance.now();
      if (parsed.usage) usage = parsed.usage;
    }
  }
  const end = performance.now();
  return { usage, totalMs: end - sent, firstMs: first - sent, afterFirstMs: end - first };
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
for (const threads of LAYOUTS) servers.push(await serve(threads, modelPath));
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
