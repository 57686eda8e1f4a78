/**
 * The dashboard in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
 * sign in, create a key, copy it, use it against the API, revoke it, see usage; create a key with
 * a token quota, see what it has left, change the quota with its button.
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import type { FastifyInstance } from "fastify";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { auth, createFakeEngine, TEST_KEY, testConfig } from "./support/fake-engine.js";

const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOT = process.env.TRELLIS_DASHBOARD_SCREENSHOT ?? "/tmp/trellis-dashboard.png";

let app: FastifyInstance;
let store: KeyStore;
let browser: Browser;
let base = "";

before(async () => {
  store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  app = await createService({ engine: createFakeEngine(), config: testConfig(), store, adminTokenHash: sha256Hex("admin-secret") });
  await app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  await app?.close();
  store?.close();
});

test("sign in, create + copy a key, use it, revoke it, usage shows", {
  skip: !existsSync(CHROMIUM) && "no /usr/bin/chromium",
}, async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  const page = await context.newPage();
  page.on("dialog", (dialog) => void dialog.accept());
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("request", (r) => assert.ok(r.url().startsWith(base), `only local requests, got ${r.url()}`));

  await page.goto(`${base}/dashboard`);
  await page.locator("#admin-token").fill("wrong");
  await page.locator("#sign-in-form button").click();
  await page.locator("#sign-in-error").waitFor({ state: "visible" });
  assert.match(await page.locator("#sign-in-error").innerText(), /wrong admin token/);

  await page.locator("#admin-token").fill("admin-secret");
  await page.locator("#sign-in-form button").click();
  await page.locator("#keys-panel").waitFor({ state: "visible" });
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === "trellis_session")!;
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, "Strict");

  await page.locator("#key-name").fill("browser-test");
  await page.locator("#create-form button").click();
  await page.locator("#new-key").waitFor({ state: "visible" });
  const key = (await page.locator("#new-key-value").innerText()).trim();
  assert.match(key, /^trl_[A-Za-z0-9_-]{43}$/);

  await page.locator("#copy-key").click();
  await page.locator("#copy-status").filter({ hasText: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);

  const use = await fetch(`${base}/v1/completion/regex`, {
    method: "POST",
    headers: auth(key),
    body: JSON.stringify({ prompt: "hi", pattern: "abc", max_new_tokens: 3 }),
  });
  assert.equal(use.status, 200);

  // Usage shows after a refresh of the list (reload keeps the session cookie).
  await page.reload();
  const row = page.locator("#keys-body tr", { hasText: "browser-test" });
  await row.waitFor();
  const cells = await row.locator("td").allInnerTexts();
  assert.equal(cells[3], "1", `requests cell: ${cells.join(" | ")}`);
  assert.equal(cells[4], "3", `tokens cell: ${cells.join(" | ")}`);
  assert.notEqual(cells[5], "never");
  await page.screenshot({ path: SCREENSHOT, fullPage: true });

  await row.locator("button", { hasText: "Revoke" }).click();
  await row.locator(".badge.revoked").waitFor();
  const after = await fetch(`${base}/v1/completion/regex`, {
    method: "POST",
    headers: auth(key),
    body: JSON.stringify({ prompt: "hi", pattern: "abc" }),
  });
  assert.equal(after.status, 401);

  await page.locator("#sign-out").click();
  await page.locator("#sign-in").waitFor({ state: "visible" });
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("a key with a token quota: set at creation, shown with what is left, changed with its Quota button", {
  skip: !existsSync(CHROMIUM) && "no /usr/bin/chromium",
}, async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  const page = await context.newPage();
  const answers = ["250", ""];
  const prompts: string[] = [];
  page.on("dialog", (dialog) => {
    prompts.push(dialog.message());
    void dialog.accept(answers.shift());
  });
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  await page.goto(`${base}/dashboard`);
  await page.locator("#admin-token").fill("admin-secret");
  await page.locator("#sign-in-form button").click();
  await page.locator("#keys-panel").waitFor({ state: "visible" });
  await page.locator("#key-name").fill("metered");
  await page.locator("#key-quota").fill("100");
  await page.locator("#create-form button").click();
  await page.locator("#new-key").waitFor({ state: "visible" });
  const key = (await page.locator("#new-key-value").innerText()).trim();

  const use = await fetch(`${base}/v1/completion/cfg`, {
    method: "POST",
    headers: auth(key),
    body: JSON.stringify({ prompt: "hi", grammar: "g", max_new_tokens: 30 }),
  });
  assert.equal(use.status, 200);
  assert.equal(use.headers.get("x-quota-remaining"), "70");

  await page.reload();
  const row = page.locator("#keys-body tr", { hasText: "metered" });
  await row.waitFor();
  const quotaCell = row.locator("td").nth(6);
  assert.equal(await quotaCell.innerText(), "100 (70 left)");

  await row.locator("button", { hasText: "Quota" }).click();
  await quotaCell.filter({ hasText: "(220 left)" }).waitFor();
  assert.match(prompts[0]!, /Token quota of "metered".*it has used 30/);
  await row.locator("button", { hasText: "Quota" }).click();
  await quotaCell.filter({ hasText: "unlimited" }).waitFor();
  assert.equal(store.listKeys().find((k) => k.name === "metered")!.quota, null);
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("the API reference: every endpoint from /openapi.json, authorize with a key, try a request; nothing loaded from outside", {
  skip: !existsSync(CHROMIUM) && "no /usr/bin/chromium",
}, async () => {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const outside: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith("data:")) outside.push(r.url());
  });
  await page.goto(`${base}/docs`);
  for (const path of ["/v1/completion/regex", "/v1/completion/typed", "/v1/chat/completions", "/v1/models"]) {
    await page.locator(`.opblock-summary-path[data-path="${path}"]`).first().waitFor({ state: "visible" });
  }
  // Authorize with an API key, then try GET /v1/models from the page.
  await page.locator("button.authorize").first().click();
  await page.locator(".auth-container input").first().fill(TEST_KEY);
  await page.locator(".auth-btn-wrapper button.authorize").first().click();
  await page.locator("button.btn-done").first().click();
  await page.locator('.opblock-summary-path[data-path="/v1/models"]').first().click();
  await page.locator(".try-out__btn").first().click();
  await page.locator("button.execute").first().click();
  const status = page.locator(".live-responses-table tr.response .response-col_status").first();
  await status.waitFor({ state: "visible" });
  assert.equal((await status.innerText()).trim(), "200");
  assert.match(await page.locator(".live-responses-table tr.response .response-col_description").first().innerText(), /"object": "list"/);
  assert.deepEqual(outside, []);
  await context.close();
});
