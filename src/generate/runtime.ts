/**
 * The generation runtime: one model, its exact-byte vocabulary and token trie, one context shared
 * by every request through the continuous-batching scheduler, and constrained completion (regex,
 * grammar, JSON Schema, TypeScript type, tool calls, or free text) on top.
 */
import { availableParallelism } from "node:os";
import { ConstraintTooCostlyError } from "../constraint/index.js";
import {
  ConstraintCache,
  fieldOf,
  InvalidRequestError,
  UnsatisfiableError,
  type CompileContext,
  type ConstraintCacheOptions,
  type ConstraintFactory,
  type ConstraintSpec,
} from "../compile/index.js";
import { loadModel, type GpuChoice, type LlamaContext, type LlamaModel } from "../model/index.js";
import { ChatPrompter } from "../prompt/index.js";
import { LogitAdjuster, Sampler } from "../sampling/index.js";
import { loadVocabulary, TokenKind, type Vocabulary } from "../vocab/index.js";
import { tokenTrieFor, warmUpMatchers, type TokenConstraint, type TokenTrie } from "../constraint/index.js";
import { maskWords } from "../support/index.js";
import { ChoicesJob, CompletionJob, UNBOUNDED } from "./completion.js";
import { DecodeScheduler, runJob } from "./scheduler.js";
import { FreeTextConstraint } from "./free-text.js";
import { splitReasoning, withReasoning } from "./reasoning.js";
import { EmbeddingLane } from "./embeddings.js";
import { type ForcedSpeller, forcedSpeller } from "./fast-forward.js";
import type {
  ConstrainedCompletionRequest,
  EmbeddingRequest,
  EmbeddingResult,
  ChoiceTextHook,
  CompletionOptions,
  GeneratedToken,
  CompletionResult,
  GrammarCompletionRequest,
  RegexCompletionRequest,
} from "./types.js";

export interface GenerationRuntimeOptions {
  modelPath: string;
  /** llama.cpp threads; default: the machine's cores. */
  threads?: number;
  /** KV cells shared by all sequences; default min(4096, training context). */
  contextSize?: number;
  /** Sequences decoded together (concurrent generations + categorization branches). */
  maxSequences?: number;
  /** Requests waiting for a sequence before 503. */
  maxQueue?: number;
  /** Compile workers, limits and the byte budget of compiled constraints (see ConstraintCache). */
  constraints?: Partial<ConstraintCacheOptions>;
  /** GPU backend ("auto", "cpu", "cuda", "vulkan", ...); default: llama.cpp runtime's choice. */
  gpu?: GpuChoice;
  /** Most tokens one embedding input may have: the embedding context's size (capped at the training context). */
  embeddingInputTokens?: number;
  /** The prefix cache (prefix-cache.ts): most tokens (-1: the whole context; 0: off) and entries; default on, 32 entries. */
  prefixCache?: { tokens: number; entries: number };
  /** Fast-forward through forced text (fast-forward.ts) unless a request turns it off; default true. */
  fastForward?: boolean;
}

/** Tokens of one embedding input unless the options say otherwise. */
export const DEFAULT_EMBEDDING_INPUT_TOKENS = 512;

/**
 * Budgets past max_new_tokens searched for a 422's "needs at least N tokens" when the constraint's
 * own budget search gave no number (all of them share one bounded search effort, so this stays
 * cheap).
 */
export const MIN_TOKENS_LOOKAHEAD = 64;

/**
 * The number a "needs at least N tokens" refusal states, 0 when there is none to state: the
 * verdict is already a 422, and a bound that needs more than its share of the work limit
 * (LOWER_BOUND_WORK_SHARE) is left out rather than hold the thread (the cache then drops the
 * spent matcher on release).
 */
function lowerBoundForMessage(constraint: TokenConstraint, cap: number): number {
  try {
    return constraint.minTokensAtLeast?.(cap) ?? 0;
  } catch (error) {
    if (error instanceof ConstraintTooCostlyError) return 0;
    throw error;
  }
}

