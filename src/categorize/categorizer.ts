/**
 * Categorization by the model's likelihood of each whole category.
 *
 * Single answer: every category (plus "none of these" when null is allowed) is scored as the
 * complete continuation of the formatted prompt — the sum of its tokens' log-probabilities plus
 * the log-probability that the answer ends right there (the next token starts with whitespace or
 * closing punctuation, or ends generation), so "cat" is not favoured over "catalogue" just for
 * being a prefix of it. The most likely one wins; scores are the softmax over the candidates.
 *
 * Multiple answers: each category is judged on its own by asking whether it applies and
 * comparing the model's probability of "yes" against "no" after the question; those with
 * P(yes) > P(no) are chosen. Without allow_null_category the best one is returned when none
 * passes. Scores are P(yes) / (P(yes) + P(no)). (A small model that was never taught to answer
 * questions — stories260K — gives P(yes) near 0.5 everywhere: the answer is then noise.)
 *
 * Prompt formats (format.ts): the model's chat format when its GGUF has a chat template we
 * recognise, else a plain completion format. All branches share one evaluated prefix and are
 * decoded together as a token trie (scoring.ts): usually two decodes per request.
 *
 * Deterministic: no sampling; the same request decodes the same batches. (A reused prefix or a
 * concurrent request puts its tokens in other KV cells, which moves scores by float noise: up to
 * 3e-4 measured on stories260K.)
 */
import type { GenerationRuntime } from "../generate/index.js";
import { runJob } from "../generate/index.js";
import { InvalidRequestError, type CategorizeRequest, type CategorizeResult } from "../generate/index.js";
import { TokenKind, type Vocabulary } from "../vocab/index.js";
import { ScoringJob, type ScoringResult, type ScoringStats } from "./scoring.js";
import {
  answerStartOf,
  answerText,
  formatMultiPrompt,
  formatSinglePrompt,
  NULL_OPTION,
  NULL_OPTION_ALTERNATIVE,
  promptStyleFor,
  renderedChatFormat,
  type PromptStyle,
} from "./format.js";
import { PromptTokenizer, type PromptSegment } from "../prompt/index.js";
import { answerLeadOf } from "../schema/index.js";

export interface CategorizerOptions {
  /** Overrides the model's chat template (null: plain completion format). */
  chatTemplate?: string | null;
}

export class Categorizer {
  readonly style: PromptStyle;
  /** Decode counters of the last scoring job (profiling, tests). */
  lastStats: ScoringStats | null = null;
  private readonly endTokens: Int32Array;
  private readonly yesTokens: Int32Array;
  private readonly noTokens: Int32Array;
  /** The token sets read after each branch, as stable arrays (the scorer caches per array). */
  private readonly endSets: Int32Array[];
  private readonly yesNoSets: Int32Array[];
  private readonly tokenizer: PromptTokenizer;

  constructor(
    private readonly runtime: GenerationRuntime,
    options: CategorizerOptions = {},
  ) {
    const vocab = runtime.vocab;
    if (options.chatTemplate !== undefined) this.style = promptStyleFor(options.chatTemplate);
    else {
      const chat = runtime.chat;
      // The answer as the model writes it without reasoning, after its header (answerStartOf).
      const start = answerStartOf(chat.reasoning, answerLeadOf(chat.toolCallStyle));
      const rendered = chat.template ? renderedChatFormat(chat.template, chat.controlTexts, start) : null;
      this.style = rendered ? { kind: "chat", format: rendered } : promptStyleFor(runtime.model.chatTemplate());
    }
    const start = vocab.bosToken >= 0 ? vocab.bosToken : vocab.eosToken;
    this.tokenizer = new PromptTokenizer(runtime.model, start >= 0 ? start : 0);
    this.endTokens = answerEndTokens(vocab, runtime.model.eogTokens());
    // Whatever the vocabulary has for the words, plus the model's own first token of the answer.
    this.yesTokens = this.withFirstToken(wordTokens(vocab, "yes"), "yes");
    this.noTokens = this.withFirstToken(wordTokens(vocab, "no"), "no");
    this.endSets = [this.endTokens];
    this.yesNoSets = [this.yesTokens, this.noTokens];
  }

  async categorize(req: CategorizeRequest): Promise<CategorizeResult> {
    const categories = req.categories;
    if (categories.length === 0) throw new InvalidRequestError("categories must not be empty", "categories");
    const seen = new Set<string>();
    for (const c of categories) {
      if (typeof c !== "string" || c.length === 0) throw new InvalidRequestError("categories must be non-empty strings", "categories");
      if (seen.has(c)) throw new InvalidRequestError(`categories contains "${c}" twice`, "categories");
      seen.add(c);
    }
    return req.allowMultipleClasses ? this.multiple(req) : this.single(req);
  }

