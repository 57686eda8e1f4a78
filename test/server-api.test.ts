// The HTTP API with a fake engine: response shapes, defaults and the seed API clients' bodies,
// validation and error mapping (400, 401, 404, 405, 413, 415, 422, 503, 500 without internals),
// operational endpoints, rate limits, a full queue, deadlines, client disconnects, malformed HTTP
// on a real socket, and shutdown.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { auth, createFakeEngine, testConfig, TEST_KEY, type FakeEngine } from "./support/fake-engine.js";
import type { Config } from "../src/config.js";

async function setup(overrides: Partial<Config> = {}) {
  const engine = createFakeEngine();
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine, config: testConfig(overrides), store });
  await app.ready();
  return { app, engine, store };
}

function assertErrorShape(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number, pattern?: RegExp) {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers["content-type"]), /^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ["code", "error"]);
  assert.equal(body.code, status);
  assert.equal(typeof body.error, "string");
  if (pattern) assert.match(body.error as string, pattern);
  return body.error as string;
}

describe("API endpoints with a fake engine", () => {
  let app: FastifyInstance;
  let engine: FakeEngine;
  let store: KeyStore;
  before(async () => ({ app, engine, store } = await setup()));
  after(async () => {
    await app.close();
    store.close();
  });

  const post = (url: string, payload: unknown, headers: Record<string, string> = auth()) =>
    app.inject({ method: "POST", url, headers, payload: typeof payload === "string" ? payload : JSON.stringify(payload) });

  test("regex completion: response shape and seed-API defaults reach the engine", async () => {
    const res = await post("/v1/completion/regex", { prompt: "Say yes", pattern: "yes|no" });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { completion: "yesno", tokens_generated: 3, stop_reason: "pattern_match" });
    const call = engine.calls.at(-1)!.request as Record<string, unknown>;
    assert.equal(call.maxNewTokens, 5);
    assert.equal(call.stopAfterMatch, true);
    assert.equal(call.topK, 50);
    assert.equal(call.topP, 1);
    assert.equal(call.temperature, 1);
    assert.equal(call.repetitionPenalty, 1);
    assert.equal("seed" in call, false);
    assert.ok(call.signal instanceof AbortSignal);
  });

  test("regex: `patterns` alias (TS/Python clients) and null knobs (Go client) are accepted", async () => {
    let res = await post("/v1/completion/regex", { prompt: "x", patterns: ["ab", "cd"], max_new_tokens: 7, seed: 42, temperature: 0 });
    assert.equal(res.statusCode, 200, res.body);
    let call = engine.calls.at(-1)!.request as Record<string, unknown>;
    assert.deepEqual(call.pattern, ["ab", "cd"]);
    assert.equal(call.maxNewTokens, 7);
    assert.equal(call.seed, 42);
    assert.equal(call.temperature, 0);
    res = await post("/v1/completion/regex", { prompt: "x", pattern: "a", stop_after_match: null, top_p: null });
    assert.equal(res.statusCode, 200, res.body);
    call = engine.calls.at(-1)!.request as Record<string, unknown>;
    assert.equal(call.stopAfterMatch, true);
    assert.equal(call.topP, 1);
    assertErrorShape(await post("/v1/completion/regex", { prompt: "x", pattern: "a", patterns: "b" }), 400, /pattern/);
    assertErrorShape(await post("/v1/completion/regex", { prompt: "x" }), 400, /^pattern is required/);
  });

  test("request bodies exactly as the seed API's TS, Python and Go clients send them", async () => {
    const ua = (name: string) => ({ ...auth(), "user-agent": `${name}/0.0.2` });
    // Python client: every knob explicit, `patterns` list.
    let res = await post(
      "/v1/completion/regex",
      {
        prompt: "p",
        patterns: ["T[a-z]+"],
        max_new_tokens: 5,
        stop_after_match: true,
        temperature: 1.0,
        top_p: 1.0,
        top_k: 50,
        repetition_penalty: 1.0,
      },
      ua("thiggle-client-py"),
    );
    assert.equal(res.statusCode, 200, res.body);
    res = await post(
      "/v1/categorize",
      { prompt: "What animal barks?", categories: ["dog", "cat"], allow_null_category: false, allow_multiple_classes: false },
      ua("thiggle-client-py"),
    );
    assert.deepEqual(res.json(), { choices: ["dog"] });
    // TypeScript client: only what the caller set.
    res = await post("/v1/completion/cfg", { prompt: "p", grammar: 'start: "a"' }, ua("thiggle-client-ts"));
    assert.equal(res.statusCode, 200, res.body);
    // Go client: `pattern` string, zero numbers omitted, unset Bool marshalled as null.
    res = await post("/v1/completion/regex", { prompt: "p", pattern: "[0-9]+", stop_after_match: null }, ua("thiggle-client-go"));
    assert.equal(res.statusCode, 200, res.body);
    res = await post(
      "/v1/categorize",
      { prompt: "p", categories: ["a", "b"], allow_null_category: null, allow_multiple_classes: null },
      ua("thiggle-client-go"),
    );
    assert.deepEqual(res.json(), { choices: ["a"] });
    const call = engine.calls.at(-1)!.request as Record<string, unknown>;
    assert.equal(call.allowNullCategory, false);
    assert.equal(call.allowMultipleClasses, false);
  });

  test("cfg and its grammar alias, categorize with and without scores", async () => {
    for (const url of ["/v1/completion/cfg", "/v1/completion/grammar"]) {
      const res = await post(url, { prompt: "p", grammar: 'start: "a"', max_new_tokens: 2 });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { completion: "ok", tokens_generated: 2, stop_reason: "token_limit" });
      assert.equal((engine.calls.at(-1)!.request as Record<string, unknown>).maxIgnoredRun, 8);
    }
    for (const [given, expected] of [
      [null, 8],
      [0, 0],
      [40, 40],
      [256, 256],
    ] as const) {
      const res = await post("/v1/completion/cfg", { prompt: "p", grammar: 'start: "a"', max_ignored_run: given });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((engine.calls.at(-1)!.request as Record<string, unknown>).maxIgnoredRun, expected);
    }
    let res = await post("/v1/categorize", { prompt: "What barks?", categories: ["dog", "cat"] });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { choices: ["dog"] });
    const call = engine.calls.at(-1)!.request as Record<string, unknown>;
    assert.equal(call.allowMultipleClasses, false);
    assert.equal(call.allowNullCategory, false);
    res = await post("/v1/categorize", { prompt: "What barks?", categories: ["dog", "cat"], include_scores: true });
    assert.deepEqual(res.json(), { choices: ["dog"], scores: { dog: 0.9, cat: 0.1 } });
  });

  test("validation errors name the field and the range", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ prompt: "x", pattern: "a", max_new_tokens: 0 }, /^max_new_tokens must be ≥ 1$/],
      [{ prompt: "x", pattern: "a", max_new_tokens: 33 }, /^max_new_tokens must be ≤ 32$/],
      [{ prompt: "x", pattern: "a", max_new_tokens: 2.5 }, /^max_new_tokens must be an integer$/],
      [{ prompt: "x", pattern: "a", max_new_tokens: "5" }, /^max_new_tokens must be an integer$/],
      [{ prompt: "x", pattern: "a", top_k: -1 }, /^top_k must be ≥ 0$/],
      [{ prompt: "x", pattern: "a", top_p: 0 }, /^top_p must be > 0$/],
      [{ prompt: "x", pattern: "a", top_p: 1.5 }, /^top_p must be ≤ 1$/],
      [{ prompt: "x", pattern: "a", temperature: -0.1 }, /^temperature must be ≥ 0$/],
      [{ prompt: "x", pattern: "a", repetition_penalty: 0 }, /^repetition_penalty must be > 0$/],
      [{ prompt: "x", pattern: "a", stop_after_match: "yes" }, /^stop_after_match must be a boolean/],
      [{ prompt: "x", pattern: "a", seed: -1 }, /^seed must be ≥ 0$/],
      [{ prompt: 5, pattern: "a" }, /^prompt must be a string$/],
      [{ pattern: "a" }, /^prompt is required$/],
      [{ prompt: "x", pattern: [] }, /^pattern must be a non-empty array$/],
      [{ prompt: "x", pattern: ["a", 3] }, /^pattern\[1\] must be a string$/],
      [{ prompt: "x", pattern: 3 }, /^pattern must be a string or a non-empty array of strings$/],
      [{ prompt: "x", pattern: "a".repeat(5000) }, /^pattern must be at most 4096 characters$/],
      [
        { prompt: "x", pattern: "a", bogus: 1 },
        /^unknown field "bogus"; allowed fields: prompt, pattern, patterns, max_new_tokens, stop_after_match, top_k, top_p, temperature, repetition_penalty, seed$/,
      ],
      [[1, 2], /^body must be a JSON object$/],
    ];
    for (const [payload, pattern] of cases) {
      assertErrorShape(await post("/v1/completion/regex", payload), 400, pattern);
    }
    assertErrorShape(await post("/v1/completion/cfg", { prompt: "x", grammar: "" }), 400, /^grammar must not be empty$/);
    assertErrorShape(
      await post("/v1/completion/cfg", { prompt: "x", grammar: 'start: "a"', max_ignored_run: -1 }),
      400,
      /^max_ignored_run must be ≥ 0$/,
    );
    assertErrorShape(
      await post("/v1/completion/cfg", { prompt: "x", grammar: 'start: "a"', max_ignored_run: 257 }),
      400,
      /^max_ignored_run must be ≤ 256$/,
    );
    assertErrorShape(
      await post("/v1/completion/cfg", { prompt: "x", grammar: 'start: "a"', max_ignored_run: 1.5 }),
      400,
      /^max_ignored_run must be an integer$/,
    );
    assertErrorShape(
      await post("/v1/completion/regex", { prompt: "x", pattern: "a", max_ignored_run: 3 }),
      400,
      /^unknown field "max_ignored_run"/,
    );
    assertErrorShape(await post("/v1/categorize", { prompt: "x", categories: [] }), 400, /^categories must be a non-empty array$/);
    assertErrorShape(await post("/v1/categorize", { prompt: "x", categories: ["a", ""] }), 400, /^categories\[1\] must not be empty$/);
    assertErrorShape(
      await post("/v1/categorize", { prompt: "x", categories: ["a", "b", "a"] }),
      400,
      /^categories must not contain duplicates \(items 0 and 2 are equal\)$/,
    );
    assertErrorShape(
      await post("/v1/categorize", { prompt: "x", categories: ["a"], allow_multiple: true }),
      400,
      /allowed fields: prompt, categories, allow_multiple_classes, allow_null_category, include_scores$/,
    );
  });

  test("prompt + max_new_tokens must fit the model context", async () => {
    const long = Array.from({ length: 64 }, () => "w").join(" ");
    assertErrorShape(
      await post("/v1/completion/regex", { prompt: long, pattern: "a" }),
      400,
      /^prompt is 64 tokens, but the model context is 64 tokens$/,
    );
    const sixty = Array.from({ length: 60 }, () => "w").join(" ");
    assertErrorShape(
      await post("/v1/completion/regex", { prompt: sixty, pattern: "a", max_new_tokens: 5 }),
      400,
      /^max_new_tokens must be ≤ 4/,
    );
    assert.equal((await post("/v1/completion/regex", { prompt: sixty, pattern: "a", max_new_tokens: 4 })).statusCode, 200);
  });

  test("malformed bodies and transport errors: 400, 413, 415", async () => {
    assertErrorShape(await post("/v1/completion/regex", "{not json"), 400, /not valid JSON/);
    assertErrorShape(await post("/v1/completion/regex", ""), 400, /empty/);
    assertErrorShape(await post("/v1/completion/regex", '{"__proto__": {"x": 1}, "prompt": "a"}'), 400);
    assertErrorShape(
      await post(
        "/v1/completion/regex",
        { prompt: "x", pattern: "a" },
        { authorization: `Bearer ${TEST_KEY}`, "content-type": "text/plain" },
      ),
      415,
      /application\/json/,
    );
    assertErrorShape(await post("/v1/completion/regex", { prompt: "x", pattern: "a" }, { authorization: `Bearer ${TEST_KEY}` }), 415);
    const res = await app.inject({
      method: "POST",
      url: "/v1/completion/regex",
      headers: auth(),
      payload: JSON.stringify({ prompt: "x".repeat(1_100_000), pattern: "a" }),
    });
    assertErrorShape(res, 413, /1048576 bytes/);
    assert.equal(
      (
        await post(
          "/v1/completion/regex",
          { prompt: "x", pattern: "a" },
          { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json; charset=utf-8" },
        )
      ).statusCode,
      200,
    );
  });

  test("a key named __proto__ is valid JSON: a schema property so named reaches the engine as an own key", async () => {
    const schema =
      '{"type":"object","properties":{"__proto__":{"type":"string"},"b":{"const":{"constructor":{"prototype":1}}}},"required":["__proto__"]}';
    const res = await post("/v1/completion/json", `{"prompt":"x","schema":${schema}}`);
    assert.equal(res.statusCode, 200, res.body);
    const sent = (engine.calls.at(-1)!.request as { schema: { properties: Record<string, unknown> } }).schema;
    assert.ok(Object.hasOwn(sent.properties, "__proto__"));
    assert.deepEqual(Object.keys(sent.properties), ["__proto__", "b"]);
    assert.equal(Object.getPrototypeOf(sent.properties), Object.prototype);
    assert.deepEqual(JSON.parse(JSON.stringify(sent)), JSON.parse(schema));
    // At the top of a body it is an unknown field like any other, and no prototype changes.
    assertErrorShape(
      await post("/v1/completion/regex", '{"prompt":"x","pattern":"a","__proto__":{"admin":true}}'),
      400,
      /unknown field "__proto__"/,
    );
    assertErrorShape(await post("/v1/completion/json", '{"__proto__":{"prompt":"x","schema":{}}}'), 400, /^prompt is required/);
    assert.equal(({} as Record<string, unknown>).admin, undefined);
  });

  test("authentication: missing, wrong and store keys; revoked keys get 401", async () => {
    assertErrorShape(
      await post("/v1/categorize", { prompt: "x", categories: ["a"] }, { "content-type": "application/json" }),
      401,
      /missing API key/,
    );
    assertErrorShape(await post("/v1/categorize", { prompt: "x", categories: ["a"] }, auth("nope")), 401, /invalid or revoked/);
    assertErrorShape(
      await post("/v1/categorize", { prompt: "x", categories: ["a"] }, { authorization: "Basic abc", "content-type": "application/json" }),
      401,
    );
    const created = store.createKey("ci");
    assert.equal((await post("/v1/categorize", { prompt: "x", categories: ["a"] }, auth(created.key))).statusCode, 200);
    store.revokeKey(created.id);
    assertErrorShape(await post("/v1/categorize", { prompt: "x", categories: ["a"] }, auth(created.key)), 401, /revoked/);
    store.flush();
    const usage = store.listKeys().find((k) => k.id === created.id)!;
    assert.equal(usage.requests, 1);
    assert.ok(usage.lastUsedAt);
  });

  test("library errors map to 400 (with position), 422, 503 + Retry-After, 500 without internals", async () => {
    assertErrorShape(
      await post("/v1/completion/regex", { prompt: "!invalid", pattern: "(a" }),
      400,
      /^pattern: unbalanced parenthesis \(at position 3\)$/,
    );
    assertErrorShape(await post("/v1/completion/cfg", { prompt: "!unsat", grammar: "g" }), 422, /^grammar: no token sequence/);
    const overloaded = await post("/v1/categorize", { prompt: "!overload", categories: ["a"] });
    assertErrorShape(overloaded, 503, /queue is full/);
    assert.equal(overloaded.headers["retry-after"], "7");
    const bug = assertErrorShape(await post("/v1/completion/regex", { prompt: "!bug", pattern: "a" }), 500);
    assert.equal(bug, "internal server error");
  });

  test("404 and 405 with the JSON shape", async () => {
    assertErrorShape(await app.inject({ method: "GET", url: "/v2/nothing" }), 404, /GET \/v2\/nothing/);
    const res = await app.inject({ method: "GET", url: "/v1/completion/regex" });
    assertErrorShape(res, 405, /allowed: POST/);
    assert.equal(res.headers.allow, "POST");
    assertErrorShape(await app.inject({ method: "DELETE", url: "/healthz" }), 405);
  });

  test("operational endpoints need no key", async () => {
    assert.deepEqual((await app.inject({ url: "/healthz" })).json(), { status: "ok" });
    assert.deepEqual((await app.inject({ url: "/readyz" })).json(), { status: "ready" });
    engine.ready = false;
    assertErrorShape(await app.inject({ url: "/readyz" }), 503);
    assertErrorShape(await post("/v1/completion/regex", { prompt: "x", pattern: "a" }), 503, /loading/);
    engine.ready = true;
    const metrics = await app.inject({ url: "/metrics" });
    assert.equal(metrics.statusCode, 200);
    assert.match(metrics.body, /trellis_http_requests_total\{route="\/v1\/completion\/regex",method="POST",status="200"\} \d+/);
    assert.match(metrics.body, /trellis_http_request_duration_seconds_bucket/);
    assert.match(metrics.body, /trellis_tokens_generated_total\{route="\/v1\/completion\/regex"\} \d+/);
    assert.match(metrics.body, /trellis_queue_depth 0/);
    const openapi = (await app.inject({ url: "/openapi.json" })).json() as {
      paths: Record<
        string,
        Record<
          string,
          { requestBody?: { content: Record<string, { schema: { properties: Record<string, { maximum?: number; default?: unknown }> } }> } }
        >
      >;
    };
    for (const path of [
      "/v1/completion/regex",
      "/v1/completion/cfg",
      "/v1/completion/grammar",
      "/v1/categorize",
      "/healthz",
      "/readyz",
      "/metrics",
    ]) {
      assert.ok(openapi.paths[path], path);
    }
    const maxNew = openapi.paths["/v1/completion/regex"]!.post!.requestBody!.content["application/json"]!.schema.properties.max_new_tokens!;
    assert.equal(maxNew.maximum, 32);
    assert.equal(maxNew.default, 5);
    // The interactive reference (Swagger UI) over the same document, its assets served here.
    const docs = await app.inject({ url: "/docs" });
    assert.equal(docs.statusCode, 200);
    assert.match(String(docs.headers["content-type"]), /text\/html/);
    assert.doesNotMatch(docs.body, /(src|href)="https?:\/\//);
    assert.match(String(docs.headers["content-security-policy"]), /default-src 'self'/);
    assert.doesNotMatch(String(docs.headers["content-security-policy"]), /https?:|swagger\.io/);
    const described = (await app.inject({ url: "/docs/json" })).json() as { paths: Record<string, unknown> };
    assert.deepEqual(Object.keys(described.paths).sort(), Object.keys(openapi.paths).sort());
  });
});

