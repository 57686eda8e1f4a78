/**
 * API keys and their usage, in SQLite (better-sqlite3, WAL). Keys are shown once at creation
 * and stored only as sha256 hashes. Usage counters are accumulated in memory and flushed in one
 * transaction per interval, so a request costs one indexed read and no write.
 *
 * A flush that fails (another process holds the write lock, the disk is full) keeps the counts
 * in memory, is reported, and is retried with backoff; nothing here may throw out of a timer,
 * since that would end the process. better-sqlite3 is synchronous: every millisecond a statement
 * waits for a lock is a millisecond the whole service (HTTP, decode scheduling) stands still, so
 * the usage flush waits only FLUSH_BUSY_TIMEOUT_MS for the lock and leaves the rest to its retry.
 *
 * Schema changes are numbered migrations applied in order inside a transaction and recorded in
 * `PRAGMA user_version`; the database is never dropped or recreated.
 */
import Database from "better-sqlite3";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";

export const KEY_PREFIX = "trl_";

/** Longest key name, in Unicode code points (what JSON Schema's maxLength counts). */
export const KEY_NAME_MAX_CHARS = 100;

/** Shortest TRELLIS_ADMIN_TOKEN accepted; generated tokens are 36 characters (24 random bytes). */
export const MIN_ADMIN_TOKEN_CHARS = 24;

/**
 * How long the usage flush waits for another connection's write lock, ms. Other writers (the
 * CLI's key commands, the dashboard) hold it for well under a millisecond, so this waits out
 * ordinary contention; a longer hold (a backup, a sqlite3 shell inside a transaction) fails the
 * attempt fast and the retry comes later, instead of stalling the event loop for seconds.
 */
export const FLUSH_BUSY_TIMEOUT_MS = 20;

export interface ApiKeyInfo {
  id: number;
  name: string;
  /** First characters of the key, to recognise it in lists (the key itself is never stored). */
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  requests: number;
  tokens: number;
  lastUsedAt: string | null;
}

export interface CreatedKey {
  id: number;
  name: string;
  /** The secret; returned exactly once. */
  key: string;
  prefix: string;
  createdAt: string;
}

export interface AuthenticatedKey {
  id: number;
  name: string;
}

export class KeyNotFoundError extends Error {
  constructor(readonly id: number) {
    super(`no API key with id ${id}`);
    this.name = "KeyNotFoundError";
  }
}

/** A key name the store refuses; the message names the field (`name`) and says why. */
export class KeyNameError extends Error {
  readonly field = "name";
  constructor(message: string) {
    super(message);
    this.name = "KeyNameError";
  }
}

/** TRELLIS_ADMIN_TOKEN is set but too short to resist guessing. */
export class AdminTokenError extends Error {
  constructor(readonly length: number) {
    super(
      `TRELLIS_ADMIN_TOKEN (--admin-token) is ${length} characters; it must be at least ${MIN_ADMIN_TOKEN_CHARS}: ` +
        "use a long random value (e.g. the output of: openssl rand -base64 32), or unset it to have one generated",
    );
    this.name = "AdminTokenError";
  }
}

/** Why the key store could not be opened or written, as far as the operator can act on it. */
export type KeyStoreFailure =
  | "not-a-directory"
  | "not-writable"
  | "locked"
  | "disk-full"
  | "not-a-database"
  | "newer-schema"
  | "io";

/**
 * The key store's database could not be opened, migrated or written. `message` names the
 * database path and the cause; `failure` classifies it; `code` is SQLite's or the OS's code.
 */
export class KeyStoreError extends Error {
  constructor(
    readonly path: string,
    readonly failure: KeyStoreFailure,
    readonly reason: string,
    readonly code: string | undefined,
    options?: { cause?: unknown; operation?: string },
  ) {
    super(`${options?.operation ?? "cannot open the key store"} ${path}: ${reason}`, { cause: options?.cause });
    this.name = "KeyStoreError";
  }
}

/** Migration N brings the schema from version N to N + 1. Append only; never edit a shipped one. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE api_keys (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     revoked_at TEXT,
     requests INTEGER NOT NULL DEFAULT 0,
     tokens INTEGER NOT NULL DEFAULT 0,
     last_used_at TEXT
   );
   CREATE TABLE settings (
     name TEXT PRIMARY KEY,
     value TEXT NOT NULL
   );`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString("base64url");
}

/** Unicode code points in `text` (a lone surrogate counts as one). */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * Characters a key name may not hold: C0/C1 controls (a name printed by `trellis keys list`
 * must not drive the terminal), lone surrogates (not text: SQLite would store U+FFFD, so the
 * name read back would differ from the one accepted), line/paragraph separators, and bidi
 * embeddings/overrides/isolates (they make a listed name display as another).
 */
