/**
 * API keys: GET /dashboard/api/keys (with their usage, quotas, expiries and rate limits), POST to
 * create one (its secret shown once), POST …/:id/revoke. Signed in; changes need the CSRF header.
 */
import type { FastifyInstance } from "fastify";
import { KEY_NAME_MAX_CHARS, type CreatedKey } from "../../store/index.js";
import { EXPIRY_SCHEMA, ID_PARAMS, QUOTA_SCHEMA, RATE_LIMIT_SCHEMA } from "./key-settings.js";
import { requireSession } from "./session.js";
import { keyChangeError, storeRead } from "./store-errors.js";

const CREATE_BODY = {
  type: "object",
  additionalProperties: false,
  required: ["name"],
  // maxLength counts code points, as the store does; the store decides the rest.
  properties: {
    name: { type: "string", minLength: 1, maxLength: KEY_NAME_MAX_CHARS, pattern: "\\S" },
    quota: QUOTA_SCHEMA,
    expires_at: EXPIRY_SCHEMA,
    rate_limit: RATE_LIMIT_SCHEMA,
  },
} as const;

export async function keyRoutes(app: FastifyInstance): Promise<void> {
  const { store } = app.trellis;

  app.get("/dashboard/api/keys", { schema: { hide: true } }, async function listKeys(request) {
    await requireSession(app, request, false);
    return {
      keys: (await storeRead(() => store.listKeys())).map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        created_at: k.createdAt,
        revoked_at: k.revokedAt,
        requests: k.requests,
        tokens: k.tokens,
        last_used_at: k.lastUsedAt,
        // tokens is what counts against the quota; null: unlimited.
        quota: k.quota,
        quota_remaining: k.quota === null ? null : Math.max(0, k.quota - k.tokens),
        // null: never expires; an instant already past: the key is refused (401).
        expires_at: k.expiresAt,
        expired: k.expiresAt !== null && Date.parse(k.expiresAt) <= Date.now(),
        // requests per minute; null: the service's TRELLIS_RATE_LIMIT.
        rate_limit: k.rateLimit,
      })),
    };
  });

  app.post("/dashboard/api/keys", { schema: { hide: true, body: CREATE_BODY } }, async function createKey(request) {
    await requireSession(app, request, true);
    const body = request.body as { name: string; quota?: number | null; expires_at?: string | null; rate_limit?: number | null };
    let created: CreatedKey;
    try {
      created = await store.createKey(body.name, {
        quota: body.quota ?? null,
        expiresAt: body.expires_at ?? null,
        rateLimit: body.rate_limit ?? null,
      });
    } catch (error) {
      throw keyChangeError(error);
    }
    return {
      id: created.id,
      name: created.name,
      key: created.key,
      prefix: created.prefix,
      created_at: created.createdAt,
      quota: created.quota,
      expires_at: created.expiresAt,
      rate_limit: created.rateLimit,
    };
  });

  app.post("/dashboard/api/keys/:id/revoke", { schema: { hide: true, params: ID_PARAMS } }, async function revokeKey(request) {
    await requireSession(app, request, true);
    const id = Number((request.params as { id: string }).id);
    try {
      return { id, revoked: await store.revokeKey(id) };
    } catch (error) {
      throw keyChangeError(error);
    }
  });
}
