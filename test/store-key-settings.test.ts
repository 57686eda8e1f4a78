// Key expiry, per-key rate limits and last use in the key store: values and their refusals
// (naming the field), set, changed and cleared after creation, an expired key refused with its
// date while unknown and revoked keys stay null, last use noted at authentication in memory (no
// write per request) and written by the usage flush, surviving close and reopen, and migration 3
// from a database of schema 2 (keys, usage, quotas and settings kept).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  KeyExpiredError,
  KeyNotFoundError,
  KeySettingError,
  KeyStore,
  MAX_KEY_RATE_LIMIT,
  SCHEMA_VERSION,
  checkExpiry,
  parseExpiry,
  parseRateLimit,
  sha256Hex,
} from "../src/store/index.js";
import { legacyDatabase } from "./support/legacy-db.js";

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "trellis-key-settings-"));
  dirs.push(dir);
  return dir;
}

/** Runs `fn`, expecting a KeySettingError for `field`; returns it. */
function settingRefusal(fn: () => unknown, field: "expires_at" | "rate_limit"): KeySettingError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof KeySettingError, String(error));
    assert.equal(error.field, field);
    assert.match(error.message, new RegExp(`^${field} must be`));
    return error;
  }
  assert.fail(`expected a KeySettingError for ${field}`);
}

test("expiry values: dates, instants with offsets, none; refusals name expires_at", () => {
  assert.equal(checkExpiry("2030-06-01"), "2030-06-01T00:00:00.000Z", "a date alone is 00:00 UTC of that day");
  assert.equal(checkExpiry("2030-06-01T12:30:00Z"), "2030-06-01T12:30:00.000Z");
  assert.equal(checkExpiry("2030-06-01T12:30+02:00"), "2030-06-01T10:30:00.000Z");
  assert.equal(checkExpiry("2030-06-01T12:30:15.250-01:00"), "2030-06-01T13:30:15.250Z");
  assert.equal(checkExpiry(new Date(Date.UTC(2031, 0, 2))), "2031-01-02T00:00:00.000Z");
  assert.equal(checkExpiry(null), null);
  assert.equal(parseExpiry(" none "), null);
  assert.equal(parseExpiry("never"), null);
  assert.equal(parseExpiry(" 2030-06-01 "), "2030-06-01T00:00:00.000Z");
  for (const bad of ["", "tomorrow", "2030-02-30", "2030-13-01", "2030-06-01T12:30", "2030-06-01T25:00Z", "06/01/2030", "2030-6-1"]) {
    settingRefusal(() => checkExpiry(bad), "expires_at");
  }
  settingRefusal(() => checkExpiry(new Date(Number.NaN)), "expires_at");

  assert.equal(parseRateLimit("120"), 120);
  assert.equal(parseRateLimit("none"), null);
  for (const bad of ["", "0", "-1", "1.5", "fast", String(MAX_KEY_RATE_LIMIT + 1)]) settingRefusal(() => parseRateLimit(bad), "rate_limit");
});

test("expiry and rate limit: set at creation and later, cleared, listed; refusals change nothing", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  try {
    const set = store.createKey("set", { expiresAt: "2099-01-01", rateLimit: 30 });
    const plain = store.createKey("plain");
    assert.equal(set.expiresAt, "2099-01-01T00:00:00.000Z");
    assert.equal(set.rateLimit, 30);
    assert.equal(plain.expiresAt, null);
    assert.equal(plain.rateLimit, null);
    assert.deepEqual(
      store.listKeys().map((k) => [k.name, k.expiresAt, k.rateLimit, k.lastUsedAt]),
      [
        ["set", "2099-01-01T00:00:00.000Z", 30, null],
        ["plain", null, null, null],
      ],
    );

    assert.equal(store.setExpiry(plain.id, "2098-05-06T07:08:09+01:00"), "2098-05-06T06:08:09.000Z");
    store.setRateLimit(plain.id, MAX_KEY_RATE_LIMIT);
    assert.equal(store.setExpiry(set.id, null), null);
    store.setRateLimit(set.id, null);
    assert.deepEqual(
      store.listKeys().map((k) => [k.expiresAt, k.rateLimit]),
      [
        [null, null],
        ["2098-05-06T06:08:09.000Z", MAX_KEY_RATE_LIMIT],
      ],
    );

    for (const bad of [0, -3, 1.5, Number.NaN, MAX_KEY_RATE_LIMIT + 1]) {
      settingRefusal(() => store.setRateLimit(set.id, bad), "rate_limit");
      settingRefusal(() => store.createKey("x", { rateLimit: bad }), "rate_limit");
    }
    settingRefusal(() => store.setExpiry(set.id, "2099-02-29"), "expires_at");
    settingRefusal(() => store.createKey("x", { expiresAt: "soon" }), "expires_at");
    assert.equal(store.listKeys().length, 2, "a refused setting creates no key");
    assert.deepEqual(
      store.listKeys().map((k) => [k.expiresAt, k.rateLimit]),
      [
        [null, null],
        ["2098-05-06T06:08:09.000Z", MAX_KEY_RATE_LIMIT],
      ],
      "a refused change leaves the key as it was",
    );
    assert.throws(() => store.setExpiry(42, null), KeyNotFoundError);
    assert.throws(() => store.setRateLimit(42, 5), KeyNotFoundError);
  } finally {
    store.close();
  }
});

