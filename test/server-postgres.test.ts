// Two service replicas (fake engine) sharing one Postgres key store: a key created through one's
// dashboard works on the other at once, a revocation on one is refused by the other once its key
// cache (1 s) has run out, usage from both adds up in the database and in the dashboard's hourly
// history, and while Postgres restarts known keys keep being served (unknown ones get a 503,
// never a 500).
// Also the replica's routing metrics and its shutdown: readiness fails first, requests are still
// served for TRELLIS_SHUTDOWN_DELAY_MS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import type { Config } from "../src/config.js";
import { createService } from "../src/service.js";
import { PostgresKeyStore, sha256Hex } from "../src/store/index.js";
import { completeInjected, revokeInDashboard, signIn } from "./support/service.js";
import { createFakeEngine, testConfig } from "./support/fake-engine.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";

let server: TestPostgresServer;
const replicas: Array<{ app: FastifyInstance; store: PostgresKeyStore }> = [];

async function replica(url: string, config: Partial<Config> = {}, keyCacheMs?: number) {
  const store = await PostgresKeyStore.open({ url, flushIntervalMs: 0, connectionTimeoutMs: 500, keyCacheMs, onFlushError: () => {} });
  const engine = createFakeEngine();
  const app = await createService({
    engine,
    config: { ...testConfig(), rateLimit: 0, ...config },
    store,
    adminTokenHash: sha256Hex("admin-secret"),
  });
  replicas.push({ app, store });
  return { app, store, engine };
}

before(async () => {
  server = await startPostgresServer();
});

after(async () => {
  for (const { app, store } of replicas) {
    if (!app.trellis.closing) await app.close();
    await store.close();
  }
  await server?.dispose();
});

test("replicas on one Postgres: shared keys, revocation seen once the key cache (1 s) runs out, usage adding up", async () => {
  const url = await server.createDatabase();
  const one = await replica(url);
  const two = await replica(url);
  const session = await signIn(one.app);
  const created = await one.app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
    payload: { name: "shared" },
  });
  assert.equal(created.statusCode, 200, created.body);
  const { id, key } = created.json() as { id: number; key: string };
  assert.equal((await completeInjected(two.app, key)).statusCode, 200, "the other replica knows the key at once");

  for (let i = 0; i < 6; i++) assert.equal((await completeInjected(i % 2 === 0 ? one.app : two.app, key)).statusCode, 200);
  await Promise.all([one.store.flush(), two.store.flush()]);
  const listed = await two.app.inject({ url: "/dashboard/api/keys", headers: { cookie: (await signIn(two.app)).cookie } });
  const info = (listed.json() as { keys: Array<{ id: number; requests: number; tokens: number }> }).keys.find((k) => k.id === id)!;
  assert.equal(info.requests, 7, "usage of both replicas adds up");
  const usage = await one.app.inject({ url: `/dashboard/api/usage?bucket=hour&key=${id}`, headers: { cookie: session.cookie } });
  assert.equal(usage.statusCode, 200, usage.body);
  const points = (usage.json() as { points: Array<{ requests: number; tokens: number }> }).points;
  assert.equal(points.length, 48);
  assert.equal(points.at(-1)!.requests, 7);
  assert.equal(points.at(-1)!.tokens, info.tokens);
  const badBucket = await one.app.inject({ url: "/dashboard/api/usage?bucket=week", headers: { cookie: session.cookie } });
  assert.equal(badBucket.statusCode, 400);

  // Replica one has the key's row in its key cache (default keyCacheMs: 1 s, no Redis here). The
  // store is handed its clock: one cache period after now, whenever that comes on this machine,
  // it reads the row again, finds the revocation and refuses the key, over HTTP too.
  const other = await signIn(two.app);
  await revokeInDashboard(two.app, other, id);
  assert.equal(await one.store.authenticateRequest(key, Date.now() + 1000), null, "refused by the other replica 1 s (its key cache) later");
  assert.equal((await completeInjected(one.app, key)).statusCode, 401, "and so over HTTP from then on");
});

