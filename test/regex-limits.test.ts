// Limits of the regex stage that hostile inputs reach: multi-pattern DFAs past 32 patterns (one
// bitset word), and the compile's work limit, which must hold within a clock stride or so of
// counted work whatever phase the work goes to (the wall clock is only a safety valve, answered as
// retryable). Cases that used to hang run in a worker thread that is terminated past a generous
// guard, so a hang fails the test instead of stalling the run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isMainThread, parentPort, Worker } from "node:worker_threads";
import {
  acceptedPatterns,
  canReachPattern,
  compileMultiRegex,
  compileRegex,
  compileRegexNode,
  DEFAULT_REGEX_LIMITS,
  parseFlagString,
  parseRegex,
  type RegexNode,
  RegexTooComplexError,
  walkBytes,
} from "../src/regex/index.js";
import { refusalOf } from "../src/compile/task.js";
import { refusalWithWork, WORK_LIMIT_SLACK } from "./support/regex-work.js";

const SIZES = [31, 32, 33, 63, 64, 65];

/**
 * n patterns that all match a run of letters (so every letter state accepts all of them, and the
 * start reaches all of them), and each alone its own number followed by "#": pattern p is the
 * only one accepting after "p#", and after a digit d only the patterns numbered d… are reachable.
 */
function collidingPatterns(n: number): string[] {
  return Array.from({ length: n }, (_, p) => `[a-z]+|${p}#`);
}

/** The checks of one size, in the worker: a list of failures (empty when all hold). */
function checkColliding(n: number): string[] {
  const failures: string[] = [];
  const dfa = compileMultiRegex(collidingPatterns(n));
  const all = Array.from({ length: n }, (_, p) => p);
  const enc = new TextEncoder();
  const letters = walkBytes(dfa, enc.encode("abc"));
  if (JSON.stringify(acceptedPatterns(dfa, letters)) !== JSON.stringify(all))
    failures.push(`n=${n}: "abc" accepts ${acceptedPatterns(dfa, letters)}`);
  for (let p = 0; p < n; p++) {
    if (!canReachPattern(dfa, dfa.start, p)) failures.push(`n=${n}: pattern ${p} unreachable from the start`);
    const own = walkBytes(dfa, enc.encode(`${p}#`));
    if (JSON.stringify(acceptedPatterns(dfa, own)) !== JSON.stringify([p]))
      failures.push(`n=${n}: "${p}#" accepts ${acceptedPatterns(dfa, own)}`);
  }
  for (const d of [3, 6]) {
    const afterDigit = walkBytes(dfa, enc.encode(String(d)));
    for (let p = 0; p < n; p++) {
      const expected = String(p).startsWith(String(d));
      if (canReachPattern(dfa, afterDigit, p) !== expected) failures.push(`n=${n}: after "${d}" pattern ${p} reachable=${!expected}`);
    }
  }
  return failures;
}

/**
 * A language embedded in many places is one node: 64 levels of `x x` over one literal expand to
 * 2^64 copies. The compile must refuse it by its size estimate at once (before, the estimate
 * walked every copy: a hang, met by JSON objects written in any order inside recursion).
 */
function checkSharedNodes(): string[] {
  let node: RegexNode = parseRegex("ab", parseFlagString(""));
  for (let level = 0; level < 64; level++) node = { kind: "concat", items: [node, node] };
  try {
    compileRegexNode(node, {});
    return ["an expansion of 2^64 copies compiled"];
  } catch (error) {
    return error instanceof RegexTooComplexError && error.limit === "nfaStates" ? [] : [`refused otherwise: ${String(error)}`];
  }
}

if (!isMainThread) {
  parentPort!.on("message", (n: number | "shared") => {
    const t0 = performance.now();
    parentPort!.postMessage({ failures: n === "shared" ? checkSharedNodes() : checkColliding(n), ms: performance.now() - t0 });
  });
}

/**
 * Runs checkColliding(n) in a worker thread; "hang" when it gives no answer in `limitMs`, a
 * liveness guard (an answer takes tens of milliseconds), not a speed target.
 */
async function collidingInWorker(sizes: (number | "shared")[], limitMs: number): Promise<({ failures: string[]; ms: number } | "hang")[]> {
  // The worker loads this file again, through tsx's loader (worker threads do not inherit it).
  const boot = `import { register } from ${JSON.stringify(import.meta.resolve("tsx/esm/api"))}; register(); await import(${JSON.stringify(import.meta.url)});`;
  const out: ({ failures: string[]; ms: number } | "hang")[] = [];
  let worker: Worker | null = null;
  for (const n of sizes) {
    worker ??= new Worker(new URL("data:text/javascript," + encodeURIComponent(boot)));
    const w = worker;
    const answer = await new Promise<{ failures: string[]; ms: number } | "hang">((resolve, reject) => {
      // The first answer includes the worker's start (loading the modules): a second more.
      const timer = setTimeout(() => resolve("hang"), limitMs + (out.length === 0 ? 5000 : 0));
      w.once("error", reject);
      w.once("message", (m: { failures: string[]; ms: number }) => {
        clearTimeout(timer);
        resolve(m);
      });
      w.postMessage(n);
    });
    out.push(answer);
    if (answer === "hang") {
      await w.terminate();
      worker = null;
    }
  }
  await worker?.terminate();
  return out;
}

