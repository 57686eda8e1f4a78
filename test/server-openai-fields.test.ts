/**
 * Issue 40, Chat Completions: every client's first example works. Through the official `openai`
 * SDK against the real engine on stories260K: OpenAI's accounting fields (store, metadata,
 * service_tier, reasoning_effort, verbosity, prompt_cache_key, safety_identifier, modalities)
 * accepted, validated as OpenAI does and answered with `warnings` where nothing acts on them; the
 * legacy functions / function_call; response_format json_object with a schema; a tool without
 * parameters; errors naming the max-tokens field the client sent.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { type APIError, BadRequestError } from "openai";
import { z } from "zod";
import { STORIES_260K } from "./support/paths.js";
import { TEST_KEY } from "./support/fake-engine.js";
import { realEngineApp } from "./support/service.js";

const MODEL = "stories260K";

interface Warning {
  keyword: string;
  pointer: string;
  message: string;
}
const warningsOf = (r: unknown): Warning[] => (r as { warnings?: Warning[] }).warnings ?? [];

describe("OpenAI chat fields of issue 40 through the openai SDK (stories260K)", () => {
  let served: Awaited<ReturnType<typeof realEngineApp>>;
  let client: OpenAI;

  before(async () => {
    served = await realEngineApp(STORIES_260K, { maxNewTokensLimit: 300 });
    await served.app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = served.app.server.address() as { port: number };
    client = new OpenAI({ apiKey: TEST_KEY, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  });

  after(() => served.close());

  const chat = (extra: Record<string, unknown> = {}) =>
    client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Tell me a story about a cat." }],
      max_tokens: 12,
      seed: 7,
      ...extra,
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);

  const refused = async (extra: Record<string, unknown>, param: string, message?: RegExp) => {
    await assert.rejects(chat(extra), (e: unknown) => {
      assert.ok(e instanceof BadRequestError, String(e));
      assert.equal((e as APIError).param, param, (e as Error).message);
      assert.ok((e as Error).message.includes(param.split(/[.[]/)[0]!), (e as Error).message);
      if (message) assert.match((e as Error).message, message);
      return true;
    });
  };

  test("accepted fields: honoured ones answer without warnings, the others name themselves in warnings", async () => {
    const quiet = await chat({
      store: false,
      service_tier: "auto",
      reasoning_effort: "none",
      modalities: ["text"],
      safety_identifier: "user-1234",
      metadata: {},
    });
    assert.deepEqual(warningsOf(quiet), []);
    assert.equal(quiet.service_tier, "default");
    assert.equal(typeof quiet.choices[0]!.message.content, "string");

    const loud = await chat({
      store: true,
      metadata: { team: "a", run: "7" },
      service_tier: "priority",
      reasoning_effort: "low",
      verbosity: "high",
      prompt_cache_key: "conversation-1",
    });
    assert.deepEqual(
      warningsOf(loud).map((w) => [w.keyword, w.pointer]),
      [
        ["store", "/store"],
        ["metadata", "/metadata"],
        ["service_tier", "/service_tier"],
        ["reasoning_effort", "/reasoning_effort"],
        ["verbosity", "/verbosity"],
        ["prompt_cache_key", "/prompt_cache_key"],
      ],
    );
    assert.match(warningsOf(loud)[0]!.message, /not stored/);
    assert.equal(loud.service_tier, "default");
  });

  test("a repeated conversation reuses the prefix cache: usage.prompt_tokens_details.cached_tokens, /metrics", async () => {
    const messages = [
      { role: "system" as const, content: "You are a storyteller who tells short stories about animals." },
      { role: "user" as const, content: "Tell me a story about a dog and a ball." },
    ];
    const first = await chat({ messages, max_tokens: 6 });
    const again = await chat({ messages, max_tokens: 6 });
    const cached = again.usage!.prompt_tokens_details!.cached_tokens!;
    assert.ok(cached >= 4 && cached < again.usage!.prompt_tokens, JSON.stringify(again.usage));
    assert.equal(typeof first.choices[0]!.message.content, "string");
    // The next turn: the history as sent back, plus a new question.
    const next = await chat({
      messages: [
        ...messages,
        { role: "assistant", content: first.choices[0]!.message.content ?? "" },
        { role: "user", content: "And then?" },
      ],
      max_tokens: 6,
    });
    assert.ok(next.usage!.prompt_tokens_details!.cached_tokens! >= cached, JSON.stringify(next.usage));
    // Streamed usage carries it too.
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 6,
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) streamed = chunk.usage;
    assert.ok(streamed!.prompt_tokens_details!.cached_tokens! >= 4, JSON.stringify(streamed));
    const metrics = await (await served.app.inject({ method: "GET", url: "/metrics" })).body;
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
    assert.ok(value("trellis_prefix_cache_hits_total") >= 3, metrics);
    assert.ok(value("trellis_prefix_cache_tokens_reused_total") >= 3 * 4);
    assert.ok(value("trellis_prefix_cache_entries") >= 1);
  });

  test("fast_forward (Trellis's extension): false and true both answer a valid document, without warnings; a non-boolean is a 400 naming it", async () => {
    const pet = {
      type: "object",
      properties: { name: { type: "string", maxLength: 10 }, legs: { type: "integer" } },
      required: ["name", "legs"],
    };
    for (const fast_forward of [false, true]) {
      const r = await chat({
        fast_forward,
        max_tokens: 60,
        response_format: { type: "json_schema", json_schema: { name: "pet", schema: pet } },
      });
      const value = JSON.parse(r.choices[0]!.message.content!) as { name: string; legs: number };
      assert.ok(typeof value.name === "string" && Number.isInteger(value.legs), r.choices[0]!.message.content!);
      assert.deepEqual(warningsOf(r), []);
    }
    await refused({ fast_forward: "yes" }, "fast_forward");
  });

  test("property_order (Trellis's extension): \"any\" lets a JSON answer and a call's arguments come in other orders; on text a warning", async () => {
    const pet = {
      type: "object",
      properties: { name: { enum: ["Rex", "Tom"] }, legs: { type: "integer", minimum: 0, maximum: 4 }, tame: { type: "boolean" } },
      required: ["name", "legs", "tame"],
      additionalProperties: false,
    };
    const orders = new Set<string>();
    for (let seed = 1; seed <= 10; seed++) {
      const r = await chat({
        property_order: "any",
        seed,
        temperature: 2,
        max_tokens: 60,
        response_format: { type: "json_schema", json_schema: { name: "pet", schema: pet } },
      });
      const value = JSON.parse(r.choices[0]!.message.content!) as Record<string, unknown>;
      assert.deepEqual(Object.keys(value).sort(), ["legs", "name", "tame"]);
      orders.add(Object.keys(value).join(","));
      assert.deepEqual(warningsOf(r), []);
      // A named call's arguments too.
      const call = await chat({
        property_order: "any",
        seed,
        temperature: 2,
        max_tokens: 60,
        tools: [{ type: "function", function: { name: "adopt", parameters: pet } }],
        tool_choice: { type: "function", function: { name: "adopt" } },
      });
      const [made] = call.choices[0]!.message.tool_calls as { function: { arguments: string } }[];
      const args = JSON.parse(made!.function.arguments) as Record<string, unknown>;
      assert.deepEqual(Object.keys(args).sort(), ["legs", "name", "tame"]);
      orders.add(Object.keys(args).join(","));
    }
    assert.ok(orders.size >= 3, [...orders].join(" / "));
    const text = await chat({ property_order: "any", max_tokens: 5 });
    assert.deepEqual(
      warningsOf(text).map((w) => w.keyword),
      ["property_order"],
    );
    await refused({ property_order: "random" }, "property_order");
    // The completions route alike: a JSON output in any order without a warning; plain text, whole or streamed, with one.
    const completion = (extra: Record<string, unknown>) =>
      client.completions.create({ model: MODEL, prompt: "Once", max_tokens: 40, seed: 3, property_order: "any", ...extra } as never);
    const json = (await completion({ structured_outputs: { json: pet } })) as unknown as OpenAI.Completions.Completion;
    assert.deepEqual(Object.keys(JSON.parse(json.choices[0]!.text) as object).sort(), ["legs", "name", "tame"]);
    assert.deepEqual(warningsOf(json), []);
    assert.deepEqual(
      warningsOf(await completion({ max_tokens: 4 })).map((w) => w.keyword),
      ["property_order"],
    );
    const stream = (await completion({ max_tokens: 4, stream: true })) as unknown as AsyncIterable<unknown>;
    const streamedWarnings: string[] = [];
    for await (const chunk of stream) streamedWarnings.push(...warningsOf(chunk).map((w) => w.keyword));
    assert.deepEqual(streamedWarnings, ["property_order"]);
  });

  test("accepted fields in a stream: the warnings ride on the first chunk", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 8,
      stream: true,
      store: true,
    });
    const warned: Warning[][] = [];
    for await (const chunk of stream) warned.push(warningsOf(chunk));
    assert.deepEqual(
      warned[0]!.map((w) => w.keyword),
      ["store"],
    );
    assert.ok(warned.slice(1).every((w) => w.length === 0));
  });

  test("accepted fields: values OpenAI refuses are a 400 naming the field; audio by name; unknown fields stay refused", async () => {
    await refused({ store: "yes" }, "store");
    await refused({ metadata: { a: 1 } }, "metadata.a");
    await refused({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "metadata");
    await refused({ metadata: { ["k".repeat(65)]: "v" } }, "metadata");
    await refused({ metadata: { k: "v".repeat(513) } }, "metadata.k");
    await refused({ service_tier: "turbo" }, "service_tier");
    await refused({ reasoning_effort: "maximum" }, "reasoning_effort");
    await refused({ verbosity: "loud" }, "verbosity");
    await refused({ modalities: ["text", "audio"] }, "modalities", /"audio" is not supported/);
    await refused({ modalities: ["video"] }, "modalities[0]");
    await refused({ prompt_cache_key: 5 }, "prompt_cache_key");
    await refused({ safety_identifier: "x".repeat(65) }, "safety_identifier");
    await refused({ not_an_openai_field: true }, "not_an_openai_field", /unknown field/);
  });

  const weather = {
    name: "get_weather",
    description: "Weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 10 }, unit: { enum: ["c", "f"] } },
      required: ["city", "unit"],
      additionalProperties: false,
    },
  };
  const WeatherArgs = z.object({ city: z.string().max(10), unit: z.enum(["c", "f"]) }).strict();

  test("legacy functions: function_call {name} answers in message.function_call, valid against its parameters", async () => {
    const r = await chat({ functions: [weather], function_call: { name: "get_weather" }, max_tokens: 40 });
    const choice = r.choices[0]!;
    assert.equal(choice.message.tool_calls, undefined);
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.function_call!.name, "get_weather");
    WeatherArgs.parse(JSON.parse(choice.message.function_call!.arguments));
    assert.equal(choice.finish_reason, "stop"); // as OpenAI ends a forced call
  });

  test("legacy functions: auto gives text or one call with finish_reason function_call; streamed alike", async () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = await chat({ functions: [weather], max_tokens: 40, seed });
      const choice = r.choices[0]!;
      assert.equal(choice.message.tool_calls, undefined);
      if (choice.message.function_call) {
        assert.equal(choice.finish_reason, "function_call");
        assert.equal(choice.message.function_call.name, "get_weather");
        WeatherArgs.parse(JSON.parse(choice.message.function_call.arguments));
      } else {
        assert.notEqual(choice.finish_reason, "function_call");
      }
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Tell me a story about a cat." }],
        functions: [weather],
        max_tokens: 40,
        seed,
        stream: true,
      });
      let name = "";
      let args = "";
      let finish: string | null = null;
      for await (const chunk of stream) {
        assert.equal(chunk.choices[0]?.delta.tool_calls, undefined);
        name += chunk.choices[0]?.delta.function_call?.name ?? "";
        args += chunk.choices[0]?.delta.function_call?.arguments ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(name, choice.message.function_call?.name ?? "");
      assert.equal(args, choice.message.function_call?.arguments ?? "");
      assert.equal(finish, choice.finish_reason);
    }
  });

  test("legacy functions: a forced call streams its arguments as function_call deltas", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Weather?" }],
      functions: [weather],
      function_call: { name: "get_weather" },
      max_tokens: 40,
      seed: 5,
      stream: true,
    });
    let name = "";
    let args = "";
    for await (const chunk of stream) {
      name += chunk.choices[0]?.delta.function_call?.name ?? "";
      args += chunk.choices[0]?.delta.function_call?.arguments ?? "";
    }
    assert.equal(name, "get_weather");
    WeatherArgs.parse(JSON.parse(args));
  });

  test("legacy functions: none is text; a conversation with function_call and function messages is read", async () => {
    const none = await chat({ functions: [weather], function_call: "none" });
    assert.equal(typeof none.choices[0]!.message.content, "string");
    assert.equal(none.choices[0]!.message.function_call, undefined);
    const followUp = await chat({
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        { role: "assistant", content: null, function_call: { name: "get_weather", arguments: '{"city":"Oslo","unit":"c"}' } },
        { role: "function", name: "get_weather", content: '{"temp": 3}' },
      ],
      functions: [weather],
      function_call: "none",
    });
    assert.equal(typeof followUp.choices[0]!.message.content, "string");
  });

  test("legacy functions: with tools, with tool_choice, or a function_call naming no function is a 400", async () => {
    const tool = { type: "function", function: weather };
    await refused({ functions: [weather], tools: [tool] }, "functions", /tools/);
    await refused({ functions: [weather], tool_choice: "auto" }, "function_call", /tool_choice/);
    await refused({ functions: [weather], function_call: { name: "nope" } }, "function_call.name", /nope/);
    await refused({ function_call: "auto" }, "function_call", /needs functions/);
  });

  test("response_format json_object with a schema: the object is valid against that schema", async () => {
    const schema = {
      type: "object",
      properties: { name: { type: "string", maxLength: 8 }, legs: { type: "integer", minimum: 0, maximum: 8 } },
      required: ["name", "legs"],
      additionalProperties: false,
    };
    const Pet = z.object({ name: z.string().max(8), legs: z.number().int().min(0).max(8) }).strict();
    for (const seed of [1, 2, 3]) {
      const r = await chat({ response_format: { type: "json_object", schema }, max_tokens: 60, seed });
      Pet.parse(JSON.parse(r.choices[0]!.message.content!));
    }
    await refused(
      { response_format: { type: "json_schema", json_schema: { name: "p", schema }, schema } },
      "response_format.schema",
      /json_object/,
    );
  });

  test("a tool declared without parameters is called with {} (an empty parameter list)", async () => {
    const ping = { type: "function", function: { name: "ping", description: "Ping the server" } };
    for (const seed of [1, 2, 3]) {
      const named = await chat({ tools: [ping], tool_choice: { type: "function", function: { name: "ping" } }, max_tokens: 20, seed });
      const call = named.choices[0]!.message.tool_calls![0]!;
      assert.ok(call.type === "function");
      assert.deepEqual(JSON.parse(call.function.arguments), {});
      const required = await chat({ tools: [ping], tool_choice: "required", max_tokens: 40, seed });
      for (const c of required.choices[0]!.message.tool_calls!) {
        assert.ok(c.type === "function");
        assert.deepEqual(JSON.parse(c.function.arguments), {});
      }
      const legacy = await chat({ functions: [{ name: "ping" }], function_call: { name: "ping" }, max_tokens: 20, seed });
      assert.deepEqual(JSON.parse(legacy.choices[0]!.message.function_call!.arguments), {});
    }
  });

  test("errors name the max-tokens field the client sent, never max_new_tokens", async () => {
    const needy = {
      type: "json_schema",
      json_schema: { name: "x", schema: { type: "object", required: ["a"], properties: { a: { type: "string", minLength: 5 } } } },
    };
    for (const field of ["max_tokens", "max_completion_tokens"]) {
      await assert.rejects(chat({ max_tokens: undefined, [field]: 2, response_format: needy }), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.match(e.message, new RegExp(`needs at least \\d+ tokens but ${field} is 2`));
        assert.doesNotMatch(e.message, /max_new_tokens/);
        return true;
      });
      // More than the context leaves after the prompt: a prompt that leaves fewer than the 300 allowed.
      const long = "Once upon a time there was a cat. ".repeat(Math.ceil((served.engine.contextLength - 200) / 10));
      await assert.rejects(chat({ max_tokens: undefined, [field]: 300, messages: [{ role: "user", content: long }] }), (e: unknown) => {
        assert.ok(e instanceof BadRequestError, String(e));
        assert.equal(e.param, field, e.message);
        assert.match(e.message, new RegExp(`^400 ${field} must be ≤ \\d+`));
        return true;
      });
      await refused({ max_tokens: undefined, [field]: 301 }, field, /≤ 300/);
    }
  });
});
