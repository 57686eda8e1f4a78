/**
 * npm run bench:json-e2e — end to end: JSON Schema constrained decoding against unconstrained
 * decoding on the synthetic Qwen2-0.5B-shape model (152k vocabulary, Q8_0; generated into
 * .cache/models/ when missing), through the same GenerationRuntime path for both: the scheduler,
 * CompletionJob and the sampler (top_k 50, temperature 1, fixed seeds).
 *
 *   (a) unconstrained: the runtime has no unconstrained path, so its completeWithFactory runs with
 *       a constraint that allows every token at every step (a constant all-ones mask, always
 *       accepting, free of cost): the same decode loop, the same sampler gather over the whole
 *       vocabulary, only the constraint's work left out.
 *   (b) JSON Schema: a few realistic schemas (function-call arguments with strings, integers,
 *       enums and arrays; a nested object; an array of objects), compiled once before timing
 *       (runtime.prepare, reported as compileMs), then completed with max_new_tokens large enough
 *       for the document to finish (budget planning closes it within the budget in any case).
 *
 * Fast-forward (src/generate/fast-forward.ts): the JSON completions above run with it off; each
 * round also runs every schema's JSON completion with it on (same seed), reported under
 * `fastForward`: its decode rate over the unconstrained one (forced tokens count as decoded, as
 * they are output appended without a step of their own; target >= 1.5), the forced share of the
 * tokens, and the mean time to a complete document against the same completion without it
 * (target <= 0.6). llama.cpp runs with the service's default threads (cores - 1) unless --threads
 * says otherwise: with one thread (a 2-core machine) evaluating a batch of forced tokens costs
 * about as many single steps, so fast-forward saves little more than the per-step sampling there;
 * where a batch is nearly free (more threads, a GPU) its gain approaches 1 / (1 - forced share).
 *
 * Each round runs, per schema, one JSON completion and one unconstrained completion back to back,
 * which goes first alternating (timings on shared VMs drift, ×1.7 between runs here and by far
 * more within one while others compile or test: comparing neighbours is what survives that).
 * Each unconstrained completion generates as many tokens as the last JSON completion of its
 * schema (unless --tokens says otherwise), so both cover the same KV positions and weigh alike.
 * A completion's decode rate: tokens after the first over the time from the first sampled token
 * to the last (prompt prefill and budget planning excluded; first-token time reported apart).
 * Reported: the medians of those rates and their ratio (ratioJsonOverUnconstrained, the target:
 * >= 0.95), the median of the pairs' ratios, the ratio of the median step times (robust to load
 * bursts, blind to rare slow masks), pooled rates (sensitive to both), end-to-end rates (whole
 * complete() calls). Every constraint call during decoding is timed (mask, advance, isAccepting,
 * hasAnyToken): constraintMsPerToken, which load barely touches, and its share of an
 * unconstrained step. One untimed warm-up round first (pages in the weights and the first masks of
 * each schema's states; reported as warmUp).
 *
 * Usage: npm run bench:json-e2e -- [--rounds 5] [--tokens N] [--max-new-tokens 192] [--whitespace default|compact|indented]
 *          [--threads <n: default the service's, cores - 1>] [--top-k 50] [--quant q8_0|q4_0] [--model path.gguf]
 *   --tokens          tokens of each unconstrained completion (one per schema per round);
 *                     default: the length of the schema's last JSON completion.
 *   --max-new-tokens  the JSON completions' budget.
 * Prints one JSON object to stdout; progress on stderr.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { type ConstraintFactory, type ConstraintSpec, GenerationRuntime, type JsonSchemaTaskOptions } from "../src/generate/index.js";
import type { ConstraintEntry } from "../src/compile/index.js";
import type { ForcedBytes, TokenConstraint } from "../src/constraint/index.js";
import { defaultConfig } from "../src/config.js";
import { gatherKernelInUse } from "../src/sampling/index.js";
import { maskWords } from "../src/support/index.js";
import { argValue, round3 } from "./stats.js";

const ROUNDS = Number(argValue("rounds") ?? 5);
/** Tokens of each unconstrained completion; undefined: as many as the last JSON completion of its schema. */
const TOKENS = argValue("tokens") === undefined ? undefined : Number(argValue("tokens"));
const MAX_NEW_TOKENS = Number(argValue("max-new-tokens") ?? 192);
/** llama.cpp threads: the service's default (cores - 1: one core left to the serving thread) unless --threads. */
const THREADS = Number(argValue("threads") ?? defaultConfig().threads);
const TOP_K = Number(argValue("top-k") ?? 50);
const QUANT = argValue("quant") === "q4_0" ? "q4_0" : "q8_0";
const PROMPT = "You are a helpful assistant. Answer with a single JSON document that follows the schema.\nJSON:";
/** --whitespace compact|default|indented: the JSON style asked for (the service's default: default). */
const WHITESPACE = (argValue("whitespace") ?? "default") as JsonSchemaTaskOptions["whitespace"];
const JSON_OPTIONS: JsonSchemaTaskOptions = { whitespace: WHITESPACE, forbidUnnamedProperties: false, strict: true };

