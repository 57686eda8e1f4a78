/**
 * OpenAI's Responses API (`/v1/responses`) on the real engine (stories260K), through the real
 * clients unchanged: the official `openai` SDK (create, text.format json_schema, stream with its
 * events in OpenAI's order, parse with zodTextFormat, function tools over two rounds with
 * previous_response_id and function_call_output, GET and DELETE, tool_choice required and named,
 * a tight max_output_tokens) and the AI SDK's default `openai(modelId)` provider (generateText,
 * streamText, generateObject, a tool call, an item_reference round). Then the raw event stream
 * byte by byte, errors and warnings naming their fields, ownership of stored responses, the
 * per-key limits, and usage charged to a key's quota.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { type APIError, BadRequestError, NotFoundError } from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, streamText, tool } from "ai";
import { z } from "zod";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { STORIES_260K } from "./support/paths.js";
import { failingChatEngine, TEST_KEY, testConfig } from "./support/fake-engine.js";
import { realEngineApp } from "./support/service.js";

const MODEL = "stories260K";

const WeatherArgs = z.object({ city: z.string().max(12), unit: z.enum(["c", "f"]) }).strict();
const weather = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["c", "f"] } },
    required: ["city", "unit"],
    additionalProperties: false,
  },
  strict: true,
};
const TimeArgs = z.object({ zone: z.string().max(8) }).strict();
const time = {
  type: "function" as const,
  name: "get_time",
  description: "The time in a zone",
  parameters: { type: "object", properties: { zone: { type: "string", maxLength: 8 } }, required: ["zone"], additionalProperties: false },
  strict: true,
};

interface Warning {
  keyword: string;
  message: string;
}
const warningsOf = (r: unknown): Warning[] => (r as { warnings?: Warning[] }).warnings ?? [];

/** An SSE body's frames: each `event: <type>\ndata: <json>` checked and parsed. */
function framesOf(text: string): { event: string; data: Record<string, unknown> }[] {
  assert.ok(text.endsWith("\n\n"), "the stream ends with a whole frame");
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((frame) => {
      const match = /^event: ([a-z_.]+)\ndata: (\{.*\})$/s.exec(frame);
      assert.ok(match, `a frame is one event line and one data line: ${JSON.stringify(frame)}`);
      assert.ok(!match[2]!.includes("\n"), "the data is one line");
      const data = JSON.parse(match[2]!) as Record<string, unknown>;
      assert.equal(data.type, match[1], "the event name is the data's type");
      return { event: match[1]!, data };
    });
}

/** The order OpenAI sends a response's events in: one message or function call item after another. */
function assertEventOrder(types: string[]): void {
  assert.deepEqual(types.slice(0, 2), ["response.created", "response.in_progress"]);
  assert.match(types.at(-1)!, /^response\.(completed|incomplete)$/);
  let i = 2;
  while (i < types.length - 1) {
    assert.equal(types[i], "response.output_item.added", `item start at ${i}: ${types.join(",")}`);
    i++;
    if (types[i] === "response.content_part.added") {
      i++;
      while (types[i] === "response.output_text.delta") i++;
      assert.deepEqual(types.slice(i, i + 3), ["response.output_text.done", "response.content_part.done", "response.output_item.done"]);
      i += 3;
    } else {
      while (types[i] === "response.function_call_arguments.delta") i++;
      assert.deepEqual(types.slice(i, i + 2), ["response.function_call_arguments.done", "response.output_item.done"]);
      i += 2;
    }
  }
}

