// The `trellis` CLI (src/cli.ts) and the configuration it reads: `keys create / list / revoke`
// store keys hashed and print names safely; `keys create --expires/--rate-limit`, `keys expiry`
// and `keys rate-limit` set, list and clear a key's expiry and rate limit, refusing bad values; `serve` reports an unusable setting (model path, admin
// token, data or cache folder, a port in use, a missing engine) in one line naming it, while an
// engine bug still throws with its stack; unknown commands and options list the known ones; config
// reads the environment, then flags, and validates integers and listed values.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { CliIo } from "../src/cli.js";
import { KeyStore } from "../src/store/index.js";
import { ConfigError, loadConfig } from "../src/config.js";
import { packageBinsDir } from "../src/model/index.js";
import { STORIES_260K } from "./support/paths.js";
import { runCli } from "./support/service.js";

const dataDir = mkdtempSync(join(tmpdir(), "trellis-cli-"));
after(() => rmSync(dataDir, { recursive: true, force: true }));

const run = (argv: string[], extra: Partial<CliIo> = {}) => runCli(argv, { TRELLIS_DATA_DIR: dataDir }, extra);

test("keys create / list / revoke through the CLI, stored hashed", async () => {
  const created = await run(["keys", "create", "ci", "runner"]);
  assert.equal(created.code, 0);
  assert.equal(created.out.length, 1);
  const key = created.out[0]!;
  assert.match(key, /^trl_[A-Za-z0-9_-]{43}$/);
  assert.match(created.err.join("\n"), /not shown again/);

  const list = await run(["keys", "list"]);
  assert.equal(list.code, 0);
  assert.match(list.out[0]!, /^id\s+name\s+key\s+status\s+requests\s+tokens/);
  assert.match(list.out[1]!, /^1\s+ci runner\s+trl_\S+…\s+active\s+0\s+0\s+none\s+-\s+never/);
  assert.equal(list.out.join("\n").includes(key), false);

  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  assert.deepEqual(store.authenticate(key), { id: 1, name: "ci runner" });
  store.close();

  assert.deepEqual((await run(["keys", "revoke", "1"])).out, ["revoked key 1"]);
  assert.deepEqual((await run(["keys", "revoke", "1"])).out, ["key 1 was already revoked"]);
  const missing = await run(["keys", "revoke", "42"]);
  assert.equal(missing.code, 1);
  assert.match(missing.err[0]!, /no API key with id 42/);
  const bad = await run(["keys", "revoke", "abc"]);
  assert.equal(bad.code, 1);
  assert.match((await run(["keys", "list"])).out[1]!, /revoked/);
});

