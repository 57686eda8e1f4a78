/**
 * Exactness of batched categorization: the chosen category and the scores equal what an
 * UNBATCHED reference computes — each option's full text evaluated on a fresh single-sequence
 * context through src/model, log-softmax and the answer-end token set re-implemented here.
 * Also: waves (fewer sequences than categories), concurrency, and round counts.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime } from "../src/generate/index.js";
import { Categorizer, NULL_OPTION, formatMultiPrompt, formatSinglePrompt } from "../src/categorize/index.js";
import { loadModel, LlamaBatch, TokenAttr, type LlamaContext, type LlamaModel } from "../src/model/index.js";
import { STORIES_260K, LLAMA2_TINY_RANDOM } from "./support/paths.js";
import type { CategorizeRequest, CategorizeResult } from "../src/generate/index.js";

/** Log-softmax of one logits row, in doubles. */
function logSoftmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of logits) if (v > max) max = v;
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - lse);
}

function logSumOf(logp: Float64Array, ids: number[]): number {
  let max = -Infinity;
  for (const id of ids) max = Math.max(max, logp[id]!);
  if (max === -Infinity) return max;
  let sum = 0;
  for (const id of ids) sum += Math.exp(logp[id]! - max);
  return max + Math.log(sum);
}

/** The reference: one model, one fresh sequence per evaluation. */
class Reference {
  readonly model: LlamaModel;
  private readonly ctx: LlamaContext;
  private readonly batch: LlamaBatch;
  readonly endIds: number[];

  constructor(path: string) {
    this.model = loadModel(path, { threads: 1 });
    this.ctx = this.model.createContext({ nCtx: 2048, nSeqMax: 1, nBatch: 2048, threads: 1 });
    this.batch = new LlamaBatch(2048);
    // The answer ends when the next token starts with whitespace or closing punctuation, or ends
    // generation. Pieces come from llama.cpp (not from src/vocab, which the scorer uses).
    const attrs = this.model.tokenAttributes();
    const eog = new Set(this.model.eogTokens());
    const closing = new Set([..." \n\r\t.,;:!?)]}\"'"].map((c) => c.charCodeAt(0)));
    this.endIds = [];
    for (let id = 0; id < this.model.nVocab; id++) {
      if (eog.has(id)) {
        this.endIds.push(id);
        continue;
      }
      if (attrs[id]! & (TokenAttr.Control | TokenAttr.Unused | TokenAttr.Unknown)) continue;
      const piece = this.model.tokenPiece(id);
      if (piece.length > 0 && closing.has(piece[0]!)) this.endIds.push(id);
    }
  }

  /** Log-softmax rows after each of tokens[from-1 ..]: row i predicts tokens[from + i]. */
  rows(tokens: Int32Array, from: number): Float64Array[] {
    this.ctx.clearMemory();
    this.batch.clear();
    for (let i = 0; i < tokens.length; i++) this.batch.add(tokens[i]!, i, 0, i >= from - 1);
    this.ctx.decode(this.batch);
    const out: Float64Array[] = [];
    let row = 0;
    for (let i = 0; i < tokens.length; i++) {
      if (i >= from - 1) out.push(logSoftmax(this.ctx.logits(row)));
      row++;
    }
    return out;
  }

  /** Single mode: log P(option tokens) + log P(answer ends) after the formatted prompt. */
  singleLogProbs(prompt: string, options: string[]): number[] {
    const text = formatSinglePrompt({ kind: "plain" }, prompt, options)[0]!.text;
    const promptTokens = this.model.tokenize(text, { addSpecial: true });
    return options.map((o) => {
      const full = this.model.tokenize(`${text} ${o}`, { addSpecial: true });
      const rows = this.rows(full, promptTokens.length);
      let sum = 0;
      for (let i = promptTokens.length; i < full.length; i++) sum += rows[i - promptTokens.length]![full[i]!]!;
      return sum + logSumOf(rows[rows.length - 1]!, this.endIds);
    });
  }

  /** Multi mode: P(yes) / (P(yes) + P(no)) after each category's question. */
  multiYes(prompt: string, categories: string[], yes: number[], no: number[]): number[] {
    const { question } = formatMultiPrompt({ kind: "plain" }, prompt, categories);
    return categories.map((c) => {
      const full = this.model.tokenize(question(c)[0]!.text, { addSpecial: true });
      const last = this.rows(full, full.length).at(-1)!;
      const y = logSumOf(last, yes);
      const n = logSumOf(last, no);
      const m = Math.max(y, n);
      return Math.exp(y - m) / (Math.exp(y - m) + Math.exp(n - m));
    });
  }

