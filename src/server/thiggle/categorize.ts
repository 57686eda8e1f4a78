/** `POST /v1/categorize`: the categories the model finds most likely, by each whole category's likelihood. */
import type { FastifyInstance } from "fastify";
import { generation } from "../generation.js";
import { categorizeBody, categorizeResponse, DEFAULTS } from "../schemas.js";
import { apiRoute } from "./shared.js";

interface CategorizeBody {
  prompt: string;
  categories: string[];
  allow_multiple_classes?: boolean | null;
  allow_null_category?: boolean | null;
  include_scores?: boolean | null;
}

export async function categorizeRoute(api: FastifyInstance): Promise<void> {
  const { engine, config } = api.trellis;
  const generate = generation(api.trellis);
  api.post(
    "/v1/categorize",
    apiRoute("Choose among categories", categorizeBody(config), categorizeResponse),
    async function categorize(request, reply) {
      const body = request.body as CategorizeBody;
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
    },
  );
}
