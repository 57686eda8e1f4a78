/**
 * HTTP fuzzing through fastify.inject: random and malformed methods, paths, headers and bodies.
 * The service must never answer 5xx, and every non-200 answer must be the JSON error shape.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { TEST_KEY, createFakeEngine, testConfig } from "./support/fake-engine.js";
import { seededRandom } from "../src/support/index.js";

const CASES = Number(process.env.TRELLIS_FUZZ_CASES ?? 1500);

/** Seeded (mulberry32), so a failure reproduces. */
const rng = seededRandom;

const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
const app = await createService({
  engine: createFakeEngine(),
  config: testConfig({ rateLimit: 0, bodyLimitBytes: 64 * 1024 }),
  store,
  adminTokenHash: sha256Hex("admin-secret"),
});
await app.ready();
after(async () => {
  await app.close();
  store.close();
});

const SEED = Number(process.env.TRELLIS_FUZZ_SEED ?? 20261122);
const random = rng(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (n: number) => Math.floor(random() * n);

const OPENAI_PATH = /^\/v1\/(chat\/completions|completions|models|embeddings)(\/|\?|$)/;

const PATHS = [
  "/v1/completion/regex",
  "/v1/completion/cfg",
  "/v1/completion/grammar",
  "/v1/categorize",
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/models",
  "/v1/models/x",
  "/v1/embeddings",
  "/healthz",
  "/readyz",
  "/metrics",
  "/openapi.json",
  "/docs",
  "/dashboard",
  "/dashboard/api/login",
  "/dashboard/api/keys",
  "/dashboard/api/keys/1/revoke",
  "/dashboard/api/keys/abc/revoke",
  "/dashboard/api/session",
];
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"] as const;
const FIELDS = [
  "prompt",
  "pattern",
  "patterns",
  "grammar",
  "categories",
  "max_new_tokens",
  "stop_after_match",
  "top_k",
  "top_p",
  "temperature",
  "repetition_penalty",
  "seed",
  "allow_multiple_classes",
  "allow_null_category",
  "include_scores",
  "__proto__",
  "constructor",
  "token",
  "name",
  "",
  "x".repeat(300),
];

function randomString(max = 40): string {
  const alphabets = ["abc xyz", "()[]{}*+?|\\^$.", "\u0000\u0001\u007f", "é中😀\ud800", "\"'<>&%", "0123456789"];
  let s = "";
  const length = int(max);
  for (let i = 0; i < length; i++) s += pick(alphabets)[int(7)] ?? "a";
  return s.startsWith("!") ? "a" + s : s;
}

function randomValue(depth = 0): unknown {
  switch (int(depth > 3 ? 7 : 10)) {
    case 0:
      return randomString();
    case 1:
      return int(2) ? int(100) : -int(1e9);
    case 2:
      return pick([0, 1, -1, 0.5, 1e308, -1e-300, 2 ** 53, 3.7, 1e21]);
    case 3:
      return pick([true, false]);
    case 4:
      return null;
    case 5:
      return "x".repeat(int(5000));
    case 6:
      return pick(["", "dog", "[a-z]+", 'start: "a"']);
    case 7:
      return Array.from({ length: int(5) }, () => randomValue(depth + 1));
    case 8: {
      const o: Record<string, unknown> = {};
      for (let i = int(4); i > 0; i--) o[pick(FIELDS)] = randomValue(depth + 1);
      return o;
    }
    default:
      return [];
  }
}

function validishBody(): Record<string, unknown> {
  const body: Record<string, unknown> = { prompt: randomString() };
  const extra = int(6);
  for (let i = 0; i < extra; i++) body[pick(FIELDS)] = randomValue();
  if (int(2)) body.pattern = pick(["a", "[0-9]+", ["x", "y"], randomString()]);
  if (int(2)) body.grammar = 'start: "a"';
  if (int(2)) body.categories = pick([["a", "b"], ["a", "a"], [], [""], ["x".repeat(300)], [1, 2]]);
  return body;
}

function randomBody(): string | undefined {
  switch (int(9)) {
    case 0:
      return undefined;
    case 1:
      return "";
    case 2:
      return JSON.stringify(validishBody());
    case 3:
      return JSON.stringify(validishBody()).slice(0, int(30));
    case 4:
      return JSON.stringify(randomValue());
    case 5:
      return Buffer.from(Array.from({ length: int(200) }, () => int(256))).toString("latin1");
    case 6:
      return '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"prompt":"a","pattern":"b"}';
    case 7:
      return "[".repeat(int(3000)) + "]".repeat(int(3000));
    default:
      return JSON.stringify({ ...validishBody(), prompt: "y".repeat(int(2) ? 70_000 : 10) });
  }
}

function randomPath(): string {
  const base = pick(PATHS);
  switch (int(8)) {
    case 0:
      return (
        base + "?" + encodeURIComponent(randomString(10).replace(/[\ud800-\udfff]/g, "x")) + "=" + randomString(5).replace(/[^a-z0-9]/g, "")
      );
    case 1:
      return base + "/" + randomString(8).replace(/[^a-z]/g, "x");
    case 2:
      return "/%" + pick(["", "zz", "E0%A4%A", "00"]);
    case 3:
      return "/" + "a/".repeat(int(200));
    case 4:
      return base.toUpperCase();
    case 5:
      return base + "//";
    default:
      return base;
  }
}

function randomHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  switch (int(6)) {
    case 0:
      break;
    case 1:
      headers.authorization = `Bearer ${TEST_KEY}`;
      break;
    case 2:
      headers.authorization = pick([
        "Bearer",
        "Bearer  ",
        "Basic Zm9vOmJhcg==",
        "bearer " + TEST_KEY,
        "Bearer trl_" + "A".repeat(43),
        "Bearer " + "k".repeat(5000),
      ]);
      break;
    default:
      headers.authorization = `Bearer ${TEST_KEY}`;
  }
  headers["content-type"] = pick([
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json; charset=latin1",
    "APPLICATION/JSON",
    "",
    "application/jsonx",
  ]);
  if (headers["content-type"] === "") delete headers["content-type"];
  if (int(4) === 0) headers.cookie = pick(["trellis_session=abc", "trellis_session=", "=;;;", "a=b; trellis_session=" + "z".repeat(100)]);
  if (int(5) === 0) headers["x-csrf-token"] = randomString(10).replace(/[^a-z]/g, "");
  if (int(6) === 0) headers.accept = pick(["text/html", "*/*", "application/xml"]);
  return headers;
}