  /** Tokens spelling the word in any case with or without a leading space, plus the first token of " word" after "Answer:". */
  wordSet(word: string): number[] {
    const ids = new Set<number>();
    const attrs = this.model.tokenAttributes();
    const decoder = new TextDecoder();
    for (let id = 0; id < this.model.nVocab; id++) {
      if (!(attrs[id]! & (TokenAttr.Normal | TokenAttr.UserDefined))) continue;
      if (decoder.decode(this.model.tokenPiece(id)).trimStart().toLowerCase() === word) ids.add(id);
    }
    const base = formatSinglePrompt({ kind: "plain" }, "", [])[0]!.text;
    const before = this.model.tokenize(base, { addSpecial: true });
    const after = this.model.tokenize(`${base} ${word}`, { addSpecial: true });
    let k = 0;
    while (before[k] === after[k]) k++;
    ids.add(after[k]!);
    return [...ids];
  }

  dispose(): void {
    this.model.dispose();
  }
}

const request = (prompt: string, categories: string[], extra: Partial<CategorizeRequest> = {}): CategorizeRequest => ({
  prompt,
  categories,
  allowMultipleClasses: false,
  allowNullCategory: false,
  includeScores: true,
  ...extra,
});

const SINGLE_CASES: Array<[string, string[]]> = [
  ["Lily went to the park to play with her", ["dog", "quantum", "invoice"]],
  ["Tom saw a big red", ["ball", "balloon", "ba", "b"]],
  ["The cat sat on the", ["mat", "mat mat", "matter", "hat", "hats"]],
  ["Once upon a time", ["once", "Once upon", "time", "tıme", "時間", "🙂"]],
  ["Pick a tool.", ["google-maps-api", "google-search-api", "stripe-api", "twilio-api"]],
  ["Multi\nline\nprompt:", ["x", "y", "z"]],
  ["", ["a", "b"]],
];

/**
 * How far batched and unbatched scores may differ. On the CPU (flash attention off, the runtime's
 * default there) llama.cpp computes a row of a batch the same way whatever else is in it, but
 * attention sums over the KV cells in their order, and other waves or a reused prefix put a
 * sequence's tokens in other cells: scores move by float noise (up to 3e-4 measured here), and
 * two options that close may swap. A GPU backend picks other kernels for other batch shapes
 * (matrix-vector with 8-bit activations for one row, tiled matrix products for more), so
 * probabilities move by about 1e-3 there.
 */
const scoreTolerance = (runtime: GenerationRuntime, cpu: number): number => (runtime.model.offloaded ? 2e-2 : cpu);

/** Equal choices, except that two options within `tol` of each other may swap. */
function assertSameChoice(got: string[], want: string[], scores: Record<string, number>, tol: number, what: string): void {
  if (got.length === 1 && want.length === 1 && got[0] !== want[0]) {
    assert.ok(Math.abs(scores[got[0]!]! - scores[want[0]!]!) < tol, `${what}: ${got[0]} vs ${want[0]} is no near tie`);
    return;
  }
  assert.deepEqual(got, want, what);
}

