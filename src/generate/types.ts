/**
 * The library-level contract between the decode loop (generate/, categorize/) and its callers
 * (server/, cli). The server is a thin shell over an `Engine`; tests may supply a fake one.
 */
import {
  DEFAULT_MAX_IGNORED_RUN,
  type JsonSchemaWarning,
  type ToolCallStyle,
  type ToolDeclaration,
  type WhitespaceStyle,
} from "../grammar/index.js";
import type { ChatRenderRequest, RenderedPrompt } from "../prompt/index.js";
import type { WorkerPoolStats } from "../support/index.js";

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

/**
 * Consecutive %ignore'd bytes allowed anywhere unless a request says otherwise: few enough that a
 * model cannot loop on whitespace, enough for a newline and some indentation.
 */
export const MAX_IGNORED_RUN = DEFAULT_MAX_IGNORED_RUN;

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
  /** Each generated token, when logprobs were asked for. */
  tokens?: readonly GeneratedToken[];
  /** Keywords a JSON Schema constraint left unenforced (strict: false) or wants said. */
  warnings?: readonly JsonSchemaWarning[];
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

/** How a JSON Schema constraint writes JSON (see grammar/'s JsonSchemaOptions). */
export interface JsonSchemaTaskOptions {
  /** "default" (json.dumps' spaces or none), "compact", "indented" (json.dumps(indent=2)). */
  readonly whitespace: WhitespaceStyle;
  /** Properties the schema does not name are not written (where it has no additionalProperties). */
  readonly forbidUnnamedProperties: boolean;
  /** A keyword that cannot be enforced exactly is refused (true) or ignored with a warning. */
  readonly strict: boolean;
}

/** A constraint as a request names it. */
export type ConstraintSpec =
  | { readonly kind: "text" }
  | { readonly kind: "regex"; readonly pattern: string | readonly string[] }
  | { readonly kind: "grammar"; readonly grammar: string; readonly maxIgnoredRun?: number }
  | { readonly kind: "json_schema"; readonly schema: unknown; readonly options: JsonSchemaTaskOptions }
  /** A value of a TypeScript type (Thiggle's typed completion): the type's JSON Schema, compiled as json_schema is. */
  | { readonly kind: "typescript"; readonly source: string; readonly typeName: string; readonly options: JsonSchemaTaskOptions }
  /** Free text or calls of these tools, in the chat template's format (OpenAI tool_choice "auto"). */
  | {
      readonly kind: "tool_calls";
      readonly tools: readonly ToolDeclaration[];
      readonly style: ToolCallStyle;
      readonly parallel: boolean;
      readonly options: JsonSchemaTaskOptions;
    };

/** A completion under any kind of constraint. */
export interface ConstrainedCompletionRequest extends CompletionOptions {
  readonly constraint: ConstraintSpec;
}

/** Counters of the compiled-constraint cache and its compile workers (for /metrics). */
export interface ConstraintStats {
  entries: number;
  bytes: number;
  budgetBytes: number;
  evictions: number;
  compiles: number;
  refusals: number;
  hits: number;
  pool: WorkerPoolStats;
}

export interface Engine {
  /**
   * Compiles and caches a request's constraint (off the event loop) before it takes a generation
   * slot; throws the request's 400/422/429 when it is refused. `client` shares compiles fairly.
   */
  prepare(spec: ConstraintSpec, context: { client?: string; signal?: AbortSignal }): Promise<void>;
  /** Counters of compiled constraints, or undefined where the engine keeps none. */
  constraintStats?(): ConstraintStats;
  /** A completion that satisfies `req.constraint`, planned within max_new_tokens (422 when nothing fits). */
  complete(req: ConstrainedCompletionRequest): Promise<CompletionResult>;
  /**
   * `n` completions of one request decoded side by side, the prompt evaluated once and shared
   * (choice i with seed + i); absent on engines that only complete one at a time (test fakes).
   */
  completeChoices?(req: ConstrainedCompletionRequest, n: number, onChoiceText?: ChoiceTextHook): Promise<CompletionResult[]>;
  categorize(req: CategorizeRequest): Promise<CategorizeResult>;
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
  close(): Promise<void>;
}

/**
 * Errors the library raises for valid-looking requests it must refuse. The server maps them:
 * InvalidRequestError → 400, UnsatisfiableError → 422, OverloadedError → 503,
 * anything else → 500 without internals.
 */
export class InvalidRequestError extends Error {
  constructor(
    message: string,
    /** Request field at fault, e.g. "pattern", "grammar", "categories". */
    readonly field: string,
    /** Character offset into that field, where it applies. */
    readonly position?: number,
  ) {
    super(message);
    this.name = "InvalidRequestError";
  }
}

export class UnsatisfiableError extends Error {
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
    this.name = "UnsatisfiableError";
  }
}

export class OverloadedError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = "OverloadedError";
  }
}

/** This client's own share is spent (its compiles waiting, say): a 429 with Retry-After. */
export class ClientLimitError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = "ClientLimitError";
  }
}
