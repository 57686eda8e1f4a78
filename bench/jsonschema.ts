/**
 * npm run bench:jsonschema — the JSON Schema compiler on MaskBench (JSONSchemaBench's 8,882 real
 * schemas with test instances, ../shared/jsonschema/maskbench/), judged as MaskBench judges an
 * engine (../shared/jsonschema/README.md): compile each schema as the service does at its default
 * settings (compileMs = compileJsonSchema under TRELLIS_COMPILE_MAX_WORK + the budget questions
 * and first masks the compile worker asks at TRELLIS_MAX_NEW_TOKENS (probeBudgets) on a fresh
 * matcher under TRELLIS_MASK_MAX_WORK, as compile/task.ts probes it; a refusal there is
 * what the service would answer 422, counted under refusedAtDefaults), then serialize each test instance as Python's
 * json.dumps(data), tokenize it with the real tokenizer (llama.cpp addon, vocab-only, no BOS) and
 * walk its tokens through a fresh constraint state: at each step the mask is computed (maskUs) and
 * the token's bit read. A valid instance passes when every token is allowed and the end is
 * accepting; an invalid one is refused when some token is not allowed or the end is not accepting.
 * A schema passes when it compiled and every instance was judged right. Side by side with
 * llguidance's own record of the same files (llguidance-maskbench.json). Single thread.
 *
 * Usage: npm run bench:jsonschema -- [--data DIR] [--vocab llama-bpe] [--limit N | --sample N]
 *          [--only A,B] [--out FILE] [--compile-max-work N] [--mask-max-work N] [--llguidance FILE]
 *          [--recursion stack|unrolled] [--free-any-depth true|false] [--property-order schema|any]
 *          [--walk-ahead]
 *   --recursion  "stack" (default, the service's: compileServedSchema's choice of a rule network or
 *                one DFA) or "unrolled" (one DFA always, the form before rule networks).
 *   --free-any-depth  free values at any depth (default: the service's TRELLIS_JSON_FREE_ANY_DEPTH).
 *   --property-order  "schema" (default, the service's) or "any" (the request option property_order:
 *                small objects' properties in any order): how many more valid instances pass.
 *   --walk-ahead  masks as the service serves them: a DFA's matcher precomputes masks for
 *                MATCHER_PRECOMPUTE_MS as the constraint cache does (in compileMs); after each
 *                mask of a rule network's state come the matcher's walks ahead that the server
 *                runs while the model decodes (walkAhead, the scheduler's AHEAD_OF_LOGITS_MS of
 *                each round, counted from the mask's start), and once after the first mask as
 *                while the prompt is evaluated; timed on their own (walkAheadMs per round), not in
 *                maskUs. Assumes decodes of at least AHEAD_OF_LOGITS_MS (a faster decode waits
 *                for them). Without it every mask is cold where the instance first reaches a new
 *                state, as MaskBench times engines.
 *   --only A,B   only the files whose names contain one of these (reproducing one schema's verdict).
 *   --limit N    the first N files by name; --sample N: N files evenly spaced over the sorted list
 *                (every k-th, k = files/N), so a quick run covers every subset.
 *   --out FILE   writes the summary plus perSchema there; stdout then gets the summary alone.
 *   --compile-max-work, --mask-max-work  the work limits (default: the service's defaults, config.ts).
 *                The instances' walks then run unbounded, to judge every compiled schema.
 *
 * slowMasks counts the masks over 200 µs (the issue's p99 target) by the form served, by the steps
 * their operation charged (work-meter.ts: a rule network's walk of a free string or key charges
 * tens of thousands, a counted string's hundreds of thousands), and names the ten schemas with the
 * most: where the tail comes from, beside maskUs's quantiles. maskStepsCharged: the same masks' charged
 * steps, quantiles and sum: their work, the same on every machine and run (two trees' masks compared
 * without the timings' drift).
 *
 * pastMaskWorkLimit counts the valid instances (and their schemas) with a mask that charges more
 * than the mask work limit: on the service's bounded matcher that mask ends the generation (walks
 * made ahead of need are charged to the first mask that uses them, so walking ahead saves none).
 *
 * Prints one JSON object (invalidAcceptedFiles first: it must be empty). Progress on stderr.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { basename, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ConstraintTooCostlyError,
  DfaConstraintState,
  DfaTokenMatcher,
  GrammarConstraintState,
  GrammarTokenMatcher,
  TokenTrie,
  warmUpMatchers,
} from "../src/constraint/index.js";
import { ruleNetworkAutomaton, type RuleNetworkTables } from "../src/grammar/index.js";
import {
  compileJsonSchema,
  DEFAULT_JSON_SCHEMA_OPTIONS,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
} from "../src/schema/index.js";
import type { ByteDfa } from "../src/regex/index.js";
import { engineOptions, loadConfig } from "../src/config.js";
import { compileServedSchema, JSON_SCHEMA_WORK_FACTOR, MATCHER_PRECOMPUTE_MS } from "../src/compile/index.js";
import { AHEAD_OF_LOGITS_MS } from "../src/generate/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { parseKeepingNumbers, pythonDumps, type PyJson } from "../test/support/python-json.js";
import { hasBit } from "./replay.js";
import { argValue, percentile, round3 } from "./stats.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SHARED = resolve(REPO_ROOT, "..", "shared");

/** The issue's mask p99 target (µs): masks past it are counted by form, charged steps and schema (slowMasks). */
const SLOW_MASK_US = 200;

