/**
 * POST /v1/completion/regex with the REAL engine (createEngine on stories260K) through fastify's
 * inject: defaults, validation of every field, 422 budgets, pattern errors, the `patterns` alias.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { NO_PREFIX_CACHE, STORIES_260K } from "./support/paths.js";
import { auth, testConfig } from "./support/fake-engine.js";
import { FullmatchOracle } from "./support/generate-harness.js";

const MAX_NEW_TOKENS_LIMIT = 32;

interface Completion {
  completion: string;
  tokens_generated: number;
  stop_reason: string;
}

describe("POST /v1/completion/regex with the real engine (stories260K)", () => {
  let app: FastifyInstance;
  let engine: Engine;
  let store: KeyStore;
  let oracle: FullmatchOracle;

  before(async () => {
    // One llama.cpp thread: two threads on a loaded 2-core machine wait on each other per decode.
    engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 8, prefixCache: NO_PREFIX_CACHE });
    store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    app = await createServer({ engine, config: testConfig({ maxNewTokensLimit: MAX_NEW_TOKENS_LIMIT }), store });
    await app.ready();
    oracle = new FullmatchOracle();
  });
  after(async () => {
    await app.close();
    await engine.close();
    store.close();
    oracle.close();
  });

  const post = (payload: unknown) =>
    app.inject({ method: "POST", url: "/v1/completion/regex", headers: auth(), payload: JSON.stringify(payload) });

  async function ok(payload: Record<string, unknown>): Promise<Completion> {
    const res = await post(payload);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as Completion;
    assert.deepEqual(Object.keys(body).sort(), ["completion", "stop_reason", "tokens_generated"]);
    const pattern = (payload.pattern ?? payload.patterns) as string | string[];
    const [matches] = await oracle.fullmatch([[typeof pattern === "string" ? [pattern] : pattern, body.completion]]);
    assert.ok(matches, `${JSON.stringify(body.completion)} does not fully match ${JSON.stringify(pattern)}`);
    return body;
  }

  async function error(payload: unknown, status: number, message: RegExp): Promise<string> {
    const res = await post(payload);
    assert.equal(res.statusCode, status, `${JSON.stringify(payload)} → ${res.body}`);
    const body = res.json() as { error: string; code: number };
    assert.equal(body.code, status);
    assert.match(body.error, message, JSON.stringify(payload));
    return body.error;
  }

  test("a completion fully matches and respects the budget", async () => {
    const body = await ok({ prompt: "Once upon a time", pattern: "[a-z ]{1,30}", max_new_tokens: 7, stop_after_match: false, seed: 1 });
    assert.ok(body.tokens_generated >= 1 && body.tokens_generated <= 7);
    assert.ok(["pattern_match", "token_limit"].includes(body.stop_reason));
  });

  test("defaults: max_new_tokens 5, stop_after_match true, the seed API's sampling knobs", async () => {
    // Six digits take six tokens with this vocabulary, one more than the default budget.
    await error({ prompt: "x", pattern: "[0-9]{6}" }, 422, /needs at least 6 tokens but max_new_tokens is 5/);
    const five = await ok({ prompt: "x", pattern: "[0-9]{5}" });
    assert.equal(five.tokens_generated, 5);
    // stop_after_match defaults to true: the first word token is already a full match.
    const first = await ok({ prompt: "Once upon a time", pattern: "[a-z]+( [a-z]+)*", seed: 3 });
    assert.equal(first.tokens_generated, 1);
    assert.equal(first.stop_reason, "pattern_match");
    // Omitted knobs behave exactly like the documented defaults, given explicitly.
    const prompt = { prompt: "Once upon a time", pattern: ".{1,40}", seed: 77 };
    const implicit = await ok(prompt);
    const explicit = await ok({
      ...prompt,
      max_new_tokens: 5,
      stop_after_match: true,
      temperature: 1,
      top_k: 50,
      top_p: 1,
      repetition_penalty: 1,
    });
    assert.deepEqual(implicit, explicit);
    const nulls = await ok({
      ...prompt,
      max_new_tokens: null,
      stop_after_match: null,
      temperature: null,
      top_k: null,
      top_p: null,
      repetition_penalty: null,
    });
    assert.deepEqual(nulls, explicit);
  });

  test("the same seed gives the same output over HTTP", async () => {
    const payload = {
      prompt: "Once upon a time",
      pattern: "[a-z ,.]{5,80}",
      seed: 4242,
      max_new_tokens: 12,
      stop_after_match: false,
      temperature: 1.3,
    };
    assert.deepEqual(await ok(payload), await ok(payload));
  });

  test("the `patterns` alias (Thiggle clients) works like `pattern`, as array or string", async () => {
    const arr = await ok({ prompt: "Answer:", patterns: ["yes", "no"], max_new_tokens: 4, seed: 1 });
    assert.match(arr.completion, /^(yes|no)$/);
    const str = await ok({ prompt: "Answer:", patterns: "(yes|no)", max_new_tokens: 4, seed: 1 });
    assert.match(str.completion, /^(yes|no)$/);
    assert.deepEqual(await ok({ prompt: "Answer:", pattern: ["yes", "no"], max_new_tokens: 4, seed: 1 }), arr);
    await error({ prompt: "Answer:", pattern: "a", patterns: "b" }, 400, /pattern/);
    await error({ prompt: "Answer:" }, 400, /pattern is required/);
  });

  test("every field is validated: type and range", async () => {
    const good = { prompt: "Hi", pattern: "a" };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ pattern: "a" }, /prompt/],
      [{ prompt: 5, pattern: "a" }, /prompt/],
      [{ ...good, pattern: 5 }, /pattern/],
      [{ ...good, pattern: [] }, /pattern/],
      [{ ...good, pattern: ["a", 3] }, /pattern/],
      [{ ...good, patterns: [] }, /patterns/],
      [{ ...good, max_new_tokens: 0 }, /max_new_tokens/],
      [{ ...good, max_new_tokens: -3 }, /max_new_tokens/],
      [{ ...good, max_new_tokens: 2.5 }, /max_new_tokens/],
      [{ ...good, max_new_tokens: "5" }, /max_new_tokens/],
      [{ ...good, max_new_tokens: MAX_NEW_TOKENS_LIMIT + 1 }, /max_new_tokens/],
      [{ ...good, stop_after_match: "yes" }, /stop_after_match/],
      [{ ...good, stop_after_match: 1 }, /stop_after_match/],
      [{ ...good, top_k: -1 }, /top_k/],
      [{ ...good, top_k: 1.5 }, /top_k/],
      [{ ...good, top_p: 0 }, /top_p/],
      [{ ...good, top_p: 1.01 }, /top_p/],
      [{ ...good, top_p: "1" }, /top_p/],
      [{ ...good, temperature: -0.1 }, /temperature/],
      [{ ...good, temperature: "hot" }, /temperature/],
      [{ ...good, repetition_penalty: 0 }, /repetition_penalty/],
      [{ ...good, repetition_penalty: -1 }, /repetition_penalty/],
      [{ ...good, seed: -1 }, /seed/],
      [{ ...good, seed: 1.5 }, /seed/],
      [{ ...good, seed: "7" }, /seed/],
      [{ ...good, tempurature: 1 }, /tempurature/],
    ];
    for (const [payload, message] of cases) await error(payload, 400, message);
    // The edges of each range are accepted.
    await ok({ ...good, max_new_tokens: 1, top_k: 0, top_p: 1, temperature: 0, repetition_penalty: 0.01, seed: 0 });
    await ok({ ...good, max_new_tokens: MAX_NEW_TOKENS_LIMIT, top_p: 0.001 });
  });

  test("an unsatisfiable budget is 422 and says how many tokens the pattern needs", async () => {
    const message = await error({ prompt: "x", pattern: "[0-9]{20}", max_new_tokens: 9 }, 422, /needs at least 20 tokens/);
    assert.match(message, /max_new_tokens is 9/);
    await error({ prompt: "x", patterns: ["[0-9]{12}", "[a-z]{30}"], max_new_tokens: 3 }, 422, /needs at least \d+ tokens/);
  });

  test("pattern syntax errors are 400 with the position", async () => {
    const message = await error({ prompt: "x", pattern: "a(b" }, 400, /position 1/);
    assert.match(message, /pattern/);
    await error({ prompt: "x", patterns: ["ok", "[z-a]"] }, 400, /pattern\[1\].*position|position.*pattern\[1\]/s);
    await error({ prompt: "x", pattern: "(?<=a)b" }, 400, /position 0/);
  });

  test("a pattern whose automaton explodes is refused, not hung on", async () => {
    const res = await post({ prompt: "x", pattern: "(a|b)*a(a|b){25}" });
    assert.ok(res.statusCode === 422 || res.statusCode === 400, res.body);
    assert.match((res.json() as { error: string }).error, /pattern/);
  });

  test("concurrent requests are all full matches", async () => {
    const payloads = Array.from({ length: 16 }, (_, i) => ({
      prompt: i % 2 ? "Once upon a time " : "Lily said",
      pattern: ["\\d{2}:\\d{2}", "[a-z]{2,6}( [a-z]{2,6})?", "(happy|sad)", "[A-Z][a-z]+"][i % 4]!,
      max_new_tokens: 12,
      stop_after_match: i % 3 === 0,
      seed: i,
    }));
    const bodies = await Promise.all(payloads.map((p) => ok(p)));
    for (const b of bodies) assert.ok(b.tokens_generated <= 12);
  });
});
