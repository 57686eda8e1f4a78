// Replicas sharing Postgres and Redis (fake engines, real servers on loopback): one rate limit
// per key across replicas, a revocation refused everywhere at once (the broadcast, not the key
// cache's expiry), a dashboard session opened on one replica valid on another, and Redis stopped
// under load: no 5xx, the fallback counted in /metrics, shared again once Redis is back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import type { Config } from "../src/config.js";
import { createService } from "../src/service.js";
import { PostgresKeyStore, sha256Hex } from "../src/store/index.js";
import { completeInjected, revokeInDashboard, signIn } from "./support/service.js";
import { createFakeEngine, testConfig } from "./support/fake-engine.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";
import { startRedisServer, type TestRedisServer } from "./support/redis-server.js";

let postgres: TestPostgresServer;
let redis: TestRedisServer;
const apps: FastifyInstance[] = [];
const stores: PostgresKeyStore[] = [];

before(async () => {
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
});

after(async () => {
  for (const app of apps) await app.close();
  for (const store of stores) await store.close();
  await redis?.dispose();
  await postgres?.dispose();
});

/** A replica whose key cache alone would take a minute to see a change: only the broadcast is fast. */
async function replica(databaseUrl: string, config: Partial<Config> = {}): Promise<{ app: FastifyInstance; store: PostgresKeyStore }> {
  const store = await PostgresKeyStore.open({ url: databaseUrl, flushIntervalMs: 0, keyCacheMs: 60_000, onFlushError: () => {} });
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

/** Redis answers on every replica's connection (they connect in the background). */
async function untilRedisUp(apps: FastifyInstance[]): Promise<void> {
  const deadline = Date.now() + 5000;
  for (const app of apps) {
    while (!/^trellis_redis_up 1$/m.test((await app.inject({ url: "/metrics" })).body)) {
      assert.ok(Date.now() < deadline, "replicas connect to Redis");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

test("one rate limit per key across three replicas, revocations and sessions shared", async () => {
  const url = await postgres.createDatabase();
  const replicas = await Promise.all([1, 2, 3].map(() => replica(url, { rateLimit: 60 })));
  await untilRedisUp(replicas.map((r) => r.app));
  const { id, key } = await replicas[0]!.store.createKey("limited");

  const statuses: number[] = [];
  for (let i = 0; i < 120; i++) statuses.push((await completeInjected(replicas[i % 3]!.app, key)).statusCode);
  const allowed = statuses.filter((s) => s === 200).length;
  assert.equal(allowed, 60, "60 requests a minute in all, not 60 per replica");
  assert.equal(statuses.filter((s) => s === 429).length, 60);

  // A session opened on replica 1 works on replica 3, and so does its CSRF token.
  const session = await signIn(replicas[0]!.app);
  const onThird = await replicas[2]!.app.inject({ url: "/dashboard/api/session", headers: { cookie: session.cookie } });
  assert.deepEqual(onThird.json(), { signed_in: true, csrf: session.csrf });

  // Revoked through replica 2's dashboard: replicas 1 and 3 refuse it within a second, though
  // their key caches would keep it for a minute.
  await revokeInDashboard(replicas[1]!.app, session, id);
  const at = Date.now();
  for (const { app } of [replicas[0]!, replicas[2]!]) {
    while ((await completeInjected(app, key)).statusCode !== 401) {
      assert.ok(Date.now() - at < 1000, "refused within a second");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
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
  await new Promise((resolve) => setTimeout(resolve, 150));
  await redis.stop();
  await new Promise((resolve) => setTimeout(resolve, 600));
  const metrics = (await replicas[0]!.app.inject({ url: "/metrics" })).body;
  await redis.restart();
  await new Promise((resolve) => setTimeout(resolve, 150));
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
  await untilRedisUp(replicas.map((r) => r.app));
});
