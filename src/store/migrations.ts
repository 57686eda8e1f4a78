/**
 * The SQLite key store's schema: numbered migrations applied in order, each inside a transaction,
 * recorded in `PRAGMA user_version` and (from version 4) in the `schema_migrations` table, as the
 * Postgres store records its own (postgres-migrations.ts); the database is never dropped or
 * recreated.
 */
import type Database from "better-sqlite3";
import { KeyStoreError } from "./errors.js";

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
  // 1 → 2: per-key token quotas (NULL: unlimited). What a key has used is its tokens column.
  `ALTER TABLE api_keys ADD COLUMN token_quota INTEGER CHECK (token_quota IS NULL OR token_quota >= 0);`,
  // 2 → 3: per-key expiry (an ISO 8601 UTC instant) and rate limit (requests per minute); NULL:
  // none. Last use was a column from the start (last_used_at).
  `ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
   ALTER TABLE api_keys ADD COLUMN rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1);`,
  // 3 → 4: usage by the hour (requests, tokens and refusals: the dashboard's charts; written additively with the totals, kept 91 days), and the
  // schema_migrations table both dialects keep (versions before it noted without a time).
  `CREATE TABLE usage_hourly (
     key_id INTEGER NOT NULL REFERENCES api_keys (id),
     hour TEXT NOT NULL,
     requests INTEGER NOT NULL DEFAULT 0,
     tokens INTEGER NOT NULL DEFAULT 0,
     rate_limited INTEGER NOT NULL DEFAULT 0,
     client_errors INTEGER NOT NULL DEFAULT 0,
     server_errors INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (key_id, hour)
   ) WITHOUT ROWID;
   CREATE TABLE schema_migrations (
     version INTEGER PRIMARY KEY,
     applied_at TEXT
   );
   INSERT INTO schema_migrations (version, applied_at) VALUES (1, NULL), (2, NULL), (3, NULL);`,
  // 4 → 5: stored responses of the OpenAI Responses API (responses.ts), owned by the key that
  // made them ("key:<id>" or "env:<sha256>"), expiring; times in epoch ms.
  `CREATE TABLE responses (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     expires_at INTEGER NOT NULL,
     bytes INTEGER NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX responses_owner ON responses (owner, expires_at);
   CREATE INDEX responses_expiry ON responses (expires_at);`,
];

/** The first version recorded in schema_migrations (the table exists from it on). */
const FIRST_RECORDED_VERSION = 4;

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the database at `path` to SCHEMA_VERSION (`apply` false: only checks that it is there,
 * for TRELLIS_MIGRATE_ON_START=false); a newer schema is a KeyStoreError.
 */
export function migrate(db: Database.Database, path: string, apply = true): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new KeyStoreError(
      path,
      "newer-schema",
      `it has schema version ${current}, newer than this Trellis (${MIGRATIONS.length}); upgrade Trellis`,
      undefined,
    );
  }
  if (!apply && current < MIGRATIONS.length) {
    throw new KeyStoreError(
      path,
      "old-schema",
      `it has schema version ${current}, this Trellis needs ${MIGRATIONS.length}; run \`trellis migrate\` (or start with TRELLIS_MIGRATE_ON_START=true)`,
      undefined,
    );
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${version + 1}`);
      if (version + 1 >= FIRST_RECORDED_VERSION) {
        db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(version + 1, new Date().toISOString());
      }
    }).immediate();
  }
}