describe("Responses API through the openai SDK and the AI SDK (stories260K)", () => {
  let served: Awaited<ReturnType<typeof realEngineApp>>;
  let client: OpenAI;
  let base: string;

  before(async () => {
    // Without the prefix cache: streamed and whole answers of one seed are compared (support/paths.ts NO_PREFIX_CACHE).
    served = await realEngineApp(STORIES_260K, { maxNewTokensLimit: 300, prefixCacheTokens: 0 });
    await served.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = served.app.server.address() as { port: number };
    base = `http://127.0.0.1:${port}/v1`;
    client = new OpenAI({ apiKey: TEST_KEY, baseURL: base, maxRetries: 0 });
  });

  after(() => served.close());

  const create = (extra: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming> = {}) =>
    client.responses.create({ model: MODEL, input: "Tell me a story about a cat.", max_output_tokens: 24, temperature: 0, ...extra });

  const post = (body: unknown, key = TEST_KEY) =>
    fetch(`${base}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  test("create: OpenAI's response object, the request echoed, usage; the same text streamed", async () => {
    const r = await create({ instructions: "Be brief.", metadata: { run: "1" } });
    assert.match(r.id, /^resp_[0-9a-f]{24}$/);
    assert.equal(r.object, "response");
    assert.ok(Number.isInteger(r.created_at));
    assert.equal(r.model, MODEL);
    assert.ok(r.status === "completed" || r.status === "incomplete");
    if (r.status === "incomplete") assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(r.output.length, 1);
    const message = r.output[0]!;
    assert.ok(message.type === "message");
    assert.equal(message.role, "assistant");
    assert.equal(message.content[0]!.type, "output_text");
    assert.ok(message.content[0]!.type === "output_text");
    assert.deepEqual(message.content[0]!.annotations, []);
    assert.ok(r.output_text.length > 0);
    assert.equal(r.output_text, message.content[0]!.text);
    const usage = r.usage!;
    assert.ok(usage.input_tokens > 0 && usage.output_tokens > 0 && usage.output_tokens <= 24);
    assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    assert.equal(usage.input_tokens_details.cached_tokens, 0);
    assert.equal(usage.output_tokens_details.reasoning_tokens, 0);
    assert.equal(r.instructions, "Be brief.");
    assert.equal(r.max_output_tokens, 24);
    assert.equal(r.temperature, 0);
    assert.equal(r.top_p, 1);
    assert.equal((r as unknown as { store: boolean }).store, true);
    assert.equal(r.parallel_tool_calls, true);
    assert.equal(r.tool_choice, "auto");
    assert.deepEqual(r.tools, []);
    assert.deepEqual(r.text, { format: { type: "text" }, verbosity: "medium" });
    assert.deepEqual(r.metadata, { run: "1" });
    assert.equal(r.previous_response_id, null);
    assert.deepEqual(warningsOf(r), []);

    const stream = client.responses.stream({
      model: MODEL,
      input: "Tell me a story about a cat.",
      instructions: "Be brief.",
      max_output_tokens: 24,
      temperature: 0,
    });
    const types: string[] = [];
    const sequence: number[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      sequence.push(event.sequence_number);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    assertEventOrder(types);
    assert.deepEqual(
      sequence,
      types.map((_, i) => i),
    );
    assert.ok(types.filter((t) => t === "response.output_text.delta").length > 1);
    assert.equal(text, r.output_text);
  });

  test("text.format json_schema (strict): the output is valid JSON of the schema, never cut short", async () => {
    const Pet = z.object({ name: z.string().max(12), age: z.number().int().min(0).max(30), kind: z.enum(["cat", "dog"]) }).strict();
    for (const max of [60, 200]) {
      const r = await create({
        max_output_tokens: max,
        text: {
          format: {
            type: "json_schema",
            name: "pet",
            strict: true,
            schema: {
              type: "object",
              properties: {
                name: { type: "string", maxLength: 12 },
                age: { type: "integer", minimum: 0, maximum: 30 },
                kind: { type: "string", enum: ["cat", "dog"] },
              },
              required: ["name", "age", "kind"],
              additionalProperties: false,
            },
          },
        },
      });
      assert.equal(r.status, "completed");
      Pet.parse(JSON.parse(r.output_text));
      assert.equal(r.text?.format?.type, "json_schema");
    }
  });

  test("responses.parse with zodTextFormat: output_parsed is the zod type", async () => {
    const Recipe = z.object({
      title: z.string().max(20),
      servings: z.number().int().min(1).max(12),
      vegetarian: z.boolean(),
    });
    const r = await client.responses.parse({
      model: MODEL,
      input: "A recipe.",
      max_output_tokens: 120,
      text: { format: zodTextFormat(Recipe, "recipe") },
    });
    assert.ok(r.output_parsed);
    assert.deepEqual(Recipe.parse(r.output_parsed), r.output_parsed);
  });

  test("a tight max_output_tokens: a 400 naming max_output_tokens for a schema that cannot fit, never a cut document", async () => {
    const format = {
      type: "json_schema" as const,
      name: "x",
      strict: true,
      schema: { type: "object", required: ["a"], properties: { a: { type: "string", minLength: 30 } }, additionalProperties: false },
    };
    await assert.rejects(create({ max_output_tokens: 3, text: { format } }), (e: unknown) => {
      assert.ok(e instanceof BadRequestError, String(e));
      assert.match(e.message, /needs at least \d+ tokens.*max_output_tokens/);
      assert.doesNotMatch(e.message, /max_new_tokens/);
      assert.equal(e.code, "constraint_unsatisfiable");
      return true;
    });
    // Streamed: the same refusal before any event, as an ordinary HTTP error.
    const streamed = await post({ model: MODEL, input: "x", max_output_tokens: 3, text: { format }, stream: true });
    assert.equal(streamed.status, 400);
    assert.match(streamed.headers.get("content-type")!, /^application\/json/);
    // A budget just big enough: a complete, valid document.
    for (const max of [14, 20, 28]) {
      try {
        const r = await create({ max_output_tokens: max, text: { format } });
        assert.equal(r.status, "completed");
        assert.ok((JSON.parse(r.output_text) as { a: string }).a.length >= 30);
      } catch (e) {
        assert.ok(e instanceof BadRequestError && /max_output_tokens/.test(e.message), String(e));
      }
    }
  });

  test("function tools over two rounds: required calls, then previous_response_id with function_call_output", async () => {
    const first = await create({
      input: "What's the weather in Paris?",
      tools: [weather, time],
      tool_choice: "required",
      max_output_tokens: 80,
    });
    assert.equal(first.status, "completed");
    assert.ok(first.output.length >= 1);
    for (const item of first.output) {
      assert.ok(item.type === "function_call", item.type);
      assert.match(item.call_id, /^call_/);
      assert.match(item.id!, /^fc_/);
      assert.equal(item.status, "completed");
      const args: unknown = JSON.parse(item.arguments);
      (item.name === "get_weather" ? WeatherArgs : TimeArgs).parse(args);
    }
    assert.equal(first.tools.length, 2);
    assert.deepEqual(first.tools[0], { ...weather, strict: true });
    const outputs = first.output.map((item) => ({
      type: "function_call_output" as const,
      call_id: (item as OpenAI.Responses.ResponseFunctionToolCall).call_id,
      output: JSON.stringify({ temperature: 21 }),
    }));
    const second = await create({ previous_response_id: first.id, input: outputs, tools: [weather, time], tool_choice: "none" });
    assert.equal(second.previous_response_id, first.id);
    assert.equal(second.output[0]!.type, "message");

    // The same conversation sent whole, without previous_response_id, reads the same prompt.
    const whole = await create({
      input: [
        { role: "user", content: "What's the weather in Paris?" },
        ...first.output.map((item) => {
          const call = item as OpenAI.Responses.ResponseFunctionToolCall;
          return { type: "function_call" as const, call_id: call.call_id, name: call.name, arguments: call.arguments };
        }),
        ...outputs,
      ],
      tools: [weather, time],
      tool_choice: "none",
    });
    assert.equal(whole.usage!.input_tokens, second.usage!.input_tokens);
    assert.equal(whole.output_text, second.output_text);
  });

  test("tool_choice named: one call of that function, arguments valid; streamed as argument deltas", async () => {
    const r = await create({
      input: "Weather?",
      tools: [weather, time],
      tool_choice: { type: "function", name: "get_time" },
      max_output_tokens: 40,
    });
    assert.equal(r.output.length, 1);
    const call = r.output[0]!;
    assert.ok(call.type === "function_call");
    assert.equal(call.name, "get_time");
    TimeArgs.parse(JSON.parse(call.arguments));
    assert.deepEqual(r.tool_choice, { type: "function", name: "get_time" });

    const stream = client.responses.stream({
      model: MODEL,
      input: "Weather?",
      tools: [weather],
      tool_choice: { type: "function", name: "get_weather" },
      max_output_tokens: 40,
      temperature: 0,
    });
    const types: string[] = [];
    let args = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.function_call_arguments.delta") args += event.delta;
    }
    assertEventOrder(types);
    assert.ok(types.filter((t) => t === "response.function_call_arguments.delta").length > 1);
    const final = await stream.finalResponse();
    const streamedCall = final.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    assert.equal(streamedCall.arguments, args);
    WeatherArgs.parse(JSON.parse(args));
  });

  test("GET returns the stored response; DELETE removes it; unknown ids are 404s in OpenAI's shape", async () => {
    const r = await create();
    const got = await client.responses.retrieve(r.id);
    assert.deepEqual({ ...got, output_text: undefined }, { ...r, output_text: undefined });
    assert.deepEqual(await client.responses.delete(r.id), { id: r.id, object: "response", deleted: true });
    await assert.rejects(client.responses.retrieve(r.id), (e: unknown) => e instanceof NotFoundError);
    const again = await fetch(`${base}/responses/${r.id}`, { method: "DELETE", headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(again.status, 404);
    const body = (await again.json()) as { error: { message: string; type: string } };
    assert.match(body.error.message, /not found/);

    const unstored = await create({ store: false });
    assert.equal((unstored as unknown as { store: boolean }).store, false);
    await assert.rejects(client.responses.retrieve(unstored.id), (e: unknown) => e instanceof NotFoundError);
    await assert.rejects(
      create({ previous_response_id: unstored.id }),
      (e: unknown) => e instanceof BadRequestError && (e as APIError).param === "previous_response_id",
    );
  });

  test("input_items lists what a stored response was generated from, paged, through the SDK; its ids are item_references", async () => {
    const first = await create({ input: [{ role: "user", content: "Tell me a story." }] });
    const second = await create({ previous_response_id: first.id, input: "And then?" });
    // The conversation rendered: the first input, its output message, then the new input; newest first by default.
    const page = await client.responses.inputItems.list(second.id);
    const items = page.data as unknown as { id: string; type: string; role?: string; content?: { type: string; text: string }[] }[];
    assert.deepEqual(
      items.map((i) => [i.type, i.role, i.content?.[0]?.type]),
      [
        ["message", "user", "input_text"],
        ["message", "assistant", "output_text"],
        ["message", "user", "input_text"],
      ],
    );
    assert.equal(items[0]!.content![0]!.text, "And then?");
    assert.equal(items[1]!.content![0]!.text, first.output_text);
    assert.equal(items[2]!.content![0]!.text, "Tell me a story.");
    assert.equal(new Set(items.map((i) => i.id)).size, 3);
    // Paged in ascending order, one at a time, with `after`: the same items the other way round.
    const ascending: string[] = [];
    for await (const item of client.responses.inputItems.list(second.id, { order: "asc", limit: 1 }))
      ascending.push((item as { id: string }).id);
    assert.deepEqual(ascending, items.map((i) => i.id).reverse());
    const again = await client.responses.inputItems.list(second.id);
    assert.deepEqual(
      again.data.map((i) => (i as { id: string }).id),
      items.map((i) => i.id),
      "ids are stable",
    );
    // An input item's id is an item_reference: the same prompt as the text it names.
    const byReference = await create({ input: [{ type: "item_reference", id: items[2]!.id }] });
    const byText = await create({ input: [{ role: "user", content: "Tell me a story." }] });
    assert.equal(byReference.usage!.input_tokens, byText.usage!.input_tokens);
    // Refused by name: a bad limit, order or after, and include; other keys and unknown ids are 404s.
    const bad = async (query: string, param: string) => {
      const r = await fetch(`${base}/responses/${second.id}/input_items?${query}`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
      assert.equal(r.status, 400, query);
      assert.equal(((await r.json()) as { error: { param: string } }).error.param, param, query);
    };
    await bad("limit=0", "limit");
    await bad("limit=101", "limit");
    await bad("order=up", "order");
    await bad("after=msg_nope", "after");
    await bad("include=message.input_image.image_url", "include");
    await bad("colour=red", "colour");
    await assert.rejects(client.responses.inputItems.list("resp_000000000000000000000000"), (e: unknown) => e instanceof NotFoundError);
    const other = await served.store.createKey("input-items-other");
    const otherClient = new OpenAI({ apiKey: other.key, baseURL: base, maxRetries: 0 });
    await assert.rejects(otherClient.responses.inputItems.list(second.id), (e: unknown) => e instanceof NotFoundError);
  });

  test("stored responses belong to their key: another key reads, deletes and continues none of them", async () => {
    const other = await served.store.createKey("other");
    const otherClient = new OpenAI({ apiKey: other.key, baseURL: base, maxRetries: 0 });
    const mine = await create();
    await assert.rejects(otherClient.responses.retrieve(mine.id), (e: unknown) => e instanceof NotFoundError);
    await assert.rejects(otherClient.responses.delete(mine.id), (e: unknown) => e instanceof NotFoundError);
    await assert.rejects(
      otherClient.responses.create({ model: MODEL, input: "hi", previous_response_id: mine.id, max_output_tokens: 4 }),
      (e: unknown) => e instanceof BadRequestError && (e as APIError).param === "previous_response_id",
    );
    const itemId = mine.output[0]!.id!;
    await assert.rejects(
      otherClient.responses.create({ model: MODEL, input: [{ type: "item_reference", id: itemId }], max_output_tokens: 4 }),
      (e: unknown) => e instanceof BadRequestError && (e as APIError).param === "input[0].id",
    );
    assert.equal((await client.responses.retrieve(mine.id)).id, mine.id);
    // An item_reference of the owner's own response is that item.
    const referenced = await create({
      input: [
        { type: "item_reference", id: itemId },
        { role: "user", content: "More." },
      ],
    });
    assert.equal(referenced.status === "completed" || referenced.status === "incomplete", true);
  });

  test("usage is charged to a key's quota as on the chat route", async () => {
    const limited = await served.store.createKey("quota", { quota: 10_000 });
    const response = await fetch(`${base}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${limited.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, input: "Once", max_output_tokens: 12, temperature: 0 }),
    });
    assert.equal(response.status, 200);
    const r = (await response.json()) as { usage: { output_tokens: number } };
    assert.equal(Number(response.headers.get("x-quota-remaining")), 10_000 - r.usage.output_tokens);
    served.store.flush();
    const info = served.store.listKeys().find((k) => k.id === limited.id)!;
    assert.equal(info.tokens, r.usage.output_tokens);

    const streamed = await fetch(`${base}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${limited.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, input: "Once", max_output_tokens: 12, temperature: 0, stream: true }),
    });
    const frames = framesOf(await streamed.text());
    const done = frames.at(-1)!.data.response as { usage: { output_tokens: number } };
    served.store.flush();
    const after = served.store.listKeys().find((k) => k.id === limited.id)!;
    assert.equal(after.tokens, r.usage.output_tokens + done.usage.output_tokens);
  });

  test("raw SSE: typed frames byte by byte, numbered, the final response the JSON answer's", async () => {
    const body = { model: MODEL, input: "Once upon a time", max_output_tokens: 16, temperature: 0, store: false };
    const response = await post({ ...body, stream: true });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const text = await response.text();
    assert.ok(!text.includes("[DONE]"));
    const frames = framesOf(text);
    assertEventOrder(frames.map((f) => f.event));
    frames.forEach((f, i) => assert.equal(f.data.sequence_number, i));
    const created = frames[0]!.data.response as Record<string, unknown>;
    assert.equal(created.status, "in_progress");
    assert.deepEqual(created.output, []);
    const added = frames[2]!.data as { output_index: number; item: { id: string; type: string; status: string; content: unknown[] } };
    assert.deepEqual(
      { index: added.output_index, type: added.item.type, status: added.item.status, content: added.item.content },
      {
        index: 0,
        type: "message",
        status: "in_progress",
        content: [],
      },
    );
    const deltas = frames.filter((f) => f.event === "response.output_text.delta").map((f) => f.data);
    for (const d of deltas) assert.deepEqual([d.item_id, d.output_index, d.content_index], [added.item.id, 0, 0]);
    const streamed = deltas.map((d) => d.delta as string).join("");
    const doneText = frames.find((f) => f.event === "response.output_text.done")!.data.text;
    assert.equal(doneText, streamed);
    const last = frames.at(-1)!.data.response as { id: string; output: { content: { text: string }[] }[]; usage: unknown };
    assert.equal(last.output[0]!.content[0]!.text, streamed);
    const whole = (await (await post(body)).json()) as { output: { content: { text: string }[] }[] };
    assert.equal(whole.output[0]!.content[0]!.text, streamed);
  });

  test("OpenAI's fields Trellis does not act on are accepted with warnings; unserved ones are 400s naming them", async () => {
    const r = await create({
      reasoning: { effort: "high" },
      truncation: "auto",
      include: ["message.output_text.logprobs"],
      service_tier: "flex",
      prompt_cache_key: "k",
      safety_identifier: "user-1",
      user: "u",
      text: { verbosity: "low" },
      parallel_tool_calls: false,
      background: false,
    });
    assert.deepEqual(
      warningsOf(r)
        .map((w) => w.keyword)
        .sort(),
      ["include", "prompt_cache_key", "reasoning", "service_tier", "text.verbosity", "truncation"],
    );
    const quiet = await create({ reasoning: { effort: "none" }, truncation: "disabled", service_tier: "auto" });
    assert.deepEqual(warningsOf(quiet), []);

    const refused = async (extra: Record<string, unknown>, param: string, message?: RegExp) => {
      await assert.rejects(create(extra as Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>), (e: unknown) => {
        assert.ok(e instanceof BadRequestError, String(e));
        assert.equal((e as APIError).param, param, e.message);
        if (message) assert.match(e.message, message);
        return true;
      });
    };
    await refused({ background: true }, "background", /background/);
    await refused({ tools: [{ type: "web_search" }] }, "tools[0].type", /web_search/);
    await refused({ tool_choice: { type: "file_search" } }, "tool_choice.type");
    await refused({ max_output_tokens: 0 }, "max_output_tokens");
    await refused({ frequency_penalty: 1 }, "frequency_penalty", /unknown field/);
    await refused({ conversation: "conv_1" }, "conversation");
    await refused({ tool_choice: { type: "function", name: "nope" }, tools: [weather] }, "tool_choice.name", /nope/);
    await refused({ tool_choice: "required" }, "tool_choice");
    await refused({ input: [{ type: "function_call_output", call_id: "call_x", output: "1" }] }, "input[0].call_id", /call_x/);
    await refused({ input: [{ role: "user", content: [{ type: "input_image", image_url: "http://x" }] }] }, "input[0].content[0].type");
    await refused(
      { input: [{ type: "reasoning", summary: [], content: [{ type: "summary_text", text: "x" }] }] },
      "input[0].content[0].type",
    );
    await refused({ input: [{ type: "reasoning", summary: [{ type: "reasoning_text", text: "x" }] }] }, "input[0].summary[0].type");
    await refused({ input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{" }] }, "input[0].arguments");
    await refused({ text: { format: { type: "json_schema", name: "x" } } }, "text.format.schema");
    await refused({ previous_response_id: "resp_000000000000000000000000" }, "previous_response_id");
    await refused({ input: "x".repeat(40_000) }, "input", /TRELLIS_MAX_PROMPT_CHARS/);
    await assert.rejects(
      client.responses.create({ model: "gpt-4o", input: "hi" }),
      (e: unknown) => e instanceof NotFoundError && (e as APIError).param === "model",
    );
  });

  describe("the AI SDK's default openai(modelId) provider (Responses API)", () => {
    let provider: ReturnType<typeof createOpenAI>;
    before(() => {
      provider = createOpenAI({ baseURL: base, apiKey: TEST_KEY });
    });

    test("generateText and streamText: the same text", async () => {
      const options = { model: provider(MODEL), prompt: "Once upon a time", maxOutputTokens: 24, temperature: 0 };
      const whole = await generateText(options);
      assert.ok(whole.text.length > 0);
      assert.ok(whole.response.id.startsWith("resp_"));
      const result = streamText(options);
      const deltas: string[] = [];
      for await (const delta of result.textStream) deltas.push(delta);
      assert.ok(deltas.length > 1);
      assert.equal(deltas.join(""), whole.text);
      assert.equal((await result.usage).outputTokens, whole.usage.outputTokens);

      // The next turn with the assistant's message as an item_reference (the SDK's default with store).
      const next = await generateText({
        model: provider(MODEL),
        messages: [{ role: "user", content: "Once upon a time" }, ...whole.response.messages, { role: "user", content: "And then?" }],
        maxOutputTokens: 8,
        temperature: 0,
      });
      assert.ok(next.usage.inputTokens! > whole.usage.inputTokens!);
    });

    test("generateObject with a zod schema: a valid object", async () => {
      const Recipe = z.object({
        title: z.string().max(20),
        servings: z.number().int().min(1).max(12),
        steps: z.array(z.string().max(15)).min(1).max(3),
      });
      const { object, finishReason } = await generateObject({
        model: provider(MODEL),
        schema: Recipe,
        prompt: "A recipe.",
        maxOutputTokens: 200,
      });
      assert.deepEqual(Recipe.parse(object), object);
      assert.equal(finishReason, "stop");
    });

    test("a tool call: the named tool's arguments valid against its zod schema", async () => {
      const result = await generateText({
        model: provider(MODEL),
        prompt: "What's the weather in Paris?",
        tools: { get_weather: tool({ description: "The weather in a city", inputSchema: WeatherArgs }) },
        toolChoice: { type: "tool", toolName: "get_weather" },
        maxOutputTokens: 60,
      });
      assert.equal(result.toolCalls.length, 1);
      const call = result.toolCalls[0]!;
      assert.equal(call.toolName, "get_weather");
      WeatherArgs.parse(call.input);
      assert.equal(result.finishReason, "tool-calls");
    });
  });
});

describe("Responses API: each key's stored responses are bounded", () => {
  let served: Awaited<ReturnType<typeof realEngineApp>>;

  before(async () => {
    served = await realEngineApp(STORIES_260K, { maxNewTokensLimit: 64, responsesMaxPerKey: 2 });
  });

  after(() => served.close());

  const ask = (body: Record<string, unknown>, method = "POST", url = "/v1/responses") =>
    served.app.inject({
      method: method as "POST",
      url,
      headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
      ...(method === "POST" ? { payload: { model: MODEL, input: "Once", max_output_tokens: 4, ...body } } : {}),
    });

  test("past TRELLIS_RESPONSES_MAX_PER_KEY a stored response is refused by name; store: false and deletes make room", async () => {
    const first = await ask({});
    const second = await ask({});
    assert.equal(first.statusCode, 200);
    assert.equal(second.statusCode, 200);
    const third = await ask({});
    assert.equal(third.statusCode, 400, third.body);
    const error = (third.json() as { error: { message: string; param: string } }).error;
    assert.equal(error.param, "store");
    assert.match(error.message, /2 stored responses.*TRELLIS_RESPONSES_MAX_PER_KEY/);
    assert.equal((await ask({ store: false })).statusCode, 200);
    const id = (first.json() as { id: string }).id;
    const removed = await served.app.inject({
      method: "DELETE",
      url: `/v1/responses/${id}`,
      headers: { authorization: `Bearer ${TEST_KEY}` },
    });
    assert.equal(removed.statusCode, 200);
    assert.equal((await ask({})).statusCode, 200);
  });
});

describe("Responses API streams that fail after their first event", () => {
  test("an engine error mid-stream is an error event then response.failed, nothing leaked; before it, a plain HTTP error", async () => {
    const failing = failingChatEngine();
    const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    const app = await createServer({ engine: failing, config: testConfig(), store });
    try {
      const ask = (maxTokens: number) =>
        app.inject({
          method: "POST",
          url: "/v1/responses",
          headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json" },
          payload: { model: "fake", input: "hi", stream: true, max_output_tokens: maxTokens },
        });
      const late = await ask(5);
      assert.equal(late.statusCode, 200);
      const frames = framesOf(late.body);
      assert.deepEqual(
        frames.map((f) => f.event),
        [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "error",
          "response.failed",
        ],
      );
      const error = frames[5]!.data as { message: string; code: string };
      assert.equal(error.message, "internal server error");
      const failed = frames[6]!.data.response as { status: string; error: { message: string } };
      assert.equal(failed.status, "failed");
      assert.equal(failed.error.message, "internal server error");
      assert.ok(!late.body.includes("secret"));
      const early = await ask(7);
      assert.equal(early.statusCode, 400);
      const body = early.json() as { error: { message: string; code: string } };
      assert.match(body.error.message, /needs at least 9 tokens but max_output_tokens is 7/);
      assert.equal(body.error.code, "constraint_unsatisfiable");
    } finally {
      await app.close();
      store.close();
    }
  });
});
