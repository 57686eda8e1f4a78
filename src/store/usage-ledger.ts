/**
 * What every key store does with usage between a request and its database, whatever the
 * database: count it in memory per key (and per hour, for the dashboard's charts), flush it on a
 * timer with backoff while writes fail, report each failure and the recovery, and hand what could
 * not be written at close to a callback instead of dropping it. The SQLite buffer (usage.ts) and
 * the Postgres one (postgres.ts) differ only in how a batch is written: synchronously under a
 * short lock wait, or as one asynchronous transaction.
 */
import { describeError, errorCode } from "./errors.js";

/** One hour's usage of a key: what it was served, and what it was refused. */
export interface HourUsage {
  requests: number;
  tokens: number;
  /** 429: over the key's rate limit. */
  rateLimited: number;
  /** Other 4xx answers to the key's requests (bad requests, 402 quota, 422 unsatisfiable…). */
  clientErrors: number;
  /** 5xx answers (overloaded, timed out, failures). */
  serverErrors: number;
}

/** HourUsage's counters and their usage_hourly columns, in one order for every statement. */
export const HOUR_COUNTERS = [
  ["requests", "requests"],
  ["tokens", "tokens"],
  ["rateLimited", "rate_limited"],
  ["clientErrors", "client_errors"],
  ["serverErrors", "server_errors"],
] as const satisfies ReadonlyArray<readonly [keyof HourUsage, string]>;

/** How a key's request ended, for the hourly error counts. */
export type RequestOutcome = "rate-limited" | "client-error" | "server-error";

export function emptyHour(): HourUsage {
  return { requests: 0, tokens: 0, rateLimited: 0, clientErrors: 0, serverErrors: 0 };
}

/** Adds `from`'s counters into `into`. */
export function addHour(into: HourUsage, from: Readonly<HourUsage>): void {
  for (const [field] of HOUR_COUNTERS) into[field] += from[field];
}

/** A key's usage counted since the last write. */
export interface PendingUsage {
  requests: number;
  tokens: number;
  lastUsedAt: string;
  /** The same requests and tokens by the hour they were recorded in ("2026-11-26T06:00:00Z"). */
  hours: Map<string, HourUsage>;
}

/** What a failed usage flush reports (one call per failed attempt). */
export interface FlushFailure {
  error: Error;
  /** The database's code, e.g. SQLITE_BUSY, SQLITE_FULL or Postgres's ECONNREFUSED, when it has one. */
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
  /** Slowest flush attempt so far (close() not counted), ms: for SQLite, the longest usage stalled the event loop. */
  maxFlushDurationMs: number;
}

/** The flush and report settings every key store takes. */
export interface UsageFlushOptions {
  /** How often buffered usage is written, ms; 0 = only by flush() and close(). Default 1000. */
  flushIntervalMs?: number;
  /** Longest wait between retries of a failing flush, ms (backoff doubles up to it). Default 30 s. */
  maxFlushRetryDelayMs?: number;
  /** How long close() keeps trying to write buffered usage before reporting it, ms. Default 5000. */
  closeTimeoutMs?: number;
  /** Each failed flush attempt; default: one line on stderr. */
  onFlushError?: (failure: FlushFailure) => void;
  /** The first successful flush after failures. */
  onFlushRecovered?: (info: { failures: number; failingForMs: number }) => void;
  /** Usage close() gave up on; default: one JSON line per key on stderr (see formatUnwrittenUsage). */
  onUnwrittenUsage?: (usage: UnwrittenUsage[], error: Error) => void;
}

/** The hour an instant falls in, as the usage tables key it: "2026-11-26T06:00:00Z". */
export function hourOf(isoInstant: string): string {
  return `${isoInstant.slice(0, 13)}:00:00Z`;
}

/** One JSON line per key, for an operator to re-apply by hand: what close() could not write. */
export function formatUnwrittenUsage(location: string, usage: readonly UnwrittenUsage[], error: Error): string[] {
  return usage.map((u) =>
    JSON.stringify({
      event: "trellis_unwritten_usage",
      database: location,
      key_id: u.keyId,
      requests: u.requests,
      tokens: u.tokens,
      last_used_at: u.lastUsedAt,
      error: describeError(error),
    }),
  );
}

/** Hourly rows are kept 91 days: the daily chart's 90, and a day to spare. */
const USAGE_RETENTION_MS = 91 * 86_400_000;

