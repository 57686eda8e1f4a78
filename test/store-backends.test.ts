// The key store behind its asynchronous interface, run against both implementations (keys, names,
// settings and their validation, quotas, usage and its hourly history with refusals, last use, the
// admin token): embedded SQLite (the default) and Postgres (a real server started here). Then what
// only a shared store has: two replicas on one database, migrations racing, Postgres restarting under use.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import {
  KeyExpiredError,
  KeyNameError,
  KeyNotFoundError,
  KeySettingError,
  KeyStore,
  KeyStoreError,
  POSTGRES_SCHEMA_VERSION,
  PostgresKeyStore,
  QuotaExceededError,
  QuotaValueError,
  ResponseStoreFullError,
  SCHEMA_VERSION,
  asKeyBackend,
  ensureSharedAdminToken,
  type KeyBackend,
} from "../src/store/index.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";

let server: TestPostgresServer;
const dirs: string[] = [];

before(async () => {
  server = await startPostgresServer();
});

after(async () => {
  await server?.dispose();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "trellis-backend-"));
  dirs.push(dir);
  return dir;
}

const quiet = { onFlushError: () => {}, onUnwrittenUsage: () => {} };

const backends: Record<string, () => Promise<KeyBackend>> = {
  sqlite: async () => asKeyBackend(new KeyStore({ dataDir: tempDir(), flushIntervalMs: 0, ...quiet })),
  postgres: async () => PostgresKeyStore.open({ url: await server.createDatabase(), flushIntervalMs: 0, ...quiet }),
};

