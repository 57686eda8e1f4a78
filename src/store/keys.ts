/**
 * API keys and their usage, in SQLite (better-sqlite3, WAL): the KeyStore facade. Keys are shown
 * once at creation and stored only as sha256 hashes (credentials.ts); names follow names.ts;
 * usage is buffered in memory and flushed in one transaction per interval (usage.ts), so a
 * request costs one indexed read and no write; the schema is migrated on open (migrations.ts);
 * failures to open or write are KeyStoreErrors that name their cause (errors.ts); token quotas are
 * enforced by reservation (quota.ts); expiry and per-key rate limits are columns checked at
 * authentication (key-settings.ts), and the last use is noted then, in memory, and written by the
 * usage flush.
 */
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { KEY_PREFIX, generateApiKey, sha256Hex } from "./credentials.js";
import { KeyNotFoundError, KeyStoreError, classifyFailure, errorCode } from "./errors.js";
import { migrate } from "./migrations.js";
import { normalizeKeyName } from "./names.js";
import { KeyExpiredError, checkExpiry, checkRateLimit, isExpired } from "./key-settings.js";
import { ReservationLedger, checkQuota, quotaStatus, reserveWithin, type QuotaStatus, type TokenReservation } from "./quota.js";
import { SqliteResponseStore } from "./responses.js";
import { UsageBuffer } from "./usage.js";
import { usageHistoryRead, type HourRow, type UsageBucketSize, type UsagePoint } from "./usage-history.js";
import type { PendingUsage, RequestOutcome, UsageFlushOptions, UsageFlushStats } from "./usage-ledger.js";

export interface ApiKeyInfo {
  id: number;
  name: string;
  /** First characters of the key, to recognise it in lists (the key itself is never stored). */
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  requests: number;
  /** Tokens generated, buffered usage included: what counts against the quota. */
  tokens: number;
  lastUsedAt: string | null;
  /** The most tokens the key may generate in all; null: unlimited. */
  quota: number | null;
  /** From this instant (ISO 8601, UTC) the key is refused; null: never. */
  expiresAt: string | null;
  /** Requests per minute, replacing the service's limit for this key; null: the service's. */
  rateLimit: number | null;
}

export interface CreatedKey {
  id: number;
  name: string;
  /** The secret; returned exactly once. */
  key: string;
  prefix: string;
  createdAt: string;
  quota: number | null;
  expiresAt: string | null;
  rateLimit: number | null;
}

/** Settings of a new key; each absent or null: none. */
export interface KeySettings {
  quota?: number | null;
  /** A Date, "YYYY-MM-DD" (00:00 UTC) or an ISO 8601 date and time with its offset. */
  expiresAt?: string | Date | null;
  rateLimit?: number | null;
}

/**
 * A new key before either store writes it: name and settings checked (KeyNameError,
 * KeySettingError), the secret generated, and the hash the row keeps instead of it.
 */
export function newKey(name: string, settings: KeySettings): { key: Omit<CreatedKey, "id">; hash: string } {
  const trimmed = normalizeKeyName(name);
  const quota = checkQuota(settings.quota ?? null);
  const expiresAt = checkExpiry(settings.expiresAt ?? null);
  const rateLimit = checkRateLimit(settings.rateLimit ?? null);
  const secret = generateApiKey();
  const prefix = secret.slice(0, KEY_PREFIX.length + 6);
  const key = { name: trimmed, key: secret, prefix, createdAt: new Date().toISOString(), quota, expiresAt, rateLimit };
  return { key, hash: sha256Hex(secret) };
}

export interface AuthenticatedKey {
  id: number;
  name: string;
}

/** An authenticated key with its quota as it stands (null: unlimited), from the same read. */
export interface KeyAccess extends AuthenticatedKey {
  quota: QuotaStatus | null;
}

/** What the API's key check needs of a key, from the same one read: KeyAccess and its rate limit. */
export interface KeyAdmission extends KeyAccess {
  /** Requests per minute for this key; null: the service's limit. */
  rateLimit: number | null;
}

