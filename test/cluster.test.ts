// The cluster test of issue 27 ("Beyond one machine"), with real processes on loopback: Postgres
// and Redis (test/support/*-server.ts), `trellis migrate` run once by the CLI, three replicas as
// their own Node processes (r1 and r2: `trellis serve` with the fake engine, through
// test/support/replica-process.ts; r3: the real src/cli.ts serve on stories260K.gguf), and HAProxy
// with deploy/haproxy/haproxy.cfg in front (health checks every 200 ms, fall 3).
//
// 1. a key made with `trellis keys create` works on r2 and r3 at once; revoked through r2's
//    dashboard API, r1 and r3 refuse it once they have heard the change over Redis;
// 2. a key's 60 requests/minute hold across the three (not 180): no more allowed than the one
//    bucket in Redis holds and refills;
// 3. a dashboard session opened on r1 works on r3;
// 4. 30 s of concurrent load through HAProxy: usage in Postgres equals the 200 answers, tokens too;
// 5. kill -9 of r2 under load: only requests in flight at the kill may fail, none after; restarted,
//    it rejoins;
// 6. SIGTERM of r1 under load: no request fails, it drains and exits 0 on its own (long before
//    its drain deadline), and its usage is in Postgres;
// 7. Redis stopped under load: no 5xx, the fallback metric rises;
// 8. Postgres restarted under load: keys seen before are served throughout; new keys work after.
//
// No assertion here measures speed: every wait is for an event, with a generous limit (LIVENESS_MS)
// that fails a scenario only when the event never comes.
//
// Every child process is killed in after(), on 'exit', and by a watchdog shell if this process
// dies of anything (SIGKILL included); replica and HAProxy logs are printed when a scenario fails.
import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { connectRedis, type RedisConnection } from "../src/server/shared/index.js";
import { freePort, haproxyBinary, watchdog } from "./support/child-process.js";
import { FAKE_ENGINE_DELAY_ENV } from "./support/fake-engine-module.js";
import { REPO_ROOT, STORIES_260K } from "./support/paths.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";
import { startRedisServer, type TestRedisServer } from "./support/redis-server.js";

const HAPROXY_CFG = join(REPO_ROOT, "deploy", "haproxy", "haproxy.cfg");
/** HAProxy's health-check interval (fall 3: a replica leaves after about 3 of them). */
const CHECK_INTER_MS = 200;
/**
 * On SIGTERM a replica keeps serving this long after /readyz turns 503: a few check intervals, as
 * haproxy.cfg advises (fall 3 + 2 of slack: HAProxy took 415-615 ms to mark a replica DOWN here,
 * and on two busy cores its checks run late; the slack is not scaled down with the interval).
 */
const SHUTDOWN_DELAY_MS = 5 * CHECK_INTER_MS;
/** Generous: what has not happened by then never will. Liveness, not speed. */
const LIVENESS_MS = 60_000;
/** A scenario's safety net: room for its waits to run their full course. */
const SCENARIO_TIMEOUT_MS = 300_000;
/**
 * The replicas' generation deadline, which a SIGTERM'd replica's drain also waits for at most (+1
 * s): far beyond LIVENESS_MS, so a replica that exits by itself before our SIGKILL has drained,
 * not waited out that deadline.
 */
const REQUEST_TIMEOUT_MS = 300_000;
/** How long a client waits for one answer. */
const ANSWER_TIMEOUT_MS = 15_000;
const FAKE_DELAY_MS = 30;
const CLIENTS = 8;
const ADMIN_TOKEN = "cluster-test-admin-token-0123456789";
const REGEX_ROUTE = "/v1/completion/regex";
const BODY = JSON.stringify({ prompt: "Once upon a time", pattern: "[a-z]{1,8}", max_new_tokens: 8 });

// ---------------------------------------------------------------------------------------------
// Child processes: tracked, watched, never left behind.

const children = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Tracks a child for after() and 'exit', and gives it a watchdog: a shell that SIGKILLs it when
 * this process's end of the shell's stdin closes, as it does when this process dies of anything.
 */
function track(child: ChildProcess): void {
  children.add(child);
  const guard = watchdog(child.pid);
  children.add(guard);
  child.once("exit", () => {
    children.delete(child);
    // The watchdog goes as its child does, so it can never kill a reused process id.
    guard.kill("SIGKILL");
    children.delete(guard);
  });
}

/** The environment without this shell's Trellis settings (HOST, PORT, TRELLIS_*). */
function baseEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("TRELLIS_") && name !== "PORT" && name !== "HOST"),
  );
}

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/**
 * Polls `probe` every `everyMs` until it returns true; throws naming `what` only if it never does
 * (LIVENESS_MS). Returns how long it waited, for diagnostics.
 */