const HTML_OK = new Set(["/docs", "/docs/", "/dashboard", "/dashboard/", "/metrics"]);

test(`${CASES} random requests: never a 5xx, errors always {error, code}`, async () => {
  const statusCounts = new Map<number, number>();
  for (let i = 0; i < CASES; i++) {
    const method = pick(METHODS);
    const url = randomPath();
    const headers = randomHeaders();
    const payload = method === "GET" || method === "HEAD" ? undefined : randomBody();
    const res = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
    statusCounts.set(res.statusCode, (statusCounts.get(res.statusCode) ?? 0) + 1);
    const replay = `case ${i} (seed ${SEED}): ${method} ${url} ${JSON.stringify(headers)} ${String(payload).slice(0, 200)}`;
    assert.ok(res.statusCode < 500, `${res.statusCode} ${res.body.slice(0, 200)} for ${replay}`);
    if (method === "HEAD") continue;
    if (res.statusCode === 200) {
      if (!HTML_OK.has(url.split("?")[0]!)) assert.doesNotThrow(() => JSON.parse(res.body), replay);
      continue;
    }
    assert.match(String(res.headers["content-type"]), /^application\/json/, replay);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    if (OPENAI_PATH.test(url)) {
      // The OpenAI API's routes answer in OpenAI's shape.
      const error = body.error as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ["error"], replay);
      assert.deepEqual(Object.keys(error).sort(), ["code", "message", "param", "type"], replay);
      assert.ok(typeof error.message === "string" && error.message.length > 0, replay);
      continue;
    }
    assert.deepEqual(Object.keys(body).sort(), ["code", "error"], replay);
    assert.equal(body.code, res.statusCode, replay);
    assert.equal(typeof body.error, "string", replay);
    assert.ok((body.error as string).length > 0, replay);
  }
  const seen = [...statusCounts.keys()].sort();
  if (process.env.TRELLIS_FUZZ_VERBOSE) console.log(JSON.stringify(Object.fromEntries(statusCounts)));
  // The generator must reach the interesting answers, or the test proves little.
  for (const status of [200, 400, 401, 404, 405, 413, 415]) assert.ok(seen.includes(status), `never produced ${status}: ${seen}`);
});
