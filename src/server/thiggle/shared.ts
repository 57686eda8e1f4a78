/**
 * What the Thiggle completion routes share: the body fields every constrained completion has,
 * their defaults, Thiggle's `{completion, tokens_generated, stop_reason}` answer, the route
 * options, and one constrained completion (context check, admission, the engine's answer).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { CompletionResult, ConstraintSpec, Engine } from "../../generate/index.js";
import type { Generation } from "../generation.js";
import { DEFAULTS, errorResponse } from "../schemas.js";

export interface CompletionBody {
  prompt: string;
  max_new_tokens?: number | null;
  stop_after_match?: boolean | null;
  top_k?: number | null;
  top_p?: number | null;
  temperature?: number | null;
  repetition_penalty?: number | null;
  seed?: number | null;
}

/** The engine's options of a Thiggle completion body, defaults filled in. */
export function completionOptions(body: CompletionBody, signal: AbortSignal, client: string | undefined) {
  const options = {
    client,
    prompt: body.prompt,
    maxNewTokens: body.max_new_tokens ?? DEFAULTS.max_new_tokens,
    stopAfterMatch: body.stop_after_match ?? DEFAULTS.stop_after_match,
    topK: body.top_k ?? DEFAULTS.top_k,
    topP: body.top_p ?? DEFAULTS.top_p,
    temperature: body.temperature ?? DEFAULTS.temperature,
    repetitionPenalty: body.repetition_penalty ?? DEFAULTS.repetition_penalty,
    signal,
  };
  return body.seed === null || body.seed === undefined ? options : { ...options, seed: body.seed };
}

/** Thiggle's answer to a constrained completion; the tokens are the request's charge. */
export function completionReply(request: FastifyRequest, result: CompletionResult) {
  request.tokensGenerated = result.tokensGenerated;
  return { completion: result.completion, tokens_generated: result.tokensGenerated, stop_reason: result.stopReason };
}

/** Options of an authenticated JSON API route: summary, body schema, 200 schema, error shape. */
export const apiRoute = (summary: string, body: unknown, ok: Record<string, unknown>) => ({
  schema: {
    summary,
    security: [{ bearer: [] }],
    body,
    response: { 200: ok, "4xx": errorResponse, "5xx": errorResponse },
  },
});

/**
 * A completion under `spec`: the context check, admission (reserving max_new_tokens of the key's
 * quota), the answer (with the constraint's `warnings` when it has any). `fixed` overrides what a
 * route decides itself (JSON's own max_new_tokens default; a document always ends when complete).
 */
export async function constrainedCompletion(
  engine: Engine,
  generate: Generation,
  request: FastifyRequest,
  reply: FastifyReply,
  body: CompletionBody,
  spec: ConstraintSpec,
  fixed: { maxNewTokens?: number; stopAfterMatch?: boolean } = {},
) {
  const maxNewTokens = fixed.maxNewTokens ?? body.max_new_tokens ?? DEFAULTS.max_new_tokens;
  generate.checkContext(body.prompt, maxNewTokens);
  const work = (signal: AbortSignal, client: string | undefined) =>
    engine.complete({ ...completionOptions(body, signal, client), ...fixed, maxNewTokens, constraint: spec });
  const result = await generate.run(request, reply, spec, work, maxNewTokens);
  const answer = completionReply(request, result);
  return result.warnings && result.warnings.length > 0 ? { ...answer, warnings: result.warnings } : answer;
}
