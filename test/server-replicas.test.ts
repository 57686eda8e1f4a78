// Replicas sharing Postgres and Redis (fake engines, real servers on loopback): one rate limit
// per key across replicas, a revocation refused everywhere by the broadcast (the key caches would
// keep the key for an hour), a dashboard session opened on one replica valid on another, and Redis
// stopped under load: no 5xx, the fallback counted in /metrics, shared again once Redis is back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import type { Config } from "../src/config.js";
import { createService } from "../src/service.js";
import { PostgresKeyStore, sha256Hex } from "../src/store/index.js";
import { connectRedis, type RedisConnection } from "../src/server/shared/index.js";
import { completeInjected, revokeInDashboard, signIn } from "./support/service.js";
import { createFakeEngine, testConfig } from "./support/fake-engine.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";
import { startRedisServer, type TestRedisServer } from "./support/redis-server.js";

let postgres: TestPostgresServer;
let redis: TestRedisServer;
/** The test's own connection to Redis: it reads rate-limit buckets and publishes probe key changes. */
let observer: RedisConnection;
const apps: FastifyInstance[] = [];
const stores: PostgresKeyStore[] = [];

before(async () => {
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
  observer = connectRedis(redis.url, { commandTimeoutMs: 5000 });
});

after(async () => {
  for (const app of apps) await app.close();
  for (const store of stores) await store.close();
  await observer?.close();
  await redis?.dispose();
  await postgres?.dispose();
});

/** Generous: a condition that has not come about by then never will. Liveness, not speed. */
const LIVENESS_MS = 60_000;

/** Polls `condition` every 10 ms until it holds; fails naming `what` only if it never does. */
async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, `not within ${LIVENESS_MS} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A metric's value in the replica's /metrics (NaN when absent). */
async function metricOf(app: FastifyInstance, name: string): Promise<number> {
  return Number(new RegExp(`^${name} (\\d+)$`, "m").exec((await app.inject({ url: "/metrics" })).body)?.[1]);
}

/**
 * A replica whose key cache would keep a key for an hour: within any wait of this file, only the
 * broadcast key change (or a resubscription, which drops every cached row) can make it see one.
 */
async function replica(databaseUrl: string, config: Partial<Config> = {}): Promise<{ app: FastifyInstance; store: PostgresKeyStore }> {
  const store = await PostgresKeyStore.open({ url: databaseUrl, flushIntervalMs: 0, keyCacheMs: 3_600_000, onFlushError: () => {} });
  stores.push(store);
  const app = await createService({
    engine: createFakeEngine(),
    config: { ...testConfig(), redisUrl: redis.url, ...config },
    store,
    adminTokenHash: sha256Hex("admin-secret"),
  });
  apps.push(app);
  return { app, store };
}

/**
 * Redis answers on every replica's connection and every replica hears key changes (they connect
 * and subscribe in the background; a change published before a subscription is lost): a probe
 * change for key 0 (no such key) is published until each replica has counted one.
 */
async function untilRedisUp(apps: FastifyInstance[]): Promise<void> {
  for (const app of apps) await until("replicas connect to Redis", async () => (await metricOf(app, "trellis_redis_up")) === 1);
  const heard = await Promise.all(apps.map((app) => metricOf(app, "trellis_key_changes_received_total")));
  await until("every replica hears key changes", async () => {
    if (observer.available) await observer.client.publish("trellis:key-revocations", JSON.stringify({ keyId: 0, change: "revoked" }));
    const now = await Promise.all(apps.map((app) => metricOf(app, "trellis_key_changes_received_total")));
    return now.every((n, i) => n > heard[i]!);
  });
}

/** Redis's clock (TIME), ms: the clock that refills the rate-limit buckets. */
async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await observer.client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

test("one rate limit per key across three replicas, revocations and sessions shared", async () => {
  const url = await postgres.createDatabase();
  const replicas = await Promise.all([1, 2, 3].map(() => replica(url, { rateLimit: 60 })));
  await untilRedisUp(replicas.map((r) => r.app));
  const { id, key } = await replicas[0]!.store.createKey("limited");

  // Round robin over the three until 60 were refused. The key's one bucket in Redis allows its 60,
  // plus what it refilled (1 a second of Redis's clock, from before the first request to the last
  // take stamped on the bucket), plus at most one a decision that a replica made locally (a Redis
  // command that timed out); a bucket per replica would allow 180 (and three times the refill)
  // before the first refusal.
  const startMs = await redisNowMs();
  const statuses: number[] = [];
  for (let i = 0; statuses.filter((s) => s === 429).length < 60 && i < 1000; i++) {
    statuses.push((await completeInjected(replicas[i % 3]!.app, key)).statusCode);
  }
  const lastTakeMs = Number((await observer.client.hget(`trellis:rate:key:${id}`, "updated_ms")) ?? startMs);
  const refillS = (lastTakeMs - startMs) / 1000;
  const local = (await Promise.all(replicas.map((r) => metricOf(r.app, "trellis_rate_limit_fallback_decisions_total")))).reduce(
    (a, b) => a + b,
  );
  const allowed = statuses.filter((s) => s === 200).length;
  assert.equal(statuses.filter((s) => s === 429).length, 60, `60 refused in ${statuses.length} requests`);
  assert.equal(allowed + 60, statuses.length, "only 200s and 429s");
  assert.ok(allowed >= 60, `the bucket's 60 are allowed (${allowed})`);
  assert.ok(
    allowed <= 60 + refillS + local,
    `60 requests a minute in all, not 60 per replica: ${allowed} allowed, ${refillS} s of refill, ${local} local decisions`,
  );

  // A session opened on replica 1 works on replica 3, and so does its CSRF token.
  const session = await signIn(replicas[0]!.app);
  const onThird = await replicas[2]!.app.inject({ url: "/dashboard/api/session", headers: { cookie: session.cookie } });
  assert.deepEqual(onThird.json(), { signed_in: true, csrf: session.csrf });

  // Revoked through replica 2's dashboard: replicas 1 and 3, whose key caches would keep it for
  // an hour, refuse it once the broadcast change reaches them.
  await revokeInDashboard(replicas[1]!.app, session, id);
  for (const [i, { app }] of [replicas[0]!, replicas[2]!].entries()) {
    await until(`replica ${2 * i + 1} refuses the revoked key`, async () => (await completeInjected(app, key)).statusCode === 401);
  }

  // Signed out on replica 3: the session is gone on replica 1 too.
  await replicas[2]!.app.inject({
    method: "POST",
    url: "/dashboard/api/logout",
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
  });
  const afterLogout = await replicas[0]!.app.inject({ url: "/dashboard/api/session", headers: { cookie: session.cookie } });
  assert.deepEqual(afterLogout.json(), { signed_in: false });
});

