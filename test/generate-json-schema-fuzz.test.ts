// JSON Schema generation oracle over the dev set (a spread of MaskBench's schemas): every
// completion, whatever the driver, sampling knobs and budget, must parse as JSON and be valid
// under Python's `jsonschema` (format checking on), must end at "pattern_match" (we plan within
// budget), and every "needs at least N tokens" refusal must be proven minimal:
//  - N is the fewest tokens by an independent BFS over (DFA state × every generable token), which
//    knows nothing of the trie or the matcher (so no text of fewer than N tokens exists);
//  - that BFS's path of exactly N tokens walks a fresh constraint to a complete text (which Python
//    also judges): N tokens do suffice;
//  - the constraint's own budget search agrees: minTokensToAccept(N) = N, a first token within N,
//    none within N − 1, and minTokensToAccept(N − 1) > N − 1;
//  - every text produced for that schema (completions and the witness), re-tokenized by the
//    vocabulary's tokenizer, needs more than the refused budget when the constraint walks it.
//
// Drivers:
//  - random logits over the vocab-only gpt-2, llama-bpe and qwen2 vocabularies: the decode loop's
//    rules (completion.ts, runtime.ts's budget planning) replayed around a DFA constraint state
//    and the real Sampler;
//  - the real GenerationRuntime on llama-2-tiny-random with many requests in flight, through
//    runtime.complete({ constraint: { kind: "json_schema", … } }) (compiled on its worker).
// Each schema is written in one whitespace style (drawn per schema) by every driver.
//
// TRELLIS_FUZZ_SCALE (default 1) multiplies the completion counts; the dev set is every 16th
// MaskBench file (TRELLIS_JSON_FUZZ_STRIDE), whatever the scale.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DfaConstraintState, DfaTokenMatcher, tokenTrieFor, type TokenTrie } from "../src/constraint/index.js";
import type { TokenConstraint } from "../src/constraint/index.js";
import { GenerationRuntime, UnsatisfiableError } from "../src/generate/index.js";
import { MATCHER_PRECOMPUTE_MS } from "../src/compile/index.js";
import { loadModel } from "../src/model/index.js";
import { matchesString } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";
import { loadVocabulary, type Vocabulary } from "../src/vocab/index.js";
import { GenerableTokens, RandomLogits, randomLogitsCompletion } from "./support/generate-harness.js";
import { type DevSchema, loadDevSet, pick, randomBudget, randomParams, shortestTokenPath, textOf } from "./support/json-fuzz.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { LLAMA2_TINY_RANDOM, vocabFile } from "./support/paths.js";

const SCALE = Math.max(0.01, Number(process.env.TRELLIS_FUZZ_SCALE ?? 1));
const STRIDE = Math.max(1, Number(process.env.TRELLIS_JSON_FUZZ_STRIDE ?? 16));
/** Schema i goes to the random-logit driver over VOCABS[i % 3], this many times; scaled. */
const VOCABS = ["gpt-2", "llama-bpe", "qwen2"] as const;
const RANDOM_LOGITS_PER_SCHEMA = 5;
/** The real runtime runs every RUNTIME_SCHEMA_STRIDE-th schema this many times; scaled. */
const RUNTIME_SCHEMA_STRIDE = 3;
const RUNTIME_PER_SCHEMA = 4;
const IN_FLIGHT = 24;
/** Deepest BFS: beyond any budget the fuzz draws. */
const PATH_LIMIT = 1000;
const PROMPTS = ["", "JSON: ", "Answer in JSON:\n", "Once upon a time", '{"a": 1} ', "Here is the object: {"];

interface Text {
  s: DevSchema;
  driver: string;
  /** "completion", or "witness" (the BFS's shortest path, judged by Python too). */
  kind: "completion" | "witness";
  text: string;
  budget: number;
  tokens: number;
  stopReason: string;
  stopAfterMatch: boolean;
}

