/**
 * npm run bench:stream — the OpenAI-compatible API's streaming (SSE) against its plain JSON
 * answers, end to end over loopback: the real server (createServer, listening on 127.0.0.1, an
 * ephemeral port) over the synthetic Qwen2-0.5B-shape model (random weights, the real 152k
 * vocabulary and chat template; generated into .cache/models/ when missing), requests sent with
 * the global fetch and the event stream parsed here, each `data:` event timestamped as it is read.
 *
 * The requests: free-text chat completions (`/v1/chat/completions`, or `/v1/completions` with
 * `--api completions`), max_tokens 64, temperature 1, a fixed seed per request (the same seeds in
 * both modes, so both generate the same tokens), streamed ones with
 * `stream_options: {include_usage: true}`. A random-weight model rarely ends early, so nearly
 * every completion runs to max_tokens (the finish reasons are reported).
 *
 * For each concurrency (1 and 8): per round, `concurrency` clients each send `--per-client`
 * requests back to back, once streamed and once not, which goes first alternating between rounds
 * (timings drift between runs and within one: comparing neighbours is what survives that). One
 * untimed warm-up round per concurrency first (max_tokens 8).
 *
 * Reported per concurrency:
 *   - time to first token: from sending the request to the first event with non-empty content,
 *     p50/p90 (streamed); the whole request's latency p50/p90 (both modes);
 *   - inter-token latency: between consecutive content events of one stream, p50/p90/p99;
 *   - tokens/s of each mode: completion tokens (from `usage`) over the round's wall time (first
 *     request sent to last answer read), pooled over rounds, and per round;
 *   - ratioStreamedOverPlain: streamed tokens/s / plain tokens/s (target: >= 0.98, i.e. streaming
 *     costs at most 2% of throughput), with the median of the per-round ratios beside it;
 *   - process CPU time per completion token of each mode (llama.cpp, server and client together),
 *     which other load on a shared machine barely moves, unlike wall time; and the main thread's
 *     busy time per token (the JavaScript of server and client: where streaming's own work lands);
 *     garbage collections per token;
 *   - the stream's framing: events per read from the socket, the empty-content events, whether
 *     each stream ended with `data: [DONE]`, carried a usage chunk, and whether its text equals the
 *     plain answer of the same seed;
 *   - the server's own view: its trellis_time_to_first_token_seconds and
 *     trellis_inter_token_latency_seconds histograms (means), scraped from /metrics.
 * The client runs in the server's process (one event loop): parsing the stream is part of the
 * overhead measured, as is the server's writing it.
 *
 * Usage: npm run bench:stream -- [--rounds 3] [--max-tokens 64] [--per-client 2]
 *          [--concurrency 1,8] [--threads N] [--api chat|completions] [--out FILE]
 *   --threads  llama.cpp's threads; default: the service's default (cores - 1, at least 1).
 * Prints one JSON object to stdout (and to --out); progress on stderr.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { performance as nodePerformance, PerformanceObserver } from "node:perf_hooks";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { type Config, defaultConfig, engineOptions } from "../src/config.js";
import { createEngine } from "../src/engine.js";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { argValue, percentile, round3 } from "./stats.js";

const ROUNDS = Number(argValue("rounds") ?? 3);
const MAX_TOKENS = Number(argValue("max-tokens") ?? 64);
const PER_CLIENT = Number(argValue("per-client") ?? 2);
const CONCURRENCIES = (argValue("concurrency") ?? "1,8").split(",").map(Number);
const THREADS = Number(argValue("threads") ?? defaultConfig().threads);
const API = argValue("api") === "completions" ? "completions" : "chat";
const OUT = argValue("out");
const WARM_UP_TOKENS = 8;
const TARGET_RATIO = 0.98;
const KEY = "bench-stream-key";

const SYSTEM = "You are a helpful assistant.";
const USER = "Write a short story about a lighthouse keeper who finds a message in a bottle.";
const PROMPT = `${SYSTEM}\n\nUser: ${USER}\nAssistant:`;

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const median = (xs: readonly number[]): number =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
const quantiles = (xs: readonly number[], qs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return Object.fromEntries(qs.map((q) => [`p${Math.round(q * 100)}`, round3(percentile(sorted, q))]));
};

type Mode = "streamed" | "plain";

/** One request's outcome, as the client saw it. */
interface Outcome {
  mode: Mode;
  seed: number;
  completionTokens: number;
  finishReason: string | null;
  text: string;
  /** From sending the request to the last byte of the answer. */
  latencyMs: number;
  /** Streamed: from sending the request to the first event with non-empty content. */
  ttftMs?: number;
  /** Streamed: between consecutive content events. */
  itlMs: number[];
  /** Streamed: what the framing looked like. */
  events: number;
  contentEvents: number;
  emptyContentEvents: number;
  reads: number;
  readsWithSeveralEvents: number;
  done: boolean;
  usageChunk: boolean;
  roleFirst: boolean;
  malformed: string[];
}