test("Redis stopped under load: no 5xx, each replica limits on its own and says so in /metrics", async () => {
  const url = await postgres.createDatabase();
  const replicas = await Promise.all([1, 2].map(() => replica(url, { rateLimit: 100_000 })));
  await untilRedisUp(replicas.map((r) => r.app));
  const { key } = await replicas[0]!.store.createKey("busy");
  await Promise.all(replicas.map((r) => completeInjected(r.app, key)));
  const statuses: number[] = [];
  let running = true;
  const load = (async () => {
    let i = 0;
    while (running) statuses.push((await completeInjected(replicas[i++ % 2]!.app, key)).statusCode);
  })();
  await until("the load runs", () => statuses.length >= 10);
  await redis.stop();
  // Once replica 1 has seen Redis go, the next requests (half of them its own) are decided locally.
  await until("replica 1 notices that Redis is down", async () => (await metricOf(replicas[0]!.app, "trellis_redis_up")) === 0);
  const answeredBefore = statuses.length;
  await until("requests served while Redis is down", () => statuses.length >= answeredBefore + 11);
  const metrics = (await replicas[0]!.app.inject({ url: "/metrics" })).body;
  await redis.restart();
  await untilRedisUp(replicas.map((r) => r.app));
  running = false;
  await load;
  assert.ok(statuses.length > 20, `load ran (${statuses.length} requests)`);
  assert.deepEqual(
    statuses.filter((s) => s !== 200),
    [],
    "every request under load was served",
  );
  assert.match(metrics, /^trellis_redis_up 0$/m);
  assert.match(metrics, /^trellis_rate_limit_fallback 1$/m);
  const fallbacks = Number(/^trellis_rate_limit_fallback_decisions_total (\d+)$/m.exec(metrics)?.[1]);
  assert.ok(fallbacks > 0, `fallback decisions counted (${fallbacks})`);
});