async function waitFor(what: string, probe: () => Promise<boolean> | boolean, everyMs = 50): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - start;
    if (Date.now() - start > LIVENESS_MS) throw new Error(`not within ${LIVENESS_MS} ms: ${what}`);
    await sleep(everyMs);
  }
}

/** The last `max` characters of a growing log. */
class LogTail {
  private text = "";
  constructor(private readonly max: number) {}
  add(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.max * 2) this.text = this.text.slice(-this.max);
  }
  tail(chars = this.max): string {
    return this.text.slice(-chars);
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** false (the default): a connection of its own, closed after the answer. */
  agent?: Agent | false;
  timeoutMs?: number;
}

function send(port: number, path: string, options: SendOptions = {}): Promise<Answer> {
  const { method = "GET", headers = {}, body, agent = false, timeoutMs = 15_000 } = options;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.once("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() });
      });
      res.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: "TIMEOUT" })),
      timeoutMs,
    );
    req.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

function complete(port: number, key: string, agent: Agent | false = false): Promise<Answer> {
  return send(port, REGEX_ROUTE, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: BODY,
    agent,
    timeoutMs: ANSWER_TIMEOUT_MS,
  });
}

/** A failed request of a load run: its status (or connection error) and when it was sent and ended. */
interface Failure {
  sentAt: number;
  at: number;
  what: string;
}

interface LoadResult {
  ok: number;
  tokens: number;
  total: number;
  failures: Failure[];
  statuses: Record<string, number>;
  /** Requests sent after `since` that were answered, and of them how many failed. */
  after(since: number): { answered: number; failed: number };
  ms: number;
}

interface LoadRun {
  /** Requests sent and not yet answered. */
  readonly inFlight: number;
  readonly ok: number;
  /** Requests sent after `since` (Date.now()) and answered so far, whatever the answer. */
  answeredAfter(since: number): number;
  stop(): Promise<LoadResult>;
}

/**
 * `clients` concurrent clients, each sending the regex request through one keep-alive connection
 * to `port` as soon as its previous answer came, until stop(). Every answer is counted: 200s
 * (with their tokens_generated), other statuses and connection errors (failures).
 */
function startLoad(port: number, key: string, clients = CLIENTS): LoadRun {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const start = Date.now();
  const sent: number[] = [];
  /** When each answered request was sent. */
  const answered: number[] = [];
  const failures: Failure[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  let tokens = 0;
  let inFlight = 0;
  let running = true;
  const client = async (): Promise<void> => {
    while (running) {
      const sentAt = Date.now();
      sent.push(sentAt);
      inFlight++;
      let what: string;
      try {
        const answer = await complete(port, key, agent);
        what = String(answer.status);
        if (answer.status === 200) {
          const body = JSON.parse(answer.body) as { tokens_generated?: unknown };
          if (typeof body.tokens_generated !== "number") throw new Error(`200 without tokens_generated: ${answer.body}`);
          ok++;
          tokens += body.tokens_generated;
        } else {
          failures.push({ sentAt, at: Date.now(), what: `${answer.status} ${answer.body.slice(0, 200)}` });
        }
      } catch (error) {
        const e = error as { code?: string; message?: string };
        what = e.code ?? e.message ?? String(error);
        failures.push({ sentAt, at: Date.now(), what });
      } finally {
        inFlight--;
        answered.push(sentAt);
      }
      statuses[what] = (statuses[what] ?? 0) + 1;
    }
  };
  const all = Promise.all(Array.from({ length: clients }, () => client()));
  return {
    get inFlight() {
      return inFlight;
    },
    get ok() {
      return ok;
    },
    answeredAfter: (since) => answered.filter((at) => at > since).length,
    async stop() {
      running = false;
      await all;
      agent.destroy();
      return {
        ok,
        tokens,
        total: sent.length,
        failures,
        statuses,
        after: (since) => {
          const answered = sent.filter((at) => at > since).length;
          return { answered, failed: failures.filter((f) => f.sentAt > since).length };
        },
        ms: Date.now() - start,
      };
    },
  };
}

/** The sum of a Prometheus counter's samples whose labels include `labels`. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const set = match[2] ?? "";
    if (Object.entries(labels).every(([label, value]) => set.includes(`${label}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// The cluster.

type ReplicaName = "r1" | "r2" | "r3";

interface Replica {
  readonly name: ReplicaName;
  /** r3: the real engine (src/cli.ts serve on stories260K); r1, r2: the fake engine. */
  readonly real: boolean;
  port: number;
  child: ChildProcess | null;
  starts: number;
  readonly log: LogTail;
}

