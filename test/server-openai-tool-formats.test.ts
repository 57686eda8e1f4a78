/**
 * Tool calls on `tool_choice: "auto"` through the openai SDK, for the formats read as one JSON
 * list after a marker (Granite 3.3's `<|tool_call|>` and Apertus's `<|tools_prefix|>`, control
 * tokens put on qwen2's padding tokens as those models' GGUFs have them) and Functionary v3.2's
 * recipients (`>>>f\n{…}`, on Llama 3's tokenizer, which its template's headers are made of):
 * synthetic models carrying the real templates. A logit bias makes the random model call (or, for
 * Functionary, write to the user); the SDK gets parsed calls of declared functions with valid
 * arguments, the same streamed as whole, and text without the markers.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type OpenAI from "openai";
import { ggufStringArray, readGguf } from "../src/vocab/index.js";
import { REPO_ROOT } from "./support/paths.js";
import { serveSyntheticChat, stopSyntheticChat, type SyntheticChat } from "./support/synthetic-chat.js";
import { testConfig } from "./support/fake-engine.js";
import { prepareChat } from "../src/server/openai/engine-request.js";

const GRANITE_MARKERS = { 151900: "<|tool_call|>" } as const;
const APERTUS_MARKERS = {
  151900: "<|tools_prefix|>",
  151901: "<|tools_suffix|>",
  151902: "<|inner_prefix|>",
  151903: "<|inner_suffix|>",
} as const;
/** Command R7B's reasoning, answer and action markers, control tokens as in its GGUFs. */
const COHERE_MARKERS = {
  151900: "<|START_THINKING|>",
  151901: "<|END_THINKING|>",
  151902: "<|START_RESPONSE|>",
  151903: "<|END_RESPONSE|>",
  151904: "<|START_ACTION|>",
  151905: "<|END_ACTION|>",
} as const;

/** Solar Open's headers and ends, as its GGUFs have them (llama.cpp renders its <|end|> as text). */
const SOLAR_MARKERS = {
  151900: "<|begin|>",
  151901: "<|end|>",
  151902: "<|think|>",
  151903: "<|content|>",
  151904: "<|tool_calls|>",
  151905: "<|tool_call:begin|>",
  151906: "<|tool_call:name|>",
  151907: "<|tool_call:args|>",
  151908: "<|tool_call:end|>",
  151909: "<|calls|>",
  151910: "<|flush|>",
} as const;

/** Command R+'s turn markers, control tokens as in its GGUFs (its replies are text). */
const COMMAND_R_PLUS_MARKERS = {
  151900: "<|START_OF_TURN_TOKEN|>",
  151901: "<|END_OF_TURN_TOKEN|>",
  151902: "<|CHATBOT_TOKEN|>",
  151903: "<|USER_TOKEN|>",
  151904: "<|SYSTEM_TOKEN|>",
} as const;

/** GigaChat's separators, control tokens as in its GGUFs. */
const GIGACHAT_MARKERS = { 151900: "<|message_sep|>", 151901: "<|role_sep|>", 151902: "<|function_call|>" } as const;

/** Kimi-K3's XTML tags and message end, control tokens. */
const KIMI_K3_MARKERS = { 151900: "<|open|>", 151901: "<|close|>", 151902: "<|sep|>", 151903: "<|end_of_msg|>" } as const;

/** Muse's message ends and headers (llama.cpp renders <|start|> and <|message|> as text, as for gpt-oss). */
const MUSE_MARKERS = { 151900: "<|eom|>", 151901: "<|eot|>", 151902: "<|start|>", 151903: "<|message|>" } as const;

const WEATHER = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "The weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 8 }, days: { type: "integer", minimum: 1, maximum: 7 } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};

/** The id of the token whose text is `text` in a vocabulary of ../shared/models/vocab. */
function tokenId(vocab: string, text: string): number {
  const tokens = ggufStringArray(
    readGguf(resolve(REPO_ROOT, "..", "shared", "models", "vocab", `ggml-vocab-${vocab}.gguf`)),
    "tokenizer.ggml.tokens",
  )!;
  for (let id = 0; id < tokens.length; id++) if (tokens.item(id) === text) return id;
  throw new Error(`${vocab} has no token ${JSON.stringify(text)}`);
}

