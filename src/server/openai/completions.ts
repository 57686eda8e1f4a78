/** `POST /v1/completions` (OpenAI's legacy text completion): prompts × n choices, echo, logprobs, streaming. */
import type { FastifyInstance } from "fastify";
import type { GeneratedToken } from "../../generate/index.js";
import { finishReasonOf } from "../completion-fields.js";
import { generation } from "../generation.js";
import { cachedTokensOf, chunkWriter, type FieldWarning, logUser, route, streamChoices, warningsOf } from "./answers.js";
import { completionLogprobs, requestId, runChoices, SYSTEM_FINGERPRINT } from "./choices.js";
import { requestBase, tokenBudget } from "./engine-request.js";
import { OpenAIRequestError } from "./errors.js";
import { type CompletionBody, checkModel, constraintOf, writesJson } from "./request.js";
import { completionBody } from "./schemas.js";

/** Unconstrained completions default to this many tokens (OpenAI's default for /v1/completions). */
const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

export async function completionsRoute(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config } = state;
  const generate = generation(state);
  const modelId = engine.modelId ?? "trellis";
  const maxTokensFor = tokenBudget(engine, config);
  const baseRequest = requestBase(engine);

  api.post(
    "/v1/completions",
    route("Text completion (OpenAI, legacy)", completionBody(config)),
    async function textCompletion(request, reply) {
      const body = request.body as CompletionBody;
      checkModel(body.model, modelId);
      logUser(request, body.user);
      const n = body.n ?? 1;
      if (body.best_of != null && body.best_of !== n) {
        throw new OpenAIRequestError(400, `best_of must equal n (${n}): Trellis returns every choice it generates`, "best_of");
      }
      if (body.suffix) throw new OpenAIRequestError(400, "suffix is not supported", "suffix");
      const { spec } = constraintOf(body, false);
      // A field that shapes nothing here is said (in a stream, with its first chunk).
      const fieldWarnings: FieldWarning[] =
        body.property_order != null && !writesJson(spec)
          ? [
              {
                keyword: "property_order",
                pointer: "/property_order",
                message: "property_order: the output is not JSON; it changes nothing",
              },
            ]
          : [];
      const prompts = typeof body.prompt === "string" ? [body.prompt] : body.prompt;
      if (prompts.length * n > 16) throw new OpenAIRequestError(400, `prompts × n must be ≤ 16 (got ${prompts.length * n})`, "n");
      const promptTokens = prompts.map((p) => engine.countTokens(p));
      const fallback = spec.kind === "text" ? COMPLETIONS_DEFAULT_MAX_TOKENS : config.maxNewTokensLimit;
      const maxNewTokens = Math.min(...promptTokens.map((t) => maxTokensFor(t, body.max_tokens, fallback, "prompt", "max_tokens")));
      const logprobs = body.logprobs ?? undefined;
      const echo = body.echo === true;
      const id = requestId("cmpl");
      const head = { id, created: Math.floor(Date.now() / 1000), model: modelId, system_fingerprint: SYSTEM_FINGERPRINT };
      const run = (
        signal: AbortSignal,
        client: string | undefined,
        onText?: (index: number, delta: string, tokens: readonly GeneratedToken[]) => void,
      ) =>
        Promise.all(
          prompts.map((prompt, p) =>
            runChoices(
              engine,
              {
                ...baseRequest(body, prompt, maxNewTokens, spec.kind !== "text"),
                ...(logprobs !== undefined ? { logprobs } : {}),
                constraint: spec,
                signal,
                client,
              },
              n,
              onText ? (i, delta, tokens) => onText(p * n + i, delta, tokens) : undefined,
            ),
          ),
        ).then((all) => all.flat());
      const promptOf = (index: number): string => prompts[Math.floor(index / n)]!;
      const promptTotal = promptTokens.reduce((a, b) => a + b, 0);

      if (body.stream) {
        const completionChunk = chunkWriter({
          id: head.id,
          object: "text_completion",
          created: head.created,
          model: modelId,
          system_fingerprint: SYSTEM_FINGERPRINT,
        });
        let warned = false;
        return streamChoices(state, generate, request, reply, prompts.length * n, body.stream_options?.include_usage === true, {
          run,
          spec,
          maxTokens: maxNewTokens * prompts.length * n,
          promptTokens: promptTotal,
          choicesPerPrompt: n,
          chunk: (choices, usage) => {
            const extra = !warned && fieldWarnings.length > 0 ? { warnings: fieldWarnings } : undefined;
            warned = true;
            return completionChunk(choices, usage, extra);
          },
          first: (index) => (echo ? { index, text: promptOf(index), logprobs: null, finish_reason: null } : null),
          delta: (index, text, tokens) => ({
            index,
            text,
            logprobs: logprobs !== undefined ? completionLogprobs(tokens, 0) : null,
            finish_reason: null,
          }),
          last: (index, result) => ({ index, text: "", logprobs: null, finish_reason: finishReasonOf(result) }),
        });
      }

      const results = await generate.run(request, reply, spec, (signal, client) => run(signal, client), maxNewTokens * prompts.length * n);
      request.tokensGenerated = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
      return {
        ...head,
        object: "text_completion",
        choices: results.map((r, index) => {
          const prefix = echo ? promptOf(index) : "";
          return {
            index,
            text: prefix + r.completion,
            logprobs: r.tokens ? completionLogprobs(r.tokens, prefix.length) : null,
            finish_reason: finishReasonOf(r),
          };
        }),
        usage: {
          prompt_tokens: promptTotal,
          completion_tokens: request.tokensGenerated,
          total_tokens: promptTotal + request.tokensGenerated,
          prompt_tokens_details: { cached_tokens: cachedTokensOf(results, n) },
        },
        ...warningsOf(results, fieldWarnings),
      };
    },
  );
}
