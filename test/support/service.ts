/**
 * What the service tests share: a server on a real socket over the fake engine (`listening`), one
 * JSON call to it (`callJson`), a server over a real engine and model (`realEngineApp`), the
 * CLI run in process with its output collected (`runCli`), and, on an app through inject(), a
 * dashboard sign-in (`signIn`), a regex completion (`completeInjected`) and a revocation through
 * the dashboard (`revokeInDashboard`).
 */
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { main, type CliIo } from "../../src/cli.js";
import type { Config } from "../../src/config.js";
import { createEngine } from "../../src/engine.js";
import type { Engine } from "../../src/generate/index.js";
import { createServer } from "../../src/server/index.js";
import { KeyStore } from "../../src/store/index.js";
import { createFakeEngine, testConfig, type FakeEngine } from "./fake-engine.js";

export interface ListeningServer {
  app: FastifyInstance;
  store: KeyStore;
  engine: FakeEngine;
  /** http://127.0.0.1:<port> */
  base: string;
  close(): Promise<void>;
}

/**
 * The service on a free loopback port over a fake engine (`wrap` may put another engine around
 * it), no rate limit, room for many concurrent requests. `store`: one the caller keeps and closes.
 */
export async function listening(
  overrides: Partial<Config> = {},
  options: { wrap?: (engine: FakeEngine) => Engine; store?: KeyStore } = {},
): Promise<ListeningServer> {
  const engine = createFakeEngine();
  const store = options.store ?? new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const config = testConfig({ concurrency: 64, queueSize: 256, rateLimit: 0, ...overrides });
  const app = await createServer({ engine: options.wrap ? options.wrap(engine) : engine, config, store });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    app,
    store,
    engine,
    base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    async close() {
      await app.close();
      if (!options.store) store.close();
    },
  };
}

export interface JsonAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body; {} when it is not JSON (an event stream). */
  body: Record<string, unknown>;
  text: string;
}

/** GET `path` (no body) or POST it as JSON (`body`, or `rawBody` as it is), with `key` as bearer. */
export async function callJson(base: string, key: string, path: string, body?: unknown, rawBody?: string): Promise<JsonAnswer> {
  const response = await fetch(base + path, {
    method: body === undefined && rawBody === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: an event stream
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** The service (not listening) over the real engine on `modelPath`: one thread, 8 sequences. */
export async function realEngineApp(
  modelPath: string,
  overrides: Partial<Config> = {},
): Promise<{ app: FastifyInstance; engine: Engine; store: KeyStore; close(): Promise<void> }> {
  // The prefix cache as the overrides set it (on by default, as the service runs).
  const prefixCache = { tokens: overrides.prefixCacheTokens ?? -1, entries: overrides.prefixCacheEntries ?? 32 };
  const engine = await createEngine({ modelPath, threads: 1, maxSequences: 8, prefixCache });
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine, config: testConfig(overrides), store });
  await app.ready();
  return {
    app,
    engine,
    store,
    async close() {
      await app.close();
      await engine.close();
      store.close();
    },
  };
}

/** `trellis <argv>` in this process with `env`; what it printed, line by line, and its exit code. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, extra: Partial<CliIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line), env, ...extra });
  return { code, out, err };
}

export interface DashboardSession {
  cookie: string;
  csrf: string;
}

/** Signs in to the app's dashboard with the admin token (the tests' "admin-secret"). */
export async function signIn(app: FastifyInstance, token = "admin-secret"): Promise<DashboardSession> {
  const res = await app.inject({ method: "POST", url: "/dashboard/api/login", payload: { token } });
  assert.equal(res.statusCode, 200, res.body);
  return { cookie: String(res.headers["set-cookie"]).split(";")[0]!, csrf: (res.json() as { csrf: string }).csrf };
}

/** A small regex completion with the key (200 on the fake engine when the key is good). */
export function completeInjected(app: FastifyInstance, key: string, prompt = "p") {
  return app.inject({
    method: "POST",
    url: "/v1/completion/regex",
    headers: { authorization: `Bearer ${key}` },
    payload: { prompt, pattern: "[a-z]+", max_new_tokens: 4 },
  });
}

/** Revokes key `id` through the dashboard of `app`, with the session's CSRF token. */
export async function revokeInDashboard(app: FastifyInstance, session: DashboardSession, id: number): Promise<void> {
  const revoked = await app.inject({
    method: "POST",
    url: `/dashboard/api/keys/${id}/revoke`,
    headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
    payload: {},
  });
  assert.equal(revoked.statusCode, 200, revoked.body);
}
