// Embeddings on the native path (src/model) and the embedding lane (src/generate/embeddings.ts)
// on stories260K and llama-2-tiny-random: a pooled vector has n_embd values, decodes repeat it
// bit for bit, mean pooling equals the mean of the unpooled rows computed by hand, sequences
// packed in one decode pool apart; the lane normalizes, refuses bad inputs by field, and takes
// turns with generations on the same model without changing their results.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { loadModel, PoolingType, type LlamaContext, type LlamaModel } from "../src/model/index.js";
import { embeddingPooling, GenerationRuntime, InvalidRequestError, normalized } from "../src/generate/index.js";
import { LLAMA2_TINY_RANDOM, NO_PREFIX_CACHE, STORIES_260K } from "./support/paths.js";

const THREADS = 1;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/** Decodes each token list as its own sequence in one batch; the context's pooled vectors. */
function pooled(ctx: LlamaContext, inputs: Int32Array[]): Float32Array[] {
  const batch = ctx.createBatch();
  inputs.forEach((tokens, seq) => batch.addSequence(tokens, 0, seq, false));
  ctx.decode(batch);
  const out = inputs.map((_, seq) => ctx.embeddingSeq(seq)!);
  ctx.clearMemory();
  return out;
}

for (const [name, path] of [
  ["stories260K", STORIES_260K],
  ["llama-2-tiny-random", LLAMA2_TINY_RANDOM],
] as const) {
  describe(`native embeddings on ${name}`, () => {
    let model: LlamaModel;
    let mean: LlamaContext;
    let rows: LlamaContext;
    let tokens: Int32Array;

    before(() => {
      model = loadModel(path, { threads: THREADS });
      mean = model.createContext({ nCtx: 64, nBatch: 64, nSeqMax: 4, embeddings: true, pooling: PoolingType.Mean });
      rows = model.createContext({ nCtx: 64, nBatch: 64, nSeqMax: 4, embeddings: true, pooling: PoolingType.None });
      tokens = model.tokenize("Once upon a time there was a little girl", { addSpecial: true });
    });

    after(() => model.dispose());

    test("a causal LM names no pooling: the lane mean-pools", () => {
      assert.equal(embeddingPooling(model), PoolingType.Mean);
      assert.equal(mean.pooling, PoolingType.Mean);
      assert.equal(rows.pooling, PoolingType.None);
      assert.ok(mean.embeddings);
    });

    test("a pooled vector has n_embd values, and a second decode repeats it bit for bit", () => {
      const [first] = pooled(mean, [tokens]);
      assert.equal(first!.length, model.nEmbd);
      assert.equal(mean.nEmbd, model.nEmbd);
      const [again] = pooled(mean, [tokens]);
      assert.deepEqual(again, first);
      assert.ok(first!.some((x) => x !== 0));
    });

    test("mean pooling is the mean of the unpooled rows", () => {
      const batch = rows.createBatch();
      batch.addSequence(tokens, 0, 0, false);
      rows.decode(batch);
      const hand = new Float64Array(model.nEmbd);
      for (let r = 0; r < tokens.length; r++) {
        const row = rows.embeddingRow(r);
        assert.equal(row.length, model.nEmbd);
        for (let k = 0; k < row.length; k++) hand[k]! += row[k]! / tokens.length;
      }
      rows.clearMemory();
      const [vector] = pooled(mean, [tokens]);
      assert.ok(maxAbsDiff(hand, vector!) < 1e-5, `max |Δ| ${maxAbsDiff(hand, vector!)}`);
      // The last row alone is not the mean: pooling did average.
      assert.throws(() => mean.embeddingRow(0), /pools its rows/);
    });

    test("sequences packed in one decode pool apart, each as it pools alone", () => {
      const other = model.tokenize("The dog barked", { addSpecial: true });
      const [alone] = pooled(mean, [tokens]);
      const [otherAlone] = pooled(mean, [other]);
      const [a, b, c] = pooled(mean, [tokens, other, tokens]);
      assert.ok(maxAbsDiff(a!, alone!) < 1e-5);
      assert.ok(maxAbsDiff(c!, alone!) < 1e-5);
      assert.ok(maxAbsDiff(b!, otherAlone!) < 1e-5);
      assert.ok(maxAbsDiff(a!, b!) > 1e-3);
      assert.equal(mean.embeddingSeq(3), null); // not in the last decode (cleared)
    });

    test("an embedding context whose micro-batch the sequences do not divide is refused, not an abort", () => {
      assert.throws(
        () => model.createContext({ nCtx: 100, nBatch: 100, nSeqMax: 32, embeddings: true, pooling: PoolingType.Mean }),
        /nUbatch \(100\) to be a multiple of nSeqMax \(32\)/,
      );
    });

    test("a generation context has no embeddings to read", () => {
      const gen = model.createContext({ nCtx: 32, nBatch: 32 });
      assert.equal(gen.embeddings, false);
      assert.throws(() => gen.embeddingSeq(0), /not an embedding context/);
      gen.dispose();
    });
  });
}

