// The `trellis` CLI against Postgres (TRELLIS_DATABASE_URL): `migrate` brings the schema up and
// prints its version, `keys create / list / revoke` work as with SQLite, a revocation is told to
// running replicas through Redis, and a wrong or unreachable database is one line saying what to
// do. TRELLIS_MIGRATE_ON_START=false refuses an unmigrated database by name.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { RevocationBroadcast, connectRedis, type KeyChangeEvent } from "../src/server/shared/index.js";
import { POSTGRES_SCHEMA_VERSION } from "../src/store/index.js";
import { startPostgresServer, type TestPostgresServer } from "./support/postgres-server.js";
import { startRedisServer, type TestRedisServer } from "./support/redis-server.js";
import { runCli } from "./support/service.js";

let postgres: TestPostgresServer;
let redis: TestRedisServer;

before(async () => {
  [postgres, redis] = await Promise.all([startPostgresServer(), startRedisServer()]);
});

after(async () => {
  await redis?.dispose();
  await postgres?.dispose();
});

const run = (argv: string[], env: NodeJS.ProcessEnv) => runCli(argv, env);

test("migrate, keys create / list / revoke against Postgres; revocations reach replicas through Redis", async () => {
  const url = await postgres.createDatabase();
  const env = { TRELLIS_DATABASE_URL: url, TRELLIS_REDIS_URL: redis.url, TRELLIS_MIGRATE_ON_START: "false" };

  const unmigrated = await run(["keys", "list"], env);
  assert.equal(unmigrated.code, 1);
  assert.match(unmigrated.err[0]!, /schema version 0, this Trellis needs \d+; run `trellis migrate`/);

  const migrated = await run(["migrate"], env);
  assert.equal(migrated.code, 0, migrated.err.join("\n"));
  assert.deepEqual(migrated.out, [`key store schema at version ${POSTGRES_SCHEMA_VERSION} (postgres: ${url})`]);
  assert.equal((await run(["migrate"], env)).code, 0, "migrating again changes nothing");

  const created = await run(["keys", "create", "batch", "--rate-limit", "30"], env);
  assert.equal(created.code, 0, created.err.join("\n"));
  assert.match(created.out[0]!, /^trl_[A-Za-z0-9_-]{43}$/);
  const list = await run(["keys", "list"], env);
  assert.match(list.out[1]!, /^1\s+batch\s+trl_\S+…\s+active\s+0\s+0\s+none\s+-\s+never\s+never\s+30\/min/);

  // A replica's listener hears the CLI's revocation.
  const connection = connectRedis(redis.url, { log: () => {} });
  const broadcast = new RevocationBroadcast(connection, { log: () => {} });
  const heard: KeyChangeEvent[] = [];
  broadcast.onKeyChange((event) => heard.push(event));
  try {
    const deadline = Date.now() + 5000;
    while (!broadcast.subscribed) {
      assert.ok(Date.now() < deadline, "subscribed");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.deepEqual((await run(["keys", "revoke", "1"], env)).out, ["revoked key 1"]);
    assert.deepEqual(heard, [{ keyId: 1, change: "revoked" }]);
    assert.equal((await run(["keys", "rate-limit", "1", "none"], env)).code, 0);
    assert.deepEqual(heard.at(-1), { keyId: 1, change: "rate-limit" });
  } finally {
    await broadcast.close();
    await connection.close();
  }
  assert.match((await run(["keys", "list"], env)).out[1]!, /revoked/);
});

test("a wrong or unreachable TRELLIS_DATABASE_URL is one line saying what to do", async () => {
  const wrongScheme = await run(["keys", "list"], { TRELLIS_DATABASE_URL: "mysql://db/trellis" });
  assert.equal(wrongScheme.code, 1);
  assert.match(wrongScheme.err[0]!, /TRELLIS_DATABASE_URL \(--database-url\) must start with postgres:\/\//);
  const unreachable = await run(["keys", "list"], { TRELLIS_DATABASE_URL: "postgres://trellis:secret@127.0.0.1:1/trellis" });
  assert.equal(unreachable.code, 1);
  assert.equal(unreachable.err.length, 1);
  assert.match(unreachable.err[0]!, /the database cannot be reached .*; start the database or check TRELLIS_DATABASE_URL/);
  assert.doesNotMatch(unreachable.err[0]!, /secret/, "the password is never printed");
});