let postgres: TestPostgresServer;
let redis: TestRedisServer;
/** The test's own connection to Redis: it reads rate-limit buckets and publishes probe key changes. */
let observer: RedisConnection | null = null;
let databaseUrl = "";
let tmp = "";
let tmpGuard: ChildProcess | null = null;
let haproxy: ChildProcess | null = null;
const haproxyLog = new LogTail(64 * 1024);
let lbPort = 0;
let statsPort = 0;
const replicas: Record<ReplicaName, Replica> = {
  r1: { name: "r1", real: false, port: 0, child: null, starts: 0, log: new LogTail(128 * 1024) },
  r2: { name: "r2", real: false, port: 0, child: null, starts: 0, log: new LogTail(128 * 1024) },
  r3: { name: "r3", real: true, port: 0, child: null, starts: 0, log: new LogTail(128 * 1024) },
};
const all = (): Replica[] => [replicas.r1, replicas.r2, replicas.r3];
/** Keys made in before() by the CLI, one per scenario that needs a fresh one. */
const keys: Record<string, { id: number; key: string }> = {};

function replicaEnv(replica: Replica): NodeJS.ProcessEnv {
  return {
    ...baseEnv(),
    HOST: "127.0.0.1",
    PORT: String(replica.port),
    TRELLIS_MODEL: STORIES_260K,
    TRELLIS_THREADS: "1",
    TRELLIS_DATABASE_URL: databaseUrl,
    TRELLIS_REDIS_URL: redis.url,
    TRELLIS_MIGRATE_ON_START: "false",
    TRELLIS_ADMIN_TOKEN: ADMIN_TOKEN,
    TRELLIS_RATE_LIMIT: "0",
    TRELLIS_SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    TRELLIS_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    TRELLIS_LOG_LEVEL: "warn",
    TRELLIS_DATA_DIR: join(tmp, replica.name),
    TRELLIS_CACHE_DIR: join(tmp, "cache"),
    [FAKE_ENGINE_DELAY_ENV]: String(FAKE_DELAY_MS),
  };
}

