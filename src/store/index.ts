/**
 * store/ — API keys and their usage, in SQLite (`KeyStore`): keys shown once and kept as sha256
 * hashes, usage counted in memory and written in one transaction per interval (a failed write
 * keeps its counts, is retried and reported, never crashes), versioned migrations that never drop
 * data; and the dashboard's admin credential.
 *
 *   const store = new KeyStore({ dataDir, onFlushError });
 *   const created = store.createKey("billing");          // created.key is shown once
 *   store.authenticate(secret);                            // → { id, name } | null
 *   store.recordUsage(id, tokens); … store.close();
 */
export { KeyStore, type ApiKeyInfo, type AuthenticatedKey, type CreatedKey, type KeyStoreOptions } from "./keys.js";
export {
  AdminTokenError,
  KEY_PREFIX,
  MIN_ADMIN_TOKEN_CHARS,
  digestsEqual,
  ensureAdminToken,
  generateApiKey,
  sha256Hex,
} from "./credentials.js";
export { KEY_NAME_MAX_CHARS, KeyNameError, codePointLength, normalizeKeyName, printableKeyName } from "./names.js";
export { SCHEMA_VERSION } from "./migrations.js";
export { FLUSH_BUSY_TIMEOUT_MS, formatUnwrittenUsage, type FlushFailure, type UnwrittenUsage, type UsageFlushStats } from "./usage.js";
export { KeyNotFoundError, KeyStoreError, type KeyStoreFailure } from "./errors.js";