const SCHEMAS: Record<string, unknown> = {
  // The arguments of a function call, as tool-calling APIs ask for them.
  functionCall: {
    type: "object",
    properties: {
      location: { type: "string", maxLength: 40 },
      unit: { type: "string", enum: ["celsius", "fahrenheit", "kelvin"] },
      days: { type: "integer", minimum: 1, maximum: 14 },
      include: { type: "array", items: { type: "string", enum: ["temperature", "wind", "humidity", "precipitation"] }, maxItems: 4 },
      detailed: { type: "boolean" },
    },
    required: ["location", "unit", "days"],
    additionalProperties: false,
  },
  nestedObject: {
    type: "object",
    properties: {
      id: { type: "integer", minimum: 0 },
      name: { type: "string", minLength: 1, maxLength: 32 },
      address: {
        type: "object",
        properties: {
          street: { type: "string", maxLength: 40 },
          city: { type: "string", maxLength: 24 },
          zip: { type: "string", pattern: "^[0-9]{5}$" },
          country: { type: "string", enum: ["US", "CA", "GB", "DE", "FR"] },
        },
        required: ["street", "city", "country"],
        additionalProperties: false,
      },
      tags: { type: "array", items: { type: "string", maxLength: 12 }, maxItems: 3 },
    },
    required: ["id", "name", "address"],
    additionalProperties: false,
  },
  arrayOfObjects: {
    type: "array",
    items: {
      type: "object",
      properties: {
        sku: { type: "string", pattern: "^[A-Z]{3}-[0-9]{4}$" },
        quantity: { type: "integer", minimum: 1, maximum: 99 },
        price: { type: "number", minimum: 0 },
        status: { type: "string", enum: ["pending", "shipped", "delivered"] },
      },
      required: ["sku", "quantity", "status"],
      additionalProperties: false,
    },
    minItems: 1,
    maxItems: 4,
  },
};
const SCHEMA_NAMES = Object.keys(SCHEMAS);
const specOf = (name: string): ConstraintSpec => ({ kind: "json_schema", schema: SCHEMAS[name], options: JSON_OPTIONS });

const median = (xs: number[]): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const log = (line: string): void => void process.stderr.write(`${line}\n`);

/** What one completion's constraint calls cost and when its tokens were sampled. */
class CallLog {
  /** performance.now() at each accepted token (advance): the decode steps' ends. */
  readonly stamps: number[] = [];
  /** Constraint calls from the first mask on (mask, advance, isAccepting, hasAnyToken). */
  decodeMs = 0;
  maskMs = 0;
  masks = 0;
  /** Budget planning before the first token (minTokensToAccept, minTokensAtLeast). */
  planningMs = 0;
  /**
   * Per step after the first: from the step's first mask() call to its advance() (the mask, the
   * sampler, EOG handling, the advance: CompletionJob.consume's work after the logits).
   */
  readonly afterLogitsMs: number[] = [];
  maskStart = -1;
}

