/**
 * npm run bench:categorize — categorization latency for 2, 10 and 50 single-token categories
 * against evaluating the formatted prompt alone (same runtime, same context, one sequence), on
 * stories260K and on the synthetic Qwen2-0.5B-shape model (generated into .cache/models/ when
 * missing). Single mode; multi mode (yes/no per category) for 10 categories as well.
 * Prompt evaluation and categorization alternate within each round (timings on shared VMs drift)
 * and medians are reported. Target: 10 single-token categories ≤ 1.3 × the prompt evaluation.
 * Env: BENCH_ROUNDS (default 5), BENCH_THREADS (default 2), BENCH_MODELS (comma list: stories,qwen),
 * BENCH_LSE (native|script: each row's log-sum-exp in the addon or in TypeScript; default native).
 */
import { GenerationRuntime } from "../src/generate/index.js";
import { Categorizer, formatSinglePrompt, answerText } from "../src/categorize/index.js";
import { PromptTokenizer } from "../src/prompt/index.js";
import { useLogSumExpKernel } from "../src/categorize/index.js";
import { ensureSyntheticModel } from "../scripts/synth-model/synthesize.js";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

const LSE = useLogSumExpKernel(process.env.BENCH_LSE === "script" ? "script" : "native") ? "native" : "script";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const THREADS = Number(process.env.BENCH_THREADS ?? 2);
const MODELS = (process.env.BENCH_MODELS ?? "stories,qwen").split(",");
const COUNTS = [2, 10, 50];
const ROOT = resolve(fileURLToPath(import.meta.url), "..", "..");
const PROMPT = "Tom and Lily found a small box in the garden. Inside was an old key. They wondered which door it would open.";
const CANDIDATES =
  "dog cat sun box key door tree park ball girl boy home sad happy red blue big small fish bird car toy book hat cup bed man day way mom dad food water sky moon star rain snow cake milk bear duck frog cow pig hen egg bee ant owl fox bus van pen ink map bag jam pie nut fan"
    .split(" ")
    .concat(
      "one two three four five six seven eight nine ten run jump play sing read walk look help find make good bad new old hot cold fast slow up down in out on off yes no".split(
        " ",
      ),
    );

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const ms = (x: number): number => Math.round(x * 100) / 100;

/** Words that are one token after the answer slot in this model's format. */
function singleTokenWords(runtime: GenerationRuntime, categorizer: Categorizer, count: number): string[] {
  const start = runtime.vocab.bosToken >= 0 ? runtime.vocab.bosToken : 0;
  const tokenizer = new PromptTokenizer(runtime.model, start);
  const slot = formatSinglePrompt(categorizer.style, "", []);
  const base = tokenizer.tokens(slot).length;
  const words = CANDIDATES.filter((w) => tokenizer.tokens(slot, answerText(categorizer.style, w)).length === base + 1);
  const out = words.slice(0, count);
  // Too few single-token words in a small vocabulary: fill up with the shortest others.
  for (const w of CANDIDATES) if (out.length < count && !out.includes(w)) out.push(w);
  return out;
}

