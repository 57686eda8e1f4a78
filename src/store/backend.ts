/**
 * The key store as the server and the CLI use it, whatever holds the keys: `KeyBackend`, an
 * asynchronous interface with two implementations — embedded SQLite (`SqliteKeyBackend` over the
 * synchronous `KeyStore`, the default: nothing to set up) and Postgres (`PostgresKeyStore`,
 * `TRELLIS_DATABASE_URL`), which several replicas share.
 *
 * What a request needs on its hot path after the key check stays synchronous on purpose: the
 * quota's reservation, the usage charge and the quota left are answered from what this process
 * knows (the key's row as last read, usage not written yet, its own reservations), so a
 * generation's admission never waits for a database.
 */
import type { ApiKeyInfo, CreatedKey, KeyAdmission, KeySettings, KeyStore } from "./keys.js";
import type { QuotaStatus, TokenReservation } from "./quota.js";
import type { ResponseStore } from "./responses.js";
import type { UsageBucketSize, UsagePoint } from "./usage-history.js";
import type { RequestOutcome, UsageFlushStats } from "./usage-ledger.js";

export interface KeyBackend {
  readonly dialect: "sqlite" | "postgres";
  /** The database as messages name it: the SQLite file, or the Postgres URL without its password. */
  readonly location: string;

  schemaVersion(): Promise<number>;
  /** Throws KeyNameError, QuotaValueError, KeySettingError for refused settings; KeyStoreError if it cannot be written. */
  createKey(name: string, settings?: KeySettings): Promise<CreatedKey>;
  /** Returns the stored instant. Throws KeyNotFoundError, KeySettingError, KeyStoreError. */
  setExpiry(id: number, expiresAt: string | Date | null): Promise<string | null>;
  setRateLimit(id: number, rateLimit: number | null): Promise<void>;
  setQuota(id: number, quota: number | null): Promise<void>;
  /** Marks a key revoked (kept for its usage history). False if it was revoked already. */
  revokeKey(id: number): Promise<boolean>;
  /** All keys with usage, usage not written yet by this process included. */
  listKeys(): Promise<ApiKeyInfo[]>;
  /** Usage per hour (the last 48) or per day (the last 90), of one key or all, oldest first. */
  usageHistory(bucket: UsageBucketSize, options?: { keyId?: number; nowMs?: number }): Promise<UsagePoint[]>;

  /**
   * The API's key check: null for an unknown or revoked key, a KeyExpiredError (401) for an
   * expired one, a KeyStoreError when the database cannot answer and the key was not seen lately.
   */
  authenticateRequest(secret: string, nowMs?: number): Promise<KeyAdmission | null>;
  /** Counts a refused (429, other 4xx) or failed (5xx) request of the key, for the hourly charts. */
  recordOutcome(id: number, outcome: RequestOutcome): void;
  /** A key's quota as this process knows it; null: unlimited or unknown. */
  quotaStatus(id: number): QuotaStatus | null;
  /** See KeyStore.reserveTokens. */
  reserveTokens(id: number, tokens?: number): TokenReservation | null;
  /** Buffers one request's usage and releases its reservations (see KeyStore.recordUsage). */
  recordUsage(id: number, tokens: number, reservations?: readonly TokenReservation[]): void;
  /** Key checks answered from a row read before, because the database could not be read (Postgres). */
  readonly staleKeyServes: number;
  /** Another replica changed this key: what is cached of it is dropped. */
  forgetKey(id: number): void;
  /** Changes may have been missed (the broadcast was down): every cached key is read again. */
  forgetAllKeys(): void;

  getSetting(name: string): Promise<string | null>;
  setSetting(name: string, value: string): Promise<void>;
  /** Stores `value` unless the setting exists; returns what is stored (atomic across replicas). */
  claimSetting(name: string, value: string): Promise<string>;

  /** Stored responses of the OpenAI Responses API, in the same database. */
  readonly responses: ResponseStore;

  /** Writes buffered usage; true when nothing is left pending. Never throws. */
  flush(): Promise<boolean>;
  stats(): UsageFlushStats;
  /** Writes buffered usage (reporting what it cannot), then closes the database. */
  close(): Promise<void>;
}

/** The SQLite KeyStore behind the asynchronous interface: each call is the store's own, at once. */
export class SqliteKeyBackend implements KeyBackend {
  readonly dialect = "sqlite";
  readonly location: string;
  /** Every check reads the database file. */
  readonly staleKeyServes = 0;

  readonly responses: ResponseStore;

  constructor(readonly store: KeyStore) {
    this.location = store.path;
    this.responses = store.responses;
  }

  async schemaVersion(): Promise<number> {
    return this.store.schemaVersion;
  }
  async createKey(name: string, settings?: KeySettings): Promise<CreatedKey> {
    return this.store.createKey(name, settings);
  }
  async setExpiry(id: number, expiresAt: string | Date | null): Promise<string | null> {
    return this.store.setExpiry(id, expiresAt);
  }
  async setRateLimit(id: number, rateLimit: number | null): Promise<void> {
    this.store.setRateLimit(id, rateLimit);
  }
  async setQuota(id: number, quota: number | null): Promise<void> {
    this.store.setQuota(id, quota);
  }
  async revokeKey(id: number): Promise<boolean> {
    return this.store.revokeKey(id);
  }
  async listKeys(): Promise<ApiKeyInfo[]> {
    return this.store.listKeys();
  }
  async usageHistory(bucket: UsageBucketSize, options?: { keyId?: number; nowMs?: number }): Promise<UsagePoint[]> {
    return this.store.usageHistory(bucket, options);
  }
  async authenticateRequest(secret: string, nowMs?: number): Promise<KeyAdmission | null> {
    return this.store.authenticateRequest(secret, nowMs);
  }
  quotaStatus(id: number): QuotaStatus | null {
    return this.store.quotaStatus(id);
  }
  recordOutcome(id: number, outcome: RequestOutcome): void {
    this.store.recordOutcome(id, outcome);
  }
  reserveTokens(id: number, tokens?: number): TokenReservation | null {
    return this.store.reserveTokens(id, tokens);
  }
  recordUsage(id: number, tokens: number, reservations?: readonly TokenReservation[]): void {
    this.store.recordUsage(id, tokens, reservations);
  }
  forgetKey(_id: number): void {
    // Every read goes to the database file: nothing is cached.
  }
  forgetAllKeys(): void {}
  async getSetting(name: string): Promise<string | null> {
    return this.store.getSetting(name);
  }
  async setSetting(name: string, value: string): Promise<void> {
    this.store.setSetting(name, value);
  }
  async claimSetting(name: string, value: string): Promise<string> {
    return this.store.claimSetting(name, value);
  }
  async flush(): Promise<boolean> {
    return this.store.flush();
  }
  stats(): UsageFlushStats {
    return this.store.stats();
  }
  async close(): Promise<void> {
    this.store.close();
  }
}

/** The server takes either: a KeyStore (tests, the SQLite default) is put behind the interface. */
export function asKeyBackend(store: KeyStore | KeyBackend): KeyBackend {
  return "dialect" in store ? store : new SqliteKeyBackend(store);
}
