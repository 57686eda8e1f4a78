// The tool-call format each real chat template teaches (../shared/chat-templates), as Trellis
// recognises it: Hermes/Qwen JSON inside <tool_call>, Llama 3.x JSON, XML calls
// (<function=f><parameter=p>, in <tool_call> or Seed-OSS's <seed:tool_call>), GLM's
// <arg_key>/<arg_value>, MiniMax's <invoke name=…> (M2, M3) and JSON in <tool_calls> (M1), Apriel's
// JSON list in <tool_calls>, DeepSeek's <｜tool▁call▁begin｜> blocks (R1, V3.1), or null (a format Trellis does not read yet, so tool_choice "auto" is
// refused by name instead of constrained wrongly).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { readableToolCallStyle, toolCallStyleOf } from "../src/prompt/index.js";
import { REPO_ROOT } from "./support/paths.js";

const DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const styleOf = (file: string) => toolCallStyleOf(readFileSync(resolve(DIR, file), "utf8"));

/** Every template whose tool calls Trellis reads; all others are null. */
const READ: Record<string, readonly string[]> = {
  hermes: [
    "Bielik-11B-v3.0-Instruct.jinja",
    "MiMo-VL.jinja",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
    "Qwen-QwQ-32B.jinja",
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    "Qwen-Qwen3-0.6B.jinja",
    "Reka-Edge.jinja",
    "ibm-granite-granite-4.0.jinja",
    "ibm-granite-granite-4.1.jinja",
  ],
  llama3: ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja"],
  "xml-function": ["NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "Qwen3-Coder.jinja", "Qwen3.5-4B.jinja", "StepFun3.5-Flash.jinja"],
  glm: [
    "GLM-4.6.jinja",
    "GLM-4.7-Flash.jinja",
    "Spark2.5.jinja",
    "inclusionai-ling-3.0-flash.jinja",
    "poolside-Laguna-S-2.1.jinja",
    "poolside-Laguna-XS-2.1.jinja",
    "poolside-Laguna-XS.2.jinja",
  ],
  "seed-oss": ["ByteDance-Seed-OSS.jinja"],
  "minimax-m1": ["MiniMax-M1.jinja"],
  "minimax-m2": ["MiniMax-M2.jinja"],
  "minimax-m3": ["MiniMax-M3.jinja"],
  apriel: ["Apriel-1.6-15b-Thinker-fixed.jinja", "unsloth-Apriel-1.5.jinja"],
  "deepseek-r1": [
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "llama-cpp-deepseek-r1.jinja",
  ],
  "deepseek-v3": ["deepseek-ai-DeepSeek-V3.1.jinja"],
  mistral: [
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
  ],
  "mistral-nemo": ["mistralai-Mistral-Nemo-Instruct-2407.jinja"],
  "kimi-k2": ["Kimi-K2-Instruct.jinja", "Kimi-K2-Thinking.jinja", "moonshotai-Kimi-K2.jinja"],
  "functionary-v3.1": ["meetkai-functionary-medium-v3.1.jinja"],
  "deepseek-dsml": ["deepseek-ai-DeepSeek-V3.2.jinja"],
  "deepseek-v4": ["deepseek-ai-DeepSeek-V4.jinja", "deepseek-ai-DeepSeek-V4-Flash-0731.jinja"],
  harmony: ["openai-gpt-oss-120b.jinja"],
  hunyuan: ["tencent-Hy3.jinja"],
  granite: ["ibm-granite-granite-3.3-2B-Instruct.jinja"],
  "firefunction-v2": ["fireworks-ai-llama-3-firefunction-v2.jinja"],
  apertus: ["Apertus-8B-Instruct.jinja"],
  "functionary-v3.2": ["meetkai-functionary-medium-v3.2.jinja"],
  "command-r7b": ["CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"],
  cohere2: ["Cohere2MoE.jinja"],
  "command-r-plus": ["CohereForAI-c4ai-command-r-plus-tool_use.jinja"],
  gemma4: ["google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"],
  lfm2: ["LFM2-8B-A1B.jinja", "LFM2.5-8B-A1B.jinja", "LFM2.5-Instruct.jinja"],
  minicpm5: ["openbmb-MiniCPM5-1B.jinja"],
  "nemotron-v2": ["NVIDIA-Nemotron-Nano-v2.jinja"],
  "solar-open": ["upstage-Solar-Open-100B.jinja"],
  gigachat3: ["GigaChat3-10B-A1.8B.jinja"],
  "gigachat3.1": ["GigaChat3.1-10B-A1.8B.jinja"],
  "kimi-k3": ["Kimi-K3.jinja"],
  muse: ["muse-glimmer.jinja"],
};

test("Hermes/Qwen JSON, Llama 3.x JSON, XML <function=…>, GLM <arg_key>, MiniMax, Apriel, Seed-OSS, DeepSeek, Cohere calls; others left unread", () => {
  for (const [style, files] of Object.entries(READ)) for (const file of files) assert.equal(styleOf(file), style, file);
  assert.equal(
    toolCallStyleOf("{{ '<tool_call>' }}{% for m in messages %}<invoke name=\"{{ m.name }}\">{% endfor %}"),
    null,
    "a kin not read yet",
  );
  assert.equal(toolCallStyleOf(null), "hermes", "the plain transcript teaches Hermes itself");
});

test("every template in the folder maps to its expected style", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".jinja"));
  const expected = new Map(Object.entries(READ).flatMap(([style, list]) => list.map((f) => [f, style] as const)));
  for (const file of files) assert.equal(styleOf(file), expected.get(file) ?? null, file);
  // 65 of the 70 today: 10 Hermes/Qwen JSON, 3 Llama 3.x JSON, 4 XML calls, 7 GLM, 1 Seed-OSS,
  // 3 MiniMax (M1, M2, M3), 2 Apriel, 7 DeepSeek (3 R1, 1 V3.1, 3 DSML), 4 Mistral (3 [ARGS],
  // 1 Nemo), 3 Kimi-K2, 2 Functionary (v3.1, v3.2), 1 gpt-oss, 1 Hunyuan 3, 1 Granite 3.3,
  // 1 FireFunction v2, 1 Apertus, 2 Cohere (Command R7B, Cohere2), 2 Gemma 4, 3 LFM2/LFM2.5,
  // 1 MiniCPM5, 1 Nemotron Nano v2, 1 Solar Open, 2 GigaChat (3, 3.1), 1 Kimi-K3, 1 Muse, 1 Command
  // R+; the other 4 of the 70 declare no tools at all (Gemma 2, Phi-3.5, RWKV World, SmolLM3).
  assert.equal(files.filter((f) => styleOf(f) !== null).length, 66);
});

