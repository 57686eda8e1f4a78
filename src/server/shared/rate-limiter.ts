/**
 * Per-key rate limits shared by every replica: one token bucket per key in Redis, updated by one
 * Lua script so that a take is atomic across replicas, with exactly the rules of the local
 * TokenBucketLimiter (../limits.ts): capacity = the limit per minute, refill limit/60000 per ms,
 * and a bucket whose limit changed keeps what was used of it. The script reads Redis's clock
 * (TIME), not the replica's, so replicas whose clocks disagree still agree on every bucket.
 *
 * When Redis is unavailable, or a take fails or times out, the decision is made by a local
 * TokenBucketLimiter instead: each replica then limits on its own (so a key may get up to its
 * limit from each replica) until Redis answers again. A failed take keeps this limiter local for
 * `retryAfterFailureMs` before one take tries Redis again, so a Redis that accepts connections
 * but does not answer costs one command timeout per interval, not one per request. take() never
 * throws.
 */
import type { Redis } from "ioredis";
import { type RateDecision, TokenBucketLimiter } from "../limits.js";
import type { RedisConnection, SharedLog } from "./redis.js";

/** What the server holds as its rate limiter: the local TokenBucketLimiter or a SharedRateLimiter. */
export interface RequestRateLimiter {
  readonly perMinute: number;
  readonly enabled: boolean;
  take(key: string, limit?: number, nowMs?: number): Promise<RateDecision> | RateDecision;
}

export interface SharedRateLimiterOptions {
  /** Prefix of the buckets' Redis keys (`<prefix>rate:<key>`). Default "trellis:". */
  keyPrefix?: string;
  /**
   * Whose clock refills the buckets: "redis" (default: Redis's TIME, the same for every replica)
   * or "caller" (take()'s `nowMs`; for tests that need time to pass deterministically).
   */
  clock?: "redis" | "caller";
  /** An untouched bucket's key expires after this; at least a minute (a full refill), so expiry never changes a decision. Default 2 minutes. */
  idleTtlMs?: number;
  /** After a failed take, decide locally for this long before trying Redis again. Default 1 s. */
  retryAfterFailureMs?: number;
  /** Default: the connection's log. */
  log?: SharedLog;
}

export interface SharedRateLimiterStats {
  /** Decisions made by the local fallback since start. */
  fallbackDecisions: number;
  /** Takes that Redis failed (an error or a timeout) since start. */
  redisErrors: number;
  usingFallback: boolean;
}

/**
 * KEYS[1]: the bucket's hash. ARGV: the limit per minute (the bucket's capacity), now in ms or ""
 * for Redis's clock, the idle TTL in ms. Returns {1 allowed | 0 refused, tokens left}; tokens go
 * back as a string because Redis truncates Lua numbers to integers in replies, and are written
 * with %.17g, which a double survives exactly. The arithmetic is TokenBucketLimiter.take()'s, in
 * the same order, so both round alike.
 */
const TAKE_SCRIPT = `
local capacity = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if now == nil then
  if redis.replicate_commands then redis.replicate_commands() end
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local refill_per_ms = capacity / 60000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated_ms', 'per_minute')
local tokens = tonumber(state[1])
local updated_ms = tonumber(state[2])
local per_minute = tonumber(state[3])
if tokens == nil or updated_ms == nil or per_minute == nil then
  tokens = capacity
  updated_ms = now
else
  local elapsed = math.max(0, now - updated_ms)
  local resized = tokens + (capacity - per_minute)
  tokens = math.min(capacity, math.max(0, resized) + elapsed * refill_per_ms)
  updated_ms = now
end
local allowed = 0
if tokens >= 1 then
  allowed = 1
  tokens = tokens - 1
end
local exact_tokens = string.format('%.17g', tokens)
redis.call('HSET', KEYS[1], 'tokens', exact_tokens, 'updated_ms', string.format('%.17g', updated_ms), 'per_minute', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {allowed, exact_tokens}
`;

/** The script, as a command ioredis sends by EVALSHA (EVAL on a new connection or after NOSCRIPT). */
interface TakeCommand {
  trellisRateTake(bucketKey: string, limit: number, nowMs: number | string, idleTtlMs: number): Promise<unknown>;
}

/** The decision for a bucket left with `tokens`: TokenBucketLimiter.take()'s own computation. */
function decisionFor(allowed: boolean, tokens: number, capacity: number): RateDecision {
  const refillPerMs = capacity / 60_000;
  const resetSeconds = Math.ceil((capacity - tokens) / refillPerMs / 1000);
  const retryAfterSeconds = allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000));
  return { allowed, limit: capacity, remaining: Math.floor(tokens), resetSeconds, retryAfterSeconds };
}

