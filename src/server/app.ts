/**
 * The HTTP shell over an Engine: validation, authentication, rate limits, admission, deadlines,
 * error mapping and metrics. No generation logic lives here.
 */
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  type HTTPMethods,
} from "fastify";
import swagger from "@fastify/swagger";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Config } from "../config.js";
import type { Engine, CompletionResult, ConstraintSpec } from "../generate/types.js";
import { KeyStore, sha256Hex } from "../store/keys.js";
import { HttpError, mapError, type ErrorBody } from "./errors.js";
import { ConcurrencyGate, TokenBucketLimiter } from "./limits.js";
import { createMetrics, type ServerMetrics } from "./metrics.js";
import {
  DEFAULTS,
  allowedFields,
  categorizeBody,
  categorizeResponse,
  completionResponse,
  errorResponse,
  grammarBody,
  regexBody,
} from "./schemas.js";
import { renderDocsPage } from "./docs.js";

export const VERSION = "0.1.0";

export interface CreateServerOptions {
  engine: Engine;
  config: Config;
  store: KeyStore;
  /** Fastify logger setting; false in tests. */
  logger?: FastifyServerOptions["logger"];
  /** Extra route sets (the dashboard) registered after the API. */
  plugins?: ReadonlyArray<(app: FastifyInstance) => Promise<void> | void>;
  /** Node's default process metrics in /metrics (off in tests: they are global timers). */
  processMetrics?: boolean;
}

export interface TrellisState {
  config: Config;
  engine: Engine;
  store: KeyStore;
  metrics: ServerMetrics;
  gate: ConcurrencyGate;
  limiter: TokenBucketLimiter;
  /** True once shutdown began: new API requests get 503. */
  closing: boolean;
  /** Refuse new requests, let in-flight ones finish, then close the HTTP server. */
  shutdown(): Promise<void>;
}

declare module "fastify" {
  interface FastifyInstance {
    trellis: TrellisState;
  }
  interface FastifyRequest {
    apiKey: { bucket: string; storeId: number | null } | null;
    tokensGenerated: number;
  }
  interface FastifyContextConfig {
    /** Route needs `Authorization: Bearer <api key>`. */
    apiKey?: boolean;
    /** Route takes a JSON body (415 for anything else). */
    jsonBody?: boolean;
  }
}

/** After generations drain at shutdown, how long other requests get before their sockets close. */
const SHUTDOWN_GRACE_MS = 2000;

const ALL_METHODS: HTTPMethods[] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`request deadline of ${ms} ms exceeded; the generation was cancelled`);
    this.name = "DeadlineExceeded";
  }
}

class ClientGone extends Error {
  constructor() {
    super("client closed the connection");
    this.name = "ClientGone";
  }
}

export function sendError(reply: FastifyReply, status: number, message: string, headers: Record<string, string> = {}): FastifyReply {
  const body: ErrorBody = { error: message, code: status };
  return reply.code(status).headers(headers).type("application/json; charset=utf-8").send(body);
}

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const media = header.split(";", 1)[0]!.trim().toLowerCase();
  return media === "application/json";
}