type Fn = { name: string; arguments: string };

/** Parameters with a description on each property (Command R+'s template writes them into its Python signatures). */
function described(parameters: { properties: Record<string, object> }): object {
  const properties = Object.fromEntries(Object.entries(parameters.properties).map(([k, v]) => [k, { ...v, description: k }]));
  return { ...parameters, properties };
}

/** Checks the arguments against WEATHER's parameters. */
function assertWeather(fn: Fn): void {
  assert.equal(fn.name, "get_weather");
  const args = JSON.parse(fn.arguments) as Record<string, unknown>;
  assert.deepEqual(
    Object.keys(args).filter((k) => k !== "city" && k !== "days"),
    [],
  );
  assert.ok(typeof args.city === "string" && [...args.city].length <= 8, fn.arguments);
  if (args.days !== undefined) assert.ok(Number.isInteger(args.days) && (args.days as number) >= 1 && (args.days as number) <= 7);
}

/** The same request streamed: its content and its calls. */
async function streamed(s: SyntheticChat, request: Record<string, unknown>): Promise<{ content: string; calls: Fn[] }> {
  const stream = await s.client.chat.completions.create({
    ...request,
    stream: true,
  } as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
  let content = "";
  const calls: Fn[] = [];
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta?.content ?? "";
    for (const c of chunk.choices[0]?.delta?.tool_calls ?? []) {
      if (c.function?.name !== undefined) calls.push({ name: c.function.name, arguments: c.function.arguments ?? "" });
      else calls[calls.length - 1]!.arguments += c.function?.arguments ?? "";
    }
  }
  return { content, calls };
}

type Message = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };

/**
 * A format whose reply is text or calls (Cohere, Solar): with `call` (its logit bias opening the
 * calls) a reasoned reply of valid calls only, the same streamed; with `text` changed in, text
 * without reasoning and without any of `markers`, the same streamed.
 */
