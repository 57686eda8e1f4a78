/**
 * API keys and their usage, in SQLite (better-sqlite3, WAL): the KeyStore facade. Keys are shown
 * once at creation and stored only as sha256 hashes (credentials.ts); names follow names.ts;
 * usage is buffered in memory and flushed in one transaction per interval (usage.ts), so a
 * request costs one indexed read and no write; the schema is migrated on open (migrations.ts);
 * failures to open or write are KeyStoreErrors that name their cause (errors.ts).
 */
import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { KEY_PREFIX, generateApiKey, sha256Hex } from "./credentials.js";
import { KeyNotFoundError, KeyStoreError, classifyFailure, errorCode } from "./errors.js";
import { migrate } from "./migrations.js";
import { normalizeKeyName } from "./names.js";
import { UsageBuffer, type FlushFailure, type UnwrittenUsage, type UsageFlushStats } from "./usage.js";

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

export class KeyStore {
  readonly path: string;
  private readonly dataDir: string;
  private readonly db: Database.Database;
  private readonly usage: UsageBuffer;

  private readonly selectByHash: Database.Statement<[string], { id: number; name: string; revoked_at: string | null }>;
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
      migrate(db, this.path);
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
    this.usage = new UsageBuffer(this.db, this.path, options, busyTimeoutMs);
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
    const row = this.db.prepare("SELECT revoked_at FROM api_keys WHERE id = ?").get(id) as { revoked_at: string | null } | undefined;
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
    this.usage.record(id, tokens);
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
    return this.selectAll.all().map((row) => {
      const extra = this.usage.pendingFor(row.id);
      const lastUsed = extra && (row.last_used_at === null || extra.lastUsedAt > row.last_used_at) ? extra.lastUsedAt : row.last_used_at;
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
    if (this.usage.isClosed) return;
    this.usage.close();
    this.db.close();
  }
}
