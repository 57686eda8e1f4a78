// The compiled-constraint cache: compiles run on a worker (one past its work limit is refused as
// too complex and remembered; a hung one is stopped by the wall-clock valve: 503, not remembered), requests for the same constraint share one compile, refusals are
// remembered, one client's waiting compiles are capped, memory stays within the byte budget.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { ConstraintCache } from "../src/compile/index.js";
import { runCompileTask } from "../src/compile/task.js";
import { maskWords } from "../src/support/index.js";
import { ClientLimitError, InvalidRequestError, OverloadedError, UnsatisfiableError } from "../src/generate/index.js";
import { tokenTrieFor } from "../src/constraint/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { STORIES_260K } from "./support/paths.js";

const trie = tokenTrieFor(loadVocabulary(STORIES_260K));
const caches: ConstraintCache[] = [];
function cache(options: ConstructorParameters<typeof ConstraintCache>[1] = {}): ConstraintCache {
  const c = new ConstraintCache(trie, options);
  caches.push(c);
  return c;
}
after(async () => {
  for (const c of caches) await c.close();
});

/** A pattern whose compile takes long enough to meet a short limit (a 2^15-state DFA). */
const SLOW_PATTERN = "(a|b)*a(a|b){14}";
/** One that compiles, slowly enough (tens of ms) to keep a worker busy meanwhile. */
const BUSY_PATTERN = "(a|b)*a(a|b){11}";

test("a compiled pattern serves requests; the same pattern asked at once compiles once", async () => {
  const c = cache();
  const entries = await Promise.all([0, 1, 2, 3].map(() => c.get({ kind: "regex", pattern: "[a-z]{3}[0-9]" })));
  assert.ok(entries.every((e) => e === entries[0]));
  assert.equal(c.stats().compiles, 1);
  const state = entries[0]!.factory(undefined);
  assert.equal(state.minTokensToAccept(64) >= 1, true);
  assert.equal(state.isAccepting(), false);
  await c.get({ kind: "regex", pattern: "[a-z]{3}[0-9]" });
  assert.equal(c.stats().compiles, 1);
  assert.equal(c.stats().hits, 1);
});

test("grammars compile on the worker and come back as working automata", async () => {
  const c = cache();
  const entry = await c.get({ kind: "grammar", grammar: 'start: "[" W ("," W)* "]"\nW: /[a-z]+/' });
  const state = entry.factory(undefined);
  assert.ok(state.minTokensToAccept(64) >= 3);
  // The revived grammar's terminals are usable (their regexps are made on demand).
  assert.ok(entry.retainedBytes() > 0);
});

test("the scanners a grammar's probe built on the worker come back built", async () => {
  // Its smaller scanners are built on first use; the probe's first masks reach one of them.
  const task = {
    kind: "grammar" as const,
    grammar: 'start: "[" v ("," v)* "]"\nv: NUMBER | "true" | "false" | "null" | start\n%import common.NUMBER',
    maxIgnoredRun: 64,
    limits: {},
  };
  const built = (o: ReturnType<typeof runCompileTask>): number =>
    o.kind === "grammar" ? o.scanners.scannerDfas.filter((d) => d !== undefined).length : -1;
  const unprobed = built(runCompileTask(task));
  const probed = built(runCompileTask(task, trie, { budgets: [512], limitSteps: 4_000_000 }));
  assert.ok(unprobed >= 1 && probed > unprobed, `${unprobed} built without the probe, ${probed} with it`);
});

test("refusals are remembered: the second ask is answered without compiling", async () => {
  const c = cache();
  for (let i = 0; i < 2; i++) {
    await assert.rejects(
      c.get({ kind: "regex", pattern: "(ab" }),
      (e: unknown) => e instanceof InvalidRequestError && e.field === "pattern",
    );
    await assert.rejects(
      c.get({ kind: "grammar", grammar: "start: UNDEFINED_TERMINAL" }),
      (e: unknown) => e instanceof InvalidRequestError && e.field === "grammar",
    );
  }
  assert.equal(c.stats().compiles, 2);
  assert.equal(c.stats().refusals, 2);
  assert.equal(c.stats().hits, 2);
});