/** The bands of slowMasks.byStepsCharged: below each limit. */
const SLOW_MASK_BANDS = [
  [1_000, "<1k"],
  [4_000, "1k-4k"],
  [16_000, "4k-16k"],
  [64_000, "16k-64k"],
  [256_000, "64k-256k"],
  [Number.POSITIVE_INFINITY, ">=256k"],
] as const;

/** A mask's charged steps (its work meter, GRAMMAR_STEP_WEIGHT a lexer step), as a band of slowMasks.byStepsCharged. */
function slowMaskBand(steps: number): string {
  return SLOW_MASK_BANDS.find(([limit]) => steps < limit)![1];
}

interface Quantiles {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Samples in a growable Float64Array (millions of masks). */
class SampleBuffer {
  private data = new Float64Array(1 << 16);
  length = 0;

  push(x: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = x;
  }

  sum(): number {
    let total = 0;
    for (let i = 0; i < this.length; i++) total += this.data[i]!;
    return total;
  }

  quantiles(): Quantiles {
    const sorted = this.data.slice(0, this.length).sort();
    const q = (p: number): number => round3(percentile(sorted as unknown as number[], p));
    return { n: this.length, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: round3(sorted[sorted.length - 1] ?? NaN) };
  }
}

interface MaskBenchFile {
  schema: unknown;
  tests: { valid: boolean; data: PyJson }[];
}

function readMaskBenchFile(path: string): MaskBenchFile {
  const text = readFileSync(path, "utf8");
  // The schema as plain JSON; the instances as Python reads them (int/float kept, key order kept).
  const schema = (JSON.parse(text) as { schema: unknown }).schema;
  const file = parseKeepingNumbers(text) as { tests?: { valid: unknown; data?: PyJson }[] };
  const tests = file.tests;
  if (tests === undefined) return { schema, tests: [] };
  if (!Array.isArray(tests)) throw new Error("tests is not a list");
  return {
    schema,
    tests: tests.map((t) => {
      if (typeof t.valid !== "boolean") throw new Error("a test without a boolean valid");
      return { valid: t.valid, data: t.data ?? null };
    }),
  };
}

/** Files to run: sorted by name, then the first `limit` or `sample` evenly spaced. */
function selectFiles(dir: string): string[] {
  let files = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const only = argValue("only")?.split(",");
  if (only !== undefined) files = files.filter((f) => only.some((o) => f.includes(o)));
  const limit = argValue("limit");
  const sample = argValue("sample");
  if (limit !== undefined) files = files.slice(0, Number(limit));
  else if (sample !== undefined) {
    const n = Math.min(files.length, Number(sample));
    const step = files.length / n;
    files = Array.from({ length: n }, (_, i) => files[Math.floor(i * step)]!);
  }
  return files;
}

/** llguidance's verdict per file: true = passed, false = refused or judged an instance wrongly. */
function loadLlguidance(path: string): Map<string, boolean> {
  const record = JSON.parse(readFileSync(path, "utf8")) as Record<string, Record<string, unknown>>;
  return new Map(Object.entries(record).map(([file, v]) => [file, Object.keys(v).length === 0]));
}

type Verdict = "ok" | string;

/**
 * Why the DFA itself refuses or accepts `text` (diagnostics for a wrong verdict): where it stops,
 * with the text around that byte, or whether it ends accepting. `dfaAccepts` tells a language
 * fault (the compiler's DFA) from a token-layer one (the masks disagree with the DFA).
 */
function dfaVerdict(dfa: ByteDfa, text: string): { dfaAccepts: boolean; detail: string } {
  const step = (s: number, byte: number): number => dfa.next[s * dfa.numClasses + dfa.byteClass[byte]!]!;
  return verdictOf("DFA", dfa.start, step, (s) => dfa.accepting[s] === 1, text);
}

/** dfaVerdict for a rule network. */
function networkVerdict(rules: readonly ByteDfa[], text: string): { dfaAccepts: boolean; detail: string } {
  const automaton = ruleNetworkAutomaton({ rules });
  return verdictOf(
    "rule network",
    automaton.start,
    (s, byte) => automaton.step(s, byte),
    (s) => automaton.isComplete(s),
    text,
  );
}

/** Steps `text`'s bytes from `start`: where `what` stops, with the text around that byte, or whether it ends accepting. */
function verdictOf(
  what: string,
  start: number,
  step: (state: number, byte: number) => number,
  accepting: (state: number) => boolean,
  text: string,
): { dfaAccepts: boolean; detail: string } {
  const bytes = new TextEncoder().encode(text);
  let s = start;
  for (let i = 0; i < bytes.length; i++) {
    s = step(s, bytes[i]!);
    if (s < 0) {
      const dec = new TextDecoder();
      const before = dec.decode(bytes.subarray(Math.max(0, i - 40), i));
      const after = dec.decode(bytes.subarray(i, i + 20));
      return {
        dfaAccepts: false,
        detail: `${what} stops at byte ${i}/${bytes.length}: ${JSON.stringify(before)} ⟨here⟩ ${JSON.stringify(after)}`,
      };
    }
  }
  if (!accepting(s)) return { dfaAccepts: false, detail: `${what} not accepting at the end (${bytes.length} bytes)` };
  return { dfaAccepts: true, detail: `${what} accepts the text` };
}

async function main(): Promise<void> {
  const dataDir = resolve(REPO_ROOT, argValue("data") ?? "../shared/jsonschema/maskbench");
  const vocabName = argValue("vocab") ?? "llama-bpe";
  const defaults = loadConfig({}, []).config;
  const compileMaxWork = Number(argValue("compile-max-work") ?? defaults.compileMaxWork);
  const maskMaxWork = Number(argValue("mask-max-work") ?? defaults.maskMaxWork);
  const probeBudgets = engineOptions(defaults, "").constraints!.probeBudgets;
  const outFile = argValue("out");
  /** "stack" (the service's: rule networks where values nest without bound) or "unrolled" (one DFA). */
  const recursion = (argValue("recursion") ?? "stack") as "stack" | "unrolled";
  /** Free values as calls too (any depth): the service's TRELLIS_JSON_FREE_ANY_DEPTH unless --free-any-depth true|false. */
  const freeArg = argValue("free-any-depth");
  const freeValuesAnyDepth = freeArg === undefined ? defaults.jsonFreeAnyDepth : freeArg === "true";
  /** The request option property_order: "schema" (the default) or "any". */
  const propertyOrder = (argValue("property-order") ?? "schema") as "schema" | "any";
  const llgPath = resolve(REPO_ROOT, argValue("llguidance") ?? "../shared/jsonschema/llguidance-maskbench.json");
  const walkAhead = process.argv.includes("--walk-ahead");

  const vocabPath = resolve(SHARED, "models", "vocab", `ggml-vocab-${vocabName}.gguf`);
  const vocab = loadVocabulary(vocabPath);
  const trie = TokenTrie.build(vocab);
  const { loadModel } = await import("../src/model/index.js");
  const model = loadModel(vocabPath, { vocabOnly: true, threads: 2 });
  const tokenize = (text: string): Int32Array => model.tokenize(text, { addSpecial: false, parseSpecial: false });
  warmUpMatchers();
  const llg = loadLlguidance(llgPath);

  const files = selectFiles(dataDir);
  // As the service's constraint cache limits a schema's compile.
  const limits = { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: JSON_SCHEMA_WORK_FACTOR * compileMaxWork };
  const compileMs = new SampleBuffer();
  const maskUs = new SampleBuffer();
  /** maskUs split by the form served: one DFA, or a rule network (a grammar matcher). */
  const maskUsDfa = new SampleBuffer();
  const maskUsNetwork = new SampleBuffer();
  /** Each mask's charged steps (its work meter): maskUs's work, the same on every machine and run. */
  const maskSteps = new SampleBuffer();
  /** The masks past the issue's p99 target (SLOW_MASK_US): where the tail comes from (see slowMaskBand). */
  const slowMasks = {
    count: 0,
    byForm: { dfa: 0, ruleNetwork: 0 },
    byStepsCharged: Object.fromEntries(SLOW_MASK_BANDS.map(([, name]) => [name, 0])) as Record<string, number>,
  };
  const slowMasksBySchema: Record<string, number> = {};
  /** With --walk-ahead: the walks ahead of each round (ms), after the first mask and after each mask. */
  const walkAheadMs = new SampleBuffer();
  /** compileMs's two parts: the schema's DFA (compileJsonSchema), then the matcher and its first mask. */
  const schemaMs = new SampleBuffer();
  const firstMaskMs = new SampleBuffer();
  const perSchema: Record<string, Verdict> = {};
  /** compileMs per compiled schema (in --out's file): runs compare on the schemas both compiled. */
  const compileMsBySchema: Record<string, number> = {};
  const refusedByKeyword: Record<string, number> = {};
  const tooComplex: Record<string, number> = {};
  const invalidAcceptedFiles: string[] = [];
  /** Valid instances the DFA accepts but the token walk refused (a token-layer bug): must be empty. */
  const maskDisagreements: string[] = [];
  const validRejectedFiles: string[] = [];
  /**
   * Schemas with a valid instance some mask of which charges more than the mask work limit: on a
   * bounded matcher, as the service serves it, that mask would end the generation with a 422 (or
   * an error event once output has gone out) unless the walks ahead had made its walks first.
   */
  const pastMaskWorkFiles: string[] = [];
  let pastMaskWorkInstances = 0;
  const errorFiles: Record<string, string> = {};
  const c = {
    compiled: 0,
    /** Compiled to a rule network (values nesting without bound), served by a grammar matcher. */
    ruleNetworks: 0,
    refused: 0,
    timeouts: 0,
    tooComplex: 0,
    unsatisfiable: 0,
    errors: 0,
    maskTooCostly: 0,
    validInstances: 0,
    validAccepted: 0,
    invalidInstances: 0,
    invalidRefused: 0,
    schemasPassing: 0,
    tokens: 0,
  };
  const table = { bothPass: 0, onlyOurs: 0, onlyTheirs: 0, neither: 0, notInTheirRecord: 0 };
  let theirPassing = 0;
  const started = performance.now();
  const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);