for (const [dialect, open] of Object.entries(backends)) {
  test(`${dialect}: stored responses are their owner's, expire, are bounded per owner, and are deleted`, async () => {
    const store = await open();
    try {
      const limits = { ttlMs: 1000, maxPerOwner: 2, maxBytesPerOwner: 10_000 };
      const record = (n: number) => ({
        response: { id: `resp_${n}`, output: [{ type: "message", n }] },
        input: [{ type: "message", content: "hi" }],
      });
      const t = 1_000_000;
      await store.responses.save("key:1", "resp_1", record(1), limits, t);
      assert.deepEqual(await store.responses.get("key:1", "resp_1", t + 1), record(1));
      assert.equal(await store.responses.get("key:2", "resp_1", t + 1), null, "another owner reads nothing");
      assert.equal(await store.responses.delete("key:2", "resp_1", t + 1), false, "nor deletes it");
      assert.equal(await store.responses.get("key:1", "resp_1", t + 1000), null, "expired at its ttl");
      // The expired one no longer counts: two more fit, a third is refused by name.
      await store.responses.save("key:1", "resp_2", record(2), limits, t + 1000);
      await store.responses.save("key:1", "resp_3", record(3), limits, t + 1000);
      await assert.rejects(
        store.responses.save("key:1", "resp_4", record(4), limits, t + 1000),
        (e: unknown) => e instanceof ResponseStoreFullError && e.limit === "count" && /TRELLIS_RESPONSES_MAX_PER_KEY/.test(e.message),
      );
      await assert.rejects(store.responses.checkRoom("key:1", 0, limits, t + 1000), ResponseStoreFullError);
      await store.responses.checkRoom("key:2", 0, limits, t + 1000);
      await assert.rejects(
        store.responses.save("key:2", "resp_5", { response: { big: "x".repeat(20_000) }, input: [] }, limits, t + 1000),
        (e: unknown) => e instanceof ResponseStoreFullError && e.limit === "bytes",
      );
      // Concurrent saves of one owner never pass its limit together.
      const results = await Promise.allSettled(
        [6, 7, 8, 9].map((n) => store.responses.save("key:3", `resp_${n}`, record(n), limits, t + 1000)),
      );
      assert.equal(results.filter((r) => r.status === "fulfilled").length, 2);
      assert.equal(await store.responses.delete("key:1", "resp_2", t + 1001), true);
      assert.equal(await store.responses.get("key:1", "resp_2", t + 1001), null);
      await store.responses.save("key:1", "resp_4", record(4), limits, t + 1001);
      assert.equal(await store.responses.purgeExpired(t + 10_000), 4);
      assert.equal(await store.responses.get("key:1", "resp_4", t + 1002), null);
    } finally {
      await store.close();
    }
  });

  test(`${dialect}: keys are created, checked, changed, listed and revoked`, async () => {
    const store = await open();
    try {
      assert.equal(store.dialect, dialect);
      assert.equal(await store.schemaVersion(), dialect === "sqlite" ? SCHEMA_VERSION : POSTGRES_SCHEMA_VERSION);
      const created = await store.createKey("  billing  ", { quota: 100, rateLimit: 30 });
      assert.equal(created.name, "billing");
      assert.match(created.key, /^trl_/);
      const admitted = await store.authenticateRequest(created.key);
      assert.deepEqual(
        { id: admitted?.id, name: admitted?.name, rateLimit: admitted?.rateLimit, quota: admitted?.quota?.remaining },
        { id: created.id, name: "billing", rateLimit: 30, quota: 100 },
      );
      assert.equal(await store.authenticateRequest("trl_unknown"), null);
      assert.equal(await store.authenticateRequest("not a key"), null);

      await store.setRateLimit(created.id, null);
      await store.setQuota(created.id, 50);
      assert.equal(await store.setExpiry(created.id, "2999-01-01"), "2999-01-01T00:00:00.000Z");
      await assert.rejects(store.setQuota(9999, 1), KeyNotFoundError);
      store.forgetKey(created.id);
      const changed = await store.authenticateRequest(created.key);
      assert.deepEqual({ rateLimit: changed?.rateLimit, quota: changed?.quota?.quota }, { rateLimit: null, quota: 50 });

      await store.setExpiry(created.id, "2000-01-01");
      await assert.rejects(store.authenticateRequest(created.key), KeyExpiredError);
      await store.setExpiry(created.id, null);

      assert.equal(await store.revokeKey(created.id), true);
      assert.equal(await store.revokeKey(created.id), false);
      await assert.rejects(store.revokeKey(9999), KeyNotFoundError);
      assert.equal(await store.authenticateRequest(created.key), null);
      const [listed] = await store.listKeys();
      assert.equal(listed?.revokedAt !== null, true);
      assert.equal(listed?.quota, 50);
    } finally {
      await store.close();
    }
  });

  test(`${dialect}: quotas reserve and charge; usage is flushed into totals and hourly history`, async () => {
    const store = await open();
    try {
      const { id, key } = await store.createKey("metered", { quota: 100 });
      await store.authenticateRequest(key);
      const held = store.reserveTokens(id, 60)!;
      assert.throws(() => store.reserveTokens(id, 41), QuotaExceededError);
      store.recordUsage(id, 25, [held]);
      assert.equal(store.quotaStatus(id)?.remaining, 75);
      store.recordUsage(id, 5);
      assert.equal(await store.flush(), true);
      const [info] = await store.listKeys();
      assert.deepEqual({ requests: info?.requests, tokens: info?.tokens }, { requests: 2, tokens: 30 });
      assert.ok(info?.lastUsedAt !== null);
      // Recorded after the flush: counted in the history before it is written.
      store.recordUsage(id, 7);
      const hours = await store.usageHistory("hour");
      assert.equal(hours.length, 48);
      const none = { rateLimited: 0, clientErrors: 0, serverErrors: 0 };
      const zero = { requests: 0, tokens: 0 };
      assert.deepEqual(hours.at(-1), { start: `${new Date().toISOString().slice(0, 13)}:00:00Z`, requests: 3, tokens: 37, ...none });
      assert.equal(
        hours.slice(0, -1).every((p) => p.requests === 0),
        true,
      );
      const days = await store.usageHistory("day", { keyId: id });
      assert.equal(days.length, 90);
      assert.deepEqual(days.at(-1), { start: `${new Date().toISOString().slice(0, 10)}T00:00:00Z`, requests: 3, tokens: 37, ...none });
      assert.deepEqual((await store.usageHistory("hour", { keyId: id + 1 })).at(-1), { start: hours.at(-1)!.start, ...zero, ...none });
      // Refusals are counted beside, in their hour, written with the usage.
      store.recordOutcome(id, "rate-limited");
      store.recordOutcome(id, "rate-limited");
      store.recordOutcome(id, "client-error");
      store.recordOutcome(id, "server-error");
      assert.equal(await store.flush(), true);
      assert.deepEqual((await store.usageHistory("hour", { keyId: id })).at(-1), {
        start: hours.at(-1)!.start,
        requests: 3,
        tokens: 37,
        rateLimited: 2,
        clientErrors: 1,
        serverErrors: 1,
      });
      assert.equal((await store.listKeys())[0]?.requests, 3, "refusals are not requests served");
      // A day later, the hour falls out of the 48-hour window but stays in the daily one.
      const later = Date.now() + 49 * 3_600_000;
      assert.equal(
        (await store.usageHistory("hour", { nowMs: later })).reduce((sum, p) => sum + p.requests, 0),
        0,
      );
      assert.equal(
        (await store.usageHistory("day", { nowMs: later })).reduce((sum, p) => sum + p.tokens, 0),
        37,
      );
    } finally {
      await store.close();
    }
  });

  test(`${dialect}: names, quotas, expiries and rate limits are checked as the SQLite store always did`, async () => {
    const store = await open();
    try {
      await assert.rejects(store.createKey("   "), KeyNameError);
      await assert.rejects(store.createKey("bad\u0007name"), KeyNameError);
      await assert.rejects(store.createKey("x".repeat(101)), KeyNameError);
      await assert.rejects(store.createKey("q", { quota: -1 }), QuotaValueError);
      await assert.rejects(store.createKey("q", { quota: 1.5 }), QuotaValueError);
      await assert.rejects(store.createKey("e", { expiresAt: "2026-02-30" }), KeySettingError);
      await assert.rejects(store.createKey("e", { expiresAt: "2026-12-01T10:00:00" }), KeySettingError);
      await assert.rejects(store.createKey("r", { rateLimit: 0 }), KeySettingError);
      assert.deepEqual(await store.listKeys(), [], "nothing refused was stored");
      const { id, key } = await store.createKey("\u{1F511} ok", { expiresAt: "2030-01-01T01:00:00+01:00" });
      const [listed] = await store.listKeys();
      assert.deepEqual(
        { name: listed?.name, expiresAt: listed?.expiresAt },
        { name: "\u{1F511} ok", expiresAt: "2030-01-01T00:00:00.000Z" },
      );
      await assert.rejects(store.setRateLimit(id, 0), KeySettingError);
      // Last use: noted by the key check, listed before and after the flush; an expired key's stays.
      assert.equal(listed?.lastUsedAt, null);
      await store.authenticateRequest(key, Date.parse("2026-11-01T00:00:00Z"));
      assert.equal((await store.listKeys())[0]?.lastUsedAt, "2026-11-01T00:00:00.000Z");
      await store.flush();
      assert.equal((await store.listKeys())[0]?.lastUsedAt, "2026-11-01T00:00:00.000Z");
      await store.setExpiry(id, "2000-01-01");
      store.forgetKey(id);
      await assert.rejects(store.authenticateRequest(key), KeyExpiredError);
      await store.flush();
      assert.equal((await store.listKeys())[0]?.lastUsedAt, "2026-11-01T00:00:00.000Z");
    } finally {
      await store.close();
    }
  });

  test(`${dialect}: a used-up quota refuses every reservation until it is raised`, async () => {
    const store = await open();
    try {
      const { id, key } = await store.createKey("small", { quota: 10 });
      await store.authenticateRequest(key);
      store.recordUsage(id, 10, [store.reserveTokens(id, 10)!]);
      assert.throws(() => store.reserveTokens(id), QuotaExceededError, "exhausted: even a request reserving nothing");
      assert.equal(store.quotaStatus(id)?.remaining, 0);
      await store.flush();
      await store.setQuota(id, 25);
      store.forgetKey(id);
      const admitted = await store.authenticateRequest(key);
      assert.deepEqual({ used: admitted?.quota?.used, remaining: admitted?.quota?.remaining }, { used: 10, remaining: 15 });
      assert.ok(store.reserveTokens(id, 15));
      assert.throws(() => store.reserveTokens(id, 1), QuotaExceededError, "the first reservation holds the rest");
    } finally {
      await store.close();
    }
  });

  test(`${dialect}: the generated admin token is claimed once, whoever asks first`, async () => {
    const store = await open();
    try {
      const [a, b] = await Promise.all([ensureSharedAdminToken(store, ""), ensureSharedAdminToken(store, "")]);
      assert.equal(a.hash, b.hash);
      assert.equal([a.generated, b.generated].filter((g) => g !== null).length, 1);
      const again = await ensureSharedAdminToken(store, "");
      assert.deepEqual(again, { hash: a.hash, generated: null });
    } finally {
      await store.close();
    }
  });
}