describe("limits, deadlines, cancellation and shutdown", () => {
  test("rate limit: headers, then 429 with Retry-After", async () => {
    const { app, store } = await setup({ rateLimit: 3 });
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof app.inject>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await app.inject({ method: "POST", url: "/v1/categorize", headers: auth(), payload: { prompt: "x", categories: ["a"] } });
      statuses.push(last.statusCode);
      if (i === 0) {
        assert.equal(last.headers["x-ratelimit-limit"], "3");
        assert.equal(last.headers["x-ratelimit-remaining"], "2");
        assert.ok(Number(last.headers["x-ratelimit-reset"]) > 0);
      }
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assertErrorShape(last!, 429, /rate limit of 3 requests per minute/);
    assert.ok(Number(last!.headers["retry-after"]) >= 1);
    assert.equal(last!.headers["x-ratelimit-remaining"], "0");
    // Another key has its own bucket.
    const other = store.createKey("other");
    assert.equal(
      (await app.inject({ method: "POST", url: "/v1/categorize", headers: auth(other.key), payload: { prompt: "x", categories: ["a"] } }))
        .statusCode,
      200,
    );
    await app.close();
    store.close();
  });

  test("rate limit 0 = unlimited (no headers)", async () => {
    const { app, store } = await setup({ rateLimit: 0 });
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: "POST", url: "/v1/categorize", headers: auth(), payload: { prompt: "x", categories: ["a"] } });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers["x-ratelimit-limit"], undefined);
    }
    await app.close();
    store.close();
  });

  test("a full queue answers 503 with Retry-After; queued requests run when slots free", async () => {
    const { app, engine, store } = await setup({ concurrency: 1, queueSize: 1, rateLimit: 0 });
    const slow = () =>
      app.inject({ method: "POST", url: "/v1/completion/regex", headers: auth(), payload: { prompt: "!slow", pattern: "a" } });
    const first = slow();
    const second = slow();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(app.trellis.gate.running, 1);
    assert.equal(app.trellis.gate.waiting, 1);
    const metrics = await app.inject({ url: "/metrics" });
    assert.match(metrics.body, /trellis_queue_depth 1/);
    const third = await slow();
    assertErrorShape(third, 503, /overloaded/);
    assert.equal(third.headers["retry-after"], "1");
    engine.release();
    assert.equal((await first).statusCode, 200);
    await new Promise((r) => setTimeout(r, 5));
    engine.release();
    assert.equal((await second).statusCode, 200);
    await app.close();
    store.close();
  });

  test("the request deadline cancels the generation and answers 503", async () => {
    const { app, engine, store } = await setup({ requestTimeoutMs: 50 });
    const res = await app.inject({
      method: "POST",
      url: "/v1/completion/regex",
      headers: auth(),
      payload: { prompt: "!slow", pattern: "a" },
    });
    assertErrorShape(res, 503, /deadline of 50 ms exceeded/);
    assert.equal(engine.signals.at(-1)!.aborted, true);
    await app.close();
    store.close();
  });

  test("a client that disconnects aborts its generation", async () => {
    const { app, engine, store } = await setup();
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as { port: number }).port;
    const body = JSON.stringify({ prompt: "!slow", pattern: "a" });
    const clientRequest = httpRequest({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/v1/completion/regex",
      headers: { ...auth(), "content-length": String(Buffer.byteLength(body)) },
    });
    clientRequest.on("error", () => {});
    clientRequest.end(body);
    for (let i = 0; i < 100 && engine.signals.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(engine.signals.length, 1);
    assert.equal(engine.signals[0]!.aborted, false);
    clientRequest.destroy();
    for (let i = 0; i < 100 && !engine.signals[0]!.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(engine.signals[0]!.aborted, true);
    assert.equal(app.trellis.gate.running, 0);
    await app.close();
    store.close();
  });

  test("malformed HTTP on a real socket gets the JSON error shape", async () => {
    const { app, store } = await setup();
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as { port: number }).port;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.write("GARBAGE /\x01 HTTP/9\r\n\r\n"));
      let data = "";
      socket.on("data", (chunk) => (data += chunk.toString()));
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });
    assert.match(raw, /^HTTP\/1\.1 400 /);
    assert.deepEqual(JSON.parse(raw.split("\r\n\r\n")[1]!), { error: "malformed HTTP request", code: 400 });
    await app.close();
    store.close();
  });

  test("/docs: a traversal, a backslash or a NUL in a static path is a clean 404, logged as no error", async () => {
    const logged: string[] = [];
    const engine = createFakeEngine();
    const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    const logger = { level: "error", stream: { write: (line: string) => logged.push(line) } };
    const app = await createServer({ engine, config: testConfig(), store, logger });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as { port: number }).port;
    // A real socket: inject() would resolve the dot segments before the server saw them.
    const get = (path: string) =>
      new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
        let data = "";
        socket.on("data", (chunk) => (data += chunk.toString()));
        socket.on("end", () => {
          const [head = "", body = ""] = data.split("\r\n\r\n", 2);
          resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]), type: /content-type: ([^\r]*)/i.exec(head)?.[1] ?? "", body });
        });
        socket.on("error", reject);
      });
    try {
      for (const path of [
        "/docs/static/../../../package.json",
        "/docs/static/%2e%2e/%2e%2e/%2e%2e/package.json",
        "/docs/static/..%5c..%5c..%5cpackage.json",
        "/docs/static/%2e%2e%5cpackage.json",
        "/docs/static/swagger-ui.css%00",
        "/docs/static/%00",
        "/docs/static/../index.html",
      ]) {
        const res = await get(path);
        assert.equal(res.status, 404, `${path}: ${res.body}`);
        assert.match(res.type, /^application\/json/, path);
        assert.deepEqual(JSON.parse(res.body), { error: `no such endpoint: GET ${path}`, code: 404 }, path);
      }
      assert.deepEqual(logged, []);
      // The page and its assets are still served.
      for (const path of ["/docs", "/docs/", "/docs/static/swagger-ui.css", "/docs/static/swagger-ui-bundle.js", "/docs/json"]) {
        assert.equal((await get(path)).status, 200, path);
      }
    } finally {
      await app.close();
      store.close();
    }
  });

  test("shutdown refuses new requests with 503 and lets in-flight ones finish", async () => {
    const { app, engine, store } = await setup();
    const inFlight = app.inject({
      method: "POST",
      url: "/v1/completion/regex",
      headers: auth(),
      payload: { prompt: "!slow", pattern: "a" },
    });
    await new Promise((r) => setTimeout(r, 20));
    const closing = app.trellis.shutdown();
    assert.equal(app.trellis.closing, true);
    const refused = await app.inject({
      method: "POST",
      url: "/v1/categorize",
      headers: auth(),
      payload: { prompt: "x", categories: ["a"] },
    });
    assertErrorShape(refused, 503, /shutting down/);
    assert.equal(refused.headers["retry-after"], "5");
    setTimeout(() => engine.release(), 50);
    const res = await inFlight;
    assert.equal(res.statusCode, 200, res.body);
    await closing;
    store.close();
  });

  test("requests during shutdown get 503", async () => {
    const { app, store } = await setup();
    app.trellis.closing = true;
    const res = await app.inject({ method: "POST", url: "/v1/categorize", headers: auth(), payload: { prompt: "x", categories: ["a"] } });
    assertErrorShape(res, 503, /shutting down/);
    assertErrorShape(await app.inject({ url: "/readyz" }), 503);
    await app.close();
    store.close();
  });
});
