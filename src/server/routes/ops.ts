/** Operational endpoints, no key: liveness, readiness, Prometheus metrics, the OpenAPI document and its page. */
import type { FastifyInstance } from "fastify";
import { renderDocsPage } from "../docs.js";
import { errorResponse } from "../schemas.js";
import { sendError } from "../state.js";

const statusResponse = { type: "object", properties: { status: { type: "string" } } };

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const state = app.trellis;

  app.get("/healthz", { schema: { summary: "Liveness", response: { 200: statusResponse } } }, async () => ({ status: "ok" }));

  app.get(
    "/readyz",
    { schema: { summary: "Readiness: the model is loaded", response: { 200: statusResponse, "5xx": errorResponse } } },
    async (_request, reply) => {
      if (state.closing) return sendError(reply, 503, "server is shutting down", { "retry-after": "5" });
      if (!state.engine.ready) return sendError(reply, 503, "model is not loaded yet", { "retry-after": "5" });
      return { status: "ready" };
    },
  );

  app.get("/metrics", { schema: { summary: "Prometheus metrics", hide: false } }, async (_request, reply) => {
    const registry = state.metrics.registry;
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  let docsHtml: string | undefined;
  app.get("/docs", { schema: { hide: true } }, async (_request, reply) => {
    docsHtml ??= renderDocsPage(app.swagger() as unknown as Record<string, unknown>);
    return reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'")
      .send(docsHtml);
  });
}