test("sqlite: migrations 4 and 5 from schema 3 keep everything and records versions in schema_migrations", () => {
  const dataDir = tempDir();
  const before = new KeyStore({ dataDir, flushIntervalMs: 0 });
  const { id } = before.createKey("old");
  before.recordUsage(id, 9);
  before.close();
  // Back to schema 3, as a Trellis of the last release left it.
  const db = new Database(join(dataDir, "trellis.db"));
  db.exec("DROP TABLE responses; DROP TABLE usage_hourly; DROP TABLE schema_migrations; PRAGMA user_version = 3;");
  db.close();
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.equal(store.schemaVersion, 5);
    assert.deepEqual(
      store.listKeys().map((k) => [k.name, k.requests, k.tokens]),
      [["old", 1, 9]],
    );
    const check = new Database(join(dataDir, "trellis.db"), { readonly: true });
    const versions = check.prepare("SELECT version, applied_at IS NOT NULL AS timed FROM schema_migrations ORDER BY version").all();
    check.close();
    assert.deepEqual(versions, [
      { version: 1, timed: 0 },
      { version: 2, timed: 0 },
      { version: 3, timed: 0 },
      { version: 4, timed: 1 },
      { version: 5, timed: 1 },
    ]);
  } finally {
    store.close();
  }
});

