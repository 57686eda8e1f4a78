// Reasoning sections recognised from the real chat templates of ../shared/chat-templates: the
// markers, whether the generation prompt opens the section, and the switch that turns it off, as
// each template itself renders them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ChatTemplate, type ReasoningFormat, reasoningFormatOf } from "../src/prompt/index.js";
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
  // 33 of the 70 today; the families left (gpt-oss channels, Gemma 4, Apriel, Solar, Kimi-K3,
  // MiniMax-M3, Hunyuan) write other markers.
  assert.ok(read.length >= 33, `${read.length}: ${read.join(", ")}`);
});
