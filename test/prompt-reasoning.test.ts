// Reasoning sections recognised from the real chat templates of ../shared/chat-templates: the
// markers, whether the generation prompt opens the section, and the switch that turns it off, as
// each template itself renders them; and an earlier turn's reasoning_content, where each template
// puts it (or leaves it out).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type ChatMessage, ChatTemplate, type PromptSegment, type ReasoningFormat, reasoningFormatOf } from "../src/prompt/index.js";
import { REPO_ROOT } from "./support/paths.js";

const DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");

function formatOf(file: string): ReasoningFormat | null {
  const source = readFileSync(resolve(DIR, file), "utf8");
  const template = new ChatTemplate(source, { specialTexts: [], bosText: "<s>", eosText: "</s>", addsBos: false });
  return reasoningFormatOf(source, (request) =>
    template
      .render(request)
      .map((s) => s.text)
      .join(""),
  );
}

const THINK = { open: "<think>", close: "</think>" };

test("each family's markers, opening and switch, as its template renders them", () => {
  const expected: Record<string, ReasoningFormat | null> = {
    "Qwen-Qwen3-0.6B.jinja": { ...THINK, preOpened: false, toggle: "enable_thinking" },
    "Qwen3.5-4B.jinja": { ...THINK, preOpened: true, toggle: "enable_thinking" },
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": { ...THINK, preOpened: true, toggle: null },
    "deepseek-ai-DeepSeek-V3.1.jinja": { ...THINK, preOpened: true, toggle: "enable_thinking" },
    "GLM-4.6.jinja": { ...THINK, preOpened: false, toggle: "enable_thinking" },
    "HuggingFaceTB-SmolLM3-3B.jinja": { ...THINK, preOpened: false, toggle: "enable_thinking" },
    "MiniMax-M2.jinja": { ...THINK, preOpened: true, toggle: null },
    "ByteDance-Seed-OSS.jinja": { open: "<seed:think>", close: "</seed:think>", preOpened: false, toggle: null },
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": { open: "[THINK]", close: "[/THINK]", preOpened: false, toggle: null },
    // Gemma 4's thought channel (the template writes "\n" as an escape in its source).
    "google-gemma-4-31B-it.jinja": { open: "<|channel>thought\n", close: "<channel|>", preOpened: false, toggle: "enable_thinking" },
    // gpt-oss: the analysis channel, then the final one (control tokens: read where the vocabulary has them).
    "openai-gpt-oss-120b.jinja": {
      open: "<|channel|>analysis<|message|>",
      close: "<|end|><|start|>assistant<|channel|>final<|message|>",
      preOpened: false,
      toggle: null,
    },
    // Apriel 1.6: opened in words by the generation prompt, ended by a marker line.
    "Apriel-1.6-15b-Thinker-fixed.jinja": {
      open: "Here are my reasoning steps:\n",
      close: "\n[BEGIN FINAL RESPONSE]\n",
      preOpened: true,
      toggle: null,
    },
    // Reasoning only when asked: the switch, set true, adds the instructions (and Bielik's and
    // Reka's generation prompts then open the section); unset, the model answers at once.
    "ibm-granite-granite-3.3-2B-Instruct.jinja": { ...THINK, preOpened: false, toggle: "thinking", askedOnly: true },
    "Bielik-11B-v3.0-Instruct.jinja": { ...THINK, preOpened: true, toggle: "enable_thinking", askedOnly: true },
    "Reka-Edge.jinja": { ...THINK, preOpened: true, toggle: "enable_thinking", askedOnly: true },
    // MiniMax-M3: a switch of two words; "enabled" opens the section in the generation prompt; its
    // default ("adaptive") lets the model decide, nothing written before its answer if it skips.
    "MiniMax-M3.jinja": {
      open: "<mm:think>",
      close: "</mm:think>",
      preOpened: true,
      toggle: "thinking_mode",
      toggleValues: { on: "enabled", off: "disabled" },
      adaptive: { lead: "" },
    },
    // Hunyuan 3: markers with its suffix, its switch the reasoning_effort variable ("no_think" by default).
    "tencent-Hy3.jinja": {
      open: "<think:opensource>",
      close: "</think:opensource>",
      preOpened: true,
      toggle: "reasoning_effort",
      toggleValues: { on: "high", off: "no_think" },
      askedOnly: true,
    },
    // Solar Open: <|think|> after its prompt's <|begin|>assistant, closed by the next message's start
    // (the reply's header follows: the answer's, ANSWER_OPEN); its switch the reasoning_effort variable, whose minimal and low write the empty section.
    "upstage-Solar-Open-100B.jinja": {
      open: "<|think|>",
      close: "<|end|><|begin|>assistant",
      preOpened: false,
      toggle: "reasoning_effort",
      toggleValues: { on: "high", off: "low" },
      offEfforts: ["minimal", "low"],
    },
    // Kimi-K3 (XTML): its think tag, opened by the generation prompt while `thinking` is on; its
    // thinking_effort words follow the request's reasoning_effort.
    "Kimi-K3.jinja": {
      open: "<|open|>think<|sep|>",
      close: "<|close|>think<|sep|><|open|>response<|sep|>",
      preOpened: true,
      toggle: "thinking",
      effortVariable: { name: "thinking_effort", words: { minimal: "low", low: "low", medium: "high", high: "high", xhigh: "max" } },
    },
    // Muse: a message to itself before the one to the user, if it chooses to write one.
    "muse-glimmer.jinja": {
      open: " to=self<|message|>",
      close: "<|eom|><|start|>assistant to=user<|message|>",
      preOpened: false,
      toggle: null,
      adaptive: { lead: " to=user<|message|>" },
    },
    // Apriel 1.5: reasoning from the start of its turn (its system prompt asks for it), the answer
    // after [BEGIN FINAL RESPONSE], which [END FINAL RESPONSE] ends.
    "unsloth-Apriel-1.5.jinja": {
      open: "",
      close: "[BEGIN FINAL RESPONSE]",
      preOpened: true,
      toggle: null,
      answerEnd: "[END FINAL RESPONSE]",
    },
    // Apertus: its inner monologue, asked for by enable_thinking ("Deliberation: enabled").
    "Apertus-8B-Instruct.jinja": {
      open: "<|inner_prefix|>",
      close: "<|inner_suffix|>",
      preOpened: false,
      toggle: "enable_thinking",
      askedOnly: true,
    },
    // No reasoning section.
    "Qwen-Qwen2.5-7B-Instruct.jinja": null,
    "meta-llama-Llama-3.1-8B-Instruct.jinja": null,
  };
  for (const [file, format] of Object.entries(expected)) assert.deepEqual(formatOf(file), format, file);
});

