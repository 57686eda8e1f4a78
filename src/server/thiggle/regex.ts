/** `POST /v1/completion/regex`: a completion that fully matches a pattern (or one of several). */
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors.js";
import { generation } from "../generation.js";
import { completionResponse, regexBody } from "../schemas.js";
import { apiRoute, type CompletionBody, constrainedCompletion } from "./shared.js";

type RegexBody = CompletionBody & { pattern?: string | string[]; patterns?: string | string[] };

export async function regexRoute(api: FastifyInstance): Promise<void> {
  const { engine, config } = api.trellis;
  const generate = generation(api.trellis);
  api.post(
    "/v1/completion/regex",
    apiRoute("Completion constrained to match a regular expression", regexBody(config), completionResponse),
    async function regexCompletion(request, reply) {
      const body = request.body as RegexBody;
      if (body.pattern !== undefined && body.patterns !== undefined) {
        throw new HttpError(400, "give either pattern or patterns (an alias), not both");
      }
      const pattern = body.pattern ?? body.patterns;
      if (pattern === undefined) {
        throw new HttpError(400, "pattern is required (a string or a non-empty array of strings; patterns is accepted as an alias)");
      }
      return constrainedCompletion(engine, generate, request, reply, body, { kind: "regex", pattern });
    },
  );
}
