/**
 * Regex completion behaviour, one rule at a time: stop_after_match, end-of-generation only at a
 * full match, budgets and 422s, prompt-boundary healing (SentencePiece on a real model, BPE with
 * random logits), seeds, empty matches, pattern errors.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime } from "../src/generate/index.js";
import { compileRegexCached, regexConstraintFor } from "../src/compile/index.js";
import { InvalidRequestError, UnsatisfiableError, type CompletionResult, type RegexCompletionRequest } from "../src/generate/index.js";
import { matchesString } from "../src/regex/index.js";
import { LLAMA2_TINY_RANDOM, NO_PREFIX_CACHE, STORIES_260K, vocabFile } from "./support/paths.js";
import { COMPLEMENT_SHORTHAND_PATTERNS } from "./support/regex-patterns.js";
import {
  FullmatchOracle,
  openRandomLogitsRuntime,
  recordingFactory,
  tokenBytesConcat,
  type RandomLogitsRuntime,
  type Recording,
} from "./support/generate-harness.js";

const BASE = {
  prompt: "Once upon a time",
  maxNewTokens: 8,
  stopAfterMatch: true,
  temperature: 1,
  topK: 50,
  topP: 1,
  repetitionPenalty: 1,
} satisfies Omit<RegexCompletionRequest, "pattern">;

const request = (over: Partial<RegexCompletionRequest> & { pattern: string | string[] }): RegexCompletionRequest => ({
  ...BASE,
  ...over,
});

/** Runs through the runtime with a recording constraint: the result plus the exact tokens. */
async function recorded(runtime: GenerationRuntime, req: RegexCompletionRequest): Promise<CompletionResult & { rec: Recording }> {
  const matcher = regexConstraintFor(runtime.trie, compileRegexCached(req.pattern));
  const rec = recordingFactory(matcher);
  const result = await runtime.completeWithFactory(req, rec.factory, "pattern");
  return { ...result, rec: rec.used() };
}

const seeds = (n: number, from = 1): number[] => Array.from({ length: n }, (_, i) => from + i * 7919);

let oracle: FullmatchOracle;
before(() => (oracle = new FullmatchOracle()));
after(() => oracle.close());

async function assertFullMatches(pattern: string | string[], texts: string[]): Promise<void> {
  const pats = typeof pattern === "string" ? [pattern] : pattern;
  const ok = await oracle.fullmatch(texts.map((t) => [pats, t] as const));
  ok.forEach((good, i) => assert.ok(good, `${JSON.stringify(texts[i])} does not fully match ${JSON.stringify(pattern)}`));
}