/** The oldest hour kept in usage_hourly now. */
export function retentionCutoff(nowMs: number = Date.now()): string {
  return hourOf(new Date(nowMs - USAGE_RETENTION_MS).toISOString());
}

/** A batch taken out of the ledger for one write. */
export type UsageBatch = ReadonlyArray<[number, PendingUsage]>;

export abstract class UsageLedger {
  private readonly pending = new Map<number, PendingUsage>();
  private flushTimer: NodeJS.Timeout | undefined;
  protected closed = false;

  protected readonly flushIntervalMs: number;
  private readonly maxFlushRetryDelayMs: number;
  protected readonly closeTimeoutMs: number;
  private readonly onFlushError: (failure: FlushFailure) => void;
  private readonly onFlushRecovered: ((info: { failures: number; failingForMs: number }) => void) | undefined;
  private readonly onUnwrittenUsage: (usage: UnwrittenUsage[], error: Error) => void;

  private flushesTotal = 0;
  private flushFailuresTotal = 0;
  private consecutiveFailures = 0;
  private firstFailureAtMs: number | null = null;
  private lastError: string | null = null;
  protected lastErrorCode: string | null = null;
  private lastFailureAtMs: number | null = null;
  private lastSuccessAtMs: number | null = null;
  private maxFlushDurationMs = 0;
  private lastPruneMs = 0;

  /** `location`: the database as reports name it (a path, or a URL without its password). */
  constructor(location: string, options: UsageFlushOptions) {
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxFlushRetryDelayMs = Math.max(options.maxFlushRetryDelayMs ?? 30_000, this.flushIntervalMs);
    this.closeTimeoutMs = options.closeTimeoutMs ?? 5000;
    this.onFlushError =
      options.onFlushError ??
      ((failure) => {
        process.stderr.write(
          `trellis: writing API key usage to ${location} failed (${describeError(failure.error)}); ` +
            `${failure.pendingRequests} requests of ${failure.pendingKeys} keys kept in memory` +
            (failure.retryInMs === null ? "\n" : `, retrying in ${failure.retryInMs} ms\n`),
        );
      });
    this.onFlushRecovered = options.onFlushRecovered;
    this.onUnwrittenUsage =
      options.onUnwrittenUsage ??
      ((usage, error) => {
        for (const line of formatUnwrittenUsage(location, usage, error)) process.stderr.write(line + "\n");
      });
  }

  /** The periodic flush: one attempt (SQLite: synchronous, returning at once); failures are counted and reported, never thrown. */
  protected abstract flushOnTimer(): Promise<unknown> | boolean;

  /** Starts the periodic flush when the interval is above 0 (subclasses call it once ready). */
  protected startTimer(): void {
    if (this.flushIntervalMs > 0) this.scheduleFlush(this.flushIntervalMs);
  }

  /** Whether close() ran: nothing more is buffered or written. */
  get isClosed(): boolean {
    return this.closed;
  }

  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /** Usage buffered for a key and not written yet. */
  pendingFor(id: number): Readonly<PendingUsage> | undefined {
    return this.pending.get(id);
  }

  /** Pending usage by hour, of one key or all (an hour may repeat across keys). */
  *pendingHours(keyId?: number): Iterable<readonly [string, HourUsage]> {
    for (const [id, usage] of this.pending) {
      if (keyId === undefined || id === keyId) yield* usage.hours;
    }
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
    const entry = this.entryOf(id, now);
    entry.requests += 1;
    entry.tokens += tokens;
    const hour = this.hourEntry(entry, now);
    hour.requests += 1;
    hour.tokens += tokens;
  }

  /** Counts a refused or failed request of the key in its hour (the charts' error counts). */
  recordOutcome(id: number, outcome: RequestOutcome): void {
    if (this.closed) return;
    const now = new Date().toISOString();
    const hour = this.hourEntry(this.entryOf(id, now), now);
    if (outcome === "rate-limited") hour.rateLimited++;
    else if (outcome === "client-error") hour.clientErrors++;
    else hour.serverErrors++;
  }

  /**
   * Notes that the key authenticated a request now: its last use, kept in memory and written by
   * the next flush with the usage (no write per request). Nothing after close.
   */
  touch(id: number, nowIso: string = new Date().toISOString()): void {
    if (!this.closed) this.entryOf(id, nowIso);
  }

