/**
 * API key usage between a request and the database: counted in memory per key and flushed in one
 * transaction per interval, so a request costs no write.
 *
 * A flush that fails (another process holds the write lock, the disk is full) keeps the counts
 * in memory, is reported, and is retried with backoff; nothing here may throw out of a timer,
 * since that would end the process. better-sqlite3 is synchronous: every millisecond a statement
 * waits for a lock is a millisecond the whole service (HTTP, decode scheduling) stands still, so
 * the usage flush waits only FLUSH_BUSY_TIMEOUT_MS for the lock and leaves the rest to its retry.
 * What close() cannot write is reported key by key, never dropped silently.
 */
import type Database from "better-sqlite3";
import { SQLITE_BUSY_CODES, describeError, errorCode } from "./errors.js";
import type { KeyStoreOptions } from "./keys.js";

/**
 * How long the usage flush waits for another connection's write lock, ms. Other writers (the
 * CLI's key commands, the dashboard) hold it for well under a millisecond, so this waits out
 * ordinary contention; a longer hold (a backup, a sqlite3 shell inside a transaction) fails the
 * attempt fast and the retry comes later, instead of stalling the event loop for seconds.
 */
export const FLUSH_BUSY_TIMEOUT_MS = 20;

/** A key's usage counted since the last write. */
export interface PendingUsage {
  requests: number;
  tokens: number;
  lastUsedAt: string;
}

/** What a failed usage flush reports (one call per failed attempt). */
export interface FlushFailure {
  error: Error;
  /** SQLite's code, e.g. SQLITE_BUSY or SQLITE_FULL, when it has one. */
  code: string | undefined;
  consecutiveFailures: number;
  /** When the periodic flush tries again; null when no periodic flush runs. */
  retryInMs: number | null;
  pendingKeys: number;
  pendingRequests: number;
  pendingTokens: number;
}

/** Usage that close() could not write: exactly what is missing from the database. */
export interface UnwrittenUsage {
  keyId: number;
  requests: number;
  tokens: number;
  lastUsedAt: string;
}

/** Counters for metrics and health: what is buffered, how flushing goes. */
export interface UsageFlushStats {
  pendingKeys: number;
  pendingRequests: number;
  pendingTokens: number;
  /** Flushes that wrote buffered usage. */
  flushesTotal: number;
  /** Flush attempts that failed (each one's counts were kept). */
  flushFailuresTotal: number;
  /** Failed attempts since the last success; 0 when healthy. */
  consecutiveFailures: number;
  /** "SQLITE_BUSY: database is locked" of the latest failure, null if none yet. */
  lastError: string | null;
  lastErrorCode: string | null;
  /** Epoch ms of the latest failed attempt. */
  lastFailureAtMs: number | null;
  /** Epoch ms of the latest flush that left nothing pending (also when nothing was). */
  lastSuccessAtMs: number | null;
  /** Slowest flush attempt so far (close() not counted), ms: the longest usage stalled the event loop. */
  maxFlushDurationMs: number;
}

/** Blocks the thread (close() is synchronous and runs at shutdown, when nothing else is served). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ms));
}

/** One JSON line per key, for an operator to re-apply by hand: what close() could not write. */
export function formatUnwrittenUsage(path: string, usage: readonly UnwrittenUsage[], error: Error): string[] {
  return usage.map((u) =>
    JSON.stringify({
      event: "trellis_unwritten_usage",
      database: path,
      key_id: u.keyId,
      requests: u.requests,
      tokens: u.tokens,
      last_used_at: u.lastUsedAt,
      error: describeError(error),
    }),
  );
}

/** The usage buffer of one KeyStore: pending counts, the periodic flush and its backoff, the reports. */
export class UsageBuffer {
  private readonly pending = new Map<number, PendingUsage>();
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly flushIntervalMs: number;
  private readonly maxFlushRetryDelayMs: number;
  private readonly closeTimeoutMs: number;
  private readonly onFlushError: (failure: FlushFailure) => void;
  private readonly onFlushRecovered: ((info: { failures: number; failingForMs: number }) => void) | undefined;
  private readonly onUnwrittenUsage: (usage: UnwrittenUsage[], error: Error) => void;

  private flushesTotal = 0;
  private flushFailuresTotal = 0;
  private consecutiveFailures = 0;
  private firstFailureAtMs: number | null = null;
  private lastError: string | null = null;
  private lastErrorCode: string | null = null;
  private lastFailureAtMs: number | null = null;
  private lastSuccessAtMs: number | null = null;
  private maxFlushDurationMs = 0;

