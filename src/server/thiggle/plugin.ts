/**
 * The Thiggle API (its paths, fields, defaults and answers), one route per file: regex, grammar
 * and JSON Schema completion, typed and plain completion, categorization. Registered as its own
 * context: the API key check applies to these routes only.
 */
import type { FastifyInstance } from "fastify";
import { apiKeyCheck } from "../auth.js";
import { categorizeRoute } from "./categorize.js";
import { plainCompletionRoute } from "./completion.js";
import { grammarRoute } from "./grammar.js";
import { jsonRoute } from "./json.js";
import { regexRoute } from "./regex.js";
import { typedRoute } from "./typed.js";

export async function thiggleRoutes(api: FastifyInstance): Promise<void> {
  api.addHook("onRequest", apiKeyCheck(api.trellis));
  await api.register(regexRoute);
  await api.register(grammarRoute);
  await api.register(jsonRoute);
  await api.register(typedRoute);
  await api.register(plainCompletionRoute);
  await api.register(categorizeRoute);
}
