// Grammar completion fuzz over the corpus (test/grammars/*.lark): every completion, whatever the
// sampling knobs and budget, must be a sentence Lark 1.1.5 accepts, and every "unsatisfiable"
// refusal must survive a search for a counterexample (a sampled sentence of the grammar whose
// real tokenization walks the constraint to completion within the budget).
//
// Two drivers:
//  - the real runtime (GenerationRuntime.completeGrammar) on llama-2-tiny-random and stories260K,
//    many requests in flight so the batching scheduler shares decodes;
//  - random logits over the vocab-only gpt-2 and qwen2 vocabularies (no model to run): the decode
//    loop's rules replayed around GrammarConstraintState and the real Sampler.
//
// TRELLIS_FUZZ_SCALE (default 2.5: ~5,500 requests, 5,000+ completions, ~70 s measured on the shared
// 2-core VM) multiplies the completion counts; lower it on a slower machine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { compileGrammar, type Grammar } from "../src/grammar/index.js";
import { makeRng, sampleSentence } from "../src/grammar/testing.js";
import { grammarConstraintFor } from "../src/compile/index.js";
import type { TokenConstraint } from "../src/constraint/index.js";
import { GenerationRuntime } from "../src/generate/index.js";
import { InvalidRequestError, UnsatisfiableError } from "../src/generate/index.js";
import type { SamplingParams } from "../src/sampling/index.js";
import { loadVocabulary, type Vocabulary } from "../src/vocab/index.js";
import { tokenTrieFor, type TokenTrie } from "../src/constraint/index.js";
import { loadModel } from "../src/model/index.js";
import { RandomLogits, randomLogitsCompletion } from "./support/generate-harness.js";
import { LLAMA2_TINY_RANDOM, ORACLE_PYTHON, REPO_ROOT, STORIES_260K, vocabFile } from "./support/paths.js";

const SCALE = Math.max(0.01, Number(process.env.TRELLIS_FUZZ_SCALE ?? 2.5));
const CORPUS_DIR = resolve(REPO_ROOT, "test", "grammars");
const ORACLE = resolve(CORPUS_DIR, "lark_oracle.py");
/** Per grammar and driver; scaled. */
const RANDOM_LOGITS_PER_GRAMMAR = { "gpt-2": 6, qwen2: 4 } as const;
const MODEL_RUNS_PER_GRAMMAR = 4;
const IN_FLIGHT = 24;
const PROMPTS = ["", "Once upon a time", "Answer: ", "x =", '{"a": 1}', "SELECT"];

type Rng = () => number;

interface CorpusGrammar {
  file: string;
  source: string;
  grammar: Grammar;
  /** Sampled sentences, for counterexamples to 422s. */
  sentences: string[];
}

interface Outcome {
  grammar: CorpusGrammar;
  driver: string;
  budget: number;
  text?: string;
  tokens?: number;
  stopReason?: string;
  unsatisfiable?: string;
}

function loadCorpus(): { usable: CorpusGrammar[]; refused: string[] } {
  const usable: CorpusGrammar[] = [];
  const refused: string[] = [];
  const files = readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith(".lark"))
    .sort();
  files.forEach((file, fi) => {
    const source = readFileSync(resolve(CORPUS_DIR, file), "utf8");
    let grammar: Grammar;
    try {
      grammar = compileGrammar(source);
    } catch {
      refused.push(file);
      return;
    }
    const rng = makeRng(7000 + fi);
    const sentences = new Set<string>();
    for (let i = 0; i < 120; i++) {
      const s = sampleSentence(grammar, rng, { maxDepth: 2 + (i % 10), ignoreProbability: i % 3 === 0 ? 0.3 : 0 });
      if (s !== null) sentences.add(s);
    }
    usable.push({ file, source, grammar, sentences: [...sentences] });
  });
  return { usable, refused };
}

function randomParams(rng: Rng): SamplingParams {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  return {
    temperature: pick([0, 0.3, 0.7, 1, 1, 1.5, 3]),
    topK: pick([0, 0, 1, 5, 50]),
    topP: pick([1, 1, 0.9, 0.5]),
    repetitionPenalty: pick([1, 1, 1.1, 1.5]),
    seed: Math.floor(rng() * 1e9),
  };
}

function randomBudget(rng: Rng): number {
  const r = rng();
  if (r < 0.3) return 1 + Math.floor(rng() * 4); // tight: often unsatisfiable or barely enough
  if (r < 0.8) return 5 + Math.floor(rng() * 20);
  return 25 + Math.floor(rng() * 40);
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });

function textOf(vocab: Vocabulary, tokens: number[]): string {
  const parts: number[] = [];
  for (const t of tokens) for (const b of vocab.tokenBytes(t)) parts.push(b);
  return fatalUtf8.decode(Uint8Array.from(parts));
}

/**
 * A counterexample to "nothing fits within `budget` tokens": a sampled sentence whose real
 * tokenization walks a fresh constraint to a complete sentence within the budget.
 */
