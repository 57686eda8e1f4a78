/**
 * Property tests with random category lists (random strings, shared prefixes, prefixes of each
 * other, unicode, 1 to 100 categories) on real models: choices are supplied categories, spelled
 * exactly, in the supplied order, without duplicates, never empty unless allowed; scores cover
 * every category; the same request gives the same answer (to float noise). Plus what the tiny
 * trained model knows.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime } from "../src/generate/index.js";
import { Categorizer } from "../src/categorize/index.js";
import { InvalidRequestError, type CategorizeRequest, type CategorizeResult } from "../src/generate/index.js";
import { STORIES_260K, LLAMA2_TINY_RANDOM } from "./support/paths.js";
import { seededRandom } from "../src/support/index.js";
import { assertSameAnswer, SAME_REQUEST_TOLERANCE } from "./support/categorize-answers.js";

/** Seeded (mulberry32), so a failure reproduces. */
const rng = seededRandom;

const WORDS = ["dog", "cat", "google-maps-api", "stripe-api", "positive", "negative", "neutral", "happy", "a", "the end", "x_y", "42"];
const UNICODE = ["café", "naïve", "東京", "🙂", "😀😀", "Ωmega", "ß", "日本語のテキスト", "ñ", "\u0301e"];
const CHARS = "abcdefghijklmnopqrstuvwxyz -_/.,:!?'\"()0123456789ABCXYZ";

function randomCategories(next: () => number, count: number): string[] {
  const out = new Set<string>();
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const randomString = (): string => {
    const n = 1 + Math.floor(next() * 10);
    let s = "";
    for (let i = 0; i < n; i++) s += next() < 0.15 ? pick(UNICODE) : CHARS[Math.floor(next() * CHARS.length)]!;
    return s;
  };
  while (out.size < count) {
    const r = next();
    const existing = [...out];
    if (r < 0.2) out.add(pick(WORDS));
    else if (r < 0.3) out.add(pick(UNICODE));
    else if (r < 0.5 && existing.length > 0) {
      // A prefix of an existing one, or an existing one extended: prefixes of each other.
      const base = pick(existing);
      const chars = [...base];
      out.add(
        next() < 0.5 && chars.length > 1 ? chars.slice(0, 1 + Math.floor(next() * (chars.length - 1))).join("") : base + randomString(),
      );
    } else if (r < 0.65 && existing.length > 0) out.add(`${pick(existing)} ${pick(WORDS)}`);
    else out.add(randomString());
  }
  return [...out];
}

function checkWellFormed(req: CategorizeRequest, got: CategorizeResult): void {
  const index = new Map(req.categories.map((c, i) => [c, i]));
  let last = -1;
  for (const c of got.choices) {
    const at = index.get(c);
    assert.ok(at !== undefined, `choice ${JSON.stringify(c)} was not supplied`);
    assert.ok(at > last, `choices out of order or duplicated: ${JSON.stringify(got.choices)}`);
    last = at;
  }
  if (!req.allowNullCategory) assert.ok(got.choices.length > 0, "empty answer without allow_null_category");
  if (!req.allowMultipleClasses) assert.ok(got.choices.length <= 1, "several answers in single mode");
  if (req.includeScores) {
    assert.ok(got.scores);
    assert.deepEqual(Object.keys(got.scores).sort(), [...req.categories].sort());
    let total = 0;
    for (const c of req.categories) {
      const p = got.scores[c]!;
      assert.ok(Number.isFinite(p) && p >= 0 && p <= 1, `score of ${c}: ${p}`);
      total += p;
    }
    if (!req.allowMultipleClasses) {
      assert.ok(total <= 1 + 1e-9, `scores sum to ${total}`);
      if (!req.allowNullCategory) assert.ok(Math.abs(total - 1) < 1e-9, `scores sum to ${total}`);
      if (got.choices.length === 1) {
        const chosen = got.scores[got.choices[0]!]!;
        for (const c of req.categories) assert.ok(got.scores[c]! <= chosen, `${c} scores above the choice`);
      }
    } else {
      for (const c of req.categories)
        assert.equal(got.choices.includes(c), got.scores[c]! > 0.5 || (got.choices.length === 1 && got.choices[0] === c), c);
    }
  } else {
    assert.equal(got.scores, undefined);
  }
}

