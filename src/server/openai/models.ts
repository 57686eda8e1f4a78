/** `GET /v1/models` and `GET /v1/models/{model}`: the one model this server serves. */
import type { FastifyInstance } from "fastify";
import { route } from "./answers.js";
import { checkModel } from "./request.js";

export async function modelsRoute(api: FastifyInstance): Promise<void> {
  const modelId = api.trellis.engine.modelId ?? "trellis";
  const model = { id: modelId, object: "model", created: Math.floor(Date.now() / 1000), owned_by: "trellis" };
  api.get("/v1/models", route("The models this server serves"), async function listModels() {
    return { object: "list", data: [model] };
  });
  api.get("/v1/models/:model", route("One served model"), async function getModel(request) {
    checkModel((request.params as { model: string }).model, modelId);
    return model;
  });
}