  for (let fi = 0; fi < files.length; fi++) {
    const file = files[fi]!;
    const verdict = runFile(file);
    perSchema[file] = verdict;
    if (verdict === "ok") c.schemasPassing++;
    const theirs = llg.get(file);
    if (theirs === undefined) table.notInTheirRecord++;
    else {
      if (theirs) theirPassing++;
      const ours = verdict === "ok";
      if (ours && theirs) table.bothPass++;
      else if (ours) table.onlyOurs++;
      else if (theirs) table.onlyTheirs++;
      else table.neither++;
    }
    if ((fi + 1) % 100 === 0 || fi + 1 === files.length) {
      const s = ((performance.now() - started) / 1000).toFixed(1);
      process.stderr.write(
        `bench:jsonschema: ${fi + 1}/${files.length} ${s}s passing ${c.schemasPassing} compiled ${c.compiled} refused ${c.refused} ` +
          `timeouts ${c.timeouts} tooComplex ${c.tooComplex} errors ${c.errors} valid ${c.validAccepted}/${c.validInstances} ` +
          `invalid refused ${c.invalidRefused}/${c.invalidInstances} invalidAccepted ${invalidAcceptedFiles.length}\n`,
      );
    }
  }
  model.dispose();

  function runFile(file: string): Verdict {
    let mb: MaskBenchFile;
    try {
      mb = readMaskBenchFile(resolve(dataDir, file));
    } catch (err) {
      c.errors++;
      errorFiles[file] = `unreadable: ${(err as Error).message}`;
      return `error: unreadable: ${(err as Error).message}`;
    }
    let newState: () => DfaConstraintState | GrammarConstraintState;
    let dfa: ByteDfa | undefined;
    let rules: readonly ByteDfa[] | undefined;
    /** The probe's automaton's tables, handed to the serving side's automaton as the service does. */
    let tables: RuleNetworkTables | undefined;
    const t0 = performance.now();
    let tSchema = t0;
    let aheadAtFirst = 0;
    try {
      // The form the service serves (compile/task.ts), chosen with its probe: the budget question
      // and the first mask at each probe budget, on a fresh matcher under the mask work limit.
      const probe = { budgets: probeBudgets, limitSteps: maskMaxWork };
      if (recursion === "stack") {
        const options = { whitespace: "default", strict: true, limits, freeValuesAnyDepth, propertyOrder } as const;
        const served = compileServedSchema(mb.schema, options, trie, probe);
        if (served.kind === "rules") ({ rules, tables } = served);
        else dfa = served.dfa;
      } else ({ dfa } = compileJsonSchema(mb.schema, { whitespace: "default", strict: true, limits, propertyOrder }));
      tSchema = performance.now();
      // As the service makes a schema's matcher (compile/cache.ts): a DFA's, or a grammar
      // matcher over the rule network.
      const makeState = (limitSteps: number): (() => DfaConstraintState | GrammarConstraintState) => {
        if (rules !== undefined) {
          const m = new GrammarTokenMatcher(trie, ruleNetworkAutomaton(tables === undefined ? { rules } : { rules, tables }));
          m.work.limitSteps = limitSteps;
          return () => new GrammarConstraintState(m);
        }
        const m = new DfaTokenMatcher(trie, dfa!, { shareEquivalentStates: false });
        m.work.limitSteps = limitSteps;
        // As the service's cache does with a new DFA entry (in compileMs: first use waits for it).
        if (walkAhead) m.precompute(MATCHER_PRECOMPUTE_MS);
        return () => new DfaConstraintState(m);
      };
      if (recursion !== "stack") {
        const first = makeState(maskMaxWork)();
        for (const budget of probeBudgets) if (first.minTokensToAccept(budget) <= budget) first.mask(budget);
      }
      // Unbounded, for the verdicts.
      newState = makeState(Number.POSITIVE_INFINITY);
      const first = newState();
      first.mask(1 << 20);
      if (walkAhead && first instanceof GrammarConstraintState) {
        // While the model evaluates the prompt (not in compileMs: see below).
        const a = performance.now();
        first.walkAhead(a + AHEAD_OF_LOGITS_MS);
        aheadAtFirst = performance.now() - a;
      }
    } catch (err) {
      if (err instanceof JsonSchemaError) {
        c.refused++;
        const k = err.keyword ?? "other";
        refusedByKeyword[k] = (refusedByKeyword[k] ?? 0) + 1;
        return `refused: ${err.keyword ?? "other"}: ${err.message}`;
      }
      if (err instanceof JsonSchemaTooComplexError) {
        if (err.limit === "time" || err.limit === "work") {
          c.timeouts++;
          return "timeout";
        }
        c.tooComplex++;
        tooComplex[err.limit] = (tooComplex[err.limit] ?? 0) + 1;
        return `too complex: ${err.limit}`;
      }
      if (err instanceof JsonSchemaUnsatisfiableError) {
        c.unsatisfiable++;
        return "unsatisfiable";
      }
      if (err instanceof ConstraintTooCostlyError) {
        c.maskTooCostly++;
        return `mask too costly: first mask: ${err.message}`;
      }
      c.errors++;
      const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      errorFiles[file] = message;
      return `error: ${message}`;
    }
    const t1 = performance.now() - aheadAtFirst;
    if (aheadAtFirst > 0) walkAheadMs.push(aheadAtFirst);
    compileMs.push(t1 - t0);
    compileMsBySchema[file] = round3(t1 - t0);
    schemaMs.push(tSchema - t0);
    firstMaskMs.push(t1 - tSchema);
    c.compiled++;
    if (rules !== undefined) c.ruleNetworks++;

    let verdict: Verdict = "ok";
    /** Every invalid instance we let through, with its text: they outrank any other verdict. */
    const letThrough: string[] = [];
    for (let i = 0; i < mb.tests.length; i++) {
      const test = mb.tests[i]!;
      const text = pythonDumps(test.data);
      const tokens = tokenize(text);
      const st = newState();
      let allowed = true;
      let stoppedAt = -1;
      let pastMaskWork = false;
      try {
        for (let j = 0; j < tokens.length; j++) {
          const tok = tokens[j]!;
          const a = performance.now();
          const mask = st.mask(1 << 20);
          const us = (performance.now() - a) * 1000;
          // The operation's charge (the meter begins at each mask; this matcher is unbounded).
          if (st.matcher.work.steps > maskMaxWork) pastMaskWork = true;
          maskUs.push(us);
          maskSteps.push(st.matcher.work.steps);
          (rules !== undefined ? maskUsNetwork : maskUsDfa).push(us);
          if (us > SLOW_MASK_US) {
            slowMasks.count++;
            slowMasks.byForm[rules !== undefined ? "ruleNetwork" : "dfa"]++;
            const band = slowMaskBand(st.matcher.work.steps);
            slowMasks.byStepsCharged[band] = (slowMasks.byStepsCharged[band] ?? 0) + 1;
            slowMasksBySchema[file] = (slowMasksBySchema[file] ?? 0) + 1;
          }
          c.tokens++;
          if (!hasBit(mask, tok)) {
            allowed = false;
            stoppedAt = j;
            break;
          }
          if (walkAhead && st instanceof GrammarConstraintState) {
            // The rest of the decode round, from the mask's start, as the scheduler gives it.
            const b = performance.now();
            st.walkAhead(a + AHEAD_OF_LOGITS_MS);
            walkAheadMs.push(performance.now() - b);
          }
          // A token in the mask the state then refuses: the mask and the DFA disagree (a bug).
          if (!st.advance(tok)) throw new Error(`instance #${i}: token ${tok} at ${j} is in the mask but advance refused it`);
        }
      } catch (err) {
        if (err instanceof ConstraintTooCostlyError) {
          c.maskTooCostly++;
          return `mask too costly: #${i}: ${err.message}`;
        }
        c.errors++;
        const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        errorFiles[file] = message;
        return `error: ${message}`;
      }
      const accepted = allowed && st.isAccepting();
      if (test.valid && pastMaskWork) {
        pastMaskWorkInstances++;
        if (!pastMaskWorkFiles.includes(file)) pastMaskWorkFiles.push(file);
      }
      if (test.valid) {
        c.validInstances++;
        if (accepted) c.validAccepted++;
        else {
          const why = rules !== undefined ? networkVerdict(rules, text) : dfaVerdict(dfa!, text);
          // The DFA accepts the text but its tokens did not get through: masks and DFA disagree.
          if (why.dfaAccepts) maskDisagreements.push(`${file} #${i}`);
          const where = stoppedAt >= 0 ? `token ${stoppedAt}/${tokens.length} not in the mask` : "not accepting at the end";
          if (verdict === "ok") verdict = `valid rejected: #${i}: ${where}; ${why.detail}`;
        }
      } else {
        c.invalidInstances++;
        if (!accepted) c.invalidRefused++;
        else {
          // The headline: a text we would let through that the schema forbids.
          if (!invalidAcceptedFiles.includes(file)) invalidAcceptedFiles.push(file);
          letThrough.push(`#${i}: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`);
        }
      }
    }
    if (verdict.startsWith("valid rejected")) validRejectedFiles.push(file);
    return letThrough.length > 0 ? `invalid accepted: ${letThrough.join("; ")}` : verdict;
  }