interface Refusal {
  s: DevSchema;
  driver: string;
  budget: number;
  needs: number;
}

const dev = loadDevSet(STRIDE, seededRandom(20261126));
const texts: Text[] = [];
const refusals: Refusal[] = [];
/** Failed proofs and broken decode-loop rules, with their reproduction. */
const problems: string[] = [];
const timings: Record<string, number> = { compile: dev.compileMs };
const proofs = { refusalsProven: 0, witnesses: 0, witnessTexts: 0, retokenizedTexts: 0, noPath: 0 };
const schemasRun = new Set<string>();
/** driver \0 file of the schemas some budget of which was refused. */
const schemasRunRefused = new Set<string>();
let runtimeOtherRefusals = 0;

const where = (s: DevSchema, driver: string, budget: number): string => `${driver} ${s.file} (${s.whitespace}) budget ${budget}`;

/**
 * The schema's fewest tokens over `vocab` and its proof: an independent BFS gives N and a path
 * of N tokens, which must walk a fresh constraint to a complete text. Returns null (counted) when no text is reachable at all.
 */
function fewestTokens(
  s: DevSchema,
  driver: string,
  generable: GenerableTokens,
  make: () => TokenConstraint,
): { n: number; witness: number[] } | null {
  const t0 = performance.now();
  const best = shortestTokenPath(s.dfa, generable, PATH_LIMIT);
  timings.bfs = (timings.bfs ?? 0) + Math.round(performance.now() - t0);
  if (!Number.isFinite(best.min)) {
    proofs.noPath++;
    return null;
  }
  const c = make();
  const n = best.min;
  for (let k = 0; k < n; k++) {
    if (!c.advance(best.tokens[k]!)) {
      problems.push(`${driver} ${s.file} (${s.whitespace}): the constraint refuses token ${k} (${best.tokens[k]}) of the shortest path`);
      return { n, witness: best.tokens };
    }
  }
  if (!c.isAccepting()) problems.push(`${driver} ${s.file} (${s.whitespace}): the shortest path of ${n} tokens does not complete the text`);
  proofs.witnesses++;
  return { n, witness: best.tokens };
}

/**
 * The refusals of one schema under one vocabulary, all claiming N = `n`: the budget search must
 * refuse N − 1, and every text produced for it (re-tokenized) must need more than each budget.
 */
function proveRefusals(
  s: DevSchema,
  driver: string,
  n: number,
  budgets: readonly number[],
  make: () => TokenConstraint,
  tokenize: (text: string) => Int32Array,
  produced: readonly string[],
): void {
  schemasRunRefused.add(`${driver}\0${s.file}`);
  const fresh = make();
  if (!(fresh.minTokensToAccept(n - 1) > n - 1) || fresh.hasAnyToken(n - 1) || !fresh.hasAnyToken(n) || fresh.minTokensToAccept(n) !== n) {
    problems.push(`${where(s, driver, n - 1)}: the budget search does not refuse ${n - 1} tokens (claims ${n})`);
    return;
  }
  const budget = Math.max(...budgets);
  for (const text of produced) {
    const tokens = tokenize(text);
    const c = make();
    let walks = true;
    for (const t of tokens) if (!(walks = c.advance(t))) break;
    proofs.retokenizedTexts++;
    if (walks && c.isAccepting() && tokens.length <= budget) {
      problems.push(`${where(s, driver, budget)}: refused, but ${JSON.stringify(text)} is ${tokens.length} tokens the constraint accepts`);
      return;
    }
  }
  proofs.refusalsProven += budgets.length;
}

