/**
 * Compiled constraints for one vocabulary: constraints of every kind compiled on worker threads,
 * never on the event loop, under work limits (the verdict: the same on any machine), a memory
 * limit (the worker's heap) and a wall-clock safety valve (past it the worker is terminated and
 * the answer is a retryable 503); kept, with their token matchers, in one LRU bounded by bytes;
 * refused ones kept too (cheaply), so a repeated bad request costs a hash and a lookup.
 *
 *   const cache = new ConstraintCache(trie, options);
 *   const entry = await cache.get({ kind: "regex", pattern }, { client, signal });   // any ConstraintSpec but text
 *   try { ...entry.factory(forcedPrefix)... } finally { cache.release(entry) }
 *
 * Concurrent requests for the same constraint share one compile. Compiles are queued per client
 * (see support/worker-pool.ts), so one API key cannot hold the pool.
 */
import { deserialize } from "node:v8";
import { Worker } from "node:worker_threads";
import { REGEX_MAX_WORK, type ByteDfa, type RegexLimits } from "../regex/index.js";
import {
  createGrammarAutomaton,
  ruleNetworkAutomaton,
  type GrammarAutomaton,
  type GrammarLimits,
  type RuleNetworkAutomaton,
} from "../grammar/index.js";
import { DEFAULT_JSON_SCHEMA_OPTIONS, type JsonSchemaWarning } from "../schema/index.js";
import { DfaConstraintState, dfaTokenMatcherFor, type DfaTokenMatcher, type TokenTrie, type VocabularyBytes } from "../constraint/index.js";
import { GrammarConstraintState, GrammarTokenMatcher, type CompletableAutomaton } from "../constraint/index.js";
import type { ConstraintTooCostlyError, TokenConstraint } from "../constraint/index.js";
import {
  ByteLruCache,
  PoolBusyError,
  PoolClosedError,
  PoolTimeoutError,
  PoolWorkerDiedError,
  WorkerPool,
  WorkerTaskError,
  type Sized,
} from "../support/index.js";
import {
  refusalError,
  refusalOf,
  reviveCompileOutput,
  runCompileTask,
  type CompileOutput,
  type CompileTask,
  type Refusal,
} from "./task.js";
import type { CompileFailure, CompileWorkerData } from "./worker.js";
import { ClientLimitError, OverloadedError } from "./errors.js";
import { fieldOf, keyOf, MAX_IGNORED_RUN, type CompiledSpec, type ConstraintStats } from "./spec.js";

export interface ConstraintCacheOptions {
  /** Bytes of compiled constraints, matchers and refusals kept (LRU beyond). */
  budgetBytes: number;
  /**
   * Safety valve: wall-clock limit of one compile (and its probe) on its worker; past it the
   * worker is terminated and the answer is a 503 (OverloadedError), never kept.
   */
  compileTimeoutMs: number;
  /** Work units one compile may spend (regex, grammar and JSON Schema stages): 422 beyond, kept. */
  compileMaxWork: number;
  /** Compile workers. */
  workers: number;
  /**
   * Warm workers beyond `workers`, each taking compiles only of a client with none running while
   * the others are all busy: a cheap compile never waits behind another client's expensive one.
   */
  burstWorkers: number;
  /** Heap of one compile worker, MB (a compile past it is refused as too complex). */
  workerMemoryMb: number;
  /** Compiles of one client running at once / waiting. */
  perClientRunning: number;
  perClientQueued: number;
  /** Compiles waiting in all. */
  maxQueued: number;
  regexLimits: RegexLimits;
  /** Grammar compile limits (the grammar stage's defaults for what is left out). */
  grammarLimits: Partial<GrammarLimits>;
  /**
   * Steps of work one constraint operation (a mask, a budget question) may do on the serving
   * thread (constraint/work-meter.ts); past it the request is refused (422). Infinity (the
   * library's default; the service sets TRELLIS_MASK_MAX_WORK): no bound, and no probe.
   */
  maskMaxWork: number;
  /**
   * The vocabulary, for the compile workers' trie: with it (and a finite maskMaxWork) they also
   * try a new constraint's first operations (at `probeBudgets`) under maskMaxWork on a fresh
   * matcher, and refuse it (for good: the count is the same on every try) when they need more.
   */
  vocabulary: VocabularyBytes | null;
  probeBudgets: readonly number[];
  /** JSON Schema free values at any depth, served by rule networks (TRELLIS_JSON_FREE_ANY_DEPTH). */
  freeValuesAnyDepth: boolean;
}

