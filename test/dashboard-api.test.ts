// The dashboard over HTTP (fake engine): page and assets served locally under a strict CSP,
// sign-in and sign-out, CSRF-guarded key creation, use, listing with usage and revocation,
// token quotas (set at creation, listed with what is left, changed and cleared by a CSRF-guarded
// action), expiries and rate limits (set at creation, listed with last use, changed and cleared
// by CSRF-guarded actions, enforced), validation errors in the API's shape naming the field,
// key-name rules, and a locked key store answering 503.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SESSION_COOKIE } from "../src/dashboard/index.js";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { auth, createFakeEngine, testConfig } from "./support/fake-engine.js";
import { holdLock } from "./support/hold-lock.js";

const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
const app = await createService({
  engine: createFakeEngine(),
  config: testConfig(),
  store,
  adminTokenHash: sha256Hex("admin-secret"),
});
after(async () => {
  await app.close();
  store.close();
});

async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const res = await app.inject({ method: "POST", url: "/dashboard/api/login", payload: { token: "admin-secret" } });
  assert.equal(res.statusCode, 200, res.body);
  const setCookie = String(res.headers["set-cookie"]);
  assert.match(setCookie, new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{20,};`));
  assert.match(setCookie, /HttpOnly/);
  assert.match(setCookie, /SameSite=Strict/);
  assert.match(setCookie, /Path=\/dashboard/);
  return { cookie: setCookie.split(";")[0]!, csrf: (res.json() as { csrf: string }).csrf };
}

test("the page and its assets are served locally with a strict CSP", async () => {
  const page = await app.inject({ url: "/dashboard" });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers["content-type"]), /text\/html/);
  assert.match(String(page.headers["content-security-policy"]), /default-src 'self'/);
  assert.doesNotMatch(page.body, /https?:\/\//);
  assert.equal((await app.inject({ url: "/dashboard/app.js" })).statusCode, 200);
  assert.equal((await app.inject({ url: "/dashboard/style.css" })).statusCode, 200);
});

test("sign-in: wrong token 401, right token sets a session cookie", async () => {
  const wrong = await app.inject({ method: "POST", url: "/dashboard/api/login", payload: { token: "nope" } });
  assert.equal(wrong.statusCode, 401);
  assert.deepEqual(wrong.json(), { error: "wrong admin token", code: 401 });
  assert.equal((await app.inject({ url: "/dashboard/api/keys" })).statusCode, 401);
  const { cookie } = await signIn();
  const session = await app.inject({ url: "/dashboard/api/session", headers: { cookie } });
  assert.equal((session.json() as { signed_in: boolean }).signed_in, true);
});

test("mutations need the CSRF header; keys are created, used, listed with usage, revoked", async () => {
  const { cookie, csrf } = await signIn();
  const noCsrf = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers: { cookie }, payload: { name: "x" } });
  assert.equal(noCsrf.statusCode, 403);
  const badCsrf = await app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers: { cookie, "x-csrf-token": "forged" },
    payload: { name: "x" },
  });
  assert.equal(badCsrf.statusCode, 403);
  const created = await app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers: { cookie, "x-csrf-token": csrf },
    payload: { name: "svc" },
  });
  assert.equal(created.statusCode, 200, created.body);
  const { id, key } = created.json() as { id: number; key: string };
  assert.match(key, /^trl_[A-Za-z0-9_-]{43}$/);
  const use = await app.inject({
    method: "POST",
    url: "/v1/completion/cfg",
    headers: auth(key),
    payload: { prompt: "p", grammar: "g", max_new_tokens: 4 },
  });
  assert.equal(use.statusCode, 200);
  const list = (await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).json() as { keys: Array<Record<string, unknown>> };
  const row = list.keys.find((k) => k.id === id)!;
  assert.equal(row.requests, 1);
  assert.equal(row.tokens, 4);
  assert.ok(row.last_used_at);
  assert.equal(JSON.stringify(list).includes(key), false, "the secret is never listed");
  const revoke = await app.inject({
    method: "POST",
    url: `/dashboard/api/keys/${id}/revoke`,
    headers: { cookie, "x-csrf-token": csrf },
    payload: {},
  });
  assert.deepEqual(revoke.json(), { id, revoked: true });
  assert.equal(
    (await app.inject({ method: "POST", url: "/v1/completion/cfg", headers: auth(key), payload: { prompt: "p", grammar: "g" } }))
      .statusCode,
    401,
  );
  assert.equal(
    (await app.inject({ method: "POST", url: "/dashboard/api/keys/9999/revoke", headers: { cookie, "x-csrf-token": csrf }, payload: {} }))
      .statusCode,
    404,
  );
});

test("token quotas: set at creation, listed with what is left, changed and cleared (session + CSRF), enforced", async () => {
  const { cookie, csrf } = await signIn();
  const headers = { cookie, "x-csrf-token": csrf };
  const created = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "metered", quota: 10 } });
  assert.equal(created.statusCode, 200, created.body);
  const { id, key, quota } = created.json() as { id: number; key: string; quota: number | null };
  assert.equal(quota, 10);
  const unlimited = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "free", quota: null } });
  assert.equal((unlimited.json() as { quota: number | null }).quota, null);

  const use = await app.inject({
    method: "POST",
    url: "/v1/completion/cfg",
    headers: auth(key),
    payload: { prompt: "p", grammar: "g", max_new_tokens: 6 },
  });
  assert.equal(use.statusCode, 200);
  assert.equal(use.headers["x-quota-remaining"], "4");
  const row = async () => {
    const list = (await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).json() as { keys: Array<Record<string, unknown>> };
    return list.keys.find((k) => k.id === id)!;
  };
  assert.deepEqual([(await row()).tokens, (await row()).quota, (await row()).quota_remaining], [6, 10, 4]);

  const setQuota = (body: unknown, h: Record<string, string> = headers, target: number = id) =>
    app.inject({ method: "POST", url: `/dashboard/api/keys/${target}/quota`, headers: h, payload: body as Record<string, unknown> });
  assert.equal((await setQuota({ quota: 100 }, { cookie })).statusCode, 403, "the CSRF header is required");
  assert.equal((await setQuota({ quota: 100 }, { cookie, "x-csrf-token": "forged" })).statusCode, 403);
  assert.equal((await setQuota({ quota: 100 }, {})).statusCode, 401, "a session is required");
  assert.equal((await row()).quota, 10, "refused changes changed nothing");

  const lowered = await setQuota({ quota: 6 });
  assert.deepEqual(lowered.json(), { id, quota: 6 });
  assert.deepEqual([(await row()).quota, (await row()).quota_remaining], [6, 0]);
  const exhausted = await app.inject({
    method: "POST",
    url: "/v1/completion/cfg",
    headers: auth(key),
    payload: { prompt: "p", grammar: "g" },
  });
  assert.equal(exhausted.statusCode, 402);
  assert.equal(exhausted.headers["x-quota-remaining"], "0");
  assert.match((exhausted.json() as { error: string }).error, /token quota of this API key is used up: 6 of its 6 tokens/);

  assert.deepEqual((await setQuota({ quota: null })).json(), { id, quota: null });
  assert.deepEqual([(await row()).quota, (await row()).quota_remaining], [null, null]);
  const again = await app.inject({ method: "POST", url: "/v1/completion/cfg", headers: auth(key), payload: { prompt: "p", grammar: "g" } });
  assert.equal(again.statusCode, 200);
  assert.equal(again.headers["x-quota-remaining"], undefined, "no quota, no header");

  const refusals: Array<[unknown, RegExp]> = [
    [{ quota: -1 }, /^quota must be ≥ 0$/],
    [{ quota: 1.5 }, /^quota must be an integer$/],
    [{ quota: "100" }, /^quota must be an integer$/],
    [{ quota: 2 ** 53 }, /^quota must be ≤ 9007199254740991$/],
    [{}, /^quota is required$/],
    [{ quota: 5, extra: 1 }, /^unknown field "extra"; allowed fields: quota$/],
  ];
  for (const [body, message] of refusals) {
    const res = await setQuota(body);
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    assert.match((res.json() as { error: string }).error, message);
  }
  const badCreate = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "bad", quota: -5 } });
  assert.deepEqual(badCreate.json(), { error: "quota must be ≥ 0", code: 400 });
  assert.equal((await setQuota({ quota: 5 }, headers, 9999)).statusCode, 404);
});

test("expiry and rate limit: set at creation, listed with last use, changed and cleared (session + CSRF), enforced", async () => {
  const { cookie, csrf } = await signIn();
  const headers = { cookie, "x-csrf-token": csrf };
  const created = await app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers,
    payload: { name: "scheduled", expires_at: "2099-07-01", rate_limit: 40 },
  });
  assert.equal(created.statusCode, 200, created.body);
  const { id, key, expires_at, rate_limit } = created.json() as { id: number; key: string; expires_at: string; rate_limit: number };
  assert.deepEqual([expires_at, rate_limit], ["2099-07-01T00:00:00.000Z", 40]);
  const plain = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "plain settings" } });
  assert.deepEqual(
    [(plain.json() as { expires_at: unknown }).expires_at, (plain.json() as { rate_limit: unknown }).rate_limit],
    [null, null],
  );

  const row = async () => {
    const list = (await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).json() as { keys: Array<Record<string, unknown>> };
    return list.keys.find((k) => k.id === id)!;
  };
  const listed = await row();
  assert.deepEqual(
    [listed.expires_at, listed.expired, listed.rate_limit, listed.last_used_at],
    ["2099-07-01T00:00:00.000Z", false, 40, null],
  );
  const use = () =>
    app.inject({
      method: "POST",
      url: "/v1/completion/cfg",
      headers: auth(key),
      payload: { prompt: "p", grammar: "g", max_new_tokens: 2 },
    });
  const used = await use();
  assert.equal(used.statusCode, 200);
  assert.equal(used.headers["x-ratelimit-limit"], "40", "the key's own limit replaces the service's");
  assert.ok(typeof (await row()).last_used_at === "string", "last use is listed before the flush writes it");

  const post = (action: string, body: unknown, h: Record<string, string> = headers, target: number = id) =>
    app.inject({ method: "POST", url: `/dashboard/api/keys/${target}/${action}`, headers: h, payload: body as Record<string, unknown> });
  for (const [action, body] of [
    ["expiry", { expires_at: "2000-01-01" }],
    ["rate-limit", { rate_limit: 1 }],
  ] as const) {
    assert.equal((await post(action, body, { cookie })).statusCode, 403, `${action}: the CSRF header is required`);
    assert.equal((await post(action, body, { cookie, "x-csrf-token": "forged" })).statusCode, 403);
    assert.equal((await post(action, body, {})).statusCode, 401, `${action}: a session is required`);
    assert.equal((await post(action, body, headers, 9999)).statusCode, 404);
  }
  assert.deepEqual(
    [(await row()).expires_at, (await row()).rate_limit],
    ["2099-07-01T00:00:00.000Z", 40],
    "refused changes changed nothing",
  );

  assert.deepEqual((await post("expiry", { expires_at: "2000-01-01T12:00:00+01:00" })).json(), {
    id,
    expires_at: "2000-01-01T11:00:00.000Z",
  });
  assert.equal((await row()).expired, true);
  const expired = await use();
  assert.equal(expired.statusCode, 401);
  assert.deepEqual(expired.json(), { error: "API key expired on 2000-01-01T11:00:00.000Z", code: 401 });
  assert.deepEqual((await post("expiry", { expires_at: null })).json(), { id, expires_at: null });
  assert.deepEqual([(await row()).expires_at, (await row()).expired], [null, false]);

  assert.deepEqual((await post("rate-limit", { rate_limit: 1 })).json(), { id, rate_limit: 1 });
  // Lowered to 1 a minute: the request this minute already used it.
  const limited = await use();
  assert.equal(limited.statusCode, 429);
  assert.equal(limited.headers["x-ratelimit-limit"], "1");
  assert.deepEqual((await post("rate-limit", { rate_limit: null })).json(), { id, rate_limit: null });
  assert.equal((await row()).rate_limit, null);
  assert.equal((await use()).statusCode, 200, "cleared: the service's limit again");

  const refusals: Array<[string, unknown, RegExp]> = [
    ["expiry", { expires_at: "soon" }, /^expires_at must be a date \(YYYY-MM-DD\) or an ISO 8601 date and time/],
    ["expiry", { expires_at: "2099-02-30" }, /^expires_at must be a date/],
    ["expiry", { expires_at: "2099-01-01T10:00" }, /^expires_at must be a date/],
    ["expiry", { expires_at: 20990101 }, /^expires_at must be a string$/],
    ["expiry", {}, /^expires_at is required$/],
    ["rate-limit", { rate_limit: 0 }, /^rate_limit must be ≥ 1$/],
    ["rate-limit", { rate_limit: 2.5 }, /^rate_limit must be an integer$/],
    ["rate-limit", { rate_limit: "10" }, /^rate_limit must be an integer$/],
    ["rate-limit", { rate_limit: 1, extra: 1 }, /^unknown field "extra"; allowed fields: rate_limit$/],
  ];
  for (const [action, body, message] of refusals) {
    const res = await post(action, body);
    assert.equal(res.statusCode, 400, `${action} ${JSON.stringify(body)}: ${res.body}`);
    assert.match((res.json() as { error: string }).error, message);
  }
  const badCreate = await app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers,
    payload: { name: "bad", expires_at: "31/12/2099" },
  });
  assert.equal(badCreate.statusCode, 400);
  assert.match((badCreate.json() as { error: string }).error, /^expires_at must be a date/);
  const badLimit = await app.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "bad", rate_limit: 0 } });
  assert.deepEqual(badLimit.json(), { error: "rate_limit must be ≥ 1", code: 400 });
  assert.equal(
    ((await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).json() as { keys: Array<{ name: string }> }).keys.some(
      (k) => k.name === "bad",
    ),
    false,
    "a refused setting creates no key",
  );
});

test("usage over time: hourly and daily buckets of one key or all, with refusals beside, signed in only", async () => {
  const { cookie, csrf } = await signIn();
  const created = await app.inject({
    method: "POST",
    url: "/dashboard/api/keys",
    headers: { cookie, "x-csrf-token": csrf },
    payload: { name: "charted", rate_limit: 3 },
  });
  const { id, key } = created.json() as { id: number; key: string };
  const statuses: number[] = [];
  for (const max_new_tokens of [4, 4, -1, 4]) {
    statuses.push(
      (
        await app.inject({
          method: "POST",
          url: "/v1/completion/regex",
          headers: { authorization: `Bearer ${key}` },
          payload: { prompt: "p", pattern: "a", max_new_tokens },
        })
      ).statusCode,
    );
  }
  // The 400 was served (and counted as a request), the 429 was refused before admission.
  assert.deepEqual(statuses, [200, 200, 400, 429]);
  assert.equal((await app.inject({ url: `/dashboard/api/usage?key=${id}` })).statusCode, 401);
  const hourly = await app.inject({ url: `/dashboard/api/usage?bucket=hour&key=${id}`, headers: { cookie } });
  assert.equal(hourly.statusCode, 200, hourly.body);
  const body = hourly.json() as { bucket: string; key: number; points: Array<Record<string, number | string>> };
  assert.equal(body.bucket, "hour");
  assert.equal(body.key, id);
  assert.equal(body.points.length, 48);
  const now = body.points.at(-1)!;
  assert.deepEqual(
    { requests: now.requests, rate_limited: now.rate_limited, client_errors: now.client_errors, server_errors: now.server_errors },
    { requests: 3, rate_limited: 1, client_errors: 1, server_errors: 0 },
  );
  const daily = (await app.inject({ url: "/dashboard/api/usage?bucket=day", headers: { cookie } })).json() as { points: unknown[] };
  assert.equal(daily.points.length, 90);
  const refused = await app.inject({ url: "/dashboard/api/usage?bucket=minute", headers: { cookie } });
  assert.equal(refused.statusCode, 400);
});

test("sign-out ends the session", async () => {
  const { cookie, csrf } = await signIn();
  const out = await app.inject({ method: "POST", url: "/dashboard/api/logout", headers: { cookie, "x-csrf-token": csrf }, payload: {} });
  assert.equal(out.statusCode, 200);
  assert.equal((await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).statusCode, 401);
});

test("dashboard validation errors use the same shape and list allowed fields", async () => {
  const res = await app.inject({ method: "POST", url: "/dashboard/api/login", payload: { token: "x", user: "y" } });
  assert.deepEqual(res.json(), { error: 'unknown field "user"; allowed fields: token', code: 400 });
  assert.equal((await app.inject({ method: "GET", url: "/dashboard/api/login" })).statusCode, 405);
});

test("key names: length in code points as the schema counts; refusals are 400 naming the field", async () => {
  const { cookie, csrf } = await signIn();
  const create = (name: string) =>
    app.inject({ method: "POST", url: "/dashboard/api/keys", headers: { cookie, "x-csrf-token": csrf }, payload: { name } });
  const emoji = "\u{1F600}";
  for (const count of [51, 100]) {
    const res = await create(emoji.repeat(count));
    assert.equal(res.statusCode, 200, `${count} emoji: ${res.body}`);
    assert.equal((res.json() as { name: string }).name, emoji.repeat(count));
  }
  const tooLong = await create(emoji.repeat(101));
  assert.deepEqual(tooLong.json(), { error: "name must be at most 100 characters", code: 400 });
  const refused: Array<[string, RegExp]> = [
    ["bell\u0007", /^name must not contain a control character: U\+0007/],
    ["half \ud83d pair", /^name must not contain a lone surrogate/],
    ["\u202Eevil", /^name must not contain a line separator or bidirectional formatting character/],
  ];
  for (const [name, message] of refused) {
    const res = await create(name);
    assert.equal(res.statusCode, 400, `${JSON.stringify(name)}: ${res.body}`);
    const body = res.json() as { error: string; code: number };
    assert.equal(body.code, 400);
    assert.match(body.error, message);
  }
  const listed = (await app.inject({ url: "/dashboard/api/keys", headers: { cookie } })).json() as { keys: Array<{ name: string }> };
  assert.equal(listed.keys.filter((k) => k.name.includes("\u0007") || k.name.includes("\u202E") || k.name.startsWith("half")).length, 0);
});

test("a key store locked by another process answers 503 with Retry-After, not 500", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "trellis-dash-lock-"));
  const fileStore = new KeyStore({ dataDir, flushIntervalMs: 0, busyTimeoutMs: 20 });
  const service = await createService({
    engine: createFakeEngine(),
    config: testConfig(),
    store: fileStore,
    adminTokenHash: sha256Hex("admin-secret"),
  });
  t.after(async () => {
    await service.close();
    fileStore.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const login = await service.inject({ method: "POST", url: "/dashboard/api/login", payload: { token: "admin-secret" } });
  const headers = { cookie: String(login.headers["set-cookie"]).split(";")[0]!, "x-csrf-token": (login.json() as { csrf: string }).csrf };
  const existing = fileStore.createKey("existing").id;
  const lock = await holdLock(fileStore.path);
  try {
    const created = await service.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "blocked" } });
    assert.equal(created.statusCode, 503, created.body);
    assert.equal(created.headers["retry-after"], "1");
    assert.match(
      (created.json() as { error: string }).error,
      /^the key store cannot be written right now: the database is locked by another process/,
    );
    const revoked = await service.inject({ method: "POST", url: `/dashboard/api/keys/${existing}/revoke`, headers, payload: {} });
    assert.equal(revoked.statusCode, 503, revoked.body);
    const quota = await service.inject({ method: "POST", url: `/dashboard/api/keys/${existing}/quota`, headers, payload: { quota: 5 } });
    assert.equal(quota.statusCode, 503, quota.body);
    const listed = await service.inject({ url: "/dashboard/api/keys", headers });
    assert.equal(listed.statusCode, 200, "reads still work while another process writes (WAL)");
  } finally {
    await lock.release();
  }
  const retried = await service.inject({ method: "POST", url: "/dashboard/api/keys", headers, payload: { name: "blocked" } });
  assert.equal(retried.statusCode, 200);
});
