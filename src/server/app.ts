/**
 * server/ — the HTTP shell over an Engine: validation, authentication, rate limits, admission,
 * deadlines, error mapping and metrics. No generation logic lives here.
 *
 *   const app = await createServer({ engine, config, store, plugins: [dashboardPlugin(...)] });
 *   await app.listen({ host, port });  …  await app.trellis.shutdown();
 *
 * Its parts: http.ts (the socket layer: deadlines, Node's own answers), state.ts (what the
 * routes share, `app.trellis`), auth.ts (the API key check of the API's context), quota.ts (a
 * key's usage and token quota in one request), generation.ts (admission of one generation),
 * thiggle/ and openai/ (the two APIs, one route per file), ops.ts (operational endpoints),
 * method-not-allowed.ts (405 for every known path), errors.ts, schemas.ts, metrics.ts, limits.ts.
 * Each API is a Fastify plugin with its own context, so its hooks (the key check) and its error
 * shape stay its own; each route in it is a plugin of its own with a named handler.
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import swagger from "@fastify/swagger";
import type { Config } from "../config.js";
import type { Engine } from "../generate/index.js";
import { asKeyBackend, type KeyBackend, type KeyStore } from "../store/index.js";
import { mapError } from "./errors.js";
import { httpOptions } from "./http.js";
import { ConcurrencyGate } from "./limits.js";
import { createReplicaState } from "./shared/replica-state.js";
import { createMetrics } from "./metrics.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { openaiRoutes } from "./openai/index.js";
import { mapOpenAIError, sendOpenAIError } from "./openai/errors.js";
import { onSendUsage } from "./quota.js";
import { opsRoutes } from "./ops.js";
import { thiggleRoutes } from "./thiggle/plugin.js";
import { allowedFields } from "./schemas.js";
import { sendError, type TrellisState } from "./state.js";
import { VERSION } from "./version.js";

export { sendError, type TrellisState };

export { VERSION };

export interface CreateServerOptions {
  engine: Engine;
  config: Config;
  /** The key store: a SQLite KeyStore (tests, the default) or any KeyBackend (Postgres). */
  store: KeyStore | KeyBackend;
  /** Fastify logger setting; false in tests. */
  logger?: FastifyServerOptions["logger"];
  /** Extra route sets (the dashboard), registered after the API, each in its own context. */
  plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void> | void>;
  /** Node's default process metrics in /metrics (off in tests: they are global timers). */
  processMetrics?: boolean;
}

/** Paths of OpenAI's API (served or not): their 404s come in OpenAI's error shape. */
const OPENAI_RESOURCE =
  /^\/v1\/(chat|completions|models|embeddings|responses|moderations|images|audio|files|uploads|batches|fine_tuning|assistants|threads|vector_stores|realtime)(\/|$)/;

/** After generations drain at shutdown, how long other requests get before their sockets close. */
const SHUTDOWN_GRACE_MS = 2000;

export async function createServer(options: CreateServerOptions): Promise<FastifyInstance> {
  const { engine, config } = options;

  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.bodyLimitBytes,
    // Strict JSON: no type coercion, unknown fields are errors (not silently dropped).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    // A key named "__proto__" (or "constructor" over "prototype") is valid JSON: a schema may name
    // a property so. JSON.parse makes it an own property and touches no prototype, so bodies are
    // parsed as they are, neither refused nor stripped of the key.
    onProtoPoisoning: "ignore",
    onConstructorPoisoning: "ignore",
    // The API key check answers 503 in the {error, code} shape while closing.
    return503OnClosing: false,
    ...httpOptions(config),
    frameworkErrors: (error, _request, reply) => {
      const status = typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
      void sendError(reply, status, error.message || "bad request");
    },
  });

  // Shared with the other replicas through Redis when configured (rate limits, key changes, sessions).
  const replica = createReplicaState({
    redisUrl: config.redisUrl,
    rateLimit: config.rateLimit,
    store: asKeyBackend(options.store),
    log: (event, detail) => app.log.warn(detail, event),
  });
  const store = replica.store;
  const gate = new ConcurrencyGate(config.concurrency, config.queueSize);
  const metrics = createMetrics({
    queueDepth: () => gate.waiting + safeQueueDepth(engine),
    inFlight: () => gate.running,
    kvCacheUtilization: () => engine.kvCacheUtilization,
    constraints: () => engine.constraintStats?.(),
    prefixCache: () => engine.prefixCacheStats?.(),
    usage: () => ({ ...store.stats(), staleKeyServes: store.staleKeyServes }),
    sharing: () => replica.stats(),
    processMetrics: options.processMetrics ?? false,
  });
  app.addHook("onClose", async () => {
    metrics.stop();
    await replica.close();
  });

  const state = trellisState(app, config, engine, replica, gate, metrics);
  app.decorate("trellis", state);
  app.decorateRequest("apiKey", null);
  app.decorateRequest("keyUsage", null);
  app.decorateRequest("tokensGenerated", 0);
  const methods = methodNotAllowed(app);

  await app.register(swagger, { openapi: OPENAPI });
  installErrorHandlers(app, config);
  installAccounting(app, metrics, store);

  await app.register(thiggleRoutes);
  await app.register(openaiRoutes);
  await app.register(opsRoutes);
  for (const plugin of options.plugins ?? []) await app.register(async (scope) => plugin(scope));
  methods.sweep();
  return app;
}

