/**
 * Running a request's choices: `n` completions decoded side by side (the prompt evaluated once,
 * its KV cells shared by every choice's sequence; choice i with seed + i, so a seeded request stays
 * reproducible and its choices differ), reported as they finish or, when streaming, as their text
 * becomes final.
 */
import { randomBytes } from "node:crypto";
import type { CompletionResult, ConstrainedCompletionRequest, Engine, GeneratedToken } from "../../generate/index.js";
import { VERSION } from "../version.js";

export const SYSTEM_FINGERPRINT = `trellis-${VERSION}`;

export function requestId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString("hex")}`;
}

/** Runs `n` completions of `base` at once; `onText(i, …)` streams choice i. */
export function runChoices(
  engine: Engine,
  base: ConstrainedCompletionRequest,
  n: number,
  onText?: (index: number, delta: string, tokens: readonly GeneratedToken[]) => void,
): Promise<CompletionResult[]> {
  if (engine.completeChoices) return engine.completeChoices(base, n, onText);
  const runs: Promise<CompletionResult>[] = [];
  for (let i = 0; i < n; i++) {
    const request: ConstrainedCompletionRequest = {
      ...base,
      ...(base.seed !== undefined ? { seed: base.seed + i } : {}),
      ...(onText ? { onText: (delta: string, tokens: readonly GeneratedToken[]) => onText(i, delta, tokens) } : {}),
    };
    runs.push(engine.complete(request));
  }
  return Promise.all(runs);
}

const utf8 = new TextDecoder("utf-8");

/** A token's text as logprobs show it (lossy where it holds part of a character). */
export function tokenText(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/** Chat logprobs: `{content: [{token, logprob, bytes, top_logprobs}], refusal: null}`. */
export function chatLogprobs(tokens: readonly GeneratedToken[]) {
  return {
    content: tokens.map((t) => ({
      token: tokenText(t.bytes),
      logprob: t.logprob ?? 0,
      bytes: [...t.bytes],
      top_logprobs: (t.top ?? []).map((a) => ({ token: tokenText(a.bytes), logprob: a.logprob, bytes: [...a.bytes] })),
    })),
    refusal: null,
  };
}

/** Legacy completions logprobs: parallel arrays, and the offset of each token in the text. */
export function completionLogprobs(tokens: readonly GeneratedToken[], startOffset: number) {
  let offset = startOffset;
  const textOffset: number[] = [];
  for (const t of tokens) {
    textOffset.push(offset);
    offset += tokenText(t.bytes).length;
  }
  return {
    tokens: tokens.map((t) => tokenText(t.bytes)),
    token_logprobs: tokens.map((t) => t.logprob ?? 0),
    top_logprobs: tokens.map((t) => Object.fromEntries((t.top ?? []).map((a) => [tokenText(a.bytes), a.logprob]))),
    text_offset: textOffset,
  };
}