/** Times every call into `inner`; optional members only where `inner` has them. */
class TimedConstraint implements TokenConstraint {
  minTokensAtLeast?: (cap: number) => number;
  walkAhead?: (deadline: number) => boolean;
  forcedBytes?: (max: number) => ForcedBytes | null;
  allowsWithin?: (token: number, remaining: number) => boolean;

  constructor(
    private readonly inner: TokenConstraint,
    private readonly rec: CallLog,
  ) {
    const atLeast = inner.minTokensAtLeast;
    if (atLeast) {
      this.minTokensAtLeast = (cap) => {
        const t = performance.now();
        try {
          return atLeast.call(inner, cap);
        } finally {
          rec.planningMs += performance.now() - t;
        }
      };
    }
    const forced = inner.forcedBytes;
    const allows = inner.allowsWithin;
    if (forced && allows) {
      // Fast-forward's questions are constraint work during decoding too.
      this.forcedBytes = (max) => {
        const t = performance.now();
        try {
          return forced.call(inner, max);
        } finally {
          rec.decodeMs += performance.now() - t;
        }
      };
      this.allowsWithin = (token, remaining) => {
        const t = performance.now();
        try {
          return allows.call(inner, token, remaining);
        } finally {
          rec.decodeMs += performance.now() - t;
        }
      };
    }
    const ahead = inner.walkAhead;
    if (ahead) {
      this.walkAhead = (deadline) => {
        const t = performance.now();
        try {
          return ahead.call(inner, deadline);
        } finally {
          rec.decodeMs += performance.now() - t;
        }
      };
    }
  }

  writeMask(remaining: number, out: Uint32Array): void {
    const t = performance.now();
    this.inner.writeMask(remaining, out);
    const dt = performance.now() - t;
    if (this.rec.maskStart < 0) this.rec.maskStart = t;
    this.rec.maskMs += dt;
    this.rec.decodeMs += dt;
    this.rec.masks++;
  }

  isAccepting(): boolean {
    const t = performance.now();
    const r = this.inner.isAccepting();
    this.rec.decodeMs += performance.now() - t;
    return r;
  }

  hasAnyToken(remaining: number): boolean {
    const t = performance.now();
    const r = this.inner.hasAnyToken(remaining);
    this.rec.decodeMs += performance.now() - t;
    return r;
  }

  advance(token: number): boolean {
    const t = performance.now();
    const r = this.inner.advance(token);
    const end = performance.now();
    this.rec.decodeMs += end - t;
    if (r) {
      if (this.rec.stamps.length > 0 && this.rec.maskStart >= 0) this.rec.afterLogitsMs.push(end - this.rec.maskStart);
      this.rec.maskStart = -1;
      this.rec.stamps.push(end);
    }
    return r;
  }

  minTokensToAccept(cap: number): number {
    const t = performance.now();
    const r = this.inner.minTokensToAccept(cap);
    this.rec.planningMs += performance.now() - t;
    return r;
  }
}

/** Every token at every step, always a complete match: unconstrained decoding through the same loop. */
class AllowAll implements TokenConstraint {
  constructor(
    private readonly all: Uint32Array,
    /** With a forced first-token prefix (prompt-boundary healing): declined, the baseline never heals. */
    private readonly declined: boolean,
  ) {}
  writeMask(_remaining: number, out: Uint32Array): void {
    out.set(this.all);
  }
  isAccepting(): boolean {
    return true;
  }
  hasAnyToken(remaining: number): boolean {
    return remaining > 0;
  }
  advance(): boolean {
    return true;
  }
  minTokensToAccept(): number {
    return this.declined ? Number.POSITIVE_INFINITY : 0;
  }
}

