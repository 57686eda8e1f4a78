/**
 * POST /v1/embeddings through the official `openai` SDK and LangChain's OpenAIEmbeddings, against
 * the real engine on stories260K: every input shape, float and base64 (the SDK's default, which it
 * decodes), unit norms, the same vector for the same text alone or in a batch, usage charged to
 * the key's quota, refusals (400 naming the field and index, `dimensions`), and embeddings taking
 * turns with a running generation. Also LangChain's ChatOpenAI against the chat completions.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { z } from "zod";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import type { Engine } from "../src/generate/index.js";
import { loadModel, type LlamaModel } from "../src/model/index.js";
import { STORIES_260K } from "./support/paths.js";
import { callJson, realEngineApp } from "./support/service.js";
import { createFakeEngine, FAKE_EMBEDDING_DIMENSIONS, fakeEmbedding, TEST_KEY, testConfig } from "./support/fake-engine.js";

const MODEL = "stories260K";
const DIMENSIONS = 64;
/** Packing inputs into one decode changes the matrix shapes: float rounding, nothing more. */
const BATCH_TOLERANCE = 1e-5;

const norm = (v: ArrayLike<number>): number => Math.sqrt(Array.from(v).reduce((sum, x) => sum + x * x, 0));

function assertClose(a: ArrayLike<number>, b: ArrayLike<number>, tolerance: number, what: string): void {
  assert.equal(a.length, b.length, `${what}: lengths`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  assert.ok(worst <= tolerance, `${what}: differ by ${worst}`);
}

async function assertBadRequest(call: Promise<unknown>, param: string, message?: RegExp): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.status, 400);
    assert.equal(error.param, param, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
}

