/**
 * Admission control in front of the engine: a per-key token bucket (requests per minute) and a
 * concurrency gate with a bounded wait queue. Both only decide who may proceed; generation itself
 * is the engine's business.
 */
import { OverloadedError } from "../generate/index.js";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one request is allowed (only meaningful when refused). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
  /** The limit it last refilled at (its capacity), for the sweep. */
  perMinute: number;
}

/**
 * `perMinute` requests per minute per key, bursts up to `perMinute`; 0 disables limiting. A key
 * with its own limit passes it to take(): its bucket then holds and refills at that limit.
 */
export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private callsSinceSweep = 0;

  constructor(readonly perMinute: number) {}

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /**
   * Takes one request from `key`'s bucket, which holds and refills at `limit` requests per minute
   * (default: the limiter's). A bucket whose limit changed keeps what was used of it.
   */
  take(key: string, limit: number = this.perMinute, nowMs: number = Date.now()): RateDecision {
    const capacity = limit;
    const refillPerMs = capacity / 60_000;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: capacity, updatedMs: nowMs, perMinute: capacity };
      this.buckets.set(key, bucket);
    } else {
      const elapsed = Math.max(0, nowMs - bucket.updatedMs);
      // A changed limit keeps what the key has used of it: raised, the difference is available at
      // once; lowered, what is left shrinks by as much (never below empty).
      const resized = bucket.tokens + (capacity - bucket.perMinute);
      bucket.tokens = Math.min(capacity, Math.max(0, resized) + elapsed * refillPerMs);
      bucket.updatedMs = nowMs;
      bucket.perMinute = capacity;
    }
    if (++this.callsSinceSweep >= 1000) this.sweep(nowMs);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const resetSeconds = Math.ceil((capacity - bucket.tokens) / refillPerMs / 1000);
    const retryAfterSeconds = allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
    return { allowed, limit: capacity, remaining: Math.floor(bucket.tokens), resetSeconds, retryAfterSeconds };
  }

  /** Buckets that have refilled completely carry no state worth keeping. */
  private sweep(nowMs: number): void {
    this.callsSinceSweep = 0;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((nowMs - bucket.updatedMs) * bucket.perMinute) / 60_000 >= bucket.perMinute) this.buckets.delete(key);
    }
  }
}

export type Release = () => void;

interface Waiter {
  resolve: (release: Release) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/** At most `concurrency` holders; up to `queueSize` waiters; beyond that OverloadedError. */
export class ConcurrencyGate {
  private active = 0;
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly concurrency: number,
    readonly queueSize: number,
  ) {}

  get running(): number {
    return this.active;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.concurrency) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiters.length >= this.queueSize) {
      return Promise.reject(
        new OverloadedError(`server is overloaded: ${this.active} requests running and ${this.waiters.length} queued; retry later`, 1),
      );
    }
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) {
        next.signal?.removeEventListener("abort", next.onAbort);
        next.resolve(this.releaser());
      } else {
        this.active--;
      }
    };
  }
}
