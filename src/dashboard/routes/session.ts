/**
 * Sessions: the admin token's sha256 compared with the configured/stored hash at sign-in; the
 * session a random id in an HttpOnly, SameSite=Strict cookie (in memory, or in Redis when
 * replicas share them: see server/shared); every state-changing call also carries the session's
 * CSRF token in a header, which a cross-site form cannot set.
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError, sendError, TokenBucketLimiter, type DashboardSession } from "../../server/index.js";
import { digestsEqual, sha256Hex } from "../../store/index.js";

export const SESSION_COOKIE = "trellis_session";
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

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

/** The request's live session (by its cookie), or null; an expired one is deleted. */
async function sessionOf(app: FastifyInstance, request: FastifyRequest): Promise<{ id: string; session: DashboardSession } | null> {
  const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
  if (!id) return null;
  const key = sha256Hex(id);
  const { sessions } = app.trellis;
  const session = await sessions.get(key);
  if (!session) return null;
  if (session.expiresMs < Date.now()) {
    await sessions.delete(key);
    return null;
  }
  return { id: key, session };
}

/** The session a dashboard API call needs (401 without one); `mutating` calls also need its CSRF header (403). */
export async function requireSession(
  app: FastifyInstance,
  request: FastifyRequest,
  mutating: boolean,
): Promise<{ id: string; session: DashboardSession }> {
  const found = await sessionOf(app, request);
  if (!found) throw new HttpError(401, "not signed in");
  if (mutating) {
    const header = request.headers["x-csrf-token"];
    if (typeof header !== "string" || header !== found.session.csrf) throw new HttpError(403, "missing or wrong X-CSRF-Token header");
  }
  return found;
}

const LOGIN_BODY = {
  type: "object",
  additionalProperties: false,
  required: ["token"],
  properties: { token: { type: "string", minLength: 1, maxLength: 500 } },
} as const;

/** GET /dashboard/api/session, POST …/login and …/logout. `adminTokenHash` is read at each sign-in. */
export function sessionRoutes(adminTokenHash: () => string): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    // Counts wrong tokens only, per client IP (10 a minute, in bursts of 10). It used to be taken
    // before the token was checked, so anyone sharing the admin's IP (every client, behind a
    // reverse proxy) could keep the admin locked out with ten wrong guesses a minute. The right
    // token always signs in, even from a throttled IP: that tells a guesser nothing useful, since
    // what makes guessing infeasible is the token's length (at least 24 characters, see
    // ensureAdminToken; generated ones carry 192 random bits), not this limiter, which only
    // slows down a flood of wrong tokens.
    const failedSignIns = new TokenBucketLimiter(10);
    const { sessions } = app.trellis;

    app.get("/dashboard/api/session", { schema: { hide: true } }, async function session(request) {
      const found = await sessionOf(app, request);
      return found ? { signed_in: true, csrf: found.session.csrf } : { signed_in: false };
    });

    app.post("/dashboard/api/login", { schema: { hide: true, body: LOGIN_BODY } }, async function login(request, reply) {
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
    });

    app.post("/dashboard/api/logout", { schema: { hide: true } }, async function logout(request, reply) {
      const found = await requireSession(app, request, true);
      await sessions.delete(found.id);
      reply.header("set-cookie", sessionCookie(request, "", 0));
      return { signed_in: false };
    });
  };
}
