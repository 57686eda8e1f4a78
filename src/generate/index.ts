/**
 * generate/ — the decode loop: one model, its vocabulary and token trie, one context shared by
 * every request through a continuous-batching scheduler, constraints compiled off the event loop.
 *
 * Key types: `GenerationRuntime` (open a model; prepare and complete any `ConstraintSpec`: text,
 * regex, grammar, json_schema, typescript, tool_calls, compiled and cached by compile/'s
 * `ConstraintCache`), `DecodeScheduler` and `DecodeJob` (one batched decode per round for every
 * job), `CompletionJob` over any `TokenConstraint` (constraint/'s contract), reasoning sections
 * and tool replies read back, `Engine` and the request/result types the server speaks, and the
 * typed errors it maps to HTTP (compile/'s, re-exported). `PrefixCache`: finished sequences' KV cells
 * kept for prompts that begin like them. `EmbeddingLane`: embeddings on a context of their own, in turns with the
 * decode rounds (`runtime.embed({ inputs })`).
 *
 *   const runtime = GenerationRuntime.open({ modelPath, threads, constraints });
 *   await runtime.prepare({ kind: "grammar", grammar }, { client });   // compile, cache
 *   const r = await runtime.complete({ prompt, maxNewTokens, ..., constraint: { kind: "grammar", grammar } });
 */
export * from "./types.js";
export {
  GenerationRuntime,
  DEFAULT_EMBEDDING_INPUT_TOKENS,
  MIN_TOKENS_LOOKAHEAD,
  type ConstraintFactory,
  type GenerationRuntimeOptions,
} from "./runtime.js";
export { AHEAD_OF_LOGITS_MS, DecodeScheduler, runJob, type DecodeJob, type SchedulerOptions, type SideWork } from "./scheduler.js";
export { EmbeddingLane, embeddingPooling, normalized, type EmbeddingLaneOptions } from "./embeddings.js";
export { CompletionJob, completionText, UNBOUNDED, type CompletionJobOptions } from "./completion.js";
export { MIN_PREFIX_MATCH, PrefixCache, type PrefixCacheOptions, type PrefixCacheStats } from "./prefix-cache.js";
// The compile stage's contract types and errors, as the Engine's callers meet them.
export {
  ClientLimitError,
  InvalidRequestError,
  OverloadedError,
  UnsatisfiableError,
  MAX_IGNORED_RUN,
  type CompiledSpec,
  type ConstraintSpec,
  type ConstraintStats,
  type JsonSchemaTaskOptions,
} from "../compile/index.js";
export { ReasoningSplitter, splitReasoning, withReasoning } from "./reasoning.js";
export { AutoToolStream, autoReply, replyCalls, type ReplyCall, type ToolMode } from "./tool-replies.js";
export type { ToolCallStyle, ToolDeclaration } from "../schema/index.js";
