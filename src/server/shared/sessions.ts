/**
 * Where dashboard sessions live. In memory (MemorySessionStore) a session works only on the
 * replica that signed it in and a restart signs everyone out; in Redis (RedisSessionStore) every
 * replica behind the load balancer knows it, and it outlives a restart.
 *
 * Sessions are keyed by the sha256 hex of the session id (the cookie's value is never stored) and
 * hold the session's CSRF token and its expiry. Redis expires a session itself (PX, the time it
 * has left). While Redis is unavailable the Redis store keeps new sessions in memory and reads
 * from there too (each replica for itself, as before), and a sign-out it could not write to Redis
 * is remembered so the session stays signed out here and is deleted there once Redis answers.
 * No method throws for Redis's sake.
 */
import type { RedisConnection, SharedLog } from "./redis.js";

export interface DashboardSession {
  csrf: string;
  expiresMs: number;
}

export interface SessionStore {
  /** The session, or null when there is none or it has expired. */
  get(idHash: string): Promise<DashboardSession | null>;
  set(idHash: string, session: DashboardSession): Promise<void>;
  delete(idHash: string): Promise<void>;
  /** Whether every replica sees the same sessions. */
  readonly shared: boolean;
}

export const DEFAULT_MAX_SESSIONS = 10_000;

/**
 * Sessions in a Map, expired ones dropped when read. At most `maxSessions`: beyond that the
 * oldest sign-in goes, so a flood of sign-ins cannot grow memory without bound.
 */
export class MemorySessionStore implements SessionStore {
  readonly shared = false;
  /** In order of sign-in (set() moves a session to the end), so the first is the oldest. */
  private readonly sessions = new Map<string, DashboardSession>();

  constructor(readonly maxSessions: number = DEFAULT_MAX_SESSIONS) {}

  get size(): number {
    return this.sessions.size;
  }

  async get(idHash: string): Promise<DashboardSession | null> {
    const session = this.sessions.get(idHash);
    if (!session) return null;
    if (session.expiresMs < Date.now()) {
      this.sessions.delete(idHash);
      return null;
    }
    return session;
  }

  async set(idHash: string, session: DashboardSession): Promise<void> {
    this.sessions.delete(idHash);
    this.sessions.set(idHash, session);
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done) break;
      this.sessions.delete(oldest.value);
    }
  }

  async delete(idHash: string): Promise<void> {
    this.sessions.delete(idHash);
  }
}

export interface RedisSessionStoreOptions {
  /** Sessions are at `<prefix>session:<idHash>`. Default "trellis:". */
  keyPrefix?: string;
  /** The bound of the in-memory fallback (and of the sign-outs waiting for Redis). Default 10,000. */
  maxLocalSessions?: number;
  /** Default: the connection's log. */
  log?: SharedLog;
}

export interface RedisSessionStoreStats {
  /** Reads and writes served by the in-memory fallback since start. */
  fallbackOperations: number;
  /** Commands Redis failed (an error or a timeout) since start. */
  redisErrors: number;
  usingFallback: boolean;
}

/** A session as stored in Redis, or null when the value is not one. */
function parseSession(json: string): DashboardSession | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const { csrf, expiresMs } = value as { csrf?: unknown; expiresMs?: unknown };
  if (typeof csrf !== "string" || typeof expiresMs !== "number" || !Number.isFinite(expiresMs)) return null;
  return { csrf, expiresMs };
}

export class RedisSessionStore implements SessionStore {
  readonly shared = true;
  private readonly redis: RedisConnection;
  private readonly keyPrefix: string;
  private readonly log: SharedLog;
  private readonly local: MemorySessionStore;
  /** Sign-outs Redis has not heard of yet: these sessions read as absent here until it has. */
  private readonly pendingDeletes = new Set<string>();
  private readonly maxPendingDeletes: number;
  private usingLocal = false;
  private sendingDeletes = false;
  private fallbackOperations = 0;
  private redisErrors = 0;