const modelPath = argValue("model") ?? ensureSyntheticModel("qwen2-0.5b", QUANT);
log(`opening ${modelPath} (${THREADS} threads)`);
const runtime = GenerationRuntime.open({ modelPath, threads: THREADS, maxSequences: 4, contextSize: 2048 });
const nVocab = runtime.vocab.size;
const allBits = new Uint32Array(maskWords(nVocab)).fill(0xffffffff);
if (nVocab % 32) allBits[allBits.length - 1] = (1 << (nVocab % 32)) - 1;
const allowAll: ConstraintFactory = (prefix) => new AllowAll(allBits, prefix !== undefined && prefix.length > 0);

// Compile each schema once, before any timing (worker compile + token matcher precompute).
const compileMs: { [name: string]: number } = {};
const entries = new Map<string, ConstraintEntry>();
for (const name of SCHEMA_NAMES) {
  const t = performance.now();
  await runtime.prepare(specOf(name));
  compileMs[name] = round3(performance.now() - t);
  const spec = specOf(name) as Extract<ConstraintSpec, { kind: "json_schema" }>;
  // Held for the whole run (released at the end), as complete() holds it for one request.
  entries.set(name, await runtime.constraints.get({ kind: "json_schema", schema: spec.schema, options: spec.options }));
  log(`compiled ${name} in ${compileMs[name]} ms`);
}

interface Outcome {
  tokens: number;
  /** Decode steps timed (tokens after the first) and their seconds. */
  steps: number;
  decodeSeconds: number;
  /** Each step's milliseconds (one sampled token to the next). */
  stepMs: number[];
  wallSeconds: number;
  /** Time before the first token: prompt prefill, planning, first decode. */
  firstTokenMs: number;
  /** performance.now() at the start and the end of the complete() call. */
  window: [number, number];
  /** Process CPU time (every thread: llama.cpp's, V8's helpers) during the complete() call. */
  cpuMs: number;
  calls: CallLog;
  stopReason: string;
  text: string;
  /** Tokens fast-forward appended unsampled. */
  forced: number;
}

/** Every garbage collection of the main isolate: [start, duration] (performance.now() time). */
const gcs: [number, number][] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.duration]);
}).observe({ entryTypes: ["gc"] });

async function completion(
  factory: ConstraintFactory,
  field: string,
  maxNewTokens: number,
  seed: number,
  fastForward = false,
): Promise<Outcome> {
  const calls = new CallLog();
  const timed: ConstraintFactory = (prefix) => new TimedConstraint(factory(prefix), calls);
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const result = await runtime.completeWithFactory(
    { prompt: PROMPT, maxNewTokens, stopAfterMatch: false, temperature: 1, topK: TOP_K, topP: 1, repetitionPenalty: 1, seed, fastForward },
    timed,
    field,
  );
  const ended = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const s = calls.stamps;
  const stepMs: number[] = [];
  for (let k = 1; k < s.length; k++) stepMs.push(s[k]! - s[k - 1]!);
  return {
    tokens: result.tokensGenerated,
    steps: stepMs.length,
    decodeSeconds: s.length > 1 ? (s[s.length - 1]! - s[0]!) / 1000 : 0,
    stepMs,
    wallSeconds: (ended - started) / 1000,
    firstTokenMs: s.length > 0 ? s[0]! - started : ended - started,
    window: [started, ended],
    cpuMs: (cpu.user + cpu.system) / 1000,
    calls,
    stopReason: result.stopReason,
    text: result.completion,
    forced: result.fastForwardedTokens ?? 0,
  };
}

/** Everything one mode did in some completions. */
class Totals {
  tokens = 0;
  steps = 0;
  decodeSeconds = 0;
  wallSeconds = 0;
  constraintMs = 0;
  maskMs = 0;
  masks = 0;
  planningMs = 0;
  completions = 0;
  cpuMs = 0;
  readonly rates: number[] = [];
  readonly stepMs: number[] = [];
  readonly afterLogitsMs: number[] = [];
  readonly firstTokenMs: number[] = [];
  readonly windows: [number, number][] = [];

