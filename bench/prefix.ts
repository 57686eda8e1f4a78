/**
 * npm run bench:prefix — what the prefix cache saves, end to end over loopback: two real servers
 * (createServer on 127.0.0.1) over the synthetic Qwen2-0.5B-shape model (random weights, the real
 * 152k vocabulary and ChatML template; generated into .cache/models/ when missing), one with the
 * prefix cache at its defaults, one with it off (TRELLIS_PREFIX_CACHE_TOKENS=0, what every
 * request paid before), every other setting the service's default. Scenarios, each run on both
 * servers back to back, which goes first alternating between rounds:
 *
 *   chat      a 6-turn conversation that resends its history, as every OpenAI client does: each
 *             turn adds a user message of about 150 tokens, the reply (max_tokens 40, streamed)
 *             is sent back as the assistant message of the next turn. Time to first token per
 *             turn (request sent → first content event), and the `cached_tokens` the server reports.
 *             Target: turn 6 ≤ 1.5× turn 1 with the cache (today 4.5×).
 *   repeat    the same ~600-token prompt twice in a row: the repeat's time to first token over the
 *             first's. Target ≤ 0.2× with the cache (today 1.0×).
 *   categorize  one long shared prompt (~500 tokens) with 4 categories, asked 3 times: each
 *             answer's latency over the first's.
 *
 * A random-weight model writes arbitrary tokens, which the next turn's template tokenizes
 * canonically (often otherwise): the reuse of a reply's own tokens is then lost at its first
 * differing token, and everything before that reply is reused (cached_tokens says how much).
 *
 * Usage: npm run bench:prefix -- [--rounds 2] [--out FILE]
 * Prints one JSON object to stdout (and to --out); progress on stderr.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { type BenchService, startBenchService, streamedChat as streamed } from "./chat-service.js";
import { argValue, round3 } from "./stats.js";

const ROUNDS = Number(argValue("rounds") ?? 2);
const OUT = argValue("out");
const KEY = "bench-prefix-key";
const TURNS = 6;
const REPLY_TOKENS = 40;

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** About `words` words of plain English, different per `seed` (a user message). */
function prose(seed: number, words: number): string {
  const vocabulary = (
    "the keeper walked along the rocky shore at dawn and watched the grey waves roll in from the north while gulls " +
    "circled above the old lighthouse whose lamp had burned every night for a hundred years without fail until the " +
    "storm came and the village below lost its power and its boats and its patience with the sea"
  ).split(" ");
  const out: string[] = [];
  let x = seed * 7919 + 17;
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(vocabulary[x % vocabulary.length]!);
  }
  return `${out.join(" ")}.`;
}

type Served = BenchService & { name: "cache" | "noCache" };

/** A streamed chat completion: time to first content, its text, and the prompt tokens it reports as cached. */
async function streamedChat(s: Served, messages: unknown[], maxTokens: number, seed: number) {
  const r = await streamed(s, KEY, { messages, max_tokens: maxTokens, seed, temperature: 1 });
  return {
    ttftMs: r.firstMs,
    text: r.text,
    promptTokens: r.usage.prompt_tokens,
    cachedTokens: r.usage.prompt_tokens_details?.cached_tokens ?? 0,
  };
}

async function chatScenario(s: Served, round: number) {
  const messages: { role: string; content: string }[] = [{ role: "system", content: "You are a helpful assistant." }];
  const turns: { ttftMs: number; promptTokens: number; cachedTokens: number }[] = [];
  for (let t = 0; t < TURNS; t++) {
    messages.push({ role: "user", content: prose(round * 100 + t, 130) });
    const r = await streamedChat(s, messages, REPLY_TOKENS, 1000 + t);
    turns.push({ ttftMs: round3(r.ttftMs), promptTokens: r.promptTokens, cachedTokens: r.cachedTokens });
    messages.push({ role: "assistant", content: r.text });
  }
  return turns;
}