describe("regex completion on stories260K", () => {
  let runtime: GenerationRuntime;
  before(() => {
    runtime = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, maxSequences: 16, prefixCache: NO_PREFIX_CACHE });
  });
  after(async () => runtime.close());

  test("stop_after_match true stops at the first token boundary that is a full match", async () => {
    const results = await Promise.all(
      seeds(24).map((seed) => recorded(runtime, request({ pattern: "[a-z]+( [a-z]+)*", seed, maxNewTokens: 12 }))),
    );
    for (const r of results) {
      // Every word-ish token already completes a match, so exactly one token is generated.
      assert.equal(r.tokensGenerated, 1, JSON.stringify(r));
      assert.equal(r.stopReason, "pattern_match");
    }
    await assertFullMatches(
      "[a-z]+( [a-z]+)*",
      results.map((r) => r.completion),
    );
  });

  test("stop_after_match false keeps generating while the pattern allows, within the budget", async () => {
    const results = await Promise.all(
      seeds(24).map((seed) =>
        recorded(
          runtime,
          request({ prompt: "Once upon a time there", pattern: "[a-z ]{1,200}", seed, stopAfterMatch: false, maxNewTokens: 6 }),
        ),
      ),
    );
    let full = 0;
    for (const r of results) {
      assert.ok(r.tokensGenerated <= 6);
      if (r.stopReason === "token_limit") {
        assert.equal(r.tokensGenerated, 6, "token_limit only when the budget is spent");
        full++;
      } else {
        // pattern_match before the budget: the model chose to end (EOG) at a full match.
        assert.equal(r.stopReason, "pattern_match");
      }
    }
    assert.ok(full > 0, "with a pattern that allows 200 characters most runs hit the budget");
    await assertFullMatches(
      "[a-z ]{1,200}",
      results.map((r) => r.completion),
    );
  });

  test("pattern_match when the pattern admits no longer text, token_limit when the budget cuts it", async () => {
    const done = await runtime.completeRegex(request({ pattern: "(yes|no)", stopAfterMatch: false, maxNewTokens: 8, seed: 3 }));
    assert.equal(done.stopReason, "pattern_match");
    assert.match(done.completion, /^(yes|no)$/);
    const cut = await runtime.completeRegex(request({ pattern: "a{1,40}", stopAfterMatch: false, maxNewTokens: 3, temperature: 0 }));
    assert.equal(cut.stopReason, "token_limit");
    assert.equal(cut.tokensGenerated, 3);
    assert.match(cut.completion, /^a+$/);
  });

  test("with stop_after_match false the text is always a full match, never a prefix", async () => {
    const pattern = "(ab)+|(xyz){2}";
    const results = await Promise.all(
      seeds(32).map((seed, i) =>
        runtime.completeRegex(request({ pattern, seed, stopAfterMatch: false, maxNewTokens: 3 + (i % 6), temperature: 2, topK: 0 })),
      ),
    );
    await assertFullMatches(
      pattern,
      results.map((r) => r.completion),
    );
  });

  test("same seed, same output; different seeds differ", async () => {
    const req = request({ pattern: "[a-z ,.]{5,60}", seed: 1234, stopAfterMatch: false, maxNewTokens: 12, temperature: 1.2 });
    const first = await runtime.completeRegex(req);
    const again = await runtime.completeRegex({ ...req });
    assert.deepEqual(again, first);
    const others = await Promise.all(seeds(8, 99).map((seed) => runtime.completeRegex({ ...req, seed })));
    assert.ok(new Set(others.map((r) => r.completion)).size > 1, "seeds should matter at temperature 1.2");
  });

  test("patterns that accept the empty string", async () => {
    const promptTokens = runtime.countTokens(request({ pattern: "" }).prompt);
    for (const pattern of ["", "x{0}", "a*", "(abc)?", ".{0,5}"]) {
      const stopped = await runtime.completeRegex(request({ pattern, stopAfterMatch: true }));
      assert.deepEqual(stopped, { completion: "", tokensGenerated: 0, stopReason: "pattern_match", promptTokens }, pattern);
    }
    // Nothing longer exists: done at once, even with stop_after_match false.
    assert.deepEqual(await runtime.completeRegex(request({ pattern: "", stopAfterMatch: false })), {
      completion: "",
      tokensGenerated: 0,
      stopReason: "pattern_match",
      promptTokens,
    });
    // Longer text exists but no budget is left for it: the budget, not the pattern, stopped it.
    assert.deepEqual(await runtime.completeRegex(request({ pattern: "a*", stopAfterMatch: false, maxNewTokens: 0 })), {
      completion: "",
      tokensGenerated: 0,
      stopReason: "token_limit",
      promptTokens,
    });
    const grown = await runtime.completeRegex(request({ pattern: "a*", stopAfterMatch: false, maxNewTokens: 4, temperature: 0 }));
    assert.match(grown.completion, /^a*$/);
  });

  test("unsatisfiable budgets are refused before generating, naming the tokens needed", async () => {
    await assert.rejects(runtime.completeRegex(request({ pattern: "[0-9]{24}", maxNewTokens: 5 })), (error: unknown) => {
      assert.ok(error instanceof UnsatisfiableError);
      assert.equal(error.field, "pattern");
      // stories260K writes digits one token each.
      assert.match(error.message, /needs at least 24 tokens but max_new_tokens is 5/);
      return true;
    });
    const exact = await runtime.completeRegex(request({ pattern: "[0-9]{24}", maxNewTokens: 24 }));
    assert.match(exact.completion, /^[0-9]{24}$/);
    assert.equal(exact.tokensGenerated, 24);
    await assert.rejects(runtime.completeRegex(request({ pattern: ["[0-9]{9}", "[0-9]{7}"], maxNewTokens: 6 })), /needs at least 7 tokens/);
  });

  test("pattern syntax errors are request errors with field and position", async () => {
    // Positions as Python's re.error.pos reports them; lookbehind is refused where Python has it.
    const cases: Array<[string | string[], string, number]> = [
      ["a(b", "pattern", 1],
      ["[a-", "pattern", 0],
      ["ab)", "pattern", 2],
      [["ok", "x{2,1}"], "pattern[1]", 2],
      ["(?<=a)b", "pattern", 0],
    ];
    for (const [pattern, field, position] of cases) {
      await assert.rejects(runtime.completeRegex(request({ pattern })), (error: unknown) => {
        assert.ok(error instanceof InvalidRequestError, `${JSON.stringify(pattern)}: ${String(error)}`);
        assert.equal(error.field, field);
        assert.equal(typeof error.position, "number");
        assert.equal(error.position, position, `${JSON.stringify(pattern)}: ${error.message}`);
        return true;
      });
    }
  });

  test("patterns whose automaton explodes are refused by the DFA state cap, a 422, before the determinization ends", async () => {
    await assert.rejects(runtime.completeRegex(request({ pattern: "(a|b)*a(a|b){25}" })), (error: unknown) => {
      // 2^26 subsets stopped at maxDfaStates: a counted limit, the same verdict on any machine (a
      // 422), not the wall-clock valve (a retryable 503).
      assert.ok(error instanceof UnsatisfiableError, String(error));
      assert.match(error.message, /^pattern: pattern too complex: its DFA needs more than [\d,]+ states/);
      return true;
    });
  });

  test("special and control tokens are never generated, the text never contains them", async () => {
    const results = await Promise.all(
      seeds(16).map((seed) =>
        recorded(runtime, request({ pattern: "(?s).{1,40}", seed, stopAfterMatch: false, maxNewTokens: 10, temperature: 1.5 })),
      ),
    );
    for (const r of results) {
      for (const t of r.rec.tokens) {
        assert.notEqual(t, runtime.vocab.bosToken);
        assert.ok(!runtime.vocab.isEog(t));
      }
      assert.ok(!r.completion.includes("<s>") && !r.completion.includes("</s>"));
    }
  });
});