function counterexample(
  g: CorpusGrammar,
  budget: number,
  makeConstraint: () => TokenConstraint,
  tokenize: (s: string) => Int32Array,
): string | null {
  for (const s of g.sentences) {
    const tokens = tokenize(s);
    if (tokens.length > budget) continue;
    const c = makeConstraint();
    let ok = true;
    for (const t of tokens)
      if (!c.advance(t)) {
        ok = false;
        break;
      }
    if (ok && c.isAccepting()) return s;
  }
  return null;
}

interface OracleAnswer {
  ok: boolean;
  results?: boolean[];
  error?: string;
}

function askLark(batches: { source: string; texts: string[] }[]): OracleAnswer[] {
  const input = batches.map((b) => JSON.stringify({ grammar: b.source, texts: b.texts })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [ORACLE], { input, encoding: "utf8", maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines.length, batches.length);
  return lines.map((l) => JSON.parse(l) as OracleAnswer);
}

const corpus = loadCorpus();
const outcomes: Outcome[] = [];
const unjustified: string[] = [];
const timings: Record<string, number> = {};

/** max_ignored_run for one completion: mostly the default, else one of a few (0: none at all). */
function randomIgnoredRun(rng: Rng): number | undefined {
  const r = rng();
  const run = r < 0.7 ? undefined : r < 0.8 ? 0 : r < 0.9 ? 2 : 24;
  const key = String(run ?? "default");
  ignoredRunsUsed[key] = (ignoredRunsUsed[key] ?? 0) + 1;
  return run;
}
/** How many completions ran under each max_ignored_run (for the summary). */
const ignoredRunsUsed: Record<string, number> = {};

function constraintFactory(trie: TokenTrie, g: CorpusGrammar, maxIgnoredRun?: number): (() => TokenConstraint) | null {
  try {
    const make = grammarConstraintFor(trie, g.source, maxIgnoredRun);
    return () => make(undefined);
  } catch (e) {
    if (e instanceof InvalidRequestError) return null; // refused for this automaton (lookaround, ...)
    throw e;
  }
}

for (const name of ["gpt-2", "qwen2"] as const) {
  test(`random logits over the ${name} vocabulary: completions for every corpus grammar`, () => {
    const t0 = performance.now();
    const path = vocabFile(name);
    const vocab = loadVocabulary(path);
    const trie = tokenTrieFor(vocab);
    const tokenizer = loadModel(path, { vocabOnly: true, threads: 2 });
    const tokenize = (s: string): Int32Array => tokenizer.tokenize(s, { addSpecial: false, parseSpecial: false });
    const rng = makeRng(name === "gpt-2" ? 11 : 12);
    const noise = new RandomLogits(vocab.size, rng);
    const eogMask = new Uint32Array((vocab.size + 31) >>> 5);
    const perGrammar = Math.max(1, Math.round(RANDOM_LOGITS_PER_GRAMMAR[name] * SCALE));
    let runs = 0;
    try {
      for (const g of corpus.usable) {
        if (constraintFactory(trie, g) === null) continue;
        for (let i = 0; i < perGrammar; i++) {
          const budget = randomBudget(rng);
          const stopAfterMatch = rng() < 0.5;
          // The 422 witness is checked under the same run: a sentence needing a longer one does not count.
          const make = constraintFactory(trie, g, randomIgnoredRun(rng))!;
          const r = randomLogitsCompletion(vocab, make(), randomParams(rng), budget, stopAfterMatch, rng, noise, eogMask);
          runs++;
          if ("needs" in r) {
            const witness = counterexample(g, budget, make, tokenize);
            if (witness !== null) unjustified.push(`${name} ${g.file} budget ${budget}: 422 but ${JSON.stringify(witness)} fits`);
            outcomes.push({
              grammar: g,
              driver: name,
              budget,
              unsatisfiable: Number.isFinite(r.needs) ? `needs ${r.needs}` : "nothing fits",
            });
          } else {
            assert.ok(r.tokens.length <= budget);
            outcomes.push({
              grammar: g,
              driver: name,
              budget,
              text: textOf(vocab, r.tokens),
              tokens: r.tokens.length,
              stopReason: r.stopReason,
            });
          }
        }
      }
    } finally {
      tokenizer.dispose();
    }
    assert.ok(runs > 0);
    timings[name] = Math.round(performance.now() - t0);
  });
}

for (const [label, modelPath] of [
  ["llama-2-tiny-random", LLAMA2_TINY_RANDOM],
  ["stories260K", STORIES_260K],
] as const) {
  test(`real runtime (${label}): concurrent grammar completions across the corpus`, async () => {
    const t0 = performance.now();
    const runtime = GenerationRuntime.open({ modelPath, threads: 1, maxSequences: IN_FLIGHT, maxQueue: 4 * IN_FLIGHT, contextSize: 1024 });
    const rng = makeRng(label.length * 101);
    const tokenize = (s: string): Int32Array => runtime.model.tokenize(s, { addSpecial: false, parseSpecial: false });
    const jobs: { g: CorpusGrammar; budget: number; run: () => Promise<void> }[] = [];
    const perGrammar = Math.max(1, Math.round(MODEL_RUNS_PER_GRAMMAR * SCALE));
    for (const g of corpus.usable) {
      const make = constraintFactory(runtime.trie, g);
      if (make === null) {
        continue;
      }
      for (let i = 0; i < perGrammar; i++) {
        const budget = randomBudget(rng);
        const params = randomParams(rng);
        const prompt = PROMPTS[Math.floor(rng() * PROMPTS.length)]!;
        const stopAfterMatch = rng() < 0.5;
        const maxIgnoredRun = randomIgnoredRun(rng);
        const makeWithRun = maxIgnoredRun === undefined ? make : constraintFactory(runtime.trie, g, maxIgnoredRun)!;
        jobs.push({
          g,
          budget,
          run: async () => {
            try {
              const r = await runtime.completeGrammar({
                ...params,
                prompt,
                grammar: g.source,
                maxNewTokens: budget,
                stopAfterMatch,
                maxIgnoredRun,
              });
              assert.ok(r.tokensGenerated <= budget);
              outcomes.push({ grammar: g, driver: label, budget, text: r.completion, tokens: r.tokensGenerated, stopReason: r.stopReason });
            } catch (e) {
              if (!(e instanceof UnsatisfiableError)) throw e;
              assert.equal(e.field, "grammar");
              // "needs at least N tokens" claims more than the budget: no sentence fits N-1 tokens.
              const stated = /needs at least (\d+) tokens/.exec(e.message);
              const claim = stated === null ? budget : Number(stated[1]) - 1;
              assert.ok(claim >= budget, e.message);
              const witness = counterexample(g, claim, makeWithRun, tokenize);
              if (witness !== null)
                unjustified.push(`${label} ${g.file} budget ${budget}: ${e.message}, but ${JSON.stringify(witness)} fits`);
              outcomes.push({ grammar: g, driver: label, budget, unsatisfiable: e.message });
            }
          },
        });
      }
    }
    try {
      // A pool of IN_FLIGHT requests: the scheduler batches their decode steps together.
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < jobs.length) await jobs[next++]!.run();
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    } finally {
      await runtime.close();
    }
    assert.ok(jobs.length > 0);
    timings[label] = Math.round(performance.now() - t0);
  });
}