/** Starts a replica on its port (the same one on a restart) and waits until /readyz says 200. */
async function startReplica(replica: Replica): Promise<void> {
  const entry = replica.real ? ["src/cli.ts", "serve"] : ["test/support/replica-process.ts"];
  const child = spawn(process.execPath, ["--import", "tsx", ...entry], {
    cwd: REPO_ROOT,
    env: replicaEnv(replica),
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(child);
  replica.child = child;
  replica.starts++;
  replica.log.add(`--- ${replica.name} start #${replica.starts} (pid ${child.pid}, port ${replica.port}) ---\n`);
  child.stdout!.on("data", (chunk: Buffer) => replica.log.add(chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => replica.log.add(chunk.toString()));
  child.once("exit", (code, signal) => replica.log.add(`--- ${replica.name} exited: code ${code}, signal ${signal} ---\n`));
  await waitFor(`${replica.name} to be ready`, async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${replica.name} exited while starting (${child.exitCode ?? child.signalCode}):\n${replica.log.tail(4000)}`);
    }
    const answer = await send(replica.port, "/readyz", { timeoutMs: 2000 }).catch(() => null);
    return answer?.status === 200;
  });
}

async function metricsOf(replica: Replica): Promise<string> {
  const answer = await send(replica.port, "/metrics", { timeoutMs: 5000 });
  assert.equal(answer.status, 200, `${replica.name} /metrics`);
  return answer.body;
}

/** Key changes a replica has heard over Redis since it started (its own /metrics). */
async function keyChangesHeard(replica: Replica): Promise<number> {
  return metric(await metricsOf(replica), "trellis_key_changes_received_total");
}

/** Rate-limit decisions the replicas made locally (Redis down or too slow to answer), all together. */
async function localRateDecisions(): Promise<number> {
  const counts = await Promise.all(
    all().map(async (replica) => metric(await metricsOf(replica), "trellis_rate_limit_fallback_decisions_total")),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** Redis's clock (TIME), ms: the clock that refills the rate-limit buckets. */
async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await observer!.client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Regex completions a replica answered with 200 since it started (its own /metrics). */
async function servedBy(replica: Replica): Promise<number> {
  return metric(await metricsOf(replica), "trellis_http_requests_total", { route: REGEX_ROUTE, status: "200" });
}

/** HAProxy's view of the replicas: server name → status (UP, DOWN, "DOWN 1/2", …), from its stats CSV. */
async function lbStatus(): Promise<Record<string, string>> {
  const answer = await send(statsPort, "/stats;csv", { timeoutMs: 5000 });
  assert.equal(answer.status, 200, "HAProxy stats CSV");
  const [header = "", ...rows] = answer.body.trim().split("\n");
  const columns = header.replace(/^# /, "").split(",");
  const px = columns.indexOf("pxname");
  const sv = columns.indexOf("svname");
  const st = columns.indexOf("status");
  const status: Record<string, string> = {};
  for (const row of rows) {
    const cells = row.split(",");
    if (cells[px] === "trellis" && /^r\d$/.test(cells[sv] ?? "")) status[cells[sv]!] = cells[st] ?? "";
  }
  return status;
}

async function waitForLb(name: ReplicaName, state: "UP" | "DOWN"): Promise<number> {
  return waitFor(`HAProxy to see ${name} ${state}`, async () => (await lbStatus())[name] === state, 25);
}

/** Runs the CLI (`node --import tsx src/cli.ts …`) against the shared database. */
async function cli(args: string[], timeoutMs = LIVENESS_MS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], {
    cwd: REPO_ROOT,
    env: {
      ...baseEnv(),
      TRELLIS_DATABASE_URL: databaseUrl,
      TRELLIS_MIGRATE_ON_START: "false",
      TRELLIS_DATA_DIR: join(tmp, "cli"),
      TRELLIS_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const { code, signal } = await exitOf(child);
  clearTimeout(timer);
  if (signal) throw new Error(`trellis ${args.join(" ")} was killed (${signal}; timeout ${timeoutMs} ms):\n${stdout}${stderr}`);
  return { code, stdout, stderr };
}

/** `trellis keys create <name> [--rate-limit N]`: the key (printed once) and its id. */
async function createKey(name: string, rateLimit?: number): Promise<{ id: number; key: string }> {
  const result = await cli(["keys", "create", name, ...(rateLimit === undefined ? [] : ["--rate-limit", String(rateLimit)])]);
  assert.equal(result.code, 0, `keys create ${name}: ${result.stderr}`);
  const id = Number(/created key (\d+)/.exec(result.stderr)?.[1]);
  const key = result.stdout.trim();
  assert.ok(Number.isSafeInteger(id) && id > 0 && key.length > 0, `keys create output: ${result.stdout} / ${result.stderr}`);
  return { id, key };
}

async function usageInDatabase(id: number): Promise<{ requests: number; tokens: number }> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  await client.connect();
  try {
    const result = await client.query<{ requests: string; tokens: string }>("SELECT requests, tokens FROM api_keys WHERE id = $1", [id]);
    assert.equal(result.rowCount, 1, `key ${id} in api_keys`);
    return { requests: Number(result.rows[0]!.requests), tokens: Number(result.rows[0]!.tokens) };
  } finally {
    await client.end().catch(() => {});
  }
}

/** Waits until the key's usage in Postgres reaches the 200s counted (flushes come every second). */
async function settledUsage(id: number, requests: number): Promise<{ requests: number; tokens: number; ms: number }> {
  let last = { requests: -1, tokens: -1 };
  const ms = await waitFor(`key ${id}'s usage to reach ${requests} requests`, async () => {
    last = await usageInDatabase(id);
    return last.requests >= requests;
  }).catch(() => -1);
  // A moment more: a flush still on its way would show as too many.
  if (ms >= 0) {
    await sleep(1200);
    last = await usageInDatabase(id);
  }
  return { ...last, ms };
}

function dumpLogs(scenario: string): void {
  const parts = [`\n===== cluster test: "${scenario}" failed; logs =====`];
  for (const replica of all()) parts.push(`----- ${replica.name} (pid ${replica.child?.pid}) -----\n${replica.log.tail(12_000)}`);
  parts.push(`----- haproxy -----\n${haproxyLog.tail(6000)}`);
  process.stderr.write(`${parts.join("\n")}\n`);
}

/** A scenario: on failure, every replica's log and HAProxy's are printed. */
function scenario(name: string, fn: (t: TestContext) => Promise<void>): void {
  test(name, { timeout: SCENARIO_TIMEOUT_MS }, async (t) => {
    const start = Date.now();
    try {
      await fn(t);
    } catch (error) {
      dumpLogs(name);
      throw error;
    } finally {
      t.diagnostic(`scenario took ${Date.now() - start} ms`);
    }
  });
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "trellis-cluster-"));
  // Removed in after(); should this process die first, a shell removes it when its stdin closes.
  tmpGuard = spawn("/bin/sh", ["-c", 'read _; rm -rf "$0"', tmp], { stdio: ["pipe", "ignore", "ignore"] });
  tmpGuard.unref();
  (tmpGuard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  databaseUrl = await postgres.createDatabase();

  const migrated = await cli(["migrate"]);
  assert.equal(migrated.code, 0, `trellis migrate: ${migrated.stdout}${migrated.stderr}`);
  assert.match(migrated.stdout, /key store schema at version \d+ \(postgres/);

  for (const replica of all()) replica.port = await freePort();
  lbPort = await freePort();
  statsPort = await freePort();
  await Promise.all(all().map((replica) => startReplica(replica)));

  haproxy = spawn(haproxyBinary(), ["-db", "-f", HAPROXY_CFG], {
    env: {
      PATH: process.env.PATH,
      TRELLIS_REPLICA_1: `127.0.0.1:${replicas.r1.port}`,
      TRELLIS_REPLICA_2: `127.0.0.1:${replicas.r2.port}`,
      TRELLIS_REPLICA_3: `127.0.0.1:${replicas.r3.port}`,
      TRELLIS_LB_ADDR: "127.0.0.1",
      TRELLIS_LB_PORT: String(lbPort),
      TRELLIS_LB_STATS_PORT: String(statsPort),
      TRELLIS_LB_CHECK_INTER: `${CHECK_INTER_MS}ms`,
      TRELLIS_LB_CHECK_TIMEOUT: "1s",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  track(haproxy);
  haproxy.stdout!.on("data", (chunk: Buffer) => haproxyLog.add(chunk.toString()));
  haproxy.stderr!.on("data", (chunk: Buffer) => haproxyLog.add(chunk.toString()));
  const lb = haproxy;
  await waitFor("HAProxy to see r1, r2 and r3 UP", async () => {
    if (lb.exitCode !== null) throw new Error(`haproxy exited ${lb.exitCode}:\n${haproxyLog.tail()}`);
    const status = await lbStatus().catch(() => ({}) as Record<string, string>);
    return status.r1 === "UP" && status.r2 === "UP" && status.r3 === "UP";
  });

  // Fresh keys for the scenarios (scenario 1 makes its own, to use it at once).
  const made = await Promise.all([
    createKey("limited", 60),
    createKey("usage"),
    createKey("killed"),
    createKey("sigterm"),
    createKey("redis-outage", 100_000),
    createKey("postgres-outage"),
  ]);
  for (const [i, name] of ["limited", "usage", "killed", "sigterm", "redis", "postgres"].entries()) keys[name] = made[i]!;

  // Every replica hears key changes (each subscribes in the background, and a change published
  // before its subscription is lost): a probe change for key 0 (no such key) goes out until each
  // replica has counted one.
  const probe = connectRedis(redis.url, { commandTimeoutMs: 5000 });
  observer = probe;
  const heard = await Promise.all(all().map((replica) => keyChangesHeard(replica)));
  await waitFor(
    "every replica to hear key changes",
    async () => {
      if (probe.available) await probe.client.publish("trellis:key-revocations", JSON.stringify({ keyId: 0, change: "revoked" }));
      const now = await Promise.all(all().map((replica) => keyChangesHeard(replica)));
      return now.every((n, i) => n > heard[i]!);
    },
    100,
  );
});

after(async () => {
  await observer?.close();
  for (const child of [...children]) child.kill("SIGKILL");
  await Promise.all([...children].map((child) => exitOf(child)));
  await redis?.dispose();
  await postgres?.dispose();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmpGuard?.kill("SIGKILL");
});

// ---------------------------------------------------------------------------------------------
// Scenarios.

async function signIn(replica: Replica): Promise<{ cookie: string; csrf: string }> {
  const answer = await send(replica.port, "/dashboard/api/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: ADMIN_TOKEN }),
  });
  assert.equal(answer.status, 200, `sign-in on ${replica.name}: ${answer.body}`);
  const cookie = String(answer.headers["set-cookie"]).split(";")[0]!;
  return { cookie, csrf: (JSON.parse(answer.body) as { csrf: string }).csrf };
}

scenario(
  "a key created with the CLI works on r2 and r3 at once; revoked through r2's dashboard, r1 and r3 refuse it once they hear of it",
  async (t) => {
    const { r1, r2, r3 } = replicas;
    const { id, key } = await createKey("revoked-soon");
    const [on2, on3] = await Promise.all([complete(r2.port, key), complete(r3.port, key)]);
    assert.equal(on2.status, 200, `r2: ${on2.body}`);
    assert.equal(on3.status, 200, `r3 (real engine): ${on3.body}`);
    // The real engine's answer: constrained by the pattern, in the README's shape.
    const real = JSON.parse(on3.body) as { completion: string; tokens_generated: number; stop_reason: string };
    assert.match(real.completion, /^[a-z]{0,8}$/);
    assert.ok(real.tokens_generated >= 1 && real.tokens_generated <= 8, on3.body);
    assert.ok(["pattern_match", "token_limit"].includes(real.stop_reason), on3.body);
    // Its latency is bench:load's to measure (the real engine on stories260K), not this test's.
    const again = await complete(r3.port, key);
    assert.equal(again.status, 200, again.body);
    assert.match((JSON.parse(again.body) as { completion: string }).completion, /^[a-z]{0,8}$/);
    t.diagnostic(`new key answered by r2 and r3; r3 (real engine): ${on3.body}, then ${again.body}`);

    // r1 has read it too (its key cache holds it), then r2's dashboard revokes it.
    assert.equal((await complete(r1.port, key)).status, 200);
    const heardBefore = await Promise.all([r1, r3].map((replica) => keyChangesHeard(replica)));
    const session = await signIn(r2);
    const revoked = await send(r2.port, `/dashboard/api/keys/${id}/revoke`, {
      method: "POST",
      headers: { cookie: session.cookie, "x-csrf-token": session.csrf, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(revoked.status, 200, revoked.body);
    assert.deepEqual(JSON.parse(revoked.body), { id, revoked: true });
    // r1 and r3 hear the change over Redis (and drop the key's cached row): from then on they
    // refuse the key.
    for (const [i, replica] of [r1, r3].entries()) {
      await waitFor(`${replica.name} to hear the revocation`, async () => (await keyChangesHeard(replica)) > heardBefore[i]!, 10);
      const answer = await complete(replica.port, key);
      assert.equal(answer.status, 401, `${replica.name} heard the revocation, yet answers ${answer.status} ${answer.body}`);
    }
    assert.equal((await complete(r2.port, key)).status, 401, "r2 refuses it too");
  },
);

scenario("a 60 requests/minute key holds across the three replicas behind HAProxy (not 180)", async (t) => {
  const { id, key } = keys.limited!;
  const bucket = `trellis:rate:key:${id}`;
  // Four clients through HAProxy until 60 requests were refused. The key's one bucket in Redis
  // allows its 60, plus what it refilled (1 a second of Redis's clock, from before the first
  // request to the last take stamped on the bucket), plus at most one a decision that a replica
  // made locally (a Redis command that timed out); a bucket per replica would allow 180 (and
  // three times the refill) before the first refusal.
  const localBefore = await localRateDecisions();
  const startMs = await redisNowMs();
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const statuses: number[] = [];
  const refusals = (): number => statuses.filter((s) => s === 429).length;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (refusals() < 60 && statuses.length < 1000) statuses.push((await complete(lbPort, key, agent)).status);
    }),
  );
  agent.destroy();
  const lastTakeMs = Number((await observer!.client.hget(bucket, "updated_ms")) ?? startMs);
  const refillS = (lastTakeMs - startMs) / 1000;
  const local = (await localRateDecisions()) - localBefore;
  const allowed = statuses.filter((s) => s === 200).length;
  const refused = refusals();
  t.diagnostic(
    `${statuses.length} requests through HAProxy: ${allowed} allowed, ${refused} refused (429); ` +
      `the bucket refilled for ${refillS.toFixed(1)} s; ${local} local decisions`,
  );
  assert.equal(allowed + refused, statuses.length, `only 200 and 429: ${statuses.filter((s) => s !== 200 && s !== 429)}`);
  assert.ok(refused >= 60, `the limit was reached (${refused} refused of ${statuses.length})`);
  assert.ok(allowed >= 60, `the bucket's 60 are allowed (${allowed})`);
  assert.ok(
    allowed <= 60 + refillS + local,
    `at most the bucket's 60 + its refill (${refillS.toFixed(1)} s) + ${local} local decisions, not 60 per replica (${allowed})`,
  );
});

scenario("a dashboard session opened on r1 works on r3", async () => {
  const session = await signIn(replicas.r1);
  const onThird = await send(replicas.r3.port, "/dashboard/api/session", { headers: { cookie: session.cookie } });
  assert.equal(onThird.status, 200, onThird.body);
  assert.deepEqual(JSON.parse(onThird.body), { signed_in: true, csrf: session.csrf });
});

scenario("30 s of concurrent load through HAProxy: usage in Postgres equals the requests served", async (t) => {
  const { id, key } = keys.usage!;
  const before = await Promise.all(all().map((replica) => servedBy(replica)));
  const load = startLoad(lbPort, key);
  await sleep(30_000);
  const result = await load.stop();
  const served = (await Promise.all(all().map((replica) => servedBy(replica)))).map((n, i) => n - before[i]!);
  t.diagnostic(
    `${result.total} requests in ${(result.ms / 1000).toFixed(1)} s by ${CLIENTS} clients: ${result.ok} × 200 (${result.tokens} tokens), ` +
      `${result.failures.length} failed; served by r1/r2/r3: ${served.join("/")}`,
  );
  assert.deepEqual(result.failures, [], "no request failed");
  assert.ok(result.ok > 100, `the load ran (${result.ok} answers)`);
  for (const [i, n] of served.entries()) assert.ok(n > 0, `r${i + 1} served part of the load`);
  const usage = await settledUsage(id, result.ok);
  t.diagnostic(`Postgres: ${usage.requests} requests, ${usage.tokens} tokens (complete ${usage.ms} ms after the load)`);
  assert.equal(usage.requests, result.ok, "requests in Postgres = 200 answers");
  assert.equal(usage.tokens, result.tokens, "tokens in Postgres = sum of tokens_generated");
});

scenario("kill -9 of r2 under load: only its in-flight requests may fail, and it rejoins when restarted", async (t) => {
  const r2 = replicas.r2;
  const { key } = keys.killed!;
  const base = await servedBy(r2);
  const load = startLoad(lbPort, key);
  await waitFor("r2 to take part of the load", async () => (await servedBy(r2)) - base >= 20);
  const inFlight = load.inFlight;
  const r2InFlight = metric(await metricsOf(r2), "trellis_generations_in_flight");
  const gone = exitOf(r2.child!);
  const killedAt = Date.now();
  r2.child!.kill("SIGKILL");
  await gone;
  const downMs = await waitForLb("r2", "DOWN");
  // The load goes on past HAProxy's DOWN, until more than 50 requests sent after the kill came back.
  await waitFor("requests sent after the kill to be answered", () => load.answeredAfter(killedAt) > 50);
  const result = await load.stop();
  const later = result.after(killedAt);
  const windowMs = result.failures.length === 0 ? 0 : Math.max(...result.failures.map((f) => f.at)) - killedAt;
  t.diagnostic(
    `${result.total} requests, ${result.ok} × 200; at the kill ${inFlight} requests were in flight (r2 generating ${r2InFlight}); ` +
      `HAProxy marked r2 DOWN ${downMs} ms after it; failures: ${result.failures.length} ${JSON.stringify(result.failures.map((f) => f.what))}` +
      ` (last ${windowMs} ms after the kill); sent after the kill: ${later.answered}, failed ${later.failed}`,
  );
  assert.ok(
    result.failures.length <= inFlight,
    `at most the ${inFlight} requests in flight at the kill failed (${result.failures.length})`,
  );
  for (const failure of result.failures) assert.ok(failure.sentAt <= killedAt, `a request sent after the kill failed: ${failure.what}`);
  assert.ok(later.answered > 50, `requests went on after the kill (${later.answered})`);
  assert.equal(later.failed, 0, "no request sent after the kill failed");

  // Restarted on its port: HAProxy sees it UP, and requests reach it again.
  const restartedAt = Date.now();
  await startReplica(r2);
  const readyMs = Date.now() - restartedAt;
  const upMs = await waitForLb("r2", "UP");
  const rejoin = startLoad(lbPort, key);
  const reachedMs = await waitFor("requests to reach the restarted r2", async () => (await servedBy(r2)) >= 10).catch(() => -1);
  const rejoined = await rejoin.stop();
  const servedAfter = await servedBy(r2);
  t.diagnostic(
    `r2 restarted: ready in ${readyMs} ms, UP in HAProxy ${upMs} ms later, ` +
      `served ${servedAfter} requests (${reachedMs} ms); rejoin load: ${rejoined.ok} × 200, ${rejoined.failures.length} failed`,
  );
  assert.ok(servedAfter >= 10, `the restarted r2 serves requests again (${servedAfter})`);
  assert.deepEqual(rejoined.failures, [], "no failure while r2 rejoins");
});

scenario("SIGTERM of r1 under load: no request fails, it drains and exits 0 by itself, its usage is in Postgres", async (t) => {
  const r1 = replicas.r1;
  const { id, key } = keys.sigterm!;
  const base = await servedBy(r1);
  const load = startLoad(lbPort, key);
  await waitFor("r1 to take part of the load", async () => (await servedBy(r1)) - base >= 20);
  const servedBeforeStop = (await servedBy(r1)) - base;
  const child = r1.child!;
  const exited = exitOf(child);
  const termAt = Date.now();
  child.kill("SIGTERM");
  const downMs = await waitForLb("r1", "DOWN").catch(() => -1);
  // Killed if it has not exited by LIVENESS_MS, long before its drain deadline (REQUEST_TIMEOUT_MS).
  const timer = setTimeout(() => child.kill("SIGKILL"), LIVENESS_MS);
  const exit = await exited;
  clearTimeout(timer);
  const exitMs = Date.now() - termAt;
  await sleep(1000);
  const result = await load.stop();
  t.diagnostic(
    `${result.total} requests, ${result.ok} × 200, ${result.failures.length} failed ${JSON.stringify(result.failures.slice(0, 10))}; ` +
      `r1 had served ${servedBeforeStop}+ of them; HAProxy marked it DOWN ${downMs} ms after SIGTERM ` +
      `(shutdown delay ${SHUTDOWN_DELAY_MS} ms); it exited (${exit.code ?? exit.signal}) after ${exitMs} ms`,
  );
  assert.deepEqual(result.failures, [], "no request failed");
  // Exit code 0 and no signal: it exited by itself, so its drain ended with its last request, not
  // at its deadline (REQUEST_TIMEOUT_MS + 1 s, after our SIGKILL).
  assert.deepEqual(exit, { code: 0, signal: null }, `r1 exits with code 0 by itself (${exit.code ?? exit.signal}):\n${r1.log.tail(2000)}`);
  const usage = await settledUsage(id, result.ok);
  t.diagnostic(`Postgres: ${usage.requests} requests, ${usage.tokens} tokens (complete ${usage.ms} ms after the load)`);
  assert.equal(usage.requests, result.ok, "requests in Postgres = 200 answers, r1's included");
  assert.equal(usage.tokens, result.tokens, "tokens in Postgres = sum of tokens_generated");

  await startReplica(r1);
  await waitForLb("r1", "UP");
});

scenario("Redis stopped under load: no 5xx, the fallback metric rises", async (t) => {
  const { key } = keys.redis!;
  const fallbacks = async (): Promise<number[]> =>
    (await Promise.all(all().map((replica) => metricsOf(replica)))).map((text) =>
      metric(text, "trellis_rate_limit_fallback_decisions_total"),
    );
  const redisUp = async (): Promise<boolean> =>
    (await Promise.all(all().map((replica) => metricsOf(replica)))).every((text) => metric(text, "trellis_redis_up") === 1);
  await waitFor("every replica connected to Redis", redisUp);
  for (const replica of all()) assert.equal((await complete(replica.port, key)).status, 200);
  const before = await fallbacks();
  const load = startLoad(lbPort, key);
  await sleep(1000);
  const stoppedAt = Date.now();
  await redis.stop();
  // Requests go on while Redis is away, their rate limits decided locally.
  const sum = (counts: number[]): number => counts.reduce((a, b) => a + b, 0);
  await waitFor("the replicas to decide rate limits locally", async () => sum(await fallbacks()) > sum(before));
  const answeredAt = Date.now();
  await waitFor("requests to be answered while Redis is away", () => load.answeredAfter(answeredAt) >= 20);
  const during = await fallbacks();
  const okDuring = load.ok;
  await redis.restart();
  const backMs = await waitFor("every replica reconnected to Redis", redisUp);
  await sleep(500);
  const result = await load.stop();
  const fiveXx = result.failures.filter((f) => /^5\d\d/.test(f.what));
  t.diagnostic(
    `${result.total} requests, ${result.ok} × 200 (${okDuring} by the time Redis came back), ${result.failures.length} failed, ` +
      `${fiveXx.length} 5xx ${JSON.stringify(result.statuses)}; fallback decisions r1/r2/r3: ${before.join("/")} → ${during.join("/")}; ` +
      `Redis down ${Date.now() - stoppedAt} ms, replicas reconnected ${backMs} ms after its restart`,
  );
  assert.deepEqual(fiveXx, [], "no 5xx while Redis is away");
  assert.deepEqual(result.failures, [], "every request was served (the key's limit is never reached)");
  const rise = sum(during) - sum(before);
  assert.ok(rise > 0, `trellis_rate_limit_fallback_decisions_total rose (${before.join("/")} → ${during.join("/")})`);
});

scenario("Postgres restarted under load: known keys are served throughout, new keys work once it is back", async (t) => {
  const { id, key } = keys.postgres!;
  let seenTokens = 0;
  for (const replica of all()) {
    const answer = await complete(replica.port, key);
    assert.equal(answer.status, 200, `${replica.name} knows the key: ${answer.body}`);
    seenTokens += (JSON.parse(answer.body) as { tokens_generated: number }).tokens_generated;
  }
  const load = startLoad(lbPort, key);
  await sleep(1000);
  const stoppedAt = Date.now();
  await postgres.stop();
  const stopMs = Date.now() - stoppedAt;
  await sleep(1000);
  await postgres.start();
  const downMs = Date.now() - stoppedAt;
  await sleep(2000);
  const result = await load.stop();
  const fiveXx = result.failures.filter((f) => !/^[1-4]\d\d/.test(f.what));
  t.diagnostic(
    `${result.total} requests, ${result.ok} × 200, ${result.failures.length} failed ${JSON.stringify(result.statuses)}; ` +
      `Postgres stopped in ${stopMs} ms, down ${downMs} ms in all`,
  );
  assert.deepEqual(fiveXx, [], "no 5xx (or dropped connection) for a key seen before the outage");
  assert.deepEqual(result.failures, [], "every request with the known key was served");
  for (const replica of all()) assert.equal(replica.child?.exitCode, null, `${replica.name} still runs:\n${replica.log.tail(3000)}`);
  const fresh = await createKey("after-the-restart");
  const statuses = await Promise.all(all().map(async (replica) => (await complete(replica.port, fresh.key)).status));
  assert.deepEqual(statuses, [200, 200, 200], "a key created after the restart works on every replica");
  // The usage that could not be written during the outage was kept and is written once Postgres
  // is back (its flush retries back off: up to a few seconds here).
  const usage = await settledUsage(id, result.ok + 3);
  t.diagnostic(`Postgres: ${usage.requests} requests (${result.ok} + 3 answered), ${usage.tokens} tokens (complete ${usage.ms} ms after)`);
  assert.equal(usage.requests, result.ok + 3, "requests in Postgres = 200 answers, the outage's included");
  assert.equal(usage.tokens, result.tokens + seenTokens, "tokens in Postgres = sum of tokens_generated");
});