test("with its switch off, a template writes the empty section itself (so no section is generated)", () => {
  const source = readFileSync(resolve(DIR, "Qwen-Qwen3-0.6B.jinja"), "utf8");
  const template = new ChatTemplate(source, { specialTexts: [], bosText: "", eosText: "", addsBos: false });
  const text = (variables?: Record<string, boolean>) =>
    template
      .render({ messages: [{ role: "user", content: "hi" }], addGenerationPrompt: true, ...(variables ? { variables } : {}) })
      .map((s) => s.text)
      .join("");
  assert.ok(text({ enable_thinking: false }).trimEnd().endsWith("</think>"));
  assert.ok(!text().trimEnd().endsWith("</think>"));
});

test("count: templates of the folder whose reasoning section Trellis reads", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".jinja"));
  const read = files.filter((f) => formatOf(f) !== null);
  // 44 of the 70 today: every template that has a reasoning section of its own (LFM2.5-Instruct
  // only drops a past turn's `</think>` text; the others write none).
  assert.equal(read.length, 44, `${read.length}: ${read.join(", ")}`);
});

describe("an earlier turn's reasoning_content, placed by each template's own rule", () => {
  const render = (file: string, messages: ChatMessage[], specialTexts: string[] = []): PromptSegment[] => {
    const source = readFileSync(resolve(DIR, file), "utf8");
    return new ChatTemplate(source, { specialTexts, bosText: "", eosText: "", addsBos: false }).render({
      messages,
      addGenerationPrompt: true,
    });
  };
  const text = (segments: readonly PromptSegment[]): string => segments.map((s) => s.text).join("");
  const call = { id: "c1", type: "function" as const, function: { name: "weather", arguments: { city: "Oslo" } } };
  // A tool loop: the assistant turn comes after the last user query.
  const toolLoop = (reasoning?: string): ChatMessage[] => [
    { role: "user", content: "Weather in Oslo?" },
    { role: "assistant", content: "", tool_calls: [call], ...(reasoning !== undefined ? { reasoning_content: reasoning } : {}) },
    { role: "tool", content: '{"rain": true}', tool_call_id: "c1" },
  ];
  // A finished exchange: a user query follows the assistant turn.
  const answered = (reasoning: string): ChatMessage[] => [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello!", reasoning_content: reasoning },
    { role: "user", content: "Bye" },
  ];

  test("Qwen3: inside <think> after the last user query, left out before it", () => {
    assert.ok(text(render("Qwen-Qwen3-0.6B.jinja", toolLoop("It may rain in Oslo."))).includes("<think>\nIt may rain in Oslo.\n</think>"));
    assert.ok(!text(render("Qwen-Qwen3-0.6B.jinja", toolLoop())).includes("It may rain"));
    assert.ok(!text(render("Qwen-Qwen3-0.6B.jinja", answered("Greet back."))).includes("Greet back."));
  });

  test("GLM-4.6: <think>…</think> after the last user query, an empty section before it", () => {
    assert.ok(text(render("GLM-4.6.jinja", toolLoop("It may rain in Oslo."))).includes("<think>It may rain in Oslo.</think>"));
    const before = text(render("GLM-4.6.jinja", answered("Greet back.")));
    assert.ok(!before.includes("Greet back.") && before.includes("<think></think>"));
  });

  test("gpt-oss reads it as `thinking`: its analysis channel before the call", () => {
    const rendered = text(render("openai-gpt-oss-120b.jinja", toolLoop("It may rain in Oslo.")));
    assert.ok(
      rendered.includes(
        "<|start|>assistant<|channel|>analysis<|message|>It may rain in Oslo.<|end|><|start|>assistant to=functions.weather",
      ),
    );
    assert.ok(!text(render("openai-gpt-oss-120b.jinja", toolLoop())).includes("analysis<|message|>It may"));
  });

  test("LFM2.5 reads it as `thinking`, after the last user query", () => {
    assert.ok(text(render("LFM2.5-8B-A1B.jinja", toolLoop("It may rain in Oslo."))).includes("<think>It may rain in Oslo.</think>"));
  });

  test("DeepSeek-R1's template never reads it", () => {
    const file = "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja";
    assert.equal(text(render(file, toolLoop("It may rain in Oslo."))), text(render(file, toolLoop())));
  });

  test("it is the user's text: a control token spelled in it stays plain text", () => {
    const segments = render("Qwen-Qwen3-0.6B.jinja", toolLoop("Done.<|im_end|>"), ["<|im_end|>", "<|im_start|>"]);
    const carrying = segments.filter((s) => s.text.includes("Done.<|im_end|>"));
    assert.equal(carrying.length, 1);
    assert.equal(carrying[0]!.special, false);
  });
});
