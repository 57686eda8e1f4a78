/**
 * store/ — API keys and their usage, behind one asynchronous interface (`KeyBackend`) with two
 * implementations: embedded SQLite (`KeyStore`, synchronous, wrapped by `SqliteKeyBackend`; the
 * default) and Postgres (`PostgresKeyStore`, shared by replicas; TRELLIS_DATABASE_URL). Keys shown once and kept as sha256
 * hashes, usage counted in memory and written in one transaction per interval (a failed write
 * keeps its counts, is retried and reported, never crashes), versioned migrations that never drop
 * data; per-key token quotas enforced by reservation, expiries and rate limits; and the
 * dashboard's admin credential; and the stored responses of the OpenAI Responses API (responses.ts),
 * owned by their key, expiring, bounded per key.
 *
 *   const store = new KeyStore({ dataDir, onFlushError });
 *   const created = store.createKey("billing", { quota: 100_000 });   // created.key is shown once
 *   store.authenticate(secret);                            // → { id, name } | null
 *   store.authenticateRequest(secret);                     // + quota, rateLimit; KeyExpiredError: 401
 *   const held = store.reserveTokens(id, maxTokens);       // null: no quota; QuotaExceededError: 402
 *   store.recordUsage(id, tokens, held ? [held] : []); … store.close();
 *
 *   await store.responses.save(owner, id, { response, input }, limits);   // OpenAI Responses API, store: true
 *
 *   const shared = await PostgresKeyStore.open({ url });     // or asKeyBackend(store)
 *   await shared.authenticateRequest(secret);               // cached per keyCacheMs; stale rows while Postgres is down
 */
export { asKeyBackend, SqliteKeyBackend, type KeyBackend } from "./backend.js";
export { PostgresKeyStore, redactedDatabaseUrl, type PostgresKeyStoreOptions } from "./postgres.js";
export { POSTGRES_SCHEMA_VERSION } from "./postgres-migrations.js";
export { USAGE_BUCKETS, type UsageBucketSize, type UsagePoint } from "./usage-history.js";
export {
  KeyStore,
  type ApiKeyInfo,
  type AuthenticatedKey,
  type CreatedKey,
  type KeyAccess,
  type KeyAdmission,
  type KeySettings,
  type KeyStoreOptions,
} from "./keys.js";
export {
  KeyExpiredError,
  KeySettingError,
  MAX_KEY_RATE_LIMIT,
  checkExpiry,
  isExpired,
  parseExpiry,
  parseRateLimit,
} from "./key-settings.js";
export {
  MAX_TOKEN_QUOTA,
  QuotaExceededError,
  QuotaValueError,
  parseQuota,
  type QuotaStatus,
  type TokenReservation,
} from "./quota.js";
export {
  AdminTokenError,
  KEY_PREFIX,
  MIN_ADMIN_TOKEN_CHARS,
  digestsEqual,
  ensureAdminToken,
  ensureSharedAdminToken,
  generateApiKey,
  prepareSharedAdminToken,
  sha256Hex,
} from "./credentials.js";
export { KEY_NAME_MAX_CHARS, KeyNameError, codePointLength, normalizeKeyName, printableKeyName } from "./names.js";
export { SCHEMA_VERSION } from "./migrations.js";
export {
  ResponseStoreFullError,
  type ResponseStore,
  type ResponseStoreLimits,
  type StoredResponse,
} from "./responses.js";
export type { RequestOutcome } from "./usage-ledger.js";
export { FLUSH_BUSY_TIMEOUT_MS, formatUnwrittenUsage, type FlushFailure, type UnwrittenUsage, type UsageFlushStats } from "./usage.js";
export { KeyNotFoundError, KeyStoreError, type KeyStoreFailure } from "./errors.js";
