/**
 * The admin dashboard at /dashboard: static page + small JSON API for keys, their usage, their
 * token quotas, expiries and rate limits.
 *
 * Sign-in compares the admin token's sha256 with the configured/stored hash; the session is a
 * random id in an HttpOnly, SameSite=Strict cookie (kept in memory: a restart signs everyone
 * out). Every state-changing call must also carry the session's CSRF token in a header, which a
 * cross-site form cannot set, and a JSON content type.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { sendError } from "../server/index.js";
import { TokenBucketLimiter } from "../server/index.js";
import { HttpError } from "../server/index.js";
import type { DashboardSession } from "../server/index.js";
import {
  KEY_NAME_MAX_CHARS,
  KeyNameError,
  KeyNotFoundError,
  KeySettingError,
  KeyStoreError,
  MAX_KEY_RATE_LIMIT,
  MAX_TOKEN_QUOTA,
  QuotaValueError,
  digestsEqual,
  sha256Hex,
  type CreatedKey,
  type UsageBucketSize,
} from "../store/index.js";

export const SESSION_COOKIE = "trellis_session";
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/**
 * The page's scripts: plain ES modules served as they are (app.js imports the others), each a
 * route of its own. A new module needs its name here; tsconfig.dashboard.json (type-checking)
 * and biome.json (linting) take every src/dashboard/*.js already.
 */
const DASHBOARD_SCRIPTS = ["app.js", "shared.js", "keys.js", "usage.js", "playground.js", "playground-errors.js", "snippets.js"] as const;

/** Finds this folder's static files also when running from dist/ (tsc copies only .ts output). */
function assetsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(here, "index.html"))) return here;
  let dir = here;
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "src", "dashboard");
    if (existsSync(join(candidate, "index.html"))) return candidate;
    dir = resolve(dir, "..");
  }
  throw new Error(`dashboard assets (index.html) not found near ${here}`);
}

function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    cookies.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return cookies;
}

/**
 * Whether the browser reached the service over TLS: this socket is encrypted, or a
 * TLS-terminating proxy says so (X-Forwarded-Proto, or RFC 7239 Forwarded, first hop). The
 * headers are believed without trustProxy because all they decide is the cookie's Secure flag,
 * which only keeps a browser from sending the cookie over plain HTTP: a client that claims https
 * falsely only withholds its own session from itself.
 */
export function requestIsHttps(request: FastifyRequest): boolean {
  if (request.protocol === "https" || (request.raw.socket as { encrypted?: boolean } | undefined)?.encrypted === true) return true;
  const forwardedProto = request.headers["x-forwarded-proto"];
  const proto = (Array.isArray(forwardedProto) ? forwardedProto[0] : forwardedProto)?.split(",")[0]?.trim().toLowerCase();
  if (proto === "https") return true;
  const forwarded = request.headers.forwarded;
  const firstHop = typeof forwarded === "string" ? forwarded.split(",")[0]! : "";
  return /(?:^|;)\s*proto\s*=\s*"?https"?\s*(?:;|$)/i.test(firstHop);
}

function sessionCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = requestIsHttps(request) ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/**
 * The database could not take a key change (another process holds its lock past the server's
 * short wait, the disk is full): the admin may retry, so 503 with the cause rather than a 500.
 */
function storeUnavailable(error: KeyStoreError): HttpError {
  const retryAfter = error.failure === "locked" ? "1" : "30";
  return new HttpError(503, `the key store cannot be written right now: ${error.reason}`, { "retry-after": retryAfter });
}

/** A key's token quota in a request body: a whole number of tokens, or null for unlimited. */
const QUOTA_SCHEMA = { type: ["integer", "null"], minimum: 0, maximum: MAX_TOKEN_QUOTA } as const;
/** An expiry: "YYYY-MM-DD" (00:00 UTC) or an ISO date and time with its offset (the store checks which), or null: never. */
const EXPIRY_SCHEMA = { type: ["string", "null"], minLength: 1, maxLength: 64 } as const;
/** Requests per minute, replacing the service's limit for the key; null: the service's. */
const RATE_LIMIT_SCHEMA = { type: ["integer", "null"], minimum: 1, maximum: MAX_KEY_RATE_LIMIT } as const;
const ID_PARAMS = { type: "object", properties: { id: { type: "string", pattern: "^[0-9]{1,15}$" } } } as const;