test("a text style whose opening marker is a control token of the vocabulary is not read, nor a control style without its tokens", () => {
  const v31 = readFileSync(resolve(DIR, "deepseek-ai-DeepSeek-V3.1.jinja"), "utf8");
  assert.equal(readableToolCallStyle(v31, ["<｜end▁of▁sentence｜>"]), "deepseek-v3");
  assert.equal(readableToolCallStyle(v31, ["<｜tool▁calls▁begin｜>", "<｜end▁of▁sentence｜>"]), null);
  assert.equal(readableToolCallStyle(null, ["<tool_call>"]), null);
  // Mistral's markers are control tokens: read only where the vocabulary has them as such.
  const small = readFileSync(resolve(DIR, "Mistral-Small-3.2-24B-Instruct-2506.jinja"), "utf8");
  assert.equal(readableToolCallStyle(small, ["[TOOL_CALLS]", "[ARGS]", "[INST]"]), "mistral");
  assert.equal(readableToolCallStyle(small, ["[TOOL_CALLS]", "[INST]"]), null, "no [ARGS] control token");
  assert.equal(readableToolCallStyle(small, []), null, "[TOOL_CALLS] would be text");
  // So are Granite 3.3's and Apertus's.
  const granite = readFileSync(resolve(DIR, "ibm-granite-granite-3.3-2B-Instruct.jinja"), "utf8");
  assert.equal(readableToolCallStyle(granite, ["<|tool_call|>", "<|end_of_text|>"]), "granite");
  assert.equal(readableToolCallStyle(granite, ["<|end_of_text|>"]), null);
  const apertus = readFileSync(resolve(DIR, "Apertus-8B-Instruct.jinja"), "utf8");
  assert.equal(readableToolCallStyle(apertus, ["<|tools_prefix|>", "<|tools_suffix|>"]), "apertus");
  assert.equal(readableToolCallStyle(apertus, ["<|tools_prefix|>"]), null, "no <|tools_suffix|> control token");
});