if (isMainThread) {
  test("multi-pattern DFAs at 31, 32, 33, 63, 64, 65 patterns: acceptance and reachability of every pattern", async () => {
    // Before the fix, 32 patterns made reachableAcceptance loop forever (bit 31 of a merged word,
    // a signed int, never equalled the Uint32Array's element).
    const results = await collidingInWorker(SIZES, 20_000);
    results.forEach((r, i) => {
      assert.notEqual(r, "hang", `${SIZES[i]} patterns: no answer within 20 s (a hang)`);
      if (r !== "hang") assert.deepEqual(r.failures, [], `${SIZES[i]} patterns`);
    });
  });

  test("a node embedded in many places is sized once: an exponential expansion is refused at once, not walked", async () => {
    const [r] = await collidingInWorker(["shared"], 20_000);
    assert.notEqual(r, "hang", "no answer within 20 s (a hang)");
    if (r !== "hang") assert.deepEqual(r!.failures, []);
  });

  /** How the service answers a compile's refusal: its status and whether the verdict is kept. */
  const answer = (error: unknown): { status: string; lasting: boolean } | undefined => {
    const refused = refusalOf(error, "pattern");
    return refused ? { status: refused.status, lasting: refused.lasting } : undefined;
  };

  // Patterns whose work goes to NFA building, wide byte classes and minimization rather than to
  // new DFA states (the old clock, read every 64 new states, let them run 200-750 ms past a 100 ms
  // limit, or finish), and a lexer's multi-pattern DFA (many patterns, each cheap). Each needs
  // more than 2M units in full. Limits on states are lifted so only the work limit can stop them.
  const roomy = { maxDfaStates: 1e7, maxNfaStates: 1e7 };
  const PHASE_CASES: [string, (limits: { maxWork?: number; timeoutMs?: number }) => unknown][] = [
    ...["(?:[^\\n]{0,100}\\n){0,100}", "[\\u0000-\\U0010ffff]{0,30000}", "(a|b)*a(a|b){25}"].map(
      (pattern): [string, (limits: { maxWork?: number; timeoutMs?: number }) => unknown] => [
        pattern,
        (limits) => compileRegex(pattern, { ...roomy, ...limits }),
      ],
    ),
    [
      "3,000 keyword patterns",
      (limits) =>
        compileMultiRegex(
          Array.from({ length: 3000 }, (_, i) => `k${i}[a-z]*`),
          { ...roomy, ...limits },
        ),
    ],
  ];

  test("the work limit holds in every phase, not only between DFA states: a 422 within a stride of the limit", () => {
    const maxWork = 1_000_000;
    for (const [label, compile] of PHASE_CASES) {
      const { error, units } = refusalWithWork(() => compile({ maxWork }), label);
      assert.ok(error instanceof RegexTooComplexError && error.limit === "work", `${label}: ${String(error)}`);
      assert.deepEqual(answer(error), { status: "too_complex", lasting: true }, label);
      // Every phase counts its work and checks it once per clock stride: the refusal comes as
      // the count passes the limit, the same count on every machine.
      assert.ok(units < maxWork + WORK_LIMIT_SLACK, `${label}: ${units - maxWork} units past the limit`);
    }
  });

  test("the wall clock is only a safety valve: when it fires, its refusal is a retryable 503, never kept", () => {
    // A valve already spent fires at the first check of the clock, whatever the machine's speed.
    for (const [label, compile] of PHASE_CASES) {
      const { error } = refusalWithWork(() => compile({ timeoutMs: 0 }), label);
      assert.ok(error instanceof RegexTooComplexError && error.limit === "time", `${label}: ${String(error)}`);
      assert.deepEqual(answer(error), { status: "overloaded", lasting: false }, label);
    }
  });

  test("the default limits refuse the exponential DFA by its state cap, after a small part of the work budget", () => {
    const { error, units } = refusalWithWork(() => compileRegex("(a|b)*a(a|b){25}"));
    assert.ok(error instanceof RegexTooComplexError && error.limit === "dfaStates", String(error));
    assert.ok(units < DEFAULT_REGEX_LIMITS.maxWork / 40, `${units} units of work`);
  });
}
