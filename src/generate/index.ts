/**
 * generate/ — the decode loop: one model, its vocabulary and token trie, one context shared by
 * every request through a continuous-batching scheduler, constraints compiled off the event loop.
 *
 * Key types: `GenerationRuntime` (open a model; prepare and complete any `ConstraintSpec`: regex,
 * grammar, json_schema), `DecodeScheduler` and `DecodeJob` (one batched decode per round for
 * every job), `CompletionJob` over any `TokenConstraint` (constraint/'s contract), `ConstraintCache` (compile workers,
 * byte-bounded cache), `Engine` and the request/result types the server speaks, and the typed
 * errors it maps to HTTP.
 *
 *   const runtime = GenerationRuntime.open({ modelPath, threads, constraints });
 *   await runtime.prepare({ kind: "grammar", grammar }, { client });   // compile, cache
 *   const r = await runtime.complete({ prompt, maxNewTokens, ..., constraint: { kind: "grammar", grammar } });
 */
export * from "./types.js";
export { GenerationRuntime, MIN_TOKENS_LOOKAHEAD, type ConstraintFactory, type GenerationRuntimeOptions } from "./runtime.js";
export { DecodeScheduler, runJob, type DecodeJob, type SchedulerOptions } from "./scheduler.js";
export { CompletionJob, completionText, UNBOUNDED, type CompletionJobOptions } from "./completion.js";
export {
  ConstraintCache,
  DEFAULT_CONSTRAINT_CACHE_OPTIONS,
  JSON_SCHEMA_WORK_FACTOR,
  grammarConstraintInThread,
  MATCHER_PRECOMPUTE_MS,
  MAX_AUTOMATON_STATES,
  TRANSIENT_REFUSAL_MS,
  type CompileContext,
  type ConstraintCacheOptions,
  type ConstraintCacheStats,
  type ConstraintEntry,
} from "./constraint-cache.js";
export { GRAMMAR_LIMIT_SETTINGS, refusalError, refusalOf, runCompileTask, type CompileTask, type Refusal } from "./compile-task.js";
export { compileRegexCached, regexConstraintFor } from "./regex-constraint.js";
export { grammarConstraintFor } from "./grammar-constraint.js";
