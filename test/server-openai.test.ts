/**
 * The OpenAI-compatible API driven by the official `openai` SDK, unchanged, against the real
 * engine on stories260K (no chat template: the plain transcript): chat with and without stream,
 * n, stop, logprobs, stream_options, structured outputs through `chat.completions.parse` and zod,
 * tools (required and named, arguments checked against their schema), the legacy completions,
 * errors as the SDK's APIError with our message, and a stream aborted mid-way.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import OpenAI, { APIError, BadRequestError, NotFoundError } from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { NO_PREFIX_CACHE, STORIES_260K } from "./support/paths.js";
import { createFakeEngine, failingChatEngine, TEST_KEY, testConfig } from "./support/fake-engine.js";

const MODEL = "stories260K";

describe("OpenAI API through the openai SDK (stories260K)", () => {
  let app: FastifyInstance;
  let engine: Engine;
  let store: KeyStore;
  let client: OpenAI;
  let baseURL: string;

  before(async () => {
    engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 8, prefixCache: NO_PREFIX_CACHE });
    store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    app = await createServer({ engine, config: testConfig({ maxNewTokensLimit: 300 }), store });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    assert.ok(address && typeof address === "object");
    baseURL = `http://127.0.0.1:${address.port}/v1`;
    client = new OpenAI({ apiKey: TEST_KEY, baseURL, maxRetries: 0 });
  });

  after(async () => {
    await app.close();
    await engine.close();
    store.close();
  });

  const chat = (extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Tell me a story about a cat." }],
      max_tokens: 24,
      seed: 7,
      ...extra,
    });

  test("models: list and retrieve; another id is a NotFoundError naming the served one", async () => {
    const list = await client.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      [MODEL],
    );
    assert.equal((await client.models.retrieve(MODEL)).id, MODEL);
    await assert.rejects(
      client.models.retrieve("gpt-4"),
      (e: unknown) => e instanceof NotFoundError && /gpt-4.*stories260K/.test(e.message),
    );
  });

  test("chat: OpenAI's shape, usage, a seed reproduces the text", async () => {
    const a = await chat();
    const b = await chat();
    assert.match(a.id, /^chatcmpl-/);
    assert.equal(a.object, "chat.completion");
    assert.equal(a.model, MODEL);
    assert.equal(a.choices.length, 1);
    const choice = a.choices[0]!;
    assert.equal(choice.message.role, "assistant");
    assert.equal(typeof choice.message.content, "string");
    assert.ok(["stop", "length"].includes(choice.finish_reason));
    assert.equal(choice.message.content, b.choices[0]!.message.content);
    assert.ok(a.usage && a.usage.prompt_tokens > 0 && a.usage.completion_tokens > 0);
    assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
    if (choice.finish_reason === "length") assert.equal(a.usage.completion_tokens, 24);
  });

  test("chat stream: the deltas add up to the same text as without stream; usage chunk last", async () => {
    const whole = await chat();
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Tell me a story about a cat." }],
      max_tokens: 24,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let role: string | undefined;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, "chat.completion.chunk");
      if (chunk.usage) {
        assert.equal(chunk.choices.length, 0);
        usage = chunk.usage;
        continue;
      }
      assert.equal(usage, undefined, "the usage chunk comes last");
      const choice = chunk.choices[0]!;
      role ??= choice.delta.role ?? undefined;
      text += choice.delta.content ?? "";
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(role, "assistant");
    assert.ok(chunks > 3);
    assert.equal(text, whole.choices[0]!.message.content);
    assert.equal(finish, whole.choices[0]!.finish_reason);
    assert.deepEqual(usage, whole.usage);
  });

  /** A raw SSE exchange: the body as bytes, split into its events. */
  async function rawStream(body: Record<string, unknown>): Promise<{ raw: string; events: string[] }> {
    const response = await fetch(`${baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Say it." }], stream: true, ...body }),
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    const raw = Buffer.from(await response.arrayBuffer()).toString("utf8");
    assert.ok(raw.endsWith("\n\n"));
    return { raw, events: raw.slice(0, -2).split("\n\n") };
  }

  test("SSE framing: data events only, [DONE] last; characters written byte by byte are never split", async () => {
    // stories260K has no token for these characters: the model writes them in byte tokens.
    const target = "日本語🙂é";
    const { events } = await rawStream({ structured_outputs: { choice: [target] }, max_tokens: 40 });
    assert.equal(events.at(-1), "data: [DONE]");
    let text = "";
    for (const event of events.slice(0, -1)) {
      assert.match(event, /^data: \{/);
      const chunk = JSON.parse(event.slice("data: ".length)) as { choices: { delta: { content?: string } }[] };
      const piece = chunk.choices[0]?.delta.content ?? "";
      assert.ok(!piece.includes("\uFFFD"), `a split character in ${JSON.stringify(piece)}`);
      text += piece;
    }
    assert.equal(text, target);
    assert.ok(events.length > 4, "one event per finished character at least");
  });

  test("stream with stop: what was streamed is exactly the text before the stop string", async () => {
    const free = (await chat({ max_tokens: 40 })).choices[0]!.message.content!;
    const at = Math.floor(free.length / 2);
    const stop = free.slice(at, at + 4);
    const whole = (await chat({ max_tokens: 40, stop })).choices[0]!.message.content!;
    const { events } = await rawStream({
      messages: [{ role: "user", content: "Tell me a story about a cat." }],
      max_tokens: 40,
      seed: 7,
      stop,
    });
    let text = "";
    for (const event of events.slice(0, -1)) {
      const chunk = JSON.parse(event.slice("data: ".length)) as { choices: { delta: { content?: string } }[] };
      text += chunk.choices[0]?.delta.content ?? "";
    }
    assert.equal(text, whole);
    assert.equal(text, free.slice(0, free.indexOf(stop)));
  });

  test("n: 3 choices, indexed, decoded side by side", async () => {
    const r = await chat({ n: 3 });
    assert.deepEqual(
      r.choices.map((c) => c.index),
      [0, 1, 2],
    );
    const texts = new Set(r.choices.map((c) => c.message.content));
    assert.ok(texts.size > 1, "choices use different seeds");
    // Choice i is what seed 7 + i gives alone: sharing the prompt's KV cells changes nothing.
    for (let i = 0; i < 3; i++) {
      const alone = await chat({ seed: 7 + i });
      assert.equal(r.choices[i]!.message.content, alone.choices[0]!.message.content, `choice ${i}`);
    }
    assert.equal(r.usage!.prompt_tokens, (await chat()).usage!.prompt_tokens, "the prompt is counted once");
  });

  test("stop: the text ends before the stop string, finish_reason stop", async () => {
    const free = (await chat({ max_tokens: 40 })).choices[0]!.message.content!;
    const at = Math.floor(free.length / 2);
    const stop = free.slice(at, at + 3);
    assert.equal(stop.length, 3);
    const cut = await chat({ max_tokens: 40, stop: [stop] });
    assert.equal(cut.choices[0]!.message.content, free.slice(0, free.indexOf(stop)));
    assert.equal(cut.choices[0]!.finish_reason, "stop");
  });

  test("logprobs: the chosen token and its alternatives, greedy picks the first", async () => {
    const r = await chat({ temperature: 0, logprobs: true, top_logprobs: 3, max_tokens: 8 });
    const content = r.choices[0]!.logprobs!.content!;
    assert.equal(content.length, r.usage!.completion_tokens);
    assert.equal(content.map((t) => t.token).join(""), r.choices[0]!.message.content);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.equal(t.top_logprobs[0]!.token, t.token);
      assert.equal(t.top_logprobs[0]!.logprob, t.logprob);
      for (let i = 1; i < 3; i++) assert.ok(t.top_logprobs[i - 1]!.logprob >= t.top_logprobs[i]!.logprob);
      assert.deepEqual(t.bytes, [...Buffer.from(t.token)]);
    }
  });

  test("structured output: chat.completions.parse with a zod schema", async () => {
    const Pet = z.object({ name: z.string().max(12), legs: z.number().int().min(0).max(8), kind: z.enum(["cat", "dog"]) });
    const r = await client.chat.completions.parse({
      model: MODEL,
      messages: [{ role: "user", content: "Describe a pet." }],
      response_format: zodResponseFormat(Pet, "pet"),
      max_tokens: 80,
      seed: 3,
    });
    const parsed = r.choices[0]!.message.parsed;
    assert.ok(parsed);
    assert.deepEqual(Pet.parse(parsed), parsed);
    assert.equal(r.choices[0]!.finish_reason, "stop");
  });

  test("json_object: any JSON object", async () => {
    const r = await chat({ response_format: { type: "json_object" }, max_tokens: 60 });
    const value: unknown = JSON.parse(r.choices[0]!.message.content!);
    assert.ok(value !== null && typeof value === "object" && !Array.isArray(value));
  });

  const weather: OpenAI.Chat.ChatCompletionTool = {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 10 }, unit: { enum: ["c", "f"] } },
        required: ["city", "unit"],
        additionalProperties: false,
      },
    },
  };
  const time: OpenAI.Chat.ChatCompletionTool = {
    type: "function",
    function: {
      name: "get_time",
      parameters: {
        type: "object",
        properties: { zone: { type: "integer", minimum: -12, maximum: 14 } },
        required: ["zone"],
        additionalProperties: false,
      },
    },
  };
  const WeatherArgs = z.object({ city: z.string().max(10), unit: z.enum(["c", "f"]) }).strict();
  const TimeArgs = z.object({ zone: z.number().int().min(-12).max(14) }).strict();

  test("tools: a named function's arguments are valid against its parameters", async () => {
    const r = await chat({ tools: [weather, time], tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 40 });
    const calls = r.choices[0]!.message.tool_calls!;
    assert.equal(calls.length, 1);
    const call = calls[0]!;
    assert.equal(call.type, "function");
    assert.ok(call.type === "function");
    assert.equal(call.function.name, "get_weather");
    WeatherArgs.parse(JSON.parse(call.function.arguments));
    assert.equal(r.choices[0]!.message.content, null);
  });

  test("tools: required gives one or more calls of declared functions, finish_reason tool_calls", async () => {
    for (const seed of [1, 2, 3]) {
      const r = await chat({ tools: [weather, time], tool_choice: "required", max_tokens: 60, seed });
      const choice = r.choices[0]!;
      assert.equal(choice.finish_reason, "tool_calls");
      assert.ok(choice.message.tool_calls!.length >= 1);
      for (const call of choice.message.tool_calls!) {
        assert.ok(call.type === "function");
        assert.match(call.id, /^call-/);
        const args: unknown = JSON.parse(call.function.arguments);
        if (call.function.name === "get_weather") WeatherArgs.parse(args);
        else if (call.function.name === "get_time") TimeArgs.parse(args);
        else assert.fail(`undeclared function ${call.function.name}`);
      }
    }
  });

  test("tools: required with parameters that use local $refs ($defs): the references resolve as in the function's own schema", async () => {
    const paint = {
      type: "function" as const,
      function: {
        name: "paint",
        parameters: {
          type: "object",
          $defs: { colour: { enum: ["red", "green", "blue"] } },
          properties: { colour: { $ref: "#/$defs/colour" }, coats: { type: "integer", minimum: 1, maximum: 3 } },
          required: ["colour", "coats"],
          additionalProperties: false,
        },
      },
    };
    for (const parallel of [true, false]) {
      const r = await chat({ tools: [paint, time], tool_choice: "required", parallel_tool_calls: parallel, max_tokens: 80, seed: 5 });
      const calls = r.choices[0]!.message.tool_calls!;
      assert.ok(calls.length >= 1 && (parallel || calls.length === 1));
      for (const call of calls) {
        assert.ok(call.type === "function");
        const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
        if (call.function.name === "paint") {
          assert.ok(["red", "green", "blue"].includes(args.colour as string), call.function.arguments);
          assert.ok(Number.isInteger(args.coats) && (args.coats as number) >= 1 && (args.coats as number) <= 3);
        } else TimeArgs.parse(args);
      }
    }
  });

  test("tools auto (the default with tools): text without a call marker, or calls of declared functions; streamed alike", async () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = await chat({ tools: [weather, time], max_tokens: 40, seed });
      const choice = r.choices[0]!;
      const calls = choice.message.tool_calls ?? [];
      if (calls.length > 0) {
        assert.equal(choice.finish_reason, "tool_calls");
        for (const call of calls) {
          assert.ok(call.type === "function");
          (call.function.name === "get_weather" ? WeatherArgs : TimeArgs).parse(JSON.parse(call.function.arguments));
        }
      } else {
        assert.ok(!choice.message.content!.includes("<tool_call>"));
      }
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Tell me a story about a cat." }],
        tools: [weather, time],
        max_tokens: 40,
        seed,
        stream: true,
      });
      let content = "";
      const streamedCalls: string[] = [];
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? "";
        for (const call of chunk.choices[0]?.delta.tool_calls ?? []) streamedCalls.push(call.function?.name ?? "");
      }
      if (calls.length === 0) assert.equal(content, choice.message.content);
      assert.deepEqual(
        streamedCalls,
        calls.map((c) => (c.type === "function" ? c.function.name : "")),
      );
    }
  });

  test("tools in a stream: a named call's arguments arrive as deltas", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Weather?" }],
      tools: [weather],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 40,
      seed: 5,
      stream: true,
    });
    let name = "";
    let args = "";
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name += call.function?.name ?? "";
        args += call.function?.arguments ?? "";
      }
    }
    assert.equal(name, "get_weather");
    WeatherArgs.parse(JSON.parse(args));
  });

  test("errors: the SDK's APIError classes carry our message and the parameter", async () => {
    await assert.rejects(
      chat({
        max_tokens: 2,
        response_format: {
          type: "json_schema",
          json_schema: { name: "x", schema: { type: "object", required: ["a"], properties: { a: { type: "string", minLength: 5 } } } },
        },
      }),
      (e: unknown) => e instanceof BadRequestError && /needs at least \d+ tokens/.test(e.message),
    );
    await assert.rejects(
      client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "x" }],
        audio_volume: 3,
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming),
      (e: unknown) => e instanceof BadRequestError && /audio_volume/.test(e.message) && (e as APIError).param === "audio_volume",
    );
    await assert.rejects(
      chat({ stop: ["x"], response_format: { type: "json_object" } }),
      (e: unknown) => e instanceof BadRequestError && (e as APIError).param === "stop",
    );
    await assert.rejects(
      chat({ model: "gpt-4o" }),
      (e: unknown) => e instanceof NotFoundError && (e as APIError).code === "model_not_found",
    );
    await assert.rejects(
      chat({ logit_bias: { "99999999": 5 } }),
      (e: unknown) => e instanceof BadRequestError && /logit_bias/.test(e.message),
    );
    await assert.rejects(
      client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }],
      }),
      (e: unknown) => e instanceof BadRequestError && (e as APIError).param === "messages[0].content[0].type",
    );
    const bad = new OpenAI({ apiKey: "wrong", baseURL, maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e: unknown) => e instanceof APIError && e.status === 401 && /API key/.test(e.message));
  });

  test("logit_bias: -100 on the greedy first token moves it", async () => {
    const first = await chat({ temperature: 0, max_tokens: 1, logprobs: true });
    const bytes = first.choices[0]!.logprobs!.content![0]!.bytes!;
    const vocab = (engine as unknown as { runtime: { vocab: { size: number; tokenBytes(id: number): Uint8Array } } }).runtime.vocab;
    // Every token spelling those bytes (SentencePiece has "▁" and the byte token <0x20> for " ").
    const bias: Record<string, number> = {};
    for (let i = 0; i < vocab.size; i++) if (Buffer.from(vocab.tokenBytes(i)).equals(Buffer.from(bytes))) bias[String(i)] = -100;
    assert.ok(Object.keys(bias).length > 0);
    const moved = await chat({ temperature: 0, max_tokens: 1, logprobs: true, logit_bias: bias });
    assert.notDeepEqual(moved.choices[0]!.logprobs!.content![0]!.bytes, bytes);
  });

  test("legacy completions: text, echo, logprobs, stream", async () => {
    const r = await client.completions.create({
      model: MODEL,
      prompt: "Once upon a time",
      max_tokens: 10,
      seed: 1,
      logprobs: 2,
      echo: true,
    });
    assert.equal(r.object, "text_completion");
    const choice = r.choices[0]!;
    assert.ok(choice.text.startsWith("Once upon a time"));
    assert.equal(choice.logprobs!.tokens!.length, r.usage!.completion_tokens);
    assert.equal(choice.logprobs!.text_offset![0], "Once upon a time".length);
    const stream = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 10, seed: 1, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    assert.equal("Once upon a time" + text, choice.text);
    const two = await client.completions.create({ model: MODEL, prompt: ["One day", "A dog"], max_tokens: 4, n: 2 });
    assert.deepEqual(
      two.choices.map((c) => c.index),
      [0, 1, 2, 3],
    );
    const regex = await client.completions.create({
      model: MODEL,
      prompt: "The answer is",
      max_tokens: 10,
      structured_outputs: { regex: "[0-9]{3}" },
    } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.match(regex.choices[0]!.text, /^[0-9]{3}$/);
    const choice3 = await client.completions.create({
      model: MODEL,
      prompt: "Pick:",
      max_tokens: 10,
      structured_outputs: { choice: ["red (dark)", "blue+"] },
    } as OpenAI.CompletionCreateParamsNonStreaming);
    assert.ok(["red (dark)", "blue+"].includes(choice3.choices[0]!.text));
  });

  test("aborting a stream mid-way cancels its generation (in-flight back to 0, few tokens spent)", async () => {
    const metricsUrl = `${baseURL.replace(/\/v1$/, "")}/metrics`;
    const scrape = async () => {
      const text = await (await fetch(metricsUrl)).text();
      const tokens = /^trellis_tokens_generated_total\{route="\/v1\/chat\/completions"\} (\S+)$/m.exec(text)?.[1];
      return { inFlight: Number(/^trellis_generations_in_flight (\S+)$/m.exec(text)?.[1] ?? "-1"), tokens: Number(tokens ?? "0") };
    };
    const before = await scrape();
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      {
        model: MODEL,
        messages: [{ role: "user", content: "Tell a long story." }],
        max_tokens: 300,
        n: 8,
        stream: true,
        seed: 1,
        logit_bias: eosBias(),
      },
      { signal: controller.signal },
    );
    try {
      for await (const _ of stream) {
        controller.abort();
      }
    } catch {
      // the SDK ends an aborted stream with APIUserAbortError
    }
    const deadline = Date.now() + 3000;
    let now = await scrape();
    while (now.inFlight !== 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      now = await scrape();
    }
    assert.equal(now.inFlight, 0);
    const spent = now.tokens - before.tokens;
    assert.ok(spent < 8 * 300, `an aborted stream stops generating (spent ${spent} of ${8 * 300} tokens)`);
  });

  /** A bias against the end-of-text token, so a long generation does not end early by chance. */
  function eosBias(): Record<string, number> {
    return { "2": -100 };
  }
});

describe("OpenAI streams that fail after their first event", () => {
  test("an engine error mid-stream is an SSE error event in OpenAI's shape, then the end; before it, a plain HTTP error", async () => {
    const failing = failingChatEngine();
    const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    const app = await createServer({ engine: failing, config: testConfig(), store });
    try {
      const ask = (maxTokens: number) =>
        app.inject({
          method: "POST",
          url: "/v1/chat/completions",
          headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
          payload: { model: "fake", messages: [{ role: "user", content: "hi" }], stream: true, max_tokens: maxTokens },
        });
      const late = await ask(5);
      assert.equal(late.statusCode, 200);
      const events = late.body.slice(0, -2).split("\n\n");
      assert.match(events[0]!, /^data: .*"role":"assistant"/);
      assert.match(events[1]!, /^data: .*"content":"Hel"/);
      assert.equal(events.length, 3);
      assert.match(events[2]!, /^event: error\ndata: /);
      const error = JSON.parse(events[2]!.split("\ndata: ")[1]!) as { error: { message: string; type: string } };
      assert.deepEqual(error.error.message, "internal server error");
      assert.equal(error.error.type, "server_error");
      assert.ok(!late.body.includes("[DONE]") && !late.body.includes("secret"));
      const early = await ask(7);
      assert.equal(early.statusCode, 400);
      assert.match(early.headers["content-type"] as string, /^application\/json/);
      assert.match((early.json() as { error: { message: string } }).error.message, /needs at least 9 tokens/);
    } finally {
      await app.close();
      store.close();
    }
  });
});

test("a known OpenAI path asked with another method is a 405, an unknown one a 404, in OpenAI's shape", async () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine: createFakeEngine(), config: testConfig(), store });
  try {
    const res = await app.inject({ method: "GET", url: "/v1/chat/completions", headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(res.statusCode, 405);
    assert.equal(res.headers.allow, "POST");
    assert.match((res.json() as { error: { message: string } }).error.message, /GET is not allowed/);
    const embeddings = await app.inject({ method: "GET", url: "/v1/embeddings", headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(embeddings.statusCode, 405);
    assert.equal((embeddings.json() as { error: { type: string } }).error.type, "invalid_request_error");
    const thiggle = await app.inject({ method: "GET", url: "/v1/categorize" });
    assert.equal((thiggle.json() as { code: number }).code, 405);
    // An endpoint OpenAI has and Trellis does not: a 404 an OpenAI SDK can read.
    const missing = await app.inject({ method: "POST", url: "/v1/moderations", headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(missing.statusCode, 404);
    assert.equal((missing.json() as { error: { type: string } }).error.type, "not_found_error");
  } finally {
    await app.close();
    store.close();
  }
});

test("logit_bias keyed __proto__ is valid JSON, refused as no token id with a 400 naming logit_bias", async () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine: createFakeEngine(), config: testConfig(), store });
  try {
    const headers = { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" };
    const bodies = {
      "/v1/chat/completions": '{"model":"trellis","messages":[{"role":"user","content":"hi"}],"logit_bias":{"__proto__":5}}',
      "/v1/completions": '{"model":"trellis","prompt":"hi","logit_bias":{"12":5,"__proto__":{"x":1}}}',
    };
    for (const [url, payload] of Object.entries(bodies)) {
      const res = await app.inject({ method: "POST", url, headers, payload });
      assert.equal(res.statusCode, 400, res.body);
      const { error } = res.json() as { error: { message: string; type: string; param: string } };
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.param, "logit_bias");
      assert.match(error.message, /^logit_bias /);
      assert.doesNotMatch(error.message, /not valid JSON/);
    }
    assert.equal(({} as Record<string, unknown>).x, undefined);
  } finally {
    await app.close();
    store.close();
  }
});
