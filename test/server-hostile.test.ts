// Hostile input against the service as the README runs it (stories260K.gguf, its own process):
// every case of test/support/hostile-cases.ts is answered with the status it states (its limits
// are counted work and sizes, not time), a refusal in the JSON error shape naming the request
// field at fault, an admission with a completion no longer than max_new_tokens; another client
// polling /healthz meanwhile is answered "ok" every time; afterwards the service answers /healthz
// and an ordinary request as it did before, with nothing left queued or running and its
// constraint cache within its byte budget. How fast all this is (the /healthz p99 target of
// 100 ms while hostile requests run, the serving thread's event-loop delay, resident memory) is
// measured by `npm run bench:hostile` (bench/hostile.ts), not here.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  HOSTILE_KEY,
  hostileCases,
  sendHostile,
  startHealthPoller,
  startHostileService,
  type HostileCase,
  type HostileService,
} from "./support/hostile-cases.js";

let service: HostileService;

before(async () => {
  service = await startHostileService(["--import", "tsx", "src/cli.ts"], {
    TRELLIS_THREADS: "1",
    TRELLIS_LOG_LEVEL: "error",
    TRELLIS_PREFIX_CACHE_TOKENS: "0",
  });
});

after(async () => {
  await service?.stop();
});

/** An ordinary request (fixed seed: the same answer each time the service is sound). */
const ORDINARY_REGEX = { prompt: "Once upon a time", pattern: "[a-z]{3}", max_new_tokens: 5, seed: 7 };
const ORDINARY_CATEGORIZE = { prompt: "The dog barked at the cat.", categories: ["dog", "cat", "bird"] };

async function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(service.base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${HOSTILE_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function getText(path: string): Promise<{ status: number; text: string }> {
  const response = await fetch(service.base + path);
  return { status: response.status, text: await response.text() };
}

/** One unlabelled sample of /metrics (NaN when absent). */
function metric(text: string, name: string): number {
  const match = new RegExp(`^${name} ([0-9.e+-]+)$`, "m").exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** `field` as a word of `message` ("pattern" in "pattern[0] must be…", not in "patterns"). */
const namesField = (message: string, field: string): boolean =>
  new RegExp(`(^|[^\\w])${field.replace(/[^\w]/g, "\\$&")}([^\\w]|$)`).test(message);

/** What is wrong with one answer to `c`, or null. */
function judge(c: HostileCase, status: number, body: unknown, text: string): string | null {
  const where = `${c.name}: ${status}: ${text.slice(0, 200)}`;
  if (status !== c.status) return `status ${status}, expected ${c.status}: ${where}`;
  if (body === null || typeof body !== "object" || Array.isArray(body)) return `not a JSON object: ${where}`;
  if (status === 200) {
    const ok = body as { completion?: unknown; tokens_generated?: unknown; stop_reason?: unknown };
    const maxNewTokens = (c.body as { max_new_tokens?: number }).max_new_tokens;
    if (typeof ok.completion !== "string") return `no completion: ${where}`;
    if (typeof ok.stop_reason !== "string") return `no stop_reason: ${where}`;
    if (!Number.isInteger(ok.tokens_generated) || (ok.tokens_generated as number) < 0) return `no tokens_generated: ${where}`;
    if (maxNewTokens !== undefined && (ok.tokens_generated as number) > maxNewTokens) return `more than ${maxNewTokens} tokens: ${where}`;
    return null;
  }
  const e = body as { error?: unknown; code?: unknown };
  if (typeof e.error !== "string" || e.error.length === 0 || e.code !== status || Object.keys(e).length !== 2)
    return `not the error shape {error, code}: ${where}`;
  if (!namesField(e.error, c.field)) return `the message does not name ${c.field}: ${where}`;
  if (c.message && !c.message.test(e.error)) return `the message does not match ${c.message}: ${where}`;
  return null;
}

test("the hostile cases are many, distinctly named, and cover each route and each outcome", () => {
  const cases = hostileCases();
  assert.ok(cases.length >= 110, `only ${cases.length} cases`);
  assert.equal(new Set(cases.map((c) => c.name)).size, cases.length, "duplicate case names");
  assert.deepEqual([...new Set(cases.map((c) => c.path))].sort(), ["/v1/categorize", "/v1/completion/cfg", "/v1/completion/regex"]);
  assert.deepEqual([...new Set(cases.map((c) => c.status))].sort(), [200, 400, 422]);
});

let ordinaryBefore: Record<string, unknown> = {};

test("every hostile request is answered with its status, refusals in the JSON error shape naming the field, while /healthz answers ok", async () => {
  const cases = hostileCases();
  // An ordinary request first: its answer is compared with the one after the hostile requests.
  const first = await post("/v1/completion/regex", ORDINARY_REGEX);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  ordinaryBefore = first.body;

  const poller = startHealthPoller(service.base);
  const failures: string[] = [];
  const statusCounts: Record<string, number> = {};
  for (const c of cases) {
    const { status, body, text } = await sendHostile(service.base, c);
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    const failure = judge(c, status, body, text);
    if (failure) failures.push(failure);
  }
  const health = await poller.stop();
  process.stdout.write(`# ${JSON.stringify({ cases: cases.length, statusCounts, healthPolls: health.statuses.length })}\n`);
  assert.deepEqual(failures, []);
  assert.ok(health.statuses.length >= 1, "no /healthz poll made");
  const notOk = health.statuses.flatMap((status, i) =>
    status === 200 && health.bodies[i] === '{"status":"ok"}' ? [] : [`poll ${i}: ${status} ${health.bodies[i]}`],
  );
  assert.deepEqual(notOk, [], "a /healthz poll was not answered ok");
});

test("afterwards the service answers /healthz and ordinary requests as before, with nothing left running", async () => {
  const health = await getText("/healthz");
  assert.equal(health.status, 200);
  assert.deepEqual(JSON.parse(health.text), { status: "ok" });

  const regex = await post("/v1/completion/regex", ORDINARY_REGEX);
  assert.equal(regex.status, 200, JSON.stringify(regex.body));
  assert.match(String(regex.body.completion), /^[a-z]{3}$/);
  assert.deepEqual(regex.body, ordinaryBefore, "the same seeded request answered differently after the hostile requests");

  const categorize = await post("/v1/categorize", ORDINARY_CATEGORIZE);
  assert.equal(categorize.status, 200, JSON.stringify(categorize.body));
  const choices = categorize.body.choices as string[];
  assert.equal(choices.length, 1);
  assert.ok(ORDINARY_CATEGORIZE.categories.includes(choices[0]!), `choice ${choices[0]}`);

  const metrics = await getText("/metrics");
  assert.equal(metrics.status, 200);
  const value = (name: string): number => {
    const v = metric(metrics.text, name);
    assert.ok(Number.isFinite(v), `${name} missing from /metrics`);
    return v;
  };
  // Every answer has been read: nothing waits or runs.
  assert.equal(value("trellis_queue_depth"), 0);
  assert.equal(value("trellis_generations_in_flight"), 0);
  assert.equal(value("trellis_compile_queue_depth"), 0);
  assert.equal(value("trellis_compile_workers_busy"), 0);
  // What the hostile requests compiled (and the refusals kept) fits the cache's byte budget.
  const cacheBytes = value("trellis_constraint_cache_bytes");
  const budgetBytes = value("trellis_constraint_cache_budget_bytes");
  assert.ok(cacheBytes > 0, "nothing in the constraint cache");
  assert.ok(cacheBytes <= budgetBytes, `constraint cache ${cacheBytes} bytes over its budget ${budgetBytes}`);
});
