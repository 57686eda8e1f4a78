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
export * from "./keys.js";
