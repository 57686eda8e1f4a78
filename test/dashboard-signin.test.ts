/**
 * Dashboard sign-in: the limiter counts wrong tokens only (the right one always signs in), and
 * the session cookie is Secure when the browser came over TLS, directly or through a proxy.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { SESSION_COOKIE } from "../src/dashboard/index.js";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { createFakeEngine, testConfig } from "./support/fake-engine.js";

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

test("session cookie: no Secure over plain HTTP; Secure when a TLS proxy says https", async () => {
  const cookieOf = (res: { headers: Record<string, unknown> }) => String(res.headers["set-cookie"]);
  const plain = await login(TOKEN, "10.0.1.1");
  assert.doesNotMatch(cookieOf(plain), /;\s*Secure/i);
  const proxiedOverTls: Array<Record<string, string>> = [
    { "x-forwarded-proto": "https" },
    { "x-forwarded-proto": "HTTPS, http" },
    { forwarded: "for=192.0.2.60;proto=https;by=203.0.113.43" },
  ];
  for (const headers of proxiedOverTls) {
    const res = await login(TOKEN, "10.0.1.1", headers);
    assert.equal(res.statusCode, 200);
    assert.match(cookieOf(res), new RegExp(`^${SESSION_COOKIE}=[^;]+;.*; Secure$`), JSON.stringify(headers));
  }
  const plainHttp: Array<Record<string, string>> = [
    { "x-forwarded-proto": "http" },
    { "x-forwarded-proto": "http, https" },
    { forwarded: "proto=http" },
  ];
  for (const headers of plainHttp) {
    assert.doesNotMatch(cookieOf(await login(TOKEN, "10.0.1.1", headers)), /Secure/, JSON.stringify(headers));
  }

  const proxied = { "x-forwarded-proto": "https" };
  const signedIn = await login(TOKEN, "10.0.1.1", proxied);
  const cookie = cookieOf(signedIn).split(";")[0]!;
  const csrf = (signedIn.json() as { csrf: string }).csrf;
  const out = await app.inject({
    method: "POST",
    url: "/dashboard/api/logout",
    headers: { cookie, "x-csrf-token": csrf, ...proxied },
    payload: {},
  });
  assert.equal(out.statusCode, 200);
  assert.match(cookieOf(out), /Max-Age=0; Secure$/, "the clearing cookie matches the one it replaces");
});

function selfSignedCertificate(dir: string): { key: Buffer; cert: Buffer } | null {
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-days",
        "1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
  } catch {
    return null;
  }
  return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
}

test("session cookie: Secure when the request itself came over TLS", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "trellis-tls-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const credentials = existsSync("/usr/bin/openssl") || existsSync("/bin/openssl") ? selfSignedCertificate(dir) : null;
  if (!credentials) {
    t.skip("openssl is not available to make a test certificate");
    return;
  }
  const service = await newService();
  await service.app.ready();
  // TLS terminated in this process and the decrypted sockets handed to the service's HTTP server:
  // the requests reach Fastify on encrypted sockets, as with an https server.
  const tlsServer: TlsServer = createTlsServer(credentials, (socket) => service.app.server.emit("connection", socket));
  await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
  t.after(async () => {
    await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
    await service.app.close();
    service.store.close();
  });
  const port = (tlsServer.address() as { port: number }).port;
  const body = JSON.stringify({ token: TOKEN });
  const setCookie = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/dashboard/api/login",
        rejectUnauthorized: false,
        agent: false,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        if (res.statusCode !== 200) reject(new Error(`sign-in over TLS answered ${res.statusCode}`));
        else resolve(String(res.headers["set-cookie"]));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
  assert.match(setCookie, new RegExp(`^${SESSION_COOKIE}=[^;]+;.*HttpOnly.*; Secure$`));
});