/** A row of api_keys, as both stores read it. */
export interface KeyRow {
  id: number;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  requests: number;
  tokens: number;
  last_used_at: string | null;
  token_quota: number | null;
  expires_at: string | null;
  rate_limit: number | null;
}

/** A key's row with the usage this process has not written yet. */
export function apiKeyInfoOf(row: KeyRow, pending: Readonly<PendingUsage> | undefined): ApiKeyInfo {
  const lastUsed = pending && (row.last_used_at === null || pending.lastUsedAt > row.last_used_at) ? pending.lastUsedAt : row.last_used_at;
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    requests: row.requests + (pending?.requests ?? 0),
    tokens: row.tokens + (pending?.tokens ?? 0),
    lastUsedAt: lastUsed,
    quota: row.token_quota,
    expiresAt: row.expires_at,
    rateLimit: row.rate_limit,
  };
}

export interface KeyStoreOptions extends UsageFlushOptions {
  /** Folder for trellis.db; ":memory:" for a throwaway store (tests). */
  dataDir: string;
  /**
   * How long opening, migrating, and key and setting writes wait for another connection's lock,
   * ms. Default 5000 (command-line use); a server passes less, since the wait blocks its event
   * loop. The usage flush uses FLUSH_BUSY_TIMEOUT_MS whatever this is.
   */
  busyTimeoutMs?: number;
  /** Migrate when opening (default); false: refuse a schema that is not current. */
  migrate?: boolean;
}

export class KeyStore {
  readonly path: string;
  private readonly dataDir: string;
  private readonly db: Database.Database;
  private readonly usage: UsageBuffer;
  private readonly reservations = new ReservationLedger();
  /** Stored responses of the OpenAI Responses API, in the same database. */
  readonly responses: SqliteResponseStore;

  private readonly selectByHash: Database.Statement<
    [string],
    {
      id: number;
      name: string;
      revoked_at: string | null;
      tokens: number;
      token_quota: number | null;
      expires_at: string | null;
      rate_limit: number | null;
    }
  >;
  private readonly selectQuota: Database.Statement<[number], { tokens: number; token_quota: number | null }>;
  private readonly selectAll: Database.Statement<[], KeyRow>;

