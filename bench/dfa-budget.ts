/**
 * npm run bench:dfa-budget — the cost of budget planning on the regex/JSON Schema route at a large
 * vocabulary: for the twelve everyday schemas and an even sample of MaskBench's, a fresh matcher
 * per schema (as a request meets a constraint the first time), then what the server asks:
 * admission (minTokensToAccept at the request's budget) and the first mask ("first"), then a walk
 * over allowed tokens chosen at random (a model that wanders, so the budget binds near the end)
 * until the budget is spent or the text may stop, every mask planned at the tokens left ("mask").
 * Budgets: a number (every schema at that max_new_tokens; schemas that cannot fit count as
 * refused), or `tight` (each schema at exactly its fewest tokens, found beforehand on another
 * matcher: every step is planned), `tight+N` (N tokens of slack). No work limit: this measures
 * cost; bench:jsonschema reports what the defaults refuse. Single thread, seeded walk.
 *
 * Usage: npm run bench:dfa-budget -- [--vocab qwen2] [--sample 60] [--budget tight|256|tight+2]
 * Prints one JSON object.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DfaConstraintState, DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { compileJsonSchema, DEFAULT_JSON_SCHEMA_OPTIONS } from "../src/schema/index.js";
import type { ByteDfa } from "../src/regex/index.js";
import { setBits } from "../src/support/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { EVERYDAY_SCHEMAS } from "../test/support/everyday-cases.js";
import { argValue, percentile, round3 } from "./stats.js";

const SHARED = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "shared");

function main(): void {
  const vocabName = argValue("vocab") ?? "qwen2";
  const sample = Number(argValue("sample") ?? 60);
  const budgetArg = argValue("budget") ?? "tight";
  const vocab = loadVocabulary(resolve(SHARED, "models", "vocab", `ggml-vocab-${vocabName}.gguf`));
  const trie = tokenTrieFor(vocab);
  const dir = resolve(SHARED, "jsonschema", "maskbench");
  const files = readdirSync(dir).sort();
  const schemas: [string, unknown][] = Object.entries(EVERYDAY_SCHEMAS);
  const step = Math.max(1, Math.floor(files.length / sample));
  for (let i = 0; i < files.length && schemas.length < sample + Object.keys(EVERYDAY_SCHEMAS).length; i += step) {
    schemas.push([files[i]!, (JSON.parse(readFileSync(resolve(dir, files[i]!), "utf8")) as { schema: unknown }).schema]);
  }
  let seed = 12345;
  const random = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296;
  const firstMs: number[] = [];
  const maskMs: number[] = [];
  let compiled = 0;
  let refused = 0;
  let notAccepting = 0;
  const t0 = performance.now();
  for (const [, schema] of schemas) {
    let dfa: ByteDfa;
    try {
      dfa = compileJsonSchema(schema, { whitespace: "default", strict: true, limits: DEFAULT_JSON_SCHEMA_OPTIONS.limits }).dfa;
    } catch {
      continue;
    }
    compiled++;
    let budget: number;
    if (budgetArg.startsWith("tight")) {
      const fewest = new DfaConstraintState(new DfaTokenMatcher(trie, dfa)).minTokensToAccept();
      if (!Number.isFinite(fewest)) continue;
      budget = fewest + Number(budgetArg.slice(6) || 0);
    } else budget = Number(budgetArg);
    const matcher = new DfaTokenMatcher(trie, dfa);
    const state = new DfaConstraintState(matcher);
    const out = new Uint32Array(matcher.words);
    const a = performance.now();
    const needed = state.minTokensToAccept(budget);
    if (needed > budget) {
      firstMs.push(performance.now() - a);
      refused++;
      continue;
    }
    state.writeMask(budget, out);
    firstMs.push(performance.now() - a);
    const allowed: number[] = [];
    for (let left = budget; left > 0; left--) {
      const b = performance.now();
      const mask = state.mask(left);
      maskMs.push(performance.now() - b);
      if (state.isAccepting() && random() < 0.05) break;
      setBits(mask, allowed);
      if (allowed.length === 0) break;
      state.advance(allowed[Math.floor(random() * allowed.length)]!);
    }
    if (!state.isAccepting()) notAccepting++;
  }
  const q = (xs: number[]): Record<string, number> => {
    const s = [...xs].sort((x, y) => x - y);
    return { n: s.length, p50: round3(percentile(s, 0.5)), p99: round3(percentile(s, 0.99)), max: round3(s[s.length - 1] ?? NaN) };
  };
  const result = {
    vocab: vocabName,
    vocabSize: vocab.size,
    budget: budgetArg,
    schemas: schemas.length,
    compiled,
    refused,
    notAcceptingAtEnd: notAccepting,
    firstMs: q(firstMs),
    maskMs: q(maskMs),
    elapsedS: round3((performance.now() - t0) / 1000),
    note: "firstMs = admission question + first mask on a fresh matcher; maskMs = every planned mask of a seeded random walk; notAcceptingAtEnd must be 0 (never truncated).",
  };
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}

main();