/**
 * A schema document (JSON Schema, TypeScript, tool calls) is many languages built, multiplied and
 * subtracted: it may do this many times a pattern's compile work (TRELLIS_COMPILE_MAX_WORK). At
 * the default, 256M units, about 1.3 s of a worker here: the costliest MaskBench schema that
 * compiles at all needs 175M (Handwritten notnames10, `not`s of `propertyNames` nested in
 * `patternProperties`); at four times, 128M, it and notnames9 were refused.
 */
export const JSON_SCHEMA_WORK_FACTOR = 8;

export const DEFAULT_CONSTRAINT_CACHE_OPTIONS: Readonly<ConstraintCacheOptions> = {
  budgetBytes: 512 * 1024 * 1024,
  // Library use (tests, scripts) trusts its input; the service sets TRELLIS_COMPILE_TIMEOUT_MS.
  compileTimeoutMs: 10_000,
  compileMaxWork: REGEX_MAX_WORK,
  workers: 1,
  burstWorkers: 1,
  workerMemoryMb: 512,
  perClientRunning: 1,
  perClientQueued: 4,
  maxQueued: 256,
  regexLimits: {},
  grammarLimits: {},
  maskMaxWork: Number.POSITIVE_INFINITY,
  vocabulary: null,
  probeBudgets: [8, 512],
  freeValuesAnyDepth: true,
};

/** Who asks for a constraint: the fairness unit, and what aborts the wait. */
export interface CompileContext {
  /** Whose share of the compile pool this uses (an API key); none: the request's own. */
  client?: string;
  signal?: AbortSignal;
}

/** Builds a request's constraint: the first generated token must begin with `forcedPrefix`. */
export type ConstraintFactory = (forcedPrefix: Uint8Array | undefined) => TokenConstraint;

/** A compiled constraint ready to serve requests. */
export interface ConstraintEntry extends Sized {
  readonly key: string;
  /** How it is served: a byte DFA's token matcher, or a grammar's (a Lark grammar's, a rule network's). */
  readonly kind: "dfa" | "grammar";
  /** The request field it comes from (what its refusals name). */
  readonly field: string;
  readonly factory: ConstraintFactory;
  /** What the compile left unenforced or wants said (JSON Schema under strict: false). */
  readonly warnings?: readonly JsonSchemaWarning[];
  /** An operation on its matcher met the work limit: the matcher is unusable (see WorkMeter). */
  readonly spent: boolean;
}

/**
 * A compile refused for its worker's heap is refused again for this long without retrying (the
 * heap a compile reaches also depends a little on what the worker held before), so a client
 * repeating it costs nothing. Refusals for work or size are kept for good; a stop by the
 * wall-clock valve is never kept.
 */
export const TRANSIENT_REFUSAL_MS = 5 * 60_000;

/**
 * A recognizer memoizes every state it meets; past this many states the next request starts a
 * fresh automaton and matcher (in-flight requests keep theirs), so its memos stay below V8's
 * 2^24-entry Map limit (RangeError) and its bytes within what the cache last accounted.
 */
export const MAX_AUTOMATON_STATES = 50_000;

/** Heap bytes a deserialized grammar keeps per byte of its serialized form (measured: ~2.2). */
const GRAMMAR_HEAP_PER_SERIALIZED_BYTE = 3;

class RefusalEntry implements Sized {
  constructor(
    readonly refusal: Refusal,
    readonly expiresMs: number,
  ) {}

  retainedBytes(): number {
    return 200 + 2 * this.refusal.message.length;
  }
}

