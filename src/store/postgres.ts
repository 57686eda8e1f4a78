/**
 * API keys and their usage in Postgres (`pg` with a pool): the store several replicas share,
 * chosen by TRELLIS_DATABASE_URL. Same rules as the SQLite store (keys shown once and kept as
 * sha256 hashes, names, quotas, expiries, rate limits), same tables.
 *
 * The key check reads a key's row at most once per `keyCacheMs` (default 1 s) per replica; a
 * change made on another replica is seen within that time, or at once when the replicas share
 * Redis (the change is broadcast and the row forgotten). While the database cannot be reached, a
 * key read within `keyStaleMs` (default 5 minutes) keeps being served from its last row, so a
 * Postgres restart does not refuse known keys; an unknown key then gets a KeyStoreError (503).
 *
 * Usage is counted in memory (usage-ledger.ts) and written in one transaction per interval:
 * additive updates of the totals and `INSERT … ON CONFLICT DO UPDATE` of the hourly rows, so
 * replicas never overwrite each other. Quota reservations are this replica's own: each replica
 * admits against the key's usage as last read plus what it holds itself.
 */
import pg from "pg";
import { KEY_PREFIX, sha256Hex } from "./credentials.js";
import { KeyNotFoundError, KeyStoreError, describeError, errorCode, type KeyStoreFailure } from "./errors.js";
import type { KeyBackend } from "./backend.js";
import { apiKeyInfoOf, newKey, type ApiKeyInfo, type CreatedKey, type KeyAdmission, type KeyRow, type KeySettings } from "./keys.js";
import { KeyExpiredError, checkExpiry, checkRateLimit, isExpired } from "./key-settings.js";
import { migratePostgres } from "./postgres-migrations.js";
import { PostgresResponseStore, type PostgresQuery } from "./responses.js";
import { ReservationLedger, checkQuota, quotaStatus, reserveWithin, type QuotaStatus, type TokenReservation } from "./quota.js";
import { usageHistoryRead, type HourRow, type UsageBucketSize, type UsagePoint } from "./usage-history.js";
import {
  HOUR_COUNTERS,
  UsageLedger,
  retentionCutoff,
  type RequestOutcome,
  type UsageBatch,
  type UsageFlushOptions,
  type UsageFlushStats,
} from "./usage-ledger.js";

export interface PostgresKeyStoreOptions extends UsageFlushOptions {
  /** postgres://user:password@host:port/database (also postgresql://). */
  url: string;
  /** Connections kept at most. Default 10. */
  poolSize?: number;
  /** How long a key's row is used without reading it again, ms. Default 1000. */
  keyCacheMs?: number;
  /** While the database cannot be reached, how long a key read before keeps being served, ms. Default 300 000. */
  keyStaleMs?: number;
  /** Migrate when opening (default); false: refuse a schema that is not current. */
  migrate?: boolean;
  /** Longest a statement may run, ms. Default 5000. */
  statementTimeoutMs?: number;
  /** Longest wait for a connection, ms. Default 2000. */
  connectionTimeoutMs?: number;
}

type AuthRow = Pick<KeyRow, "id" | "name" | "revoked_at" | "tokens" | "token_quota" | "expires_at" | "rate_limit">;

interface CachedKey {
  row: AuthRow | null;
  readMs: number;
}

/**
 * After a failed (or too slow) key read, how long known keys are served from their last rows
 * without trying the database again: a database that does not answer (a partition, a frozen server) would
 * otherwise hold every request for the connection or query timeout.
 */
const READ_PAUSE_MS = 1000;

/** How long a key check of a known key waits for its row before using the one it has (see READ_PAUSE_MS). */
const KNOWN_KEY_READ_WAIT_MS = 250;

/** The promise's value, or null when it takes longer than `ms`. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Keys remembered by the key check at most (unknown secrets included); the oldest go first. */
const KEY_CACHE_ENTRIES = 50_000;

/** Postgres's BIGINT and COUNT/SUM as JavaScript numbers: every value the store keeps is a safe integer. */
const NUMBER_TYPES = {
  getTypeParser(oid: number, format?: string) {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

/** The URL without its password, for messages and logs. */
export function redactedDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparseable TRELLIS_DATABASE_URL)";
  }
}

const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "57P01", "57P03"]);