  constructor(options: KeyStoreOptions) {
    this.dataDir = options.dataDir;
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.path = options.dataDir === ":memory:" ? ":memory:" : join(options.dataDir, "trellis.db");

    let db: Database.Database | undefined;
    try {
      if (options.dataDir !== ":memory:") mkdirSync(options.dataDir, { recursive: true });
      db = new Database(this.path);
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      this.db = db;
      migrate(db, this.path, options.migrate ?? true);
    } catch (error) {
      db?.close();
      if (error instanceof KeyStoreError) throw error;
      const { failure, reason } = classifyFailure(error, this.dataDir, this.path);
      throw new KeyStoreError(this.path, failure, reason, errorCode(error), { cause: error });
    }
    this.selectByHash = this.db.prepare(
      "SELECT id, name, revoked_at, tokens, token_quota, expires_at, rate_limit FROM api_keys WHERE hash = ?",
    );
    this.selectQuota = this.db.prepare("SELECT tokens, token_quota FROM api_keys WHERE id = ?");
    this.selectAll = this.db.prepare(
      `SELECT id, name, prefix, created_at, revoked_at, requests, tokens, last_used_at, token_quota, expires_at, rate_limit
         FROM api_keys ORDER BY id`,
    );
    this.usage = new UsageBuffer(this.db, this.path, options, busyTimeoutMs);
    this.responses = new SqliteResponseStore(this.db, (operation, run) => this.write(operation, run));
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

  /**
   * Throws KeyNameError for a name normalizeKeyName refuses, QuotaValueError for a quota that is
   * not a whole number of tokens (null or absent: unlimited), KeySettingError for an expiry or
   * rate limit checkExpiry or checkRateLimit refuses, KeyStoreError if it cannot be written.
   */
  createKey(name: string, options: KeySettings = {}): CreatedKey {
    const { key, hash } = newKey(name, options);
    const info = this.write("cannot create the key in", () =>
      this.db
        .prepare("INSERT INTO api_keys (name, prefix, hash, created_at, token_quota, expires_at, rate_limit) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .run(key.name, key.prefix, hash, key.createdAt, key.quota, key.expiresAt, key.rateLimit),
    );
    return { id: Number(info.lastInsertRowid), ...key };
  }

  /**
   * Sets when a key expires (null: never; see checkExpiry for the forms). An instant already
   * past expires it at once; a later one (or null) opens it again. Applies from the next request.
   * Returns the stored instant. Throws KeyNotFoundError, KeySettingError, KeyStoreError.
   */
  setExpiry(id: number, expiresAt: string | Date | null): string | null {
    const checked = checkExpiry(expiresAt);
    const info = this.write("cannot set the expiry in", () =>
      this.db.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?").run(checked, id),
    );
    if (info.changes === 0) throw new KeyNotFoundError(id);
    return checked;
  }

  /**
   * Sets a key's rate limit in requests per minute (null: the service's TRELLIS_RATE_LIMIT again).
   * Applies from the next request. Throws KeyNotFoundError, KeySettingError, KeyStoreError.
   */
  setRateLimit(id: number, rateLimit: number | null): void {
    const checked = checkRateLimit(rateLimit);
    const info = this.write("cannot set the rate limit in", () =>
      this.db.prepare("UPDATE api_keys SET rate_limit = ? WHERE id = ?").run(checked, id),
    );
    if (info.changes === 0) throw new KeyNotFoundError(id);
  }

  /**
   * Sets a key's token quota (null: unlimited). It bounds the key's whole usage, tokens generated
   * before it was set included, and applies from the next admission; generations in progress
   * keep their reservations. Throws KeyNotFoundError, QuotaValueError, KeyStoreError.
   */
  setQuota(id: number, quota: number | null): void {
    const checked = checkQuota(quota);
    const info = this.write("cannot set the quota in", () =>
      this.db.prepare("UPDATE api_keys SET token_quota = ? WHERE id = ?").run(checked, id),
    );
    if (info.changes === 0) throw new KeyNotFoundError(id);
  }

  /** Marks a key revoked (kept for its usage history). Returns false if it was revoked already. */
  revokeKey(id: number): boolean {
    const row = this.db.prepare("SELECT revoked_at FROM api_keys WHERE id = ?").get(id) as { revoked_at: string | null } | undefined;
    if (!row) throw new KeyNotFoundError(id);
    if (row.revoked_at !== null) return false;
    this.write("cannot revoke the key in", () =>
      this.db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(new Date().toISOString(), id),
    );
    return true;
  }

  /** The active key a secret belongs to, or null (unknown, revoked or expired). */
  authenticate(secret: string): AuthenticatedKey | null {
    const key = this.authenticateWithQuota(secret);
    return key ? { id: key.id, name: key.name } : null;
  }

  /** authenticate() with the key's quota as it stands, in the same one indexed read. */
  authenticateWithQuota(secret: string): KeyAccess | null {
    const row = this.activeRow(secret);
    if (!row || isExpired(row.expires_at)) return null;
    return { id: row.id, name: row.name, quota: this.statusOf(row.id, row.token_quota, row.tokens) };
  }

  /**
   * The API's key check: the key's quota and rate limit from one indexed read, and its last use
   * noted in memory (written by the usage flush: no write per request). Null for an unknown or
   * revoked key; a KeyExpiredError (401) for a key past its expiry, whose last use stays as it was.
   */
  authenticateRequest(secret: string, nowMs: number = Date.now()): KeyAdmission | null {
    const row = this.activeRow(secret);
    if (!row) return null;
    if (isExpired(row.expires_at, nowMs)) throw new KeyExpiredError(row.id, row.expires_at!);
    this.usage.touch(row.id, new Date(nowMs).toISOString());
    return {
      id: row.id,
      name: row.name,
      quota: this.statusOf(row.id, row.token_quota, row.tokens),
      rateLimit: row.rate_limit,
    };
  }

  private activeRow(secret: string) {
    if (!secret.startsWith(KEY_PREFIX) || secret.length > 200) return undefined;
    const row = this.selectByHash.get(sha256Hex(secret));
    return row && row.revoked_at === null ? row : undefined;
  }

  private statusOf(id: number, quota: number | null, storedTokens: number): QuotaStatus | null {
    if (quota === null) return null;
    return quotaStatus(quota, storedTokens + (this.usage.pendingFor(id)?.tokens ?? 0), this.reservations.reservedFor(id));
  }

  /** A key's quota now (usage not yet written included); null: unlimited, or no such key. */
  quotaStatus(id: number): QuotaStatus | null {
    const row = this.selectQuota.get(id);
    return row ? this.statusOf(id, row.token_quota, row.tokens) : null;
  }

  /**
   * Admits a generation against the key's quota: holds `tokens` (the most it may generate) until
   * recordUsage charges what it generated. Refused with a QuotaExceededError when the key is
   * exhausted or fewer than `tokens` are available (quota − used − reserved); `tokens` undefined
   * reserves nothing and checks only exhaustion. Null when the key has no quota.
   */
  reserveTokens(id: number, tokens?: number): TokenReservation | null {
    return reserveWithin(this.reservations, id, tokens, () => this.quotaStatus(id));
  }

  /**
   * Buffers one request's usage (written by the next flush) and releases its reservations in the
   * same step: the tokens are charged, the rest of the hold is given back.
   */
  recordUsage(id: number, tokens: number, reservations: readonly TokenReservation[] = []): void {
    this.usage.record(id, tokens);
    for (const reservation of reservations) this.reservations.release(reservation);
  }

  /** Generations holding a reservation, all keys together (tests, diagnostics). */
  get reservationsInProgress(): number {
    return this.reservations.size;
  }

  /** Counts a refused or failed request of the key in its hour (written with the usage). */
  recordOutcome(id: number, outcome: RequestOutcome): void {
    this.usage.recordOutcome(id, outcome);
  }

  /**
   * Writes buffered usage in one transaction. Returns true when nothing is left pending; on a
   * failure the counts stay buffered (merged with any recorded meanwhile), the failure is
   * counted and reported, and false is returned. Never throws.
   */
  flush(): boolean {
    return this.usage.flush();
  }

  stats(): UsageFlushStats {
    return this.usage.stats();
  }

  /** All keys with usage, buffered usage included. */
  listKeys(): ApiKeyInfo[] {
    return this.selectAll.all().map((row) => apiKeyInfoOf(row, this.usage.pendingFor(row.id)));
  }

  getSetting(name: string): string | null {
    const row = this.db.prepare("SELECT value FROM settings WHERE name = ?").get(name) as { value: string } | undefined;
    return row ? row.value : null;
  }

  /** Stores `value` unless the setting exists; returns what is stored (one statement: no race between processes). */
  claimSetting(name: string, value: string): string {
    this.write("cannot write a setting to", () =>
      this.db.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO NOTHING").run(name, value),
    );
    return this.getSetting(name)!;
  }

  /** Usage per hour (the last 48) or per day (the last 90, UTC), of one key or all, usage not written yet included. */
  usageHistory(bucket: UsageBucketSize, options: { keyId?: number; nowMs?: number } = {}): UsagePoint[] {
    const read = usageHistoryRead(
      bucket,
      options,
      (keyId) => this.usage.pendingHours(keyId),
      () => "?",
    );
    return read.points(this.db.prepare<unknown[], HourRow>(read.sql).all(...read.params));
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
    if (this.usage.isClosed) return;
    this.usage.close();
    this.db.close();
  }
}
