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
 * passes. Scores are P(yes) / (P(yes) + P(no)).
 *
 * Deterministic: no sampling; the same request decodes the same batches.
 */
import type { GenerationRuntime } from "../generate/runtime.js";
import { runJob } from "../generate/scheduler.js";
import { InvalidRequestError, type CategorizeRequest, type CategorizeResult } from "../generate/types.js";
import { TokenKind, type Vocabulary } from "../vocab/index.js";
import { ScoringJob, type ScoringResult } from "./scoring.js";
import { formatQuestion, formatSinglePrompt, formatMultiPrompt, NULL_OPTION } from "./format.js";

export class Categorizer {
  private readonly endTokens: Int32Array;
  private readonly yesTokens: Int32Array;
  private readonly noTokens: Int32Array;

  constructor(private readonly runtime: GenerationRuntime) {
    const vocab = runtime.vocab;
    this.endTokens = answerEndTokens(vocab);
    // Whatever the vocabulary has for the words, plus the model's own first token of " yes"/" no".
    this.yesTokens = withFirstToken(runtime, wordTokens(vocab, "yes"), "yes");
    this.noTokens = withFirstToken(runtime, wordTokens(vocab, "no"), "no");
  }

  async categorize(req: CategorizeRequest): Promise<CategorizeResult> {
    const categories = req.categories;
    if (categories.length === 0) throw new InvalidRequestError("categories must not be empty", "categories");
    const seen = new Set<string>();
    for (const c of categories) {
      if (c.length === 0) throw new InvalidRequestError("categories must be non-empty strings", "categories");
      if (seen.has(c)) throw new InvalidRequestError(`categories contains "${c}" twice`, "categories");
      seen.add(c);
    }
    return req.allowMultipleClasses ? this.multiple(req) : this.single(req);
  }

  private async single(req: CategorizeRequest): Promise<CategorizeResult> {
    const options = [...req.categories];
    const nullIndex = req.allowNullCategory ? options.push(NULL_OPTION) - 1 : -1;
    const prefixText = formatSinglePrompt(req.prompt, options);
    const { prefix, branches, scoreFrom } = this.layout(prefixText, options.map((o) => ` ${o}`));
    const scored = await this.score(prefix, branches, scoreFrom, [this.endTokens], req.signal);
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
    const prefixText = formatMultiPrompt(req.prompt, req.categories);
    const questions = req.categories.map((c) => formatQuestion(c));
    const { prefix, branches } = this.layout(prefixText, questions);
    // The question is given, not scored: only what comes after it is read.
    const scoreFrom = Int32Array.from(branches, (b) => b.length);
    const scored = await this.score(prefix, branches, scoreFrom, [this.yesTokens, this.noTokens], req.signal);
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
   * Tokenizes prefix + each continuation as one text (the model's own tokenization of the whole
   * answer) and splits off the longest token prefix all of them share with the prompt alone.
   */
  private layout(prefixText: string, continuations: string[]): { prefix: Int32Array; branches: Int32Array[]; scoreFrom: Int32Array } {
    const rt = this.runtime;
    const promptTokens = rt.tokenizePrompt(prefixText);
    const full = continuations.map((c) => rt.tokenizePrompt(prefixText + c));
    let shared = promptTokens.length;
    for (const f of full) {
      let k = 0;
      while (k < shared && k < f.length && f[k] === promptTokens[k]) k++;
      shared = k;
    }
    if (shared === 0) throw new Error("prompt and categories share no token prefix");
    const prefix = promptTokens.subarray(0, shared);
    const branches = full.map((f) => f.subarray(shared));
    // Tokens that re-tokenize prompt text (a merge at the boundary) are context, not answer.
    const scoreFrom = Int32Array.from(branches, () => promptTokens.length - shared);
    for (let i = 0; i < branches.length; i++) {
      if (branches[i]!.length <= scoreFrom[i]!) throw new InvalidRequestError(`category "${continuations[i]!.trim()}" adds no token to the prompt`, "categories");
    }
    const needed = prefix.length + Math.max(...branches.map((b) => b.length));
    if (needed > rt.contextLength) {
      throw new InvalidRequestError(`prompt and categories need ${needed} tokens, the model context is ${rt.contextLength}`, "prompt");
    }
    return { prefix, branches, scoreFrom };
  }

  private async score(
    prefix: Int32Array,
    branches: Int32Array[],
    scoreFrom: Int32Array,
    readAfter: Int32Array[],
    signal: AbortSignal | undefined,
  ): Promise<ScoringResult> {
    const scheduler = this.runtime.scheduler;
    // Branches beyond the context's sequences are scored in groups, each re-using a fresh prefix.
    const group = Math.max(1, scheduler.slots.capacity - 1);
    if (branches.length <= group) {
      return runJob(scheduler, (settle) => new ScoringJob({ prefix, branches, scoreFrom, readAfter, signal }, settle));
    }
    const tokenLogProb = new Float64Array(branches.length);
    const after = new Float64Array(branches.length * readAfter.length);
    for (let start = 0; start < branches.length; start += group) {
      const part = await runJob(
        scheduler,
        (settle) =>
          new ScoringJob(
            { prefix, branches: branches.slice(start, start + group), scoreFrom: scoreFrom.subarray(start, start + group), readAfter, signal },
            settle,
          ),
      );
      tokenLogProb.set(part.tokenLogProb, start);
      after.set(part.after, start * readAfter.length);
    }
    return { tokenLogProb, after };
  }
}

const END_BYTES = new Set([0x20, 0x0a, 0x0d, 0x09, 0x2e, 0x2c, 0x3b, 0x3a, 0x21, 0x3f, 0x29, 0x5d, 0x7d, 0x22, 0x27]);

/**
 * Tokens that close an answer: they start with whitespace or closing punctuation, or end
 * generation. ("-", "_", "/" are not among them: they continue names like "google-maps-api".)
 */
export function answerEndTokens(vocab: Vocabulary): Int32Array {
  const ids: number[] = [];
  for (let id = 0; id < vocab.size; id++) {
    const kind = vocab.kinds[id]!;
    if (kind === TokenKind.EndOfGeneration) {
      ids.push(id);
      continue;
    }
    if (kind === TokenKind.Control || kind === TokenKind.Unused) continue;
    const bytes = vocab.tokenBytes(id);
    if (bytes.length > 0 && END_BYTES.has(bytes[0]!)) ids.push(id);
  }
  return Int32Array.from(ids);
}

function withFirstToken(runtime: GenerationRuntime, ids: Int32Array, word: string): Int32Array {
  const before = runtime.tokenizePrompt("Answer:");
  const after = runtime.tokenizePrompt(`Answer: ${word}`);
  let k = 0;
  while (k < before.length && before[k] === after[k]) k++;
  const first = after[k];
  if (first === undefined || ids.includes(first)) return ids;
  return Int32Array.from([...ids, first]).sort();
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
