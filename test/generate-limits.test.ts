// Configurable regex automaton caps: a pattern over the configured DFA-state cap is refused up
// front as too complex (422), while the same pattern compiles under the default caps.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime } from "../src/generate/index.js";
import { UnsatisfiableError } from "../src/generate/index.js";
import { STORIES_260K } from "./support/paths.js";

const strict = GenerationRuntime.open({
  modelPath: STORIES_260K,
  threads: 1,
  maxSequences: 2,
  constraints: { regexLimits: { maxDfaStates: 8 } },
});
const lenient = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, maxSequences: 2 });
after(async () => {
  await strict.close();
  await lenient.close();
});

const request = {
  prompt: "Once upon a time",
  pattern: "[a-z]{12}",
  maxNewTokens: 16,
  stopAfterMatch: true,
  temperature: 0,
  topK: 50,
  topP: 1,
  repetitionPenalty: 1,
};

test("a pattern over the configured DFA-state cap is a 422 'too complex'", async () => {
  await assert.rejects(
    strict.completeRegex(request),
    (e: unknown) => e instanceof UnsatisfiableError && /too complex/.test(e.message) && e.field === "pattern",
  );
});

test("the same pattern completes under the default caps", async () => {
  const r = await lenient.completeRegex(request);
  assert.match(r.completion, /^[a-z]{12}$/);
});
