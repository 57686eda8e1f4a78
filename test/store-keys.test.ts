// The key store: keys stored only as hashes, revocation, buffered and periodic usage flushes,
// schema migrations (a newer schema refused, not dropped), the admin token, and key-name rules
// (length in code points, no control characters, lone surrogates or bidi overrides).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  AdminTokenError,
  KeyNameError,
  KeyStore,
  MIN_ADMIN_TOKEN_CHARS,
  SCHEMA_VERSION,
  ensureAdminToken,
  printableKeyName,
  sha256Hex,
} from "../src/store/index.js";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "trellis-store-"));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("keys are stored only as hashes, survive reopening, and revocation sticks", () => {
  const dir = tmp();
  let store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  const a = store.createKey("alpha");
  const b = store.createKey("beta");
  assert.notEqual(a.key, b.key);
  assert.equal(store.authenticate(a.key)?.name, "alpha");
  assert.equal(store.authenticate("trl_nope"), null);
  assert.equal(store.authenticate("not-even-prefixed"), null);
  store.revokeKey(b.id);
  store.close();
  for (const file of readdirSync(dir)) {
    const bytes = readFileSync(join(dir, file)).toString("latin1");
    assert.equal(bytes.includes(a.key), false, `secret found in ${file}`);
  }
  const raw = new Database(join(dir, "trellis.db"), { readonly: true });
  assert.equal((raw.prepare("SELECT hash FROM api_keys WHERE id = ?").get(a.id) as { hash: string }).hash, sha256Hex(a.key));
  assert.equal(raw.pragma("journal_mode", { simple: true }), "wal");
  raw.close();
  store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  assert.equal(store.authenticate(a.key)?.id, a.id);
  assert.equal(store.authenticate(b.key), null);
  assert.equal(store.schemaVersion, SCHEMA_VERSION);
  store.close();
});

test("usage is buffered, visible before the flush, and written on close", () => {
  const dir = tmp();
  let store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  const k = store.createKey("u");
  store.recordUsage(k.id, 5);
  store.recordUsage(k.id, 7);
  let info = store.listKeys()[0]!;
  assert.equal(info.requests, 2);
  assert.equal(info.tokens, 12);
  assert.ok(info.lastUsedAt);
  store.flush();
  store.recordUsage(k.id, 1);
  store.close();
  store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  info = store.listKeys()[0]!;
  assert.equal(info.requests, 3);
  assert.equal(info.tokens, 13);
  store.close();
});

test("the periodic flush writes usage without an explicit call", async () => {
  const dir = tmp();
  const store = new KeyStore({ dataDir: dir, flushIntervalMs: 20 });
  const k = store.createKey("t");
  store.recordUsage(k.id, 2);
  await new Promise((r) => setTimeout(r, 80));
  const raw = new Database(join(dir, "trellis.db"), { readonly: true });
  assert.equal((raw.prepare("SELECT requests FROM api_keys").get() as { requests: number }).requests, 1);
  raw.close();
  store.close();
});

test("migrations keep existing data; a newer schema is refused, not dropped", () => {
  const dir = tmp();
  const store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  const k = store.createKey("keep me");
  store.close();
  const raw = new Database(join(dir, "trellis.db"));
  raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  raw.close();
  assert.throws(() => new KeyStore({ dataDir: dir, flushIntervalMs: 0 }), /newer than this Trellis/);
  const check = new Database(join(dir, "trellis.db"));
  assert.equal((check.prepare("SELECT name FROM api_keys WHERE id = ?").get(k.id) as { name: string }).name, "keep me");
  check.pragma(`user_version = ${SCHEMA_VERSION}`);
  check.close();
  const reopened = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
  assert.equal(reopened.authenticate(k.key)?.name, "keep me");
  reopened.close();
});

test("admin token: configured wins; otherwise generated once and stored hashed", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const configured = "configured-admin-token-0123";
  assert.deepEqual(ensureAdminToken(store, configured), { hash: sha256Hex(configured), generated: null });
  const first = ensureAdminToken(store, "");
  assert.match(first.generated!, /^adm_/);
  assert.equal(first.hash, sha256Hex(first.generated!));
  const second = ensureAdminToken(store, "");
  assert.deepEqual(second, { hash: first.hash, generated: null });
  store.close();
});

