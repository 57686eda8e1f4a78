/**
 * The OpenAI-compatible API, one route (family) per file: chat.ts (`POST /v1/chat/completions`),
 * completions.ts (`POST /v1/completions`), models.ts (`GET /v1/models[/{model}]`), responses.ts
 * (the Responses API), embeddings.ts (`POST /v1/embeddings`), with OpenAI's shapes, streaming
 * (SSE) and error bodies, on the same engine, keys, limits and admission as the Thiggle API.
 * Registered as its own Fastify context: its key check, validation messages and error handler
 * answer in OpenAI's shape and touch no other route.
 *
 * Parts: request.ts (body → engine request), engine-request.ts (the planned engine request chat
 * and responses both run), answers.ts (what chat and completions answers share, streaming
 * choices), choices.ts (n choices, logprobs), sse.ts (the event stream), schemas.ts (request
 * schemas), errors.ts (the error shape).
 */
import type { FastifyInstance } from "fastify";
import { apiKeyCheck } from "../auth.js";
import { allowedFields } from "../schemas.js";
import { chatRoute } from "./chat.js";
import { completionsRoute } from "./completions.js";
import { embeddingRoutes } from "./embeddings.js";
import { mapOpenAIError, maxTokensParam, sendOpenAIError } from "./errors.js";
import { modelsRoute } from "./models.js";
import { responsesRoutes } from "./responses.js";

export async function openaiRoutes(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  api.addHook(
    "onRequest",
    apiKeyCheck(state, (reply, status, message, headers) => sendOpenAIError(reply, status, message, headers)),
  );
  api.setErrorHandler(function openaiError(error, request, reply) {
    const bodySchema = (request.routeOptions.schema?.body ?? {}) as Record<string, unknown>;
    const mapped = mapOpenAIError(error, {
      allowedFields: allowedFields(bodySchema),
      bodyLimitBytes: state.config.bodyLimitBytes,
      maxTokensParam: maxTokensParam.get(request) ?? "max_tokens",
    });
    if (mapped.internal) request.log.error({ err: error }, "unhandled error");
    return reply.code(mapped.status).headers(mapped.headers).type("application/json; charset=utf-8").send(mapped.body);
  });
  // Child contexts: this key check and error handler apply to each.
  await api.register(modelsRoute);
  await api.register(chatRoute);
  await api.register(completionsRoute);
  await api.register(responsesRoutes);
  await api.register(embeddingRoutes);
}