/** A constraint served by a byte DFA: a pattern's, a schema's, a tool-call language's. */
class DfaEntry implements ConstraintEntry {
  readonly kind = "dfa";
  readonly factory: ConstraintFactory;
  private readonly dfaBytes: number;

  constructor(
    readonly key: string,
    readonly field: string,
    readonly matcher: DfaTokenMatcher,
    dfa: ByteDfa,
    readonly warnings?: readonly JsonSchemaWarning[],
  ) {
    this.dfaBytes = typedArrayBytes(dfa);
    this.factory = (prefix) => new DfaConstraintState(matcher, prefix);
  }

  get spent(): boolean {
    return this.matcher.work.exhausted !== null;
  }

  retainedBytes(): number {
    return this.dfaBytes + this.matcher.retainedBytes();
  }
}

/** An automaton a grammar matcher serves (a Lark grammar's, a rule network's). */
interface MatchedAutomaton extends CompletableAutomaton {
  readonly numStates: number;
  retainedBytes(): number;
}

/**
 * A constraint served by a grammar matcher over an automaton whose states are made as requests
 * meet them: a Lark grammar's, or a rule network's (a schema whose values nest without bound).
 * `fresh` makes the automaton, given the one it replaces once that one's memos are full.
 */
class GrammarEntry<A extends MatchedAutomaton> implements ConstraintEntry {
  readonly kind = "grammar";
  readonly factory: ConstraintFactory;
  private automaton: A;
  private matcher: GrammarTokenMatcher;

  constructor(
    readonly key: string,
    readonly field: string,
    private readonly trie: TokenTrie,
    private readonly fresh: (replaced?: A) => A,
    /** The deserialized compile output (grammar and scanner DFAs, or rule DFAs). */
    private readonly compiledBytes: number,
    private readonly maskMaxWork: number,
    readonly warnings?: readonly JsonSchemaWarning[],
  ) {
    this.automaton = fresh();
    this.matcher = this.freshMatcher();
    this.factory = (prefix) => {
      if (this.automaton.numStates > MAX_AUTOMATON_STATES) {
        this.automaton = this.fresh(this.automaton);
        this.matcher = this.freshMatcher();
      }
      return new GrammarConstraintState(this.matcher, prefix);
    };
  }

  private freshMatcher(): GrammarTokenMatcher {
    const matcher = new GrammarTokenMatcher(this.trie, this.automaton);
    matcher.work.limitSteps = this.maskMaxWork;
    return matcher;
  }

  get spent(): boolean {
    return this.matcher.work.exhausted !== null;
  }

  retainedBytes(): number {
    return this.compiledBytes + this.automaton.retainedBytes() + this.matcher.retainedBytes();
  }
}

type CacheValue = DfaEntry | GrammarEntry<GrammarAutomaton> | GrammarEntry<RuleNetworkAutomaton> | RefusalEntry;

/** A compile running (or waiting for a worker) and how many requests wait for it. */
interface InFlightCompile {
  readonly promise: Promise<ConstraintEntry>;
  readonly abort: AbortController;
  waiters: number;
}

/** What stats() reports: the Engine's ConstraintStats (types.ts), the /metrics gauges' source. */
export type ConstraintCacheStats = ConstraintStats;

export class ConstraintCache {
  private readonly options: ConstraintCacheOptions;
  private readonly entries: ByteLruCache<CacheValue>;
  private readonly inFlight = new Map<string, InFlightCompile>();
  private readonly pool: WorkerPool;
  private readonly counters = { compiles: 0, refusals: 0, hits: 0 };
  private anonymousRequests = 0;
  /** The stages' limits: sizes and work; no clock (the pool's timeout is the one valve). */
  private readonly regexLimits: RegexLimits;
  private readonly grammarLimits: Partial<GrammarLimits>;
  private readonly jsonSchemaLimits: RegexLimits;