const FORBIDDEN_NAME_CHARS = "\\p{Cc}\\p{Cs}\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069";
const FORBIDDEN_NAME_CHAR = new RegExp(`[${FORBIDDEN_NAME_CHARS}]`, "u");
const FORBIDDEN_NAME_CHAR_ALL = new RegExp(`[${FORBIDDEN_NAME_CHARS}]`, "gu");

/**
 * A stored name as it may be printed to a terminal: the characters names may not hold as
 * \u{…} escapes. Rows written before names were checked may hold them, and an escape sequence
 * in a name must not drive the operator's terminal.
 */
export function printableKeyName(name: string): string {
  return name.replace(FORBIDDEN_NAME_CHAR_ALL, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** The name as stored (trimmed), or a KeyNameError saying why it is refused. */
export function normalizeKeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw new KeyNameError("name must not be empty");
  const length = codePointLength(trimmed);
  if (length > KEY_NAME_MAX_CHARS) {
    throw new KeyNameError(`name must be at most ${KEY_NAME_MAX_CHARS} characters (got ${length})`);
  }
  const bad = FORBIDDEN_NAME_CHAR.exec(trimmed);
  if (bad) {
    const char = bad[0].codePointAt(0)!;
    const at = codePointLength(trimmed.slice(0, bad.index)) + 1;
    const what = char >= 0xd800 && char <= 0xdfff
      ? "a lone surrogate (not valid Unicode text)"
      : char >= 0x2028
        ? "a line separator or bidirectional formatting character"
        : "a control character";
    throw new KeyNameError(`name must not contain ${what}: U+${char.toString(16).toUpperCase().padStart(4, "0")} at character ${at}`);
  }
  return trimmed;
}

interface PendingUsage {
  requests: number;
  tokens: number;
  lastUsedAt: string;
}

interface KeyRow {
  id: number;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  requests: number;
  tokens: number;
  last_used_at: string | null;
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

export interface KeyStoreOptions {
  /** Folder for trellis.db; ":memory:" for a throwaway store (tests). */
  dataDir: string;
  /** How often buffered usage is written, ms; 0 = only by flush() and close(). */
  flushIntervalMs?: number;
  /** Longest wait between retries of a failing flush, ms (backoff doubles up to it). Default 30 s. */
  maxFlushRetryDelayMs?: number;
  /**
   * How long opening, migrating, and key and setting writes wait for another connection's lock,
   * ms. Default 5000 (command-line use); a server passes less, since the wait blocks its event
   * loop. The usage flush uses FLUSH_BUSY_TIMEOUT_MS whatever this is.
   */
  busyTimeoutMs?: number;
  /** How long close() keeps trying to write buffered usage before reporting it, ms. Default 5000. */
  closeTimeoutMs?: number;
  /** Each failed flush attempt; default: one line on stderr. */
  onFlushError?: (failure: FlushFailure) => void;
  /** The first successful flush after failures. */
  onFlushRecovered?: (info: { failures: number; failingForMs: number }) => void;
  /** Usage close() gave up on; default: one JSON line per key on stderr (see formatUnwrittenUsage). */
  onUnwrittenUsage?: (usage: UnwrittenUsage[], error: Error) => void;
}

const SQLITE_BUSY_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_RECOVERY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_TIMEOUT", "SQLITE_LOCKED", "SQLITE_LOCKED_SHAREDCACHE"]);

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = errorCode(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
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

/** Names the cause of an open, migrate or write failure in words an operator can act on. */
function classifyFailure(error: unknown, dataDir: string, path: string): { failure: KeyStoreFailure; reason: string } {
  const code = errorCode(error) ?? "";
  const message = describeError(error);
  const isDir = (p: string): boolean | null => {
    try {
      return statSync(p).isDirectory();
    } catch {
      return null;
    }
  };
  const writable = (p: string): boolean => {
    try {
      accessSync(p, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (code === "EEXIST" || code === "ENOTDIR" || isDir(dataDir) === false) {
    return { failure: "not-a-directory", reason: `the data folder ${dataDir} is not a directory (a file is in the way)` };
  }
  if (isDir(path) === true) {
    return { failure: "not-a-directory", reason: `${path} is a directory, not a database file` };
  }
  if (SQLITE_BUSY_CODES.has(code)) {
    return { failure: "locked", reason: `the database is locked by another process (${message})` };
  }
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT") {
    return { failure: "disk-full", reason: `the disk is full (${message})` };
  }
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return { failure: "not-a-database", reason: `the file is not a valid SQLite database (${message})` };
  }
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
    return { failure: "not-writable", reason: `the data folder ${dataDir} cannot be created or written (${message})` };
  }
  if (code.startsWith("SQLITE_CANTOPEN") || code.startsWith("SQLITE_READONLY") || code.startsWith("SQLITE_IOERR") || code === "SQLITE_PERM") {
    if (isDir(dataDir) && !writable(dataDir)) {
      return { failure: "not-writable", reason: `the data folder ${dataDir} is not writable by this user (SQLite creates the database and its -wal and -shm files there)` };
    }
    if (isDir(path) === false && !writable(path)) {
      return { failure: "not-writable", reason: `the database file is not writable by this user (${message})` };
    }
    if (code.startsWith("SQLITE_READONLY")) {
      return { failure: "not-writable", reason: `the database cannot be written (${message}); is the folder on a read-only file system?` };
    }
  }
  return { failure: "io", reason: message };
}

export class KeyStore {
  readonly path: string;
  private readonly dataDir: string;
  private readonly db: Database.Database;
  private readonly pending = new Map<number, PendingUsage>();
  private flushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly flushIntervalMs: number;
  private readonly maxFlushRetryDelayMs: number;
  private readonly busyTimeoutMs: number;
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

  private readonly selectByHash: Database.Statement<[string], { id: number; name: string; revoked_at: string | null }>;
  private readonly selectAll: Database.Statement<[], KeyRow>;
  private readonly addUsage: Database.Statement<[number, number, string, number]>;
  private readonly writeUsage: Database.Transaction<(batch: ReadonlyArray<[number, PendingUsage]>) => void>;

  constructor(options: KeyStoreOptions) {
    this.dataDir = options.dataDir;
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.maxFlushRetryDelayMs = Math.max(options.maxFlushRetryDelayMs ?? 30_000, this.flushIntervalMs);
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.closeTimeoutMs = options.closeTimeoutMs ?? 5000;
    this.path = options.dataDir === ":memory:" ? ":memory:" : join(options.dataDir, "trellis.db");
    this.onFlushError = options.onFlushError ?? ((failure) => {
      process.stderr.write(
        `trellis: writing API key usage to ${this.path} failed (${describeError(failure.error)}); ` +
          `${failure.pendingRequests} requests of ${failure.pendingKeys} keys kept in memory` +
          (failure.retryInMs === null ? "\n" : `, retrying in ${failure.retryInMs} ms\n`),
      );
    });
    this.onFlushRecovered = options.onFlushRecovered;
    this.onUnwrittenUsage = options.onUnwrittenUsage ?? ((usage, error) => {
      for (const line of formatUnwrittenUsage(this.path, usage, error)) process.stderr.write(line + "\n");
    });

    let db: Database.Database | undefined;
    try {
      if (options.dataDir !== ":memory:") mkdirSync(options.dataDir, { recursive: true });
      db = new Database(this.path);
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      this.db = db;
      this.migrate();
    } catch (error) {
      db?.close();
      if (error instanceof KeyStoreError) throw error;
      const { failure, reason } = classifyFailure(error, this.dataDir, this.path);
      throw new KeyStoreError(this.path, failure, reason, errorCode(error), { cause: error });
    }
    this.selectByHash = this.db.prepare("SELECT id, name, revoked_at FROM api_keys WHERE hash = ?");
    this.selectAll = this.db.prepare(
      "SELECT id, name, prefix, created_at, revoked_at, requests, tokens, last_used_at FROM api_keys ORDER BY id",
    );
    this.addUsage = this.db.prepare(
      `UPDATE api_keys SET requests = requests + ?, tokens = tokens + ?,
         last_used_at = max(coalesce(last_used_at, ''), ?) WHERE id = ?`,
    );
    this.writeUsage = this.db.transaction((batch) => {
      for (const [id, usage] of batch) this.addUsage.run(usage.requests, usage.tokens, usage.lastUsedAt, id);
    });
    if (this.flushIntervalMs > 0) this.scheduleFlush(this.flushIntervalMs);
  }

  private migrate(): void {
    const current = this.db.pragma("user_version", { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new KeyStoreError(
        this.path,
        "newer-schema",
        `it has schema version ${current}, newer than this Trellis (${MIGRATIONS.length}); upgrade Trellis`,
        undefined,
      );
    }
    for (let version = current; version < MIGRATIONS.length; version++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[version]!);
        this.db.pragma(`user_version = ${version + 1}`);
      }).immediate();
    }
  }

  /** Runs a key or setting write; SQLite failures become a KeyStoreError naming the database. */
  private write<T>(operation: string, run: () => T): T {
    try {
      return run();
    } catch (error) {
      if (errorCode(error)?.startsWith("SQLITE_") !== true) throw error;
      const { failure, reason } = classifyFailure(error, this.dataDir, this.path);
      throw new KeyStoreError(this.path, failure, reason, errorCode(error), { cause: error, operation });
    }
  }

  get schemaVersion(): number {
    return this.db.pragma("user_version", { simple: true }) as number;
  }

  /** Throws KeyNameError for a name normalizeKeyName refuses, KeyStoreError if it cannot be written. */
  createKey(name: string): CreatedKey {
    const trimmed = normalizeKeyName(name);
    const key = generateApiKey();
    const prefix = key.slice(0, KEY_PREFIX.length + 6);
    const createdAt = new Date().toISOString();
    const info = this.write("cannot create the key in", () =>
      this.db
        .prepare("INSERT INTO api_keys (name, prefix, hash, created_at) VALUES (?, ?, ?, ?)")
        .run(trimmed, prefix, sha256Hex(key), createdAt),
    );
    return { id: Number(info.lastInsertRowid), name: trimmed, key, prefix, createdAt };
  }

  /** Marks a key revoked (kept for its usage history). Returns false if it was revoked already. */
  revokeKey(id: number): boolean {
    const row = this.db.prepare("SELECT revoked_at FROM api_keys WHERE id = ?").get(id) as
      | { revoked_at: string | null }
      | undefined;
    if (!row) throw new KeyNotFoundError(id);
    if (row.revoked_at !== null) return false;
    this.write("cannot revoke the key in", () =>
      this.db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(new Date().toISOString(), id),
    );
    return true;
  }

  /** The active key a secret belongs to, or null (unknown or revoked). */
  authenticate(secret: string): AuthenticatedKey | null {
    if (!secret.startsWith(KEY_PREFIX) || secret.length > 200) return null;
    const row = this.selectByHash.get(sha256Hex(secret));
    if (!row || row.revoked_at !== null) return null;
    return { id: row.id, name: row.name };
  }

  /** Buffers one request's usage; written by the next flush. */
  recordUsage(id: number, tokens: number): void {
    const now = new Date().toISOString();
    if (this.closed) {
      // Recorded after close (a caller shutting down out of order): nothing will write it.
      const usage = [{ keyId: id, requests: 1, tokens, lastUsedAt: now }];
      this.callSafely(() => this.onUnwrittenUsage(usage, new Error("the key store was already closed")));
      return;
    }
    this.addPending(id, 1, tokens, now);
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

  /** All keys with usage, buffered usage included. */
  listKeys(): ApiKeyInfo[] {
    return this.selectAll.all().map((row) => {
      const extra = this.pending.get(row.id);
      const lastUsed = extra && (row.last_used_at === null || extra.lastUsedAt > row.last_used_at)
        ? extra.lastUsedAt
        : row.last_used_at;
      return {
        id: row.id,
        name: row.name,
        prefix: row.prefix,
        createdAt: row.created_at,
        revokedAt: row.revoked_at,
        requests: row.requests + (extra?.requests ?? 0),
        tokens: row.tokens + (extra?.tokens ?? 0),
        lastUsedAt: lastUsed,
      };
    });
  }

  getSetting(name: string): string | null {
    const row = this.db.prepare("SELECT value FROM settings WHERE name = ?").get(name) as { value: string } | undefined;
    return row ? row.value : null;
  }

  setSetting(name: string, value: string): void {
    this.write("cannot write a setting to", () =>
      this.db
        .prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value")
        .run(name, value),
    );
  }

  /**
   * Writes buffered usage, trying for up to closeTimeoutMs (the lock wait then blocks, which is
   * harmless at shutdown), then closes the database. Usage that still could not be written is
   * handed to onUnwrittenUsage, key by key, instead of being dropped silently.
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
    this.db.close();
  }
}

/**
 * The dashboard's admin credential: TRELLIS_ADMIN_TOKEN when configured, else a token generated
 * at first start (returned once so the caller can print it) whose hash is kept in the store.
 * A configured token shorter than MIN_ADMIN_TOKEN_CHARS is refused with an AdminTokenError:
 * its length is what makes guessing infeasible (the sign-in limiter only throttles).
 */
export function ensureAdminToken(
  store: KeyStore,
  configured: string,
): { hash: string; generated: string | null } {
  if (configured.length > 0) {
    const length = codePointLength(configured);
    if (length < MIN_ADMIN_TOKEN_CHARS) throw new AdminTokenError(length);
    return { hash: sha256Hex(configured), generated: null };
  }
  const stored = store.getSetting("admin_token_sha256");
  if (stored) return { hash: stored, generated: null };
  const token = "adm_" + randomBytes(24).toString("base64url");
  const hash = sha256Hex(token);
  store.setSetting("admin_token_sha256", hash);
  return { hash, generated: token };
}