test("a compile past its work limit is refused as too complex, then remembered", async () => {
  const c = cache({ compileMaxWork: 200_000 });
  await assert.rejects(
    c.get({ kind: "regex", pattern: BUSY_PATTERN }),
    (e: unknown) => e instanceof UnsatisfiableError && /too complex/.test(e.message) && /TRELLIS_COMPILE_MAX_WORK/.test(e.message),
  );
  const compiles = c.stats().compiles;
  await assert.rejects(c.get({ kind: "regex", pattern: BUSY_PATTERN }), UnsatisfiableError);
  assert.equal(c.stats().compiles, compiles, "a remembered refusal compiled again");
  assert.ok(await c.get({ kind: "regex", pattern: "[0-9]+" }));
  // The verdict is the work, not the machine: under a roomy limit the same pattern compiles.
  assert.ok(await cache({ compileMaxWork: 100_000_000 }).get({ kind: "regex", pattern: BUSY_PATTERN }));
});

test("a compile stopped by the wall-clock valve is a retryable 503, never remembered", async () => {
  const c = cache({ compileTimeoutMs: 1 });
  for (let i = 0; i < 2; i++) {
    await assert.rejects(
      c.get({ kind: "regex", pattern: SLOW_PATTERN.replace("14", "13") }),
      (e: unknown) => e instanceof OverloadedError && e.retryAfterSeconds > 0 && /TRELLIS_COMPILE_TIMEOUT_MS/.test(e.message),
    );
  }
  assert.equal(c.stats().compiles, 2, "a 503 was answered from the cache");
  assert.equal(c.stats().refusals, 0);
});

test("a client's waiting compiles are capped (429); another client still gets through", async () => {
  const c = cache({ perClientRunning: 1, perClientQueued: 1, compileTimeoutMs: 5000 });
  await c.get({ kind: "regex", pattern: "warm" }); // the worker loaded, as in a running service
  const mine = [0, 1].map((i) => c.get({ kind: "regex", pattern: `${BUSY_PATTERN}x${i}` }, { client: "greedy" }));
  await assert.rejects(
    c.get({ kind: "regex", pattern: `${BUSY_PATTERN}x9` }, { client: "greedy" }),
    (e: unknown) => e instanceof ClientLimitError,
  );
  assert.ok(await c.get({ kind: "regex", pattern: "[a-c]{2}" }, { client: "other" }));
  await Promise.all(mine);
});

test("a waiting compile is aborted when its only request goes away", async () => {
  // No burst worker: the waiting compile must still be waiting when its request goes.
  const c = cache({ compileTimeoutMs: 5000, burstWorkers: 0 });
  await c.get({ kind: "regex", pattern: "warm" });
  const blocker = c.get({ kind: "regex", pattern: `${BUSY_PATTERN}b` }, { client: "a" });
  const controller = new AbortController();
  const waiting = c.get({ kind: "regex", pattern: "[q-z]{4}" }, { client: "b", signal: controller.signal });
  controller.abort(new Error("gone"));
  await assert.rejects(waiting, /gone/);
  await blocker;
  assert.equal(c.stats().pool.queued, 0);
  assert.equal(c.stats().compiles, 3);
  assert.equal(c.stats().entries, 2, "the aborted compile ran anyway");
});

test("memory stays within the byte budget: least recently used entries are dropped", async () => {
  const budget = 256 * 1024;
  const c = cache({ budgetBytes: budget });
  for (let i = 0; i < 40; i++) {
    const entry = await c.get({ kind: "regex", pattern: `[a-z]{${i + 1}}(x|y){1,${i + 3}}` });
    // Use it, as a request would: masks fill, then the cache re-reads its size.
    const state = entry.factory(undefined);
    state.writeMask(64, new Uint32Array(maskWords(trie.vocabSize)));
    c.release(entry);
    assert.ok(c.stats().bytes <= budget || c.stats().entries === 1, `${c.stats().bytes} bytes in ${c.stats().entries} entries`);
  }
  assert.ok(c.stats().evictions > 0);
});