/** What the routes share (`app.trellis`), with the graceful shutdown that drains generations. */
function trellisState(
  app: FastifyInstance,
  config: Config,
  engine: Engine,
  replica: ReturnType<typeof createReplicaState>,
  gate: ConcurrencyGate,
  metrics: ReturnType<typeof createMetrics>,
): TrellisState {
  const state: TrellisState = {
    config,
    engine,
    store: replica.store,
    metrics,
    gate,
    limiter: replica.limiter,
    sessions: replica.sessions,
    draining: false,
    closing: false,
    async shutdown() {
      state.draining = true;
      // Readiness fails first; requests the balancer already routed here are still served.
      if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      state.closing = true;
      // Keep listening while generations drain, so new requests get a 503 rather than a refused
      // connection; then close (which also waits for any other in-flight request).
      const drainUntil = Date.now() + config.requestTimeoutMs + 1000;
      while ((gate.running > 0 || gate.waiting > 0) && Date.now() < drainUntil) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // Generations are done; what still holds a socket is a client that never finished sending
      // or reading. Give them a moment, then close those sockets so the process can exit.
      const stragglers = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      try {
        await app.close();
      } finally {
        clearTimeout(stragglers);
      }
    },
  };
  return state;
}

/** Every error in the one shape of its API (OpenAI's on OpenAI's paths), and 404s likewise. */
function installErrorHandlers(app: FastifyInstance, config: Config): void {
  app.setErrorHandler((error, request, reply) => {
    const bodySchema = (request.routeOptions.schema?.body ?? {}) as Record<string, unknown>;
    const context = { allowedFields: allowedFields(bodySchema), bodyLimitBytes: config.bodyLimitBytes };
    if (OPENAI_RESOURCE.test(request.url.split("?", 1)[0] ?? "")) {
      // Errors raised before an OpenAI route's own context (a 405 route's body parser) keep its shape.
      const openai = mapOpenAIError(error, context);
      if (openai.internal) request.log.error({ err: error }, "unhandled error");
      return reply.code(openai.status).headers(openai.headers).type("application/json; charset=utf-8").send(openai.body);
    }
    const mapped = mapError(error, context);
    if (mapped.internal) request.log.error({ err: error }, "unhandled error");
    return sendError(reply, mapped.status, mapped.body.error, mapped.headers);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0] ?? "";
    const message = `no such endpoint: ${request.method} ${path}`;
    // A resource of OpenAI's API that Trellis does not serve: answered so an OpenAI SDK reads it.
    return OPENAI_RESOURCE.test(path) ? sendOpenAIError(reply, 404, message) : sendError(reply, 404, message);
  });
}

/** Per answer: a key's usage and quota charge (quota.ts), the request metrics, the key's outcome. */
function installAccounting(app: FastifyInstance, metrics: ReturnType<typeof createMetrics>, store: TrellisState["store"]): void {
  // A store key's usage (and its quota's charge) is recorded once per request: for a JSON answer
  // as it is sent, so X-Quota-Remaining counts it; for a stream when it ends (server/quota.ts).
  app.addHook("onSend", async (request, reply, payload) => {
    onSendUsage(request, reply, payload);
    return payload;
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    metrics.requests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.latency.observe({ route }, reply.elapsedTime / 1000);
    if (request.tokensGenerated > 0) {
      metrics.tokens.inc({ route }, request.tokensGenerated);
      metrics.tokenRate.note(request.tokensGenerated);
    }
    const usage = request.keyUsage;
    if (usage) {
      usage.answerDone();
      // Refusals before admission (429, 402) are counted by the key check itself.
      if (reply.statusCode >= 400) store.recordOutcome(usage.keyId, reply.statusCode >= 500 ? "server-error" : "client-error");
    }
  });
}

const OPENAPI = {
  openapi: "3.0.3",
  info: {
    title: "Trellis",
    version: VERSION,
    description: "Structured generation: regex- and grammar-constrained completion, and categorization.",
  },
  components: { securitySchemes: { bearer: { type: "http" as const, scheme: "bearer" } } },
};

function safeQueueDepth(engine: Engine): number {
  try {
    const depth = engine.queueDepth;
    return Number.isFinite(depth) ? depth : 0;
  } catch {
    return 0;
  }
}
