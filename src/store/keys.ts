/**
 * API keys and their usage, in SQLite (better-sqlite3, WAL). Keys are shown once at creation
 * and stored only as sha256 hashes. Usage counters are accumulated in memory and flushed in one
 * transaction per interval, so a request costs one indexed read and no write.
 *
 * Schema changes are numbered migrations applied in order inside a transaction and recorded in
 * `PRAGMA user_version`; the database is never dropped or recreated.
 */
import Database from "better-sqlite3";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const KEY_PREFIX = "trl_";

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

export interface KeyStoreOptions {
  /** Folder for trellis.db; ":memory:" for a throwaway store (tests). */
  dataDir: string;
  /** How often buffered usage is written, ms. */
  flushIntervalMs?: number;
}

export class KeyStore {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly pending = new Map<number, PendingUsage>();
  private readonly flushTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly selectByHash: Database.Statement<[string], { id: number; name: string; revoked_at: string | null }>;
  private readonly selectAll: Database.Statement<[], KeyRow>;
  private readonly addUsage: Database.Statement<[number, number, string, number]>;

  constructor(options: KeyStoreOptions) {
    if (options.dataDir === ":memory:") {
      this.path = ":memory:";
    } else {
      mkdirSync(options.dataDir, { recursive: true });
      this.path = join(options.dataDir, "trellis.db");
    }
    this.db = new Database(this.path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("busy_timeout = 5000");
    this.migrate();
    this.selectByHash = this.db.prepare("SELECT id, name, revoked_at FROM api_keys WHERE hash = ?");
    this.selectAll = this.db.prepare(
      "SELECT id, name, prefix, created_at, revoked_at, requests, tokens, last_used_at FROM api_keys ORDER BY id",
    );
    this.addUsage = this.db.prepare(
      `UPDATE api_keys SET requests = requests + ?, tokens = tokens + ?,
         last_used_at = max(coalesce(last_used_at, ''), ?) WHERE id = ?`,
    );
    const interval = options.flushIntervalMs ?? 1000;
    if (interval > 0) {
      this.flushTimer = setInterval(() => this.flush(), interval);
      this.flushTimer.unref();
    }
  }

  private migrate(): void {
    const current = this.db.pragma("user_version", { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new Error(
        `key store ${this.path} has schema version ${current}, newer than this Trellis (${MIGRATIONS.length}); upgrade Trellis`,
      );
    }
    for (let version = current; version < MIGRATIONS.length; version++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[version]!);
        this.db.pragma(`user_version = ${version + 1}`);
      })();
    }
  }

  get schemaVersion(): number {
    return this.db.pragma("user_version", { simple: true }) as number;
  }

  createKey(name: string): CreatedKey {
    const trimmed = name.trim();
    if (trimmed.length === 0 || trimmed.length > 100) throw new RangeError("key name must be 1 to 100 characters");
    const key = generateApiKey();
    const prefix = key.slice(0, KEY_PREFIX.length + 6);
    const createdAt = new Date().toISOString();
    const info = this.db
      .prepare("INSERT INTO api_keys (name, prefix, hash, created_at) VALUES (?, ?, ?, ?)")
      .run(trimmed, prefix, sha256Hex(key), createdAt);
    return { id: Number(info.lastInsertRowid), name: trimmed, key, prefix, createdAt };
  }

  /** Marks a key revoked (kept for its usage history). Returns false if it was revoked already. */
  revokeKey(id: number): boolean {
    const row = this.db.prepare("SELECT revoked_at FROM api_keys WHERE id = ?").get(id) as
      | { revoked_at: string | null }
      | undefined;
    if (!row) throw new KeyNotFoundError(id);
    if (row.revoked_at !== null) return false;
    this.db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(new Date().toISOString(), id);
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
    const entry = this.pending.get(id);
    if (entry) {
      entry.requests += 1;
      entry.tokens += tokens;
      entry.lastUsedAt = now;
    } else {
      this.pending.set(id, { requests: 1, tokens, lastUsedAt: now });
    }
  }

  flush(): void {
    if (this.pending.size === 0 || this.closed) return;
    const batch = [...this.pending];
    this.pending.clear();
    try {
      this.db.transaction(() => {
        for (const [id, usage] of batch) this.addUsage.run(usage.requests, usage.tokens, usage.lastUsedAt, id);
      })();
    } catch (error) {
      // Keep the counts for the next attempt rather than lose them (e.g. SQLITE_BUSY).
      for (const [id, usage] of batch) {
        const entry = this.pending.get(id);
        if (entry) {
          entry.requests += usage.requests;
          entry.tokens += usage.tokens;
          if (usage.lastUsedAt > entry.lastUsedAt) entry.lastUsedAt = usage.lastUsedAt;
        } else this.pending.set(id, usage);
      }
      throw error;
    }
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
    this.db
      .prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value")
      .run(name, value);
  }

  close(): void {
    if (this.closed) return;
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.flush();
    this.closed = true;
    this.db.close();
  }
}

/**
 * The dashboard's admin credential: TRELLIS_ADMIN_TOKEN when configured, else a token generated
 * at first start (returned once so the caller can print it) whose hash is kept in the store.
 */
export function ensureAdminToken(
  store: KeyStore,
  configured: string,
): { hash: string; generated: string | null } {
  if (configured.length > 0) return { hash: sha256Hex(configured), generated: null };
  const stored = store.getSetting("admin_token_sha256");
  if (stored) return { hash: stored, generated: null };
  const token = "adm_" + randomBytes(24).toString("base64url");
  const hash = sha256Hex(token);
  store.setSetting("admin_token_sha256", hash);
  return { hash, generated: token };
}