describe("prompt-boundary healing", () => {
  test("SentencePiece (llama-2-tiny-random): a prompt ending in a space is healed, the space not repeated", async () => {
    const runtime = GenerationRuntime.open({ modelPath: LLAMA2_TINY_RANDOM, threads: 1, maxSequences: 16, prefixCache: NO_PREFIX_CACHE });
    try {
      const prompt = tokensText(runtime, "The answer is ");
      assert.equal(prompt.at(-1), " ", "the prompt's last token is the lone space");
      const results = await Promise.all(
        seeds(16).map((seed) => recorded(runtime, request({ prompt: "The answer is ", pattern: "[a-z]+", seed, maxNewTokens: 6 }))),
      );
      let longer = 0;
      for (const r of results) {
        assert.match(r.completion, /^[a-z]+$/);
        assert.deepEqual([...r.rec.prefix!], [0x20], "healing backs up over the space token");
        const first = runtime.vocab.tokenBytes(r.rec.tokens[0]!);
        assert.equal(first[0], 0x20, "the first generated token begins with the backed-up space");
        if (first.length > 1) longer++;
        const bytes = tokenBytesConcat(runtime.vocab, r.rec.tokens);
        assert.equal(new TextDecoder().decode(bytes.subarray(1)), r.completion);
      }
      assert.ok(longer > 0);
      // A pattern that itself starts with a space still gets exactly the pattern's space.
      const spaced = await runtime.completeRegex(request({ prompt: "The answer is ", pattern: " [a-z]+", seed: 5 }));
      assert.match(spaced.completion, /^ [a-z]+$/);
      // No healing without a trailing space: nothing is backed up.
      const plain = await recorded(runtime, request({ prompt: "The answer is", pattern: " [a-z]+", seed: 5 }));
      assert.equal(plain.rec.prefix, undefined);
      assert.match(plain.completion, /^ [a-z]+$/);
    } finally {
      await runtime.close();
    }
  });

  describe("BPE (gpt-2 vocabulary, random logits)", () => {
    let driver: RandomLogitsRuntime;
    before(() => (driver = openRandomLogitsRuntime(vocabFile("gpt-2"), { maxSequences: 16 })));
    after(async () => driver.close());

    test("the first token begins with the backed-up space; the completion has no leading space", async () => {
      const runtime = driver.runtime;
      const results = await Promise.all(
        seeds(24).map((seed) =>
          recorded(
            runtime,
            request({ prompt: "The answer is ", pattern: "[a-z]{2,12}", seed, maxNewTokens: 4, temperature: 1.5, topK: 0 }),
          ),
        ),
      );
      let merged = 0;
      for (const r of results) {
        assert.match(r.completion, /^[a-z]{2,12}$/);
        assert.deepEqual([...r.rec.prefix!], [0x20]);
        const first = new TextDecoder().decode(runtime.vocab.tokenBytes(r.rec.tokens[0]!));
        assert.ok(first.startsWith(" "), JSON.stringify(first));
        // " word" tokens: the space and the word in one token, as the model was trained.
        if (/^ [a-z]+$/.test(first)) merged++;
        assert.ok(!r.completion.startsWith(" "));
      }
      assert.ok(merged > results.length / 2, `${merged} of ${results.length} first tokens are " word"`);
    });

    test("healing never puts prompt text in the completion and respects the budget", async () => {
      const runtime = driver.runtime;
      for (const [pattern, budget] of [
        ["\\d{4}", 4],
        ["(cat|dog)", 1],
        [".{0,3}", 2],
        ["x", 1],
      ] as const) {
        const r = await recorded(runtime, request({ prompt: "Pick one: ", pattern, maxNewTokens: budget, seed: 9 }));
        assert.ok(r.tokensGenerated <= budget);
        assert.ok(!r.completion.startsWith("Pick"), r.completion);
        await assertFullMatches(pattern, [r.completion]);
      }
    });
  });
});

