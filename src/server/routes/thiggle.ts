/**
 * The Thiggle API (its paths, fields, defaults and answers): regex, grammar and JSON Schema
 * completion, typed and plain completion (thiggle-completion.ts) and categorization. Registered as
 * its own context: the API key check applies to these routes only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { CompletionResult, ConstraintSpec } from "../../generate/index.js";
import { MAX_SCHEMA_NESTING, nestedDeeperThan } from "../../grammar/index.js";
import { apiKeyCheck } from "../auth.js";
import { HttpError } from "../errors.js";
import { generation } from "../generation.js";
import { thiggleCompletionRoutes } from "./thiggle-completion.js";
import {
  DEFAULTS,
  JSON_DEFAULTS,
  categorizeBody,
  categorizeResponse,
  completionResponse,
  errorResponse,
  grammarBody,
  jsonCompletionResponse,
  jsonMaxNewTokensDefault,
  jsonSchemaBody,
  regexBody,
} from "../schemas.js";

interface CompletionBody {
  prompt: string;
  max_new_tokens?: number | null;
  stop_after_match?: boolean | null;
  top_k?: number | null;
  top_p?: number | null;
  temperature?: number | null;
  repetition_penalty?: number | null;
  seed?: number | null;
}

function completionOptions(body: CompletionBody, signal: AbortSignal, client: string | undefined) {
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

function completionReply(request: FastifyRequest, result: CompletionResult) {
  request.tokensGenerated = result.tokensGenerated;
  return { completion: result.completion, tokens_generated: result.tokensGenerated, stop_reason: result.stopReason };
}

/** Options of an authenticated JSON API route: summary, body schema, 200 schema, error shape. */
const apiRoute = (summary: string, body: unknown, ok: Record<string, unknown>) => ({
  schema: {
    summary,
    security: [{ bearer: [] }],
    body,
    response: { 200: ok, "4xx": errorResponse, "5xx": errorResponse },
  },
});

export async function thiggleRoutes(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config } = state;
  const generate = generation(state);
  api.addHook("onRequest", apiKeyCheck(state));

  /** A completion under `spec`: the context check, admission (reserving max_new_tokens of the key's quota), the answer. */
  const constrained = async (request: FastifyRequest, reply: FastifyReply, body: CompletionBody, spec: ConstraintSpec) => {
    const maxNewTokens = body.max_new_tokens ?? DEFAULTS.max_new_tokens;
    generate.checkContext(body.prompt, maxNewTokens);
    const work = (signal: AbortSignal, client: string | undefined) =>
      engine.complete({ ...completionOptions(body, signal, client), constraint: spec });
    return completionReply(request, await generate.run(request, reply, spec, work, maxNewTokens));
  };

  api.post(
    "/v1/completion/regex",
    apiRoute("Completion constrained to match a regular expression", regexBody(config), completionResponse),
    async (request, reply) => {
      const body = request.body as CompletionBody & { pattern?: string | string[]; patterns?: string | string[] };
      if (body.pattern !== undefined && body.patterns !== undefined) {
        throw new HttpError(400, "give either pattern or patterns (an alias), not both");
      }
      const pattern = body.pattern ?? body.patterns;
      if (pattern === undefined) {
        throw new HttpError(400, "pattern is required (a string or a non-empty array of strings; patterns is accepted as an alias)");
      }
      return constrained(request, reply, body, { kind: "regex", pattern });
    },
  );

  const grammarSchema = grammarBody(config);
  for (const url of ["/v1/completion/cfg", "/v1/completion/grammar"]) {
    const summary = url.endsWith("cfg") ? "Completion constrained to a Lark (LALR) grammar" : "Alias of /v1/completion/cfg";
    api.post(url, apiRoute(summary, grammarSchema, completionResponse), async (request, reply) => {
      const body = request.body as CompletionBody & { grammar: string; max_ignored_run?: number | null };
      const maxIgnoredRun = body.max_ignored_run ?? DEFAULTS.max_ignored_run;
      return constrained(request, reply, body, { kind: "grammar", grammar: body.grammar, maxIgnoredRun });
    });
  }

  api.post(
    "/v1/completion/json",
    apiRoute("Completion constrained to a JSON Schema", jsonSchemaBody(config), jsonCompletionResponse),
    async (request, reply) => {
      const body = request.body as CompletionBody & {
        schema: unknown;
        whitespace?: "default" | "compact" | "indented" | null;
        forbid_unnamed_properties?: boolean | null;
        strict?: boolean | null;
      };
      const maxNewTokens = body.max_new_tokens ?? jsonMaxNewTokensDefault(config);
      // Checked here too: the cache key is the schema's JSON.stringify, on this thread.
      if (nestedDeeperThan(body.schema, MAX_SCHEMA_NESTING)) {
        throw new HttpError(400, `schema: nested deeper than ${MAX_SCHEMA_NESTING} levels`);
      }
      generate.checkContext(body.prompt, maxNewTokens);
      const spec: ConstraintSpec = {
        kind: "json_schema",
        schema: body.schema,
        options: {
          whitespace: body.whitespace ?? JSON_DEFAULTS.whitespace,
          forbidUnnamedProperties: body.forbid_unnamed_properties ?? JSON_DEFAULTS.forbid_unnamed_properties,
          strict: body.strict ?? JSON_DEFAULTS.strict,
        },
      };
      const result = await generate.run(
        request,
        reply,
        spec,
        (signal, client) =>
          engine.complete({ ...completionOptions(body, signal, client), maxNewTokens, stopAfterMatch: true, constraint: spec }),
        maxNewTokens,
      );
      const answer = completionReply(request, result);
      return result.warnings && result.warnings.length > 0 ? { ...answer, warnings: result.warnings } : answer;
    },
  );

  thiggleCompletionRoutes(api, state, generate);

  api.post("/v1/categorize", apiRoute("Choose among categories", categorizeBody(config), categorizeResponse), async (request, reply) => {
    const body = request.body as {
      prompt: string;
      categories: string[];
      allow_multiple_classes?: boolean | null;
      allow_null_category?: boolean | null;
      include_scores?: boolean | null;
    };
    generate.checkContext(body.prompt, 0);
    const includeScores = body.include_scores ?? DEFAULTS.include_scores;
    const result = await generate.run(
      request,
      reply,
      null,
      (signal) =>
        engine.categorize({
          prompt: body.prompt,
          categories: body.categories,
          allowMultipleClasses: body.allow_multiple_classes ?? DEFAULTS.allow_multiple_classes,
          allowNullCategory: body.allow_null_category ?? DEFAULTS.allow_null_category,
          includeScores,
          signal,
        }),
      0,
    );
    return includeScores && result.scores ? { choices: result.choices, scores: result.scores } : { choices: result.choices };
  });
}