/** A planning step longer than this gives the event loop back before the next one. */
const YIELD_AFTER_MS = 5;

export type { ConstraintFactory, ConstraintSpec };

export class GenerationRuntime {
  readonly vocab: Vocabulary;
  readonly trie: TokenTrie;
  readonly context: LlamaContext;
  readonly scheduler: DecodeScheduler;
  /** Compiled patterns and grammars with their matchers (compiled on worker threads). */
  readonly constraints: ConstraintCache;
  /** Embeddings on a context of their own, in turns with the decode rounds (embeddings.ts). */
  readonly embeddings: EmbeddingLane;
  /** Conversations as this model reads them (its chat template, or a plain transcript). */
  readonly chat: ChatPrompter;
  /** Why the model's chat template could not be used, when it could not (the plain transcript is then). */
  readonly chatTemplateError: string | null = null;
  /** Forced text in this model's tokens (fast-forward). */
  private readonly spellForced: ForcedSpeller;

  private constructor(
    readonly model: LlamaModel,
    vocab: Vocabulary,
    context: LlamaContext,
    maxQueue: number,
    constraints: Partial<ConstraintCacheOptions>,
    embeddingInputTokens: number,
    prefixCache: { tokens: number; entries: number } = { tokens: 0, entries: 0 },
    /** Fast-forward through forced text unless a request turns it off (GenerationRuntimeOptions.fastForward). */
    readonly fastForward = true,
  ) {
    this.vocab = vocab;
    this.trie = tokenTrieFor(vocab);
    this.spellForced = forcedSpeller(vocab, this.trie, (text) => model.tokenize(text, { addSpecial: false, parseSpecial: false }));
    this.context = context;
    this.scheduler = new DecodeScheduler(context, {
      maxQueue,
      overlapDecode: model.offloaded || model.threads < availableParallelism(),
      prefixCache: { maxTokens: prefixCache.tokens < 0 ? context.nCtx : prefixCache.tokens, maxEntries: prefixCache.entries },
    });
    this.constraints = new ConstraintCache(this.trie, { vocabulary: vocab, ...constraints });
    this.embeddings = new EmbeddingLane(model, { inputTokens: embeddingInputTokens }, () => this.scheduler.wake());
    this.scheduler.addSideWork(this.embeddings);
    let chat: ChatPrompter;
    try {
      chat = new ChatPrompter(model.chatTemplate(), model, vocab);
    } catch (error) {
      this.chatTemplateError = error instanceof Error ? error.message : String(error);
      chat = new ChatPrompter(null, model, vocab);
    }
    this.chat = chat;
  }

  static open(options: GenerationRuntimeOptions): GenerationRuntime {
    warmUpMatchers();
    const vocab = loadVocabulary(options.modelPath);
    const model = loadModel(options.modelPath, { threads: options.threads, gpu: options.gpu });
    if (model.nVocab !== vocab.size) {
      model.dispose();
      throw new Error(`model has ${model.nVocab} logits but its vocabulary ${vocab.size} tokens`);
    }
    const train = model.nCtxTrain > 0 ? model.nCtxTrain : 4096;
    const context = model.createContext({
      nCtx: Math.min(options.contextSize ?? 4096, train),
      nSeqMax: options.maxSequences ?? 64,
      nBatch: 512,
    });
    const embeddingInputTokens = Math.min(options.embeddingInputTokens ?? DEFAULT_EMBEDDING_INPUT_TOKENS, train);
    const prefixCache = options.prefixCache ?? { tokens: -1, entries: 32 };
    return new GenerationRuntime(
      model,
      vocab,
      context,
      options.maxQueue ?? 64,
      options.constraints ?? {},
      embeddingInputTokens,
      prefixCache,
      options.fastForward ?? true,
    );
  }

  get contextLength(): number {
    return this.context.nCtx;
  }