  private async single(req: CategorizeRequest): Promise<CategorizeResult> {
    const options = [...req.categories];
    let nullIndex = -1;
    if (req.allowNullCategory) {
      const taken = new Set(options.map((o) => o.trim().toLowerCase()));
      nullIndex = options.push(taken.has(NULL_OPTION) ? NULL_OPTION_ALTERNATIVE : NULL_OPTION) - 1;
    }
    const prompt = formatSinglePrompt(this.style, req.prompt, options);
    const promptTokens = this.tokenizer.tokens(prompt);
    this.checkFits(promptTokens.length + 1);
    const full = await this.tokenizeEach(options, req.signal, (o) => this.tokenizer.tokens(prompt, answerText(this.style, o)));
    full.forEach((f, i) => {
      if (f.length <= promptTokens.length)
        throw new InvalidRequestError(`category "${options[i]}" adds no token to the prompt`, "categories");
    });
    // Tokens that re-tokenize prompt text (a merge at the boundary) are context, not answer.
    const layout = this.layout(
      full,
      full.map(() => promptTokens.length),
      promptTokens,
    );
    const scored = await this.score(layout, this.endSets, req.signal);
    const logp = options.map((_, i) => scored.tokenLogProb[i]! + scored.after[i]!);
    let best = 0;
    for (let i = 1; i < logp.length; i++) if (logp[i]! > logp[best]!) best = i;
    const result: CategorizeResult = { choices: best === nullIndex ? [] : [options[best]!] };
    if (req.includeScores) {
      const max = logp[best]!;
      let total = 0;
      for (const v of logp) total += Math.exp(v - max);
      result.scores = {};
      req.categories.forEach((c, i) => (result.scores![c] = Math.exp(logp[i]! - max) / total));
    }
    return result;
  }

  private async multiple(req: CategorizeRequest): Promise<CategorizeResult> {
    const { question } = formatMultiPrompt(this.style, req.prompt, req.categories);
    // Every question holds the prompt and the listing: when the first does not fit, none does.
    this.checkFits(this.tokenizer.tokens(question(req.categories[0]!)).length + 1);
    const full = await this.tokenizeEach(req.categories, req.signal, (c) => this.tokenizer.tokens(question(c)));
    // The question is given, not scored: only what comes after it is read.
    const layout = this.layout(
      full,
      full.map((f) => f.length),
      null,
    );
    const scored = await this.score(layout, this.yesNoSets, req.signal);
    const pYes = req.categories.map((_, i) => {
      const yes = scored.after[2 * i]!;
      const no = scored.after[2 * i + 1]!;
      const m = Math.max(yes, no);
      if (!Number.isFinite(m)) return 0.5;
      return Math.exp(yes - m) / (Math.exp(yes - m) + Math.exp(no - m));
    });
    let choices = req.categories.filter((_, i) => pYes[i]! > 0.5);
    if (choices.length === 0 && !req.allowNullCategory) {
      let best = 0;
      for (let i = 1; i < pYes.length; i++) if (pYes[i]! > pYes[best]!) best = i;
      choices = [req.categories[best]!];
    }
    const result: CategorizeResult = { choices };
    if (req.includeScores) {
      result.scores = {};
      req.categories.forEach((c, i) => (result.scores![c] = pYes[i]!));
    }
    return result;
  }

  /**
   * Splits the branches' full token sequences into the prefix they all share and their own
   * tails. The prefix is at most `promptTokens` (when given: what re-tokenizes differently at the
   * prompt's end belongs to each branch) and extends over leading tokens every branch shares and
   * none scores (one decode fewer: a multi-class question's common stem). Every branch keeps at
   * least one token of its own, so its end can be read.
   */
  private layout(full: Int32Array[], scoreFromFull: number[], promptTokens: Int32Array | null): Layout {
    const first = full[0]!;
    let limit = Math.min(...scoreFromFull, ...full.map((f) => f.length - 1));
    if (promptTokens) limit = Math.min(limit, promptTokens.length);
    let common = 0;
    while (common < limit && full.every((f) => f[common] === first[common]) && (!promptTokens || promptTokens[common] === first[common]))
      common++;
    if (common === 0) throw new Error("prompt and categories share no token prefix");
    const branches = full.map((f) => f.subarray(common));
    const needed = common + Math.max(...branches.map((b) => b.length));
    if (needed > this.runtime.contextLength) {
      throw new InvalidRequestError(
        `prompt and categories need ${needed} tokens, the model context is ${this.runtime.contextLength}`,
        "prompt",
      );
    }
    return { prefix: first.subarray(0, common), branches, scoreFrom: Int32Array.from(scoreFromFull, (s) => s - common) };
  }