for (const [v, name] of VOCABS.entries()) {
  test(`random logits over the ${name} vocabulary: JSON completions for the dev set`, () => {
    const t0 = performance.now();
    const path = vocabFile(name);
    const vocab = loadVocabulary(path);
    const trie = tokenTrieFor(vocab);
    const generable = new GenerableTokens(vocab);
    const tokenizer = loadModel(path, { vocabOnly: true, threads: 1 });
    const tokenize = (text: string): Int32Array => tokenizer.tokenize(text, { addSpecial: false, parseSpecial: false });
    const rng = seededRandom(name.length * 7919);
    const noise = new RandomLogits(vocab.size, rng);
    const eogMask = new Uint32Array((vocab.size + 31) >>> 5);
    const perSchema = Math.max(1, Math.round(RANDOM_LOGITS_PER_SCHEMA * SCALE));
    let runs = 0;
    try {
      for (let i = v; i < dev.usable.length; i += VOCABS.length) {
        const s = dev.usable[i]!;
        // A matcher of its own (not the shared per-DFA one): its masks go with it.
        const matcher = new DfaTokenMatcher(trie, s.dfa);
        matcher.precompute(MATCHER_PRECOMPUTE_MS);
        const make = (): TokenConstraint => new DfaConstraintState(matcher);
        const fewest = fewestTokens(s, name, generable, make);
        if (fewest === null) continue;
        const { n, witness } = fewest;
        const produced = [addWitness(s, name, vocab, witness)];
        const refused: number[] = [];
        for (let i = 0; i < perSchema; i++) {
          const budget = randomBudget(rng, n);
          const stopAfterMatch = rng() < 0.5;
          const r0 = performance.now();
          const r = randomLogitsCompletion(vocab, make(), randomParams(rng), budget, stopAfterMatch, rng, noise, eogMask);
          timings.randomRuns = (timings.randomRuns ?? 0) + Math.round(performance.now() - r0);
          runs++;
          if ("needs" in r) {
            refusals.push({ s, driver: name, budget, needs: r.needs });
            if (r.needs !== n || budget >= n) problems.push(`${where(s, name, budget)}: refused as needing ${r.needs}, the BFS says ${n}`);
            refused.push(budget);
            continue;
          }
          const text = textOf(vocab, r.tokens);
          if (r.tokens.length > budget || r.tokens.length < n)
            problems.push(`${where(s, name, budget)}: ${r.tokens.length} tokens (fewest ${n}): ${JSON.stringify(text)}`);
          schemasRun.add(s.file);
          produced.push(text);
          texts.push({
            s,
            driver: name,
            kind: "completion",
            text,
            budget,
            tokens: r.tokens.length,
            stopReason: r.stopReason,
            stopAfterMatch,
          });
        }
        const p0 = performance.now();
        if (refused.length > 0) proveRefusals(s, name, n, refused, make, tokenize, produced);
        timings.proofs = (timings.proofs ?? 0) + Math.round(performance.now() - p0);
      }
    } finally {
      tokenizer.dispose();
    }
    assert.ok(runs > 0);
    timings[name] = Math.round(performance.now() - t0);
  });
}

function addWitness(s: DevSchema, driver: string, vocab: Vocabulary, witness: readonly number[]): string {
  const text = textOf(vocab, witness);
  proofs.witnessTexts++;
  texts.push({
    s,
    driver,
    kind: "witness",
    text,
    budget: witness.length,
    tokens: witness.length,
    stopReason: "pattern_match",
    stopAfterMatch: true,
  });
  return text;
}