  const summary = {
    invalidAcceptedFiles,
    maskDisagreements,
    data: dataDir,
    vocab: vocabName,
    tokenizer: "llama.cpp (vocab-only, no BOS)",
    compileMaxWork,
    maskMaxWork,
    recursion,
    freeValuesAnyDepth,
    propertyOrder,
    probeBudgets,
    /** What the service would refuse (422) at these limits: compile work, then the probe's. */
    refusedAtDefaults: c.timeouts + c.maskTooCostly,
    node: process.version,
    cpus: availableParallelism(),
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadavg().map((x) => Math.round(x * 100) / 100),
    elapsedS: round3((performance.now() - started) / 1000),
    schemas: files.length,
    compiled: c.compiled,
    ruleNetworks: c.ruleNetworks,
    refused: c.refused,
    refusedByKeyword: Object.fromEntries(Object.entries(refusedByKeyword).sort((a, b) => b[1] - a[1])),
    timeouts: c.timeouts,
    tooComplex,
    unsatisfiable: c.unsatisfiable,
    errors: c.errors,
    errorFiles,
    maskTooCostly: c.maskTooCostly,
    pastMaskWorkLimit: {
      note: "valid instances with a mask charging more than --mask-max-work: the service refuses them mid-generation (its walks ahead are charged to the first mask that uses them)",
      schemas: pastMaskWorkFiles.length,
      instances: pastMaskWorkInstances,
      firstFiles: pastMaskWorkFiles.slice(0, 20),
    },
    validInstances: c.validInstances,
    validAccepted: c.validAccepted,
    invalidInstances: c.invalidInstances,
    invalidRefused: c.invalidRefused,
    invalidAccepted: c.invalidInstances - c.invalidRefused,
    validRejectedFiles: validRejectedFiles.length,
    schemasPassing: c.schemasPassing,
    tokensMasked: c.tokens,
    compileMs: compileMs.quantiles(),
    maskUs: maskUs.quantiles(),
    maskStepsCharged: { ...maskSteps.quantiles(), sum: maskSteps.sum() },
    maskUsByForm: { dfa: maskUsDfa.quantiles(), ruleNetwork: maskUsNetwork.quantiles() },
    slowMasks: {
      overUs: SLOW_MASK_US,
      ...slowMasks,
      topSchemas: Object.fromEntries(
        Object.entries(slowMasksBySchema)
          .sort((x, y) => y[1] - x[1])
          .slice(0, 10),
      ),
    },
    masks: walkAhead
      ? `served: a DFA's masks precomputed for ${MATCHER_PRECOMPUTE_MS} ms as the constraint cache does (in compileMs); each rule network mask after the server's walks ahead of the round before (${AHEAD_OF_LOGITS_MS} ms a round from the mask's start, as while the model decodes)`
      : "cold: a mask is computed where the instance first reaches its state (as MaskBench times engines)",
    ...(walkAhead ? { walkAheadMs: walkAheadMs.quantiles() } : {}),
    compileParts: { schemaMs: schemaMs.quantiles(), firstMaskMs: firstMaskMs.quantiles() },
    llguidance: {
      record: llgPath,
      passing: theirPassing,
      oursPassing: c.schemasPassing,
      bothPass: table.bothPass,
      onlyOurs: table.onlyOurs,
      onlyTheirs: table.onlyTheirs,
      neither: table.neither,
      notInTheirRecord: table.notInTheirRecord,
    },
    note:
      "compileMs = compileJsonSchema (whitespace default, strict, recursion as --recursion, the service's: stack) + " +
      "the matcher the service makes (a DfaTokenMatcher, or a GrammarTokenMatcher over the rule network) + first mask, " +
      "compiled schemas only; compileParts splits it into the schema's DFA and the matcher with its first mask; " +
      "maskUs = every mask of every instance token (fresh constraint state per instance on the schema's matcher, budget 2^20 tokens), " +
      "maskStepsCharged = the same masks' work-meter steps (deterministic), " +
      "walks stop at the first disallowed token. schemasPassing = compiled and every instance judged right. " +
      "llguidance = its own record (llguidance 1.8) of the same files: passing = {} in the record.",
  };
  if (outFile !== undefined) {
    writeFileSync(resolve(outFile), JSON.stringify({ ...summary, perSchema, compileMsBySchema }, null, 2) + "\n");
    process.stdout.write(JSON.stringify({ ...summary, perSchemaIn: basename(outFile) }, null, 2) + "\n");
  } else {
    process.stdout.write(JSON.stringify({ ...summary, perSchema }, null, 2) + "\n");
  }
}

await main();