/** `perMinute` requests per minute per key across all replicas; 0 disables limiting (as TokenBucketLimiter). */
export class SharedRateLimiter implements RequestRateLimiter {
  private readonly redis: RedisConnection;
  private readonly client: Redis & TakeCommand;
  private readonly local: TokenBucketLimiter;
  private readonly keyPrefix: string;
  private readonly callerClock: boolean;
  private readonly idleTtlMs: number;
  private readonly retryAfterFailureMs: number;
  private readonly log: SharedLog;
  /** Date.now() before which takes stay local after a failure; 0: Redis is trusted. */
  private localUntilMs = 0;
  /** One take is trying Redis again after a failure: the others stay local meanwhile. */
  private probing = false;
  /** Whether the last decision was made locally: what the switch logs compare against. */
  private decidingLocally = false;
  private fallbackDecisions = 0;
  private redisErrors = 0;

  constructor(
    redis: RedisConnection,
    readonly perMinute: number,
    options: SharedRateLimiterOptions = {},
  ) {
    this.redis = redis;
    this.local = new TokenBucketLimiter(perMinute);
    this.keyPrefix = `${options.keyPrefix ?? "trellis:"}rate:`;
    this.callerClock = options.clock === "caller";
    this.idleTtlMs = Math.max(60_000, Math.ceil(options.idleTtlMs ?? 120_000));
    this.retryAfterFailureMs = options.retryAfterFailureMs ?? 1000;
    this.log = options.log ?? redis.log;
    this.client = redis.client as Redis & TakeCommand;
    this.client.defineCommand("trellisRateTake", { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /** Decisions are being made locally: Redis is unavailable, or failed a take a moment ago. */
  get usingFallback(): boolean {
    return !this.redis.available || this.localUntilMs !== 0;
  }

  /** Decisions made by the local fallback since start. */
  get fallbacks(): number {
    return this.fallbackDecisions;
  }

  stats(): SharedRateLimiterStats {
    return { fallbackDecisions: this.fallbackDecisions, redisErrors: this.redisErrors, usingFallback: this.usingFallback };
  }

  /**
   * Takes one request from `key`'s bucket, which holds and refills at `limit` requests per minute
   * (default: the limiter's), in Redis when it answers, locally otherwise. `nowMs` is used by the
   * local fallback, and by Redis only with `clock: "caller"`.
   */
  async take(key: string, limit: number = this.perMinute, nowMs: number = Date.now()): Promise<RateDecision> {
    // A limit of 0 (or nonsense) refuses everything; Lua would store NaN for it. No state to share.
    if (!(limit > 0 && Number.isFinite(limit))) return this.local.take(key, limit, nowMs);
    if (this.mayAskRedis()) {
      try {
        const reply = await this.client.trellisRateTake(this.keyPrefix + key, limit, this.callerClock ? nowMs : "", this.idleTtlMs);
        const decision = this.decisionOfReply(reply, limit);
        this.redisAnswered();
        return decision;
      } catch (error) {
        this.redisFailed(error);
      }
    }
    return this.takeLocally(key, limit, nowMs);
  }

  private mayAskRedis(): boolean {
    if (!this.redis.available) return false;
    if (this.localUntilMs === 0) return true;
    if (this.probing || Date.now() < this.localUntilMs) return false;
    this.probing = true;
    return true;
  }

  private decisionOfReply(reply: unknown, limit: number): RateDecision {
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error("unexpected reply from the rate-limit script");
    const tokens = Number(reply[1]);
    if (!Number.isFinite(tokens)) throw new Error("unexpected reply from the rate-limit script");
    return decisionFor(Number(reply[0]) === 1, tokens, limit);
  }

  private redisAnswered(): void {
    this.probing = false;
    this.localUntilMs = 0;
    if (this.decidingLocally) {
      this.decidingLocally = false;
      this.log("rate-limit.shared", { target: this.redis.target, fallbackDecisions: this.fallbackDecisions });
    }
  }

  private redisFailed(error: unknown): void {
    this.probing = false;
    this.redisErrors++;
    this.localUntilMs = Date.now() + this.retryAfterFailureMs;
    this.switchToLocal(error instanceof Error ? error.message : String(error));
  }

  private takeLocally(key: string, limit: number, nowMs: number): RateDecision {
    this.fallbackDecisions++;
    if (!this.decidingLocally) this.switchToLocal("redis unavailable");
    return this.local.take(key, limit, nowMs);
  }

  private switchToLocal(reason: string): void {
    if (this.decidingLocally) return;
    this.decidingLocally = true;
    this.log("rate-limit.fallback", { target: this.redis.target, reason });
  }
}