async function callsThenText(
  s: SyntheticChat,
  markers: Readonly<Record<number, string>>,
  call: Record<string, unknown>,
  text: Record<string, unknown>,
): Promise<void> {
  const request = {
    model: "qwen2",
    messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
    tools: [WEATHER],
    reasoning_budget: 12,
    ...call,
  };
  const r = await s.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
  const message = r.choices[0]!.message as Message;
  assert.equal(r.choices[0]!.finish_reason, "tool_calls", JSON.stringify(message));
  assert.ok((message.reasoning_content ?? "").length > 0, JSON.stringify(message));
  assert.equal(message.content, null);
  const calls = (message.tool_calls ?? []) as { function: Fn }[];
  assert.ok(calls.length >= 1);
  for (const c of calls) assertWeather(c.function);
  const streamedCalls = await streamed(s, request);
  assert.equal(streamedCalls.content, "");
  assert.deepEqual(
    streamedCalls.calls,
    calls.map((c) => c.function),
  );
  const asText = { ...request, ...text };
  const t = await s.client.chat.completions.create(asText as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
  const answer = t.choices[0]!.message as Message;
  assert.equal(answer.reasoning_content, undefined);
  const content = answer.content ?? "";
  for (const marker of Object.values(markers)) assert.ok(!content.includes(marker), content);
  assert.equal(answer.tool_calls, undefined);
  assert.equal((await streamed(s, asText)).content, content);
}

describe("tool-call formats on auto (synthetic models, real templates)", () => {
  let dir: string;
  let granite: SyntheticChat;
  let apertus: SyntheticChat;
  let functionary: SyntheticChat;
  let cohere: SyntheticChat;
  let gemma: SyntheticChat;
  let lfm: SyntheticChat;
  let solar: SyntheticChat;
  let gigachat: SyntheticChat;
  let gigachat31: SyntheticChat;
  let kimiK3: SyntheticChat;
  let muse: SyntheticChat;
  let rPlus: SyntheticChat;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "trellis-tool-formats-"));
    const at = (name: string): string => {
      mkdirSync(join(dir, name));
      return join(dir, name);
    };
    granite = await serveSyntheticChat(at("granite"), "qwen2", "ibm-granite-granite-3.3-2B-Instruct.jinja", 300, GRANITE_MARKERS);
    apertus = await serveSyntheticChat(at("apertus"), "qwen2", "Apertus-8B-Instruct.jinja", 300, APERTUS_MARKERS);
    functionary = await serveSyntheticChat(at("functionary"), "llama-bpe", "meetkai-functionary-medium-v3.2.jinja", 300);
    cohere = await serveSyntheticChat(at("cohere"), "qwen2", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", 300, COHERE_MARKERS);
    gemma = await serveSyntheticChat(at("gemma"), "gemma-4", "google-gemma-4-31B-it.jinja", 300);
    gigachat = await serveSyntheticChat(at("gigachat"), "qwen2", "GigaChat3-10B-A1.8B.jinja", 300, GIGACHAT_MARKERS);
    gigachat31 = await serveSyntheticChat(at("gigachat31"), "qwen2", "GigaChat3.1-10B-A1.8B.jinja", 300, GIGACHAT_MARKERS);
    kimiK3 = await serveSyntheticChat(at("kimi-k3"), "qwen2", "Kimi-K3.jinja", 300, KIMI_K3_MARKERS);
    muse = await serveSyntheticChat(at("muse"), "qwen2", "muse-glimmer.jinja", 300, MUSE_MARKERS);
    rPlus = await serveSyntheticChat(at("r-plus"), "qwen2", "CohereForAI-c4ai-command-r-plus-tool_use.jinja", 300, COMMAND_R_PLUS_MARKERS);
    solar = await serveSyntheticChat(at("solar"), "qwen2", "upstage-Solar-Open-100B.jinja", 300, SOLAR_MARKERS);
    lfm = await serveSyntheticChat(at("lfm"), "qwen2", "LFM2.5-8B-A1B.jinja", 300, {
      151900: "<|tool_call_start|>",
      151901: "<|tool_call_end|>",
    });
  });

  after(async () => {
    await stopSyntheticChat(granite);
    await stopSyntheticChat(apertus);
    await stopSyntheticChat(functionary);
    await stopSyntheticChat(cohere);
    await stopSyntheticChat(gemma);
    await stopSyntheticChat(lfm);
    await stopSyntheticChat(solar);
    await stopSyntheticChat(gigachat);
    await stopSyntheticChat(gigachat31);
    await stopSyntheticChat(kimiK3);
    await stopSyntheticChat(muse);
    await stopSyntheticChat(rPlus);
    rmSync(dir, { recursive: true, force: true });
  });

  test("each family's format is read from its template (and, for the control markers, its vocabulary)", () => {
    assert.equal(granite.engine.toolCallStyle, "granite");
    assert.equal(apertus.engine.toolCallStyle, "apertus");
    assert.equal(functionary.engine.toolCallStyle, "functionary-v3.2");
    assert.equal(cohere.engine.toolCallStyle, "command-r7b");
    assert.equal(gemma.engine.toolCallStyle, "gemma4");
    assert.equal(lfm.engine.toolCallStyle, "lfm2");
  });

  test("Apertus: calls in history are its control tokens around a JSON list keyed by name", () => {
    const history = apertus.engine.renderChat!({
      messages: [
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: { city: "Oslo" } } }],
        },
        { role: "tool", content: "3C", tool_call_id: "c1" },
      ],
      tools: [WEATHER],
      addGenerationPrompt: true,
    });
    assert.ok(history.text.includes('<|tools_prefix|>[{"get_weather": {"city": "Oslo"}}]<|tools_suffix|>'), history.text);
    assert.equal(history.tokens.filter((t) => t === 151900).length, 1);
    assert.equal(history.tokens.filter((t) => t === 151901).length, 1);
  });

  test("Apertus: asked to reason, its inner monologue between its control tokens, then a call; unasked, none", async () => {
    assert.deepEqual(apertus.engine.reasoningFormat, {
      open: "<|inner_prefix|>",
      close: "<|inner_suffix|>",
      preOpened: false,
      toggle: "enable_thinking",
      askedOnly: true,
    });
    const request = {
      model: "qwen2",
      messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
      tools: [WEATHER],
      logit_bias: { "151900": 100 },
      max_tokens: 80,
      seed: 29,
    };
    for (const asked of [true, false]) {
      const r = await apertus.client.chat.completions.create({
        ...request,
        ...(asked ? { reasoning_budget: 10 } : {}),
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      const message = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
      assert.equal(typeof message.reasoning_content, asked ? "string" : "undefined");
      assert.equal(r.choices[0]!.finish_reason, "tool_calls");
      for (const c of (message.tool_calls ?? []) as { function: Fn }[]) assertWeather(c.function);
    }
  });

  for (const [family, marker] of [
    ["granite", 151900],
    ["apertus", 151900],
  ] as const) {
    test(`${family}: a call through its control token, parsed for the SDK, whole and streamed; text never spells the marker`, async () => {
      const s = family === "granite" ? granite : apertus;
      const request = {
        model: "qwen2",
        messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
        tools: [WEATHER],
        logit_bias: { [String(marker)]: 100 },
        max_tokens: 80,
        seed: 5,
      };
      const r = await s.client.chat.completions.create(request);
      const choice = r.choices[0]!;
      assert.equal(choice.finish_reason, "tool_calls");
      const calls = (choice.message.tool_calls ?? []) as { function: Fn }[];
      assert.ok(calls.length >= 1);
      for (const c of calls) assertWeather(c.function);
      const whole = await streamed(s, request);
      assert.equal(whole.content, choice.message.content ?? "");
      assert.deepEqual(
        whole.calls,
        calls.map((c) => c.function),
      );
      // One call where parallel calls are off.
      const one = await s.client.chat.completions.create({ ...request, parallel_tool_calls: false });
      assert.equal(one.choices[0]!.message.tool_calls?.length, 1);
      // Without the bias: the marker's text is never in the content.
      const plain = await s.client.chat.completions.create({ ...request, logit_bias: undefined });
      const text = plain.choices[0]!.message.content ?? "";
      assert.ok(!text.includes(family === "granite" ? "<|tool_call|>" : "<|tools_prefix|>"), text);
      for (const c of (plain.choices[0]!.message.tool_calls ?? []) as { function: Fn }[]) assertWeather(c.function);
    });
  }

  test("granite: reasons only when asked (its template's `thinking`), then still calls", async () => {
    assert.deepEqual(granite.engine.reasoningFormat, {
      open: "<think>",
      close: "</think>",
      preOpened: false,
      toggle: "thinking",
      askedOnly: true,
    });
    const request = {
      model: "qwen2",
      messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
      tools: [WEATHER],
      max_tokens: 120,
      seed: 5,
      reasoning_effort: "low" as const,
      reasoning_budget: 20,
      logit_bias: { "151900": 100 },
    };
    const r = await granite.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    const message = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
    assert.ok((message.reasoning_content ?? "").length > 0, JSON.stringify(message));
    assert.equal(r.choices[0]!.finish_reason, "tool_calls");
    for (const c of (message.tool_calls ?? []) as { function: Fn }[]) assertWeather(c.function);
    // Unasked: no reasoning, the call at once.
    const { reasoning_effort: _effort, reasoning_budget: _budget, ...unasked } = request;
    const plain = await granite.client.chat.completions.create(unasked);
    assert.equal((plain.choices[0]!.message as { reasoning_content?: string }).reasoning_content, undefined);
    assert.equal(plain.choices[0]!.finish_reason, "tool_calls");
  });

  test("functionary-v3.2: a call when the reply names a function, text when it names `all`; whole and streamed", async () => {
    const request = {
      model: "llama-bpe",
      messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
      tools: [WEATHER],
      max_tokens: 80,
      seed: 7,
    };
    const call = { ...request, logit_bias: { [String(tokenId("llama-bpe", "get"))]: 100 } };
    const r = await functionary.client.chat.completions.create(call);
    assert.equal(r.choices[0]!.finish_reason, "tool_calls");
    const calls = (r.choices[0]!.message.tool_calls ?? []) as { function: Fn }[];
    assert.ok(calls.length >= 1);
    for (const c of calls) assertWeather(c.function);
    assert.equal(r.choices[0]!.message.content, null);
    const streamedCall = await streamed(functionary, call);
    assert.equal(streamedCall.content, "");
    assert.deepEqual(
      streamedCall.calls,
      calls.map((c) => c.function),
    );
    // Text for the user: `all\n` is its recipient line, not content.
    const text = { ...request, logit_bias: { [String(tokenId("llama-bpe", "all"))]: 100 } };
    const t = await functionary.client.chat.completions.create(text);
    const content = t.choices[0]!.message.content ?? "";
    assert.ok(!content.includes(">>>"), content);
    for (const c of (t.choices[0]!.message.tool_calls ?? []) as { function: Fn }[]) assertWeather(c.function);
    const streamedText = await streamed(functionary, text);
    assert.equal(streamedText.content, content);
    // A function named `all` cannot be told from text: a 400 naming it.
    await assert.rejects(
      functionary.client.chat.completions.create({ ...request, tools: [{ type: "function", function: { name: "all" } }] }),
      (e: { status?: number; message?: string }) => e.status === 400 && /"all"/.test(e.message ?? ""),
    );
  });

  test("Command R7B: reasoning between its control tokens, then text in its answer markers or calls in its action markers", async () => {
    // Calls after reasoning; text (its answer markers are not content) with reasoning turned off.
    await callsThenText(
      cohere,
      COHERE_MARKERS,
      { seed: 11, max_tokens: 100, logit_bias: { "151904": 100 } },
      { logit_bias: { "151902": 100 }, reasoning_effort: "none" },
    );
  });

  test("Solar Open: reasoning after <|think|>, then calls under <|tool_calls|> or text under <|content|>; low effort thinks not", async () => {
    assert.equal(solar.engine.toolCallStyle, "solar-open");
    // Text without reasoning at "low" (the template writes the empty section): no header in content.
    await callsThenText(
      solar,
      SOLAR_MARKERS,
      { seed: 17, max_tokens: 120, logit_bias: { "151904": 100 } },
      { logit_bias: { "151903": 100 }, reasoning_effort: "low" },
    );
    // A structured answer after the reasoning: the section closes with the content header.
    const json = await solar.client.chat.completions.create({
      model: "qwen2",
      messages: [{ role: "user", content: "A city?" }],
      max_tokens: 80,
      seed: 5,
      reasoning_budget: 10,
      response_format: {
        type: "json_schema",
        json_schema: { name: "city", schema: { type: "object", properties: { city: { enum: ["Oslo", "Rome"] } }, required: ["city"] } },
      },
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    const answer = json.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
    assert.equal(typeof answer.reasoning_content, "string");
    assert.ok(["Oslo", "Rome"].includes((JSON.parse(answer.content ?? "") as { city: string }).city), answer.content ?? "");
  });

  test("an answer that is not an auto tool reply opens with the style's header (Command R7B, Solar): never content, nor reasoning", async () => {
    const json = {
      type: "json_schema",
      json_schema: { name: "c", schema: { type: "object", properties: { city: { enum: ["Oslo", "Rome"] } }, required: ["city"] } },
    };
    for (const [s, header, off] of [
      [cohere, "<|START_RESPONSE|>", "none"],
      [solar, "<|content|>", "low"],
    ] as const) {
      for (const extra of [{}, { response_format: json }, { reasoning_budget: 8 }, { reasoning_budget: 8, response_format: json }]) {
        const reasoned = "reasoning_budget" in extra;
        const request = {
          model: "qwen2",
          messages: [{ role: "user" as const, content: "A city?" }],
          max_tokens: 40,
          seed: 31,
          logprobs: true,
          ...(reasoned ? {} : { reasoning_effort: off }),
          ...extra,
        };
        const r = await s.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
        const message = r.choices[0]!.message as Message;
        const tokens = (r.choices[0]!.logprobs?.content ?? []).map((t) => t.token);
        // The header is generated (after the reasoning's close, or first), as the model was trained to write it.
        const at = tokens.indexOf(header);
        assert.ok(at >= 0 && (reasoned || at === 0), `${header}: ${JSON.stringify(tokens.slice(0, 12))}`);
        assert.ok(!(message.content ?? "").includes(header), message.content ?? "");
        assert.equal(message.reasoning_content === undefined, !reasoned, JSON.stringify(message));
        assert.equal(r.usage?.completion_tokens_details?.reasoning_tokens === undefined, !reasoned);
        if ("response_format" in extra) assert.ok(["Oslo", "Rome"].includes((JSON.parse(message.content ?? "") as { city: string }).city));
        const streamedText = await streamed(s, request);
        assert.equal(streamedText.content, message.content ?? "");
      }
      // The Responses API: a reasoning item only for reasoning, never for the header.
      for (const reasoned of [false, true]) {
        const response = await s.client.responses.create({
          model: "qwen2",
          input: "A city?",
          max_output_tokens: 40,
          reasoning: { effort: reasoned ? "medium" : off },
        } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
        const types = response.output.map((item) => item.type);
        assert.equal(types.includes("reasoning"), reasoned, JSON.stringify(types));
        assert.ok(!response.output_text.includes(header), response.output_text);
      }
    }
  });

  test("Command R+: an action list of calls, or directly-answer and the answer as content; other answers after that lead", async () => {
    assert.equal(rPlus.engine.toolCallStyle, "command-r-plus");
    const tools = [{ ...WEATHER, function: { ...WEATHER.function, parameters: described(WEATHER.function.parameters) } }];
    const base = { model: "qwen2", messages: [{ role: "user" as const, content: "Weather in Oslo?" }], tools, max_tokens: 120, seed: 7 };
    // The first token that names the action decides: "get" for the call, "direct" for the answer.
    const call = { ...base, logit_bias: { [tokenId("qwen2", "get")]: 100 } };
    const r = await rPlus.client.chat.completions.create(call as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.equal(r.choices[0]!.finish_reason, "tool_calls", JSON.stringify(r.choices[0]!.message));
    assert.equal(r.choices[0]!.message.content, null);
    const calls = (r.choices[0]!.message.tool_calls ?? []) as { function: Fn }[];
    assert.ok(calls.length >= 1);
    for (const c of calls) assertWeather(c.function);
    assert.deepEqual(
      (await streamed(rPlus, call)).calls,
      calls.map((c) => c.function),
    );
    const answer = { ...base, logit_bias: { [tokenId("qwen2", "direct")]: 100 } };
    const t = await rPlus.client.chat.completions.create(answer as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.equal(t.choices[0]!.finish_reason === "tool_calls", false, JSON.stringify(t.choices[0]!.message));
    assert.equal(t.choices[0]!.message.tool_calls, undefined);
    const content = t.choices[0]!.message.content ?? "";
    assert.ok(!content.includes("directly-answer") && !content.startsWith("Answer:"), content);
    assert.ok(t.usage!.completion_tokens > 20, "the action is generated, not prefilled");
    assert.equal((await streamed(rPlus, answer)).content, content);
    // A structured answer (and any other that is not an auto tool reply) follows the action, prefilled.
    const json = {
      model: "qwen2",
      messages: [{ role: "user" as const, content: "A city?" }],
      max_tokens: 40,
      seed: 3,
      response_format: {
        type: "json_schema" as const,
        json_schema: { name: "c", schema: { type: "object", properties: { city: { enum: ["Oslo", "Rome"] } }, required: ["city"] } },
      },
    };
    const prompt = prepareChat(rPlus.engine, testConfig(), json as never, "max_tokens").rendered.text;
    assert.ok(
      prompt.endsWith(
        '<|CHATBOT_TOKEN|>\nAction:\n```json\n[\n    {\n        "tool_name": "directly-answer",\n        "parameters": {}\n    }\n]```\nAnswer: ',
      ),
      prompt.slice(-200),
    );
    const j = await rPlus.client.chat.completions.create(json as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.ok(["Oslo", "Rome"].includes((JSON.parse(j.choices[0]!.message.content ?? "") as { city: string }).city));
    // A function named as the template's own action is a 400 naming it.
    const named = { ...tools[0]!, function: { ...tools[0]!.function, name: "directly-answer" } };
    await assert.rejects(
      rPlus.client.chat.completions.create({ ...base, tools: [named] } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming),
      (e: unknown) => (e as { status?: number }).status === 400 && /directly-answer/.test(String((e as Error).message)),
    );
  });

  test("GigaChat 3 and 3.1: text, then one call (its own message, or after <|function_call|>), whole and streamed", async () => {
    for (const [chat, style, opens] of [
      [gigachat, "gigachat3", "151900"],
      [gigachat31, "gigachat3.1", "151902"],
    ] as const) {
      assert.equal(chat.engine.toolCallStyle, style);
      const request = {
        model: "qwen2",
        messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
        tools: [WEATHER],
        max_tokens: 100,
        seed: 19,
        // The separator, and not the end of the generation right after it (GigaChat 3's text may end
        // there): qwen2's end-of-generation tokens, <|endoftext|>, <|im_end|> and its text "</s>".
        logit_bias: { [opens]: 100, "151643": -100, "151645": -100, "128247": -100 },
      };
      const r = await chat.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      assert.equal(r.choices[0]!.finish_reason, "tool_calls", `${style}: ${JSON.stringify(r.choices[0]!.message)}`);
      const calls = (r.choices[0]!.message.tool_calls ?? []) as { function: Fn }[];
      assert.equal(calls.length, 1);
      assertWeather(calls[0]!.function);
      const s = await streamed(chat, request);
      assert.deepEqual(
        s.calls,
        calls.map((c) => c.function),
      );
      assert.equal(s.content, r.choices[0]!.message.content ?? "");
      for (const marker of Object.values(GIGACHAT_MARKERS)) assert.ok(!s.content.includes(marker), s.content);
    }
  });

  test("Kimi-K3: thinking in its think tag, then the response's text and typed XTML calls, whole and streamed", async () => {
    assert.equal(kimiK3.engine.toolCallStyle, "kimi-k3");
    const message = (r: OpenAI.Chat.Completions.ChatCompletion) =>
      r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
    // <|close|> ends the text; then <|open|> (the block of calls) rather than the message's close.
    const request = {
      model: "qwen2",
      messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
      tools: [WEATHER],
      max_tokens: 150,
      seed: 23,
      reasoning_effort: "low",
      logit_bias: { "151900": 100, "151901": 50 },
    };
    const r = await kimiK3.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.equal(r.choices[0]!.finish_reason, "tool_calls", JSON.stringify(message(r)));
    assert.equal(typeof message(r).reasoning_content, "string");
    const calls = (message(r).tool_calls ?? []) as { function: Fn }[];
    assert.ok(calls.length >= 1);
    for (const c of calls) assertWeather(c.function);
    const s = await streamed(kimiK3, request);
    assert.deepEqual(
      s.calls,
      calls.map((c) => c.function),
    );
    assert.equal(s.content, message(r).content ?? "");
    // Thinking off: the prompt opens the response; the text comes without tags.
    const text = { ...request, reasoning_effort: "none", logit_bias: { "151901": 100 } };
    const t = await kimiK3.client.chat.completions.create(text as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.equal(message(t).reasoning_content, undefined);
    assert.equal(t.choices[0]!.message.tool_calls, undefined);
    const content = message(t).content ?? "";
    for (const marker of Object.values(KIMI_K3_MARKERS)) assert.ok(!content.includes(marker), content);
    assert.equal((await streamed(kimiK3, text)).content, content);
    // reasoning_effort reaches the template as its thinking_effort words (its default is max).
    const prepared = (extra: Record<string, unknown>) =>
      prepareChat(kimiK3.engine, testConfig(), { model: "m", messages: [{ role: "user", content: "hi" }], ...extra } as never, "max_tokens")
        .rendered.text;
    assert.ok(prepared({ reasoning_effort: "minimal" }).includes("thinking_effort=low"));
    assert.ok(prepared({ reasoning_effort: "medium" }).includes("thinking_effort=high"));
    assert.ok(prepared({ reasoning_effort: "xhigh" }).includes("thinking_effort=max"));
    assert.ok(prepared({}).includes("thinking_effort=max"));
    assert.ok(prepared({ reasoning_effort: "none" }).endsWith("<|open|>response<|sep|>"));
  });

  test("Muse: reasoning as a message to itself (asked, or as the model chooses), then text to the user or ATEM calls, whole and streamed", async () => {
    assert.equal(muse.engine.toolCallStyle, "muse");
    const kinds = new Set<string>();
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      // <|eom|> ends the reasoning at once, and lets a call be followed by another; asked, it reasons.
      const request = {
        model: "qwen2",
        messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
        tools: [WEATHER],
        max_tokens: 120,
        seed,
        reasoning_effort: "low",
        logit_bias: { "151900": 100 },
      };
      const r = await muse.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      const message = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
      assert.equal(typeof message.reasoning_content, "string");
      const calls = (message.tool_calls ?? []) as { function: Fn }[];
      if (calls.length > 0) {
        kinds.add("call");
        assert.equal(r.choices[0]!.finish_reason, "tool_calls");
        assert.equal(message.content, null);
        for (const c of calls) assertWeather(c.function);
      } else {
        kinds.add("text");
        for (const marker of [...Object.values(MUSE_MARKERS), "to=user"])
          assert.ok(!(message.content ?? "").includes(marker), message.content ?? "");
      }
      const s = await streamed(muse, request);
      assert.deepEqual(
        s.calls,
        calls.map((c) => c.function),
      );
      assert.equal(s.content, message.content ?? "");
    }
    assert.deepEqual([...kinds].sort(), ["call", "text"], "both kinds of reply come up");
    // Unasked, the model decides after ` to`: "=self" (qwen2's 7667, or "=" then "self", 721) is
    // its message to itself, "=user" (30164, 872) the text without one; with tools, or without.
    for (const tools of [[WEATHER], undefined]) {
      const self: Record<string, number> = { "7667": 100, "721": 100, "151900": 100 };
      const user: Record<string, number> = { "30164": 100, "872": 100 };
      for (const [bias, reasons, effort] of [
        [self, true, undefined],
        [user, false, undefined],
        // "none": no message to itself, however pushed.
        [self, false, "none"],
      ] as const) {
        const request = {
          model: "qwen2",
          messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
          ...(tools ? { tools } : {}),
          ...(effort ? { reasoning_effort: effort } : {}),
          max_tokens: 60,
          seed: 3,
          logit_bias: bias,
        };
        const r = await muse.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
        const message = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
        assert.equal(typeof message.reasoning_content === "string", reasons, JSON.stringify(message));
        assert.equal((r as { warnings?: unknown }).warnings, undefined, "none is honoured: no warning");
        assert.equal(message.tool_calls, undefined);
        for (const marker of [...Object.values(MUSE_MARKERS), "to=user", "to=self"])
          assert.ok(!(message.content ?? "").includes(marker), message.content ?? "");
        const s = await streamed(muse, request);
        assert.equal(s.content, message.content ?? "");
      }
    }
  });

  test("Gemma 4: calls in its own notation, parsed for the SDK as JSON, whole and streamed, after its thought channel or without", async () => {
    const callToken = tokenId("gemma-4", "<|tool_call>");
    for (const effort of ["none", "low"] as const) {
      const request = {
        model: "gemma-4",
        messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
        tools: [WEATHER],
        max_tokens: 100,
        seed: 13,
        reasoning_effort: effort,
        reasoning_budget: effort === "none" ? undefined : 12,
        logit_bias: { [String(callToken)]: 100 },
      };
      const r = await gemma.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      const message = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
      assert.equal(r.choices[0]!.finish_reason, "tool_calls", JSON.stringify(message));
      assert.equal(message.reasoning_content === undefined, effort === "none");
      const calls = (message.tool_calls ?? []) as { function: Fn }[];
      assert.ok(calls.length >= 1);
      for (const c of calls) assertWeather(c.function);
      const s = await streamed(gemma, request);
      assert.deepEqual(
        s.calls,
        calls.map((c) => c.function),
      );
    }
  });

  test("LFM2.5: Python calls between its control tokens, parsed for the SDK as JSON, whole and streamed", async () => {
    const request = {
      model: "qwen2",
      messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
      tools: [WEATHER],
      max_tokens: 100,
      seed: 17,
      // LFM2.5 always thinks (its template has no switch): a short section, then the call.
      reasoning_budget: 12,
      logit_bias: { "151900": 100 },
    };
    const r = await lfm.client.chat.completions.create(request as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.equal(r.choices[0]!.finish_reason, "tool_calls", JSON.stringify(r.choices[0]));
    const calls = (r.choices[0]!.message.tool_calls ?? []) as { function: Fn }[];
    assert.ok(calls.length >= 1);
    for (const c of calls) assertWeather(c.function);
    const s = await streamed(lfm, request);
    assert.deepEqual(
      s.calls,
      calls.map((c) => c.function),
    );
    const plain = await lfm.client.chat.completions.create({
      ...request,
      logit_bias: undefined,
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
    assert.ok(!(plain.choices[0]!.message.content ?? "").includes("<|tool_call_start|>"));
  });
});