  private readonly addUsage: Database.Statement<[number, number, string, number]>;
  private readonly writeUsage: Database.Transaction<(batch: ReadonlyArray<[number, PendingUsage]>) => void>;

  /**
   * `busyTimeoutMs`: the lock wait of the store's other statements, restored after each flush.
   * Starts the periodic flush when options.flushIntervalMs is above 0.
   */
  constructor(
    private readonly db: Database.Database,
    path: string,
    options: KeyStoreOptions,
    private readonly busyTimeoutMs: number,
  ) {
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxFlushRetryDelayMs = Math.max(options.maxFlushRetryDelayMs ?? 30_000, this.flushIntervalMs);
    this.closeTimeoutMs = options.closeTimeoutMs ?? 5000;
    this.onFlushError =
      options.onFlushError ??
      ((failure) => {
        process.stderr.write(
          `trellis: writing API key usage to ${path} failed (${describeError(failure.error)}); ` +
            `${failure.pendingRequests} requests of ${failure.pendingKeys} keys kept in memory` +
            (failure.retryInMs === null ? "\n" : `, retrying in ${failure.retryInMs} ms\n`),
        );
      });
    this.onFlushRecovered = options.onFlushRecovered;
    this.onUnwrittenUsage =
      options.onUnwrittenUsage ??
      ((usage, error) => {
        for (const line of formatUnwrittenUsage(path, usage, error)) process.stderr.write(line + "\n");
      });
    this.addUsage = this.db.prepare(
      `UPDATE api_keys SET requests = requests + ?, tokens = tokens + ?,
         last_used_at = max(coalesce(last_used_at, ''), ?) WHERE id = ?`,
    );
    this.writeUsage = this.db.transaction((batch) => {
      for (const [id, usage] of batch) this.addUsage.run(usage.requests, usage.tokens, usage.lastUsedAt, id);
    });
    if (this.flushIntervalMs > 0) this.scheduleFlush(this.flushIntervalMs);
  }

  /** Whether close() ran: nothing more is buffered or written. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Usage buffered for a key and not written yet. */
  pendingFor(id: number): Readonly<PendingUsage> | undefined {
    return this.pending.get(id);
  }

  /** Buffers one request's usage; written by the next flush. */
  record(id: number, tokens: number): void {
    const now = new Date().toISOString();
    if (this.closed) {
      // Recorded after close (a caller shutting down out of order): nothing will write it.
      const usage = [{ keyId: id, requests: 1, tokens, lastUsedAt: now }];
      this.callSafely(() => this.onUnwrittenUsage(usage, new Error("the key store was already closed")));
      return;
    }
    this.addPending(id, 1, tokens, now);
  }

  /**
   * Notes that the key authenticated a request now: its last use, kept in memory and written by
   * the next flush with the usage (no write per request). Nothing after close.
   */
  touch(id: number, nowIso: string = new Date().toISOString()): void {
    if (!this.closed) this.addPending(id, 0, 0, nowIso);
  }

  private addPending(id: number, requests: number, tokens: number, lastUsedAt: string): void {
    const entry = this.pending.get(id);
    if (entry) {
      entry.requests += requests;
      entry.tokens += tokens;
      if (lastUsedAt > entry.lastUsedAt) entry.lastUsedAt = lastUsedAt;
    } else {
      this.pending.set(id, { requests, tokens, lastUsedAt });
    }
  }

