/**
 * Databases as older Trellis versions wrote them, for migration tests: the schema exactly as it
 * shipped at `version` (1: keys, usage, settings; 2: + token quotas), empty, opened for the test
 * to fill and close.
 */
import { join } from "node:path";
import Database from "better-sqlite3";

export function legacyDatabase(dir: string, version: 1 | 2): { db: Database.Database; path: string } {
  const path = join(dir, "trellis.db");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.exec(`CREATE TABLE api_keys (
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
   );`);
  if (version >= 2) db.exec("ALTER TABLE api_keys ADD COLUMN token_quota INTEGER CHECK (token_quota IS NULL OR token_quota >= 0);");
  db.pragma(`user_version = ${version}`);
  return { db, path };
}