describe("POST /v1/embeddings on the real engine (stories260K)", () => {
  let real: Awaited<ReturnType<typeof realEngineApp>>;
  let engine: Engine;
  let store: KeyStore;
  let base: string;
  let client: OpenAI;
  let vocab: LlamaModel;

  before(async () => {
    real = await realEngineApp(STORIES_260K, { embeddingMaxInputs: 8, embeddingMaxTokens: 200, maxNewTokensLimit: 100 });
    ({ engine, store } = real);
    await real.app.listen({ host: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${(real.app.server.address() as { port: number }).port}`;
    client = new OpenAI({ apiKey: TEST_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
    vocab = loadModel(STORIES_260K, { vocabOnly: true });
  });

  after(async () => {
    vocab.dispose();
    await real.close();
  });

  const floats = async (input: string | string[] | number[] | number[][]): Promise<number[][]> => {
    const answer = await client.embeddings.create({ model: MODEL, input, encoding_format: "float" });
    return answer.data.map((d) => d.embedding);
  };

  test("a string: one unit vector of n_embd floats, in OpenAI's shape, usage counting its tokens", async () => {
    const text = "Once upon a time there was a cat.";
    const answer = await client.embeddings.create({ model: MODEL, input: text, encoding_format: "float", user: "u-1" });
    assert.equal(answer.object, "list");
    assert.equal(answer.model, MODEL);
    assert.equal(answer.data.length, 1);
    const [item] = answer.data;
    assert.equal(item!.object, "embedding");
    assert.equal(item!.index, 0);
    assert.equal(item!.embedding.length, DIMENSIONS);
    assert.ok(Math.abs(norm(item!.embedding) - 1) < 1e-6);
    const tokens = engine.countTokens(text);
    assert.deepEqual(answer.usage, { prompt_tokens: tokens, total_tokens: tokens });
    assert.equal(tokens, vocab.tokenize(text, { addSpecial: true }).length);
  });

  test("base64 (the SDK's default, decoded by it) carries exactly the float answer's values, little-endian float32", async () => {
    const text = "The little dog ran home.";
    const [float] = await floats(text);
    const decoded = await client.embeddings.create({ model: MODEL, input: text });
    assert.deepEqual(decoded.data[0]!.embedding, float);
    const raw = await callJson(base, TEST_KEY, "/v1/embeddings", { model: MODEL, input: text, encoding_format: "base64" });
    assert.equal(raw.status, 200, raw.text);
    const encoded = (raw.body.data as { embedding: string }[])[0]!.embedding;
    assert.equal(typeof encoded, "string");
    const bytes = Buffer.from(encoded, "base64");
    assert.equal(bytes.length, DIMENSIONS * 4);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    assert.deepEqual(
      Array.from({ length: DIMENSIONS }, (_, i) => view.getFloat32(i * 4, true)),
      float,
    );
  });

  test("equal inputs give equal vectors; a text alone or in a batch gives the same vector", async () => {
    const texts = ["Lily saw a big tree.", "Tom had a red ball and he liked to play with it.", "Lily saw a big tree.", "Sun."];
    // One after the other: requests in flight together share decodes (round-robin packing).
    const alone: number[][] = [];
    for (const t of texts) alone.push((await floats(t))[0]!);
    assert.deepEqual(alone[0], alone[2]); // the same decode alone, the same bits
    const batch = await floats(texts);
    assert.equal(batch.length, texts.length);
    batch.forEach((v, i) => {
      assert.ok(Math.abs(norm(v) - 1) < 1e-6);
      assertClose(v, alone[i]!, BATCH_TOLERANCE, `input ${i}`);
    });
    assertClose(batch[0]!, batch[2]!, BATCH_TOLERANCE, "repeated input");
    // Different texts point elsewhere.
    const cosine = batch[0]!.reduce((sum, x, k) => sum + x * batch[1]![k]!, 0);
    assert.ok(cosine < 0.9999, `cosine ${cosine}`);
  });

  test("token ids and token-id arrays embed like the text they spell; usage counts them", async () => {
    const text = "Once upon a time";
    const ids = Array.from(vocab.tokenize(text, { addSpecial: true }));
    const [fromText] = await floats(text);
    const one = await client.embeddings.create({ model: MODEL, input: ids, encoding_format: "float" });
    assert.deepEqual(one.data[0]!.embedding, fromText);
    assert.equal(one.usage.prompt_tokens, ids.length);
    const other = Array.from(vocab.tokenize("A dog", { addSpecial: true }));
    const many = await client.embeddings.create({ model: MODEL, input: [ids, other] });
    assert.equal(many.data.length, 2);
    assertClose(many.data[0]!.embedding, fromText!, BATCH_TOLERANCE, "token array in a batch");
    assert.equal(many.usage.prompt_tokens, ids.length + other.length);
  });

  test("dimensions is refused by name", async () => {
    await assertBadRequest(
      client.embeddings.create({ model: MODEL, input: "hi", dimensions: 32 }),
      "dimensions",
      /dimensions is not supported/,
    );
    await assertBadRequest(client.embeddings.create({ model: MODEL, input: "hi", dimensions: DIMENSIONS }), "dimensions");
  });

  test("bad inputs: 400 naming the field and index, before any work", async () => {
    const create = (input: unknown, extra: Record<string, unknown> = {}) =>
      client.embeddings.create({ model: MODEL, input: input as string, ...extra });
    await assertBadRequest(create(""), "input", /input must not be empty/);
    await assertBadRequest(create([]), "input", /must not be empty/);
    await assertBadRequest(create(["a cat", ""]), "input[1]", /input\[1\] must not be empty/);
    await assertBadRequest(create([[1, 2], []]), "input[1]", /must not be empty/);
    await assertBadRequest(
      create([
        [1, 2],
        [3, 1_000_000],
      ]),
      "input[1][1]",
      /token id in 0 … 511/,
    );
    await assertBadRequest(create([1, -2]), "input[1]", /token id/);
    await assertBadRequest(create([1.5]), "input[0]", /token id/);
    await assertBadRequest(create(["a", 3]), "input[1]", /must be a string or an array of token ids/);
    await assertBadRequest(create(["a", { text: "b" }]), "input[1]");
    await assertBadRequest(create(5), "input");
    await assertBadRequest(create(Array.from({ length: 9 }, () => "a")), "input", /at most 8/);
    // More tokens than one input may have (512), and more than a request may have (200 here).
    await assertBadRequest(create(Array.from({ length: 600 }, () => 1)), "input", /at most 512/);
    await assertBadRequest(create(["cat", "the dog ".repeat(300)]), "input[1]", /tokens; an embedding input may have at most 512/);
    await assertBadRequest(
      create(["the dog ".repeat(40), "the cat ".repeat(40)]),
      "input",
      /tokens in all; a request may have at most 200/,
    );
    await assertBadRequest(create("hi", { encoding_format: "binary" }), "encoding_format");
    await assertBadRequest(create("hi", { extra_field: 1 }), "extra_field");
    await assert.rejects(client.embeddings.create({ model: "gpt-4", input: "hi" }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal(error.param, "model");
      return true;
    });
  });

  test("the tokens are charged to the key's quota; a request the quota cannot cover is a 402", async () => {
    const { id, key } = store.createKey("embedder", { quota: 40 });
    const limited = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
    const { data, response } = await limited.embeddings
      .create({ model: MODEL, input: ["Once upon a time", "a dog"], encoding_format: "float" })
      .withResponse();
    const used = data.usage.prompt_tokens;
    assert.ok(used > 0);
    assert.equal(response.headers.get("x-quota-remaining"), String(40 - used));
    assert.deepEqual(store.quotaStatus(id), { quota: 40, used, reserved: 0, remaining: 40 - used, available: 40 - used });
    await assert.rejects(limited.embeddings.create({ model: MODEL, input: "the dog ".repeat(20) }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 402);
      return true;
    });
    assert.equal(store.quotaStatus(id)!.used, used);
  });

  test("embeddings take turns with a running generation: both finish, the vectors unchanged", async () => {
    const text = "Tom and Lily went to the park.";
    const [solo] = await floats(text);
    const generating = client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Tell me a story." }],
      max_tokens: 32,
      temperature: 0,
    });
    const during = await Promise.all([floats([text, "Sun."]), floats(text)]);
    const chat = await generating;
    assert.equal(chat.choices.length, 1);
    assert.ok(chat.usage!.completion_tokens > 0);
    assertClose(during[0][0]!, solo!, BATCH_TOLERANCE, "batched during a generation");
    assertClose(during[1][0]!, solo!, BATCH_TOLERANCE, "alone during a generation");
  });

  describe("LangChain (@langchain/openai) against the same server", () => {
    test("OpenAIEmbeddings: embedDocuments and embedQuery", async () => {
      const embeddings = new OpenAIEmbeddings({ model: MODEL, apiKey: TEST_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0 });
      const docs = await embeddings.embedDocuments(["Once upon a time", "A dog ran."]);
      assert.equal(docs.length, 2);
      for (const v of docs) {
        assert.equal(v.length, DIMENSIONS);
        assert.ok(Math.abs(norm(v) - 1) < 1e-6);
      }
      const query = await embeddings.embedQuery("Once upon a time");
      assertClose(query, docs[0]!, BATCH_TOLERANCE, "embedQuery vs embedDocuments");
    });

    test("ChatOpenAI: invoke, and withStructuredOutput(zod) by json_schema (its default) and by a forced tool call", async () => {
      const chat = (maxTokens: number) =>
        new ChatOpenAI({
          model: MODEL,
          apiKey: TEST_KEY,
          configuration: { baseURL: `${base}/v1` },
          maxTokens,
          temperature: 0,
          maxRetries: 0,
        });
      const message = await chat(24).invoke("Once upon a time");
      assert.equal(typeof message.content, "string");
      assert.ok((message.content as string).length > 0);
      const Pet = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(20) });
      const structured = chat(60).withStructuredOutput(Pet);
      const pet = await structured.invoke("Describe a pet as JSON.");
      assert.deepEqual(Pet.parse(pet), pet);
      // LangChain's other way for models it does not know to take json_schema: a forced tool call.
      const called = await chat(60).withStructuredOutput(Pet, { method: "functionCalling" }).invoke("Describe a pet.");
      assert.deepEqual(Pet.parse(called), called);
    });
  });
});

describe("POST /v1/embeddings on the fake engine", () => {
  test("deterministic fake vectors in OpenAI's shape; usage counts the fake tokens", async () => {
    const engine = createFakeEngine();
    const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    const app = await createServer({ engine, config: testConfig(), store });
    try {
      const res = await app.inject({
        method: "POST",
        url: "/v1/embeddings",
        headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
        payload: { model: "trellis", input: ["a b c", [5, 6]], encoding_format: "float" },
      });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { data: { embedding: number[]; index: number }[]; usage: unknown };
      assert.deepEqual(
        body.data.map((d) => d.index),
        [0, 1],
      );
      assert.deepEqual(body.data[0]!.embedding, Array.from(fakeEmbedding("a b c")));
      assert.deepEqual(body.data[1]!.embedding, Array.from(fakeEmbedding(Int32Array.of(5, 6))));
      assert.equal(body.data[0]!.embedding.length, FAKE_EMBEDDING_DIMENSIONS);
      assert.deepEqual(body.usage, { prompt_tokens: 5, total_tokens: 5 });
      const unauthorized = await app.inject({ method: "POST", url: "/v1/embeddings", payload: { model: "trellis", input: "x" } });
      assert.equal(unauthorized.statusCode, 401);
      assert.equal((unauthorized.json() as { error: { type: string } }).error.type, "authentication_error");
      const bug = await app.inject({
        method: "POST",
        url: "/v1/embeddings",
        headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
        payload: { model: "trellis", input: "!invalid input" },
      });
      assert.equal(bug.statusCode, 400);
      assert.equal((bug.json() as { error: { param: string } }).error.param, "input");
    } finally {
      await app.close();
      store.close();
    }
  });
});