  add(o: Outcome): void {
    this.windows.push(o.window);
    this.tokens += o.tokens;
    this.steps += o.steps;
    this.decodeSeconds += o.decodeSeconds;
    this.wallSeconds += o.wallSeconds;
    this.constraintMs += o.calls.decodeMs;
    this.maskMs += o.calls.maskMs;
    this.masks += o.calls.masks;
    this.planningMs += o.calls.planningMs;
    this.completions++;
    this.cpuMs += o.cpuMs;
    if (o.steps > 0) this.rates.push(o.steps / o.decodeSeconds);
    this.stepMs.push(...o.stepMs);
    this.afterLogitsMs.push(...o.calls.afterLogitsMs);
    this.firstTokenMs.push(o.firstTokenMs);
  }

  /** Garbage collections that began within these completions (called once the run is over). */
  gc(): { count: number; ms: number } {
    let count = 0;
    let ms = 0;
    for (const [start, duration] of gcs) {
      if (this.windows.some(([a, b]) => start >= a && start <= b)) {
        count++;
        ms += duration;
      }
    }
    return { count, ms };
  }

  summary() {
    const gc = this.gc();
    return {
      completions: this.completions,
      tokens: this.tokens,
      decodeTokensPerSecondMedian: round3(median(this.rates)),
      decodeTokensPerSecondPooled: round3(this.steps / this.decodeSeconds),
      endToEndTokensPerSecondPooled: round3(this.tokens / this.wallSeconds),
      stepMsMedian: round3(median(this.stepMs)),
      stepMsMean: round3((this.decodeSeconds * 1000) / Math.max(1, this.steps)),
      afterLogitsMsMedian: round3(median(this.afterLogitsMs)),
      afterLogitsMsMean: round3(this.afterLogitsMs.reduce((a, b) => a + b, 0) / Math.max(1, this.afterLogitsMs.length)),
      constraintMsPerToken: round3(this.constraintMs / Math.max(1, this.tokens)),
      maskMsPerMask: round3(this.maskMs / Math.max(1, this.masks)),
      planningMsPerCompletion: round3(this.planningMs / Math.max(1, this.completions)),
      firstTokenMsMedian: round3(median(this.firstTokenMs)),
      cpuMsPerToken: round3(this.cpuMs / Math.max(1, this.tokens)),
      gcPer100Tokens: round3((100 * gc.count) / Math.max(1, this.tokens)),
      gcMsPerToken: round3(gc.ms / Math.max(1, this.tokens)),
    };
  }
}

/** Tokens of the last JSON completion of each schema (the unconstrained lengths by default). */
const lastJsonTokens = SCHEMA_NAMES.map(() => 64);
const unconstrainedOf = (i: number, seed: number): Promise<Outcome> =>
  completion(allowAll, "pattern", TOKENS ?? Math.max(2, lastJsonTokens[i]!), seed);
async function jsonOf(i: number, seed: number, fastForward = false): Promise<Outcome> {
  const name = SCHEMA_NAMES[i]!;
  const o = await completion(entries.get(name)!.factory, "json_schema", MAX_NEW_TOKENS, seed, fastForward);
  try {
    JSON.parse(o.text);
  } catch (error) {
    throw new Error(`${name} (seed ${seed}) produced invalid JSON (${o.stopReason}): ${o.text}\n${error}`);
  }
  if (!fastForward) lastJsonTokens[i] = o.tokens;
  return o;
}

// Warm-up: page in the weights, first masks of each schema's states (seeds unlike the timed ones).
const load0 = loadavg()[0]!;
const benchStarted = performance.now();
log("warm-up round");
const warm = { unconstrained: new Totals(), json: new Totals() };
for (let i = 0; i < SCHEMA_NAMES.length; i++) {
  warm.json.add(await jsonOf(i, 900_000 + i));
  warm.unconstrained.add(await unconstrainedOf(i, 900_000 + i));
}
log(`  warm-up: unconstrained ${warm.unconstrained.summary().stepMsMedian} ms/step, json ${warm.json.summary().stepMsMedian} ms/step`);