test("real runtime (llama-2-tiny-random): concurrent json_schema completions across the dev set", async () => {
  const t0 = performance.now();
  const runtime = GenerationRuntime.open({
    modelPath: LLAMA2_TINY_RANDOM,
    threads: 1,
    maxSequences: IN_FLIGHT,
    maxQueue: 4 * IN_FLIGHT,
    contextSize: 2048,
  });
  const label = "llama-2-tiny-random";
  const rng = seededRandom(4242);
  const generable = new GenerableTokens(runtime.vocab);
  const tokenize = (text: string): Int32Array => runtime.model.tokenize(text, { addSpecial: false, parseSpecial: false });
  const perSchema = Math.max(1, Math.round(RUNTIME_PER_SCHEMA * SCALE));
  interface PerSchema {
    s: DevSchema;
    trie: TokenTrie;
    n: number;
    refused: number[];
    produced: string[];
    make: () => TokenConstraint;
  }
  const jobs: (() => Promise<void>)[] = [];
  const schemas: PerSchema[] = [];
  const otherRefusals: string[] = [];
  for (let i = 0; i < dev.usable.length; i += RUNTIME_SCHEMA_STRIDE) {
    const s = dev.usable[i]!;
    const matcher = new DfaTokenMatcher(runtime.trie, s.dfa);
    const make = (): TokenConstraint => new DfaConstraintState(matcher);
    const fewest = fewestTokens(s, label, generable, make);
    if (fewest === null) continue;
    const { n, witness } = fewest;
    if (n + 40 + 16 > runtime.contextLength) continue;
    const one: PerSchema = { s, trie: runtime.trie, n, refused: [], produced: [addWitness(s, label, runtime.vocab, witness)], make };
    schemas.push(one);
    for (let k = 0; k < perSchema; k++) {
      const budget = randomBudget(rng, n);
      const params = randomParams(rng);
      const prompt = pick(rng, PROMPTS);
      const stopAfterMatch = rng() < 0.5;
      jobs.push(async () => {
        try {
          const r = await runtime.complete({
            ...params,
            prompt,
            maxNewTokens: budget,
            stopAfterMatch,
            constraint: {
              kind: "json_schema",
              schema: s.schema,
              options: { whitespace: s.whitespace, forbidUnnamedProperties: false, strict: true },
            },
          });
          if (r.tokensGenerated > budget) problems.push(`${where(s, label, budget)}: ${r.tokensGenerated} tokens`);
          schemasRun.add(s.file);
          one.produced.push(r.completion);
          texts.push({
            s,
            driver: label,
            kind: "completion",
            text: r.completion,
            budget,
            tokens: r.tokensGenerated,
            stopReason: r.stopReason,
            stopAfterMatch,
          });
        } catch (e) {
          if (!(e instanceof UnsatisfiableError)) {
            otherRefusals.push(`${where(s, label, budget)}: ${(e as Error).name}: ${(e as Error).message}`);
            return;
          }
          assert.equal(e.field, "schema");
          const m = /needs at least (\d+) tokens but max_new_tokens is (\d+)/.exec(e.message);
          if (m === null) {
            otherRefusals.push(`${where(s, label, budget)}: ${e.message}`);
            return;
          }
          const needs = Number(m[1]);
          refusals.push({ s, driver: label, budget, needs });
          if (needs !== n || budget >= n || Number(m[2]) !== budget)
            problems.push(`${where(s, label, budget)}: ${e.message}, the BFS says ${n}`);
          one.refused.push(budget);
        }
      });
    }
  }
  try {
    // A pool of IN_FLIGHT requests: the scheduler batches their decode steps together.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < jobs.length) await jobs[next++]!();
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    for (const one of schemas) {
      if (one.refused.length > 0) proveRefusals(one.s, label, one.n, one.refused, one.make, tokenize, one.produced);
    }
  } finally {
    await runtime.close();
  }
  for (const r of otherRefusals.slice(0, 20)) console.log("RUNTIME REFUSED " + r);
  runtimeOtherRefusals = otherRefusals.length;
  assert.ok(jobs.length > 0);
  assert.ok(otherRefusals.length <= jobs.length * 0.05, `${otherRefusals.length} of ${jobs.length} runtime requests refused otherwise`);
  timings[label] = Math.round(performance.now() - t0);
});

function isTopLevelNumber(text: string): boolean {
  try {
    return typeof JSON.parse(text) === "number";
  } catch {
    return false;
  }
}

