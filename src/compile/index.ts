/**
 * compile/ — the compile service: a request's constraint (`ConstraintSpec`) → a compiled entry
 * serving token constraints, built on worker threads under work limits, kept in one LRU bounded by
 * bytes, refusals kept too. One key (`keyOf`) and one entry point (`ConstraintCache.get`) for
 * every kind; the front ends (regex/, schema/, grammar/) are dispatched once, in the worker's
 * `runCompileTask`, and every kind comes back as a byte DFA (`"dfa"`), a rule network (`"rules"`: a
 * schema that recurses, `compileServedSchema` chooses) or a grammar (`"grammar"`).
 *
 * Key types: `ConstraintSpec`, `ConstraintCache` (`get(spec, { client, signal })`, `release`,
 * `refuse`), `ConstraintEntry` (`factory(forcedPrefix)` → a `TokenConstraint`), and the errors the
 * library answers with (`InvalidRequestError` 400, `UnsatisfiableError` 422, `OverloadedError` 503,
 * `ClientLimitError` 429).
 *
 *   const cache = new ConstraintCache(trie, { vocabulary, maskMaxWork });
 *   const entry = await cache.get({ kind: "json_schema", schema, options }, { client });
 *   try { const state = entry.factory(undefined); ... } finally { cache.release(entry); }
 *
 * In-thread builders for tests and benches (no cache, no limits) are in in-thread.ts.
 */
export { ClientLimitError, InvalidRequestError, OverloadedError, UnsatisfiableError } from "./errors.js";
export {
  fieldOf,
  keyOf,
  MAX_IGNORED_RUN,
  type CompiledSpec,
  type ConstraintSpec,
  type ConstraintStats,
  type JsonSchemaTaskOptions,
} from "./spec.js";
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
  type ConstraintFactory,
} from "./cache.js";
export {
  compileServedSchema,
  GRAMMAR_LIMIT_SETTINGS,
  refusalError,
  refusalOf,
  runCompileTask,
  type CompileOutput,
  type CompileTask,
  type Refusal,
} from "./task.js";
export { compileRegexCached, grammarConstraintFor, regexConstraintFor } from "./in-thread.js";
