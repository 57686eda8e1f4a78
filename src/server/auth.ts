/**
 * The API's front check, before a body is read: refusal while shutting down, the bearer key
 * (fixed keys from TRELLIS_API_KEYS, or the store's), the key's token quota (an exhausted key
 * gets 402; a key with a quota gets X-Quota-Remaining), its expiry (401), the key's rate limit (its
 * own when it has one, else TRELLIS_RATE_LIMIT), and a JSON content
 * type for requests with a body. Registered as an onRequest hook in the API's own context, so
 * routes outside it (health, metrics, docs, dashboard) never see it.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { KeyExpiredError, KeyStoreError, QuotaExceededError, sha256Hex, type KeyAdmission, type QuotaStatus } from "../store/index.js";
import { QUOTA_HEADER, RequestUsage } from "./quota.js";
import { sendError as sendThiggleError, type TrellisState } from "./state.js";

/** Most bytes of an oversized body read and dropped so that its 413 reaches the client. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** Reads a request body to its end, dropping it; false when the stream fails or closes early. */
function drained(stream: NodeJS.ReadableStream & { complete?: boolean }): Promise<boolean> {
  return new Promise((resolve) => {
    stream.on("data", () => {});
    stream.once("end", () => resolve(true));
    stream.once("error", () => resolve(false));
    stream.once("close", () => resolve(stream.complete === true));
    stream.resume();
  });
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

/** How an API writes an error (each API has its own shape). */
export type ErrorSender = (reply: FastifyReply, status: number, message: string, headers?: Record<string, string>) => FastifyReply;

export function apiKeyCheck(
  state: TrellisState,
  sendError: ErrorSender = sendThiggleError,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined> {
  const { config, store, limiter } = state;
  const envKeys = new Map<string, number>();
  config.apiKeys.forEach((key, index) => envKeys.set(sha256Hex(key), index));
  return async (request, reply) => {
    if (state.closing) return sendError(reply, 503, "server is shutting down", { "retry-after": "5" });
    const secret = bearerToken(request.headers.authorization);
    if (secret === null) {
      return sendError(reply, 401, "missing API key: send the header Authorization: Bearer <key>", { "www-authenticate": "Bearer" });
    }
    const envIndex = envKeys.get(sha256Hex(secret));
    let identity: { bucket: string; storeId: number | null } | null = null;
    let quota: QuotaStatus | null = null;
    let rateLimit: number | null = null;
    if (envIndex !== undefined) identity = { bucket: `env:${envIndex}`, storeId: null };
    else {
      let key: KeyAdmission | null;
      try {
        key = await store.authenticateRequest(secret);
      } catch (error) {
        if (error instanceof KeyExpiredError) {
          return sendError(reply, 401, error.message, { "www-authenticate": 'Bearer error="invalid_token", error_description="expired"' });
        }
        // The shared database is unreachable and this key was not seen lately: retry soon.
        if (error instanceof KeyStoreError) {
          request.log.warn({ err: error.message }, "the key store cannot check an API key");
          return sendError(reply, 503, "the API key cannot be checked right now (the key store is unavailable); retry shortly", {
            "retry-after": "2",
          });
        }
        throw error;
      }
      if (key) {
        identity = { bucket: `key:${key.id}`, storeId: key.id };
        quota = key.quota;
        rateLimit = key.rateLimit;
      }
    }
    if (!identity) return sendError(reply, 401, "invalid or revoked API key", { "www-authenticate": 'Bearer error="invalid_token"' });
    if (quota) {
      // Every answer to a key with a quota says what is left; onSend refreshes it (server/quota.ts).
      reply.header(QUOTA_HEADER, String(quota.remaining));
      if (quota.remaining === 0) {
        store.recordOutcome(identity.storeId!, "client-error");
        return sendError(reply, 402, new QuotaExceededError(identity.storeId!, null, quota).message);
      }
    }
    // A key's own limit replaces the service's, also where the service sets none.
    if (rateLimit !== null || limiter.enabled) {
      const decision = await limiter.take(identity.bucket, rateLimit ?? limiter.perMinute);
      reply.header("x-ratelimit-limit", String(decision.limit));
      reply.header("x-ratelimit-remaining", String(decision.remaining));
      reply.header("x-ratelimit-reset", String(decision.resetSeconds));
      if (!decision.allowed) {
        if (identity.storeId !== null) store.recordOutcome(identity.storeId, "rate-limited");
        return sendError(reply, 429, `rate limit of ${decision.limit} requests per minute exceeded for this API key`, {
          "retry-after": String(decision.retryAfterSeconds),
        });
      }
    }
    request.apiKey = identity;
    if (identity.storeId !== null) request.keyUsage = new RequestUsage(store, request, reply, identity.storeId, quota !== null);
    const declared = Number(request.headers["content-length"]);
    // A DELETE (OpenAI's SDKs send one without a body or a content type) is checked only when it carries a body.
    const hasBody =
      request.method === "DELETE"
        ? declared > 0 || request.headers["transfer-encoding"] !== undefined
        : request.method !== "GET" && request.method !== "HEAD";
    if (hasBody && declared > config.bodyLimitBytes) {
      // Read and drop the body first (up to DRAIN_LIMIT_BYTES, within the body deadline), so a
      // client still sending it gets its 413 rather than a broken pipe; nginx drains for the same
      // reason. Past that, the answer goes out and the connection closes.
      const message = `request body is larger than the limit of ${config.bodyLimitBytes} bytes`;
      if (declared <= DRAIN_LIMIT_BYTES && (await drained(request.raw))) return sendError(reply, 413, message);
      return sendError(reply, 413, message, { connection: "close" });
    }
    if (hasBody && !isJsonContentType(request.headers["content-type"]))
      return sendError(reply, 415, "Content-Type must be application/json");
    return undefined;
  };
}