// Timed: per round and schema one JSON completion and one unconstrained completion back to back,
// which goes first alternating, so each pair meets the same machine.
const all = { unconstrained: new Totals(), json: new Totals() };
/** JSON completions with fast-forward on (the `json` ones have it off), beside each pair. */
const fastForwarded = { totals: new Totals(), forced: 0, docMs: [] as number[], offDocMs: [] as number[], pairRatios: [] as number[] };
const perSchema = new Map(
  SCHEMA_NAMES.map((n) => [n, { json: new Totals(), unconstrained: new Totals(), tokens: [] as number[], stops: [] as string[] }]),
);
const pairRatios: number[] = [];
const perRound: { unconstrained: number; json: number; pairRatios: number[] }[] = [];
const samples: { [name: string]: string } = {};
for (let r = 0; r < ROUNDS; r++) {
  const round = { unconstrained: new Totals(), json: new Totals() };
  const ratios: number[] = [];
  for (let i = 0; i < SCHEMA_NAMES.length; i++) {
    const seed = 1000 * (r + 1) + i;
    const jsonFirst = (r + i) % 2 === 0;
    let j: Outcome;
    let u: Outcome;
    let f: Outcome;
    if (jsonFirst) {
      j = await jsonOf(i, seed);
      f = await jsonOf(i, seed, true);
      u = await unconstrainedOf(i, seed);
    } else {
      u = await unconstrainedOf(i, seed);
      f = await jsonOf(i, seed, true);
      j = await jsonOf(i, seed);
    }
    fastForwarded.totals.add(f);
    fastForwarded.forced += f.forced;
    fastForwarded.docMs.push(f.wallSeconds * 1000);
    fastForwarded.offDocMs.push(j.wallSeconds * 1000);
    fastForwarded.pairRatios.push(f.steps / f.decodeSeconds / (u.steps / u.decodeSeconds));
    for (const [mode, o] of [
      ["unconstrained", u],
      ["json", j],
    ] as const) {
      all[mode].add(o);
      round[mode].add(o);
      perSchema.get(SCHEMA_NAMES[i]!)![mode].add(o);
    }
    const s = perSchema.get(SCHEMA_NAMES[i]!)!;
    s.tokens.push(j.tokens);
    s.stops.push(j.stopReason);
    samples[SCHEMA_NAMES[i]!] ??= j.text;
    ratios.push(j.steps / j.decodeSeconds / (u.steps / u.decodeSeconds));
  }
  pairRatios.push(...ratios);
  const su = round.unconstrained.summary();
  const sj = round.json.summary();
  perRound.push({ unconstrained: su.decodeTokensPerSecondMedian, json: sj.decodeTokensPerSecondMedian, pairRatios: ratios.map(round3) });
  log(
    `round ${r + 1}/${ROUNDS}: step ms (median) unconstrained ${su.stepMsMedian}, json ${sj.stepMsMedian} (after logits ${su.afterLogitsMsMedian} vs ${sj.afterLogitsMsMedian}); tok/s ${su.decodeTokensPerSecondMedian} vs ${sj.decodeTokensPerSecondMedian} ` +
      `(${round.json.tokens} json tokens, constraint ${sj.constraintMsPerToken} ms/token); pair ratios ${ratios.map((x) => round3(x)).join(", ")}`,
  );
}
const benchSeconds = (performance.now() - benchStarted) / 1000;
for (const entry of entries.values()) runtime.constraints.release(entry);

