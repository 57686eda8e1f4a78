// Connections that never finish: headers or a body trickled forever are closed at their deadline
// with a JSON 408; an unknown Expect is a JSON 417; shutdown closes a stalled upload instead of
// waiting for it; a 413 reaches a client still sending its body; /metrics carries the event-loop delay, compile and usage gauges.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { ClientLimitError } from "../src/generate/index.js";
import { createFakeEngine, testConfig } from "./support/fake-engine.js";

async function start(overrides: Parameters<typeof testConfig>[0] = {}) {
  const config = testConfig({ headersTimeoutMs: 400, bodyTimeoutMs: 600, keepAliveTimeoutMs: 300, ...overrides });
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine: createFakeEngine(), config, store });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const port = (app.server.address() as { port: number }).port;
  return { app, store, port };
}

/** Generous: a socket the server has not closed by then it never will. Liveness, not speed. */
const GIVE_UP_MS = 60_000;

/** Sends `data` raw and resolves with what came back once the server closed the socket. */
function raw(port: number, data: string): Promise<{ text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(data));
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`socket still open after ${GIVE_UP_MS} ms; got ${JSON.stringify(text)}`));
    }, GIVE_UP_MS);
    socket.on("data", (chunk) => (text += chunk.toString()));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text });
    });
  });
}

const jsonBody = (text: string): { error: string; code: number } =>
  JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as { error: string; code: number };

test("headers or a body trickled forever are cut off at their deadline with a JSON 408", async () => {
  const { app, store, port } = await start();
  try {
    // Node holds the configured deadlines and checks them every second at most (its default
    // connectionsCheckingInterval is 30 s).
    const server = app.server as typeof app.server & { connectionsCheckingInterval: number };
    assert.deepEqual([server.headersTimeout, server.requestTimeout], [400, 600]);
    assert.ok(server.connectionsCheckingInterval <= 1000, `deadlines checked every ${server.connectionsCheckingInterval} ms`);
    const [headers, body] = await Promise.all([
      raw(port, "POST /v1/completion/regex HTTP/1.1\r\nHost: x\r\n"),
      raw(port, 'POST /dashboard/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tok'),
    ]);
    for (const r of [headers, body]) {
      assert.match(r.text, /^HTTP\/1\.1 408 /);
      const e = jsonBody(r.text);
      assert.equal(e.code, 408);
      // Node's own deadline ended it (ERR_HTTP_REQUEST_TIMEOUT), not the client giving up.
      assert.equal(e.error, "the request was not received in time (headers within 400 ms, the whole request within 600 ms)");
    }
  } finally {
    await app.close();
    store.close();
  }
});

test("an Expect the server does not support is a JSON 417", async () => {
  const { app, store, port } = await start();
  try {
    const r = await raw(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n");
    assert.match(r.text, /^HTTP\/1\.1 417 /);
    assert.deepEqual(jsonBody(r.text), { error: "Expect: 200-ok is not supported", code: 417 });
  } finally {
    await app.close();
    store.close();
  }
});

test("shutdown does not wait for a stalled upload: its socket is closed after the grace period", async () => {
  // HTTP deadlines of 10 minutes, far past the client's patience (GIVE_UP_MS): only the shutdown
  // can end the stalled request in time, and a deadline would have answered 408.
  const { app, store, port } = await start({ headersTimeoutMs: 600_000, bodyTimeoutMs: 600_000 });
  const received = once(app.server, "request");
  const stalled = raw(
    port,
    'POST /dashboard/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tok',
  );
  await received; // its headers are in; the rest of its body never comes
  await app.trellis.shutdown();
  store.close();
  const r = await stalled;
  assert.equal(r.text, "", "the stalled socket was closed without an answer: by the shutdown, not by a deadline");
});

test("/metrics has the event-loop delay, usage buffer and compile gauges", async () => {
  const { app, store } = await start();
  try {
    const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
    for (const name of [
      'trellis_event_loop_delay_seconds{quantile="0.99"}',
      'trellis_event_loop_delay_seconds{quantile="1"}',
      "trellis_usage_pending_requests",
      "trellis_usage_flush_failures_total",
      "trellis_usage_last_flush_success_timestamp_seconds",
    ]) {
      assert.ok(text.includes(name), `${name} missing from /metrics`);
    }
  } finally {
    await app.close();
    store.close();
  }
});

test("a constraint is prepared before the generation slot, per API key; a key's full compile queue is a 429", async () => {
  const engine = createFakeEngine();
  const config = testConfig();
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine, config, store });
  try {
    const headers = { authorization: `Bearer ${config.apiKeys[0]}`, "content-type": "application/json" };
    const ok = await app.inject({ method: "POST", url: "/v1/completion/regex", headers, payload: { prompt: "hi", pattern: "[a-z]+" } });
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(engine.prepared, [{ spec: { kind: "regex", pattern: "[a-z]+" }, client: "env:0" }]);
    engine.prepare = async () => {
      throw new ClientLimitError("too many pattern compiles of this API key are waiting", 2);
    };
    const before = engine.calls.length;
    const refused = await app.inject({
      method: "POST",
      url: "/v1/completion/regex",
      headers,
      payload: { prompt: "hi", pattern: "[a-z]+x" },
    });
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers["retry-after"], "2");
    assert.deepEqual(refused.json(), { error: "too many pattern compiles of this API key are waiting", code: 429 });
    assert.equal(engine.calls.length, before, "the engine generated although the constraint was refused");
  } finally {
    await app.close();
    store.close();
  }
});

test("a 413 reaches a client still sending its body (Python's urllib: no broken pipe), on both APIs", async () => {
  const { app, store, port } = await start({ bodyTimeoutMs: 20_000 });
  try {
    const script = `
import json, sys, urllib.request
out = []
for path in ["/v1/completion/regex", "/v1/chat/completions"]:
    body = json.dumps({"prompt": "x" * 20_000_000}).encode()
    req = urllib.request.Request("http://127.0.0.1:${port}" + path, data=body, headers={"Authorization": "Bearer test-key-123", "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req)
        out.append([path, 200, ""])
    except urllib.error.HTTPError as e:
        out.append([path, e.code, e.read().decode()])
    except Exception as e:
        out.append([path, 0, repr(e)])
print(json.dumps(out))
`;
    // The server runs in this process: the client must not block it (spawn, not spawnSync).
    const run = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const child = spawn("/usr/bin/python3", ["-c", script]);
        let stdout = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.on("close", () => resolve(stdout));
        child.on("error", reject);
      });
    const results = JSON.parse(await run()) as [string, number, string][];
    for (const [path, status, body] of results) {
      assert.equal(status, 413, `${path}: ${body}`);
      assert.match(body, /larger than the limit of \d+ bytes/, path);
    }
  } finally {
    await app.close();
    store.close();
  }
});
