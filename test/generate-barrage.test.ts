// A barrage of 5,000 distinct patterns and grammars (valid, refused, too complex) through one
// runtime: the compiled-constraint cache keeps its byte budget, and the process's resident memory
// stays under the memory it had once warm plus that budget plus a stated overhead (the heap limit
// of each compile worker alive, the burst worker's too, and 96 MB of allocator slack), instead of
// growing with every new constraint: in the second half of the barrage, with the cache long full,
// the live JavaScript heap (after a full GC; resident memory moves with the workers' recycling
// and the allocator) grows by at most HEAP_SLACK.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { GenerationRuntime } from "../src/generate/index.js";
import { ClientLimitError, InvalidRequestError, UnsatisfiableError, type ConstraintSpec } from "../src/generate/index.js";
import { makeRng } from "../src/grammar/testing.js";
import { STORIES_260K } from "./support/paths.js";

const MB = 1024 * 1024;
const BUDGET = 48 * MB;
const WORKER_MEMORY_MB = 96;
const SLACK = 96 * MB;
const DISTINCT = 5000;
const HEAP_SLACK = 8 * MB;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const runtime = GenerationRuntime.open({
  modelPath: STORIES_260K,
  threads: 1,
  maxSequences: 4,
  contextSize: 256,
  constraints: { budgetBytes: BUDGET, workerMemoryMb: WORKER_MEMORY_MB, compileTimeoutMs: 2000 },
});
after(() => runtime.close());

/** The i-th constraint: distinct text, a mix of sizes and of outcomes. */
function constraint(i: number, rng: () => number): ConstraintSpec {
  const n = 1 + Math.floor(rng() * 12);
  switch (i % 10) {
    case 0:
      return { kind: "regex", pattern: `(a|b)*a(a|b){${3 + (i % 9)}}z${i}` }; // up to 2^12 states
    case 1:
      return { kind: "regex", pattern: `[a-z]{${n}}-${i}-[0-9]{1,${n + 1}}` };
    case 2:
      return { kind: "regex", pattern: Array.from({ length: 20 }, (_, k) => `w${i}x${k}`).join("|") };
    case 3:
      return { kind: "regex", pattern: `(unclosed${i}` }; // refused: 400
    case 4:
      return { kind: "regex", pattern: `(?:a{${1000 + i}}){1000}` }; // NFA-state limit: 422
    case 5:
      return { kind: "grammar", grammar: `start: "[" V ("," V)* "]"\nV: /[a-z]{1,${n}}/ | "k${i}"` };
    case 6:
      return {
        kind: "grammar",
        grammar: `?start: sum\n?sum: product | sum "+" product\n?product: atom | product "*" atom\natom: /[0-9]{1,${n}}/ | "x${i}" | "(" sum ")"`,
      };
    case 7:
      return { kind: "grammar", grammar: `start: ${Array.from({ length: 30 }, (_, k) => `"kw${i}_${k}"`).join(" | ")}` };
    case 8:
      return { kind: "grammar", grammar: `start: a${i}\na${i}: UNDEFINED${i}` }; // refused: 400
    default:
      return {
        kind: "grammar",
        grammar: `%import common.WS\n%ignore WS\nstart: pair+\npair: KEY${i} ":" VAL\nKEY${i}: /[a-z]{${n}}/\nVAL: /[0-9]+/`,
      };
  }
}

test(`${DISTINCT} distinct patterns and grammars: memory stays under warm RSS + ${BUDGET / MB} MB budget + stated overhead`, async () => {
  const rng = makeRng(7);
  const outcomes = { compiled: 0, invalid: 0, tooComplex: 0, generated: 0 };
  const prepare = async (i: number): Promise<void> => {
    const spec = constraint(i, rng);
    try {
      await runtime.prepare(spec, { client: `c${i % 4}` });
      outcomes.compiled++;
      if (i % 25 === 0) {
        const base = {
          prompt: "Once",
          maxNewTokens: 6,
          stopAfterMatch: true,
          temperature: 0.8,
          topK: 40,
          topP: 1,
          repetitionPenalty: 1,
          seed: i,
        };
        try {
          await runtime.complete({ ...base, constraint: spec });
          outcomes.generated++;
        } catch (e) {
          if (!(e instanceof UnsatisfiableError)) throw e;
        }
      }
    } catch (e) {
      if (e instanceof InvalidRequestError) outcomes.invalid++;
      else if (e instanceof UnsatisfiableError) outcomes.tooComplex++;
      else if (!(e instanceof ClientLimitError)) throw e;
    }
  };
  const run = async (from: number, to: number): Promise<void> => {
    let next = from;
    // Four clients at once, as several API keys would send them.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < to) await prepare(next++);
      }),
    );
  };
  await run(0, 300);
  gc();
  const warmRss = process.memoryUsage().rss;
  let peakRss = warmRss;
  let halfwayHeap = 0;
  let endHeap = 0;
  let workersAlive = 0;
  for (let from = 300; from < DISTINCT; from += 500) {
    await run(from, Math.min(DISTINCT, from + 500));
    gc();
    const { rss, heapUsed } = process.memoryUsage();
    peakRss = Math.max(peakRss, rss);
    if (from + 500 >= DISTINCT / 2 && halfwayHeap === 0) halfwayHeap = heapUsed;
    endHeap = heapUsed;
    workersAlive = Math.max(workersAlive, runtime.constraints.stats().pool.workers);
    assert.ok(runtime.constraints.stats().bytes <= BUDGET, `cache at ${runtime.constraints.stats().bytes} bytes`);
  }
  const stats = runtime.constraints.stats();
  const report = {
    ...outcomes,
    warmRssMb: Math.round(warmRss / MB),
    halfwayHeapMb: Math.round(halfwayHeap / MB),
    endHeapMb: Math.round(endHeap / MB),
    peakRssMb: Math.round(peakRss / MB),
    workersAlive,
    cacheMb: Math.round(stats.bytes / MB),
    entries: stats.entries,
    evictions: stats.evictions,
  };
  process.stdout.write(`# ${JSON.stringify(report)}\n`);
  assert.ok(outcomes.compiled > 2000 && outcomes.invalid > 500 && outcomes.tooComplex > 100, JSON.stringify(outcomes));
  assert.ok(stats.evictions > 0, "the budget never bound: the test proves nothing");
  assert.ok(workersAlive >= 1);
  assert.ok(
    peakRss <= warmRss + BUDGET + workersAlive * WORKER_MEMORY_MB * MB + SLACK,
    `RSS ${Math.round(peakRss / MB)} MB after warm ${Math.round(warmRss / MB)} MB (${workersAlive} compile workers)`,
  );
  assert.ok(
    endHeap <= halfwayHeap + HEAP_SLACK,
    `the heap grew from ${Math.round(halfwayHeap / MB)} MB halfway to ${Math.round(endHeap / MB)} MB: it grows with the constraints`,
  );
});
