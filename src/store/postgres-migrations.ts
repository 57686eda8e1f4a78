/**
 * The Postgres key store's schema: numbered migrations recorded in `schema_migrations`, applied in
 * order, each in its own transaction, under an advisory lock so that replicas starting together
 * (or `trellis migrate` beside a running replica) migrate once; nothing is ever dropped. The
 * tables are those of the SQLite store (migrations.ts), in Postgres's types: version 1 is SQLite's 4,
 * version 2 its 5 (stored responses).
 */
import type pg from "pg";
import { KeyStoreError } from "./errors.js";

/** Migration N brings the schema from version N to N + 1. Append only; never edit a shipped one. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE api_keys (
     id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     name TEXT NOT NULL,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     revoked_at TEXT,
     requests BIGINT NOT NULL DEFAULT 0,
     tokens BIGINT NOT NULL DEFAULT 0,
     last_used_at TEXT,
     token_quota BIGINT CHECK (token_quota IS NULL OR token_quota >= 0),
     expires_at TEXT,
     rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit >= 1)
   );
   CREATE TABLE settings (
     name TEXT PRIMARY KEY,
     value TEXT NOT NULL
   );
   CREATE TABLE usage_hourly (
     key_id INTEGER NOT NULL REFERENCES api_keys (id),
     hour TEXT NOT NULL,
     requests BIGINT NOT NULL DEFAULT 0,
     tokens BIGINT NOT NULL DEFAULT 0,
     rate_limited BIGINT NOT NULL DEFAULT 0,
     client_errors BIGINT NOT NULL DEFAULT 0,
     server_errors BIGINT NOT NULL DEFAULT 0,
     PRIMARY KEY (key_id, hour)
   );`,
  // 1 → 2: stored responses of the OpenAI Responses API (SQLite's migration 5).
  `CREATE TABLE responses (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     created_at BIGINT NOT NULL,
     expires_at BIGINT NOT NULL,
     bytes BIGINT NOT NULL,
     body TEXT NOT NULL
   );
   CREATE INDEX responses_owner ON responses (owner, expires_at);
   CREATE INDEX responses_expiry ON responses (expires_at);`,
];

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** pg_advisory_lock's key for migrations: any constant the other users of the database do not take. */
const MIGRATION_LOCK = 0x7472_6c73; // "trls"

async function currentVersion(client: pg.PoolClient): Promise<number> {
  const exists = await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (!exists.rows[0]!.present) return 0;
  const result = await client.query<{ version: number | null }>("SELECT max(version) AS version FROM schema_migrations");
  return result.rows[0]!.version ?? 0;
}

function newerSchema(location: string, version: number): KeyStoreError {
  return new KeyStoreError(
    location,
    "newer-schema",
    `it has schema version ${version}, newer than this Trellis (${POSTGRES_SCHEMA_VERSION}); upgrade Trellis`,
    undefined,
  );
}

/**
 * Brings the database to POSTGRES_SCHEMA_VERSION (`apply`), or only checks that it is there
 * (`apply` false: a replica started with TRELLIS_MIGRATE_ON_START=false, whose migration Job runs
 * apart). Returns the version found before.
 */
export async function migratePostgres(client: pg.PoolClient, location: string, apply: boolean): Promise<number> {
  if (!apply) {
    const version = await currentVersion(client);
    if (version > POSTGRES_SCHEMA_VERSION) throw newerSchema(location, version);
    if (version < POSTGRES_SCHEMA_VERSION) {
      throw new KeyStoreError(
        location,
        "old-schema",
        `it has schema version ${version}, this Trellis needs ${POSTGRES_SCHEMA_VERSION}; run \`trellis migrate\` (or start with TRELLIS_MIGRATE_ON_START=true)`,
        undefined,
      );
    }
    return version;
  }
  await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
  try {
    await client.query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
    const before = await currentVersion(client);
    if (before > POSTGRES_SCHEMA_VERSION) throw newerSchema(location, before);
    for (let version = before; version < POSTGRES_SCHEMA_VERSION; version++) {
      await client.query("BEGIN");
      try {
        await client.query(MIGRATIONS[version]!);
        await client.query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", [version + 1, new Date().toISOString()]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    }
    return before;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
  }
}