  constructor(redis: RedisConnection, options: RedisSessionStoreOptions = {}) {
    this.redis = redis;
    this.keyPrefix = `${options.keyPrefix ?? "trellis:"}session:`;
    this.log = options.log ?? redis.log;
    this.maxPendingDeletes = options.maxLocalSessions ?? DEFAULT_MAX_SESSIONS;
    this.local = new MemorySessionStore(this.maxPendingDeletes);
  }

  /** The last operation could not use Redis. */
  get usingFallback(): boolean {
    return this.usingLocal;
  }

  stats(): RedisSessionStoreStats {
    return { fallbackOperations: this.fallbackOperations, redisErrors: this.redisErrors, usingFallback: this.usingLocal };
  }

  async get(idHash: string): Promise<DashboardSession | null> {
    if (this.pendingDeletes.has(idHash)) return null;
    if (this.redis.available) {
      try {
        const json = await this.redis.client.get(this.keyPrefix + idHash);
        this.redisAnswered();
        const session = json === null ? null : parseSession(json);
        if (session !== null && session.expiresMs >= Date.now()) return session;
        // Not in Redis: perhaps signed in here while Redis was away.
        return this.local.get(idHash);
      } catch (error) {
        this.redisFailed(error);
      }
    }
    return this.fallBack(this.local.get(idHash));
  }

  async set(idHash: string, session: DashboardSession): Promise<void> {
    const ttlMs = Math.floor(session.expiresMs - Date.now());
    if (!(ttlMs >= 1)) return this.delete(idHash);
    this.pendingDeletes.delete(idHash);
    if (this.redis.available) {
      try {
        await this.redis.client.set(
          this.keyPrefix + idHash,
          JSON.stringify({ csrf: session.csrf, expiresMs: session.expiresMs }),
          "PX",
          ttlMs,
        );
        this.redisAnswered();
        await this.local.delete(idHash);
        return;
      } catch (error) {
        this.redisFailed(error);
      }
    }
    return this.fallBack(this.local.set(idHash, session));
  }

  async delete(idHash: string): Promise<void> {
    await this.local.delete(idHash);
    if (this.redis.available) {
      try {
        await this.redis.client.del(this.keyPrefix + idHash);
        this.pendingDeletes.delete(idHash);
        this.redisAnswered();
        return;
      } catch (error) {
        this.redisFailed(error);
      }
    }
    if (this.pendingDeletes.size >= this.maxPendingDeletes) {
      const oldest = this.pendingDeletes.values().next();
      if (!oldest.done) this.pendingDeletes.delete(oldest.value);
    }
    this.pendingDeletes.add(idHash);
    return this.fallBack(Promise.resolve());
  }

  private fallBack<T>(result: Promise<T>): Promise<T> {
    this.fallbackOperations++;
    if (!this.usingLocal) {
      this.usingLocal = true;
      this.log("session-store.fallback", { target: this.redis.target, reason: "redis unavailable" });
    }
    return result;
  }

  private redisAnswered(): void {
    if (this.usingLocal) {
      this.usingLocal = false;
      this.log("session-store.shared", { target: this.redis.target, fallbackOperations: this.fallbackOperations });
    }
    if (this.pendingDeletes.size > 0) this.sendPendingDeletes();
  }

  private redisFailed(error: unknown): void {
    this.redisErrors++;
    if (!this.usingLocal) {
      this.usingLocal = true;
      this.log("session-store.fallback", { target: this.redis.target, reason: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Sign-outs made while Redis was away, sent now that it answers; kept for next time if this fails. */
  private sendPendingDeletes(): void {
    if (this.sendingDeletes) return;
    this.sendingDeletes = true;
    const idHashes = [...this.pendingDeletes];
    this.redis.client.del(...idHashes.map((idHash) => this.keyPrefix + idHash)).then(
      () => {
        this.sendingDeletes = false;
        for (const idHash of idHashes) this.pendingDeletes.delete(idHash);
      },
      () => {
        this.sendingDeletes = false;
      },
    );
  }
}