for (const [name, path] of [
  ["stories260K", STORIES_260K],
  ["llama-2-tiny-random", LLAMA2_TINY_RANDOM],
] as const) {
  describe(`categorization is exact on ${name}`, () => {
    let runtime: GenerationRuntime;
    let small: GenerationRuntime;
    let categorizer: Categorizer;
    let reference: Reference;
    before(() => {
      // Without the prefix cache: a reused prefix sits in other KV cells, and attention sums over
      // the cells in their order, so its scores move in the last bits (test/generate-prefix-cache
      // holds that within tolerance); batching itself must not move them at all.
      const noCache = { tokens: 0, entries: 0 };
      runtime = GenerationRuntime.open({ modelPath: path, threads: 1, maxSequences: 40, contextSize: 2048, prefixCache: noCache });
      // Five sequences: four branch sequences, so more categories go in waves.
      small = GenerationRuntime.open({ modelPath: path, threads: 1, maxSequences: 5, contextSize: 2048, prefixCache: noCache });
      categorizer = new Categorizer(runtime);
      reference = new Reference(path);
    });
    after(async () => {
      await runtime.close();
      await small.close();
      reference.dispose();
    });

    test("single mode: choice is the argmax of unbatched full-sequence log-probabilities, scores match", async () => {
      for (const [prompt, categories] of SINGLE_CASES) {
        for (const allowNull of [false, true]) {
          const options = allowNull ? [...categories, NULL_OPTION] : categories;
          const ref = reference.singleLogProbs(prompt, options);
          const max = Math.max(...ref);
          const total = ref.reduce((s, v) => s + Math.exp(v - max), 0);
          const got = await categorizer.categorize(request(prompt, categories, { allowNullCategory: allowNull }));
          const best = ref.indexOf(max);
          const expected = best === categories.length ? [] : [categories[best]!];
          const tol = scoreTolerance(runtime, 1e-3);
          assertSameChoice(
            got.choices,
            expected,
            got.scores!,
            tol,
            `${prompt} ${JSON.stringify(categories)} ref=${ref.map((v) => v.toFixed(4))}`,
          );
          categories.forEach((c, i) => {
            const want = Math.exp(ref[i]! - max) / total;
            assert.ok(Math.abs(got.scores![c]! - want) < tol, `${c}: ${got.scores![c]} vs ${want}`);
          });
        }
      }
    });

    test("multi mode: P(yes) of every category matches the unbatched reference", async () => {
      const yes = reference.wordSet("yes");
      const no = reference.wordSet("no");
      for (const [prompt, categories] of SINGLE_CASES.slice(0, 5)) {
        const ref = reference.multiYes(prompt, categories, yes, no);
        const got = await categorizer.categorize(request(prompt, categories, { allowMultipleClasses: true, allowNullCategory: true }));
        const tol = scoreTolerance(runtime, 1e-3);
        categories.forEach((c, i) => assert.ok(Math.abs(got.scores![c]! - ref[i]!) < tol, `${c}: ${got.scores![c]} vs ${ref[i]}`));
        const nearHalf = (i: number): boolean => runtime.model.offloaded && Math.abs(ref[i]! - 0.5) < tol;
        assert.deepEqual(
          got.choices,
          categories.filter((c, i) => (nearHalf(i) ? got.choices.includes(c) : ref[i]! > 0.5)),
        );
      }
    });

    test("waves over few sequences give the same answers as one wave", async () => {
      const waved = new Categorizer(small);
      const categories = Array.from(
        { length: 23 },
        (_, i) => ["red", "redder", "blue", "blu", "green"][i % 5]! + (i >= 5 ? String(i) : ""),
      );
      for (const multi of [false, true]) {
        const a = await categorizer.categorize(request("Colours:", categories, { allowMultipleClasses: multi }));
        const b = await waved.categorize(request("Colours:", categories, { allowMultipleClasses: multi }));
        const tol = scoreTolerance(runtime, 1e-3);
        const clear = (c: string): boolean => !runtime.model.offloaded || Math.abs(a.scores![c]! - 0.5) >= tol;
        // Multiple answers with none above 0.5 fall back to the best one: a single choice again.
        const fellBack = multi && categories.every((c) => a.scores![c]! < 0.5 - tol);
        if (multi && !fellBack) assert.deepEqual(b.choices.filter(clear), a.choices.filter(clear));
        else assertSameChoice(b.choices, a.choices, a.scores!, tol, multi ? "multi, none above 0.5" : "single");
        for (const c of categories) assert.ok(Math.abs(a.scores![c]! - b.scores![c]!) < tol, c);
      }
    });

    test("concurrent requests share the scheduler and get their sequential answers", async () => {
      const requests = SINGLE_CASES.map(([p, c], i) => request(p, c, { allowMultipleClasses: i % 2 === 1 }));
      const sequential: CategorizeResult[] = [];
      for (const r of requests) sequential.push(await categorizer.categorize(r));
      const concurrent = await Promise.all(requests.map((r) => categorizer.categorize(r)));
      concurrent.forEach((got, i) => {
        const tol = scoreTolerance(runtime, 1e-3);
        if (requests[i]!.allowMultipleClasses) assert.deepEqual(got.choices, sequential[i]!.choices);
        else assertSameChoice(got.choices, sequential[i]!.choices, got.scores!, tol, `request ${i}`);
        for (const c of requests[i]!.categories)
          assert.ok(
            Math.abs(got.scores![c]! - sequential[i]!.scores![c]!) < tol,
            `${i} ${c} ${got.scores![c]} ${sequential[i]!.scores![c]}`,
          );
      });
    });

    test("decode rounds: the prompt with the first chains, then one per deeper branch level", async () => {
      // Multi mode: every question diverges once after the shared stem, right below the prompt:
      // the prompt rows are shared by the branches' sequences, so one decode does it all.
      await categorizer.categorize(
        request("The weather today is", ["sunny", "rainy", "a very long category name with many tokens"], { allowMultipleClasses: true }),
      );
      assert.equal(categorizer.lastStats!.rounds, 1);
      // Single mode: one round, plus one per deeper trie branch point, however long the
      // categories are (a small vocabulary may spell the leading space as its own token).
      await categorizer.categorize(request("Pick:", ["zebra crossing at night", "quiet", "xylophone music lessons"]));
      assert.ok(categorizer.lastStats!.rounds <= 2, `rounds ${categorizer.lastStats!.rounds}`);
      // Rows: every category token once (trie-shared ones once), not once per round.
      await categorizer.categorize(request("Pick:", ["dog", "dogs", "dogsled"]));
      const stats = categorizer.lastStats!;
      assert.ok(stats.rounds <= 5, `rounds ${stats.rounds}`);
    });
  });
}