function body(seed: number, maxTokens: number, stream: boolean): string {
  const shared = {
    model: modelId,
    max_tokens: maxTokens,
    temperature: 1,
    seed,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
  return JSON.stringify(
    API === "chat"
      ? {
          ...shared,
          messages: [
            { role: "system", content: SYSTEM },
            { role: "user", content: USER },
          ],
        }
      : { ...shared, prompt: PROMPT },
  );
}

/** The text of one chunk's (or answer's) first choice. */
function choiceText(choice: Record<string, unknown> | undefined, streamed: boolean): string | undefined {
  if (!choice) return undefined;
  if (API === "completions") return choice.text as string | undefined;
  const part = (streamed ? choice.delta : choice.message) as { content?: string | null } | undefined;
  return part?.content ?? undefined;
}

async function plain(url: string, seed: number, maxTokens: number): Promise<Outcome> {
  const t0 = performance.now();
  const response = await fetch(url, { method: "POST", headers, body: body(seed, maxTokens, false) });
  const raw = await response.text();
  const latencyMs = performance.now() - t0;
  if (response.status !== 200) throw new Error(`plain request (seed ${seed}): ${response.status} ${raw}`);
  const answer = JSON.parse(raw) as { choices: Record<string, unknown>[]; usage: { completion_tokens: number } };
  const choice = answer.choices[0];
  return {
    mode: "plain",
    seed,
    completionTokens: answer.usage.completion_tokens,
    finishReason: (choice?.finish_reason as string | undefined) ?? null,
    text: choiceText(choice, false) ?? "",
    latencyMs,
    itlMs: [],
    events: 0,
    contentEvents: 0,
    emptyContentEvents: 0,
    reads: 0,
    readsWithSeveralEvents: 0,
    done: false,
    usageChunk: false,
    roleFirst: false,
    malformed: [],
  };
}

async function streamed(url: string, seed: number, maxTokens: number): Promise<Outcome> {
  const t0 = performance.now();
  const response = await fetch(url, { method: "POST", headers, body: body(seed, maxTokens, true) });
  if (response.status !== 200 || !response.body)
    throw new Error(`streamed request (seed ${seed}): ${response.status} ${await response.text()}`);
  const type = response.headers.get("content-type") ?? "";
  const o: Outcome = {
    mode: "streamed",
    seed,
    completionTokens: 0,
    finishReason: null,
    text: "",
    latencyMs: 0,
    itlMs: [],
    events: 0,
    contentEvents: 0,
    emptyContentEvents: 0,
    reads: 0,
    readsWithSeveralEvents: 0,
    done: false,
    usageChunk: false,
    roleFirst: false,
    malformed: type.startsWith("text/event-stream") ? [] : [`content-type ${type}`],
  };
  const decoder = new TextDecoder();
  let buffer = "";
  let lastContentAt = -1;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    const now = performance.now();
    if (done) break;
    o.reads++;
    buffer += decoder.decode(value, { stream: true });
    let eventsThisRead = 0;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      eventsThisRead++;
      o.events++;
      if (o.done) o.malformed.push("an event after [DONE]");
      if (!event.startsWith("data: ") || event.includes("\n")) {
        o.malformed.push(`not one data line: ${event.slice(0, 80)}`);
        continue;
      }
      const data = event.slice(6);
      if (data === "[DONE]") {
        o.done = true;
        continue;
      }
      const chunk = JSON.parse(data) as { choices: Record<string, unknown>[]; usage?: { completion_tokens: number } };
      if (chunk.usage) {
        o.usageChunk = true;
        o.completionTokens = chunk.usage.completion_tokens;
        if (chunk.choices.length > 0) o.malformed.push("usage chunk with choices");
      }
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (o.events === 1 && API === "chat") o.roleFirst = (choice.delta as { role?: string } | undefined)?.role === "assistant";
      if (choice.finish_reason) o.finishReason = choice.finish_reason as string;
      const text = choiceText(choice, true);
      if (text === undefined) continue;
      if (text.length === 0) {
        // Expected empty: the chat role chunk (content "") and the completions finish chunk (text "");
        // any other is a chunk with tokens and no text (the last tokens' report, a broken character).
        if (!(o.events === 1 && API === "chat") && !choice.finish_reason) o.emptyContentEvents++;
        continue;
      }
      o.contentEvents++;
      o.text += text;
      if (lastContentAt < 0) o.ttftMs = now - t0;
      else o.itlMs.push(now - lastContentAt);
      lastContentAt = now;
    }
    if (eventsThisRead > 1) o.readsWithSeveralEvents++;
  }
  o.latencyMs = performance.now() - t0;
  if (buffer.length > 0) o.malformed.push(`unterminated event at the end: ${buffer.slice(0, 80)}`);
  if (!o.done) o.malformed.push("no [DONE]");
  if (!o.usageChunk) o.malformed.push("no usage chunk");
  return o;
}

