// The tool-call format each real chat template teaches (../shared/chat-templates), as Trellis
// recognises it: Hermes/Qwen JSON inside <tool_call>, Llama 3.x JSON, or null (a format Trellis
// does not read yet, so tool_choice "auto" is refused by name instead of constrained wrongly).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { toolCallStyleOf } from "../src/prompt/index.js";
import { REPO_ROOT } from "./support/paths.js";

const DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const styleOf = (file: string) => toolCallStyleOf(readFileSync(resolve(DIR, file), "utf8"));

test("Hermes/Qwen JSON calls, Llama 3.x JSON calls, and XML calls left unread", () => {
  for (const file of ["Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"])
    assert.equal(styleOf(file), "hermes", file);
  for (const file of ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja"])
    assert.equal(styleOf(file), "llama3", file);
  // Inside <tool_call> but not Hermes JSON: XML calls (<function=f><parameter=p>), GLM's
  // <arg_key>/<arg_value>, Apriel's list in <tool_calls>, MiniMax's XML arguments.
  for (const file of [
    "Qwen3-Coder.jinja",
    "Qwen3.5-4B.jinja",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    "StepFun3.5-Flash.jinja",
    "GLM-4.6.jinja",
    "poolside-Laguna-S-2.1.jinja",
    "unsloth-Apriel-1.5.jinja",
    "MiniMax-M3.jinja",
  ])
    assert.equal(styleOf(file), null, file);
  assert.equal(toolCallStyleOf(null), "hermes", "the plain transcript teaches Hermes itself");
});

test("count: templates whose tool calls Trellis reads", () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith(".jinja"));
  const read = files.filter((f) => styleOf(f) !== null);
  // 13 of the 70 today: 10 Hermes/Qwen JSON, 3 Llama 3.x JSON.
  assert.ok(read.length >= 13, read.join(", "));
});