  constructor(
    private readonly trie: TokenTrie,
    options: Partial<ConstraintCacheOptions> = {},
  ) {
    this.options = { ...DEFAULT_CONSTRAINT_CACHE_OPTIONS, ...options };
    const maxWork = this.options.compileMaxWork;
    this.regexLimits = { ...this.options.regexLimits, maxWork: Math.min(this.options.regexLimits.maxWork ?? maxWork, maxWork) };
    this.grammarLimits = { ...this.options.grammarLimits, maxWork: Math.min(this.options.grammarLimits.maxWork ?? maxWork, maxWork) };
    this.jsonSchemaLimits = { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: JSON_SCHEMA_WORK_FACTOR * maxWork };
    this.entries = new ByteLruCache(this.options.budgetBytes);
    const memoryMb = this.options.workerMemoryMb;
    const workerData: CompileWorkerData = {
      vocabulary: this.options.vocabulary,
      probe:
        this.options.vocabulary && Number.isFinite(this.options.maskMaxWork)
          ? { budgets: this.options.probeBudgets, limitSteps: this.options.maskMaxWork }
          : null,
    };
    this.pool = new WorkerPool({
      size: this.options.workers,
      burstSize: this.options.burstWorkers,
      spawn: () => spawnCompileWorker(memoryMb, workerData),
      perClientRunning: this.options.perClientRunning,
      perClientQueued: this.options.perClientQueued,
      maxQueued: this.options.maxQueued,
      // A worker keeps what it allocated; past half its limit a fresh one starts clean.
      recycleHeapBytes: (memoryMb * 1024 * 1024) / 2,
    });
    this.pool.warm();
  }

  stats(): ConstraintCacheStats {
    return { ...this.entries.stats(), ...this.counters, pool: this.pool.stats() };
  }

  /**
   * The compiled constraint of `spec` (shared by every request for the same key): from the cache,
   * from a compile already running, or compiled now on a worker.
   */
  get(spec: CompiledSpec, context: CompileContext = {}): Promise<ConstraintEntry> {
    const key = keyOf(spec);
    return this.lookup(key, context, this.taskOf(spec), (output, serializedBytes) => {
      if (output.kind === "dfa") return this.dfaEntry(key, spec.kind, output.dfa, output.warnings);
      const maskMaxWork = this.options.maskMaxWork;
      if (output.kind === "rules") {
        // The worker's tables, when its probe made them: the serving thread does not compute them again.
        const network = { rules: output.rules, ...(output.tables === undefined ? {} : { tables: output.tables }) };
        let bytes = output.rules.reduce((sum, dfa) => sum + typedArrayBytes(dfa), 0);
        if (output.tables !== undefined) bytes += typedArrayBytes(output.tables);
        // A replacement shares the tables of the automaton it replaces.
        const fresh = (replaced?: RuleNetworkAutomaton) => ruleNetworkAutomaton(network, replaced);
        return new GrammarEntry(key, fieldOf(spec.kind), this.trie, fresh, bytes, maskMaxWork, output.warnings);
      }
      const maxIgnoredRun = spec.kind === "grammar" ? (spec.maxIgnoredRun ?? MAX_IGNORED_RUN) : MAX_IGNORED_RUN;
      const bytes = serializedBytes * GRAMMAR_HEAP_PER_SERIALIZED_BYTE;
      const { grammar, scanners } = output;
      const fresh = () => createGrammarAutomaton(grammar, { maxIgnoredRun, prebuilt: scanners });
      return new GrammarEntry(key, "grammar", this.trie, fresh, bytes, maskMaxWork);
    });
  }

  /** The worker's task for `spec`: its stage's limits. */
  private taskOf(spec: CompiledSpec): CompileTask {
    switch (spec.kind) {
      case "regex":
        return { ...spec, limits: this.regexLimits };
      case "grammar":
        return { ...spec, maxIgnoredRun: spec.maxIgnoredRun ?? MAX_IGNORED_RUN, limits: this.grammarLimits };
      case "tool_calls":
        return { ...spec, limits: this.jsonSchemaLimits };
      default:
        return { ...spec, limits: this.jsonSchemaLimits, freeValuesAnyDepth: this.options.freeValuesAnyDepth };
    }
  }

