/**
 * What one replica shares with the others, composed from the configuration: with
 * TRELLIS_REDIS_URL, the shared rate limiter, the key-change broadcast and Redis-held dashboard
 * sessions; without it, the local limiter and in-memory sessions (one replica, as before).
 *
 * The key store is wired to the broadcast both ways: a change made through this replica (the
 * dashboard) is published after the store took it, and a change heard from any replica makes the
 * store forget that key's cached row, so a revocation is refused everywhere at once rather than
 * after the key cache's time. After Redis comes back the whole cache is forgotten, since changes
 * published meanwhile were lost.
 */
import type { KeyBackend } from "../../store/index.js";
import { TokenBucketLimiter } from "../limits.js";
import { SharedRateLimiter, type RequestRateLimiter } from "./rate-limiter.js";
import { connectRedis, type RedisConnection, type SharedLog } from "./redis.js";
import { RevocationBroadcast, type KeyChange } from "./revocations.js";
import { MemorySessionStore, RedisSessionStore, type SessionStore } from "./sessions.js";

export interface ReplicaState {
  limiter: RequestRateLimiter;
  sessions: SessionStore;
  /** The key store, publishing its changes when Redis is configured. */
  store: KeyBackend;
  /** Null without Redis. */
  redis: RedisConnection | null;
  keyChanges: RevocationBroadcast | null;
  /** Counters for /metrics. */
  stats(): ReplicaSharingStats;
  close(): Promise<void>;
}

export interface ReplicaSharingStats {
  redisConfigured: boolean;
  redisUp: boolean;
  rateLimitFallbackDecisions: number;
  rateLimitUsingFallback: boolean;
  redisErrors: number;
  keyChangesPublished: number;
  keyChangesReceived: number;
  keyChangePublishFailures: number;
  sessionFallbackOperations: number;
}

/**
 * The key store with its changes published after the store took them. Everything else goes to the
 * store as it is; publish() never throws, so a change never fails for Redis's sake.
 */
class PublishingKeyBackend implements KeyBackend {
  readonly dialect: KeyBackend["dialect"];
  readonly location: string;

  constructor(
    private readonly store: KeyBackend,
    private readonly keyChanges: RevocationBroadcast,
  ) {
    this.dialect = store.dialect;
    this.location = store.location;
  }

  get staleKeyServes(): number {
    return this.store.staleKeyServes;
  }

  private async changed(keyId: number, change: KeyChange): Promise<void> {
    await this.keyChanges.publish({ keyId, change });
  }

  async revokeKey(id: number): Promise<boolean> {
    const revoked = await this.store.revokeKey(id);
    await this.changed(id, "revoked");
    return revoked;
  }
  async setExpiry(id: number, expiresAt: string | Date | null): Promise<string | null> {
    const stored = await this.store.setExpiry(id, expiresAt);
    await this.changed(id, "expiry");
    return stored;
  }
  async setQuota(id: number, quota: number | null): Promise<void> {
    await this.store.setQuota(id, quota);
    await this.changed(id, "quota");
  }
  async setRateLimit(id: number, rateLimit: number | null): Promise<void> {
    await this.store.setRateLimit(id, rateLimit);
    await this.changed(id, "rate-limit");
  }

  schemaVersion = () => this.store.schemaVersion();
  createKey: KeyBackend["createKey"] = (name, settings) => this.store.createKey(name, settings);
  listKeys = () => this.store.listKeys();
  usageHistory: KeyBackend["usageHistory"] = (bucket, options) => this.store.usageHistory(bucket, options);
  authenticateRequest: KeyBackend["authenticateRequest"] = (secret, nowMs) => this.store.authenticateRequest(secret, nowMs);
  quotaStatus: KeyBackend["quotaStatus"] = (id) => this.store.quotaStatus(id);
  reserveTokens: KeyBackend["reserveTokens"] = (id, tokens) => this.store.reserveTokens(id, tokens);
  recordUsage: KeyBackend["recordUsage"] = (id, tokens, reservations) => this.store.recordUsage(id, tokens, reservations);
  recordOutcome: KeyBackend["recordOutcome"] = (id, outcome) => this.store.recordOutcome(id, outcome);
  forgetKey: KeyBackend["forgetKey"] = (id) => this.store.forgetKey(id);
  forgetAllKeys = () => this.store.forgetAllKeys();
  getSetting: KeyBackend["getSetting"] = (name) => this.store.getSetting(name);
  setSetting: KeyBackend["setSetting"] = (name, value) => this.store.setSetting(name, value);
  claimSetting: KeyBackend["claimSetting"] = (name, value) => this.store.claimSetting(name, value);
  get responses(): KeyBackend["responses"] {
    return this.store.responses;
  }
  flush = () => this.store.flush();
  stats = () => this.store.stats();
  close = () => this.store.close();
}

export function createReplicaState(options: { redisUrl: string; rateLimit: number; store: KeyBackend; log: SharedLog }): ReplicaState {
  const { store, log } = options;
  if (!options.redisUrl) {
    const limiter = new TokenBucketLimiter(options.rateLimit);
    return {
      limiter,
      sessions: new MemorySessionStore(),
      store,
      redis: null,
      keyChanges: null,
      stats: () => ({
        redisConfigured: false,
        redisUp: false,
        rateLimitFallbackDecisions: 0,
        rateLimitUsingFallback: false,
        redisErrors: 0,
        keyChangesPublished: 0,
        keyChangesReceived: 0,
        keyChangePublishFailures: 0,
        sessionFallbackOperations: 0,
      }),
      close: async () => {},
    };
  }
  const redis = connectRedis(options.redisUrl, { log, name: "trellis" });
  const limiter = new SharedRateLimiter(redis, options.rateLimit, { log });
  const keyChanges = new RevocationBroadcast(redis, { log });
  const sessions = new RedisSessionStore(redis, { log });
  keyChanges.onKeyChange(({ keyId }) => store.forgetKey(keyId));
  keyChanges.onResubscribed(() => store.forgetAllKeys());
  return {
    limiter,
    sessions,
    store: new PublishingKeyBackend(store, keyChanges),
    redis,
    keyChanges,
    stats: () => {
      const limits = limiter.stats();
      const changes = keyChanges.stats();
      const shared = sessions.stats();
      return {
        redisConfigured: true,
        redisUp: redis.available,
        rateLimitFallbackDecisions: limits.fallbackDecisions,
        rateLimitUsingFallback: limits.usingFallback,
        redisErrors: limits.redisErrors + shared.redisErrors,
        keyChangesPublished: changes.published,
        keyChangesReceived: changes.received,
        keyChangePublishFailures: changes.publishFailures,
        sessionFallbackOperations: shared.fallbackOperations,
      };
    },
    async close() {
      await keyChanges.close();
      await redis.close();
    },
  };
}
