/**
 * npm run bench:runtime — decode-loop throughput on the synthetic Qwen2-0.5B-shape model
 * (152k vocabulary, Q8_0; generated into .cache/models/ when missing) with the src/sampling
 * sampler (top_k 50, temperature 1):
 *   (a) unconstrained, (b) dense random mask (half the vocabulary), (c) sparse mask (64 tokens),
 * each for 1 and for 8 concurrent sequences (one decode per step for all of them).
 * The modes alternate in rounds (timings on shared VMs drift) and medians are reported.
 * Env: BENCH_ROUNDS, BENCH_STEPS (per round and mode), BENCH_QUANT (q8_0 | q4_0),
 * BENCH_MODEL (a GGUF path instead of the synthetic model), BENCH_THREADS,
 * BENCH_FLASH_ATTN (auto|on|off), BENCH_GATHER (native|script: the sampler's gather pass, see
 * src/sampling/gather.ts; default native when the addon is built).
 */
import { availableParallelism } from "node:os";
import { loadModel, SequenceSlots, type LlamaContext } from "../src/model/index.js";
import { Sampler, Xoshiro128, gatherKernelInUse, useGatherKernel } from "../src/sampling/index.js";
import { maskWords } from "../src/support/index.js";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { round3 } from "./stats.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const STEPS = Number(process.env.BENCH_STEPS ?? 8);
const THREADS = Number(process.env.BENCH_THREADS ?? availableParallelism());
const FLASH = process.env.BENCH_FLASH_ATTN ?? "auto";
const SEQUENCE_COUNTS = [1, 8];
const MODES = ["unconstrained", "dense", "sparse"] as const;
type Mode = (typeof MODES)[number];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

useGatherKernel(process.env.BENCH_GATHER === "script" ? "script" : "native");
const QUANT = process.env.BENCH_QUANT === "q4_0" ? "q4_0" : "q8_0";
const modelPath = process.env.BENCH_MODEL ?? ensureSyntheticModel("qwen2-0.5b", QUANT);
const model = loadModel(modelPath, { threads: THREADS });
const nVocab = model.nVocab;
const words = maskWords(nVocab);
const rng = new Xoshiro128(42);

// A few masks per mode, rotated, so no single mask stays hot in cache.
const MASK_VARIANTS = 4;
const masks: Record<Mode, (Uint32Array | null)[]> = { unconstrained: [null], dense: [], sparse: [] };
for (let v = 0; v < MASK_VARIANTS; v++) {
  const dense = new Uint32Array(words);
  for (let w = 0; w < words; w++) dense[w] = rng.nextUint32();
  masks.dense.push(dense);
  const sparse = new Uint32Array(words);
  for (let i = 0; i < 64; i++) {
    const id = rng.nextUint32() % nVocab;
    sparse[id >>> 5]! |= 1 << (id & 31);
  }
  masks.sparse.push(sparse);
}

interface Run {
  ctx: LlamaContext;
  slots: SequenceSlots;
  seqs: number[];
  samplers: Sampler[];
  lastToken: Int32Array;
  rows: Int32Array;
}

function setup(nSeq: number): Run {
  const ctx = model.createContext({
    nCtx: 4096,
    nSeqMax: nSeq,
    nBatch: 512,
    threads: THREADS,
    flashAttn: FLASH === "auto" ? "auto" : FLASH === "on",
  });
  const slots = new SequenceSlots(ctx);
  const first = slots.acquire();
  const prompt = model.tokenize("Write a short story about a robot who learns to paint.", { addSpecial: true });
  slots.prefill(first, prompt);
  const seqs = [first];
  while (seqs.length < nSeq) seqs.push(slots.fork(first)); // shared prompt prefix, no re-evaluation
  const lastToken = new Int32Array(nSeq).fill(prompt[prompt.length - 1]!);
  // Each sequence re-feeds the prompt's last token at the first step (its logits were consumed).
  for (const seq of seqs) slots.truncate(seq, prompt.length - 1);
  return {
    ctx,
    slots,
    seqs,
    samplers: seqs.map((_, i) => new Sampler(nVocab, { temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1, seed: i })),
    lastToken,
    rows: new Int32Array(nSeq),
  };
}

const batchBySeqCount = new Map<number, ReturnType<LlamaContext["createBatch"]>>();

