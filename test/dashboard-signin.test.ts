/**
 * Dashboard sign-in: the limiter counts wrong tokens only (the right one always signs in).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createService } from "../src/dashboard/index.js";
import { KeyStore, sha256Hex } from "../src/store/keys.js";
import { createFakeEngine, testConfig } from "./server-helpers.js";

const TOKEN = "correct-horse-battery-staple-42";

async function newService() {
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createService({ engine: createFakeEngine(), config: testConfig(), store, adminTokenHash: sha256Hex(TOKEN) });
  return { app, store };
}

const { app, store } = await newService();
after(async () => {
  await app.close();
  store.close();
});

const login = (token: string, ip: string, headers: Record<string, string> = {}) =>
  app.inject({ method: "POST", url: "/dashboard/api/login", payload: { token }, remoteAddress: ip, headers });

test("the right token always signs in, however often", async () => {
  for (let i = 0; i < 15; i++) {
    const res = await login(TOKEN, "10.0.0.1");
    assert.equal(res.statusCode, 200, `sign-in ${i + 1}: ${res.body}`);
  }
});

test("wrong tokens from one address are throttled after ten; the right one still signs in there", async () => {
  const ip = "10.0.0.2";
  for (let i = 0; i < 10; i++) {
    const res = await login(`wrong-${i}`, ip);
    assert.equal(res.statusCode, 401, `wrong token ${i + 1}`);
  }
  const throttled = await login("wrong-again", ip);
  assert.equal(throttled.statusCode, 429);
  assert.equal((throttled.json() as { code: number }).code, 429);
  const retryAfter = Number(throttled.headers["retry-after"]);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${throttled.headers["retry-after"]}`);

  const admin = await login(TOKEN, ip);
  assert.equal(admin.statusCode, 200, "the admin behind the same address is not locked out");
  assert.equal((await login("still-wrong", ip)).statusCode, 429, "signing in does not lift the throttle on wrong tokens");
  assert.equal((await login("wrong", "10.0.0.3")).statusCode, 401, "other addresses are counted apart");
});
