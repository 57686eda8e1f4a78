/** `POST /v1/completion`: plain completion (typed when `schema` and `type_name` come), for the model this server serves. */
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors.js";
import { generation } from "../generation.js";
import { plainCompletionBody } from "../schemas.js";
import { thiggleCompletionRoute, type ThiggleCompletionBody, typedOrPlainCompletion } from "./typed-or-plain.js";

export async function plainCompletionRoute(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const generate = generation(state);
  const modelId = state.engine.modelId ?? "trellis";
  api.post(
    "/v1/completion",
    thiggleCompletionRoute("Plain completion (typed when schema and type_name are given)", plainCompletionBody(state.config)),
    async function plainCompletion(request, reply) {
      const body = request.body as ThiggleCompletionBody;
      const asked = body.model === undefined || body.model === null ? [] : typeof body.model === "string" ? [body.model] : body.model;
      if (asked.length > 0 && !asked.includes(modelId)) {
        throw new HttpError(
          400,
          `model: ${asked.map((m) => JSON.stringify(m)).join(", ")} not served here; this server serves "${modelId}"`,
        );
      }
      return typedOrPlainCompletion(state, generate, request, reply, body);
    },
  );
}
