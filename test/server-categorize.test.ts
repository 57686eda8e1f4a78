/**
 * POST /v1/categorize end to end with the real engine (stories260K): every field validated, and
 * the seed API's examples (tools for a task, four-legged animals with multiple classes,
 * sentiment) come back well-formed.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { auth, testConfig } from "./support/fake-engine.js";
import { STORIES_260K } from "./support/paths.js";
import { assertSameAnswer, SAME_REQUEST_TOLERANCE } from "./support/categorize-answers.js";

describe("POST /v1/categorize with stories260K", () => {
  let app: FastifyInstance;
  let engine: Engine;
  let store: KeyStore;
  before(async () => {
    engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 2, contextSize: 2048 });
    store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    app = await createServer({ engine, config: testConfig({ maxCategories: 64, maxCategoryChars: 40 }), store });
    await app.ready();
  });
  after(async () => {
    await app.close();
    await engine.close();
    store.close();
  });

  const post = (payload: unknown) =>
    app.inject({
      method: "POST",
      url: "/v1/categorize",
      headers: auth(),
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });

  function wellFormed(
    body: { choices: string[]; scores?: Record<string, number> },
    categories: string[],
    opts: { multi?: boolean; allowNull?: boolean; scores?: boolean },
  ) {
    let last = -1;
    for (const c of body.choices) {
      const at = categories.indexOf(c);
      assert.ok(at > last, `choice ${c} unknown, repeated or out of order in ${JSON.stringify(body.choices)}`);
      last = at;
    }
    if (!opts.allowNull) assert.ok(body.choices.length >= 1);
    if (!opts.multi) assert.ok(body.choices.length <= 1);
    if (opts.scores) {
      assert.deepEqual(Object.keys(body.scores!).sort(), [...categories].sort());
      for (const v of Object.values(body.scores!)) assert.ok(v >= 0 && v <= 1);
    } else {
      assert.equal(body.scores, undefined);
    }
  }

  test("seed examples: tools for a task, four-legged animals (multiple classes), sentiment", async () => {
    const tools = ["google-maps-api", "google-search-api", "stripe-api", "twilio-api"];
    let res = await post({ prompt: "Find a coffee shop near me", categories: tools });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), tools, {});

    const animals = ["dog", "cat", "bird", "fish", "horse"];
    res = await post({ prompt: "Which animals have four legs?", categories: animals, allow_multiple_classes: true, include_scores: true });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), animals, { multi: true, scores: true });
    res = await post({
      prompt: "Which animals have four legs?",
      categories: animals,
      allow_multiple_classes: true,
      allow_null_category: true,
    });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), animals, { multi: true, allowNull: true });

    const sentiment = ["positive", "negative", "neutral"];
    res = await post({ prompt: "I love this toy! It is the best toy ever.", categories: sentiment, include_scores: true });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    wellFormed(body, sentiment, { scores: true });
    // What the tiny model knows decides this one.
    assert.deepEqual(body.choices, ["positive"]);
    const total = Object.values(body.scores as Record<string, number>).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(total - 1) < 1e-9);

    res = await post({
      prompt: "Nothing here fits.\nSecond line.",
      categories: sentiment,
      allow_null_category: true,
      include_scores: true,
    });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), sentiment, { allowNull: true, scores: true });
  });

  test("the same request gets the same answer", async () => {
    const payload = { prompt: "Lily went to the park to play with her", categories: ["dog", "quantum", "invoice"], include_scores: true };
    const a = await post(payload);
    const b = await post(payload);
    assert.equal(a.statusCode, 200, a.body);
    assert.equal(b.statusCode, 200, b.body);
    // The second runs over the cached prompt, in other KV cells: the scores may move by float
    // noise (support/categorize-answers.ts), the choice does not.
    assert.deepEqual(a.json().choices, ["dog"]);
    assert.deepEqual(b.json().choices, ["dog"]);
    const req = {
      prompt: payload.prompt,
      categories: payload.categories,
      allowMultipleClasses: false,
      allowNullCategory: false,
      includeScores: true,
    };
    await assertSameAnswer(req, a.json(), b.json(), SAME_REQUEST_TOLERANCE, "the same request", async () => (await post(payload)).json());
  });

  test("unicode and odd category strings come back spelled exactly", async () => {
    const categories = ["東京", "café", "🙂", "a b", "x-y_z/1", "  spaced  "];
    const res = await post({ prompt: "Pick one", categories, allow_multiple_classes: true, include_scores: true });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), categories, { multi: true, scores: true });
  });

  test("every field is validated", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ categories: ["a"] }, /prompt/],
      [{ prompt: 3, categories: ["a"] }, /prompt/],
      [{ prompt: "x" }, /categories/],
      [{ prompt: "x", categories: "a" }, /categories/],
      [{ prompt: "x", categories: [] }, /categories/],
      [{ prompt: "x", categories: ["a", 2] }, /categories\[1\]/],
      [{ prompt: "x", categories: ["a", ""] }, /categories\[1\]/],
      [{ prompt: "x", categories: ["a", "b", "a"] }, /duplicate/],
      [{ prompt: "x", categories: Array.from({ length: 65 }, (_, i) => `c${i}`) }, /categories/],
      [{ prompt: "x", categories: ["a".repeat(41)] }, /categories\[0\]/],
      [{ prompt: "x", categories: ["a"], allow_multiple_classes: "yes" }, /allow_multiple_classes/],
      [{ prompt: "x", categories: ["a"], allow_null_category: 1 }, /allow_null_category/],
      [{ prompt: "x", categories: ["a"], include_scores: "true" }, /include_scores/],
      [{ prompt: "x", categories: ["a"], temperature: 1 }, /unknown field/],
      ["[1]", /body/],
    ];
    for (const [payload, pattern] of cases) {
      const res = await post(payload);
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload).slice(0, 80)} → ${res.statusCode} ${res.body}`);
      assert.match(res.json().error, pattern);
    }
    // Null booleans mean the defaults (the Go client sends them).
    const res = await post({
      prompt: "x",
      categories: ["a", "b"],
      allow_multiple_classes: null,
      allow_null_category: null,
      include_scores: null,
    });
    assert.equal(res.statusCode, 200, res.body);
    wellFormed(res.json(), ["a", "b"], {});
  });

  test("a prompt beyond the model context is a 400", async () => {
    const res = await post({ prompt: "word ".repeat(2500), categories: ["a", "b"] });
    assert.equal(res.statusCode, 400, res.body);
    assert.match(res.json().error, /context|tokens/);
  });
});
