// server/shared/ against a real redis-server (test/support/redis-server.ts): the Lua token bucket
// decides exactly as TokenBucketLimiter on a scripted and a random sequence (caller's clock), and
// refills on Redis's clock whatever the replicas' clocks say; two replicas share one bucket; a
// stopped Redis is answered by the local fallback at once, a frozen one once the command timeout
// fires, logged once, and left again once Redis is back; key changes cross connections, also
// after a restart, and malformed messages are ignored; sessions cross connections, expire in
// Redis, fall back to memory while Redis is down (sign-outs included); the in-memory store stays
// bounded.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { TokenBucketLimiter, type RateDecision } from "../src/server/index.js";
import {
  MemorySessionStore,
  RedisSessionStore,
  RedisUrlError,
  RevocationBroadcast,
  SharedRateLimiter,
  connectRedis,
  parseKeyChange,
  parseRedisUrl,
  type KeyChangeEvent,
  type RedisConnection,
  type RedisConnectionOptions,
} from "../src/server/shared/index.js";
import { startRedisServer, type TestRedisServer } from "./support/redis-server.js";

/** Generous: what has not happened by then never will. Liveness, not speed. */
const LIVENESS_MS = 60_000;

/** Polls `condition` every 10 ms until it holds; fails with `what` only if it never does. */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + LIVENESS_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`not within ${LIVENESS_MS} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Awaits `pending` and asserts that it settled before the event loop turned once: it waited on no
 * socket and no timer (a take decided locally, not one that asked Redis or waited for an answer).
 */
async function settlesAtOnce<T>(pending: Promise<T>, what: string): Promise<T> {
  let turned = false;
  const immediate = setImmediate(() => {
    turned = true;
  });
  const value = await pending;
  clearImmediate(immediate);
  assert.equal(turned, false, `${what} waited for I/O or a timer`);
  return value;
}

/** A process's state letter in /proc/<pid>/stat (R, S, T: stopped, …). */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

interface LogRecorder {
  log: (event: string, detail: Record<string, unknown>) => void;
  count(event: string): number;
  /** The details logged with `event`, oldest first. */
  details(event: string): Record<string, unknown>[];
}

function recordLogs(): LogRecorder {
  const entries: Array<{ event: string; detail: Record<string, unknown> }> = [];
  return {
    log: (event, detail) => entries.push({ event, detail }),
    count: (event) => entries.filter((e) => e.event === event).length,
    details: (event) => entries.filter((e) => e.event === event).map((e) => e.detail),
  };
}

const opened: Array<{ close(): Promise<void> }> = [];
const servers: TestRedisServer[] = [];

/** A connection that the file's after() closes; waits until it is ready. */
async function connect(server: TestRedisServer, options: RedisConnectionOptions = {}): Promise<RedisConnection> {
  const connection = connectRedis(server.url, options);
  opened.push(connection);
  assert.equal(await connection.waitUntilAvailable(LIVENESS_MS), true, "the redis connection never became ready");
  return connection;
}

async function redisServer(): Promise<TestRedisServer> {
  const server = await startRedisServer();
  servers.push(server);
  return server;
}

let main: TestRedisServer;
before(async () => {
  main = await redisServer();
});
after(async () => {
  for (const item of opened.reverse()) await item.close();
  for (const server of servers) await server.dispose();
});

describe("connectRedis", () => {
  test("accepts redis:// and rediss:// URLs, refuses others naming TRELLIS_REDIS_URL and never echoing a password", () => {
    assert.equal(parseRedisUrl("redis://127.0.0.1:6379/0").port, "6379");
    assert.equal(parseRedisUrl("rediss://user:pw@cache.internal").protocol, "rediss:");
    for (const url of ["http://secret@host:6379", "not a url", "redis://:secret@host/db-one", "redis:///0", ""]) {
      assert.throws(
        () => connectRedis(url),
        (error: unknown) => error instanceof RedisUrlError && /TRELLIS_REDIS_URL/.test(error.message) && !error.message.includes("secret"),
        url,
      );
    }
  });
});

describe("SharedRateLimiter", () => {
  test("the Lua bucket decides exactly as TokenBucketLimiter: limit changes up and down, time passing, several keys", async () => {
    const connection = await connect(main, { commandTimeoutMs: 5000 });
    const shared = new SharedRateLimiter(connection, 10, { clock: "caller", keyPrefix: "equivalence:" });
    const local = new TokenBucketLimiter(10);
    let step = 0;
    const both = async (key: string, limit: number | undefined, nowMs: number): Promise<RateDecision> => {
      const expected = local.take(key, limit, nowMs);
      const actual = await shared.take(key, limit, nowMs);
      assert.deepEqual(actual, expected, `step ${step}: take(${key}, ${limit}, +${nowMs - t0} ms)`);
      step++;
      return actual;
    };
    const t0 = 1_700_000_000_000;
    // Scripted: drain 5, raise to 8 (3 at once), lower to 2 (never below empty), refill.
    for (let i = 0; i < 6; i++) await both("s", 5, t0);
    assert.equal((await both("s", 8, t0)).allowed, true);
    assert.equal((await both("s", 8, t0)).allowed, true);
    assert.equal((await both("s", 8, t0 + 1)).allowed, true);
    assert.equal((await both("s", 8, t0 + 2)).allowed, false);
    assert.equal((await both("s", 2, t0 + 3)).remaining, 0);
    assert.equal((await both("s", 2, t0 + 30_000)).allowed, false);
    assert.equal((await both("s", 2, t0 + 30_004)).allowed, true);
    await both("s", 2, t0 + 20_000); // the clock going back refills nothing
    await both("s", 600, t0 + 90_000);
    await both("s", undefined, t0 + 90_001);
    // Random: xorshift, fixed seed.
    let seed = 0x2545f491;
    const random = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const keys = ["a", "b", "c", "d"];
    const limits = [1, 2, 3, 5, 7, 10, 60, 61, 100, 600, 1000];
    const steps = [0, 0, 0, 1, 3, 17, 100, 250, 999, 1000, 4321, 20_000, 61_000, -700];
    const limitOf = new Map<string, number | undefined>();
    let now = t0;
    for (let i = 0; i < 600; i++) {
      const key = keys[random(keys.length)]!;
      if (!limitOf.has(key) || random(8) === 0) limitOf.set(key, random(6) === 0 ? undefined : limits[random(limits.length)]);
      now += steps[random(steps.length)]!;
      await both(key, limitOf.get(key), now);
    }
    assert.deepEqual(shared.stats(), { fallbackDecisions: 0, redisErrors: 0, usingFallback: false });
    const hash = await connection.client.hgetall("equivalence:rate:a");
    assert.deepEqual(Object.keys(hash).sort(), ["per_minute", "tokens", "updated_ms"]);
    const ttl = await connection.client.pttl("equivalence:rate:a");
    assert.ok(ttl > 0 && ttl <= 120_000, `PTTL ${ttl}`);
  });

  test("Redis's clock refills the bucket, whatever the replicas' clocks say", async () => {
    const ahead = new SharedRateLimiter(await connect(main), 5, { keyPrefix: "clock:" });
    const behind = new SharedRateLimiter(await connect(main), 5, { keyPrefix: "clock:" });
    const hour = 3_600_000;
    for (let i = 0; i < 5; i++) assert.equal((await behind.take("skew", 5, Date.now() - hour)).allowed, true);
    // A replica an hour ahead would find the bucket refilled on its own clock; Redis's says not.
    assert.equal((await ahead.take("skew", 5, Date.now() + hour)).allowed, false);
    assert.equal((await behind.take("skew", 5, Date.now() - hour)).allowed, false);

    // 120 a minute: a token every 500 ms of Redis's time. Every take, by either replica (their
    // clocks two hours apart), is stamped on the bucket with a time between Redis's TIME before
    // and after it, and decided as a TokenBucketLimiter decides at that time: Redis's clock alone
    // empties and refills the bucket, at its rate, however long the takes take here.
    const observer = await connect(main);
    const redisNowMs = async (): Promise<number> => {
      const [seconds, micros] = await observer.client.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };
    const mirror = new TokenBucketLimiter(120);
    const take = async (limiter: SharedRateLimiter, skewMs: number): Promise<RateDecision> => {
      const before = await redisNowMs();
      const decision = await limiter.take("refill", 120, Date.now() + skewMs);
      const after = await redisNowMs();
      const stampedMs = Number(await observer.client.hget("clock:rate:refill", "updated_ms"));
      assert.ok(before <= stampedMs && stampedMs <= after, `the bucket's time ${stampedMs} is not Redis's (${before} to ${after})`);
      assert.deepEqual(decision, mirror.take("refill", 120, stampedMs), `a take at ${stampedMs} by Redis's clock`);
      return decision;
    };
    let refused: RateDecision | null = null;
    for (let i = 0; i < 200 && refused === null; i++) {
      const decision = await take(ahead, hour);
      if (!decision.allowed) refused = decision;
    }
    assert.ok(refused, "the bucket never emptied");
    assert.equal(refused.retryAfterSeconds, 1);
    await waitFor(async () => (await take(behind, -hour)).allowed, "a token refilled");
    assert.equal(ahead.stats().fallbackDecisions + behind.stats().fallbackDecisions, 0);
  });

  test("two replicas share one bucket: 60 a minute, 100 takes alternating, exactly 60 allowed", async () => {
    // The caller's clock, stopped: no token comes back however long the 100 takes take.
    const options = { keyPrefix: "replicas:", clock: "caller" } as const;
    const replicas = [
      new SharedRateLimiter(await connect(main, { commandTimeoutMs: 5000 }), 60, options),
      new SharedRateLimiter(await connect(main, { commandTimeoutMs: 5000 }), 60, options),
    ];
    const nowMs = Date.now();
    const allowed: number[] = [];
    for (let i = 0; i < 100; i++) if ((await replicas[i % 2]!.take("key:1", 60, nowMs)).allowed) allowed.push(i);
    assert.equal(allowed.length, 60);
    assert.deepEqual(allowed, [...Array(60).keys()]);
    for (const replica of replicas) assert.equal(replica.stats().fallbackDecisions, 0);
  });

  test("Redis stopped or frozen: takes answer locally, at once or when the command timeout fires, logged once; back to shared after", async () => {
    const server = await redisServer();
    const logs = recordLogs();
    const connection = await connect(server, { commandTimeoutMs: 250, log: logs.log });
    const limiter = new SharedRateLimiter(connection, 60, { keyPrefix: "outage:", retryAfterFailureMs: 300 });
    assert.equal((await limiter.take("k")).allowed, true);
    assert.equal(limiter.usingFallback, false);

    const takes = async (count: number, settle: <T>(pending: Promise<T>, what: string) => Promise<T>): Promise<void> => {
      for (let i = 0; i < count; i++) {
        const decision = await settle(limiter.take(`k${i % 3}`), `take ${i}`);
        assert.equal(typeof decision.allowed, "boolean");
        assert.equal(decision.limit, 60);
      }
    };
    let reconnects = 0;
    connection.client.on("reconnecting", () => reconnects++);

    // Stopped: the connection is down, so every take is decided locally without sending anything.
    await server.stop();
    await waitFor(() => !connection.available, "the connection noticed the stop");
    const stopped = limiter.stats();
    await takes(30, settlesAtOnce);
    assert.equal(limiter.usingFallback, true);
    assert.equal(limiter.stats().fallbackDecisions - stopped.fallbackDecisions, 30, "all 30 decided locally");
    assert.equal(limiter.stats().redisErrors, stopped.redisErrors, "none of them waited on Redis");
    // Several reconnect attempts fail meanwhile (each one follows a "reconnecting"); each
    // transition is still logged once.
    await waitFor(() => reconnects >= 4, "three failed reconnect attempts");
    assert.equal(logs.count("rate-limit.fallback"), 1);
    assert.equal(logs.count("redis.down"), 1);

    await server.restart();
    await waitFor(() => connection.available, "reconnected after the restart");
    await limiter.take("k");
    assert.equal(limiter.usingFallback, false);
    assert.equal(logs.count("rate-limit.shared"), 1);
    assert.equal(logs.count("redis.up"), 2);
    assert.equal(await connection.client.exists("outage:rate:k"), 1);

    // Frozen: the connection stays open, a take that asks Redis is answered locally when its
    // command timeout (250 ms) fires, and the next takes stay local.
    server.pause();
    try {
      await waitFor(() => processState(server.pid) === "T", "redis-server stopped by SIGSTOP");
      const frozen = limiter.stats();
      await takes(10, (pending) => pending);
      assert.equal(limiter.stats().fallbackDecisions - frozen.fallbackDecisions, 10, "all 10 decided locally");
      assert.ok(limiter.stats().redisErrors > frozen.redisErrors, "a take asked the frozen Redis");
      assert.equal(limiter.usingFallback, true);
      assert.equal(logs.count("rate-limit.fallback"), 2);
      assert.equal(logs.details("rate-limit.fallback")[1]!.reason, "Command timed out", "the take's command timeout fired");
    } finally {
      server.resume();
    }
    await waitFor(async () => {
      await limiter.take("k");
      return !limiter.usingFallback;
    }, "back to shared after the server resumed");
    assert.equal(logs.count("rate-limit.fallback"), 2);
    assert.equal(logs.count("rate-limit.shared"), 2);
  });

  test("a connection to no Redis at all answers locally at once, and does not crash the process", async () => {
    const server = await redisServer();
    await server.stop();
    const logs = recordLogs();
    const connection = connectRedis(server.url, { log: logs.log });
    opened.push(connection);
    const limiter = new SharedRateLimiter(connection, 2);
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await settlesAtOnce(limiter.take("x"), `take ${i}`));
    assert.equal(limiter.stats().redisErrors, 0, "no take waited on Redis");
    assert.deepEqual(
      decisions.map((d) => d.allowed),
      [true, true, false],
    );
    await waitFor(() => logs.count("redis.down") === 1, "redis.down logged");
    assert.equal(limiter.stats().fallbackDecisions, 3);
  });
});