  /** The entry of a constraint served by a byte DFA (a pattern's, a schema's): its token matcher. */
  private dfaEntry(key: string, source: CompiledSpec["kind"], dfa: ByteDfa, warnings: readonly JsonSchemaWarning[] | undefined): DfaEntry {
    // A schema's DFA never has states that share a walk (see DfaTokenMatcherOptions).
    const matcher = dfaTokenMatcherFor(this.trie, dfa, { shareEquivalentStates: source === "regex" });
    matcher.work.limitSteps = this.options.maskMaxWork;
    matcher.precompute(MATCHER_PRECOMPUTE_MS);
    return new DfaEntry(key, fieldOf(source), matcher, dfa, warnings);
  }

  /**
   * After a request used the entry: its matcher may have grown; the budget is enforced again. A
   * spent one (a refusal's lower bound met its share of the limit) is dropped, as by refuse.
   */
  release(entry: ConstraintEntry): void {
    if (entry.spent && this.entries.peek(entry.key) === entry) this.entries.delete(entry.key);
    else this.entries.resize(entry.key);
  }

  /**
   * A request's operation on the entry needed more than maskMaxWork: its matcher is unusable (its
   * memo may hold a half-made walk), so the entry is dropped and the next request compiles
   * afresh. The constraint itself is not refused: its first operations passed the probe, and
   * this request met the limit on a path of its own. Returns the request error to answer with.
   */
  refuse(entry: ConstraintEntry, error: ConstraintTooCostlyError): Error {
    const refusal = refusalOf(error, entry.field)!;
    if (this.entries.peek(entry.key) === entry) {
      this.counters.refusals++;
      this.entries.delete(entry.key);
    }
    return refusalError(refusal);
  }

  async close(): Promise<void> {
    await this.pool.close();
    this.entries.clear();
  }

  private async lookup(
    key: string,
    context: CompileContext,
    task: CompileTask,
    build: (output: CompileOutput, serializedBytes: number) => ConstraintEntry & CacheValue,
  ): Promise<ConstraintEntry> {
    const cached = this.entries.get(key);
    if (cached instanceof RefusalEntry) {
      if (cached.expiresMs > Date.now()) {
        this.counters.hits++;
        throw refusalError(cached.refusal);
      }
      this.entries.delete(key);
    } else if (cached !== undefined) {
      this.counters.hits++;
      return cached;
    }
    let compile = this.inFlight.get(key);
    if (compile === undefined) {
      const abort = new AbortController();
      // Without a client (library use) every request is its own: only the pool's total bounds it.
      const client = context.client ?? `request:${this.anonymousRequests++}`;
      const promise = this.compile(key, client, abort.signal, task, build);
      const started: InFlightCompile = { promise, abort, waiters: 0 };
      compile = started;
      this.inFlight.set(key, started);
      const forget = (): void => {
        if (this.inFlight.get(key) === started) this.inFlight.delete(key);
      };
      promise.then(forget, forget);
    }
    return this.await(compile, context.signal);
  }