test("authentication: an expired key is refused with its date; moving or clearing the expiry opens it again", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  try {
    const { id, key } = store.createKey("k", { expiresAt: "2030-01-01T00:00:00Z", rateLimit: 7, quota: 50 });
    const before = Date.parse("2029-12-31T23:59:59.999Z");
    const admitted = store.authenticateRequest(key, before);
    assert.deepEqual(admitted, {
      id,
      name: "k",
      quota: { quota: 50, used: 0, reserved: 0, remaining: 50, available: 50 },
      rateLimit: 7,
    });
    const at = Date.parse("2030-01-01T00:00:00Z");
    assert.throws(
      () => store.authenticateRequest(key, at),
      (e: unknown) =>
        e instanceof KeyExpiredError &&
        e.keyId === id &&
        e.expiresAt === "2030-01-01T00:00:00.000Z" &&
        e.message === "API key expired on 2030-01-01T00:00:00.000Z",
    );

    store.setExpiry(id, "2000-01-01");
    assert.throws(() => store.authenticateRequest(key), KeyExpiredError);
    assert.equal(store.authenticate(key), null, "the plain checks treat an expired key as refused");
    assert.equal(store.authenticateWithQuota(key), null);
    store.setExpiry(id, null);
    assert.equal(store.authenticateRequest(key)!.id, id);
    assert.deepEqual(store.authenticate(key), { id, name: "k" });

    assert.equal(store.authenticateRequest("trl_" + "z".repeat(43)), null, "unknown");
    assert.equal(store.authenticateRequest("not-a-key"), null);
    store.setExpiry(id, "2000-01-01");
    store.revokeKey(id);
    assert.equal(store.authenticateRequest(key), null, "revoked wins over expired: no date is revealed");
  } finally {
    store.close();
  }
});

test("last use: noted at authentication in memory, written by the flush, kept across reopen", () => {
  const dataDir = tempDir();
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  const { id, key } = store.createKey("k");
  const other = store.createKey("other");
  const expired = store.createKey("expired", { expiresAt: "2001-01-01" });
  const read = new Database(join(dataDir, "trellis.db"), { readonly: true });
  try {
    const stored = (keyId: number) =>
      read.prepare("SELECT requests, last_used_at FROM api_keys WHERE id = ?").get(keyId) as {
        requests: number;
        last_used_at: string | null;
      };
    const first = Date.parse("2031-03-04T05:06:07.000Z");
    store.authenticateRequest(key, first);
    assert.equal(store.listKeys()[0]!.lastUsedAt, "2031-03-04T05:06:07.000Z", "listed before it is written");
    assert.deepEqual(stored(id), { requests: 0, last_used_at: null }, "authentication writes nothing");
    assert.equal(store.stats().pendingRequests, 0, "authentication is not a request's usage");

    store.authenticateRequest(key, first + 60_000);
    store.authenticateRequest(key, first + 30_000); // out of order: the latest stays
    assert.throws(() => store.authenticateRequest(expired.key, first + 90_000), KeyExpiredError);
    assert.equal(store.flush(), true);
    assert.deepEqual(stored(id), { requests: 0, last_used_at: "2031-03-04T05:07:07.000Z" });
    assert.deepEqual(stored(other.id), { requests: 0, last_used_at: null });
    assert.deepEqual(stored(expired.id), { requests: 0, last_used_at: null }, "an expired key's refusal is no use");

    // A request's usage is counted as before; its charge does not move last use backwards.
    store.recordUsage(id, 5);
    assert.equal(store.flush(), true);
    assert.equal(stored(id).requests, 1);
    assert.ok(stored(id).last_used_at! >= "2031-03-04T05:07:07.000Z");
    store.authenticateRequest(key, Date.parse("2040-01-01T00:00:00Z"));
  } finally {
    read.close();
    store.close(); // writes the last authentication
  }
  const again = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    const listed = again.listKeys();
    assert.equal(listed[0]!.lastUsedAt, "2040-01-01T00:00:00.000Z");
    assert.equal(listed[0]!.requests, 1);
    assert.equal(listed[0]!.tokens, 5);
    assert.equal(listed[1]!.lastUsedAt, null);
    assert.equal(listed[2]!.expiresAt, "2001-01-01T00:00:00.000Z");
  } finally {
    again.close();
  }
});