test("keys create --expires / --rate-limit, keys expiry, keys rate-limit; keys list shows them", async () => {
  const dir = mkdtempSync(join(tmpdir(), "trellis-cli-settings-"));
  const env = { TRELLIS_DATA_DIR: dir };
  const runIn = (argv: string[]) => run(argv, { env });
  try {
    const created = await runIn(["keys", "create", "nightly", "--expires", "2099-03-04", "--rate-limit=30", "--quota", "9"]);
    assert.equal(created.code, 0, created.err.join("\n"));
    assert.match(created.out[0]!, /^trl_/);
    assert.match(
      created.err[0]!,
      /created key 1 "nightly" with a quota of 9 tokens, expiring on 2099-03-04T00:00:00\.000Z, a rate limit of 30 requests per minute/,
    );
    const plain = await runIn(["keys", "create", "plain"]);
    assert.equal(plain.code, 0);

    let list = await runIn(["keys", "list"]);
    assert.match(list.out[0]!, /\s+last used\s+expires\s+rate limit\s+created$/);
    assert.match(list.out[1]!, /^1\s+nightly\s+\S+\s+active\s+0\s+0\s+9\s+9\s+never\s+2099-03-04T00:00:00\.000Z\s+30\/min\s+\S+$/);
    assert.match(list.out[2]!, /^2\s+plain\s+\S+\s+active\s+0\s+0\s+none\s+-\s+never\s+never\s+default\s+\S+$/);

    assert.deepEqual((await runIn(["keys", "expiry", "2", "2000-01-01T10:00:00+02:00"])).out, [
      "key 2 expires on 2000-01-01T08:00:00.000Z",
    ]);
    assert.deepEqual((await runIn(["keys", "rate-limit", "2", "5"])).out, ["key 2 may make 5 requests per minute"]);
    list = await runIn(["keys", "list"]);
    assert.match(list.out[2]!, /^2\s+plain\s+\S+\s+expired\s+.*never\s+2000-01-01T08:00:00\.000Z\s+5\/min\s+\S+$/);
    assert.deepEqual((await runIn(["keys", "expiry", "1", "none"])).out, ["key 1 never expires now"]);
    assert.deepEqual((await runIn(["keys", "rate-limit", "1", "none"])).out, [
      "key 1 has the service's rate limit now (TRELLIS_RATE_LIMIT)",
    ]);
    list = await runIn(["keys", "list"]);
    assert.match(list.out[1]!, /^1\s+nightly\s+.*never\s+never\s+default\s+\S+$/);

    const store = new KeyStore({ dataDir: dir, flushIntervalMs: 0 });
    assert.deepEqual(
      store.listKeys().map((k) => [k.expiresAt, k.rateLimit]),
      [
        [null, null],
        ["2000-01-01T08:00:00.000Z", 5],
      ],
    );
    store.close();

    const refusals: Array<[string[], RegExp]> = [
      [["keys", "expiry", "1", "tomorrow"], /expires_at must be a date \(YYYY-MM-DD\)/],
      [["keys", "expiry", "1", "2099-02-30"], /expires_at must be a date/],
      [["keys", "expiry", "1"], /usage: trellis keys expiry <id> <DATE\|none>/],
      [["keys", "expiry", "42", "none"], /no API key with id 42/],
      [["keys", "rate-limit", "1", "0"], /rate_limit must be a whole number of requests per minute from 1/],
      [["keys", "rate-limit", "1", "fast"], /rate_limit must be a whole number/],
      [["keys", "rate-limit", "x", "5"], /usage: trellis keys rate-limit <id> <N\|none>/],
      [["keys", "rate-limit", "42", "5"], /no API key with id 42/],
      [["keys", "create", "x", "--expires", "soon"], /expires_at must be a date/],
      [["keys", "create", "x", "--rate-limit", "-1"], /rate_limit must be a whole number/],
      [["keys", "create", "x", "--expires"], /--expires needs a value/],
      [["keys", "list", "--rate-limit", "5"], /--rate-limit is an option of keys create/],
      [["download", "--expires", "2099-01-01"], /--expires is an option of trellis keys create/],
    ];
    for (const [argv, message] of refusals) {
      const res = await runIn(argv);
      assert.equal(res.code, 1, argv.join(" "));
      assert.match(res.err.join("\n"), message, argv.join(" "));
    }
    assert.equal((await runIn(["keys", "list"])).out.length, 3, "no key was created by a refused command");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("serve fails clearly when the engine module is missing or the model path is wrong", async () => {
  const noEngine = await run(["serve"], { engineModule: pathToMissing() });
  assert.equal(noEngine.code, 1);
  assert.match(noEngine.err.join("\n"), /generation engine module could not be loaded/);
  const fakeEngineModule = "data:text/javascript,export async function createEngine() { throw new Error('unreachable'); }";
  const badModel = await run(["serve", "--model", "/nonexistent/model.gguf"], { engineModule: fakeEngineModule });
  assert.equal(badModel.code, 1);
  assert.deepEqual(badModel.err, [
    "trellis: TRELLIS_MODEL (--model) points to /nonexistent/model.gguf, which does not exist; give the path of a .gguf file, or unset it to use the default model",
  ]);
  if (packageBinsDir("vulkan") === null) {
    const noGpuBuild = await run(["serve", "--model", STORIES_260K, "--gpu", "vulkan"]);
    assert.equal(noGpuBuild.code, 1);
    assert.deepEqual(noGpuBuild.err, ["trellis: no llama.cpp build found for gpu=vulkan: install @node-llama-cpp/linux-x64-vulkan"]);
  }
});

test("serve without TRELLIS_MODEL and without network says how to set TRELLIS_MODEL", async () => {
  const fakeEngineModule = "data:text/javascript,export async function createEngine() { throw new Error('unreachable'); }";
  const res = await run(["serve", "--cache-dir", join(dataDir, "cache")], {
    engineModule: fakeEngineModule,
    modelSource: { url: "http://127.0.0.1:1/model.gguf", sha256: "0".repeat(64), fileName: "m.gguf" },
  });
  assert.equal(res.code, 1);
  assert.match(res.err.join("\n"), /could not download the default model .*Set TRELLIS_MODEL=\/path\/to\/model\.gguf/);
});

test("unknown commands and options are reported with the known ones", async () => {
  const cmd = await run(["frobnicate"]);
  assert.equal(cmd.code, 1);
  assert.match(cmd.err[0]!, /unknown command "frobnicate"/);
  const opt = await run(["keys", "list", "--colour", "x"]);
  assert.equal(opt.code, 1);
  assert.match(opt.err[0]!, /unknown option --colour; known options: --host, --port/);
});

test("config: environment, then flags; integers validated", () => {
  const { config, positional } = loadConfig({ PORT: "9000", TRELLIS_RATE_LIMIT: "0", TRELLIS_API_KEYS: "a, b,,c" }, [
    "serve",
    "--port",
    "9100",
    "--queue-size=3",
  ]);
  assert.deepEqual(positional, ["serve"]);
  assert.equal(config.port, 9100);
  assert.equal(config.queueSize, 3);
  assert.equal(config.rateLimit, 0);
  assert.deepEqual(config.apiKeys, ["a", "b", "c"]);
  assert.equal(config.host, "127.0.0.1");
  assert.throws(() => loadConfig({ PORT: "80x" }), ConfigError);
  assert.throws(() => loadConfig({}, ["--max-new-tokens", "0"]), /--max-new-tokens must be ≥ 1/);
});

test("config: TRELLIS_GPU and TRELLIS_LOG_LEVEL take only their listed values", () => {
  assert.equal(loadConfig({ TRELLIS_GPU: "cuda" }).config.gpu, "cuda");
  assert.equal(loadConfig({}, ["--gpu", "cpu"]).config.gpu, "cpu");
  assert.throws(() => loadConfig({ TRELLIS_GPU: "CUDA" }), /TRELLIS_GPU must be one of auto, cpu, cuda, cuda-ext, vulkan, got "CUDA"/);
  assert.throws(
    () => loadConfig({}, ["--log-level", "verbose"]),
    /--log-level must be one of fatal, error, warn, info, debug, trace, silent/,
  );
});

test("config: the database and Redis URLs are checked at once, without echoing them", async () => {
  assert.equal(loadConfig({ TRELLIS_REDIS_URL: "redis://cache:6379/0" }).config.redisUrl, "redis://cache:6379/0");
  assert.throws(
    () => loadConfig({ TRELLIS_REDIS_URL: "http://user:hunter2@cache" }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /TRELLIS_REDIS_URL \(--redis-url\) must start with redis:\/\/ or rediss:\/\//);
      assert.doesNotMatch(error.message, /hunter2/);
      return true;
    },
  );
  assert.throws(
    () => loadConfig({ TRELLIS_DATABASE_URL: "mysql://db/trellis" }),
    /TRELLIS_DATABASE_URL \(--database-url\) must start with postgres:\/\//,
  );
  const serve = await run(["serve", "--redis-url", "redis:/nohost"]);
  assert.equal(serve.code, 1);
  assert.deepEqual(serve.err, ["trellis: TRELLIS_REDIS_URL (--redis-url) must start with redis:// or rediss:// and name a host"]);
});

test("keys create refuses a control character in one line; keys list escapes ones stored by earlier versions", async () => {
  const refused = await run(["keys", "create", "red\u001b[31m"]);
  assert.equal(refused.code, 1);
  assert.deepEqual(refused.err, ["trellis: name must not contain a control character: U+001B at character 4"]);
  const raw = new Database(join(dataDir, "trellis.db"));
  raw
    .prepare("INSERT INTO api_keys (name, prefix, hash, created_at) VALUES (?, 'trl_old', 'old-hash', '2024-01-01T00:00:00.000Z')")
    .run("old\u001b[2J\u202Ename");
  raw.close();
  const list = (await run(["keys", "list"])).out.join("\n");
  assert.match(list, /old\\u\{1b\}\[2J\\u\{202e\}name/);
  assert.equal(/[\u001b\u202e]/.test(list), false, "no raw escape or bidi character reaches the terminal");
});

/** A file that starts like a GGUF model: enough for serve's checks before the (fake) engine. */
function ggufLookalike(): string {
  const path = join(dataDir, "lookalike.gguf");
  writeFileSync(path, Buffer.from([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]));
  return path;
}

const moduleUrl = (source: string) => "data:text/javascript," + encodeURIComponent(source);
const engineNeverCalled = moduleUrl(
  "export async function createEngine() { globalThis.trellisTestEngineCalls = (globalThis.trellisTestEngineCalls ?? 0) + 1; throw new Error('engine should not be created'); }",
);

test("serve refuses a short TRELLIS_ADMIN_TOKEN in one line, before loading the model", async () => {
  const res = await run(["serve", "--model", ggufLookalike()], {
    engineModule: engineNeverCalled,
    env: { TRELLIS_DATA_DIR: join(dataDir, "short-token"), TRELLIS_ADMIN_TOKEN: "hunter2" },
  });
  assert.equal(res.code, 1);
  assert.deepEqual(res.err, [
    "trellis: TRELLIS_ADMIN_TOKEN (--admin-token) is 7 characters; it must be at least 24: use a long random value (e.g. the output of: openssl rand -base64 32), or unset it to have one generated",
  ]);
  assert.equal((globalThis as { trellisTestEngineCalls?: number }).trellisTestEngineCalls, undefined);
});

/** One line, "trellis: …", and no stack: what an operator-caused start-up failure prints. */
function assertOneLine(err: string[], pattern: RegExp): void {
  assert.equal(err.length, 1, err.join("\n"));
  assert.match(err[0]!, /^trellis: /);
  assert.match(err[0]!, pattern);
  assert.equal(/\n|\s+at\s/.test(err[0]!), false, err[0]);
}

const engineFailing = (message: string) =>
  moduleUrl(`export async function createEngine() { throw new Error(${JSON.stringify(message)}); }`);

test("serve: an unusable data folder is one line naming the database and TRELLIS_DATA_DIR", async (t) => {
  const notAFolder = join(dataDir, "data-is-a-file");
  writeFileSync(notAFolder, "");
  const res = await run(["serve", "--model", ggufLookalike(), "--data-dir", notAFolder], { engineModule: engineNeverCalled });
  assert.equal(res.code, 1);
  assert.deepEqual(res.err, [
    `trellis: cannot open the key store ${notAFolder}/trellis.db: the data folder ${notAFolder} is not a directory (a file is in the way); fix that or set TRELLIS_DATA_DIR (--data-dir) to another folder`,
  ]);

  const readOnly = mkdtempSync(join(dataDir, "read-only-"));
  chmodSync(readOnly, 0o555);
  t.after(() => chmodSync(readOnly, 0o755));
  let rootWrites = true;
  try {
    writeFileSync(join(readOnly, ".probe"), "");
  } catch {
    rootWrites = false;
  }
  if (rootWrites) {
    t.diagnostic("read-only folder case skipped: this process writes through mode bits (running as root)");
  } else {
    const denied = await run(["serve", "--model", ggufLookalike(), "--data-dir", readOnly], { engineModule: engineNeverCalled });
    assert.equal(denied.code, 1);
    assertOneLine(
      denied.err,
      new RegExp(
        `cannot open the key store ${readOnly}/trellis.db: the data folder ${readOnly} is not writable by this user .*; make it writable by this user or set TRELLIS_DATA_DIR`,
      ),
    );
  }
  assert.equal((globalThis as { trellisTestEngineCalls?: number }).trellisTestEngineCalls, undefined);
});

test("serve: a model path that is a folder, or not a GGUF file, is one line naming TRELLIS_MODEL", async () => {
  const folder = await run(["serve", "--model", dataDir], { engineModule: engineNeverCalled });
  assert.equal(folder.code, 1);
  assertOneLine(
    folder.err,
    new RegExp(`TRELLIS_MODEL \\(--model\\) points to ${dataDir}, which is a directory; give the path of a \\.gguf file`),
  );
  const text = join(dataDir, "notes.txt");
  writeFileSync(text, "hello");
  const notGguf = await run(["serve", "--model", text], { engineModule: engineNeverCalled });
  assert.equal(notGguf.code, 1);
  assertOneLine(notGguf.err, /points to .*notes\.txt, which is not a GGUF model file/);
  assert.equal((globalThis as { trellisTestEngineCalls?: number }).trellisTestEngineCalls, undefined);
});

test("serve: a model cache folder that cannot be made is one line naming TRELLIS_CACHE_DIR", async () => {
  const cacheFile = join(dataDir, "cache-is-a-file");
  writeFileSync(cacheFile, "");
  const res = await run(["serve", "--cache-dir", cacheFile], {
    engineModule: engineNeverCalled,
    modelSource: { url: "http://127.0.0.1:1/model.gguf", sha256: "0".repeat(64), fileName: "m.gguf" },
  });
  assert.equal(res.code, 1);
  assert.equal(res.err.length, 2, res.err.join("\n"));
  assert.match(res.err[0]!, /^TRELLIS_MODEL is not set: using the default model/);
  assertOneLine(
    res.err.slice(1),
    new RegExp(`cannot use the model cache folder ${cacheFile}: EEXIST on ${cacheFile}; .*TRELLIS_CACHE_DIR \\(--cache-dir\\)`),
  );
});

test("serve: llama.cpp refusing the model is one line; an engine bug still throws with its stack", async () => {
  const model = ggufLookalike();
  const refused = await run(["serve", "--model", model], {
    engineModule: engineFailing(
      `failed to load model ${model}: llama_model_load: error loading model: unknown model architecture: 'x'\nllama_model_load_from_file_impl: failed to load model\n`,
    ),
  });
  assert.equal(refused.code, 1);
  assertOneLine(
    refused.err,
    new RegExp(
      `llama\\.cpp could not load the model ${model}: llama_model_load: error loading model: unknown model architecture: 'x'; llama_model_load_from_file_impl: failed to load model; is it a complete GGUF file`,
    ),
  );
  await assert.rejects(
    run(["serve", "--model", model], { engineModule: engineFailing("a bug: undefined is not a function") }),
    /a bug: undefined is not a function/,
  );
});

test("serve: a port already in use is one line naming it and PORT; the engine and store are closed", async () => {
  const blocker = createNetServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as { port: number }).port;
  const fakeEngine = moduleUrl(`export async function createEngine() {
    return {
      ready: true, contextLength: 64, queueDepth: 0, backend: "",
      countTokens: () => 1,
      complete: async () => ({ completion: "", tokensGenerated: 0, stopReason: "eos" }),
      categorize: async () => ({ choices: [] }),
      close: async () => { globalThis.trellisTestEngineClosed = true; },
    };
  }`);
  const portDataDir = join(dataDir, "port-in-use");
  try {
    const res = await run(["serve", "--model", ggufLookalike(), "--host", "127.0.0.1", "--port", String(port), "--log-level", "silent"], {
      engineModule: fakeEngine,
      env: { TRELLIS_DATA_DIR: portDataDir, TRELLIS_ADMIN_TOKEN: "a-long-enough-admin-token-for-tests" },
    });
    assert.equal(res.code, 1);
    assert.deepEqual(res.err, [
      `trellis: cannot listen on 127.0.0.1:${port}: the port is already in use by another process; stop it or set PORT (--port) to a free port`,
    ]);
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
  assert.equal((globalThis as { trellisTestEngineClosed?: boolean }).trellisTestEngineClosed, true, "the engine was closed");
  // The store was closed too: its file lock is gone, and it opens with a short wait.
  const reopened = new KeyStore({ dataDir: portDataDir, flushIntervalMs: 0, busyTimeoutMs: 10 });
  reopened.createKey("after a failed start");
  reopened.close();
});

function pathToMissing(): string {
  return new URL("../src/engine-missing.js", import.meta.url).href;
}