test("an out-of-date schema is refused when migrating at start is off, in both dialects", async () => {
  assert.throws(
    () => new KeyStore({ dataDir: tempDir(), migrate: false }),
    (error: unknown) => error instanceof KeyStoreError && error.failure === "old-schema" && /trellis migrate/.test(error.message),
  );
  const url = await server.createDatabase();
  await assert.rejects(
    PostgresKeyStore.open({ url, migrate: false }),
    (error: unknown) => error instanceof KeyStoreError && error.failure === "old-schema",
  );
  const migrated = await PostgresKeyStore.open({ url });
  await migrated.close();
  const store = await PostgresKeyStore.open({ url, migrate: false });
  await store.close();
});

test("postgres: replicas starting together migrate once", async () => {
  const url = await server.createDatabase();
  const stores = await Promise.all([1, 2, 3, 4].map(() => PostgresKeyStore.open({ url, ...quiet })));
  try {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query("SELECT version FROM schema_migrations ORDER BY version");
    await client.end();
    assert.deepEqual(
      rows.map((r) => r.version),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});

test("postgres: two replicas share keys at once, see a revocation once the key cache time has passed, and add usage up", async () => {
  const url = await server.createDatabase();
  const keyCacheMs = 300;
  const a = await PostgresKeyStore.open({ url, flushIntervalMs: 0, keyCacheMs, ...quiet });
  const b = await PostgresKeyStore.open({ url, flushIntervalMs: 0, keyCacheMs, ...quiet });
  try {
    const { id, key } = await a.createKey("shared");
    const beforeRead = Date.now();
    assert.equal((await b.authenticateRequest(key))?.id, id, "a key created on one replica works on another at once");
    await a.revokeKey(id);
    assert.equal(await a.authenticateRequest(key), null, "the revoking replica refuses at once");
    // The key check takes its clock as an argument: the other replica's row, read after
    // beforeRead, stands for keyCacheMs after it was read, and is read again once they have passed.
    assert.equal(
      (await b.authenticateRequest(key, beforeRead))?.id,
      id,
      "within the key cache time the other replica uses the row it read",
    );
    assert.equal(
      await b.authenticateRequest(key, Date.now() + keyCacheMs),
      null,
      "past the key cache time the other replica reads the revocation",
    );
    const { id: other, key: otherKey } = await b.createKey("usage");
    await b.authenticateRequest(otherKey);
    b.forgetKey(other);
    for (let i = 0; i < 50; i++) {
      a.recordUsage(other, 2);
      b.recordUsage(other, 3);
    }
    const [fromA, fromB] = await Promise.all([a.flush(), b.flush()]);
    assert.deepEqual([fromA, fromB], [true, true]);
    const info = (await a.listKeys()).find((k) => k.id === other)!;
    assert.deepEqual({ requests: info.requests, tokens: info.tokens }, { requests: 100, tokens: 250 });
    assert.equal((await b.usageHistory("hour", { keyId: other })).at(-1)?.tokens, 250);
  } finally {
    await a.close();
    await b.close();
  }
});

test("postgres: while the database restarts, known keys are served, unknown ones get a KeyStoreError, and no usage is lost", async () => {
  const url = await server.createDatabase();
  const failures: string[] = [];
  const store = await PostgresKeyStore.open({
    url,
    flushIntervalMs: 0,
    keyCacheMs: 50,
    connectionTimeoutMs: 500,
    onFlushError: (f) => failures.push(f.code ?? f.error.message),
  });
  try {
    const { id, key } = await store.createKey("steady");
    const unseen = await store.createKey("unseen");
    assert.ok(await store.authenticateRequest(key));
    store.recordUsage(id, 11);
    await server.stop();
    try {
      await new Promise((resolve) => setTimeout(resolve, 60));
      assert.equal((await store.authenticateRequest(key))?.id, id, "a key seen lately is still served");
      assert.ok(store.staleKeyServes > 0);
      await assert.rejects(
        store.authenticateRequest(unseen.key),
        (error: unknown) => error instanceof KeyStoreError && error.failure === "unreachable",
      );
      store.recordUsage(id, 4);
      assert.equal(await store.flush(), false, "the flush fails while the database is down, keeping its counts");
      assert.ok(failures.length > 0);
      assert.equal(store.stats().pendingTokens, 15);
    } finally {
      await server.start();
    }
    assert.equal(await store.flush(), true);
    const info = (await store.listKeys()).find((k) => k.id === id)!;
    assert.deepEqual({ requests: info.requests, tokens: info.tokens }, { requests: 2, tokens: 15 });
    assert.equal((await store.authenticateRequest(unseen.key))?.id, unseen.id, "new keys work again once it is back");
  } finally {
    await store.close();
  }
});

test("postgres: a database that stops answering: known keys are answered from their rows before its query timeout, unknown ones get that timeout's KeyStoreError", {
  timeout: 60_000,
}, async (t) => {
  const url = await server.createDatabase();
  const store = await PostgresKeyStore.open({ url, flushIntervalMs: 0, keyCacheMs: 20, statementTimeoutMs: 400, ...quiet });
  try {
    const { id, key } = await store.createKey("frozen");
    const unseen = await store.createKey("unseen");
    assert.ok(await store.authenticateRequest(key));
    server.pause();
    // The store's clock stands still from here, past the key cache time (timers still run): the
    // pause on reads after a failed one (1 s) cannot run out however slow this machine is.
    t.mock.timers.enable({ apis: ["Date"], now: Date.now() + 1000 });
    try {
      // Both reads wait on the frozen database. The known key's check waits for its row a
      // bounded time, far shorter than the query timeout, then answers from the row it has; the
      // unknown key has nothing to stand in and waits for the query timeout.
      const known = store.authenticateRequest(key);
      let unknownSettled = false;
      const unknown = store.authenticateRequest(unseen.key).then(
        () => null,
        (error: unknown) => error,
      );
      void unknown.finally(() => (unknownSettled = true));
      assert.equal((await known)?.id, id);
      assert.equal(store.staleKeyServes, 1, "the known key was answered from its last row");
      assert.equal(unknownSettled, false, "the known key was answered before the query timeout ended the unknown key's read");
      // A read failed a moment ago: later checks are answered without a read, in this same turn
      // of the event loop (nothing from the database, no timer, could have come meanwhile).
      const later = Promise.all(Array.from({ length: 20 }, () => store.authenticateRequest(key)));
      const first = await Promise.race([later, new Promise<"waited">((resolve) => setImmediate(() => resolve("waited")))]);
      assert.notEqual(first, "waited", "later checks waited on the database");
      assert.deepEqual(
        (first as Awaited<typeof later>).map((admission) => admission?.id),
        Array.from({ length: 20 }, () => id),
      );
      assert.equal(store.staleKeyServes, 21);
      // An unknown key: bounded by the query timeout, not for ever, then a KeyStoreError (503).
      const error = await unknown;
      assert.ok(error instanceof KeyStoreError && error.failure === "unreachable" && /timeout/i.test(error.message), String(error));
    } finally {
      t.mock.timers.reset();
      server.resume();
    }
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal((await store.authenticateRequest(unseen.key))?.id, unseen.id, "the database answers again");
  } finally {
    await store.close();
  }
});

test("postgres: close() writes what is pending; what it cannot write is reported key by key", async () => {
  const url = await server.createDatabase();
  const store = await PostgresKeyStore.open({ url, flushIntervalMs: 0, ...quiet });
  const { id } = await store.createKey("closing");
  store.recordUsage(id, 3);
  await store.close();
  const reopened = await PostgresKeyStore.open({ url, flushIntervalMs: 0, ...quiet });
  assert.equal((await reopened.listKeys())[0]?.tokens, 3);
  const unwritten: number[] = [];
  reopened.recordUsage(id, 8);
  await server.stop();
  try {
    const failing = await PostgresKeyStore.open({ url, flushIntervalMs: 0 }).catch((error: unknown) => error);
    assert.ok(failing instanceof KeyStoreError && failing.failure === "unreachable", "opening an unreachable database names why");
  } finally {
    await server.start();
  }
  // A store whose database is gone at close: its usage is handed over, not dropped.
  const doomed = await PostgresKeyStore.open({
    url,
    flushIntervalMs: 0,
    closeTimeoutMs: 300,
    connectionTimeoutMs: 200,
    onFlushError: () => {},
    onUnwrittenUsage: (usage) => unwritten.push(...usage.map((u) => u.tokens)),
  });
  doomed.recordUsage(id, 5);
  await server.stop();
  try {
    await doomed.close();
  } finally {
    await server.start();
  }
  assert.deepEqual(unwritten, [5]);
  await reopened.close();
  const last = await PostgresKeyStore.open({ url, flushIntervalMs: 0, ...quiet });
  assert.equal((await last.listKeys())[0]?.tokens, 11);
  await last.close();
});