  private scheduleFlush(delayMs: number): void {
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      if (this.closed) return;
      this.flush();
      if (!this.closed) this.scheduleFlush(this.nextFlushDelayMs());
    }, delayMs);
    this.flushTimer.unref();
  }

  /** The interval while healthy; doubling from it per consecutive failure, up to the cap. */
  private nextFlushDelayMs(): number {
    if (this.consecutiveFailures === 0) return this.flushIntervalMs;
    return Math.min(this.maxFlushRetryDelayMs, this.flushIntervalMs * 2 ** Math.min(this.consecutiveFailures, 30));
  }

  /**
   * Writes buffered usage in one transaction. Returns true when nothing is left pending; on a
   * failure the counts stay buffered (merged with any recorded meanwhile), the failure is
   * counted and reported, and false is returned. Never throws.
   */
  flush(): boolean {
    return this.tryFlush(FLUSH_BUSY_TIMEOUT_MS, true);
  }

  /**
   * `serving`: a flush while the service runs (counted in the stall statistic and reported);
   * close()'s attempts may block on purpose and report once, through onUnwrittenUsage.
   */
  private tryFlush(busyTimeoutMs: number, serving: boolean): boolean {
    if (this.closed) return this.pending.size === 0;
    if (this.pending.size === 0) {
      this.lastSuccessAtMs = Date.now();
      return true;
    }
    const batch = [...this.pending];
    this.pending.clear();
    const started = performance.now();
    let failed = false;
    let failure: unknown;
    try {
      this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      // IMMEDIATE takes the write lock first, so a lock held elsewhere fails here, before any
      // statement ran, and waits at most busy_timeout (a deferred BEGIN may fail mid-way).
      this.writeUsage.immediate(batch);
    } catch (error) {
      failed = true;
      failure = error;
    }
    // Outside the write's try: a failure here must not put back counts that were committed.
    try {
      this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    } catch {
      // The connection is unusable; the next statement reports that.
    }
    if (serving) this.noteFlushDuration(started);
    if (failed) {
      for (const [id, usage] of batch) this.addPending(id, usage.requests, usage.tokens, usage.lastUsedAt);
      this.noteFailure(failure, serving);
      return false;
    }
    this.flushesTotal++;
    this.lastSuccessAtMs = Date.now();
    if (this.consecutiveFailures > 0) {
      const info = { failures: this.consecutiveFailures, failingForMs: Date.now() - (this.firstFailureAtMs ?? Date.now()) };
      this.consecutiveFailures = 0;
      this.firstFailureAtMs = null;
      this.callSafely(() => this.onFlushRecovered?.(info));
    }
    return true;
  }

  private noteFlushDuration(startedMs: number): void {
    const took = performance.now() - startedMs;
    if (took > this.maxFlushDurationMs) this.maxFlushDurationMs = took;
  }

  private noteFailure(error: unknown, report: boolean): void {
    const now = Date.now();
    this.flushFailuresTotal++;
    this.consecutiveFailures++;
    this.firstFailureAtMs ??= now;
    this.lastFailureAtMs = now;
    this.lastError = describeError(error);
    this.lastErrorCode = errorCode(error) ?? null;
    if (!report) return;
    const stats = this.stats();
    const failure: FlushFailure = {
      error: error instanceof Error ? error : new Error(String(error)),
      code: errorCode(error),
      consecutiveFailures: this.consecutiveFailures,
      retryInMs: this.flushIntervalMs > 0 && !this.closed ? this.nextFlushDelayMs() : null,
      pendingKeys: stats.pendingKeys,
      pendingRequests: stats.pendingRequests,
      pendingTokens: stats.pendingTokens,
    };
    this.callSafely(() => this.onFlushError(failure));
  }

  /** A reporting callback that throws must not turn a kept failure into a crash. */
  private callSafely(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      process.stderr.write(`trellis: a key store report callback failed: ${describeError(error)}\n`);
    }
  }

  stats(): UsageFlushStats {
    let pendingRequests = 0;
    let pendingTokens = 0;
    for (const usage of this.pending.values()) {
      pendingRequests += usage.requests;
      pendingTokens += usage.tokens;
    }
    return {
      pendingKeys: this.pending.size,
      pendingRequests,
      pendingTokens,
      flushesTotal: this.flushesTotal,
      flushFailuresTotal: this.flushFailuresTotal,
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
      lastErrorCode: this.lastErrorCode,
      lastFailureAtMs: this.lastFailureAtMs,
      lastSuccessAtMs: this.lastSuccessAtMs,
      maxFlushDurationMs: this.maxFlushDurationMs,
    };
  }

  /**
   * Writes buffered usage, trying for up to closeTimeoutMs (the lock wait then blocks, which is
   * harmless at shutdown); the store closes the database after it. Usage that still could not be
   * written is handed to onUnwrittenUsage, key by key, instead of being dropped silently.
   */
  close(): void {
    if (this.closed) return;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const deadline = Date.now() + this.closeTimeoutMs;
    let written = this.tryFlush(FLUSH_BUSY_TIMEOUT_MS, false);
    while (!written && Date.now() < deadline) {
      // A lock is waited for inside SQLite; other failures (a full disk) get a pause before the
      // next attempt, in case space is being freed.
      if (!SQLITE_BUSY_CODES.has(this.lastErrorCode ?? "")) sleepSync(Math.min(100, deadline - Date.now()));
      written = this.tryFlush(Math.max(1, deadline - Date.now()), false);
    }
    this.closed = true;
    if (!written) {
      const usage = [...this.pending].map(([keyId, u]) => ({ keyId, requests: u.requests, tokens: u.tokens, lastUsedAt: u.lastUsedAt }));
      this.pending.clear();
      const error = new Error(this.lastError ?? "usage could not be written");
      this.callSafely(() => this.onUnwrittenUsage(usage, error));
    }
  }
}
