/**
 * What every part of the server shares: the state decorated on the Fastify instance
 * (`app.trellis`), the per-request fields, and the one way errors are written.
 */
import type { FastifyReply } from "fastify";
import type { Config } from "../config.js";
import type { Engine } from "../generate/index.js";
import type { KeyBackend } from "../store/index.js";
import type { ErrorBody } from "./errors.js";
import type { ConcurrencyGate } from "./limits.js";
import type { RequestRateLimiter, SessionStore } from "./shared/index.js";
import type { ServerMetrics } from "./metrics.js";
import type { RequestUsage } from "./quota.js";

export interface TrellisState {
  config: Config;
  engine: Engine;
  store: KeyBackend;
  metrics: ServerMetrics;
  gate: ConcurrencyGate;
  /** Per-key rate limits: local, or one bucket per key across replicas (Redis). */
  limiter: RequestRateLimiter;
  /** Dashboard sessions: in memory, or in Redis shared by replicas. */
  sessions: SessionStore;
  /**
   * True once shutdown began: /readyz answers 503 so load balancers stop sending here, while API
   * requests are still served for TRELLIS_SHUTDOWN_DELAY_MS (requests already on their way).
   */
  draining: boolean;
  /** True once that delay is over: new API requests get 503. */
  closing: boolean;
  /** Refuse new requests, let in-flight ones finish, then close the HTTP server. */
  shutdown(): Promise<void>;
}

declare module "fastify" {
  interface FastifyInstance {
    trellis: TrellisState;
  }
  interface FastifyRequest {
    /** Set by the API key check; its bucket is also the client of the compile pool. */
    apiKey: { bucket: string; storeId: number | null } | null;
    /** A store key's usage and quota in this request (server/quota.ts); null for other requests. */
    keyUsage: RequestUsage | null;
    tokensGenerated: number;
  }
  interface FastifyContextConfig {
    /** The 405 routes the method sweep adds (not recorded as routes of their own). */
    methodNotAllowed?: boolean;
  }
}

export function sendError(reply: FastifyReply, status: number, message: string, headers: Record<string, string> = {}): FastifyReply {
  const body: ErrorBody = { error: message, code: status };
  return reply.code(status).headers(headers).type("application/json; charset=utf-8").send(body);
}