/** A read the key store cannot answer now (Postgres restarting): 503, to retry. */
async function storeRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof KeyStoreError)
      throw new HttpError(503, `the key store cannot be read right now: ${error.reason}`, { "retry-after": "5" });
    throw error;
  }
}

/** The store's refusals of a key change, as the admin should see them. */
function keyChangeError(error: unknown): unknown {
  if (error instanceof KeyNameError || error instanceof QuotaValueError || error instanceof KeySettingError) {
    return new HttpError(400, error.message);
  }
  if (error instanceof KeyNotFoundError) return new HttpError(404, error.message);
  if (error instanceof KeyStoreError) return storeUnavailable(error);
  return error;
}

export interface DashboardOptions {
  /** sha256 hex of the admin token, or a function returning it (read at each sign-in). */
  adminTokenHash: string | (() => string);
}

export function dashboardPlugin(options: DashboardOptions): (app: FastifyInstance) => void {
  const { adminTokenHash: configuredHash } = options;
  const adminTokenHash = typeof configuredHash === "function" ? configuredHash : () => configuredHash;
  // Counts wrong tokens only, per client IP (10 a minute, in bursts of 10). It used to be taken
  // before the token was checked, so anyone sharing the admin's IP (every client, behind a
  // reverse proxy) could keep the admin locked out with ten wrong guesses a minute. The right
  // token always signs in, even from a throttled IP: that tells a guesser nothing useful, since
  // what makes guessing infeasible is the token's length (at least 24 characters, see
  // ensureAdminToken; generated ones carry 192 random bits), not this limiter, which only
  // slows down a flood of wrong tokens.
  const failedSignIns = new TokenBucketLimiter(10);
  const dir = assetsDir();
  const assets = new Map<string, { type: string; body: Buffer }>([
    ["index.html", { type: "text/html; charset=utf-8", body: readFileSync(join(dir, "index.html")) }],
    ...DASHBOARD_SCRIPTS.map((name) => [name, { type: "text/javascript; charset=utf-8", body: readFileSync(join(dir, name)) }] as const),
    ["style.css", { type: "text/css; charset=utf-8", body: readFileSync(join(dir, "style.css")) }],
  ]);

  const sendAsset = (name: string) => async (_request: FastifyRequest, reply: FastifyReply) => {
    const asset = assets.get(name)!;
    return reply
      .type(asset.type)
      .header("cache-control", "no-store")
      .header("content-security-policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
      .header("x-frame-options", "DENY")
      .header("x-content-type-options", "nosniff")
      .send(asset.body);
  };

  return (app: FastifyInstance) => {
    // The server's key store (its changes told to other replicas) and sessions (in memory, or in
    // Redis when replicas share them): see server/shared.
    const { store, sessions } = app.trellis;

    const sessionOf = async (request: FastifyRequest): Promise<{ id: string; session: DashboardSession } | null> => {
      const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
      if (!id) return null;
      const key = sha256Hex(id);
      const session = await sessions.get(key);
      if (!session) return null;
      if (session.expiresMs < Date.now()) {
        await sessions.delete(key);
        return null;
      }
      return { id: key, session };
    };

    const requireSession = async (request: FastifyRequest, mutating: boolean): Promise<{ id: string; session: DashboardSession }> => {
      const found = await sessionOf(request);
      if (!found) throw new HttpError(401, "not signed in");
      if (mutating) {
        const header = request.headers["x-csrf-token"];
        if (typeof header !== "string" || header !== found.session.csrf) {
          throw new HttpError(403, "missing or wrong X-CSRF-Token header");
        }
      }
      return found;
    };

    const hidden = { schema: { hide: true } };
    app.get("/dashboard", hidden, sendAsset("index.html"));
    app.get("/dashboard/", hidden, sendAsset("index.html"));
    // The playground is a view of the same page (playground.js).
    app.get("/dashboard/playground", hidden, sendAsset("index.html"));
    for (const name of DASHBOARD_SCRIPTS) app.get(`/dashboard/${name}`, hidden, sendAsset(name));
    app.get("/dashboard/style.css", hidden, sendAsset("style.css"));

    app.get("/dashboard/api/session", hidden, async (request) => {
      const found = await sessionOf(request);
      return found ? { signed_in: true, csrf: found.session.csrf } : { signed_in: false };
    });

    app.post(
      "/dashboard/api/login",
      {
        ...hidden,
        schema: {
          hide: true,
          body: {
            type: "object",
            additionalProperties: false,
            required: ["token"],
            properties: { token: { type: "string", minLength: 1, maxLength: 500 } },
          },
        },
      },
      async (request, reply) => {
        const { token } = request.body as { token: string };
        if (!digestsEqual(sha256Hex(token), adminTokenHash())) {
          const decision = failedSignIns.take(request.ip);
          if (!decision.allowed) {
            return sendError(reply, 429, "too many wrong admin tokens from this address; wait before trying again", {
              "retry-after": String(decision.retryAfterSeconds),
            });
          }
          throw new HttpError(401, "wrong admin token");
        }
        const id = randomBytes(32).toString("base64url");
        const csrf = randomBytes(24).toString("base64url");
        await sessions.set(sha256Hex(id), { csrf, expiresMs: Date.now() + SESSION_TTL_MS });
        reply.header("set-cookie", sessionCookie(request, id, SESSION_TTL_MS / 1000));
        return { signed_in: true, csrf };
      },
    );

    app.post("/dashboard/api/logout", hidden, async (request, reply) => {
      const found = await requireSession(request, true);
      await sessions.delete(found.id);
      reply.header("set-cookie", sessionCookie(request, "", 0));
      return { signed_in: false };
    });

    app.get("/dashboard/api/keys", hidden, async (request) => {
      await requireSession(request, false);
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

    // Usage over time for the charts: 48 hourly or 90 daily buckets (UTC), oldest first, every
    // bucket present; of one key (`key`) or all; requests and tokens with the refusals beside.
    app.get(
      "/dashboard/api/usage",
      {
        schema: {
          hide: true,
          querystring: {
            type: "object",
            additionalProperties: false,
            properties: { bucket: { type: "string", enum: ["hour", "day"] }, key: { type: "string", pattern: "^[0-9]{1,15}$" } },
          },
        },
      },
      async (request) => {
        await requireSession(request, false);
        const query = request.query as { bucket?: UsageBucketSize; key?: string };
        const bucket = query.bucket ?? "hour";
        const keyId = query.key === undefined ? undefined : Number(query.key);
        const points = await storeRead(() => store.usageHistory(bucket, { keyId }));
        return {
          bucket,
          key: keyId ?? null,
          points: points.map((p) => ({
            start: p.start,
            requests: p.requests,
            tokens: p.tokens,
            // Refused by the rate limit (429); other 4xx (402 quota, bad requests); 5xx.
            rate_limited: p.rateLimited,
            client_errors: p.clientErrors,
            server_errors: p.serverErrors,
          })),
        };
      },
    );

    app.post(
      "/dashboard/api/keys",
      {
        schema: {
          hide: true,
          // maxLength counts code points, as the store does; the store decides the rest.
          body: {
            type: "object",
            additionalProperties: false,
            required: ["name"],
            properties: {
              name: { type: "string", minLength: 1, maxLength: KEY_NAME_MAX_CHARS, pattern: "\\S" },
              quota: QUOTA_SCHEMA,
              expires_at: EXPIRY_SCHEMA,
              rate_limit: RATE_LIMIT_SCHEMA,
            },
          },
        },
      },
      async (request) => {
        await requireSession(request, true);
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
      },
    );

    /**
     * A key's setting changed after creation (signed in, CSRF header): `field` in the body, written
     * by `apply`, which answers the value stored (a store error becomes its 4xx).
     */
    const keySetting = <T>(path: string, field: string, schema: unknown, apply: (id: number, value: T) => unknown): void => {
      app.post(
        `/dashboard/api/keys/:id/${path}`,
        {
          schema: {
            hide: true,
            params: ID_PARAMS,
            body: { type: "object", additionalProperties: false, required: [field], properties: { [field]: schema } },
          },
        },
        async (request) => {
          await requireSession(request, true);
          const id = Number((request.params as { id: string }).id);
          const value = (request.body as Record<string, T>)[field]!;
          try {
            return { id, [field]: await apply(id, value) };
          } catch (error) {
            throw keyChangeError(error);
          }
        },
      );
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

    app.post(
      "/dashboard/api/keys/:id/revoke",
      {
        schema: { hide: true, params: { type: "object", properties: { id: { type: "string", pattern: "^[0-9]{1,15}$" } } } },
      },
      async (request) => {
        await requireSession(request, true);
        const id = Number((request.params as { id: string }).id);
        try {
          return { id, revoked: await store.revokeKey(id) };
        } catch (error) {
          throw keyChangeError(error);
        }
      },
    );
  };
}