describe("RevocationBroadcast", () => {
  test("key changes reach another connection, in order, also after a Redis restart; malformed messages are ignored", async () => {
    const server = await redisServer();
    const publisherConnection = await connect(server);
    const publisher = new RevocationBroadcast(publisherConnection);
    const listener = new RevocationBroadcast(await connect(server), { heartbeatMs: 100 });
    opened.push(publisher, listener);
    const changes: KeyChangeEvent[] = [];
    const revocations: KeyChangeEvent[] = [];
    let resubscribed = 0;
    listener.onKeyChange((event) => changes.push(event));
    listener.onRevoked((event) => revocations.push(event));
    listener.onResubscribed(() => resubscribed++);
    listener.onKeyChange(() => {
      throw new Error("a listener's own failure");
    });
    await waitFor(() => listener.subscribed, "subscribed");

    const arrives = async (count: number): Promise<void> => waitFor(() => changes.length >= count, `${count} key changes`);
    await publisher.publish({ keyId: 7 });
    await arrives(1);
    await publisher.publish({ keyId: 8, change: "quota" });
    await arrives(2);
    assert.deepEqual(changes, [
      { keyId: 7, change: "revoked" },
      { keyId: 8, change: "quota" },
    ]);
    assert.deepEqual(revocations, [{ keyId: 7, change: "revoked" }]);

    const junk = [
      "garbage",
      "{}",
      "[7]",
      "null",
      '{"keyId":"7","change":"revoked"}',
      '{"keyId":7,"change":"deleted"}',
      '{"keyId":-1,"change":"revoked"}',
    ];
    junk.push(JSON.stringify({ keyId: 1, change: "revoked", padding: "x".repeat(5000) }));
    for (const message of junk) await publisherConnection.client.publish(listener.channel, message);
    await publisher.publish({ keyId: 9, change: "rate-limit" });
    await arrives(3);
    assert.deepEqual(changes[2], { keyId: 9, change: "rate-limit" });
    assert.equal(changes.length, 3);
    assert.equal(listener.stats().malformed, junk.length);

    await server.kill();
    await waitFor(() => !listener.subscribed, "the subscription noticed the crash");
    await publisher.publish({ keyId: 10 }); // never throws; counted
    assert.equal(publisher.stats().publishFailures, 1);
    await server.restart();
    await waitFor(() => listener.subscribed && publisherConnection.available, "subscribed again after the restart");
    assert.equal(resubscribed, 1);
    await publisher.publish({ keyId: 11, change: "expiry" });
    await arrives(4);
    assert.deepEqual(changes[3], { keyId: 11, change: "expiry" });

    // A server that goes silent without closing the connection: the heartbeat notices.
    server.pause();
    try {
      await waitFor(() => !listener.subscribed, "the subscription noticed the silence");
    } finally {
      server.resume();
    }
    await waitFor(() => listener.subscribed, "subscribed again after the server resumed");
    assert.equal(resubscribed, 2);
    await publisher.publish({ keyId: 12 });
    await arrives(5);
    assert.deepEqual(changes[4], { keyId: 12, change: "revoked" });
  });

  test("parseKeyChange takes only {keyId, change} with a known change", () => {
    assert.deepEqual(parseKeyChange('{"keyId":3,"change":"expiry","extra":true}'), { keyId: 3, change: "expiry" });
    assert.equal(parseKeyChange('{"keyId":3.5,"change":"expiry"}'), null);
    assert.equal(parseKeyChange('{"keyId":3}'), null);
  });
});