  /** A 400 before any per-category work when `tokens` (a lower bound of the need) exceed the context. */
  private checkFits(tokens: number): void {
    if (tokens > this.runtime.contextLength) {
      throw new InvalidRequestError(
        `prompt and categories need at least ${tokens} tokens, the model context is ${this.runtime.contextLength}`,
        "prompt",
      );
    }
  }

  /**
   * Tokenizes each category's text (the formatted prompt with it), giving the event loop back
   * every few milliseconds: each text holds the whole prompt, and hundreds of them at once held
   * the loop for a second or more.
   */
  private async tokenizeEach<T>(
    items: readonly T[],
    signal: AbortSignal | undefined,
    tokenize: (item: T) => Int32Array,
  ): Promise<Int32Array[]> {
    const out: Int32Array[] = [];
    let sliceStart = performance.now();
    for (const item of items) {
      out.push(tokenize(item));
      if (performance.now() - sliceStart > TOKENIZE_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        signal?.throwIfAborted();
        sliceStart = performance.now();
      }
    }
    return out;
  }

  /** Adds the model's own first token of `word` as an answer after the answer slot. */
  private withFirstToken(ids: Int32Array, word: string): Int32Array {
    const prompt: PromptSegment[] = formatSinglePrompt(this.style, "", []);
    const before = this.tokenizer.tokens(prompt);
    const after = this.tokenizer.tokens(prompt, answerText(this.style, word));
    let k = 0;
    while (k < before.length && before[k] === after[k]) k++;
    const first = after[k];
    if (first === undefined || ids.includes(first)) return ids;
    return Int32Array.from([...ids, first]).sort();
  }

  private async score(layout: Layout, readAfter: Int32Array[], signal: AbortSignal | undefined): Promise<ScoringResult> {
    const scheduler = this.runtime.scheduler;
    const maxBranchSeqs = Math.max(1, Math.min(MAX_BRANCH_SEQUENCES, scheduler.slots.capacity - 1));
    let job: ScoringJob | null = null;
    const result = await runJob(
      scheduler,
      (settle) => (job = new ScoringJob({ ...layout, readAfter, maxBranchSeqs, maxCells: this.runtime.contextLength, signal }, settle)),
    );
    this.lastStats = job!.stats;
    return result;
  }
}

/** Longest the per-category tokenization holds the event loop before yielding. */
const TOKENIZE_SLICE_MS = 8;

/** Sequences one categorization holds at most besides its prefix (more categories go in waves). */
const MAX_BRANCH_SEQUENCES = 128;

interface Layout {
  prefix: Int32Array;
  branches: Int32Array[];
  scoreFrom: Int32Array;
}

const END_BYTES = new Set([0x20, 0x0a, 0x0d, 0x09, 0x2e, 0x2c, 0x3b, 0x3a, 0x21, 0x3f, 0x29, 0x5d, 0x7d, 0x22, 0x27]);

/**
 * Tokens that close an answer: they start with whitespace or closing punctuation, or end
 * generation. ("-", "_", "/" are not among them: they continue names like "google-maps-api".)
 */
export function answerEndTokens(vocab: Vocabulary, extraEog: ArrayLike<number> = []): Int32Array {
  const ids: number[] = [];
  const eog = new Set<number>(Array.from(extraEog));
  for (let id = 0; id < vocab.size; id++) {
    const kind = vocab.kinds[id]!;
    if (kind === TokenKind.EndOfGeneration || eog.has(id)) {
      ids.push(id);
      continue;
    }
    if (kind === TokenKind.Control || kind === TokenKind.Unused) continue;
    const bytes = vocab.tokenBytes(id);
    if (bytes.length > 0 && END_BYTES.has(bytes[0]!)) ids.push(id);
  }
  return Int32Array.from(ids);
}

/** Tokens spelling `word` in any case, with or without a leading space. */
export function wordTokens(vocab: Vocabulary, word: string): Int32Array {
  const ids: number[] = [];
  const decoder = new TextDecoder();
  for (let id = 0; id < vocab.size; id++) {
    const kind = vocab.kinds[id]!;
    if (kind !== TokenKind.Normal && kind !== TokenKind.UserDefined) continue;
    const bytes = vocab.tokenBytes(id);
    if (bytes.length === 0 || bytes.length > word.length + 1) continue;
    if (decoder.decode(bytes).trimStart().toLowerCase() === word) ids.push(id);
  }
  return Int32Array.from(ids);
}
