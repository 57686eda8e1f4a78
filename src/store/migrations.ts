/**
 * The key store's schema: numbered migrations applied in order, each inside a transaction, and
 * recorded in `PRAGMA user_version`; the database is never dropped or recreated.
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
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/** Brings the database at `path` to SCHEMA_VERSION; a newer schema is a KeyStoreError. */
export function migrate(db: Database.Database, path: string): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new KeyStoreError(
      path,
      "newer-schema",
      `it has schema version ${current}, newer than this Trellis (${MIGRATIONS.length}); upgrade Trellis`,
      undefined,
    );
  }
  for (let version = current; version < MIGRATIONS.length; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${version + 1}`);
    }).immediate();
  }
}
