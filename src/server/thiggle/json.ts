/** `POST /v1/completion/json`: a JSON document valid against a JSON Schema (with `warnings` where a keyword is not enforced). */
import type { FastifyInstance } from "fastify";
import type { ConstraintSpec } from "../../generate/index.js";
import { MAX_SCHEMA_NESTING, nestedDeeperThan } from "../../schema/index.js";
import { HttpError } from "../errors.js";
import { generation } from "../generation.js";
import { JSON_DEFAULTS, jsonCompletionResponse, jsonMaxNewTokensDefault, jsonSchemaBody } from "../schemas.js";
import { apiRoute, type CompletionBody, constrainedCompletion } from "./shared.js";

type JsonBody = CompletionBody & {
  schema: unknown;
  whitespace?: "default" | "compact" | "indented" | null;
  forbid_unnamed_properties?: boolean | null;
  strict?: boolean | null;
  property_order?: "schema" | "any" | null;
};

export async function jsonRoute(api: FastifyInstance): Promise<void> {
  const { engine, config } = api.trellis;
  const generate = generation(api.trellis);
  api.post(
    "/v1/completion/json",
    apiRoute("Completion constrained to a JSON Schema", jsonSchemaBody(config), jsonCompletionResponse),
    async function jsonCompletion(request, reply) {
      const body = request.body as JsonBody;
      const maxNewTokens = body.max_new_tokens ?? jsonMaxNewTokensDefault(config);
      // Checked here too: the cache key is the schema's JSON.stringify, on this thread.
      if (nestedDeeperThan(body.schema, MAX_SCHEMA_NESTING)) {
        throw new HttpError(400, `schema: nested deeper than ${MAX_SCHEMA_NESTING} levels`);
      }
      const spec: ConstraintSpec = {
        kind: "json_schema",
        schema: body.schema,
        options: {
          whitespace: body.whitespace ?? JSON_DEFAULTS.whitespace,
          forbidUnnamedProperties: body.forbid_unnamed_properties ?? JSON_DEFAULTS.forbid_unnamed_properties,
          strict: body.strict ?? JSON_DEFAULTS.strict,
          ...(body.property_order === "any" ? { propertyOrder: "any" as const } : {}),
        },
      };
      return constrainedCompletion(engine, generate, request, reply, body, spec, { maxNewTokens, stopAfterMatch: true });
    },
  );
}
