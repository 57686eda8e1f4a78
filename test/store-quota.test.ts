// Token quotas in the key store: values and their refusals, reservation semantics (exhausted,
// too large, nothing reserved), exact counting under many interleaved reservations, charges and
// flushes (some of them failing on a lock held by another process), usage not yet written counted,
// persistence across close and reopen, and migration of a database of schema 1 (keys, usage and
// settings kept).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  KeyNotFoundError,
  KeyStore,
  MAX_TOKEN_QUOTA,
  QuotaExceededError,
  QuotaValueError,
  SCHEMA_VERSION,
  parseQuota,
  sha256Hex,
  type TokenReservation,
} from "../src/store/index.js";
import { holdLock } from "./support/hold-lock.js";
import { legacyDatabase } from "./support/legacy-db.js";

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "trellis-quota-"));
  dirs.push(dir);
  return dir;
}

const quiet = { onFlushError: () => {}, onUnwrittenUsage: () => {} };

/** Runs `fn`, expecting a QuotaExceededError; returns it. */
function refusal(fn: () => unknown): QuotaExceededError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof QuotaExceededError, String(error));
    return error;
  }
  assert.fail("expected a QuotaExceededError");
}

test("quota values: set at creation and later, cleared, listed; refusals name the field", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  try {
    const limited = store.createKey("limited", { quota: 100 });
    const open = store.createKey("open");
    assert.equal(limited.quota, 100);
    assert.equal(open.quota, null);
    assert.deepEqual(
      store.listKeys().map((k) => [k.name, k.quota]),
      [
        ["limited", 100],
        ["open", null],
      ],
    );
    assert.deepEqual(store.quotaStatus(limited.id), { quota: 100, used: 0, reserved: 0, remaining: 100, available: 100 });
    assert.equal(store.quotaStatus(open.id), null);
    assert.equal(store.quotaStatus(999), null);
    assert.equal(store.reserveTokens(open.id, 1_000_000), null, "no quota: nothing reserved, never refused");

    store.setQuota(open.id, 0);
    assert.equal(store.quotaStatus(open.id)!.remaining, 0, "a quota of 0 is a key exhausted from the start");
    store.setQuota(open.id, null);
    assert.equal(store.quotaStatus(open.id), null);
    store.setQuota(limited.id, MAX_TOKEN_QUOTA);
    assert.equal(store.listKeys()[0]!.quota, MAX_TOKEN_QUOTA);

    for (const bad of [-1, 1.5, Number.NaN, MAX_TOKEN_QUOTA + 1]) {
      assert.throws(
        () => store.setQuota(limited.id, bad),
        (e: unknown) => e instanceof QuotaValueError && e.field === "quota",
      );
      assert.throws(() => store.createKey("x", { quota: bad }), QuotaValueError);
    }
    assert.equal(store.listKeys().length, 2, "a refused quota creates no key");
    assert.throws(() => store.setQuota(42, 5), KeyNotFoundError);

    assert.equal(parseQuota("1200"), 1200);
    assert.equal(parseQuota(" none "), null);
    assert.equal(parseQuota("unlimited"), null);
    for (const bad of ["", "-3", "1e3", "12.5", "lots", "99999999999999999999"]) assert.throws(() => parseQuota(bad), QuotaValueError);
  } finally {
    store.close();
  }
});

test("reservations: exhausted keys and requests beyond what is available are refused, saying how much is left", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  try {
    const { id } = store.createKey("k", { quota: 100 });
    const first = store.reserveTokens(id, 60)!;
    assert.deepEqual(store.quotaStatus(id), { quota: 100, used: 0, reserved: 60, remaining: 100, available: 40 });

    const tooBig = refusal(() => store.reserveTokens(id, 41));
    assert.equal(tooBig.requested, 41);
    assert.equal(tooBig.status.available, 40);
    assert.match(
      tooBig.message,
      /^this request may generate up to 41 tokens .*more than the 40 left .*60 reserved by its requests in progress/,
    );
    assert.match(tooBig.message, /a request that may generate at most 40 tokens would be admitted/);
    const second = store.reserveTokens(id, 40)!;
    assert.equal(store.quotaStatus(id)!.available, 0);
    // Nothing left to reserve, but the key is not exhausted: a request that reserves nothing passes.
    const none = store.reserveTokens(id, 0)!;
    assert.equal(none.tokens, 0);
    assert.equal(store.reserveTokens(id)!.tokens, 0);
    assert.match(refusal(() => store.reserveTokens(id, 1)).message, /retry when its requests in progress have finished/);

    // Charged less than reserved: the rest is given back at once.
    store.recordUsage(id, 25, [first]);
    assert.deepEqual(store.quotaStatus(id), { quota: 100, used: 25, reserved: 40, remaining: 75, available: 35 });
    store.recordUsage(id, 40, [second, none]);
    store.recordUsage(id, 40, [second]); // a reservation is released once; the second charge is usage all the same
    assert.deepEqual(store.quotaStatus(id), { quota: 100, used: 105, reserved: 0, remaining: 0, available: 0 });
    assert.equal(store.reservationsInProgress, 1, "the reservation of undefined tokens is still held (nothing released it)");

    const exhausted = refusal(() => store.reserveTokens(id, 0));
    assert.equal(exhausted.requested, 0);
    assert.match(exhausted.message, /^the token quota of this API key is used up: 105 of its 100 tokens generated$/);
    assert.equal(refusal(() => store.reserveTokens(id)).requested, null);
    // Raising the quota opens the key again; lowering it below what is used exhausts it.
    store.setQuota(id, 150);
    assert.equal(store.quotaStatus(id)!.remaining, 45);
    assert.ok(store.reserveTokens(id, 45));
    assert.throws(() => store.reserveTokens(id, -1), RangeError);
    assert.throws(() => store.reserveTokens(id, 2.5), RangeError);
  } finally {
    store.close();
  }
});