describe("end of generation (random logits that always prefer EOG)", () => {
  let driver: RandomLogitsRuntime;
  before(() => (driver = openRandomLogitsRuntime(vocabFile("gpt-2"), { maxSequences: 8, eogBoost: 1 })));
  after(async () => driver.close());

  test("EOG is taken at the first full match and never before", async () => {
    const runtime = driver.runtime;
    for (const [pattern, check] of [
      ["a+", /^a+$/],
      ["(ab){2,3}", /^(ab){2,3}$/],
      ["\\d{3}-\\d{2}", /^\d{3}-\d{2}$/],
      ["abc", /^abc$/],
    ] as const) {
      for (const seed of seeds(4)) {
        const r = await recorded(runtime, request({ prompt: "x", pattern, stopAfterMatch: false, maxNewTokens: 12, temperature: 0, seed }));
        assert.match(r.completion, check);
        assert.equal(r.stopReason, "pattern_match");
        // Stopped by EOG right after the first full match: no shorter token boundary matched.
        const vocab = runtime.vocab;
        for (let k = 1; k < r.rec.tokens.length; k++) {
          const head = new TextDecoder().decode(tokenBytesConcat(vocab, r.rec.tokens.slice(0, k)));
          assert.doesNotMatch(head, check, `EOG was allowed after ${JSON.stringify(head)} but not taken`);
        }
      }
    }
  });

  test("stop_after_match true never samples EOG: it stops by itself", async () => {
    const r = await driver.runtime.completeRegex(request({ prompt: "x", pattern: "[0-9]{2}", stopAfterMatch: true, temperature: 0 }));
    assert.match(r.completion, /^[0-9]{2}$/);
    assert.equal(r.stopReason, "pattern_match");
  });
});

