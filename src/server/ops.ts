/** Operational endpoints, no key: liveness, readiness, Prometheus metrics, the OpenAPI document and its interactive page. */
import type { FastifyInstance } from "fastify";
import swaggerUi from "@fastify/swagger-ui";
import { errorResponse } from "./schemas.js";
import { sendError } from "./state.js";

const statusResponse = { type: "object", properties: { status: { type: "string" } } };

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const state = app.trellis;

  app.get("/healthz", { schema: { summary: "Liveness", response: { 200: statusResponse } } }, async () => ({ status: "ok" }));

  app.get(
    "/readyz",
    { schema: { summary: "Readiness: the model is loaded", response: { 200: statusResponse, "5xx": errorResponse } } },
    async (_request, reply) => {
      if (state.draining || state.closing) return sendError(reply, 503, "server is shutting down", { "retry-after": "5" });
      if (!state.engine.ready) return sendError(reply, 503, "model is not loaded yet", { "retry-after": "5" });
      return { status: "ready" };
    },
  );

  app.get("/metrics", { schema: { summary: "Prometheus metrics", hide: false } }, async (_request, reply) => {
    const registry = state.metrics.registry;
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  // The interactive API reference (Swagger UI, its assets served from this process, nothing from
  // outside): every endpoint of /openapi.json, with "Try it out" taking an API key. In its own
  // context so the path guard below covers its routes only.
  await app.register(docsRoutes);
}

async function docsRoutes(app: FastifyInstance): Promise<void> {
  // @fastify/send refuses a traversal or a NUL in a static asset's path by throwing (403, 400),
  // which would reach the error handler as an unknown error: a 500 and a stack in the log.
  // Such a path names no asset, so it gets the plain 404 before the static route sees it.
  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?", 1)[0] ?? "";
    if (!isPlainDocsPath(path)) return sendError(reply, 404, `no such endpoint: ${request.method} ${path}`);
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: true,
    // Only this origin: no fonts or styles from elsewhere, no validator badge (swagger.io).
    transformStaticCSP: () =>
      "default-src 'self'; base-uri 'self'; font-src 'self' data:; frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self'",
    uiConfig: { deepLinking: true, persistAuthorization: false, displayRequestDuration: true, validatorUrl: null },
    theme: { title: "Trellis API" },
  });
}

/**
 * Whether a /docs path, once decoded, has only ordinary segments: no `.` or `..`, no backslash
 * (a separator on Windows) and no control character (a NUL ends a path in the file system).
 */
function isPlainDocsPath(path: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return false;
  }
  if (/[\\\u0000-\u001f\u007f]/.test(decoded)) return false;
  return decoded.split("/").every((segment) => segment !== "." && segment !== "..");
}