test("Postgres restarting: known keys keep working, unknown keys get 503, the dashboard 503, no 500", async () => {
  const url = await server.createDatabase();
  const { app, store } = await replica(url, {}, 50);
  const known = await store.createKey("known");
  const unseen = await store.createKey("unseen");
  assert.equal((await completeInjected(app, known.key)).statusCode, 200);
  const session = await signIn(app);
  await server.stop();
  try {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await completeInjected(app, known.key)).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200]);
    const refused = await completeInjected(app, unseen.key);
    assert.equal(refused.statusCode, 503, refused.body);
    assert.match((refused.json() as { error: string }).error, /key store is unavailable/);
    assert.equal(refused.headers["retry-after"], "2");
    const keys = await app.inject({ url: "/dashboard/api/keys", headers: { cookie: session.cookie } });
    assert.equal(keys.statusCode, 503, keys.body);
    assert.match((await app.inject({ url: "/metrics" })).body, /^trellis_key_store_stale_serves_total [1-9]/m);
  } finally {
    await server.start();
  }
  assert.equal(await store.flush(), true);
  assert.equal((await completeInjected(app, unseen.key)).statusCode, 200, "new keys work again once it is back");
  const info = (await store.listKeys()).find((k) => k.id === known.id)!;
  assert.equal(info.requests, 6, "usage served during the outage was kept and written");
});

test("a connection dropped in the middle of a usage flush: the flush fails, the process goes on, the next flush writes it", async () => {
  const url = await server.createDatabase();
  const store = await PostgresKeyStore.open({ url, flushIntervalMs: 0, connectionTimeoutMs: 500, onFlushError: () => {} });
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  try {
    const { id } = await store.createKey("flushed");
    store.recordUsage(id, 7);
    // The flush's UPDATE waits on this row lock; its connection is then ended by the server, as a
    // restart ends it. A checked-out connection that ends is an 'error' event on its client: with
    // no listener there, the whole process would end.
    await locker.query("BEGIN");
    await locker.query("SELECT id FROM api_keys WHERE id = $1 FOR UPDATE", [id]);
    const flushing = store.flush();
    const waiting = async () =>
      (await locker.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'trellis' AND wait_event_type = 'Lock'"))
        .rows as Array<{
        pid: number;
      }>;
    let blocked = await waiting();
    for (let i = 0; i < 100 && blocked.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      blocked = await waiting();
    }
    assert.equal(blocked.length, 1, "the flush waits on the row lock");
    await locker.query("SELECT pg_terminate_backend($1)", [blocked[0]!.pid]);
    assert.equal(await flushing, false, "the flush reports that nothing was written");
    await locker.query("COMMIT");
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(await store.flush(), true, "the next flush writes the kept usage");
    const info = (await store.listKeys()).find((k) => k.id === id)!;
    assert.deepEqual([info.requests, info.tokens], [1, 7]);
  } finally {
    await locker.end().catch(() => {});
    await store.close();
  }
});

test("routing metrics and the shutdown order: readiness first, requests still served during the delay", async () => {
  const url = await server.createDatabase();
  const { app, store, engine } = await replica(url, { shutdownDelayMs: 400 });
  const metrics = await app.inject({ url: "/metrics" });
  for (const name of [
    "trellis_requests_waiting",
    "trellis_requests_running",
    "trellis_kv_cache_utilization",
    "trellis_tokens_per_second",
  ]) {
    assert.match(metrics.body, new RegExp(`^${name} \\d`, "m"), name);
  }
  const key = (await store.createKey("drain")).key;
  // A generation in flight keeps the server open past the delay; it finishes after.
  const inFlight = completeInjected(app, key, "!slow");
  const shutdown = app.trellis.shutdown();
  assert.equal((await app.inject({ url: "/readyz" })).statusCode, 503);
  assert.equal((await completeInjected(app, key)).statusCode, 200, "served while the balancer takes the replica out");
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal((await completeInjected(app, key)).statusCode, 503, "refused once the delay is over");
  engine.release();
  assert.equal((await inFlight).statusCode, 200, "the request in flight finished");
  await shutdown;
});