/** A database as Trellis wrote it at schema 2 (token quotas), with usage, a quota and a setting. */
function schemaTwoDatabase(dir: string): { path: string; secret: string } {
  const { db, path } = legacyDatabase(dir, 2);
  const secret = "trl_" + "q".repeat(43);
  const insert = db.prepare(
    `INSERT INTO api_keys (name, prefix, hash, created_at, revoked_at, requests, tokens, last_used_at, token_quota)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  insert.run("quoted", "trl_qqqqqq", sha256Hex(secret), "2025-04-01T00:00:00.000Z", null, 11, 900, "2025-05-01T00:00:00.000Z", 1000);
  insert.run("open", "trl_rrrrrr", sha256Hex("trl_" + "r".repeat(43)), "2025-04-02T00:00:00.000Z", null, 0, 0, null, null);
  db.prepare("INSERT INTO settings (name, value) VALUES (?, ?)").run("admin_token_sha256", "e".repeat(64));
  db.close();
  return { path, secret };
}

test("migration 3 from schema 2 keeps keys, usage, quotas and settings; expiry and rate limit start unset", () => {
  const dataDir = tempDir();
  const { path, secret } = schemaTwoDatabase(dataDir);
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    // Migrations 4 (hourly usage, schema_migrations) and 5 (stored responses) follow 3: see store-backends.test.ts.
    assert.equal(SCHEMA_VERSION, 5);
    assert.equal(store.schemaVersion, 5);
    assert.deepEqual(
      store.listKeys().map((k) => ({ ...k })),
      [
        {
          id: 1,
          name: "quoted",
          prefix: "trl_qqqqqq",
          createdAt: "2025-04-01T00:00:00.000Z",
          revokedAt: null,
          requests: 11,
          tokens: 900,
          lastUsedAt: "2025-05-01T00:00:00.000Z",
          quota: 1000,
          expiresAt: null,
          rateLimit: null,
        },
        {
          id: 2,
          name: "open",
          prefix: "trl_rrrrrr",
          createdAt: "2025-04-02T00:00:00.000Z",
          revokedAt: null,
          requests: 0,
          tokens: 0,
          lastUsedAt: null,
          quota: null,
          expiresAt: null,
          rateLimit: null,
        },
      ],
    );
    assert.equal(store.getSetting("admin_token_sha256"), "e".repeat(64));
    assert.deepEqual(store.quotaStatus(1), { quota: 1000, used: 900, reserved: 0, remaining: 100, available: 100 });
    assert.equal(store.authenticateRequest(secret)!.rateLimit, null);
    store.setExpiry(1, "2099-12-31");
    store.setRateLimit(1, 12);
  } finally {
    store.close();
  }
  const again = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    const [first] = again.listKeys();
    assert.equal(first!.expiresAt, "2099-12-31T00:00:00.000Z");
    assert.equal(first!.rateLimit, 12);
    assert.equal(first!.quota, 1000);
  } finally {
    again.close();
  }
  const db = new Database(path);
  try {
    assert.throws(() => db.prepare("UPDATE api_keys SET rate_limit = 0 WHERE id = 1").run(), /CHECK constraint/);
  } finally {
    db.close();
  }
});