test("normalized: unit L2 norm, direction kept, a zero vector stays zero", () => {
  const v = normalized(Float32Array.of(3, 4));
  assert.ok(Math.abs(v[0]! - 0.6) < 1e-7 && Math.abs(v[1]! - 0.8) < 1e-7);
  assert.deepEqual(normalized(new Float32Array(3)), new Float32Array(3));
});

describe("the embedding lane of a GenerationRuntime (stories260K)", () => {
  let runtime: GenerationRuntime;

  before(() => {
    runtime = GenerationRuntime.open({
      modelPath: STORIES_260K,
      threads: THREADS,
      maxSequences: 4,
      embeddingInputTokens: 48,
      prefixCache: NO_PREFIX_CACHE,
    });
  });

  after(async () => {
    await runtime.close();
  });

  const norm = (v: Float32Array): number => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));

  test("unit vectors of n_embd, the pooled mean scaled; tokens counted", async () => {
    const text = "Once upon a time";
    const { embeddings, promptTokens } = await runtime.embed({ inputs: [text] });
    assert.equal(promptTokens, runtime.tokenizePrompt(text).length);
    const [v] = embeddings;
    assert.equal(v!.length, runtime.model.nEmbd);
    assert.ok(Math.abs(norm(v!) - 1) < 1e-6);
    const ctx = runtime.model.createContext({ nCtx: 32, nBatch: 32, embeddings: true, pooling: PoolingType.Mean });
    const [raw] = pooled(ctx, [runtime.tokenizePrompt(text)]);
    ctx.dispose();
    assert.ok(maxAbsDiff(normalized(raw!), v!) < 1e-6);
  });

  test("requests more than one decode holds are served whole, round-robin with others, each vector as alone", async () => {
    // 48 tokens per decode: 12 inputs of ~6 tokens need more than one step.
    const texts = Array.from({ length: 12 }, (_, i) => `The cat number ${i} sat.`);
    const alone: Float32Array[] = [];
    for (const t of texts) alone.push((await runtime.embed({ inputs: [t] })).embeddings[0]!);
    const [big, small] = await Promise.all([runtime.embed({ inputs: texts }), runtime.embed({ inputs: ["Sun.", texts[3]!] })]);
    big.embeddings.forEach((v, i) => assert.ok(maxAbsDiff(v, alone[i]!) < 1e-5, `input ${i}`));
    assert.ok(maxAbsDiff(small.embeddings[1]!, alone[3]!) < 1e-5);
    // A small request sent after a big one is not held behind it: it takes its turn in the first
    // decode and is answered before the big one, which needs more decodes.
    const order: string[] = [];
    await Promise.all([
      runtime.embed({ inputs: texts }).then(() => order.push("big")),
      runtime.embed({ inputs: ["Sun."] }).then(() => order.push("small")),
    ]);
    assert.deepEqual(order, ["small", "big"]);
  });

  test("embeddings take turns with generations: both finish, the generation's text is what it is alone", async () => {
    const request = {
      prompt: "Once upon a time",
      maxNewTokens: 24,
      stopAfterMatch: false,
      temperature: 0,
      topK: 0,
      topP: 1,
      repetitionPenalty: 1,
      constraint: { kind: "text" } as const,
    };
    const solo = await runtime.complete(request);
    const [together] = await Promise.all([
      runtime.complete(request),
      runtime.embed({ inputs: ["A dog.", "A cat.", "A bird."] }),
      runtime.embed({ inputs: ["Lily and Tom played."] }),
    ]);
    assert.equal(together.completion, solo.completion);
    // Turns, not a queue: a short generation sent beside an embedding request of many decodes
    // (48 inputs, about 7 per decode) is answered first.
    const order: string[] = [];
    const many = Array.from({ length: 48 }, (_, i) => `The dog number ${i} ran.`);
    await Promise.all([
      runtime.embed({ inputs: many }).then(() => order.push("embeddings")),
      runtime.complete({ ...request, maxNewTokens: 2 }).then(() => order.push("generation")),
    ]);
    assert.deepEqual(order, ["generation", "embeddings"]);
  });

  test("bad inputs are refused by field: empty, too long, a token the model lacks; an aborted request rejects", async () => {
    const refused = async (inputs: (string | Int32Array)[], field: string, message: RegExp) =>
      assert.rejects(runtime.embed({ inputs, fields: inputs.map((_, i) => `input[${i}]`) }), (error: unknown) => {
        assert.ok(error instanceof InvalidRequestError, String(error));
        assert.equal(error.field, field);
        assert.match(error.message, message);
        return true;
      });
    await refused(["a", ""], "input[1]", /must not be empty/);
    await refused([new Int32Array(0)], "input[0]", /must not be empty/);
    await refused([new Int32Array(49).fill(1)], "input[0]", /at most 48/);
    await refused(["hi", Int32Array.of(1, 512)], "input[1]", /input\[1\]\[1\] is token 512/);
    const controller = new AbortController();
    controller.abort(new Error("client went away"));
    await assert.rejects(runtime.embed({ inputs: ["hi"], signal: controller.signal }), /client went away/);
  });
});