/** `concurrency` clients, `perClient` requests each back to back; the round's outcomes and wall time. */
async function round(
  url: string,
  mode: Mode,
  concurrency: number,
  perClient: number,
  seedBase: number,
  maxTokens: number,
): Promise<{ outcomes: Outcome[]; wallSeconds: number; cpuMs: number; loopMs: number; gcs: number; gcMs: number }> {
  const outcomes: Outcome[] = [];
  const gc0 = gc.count;
  const gcMs0 = gc.ms;
  const cpu0 = process.cpuUsage();
  const elu0 = nodePerformance.eventLoopUtilization();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let j = 0; j < perClient; j++) {
        const seed = seedBase + 100 * client + j;
        outcomes.push(await (mode === "streamed" ? streamed(url, seed, maxTokens) : plain(url, seed, maxTokens)));
      }
    }),
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const loopMs = nodePerformance.eventLoopUtilization(elu0).active;
  // The observer reports a collection a tick after it: let it in.
  await new Promise((resolve) => setImmediate(resolve));
  return { outcomes, wallSeconds, cpuMs: (cpu.user + cpu.system) / 1000, loopMs, gcs: gc.count - gc0, gcMs: gc.ms - gcMs0 };
}

/** Garbage collections of the main isolate so far (their pauses; concurrent marking runs on helper threads). */
const gc = { count: 0, ms: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.count++;
    gc.ms += e.duration;
  }
}).observe({ entryTypes: ["gc"] });