  /** The key's pending entry, created if needed; its last use moved to `lastUsedAt` if later. */
  private entryOf(id: number, lastUsedAt: string): PendingUsage {
    let entry = this.pending.get(id);
    if (!entry) {
      entry = { requests: 0, tokens: 0, lastUsedAt, hours: new Map() };
      this.pending.set(id, entry);
    } else if (lastUsedAt > entry.lastUsedAt) {
      entry.lastUsedAt = lastUsedAt;
    }
    return entry;
  }

  private hourEntry(entry: PendingUsage, isoInstant: string): HourUsage {
    const key = hourOf(isoInstant);
    let hour = entry.hours.get(key);
    if (!hour) {
      hour = emptyHour();
      entry.hours.set(key, hour);
    }
    return hour;
  }

  /**
   * What a flush attempt writes: the pending batch (the ledger is empty afterwards), or, when
   * there is nothing to write, the attempt's answer: true when nothing is pending.
   */
  protected batchToWrite(): UsageBatch | boolean {
    if (this.closed) return !this.hasPending;
    if (!this.hasPending) {
      this.noteNothingToWrite();
      return true;
    }
    return this.takeBatch();
  }

  /** Everything pending, for one write; the ledger is empty afterwards. */
  private takeBatch(): UsageBatch {
    const batch = [...this.pending];
    this.pending.clear();
    return batch;
  }

  /** A batch whose write failed goes back, merged with what was recorded meanwhile. */
  protected restoreBatch(batch: UsageBatch): void {
    for (const [id, usage] of batch) {
      const entry = this.entryOf(id, usage.lastUsedAt);
      entry.requests += usage.requests;
      entry.tokens += usage.tokens;
      for (const [key, hour] of usage.hours) {
        const into = entry.hours.get(key);
        if (into) addHour(into, hour);
        else entry.hours.set(key, { ...hour });
      }
    }
  }

  private scheduleFlush(delayMs: number): void {
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      if (this.closed) return;
      const next = () => {
        if (!this.closed) this.scheduleFlush(this.nextFlushDelayMs());
      };
      const attempt = this.flushOnTimer();
      if (attempt instanceof Promise) attempt.then(next, next);
      else next();
    }, delayMs);
    this.flushTimer.unref();
  }

  protected stopTimer(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }

  /** The interval while healthy; doubling from it per consecutive failure, up to the cap. */
  private nextFlushDelayMs(): number {
    if (this.consecutiveFailures === 0) return this.flushIntervalMs;
    return Math.min(this.maxFlushRetryDelayMs, this.flushIntervalMs * 2 ** Math.min(this.consecutiveFailures, 30));
  }

  /** Whether a write should also delete hourly rows past retention (once an hour; keeps the table bounded). */
  protected pruneDue(nowMs: number = Date.now()): boolean {
    if (nowMs - this.lastPruneMs < 3_600_000) return false;
    this.lastPruneMs = nowMs;
    return true;
  }

  /** Nothing was pending: as good as a successful write for health. */
  private noteNothingToWrite(): void {
    this.lastSuccessAtMs = Date.now();
  }

  protected noteFlushDuration(startedMs: number): void {
    const took = performance.now() - startedMs;
    if (took > this.maxFlushDurationMs) this.maxFlushDurationMs = took;
  }

  protected noteSuccess(): void {
    this.flushesTotal++;
    this.lastSuccessAtMs = Date.now();
    if (this.consecutiveFailures > 0) {
      const info = { failures: this.consecutiveFailures, failingForMs: Date.now() - (this.firstFailureAtMs ?? Date.now()) };
      this.consecutiveFailures = 0;
      this.firstFailureAtMs = null;
      this.callSafely(() => this.onFlushRecovered?.(info));
    }
  }

  /** Counts a failed attempt; `report`: tell onFlushError (close()'s attempts report once, at the end). */
  protected noteFailure(error: unknown, report: boolean): void {
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

  /** After close()'s last attempt: what is still pending goes to onUnwrittenUsage, key by key. */
  protected reportUnwritten(): void {
    if (this.pending.size === 0) return;
    const usage = [...this.pending].map(([keyId, u]) => ({ keyId, requests: u.requests, tokens: u.tokens, lastUsedAt: u.lastUsedAt }));
    this.pending.clear();
    const error = new Error(this.lastError ?? "usage could not be written");
    this.callSafely(() => this.onUnwrittenUsage(usage, error));
  }

  /** A reporting callback that throws must not turn a kept failure into a crash. */
  protected callSafely(callback: () => void): void {
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
}
