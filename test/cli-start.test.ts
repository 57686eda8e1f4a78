// How `trellis` starts (issue 40): run through npm's bin symlink (npx, npm link, global
// installs), the built CLI does what `node dist/cli.js` does, instead of printing nothing and
// exiting 0; and the dashboard admin token ("shown once") is stored and printed only once the
// service is serving, so a start that fails (no model, port in use) burns no token and the next
// start that succeeds prints it, exactly once.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KeyStore, asKeyBackend, prepareSharedAdminToken, sha256Hex } from "../src/store/index.js";
import { exited, watchdog } from "./support/child-process.js";
import { REPO_ROOT, STORIES_260K } from "./support/paths.js";
import { runCli } from "./support/service.js";

const tmp = mkdtempSync(join(tmpdir(), "trellis-cli-start-"));
// The build goes under node_modules/ (ignored) so that the built CLI resolves the repository's
// dependencies and package.json ("type": "module") as dist/cli.js does, without touching dist/.
const buildDir = join(REPO_ROOT, "node_modules", ".cache", `trellis-cli-bin-test-${process.pid}`);
after(() => {
  rmSync(tmp, { recursive: true, force: true });
  rmSync(buildDir, { recursive: true, force: true });
});

const ADMIN_TOKEN_SETTING = "admin_token_sha256";
const ADMIN_TOKEN_LINE = /^Dashboard admin token \(shown once, stored hashed in .+\): (adm_[A-Za-z0-9_-]{32})$/;