test("Lark accepts every completion; every 422 is justified", () => {
  const byGrammar = new Map<CorpusGrammar, string[]>();
  for (const o of outcomes) {
    if (o.text === undefined) continue;
    let texts = byGrammar.get(o.grammar);
    if (!texts) byGrammar.set(o.grammar, (texts = []));
    texts.push(o.text);
  }
  const grammars = [...byGrammar.keys()];
  const answers = askLark(grammars.map((g) => ({ source: g.source, texts: byGrammar.get(g)! })));
  const rejected: string[] = [];
  let completions = 0;
  grammars.forEach((g, i) => {
    const a = answers[i]!;
    assert.ok(a.ok, `${g.file}: Lark refused the grammar: ${a.error}`);
    byGrammar.get(g)!.forEach((text, j) => {
      completions++;
      if (!a.results![j]) rejected.push(`${g.file}: ${JSON.stringify(text)}`);
    });
  });
  const unsat = outcomes.filter((o) => o.unsatisfiable !== undefined).length;
  // The runtime's 422s say how many tokens the grammar needs (checked above against sentences).
  const runtime422 = outcomes.filter((o) => o.unsatisfiable !== undefined && !(o.driver in RANDOM_LOGITS_PER_GRAMMAR));
  const stated = runtime422.filter((o) => /needs at least \d+ tokens/.test(o.unsatisfiable!)).length;
  const perDriver: Record<string, number> = {};
  for (const o of outcomes) perDriver[o.driver] = (perDriver[o.driver] ?? 0) + 1;
  console.log(
    JSON.stringify({
      scale: SCALE,
      grammarsUsable: corpus.usable.length,
      grammarsRefusedByCompiler: corpus.refused.length,
      completions,
      larkAccepted: completions - rejected.length,
      unsatisfiable: unsat,
      unjustifiedUnsatisfiable: unjustified.length,
      runtimeUnsatisfiable: runtime422.length,
      runtimeUnsatisfiableStatingTokens: stated,
      stopAfterBudget: outcomes.filter((o) => o.stopReason === "token_limit").length,
      perDriver,
      perMaxIgnoredRun: ignoredRunsUsed,
      timingsMs: timings,
    }),
  );
  for (const r of rejected.slice(0, 30)) console.log("LARK REJECTED " + r);
  for (const u of unjustified.slice(0, 30)) console.log("UNJUSTIFIED " + u);
  assert.ok(completions > 0);
  assert.ok(runtime422.length === 0 || stated > 0, "no runtime 422 said how many tokens the grammar needs");
  assert.deepEqual(rejected, []);
  assert.deepEqual(unjustified, []);
});
