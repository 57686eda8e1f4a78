/**
 * What `POST /v1/completion/typed` (typed.ts: a value of a TypeScript type, through the JSON
 * Schema engine, so it always type-checks) and `POST /v1/completion` (completion.ts: plain
 * completion; typed when `schema` and `type_name` come, as the Python client's typed_completion
 * posts them) share. Answers in Thiggle's completion shape: a UUID id, `created` in RFC 3339 (the Go client decodes a
 * time.Time), choices with unix-second `created`, and usage with the prediction time.
 */
import { randomUUID } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { CompletionResult, ConstraintSpec } from "../../generate/index.js";
import { withoutRepeatedKeys } from "../../schema/index.js";
import { finishReasonOf, samplingOf, stopStrings } from "../completion-fields.js";
import { HttpError } from "../errors.js";
import type { Generation } from "../generation.js";
import { JSON_DEFAULTS, jsonMaxNewTokensDefault, thiggleCompletionResponse } from "../schemas.js";
import { apiRoute } from "./shared.js";
import type { TrellisState } from "../state.js";

export interface ThiggleCompletionBody {
  prompt: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  user_id?: string | null;
  top_k?: number | null;
  seed?: number | null;
  model?: string | string[] | null;
  schema?: string;
  type_name?: string;
  whitespace?: "default" | "compact" | "indented" | null;
  property_order?: "schema" | "any" | null;
}

/** Options of a route answering in Thiggle's completion shape. */
export const thiggleCompletionRoute = (summary: string, body: unknown) => apiRoute(summary, body, thiggleCompletionResponse);

/** A typed (`schema` + `type_name`) or plain completion, answered in Thiggle's completion shape. */
export async function typedOrPlainCompletion(
  state: TrellisState,
  generate: Generation,
  request: FastifyRequest,
  reply: FastifyReply,
  body: ThiggleCompletionBody,
) {
  const { engine, config } = state;
  const modelId = engine.modelId ?? "trellis";
  if (body.user_id) request.log.info({ user: body.user_id }, "Thiggle request user");
  const typed = body.schema !== undefined || body.type_name !== undefined;
  if (typed && (body.schema === undefined || body.type_name === undefined)) {
    throw new HttpError(400, body.schema === undefined ? "schema is required with type_name" : "type_name is required with schema");
  }
  const stops = stopStrings(body);
  if (typed && stops.length > 0)
    throw new HttpError(400, "stop: a typed completion cannot be cut short by a stop string (the value would not type-check)");
  const spec: ConstraintSpec = typed
    ? {
        kind: "typescript",
        source: body.schema!,
        typeName: body.type_name!,
        options: {
          whitespace: body.whitespace ?? JSON_DEFAULTS.whitespace,
          forbidUnnamedProperties: false,
          strict: true,
          ...(body.property_order === "any" ? { propertyOrder: "any" as const } : {}),
        },
      }
    : { kind: "text" };
  const maxNewTokens = body.max_tokens ?? jsonMaxNewTokensDefault(config);
  generate.checkContext(body.prompt, maxNewTokens);
  const began = performance.now();
  const result: CompletionResult = await generate.run(
    request,
    reply,
    spec,
    (signal, client) =>
      engine.complete({
        prompt: body.prompt,
        maxNewTokens,
        // A typed value ends when it is complete; free text when the model ends it.
        stopAfterMatch: typed,
        ...samplingOf(body),
        stop: stops,
        ...(body.seed === null || body.seed === undefined ? {} : { seed: body.seed }),
        signal,
        client,
        constraint: spec,
      }),
    maxNewTokens,
  );
  request.tokensGenerated = result.tokensGenerated;
  const promptTokens = result.promptTokens ?? engine.countTokens(body.prompt);
  const usage = {
    prompt_tokens: promptTokens,
    prediction_time_ms: Math.round(performance.now() - began),
    completion_tokens: result.tokensGenerated,
    total_tokens: promptTokens + result.tokensGenerated,
  };
  const now = new Date();
  // A typed value is written so that TypeScript reads it (no repeated property).
  const text = typed ? withoutRepeatedKeys(result.completion) : result.completion;
  const answer = {
    id: randomUUID(),
    object: typed ? "typed_completion" : "text_completion",
    created: now.toISOString(),
    choices: [
      {
        text,
        created: Math.floor(now.getTime() / 1000),
        model: modelId,
        finish_reason: finishReasonOf(result),
        usage,
      },
    ],
    usage,
  };
  return result.warnings && result.warnings.length > 0 ? { ...answer, warnings: result.warnings } : answer;
}
