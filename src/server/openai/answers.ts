/**
 * What the chat and text completion routes share: route options, the end user in the log, usage
 * and warnings of an answer, a stream's chunks, and streaming n choices as SSE.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { CompletionResult, GeneratedToken } from "../../generate/index.js";
import type { Generation } from "../generation.js";
import type { TrellisState } from "../state.js";
import { mapOpenAIError, maxTokensParam } from "./errors.js";
import { replyWithStream, SseStream } from "./sse.js";

/** Options of an OpenAI route: summary, tag, bearer security, body schema. */
export const route = (summary: string, body?: unknown) => ({
  schema: { summary, tags: ["OpenAI"], security: [{ bearer: [] }], ...(body ? { body } : {}) },
});

/** OpenAI's `user` (the caller's end user) goes to the request log. */
export function logUser(request: FastifyRequest, user: string | null | undefined): void {
  if (user) request.log.info({ user }, "OpenAI request user");
}

/** A request-field warning, in the shape of the JSON Schema engine's: the field, its pointer, why. */
export interface FieldWarning {
  keyword: string;
  pointer: string;
  message: string;
}

/**
 * A stream's chunks as JSON text: the fields every chunk repeats are serialised once, in OpenAI's
 * order (id, object, created, model, system_fingerprint), and only the choices each time.
 */
export function chunkWriter(
  head: Record<string, unknown>,
): (choices: unknown[], usage?: unknown, extra?: Record<string, unknown>) => string {
  const prefix = `${JSON.stringify(head).slice(0, -1)},"choices":`;
  return (choices, usage, extra) =>
    `${prefix}${JSON.stringify(choices)}${usage ? `,"usage":${JSON.stringify(usage)}` : ""}${extra ? `,${JSON.stringify(extra).slice(1, -1)}` : ""}}`;
}

/**
 * Prompt tokens whose KV cells the prefix cache gave (OpenAI's `cached_tokens`): the first
 * choice's of each prompt, `choicesPerPrompt` results apart (the others share its prompt).
 */
export function cachedTokensOf(results: readonly CompletionResult[], choicesPerPrompt: number): number {
  let cached = 0;
  for (let i = 0; i < results.length; i += Math.max(1, choicesPerPrompt)) cached += results[i]!.cachedTokens ?? 0;
  return cached;
}

export function usageOf(results: readonly CompletionResult[], promptTokens: number) {
  const completion = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
  // The prompt is read once however many choices share it (as OpenAI counts it).
  const prompt = promptTokens;
  const cached = cachedTokensOf(results, results.length);
  const usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
  // A model that reasoned: of the completion tokens, those of its reasoning sections (as OpenAI's o-series report them).
  if (!results.some((r) => r.reasoningTokens !== undefined)) return usage;
  const reasoning = results.reduce((sum, r) => sum + (r.reasoningTokens ?? 0), 0);
  return { ...usage, completion_tokens_details: { reasoning_tokens: reasoning } };
}

export function warningsOf(results: readonly CompletionResult[], fields: readonly FieldWarning[] = []): { warnings?: unknown } {
  const warnings = [...fields, ...(results[0]?.warnings ?? [])];
  return warnings.length > 0 ? { warnings } : {};
}

export interface StreamPlan {
  run(
    signal: AbortSignal,
    client: string | undefined,
    onText: (index: number, delta: string, tokens: readonly GeneratedToken[]) => void,
  ): Promise<CompletionResult[]>;
  spec: Parameters<Generation["run"]>[2];
  /** The most tokens the request may generate, all choices together (the quota's reservation). */
  maxTokens: number;
  /** Prompt tokens of the whole request, when the results do not carry them. */
  promptTokens?: number;
  /** Choices per prompt (`n`), for cached_tokens: the first of each prompt's counts. */
  choicesPerPrompt?: number;
  /** A chunk's JSON text (chunkWriter). */
  chunk(choices: unknown[], usage?: unknown): string;
  /** The choice's opening chunk (chat: the role), or null. */
  first(index: number): unknown;
  /** A piece of text as a choice chunk, or null to send nothing now. */
  delta(index: number, text: string, tokens: readonly GeneratedToken[]): unknown;
  last(index: number, result: CompletionResult): unknown;
}

/**
 * Streams `n` choices as SSE. Errors before the first event are ordinary HTTP errors; after it,
 * an SSE error event. A client that goes away aborts the generation (generation.run's signal).
 */
export async function streamChoices(
  state: TrellisState,
  generate: Generation,
  request: FastifyRequest,
  reply: FastifyReply,
  n: number,
  includeUsage: boolean,
  plan: StreamPlan,
): Promise<FastifyReply> {
  const sse = new SseStream();
  const opened = new Array<boolean>(n).fill(false);
  const lastAt = new Array<number>(n).fill(0);
  const arrived = performance.now() - reply.elapsedTime;
  let firstText = true;
  const open = (index: number): void => {
    if (opened[index]) return;
    opened[index] = true;
    const first = plan.first(index);
    if (first !== null) sse.sendJson(plan.chunk([first]));
  };
  const onText = (index: number, text: string, tokens: readonly GeneratedToken[]): void => {
    open(index);
    // Counted as they stream, so a stream cut short still accounts for what it cost.
    request.tokensGenerated += tokens.length;
    const now = performance.now();
    if (text.length > 0) {
      if (firstText) state.metrics.timeToFirstToken.observe((now - arrived) / 1000);
      else if (lastAt[index]! > 0) state.metrics.interTokenLatency.observe((now - lastAt[index]!) / 1000);
      firstText = false;
      lastAt[index] = now;
    }
    const choice = plan.delta(index, text, tokens);
    if (choice !== null) sse.sendJson(plan.chunk([choice]));
  };
  const work = generate.run(request, reply, plan.spec, (signal, client) => plan.run(signal, client, onText), plan.maxTokens);
  const finished = work.then(
    (results) => {
      request.tokensGenerated = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
      results.forEach((result, index) => {
        open(index);
        sse.sendJson(plan.chunk([plan.last(index, result)]));
      });
      if (includeUsage) {
        const usage =
          plan.promptTokens !== undefined
            ? {
                prompt_tokens: plan.promptTokens,
                completion_tokens: request.tokensGenerated,
                total_tokens: plan.promptTokens + request.tokensGenerated,
                prompt_tokens_details: { cached_tokens: cachedTokensOf(results, plan.choicesPerPrompt ?? results.length) },
              }
            : usageOf(results, results[0]?.promptTokens ?? 0);
        sse.sendJson(plan.chunk([], usage));
      }
      sse.end();
    },
    (error: unknown) => {
      if (!opened.some(Boolean)) throw error;
      const mapped = mapOpenAIError(error, {
        allowedFields: [],
        bodyLimitBytes: state.config.bodyLimitBytes,
        maxTokensParam: maxTokensParam.get(request) ?? "max_tokens",
      });
      if (mapped.internal) request.log.error({ err: error }, "error while streaming");
      sse.fail(mapped.body);
    },
  );
  return replyWithStream(reply, sse, finished);
}
