/**
 * Opening the key store where it cannot work: every failure is a KeyStoreError naming the
 * database path and the cause an operator can act on, never SQLite's bare "unable to open
 * database file".
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { KeyStore, KeyStoreError, SCHEMA_VERSION, type KeyStoreFailure } from "../src/store/index.js";
import { holdLock } from "./support/hold-lock.js";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "trellis-open-"));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) {
    chmodSync(d, 0o755);
    rmSync(d, { recursive: true, force: true });
  }
});

function openFails(dataDir: string, failure: KeyStoreFailure, reason: RegExp, options: { busyTimeoutMs?: number } = {}): KeyStoreError {
  let caught: unknown;
  try {
    new KeyStore({ dataDir, flushIntervalMs: 0, ...options }).close();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof KeyStoreError, `expected a KeyStoreError, got ${String(caught)}`);
  const path = join(dataDir, "trellis.db");
  assert.equal(caught.path, path);
  assert.equal(caught.failure, failure, caught.message);
  assert.ok(caught.message.startsWith(`cannot open the key store ${path}: `), caught.message);
  assert.match(caught.reason, reason);
  assert.equal(caught.message.includes("\n"), false);
  return caught;
}

/** Whether this process can still create files in a folder it made read-only (root can). */
function writesIgnoreModeBits(dir: string): boolean {
  try {
    writeFileSync(join(dir, ".probe"), "");
    rmSync(join(dir, ".probe"));
    return true;
  } catch {
    return false;
  }
}

test("the data folder is a regular file, or lies under one", () => {
  const root = tmp();
  const file = join(root, "data");
  writeFileSync(file, "not a folder");
  openFails(file, "not-a-directory", new RegExp(`the data folder ${file} is not a directory`));
  openFails(join(file, "sub"), "not-a-directory", /is not a directory/);
});

test("trellis.db is a directory", () => {
  const dataDir = tmp();
  mkdirSync(join(dataDir, "trellis.db"));
  openFails(dataDir, "not-a-directory", /trellis\.db is a directory, not a database file/);
});

test("trellis.db is not a SQLite database", () => {
  const dataDir = tmp();
  writeFileSync(join(dataDir, "trellis.db"), "these are someone else's notes, not a database\n".repeat(100));
  openFails(dataDir, "not-a-database", /not a valid SQLite database/);
});

test("a newer schema is refused, naming the versions", () => {
  const dataDir = tmp();
  new KeyStore({ dataDir, flushIntervalMs: 0 }).close();
  const raw = new Database(join(dataDir, "trellis.db"));
  raw.pragma(`user_version = ${SCHEMA_VERSION + 3}`);
  raw.close();
  openFails(
    dataDir,
    "newer-schema",
    new RegExp(`schema version ${SCHEMA_VERSION + 3}, newer than this Trellis \\(${SCHEMA_VERSION}\\); upgrade Trellis`),
  );
});

test("a database locked by another process while it needs migrating", async () => {
  const dataDir = tmp();
  const lock = await holdLock(join(dataDir, "trellis.db"));
  try {
    // Opening blocks this thread and the lock is held until this test releases it: the open can
    // only come back by giving up after its own lock wait, refused as "locked".
    openFails(dataDir, "locked", /locked by another process/, { busyTimeoutMs: 50 });
  } finally {
    await lock.release();
  }
  // The wait it gave up after is the one asked for, not the 5 s default: the connection's busy timeout.
  const store = new KeyStore({ dataDir, flushIntervalMs: 0, busyTimeoutMs: 50 });
  assert.equal((store as unknown as { db: Database.Database }).db.pragma("busy_timeout", { simple: true }), 50);
  store.close();
});

test("a read-only data folder, new or holding a database", (t) => {
  const fresh = tmp();
  const existing = tmp();
  new KeyStore({ dataDir: existing, flushIntervalMs: 0 }).close();
  chmodSync(fresh, 0o555);
  chmodSync(existing, 0o555);
  if (writesIgnoreModeBits(fresh)) {
    t.skip("this process writes through mode bits (running as root); the not-a-directory cases cover the path naming");
    return;
  }
  openFails(fresh, "not-writable", new RegExp(`the data folder ${fresh} is not writable by this user`));
  openFails(existing, "not-writable", new RegExp(`the data folder ${existing} is not writable by this user`));
});

test("a key write that meets a lock past the busy timeout is a KeyStoreError, not a bare SqliteError", async () => {
  const dataDir = tmp();
  const store = new KeyStore({ dataDir, flushIntervalMs: 0, busyTimeoutMs: 50 });
  const id = store.createKey("k").id;
  const lock = await holdLock(store.path);
  try {
    assert.throws(
      () => store.createKey("blocked"),
      (e: unknown) =>
        e instanceof KeyStoreError &&
        e.failure === "locked" &&
        e.message.startsWith(`cannot create the key in ${store.path}: the database is locked`),
    );
    assert.throws(
      () => store.revokeKey(id),
      (e: unknown) => e instanceof KeyStoreError && e.failure === "locked",
    );
  } finally {
    await lock.release();
  }
  assert.equal(store.revokeKey(id), true);
  store.close();
});
