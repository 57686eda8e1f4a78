// The service on a GPU, end to end (bench/gpu/check.sh starts it): each endpoint answers, then
// N concurrent clients per endpoint for a fixed number of requests each. Prints JSON.
// Usage: node bench/gpu/service.mjs <base-url> <api-key> [clients=8] [requestsPerClient=6]
import { readFileSync } from "node:fs";

const [base, key, clientsArg, perClientArg] = process.argv.slice(2);
const clients = Number(clientsArg ?? 8);
const perClient = Number(perClientArg ?? 6);

// The JSON grammar of the corpus (the same one bench:grammar-mask measures).
const JSON_GRAMMAR = readFileSync(new URL("../../test/grammars/json.lark", import.meta.url), "utf8");

const requests = {
  regex: [
    "/v1/completion/regex",
    { prompt: "A list of words: ", pattern: "[a-z]+( [a-z]+)*", max_new_tokens: 64, stop_after_match: false, seed: 1 },
  ],
  cfg: ["/v1/completion/cfg", { prompt: "A JSON document: ", grammar: JSON_GRAMMAR, max_new_tokens: 64, stop_after_match: false, seed: 1 }],
  categorize: [
    "/v1/categorize",
    {
      prompt: "What animal barks?",
      categories: ["dog", "cat", "bird", "fish", "horse", "cow", "sheep", "goat", "duck", "mouse"],
      include_scores: true,
    },
  ],
};

async function call(path, body) {
  const t0 = performance.now();
  const res = await fetch(base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, ms: performance.now() - t0, body: await res.json() };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10;
};

const report = { clients, perClient, single: {}, concurrent: {} };
for (const [name, [path, body]] of Object.entries(requests)) {
  await call(path, body); // first use: grammar compile, prompt cache, CUDA graphs
  const one = await call(path, body);
  report.single[name] = { status: one.status, ms: Math.round(one.ms), body: one.body };
  const times = [];
  const statuses = {};
  let tokens = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < perClient; i++) {
        const r = await call(path, { ...body, ...(body.seed === undefined ? {} : { seed: c * 1000 + i }) });
        times.push(r.ms);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        tokens += r.body.tokens_generated ?? 0;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  report.concurrent[name] = {
    requests: times.length,
    statuses,
    requestsPerSecond: Math.round((times.length / seconds) * 10) / 10,
    tokensPerSecond: Math.round(tokens / seconds),
    p50Ms: pct(times, 0.5),
    p99Ms: pct(times, 0.99),
  };
}
const metrics = await (await fetch(base + "/metrics")).text();
report.metrics = metrics.split("\n").filter((l) => /^trellis_(tokens_generated_total|generations_in_flight|queue_depth)/.test(l));
console.log(JSON.stringify(report, null, 1));