function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const res = spawnSync(command, args, {
    cwd: tmp,
    env: { ...process.env, TRELLIS_ADMIN_TOKEN: "", ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

test("the built CLI run through a bin symlink (npx, npm link, global installs) does what a direct run does", () => {
  const tsc = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
  const build = spawnSync(process.execPath, [tsc, "-p", join(REPO_ROOT, "tsconfig.build.json"), "--outDir", buildDir], {
    encoding: "utf8",
  });
  assert.equal(build.status, 0, build.stdout + build.stderr);
  const cli = join(buildDir, "cli.js");
  chmodSync(cli, 0o755); // as npm makes a bin executable

  // npx / global install: .bin/trellis -> the package's cli.js; npm link: a link to the linked
  // package's folder, with the bin link through it (a chain of links).
  const bin = join(tmp, "node_modules", ".bin");
  mkdirSync(bin, { recursive: true });
  symlinkSync(cli, join(bin, "trellis"));
  symlinkSync(buildDir, join(tmp, "node_modules", "trellis"));
  symlinkSync(join(tmp, "node_modules", "trellis", "cli.js"), join(bin, "trellis-linked"));

  const direct = run(process.execPath, [cli, "--help"]);
  assert.equal(direct.code, 0, direct.err);
  assert.match(direct.out, /^Usage: trellis <command> \[options\]/);
  for (const link of [join(bin, "trellis"), join(bin, "trellis-linked")]) {
    assert.deepEqual(run(process.execPath, [link, "--help"]), direct, `node ${link} --help`);
    assert.deepEqual(run(link, ["--help"]), direct, `${link} --help (its #! line)`);

    const unknown = run(process.execPath, [link, "bogus"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /^trellis: unknown command "bogus"/);
  }

  // The README's example, through the link: the key is printed and stored.
  const dataDir = join(tmp, "keys-data");
  const created = run(join(bin, "trellis"), ["keys", "create", "billing-service"], { TRELLIS_DATA_DIR: dataDir });
  assert.equal(created.code, 0, created.err);
  const key = created.out.trim();
  assert.match(key, /^trl_[A-Za-z0-9_-]{43}$/);
  assert.match(created.err, /created key 1 "billing-service"/);
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    assert.deepEqual(store.authenticate(key), { id: 1, name: "billing-service" });
  } finally {
    store.close();
  }
});

/** The stored admin token hash in `dataDir`'s store, or null. */
function storedAdminHash(dataDir: string): string | null {
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  try {
    return store.getSetting(ADMIN_TOKEN_SETTING);
  } finally {
    store.close();
  }
}

const fakeEngineModule = new URL("./support/fake-engine-module.ts", import.meta.url).href;

/** A file that starts like a GGUF model: enough for serve's checks before the (fake) engine. */
function ggufLookalike(): string {
  const path = join(tmp, "lookalike.gguf");
  writeFileSync(path, Buffer.from([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]));
  return path;
}

/**
 * `trellis serve` (src/cli.ts) on stories260K.gguf as its own process, until it is listening.
 * `stdout()`: its output lines so far; `stop()` sends SIGTERM, waits for exit 0 and returns all
 * of its output lines.
 */
async function serveChild(dataDir: string): Promise<{ base: string; stdout(): string[]; stop(): Promise<string[]> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli.ts", "serve", "--model", STORIES_260K, "--host", "127.0.0.1", "--port", "0", "--log-level", "silent"],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, TRELLIS_DATA_DIR: dataDir, TRELLIS_ADMIN_TOKEN: "", TRELLIS_THREADS: "1", TRELLIS_CONCURRENCY: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const guard = watchdog(child.pid);
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  const lines = () => stdout.split("\n").filter((line) => line.length > 0);
  let base: string;
  try {
    base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start in 60 s:\n${stderr}`)), 60_000);
      child.stderr!.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8");
        const listening = /Trellis listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stderr);
        if (listening) {
          clearTimeout(timer);
          resolve(listening[1]!);
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`serve exited (${code}) before listening:\n${stderr}`));
      });
    });
  } catch (error) {
    child.kill("SIGKILL");
    await exited(child);
    guard.kill();
    throw error;
  }
  return {
    base,
    stdout: lines,
    async stop() {
      child.kill("SIGTERM");
      await closed;
      guard.kill();
      assert.equal(child.exitCode, 0, stderr);
      return lines();
    },
  };
}

/** Waits (up to 10 s) until `read()` returns something. */
async function eventually<T>(read: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function signInStatus(base: string, token: string): Promise<number> {
  const res = await fetch(`${base}/dashboard/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  await res.arrayBuffer();
  return res.status;
}

test("a start that fails stores and prints no admin token; the next start that serves prints it, once", async () => {
  const dataDir = join(tmp, "admin-token-data");
  const env = { TRELLIS_DATA_DIR: dataDir, TRELLIS_ADMIN_TOKEN: "" };

  // No model at that path.
  const noModel = await runCli(["serve", "--model", join(tmp, "missing.gguf")], env, { engineModule: fakeEngineModule });
  assert.equal(noModel.code, 1);
  assert.deepEqual(noModel.out, [], "no admin token printed");
  assert.match(noModel.err.join("\n"), /missing\.gguf/);
  assert.equal(storedAdminHash(dataDir), null, "no admin token stored");

  // The port is in use (the model and engine were fine).
  const blocker = createNetServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as { port: number }).port;
  try {
    const portInUse = await runCli(
      ["serve", "--model", ggufLookalike(), "--host", "127.0.0.1", "--port", String(port), "--log-level", "silent"],
      env,
      { engineModule: fakeEngineModule },
    );
    assert.equal(portInUse.code, 1);
    assert.deepEqual(portInUse.out, [], "no admin token printed");
    assert.match(portInUse.err.join("\n"), new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
  assert.equal(storedAdminHash(dataDir), null, "no admin token stored");

  // The first start that serves prints the token, once; it signs in to the dashboard.
  const first = await serveChild(dataDir);
  let token = "";
  try {
    const line = await eventually(() => first.stdout()[0]);
    const match = ADMIN_TOKEN_LINE.exec(line);
    assert.ok(match, line);
    token = match[1]!;
    assert.equal(await signInStatus(first.base, token), 200);
    assert.equal(await signInStatus(first.base, "adm_" + "x".repeat(32)), 401);
  } finally {
    const out = await first.stop();
    assert.deepEqual(out, [first.stdout()[0]], "the token is printed once, and nothing else");
  }
  assert.equal(storedAdminHash(dataDir), sha256Hex(token));

  // Later starts print nothing, and the stored token still signs in.
  const second = await serveChild(dataDir);
  let secondOut: string[] = [];
  try {
    assert.equal(await signInStatus(second.base, token), 200);
  } finally {
    secondOut = await second.stop();
  }
  assert.deepEqual(secondOut, []);
  assert.equal(storedAdminHash(dataDir), sha256Hex(token));
});

test("prepareSharedAdminToken: nothing is stored before claim(); replicas claiming together agree on one token", async () => {
  const store = asKeyBackend(new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 }));
  try {
    const configured = await prepareSharedAdminToken(store, "a-long-enough-admin-token-for-tests");
    assert.equal(configured.hash(), sha256Hex("a-long-enough-admin-token-for-tests"));
    assert.equal(await configured.claim(), null);
    assert.equal(await store.getSetting(ADMIN_TOKEN_SETTING), null, "a configured token is not stored");
    await assert.rejects(prepareSharedAdminToken(store, "short"), /is 5 characters/);

    const [a, b] = await Promise.all([prepareSharedAdminToken(store, ""), prepareSharedAdminToken(store, "")]);
    assert.notEqual(a.hash(), b.hash(), "two candidates");
    assert.equal(await store.getSetting(ADMIN_TOKEN_SETTING), null, "nothing stored before claim()");
    const [tokenA, tokenB] = await Promise.all([a.claim(), b.claim()]);
    const printed = [tokenA, tokenB].filter((token) => token !== null);
    assert.equal(printed.length, 1, "one replica prints the token");
    const stored = await store.getSetting(ADMIN_TOKEN_SETTING);
    assert.equal(stored, sha256Hex(printed[0]!));
    assert.equal(a.hash(), stored, "the replica that lost accepts the winner's token");
    assert.equal(b.hash(), stored);
    assert.equal(await a.claim(), null, "claimed once");

    const later = await prepareSharedAdminToken(store, "");
    assert.equal(later.hash(), stored);
    assert.equal(await later.claim(), null);
  } finally {
    await store.close();
  }
});