test("Python's jsonschema accepts every completion; every 422 is proven minimal", () => {
  const t0 = performance.now();
  const wrong: string[] = [];
  const show = (t: Text, why: string): string =>
    `${t.driver} ${t.kind} ${t.s.file} (${t.s.whitespace}) budget ${t.budget}: ${JSON.stringify(t.text).slice(0, 300)} → ${why}`;
  const stopReasons: Record<string, number> = {};
  let tokenLimitNumbers = 0;
  for (const t of texts) {
    try {
      JSON.parse(t.text);
    } catch (e) {
      wrong.push(show(t, `JSON.parse: ${(e as Error).message}`));
    }
    if (!matchesString(t.s.dfa, t.text)) wrong.push(show(t, "not a text of the schema's automaton"));
    if (t.kind !== "completion") continue;
    stopReasons[t.stopReason] = (stopReasons[t.stopReason] ?? 0) + 1;
    if (t.stopReason === "pattern_match") continue;
    // The one text that may go on after it is complete: a top-level number (more digits), when
    // stop_after_match is off and the budget ends it. Anything else is a planning failure.
    if (t.stopReason === "token_limit" && !t.stopAfterMatch && isTopLevelNumber(t.text)) tokenLimitNumbers++;
    else wrong.push(show(t, `stopped by ${t.stopReason}`));
  }
  const verdicts = pythonVerdicts(texts.map((t) => ({ schema: t.s.schemaText, text: t.text })));
  assert.equal(verdicts.length, texts.length);
  texts.forEach((t, i) => {
    if (verdicts[i] !== "valid") wrong.push(show(t, `Python: ${verdicts[i]}`));
  });
  timings.python = Math.round(performance.now() - t0);
  const completions = texts.filter((t) => t.kind === "completion");
  const perDriver: Record<string, { completions: number; refusals: number }> = {};
  for (const t of completions) (perDriver[t.driver] ??= { completions: 0, refusals: 0 }).completions++;
  for (const r of refusals) (perDriver[r.driver] ??= { completions: 0, refusals: 0 }).refusals++;
  const perWhitespace: Record<string, number> = {};
  for (const t of completions) perWhitespace[t.s.whitespace] = (perWhitespace[t.s.whitespace] ?? 0) + 1;
  console.log(
    JSON.stringify({
      scale: SCALE,
      stride: STRIDE,
      files: dev.files,
      schemasCompiled: dev.usable.length,
      schemasRefusedByCompiler: Object.keys(dev.refused).length,
      refusedByKind: Object.values(dev.refused).reduce<Record<string, number>>((acc, k) => ((acc[k] = (acc[k] ?? 0) + 1), acc), {}),
      schemasWithCompletions: schemasRun.size,
      completions: completions.length,
      pythonValid: verdicts.filter((v) => v === "valid").length,
      pythonChecked: verdicts.length,
      refusals422: refusals.length,
      ...proofs,
      schemasWithRefusals: schemasRunRefused.size,
      runtimeOtherRefusals,
      stopReasons,
      tokenLimitNumbers,
      perDriver,
      perWhitespace,
      timingsMs: timings,
    }),
  );
  for (const w of wrong.slice(0, 30)) console.log("WRONG " + w);
  for (const p of problems.slice(0, 30)) console.log("PROBLEM " + p);
  assert.deepEqual(wrong.slice(0, 30), [], `${wrong.length} completions are not valid`);
  assert.deepEqual(problems.slice(0, 30), [], `${problems.length} proofs or rules failed`);
  assert.ok(refusals.length > 0, "budgets below the fewest tokens should be refused");
  assert.equal(proofs.refusalsProven, refusals.length, "every 422 proven minimal");
  if (SCALE >= 1 && STRIDE <= 16) {
    assert.ok(completions.length >= 3000, `only ${completions.length} completions`);
    assert.ok(schemasRun.size >= 500, `only ${schemasRun.size} schemas completed`);
  }
});