async function benchModel(name: string, modelPath: string) {
  const runtime = GenerationRuntime.open({ modelPath, threads: THREADS, maxSequences: 64, contextSize: 2048 });
  const categorizer = new Categorizer(runtime);
  const tokenizer = new PromptTokenizer(runtime.model, runtime.vocab.bosToken >= 0 ? runtime.vocab.bosToken : 0);
  const slots = runtime.scheduler.slots;
  /** Wall and process CPU milliseconds of one call (CPU time drifts less on a shared machine). */
  const timed = async (work: () => Promise<unknown>): Promise<[number, number]> => {
    const cpu = process.cpuUsage();
    const t = performance.now();
    await work();
    const wall = performance.now() - t;
    const used = process.cpuUsage(cpu);
    return [wall, (used.user + used.system) / 1000];
  };
  const evaluatePrompt = async (tokens: Int32Array): Promise<[number, number]> => {
    const seq = slots.acquire();
    try {
      return await timed(() => runtime.context.evaluateAsync(tokens, seq, 0));
    } finally {
      slots.release(seq);
    }
  };
  const words = singleTokenWords(runtime, categorizer, 50);
  const single = words.filter((_, i) => i < 50);
  const results: Record<string, unknown>[] = [];
  const cases = [...COUNTS.map((n) => ({ n, multi: false })), { n: 10, multi: true }];
  const rawTokens = runtime.tokenizePrompt(PROMPT);
  for (const { n, multi } of cases) {
    const categories = single.slice(0, n);
    const formatted = tokenizer.tokens(formatSinglePrompt(categorizer.style, PROMPT, categories));
    const req = { prompt: PROMPT, categories, allowMultipleClasses: multi, allowNullCategory: false, includeScores: false };
    await categorizer.categorize(req); // warm-up
    const promptTimes: number[] = [];
    const promptCpu: number[] = [];
    const rawTimes: number[] = [];
    const catTimes: number[] = [];
    const catCpu: number[] = [];
    let stats = categorizer.lastStats;
    for (let r = 0; r < ROUNDS; r++) {
      const [pw, pc] = await evaluatePrompt(formatted);
      promptTimes.push(pw);
      promptCpu.push(pc);
      rawTimes.push((await evaluatePrompt(rawTokens))[0]);
      const [cw, cc] = await timed(() => categorizer.categorize(req));
      catTimes.push(cw);
      catCpu.push(cc);
      stats = categorizer.lastStats;
    }
    const prompt = median(promptTimes);
    const cat = median(catTimes);
    results.push({
      mode: multi ? "multiple" : "single",
      categories: n,
      single_token_categories: categories.filter(
        (c) =>
          words.indexOf(c) >= 0 &&
          tokenizer.tokens(formatSinglePrompt(categorizer.style, "", []), answerText(categorizer.style, c)).length ===
            tokenizer.tokens(formatSinglePrompt(categorizer.style, "", [])).length + 1,
      ).length,
      formatted_prompt_tokens: formatted.length,
      prompt_eval_ms: ms(prompt),
      raw_prompt_tokens: rawTokens.length,
      raw_prompt_eval_ms: ms(median(rawTimes)),
      categorize_ms: ms(cat),
      ratio_to_prompt_eval: ms(cat / prompt),
      prompt_eval_cpu_ms: ms(median(promptCpu)),
      categorize_cpu_ms: ms(median(catCpu)),
      cpu_ratio_to_prompt_eval: ms(median(catCpu) / median(promptCpu)),
      decode_rounds: stats?.rounds,
      rows: stats?.rows,
      logit_rows: stats?.logitRows,
    });
  }
  const format = categorizer.style.kind === "chat" ? `chat:${categorizer.style.format.name}` : "plain";
  await runtime.close();
  return { model: name, format, threads: THREADS, rounds: ROUNDS, results };
}

const out: Record<string, unknown>[] = [];
for (const m of MODELS) {
  if (m === "stories") out.push(await benchModel("stories260K", resolve(ROOT, "..", "shared", "models", "stories260K.gguf")));
  else if (m === "qwen") out.push(await benchModel("synthetic-qwen2-0.5b-q8_0", ensureSyntheticModel("qwen2-0.5b", "q8_0")));
}
const target = out.flatMap((m) =>
  (m.results as Array<Record<string, unknown>>)
    .filter((r) => r.mode === "single" && r.categories === 10)
    .map((r) => ({
      model: m.model,
      ratio: r.ratio_to_prompt_eval,
      cpu_ratio: r.cpu_ratio_to_prompt_eval,
      meets_1_3x: (r.ratio_to_prompt_eval as number) <= 1.3,
    })),
);
console.log(JSON.stringify({ benchmark: "categorize", logSumExp: LSE, models: out, target_10_single_token: target }, null, 2));
