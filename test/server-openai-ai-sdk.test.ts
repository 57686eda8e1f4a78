/**
 * The Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`), unchanged, against the OpenAI API on
 * the real engine (stories260K): generateObject with a zod schema gets a valid object, streamText
 * streams the same text generateText returns.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateObject, generateText, streamText } from "ai";
import { z } from "zod";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { STORIES_260K } from "./support/paths.js";
import { TEST_KEY, testConfig } from "./support/fake-engine.js";

describe("Vercel AI SDK through @ai-sdk/openai-compatible (stories260K)", () => {
  let app: FastifyInstance;
  let engine: Engine;
  let store: KeyStore;
  let provider: ReturnType<typeof createOpenAICompatible>;

  before(async () => {
    engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 4 });
    store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    app = await createServer({ engine, config: testConfig({ maxNewTokensLimit: 300 }), store });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const port = (app.server.address() as { port: number }).port;
    provider = createOpenAICompatible({
      name: "trellis",
      baseURL: `http://127.0.0.1:${port}/v1`,
      apiKey: TEST_KEY,
      supportsStructuredOutputs: true,
      includeUsage: true,
    });
  });

  after(async () => {
    await app.close();
    await engine.close();
    store.close();
  });

  test("generateObject with a zod schema: a valid object", async () => {
    const Recipe = z.object({
      title: z.string().max(20),
      servings: z.number().int().min(1).max(12),
      vegetarian: z.boolean(),
      steps: z.array(z.string().max(15)).min(1).max(3),
    });
    for (const seed of [1, 2]) {
      const { object, finishReason } = await generateObject({
        model: provider("stories260K"),
        schema: Recipe,
        prompt: "A recipe.",
        maxOutputTokens: 200,
        seed,
      });
      assert.deepEqual(Recipe.parse(object), object);
      assert.equal(finishReason, "stop");
    }
  });

  test("streamText streams what generateText returns", async () => {
    const options = { model: provider("stories260K"), prompt: "Once upon a time", maxOutputTokens: 24, seed: 3 };
    const whole = await generateText(options);
    const result = streamText(options);
    let text = "";
    let parts = 0;
    for await (const delta of result.textStream) {
      text += delta;
      parts++;
    }
    assert.ok(parts > 1);
    assert.equal(text, whole.text);
    assert.ok(whole.text.length > 0);
    assert.equal((await result.usage).outputTokens, whole.usage.outputTokens);
  });
});