  /**
   * Unit-length embeddings of the inputs (embeddings.ts): text is tokenized as a prompt, token ids
   * go as they are; decoded on the embedding lane, in turns with the generation rounds.
   */
  async embed(req: EmbeddingRequest): Promise<EmbeddingResult> {
    const fields = req.inputs.map((_, i) => req.fields?.[i] ?? `input[${i}]`);
    const tokens = req.inputs.map((input, i) => {
      if (typeof input !== "string") return input;
      if (input.length === 0) throw new InvalidRequestError(`${fields[i]} must not be empty`, fields[i]!);
      return this.tokenizePrompt(input);
    });
    const embeddings = await this.embeddings.embed(tokens, fields, req.signal);
    return { embeddings, promptTokens: tokens.reduce((sum, t) => sum + t.length, 0) };
  }

  /** The prompt as the model sees it: BOS when the model wants one, no special-token parsing. */
  tokenizePrompt(prompt: string): Int32Array {
    const tokens = this.model.tokenize(prompt, { addSpecial: true, parseSpecial: false });
    if (tokens.length > 0) return tokens;
    // An empty prompt without BOS: start from the end-of-text token, as a document boundary.
    const start = this.vocab.bosToken >= 0 ? this.vocab.bosToken : this.vocab.eosToken;
    return Int32Array.of(start >= 0 ? start : 0);
  }

  countTokens(text: string): number {
    return this.tokenizePrompt(text).length;
  }

  /**
   * Compiles (on a worker) and caches a constraint without generating: the server does this
   * before a request takes a generation slot, so a slow compile never holds one.
   */
  async prepare(spec: ConstraintSpec, context: CompileContext = {}): Promise<void> {
    if (spec.kind === "text") return;
    const entry = await this.constraints.get(spec, context);
    this.constraints.release(entry);
  }

  /** Regex completion (a shorthand of complete). */
  async completeRegex(req: RegexCompletionRequest): Promise<CompletionResult> {
    return this.complete({ ...req, constraint: { kind: "regex", pattern: req.pattern } });
  }

  /** Grammar completion (a shorthand of complete). */
  async completeGrammar(req: GrammarCompletionRequest): Promise<CompletionResult> {
    return this.complete({ ...req, constraint: { kind: "grammar", grammar: req.grammar, maxIgnoredRun: req.maxIgnoredRun } });
  }

  /** A completion under any constraint kind: compiled (cached) on a worker, then planned and decoded. */
  async complete(req: ConstrainedCompletionRequest): Promise<CompletionResult> {
    return (await this.completeChoices(req, 1))[0]!;
  }

  /** The request's constraint behind its reasoning section, when it has one. */
  private sectioned(req: CompletionOptions, make: ConstraintFactory): ConstraintFactory {
    return req.reasoning ? withReasoning(this.trie, req.reasoning, make) : make;
  }

  /** Results split into reasoning and answer, when the request had a reasoning section. */
  private reasoned(req: CompletionOptions, results: CompletionResult[]): CompletionResult[] {
    const section = req.reasoning;
    if (!section) return results;
    return results.map((r) => {
      const { reasoning, content, reasoned } = splitReasoning(r.completion, section);
      if (!section.hidden && reasoned) return { ...r, completion: content, reasoning };
      // A skipped section: no reasoning, none of its tokens (0).
      if (!section.hidden) return { ...r, completion: content };
      // An answer's header: no reasoning to report.
      const { reasoningTokens: _header, ...rest } = r;
      return { ...rest, completion: content };
    });
  }

  /**
   * Constrained completion with prompt-boundary healing and up-front budget planning.
   * `field` names the request field the constraint came from, for 422 messages.
   */
  async completeWithFactory(req: CompletionOptions, makeConstraint: ConstraintFactory, field: string): Promise<CompletionResult> {
    return (await this.choicesWithFactory(req, makeConstraint, field, 1))[0]!;
  }

