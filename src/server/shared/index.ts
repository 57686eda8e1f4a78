/**
 * server/shared/ — what Trellis replicas behind one load balancer share through Redis (issue 27):
 * per-key rate limits (one token bucket per key for all replicas), key changes told to every
 * replica (revocations, new expiries, quotas and rate limits, so cached key rows are dropped), and
 * dashboard sessions. Every part keeps working while Redis is away, on local state, and never
 * throws or waits long for Redis's sake.
 *
 * Key types: RedisConnection (one fail-fast connection, `available`), SharedRateLimiter (a
 * RequestRateLimiter, as TokenBucketLimiter is), RevocationBroadcast (KeyChangeEvent over pub/sub),
 * SessionStore (MemorySessionStore, RedisSessionStore).
 *
 *   const redis = connectRedis(config.redisUrl, { log: (event, detail) => logger.warn(detail, event) });
 *   const limiter = new SharedRateLimiter(redis, config.rateLimit);       // await limiter.take(bucket, limit)
 *   const keyChanges = new RevocationBroadcast(redis);                    // opens its subscriber connection
 *   keyChanges.onKeyChange(({ keyId }) => cache.drop(keyId));
 *   keyChanges.onResubscribed(() => cache.clear());
 *   await keyChanges.publish({ keyId, change: "revoked" });
 *   const sessions = new RedisSessionStore(redis);                        // or new MemorySessionStore()
 *   … at shutdown: await keyChanges.close(); await redis.close();
 */
export {
  connectRedis,
  parseRedisUrl,
  RedisConnection,
  RedisUrlError,
  DEFAULT_COMMAND_TIMEOUT_MS,
  type RedisConnectionOptions,
  type SharedLog,
} from "./redis.js";
export {
  SharedRateLimiter,
  type RequestRateLimiter,
  type SharedRateLimiterOptions,
  type SharedRateLimiterStats,
} from "./rate-limiter.js";
export {
  RevocationBroadcast,
  parseKeyChange,
  type KeyChange,
  type KeyChangeEvent,
  type RevocationBroadcastOptions,
  type RevocationBroadcastStats,
} from "./revocations.js";
export {
  MemorySessionStore,
  RedisSessionStore,
  DEFAULT_MAX_SESSIONS,
  type DashboardSession,
  type SessionStore,
  type RedisSessionStoreOptions,
  type RedisSessionStoreStats,
} from "./sessions.js";