async function repeatScenario(s: Served, round: number) {
  const messages = [
    { role: "system", content: "You are a helpful assistant." },
    { role: "user", content: prose(5000 + round, 520) },
  ];
  const first = await streamedChat(s, messages, 8, 1);
  const repeat = await streamedChat(s, messages, 8, 1);
  return {
    firstMs: round3(first.ttftMs),
    repeatMs: round3(repeat.ttftMs),
    promptTokens: first.promptTokens,
    repeatCachedTokens: repeat.cachedTokens,
    ratio: round3(repeat.ttftMs / first.ttftMs),
  };
}

const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

async function categorizeScenario(s: Served, round: number) {
  const body = {
    prompt: `${prose(9000 + round, 430)}\nWhat is this text mostly about?`,
    categories: ["the sea", "a storm", "a village", "a lighthouse"],
  };
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const sent = performance.now();
    const response = await fetch(`${s.url}/v1/categorize`, { method: "POST", headers, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
    await response.json();
    times.push(performance.now() - sent);
  }
  return { msEach: times.map(round3), laterOverFirst: round3(median(times.slice(1)) / times[0]!) };
}

const modelPath = ensureSyntheticModel("qwen2-0.5b");
log(`opening ${modelPath} twice (prefix cache at its defaults, and off)`);
const servers: Served[] = [
  { ...(await startBenchService(modelPath, KEY)), name: "cache" },
  { ...(await startBenchService(modelPath, KEY, { prefixCacheTokens: 0 })), name: "noCache" },
];
const load0 = loadavg()[0]!;
const rounds: Record<string, unknown>[] = [];
// An untimed warm-up on each: pages the weights in.
for (const s of servers) await streamedChat(s, [{ role: "user", content: "Hello" }], 4, 1);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? servers : [...servers].reverse();
  const entry: Record<string, unknown> = { round };
  for (const [scenario, run] of [
    ["chat", chatScenario],
    ["repeat", repeatScenario],
    ["categorize", categorizeScenario],
  ] as const) {
    for (const s of order) {
      log(`round ${round}: ${scenario} on ${s.name}`);
      ((entry[scenario] ??= {}) as Record<string, unknown>)[s.name] = await run(s, round);
    }
  }
  rounds.push(entry);
}
for (const s of servers) await s.close();

type Turns = { ttftMs: number; cachedTokens: number; promptTokens: number }[];
const turnRatio = (name: Served["name"]) =>
  median(
    rounds.map((r) => {
      const turns = (r.chat as Record<string, Turns>)[name]!;
      return turns[TURNS - 1]!.ttftMs / turns[0]!.ttftMs;
    }),
  );
const repeatRatio = (name: Served["name"]) => median(rounds.map((r) => (r.repeat as Record<string, { ratio: number }>)[name]!.ratio));
const categorizeRatio = (name: Served["name"]) =>
  median(rounds.map((r) => (r.categorize as Record<string, { laterOverFirst: number }>)[name]!.laterOverFirst));
const summary = {
  turn6OverTurn1: { cache: round3(turnRatio("cache")), noCache: round3(turnRatio("noCache")), target: 1.5 },
  repeatOverFirst: { cache: round3(repeatRatio("cache")), noCache: round3(repeatRatio("noCache")), target: 0.2 },
  categorizeLaterOverFirst: { cache: round3(categorizeRatio("cache")), noCache: round3(categorizeRatio("noCache")) },
};
const result = {
  bench: "prefix",
  model: "synthetic qwen2-0.5b q8_0 (random weights, real vocabulary and ChatML template)",
  settings: "service defaults (threads, context, limits); the noCache server sets TRELLIS_PREFIX_CACHE_TOKENS=0",
  node: process.version,
  cpus: availableParallelism(),
  loadAverage: { start: round3(load0), end: round3(loadavg()[0]!) },
  summary,
  pass: {
    turn6OverTurn1: summary.turn6OverTurn1.cache <= 1.5,
    repeatOverFirst: summary.repeatOverFirst.cache <= 0.2,
  },
  rounds,
};
const json = JSON.stringify(result, null, 2);
process.stdout.write(`${json}\n`);
if (OUT) writeFileSync(OUT, `${json}\n`);
