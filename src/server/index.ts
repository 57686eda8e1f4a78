/**
 * server/ — the HTTP shell over an `Engine` (see app.ts for its parts): the Thiggle API, the
 * OpenAI-compatible API and operational endpoints as Fastify plugins, validation, the API key check, rate limits,
 * admission, deadlines, one error shape and metrics; what replicas share through Redis (shared/).
 * No generation logic lives here.
 *
 *   const app = await createServer({ engine, config, store, plugins });
 *   await app.listen({ host, port }); … await app.trellis.shutdown();
 */
export { createServer, VERSION, type CreateServerOptions } from "./app.js";
export { sendError, type TrellisState } from "./state.js";
export { HttpError, mapError, describeValidationErrors, type ErrorBody, type MappedError } from "./errors.js";
export { ConcurrencyGate, TokenBucketLimiter, type RateDecision, type Release } from "./limits.js";
export { DEFAULTS, allowedFields } from "./schemas.js";
export { createMetrics, type MetricsSources, type ServerMetrics } from "./metrics.js";
export type { DashboardSession, SessionStore } from "./shared/index.js";