for (const [name, path, cases] of [
  ["stories260K", STORIES_260K, 24],
  ["llama-2-tiny-random", LLAMA2_TINY_RANDOM, 30],
] as const) {
  describe(`random category lists on ${name}`, () => {
    let runtime: GenerationRuntime;
    let categorizer: Categorizer;
    before(() => {
      runtime = GenerationRuntime.open({ modelPath: path, threads: 1, maxSequences: 40, contextSize: 2048 });
      categorizer = new Categorizer(runtime);
    });
    after(async () => runtime.close());

    test(`${cases} random requests are well-formed and deterministic`, async () => {
      const next = rng(name.length * 7919);
      const counts: number[] = [];
      for (let k = 0; k < cases; k++) {
        // Mostly small lists, some up to 100.
        const count = next() < 0.8 ? 1 + Math.floor(next() * 8) : 9 + Math.floor(next() * 92);
        const categories = randomCategories(next, count);
        counts.push(count);
        const req: CategorizeRequest = {
          prompt: next() < 0.3 ? "Line one.\nLine two: which fits?" : `Item ${k}: ${categories[0]} or else`,
          categories,
          allowMultipleClasses: next() < 0.5,
          allowNullCategory: next() < 0.5,
          includeScores: next() < 0.8,
        };
        const first = await categorizer.categorize(req);
        checkWellFormed(req, first);
        // Again: now over the cached prompt, in other KV cells (support/categorize-answers.ts).
        const again = await categorizer.categorize(req);
        await assertSameAnswer(req, first, again, SAME_REQUEST_TOLERANCE, `not deterministic: ${JSON.stringify(categories)}`, () =>
          categorizer.categorize({ ...req, includeScores: true }),
        );
      }
      // The seeded lists cover the range: tiny ones and large ones.
      assert.ok(counts.some((c) => c <= 2) && counts.some((c) => c >= 50), `counts ${counts}`);
    });

    test("duplicate and empty categories are refused", async () => {
      const base = { prompt: "p", allowMultipleClasses: false, allowNullCategory: false, includeScores: false };
      await assert.rejects(categorizer.categorize({ ...base, categories: ["a", "b", "a"] }), InvalidRequestError);
      await assert.rejects(categorizer.categorize({ ...base, categories: ["a", ""] }), InvalidRequestError);
      await assert.rejects(categorizer.categorize({ ...base, categories: [] }), InvalidRequestError);
    });

    test("a category spelled like the null option still competes as itself", async () => {
      const req: CategorizeRequest = {
        prompt: "Pick one.",
        categories: ["none of these", "red"],
        allowMultipleClasses: false,
        allowNullCategory: true,
        includeScores: true,
      };
      const got = await categorizer.categorize(req);
      checkWellFormed(req, got);
    });

    test("a prompt longer than the context is a 400-type error, not a crash", async () => {
      const prompt = "word ".repeat(3000);
      await assert.rejects(
        categorizer.categorize({
          prompt,
          categories: ["a", "b"],
          allowMultipleClasses: false,
          allowNullCategory: false,
          includeScores: false,
        }),
        InvalidRequestError,
      );
    });
  });
}

describe("what stories260K knows decides", () => {
  let runtime: GenerationRuntime;
  let categorizer: Categorizer;
  before(() => {
    runtime = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, maxSequences: 16 });
    categorizer = new Categorizer(runtime);
  });
  after(async () => runtime.close());

  const cases: Array<[string, string[], string]> = [
    ["Lily went to the park to play with her", ["dog", "quantum", "invoice"], "dog"],
    ["Once upon a time, there was a little girl named", ["Lily", "Xerxes", "Gödel"], "Lily"],
    ["Tom saw a big red", ["ball", "spreadsheet", "tax"], "ball"],
    ["She was very happy. She had a big", ["smile", "frown", "debt"], "smile"],
    ["I love this toy! It is the best toy ever.", ["positive", "negative", "neutral"], "positive"],
  ];
  for (const [prompt, categories, expected] of cases) {
    test(`${prompt} … → ${expected}`, async () => {
      const got = await categorizer.categorize({
        prompt,
        categories,
        allowMultipleClasses: false,
        allowNullCategory: false,
        includeScores: true,
      });
      assert.deepEqual(got.choices, [expected], JSON.stringify(got.scores));
    });
  }
});