/** The mean of a Prometheus histogram (its _sum over its _count) from /metrics, in ms; with the count. */
async function histogramMean(base: string, name: string): Promise<{ count: number; meanMs: number | null }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (suffix: string): number => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}${suffix} `));
    return line ? Number(line.split(" ")[1]) : Number.NaN;
  };
  const count = value("_count");
  return { count, meanMs: count > 0 ? round3((value("_sum") * 1000) / count) : null };
}

// ---- the server

const config: Config = {
  ...defaultConfig(),
  host: "127.0.0.1",
  port: 0,
  apiKeys: [KEY],
  rateLimit: 0,
  dataDir: ":memory:",
  threads: THREADS,
  concurrency: Math.max(8, ...CONCURRENCIES),
  requestTimeoutMs: 300_000,
};
const modelPath = ensureSyntheticModel("qwen2-0.5b");
log(`opening ${modelPath} (${THREADS} threads)`);
const engine = await createEngine(engineOptions(config, modelPath));
const store = new KeyStore({ dataDir: ":memory:" });
const app = await createServer({ engine, config, store });
await app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const url = `${base}/v1/${API === "chat" ? "chat/completions" : "completions"}`;
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const modelId = engine.modelId ?? "trellis";

// ---- the rounds

const load0 = loadavg()[0]!;
const benchStarted = performance.now();
const results: Record<string, unknown> = {};
const ratiosAll: number[] = [];
let mismatchedTexts = 0;
let comparedTexts = 0;
for (const concurrency of CONCURRENCIES) {
  log(`concurrency ${concurrency}: warm-up`);
  await round(url, "plain", concurrency, 1, 900_000, WARM_UP_TOKENS);
  await round(url, "streamed", concurrency, 1, 900_000, WARM_UP_TOKENS);
  const all: Record<Mode, Outcome[]> = { streamed: [], plain: [] };
  const tokens: Record<Mode, number> = { streamed: 0, plain: 0 };
  const seconds: Record<Mode, number> = { streamed: 0, plain: 0 };
  const cpuMs: Record<Mode, number> = { streamed: 0, plain: 0 };
  const loopMs: Record<Mode, number> = { streamed: 0, plain: 0 };
  const gcs: Record<Mode, { count: number; ms: number }> = { streamed: { count: 0, ms: 0 }, plain: { count: 0, ms: 0 } };
  const perRound: { streamedTokensPerSecond: number; plainTokensPerSecond: number; ratio: number; streamedFirst: boolean }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const streamedFirst = r % 2 === 0;
    const order: Mode[] = streamedFirst ? ["streamed", "plain"] : ["plain", "streamed"];
    const rate: Record<Mode, number> = { streamed: 0, plain: 0 };
    for (const mode of order) {
      const done = await round(url, mode, concurrency, PER_CLIENT, 1000 * (r + 1), MAX_TOKENS);
      const n = done.outcomes.reduce((sum, o) => sum + o.completionTokens, 0);
      all[mode].push(...done.outcomes);
      tokens[mode] += n;
      seconds[mode] += done.wallSeconds;
      cpuMs[mode] += done.cpuMs;
      loopMs[mode] += done.loopMs;
      gcs[mode].count += done.gcs;
      gcs[mode].ms += done.gcMs;
      rate[mode] = n / done.wallSeconds;
    }
    const ratio = rate.streamed / rate.plain;
    ratiosAll.push(ratio);
    perRound.push({
      streamedTokensPerSecond: round3(rate.streamed),
      plainTokensPerSecond: round3(rate.plain),
      ratio: round3(ratio),
      streamedFirst,
    });
    log(
      `concurrency ${concurrency} round ${r + 1}/${ROUNDS}: tok/s streamed ${round3(rate.streamed)}, plain ${round3(rate.plain)}, ratio ${round3(ratio)}`,
    );
  }
  const s = all.streamed;
  const p = all.plain;
  // The same seed generates the same tokens (unless batching changed the arithmetic).
  const plainText = new Map(p.map((o) => [o.seed, o.text]));
  let mismatches = 0;
  for (const o of s) {
    const other = plainText.get(o.seed);
    if (other === undefined) continue;
    comparedTexts++;
    if (other !== o.text) mismatches++;
  }
  mismatchedTexts += mismatches;
  const finishReasons = (os: readonly Outcome[]) =>
    os.reduce<Record<string, number>>((acc, o) => {
      const key = o.finishReason ?? "none";
      acc[key] = (acc[key] ?? 0) + 1;
      return acc;
    }, {});
  const streamedRate = tokens.streamed / seconds.streamed;
  const plainRate = tokens.plain / seconds.plain;
  const malformed = [...new Set(s.flatMap((o) => o.malformed))];
  results[String(concurrency)] = {
    requestsPerMode: s.length,
    timeToFirstTokenMs: quantiles(
      s.map((o) => o.ttftMs ?? Number.NaN).filter((x) => !Number.isNaN(x)),
      [0.5, 0.9],
    ),
    interTokenLatencyMs: {
      ...quantiles(
        s.flatMap((o) => o.itlMs),
        [0.5, 0.9, 0.99],
      ),
      samples: s.reduce((n, o) => n + o.itlMs.length, 0),
    },
    latencyMs: {
      streamed: quantiles(
        s.map((o) => o.latencyMs),
        [0.5, 0.9],
      ),
      plain: quantiles(
        p.map((o) => o.latencyMs),
        [0.5, 0.9],
      ),
    },
    tokensPerSecond: { streamed: round3(streamedRate), plain: round3(plainRate) },
    completionTokens: { streamed: tokens.streamed, plain: tokens.plain },
    ratioStreamedOverPlain: round3(streamedRate / plainRate),
    cpuMsPerToken: { streamed: round3(cpuMs.streamed / tokens.streamed), plain: round3(cpuMs.plain / tokens.plain) },
    cpuPerTokenRatioPlainOverStreamed: round3(cpuMs.plain / tokens.plain / (cpuMs.streamed / tokens.streamed)),
    eventLoopBusyMsPerToken: { streamed: round3(loopMs.streamed / tokens.streamed), plain: round3(loopMs.plain / tokens.plain) },
    gcPer100Tokens: {
      streamed: round3((100 * gcs.streamed.count) / tokens.streamed),
      plain: round3((100 * gcs.plain.count) / tokens.plain),
    },
    gcMsPerToken: { streamed: round3(gcs.streamed.ms / tokens.streamed), plain: round3(gcs.plain.ms / tokens.plain) },
    roundRatioMedian: round3(median(perRound.map((x) => x.ratio))),
    perRound,
    finishReasons: { streamed: finishReasons(s), plain: finishReasons(p) },
    framing: {
      eventsPerStream: round3(s.reduce((n, o) => n + o.events, 0) / s.length),
      contentEventsPerStream: round3(s.reduce((n, o) => n + o.contentEvents, 0) / s.length),
      completionTokensPerStream: round3(tokens.streamed / s.length),
      emptyContentEvents: s.reduce((n, o) => n + o.emptyContentEvents, 0),
      readsPerStream: round3(s.reduce((n, o) => n + o.reads, 0) / s.length),
      readsWithSeveralEvents: s.reduce((n, o) => n + o.readsWithSeveralEvents, 0),
      allDone: s.every((o) => o.done),
      allUsage: s.every((o) => o.usageChunk),
      ...(API === "chat" ? { allRoleFirst: s.every((o) => o.roleFirst) } : {}),
      malformed,
      streamedTextEqualsPlain: `${s.length - mismatches}/${s.length}`,
    },
  };
}
const benchSeconds = (performance.now() - benchStarted) / 1000;
const serverTtft = await histogramMean(base, "trellis_time_to_first_token_seconds");
const serverItl = await histogramMean(base, "trellis_inter_token_latency_seconds");

const ratioOf = (c: number): number => (results[String(c)] as { ratioStreamedOverPlain: number }).ratioStreamedOverPlain;
const worst = Math.min(...CONCURRENCIES.map(ratioOf));
const report = {
  bench: "stream",
  model: { id: modelId, path: modelPath, contextLength: engine.contextLength, vocabSize: engine.vocabSize },
  device: engine.backend ?? `CPU, ${THREADS} threads`,
  machine: {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model,
    loadAverageAtStart: round3(load0),
    loadAverageAtEnd: round3(loadavg()[0]!),
  },
  endpoint: `POST ${url.slice(base.length)}`,
  request: { maxTokens: MAX_TOKENS, temperature: 1, seeds: "1000 × round + 100 × client + request; the same in both modes" },
  rounds: ROUNDS,
  perClient: PER_CLIENT,
  tokensPerSecond:
    "completion tokens (usage) / the round's wall time (first request sent to last answer read), pooled over rounds; modes alternate which goes first",
  cpuPerToken:
    "process CPU time (llama.cpp's threads, the server and the client together) per completion token: what other load on the machine barely changes, unlike wall time; plain/streamed < 1 means streaming costs CPU",
  eventLoopBusy:
    "the main thread's active time (performance.eventLoopUtilization) per completion token: the JavaScript of the server and the client, llama.cpp's threads left out",
  timeToFirstToken: "request sent → first event with non-empty content, as read by the client",
  concurrency: results,
  serverMetrics: {
    timeToFirstTokenMeanMs: serverTtft.meanMs,
    timeToFirstTokenCount: serverTtft.count,
    interTokenLatencyMeanMs: serverItl.meanMs,
    interTokenLatencyCount: serverItl.count,
    note: "the server's histograms (request arrival → first text; between texts), warm-up included",
  },
  streamedTextMismatches: `${mismatchedTexts}/${comparedTexts}`,
  roundRatiosMedian: round3(median(ratiosAll)),
  benchSeconds: round3(benchSeconds),
  target: { ratioStreamedOverPlain: `>= ${TARGET_RATIO}`, worst: worst, met: worst >= TARGET_RATIO },
};
const json = JSON.stringify(report, null, 2);
console.log(json);
if (OUT) writeFileSync(OUT, `${json}\n`);
await app.close();
await engine.close();
store.close();