  /**
   * Waits for a shared compile until it settles or `signal` aborts. The compile itself is aborted
   * (while it still waits for a worker) only when every request waiting for it has gone.
   */
  private await(compile: InFlightCompile, signal: AbortSignal | undefined): Promise<ConstraintEntry> {
    compile.waiters++;
    if (signal === undefined) return compile.promise;
    if (signal.aborted) {
      if (--compile.waiters === 0) compile.abort.abort(signal.reason);
      return Promise.reject(signal.reason);
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (--compile.waiters === 0) compile.abort.abort(signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      compile.promise.then(
        (entry) => {
          signal.removeEventListener("abort", onAbort);
          resolve(entry);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }

  private async compile(
    key: string,
    client: string,
    signal: AbortSignal,
    task: CompileTask,
    build: (output: CompileOutput, serializedBytes: number) => ConstraintEntry & CacheValue,
  ): Promise<ConstraintEntry> {
    const field = fieldOf(task.kind);
    let serialized: Uint8Array;
    try {
      this.counters.compiles++;
      serialized = (await this.pool.run(task, { client, timeoutMs: this.options.compileTimeoutMs, signal })) as Uint8Array;
    } catch (error) {
      throw this.failure(key, field, error);
    }
    const output = reviveCompileOutput(deserialize(serialized) as CompileOutput);
    const entry = build(output, serialized.byteLength);
    this.entries.set(key, entry);
    return entry;
  }

  /** The error a failed compile is answered with; refusals are remembered. */
  private failure(key: string, field: string, error: unknown): unknown {
    let refusal: Refusal | null = null;
    if (error instanceof WorkerTaskError) {
      const failure = error.detail as CompileFailure;
      if ("bug" in failure) return new Error(`compile worker failed: ${failure.bug}`);
      refusal = failure.refusal;
    } else if (error instanceof PoolTimeoutError) {
      // The valve: this machine is too slow or too busy now; the same request may pass later.
      return new OverloadedError(
        `${field}: compiling it took longer than ${error.timeoutMs} ms on this server now (TRELLIS_COMPILE_TIMEOUT_MS); retry later`,
        5,
      );
    } else if (error instanceof PoolWorkerDiedError) {
      if (error.code !== "ERR_WORKER_OUT_OF_MEMORY") return new Error(`compile worker died: ${error.message}`);
      refusal = {
        status: "too_complex",
        field,
        message: `${field}: too complex: compiling it needs more than the limit of ${this.options.workerMemoryMb} MB (TRELLIS_COMPILE_MEMORY_MB)`,
        lasting: false,
      };
    } else if (error instanceof PoolBusyError) {
      return error.perClient
        ? new ClientLimitError(`too many ${field} compiles of this API key are waiting; retry when they are done`, 1)
        : new OverloadedError("the compile queue is full; retry later", 1);
    } else if (error instanceof PoolClosedError) {
      return new OverloadedError("server is shutting down", 5);
    } else {
      return error; // the caller's abort reason, or a bug
    }
    if (refusal.status === "overloaded") return refusalError(refusal);
    this.counters.refusals++;
    this.entries.set(key, new RefusalEntry(refusal, refusal.lasting ? Number.POSITIVE_INFINITY : Date.now() + TRANSIENT_REFUSAL_MS));
    return refusalError(refusal);
  }
}

/**
 * Time a new regex matcher may spend computing masks ahead: the large states' first visits then
 * happen once here instead of on decode steps.
 */
export const MATCHER_PRECOMPUTE_MS = 4;

/**
 * A grammar constraint compiled on this thread, without cache or limits: for tests and benches
 * that need one synchronously (the service compiles on workers, ConstraintCache.grammar). Throws
 * GrammarError for a grammar Lark refuses.
 */
export function grammarConstraintInThread(trie: TokenTrie, source: string, maxIgnoredRun: number = MAX_IGNORED_RUN): ConstraintEntry {
  const output = runCompileTask({ kind: "grammar", grammar: source, maxIgnoredRun, limits: {} });
  if (output.kind !== "grammar") throw new Error("unreachable");
  const { grammar, scanners } = output;
  const fresh = () => createGrammarAutomaton(grammar, { maxIgnoredRun, prebuilt: scanners });
  return new GrammarEntry("in-thread", "grammar", trie, fresh, 0, Number.POSITIVE_INFINITY);
}

function typedArrayBytes(value: object): number {
  let bytes = 0;
  for (const field of Object.values(value)) if (ArrayBuffer.isView(field)) bytes += field.byteLength;
  return bytes;
}

/**
 * A compile worker under a heap limit. From the tsc output the script is plain JavaScript; from
 * the TypeScript sources (tests, `tsx`) the worker registers tsx first, since a worker does not
 * inherit the loader hooks of its parent.
 */
function spawnCompileWorker(memoryMb: number, workerData: CompileWorkerData): Worker {
  const resourceLimits = { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, memoryMb >> 3)) };
  if (import.meta.url.endsWith(".ts")) {
    const script = new URL("./worker.ts", import.meta.url).href;
    const boot = `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(script)}); })`;
    return new Worker(boot, { eval: true, execArgv: [], resourceLimits, workerData });
  }
  return new Worker(new URL("./worker.js", import.meta.url), { execArgv: [], resourceLimits, workerData });
}
