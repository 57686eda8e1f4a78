/**
 * The Responses API on reasoning models (synthetic models carrying Qwen3's and DeepSeek-R1's real
 * templates), through the official openai SDK: the section comes back as a reasoning item before
 * the answer (its text in `content`, its tokens in `reasoning_tokens`), streamed as reasoning_text
 * deltas in OpenAI's event order; a reasoning item sent back in `input`, named by item_reference or
 * carried by previous_response_id is the next turn's earlier reasoning, where the template puts
 * it; what cannot be rendered (a summary, encrypted content, a template that never reads it, a
 * reasoning item no assistant turn follows) is accepted with a warning naming it.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import type { ChatMessage } from "../src/prompt/index.js";
import { ReasoningTokenCount } from "../src/server/openai/responses-stream.js";
import { serveSyntheticChat, stopSyntheticChat, type SyntheticChat } from "./support/synthetic-chat.js";

type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming;
type Response = OpenAI.Responses.Response & { warnings?: { keyword: string; message: string }[] };

const SCHEMA = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, rain: { type: "boolean" } },
  required: ["city", "rain"],
  additionalProperties: false,
} as const;
const FORMAT = { format: { type: "json_schema" as const, name: "w", schema: SCHEMA, strict: true } };
const WEATHER = {
  type: "function" as const,
  name: "weather",
  parameters: { type: "object", properties: { city: { type: "string", maxLength: 8 } }, required: ["city"], additionalProperties: false },
  strict: true,
};
const REASONING = "It may rain in Oslo today, so say so.";

function reasoningOf(r: OpenAI.Responses.Response): OpenAI.Responses.ResponseReasoningItem {
  const item = r.output[0]!;
  assert.equal(item.type, "reasoning");
  return item as OpenAI.Responses.ResponseReasoningItem;
}

const textOf = (item: OpenAI.Responses.ResponseReasoningItem): string => (item.content ?? []).map((c) => c.text).join("");

describe("Responses API: reasoning items (synthetic reasoning models)", () => {
  let dir: string;
  let qwen3: SyntheticChat;
  let r1: SyntheticChat;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "trellis-reasoning-responses-"));
    qwen3 = await serveSyntheticChat(dir, "qwen2", "Qwen-Qwen3-0.6B.jinja", 400);
    r1 = await serveSyntheticChat(dir, "llama-bpe", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", 400);
  });

  after(async () => {
    await stopSyntheticChat(qwen3);
    await stopSyntheticChat(r1);
    rmSync(dir, { recursive: true, force: true });
  });

  const create = (s: SyntheticChat, params: Partial<Params> | Record<string, unknown>) =>
    s.client.responses.create({
      model: s.engine.modelId ?? "",
      input: "Weather?",
      max_output_tokens: 60,
      ...params,
    } as Params) as Promise<Response>;

  /** Tokens of the prompt the template renders for a tool loop whose call carries `reasoning` (as prepareChat renders it). */
  const toolLoopTokens = (s: SyntheticChat, reasoning: string | undefined, args: unknown = { city: "Oslo" }, callId = "c1"): number => {
    const messages: ChatMessage[] = [
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: callId, type: "function", function: { name: "weather", arguments: args } }],
        ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}),
      },
      { role: "tool", content: '{"rain": true}', tool_call_id: callId },
    ];
    const toggle = s.engine.reasoningFormat?.toggle;
    return s.engine.renderChat!({ messages, addGenerationPrompt: true, ...(toggle ? { variables: { [toggle]: true } } : {}) }).tokens
      .length;
  };
  const toolLoopInput = (reasoning: Record<string, unknown> | null) => [
    { role: "user", content: "Weather in Oslo?" },
    ...(reasoning ? [{ type: "reasoning", summary: [], ...reasoning }] : []),
    { type: "function_call", call_id: "c1", name: "weather", arguments: '{"city":"Oslo"}' },
    { type: "function_call_output", call_id: "c1", output: '{"rain": true}' },
  ];

  test("a reasoning item before the message, its tokens counted; the same reasoning as Chat Completions'", async () => {
    const r = await create(qwen3, { text: FORMAT, seed: 1 });
    assert.equal(r.output.length, 2);
    const item = reasoningOf(r);
    assert.match(item.id, /^rs_[0-9a-f]{24}_0$/);
    assert.deepEqual(item.summary, []);
    assert.equal(item.status, "completed");
    assert.equal(item.content?.length, 1);
    assert.equal(item.content![0]!.type, "reasoning_text");
    assert.equal(item.encrypted_content, undefined);
    assert.ok(!textOf(item).includes("</think>"));
    const message = r.output[1]!;
    assert.ok(message.type === "message");
    const answer = JSON.parse(r.output_text) as { city: string; rain: boolean };
    assert.equal(typeof answer.rain, "boolean");
    assert.ok(!r.output_text.includes("</think>"));

    // Chat Completions, same conversation and seed, with logprobs: its tokens up to the closing marker are the reasoning's.
    const chat = await qwen3.client.chat.completions.create({
      model: qwen3.engine.modelId ?? "",
      messages: [{ role: "user", content: "Weather?" }],
      max_tokens: 60,
      seed: 1,
      response_format: { type: "json_schema", json_schema: { name: "w", schema: SCHEMA, strict: true } },
      logprobs: true,
    });
    const chatMessage = chat.choices[0]!.message as (typeof chat.choices)[0]["message"] & { reasoning_content?: string };
    assert.equal(textOf(item), chatMessage.reasoning_content);
    const tokens = chat.choices[0]!.logprobs!.content!;
    let text = "";
    const closedAt = tokens.findIndex((t) => (text += Buffer.from(t.bytes!).toString("latin1")).includes("</think>"));
    assert.ok(closedAt >= 0);
    assert.equal(r.usage!.output_tokens_details.reasoning_tokens, closedAt + 1);
    assert.ok(r.usage!.output_tokens_details.reasoning_tokens < r.usage!.output_tokens);
  });

  test("the token count of a section whose closing marker is split across tokens, several tokens to a piece", () => {
    const bytes = (text: string) => ({ id: 0, bytes: new TextEncoder().encode(text) });
    const count = new ReasoningTokenCount("</think>");
    count.push([bytes("Hm"), bytes(" <")]);
    count.push([bytes("/th"), bytes("ink"), bytes(">"), bytes("{")]);
    count.push([bytes("}")]);
    assert.equal(count.count, 5);
    assert.equal(count.closed, true);
    const open = new ReasoningTokenCount("</think>");
    open.push([bytes("</thin"), bytes("k"), bytes(" >")]);
    assert.deepEqual([open.count, open.closed], [3, false]);
  });

  test("streamed through the SDK: the reasoning item's events first, its deltas its text, then the message's", async () => {
    const params = { model: qwen3.engine.modelId ?? "", input: "Weather?", max_output_tokens: 60, seed: 2, text: FORMAT };
    const whole = await create(qwen3, params);
    const stream = qwen3.client.responses.stream(params);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    const types = events.map((e) => e.type);
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      types.map((_, i) => i),
    );
    const deltas = types.filter((t) => t === "response.reasoning_text.delta").length;
    assert.ok(deltas > 1, `${deltas} reasoning deltas`);
    const answerDeltas = types.filter((t) => t === "response.output_text.delta").length;
    assert.deepEqual(types, [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...Array<string>(deltas).fill("response.reasoning_text.delta"),
      "response.reasoning_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      ...Array<string>(answerDeltas).fill("response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const at = (type: string) => events.filter((e) => e.type === type) as unknown as Record<string, unknown>[];
    const [added, doneItem] = [at("response.output_item.added"), at("response.output_item.done")];
    assert.deepEqual(
      added.map((e) => [(e.item as { type: string }).type, e.output_index]),
      [
        ["reasoning", 0],
        ["message", 1],
      ],
    );
    // (The SDK accumulates its snapshot into the events' own objects: only their types are checked here.)
    assert.equal((at("response.content_part.added")[0]!.part as { type: string }).type, "reasoning_text");
    const reasoningDeltas = at("response.reasoning_text.delta");
    assert.ok(
      reasoningDeltas.every((e) => e.output_index === 0 && e.content_index === 0 && e.item_id === (doneItem[0]!.item as { id: string }).id),
    );
    const streamed = reasoningDeltas.map((e) => e.delta as string).join("");
    assert.equal(at("response.reasoning_text.done")[0]!.text, streamed);
    assert.equal(textOf(doneItem[0]!.item as OpenAI.Responses.ResponseReasoningItem), streamed);
    // The stream's reasoning and answer are the JSON answer's, and the SDK's accumulated response has both.
    assert.equal(streamed, textOf(reasoningOf(whole)));
    assert.equal(textOf(reasoningOf(final)), streamed);
    const answer = final.output[1]!;
    assert.ok(answer.type === "message" && answer.content[0]!.type === "output_text");
    assert.equal(answer.content[0]!.text, whole.output_text);
    assert.equal(final.usage!.output_tokens_details.reasoning_tokens, whole.usage!.output_tokens_details.reasoning_tokens);
  });

  test("a function call after reasoning: reasoning item, then the call, then the next turn carries the reasoning", async () => {
    const first = await create(qwen3, {
      input: "Weather in Oslo?",
      tools: [WEATHER],
      tool_choice: { type: "function", name: "weather" },
      seed: 3,
    });
    assert.deepEqual(
      first.output.map((o) => o.type),
      ["reasoning", "function_call"],
    );
    const thought = textOf(reasoningOf(first));
    const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    const output = { type: "function_call_output" as const, call_id: call.call_id, output: '{"rain": true}' };
    const expected = toolLoopTokens(qwen3, thought, JSON.parse(call.arguments), call.call_id);
    assert.notEqual(expected, toolLoopTokens(qwen3, undefined, JSON.parse(call.arguments), call.call_id));

    // previous_response_id: the stored reasoning item is the assistant turn's earlier reasoning.
    const chained = await create(qwen3, { previous_response_id: first.id, input: [output], max_output_tokens: 12 });
    assert.equal(chained.usage!.input_tokens, expected);
    assert.deepEqual(chained.warnings ?? [], []);
    const listed = await qwen3.client.responses.inputItems.list(chained.id, { order: "asc" });
    assert.deepEqual(
      listed.data.map((i) => i.type),
      ["message", "reasoning", "function_call", "function_call_output"],
    );
    const listedReasoning = listed.data[1] as unknown as { id: string; content: { type: string; text: string }[]; summary: unknown[] };
    assert.deepEqual(listedReasoning.content, [{ type: "reasoning_text", text: thought }]);
    assert.deepEqual(listedReasoning.summary, []);
    // GET keeps the reasoning item.
    const stored = await qwen3.client.responses.retrieve(first.id);
    assert.deepEqual(stored.output, first.output);

    // The same items named by item_reference (as the AI SDK sends them back), and sent whole.
    const referenced = await create(qwen3, {
      input: [
        { role: "user", content: "Weather in Oslo?" },
        { type: "item_reference", id: first.output[0]!.id },
        { type: "item_reference", id: call.id },
        output,
      ],
      max_output_tokens: 12,
    });
    assert.equal(referenced.usage!.input_tokens, expected);
    const echoed = await create(qwen3, {
      input: [{ role: "user", content: "Weather in Oslo?" }, first.output[0], call, output],
      max_output_tokens: 12,
    });
    assert.equal(echoed.usage!.input_tokens, expected);
  });

  test("an input reasoning item is the next assistant turn's reasoning, where the template puts it", async () => {
    const withReasoning = await create(qwen3, {
      input: toolLoopInput({ content: [{ type: "reasoning_text", text: REASONING }] }),
      max_output_tokens: 12,
    });
    assert.equal(withReasoning.usage!.input_tokens, toolLoopTokens(qwen3, REASONING));
    assert.deepEqual(withReasoning.warnings ?? [], []);
    const without = await create(qwen3, { input: toolLoopInput(null), max_output_tokens: 12 });
    assert.equal(without.usage!.input_tokens, toolLoopTokens(qwen3, undefined));
    assert.notEqual(withReasoning.usage!.input_tokens, without.usage!.input_tokens);
  });

  test("what cannot reach the prompt is accepted with a warning naming it", async () => {
    const keywords = (r: Response) => (r.warnings ?? []).map((w) => w.keyword).sort();
    // A summary and another service's encrypted reasoning: neither is rendered.
    const opaque = await create(qwen3, {
      input: toolLoopInput({ summary: [{ type: "summary_text", text: "Rain." }], encrypted_content: "gAAAA" }),
      max_output_tokens: 12,
    });
    assert.deepEqual(keywords(opaque), ["input[1].encrypted_content", "input[1].summary"]);
    assert.equal(opaque.usage!.input_tokens, toolLoopTokens(qwen3, undefined));
    // A reasoning item no assistant turn follows.
    const stray = await create(qwen3, {
      input: [
        { role: "user", content: "Hi" },
        { type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: REASONING }] },
        { role: "user", content: "Weather?" },
      ],
      max_output_tokens: 12,
    });
    assert.deepEqual(keywords(stray), ["input[1]"]);
    assert.match(stray.warnings![0]!.message, /no assistant message or function_call follows/);
    // A template that never reads earlier reasoning (DeepSeek-R1's): the client's item is named...
    const unread = await create(r1, {
      input: toolLoopInput({ content: [{ type: "reasoning_text", text: REASONING }] }),
      max_output_tokens: 12,
    });
    assert.deepEqual(keywords(unread), ["input[1].content"]);
    assert.match(unread.warnings![0]!.message, /never reads earlier reasoning/);
    assert.equal(unread.usage!.input_tokens, toolLoopTokens(r1, undefined));
    // ...but a stored response's own reasoning, replayed by previous_response_id, is not the client's field.
    const first = await create(r1, {
      input: "Weather in Oslo?",
      tools: [WEATHER],
      tool_choice: { type: "function", name: "weather" },
      seed: 4,
    });
    assert.equal(first.output[0]!.type, "reasoning");
    const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    const chained = await create(r1, {
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "{}" }],
      max_output_tokens: 12,
    });
    assert.deepEqual(keywords(chained), []);
    // include: reasoning.encrypted_content is not produced, and says why.
    const included = await create(qwen3, { include: ["reasoning.encrypted_content"], max_output_tokens: 12 });
    assert.deepEqual(keywords(included), ["include"]);
    assert.match(included.warnings![0]!.message, /encrypts no reasoning/);
    assert.equal(reasoningOf(included).encrypted_content, undefined);
    // reasoning.summary: no summaries are written.
    const summarised = await create(qwen3, { reasoning: { summary: "auto" }, max_output_tokens: 12 });
    assert.deepEqual(keywords(summarised), ["reasoning.summary"]);
    assert.deepEqual(reasoningOf(summarised).summary, []);
  });

  test("an input reasoning item's text counts in the prompt's character cap, refused naming the item", async () => {
    await assert.rejects(
      create(qwen3, { input: toolLoopInput({ content: [{ type: "reasoning_text", text: "x".repeat(32_768) }] }) }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.param, "input[1].content");
        assert.match(e.message, /TRELLIS_MAX_PROMPT_CHARS/);
        return true;
      },
    );
    await assert.rejects(
      create(qwen3, { input: toolLoopInput({ content: "thoughts" }) }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "input[1].content",
    );
  });
});
