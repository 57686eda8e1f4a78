// Reasoning before a constrained answer through the real decode loop (stories260K): the answer is
// complete and valid under every budget that fits, the reasoning is closed by the mask when the
// budget or the reasoning budget requires it, the text splits into reasoning and answer exactly,
// a budget that cannot hold the marker and the answer is refused up front, and streamed pieces
// split the same way as the whole text.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime, ReasoningSplitter, splitReasoning, UnsatisfiableError } from "../src/generate/index.js";
import { compileRegex, matchesString } from "../src/regex/index.js";
import { rng } from "./support/constraint-fixtures.js";
import { STORIES_260K } from "./support/paths.js";

const SECTION = { open: "<think>", close: "</think>" } as const;

describe("reasoning then answer (stories260K)", () => {
  let runtime: GenerationRuntime;
  before(() => {
    runtime = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, maxSequences: 8 });
  });
  after(async () => runtime.close());

  const base = { prompt: "Once upon a time", temperature: 1, topK: 0, topP: 1, repetitionPenalty: 1, stopAfterMatch: true };

  test("every budget that fits ends in a valid answer after a closed section", async () => {
    const pattern = "[0-9]{2,4}";
    for (const [maxNewTokens, maxTokens] of [
      [48, undefined],
      [40, 18],
      [20, undefined],
      [18, 16],
    ] as const) {
      for (const seed of [1, 2, 3]) {
        const r = await runtime.complete({
          ...base,
          seed,
          maxNewTokens,
          reasoning: { ...SECTION, ...(maxTokens ? { maxTokens } : {}) },
          constraint: { kind: "regex", pattern },
        });
        assert.ok(r.tokensGenerated <= maxNewTokens, `${r.tokensGenerated} > ${maxNewTokens}`);
        assert.ok(matchesString(compileRegex(pattern), r.completion), `answer ${JSON.stringify(r.completion)}`);
        assert.equal(typeof r.reasoning, "string");
        assert.ok(!r.reasoning!.includes("</think>"));
      }
    }
  });

  test("the answer fast-forwards through what it forces once the section is closed", async () => {
    const pattern = 'answer: \\{"n": [0-9]{1,2}\\}';
    let forced = 0;
    for (const seed of [1, 2, 3]) {
      const r = await runtime.complete({
        ...base,
        seed,
        maxNewTokens: 80,
        reasoning: { ...SECTION, maxTokens: 20 },
        constraint: { kind: "regex", pattern },
      });
      assert.ok(matchesString(compileRegex(pattern), r.completion), `answer ${JSON.stringify(r.completion)}`);
      assert.ok(r.tokensGenerated <= 80);
      forced += r.fastForwardedTokens ?? 0;
    }
    assert.ok(forced > 0, "the answer's literal text was forced");
  });

  test("free text after the section: the answer is what follows the closing marker", async () => {
    const r = await runtime.complete({
      ...base,
      seed: 7,
      maxNewTokens: 30,
      stopAfterMatch: false,
      reasoning: { open: null, close: "</think>", maxTokens: 8 },
      constraint: { kind: "text" },
    });
    assert.equal(typeof r.reasoning, "string");
    assert.ok(r.tokensGenerated <= 30);
  });

  // "<think>" and "</think>" take 7 and 8 of this vocabulary's tokens at best.
  test("a budget that cannot hold the markers and the answer is refused before decoding", async () => {
    await assert.rejects(
      runtime.complete({ ...base, seed: 1, maxNewTokens: 10, reasoning: SECTION, constraint: { kind: "regex", pattern: "[0-9]{2,4}" } }),
      (e: unknown) => e instanceof UnsatisfiableError,
    );
    await assert.rejects(
      runtime.complete({
        ...base,
        seed: 1,
        maxNewTokens: 40,
        reasoning: { ...SECTION, maxTokens: 8 },
        constraint: { kind: "regex", pattern: "[0-9]{2,4}" },
      }),
      (e: unknown) => e instanceof UnsatisfiableError,
    );
  });
});

test("streamed pieces split exactly as the whole text, whatever the cut points", () => {
  const rand = rng(5);
  const texts = ['<think>a</thi</think>\n\n{"x":1}', "<think></think>ok", "<think>x</think", "<think>a<</think>  b c"];
  for (const text of texts) {
    const whole = splitReasoning(text, SECTION);
    for (let round = 0; round < 200; round++) {
      const splitter = new ReasoningSplitter(SECTION);
      let reasoning = "";
      let content = "";
      let i = 0;
      while (i < text.length) {
        const j = Math.min(text.length, i + 1 + Math.floor(rand() * 4));
        const part = splitter.push(text.slice(i, j));
        reasoning += part.reasoning;
        content += part.content;
        i = j;
      }
      reasoning += splitter.flush().reasoning;
      assert.deepEqual({ reasoning, content, reasoned: true }, whole, JSON.stringify(text));
    }
  }
  assert.deepEqual(splitReasoning('<think>a</thi</think>\n\n{"x":1}', SECTION), {
    reasoning: "a</thi",
    content: '{"x":1}',
    reasoned: true,
  });
  assert.deepEqual(splitReasoning("<think>x</think", SECTION), { reasoning: "x</think", content: "", reasoned: true });
});

test("a section the model may skip: held back while the text may still open it, then reasoning or the answer (its lead stripped)", () => {
  const rand = rng(41);
  const MUSE = {
    open: " to=self<|message|>",
    close: "<|eom|><|start|>assistant to=user<|message|>",
    skippable: { lead: " to=user<|message|>" },
  } as const;
  const MINIMAX = { open: "<mm:think>", close: "</mm:think>", skippable: { lead: "" } } as const;
  const cases = [
    [MUSE, " to=self<|message|>plan<|eom|><|start|>assistant to=user<|message|>Hi", { reasoning: "plan", content: "Hi", reasoned: true }],
    [MUSE, " to=user<|message|>Hi there", { reasoning: "", content: "Hi there", reasoned: false }],
    [MINIMAX, "<mm:think>r</mm:think>\n\n{}", { reasoning: "r", content: "{}", reasoned: true }],
    [MINIMAX, '{"a": "<mm:think>"}', { reasoning: "", content: '{"a": "<mm:think>"}', reasoned: false }],
    // An answer that ends while it may still be the marker's beginning: what flush gives back.
    [MINIMAX, "<mm", { reasoning: "", content: "<mm", reasoned: false }],
    [MINIMAX, "", { reasoning: "", content: "", reasoned: false }],
  ] as const;
  for (const [section, text, expected] of cases) {
    assert.deepEqual(splitReasoning(text, section), expected, text);
    for (let round = 0; round < 100; round++) {
      const splitter = new ReasoningSplitter(section);
      let reasoning = "";
      let content = "";
      for (let i = 0; i < text.length; ) {
        const j = Math.min(text.length, i + 1 + Math.floor(rand() * 4));
        const part = splitter.push(text.slice(i, j));
        // Nothing goes out while the text may still be the opening marker.
        if (section.open.startsWith(text.slice(0, j))) assert.deepEqual(part, { reasoning: "", content: "" });
        reasoning += part.reasoning;
        content += part.content;
        i = j;
      }
      const rest = splitter.flush();
      assert.deepEqual({ reasoning: reasoning + rest.reasoning, content: content + rest.content, reasoned: splitter.reasoned }, expected);
    }
  }
});
