/**
 * npm run bench:ignored-run — a model that emits nothing but whitespace where a JSON grammar
 * ignores it (bench:grammar-mask's JSON grammar), one space token at a time, up to
 * `max_ignored_run` (8, 64, 256) at the 152k qwen2 vocabulary: the cost of the masks along that
 * run (each run length is its own lexer state, so every step is a first visit), from a fresh
 * matcher per run. Prints JSON.
 * Env: BENCH_RUNS (comma list, default 8,64,256).
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { grammarConstraintFor } from "../src/compile/index.js";
import { tokenTrieFor } from "../src/constraint/index.js";
import { maskWords } from "../src/support/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { percentile, round3 } from "./stats.js";
import { WORKLOADS } from "./grammar-mask.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "..", "..");
const RUNS = (process.env.BENCH_RUNS ?? "8,64,256").split(",").map(Number);
const JSON_GRAMMAR = WORKLOADS.find((w) => w.name === "json")!.grammar;

const vocab = loadVocabulary(resolve(ROOT, "..", "shared", "models", "vocab", "ggml-vocab-qwen2.gguf"));
const trie = tokenTrieFor(vocab);
function idOf(text: string): number {
  const want = Buffer.from(text, "utf8");
  for (let id = 0; id < vocab.size; id++) if (Buffer.compare(Buffer.from(vocab.tokenBytes(id)), want) === 0) return id;
  throw new Error(`no token ${JSON.stringify(text)}`);
}
const open = idOf("{");
const space = idOf(" ");

const results: Record<string, unknown> = {};
const mask = new Uint32Array(maskWords(vocab.size));
for (const run of RUNS) {
  const t0 = performance.now();
  const constraint = grammarConstraintFor(trie, JSON_GRAMMAR, run)(undefined);
  const compileMs = performance.now() - t0;
  constraint.advance(open);
  const stepsMs: number[] = [];
  for (let i = 0; i <= run; i++) {
    const a = performance.now();
    constraint.writeMask(1000, mask);
    stepsMs.push(performance.now() - a);
    const spaceAllowed = ((mask[space >>> 5]! >>> (space & 31)) & 1) === 1;
    if (spaceAllowed !== i < run) throw new Error(`run ${run}: space ${spaceAllowed ? "allowed" : "refused"} after ${i} spaces`);
    if (i < run) constraint.advance(space);
  }
  const sorted = [...stepsMs].sort((a, b) => a - b);
  results[String(run)] = {
    compileMs: round3(compileMs),
    masks: stepsMs.length,
    totalMs: round3(stepsMs.reduce((a, b) => a + b, 0)),
    p50Ms: round3(percentile(sorted, 0.5)),
    maxMs: round3(sorted[sorted.length - 1]!),
  };
}
console.log(
  JSON.stringify(
    {
      bench: "ignored-run",
      vocabulary: "qwen2",
      note: "'{' then one space token per step up to the run, a mask before each (the last must refuse the space)",
      runs: results,
    },
    null,
    2,
  ),
);
