/**
 * A key's settings changed after creation: POST /dashboard/api/keys/:id/expiry, …/rate-limit and
 * …/quota, each with its one field in the body; the answer is the value stored.
 */
import type { FastifyInstance } from "fastify";
import { MAX_KEY_RATE_LIMIT, MAX_TOKEN_QUOTA } from "../../store/index.js";
import { requireSession } from "./session.js";
import { keyChangeError } from "./store-errors.js";

/** A key's token quota in a request body: a whole number of tokens, or null for unlimited. */
export const QUOTA_SCHEMA = { type: ["integer", "null"], minimum: 0, maximum: MAX_TOKEN_QUOTA } as const;
/** An expiry: "YYYY-MM-DD" (00:00 UTC) or an ISO date and time with its offset (the store checks which), or null: never. */
export const EXPIRY_SCHEMA = { type: ["string", "null"], minLength: 1, maxLength: 64 } as const;
/** Requests per minute, replacing the service's limit for the key; null: the service's. */
export const RATE_LIMIT_SCHEMA = { type: ["integer", "null"], minimum: 1, maximum: MAX_KEY_RATE_LIMIT } as const;
export const ID_PARAMS = { type: "object", properties: { id: { type: "string", pattern: "^[0-9]{1,15}$" } } } as const;

export async function keySettingRoutes(app: FastifyInstance): Promise<void> {
  const { store } = app.trellis;
  /** One setting: `field` in the body, written by `apply`, which answers the value stored (a store error becomes its 4xx). */
  const keySetting = <T>(path: string, field: string, schema: unknown, apply: (id: number, value: T) => unknown): void => {
    const body = { type: "object", additionalProperties: false, required: [field], properties: { [field]: schema } };
    app.post(`/dashboard/api/keys/:id/${path}`, { schema: { hide: true, params: ID_PARAMS, body } }, async function setKeySetting(request) {
      await requireSession(app, request, true);
      const id = Number((request.params as { id: string }).id);
      const value = (request.body as Record<string, T>)[field]!;
      try {
        return { id, [field]: await apply(id, value) };
      } catch (error) {
        throw keyChangeError(error);
      }
    });
  };
  keySetting<string | null>("expiry", "expires_at", EXPIRY_SCHEMA, (id, value) => store.setExpiry(id, value));
  keySetting<number | null>("rate-limit", "rate_limit", RATE_LIMIT_SCHEMA, async (id, value) => {
    await store.setRateLimit(id, value);
    return value;
  });
  keySetting<number | null>("quota", "quota", QUOTA_SCHEMA, async (id, value) => {
    await store.setQuota(id, value);
    return value;
  });
}