/** Postgres's and the network's failures in the store's words. */
function classifyPostgresFailure(error: unknown): { failure: KeyStoreFailure; reason: string } {
  const code = errorCode(error) ?? "";
  const message = describeError(error);
  if (UNREACHABLE_CODES.has(code) || /timeout|terminated|Connection terminated/i.test(message)) {
    return { failure: "unreachable", reason: `the database cannot be reached (${message})` };
  }
  if (code === "28P01" || code === "28000") return { failure: "not-writable", reason: `the database refused the credentials (${message})` };
  if (code === "3D000") return { failure: "io", reason: `the database does not exist (${message})` };
  if (code === "53100") return { failure: "disk-full", reason: `the database's disk is full (${message})` };
  return { failure: "io", reason: message };
}

class PostgresUsageBuffer extends UsageLedger {
  private flushing: Promise<boolean> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    location: string,
    options: UsageFlushOptions,
  ) {
    super(location, options);
    this.startTimer();
  }

  protected flushOnTimer(): Promise<boolean> {
    return this.flush();
  }

  /** One flush at a time: a second caller waits for the running one, then writes what came since. */
  async flush(report = true): Promise<boolean> {
    while (this.flushing) await this.flushing;
    this.flushing = this.writePending(report);
    try {
      return await this.flushing;
    } finally {
      this.flushing = null;
    }
  }

  private async writePending(report: boolean): Promise<boolean> {
    const batch = this.batchToWrite();
    if (typeof batch === "boolean") return batch;
    const started = performance.now();
    try {
      await this.write(batch);
    } catch (error) {
      this.restoreBatch(batch);
      this.noteFailure(error, report);
      return false;
    } finally {
      this.noteFlushDuration(started);
    }
    this.noteSuccess();
    return true;
  }

  private async write(batch: UsageBatch): Promise<void> {
    const ids: number[] = [];
    const requests: number[] = [];
    const tokens: number[] = [];
    const lastUsed: string[] = [];
    const hourIds: number[] = [];
    const hours: string[] = [];
    const counters = HOUR_COUNTERS.map(() => [] as number[]);
    for (const [id, usage] of batch) {
      ids.push(id);
      requests.push(usage.requests);
      tokens.push(usage.tokens);
      lastUsed.push(usage.lastUsedAt);
      for (const [hour, h] of usage.hours) {
        hourIds.push(id);
        hours.push(hour);
        HOUR_COUNTERS.forEach(([field], i) => counters[i]!.push(h[field]));
      }
    }
    const columns = HOUR_COUNTERS.map(([, column]) => column);
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      // Additive: replicas (and a retried batch merged with newer counts) never overwrite each other.
      await client.query(
        `UPDATE api_keys AS k SET requests = k.requests + v.requests, tokens = k.tokens + v.tokens,
           last_used_at = GREATEST(coalesce(k.last_used_at, ''), v.last_used_at)
         FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::text[]) AS v (id, requests, tokens, last_used_at)
         WHERE k.id = v.id`,
        [ids, requests, tokens, lastUsed],
      );
      if (hours.length > 0) {
        await client.query(
          `INSERT INTO usage_hourly (key_id, hour, ${columns.join(", ")})
             SELECT * FROM unnest($1::int[], $2::text[], ${columns.map((_, i) => `$${i + 3}::bigint[]`).join(", ")})
           ON CONFLICT (key_id, hour) DO UPDATE SET ${columns.map((c) => `${c} = usage_hourly.${c} + excluded.${c}`).join(", ")}`,
          [hourIds, hours, ...counters],
        );
      }
      if (this.pruneDue()) await client.query("DELETE FROM usage_hourly WHERE hour < $1", [retentionCutoff()]);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      // Not back into the pool: the connection may be the one that failed.
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    client.release();
  }

  /** Writes what is pending, trying for up to closeTimeoutMs; what is left is reported, never dropped silently. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.stopTimer();
    const deadline = Date.now() + this.closeTimeoutMs;
    let written = await this.flush(false);
    while (!written && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, Math.max(0, deadline - Date.now()))));
      written = await this.flush(false);
    }
    this.closed = true;
    if (!written) this.reportUnwritten();
  }
}

export class PostgresKeyStore implements KeyBackend {
  readonly dialect = "postgres";
  readonly location: string;
  private readonly usage: PostgresUsageBuffer;
  private readonly reservations = new ReservationLedger();
  private readonly keyCacheMs: number;
  private readonly keyStaleMs: number;
  /** By secret hash: the row the key check last read (null: no such key). */
  private readonly keysByHash = new Map<string, CachedKey>();
  /** By id: the latest row read, for quota decisions between reads. */
  private readonly rowsById = new Map<number, AuthRow>();
  private readonly hashById = new Map<number, string>();
  private readonly reads = new Map<string, Promise<AuthRow | null>>();
  /** Key checks answered from a row older than keyCacheMs because the database could not be read. */
  staleKeyServes = 0;
  /** Until then (epoch ms), known keys are served from their rows without a read (a read just failed). */
  private readsPausedUntilMs = 0;
  /** Stored responses of the OpenAI Responses API, in the same database. */
  readonly responses: PostgresResponseStore;

  private constructor(
    private readonly pool: pg.Pool,
    options: PostgresKeyStoreOptions,
  ) {
    this.location = redactedDatabaseUrl(options.url);
    this.keyCacheMs = options.keyCacheMs ?? 1000;
    this.keyStaleMs = options.keyStaleMs ?? 300_000;
    this.usage = new PostgresUsageBuffer(pool, this.location, options);
    this.responses = new PostgresResponseStore(
      (operation, text, values) => this.query(operation, text, values),
      (operation, run) => this.transaction(operation, run),
    );
  }

  /** Connects, migrates (or checks the schema), and starts the usage flush. Throws KeyStoreError. */
  static async open(options: PostgresKeyStoreOptions): Promise<PostgresKeyStore> {
    const location = redactedDatabaseUrl(options.url);
    if (!/^postgres(ql)?:\/\//.test(options.url)) {
      throw new KeyStoreError(location, "io", "TRELLIS_DATABASE_URL must start with postgres:// or postgresql://", undefined);
    }
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 2000,
      statement_timeout: options.statementTimeoutMs ?? 5000,
      // The client's own limit: a server that stops answering (frozen, partitioned) cannot enforce
      // statement_timeout, and a query would wait on it for ever.
      query_timeout: (options.statementTimeoutMs ?? 5000) + 1000,
      idleTimeoutMillis: 30_000,
      types: NUMBER_TYPES,
      application_name: "trellis",
    });
    // A connection dropped by the server (a restart, pg_terminate_backend) is an 'error' event:
    // on the pool for an idle one, on the client itself for one checked out (a usage flush
    // between its statements). Without a listener either ends the process; the statement in
    // flight fails on its own, and the next query reconnects.
    pool.on("error", () => {});
    pool.on("connect", (client) => client.on("error", () => {}));
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client, location, options.migrate ?? true);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => {});
      if (error instanceof KeyStoreError) throw error;
      const { failure, reason } = classifyPostgresFailure(error);
      throw new KeyStoreError(location, failure, reason, errorCode(error), { cause: error });
    }
    return new PostgresKeyStore(pool, options);
  }

  private failure(error: unknown, operation: string): KeyStoreError {
    if (error instanceof KeyStoreError) return error;
    const { failure, reason } = classifyPostgresFailure(error);
    return new KeyStoreError(this.location, failure, reason, errorCode(error), { cause: error, operation });
  }

  /** One statement; a database failure becomes a KeyStoreError naming the operation. */
  private async query<R extends pg.QueryResultRow>(operation: string, text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw this.failure(error, operation);
    }
  }

  /** `run` inside BEGIN … COMMIT on one connection; a throw rolls back (a database failure becomes a KeyStoreError). */
  private async transaction<T>(operation: string, run: (query: PostgresQuery) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw this.failure(error, operation);
    }
    const query: PostgresQuery = async (op, text, values = []) => {
      try {
        return await client.query(text, values);
      } catch (error) {
        throw this.failure(error, op);
      }
    };
    let broken: Error | undefined;
    try {
      await query(operation, "BEGIN");
      const value = await run(query);
      await query(operation, "COMMIT");
      return value;
    } catch (error) {
      await client.query("ROLLBACK").catch((rollback: unknown) => {
        broken = rollback instanceof Error ? rollback : new Error(String(rollback));
      });
      throw error;
    } finally {
      // A connection whose rollback failed is not given back to the pool.
      client.release(broken ?? false);
    }
  }

  async schemaVersion(): Promise<number> {
    const result = await this.query<{ version: number | null }>(
      "cannot read the schema version of",
      "SELECT max(version) AS version FROM schema_migrations",
    );
    return result.rows[0]!.version ?? 0;
  }

  async createKey(name: string, settings: KeySettings = {}): Promise<CreatedKey> {
    const { key, hash } = newKey(name, settings);
    const result = await this.query<{ id: number }>(
      "cannot create the key in",
      `INSERT INTO api_keys (name, prefix, hash, created_at, token_quota, expires_at, rate_limit)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
      [key.name, key.prefix, hash, key.createdAt, key.quota, key.expiresAt, key.rateLimit],
    );
    return { id: result.rows[0]!.id, ...key };
  }

  /** One column of one key; KeyNotFoundError when there is no such key. */
  private async updateKey(id: number, column: "expires_at" | "rate_limit" | "token_quota", value: unknown, what: string): Promise<void> {
    const result = await this.query(`cannot set the ${what} in`, `UPDATE api_keys SET ${column} = $1 WHERE id = $2`, [value, id]);
    if (result.rowCount === 0) throw new KeyNotFoundError(id);
    this.forgetKey(id);
  }

  async setExpiry(id: number, expiresAt: string | Date | null): Promise<string | null> {
    const checked = checkExpiry(expiresAt);
    await this.updateKey(id, "expires_at", checked, "expiry");
    return checked;
  }

  async setRateLimit(id: number, rateLimit: number | null): Promise<void> {
    await this.updateKey(id, "rate_limit", checkRateLimit(rateLimit), "rate limit");
  }

  async setQuota(id: number, quota: number | null): Promise<void> {
    await this.updateKey(id, "token_quota", checkQuota(quota), "quota");
  }

  async revokeKey(id: number): Promise<boolean> {
    const result = await this.query<{ id: number; revoked: boolean }>(
      "cannot revoke the key in",
      // One statement: two replicas revoking at once agree on which did it.
      `WITH target AS (SELECT id, revoked_at FROM api_keys WHERE id = $1 FOR UPDATE)
       UPDATE api_keys SET revoked_at = coalesce(api_keys.revoked_at, $2)
       FROM target WHERE api_keys.id = target.id
       RETURNING api_keys.id, target.revoked_at IS NULL AS revoked`,
      [id, new Date().toISOString()],
    );
    if (result.rowCount === 0) throw new KeyNotFoundError(id);
    this.forgetKey(id);
    return result.rows[0]!.revoked;
  }

  async listKeys(): Promise<ApiKeyInfo[]> {
    const result = await this.query<KeyRow>(
      "cannot list the keys of",
      `SELECT id, name, prefix, created_at, revoked_at, requests, tokens, last_used_at, token_quota, expires_at, rate_limit
         FROM api_keys ORDER BY id`,
    );
    return result.rows.map((row) => apiKeyInfoOf(row, this.usage.pendingFor(row.id)));
  }

  async usageHistory(bucket: UsageBucketSize, options: { keyId?: number; nowMs?: number } = {}): Promise<UsagePoint[]> {
    const read = usageHistoryRead(
      bucket,
      options,
      (keyId) => this.usage.pendingHours(keyId),
      (n) => `$${n}`,
    );
    return read.points((await this.query<HourRow>("cannot read the usage history of", read.sql, read.params)).rows);
  }

  /** The row of a secret's hash, one read at a time per hash (a burst of one key's requests shares it). */
  private readRow(hash: string): Promise<AuthRow | null> {
    let read = this.reads.get(hash);
    if (!read) {
      read = this.pool
        .query<AuthRow>("SELECT id, name, revoked_at, tokens, token_quota, expires_at, rate_limit FROM api_keys WHERE hash = $1", [hash])
        .then((result) => result.rows[0] ?? null)
        .finally(() => this.reads.delete(hash));
      this.reads.set(hash, read);
    }
    return read;
  }

  private remember(hash: string, row: AuthRow | null, readMs: number): void {
    this.keysByHash.delete(hash);
    this.keysByHash.set(hash, { row, readMs });
    if (this.keysByHash.size > KEY_CACHE_ENTRIES) this.keysByHash.delete(this.keysByHash.keys().next().value!);
    if (row) {
      this.rowsById.set(row.id, row);
      this.hashById.set(row.id, hash);
    }
  }

  async authenticateRequest(secret: string, nowMs: number = Date.now()): Promise<KeyAdmission | null> {
    if (!secret.startsWith(KEY_PREFIX) || secret.length > 200) return null;
    const hash = sha256Hex(secret);
    const cached = this.keysByHash.get(hash);
    let row: AuthRow | null;
    // A row read within keyStaleMs (and not forgotten for a change) may stand in while the
    // database is down or slow.
    const fallback = cached?.row && nowMs - cached.readMs <= this.keyStaleMs ? cached.row : null;
    if (cached && nowMs - cached.readMs < this.keyCacheMs) row = cached.row;
    else if (fallback && Date.now() < this.readsPausedUntilMs) {
      // A read failed a moment ago: known keys are served without waiting on the database again.
      this.staleKeyServes++;
      row = fallback;
    } else {
      const read = this.readRow(hash).then(
        (found) => {
          this.remember(hash, found, Date.now());
          this.readsPausedUntilMs = 0;
          return { found };
        },
        (error: unknown) => {
          this.readsPausedUntilMs = Date.now() + READ_PAUSE_MS;
          return { error };
        },
      );
      // A known key waits at most KNOWN_KEY_READ_WAIT_MS for a database that does not answer.
      const outcome = fallback ? await withinMs(read, KNOWN_KEY_READ_WAIT_MS) : await read;
      if (outcome === null) this.readsPausedUntilMs = Date.now() + READ_PAUSE_MS;
      if (outcome !== null && "found" in outcome) row = outcome.found;
      else if (fallback) {
        this.staleKeyServes++;
        row = fallback;
      } else throw this.failure(outcome!.error, "cannot check the API key in");
    }
    if (!row || row.revoked_at !== null) return null;
    if (isExpired(row.expires_at, nowMs)) throw new KeyExpiredError(row.id, row.expires_at!);
    this.usage.touch(row.id, new Date(nowMs).toISOString());
    return { id: row.id, name: row.name, quota: this.statusOf(row), rateLimit: row.rate_limit };
  }

  private statusOf(row: AuthRow): QuotaStatus | null {
    if (row.token_quota === null) return null;
    return quotaStatus(row.token_quota, row.tokens + (this.usage.pendingFor(row.id)?.tokens ?? 0), this.reservations.reservedFor(row.id));
  }

  quotaStatus(id: number): QuotaStatus | null {
    const row = this.rowsById.get(id);
    return row ? this.statusOf(row) : null;
  }

  reserveTokens(id: number, tokens?: number): TokenReservation | null {
    return reserveWithin(this.reservations, id, tokens, () => this.quotaStatus(id));
  }

  recordUsage(id: number, tokens: number, reservations: readonly TokenReservation[] = []): void {
    this.usage.record(id, tokens);
    for (const reservation of reservations) this.reservations.release(reservation);
  }

  recordOutcome(id: number, outcome: RequestOutcome): void {
    this.usage.recordOutcome(id, outcome);
  }

  /** The next key check of this key reads its row again (the last row stays for quota decisions until then). */
  forgetKey(id: number): void {
    const hash = this.hashById.get(id);
    const cached = hash === undefined ? undefined : this.keysByHash.get(hash);
    if (cached) cached.readMs = Number.NEGATIVE_INFINITY;
  }

  forgetAllKeys(): void {
    for (const cached of this.keysByHash.values()) cached.readMs = Number.NEGATIVE_INFINITY;
  }

  async getSetting(name: string): Promise<string | null> {
    const result = await this.query<{ value: string }>("cannot read a setting from", "SELECT value FROM settings WHERE name = $1", [name]);
    return result.rows[0]?.value ?? null;
  }

  async setSetting(name: string, value: string): Promise<void> {
    await this.query(
      "cannot write a setting to",
      "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      [name, value],
    );
  }

  async claimSetting(name: string, value: string): Promise<string> {
    await this.query("cannot write a setting to", "INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", [
      name,
      value,
    ]);
    return (await this.getSetting(name))!;
  }

  flush(): Promise<boolean> {
    return this.usage.flush();
  }

  stats(): UsageFlushStats {
    return this.usage.stats();
  }

  /** Usage flushed (or reported), then the pool closed. */
  async close(): Promise<void> {
    if (this.usage.isClosed) return;
    await this.usage.close();
    await this.pool.end().catch(() => {});
  }
}
