/**
 * The library-level contract between the decode loop (generate/, categorize/) and its callers
 * (server/, cli). The server is a thin shell over an `Engine`; tests may supply a fake one.
 */
import type { JsonSchemaWarning, ToolCallStyle } from "../schema/index.js";
import type { PrefixCacheStats } from "./prefix-cache.js";
import type { ConstraintSpec, ConstraintStats } from "../compile/index.js";
import type { ChatRenderRequest, ReasoningFormat, RenderedPrompt } from "../prompt/index.js";

export interface SamplingOptions {
  /** Hugging Face semantics; defaults come from the seed API (see server schemas). */
  temperature: number;
  topK: number;
  topP: number;
  repetitionPenalty: number;
  /** Optional: the same seed and request give the same output. */
  seed?: number;
}

export interface CompletionOptions extends SamplingOptions {
  prompt: string;
  /**
   * The prompt's tokens when the caller tokenized it (a rendered chat conversation); `prompt` is
   * then only its text. No prompt-boundary healing: the template's turn header ends the prompt.
   */
  promptTokens?: Int32Array;
  maxNewTokens: number;
  stopAfterMatch: boolean;
  /** Aborted when the client disconnects or the request deadline passes. */
  signal?: AbortSignal;
  /** Who asks (an API key's bucket): compiles are shared fairly between clients. */
  client?: string;
  /** The text ends before the first of these; found across tokens (stop reason "stop_sequence"). */
  stop?: readonly string[];
  /** OpenAI's adjustments of the logits (token id → bias; penalties over the generated tokens). */
  logitBias?: ReadonlyMap<number, number>;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Report each token's log-probability and this many most likely alternatives (0 … 20). */
  logprobs?: number;
  /**
   * Streaming: called with each piece of text as it becomes final (whole characters, never text
   * a stop string may still take back) and the tokens generated since the previous call; at the
   * end once more with "" if tokens are left over.
   */
  onText?: (delta: string, tokens: readonly GeneratedToken[]) => void;
  /**
   * A reasoning section comes first (the model's own format: prompt/'s ReasoningFormat), then the
   * constrained answer; maxNewTokens covers both and the answer is never cut short.
   */
  reasoning?: ReasoningSection;
  /**
   * Fast-forward (fast-forward.ts): append the text the constraint forces without sampling it.
   * Default: the runtime's setting (on). Off whenever logprobs, logit_bias or penalties are asked
   * for: forced tokens have no sampled distribution to report or to bias.
   */
  fastForward?: boolean;
}

/** The markers of a reasoning section and its budget. */
export interface ReasoningSection {
  /** What opens it; null when the prompt already opened it. */
  readonly open: string | null;
  readonly close: string;
  /** Most tokens of reasoning, the closing marker included (default: only maxNewTokens bounds it). */
  readonly maxTokens?: number;
  /**
   * Not reasoning but the answer's header alone (Cohere's `<|START_RESPONSE|>`, Solar's
   * `<|content|>`, written before a model answers without reasoning): split off like a section,
   * never reported as reasoning. Absent: false.
   */
  readonly hidden?: true;
  /**
   * The model may skip the section (MiniMax-M3's adaptive mode, Muse's message to itself), writing
   * `lead` before its answer instead ("" for nothing): the constraint follows both until the text
   * says which (constraint/'s OptionalReasoningConstraint). Absent: the section is written.
   */
  readonly skippable?: { readonly lead: string };
}

/** Streaming of several choices: choice `index`'s text as it becomes final (see CompletionOptions.onText). */
export type ChoiceTextHook = (index: number, delta: string, tokens: readonly GeneratedToken[]) => void;

/** One generated token, as logprobs report it. */
export interface GeneratedToken {
  readonly id: number;
  /** The token's bytes (a token may hold part of a character). */
  readonly bytes: Uint8Array;
  /** Log-probability under the distribution it was drawn from (see sampling/logit-bias.ts). */
  readonly logprob?: number;
  readonly top?: readonly { readonly id: number; readonly bytes: Uint8Array; readonly logprob: number }[];
}

export interface RegexCompletionRequest extends CompletionOptions {
  /** One pattern, or alternatives: the completion fully matches at least one. */
  pattern: string | string[];
}

export interface GrammarCompletionRequest extends CompletionOptions {
  /** Lark grammar text, LALR, start rule `start`. */
  grammar: string;
  /** Most consecutive bytes of %ignore'd text (whitespace, comments) anywhere; default MAX_IGNORED_RUN. */
  maxIgnoredRun?: number;
}

/** pattern_match: the constraint is complete or the model ended; stop_sequence: a stop string. */
export type StopReason = "pattern_match" | "token_limit" | "stop_sequence";

