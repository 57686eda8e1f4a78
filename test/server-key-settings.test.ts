// Key expiry, per-key rate limits and last use through the real HTTP server (a listening socket,
// the fake engine): an expired key gets 401 "API key expired on <date>" in the Thiggle and the
// OpenAI shapes, before its body is read, and opens again when its expiry is cleared; a key's own
// rate limit is enforced and reported in the X-RateLimit-* headers, also where the service sets
// none, while other keys keep the service's limit; last use is noted at authentication and
// written by the usage flush (a request costs no write).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { TEST_KEY } from "./support/fake-engine.js";
import { callJson, listening, type ListeningServer } from "./support/service.js";

type Server = ListeningServer;
const start = listening;
const call = (server: Server, key: string, path: string, body?: unknown, rawBody?: string) =>
  callJson(server.base, key, path, body, rawBody);

const cfg = { prompt: "p", grammar: "g", max_new_tokens: 3 };

describe("expiry", () => {
  let server: Server;
  before(async () => {
    server = await start();
  });
  after(() => server.close());

  test("an expired key gets 401 naming its date in both APIs' shapes, before its body is read", async () => {
    const { id, key } = server.store.createKey("expiring", { expiresAt: "2099-01-01" });
    assert.equal((await call(server, key, "/v1/completion/cfg", cfg)).status, 200);

    server.store.setExpiry(id, "2020-02-03T04:05:06Z");
    const thiggle = await call(server, key, "/v1/completion/cfg", cfg);
    assert.equal(thiggle.status, 401, thiggle.text);
    assert.deepEqual(thiggle.body, { error: "API key expired on 2020-02-03T04:05:06.000Z", code: 401 });
    assert.match(thiggle.headers.get("www-authenticate") ?? "", /invalid_token/);
    // The body is never read: a malformed one still gets the key's 401.
    assert.equal((await call(server, key, "/v1/completion/cfg", undefined, "{not json")).status, 401);

    const openai = await call(server, key, "/v1/completions", { model: "trellis", prompt: "p", max_tokens: 1 });
    assert.equal(openai.status, 401, openai.text);
    assert.deepEqual(openai.body, {
      error: {
        message: "API key expired on 2020-02-03T04:05:06.000Z",
        type: "authentication_error",
        param: null,
        code: "invalid_api_key",
      },
    });
    assert.equal((await call(server, key, "/v1/models")).status, 401);

    server.store.setExpiry(id, null);
    assert.equal((await call(server, key, "/v1/completion/cfg", cfg)).status, 200, "cleared: open again");
    server.store.revokeKey(id);
    server.store.setExpiry(id, "2020-01-01");
    const revoked = await call(server, key, "/v1/completion/cfg", cfg);
    assert.deepEqual(revoked.body, { error: "invalid or revoked API key", code: 401 });
  });
});

describe("rate limits", () => {
  test("a key's own limit replaces the service's, in its own bucket and headers; others keep the service's", async () => {
    const server = await start({ rateLimit: 5 });
    try {
      const own = server.store.createKey("own", { rateLimit: 2 });
      const plain = server.store.createKey("plain");
      const first = await call(server, own.key, "/v1/completion/cfg", cfg);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-ratelimit-limit"), "2");
      assert.equal(first.headers.get("x-ratelimit-remaining"), "1");
      assert.equal((await call(server, own.key, "/v1/completion/cfg", cfg)).headers.get("x-ratelimit-remaining"), "0");
      const refused = await call(server, own.key, "/v1/completion/cfg", cfg);
      assert.equal(refused.status, 429, refused.text);
      assert.deepEqual(refused.body, { error: "rate limit of 2 requests per minute exceeded for this API key", code: 429 });
      assert.equal(refused.headers.get("x-ratelimit-limit"), "2");
      assert.ok(Number(refused.headers.get("retry-after")) >= 1);
      const openai = await call(server, own.key, "/v1/completions", { model: "trellis", prompt: "p", max_tokens: 1 });
      assert.equal(openai.status, 429);
      assert.equal((openai.body.error as { type: string }).type, "rate_limit_error");

      for (let i = 0; i < 5; i++) {
        const answer = await call(server, plain.key, "/v1/completion/cfg", cfg);
        assert.equal(answer.status, 200, `plain request ${i}`);
        assert.equal(answer.headers.get("x-ratelimit-limit"), "5");
        assert.equal(answer.headers.get("x-ratelimit-remaining"), String(4 - i));
      }
      assert.equal((await call(server, plain.key, "/v1/completion/cfg", cfg)).status, 429);
      const fixed = await call(server, TEST_KEY, "/v1/completion/cfg", cfg);
      assert.equal(fixed.headers.get("x-ratelimit-limit"), "5", "TRELLIS_API_KEYS keys keep the service's limit");

      // Raised: the bucket holds and refills at the new limit from the next request.
      server.store.setRateLimit(own.id, 100);
      const raised = await call(server, own.key, "/v1/completion/cfg", cfg);
      assert.equal(raised.headers.get("x-ratelimit-limit"), "100");
      // Cleared: the service's limit again.
      server.store.setRateLimit(own.id, null);
      assert.equal((await call(server, own.key, "/v1/completion/cfg", cfg)).headers.get("x-ratelimit-limit"), "5");
    } finally {
      await server.close();
    }
  });

  test("with no service limit, only keys with their own limit are limited", async () => {
    const server = await start({ rateLimit: 0 });
    try {
      const own = server.store.createKey("own", { rateLimit: 1 });
      const plain = server.store.createKey("plain");
      const first = await call(server, own.key, "/v1/completion/cfg", cfg);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get("x-ratelimit-limit"), "1");
      assert.equal((await call(server, own.key, "/v1/completion/cfg", cfg)).status, 429);
      for (let i = 0; i < 3; i++) {
        const answer = await call(server, plain.key, "/v1/completion/cfg", cfg);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get("x-ratelimit-limit"), null);
      }
    } finally {
      await server.close();
    }
  });
});

describe("last use", () => {
  test("noted when the key authenticates a request, listed at once, written by the flush", async () => {
    const server = await start({ rateLimit: 1 });
    try {
      const { id, key } = server.store.createKey("k");
      const expired = server.store.createKey("old", { expiresAt: "2001-01-01" });
      assert.equal(server.store.listKeys()[0]!.lastUsedAt, null);
      const before = new Date().toISOString();
      assert.equal((await call(server, key, "/v1/completion/cfg", cfg)).status, 200);
      const first = server.store.listKeys()[0]!.lastUsedAt;
      assert.ok(first !== null && first >= before, String(first));
      // A request refused by the rate limit was still authenticated by the key.
      await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal((await call(server, key, "/v1/completion/cfg", cfg)).status, 429);
      const second = server.store.listKeys()[0]!.lastUsedAt!;
      assert.ok(second > first, `${second} > ${first}`);
      assert.equal((await call(server, expired.key, "/v1/completion/cfg", cfg)).status, 401);
      assert.equal(server.store.listKeys()[1]!.lastUsedAt, null, "an expired key's refusal is no use");

      assert.equal(server.store.flush(), true);
      assert.equal(server.store.stats().pendingKeys, 0);
      const listed = server.store.listKeys().find((k) => k.id === id)!;
      assert.equal(listed.lastUsedAt, second);
      assert.equal(listed.requests, 1, "the refused request is no usage");
    } finally {
      await server.close();
    }
  });
});
