/** `POST /v1/completion/cfg` (and its alias `/v1/completion/grammar`): a sentence of a Lark grammar. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { generation } from "../generation.js";
import { completionResponse, DEFAULTS, grammarBody } from "../schemas.js";
import { apiRoute, type CompletionBody, constrainedCompletion } from "./shared.js";

type GrammarBody = CompletionBody & { grammar: string; max_ignored_run?: number | null };

export async function grammarRoute(api: FastifyInstance): Promise<void> {
  const { engine, config } = api.trellis;
  const generate = generation(api.trellis);
  const schema = grammarBody(config);
  async function grammarCompletion(request: FastifyRequest, reply: FastifyReply) {
    const body = request.body as GrammarBody;
    const maxIgnoredRun = body.max_ignored_run ?? DEFAULTS.max_ignored_run;
    return constrainedCompletion(engine, generate, request, reply, body, { kind: "grammar", grammar: body.grammar, maxIgnoredRun });
  }
  api.post(
    "/v1/completion/cfg",
    apiRoute("Completion constrained to a Lark (LALR) grammar", schema, completionResponse),
    grammarCompletion,
  );
  api.post("/v1/completion/grammar", apiRoute("Alias of /v1/completion/cfg", schema, completionResponse), grammarCompletion);
}