describe("regex classes against Python's Unicode re", () => {
  test("complement shorthands never admit what Python's \\S \\D \\W reject", async () => {
    const texts = ["\u00a0", "\u3000", "\u2003", "\u0663", "\u00e9", "\u00df", "x"];
    const patterns = [...COMPLEMENT_SHORTHAND_PATTERNS, "\\S", "\\D", "\\W", "[^\\s]", "[^\\d]", "[^\\w]"];
    const items = patterns.flatMap((p) => texts.map((t) => [[p], t] as const));
    const python = await oracle.fullmatch(items);
    const ours = items.map(([[p], t]) => matchesString(compileRegexCached(p!), t));
    const extra = items.filter((_, i) => ours[i] && !python[i]).map(([[p], t]) => `${p} ~ ${JSON.stringify(t)}`);
    assert.deepEqual(extra, [], "texts our DFA accepts but Python's re.fullmatch rejects");
  });
});

describe("KV cache shared by concurrent requests", () => {
  test("requests that together exceed the context wait for room instead of failing", async () => {
    const runtime = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, maxSequences: 16, contextSize: 256 });
    try {
      const prompt = "Once upon a time there was a little girl named Lily. ".repeat(4);
      const promptTokens = runtime.countTokens(prompt);
      assert.ok(promptTokens + 24 <= 256 && 16 * (promptTokens + 24) > 2 * 256, `prompt of ${promptTokens} tokens`);
      const results = await Promise.all(
        seeds(16).map((seed) =>
          runtime.completeRegex(request({ prompt, pattern: "[a-z ]{1,200}", seed, stopAfterMatch: false, maxNewTokens: 24 })),
        ),
      );
      for (const r of results) assert.match(r.completion, /^[a-z ]+$/);
      assert.equal(runtime.scheduler.activeJobs, 0);
    } finally {
      await runtime.close();
    }
  });
});

describe("cancellation", () => {
  test("an aborted request rejects with the abort reason and frees its sequence", async () => {
    const driver = openRandomLogitsRuntime(vocabFile("gpt-2"), { maxSequences: 4 });
    try {
      const runtime = driver.runtime;
      const controller = new AbortController();
      const long = runtime.completeRegex(
        request({ prompt: "x", pattern: "[a-z]{1,400}", stopAfterMatch: false, maxNewTokens: 200, signal: controller.signal }),
      );
      const others = Promise.all(seeds(3).map((seed) => runtime.completeRegex(request({ prompt: "y", pattern: "\\d{3}", seed }))));
      while (driver.context.decodes < 3) await new Promise((resolve) => setImmediate(resolve));
      const reason = new Error("client went away");
      controller.abort(reason);
      await assert.rejects(long, (error: unknown) => error === reason);
      for (const r of await others) assert.match(r.completion, /^\d{3}$/);
      assert.equal(runtime.scheduler.activeJobs, 0);
      assert.equal(runtime.scheduler.slots.available, runtime.scheduler.slots.capacity);
      // Already aborted before it starts: refused without generating.
      await assert.rejects(
        runtime.completeRegex(request({ pattern: "a", signal: AbortSignal.abort(reason) })),
        (e: unknown) => e === reason,
      );
    } finally {
      await driver.close();
    }
  });
});

function tokensText(runtime: GenerationRuntime, prompt: string): string[] {
  return [...runtime.tokenizePrompt(prompt)].map((t) => new TextDecoder().decode(runtime.vocab.tokenBytes(t)));
}
