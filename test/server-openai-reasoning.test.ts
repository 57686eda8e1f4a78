/**
 * Reasoning models through Chat Completions, on synthetic models that carry real templates (random
 * weights, the real Qwen2 and Llama 3 tokenizers): Qwen3's `<think>` section (the model opens it)
 * and DeepSeek-R1's (the prompt opens it). The reasoning comes back as `reasoning_content`, the
 * answer alone as `content` or tool calls, valid and complete under every budget that fits; the
 * reasoning is bounded by reasoning_effort / reasoning_budget and closed by the mask when the
 * budget needs it; `reasoning_effort: "none"` renders the template's empty section; streamed
 * deltas carry the same split — through the openai SDK. An earlier turn's reasoning sent back
 * (`reasoning_content`, or vLLM's `reasoning`) reaches the prompt where the template puts it, is
 * a warning where the template never reads it, and counts in the prompt's character cap.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import OpenAI from "openai";
import { REPO_ROOT } from "./support/paths.js";
import { serveSyntheticChat, stopSyntheticChat, type SyntheticChat } from "./support/synthetic-chat.js";
import { testConfig } from "./support/fake-engine.js";
import { prepareChat } from "../src/server/openai/engine-request.js";

const _TEMPLATES = resolve(REPO_ROOT, "..", "shared", "chat-templates");

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, rain: { type: "boolean" } },
  required: ["city", "rain"],
  additionalProperties: false,
} as const;

function validAnswer(text: string | null | undefined): void {
  const value = JSON.parse(text ?? "") as { city: unknown; rain: unknown };
  assert.equal(typeof value.city, "string");
  assert.ok([...(value.city as string)].length <= 12, `${JSON.stringify(value.city)}: maxLength counts code points`);
  assert.equal(typeof value.rain, "boolean");
  assert.deepEqual(Object.keys(value).sort(), ["city", "rain"]);
}

type Message = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };

/**
 * gpt-oss's o200k_harmony markers put on six of qwen2's padding tokens, as its GGUFs have them:
 * control tokens, of which llama.cpp renders <|channel|>, <|message|>, <|start|> and (beside
 * <|return|> and <|call|>, which end the generation) <|end|> as text, so they are text here too.
 */
const HARMONY_MARKERS = {
  151900: "<|channel|>",
  151901: "<|message|>",
  151902: "<|end|>",
  151903: "<|start|>",
  151904: "<|return|>",
  151905: "<|call|>",
} as const;