test("authenticateWithQuota reads the quota in the same read; unwritten usage counts", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  try {
    const limited = store.createKey("limited", { quota: 10 });
    const open = store.createKey("open");
    store.recordUsage(limited.id, 4);
    assert.deepEqual(store.authenticateWithQuota(limited.key), {
      id: limited.id,
      name: "limited",
      quota: { quota: 10, used: 4, reserved: 0, remaining: 6, available: 6 },
    });
    assert.deepEqual(store.authenticateWithQuota(open.key), { id: open.id, name: "open", quota: null });
    assert.deepEqual(store.authenticate(limited.key), { id: limited.id, name: "limited" });
    assert.ok(store.flush());
    assert.equal(store.authenticateWithQuota(limited.key)!.quota!.used, 4, "the same once written");
    store.revokeKey(limited.id);
    assert.equal(store.authenticateWithQuota(limited.key), null);
  } finally {
    store.close();
  }
});

/** A tiny deterministic generator (xorshift), so a failure can be replayed. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

test("many interleaved reservations, charges and flushes (some failing): exact, never over the quota", async () => {
  const dataDir = tempDir();
  const quota = 20_000;
  const store = new KeyStore({ dataDir, flushIntervalMs: 1, maxFlushRetryDelayMs: 4, ...quiet });
  const { id } = store.createKey("busy", { quota });
  const other = store.createKey("other", { quota: 500 }).id;
  const random = rng(20240611);
  const sleep = () =>
    new Promise<void>((resolve) => (random() < 0.5 ? setImmediate(resolve) : setTimeout(resolve, Math.floor(random() * 3))));
  let charged = 0;
  let otherCharged = 0;
  let admitted = 0;
  let refused = 0;
  let checks = 0;
  const check = () => {
    const s = store.quotaStatus(id)!;
    checks++;
    assert.equal(s.used, charged, "used is exactly what was charged, written or not");
    assert.ok(s.used + s.reserved <= quota, `used ${s.used} + reserved ${s.reserved} within ${quota}`);
  };
  const request = async (key: number): Promise<void> => {
    await sleep();
    const want = Math.floor(random() * 120);
    let held: TokenReservation | null;
    try {
      held = store.reserveTokens(key, want);
    } catch (error) {
      assert.ok(error instanceof QuotaExceededError);
      assert.ok(want > error.status.available, "refused only when it did not fit");
      if (key === id) refused++;
      return;
    }
    if (key === id) admitted++;
    if (key === id) check();
    await sleep();
    const generated = Math.floor(random() * (want + 1));
    if (key === id) charged += generated;
    else otherCharged += generated;
    store.recordUsage(key, generated, held ? [held] : []);
    if (key === id) check();
    if (random() < 0.05) store.flush();
  };
  const batch = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => request(i % 7 === 0 ? other : id)));
  await batch(1000);
  assert.ok(store.stats().flushesTotal > 0, "flushes wrote usage meanwhile");
  // Another process holds the write lock: flushes fail, counts stay buffered, and the quota still
  // counts them; then it lets go and the buffered counts are written with the new ones.
  const lock = await holdLock(store.path);
  await batch(1000);
  assert.ok(store.stats().flushFailuresTotal > 0, "flushes failed on the lock");
  await lock.release();
  await batch(1000);

  assert.ok(admitted > 100 && refused > 100, `both outcomes happened (admitted ${admitted}, refused ${refused})`);
  assert.ok(checks > 2 * admitted - 1);
  assert.equal(store.reservationsInProgress, 0, "every hold was given back");
  const status = store.quotaStatus(id)!;
  assert.equal(status.used, charged);
  assert.ok(status.used <= quota);
  assert.equal(status.reserved, 0);
  assert.ok(store.quotaStatus(other)!.used <= 500);
  assert.ok(store.flush());
  store.close();

  const reopened = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    const row = reopened.listKeys().find((k) => k.id === id)!;
    assert.equal(row.tokens, charged, "written exactly once");
    assert.equal(row.quota, quota);
    assert.equal(reopened.listKeys().find((k) => k.id === other)!.tokens, otherCharged);
    assert.deepEqual(reopened.quotaStatus(id), {
      quota,
      used: charged,
      reserved: 0,
      remaining: quota - charged,
      available: quota - charged,
    });
  } finally {
    reopened.close();
  }
});

test("persistence: quota and used survive close and reopen; usage not yet written counts before it is", () => {
  const dataDir = tempDir();
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  const { id, key } = store.createKey("persist", { quota: 100 });
  const held = store.reserveTokens(id, 60)!;
  store.recordUsage(id, 60, [held]);
  assert.equal(store.quotaStatus(id)!.used, 60, "buffered, not written yet");
  const db = new Database(store.path, { readonly: true });
  assert.equal((db.prepare("SELECT tokens FROM api_keys WHERE id = ?").get(id) as { tokens: number }).tokens, 0);
  db.close();
  store.close(); // writes the buffer

  const reopened = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.deepEqual(reopened.authenticateWithQuota(key)!.quota, { quota: 100, used: 60, reserved: 0, remaining: 40, available: 40 });
    assert.equal(refusal(() => reopened.reserveTokens(id, 41)).status.available, 40);
    reopened.recordUsage(id, 40, [reopened.reserveTokens(id, 40)!]);
    assert.equal(reopened.quotaStatus(id)!.remaining, 0);
    reopened.setQuota(id, 250);
  } finally {
    reopened.close();
  }
  const third = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.deepEqual(third.quotaStatus(id), { quota: 250, used: 100, reserved: 0, remaining: 150, available: 150 });
    third.setQuota(id, null);
  } finally {
    third.close();
  }
  const fourth = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.equal(fourth.quotaStatus(id), null);
    assert.equal(fourth.listKeys()[0]!.tokens, 100);
  } finally {
    fourth.close();
  }
});

/** Schema 1 exactly as it shipped (migration 0), with keys, usage and a setting in it. */
function schemaOneDatabase(dir: string): { path: string; secret: string } {
  const { db, path } = legacyDatabase(dir, 1);
  const secret = "trl_" + "a".repeat(43);
  const insert = db.prepare(
    "INSERT INTO api_keys (name, prefix, hash, created_at, revoked_at, requests, tokens, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  insert.run("old service", "trl_aaaaaa", sha256Hex(secret), "2025-01-02T03:04:05.000Z", null, 17, 4321, "2025-02-03T04:05:06.000Z");
  insert.run(
    "retired",
    "trl_bbbbbb",
    sha256Hex("trl_" + "b".repeat(43)),
    "2025-01-01T00:00:00.000Z",
    "2025-03-01T00:00:00.000Z",
    2,
    9,
    null,
  );
  db.prepare("INSERT INTO settings (name, value) VALUES (?, ?)").run("admin_token_sha256", "f".repeat(64));
  db.close();
  return { path, secret };
}

test("migration from schema 1 keeps keys, usage and settings; the quota starts unlimited", () => {
  const dataDir = tempDir();
  const { path, secret } = schemaOneDatabase(dataDir);
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.equal(store.schemaVersion, SCHEMA_VERSION);
    assert.equal(
      SCHEMA_VERSION,
      5,
      "migrations 3 (expiry, rate limit), 4 (hourly usage) and 5 (stored responses) run after 2: see store-key-settings.test.ts",
    );
    assert.deepEqual(
      store.listKeys().map((k) => ({ ...k })),
      [
        {
          id: 1,
          name: "old service",
          prefix: "trl_aaaaaa",
          createdAt: "2025-01-02T03:04:05.000Z",
          revokedAt: null,
          requests: 17,
          tokens: 4321,
          lastUsedAt: "2025-02-03T04:05:06.000Z",
          quota: null,
          expiresAt: null,
          rateLimit: null,
        },
        {
          id: 2,
          name: "retired",
          prefix: "trl_bbbbbb",
          createdAt: "2025-01-01T00:00:00.000Z",
          revokedAt: "2025-03-01T00:00:00.000Z",
          requests: 2,
          tokens: 9,
          lastUsedAt: null,
          quota: null,
          expiresAt: null,
          rateLimit: null,
        },
      ],
    );
    assert.equal(store.getSetting("admin_token_sha256"), "f".repeat(64));
    assert.deepEqual(store.authenticateWithQuota(secret), { id: 1, name: "old service", quota: null });
    // The quota bounds the usage the key already has.
    store.setQuota(1, 5000);
    assert.deepEqual(store.quotaStatus(1), { quota: 5000, used: 4321, reserved: 0, remaining: 679, available: 679 });
    assert.ok(store.createKey("new", { quota: 3 }).id > 2);
  } finally {
    store.close();
  }
  // Opening again runs nothing more; a database can hold no negative quota.
  const again = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.equal(again.listKeys()[0]!.quota, 5000);
  } finally {
    again.close();
  }
  const db = new Database(path);
  try {
    assert.throws(() => db.prepare("UPDATE api_keys SET token_quota = -1 WHERE id = 1").run(), /CHECK constraint/);
  } finally {
    db.close();
  }
});