  /**
   * `n` completions of one request, planned once, decoded side by side: the prompt is evaluated
   * once and its KV cells shared by every choice (ChoicesJob). Choice i samples with seed + i.
   */
  async completeChoices(req: ConstrainedCompletionRequest, n: number, onChoiceText?: ChoiceTextHook): Promise<CompletionResult[]> {
    const spec = req.constraint;
    if (spec.kind === "text") {
      const free = () => new FreeTextConstraint(this.trie);
      return this.reasoned(req, await this.choicesWithFactory(req, this.sectioned(req, free), "prompt", n, onChoiceText));
    }
    const entry = await this.constraints.get(spec, { client: req.client, signal: req.signal });
    try {
      const results = this.reasoned(
        req,
        await this.choicesWithFactory(req, this.sectioned(req, entry.factory), fieldOf(spec.kind), n, onChoiceText),
      );
      return entry.warnings ? results.map((r) => ({ ...r, warnings: entry.warnings })) : results;
    } catch (error) {
      if (error instanceof ConstraintTooCostlyError) throw this.constraints.refuse(entry, error);
      throw error;
    } finally {
      this.constraints.release(entry);
    }
  }

  private async choicesWithFactory(
    req: CompletionOptions,
    makeConstraint: ConstraintFactory,
    field: string,
    n: number,
    onChoiceText?: ChoiceTextHook,
  ): Promise<CompletionResult[]> {
    const prompt = req.promptTokens ?? this.tokenizePrompt(req.prompt);
    if (prompt.length + req.maxNewTokens > this.contextLength) {
      throw new InvalidRequestError(
        `prompt (${prompt.length} tokens) + max_new_tokens (${req.maxNewTokens}) exceeds the model context of ${this.contextLength} tokens`,
        "max_new_tokens",
      );
    }
    const plain = makeConstraint(undefined);
    const began = performance.now();
    const needed = plain.minTokensToAccept(req.maxNewTokens);
    // Each constraint operation is bounded on its own (TRELLIS_MASK_MAX_WORK); the thread is
    // given back between this one and healing's, so two slow ones do not add up to one stall.
    if (performance.now() - began > YIELD_AFTER_MS) await new Promise<void>((resolve) => setImmediate(resolve));
    let constraint = plain;
    let fed = prompt;
    let prefixLength = 0;
    const healed = req.promptTokens ? null : this.healing(prompt, makeConstraint, req.maxNewTokens);
    if (healed) {
      constraint = healed.constraint;
      fed = prompt.subarray(0, prompt.length - 1);
      prefixLength = healed.prefixLength;
    } else if (!Number.isFinite(needed)) {
      const atLeast = lowerBoundForMessage(plain, req.maxNewTokens + MIN_TOKENS_LOOKAHEAD);
      if (atLeast > req.maxNewTokens) {
        throw new UnsatisfiableError(`the ${field} needs at least ${atLeast} tokens but max_new_tokens is ${req.maxNewTokens}`, field);
      }
      throw new UnsatisfiableError(
        `no text matching the ${field} fits within max_new_tokens (${req.maxNewTokens}) with this model's tokens`,
        field,
      );
    } else if (needed > req.maxNewTokens) {
      throw new UnsatisfiableError(`the ${field} needs at least ${needed} tokens but max_new_tokens is ${req.maxNewTokens}`, field);
    }
    if (prefixLength === 0 && constraint.isAccepting() && (req.stopAfterMatch || !constraint.hasAnyToken(req.maxNewTokens))) {
      // Same rule as CompletionJob after a token: longer text the budget cannot hold is token_limit.
      const stopReason = req.stopAfterMatch || !constraint.hasAnyToken(UNBOUNDED) ? "pattern_match" : "token_limit";
      const empty: CompletionResult = { completion: "", tokensGenerated: 0, stopReason, promptTokens: prompt.length };
      return Array.from({ length: n }, () => empty);
    }
    // Forced tokens are not sampled: nothing to report as logprobs, nothing to bias or penalize.
    const fastForward = (req.fastForward ?? this.fastForward) && req.logprobs === undefined && !LogitAdjuster.needed(req);
    const lane = (i: number, settle: (error?: unknown) => void): CompletionJob => {
      const sampler = new Sampler(this.vocab.size, {
        temperature: req.temperature,
        topK: req.topK,
        topP: req.topP,
        repetitionPenalty: req.repetitionPenalty,
        ...(req.seed !== undefined ? { seed: req.seed + i } : {}),
      });
      sampler.reset(fed);
      const onText = onChoiceText ? (delta: string, tokens: readonly GeneratedToken[]) => onChoiceText(i, delta, tokens) : req.onText;
      return new CompletionJob({
        promptTokens: fed,
        // Choice 0 uses the constraint planning already walked; the others start fresh states.
        constraint: i === 0 ? constraint : makeConstraint(prefixLength > 0 ? this.vocab.tokenBytes(prompt[prompt.length - 1]!) : undefined),
        sampler,
        vocab: this.vocab,
        maxNewTokens: req.maxNewTokens,
        stopAfterMatch: req.stopAfterMatch,
        forcedPrefixLength: prefixLength,
        signal: req.signal,
        settle,
        stop: req.stop,
        onText,
        logprobs: req.logprobs,
        temperature: req.temperature,
        adjuster: LogitAdjuster.needed(req) ? new LogitAdjuster(this.vocab.size, req) : undefined,
        fastForward: fastForward ? this.spellForced : undefined,
      });
    };
    // Sharing needs every choice's cells at once; when they do not fit the context together, the
    // choices run as jobs of their own (each admitted when its cells are free).
    const shared = n > 1 && fed.length + n * req.maxNewTokens <= this.contextLength;
    const results = shared
      ? await runJob(
          this.scheduler,
          (settle) =>
            new ChoicesJob(
              Array.from({ length: n }, (_, i) => lane(i, () => {})),
              settle,
            ),
        )
      : await Promise.all(Array.from({ length: n }, (_, i) => runJob(this.scheduler, (settle) => lane(i, settle))));
    return results.map((result) => ({ ...result, promptTokens: prompt.length }));
  }