describe("reasoning models (synthetic, real templates)", () => {
  let dir: string;
  let qwen3: SyntheticChat;
  let r1: SyntheticChat;
  let gemma4: SyntheticChat;
  let apriel: SyntheticChat;
  let gptOss: SyntheticChat;
  let minimax: SyntheticChat;
  let hunyuan: SyntheticChat;
  let apriel15: SyntheticChat;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "trellis-reasoning-"));
    qwen3 = await serveSyntheticChat(dir, "qwen2", "Qwen-Qwen3-0.6B.jinja", 400);
    r1 = await serveSyntheticChat(dir, "llama-bpe", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", 400);
    gemma4 = await serveSyntheticChat(dir, "gemma-4", "google-gemma-4-31B-it.jinja", 400);
    const aprielDir = join(dir, "apriel");
    mkdirSync(aprielDir);
    apriel = await serveSyntheticChat(aprielDir, "qwen2", "Apriel-1.6-15b-Thinker-fixed.jinja", 400);
    // gpt-oss: its harmony markers on qwen2's vocabulary.
    const gptOssDir = join(dir, "gpt-oss");
    mkdirSync(gptOssDir);
    gptOss = await serveSyntheticChat(gptOssDir, "qwen2", "openai-gpt-oss-120b.jinja", 400, HARMONY_MARKERS);
    const minimaxDir = join(dir, "minimax");
    mkdirSync(minimaxDir);
    minimax = await serveSyntheticChat(minimaxDir, "qwen2", "MiniMax-M3.jinja", 400);
    const hunyuanDir = join(dir, "hunyuan");
    mkdirSync(hunyuanDir);
    hunyuan = await serveSyntheticChat(hunyuanDir, "qwen2", "tencent-Hy3.jinja", 400);
    const apriel15Dir = join(dir, "apriel-1.5");
    mkdirSync(apriel15Dir);
    apriel15 = await serveSyntheticChat(apriel15Dir, "qwen2", "unsloth-Apriel-1.5.jinja", 400);
  });

  after(async () => {
    await stopSyntheticChat(qwen3);
    await stopSyntheticChat(r1);
    await stopSyntheticChat(gemma4);
    await stopSyntheticChat(apriel);
    await stopSyntheticChat(gptOss);
    await stopSyntheticChat(minimax);
    await stopSyntheticChat(hunyuan);
    await stopSyntheticChat(apriel15);
    rmSync(dir, { recursive: true, force: true });
  });

  const ask = (s: SyntheticChat, extra: Record<string, unknown>) =>
    s.client.chat.completions.create({
      model: s.engine.modelId ?? "",
      messages: [{ role: "user", content: "Weather?" }],
      response_format: { type: "json_schema", json_schema: { name: "w", schema: SCHEMA, strict: true } },
      ...extra,
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);

  test("Apriel 1.5 reasons from the start of its turn up to [BEGIN FINAL RESPONSE]; a free-text answer stops at [END FINAL RESPONSE]", () => {
    assert.deepEqual(apriel15.engine.reasoningFormat, {
      open: "",
      close: "[BEGIN FINAL RESPONSE]",
      preOpened: true,
      toggle: null,
      answerEnd: "[END FINAL RESPONSE]",
    });
    const body = { model: "m", messages: [{ role: "user" as const, content: "Weather?" }], max_tokens: 60 };
    const prepared = (extra: Record<string, unknown>) =>
      prepareChat(apriel15.engine, testConfig(), { ...body, ...extra } as never, "max_tokens");
    assert.deepEqual(prepared({}).base.stop, ["[END FINAL RESPONSE]"]);
    assert.deepEqual(prepared({ stop: "STOP" }).base.stop, ["STOP", "[END FINAL RESPONSE]"]);
    // A structured answer ends when it is complete; another model's free text gets no such stop.
    assert.deepEqual(prepared({ response_format: { type: "json_object" } }).base.stop, []);
    assert.deepEqual(prepareChat(qwen3.engine, testConfig(), body as never, "max_tokens").base.stop, []);
  });

  test("the families recognised from their templates", () => {
    assert.deepEqual(qwen3.engine.reasoningFormat, { open: "<think>", close: "</think>", preOpened: false, toggle: "enable_thinking" });
    assert.deepEqual(r1.engine.reasoningFormat, { open: "<think>", close: "</think>", preOpened: true, toggle: null });
    assert.deepEqual(gemma4.engine.reasoningFormat, {
      open: "<|channel>thought\n",
      close: "<channel|>",
      preOpened: false,
      toggle: "enable_thinking",
    });
    assert.equal(apriel.engine.reasoningFormat?.close, "\n[BEGIN FINAL RESPONSE]\n");
    assert.equal(gptOss.engine.reasoningFormat?.close, "<|end|><|start|>assistant<|channel|>final<|message|>");
  });

  test("structured output after reasoning: reasoning_content apart, content valid, within max_tokens", async () => {
    for (const s of [qwen3, r1, gemma4, apriel, gptOss, apriel15]) {
      for (const [maxTokens, budget, seed] of [
        [120, 40, 1],
        [120, undefined, 2],
        [60, undefined, 3],
      ] as const) {
        const r = await ask(s, { max_tokens: maxTokens, seed, ...(budget ? { reasoning_budget: budget } : {}) });
        const message = r.choices[0]!.message as Message;
        validAnswer(message.content);
        assert.equal(typeof message.reasoning_content, "string");
        assert.ok(!message.reasoning_content!.includes(s.engine.reasoningFormat!.close));
        assert.ok(r.usage!.completion_tokens <= maxTokens, `${r.usage!.completion_tokens} > ${maxTokens}`);
        assert.equal(r.choices[0]!.finish_reason, "stop");
        // Of the completion tokens, the reasoning's (its markers included), as OpenAI reports them.
        const reasoningTokens = r.usage!.completion_tokens_details?.reasoning_tokens ?? -1;
        assert.ok(reasoningTokens >= 1 && reasoningTokens < r.usage!.completion_tokens, JSON.stringify(r.usage));
        if (budget) assert.ok(reasoningTokens <= budget, `${reasoningTokens} > ${budget}`);
      }
    }
  });

  test('MiniMax-M3: asked to reason, "enabled" opens the section; unasked, its "adaptive" default lets the model decide; "none" sets "disabled"', async () => {
    const render = (thinking_mode?: string) =>
      minimax.engine.renderChat!({
        messages: [{ role: "user", content: "Weather?" }],
        addGenerationPrompt: true,
        ...(thinking_mode ? { variables: { thinking_mode } } : {}),
      });
    // Unasked: the template's default, no section opened; the model's first token decides. qwen2's
    // tokens that begin <mm:think> are "<" and "<m": pushed up, the model reasons; pushed down, it answers.
    const opening = { "27": 100, "13748": 100 };
    const adaptive = render();
    assert.ok(adaptive.text.includes("Current thinking mode: adaptive") && adaptive.text.endsWith("ai\n"), adaptive.text.slice(-80));
    for (const [bias, reasons] of [
      [opening, true],
      [{ "27": -100, "13748": -100 }, false],
    ] as const) {
      const r = await ask(minimax, { max_tokens: 80, seed: 8, logit_bias: bias });
      validAnswer(r.choices[0]!.message.content);
      const message = r.choices[0]!.message as Message;
      assert.equal(typeof message.reasoning_content === "string", reasons, JSON.stringify(message));
      assert.equal(r.usage!.prompt_tokens, adaptive.tokens.length);
      assert.equal((r.usage!.completion_tokens_details?.reasoning_tokens ?? 0) > 0, reasons);
      // Streamed, the same split (held back while the text may still open the section).
      const stream = await minimax.client.chat.completions.create({
        model: minimax.engine.modelId ?? "",
        messages: [{ role: "user", content: "Weather?" }],
        response_format: { type: "json_schema", json_schema: { name: "w", schema: SCHEMA, strict: true } },
        max_tokens: 80,
        seed: 8,
        logit_bias: bias,
        stream: true,
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
      let reasoning: string | undefined;
      let content = "";
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
        if (delta?.reasoning_content !== undefined) reasoning = (reasoning ?? "") + delta.reasoning_content;
        content += delta?.content ?? "";
      }
      assert.equal(content, message.content);
      assert.equal(reasoning, message.reasoning_content === "" ? undefined : message.reasoning_content);
    }
    // The Responses API (no logit_bias there): whichever the model chose, a reasoning item only when
    // it reasoned, the same streamed; over a few seeds, both come up.
    const kinds = new Set<string>();
    for (const seed of [1, 2, 3, 6]) {
      const responseRequest = {
        model: minimax.engine.modelId ?? "",
        input: "Weather?",
        max_output_tokens: 80,
        seed,
        text: { format: { type: "json_schema", name: "w", schema: SCHEMA, strict: true } },
      };
      const response = await minimax.client.responses.create(responseRequest as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      const items = response.output.map((item) => item.type);
      kinds.add(items.join(","));
      assert.ok(items.join(",") === "message" || items.join(",") === "reasoning,message", items.join(","));
      assert.equal(items[0] === "reasoning", (response.usage?.output_tokens_details.reasoning_tokens ?? 0) > 0);
      validAnswer(response.output_text);
      const events = await minimax.client.responses.create({
        ...responseRequest,
        stream: true,
      } as OpenAI.Responses.ResponseCreateParamsStreaming);
      const types: string[] = [];
      let streamedText = "";
      for await (const event of events) {
        if (event.type === "response.output_item.added") types.push(event.item.type);
        if (event.type === "response.output_text.delta") streamedText += event.delta;
      }
      assert.deepEqual(types, items);
      assert.equal(streamedText, response.output_text);
    }
    assert.equal(kinds.size, 2, [...kinds].join(" / "));
    const on = await ask(minimax, { max_tokens: 80, seed: 8, reasoning_budget: 20 });
    validAnswer(on.choices[0]!.message.content);
    assert.equal(typeof (on.choices[0]!.message as Message).reasoning_content, "string");
    assert.equal(on.usage!.prompt_tokens, render("enabled").tokens.length);
    assert.ok(render("enabled").text.endsWith("<mm:think>"));
    const off = await ask(minimax, { max_tokens: 80, seed: 8, reasoning_effort: "none" });
    validAnswer(off.choices[0]!.message.content);
    assert.equal((off.choices[0]!.message as Message).reasoning_content, undefined);
    assert.equal(off.usage!.prompt_tokens, render("disabled").tokens.length);
    assert.ok(render("disabled").text.endsWith("</mm:think>"));
  });

  test('Hunyuan 3: reasons only when asked, its reasoning_effort words set from the request\'s ("medium" is its "high")', async () => {
    const render = (reasoning_effort: string) =>
      hunyuan.engine.renderChat!({
        messages: [{ role: "user", content: "Weather?" }],
        addGenerationPrompt: true,
        variables: { reasoning_effort },
      });
    const unasked = await ask(hunyuan, { max_tokens: 80, seed: 9 });
    validAnswer(unasked.choices[0]!.message.content);
    assert.equal((unasked.choices[0]!.message as Message).reasoning_content, undefined);
    assert.equal(unasked.usage!.prompt_tokens, render("no_think").tokens.length);
    for (const [effort, word] of [
      ["medium", "high"],
      ["minimal", "low"],
    ] as const) {
      const r = await ask(hunyuan, { max_tokens: 120, seed: 9, reasoning_effort: effort, reasoning_budget: 20 });
      validAnswer(r.choices[0]!.message.content);
      assert.equal(typeof (r.choices[0]!.message as Message).reasoning_content, "string");
      assert.equal(r.usage!.prompt_tokens, render(word).tokens.length, effort);
    }
    const off = await ask(hunyuan, { max_tokens: 80, seed: 9, reasoning_effort: "none" });
    assert.equal((off.choices[0]!.message as Message).reasoning_content, undefined);
  });

  test("gpt-oss with tools on auto: reasoning, then the final channel's text or one valid call, whole and streamed", async () => {
    assert.equal(gptOss.engine.toolCallStyle, "harmony");
    const weather = {
      type: "function" as const,
      function: {
        name: "get_weather",
        description: "The weather in a city.", // gpt-oss's template needs one
        parameters: {
          type: "object",
          properties: { city: { type: "string", maxLength: 8 } },
          required: ["city"],
          additionalProperties: false,
        },
      },
    };
    const kinds = new Set<string>();
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const request = {
        model: gptOss.engine.modelId ?? "",
        messages: [{ role: "user" as const, content: "Weather in Oslo?" }],
        tools: [weather],
        max_tokens: 80,
        reasoning_budget: 12,
        seed,
      };
      const r = await gptOss.client.chat.completions.create(request);
      const message = r.choices[0]!.message as Message;
      assert.equal(typeof message.reasoning_content, "string");
      assert.ok(r.usage!.completion_tokens <= 80);
      for (const text of [message.content ?? "", message.reasoning_content!]) assert.ok(!text.includes("<|channel|>"), text);
      if (message.tool_calls) {
        kinds.add("call");
        assert.equal(r.choices[0]!.finish_reason, "tool_calls");
        assert.equal(message.tool_calls.length, 1);
        const fn = (message.tool_calls[0] as { function: { name: string; arguments: string } }).function;
        assert.equal(fn.name, "get_weather");
        assert.ok([...(JSON.parse(fn.arguments) as { city: string }).city].length <= 8);
      } else kinds.add("text");
      // Streamed: the same split.
      const stream = await gptOss.client.chat.completions.create({ ...request, stream: true });
      let content = "";
      let calls = 0;
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta?.content ?? "";
        calls += chunk.choices[0]?.delta?.tool_calls?.length ?? 0;
      }
      assert.equal(calls, message.tool_calls?.length ?? 0);
      assert.equal(content, message.content ?? "");
    }
    assert.deepEqual([...kinds].sort(), ["call", "text"], "both kinds of reply come up");
  });

  test("reasoning_effort reaches templates that read it: gpt-oss's system prompt says it", async () => {
    const render = (variables?: Record<string, string>) =>
      gptOss.engine.renderChat!({
        messages: [{ role: "user", content: "Weather?" }],
        addGenerationPrompt: true,
        ...(variables ? { variables } : {}),
      });
    assert.ok(render({ reasoning_effort: "low" }).text.includes("Reasoning: low"));
    assert.ok(render().text.includes("Reasoning: medium"), "the template's default");
    // What a request renders (the route's own preparation), then the request itself.
    const body = { model: "m", messages: [{ role: "user" as const, content: "Weather?" }], max_tokens: 60 };
    const prepared = (extra: Record<string, unknown>) =>
      prepareChat(gptOss.engine, testConfig(), { ...body, ...extra } as never, "max_tokens");
    assert.ok(prepared({ reasoning_effort: "low" }).rendered.text.includes("Reasoning: low"));
    assert.ok(prepared({}).rendered.text.includes("Reasoning: medium"));
    assert.ok(prepared({ reasoning_effort: "high" }).rendered.text.includes("Reasoning: high"));
    const low = await ask(gptOss, { max_tokens: 60, seed: 6, reasoning_effort: "low" });
    validAnswer(low.choices[0]!.message.content);
  });

  test("a budget too small for the section and the answer is refused up front, naming max_tokens", async () => {
    await assert.rejects(
      ask(r1, { max_tokens: 3 }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 400 && /max_tokens/.test(e.message),
    );
    await assert.rejects(
      ask(r1, { max_tokens: 200, reasoning_budget: 1 }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 400,
    );
  });

  test('reasoning_effort "none": the template writes its empty section, no reasoning_content', async () => {
    const on = qwen3.engine.renderChat!({
      messages: [{ role: "user", content: "Weather?" }],
      addGenerationPrompt: true,
      variables: { enable_thinking: true },
    });
    const off = qwen3.engine.renderChat!({
      messages: [{ role: "user", content: "Weather?" }],
      addGenerationPrompt: true,
      variables: { enable_thinking: false },
    });
    assert.ok(off.text.trimEnd().endsWith("</think>"));
    const r = await ask(qwen3, { max_tokens: 60, seed: 4, reasoning_effort: "none" });
    const message = r.choices[0]!.message as Message;
    validAnswer(message.content);
    assert.equal(message.reasoning_content, undefined);
    assert.equal(r.usage!.completion_tokens_details, undefined, "no section, no reasoning tokens counted");
    assert.equal(r.usage!.prompt_tokens, off.tokens.length);
    assert.notEqual(on.tokens.length, off.tokens.length);
    // R1's template cannot turn it off: it reasons, and says so.
    const r1Answer = (await ask(r1, { max_tokens: 60, seed: 4, reasoning_effort: "none" })) as unknown as {
      warnings?: { keyword: string }[];
      choices: { message: Message }[];
    };
    assert.equal(typeof r1Answer.choices[0]!.message.reasoning_content, "string");
    assert.ok(r1Answer.warnings?.some((w) => w.keyword === "reasoning_effort"));
    // Gemma 4's switch writes its empty thought channel.
    const gemmaOff = await ask(gemma4, { max_tokens: 60, seed: 4, reasoning_effort: "none" });
    validAnswer(gemmaOff.choices[0]!.message.content);
    assert.equal((gemmaOff.choices[0]!.message as Message).reasoning_content, undefined);
  });

  test("reasoning_effort minimal bounds the reasoning", async () => {
    const r = await ask(qwen3, { max_tokens: 400, seed: 5, reasoning_effort: "minimal" });
    assert.ok(r.usage!.completion_tokens <= 256 + 40, String(r.usage!.completion_tokens));
    validAnswer(r.choices[0]!.message.content);
  });

  test("streamed: reasoning_content deltas, then content deltas that make the same valid answer", async () => {
    const params = {
      model: qwen3.engine.modelId ?? "",
      messages: [{ role: "user" as const, content: "Weather?" }],
      response_format: { type: "json_schema" as const, json_schema: { name: "w", schema: SCHEMA, strict: true } },
      max_tokens: 80,
      seed: 6,
      reasoning_budget: 30,
    };
    const wholeAnswer = await qwen3.client.chat.completions.create(
      params as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming,
    );
    const whole = wholeAnswer.choices[0]!.message as Message;
    const stream = await qwen3.client.chat.completions.create({
      ...params,
      stream: true,
      stream_options: { include_usage: true },
    } as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming);
    let reasoning = "";
    let content = "";
    let sawContentBeforeReasoningEnded = false;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      usage = chunk.usage ?? usage;
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content) {
        if (content.length > 0) sawContentBeforeReasoningEnded = true;
        reasoning += delta.reasoning_content;
      }
      if (delta?.content) content += delta.content;
    }
    assert.equal(sawContentBeforeReasoningEnded, false);
    validAnswer(content);
    assert.equal(content, whole.content);
    assert.equal(reasoning, whole.reasoning_content);
    assert.deepEqual(usage?.completion_tokens_details, wholeAnswer.usage!.completion_tokens_details);
    assert.ok((usage?.completion_tokens_details?.reasoning_tokens ?? 0) >= 1);
  });

  describe("an earlier turn's reasoning, sent back", () => {
    const REASONING = "It may rain in Oslo today, so say so.";
    // A tool loop: the assistant turn carrying the reasoning comes after the last user query.
    const conversation = (reasoning: Record<string, unknown> = {}) => [
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }],
        ...reasoning,
      },
      { role: "tool", tool_call_id: "c1", content: '{"rain": true}' },
    ];
    /** Tokens of the prompt the template renders for that conversation (as prepareChat renders it). */
    const renderedTokens = (s: SyntheticChat, reasoning?: string): number =>
      s.engine.renderChat!({
        messages: [
          { role: "user", content: "Weather in Oslo?" },
          {
            role: "assistant",
            content: "",
            tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: { city: "Oslo" } } }],
            ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}),
          },
          { role: "tool", content: '{"rain": true}', tool_call_id: "c1" },
        ],
        addGenerationPrompt: true,
        ...(s.engine.reasoningFormat?.toggle ? { variables: { [s.engine.reasoningFormat.toggle]: true } } : {}),
      }).tokens.length;
    const send = (s: SyntheticChat, messages: unknown[]) =>
      s.client.chat.completions.create({
        model: s.engine.modelId ?? "",
        messages,
        max_tokens: 12,
        seed: 7,
      } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming) as Promise<
        OpenAI.Chat.Completions.ChatCompletion & { warnings?: { keyword: string; message: string }[] }
      >;
    const refusedNaming = async (s: SyntheticChat, messages: unknown[], param: string, message: RegExp) => {
      await assert.rejects(send(s, messages), (e: unknown) => {
        assert.ok(e instanceof OpenAI.APIError, String(e));
        assert.equal(e.status, 400);
        assert.equal(e.param, param);
        assert.match(e.message, message);
        return true;
      });
    };

    test("reasoning_content (or vLLM's reasoning) reaches the prompt where Qwen3's template puts it", async () => {
      assert.notEqual(renderedTokens(qwen3, REASONING), renderedTokens(qwen3));
      for (const field of ["reasoning_content", "reasoning"]) {
        const r = await send(qwen3, conversation({ [field]: REASONING }));
        assert.equal(r.usage!.prompt_tokens, renderedTokens(qwen3, REASONING), field);
        assert.deepEqual(r.warnings ?? [], [], field);
      }
      // null is no reasoning; both names with the same text are one reasoning.
      assert.equal((await send(qwen3, conversation({ reasoning_content: null }))).usage!.prompt_tokens, renderedTokens(qwen3));
      const both = await send(qwen3, conversation({ reasoning_content: REASONING, reasoning: REASONING }));
      assert.equal(both.usage!.prompt_tokens, renderedTokens(qwen3, REASONING));
    });

    test("a template that never reads it (DeepSeek-R1's): accepted, with a warning naming the field", async () => {
      const r = await send(r1, conversation({ reasoning_content: REASONING }));
      assert.equal(r.usage!.prompt_tokens, renderedTokens(r1));
      const warned = (r.warnings ?? []).filter((w) => w.keyword === "messages[1].reasoning_content");
      assert.equal(warned.length, 1, JSON.stringify(r.warnings));
      assert.match(warned[0]!.message, /never reads earlier reasoning/);
      const alias = await send(r1, conversation({ reasoning: REASONING }));
      assert.ok(
        (alias.warnings ?? []).some((w) => w.keyword === "messages[1].reasoning"),
        JSON.stringify(alias.warnings),
      );
    });

    test("bounded with the messages' text, refused by name: too long, on another role, two names that differ", async () => {
      // TRELLIS_MAX_PROMPT_CHARS is 32768 here: the reasoning is what crosses it.
      await refusedNaming(
        qwen3,
        conversation({ reasoning_content: "x".repeat(32_768) }),
        "messages[1].reasoning_content",
        /longer than 32768 characters in all \(TRELLIS_MAX_PROMPT_CHARS\)/,
      );
      await refusedNaming(
        qwen3,
        [{ role: "user", content: "hi", reasoning_content: "no" }],
        "messages[0].reasoning_content",
        /only assistant messages/,
      );
      await refusedNaming(qwen3, conversation({ reasoning_content: REASONING, reasoning: "other" }), "messages[1].reasoning", /differ/);
    });
  });
});
