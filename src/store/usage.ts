/**
 * API key usage between a request and the SQLite database: the usage ledger (usage-ledger.ts)
 * written in one transaction per interval, so a request costs no write.
 *
 * better-sqlite3 is synchronous: every millisecond a statement waits for a lock is a millisecond
 * the whole service (HTTP, decode scheduling) stands still, so the usage flush waits only
 * FLUSH_BUSY_TIMEOUT_MS for the lock and leaves the rest to its retry. What close() cannot write
 * is reported key by key, never dropped silently.
 */
import type Database from "better-sqlite3";
import { SQLITE_BUSY_CODES } from "./errors.js";
import { HOUR_COUNTERS, UsageLedger, retentionCutoff, type UsageBatch, type UsageFlushOptions } from "./usage-ledger.js";

export {
  formatUnwrittenUsage,
  type FlushFailure,
  type PendingUsage,
  type UnwrittenUsage,
  type UsageFlushStats,
} from "./usage-ledger.js";

/**
 * How long the usage flush waits for another connection's write lock, ms. Other writers (the
 * CLI's key commands, the dashboard) hold it for well under a millisecond, so this waits out
 * ordinary contention; a longer hold (a backup, a sqlite3 shell inside a transaction) fails the
 * attempt fast and the retry comes later, instead of stalling the event loop for seconds.
 */
export const FLUSH_BUSY_TIMEOUT_MS = 20;

/** Blocks the thread (close() is synchronous and runs at shutdown, when nothing else is served). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, ms));
}

/** The usage buffer of one SQLite KeyStore: the ledger, written synchronously under a short lock wait. */
export class UsageBuffer extends UsageLedger {
  private readonly writeUsage: Database.Transaction<(batch: UsageBatch) => void>;

  /**
   * `busyTimeoutMs`: the lock wait of the store's other statements, restored after each flush.
   * Starts the periodic flush when options.flushIntervalMs is above 0.
   */
  constructor(
    private readonly db: Database.Database,
    path: string,
    options: UsageFlushOptions,
    private readonly busyTimeoutMs: number,
  ) {
    super(path, options);
    const addUsage = this.db.prepare<[number, number, string, number]>(
      `UPDATE api_keys SET requests = requests + ?, tokens = tokens + ?,
         last_used_at = max(coalesce(last_used_at, ''), ?) WHERE id = ?`,
    );
    // Additive, so two writers (or a retried batch merged with newer counts) never overwrite each other.
    const columns = HOUR_COUNTERS.map(([, column]) => column);
    const addHour = this.db.prepare<unknown[]>(
      `INSERT INTO usage_hourly (key_id, hour, ${columns.join(", ")}) VALUES (?, ?, ${columns.map(() => "?").join(", ")})
         ON CONFLICT (key_id, hour) DO UPDATE SET ${columns.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")}`,
    );
    const prune = this.db.prepare<[string]>("DELETE FROM usage_hourly WHERE hour < ?");
    this.writeUsage = this.db.transaction((batch) => {
      for (const [id, usage] of batch) {
        addUsage.run(usage.requests, usage.tokens, usage.lastUsedAt, id);
        for (const [hour, h] of usage.hours) addHour.run(id, hour, ...HOUR_COUNTERS.map(([field]) => h[field]));
      }
      if (this.pruneDue()) prune.run(retentionCutoff());
    });
    this.startTimer();
  }

  protected flushOnTimer(): boolean {
    return this.flush();
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
    const batch = this.batchToWrite();
    if (typeof batch === "boolean") return batch;
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
      this.restoreBatch(batch);
      this.noteFailure(failure, serving);
      return false;
    }
    this.noteSuccess();
    return true;
  }

  /**
   * Writes buffered usage, trying for up to closeTimeoutMs (the lock wait then blocks, which is
   * harmless at shutdown); the store closes the database after it. Usage that still could not be
   * written is handed to onUnwrittenUsage, key by key, instead of being dropped silently.
   */
  close(): void {
    if (this.closed) return;
    this.stopTimer();
    const deadline = Date.now() + this.closeTimeoutMs;
    let written = this.tryFlush(FLUSH_BUSY_TIMEOUT_MS, false);
    while (!written && Date.now() < deadline) {
      // A lock is waited for inside SQLite; other failures (a full disk) get a pause before the
      // next attempt, in case space is being freed.
      if (!SQLITE_BUSY_CODES.has(this.lastErrorCode ?? "")) sleepSync(Math.min(100, deadline - Date.now()));
      written = this.tryFlush(Math.max(1, deadline - Date.now()), false);
    }
    this.closed = true;
    if (!written) this.reportUnwritten();
  }
}