test("a configured admin token shorter than 24 characters is refused, naming the variable", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  for (const short of ["x", "a".repeat(MIN_ADMIN_TOKEN_CHARS - 1)]) {
    assert.throws(
      () => ensureAdminToken(store, short),
      (e: unknown) =>
        e instanceof AdminTokenError &&
        e.message.startsWith(`TRELLIS_ADMIN_TOKEN (--admin-token) is ${short.length} characters; it must be at least 24`) &&
        !e.message.includes("\n"),
    );
  }
  // Counted in code points: 23 emoji are 46 UTF-16 units and still too short.
  assert.throws(() => ensureAdminToken(store, "\u{1F511}".repeat(23)), /is 23 characters/);
  assert.equal(ensureAdminToken(store, "a".repeat(MIN_ADMIN_TOKEN_CHARS)).hash, sha256Hex("a".repeat(MIN_ADMIN_TOKEN_CHARS)));
  assert.equal(store.getSetting("admin_token_sha256"), null, "a refused token generates nothing either");
  const generated = ensureAdminToken(store, "").generated!;
  assert.ok(generated.length >= MIN_ADMIN_TOKEN_CHARS, "generated tokens meet the minimum");
  store.close();
});

test("key names are validated", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  assert.throws(() => store.createKey("   "), { name: "KeyNameError", message: "name must not be empty" });
  assert.throws(() => store.createKey("x".repeat(101)), { name: "KeyNameError", message: "name must be at most 100 characters (got 101)" });
  assert.equal(store.createKey("  padded\t ").name, "padded");
  store.close();
});

test("key name length counts code points, as the dashboard's JSON Schema does", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const emoji = "\u{1F600}"; // two UTF-16 units
  const hundred = emoji.repeat(100);
  assert.equal(hundred.length, 200);
  const created = store.createKey(` ${hundred} `);
  assert.equal(created.name, hundred);
  assert.equal(store.listKeys()[0]!.name, hundred, "stored and read back unchanged");
  assert.throws(
    () => store.createKey(emoji.repeat(101)),
    (e: unknown) => e instanceof KeyNameError && e.field === "name" && /at most 100 characters \(got 101\)/.test(e.message),
  );
  const family = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467} ops"; // ZWJ sequences are ordinary text
  assert.equal(store.createKey(family).name, family);
  store.close();
});

test("key names need a visible character: zero-width, format characters or marks alone are refused", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const refused: Array<[string, RegExp]> = [
    ["\u200B", /invisible ones: U\+200B$/],
    [" \u200C\u200D ", /invisible ones: U\+200C U\+200D$/],
    ["\u2060", /U\+2060/],
    ["\u200B\uFEFF\u200B", /U\+200B U\+FEFF U\+200B/],
    ["\u0301\u0302", /U\+0301 U\+0302/],
    ["\u00AD\u180E\u061C\u200E", /invisible ones/],
    ["\uFE0F\u034F\u3164\u{E0041}", /invisible ones/],
    ["\u2800", /invisible ones/],
    ["\u200B".repeat(20), /(U\+200B ){8}…$/],
  ];
  for (const [name, message] of refused) {
    assert.throws(
      () => store.createKey(name),
      (e: unknown) =>
        e instanceof KeyNameError &&
        e.field === "name" &&
        /^name must contain a visible character/.test(e.message) &&
        message.test(e.message),
      JSON.stringify(name),
    );
  }
  assert.deepEqual(store.listKeys(), [], "nothing refused was stored");
  // One visible character is enough, whatever surrounds it; emoji ZWJ sequences and accents show.
  for (const name of ["a\u200B", "\u200Bx\u200B", "\u{1F468}\u200D\u{1F469}", "e\u0301", "\u4E2D"])
    assert.equal(store.createKey(name).name, name);
  store.close();
});

test("key names may not hold control characters, lone surrogates or bidi overrides", () => {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const refused: Array<[string, RegExp]> = [
    ["red\u001b[31m", /control character: U\+001B at character 4/],
    ["tab\there", /control character: U\+0009 at character 4/],
    ["c1\u0085x", /control character: U\+0085/],
    ["\u{1F600}\ud800x", /lone surrogate .*U\+D800 at character 2/],
    ["x\udc00", /lone surrogate .*U\+DC00/],
    ["abc\u202Egpj.exe", /bidirectional formatting character: U\+202E at character 4/],
    ["line\u2028break", /line separator .*U\+2028/],
  ];
  for (const [name, message] of refused) {
    assert.throws(
      () => store.createKey(name),
      (e: unknown) => e instanceof KeyNameError && message.test(e.message),
      JSON.stringify(name),
    );
  }
  assert.deepEqual(store.listKeys(), [], "nothing refused was stored");
  assert.equal(printableKeyName("a\u001b[2Jb\u202Ec"), "a\\u{1b}[2Jb\\u{202e}c");
  store.close();
});