export async function createServer(options: CreateServerOptions): Promise<FastifyInstance> {
  const { engine, config, store } = options;

  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.bodyLimitBytes,
    // Strict JSON: no type coercion, unknown fields are errors (not silently dropped).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
    // Our onRequest hook answers 503 in the {error, code} shape while closing.
    return503OnClosing: false,
    forceCloseConnections: "idle",
    // A client that trickles its headers or body holds a socket and, during shutdown, the
    // process: Node checks these deadlines every connectionsCheckingInterval (30 s unless set).
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.bodyTimeoutMs,
    serverFactory: (handler) => {
      const server = createHttpServer(
        {
          connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
          headersTimeout: Math.min(config.headersTimeoutMs, config.bodyTimeoutMs),
          requestTimeout: config.bodyTimeoutMs,
          keepAliveTimeout: config.keepAliveTimeoutMs,
        },
        handler,
      );
      // An Expect other than 100-continue is answered 417 in the JSON error shape (Node's own
      // answer has no body).
      server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
        const body = JSON.stringify({ error: `Expect: ${String(request.headers.expect)} is not supported`, code: 417 });
        response.writeHead(417, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
        response.end(body);
      });
      return server;
    },
    // Malformed HTTP never reaches routing; answer it in the same JSON error shape.
    clientErrorHandler: (error: Error & { code?: string }, socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const [status, reason, message] =
        error.code === "HPE_HEADER_OVERFLOW"
          ? [431, "Request Header Fields Too Large", "request headers are too large"]
          : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
            ? [408, "Request Timeout", `the request was not received in time (headers within ${config.headersTimeoutMs} ms, the whole request within ${config.bodyTimeoutMs} ms)`]
            : [400, "Bad Request", "malformed HTTP request"];
      const body = JSON.stringify({ error: message, code: status });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    frameworkErrors: (error, _request, reply) => {
      const status = typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
      void sendError(reply, status, error.message || "bad request");
    },
  });

  const gate = new ConcurrencyGate(config.concurrency, config.queueSize);
  const limiter = new TokenBucketLimiter(config.rateLimit);
  const metrics = createMetrics({
    queueDepth: () => gate.waiting + safeQueueDepth(engine),
    inFlight: () => gate.running,
    constraints: () => engine.constraintStats?.(),
    usage: () => store.stats(),
    processMetrics: options.processMetrics ?? false,
  });
  app.addHook("onClose", async () => metrics.stop());

  const envKeys = new Map<string, number>();
  config.apiKeys.forEach((key, index) => envKeys.set(sha256Hex(key), index));

  const state: TrellisState = {
    config,
    engine,
    store,
    metrics,
    gate,
    limiter,
    closing: false,
    async shutdown() {
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
  app.decorate("trellis", state);
  app.decorateRequest("apiKey", null);
  app.decorateRequest("tokensGenerated", 0);

  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: {
        title: "Trellis",
        version: VERSION,
        description: "Structured generation: regex- and grammar-constrained completion, and categorization.",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    },
  });

  app.setErrorHandler((error, request, reply) => {
    const bodySchema = (request.routeOptions.schema?.body ?? {}) as Record<string, unknown>;
    const mapped = mapError(error, { allowedFields: allowedFields(bodySchema), bodyLimitBytes: config.bodyLimitBytes });
    if (mapped.internal) request.log.error({ err: error }, "unhandled error");
    return sendError(reply, mapped.status, mapped.body.error, mapped.headers);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0];
    return sendError(reply, 404, `no such endpoint: ${request.method} ${path}`);
  });

  // Authentication, shutdown refusal, rate limit and content type, before the body is read.
  app.addHook("onRequest", async (request, reply) => {
    const routeConfig = request.routeOptions.config;
    if (!routeConfig?.apiKey) return;
    if (state.closing) {
      return sendError(reply, 503, "server is shutting down", { "retry-after": "5" });
    }
    const secret = bearerToken(request.headers.authorization);
    if (secret === null) {
      return sendError(reply, 401, "missing API key: send the header Authorization: Bearer <key>", {
        "www-authenticate": "Bearer",
      });
    }
    const hash = sha256Hex(secret);
    const envIndex = envKeys.get(hash);
    let identity: { bucket: string; storeId: number | null } | null = null;
    if (envIndex !== undefined) identity = { bucket: `env:${envIndex}`, storeId: null };
    else {
      const key = store.authenticate(secret);
      if (key) identity = { bucket: `key:${key.id}`, storeId: key.id };
    }
    if (!identity) {
      return sendError(reply, 401, "invalid or revoked API key", { "www-authenticate": 'Bearer error="invalid_token"' });
    }
    if (limiter.enabled) {
      const decision = limiter.take(identity.bucket);
      reply.header("x-ratelimit-limit", String(decision.limit));
      reply.header("x-ratelimit-remaining", String(decision.remaining));
      reply.header("x-ratelimit-reset", String(decision.resetSeconds));
      if (!decision.allowed) {
        return sendError(reply, 429, `rate limit of ${decision.limit} requests per minute exceeded for this API key`, {
          "retry-after": String(decision.retryAfterSeconds),
        });
      }
    }
    request.apiKey = identity;
    if (routeConfig.jsonBody && !isJsonContentType(request.headers["content-type"])) {
      return sendError(reply, 415, "Content-Type must be application/json");
    }
  });

  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    metrics.requests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.latency.observe({ route }, reply.elapsedTime / 1000);
    if (request.tokensGenerated > 0) metrics.tokens.inc({ route }, request.tokensGenerated);
    const key = request.apiKey;
    if (key && key.storeId !== null) store.recordUsage(key.storeId, request.tokensGenerated);
  });

  const routesByPath = new Map<string, Set<string>>();
  const track = (url: string, method: string): void => {
    let methods = routesByPath.get(url);
    if (!methods) routesByPath.set(url, (methods = new Set()));
    methods.add(method);
    if (method === "GET") methods.add("HEAD");
  };

  // --- generation endpoints -------------------------------------------------------------

  /**
   * Runs one generation with an AbortSignal that fires on client disconnect or deadline, mapping
   * a deadline to 503. Its constraint (`spec`) is compiled first, outside the gate, so a slow
   * compile waits in the compile pool's per-key queue and never holds a generation slot; then the
   * work runs under the gate.
   */
  async function generate<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    spec: ConstraintSpec | null,
    work: (signal: AbortSignal, client: string | undefined) => Promise<T>,
  ): Promise<T> {
    if (!engine.ready) throw new HttpError(503, "model is still loading; retry shortly", { "retry-after": "5" });
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(new DeadlineExceeded(config.requestTimeoutMs)), config.requestTimeoutMs);
    const onClose = (): void => {
      if (!reply.raw.writableFinished) controller.abort(new ClientGone());
    };
    reply.raw.once("close", onClose);
    const client = request.apiKey?.bucket;
    let release: (() => void) | undefined;
    try {
      if (spec !== null) await engine.prepare(spec, { client, signal: controller.signal });
      release = await gate.acquire(controller.signal);
      return await work(controller.signal, client);
    } catch (error) {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason instanceof DeadlineExceeded) throw new HttpError(503, reason.message, { "retry-after": "1" });
      if (reason instanceof ClientGone) throw new HttpError(499 as number, reason.message);
      throw error;
    } finally {
      clearTimeout(deadline);
      reply.raw.removeListener("close", onClose);
      release?.();
    }
  }

  function checkContext(prompt: string, maxNewTokens: number): void {
    const promptTokens = engine.countTokens(prompt);
    const context = engine.contextLength;
    if (promptTokens >= context) {
      throw new HttpError(400, `prompt is ${promptTokens} tokens, but the model context is ${context} tokens`);
    }
    if (promptTokens + maxNewTokens > context) {
      throw new HttpError(
        400,
        `max_new_tokens must be ≤ ${context - promptTokens}: the prompt takes ${promptTokens} of the model's ${context}-token context`,
      );
    }
  }

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

  const apiConfig = { apiKey: true, jsonBody: true };
  /** Options of an authenticated JSON API route: summary, body schema, 200 schema, error shape. */
  const apiRoute = (summary: string, body: unknown, ok: Record<string, unknown>) => ({
    config: apiConfig,
    schema: {
      summary,
      security: [{ bearer: [] }],
      body,
      response: { 200: ok, "4xx": errorResponse, "5xx": errorResponse },
    },
  });

  const regexSchema = regexBody(config);
  app.post("/v1/completion/regex", apiRoute("Completion constrained to match a regular expression", regexSchema, completionResponse), async (request, reply) => {
    const body = request.body as CompletionBody & { pattern?: string | string[]; patterns?: string | string[] };
    if (body.pattern !== undefined && body.patterns !== undefined) {
      throw new HttpError(400, "give either pattern or patterns (an alias), not both");
    }
    const pattern = body.pattern ?? body.patterns;
    if (pattern === undefined) {
      throw new HttpError(400, "pattern is required (a string or a non-empty array of strings; patterns is accepted as an alias)");
    }
    const maxNewTokens = body.max_new_tokens ?? DEFAULTS.max_new_tokens;
    checkContext(body.prompt, maxNewTokens);
    const result = await generate(request, reply, { kind: "regex", pattern }, (signal, client) =>
      engine.completeRegex({ ...completionOptions(body, signal, client), pattern }),
    );
    return completionReply(request, result);
  });
  track("/v1/completion/regex", "POST");

  const grammarSchema = grammarBody(config);
  for (const url of ["/v1/completion/cfg", "/v1/completion/grammar"]) {
    const summary = url.endsWith("cfg") ? "Completion constrained to a Lark (LALR) grammar" : "Alias of /v1/completion/cfg";
    app.post(url, apiRoute(summary, grammarSchema, completionResponse), async (request, reply) => {
      const body = request.body as CompletionBody & { grammar: string; max_ignored_run?: number | null };
      checkContext(body.prompt, body.max_new_tokens ?? DEFAULTS.max_new_tokens);
      const maxIgnoredRun = body.max_ignored_run ?? DEFAULTS.max_ignored_run;
      const spec: ConstraintSpec = { kind: "grammar", grammar: body.grammar, maxIgnoredRun };
      const result = await generate(request, reply, spec, (signal, client) =>
        engine.completeGrammar({ ...completionOptions(body, signal, client), grammar: body.grammar, maxIgnoredRun }),
      );
      return completionReply(request, result);
    });
    track(url, "POST");
  }

  const categorizeSchema = categorizeBody(config);
  app.post("/v1/categorize", apiRoute("Choose among categories", categorizeSchema, categorizeResponse), async (request, reply) => {
    const body = request.body as {
      prompt: string;
      categories: string[];
      allow_multiple_classes?: boolean | null;
      allow_null_category?: boolean | null;
      include_scores?: boolean | null;
    };
    const promptTokens = engine.countTokens(body.prompt);
    if (promptTokens >= engine.contextLength) {
      throw new HttpError(400, `prompt is ${promptTokens} tokens, but the model context is ${engine.contextLength} tokens`);
    }
    const includeScores = body.include_scores ?? DEFAULTS.include_scores;
    const result = await generate(request, reply, null, (signal) =>
      engine.categorize({
        prompt: body.prompt,
        categories: body.categories,
        allowMultipleClasses: body.allow_multiple_classes ?? DEFAULTS.allow_multiple_classes,
        allowNullCategory: body.allow_null_category ?? DEFAULTS.allow_null_category,
        includeScores,
        signal,
      }),
    );
    return includeScores && result.scores ? { choices: result.choices, scores: result.scores } : { choices: result.choices };
  });
  track("/v1/categorize", "POST");

  // --- operational endpoints (no key) ---------------------------------------------------

  app.get("/healthz", { schema: { summary: "Liveness", response: { 200: { type: "object", properties: { status: { type: "string" } } } } } }, async () => ({ status: "ok" }));
  track("/healthz", "GET");

  app.get("/readyz", { schema: { summary: "Readiness: the model is loaded", response: { 200: { type: "object", properties: { status: { type: "string" } } }, "5xx": errorResponse } } }, async (_request, reply) => {
    if (state.closing) return sendError(reply, 503, "server is shutting down", { "retry-after": "5" });
    if (!engine.ready) return sendError(reply, 503, "model is not loaded yet", { "retry-after": "5" });
    return { status: "ready" };
  });
  track("/readyz", "GET");

  app.get("/metrics", { schema: { summary: "Prometheus metrics", hide: false } }, async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
  track("/metrics", "GET");

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  track("/openapi.json", "GET");

  let docsHtml: string | undefined;
  app.get("/docs", { schema: { hide: true } }, async (_request, reply) => {
    docsHtml ??= renderDocsPage(app.swagger() as unknown as Record<string, unknown>);
    return reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'")
      .send(docsHtml);
  });
  track("/docs", "GET");

  for (const plugin of options.plugins ?? []) {
    await plugin(app);
  }

  // Any other method on a known path is 405 with the allowed ones, not 404.
  for (const [url, methods] of [...routesByPath]) routeMethodNotAllowed(app, url, methods);

  return app;
}

function safeQueueDepth(engine: Engine): number {
  try {
    const depth = engine.queueDepth;
    return Number.isFinite(depth) ? depth : 0;
  } catch {
    return 0;
  }
}

/** Registers 405 answers for a plugin's own paths (plugins register after createServer's sweep). */
export function methodNotAllowedFor(app: FastifyInstance, url: string, allowed: readonly HTTPMethods[]): void {
  const set = new Set<string>(allowed);
  if (set.has("GET")) set.add("HEAD");
  routeMethodNotAllowed(app, url, set);
}

/** A 405 route for every method of ALL_METHODS that `allowed` lacks on `url` (none when it lacks none). */
function routeMethodNotAllowed(app: FastifyInstance, url: string, allowed: ReadonlySet<string>): void {
  const others = ALL_METHODS.filter((m) => !allowed.has(m));
  if (others.length === 0) return;
  const allow = [...allowed].join(", ");
  app.route({
    method: others,
    url,
    config: { methodNotAllowed: true } as Record<string, unknown>,
    schema: { hide: true },
    handler: async (request, reply) =>
      sendError(reply, 405, `method ${request.method} is not allowed on ${url}; allowed: ${allow}`, { allow }),
  });
}