export interface CompletionResult {
  completion: string;
  tokensGenerated: number;
  stopReason: StopReason;
  /** Tokens the model read as the prompt (present where the runtime counts them). */
  promptTokens?: number;
  /** Of those, the ones whose KV cells came from the prefix cache (not evaluated); absent: none. */
  cachedTokens?: number;
  /** Of the generated tokens, those the constraint forced and fast-forward appended unsampled; absent: none. */
  fastForwardedTokens?: number;
  /** Each generated token, when logprobs were asked for. */
  tokens?: readonly GeneratedToken[];
  /** Keywords a JSON Schema constraint left unenforced (strict: false) or wants said. */
  warnings?: readonly JsonSchemaWarning[];
  /** The reasoning section's text (its markers left out), when the request had one; `completion` is then the answer only. */
  reasoning?: string;
  /** Of the generated tokens, those of the reasoning section (its markers included), when the request had one. */
  reasoningTokens?: number;
}

/** One input of an embeddings request: text (tokenized as a prompt, BOS/EOS as the model adds them) or token ids as they are. */
export type EmbeddingInput = string | Int32Array;

export interface EmbeddingRequest {
  readonly inputs: readonly EmbeddingInput[];
  /** The request field each input came from, for 400s ("input", "input[3]"); default `input[i]`. */
  readonly fields?: readonly string[];
  signal?: AbortSignal;
}

export interface EmbeddingResult {
  /** One per input, in order, each of unit L2 norm. */
  readonly embeddings: Float32Array[];
  /** Tokens the model read, all inputs together. */
  readonly promptTokens: number;
}

export interface CategorizeRequest {
  prompt: string;
  categories: string[];
  allowMultipleClasses: boolean;
  allowNullCategory: boolean;
  includeScores: boolean;
  signal?: AbortSignal;
}

export interface CategorizeResult {
  choices: string[];
  /** Every category → probability, present when includeScores was asked. */
  scores?: Record<string, number>;
}

/** A completion under any kind of constraint. */
export interface ConstrainedCompletionRequest extends CompletionOptions {
  readonly constraint: ConstraintSpec;
}

export interface Engine {
  /**
   * Compiles and caches a request's constraint (off the event loop) before it takes a generation
   * slot; throws the request's 400/422/429 when it is refused. `client` shares compiles fairly.
   */
  prepare(spec: ConstraintSpec, context: { client?: string; signal?: AbortSignal }): Promise<void>;
  /** Counters of compiled constraints, or undefined where the engine keeps none. */
  constraintStats?(): ConstraintStats;
  /** The prefix cache's counters (prefix-cache.ts); absent on engines without one. */
  prefixCacheStats?(): PrefixCacheStats;
  /** A completion that satisfies `req.constraint`, planned within max_new_tokens (422 when nothing fits). */
  complete(req: ConstrainedCompletionRequest): Promise<CompletionResult>;
  /**
   * `n` completions of one request decoded side by side, the prompt evaluated once and shared
   * (choice i with seed + i); absent on engines that only complete one at a time (test fakes).
   */
  completeChoices?(req: ConstrainedCompletionRequest, n: number, onChoiceText?: ChoiceTextHook): Promise<CompletionResult[]>;
  categorize(req: CategorizeRequest): Promise<CategorizeResult>;
  /**
   * One unit-length vector per input (OpenAI's embeddings), pooled as the model says (mean where it
   * names no pooling, as for causal LMs). Inputs longer than `embeddingInputTokens` are refused.
   */
  embed(req: EmbeddingRequest): Promise<EmbeddingResult>;
  /** Most tokens one embedding input may have (the embedding context's size). */
  readonly embeddingInputTokens: number;
  /** Model loaded and able to serve. */
  readonly ready: boolean;
  /** Context window of the loaded model, for prompt + max_new_tokens validation. */
  readonly contextLength: number;
  /** Counts the prompt's tokens (validation of prompt + max_new_tokens against the context). */
  countTokens(text: string): number;
  /** Requests waiting for the model (for /metrics and overload decisions). */
  readonly queueDepth: number;
  /** Share of the KV cache reserved by running generations, 0 … 1 (/metrics); absent on test fakes. */
  readonly kvCacheUtilization?: number;
  /** Where the model runs, for the start-up line ("CUDA0: NVIDIA H100 80GB HBM3", "CPU, 2 threads"). */
  readonly backend?: string;
  /** The served model's id (the OpenAI API's `model`); absent on engines without a model (test fakes). */
  readonly modelId?: string;
  /** Tokens in the model's vocabulary (logit_bias ids are checked against it). */
  readonly vocabSize?: number;
  /** A conversation as this model reads it: its chat template (or a plain transcript), tokenized. */
  renderChat?(request: ChatRenderRequest): RenderedPrompt;
  /** How the model writes tool calls in free text (tool_choice "auto"); null when Trellis cannot read its format. */
  readonly toolCallStyle?: ToolCallStyle | null;
  /** How the model reasons before answering (its chat template's section markers); null when it does not. */
  readonly reasoningFormat?: ReasoningFormat | null;
  close(): Promise<void>;
}
