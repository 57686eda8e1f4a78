/** `POST /v1/completion/typed`: a value of a TypeScript type, so it always type-checks. */
import type { FastifyInstance } from "fastify";
import { generation } from "../generation.js";
import { typedCompletionBody } from "../schemas.js";
import { thiggleCompletionRoute, type ThiggleCompletionBody, typedOrPlainCompletion } from "./typed-or-plain.js";

export async function typedRoute(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const generate = generation(state);
  api.post(
    "/v1/completion/typed",
    thiggleCompletionRoute("Completion typed by a TypeScript type", typedCompletionBody(state.config)),
    async function typedCompletion(request, reply) {
      return typedOrPlainCompletion(state, generate, request, reply, request.body as ThiggleCompletionBody);
    },
  );
}
