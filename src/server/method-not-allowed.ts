/**
 * A known path asked with another method is a 405 listing the allowed ones, not a 404. Every
 * route any context registers is recorded (an onRoute hook on the root, inherited by every
 * context), and once all are registered `sweep()` adds the 405 routes: plugins need not repeat
 * their paths by hand.
 */
import type { FastifyInstance, HTTPMethods } from "fastify";
import { sendOpenAIError } from "./openai/errors.js";
import { sendError } from "./state.js";

const OPENAI_PATH = /^\/v1\/(chat\/completions|completions|models|embeddings)(\/|$)/;

const ALL_METHODS: HTTPMethods[] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

/** Call on the root before any route is registered; call `sweep()` after the last one. */
export function methodNotAllowed(app: FastifyInstance): { sweep(): void } {
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    // Swagger UI's page and assets (/docs…) answer for themselves (its prefix route has two urls).
    if (route.config?.methodNotAllowed || route.url.startsWith("/docs")) return;
    let methods = methodsByUrl.get(route.url);
    if (!methods) methodsByUrl.set(route.url, (methods = new Set()));
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) methods.add(m);
    if (methods.has("GET")) methods.add("HEAD"); // Fastify answers HEAD for every GET route
  });
  return {
    sweep() {
      for (const [url, allowed] of [...methodsByUrl]) {
        const others = ALL_METHODS.filter((m) => !allowed.has(m));
        if (others.length === 0) continue;
        const allow = ALL_METHODS.filter((m) => allowed.has(m)).join(", ");
        app.route({
          method: others,
          url,
          config: { methodNotAllowed: true },
          schema: { hide: true },
          handler: async (request, reply) => {
            const message = `method ${request.method} is not allowed on ${url}; allowed: ${allow}`;
            // The OpenAI API's paths answer in its error shape.
            return OPENAI_PATH.test(url) ? sendOpenAIError(reply, 405, message, { allow }) : sendError(reply, 405, message, { allow });
          },
        });
      }
    },
  };
}