  /**
   * Prompt-boundary healing: when the prompt's last token could merge with the first generated
   * characters (" " before a BPE word, say), back up over it and make the first generated token
   * start with its bytes. Done only when some admissible first token is longer than those bytes
   * (otherwise the model would just repeat the prompt's token) and the budget still fits.
   */
  private healing(
    prompt: Int32Array,
    makeConstraint: ConstraintFactory,
    maxNewTokens: number,
  ): { constraint: TokenConstraint; prefixLength: number } | null {
    if (prompt.length < 2) return null;
    const last = prompt[prompt.length - 1]!;
    if (this.vocab.kinds[last] !== TokenKind.Normal || last === this.vocab.bosToken) return null;
    const prefix = this.vocab.tokenBytes(last);
    if (prefix.length === 0) return null;
    const constraint = makeConstraint(prefix);
    if (constraint.minTokensToAccept(maxNewTokens) > maxNewTokens) return null;
    const mask = new Uint32Array(maskWords(this.vocab.size));
    constraint.writeMask(maxNewTokens, mask);
    const offsets = this.vocab.offsets;
    for (let w = 0; w < mask.length; w++) {
      let bits = mask[w]!;
      while (bits !== 0) {
        const low = bits & -bits;
        const id = w * 32 + 31 - Math.clz32(low);
        if (offsets[id + 1]! - offsets[id]! > prefix.length) return { constraint, prefixLength: prefix.length };
        bits ^= low;
      }
    }
    return null;
  }

  async close(): Promise<void> {
    this.scheduler.close();
    this.embeddings.close();
    await this.constraints.close();
    while (this.scheduler.activeJobs > 0 || this.scheduler.queueDepth > 0 || !this.embeddings.idle) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.model.dispose();
  }
}

export { Sampler };