const su = all.unconstrained.summary();
const sj = all.json.summary();
const ratio = sj.decodeTokensPerSecondMedian / su.decodeTokensPerSecondMedian;
console.log(
  JSON.stringify(
    {
      bench: "json-e2e",
      model: { path: modelPath, description: runtime.model.description, nVocab, nParams: runtime.model.nParams },
      machine: {
        cpus: availableParallelism(),
        cpuModel: cpus()[0]?.model,
        loadAverageAtStart: round3(load0),
        loadAverageAtEnd: round3(loadavg()[0]!),
      },
      threads: THREADS,
      rounds: ROUNDS,
      baseline:
        "unconstrained = GenerationRuntime.completeWithFactory with an allow-every-token constraint (constant all-ones mask, always accepting): the same scheduler, CompletionJob and sampler gather as the JSON completions",
      rates:
        "decode tokens/s of one completion: tokens after the first / time from the first sampled token to the last (prefill and planning excluded)",
      sampler: { temperature: 1, topK: TOP_K, topP: 1, repetitionPenalty: 1, gather: gatherKernelInUse() },
      unconstrainedTokensPerCompletion: TOKENS ?? "as many as the paired JSON completion's schema last generated",
      jsonMaxNewTokens: MAX_NEW_TOKENS,
      jsonOptions: JSON_OPTIONS,
      schemas: SCHEMA_NAMES,
      compileMs,
      tokensPerSecond: { unconstrained: su.decodeTokensPerSecondMedian, json: sj.decodeTokensPerSecondMedian },
      fastForward: (() => {
        const sf = fastForwarded.totals.summary();
        const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
        return {
          note: "json completions with fast-forward on (the json mode above has it off), same seeds; forced tokens count as decoded tokens (appended without a decode step of their own)",
          tokensPerSecond: sf.decodeTokensPerSecondMedian,
          ratioOverUnconstrained: round3(sf.decodeTokensPerSecondMedian / su.decodeTokensPerSecondMedian),
          pairedRatioOverUnconstrainedMedian: round3(median(fastForwarded.pairRatios)),
          targetRatioOverUnconstrained: 1.5,
          forcedFraction: round3(fastForwarded.forced / Math.max(1, sf.tokens)),
          docMsMean: { fastForward: round3(mean(fastForwarded.docMs)), without: round3(mean(fastForwarded.offDocMs)) },
          docMsRatio: round3(mean(fastForwarded.docMs) / mean(fastForwarded.offDocMs)),
          targetDocMsRatio: 0.6,
          summary: sf,
        };
      })(),
      ratioJsonOverUnconstrained: round3(ratio),
      pairedRatioMedian: round3(median(pairRatios)),
      stepMedianRatio: round3(su.stepMsMedian / sj.stepMsMedian),
      pooledRatio: round3(sj.decodeTokensPerSecondPooled / su.decodeTokensPerSecondPooled),
      // Process CPU time per token (llama.cpp's threads included): what other processes' load on
      // the machine does not change, unlike wall time.
      cpuPerTokenRatio: round3(su.cpuMsPerToken / sj.cpuMsPerToken),
      endToEndPooledRatio: round3(sj.endToEndTokensPerSecondPooled / su.endToEndTokensPerSecondPooled),
      constraintMsPerToken: { unconstrained: su.constraintMsPerToken, json: sj.constraintMsPerToken },
      jsonMaskMsPerMask: sj.maskMsPerMask,
      constraintShareOfUnconstrainedStep: round3(sj.constraintMsPerToken / su.stepMsMedian),
      modes: { unconstrained: su, json: sj },
      perSchema: Object.fromEntries(
        [...perSchema].map(([name, s]) => [
          name,
          {
            jsonTokensPerSecond: s.json.summary().decodeTokensPerSecondMedian,
            unconstrainedTokensPerSecond: s.unconstrained.summary().decodeTokensPerSecondMedian,
            jsonStepMsMedian: s.json.summary().stepMsMedian,
            unconstrainedStepMsMedian: s.unconstrained.summary().stepMsMedian,
            constraintMsPerToken: s.json.summary().constraintMsPerToken,
            jsonTokens: s.tokens,
            stopReasons: s.stops,
          },
        ]),
      ),
      perRound,
      warmUp: { unconstrained: warm.unconstrained.summary(), json: warm.json.summary() },
      sampleCompletions: samples,
      benchSeconds: round3(benchSeconds),
      target: { ratioJsonOverUnconstrained: ">= 0.95", met: ratio >= 0.95 },
    },
    null,
    2,
  ),
);
await runtime.close();