describe("sessions", () => {
  test("a session set through one Redis store is read through another, expires in Redis, and is deleted", async () => {
    const first = new RedisSessionStore(await connect(main), { keyPrefix: "sessions:" });
    const secondConnection = await connect(main);
    const second = new RedisSessionStore(secondConnection, { keyPrefix: "sessions:" });
    const session = { csrf: "csrf-1", expiresMs: Date.now() + 60_000 };
    await first.set("a".repeat(64), session);
    assert.deepEqual(await second.get("a".repeat(64)), session);
    assert.ok((await secondConnection.client.pttl(`sessions:session:${"a".repeat(64)}`)) > 59_000);
    await second.delete("a".repeat(64));
    assert.equal(await first.get("a".repeat(64)), null);

    await first.set("b", { csrf: "csrf-2", expiresMs: Date.now() + 200 });
    assert.equal((await second.get("b"))?.csrf, "csrf-2");
    await waitFor(async () => (await secondConnection.client.exists("sessions:session:b")) === 0, "Redis expired the session");
    assert.equal(await second.get("b"), null);

    await first.set("c", { csrf: "csrf-3", expiresMs: Date.now() - 1 });
    assert.equal(await secondConnection.client.exists("sessions:session:c"), 0);
    await secondConnection.client.set("sessions:session:d", "{not json");
    assert.equal(await first.get("d"), null);
    assert.equal(first.shared, true);
    assert.deepEqual(first.stats(), { fallbackOperations: 0, redisErrors: 0, usingFallback: false });
  });

  test("with Redis down the store falls back to memory (logged once, never throws), and sign-outs reach Redis after", async () => {
    const server = await redisServer();
    const logs = recordLogs();
    const connection = await connect(server, { log: logs.log });
    const store = new RedisSessionStore(connection);
    const inRedis = { csrf: "before", expiresMs: Date.now() + 60_000 };
    await store.set("signed-in-before", inRedis);

    await server.stop();
    await waitFor(() => !connection.available, "the connection noticed the stop");
    const during = { csrf: "during", expiresMs: Date.now() + 60_000 };
    await store.set("signed-in-during", during);
    assert.deepEqual(await store.get("signed-in-during"), during);
    await store.delete("signed-in-before");
    assert.equal(await store.get("signed-in-before"), null);
    assert.equal(store.usingFallback, true);
    assert.ok(store.stats().fallbackOperations >= 3);
    assert.equal(logs.count("session-store.fallback"), 1);

    await server.restart();
    await waitFor(() => connection.available, "reconnected after the restart");
    // The restart emptied this Redis (no persistence): put the signed-out session back, as a
    // persistent Redis would still have it, for the pending sign-out to remove.
    await connection.client.set("trellis:session:signed-in-before", JSON.stringify(inRedis), "PX", 60_000);
    // Redis has never heard of the session signed in meanwhile; this replica still has it.
    assert.deepEqual(await store.get("signed-in-during"), during);
    assert.equal(store.usingFallback, false);
    assert.equal(logs.count("session-store.shared"), 1);
    await waitFor(async () => (await connection.client.exists("trellis:session:signed-in-before")) === 0, "pending sign-out sent");
    assert.equal(await store.get("signed-in-before"), null);
  });

  test("MemorySessionStore keeps at most its bound, dropping the oldest sign-in, and drops expired sessions on read", async () => {
    const store = new MemorySessionStore(100);
    const expiresMs = Date.now() + 60_000;
    for (let i = 0; i < 250; i++) await store.set(`s${i}`, { csrf: `c${i}`, expiresMs });
    assert.equal(store.size, 100);
    assert.equal(await store.get("s149"), null);
    assert.equal((await store.get("s150"))?.csrf, "c150");
    await store.set("s150", { csrf: "again", expiresMs }); // a refreshed session is the newest
    await store.set("s250", { csrf: "c250", expiresMs });
    assert.equal((await store.get("s150"))?.csrf, "again");
    assert.equal(await store.get("s151"), null);
    await store.set("old", { csrf: "x", expiresMs: Date.now() - 1 });
    assert.equal(await store.get("old"), null);
    assert.equal(store.size, 99);
    assert.equal(store.shared, false);
  });
});