/** Runs `steps` decode+sample steps; returns [seconds total, seconds in sampling]. */
function runSteps(run: Run, mode: Mode, steps: number, stepOffset: number): [number, number] {
  const { ctx, slots, seqs, samplers, lastToken, rows } = run;
  let batch = batchBySeqCount.get(seqs.length);
  if (!batch) batchBySeqCount.set(seqs.length, (batch = ctx.createBatch()));
  const variants = masks[mode];
  let sampling = 0;
  const started = performance.now();
  for (let s = 0; s < steps; s++) {
    batch.clear();
    for (let i = 0; i < seqs.length; i++) rows[i] = slots.append(batch, seqs[i]!, lastToken[i]!, true);
    ctx.decode(batch);
    const t0 = performance.now();
    for (let i = 0; i < seqs.length; i++) {
      const mask = variants[(stepOffset + s + i) % variants.length]!;
      const token = samplers[i]!.sample(ctx.logits(rows[i]!), mask);
      samplers[i]!.accept(token);
      lastToken[i] = token;
    }
    sampling += performance.now() - t0;
  }
  return [(performance.now() - started) / 1000, sampling / 1000];
}

/**
 * The CPU's batched-compute ceiling: tokens/s of one 64-token decode with logits for every row
 * (what any number of concurrent sequences could at best reach per step).
 */
function batchedCeiling(): number {
  const ctx = model.createContext({ nCtx: 256, nSeqMax: 1, nBatch: 64, threads: THREADS });
  const batch = ctx.createBatch();
  const rates: number[] = [];
  for (let rep = 0; rep < 3; rep++) {
    ctx.clearMemory();
    batch.clear();
    for (let i = 0; i < 64; i++) batch.add(1000 + i, i, 0, true);
    const t0 = performance.now();
    ctx.decode(batch);
    rates.push(64 / ((performance.now() - t0) / 1000));
  }
  ctx.dispose();
  return median(rates);
}

const results: Record<string, unknown> = {};
const ceiling = batchedCeiling();
const tokensPerSecond: Record<number, Record<Mode, number>> = {};
// Both sequence counts live side by side and alternate within every round, so drift of the
// shared machine hits them alike.
const runs = SEQUENCE_COUNTS.map((nSeq) => setup(nSeq));
for (const run of runs) runSteps(run, "unconstrained", 2, 0); // warm-up: page in the weights
const rates = runs.map((): Record<Mode, number[]> => ({ unconstrained: [], dense: [], sparse: [] }));
const samplingMsPerToken = runs.map((): Record<Mode, number[]> => ({ unconstrained: [], dense: [], sparse: [] }));
for (let r = 0; r < ROUNDS; r++) {
  for (let m = 0; m < MODES.length; m++) {
    // Rotate the order each round so drift does not favour one mode.
    const mode = MODES[(m + r) % MODES.length]!;
    runs.forEach((run, k) => {
      const nSeq = SEQUENCE_COUNTS[k]!;
      const [seconds, samplingSeconds] = runSteps(run, mode, STEPS, r * STEPS);
      rates[k]![mode].push((STEPS * nSeq) / seconds);
      samplingMsPerToken[k]![mode].push((samplingSeconds * 1000) / (STEPS * nSeq));
    });
  }
}
runs.forEach((run, k) => {
  const nSeq = SEQUENCE_COUNTS[k]!;
  const rate = rates[k]!;
  run.ctx.dispose();
  tokensPerSecond[nSeq] = {
    unconstrained: median(rate.unconstrained),
    dense: median(rate.dense),
    sparse: median(rate.sparse),
  };
  results[`seq${nSeq}`] = {
    tokensPerSecond: Object.fromEntries(MODES.map((m) => [m, round3(median(rate[m]))])),
    samplingMsPerToken: Object.fromEntries(MODES.map((m) => [m, round3(median(samplingMsPerToken[k]![m]))])),
    ratioDenseOverUnconstrained: round3(median(rate.dense) / median(rate.unconstrained)),
    ratioSparseOverUnconstrained: round3(median(rate.sparse) / median(rate.unconstrained)),
  };
});

const one = tokensPerSecond[1]!;
const eight = tokensPerSecond[8]!;
console.log(
  JSON.stringify(
    {
      bench: "runtime",
      model: { path: modelPath, description: model.description, nVocab, nParams: model.nParams },
      threads: THREADS,
      rounds: ROUNDS,
      stepsPerRoundAndMode: STEPS,
      sampler: { temperature: 1, topK: 50, gather: gatherKernelInUse() },
      masks: { dense: "random, ~50% of the vocabulary", sparse: "64 random tokens" },
      ...results,
      ratioDenseOverUnconstrained: results.seq1 && (results.seq1 as { ratioDenseOverUnconstrained: number }).ratioDenseOverUnconstrained,
      scaling8over1: Object.fromEntries(MODES.map((m) => [m, round3(eight[m] / one[m])])),
      batchedCeilingTokensPerSecond: round3(ceiling),
      ceilingOverSingleSequence: round3(ceiling / one.unconstrained),
      targets: { ratioDenseOverUnconstrained: ">= 0.97", scaling8over1: ">= 2.5" },
    },
    null,
    2,
  ),
);
model.dispose();
