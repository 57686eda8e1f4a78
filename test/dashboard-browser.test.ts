/**
 * The dashboard in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
 * sign in, create a key, copy it, use it against the API, revoke it, see usage; create a key with
 * a token quota, see what it has left, change the quota with its button; create a key with an
 * expiry, a rate limit and a quota. Usage charts: requests, tokens and refusals (429, other 4xx,
 * 5xx) per hour and per day, of one key or all, with their tables, keyboard and tooltips, redrawn
 * after a playground run. The playground: a chat answer streamed token by token with each
 * token's probability, stopped midway; categorization as a bar per category; errors shown at
 * their position in the pattern, grammar, schema or category list; "copy as curl / SDK"
 * (Python and TypeScript `openai`, TypeScript fetch) reproducing the request that ran (and run
 * here, the TypeScript type-checked). Every mode once more against the real engine
 * (stories260K.gguf), the usage chart counting those requests. Accessibility without network:
 * names, ids, landmarks, headings, contrast (light and dark, the charts' bars included), visible
 * keyboard focus, reduced motion, and no horizontal scroll at a phone's 375 px. Screenshots of
 * every view at desktop and phone sizes go to .cache/screenshots/ (ignored by git) for a person
 * to look at; scripts/dashboard-screenshots.ts writes the committed set in docs/screenshots/.
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContextOptions, type Locator, type Page } from "playwright-core";
import type { FastifyInstance } from "fastify";
import { createEngine } from "../src/engine.js";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { auth, TEST_KEY, testConfig } from "./support/fake-engine.js";
import { REPO_ROOT, STORIES_260K } from "./support/paths.js";
import { createPlaygroundEngine, PLAYGROUND_MODEL, type PlaygroundEngine } from "./support/playground-engine.js";

const CHROMIUM = "/usr/bin/chromium";
/** Screenshots of each view for a person to look at after the run (.cache/ is ignored by git). */
const SCREENSHOTS = process.env.TRELLIS_DASHBOARD_SCREENSHOTS ?? join(REPO_ROOT, ".cache", "screenshots");
mkdirSync(SCREENSHOTS, { recursive: true });

let app: FastifyInstance;
let engine: PlaygroundEngine;
let store: KeyStore;
let browser: Browser;
let base = "";

before(async () => {
  store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  engine = createPlaygroundEngine();
  app = await createService({ engine, config: testConfig(), store, adminTokenHash: sha256Hex("admin-secret") });
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
  await page.screenshot({ path: join(SCREENSHOTS, "keys-after-use-1100.png"), fullPage: true });

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
    body: JSON.stringify({ prompt: "hi", grammar: 'start: "ok"', max_new_tokens: 30 }),
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

const HAS_CHROMIUM = existsSync(CHROMIUM);
const execFileAsync = promisify(execFile);
const noChromium = !HAS_CHROMIUM && "no /usr/bin/chromium";

/** A new browser context signed in to the dashboard at `at`; collects page errors and requests leaving the service. */
async function signedIn(options: BrowserContextOptions = {}, at: string = base) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 }, locale: "en-US", timezoneId: "UTC", ...options });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  const outside: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("request", (r) => {
    if (!r.url().startsWith(at)) outside.push(r.url());
  });
  page.on("dialog", (dialog) => void dialog.accept());
  await page.goto(`${at}/dashboard`);
  await page.locator("#admin-token").fill("admin-secret");
  await page.locator("#sign-in-form button").click();
  await page.locator("#playground").waitFor({ state: "visible" });
  return { context, page, pageErrors, outside };
}

/** Creates a key from the dashboard's form; answers the key, shown once. */
async function createKeyInPage(page: Page, name: string, settings: { rateLimit?: string } = {}): Promise<string> {
  await page.locator("#key-name").fill(name);
  await page.locator("#key-rate-limit").fill(settings.rateLimit ?? "");
  await page.locator("#create-form button[type=submit]").click();
  await page.locator("#new-key-name", { hasText: name }).waitFor();
  await page.locator("#keys-body tr", { hasText: name }).waitFor();
  return (await page.locator("#new-key-value").innerText()).trim();
}

const TOTALS = ["requests", "tokens", "rate-limited", "client-errors", "server-errors"] as const;
type Totals = Record<(typeof TOTALS)[number], number>;

/** The usage panel's totals, as numbers. */
function usageTotals(page: Page): Promise<Totals> {
  return page.evaluate(
    (ids) =>
      Object.fromEntries(ids.map((id) => [id, Number(document.getElementById(`usage-total-${id}`)!.textContent!.replace(/\D/g, ""))])),
    [...TOTALS],
  ) as Promise<Totals>;
}

/** What the store says the charts should total: its usage history summed, of one key or all. */
async function storeTotals(from: KeyStore, bucket: "hour" | "day", keyId?: number): Promise<Totals> {
  const points = from.usageHistory(bucket, keyId === undefined ? {} : { keyId });
  const sum = (field: "requests" | "tokens" | "rateLimited" | "clientErrors" | "serverErrors") => points.reduce((t, p) => t + p[field], 0);
  return {
    requests: sum("requests"),
    tokens: sum("tokens"),
    "rate-limited": sum("rateLimited"),
    "client-errors": sum("clientErrors"),
    "server-errors": sum("serverErrors"),
  };
}

/** Waits until the usage panel shows `expected` (it loads after sign-in, a control's change, Refresh or a playground run). */
async function waitForTotals(page: Page, expected: Totals): Promise<void> {
  try {
    await page.waitForFunction(
      ({ ids, want }) =>
        ids.every((id) => Number(document.getElementById(`usage-total-${id}`)!.textContent!.replace(/\D/g, "")) === want[id]),
      { ids: [...TOTALS], want: expected },
      { timeout: 10_000 },
    );
  } catch {
    assert.deepEqual(await usageTotals(page), expected, "usage totals");
  }
}

/** Waits for the usage charts' next load after `action` (the panel's data-version goes up). */
async function usageLoad(page: Page, action: () => Promise<unknown>): Promise<void> {
  const before = Number((await page.locator("#usage").getAttribute("data-version")) ?? "0");
  await action();
  await page.waitForFunction((v) => Number(document.getElementById("usage")!.dataset.version ?? "0") > v, before);
}

/** Each chart as the page shows it: title, image role and summary, points, tab stops, bars by series, table. */
function chartsShown(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll("#usage-charts .chart")].map((figure) => {
      const svg = figure.querySelector("svg")!;
      const points = [...figure.querySelectorAll<HTMLElement>(".chart-point")];
      return {
        title: figure.querySelector("h3")!.textContent,
        labelledBy: document.getElementById(figure.getAttribute("aria-labelledby")!)?.textContent,
        role: svg.getAttribute("role"),
        summary: svg.getAttribute("aria-label") ?? "",
        points: points.length,
        tabStops: points.filter((p) => p.tabIndex === 0).map((p) => Number(p.dataset.index)),
        bars: [...figure.querySelectorAll<SVGElement>("rect.bar")].map((r) => r.dataset.series),
        header: [...figure.querySelectorAll("thead th")].map((c) => c.textContent),
        rows: figure.querySelectorAll("tbody tr").length,
        newest: [...figure.querySelectorAll("tbody tr:first-child > *")].map((c) => c.textContent),
      };
    }),
  );
}

/** A bucket's start as the charts' tables write it (en-US, UTC): "Nov 26, 07:00" or "Thu, Nov 26". */
function bucketCell(start: string, bucket: "hour" | "day"): string {
  const date = new Date(start);
  if (bucket === "day") return date.toLocaleDateString("en-US", { timeZone: "UTC", weekday: "short", month: "short", day: "numeric" });
  return `${date.toLocaleDateString("en-US", { timeZone: "UTC", month: "short", day: "numeric" })}, ${start.slice(11, 16)}`;
}

interface PlaygroundInput {
  kind: "regex" | "grammar" | "json" | "categorize" | "chat";
  prompt?: string;
  constraint?: string;
  maxTokens?: string;
  seed?: string;
}

/** Fills the playground's form (the key: TEST_KEY unless one is there) and presses Run. */
async function runInPlayground(page: Page, input: PlaygroundInput): Promise<void> {
  if ((await page.locator("#pg-key").inputValue()) === "") await page.locator("#pg-key").fill(TEST_KEY);
  await page.locator(`input[name="kind"][value="${input.kind}"]`).check();
  if (input.prompt !== undefined) await page.locator("#pg-prompt").fill(input.prompt);
  if (input.constraint !== undefined) await page.locator("#pg-constraint").fill(input.constraint);
  if (input.maxTokens !== undefined) await page.locator("#pg-max-tokens").fill(input.maxTokens);
  if (input.seed !== undefined) await page.locator("#pg-seed").fill(input.seed);
  await page.locator("#pg-run").click();
}

test("playground: a chat answer streams in token by token, each token with its probability; Stop ends a stream", {
  skip: noChromium,
}, async () => {
  const { context, page, pageErrors, outside } = await signedIn();
  engine.tokenDelayMs = 60;
  try {
    await runInPlayground(page, { kind: "chat", prompt: "Tell me a story.", maxTokens: "32", seed: "3" });
    // The first token shows while the rest are still coming.
    await page.locator("#pg-output .tok").first().waitFor();
    assert.equal(await page.locator("#pg-status").innerText(), "Streaming…");
    assert.ok((await page.locator("#pg-output .tok").count()) < 13, "tokens arrive one after another");
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    assert.match(await page.locator("#pg-status").innerText(), /^Done: 13 tokens, finish reason stop\.$/);
    assert.match(await page.locator("#pg-stats").innerText(), /13 tokens · [\d.]+ tokens\/s · first token after \d+ ms/);
    assert.equal(await page.locator("#pg-output").innerText(), "Once upon a time, a small robot found a red kite.");

    const tokens = await page.locator("#pg-output .tok").evaluateAll((spans) =>
      spans.map((span) => ({
        text: span.textContent,
        title: span.getAttribute("title"),
        tip: span.getAttribute("data-tip"),
        note: document.getElementById(span.getAttribute("aria-describedby") ?? "")?.textContent ?? null,
        tabIndex: (span as HTMLElement).tabIndex,
        background: getComputedStyle(span).backgroundColor,
      })),
    );
    assert.ok(tokens.length >= 2);
    assert.deepEqual(
      tokens.map((t) => t.text),
      ["Once", " upon", " a", " time", ",", " a", " small", " robot", " found", " a", " red", " kite", "."],
    );
    // The fake's first token has logprob -0.05: 95.1 %; its alternatives are listed after it.
    assert.equal(tokens[0]!.tip, "95.1%");
    assert.match(tokens[0]!.title!, /^Token 1, "Once": probability 95\.1%; next most likely " the" 25\.9%, " one" 11\.6%$/);
    for (const t of tokens) {
      assert.match(t.tip!, /^\d+(\.\d+)?%$/);
      assert.equal(t.note, t.title, "the probability is also the token's accessible description");
    }
    // Token boundaries: neighbours differ in shade; one tab stop for the whole answer.
    assert.notEqual(tokens[0]!.background, tokens[1]!.background);
    assert.equal(tokens[0]!.background, tokens[2]!.background);
    assert.deepEqual(
      tokens.map((t) => t.tabIndex),
      tokens.map((_, i) => (i === 0 ? 0 : -1)),
    );
    await page.locator("#pg-output .tok").first().focus();
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowRight");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), " a");
    await page.keyboard.press("End");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), ".");

    // The request asked for a stream with per-token probabilities, for the served model.
    const chat = engine.calls.filter((c) => c.kind === "chat:text").at(-1)!.request as { logprobs?: number; seed?: number };
    assert.equal(chat.logprobs, 3);
    assert.equal(chat.seed, 3);

    // Stop: a slow stream is cancelled midway, at the service too.
    const before = engine.signals.length;
    await runInPlayground(page, { kind: "chat", prompt: "Tell it slowly." });
    await page.locator("#pg-output .tok").first().waitFor();
    assert.equal(await page.locator("#pg-stop").isEnabled(), true);
    await page.locator("#pg-stop").click();
    await page.locator("#pg-status", { hasText: "Stopped" }).waitFor();
    assert.ok((await page.locator("#pg-output .tok").count()) < 13);
    assert.equal(await page.locator("#pg-run").isEnabled(), true);
    assert.equal(await page.locator("#pg-stop").isEnabled(), false);
    const signal = engine.signals.slice(before).at(-1)!;
    for (let i = 0; i < 50 && !signal.aborted; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(signal.aborted, true, "the generation was cancelled");
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(outside, []);
  } finally {
    engine.tokenDelayMs = 15;
    await context.close();
  }
});

test("playground: a bad regex, grammar or schema is shown at its position in the editor", { skip: noChromium }, async () => {
  const { context, page, pageErrors } = await signedIn();
  const editor = page.locator("#pg-constraint");
  const marked = async () => ({
    message: await page.locator("#pg-constraint-message").innerText(),
    mark: await page.locator("#pg-constraint-marker mark").innerText(),
    invalid: await editor.getAttribute("aria-invalid"),
    describedBy: await editor.getAttribute("aria-describedby"),
    focused: await editor.evaluate((e) => e === document.activeElement),
    selection: await editor.evaluate((e) => {
      const t = e as HTMLTextAreaElement;
      return t.value.slice(t.selectionStart, t.selectionEnd);
    }),
    range: await editor.evaluate((e) => [(e as HTMLTextAreaElement).selectionStart, (e as HTMLTextAreaElement).selectionEnd]),
  });

  // Regex: "at position N" (the service's 400), N counted in code points.
  await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "ab(cd" });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  let shown = await marked();
  assert.match(shown.message, /^pattern: missing \), unterminated subpattern at position 2/);
  assert.match(shown.message, /column 3 is selected in the editor/);
  assert.deepEqual(shown.range, [2, 3]);
  assert.equal(shown.selection, "(");
  assert.equal(shown.mark, "(");
  assert.equal(shown.invalid, "true");
  assert.equal(shown.focused, true);
  assert.match(shown.describedBy!, /\bpg-constraint-message\b/);
  assert.match(await page.locator("#pg-status").innerText(), /HTTP 400/);
  // Editing the pattern clears the mark; a good pattern then runs.
  await editor.fill("(19|20)[0-9]{2}");
  assert.equal(await page.locator("#pg-constraint-error").isVisible(), false);
  assert.equal(await editor.getAttribute("aria-invalid"), null);
  await page.locator("#pg-run").click();
  await page.locator("#pg-status", { hasText: "Done" }).waitFor();
  // The fake engine answers a pattern with its letters and digits.
  assert.equal(await page.locator("#pg-output").innerText(), "1920092");

  // A code point beyond the BMP before the error: positions count code points, the editor UTF-16.
  await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "😀a{2,1}" });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  shown = await marked();
  assert.match(shown.message, /at position 3/);
  assert.deepEqual(shown.range, [4, 5]);
  assert.equal(shown.selection, "2");

  // Grammar: "line L, column C".
  await runInPlayground(page, { kind: "grammar", prompt: "x", constraint: 'start: "a" B\nB: "b" | ("c"\n' });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  shown = await marked();
  assert.match(shown.message, /^grammar: .*line 2, column (\d+)/s);
  assert.ok(!shown.message.includes("^"), "the service's own quote of the line gives way to the marker");
  const column = Number(/line 2, column (\d+)/.exec(shown.message)![1]);
  assert.equal(shown.range[0], 'start: "a" B\n'.length + column - 1);

  // JSON Schema: the pointer's value ("minLength at /properties/name/minLength").
  const schema = JSON.stringify({ type: "object", properties: { name: { type: "string", minLength: -1 } } }, null, 2);
  await runInPlayground(page, { kind: "json", prompt: "x", constraint: schema });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  shown = await marked();
  assert.match(shown.message, /^schema: minLength at \/properties\/name\/minLength: must be a non-negative integer/);
  assert.equal(shown.selection, "-1");
  assert.equal(shown.mark, "-1");
  assert.match(shown.message, /line 6, column \d+ is selected/);

  // A budget too small (422): said below the result, with a button that sets the budget it needs.
  await page.locator("#pg-constraint").fill('{"type": "object"}');
  await runInPlayground(page, { kind: "json", prompt: "x", maxTokens: "2" });
  await page.locator("#pg-error").waitFor({ state: "visible" });
  assert.match(await page.locator("#pg-error").innerText(), /needs at least 4 tokens but max_new_tokens is 2/);
  assert.match(await page.locator("#pg-status").innerText(), /^Failed: HTTP 422\.$/);
  assert.equal(await page.locator("#pg-constraint-error").isVisible(), false);
  await page.locator("#pg-fix-button", { hasText: "Set max tokens to 4" }).click();
  assert.equal(await page.locator("#pg-max-tokens").inputValue(), "4");
  await page.keyboard.press("Enter"); // focus is on Max tokens: Enter submits the form
  await page.locator("#pg-status", { hasText: "Done" }).waitFor();

  // Not JSON at all: found before sending, at its position.
  const sent = engine.calls.length;
  await runInPlayground(page, { kind: "json", prompt: "x", constraint: '{"type": "object",, "x": 1}' });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  shown = await marked();
  assert.match(shown.message, /^The schema is not valid JSON: expected a property name at position 18/);
  assert.equal(shown.selection, ",");
  assert.equal(engine.calls.length, sent, "nothing was sent");

  // The chat kind's response_format schema: OpenAI's error shape, the same pointer.
  await runInPlayground(page, { kind: "chat", prompt: "hi", constraint: '{"type": "strin"}' });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  shown = await marked();
  assert.match(shown.message, /^schema: type at \/type: must be one of/);
  assert.equal(shown.selection, '"strin"');

  // An error about something else (a wrong key) is shown below the result, not on the editor.
  await page.locator("#pg-key").fill("not-a-key");
  await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "[0-9]+" });
  await page.locator("#pg-error").waitFor({ state: "visible" });
  assert.match(await page.locator("#pg-error").innerText(), /API key/i);
  assert.equal(await page.locator("#pg-constraint-error").isVisible(), false);
  assert.match(await page.locator("#pg-status").innerText(), /HTTP 401/);
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("playground: copy as curl / SDK give the request that ran, key as $TRELLIS_API_KEY; they run, the TypeScript type-checks", {
  skip: noChromium,
}, async () => {
  const { context, page, pageErrors } = await signedIn();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  const bodies: string[] = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && r.url().startsWith(`${base}/v1/`)) bodies.push(r.postData() ?? "");
  });
  // Inside the repository (an ignored folder), so the TypeScript snippet's `import "openai"` finds node_modules.
  mkdirSync(join(REPO_ROOT, ".cache"), { recursive: true });
  const tmp = mkdtempSync(join(REPO_ROOT, ".cache", "snippets-"));
  // Asynchronously: the service answering the snippets runs in this process.
  const run = async (command: string, args: string[]) =>
    (await execFileAsync(command, args, { env: { ...process.env, TRELLIS_API_KEY: TEST_KEY }, encoding: "utf8", timeout: 20_000 })).stdout;
  try {
    assert.equal(await page.locator("#pg-copy-curl").isDisabled(), true, "nothing to copy before a run");
    await runInPlayground(page, { kind: "regex", prompt: "It's the year ", constraint: "(19|20)[0-9]{2}", maxTokens: "6", seed: "42" });
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    const body = bodies.at(-1)!;
    assert.deepEqual(JSON.parse(body), { prompt: "It's the year ", pattern: "(19|20)[0-9]{2}", max_new_tokens: 6, seed: 42 });

    await page.locator("#pg-copy-curl").click();
    await page.locator("#pg-snippet-status", { hasText: "Copied" }).waitFor();
    const curl = await page.locator("#pg-snippet").innerText();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), curl);
    assert.ok(curl.includes(`-d '${body.replace(/'/g, "'\\''")}'`), curl);
    assert.ok(curl.includes('"Authorization: Bearer $TRELLIS_API_KEY"'));
    assert.ok(curl.includes(`'${base}/v1/completion/regex'`));
    assert.ok(!curl.includes(TEST_KEY));
    // The shell gets the body back exactly (the quote in "It's" included), and the service answers it.
    assert.deepEqual(JSON.parse(await run("bash", ["-c", curl])), {
      completion: "192009",
      tokens_generated: 3,
      stop_reason: "pattern_match",
    });

    // Thiggle's routes: TypeScript's fetch (JavaScript too); no Python SDK offered.
    assert.equal(await page.locator("#pg-copy-python").isVisible(), false);
    assert.equal(await page.locator("#pg-copy-sdk").innerText(), "Copy as TypeScript (fetch)");
    await page.locator("#pg-copy-sdk").click();
    assert.equal(await page.locator("#pg-snippet-kind").innerText(), "TypeScript (fetch)");
    const js = await page.locator("#pg-snippet").innerText();
    assert.match(js, /process\.env\.TRELLIS_API_KEY/);
    assert.ok(!js.includes(TEST_KEY));
    writeFileSync(join(tmp, "fetch.mts"), js);
    writeFileSync(join(tmp, "fetch.mjs"), js);
    assert.equal((await run(process.execPath, [join(tmp, "fetch.mjs")])).trim(), "192009");
    assert.equal(bodies.length, 1, "the snippets ran outside the page");
    assert.equal(engine.calls.filter((c) => c.kind === "regex").length >= 3, true);

    // Chat: Python's openai SDK, every field of the body as an argument.
    await runInPlayground(page, { kind: "chat", prompt: 'Say "hi"', constraint: '{"type": "object"}', maxTokens: "12" });
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    const chatBody = JSON.parse(bodies.at(-1)!);
    assert.deepEqual(chatBody, {
      model: PLAYGROUND_MODEL,
      messages: [{ role: "user", content: 'Say "hi"' }],
      max_tokens: 12,
      seed: 42, // still in the form from the regex run
      logprobs: true,
      top_logprobs: 3,
      stream: true,
      stream_options: { include_usage: true },
      response_format: { type: "json_schema", json_schema: { name: "playground", schema: { type: "object" } } },
    });
    assert.equal(await page.locator("#pg-copy-python").innerText(), "Copy as Python (openai)");
    assert.equal(await page.locator("#pg-copy-sdk").innerText(), "Copy as TypeScript (openai)");
    await page.locator("#pg-copy-python").click();
    const python = await page.locator("#pg-snippet").innerText();
    for (const line of [
      'client = OpenAI(base_url="' + base + '/v1", api_key=os.environ["TRELLIS_API_KEY"])',
      `    model="${PLAYGROUND_MODEL}",`,
      '    messages=[{"role": "user", "content": "Say \\"hi\\""}],',
      "    max_tokens=12,",
      "    seed=42,",
      "    logprobs=True,",
      "    top_logprobs=3,",
      "    stream=True,",
      '    stream_options={"include_usage": True},',
    ]) {
      assert.ok(python.includes(line), `${line}\n---\n${python}`);
    }
    assert.match(
      python,
      /response_format=\{\n {8}"type": "json_schema",\n {8}"json_schema": \{"name": "playground", "schema": \{"type": "object"\}\},\n {4}\},/,
    );
    // Python code that parses (the openai package itself is not needed for that).
    if (spawnSync("python3", ["--version"]).status === 0) {
      execFileSync("python3", ["-c", "import ast, sys; ast.parse(sys.stdin.read())"], { input: python, timeout: 20_000 });
    }
    // TypeScript's openai SDK: the body as create()'s argument, streamed to stdout; it runs (as
    // JavaScript) against the service, and tsc checks it against the SDK's types with the fetch one.
    await page.locator("#pg-copy-sdk").click();
    assert.equal(await page.locator("#pg-snippet-kind").innerText(), "TypeScript (openai)");
    const typescript = await page.locator("#pg-snippet").innerText();
    for (const line of [
      'import OpenAI from "openai";',
      `const client = new OpenAI({ baseURL: "${base}/v1", apiKey: process.env.TRELLIS_API_KEY });`,
      "const stream = await client.chat.completions.create({",
      `  model: "${PLAYGROUND_MODEL}",`,
      '  messages: [{ role: "user", content: "Say \\"hi\\"" }],',
      "  max_tokens: 12,",
      "  stream: true,",
      "  stream_options: { include_usage: true },",
      '  response_format: { type: "json_schema", json_schema: { name: "playground", schema: { type: "object" } } },',
    ]) {
      assert.ok(typescript.includes(line), `${line}\n---\n${typescript}`);
    }
    assert.ok(!typescript.includes(TEST_KEY));
    writeFileSync(join(tmp, "chat.mts"), typescript);
    writeFileSync(join(tmp, "chat.mjs"), typescript);
    assert.equal(await run(process.execPath, [join(tmp, "chat.mjs")]), '{"name": "Kite", "legs": 0}\n');
    const tsc = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    const flags = [
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--skipLibCheck",
    ];
    await run(process.execPath, [tsc, ...flags, "--types", "node", join(tmp, "fetch.mts"), join(tmp, "chat.mts")]);

    await page.locator("#pg-copy-curl").click();
    const chatCurl = await page.locator("#pg-snippet").innerText();
    assert.ok(chatCurl.startsWith(`curl -sN '${base}/v1/chat/completions'`));
    assert.ok(chatCurl.includes(`-d '${bodies.at(-1)!}'`));
    const events = await run("bash", ["-c", chatCurl]);
    assert.match(events, /"content":"\{"/);
    assert.ok(events.trimEnd().endsWith("data: [DONE]"));
    assert.deepEqual(pageErrors, []);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
    await context.close();
  }
});

test("the key form's quota, expiry and rate limit, set together in the browser, show in the table", { skip: noChromium }, async () => {
  const { context, page, pageErrors } = await signedIn();
  await page.locator("#key-name").fill("all-three");
  await page.locator("#key-quota").fill("5000");
  await page.locator("#key-expires").fill("2031-03-15");
  await page.locator("#key-rate-limit").fill("90");
  await page.locator("#create-form button[type=submit]").click();
  await page.locator("#new-key-name", { hasText: "all-three" }).waitFor();
  const row = page.locator("#keys-body tr", { hasText: "all-three" });
  await row.waitFor();
  const cells = await row.locator("td").allInnerTexts();
  assert.equal(cells[6], "5,000 (5,000 left)");
  assert.equal(cells[7], "Mar 15, 2031 12:00 AM");
  assert.equal(cells[8], "90/min");
  assert.equal(cells[9], "active");
  const stored = store.listKeys().find((k) => k.name === "all-three")!;
  assert.equal(stored.quota, 5000);
  assert.equal(stored.rateLimit, 90);
  assert.equal(Date.parse(stored.expiresAt!), Date.parse("2031-03-15T00:00:00Z"));
  // The form is empty again, and the new key goes to the playground with one button.
  for (const id of ["#key-name", "#key-quota", "#key-expires", "#key-rate-limit"]) assert.equal(await page.locator(id).inputValue(), "");
  await page.locator("#use-key").click();
  assert.equal(await page.locator("#pg-key").inputValue(), (await page.locator("#new-key-value").innerText()).trim());
  await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "[0-9]{3}", maxTokens: "4" });
  await page.locator("#pg-status", { hasText: "Done" }).waitFor();
  await page.reload();
  await page.locator("#keys-body tr", { hasText: "all-three" }).waitFor();
  const used = await page.locator("#keys-body tr", { hasText: "all-three" }).locator("td").allInnerTexts();
  assert.equal(used[3], "1");
  assert.equal(used[6], "5,000 (4,997 left)");
  // The key typed in the playground is not kept anywhere: a reload forgets it.
  assert.equal(await page.locator("#pg-key").inputValue(), "");
  assert.deepEqual(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]), [0, 0, ""]);
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("usage charts: requests, tokens and refusals per hour and per day, of one key or all; summaries, tables, keyboard, tooltips; redrawn after a playground run", {
  skip: noChromium,
}, async () => {
  const { context, page, pageErrors, outside } = await signedIn();
  try {
    // A key allowed 3 requests a minute: an answer, a bad pattern (400), an engine failure (500), then a 429.
    const key = await createKeyInPage(page, "charted", { rateLimit: "3" });
    const id = store.listKeys().find((k) => k.name === "charted")!.id;
    const statuses: number[] = [];
    for (const body of [
      { prompt: "x", pattern: "[0-9]{3}", max_new_tokens: 5 },
      { prompt: "x", pattern: "ab(cd" },
      { prompt: "!bug", pattern: "a" },
      { prompt: "x", pattern: "a" },
    ]) {
      const response = await fetch(`${base}/v1/completion/regex`, { method: "POST", headers: auth(key), body: JSON.stringify(body) });
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [200, 400, 500, 429]);

    // The key is in the selector (with its prefix); choosing it loads its hours.
    const options = await page.locator("#usage-key option").allInnerTexts();
    assert.equal(options[0], "All keys");
    assert.ok(
      options.some((o) => /^charted \(trl_.{6}…\)$/.test(o)),
      options.join(" | "),
    );
    await usageLoad(page, () => page.locator("#usage-key").selectOption(String(id)));
    const hourly = await storeTotals(store, "hour", id);
    assert.deepEqual(
      {
        tokens: hourly.tokens,
        "rate-limited": hourly["rate-limited"],
        "client-errors": hourly["client-errors"],
        "server-errors": hourly["server-errors"],
      },
      { tokens: 3, "rate-limited": 1, "client-errors": 1, "server-errors": 1 },
    );
    assert.deepEqual(await usageTotals(page), hourly);

    let charts = await chartsShown(page);
    assert.deepEqual(
      charts.map((c) => c.title),
      ["Requests per hour", "Tokens per hour", "Refused and failed requests per hour"],
    );
    const newest = store.usageHistory("hour", { keyId: id }).at(-1)!;
    for (const chart of charts) {
      assert.equal(chart.labelledBy, chart.title, "each figure is named by its heading");
      assert.equal(chart.role, "img");
      assert.equal(chart.points, 48);
      assert.deepEqual(chart.tabStops, [47], "one tab stop per chart, on the newest bucket");
      assert.equal(chart.rows, 48);
      assert.equal(chart.newest[0], bucketCell(newest.start, "hour"), "the table lists the newest bucket first");
    }
    const [requestsChart, tokensChart, errorsChart] = charts as [(typeof charts)[0], (typeof charts)[0], (typeof charts)[0]];
    assert.match(
      requestsChart.summary,
      new RegExp(`^Requests per hour, last 48 hours \\(UTC\\): ${hourly.requests} in all; the most, \\d+, in `),
    );
    assert.match(tokensChart.summary, /^Tokens per hour, last 48 hours \(UTC\): 3 in all; the most, 3, in .* UTC\.$/);
    assert.equal(
      errorsChart.summary,
      "Refused and failed requests per hour, last 48 hours (UTC): 1 Rate-limited (429), 1 Other 4xx, 1 5xx.",
    );
    assert.deepEqual(requestsChart.bars, ["requests"]);
    assert.deepEqual(tokensChart.bars, ["tokens"]);
    assert.deepEqual(errorsChart.bars, ["rate_limited", "client_errors", "server_errors"], "the refusals stack in one bar");
    assert.deepEqual(errorsChart.header, ["Hour (UTC)", "Rate-limited (429)", "Other 4xx", "5xx"]);
    assert.deepEqual(errorsChart.newest.slice(1), [newest.rateLimited, newest.clientErrors, newest.serverErrors].map(String));
    assert.deepEqual(requestsChart.newest, [bucketCell(newest.start, "hour"), String(newest.requests)]);

    // Keyboard: Tab reaches the newest bar of the requests chart; its tooltip says the bucket and every number.
    await page.locator("#usage-refresh").focus();
    await page.keyboard.press("Tab");
    const focused = () =>
      page.evaluate(
        () => (document.activeElement as HTMLElement).closest(".chart")?.id + ":" + (document.activeElement as HTMLElement).dataset.index,
      );
    assert.equal(await focused(), "chart-requests:47");
    const tip = page.locator("#chart-requests .chart-tip");
    await tip.waitFor({ state: "visible" });
    const tipLines = (await tip.innerText()).split("\n");
    const newestName = `${bucketCell(newest.start, "hour")}–${String((new Date(newest.start).getUTCHours() + 1) % 24).padStart(2, "0")}:00 UTC`;
    const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
    assert.deepEqual(tipLines, [
      newestName,
      `${count(newest.requests, "request")}, ${count(newest.tokens, "token")}`,
      `${newest.rateLimited} rate-limited (429), ${newest.clientErrors} other 4xx, ${newest.serverErrors} 5xx`,
    ]);
    const pointLabel = await page.evaluate(() => document.activeElement!.getAttribute("aria-label"));
    assert.equal(pointLabel, tipLines.join("; "), "the point's accessible name says what its tooltip shows");
    // ← → Home End move along the buckets (one tab stop: the one left focused).
    await page.keyboard.press("ArrowLeft");
    assert.equal(await focused(), "chart-requests:46");
    assert.match(await tip.innerText(), /^.*\n0 requests, 0 tokens\n0 rate-limited \(429\), 0 other 4xx, 0 5xx$/);
    await page.keyboard.press("Home");
    assert.equal(await focused(), "chart-requests:0");
    await page.keyboard.press("End");
    await page.keyboard.press("ArrowLeft");
    assert.deepEqual((await chartsShown(page))[0]!.tabStops, [46]);
    // The tooltip stays inside the chart, beside its column (not over it).
    // (No named functions inside evaluate: tsx would wrap them in a helper the page lacks.)
    const boxes = await page.evaluate(() =>
      Object.fromEntries(
        [
          ["box", document.querySelector("#chart-requests .chart-box")!],
          ["tip", document.querySelector("#chart-requests .chart-tip")!],
          ["point", document.activeElement!],
        ].map(([name, e]) => [name, (e as Element).getBoundingClientRect().toJSON() as DOMRect]),
      ),
    );
    assert.ok(boxes.tip.left >= boxes.box.left - 0.5 && boxes.tip.right <= boxes.box.right + 0.5, JSON.stringify(boxes));
    assert.ok(boxes.tip.right <= boxes.point.left || boxes.tip.left >= boxes.point.right, JSON.stringify(boxes));
    // Focus leaves: the tooltip goes. A pointer over a bucket shows that one's.
    await page.keyboard.press("Tab");
    assert.equal(await tip.isVisible(), false);
    await page.locator("#chart-errors .chart-point").nth(47).hover();
    await page.locator("#chart-errors .chart-tip").waitFor({ state: "visible" });
    assert.equal((await page.locator("#chart-errors .chart-tip").innerText()).split("\n")[0], newestName);
    await page.mouse.move(2, 2);
    await page.locator("#chart-errors .chart-tip").waitFor({ state: "hidden" });

    // The table behind the summary: opened with the keyboard.
    await page.locator("#chart-tokens summary").focus();
    await page.keyboard.press("Enter");
    await page.locator("#chart-tokens .chart-table").waitFor({ state: "visible" });
    assert.equal(await page.locator("#chart-tokens .chart-table").getAttribute("aria-labelledby"), "chart-tokens-table-caption");
    assert.equal(await page.locator("#chart-tokens-table-caption").textContent(), "Tokens per hour, last 48 hours, newest first");

    // Per day: 90 buckets, today's holding the same numbers.
    await usageLoad(page, () => page.locator('input[name="usage-bucket"][value="day"]').check());
    charts = await chartsShown(page);
    assert.deepEqual(
      charts.map((c) => [c.title, c.points, c.rows]),
      [
        ["Requests per day", 90, 90],
        ["Tokens per day", 90, 90],
        ["Refused and failed requests per day", 90, 90],
      ],
    );
    assert.match(charts[0]!.summary, /^Requests per day, last 90 days \(UTC\): /);
    assert.equal(charts[0]!.header[0], "Day (UTC)");
    assert.deepEqual(await usageTotals(page), await storeTotals(store, "day", id));
    // All keys: every key's usage, as the store sums it.
    await usageLoad(page, () => page.locator("#usage-key").selectOption(""));
    assert.deepEqual(await usageTotals(page), await storeTotals(store, "day"));

    // A playground run with another key of the store: the charts load again by themselves, one request more.
    await usageLoad(page, () => page.locator('input[name="usage-bucket"][value="hour"]').check());
    await createKeyInPage(page, "charted-playground");
    await page.locator("#use-key").click();
    const before = await usageTotals(page);
    await usageLoad(page, () => runInPlayground(page, { kind: "regex", prompt: "x", constraint: "[0-9]{3}", maxTokens: "4" }));
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    await waitForTotals(page, { ...before, requests: before.requests + 1, tokens: before.tokens + 3 });
    assert.deepEqual(await usageTotals(page), await storeTotals(store, "hour"));
    // A refusal counts too: the rate-limited key's next request (429) shows beside.
    await page.locator("#pg-key").fill(key);
    await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "[0-9]{3}" });
    await page.locator("#pg-status", { hasText: "HTTP 429" }).waitFor();
    await waitForTotals(page, {
      ...before,
      requests: before.requests + 1,
      tokens: before.tokens + 3,
      "rate-limited": before["rate-limited"] + 1,
    });

    assert.deepEqual(pageErrors, []);
    assert.deepEqual(outside, [], "nothing loaded from outside the service");
  } finally {
    await context.close();
  }
});

test("playground: categorization shows every category's probability as a bar, the chosen one marked; a repeated or refused category is marked in the list", {
  skip: noChromium,
}, async () => {
  const { context, page, pageErrors, outside } = await signedIn();
  try {
    await page.locator("#pg-key").fill(TEST_KEY);
    await page.locator('input[name="kind"][value="categorize"]').check();
    assert.equal(await page.locator("#pg-endpoint").innerText(), "POST /v1/categorize");
    assert.equal(await page.locator("#pg-constraint-label").innerText(), "Categories (one per line)");
    // No sampling knobs here; the two choices categorization has instead.
    assert.equal(await page.locator("#pg-max-tokens").isVisible(), false);
    assert.equal(await page.locator("#pg-allow-multiple").isVisible(), true);
    await runInPlayground(page, { kind: "categorize", prompt: "What animal barks?", constraint: "dog\n cat \n\nbird" });
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    assert.equal(await page.locator("#pg-status").innerText(), "Done: dog (90.0%).");
    assert.match(await page.locator("#pg-stats").innerText(), /^3 categories · \d+ ms in all$/);
    const call = engine.calls.filter((c) => c.kind === "categorize").at(-1)!.request as Record<string, unknown>;
    assert.deepEqual(call.categories, ["dog", "cat", "bird"]);
    assert.equal(call.includeScores, true);
    assert.equal(call.allowMultipleClasses, false);
    const items = await page.locator("#pg-output .cat").evaluateAll((lis) =>
      lis.map((li) => ({
        text: (li as HTMLElement).innerText.replace(/\s+/g, " ").trim(),
        chosen: li.classList.contains("chosen"),
        width: (li.querySelector(".cat-fill") as HTMLElement).style.width,
      })),
    );
    assert.deepEqual(items, [
      { text: "dog chosen 90.0%", chosen: true, width: "90%" },
      { text: "cat 5.0%", chosen: false, width: "5%" },
      { text: "bird 5.0%", chosen: false, width: "5%" },
    ]);
    await page.locator("#pg-allow-multiple").check();
    await page.locator("#pg-run").click();
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    assert.equal(
      (engine.calls.filter((c) => c.kind === "categorize").at(-1)!.request as { allowMultipleClasses: boolean }).allowMultipleClasses,
      true,
    );
    await page.locator("#pg-copy-sdk").click();
    const snippet = await page.locator("#pg-snippet").innerText();
    for (const line of ['    categories: ["dog", "cat", "bird"],', "    include_scores: true,", "    allow_multiple_classes: true,"]) {
      assert.ok(snippet.includes(line), snippet);
    }
    assert.ok(snippet.includes("console.log(result.choices, result.scores);"));

    // A category twice: found before sending, the second one selected in the list.
    const sent = engine.calls.length;
    await runInPlayground(page, { kind: "categorize", prompt: "x", constraint: "dog\ncat\n  dog" });
    await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
    assert.match(
      await page.locator("#pg-constraint-message").innerText(),
      /^Category “dog” is listed twice — line 3, column 3 is selected/,
    );
    assert.deepEqual(
      await page
        .locator("#pg-constraint")
        .evaluate((e) => [(e as HTMLTextAreaElement).selectionStart, (e as HTMLTextAreaElement).selectionEnd]),
      [10, 13],
    );
    assert.equal(engine.calls.length, sent, "nothing was sent");
    // One the service refuses (longer than TRELLIS_MAX_CATEGORY_CHARS): its "categories[1]" is the second line.
    const long = "x".repeat(300);
    await runInPlayground(page, { kind: "categorize", prompt: "x", constraint: `dog\n\n${long}\ncat` });
    await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
    assert.match(
      await page.locator("#pg-constraint-message").innerText(),
      /^categories\[1\] must be at most \d+ characters — line 3, column 1 is selected/,
    );
    assert.equal(await page.locator("#pg-constraint-marker mark").innerText(), long.slice(0, 300));
    assert.match(await page.locator("#pg-status").innerText(), /HTTP 400/);
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(outside, []);
  } finally {
    await context.close();
  }
});

/**
 * The page's own accessibility audit, run in the page (a string, so nothing the test's compiler
 * adds to functions reaches the browser): accessible names, duplicate and dangling ids,
 * landmarks, heading order, positive tabindex, inline handlers, the contrast of every visible
 * piece of text against the background behind it (WCAG's formula, 4.5:1), and of the charts'
 * bars and legend swatches (graphics: 3:1).
 */
const AUDIT = String.raw`(() => {
  const failures = [];
  const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
  const text = (id) => (document.getElementById(id)?.textContent ?? "").trim();
  const nameOf = (e) => {
    const labelledBy = e.getAttribute("aria-labelledby");
    if (labelledBy) return labelledBy.split(/\s+/).map(text).join(" ").trim();
    const label = e.getAttribute("aria-label");
    if (label) return label.trim();
    if (e.labels && e.labels.length > 0) return [...e.labels].map((l) => l.textContent).join(" ").trim();
    if (e.tagName === "BUTTON" || e.tagName === "A" || e.tagName === "SUMMARY") return e.textContent.trim();
    return (e.getAttribute("title") ?? "").trim();
  };
  for (const e of document.querySelectorAll("input, textarea, select, button, a[href], summary, [role=region], [role=img], section, nav, figure")) {
    if (!nameOf(e)) failures.push("no accessible name: " + e.outerHTML.slice(0, 100));
  }
  const ids = new Map();
  for (const e of document.querySelectorAll("[id]")) ids.set(e.id, (ids.get(e.id) ?? 0) + 1);
  for (const [id, n] of ids) if (n > 1) failures.push("duplicate id: " + id);
  for (const attr of ["for", "aria-labelledby", "aria-describedby", "aria-controls"]) {
    for (const e of document.querySelectorAll("[" + attr + "]")) {
      for (const id of e.getAttribute(attr).split(/\s+/)) if (!ids.has(id)) failures.push(attr + " names a missing id: " + id);
    }
  }
  const count = (selector) => document.querySelectorAll(selector).length;
  if (count("body > header") !== 1) failures.push("one banner (header) expected");
  if (count("main") !== 1) failures.push("one main expected");
  if (count("nav[aria-label]") < 1) failures.push("a labelled nav expected");
  if (!document.documentElement.lang) failures.push("html has no lang");
  const levels = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].filter(visible).map((h) => Number(h.tagName[1]));
  if (levels[0] !== 1 || levels.filter((l) => l === 1).length !== 1) failures.push("one h1, first: " + levels.join(","));
  levels.forEach((l, i) => { if (i > 0 && l > levels[i - 1] + 1) failures.push("heading level skipped: " + levels.join(",")); });
  for (const e of document.querySelectorAll("[tabindex]")) if (e.tabIndex > 0) failures.push("positive tabindex: " + e.outerHTML.slice(0, 80));
  for (const e of document.querySelectorAll("*")) {
    for (const a of e.getAttributeNames()) if (a.startsWith("on")) failures.push("inline handler: " + a);
    if ((e.tagName === "DIV" || e.tagName === "SPAN") && e.getAttribute("role") === "button") failures.push("a div as a button");
  }

  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const channel = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const luminance = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const behind = (e) => {
    for (let at = e; at; at = at.parentElement) {
      const c = parse(getComputedStyle(at).backgroundColor);
      if (c && c.a > 0) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  const checked = [];
  const check = (e, what, color) => {
    const fg = parse(color);
    const bg = behind(e);
    const r = ratio(fg, bg);
    checked.push(what);
    if (r < 4.5) failures.push("contrast " + r.toFixed(2) + " < 4.5: " + what + " (" + color + " on rgb(" + bg.r + "," + bg.g + "," + bg.b + "))");
  };
  for (const e of document.body.querySelectorAll("*")) {
    if (!visible(e) || e.closest(".visually-hidden, [disabled], [aria-hidden=true]")) continue;
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "");
    const className = e.getAttribute("class");
    if (own) check(e, e.tagName.toLowerCase() + (className ? "." + className : "") + " " + JSON.stringify(e.textContent.trim().slice(0, 30)), getComputedStyle(e).color);
    if ((e.tagName === "INPUT" || e.tagName === "TEXTAREA") && e.placeholder) check(e, "placeholder of #" + e.id, getComputedStyle(e, "::placeholder").color);
  }
  // Graphics (WCAG 1.4.11): a chart's bars and the legend's swatches, 3:1 against what is behind them.
  let graphics = 0;
  for (const e of document.querySelectorAll("#usage-charts rect.bar, #usage-charts .swatch")) {
    if (!visible(e)) continue;
    const color = e.tagName === "rect" ? getComputedStyle(e).fill : getComputedStyle(e).backgroundColor;
    const r = ratio(parse(color), behind(e.parentElement));
    graphics++;
    if (r < 3) failures.push("graphics contrast " + r.toFixed(2) + " < 3: " + e.getAttribute("class") + " (" + color + ")");
  }
  return { failures, checked: checked.length, graphics, background: getComputedStyle(document.body).backgroundColor };
})()`;

test("accessibility: names, ids, landmarks, headings, contrast in light and dark, keyboard focus, reduced motion", {
  skip: noChromium,
}, async () => {
  for (const colorScheme of ["light", "dark"] as const) {
    const { context, page, pageErrors } = await signedIn({
      colorScheme,
      reducedMotion: colorScheme === "dark" ? "reduce" : "no-preference",
    });
    // Everything the page can show: a new key, a table with a revoked row, usage charts with
    // every series, one bar's tooltip and a table, a streamed answer, a constraint error, a snippet.
    await page.locator("#key-name").fill(`a11y-${colorScheme}`);
    await page.locator("#key-quota").fill("10");
    await page.locator("#key-rate-limit").fill("3");
    await page.locator("#create-form button[type=submit]").click();
    await page.locator("#new-key").waitFor({ state: "visible" });
    const used = (await page.locator("#new-key-value").innerText()).trim();
    for (const prompt of ["x", "!bug", "x", "x"]) {
      await fetch(`${base}/v1/completion/regex`, {
        method: "POST",
        headers: auth(used),
        body: JSON.stringify({ prompt, pattern: "[0-9]", max_new_tokens: 2 }),
      });
    }
    await page
      .locator("#keys-body tr", { hasText: `a11y-${colorScheme}` })
      .locator("button", { hasText: "Revoke" })
      .click();
    await page
      .locator("#keys-body tr", { hasText: `a11y-${colorScheme}` })
      .locator(".badge.revoked")
      .waitFor();
    await runInPlayground(page, { kind: "regex", prompt: "x", constraint: "a)" });
    await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
    await runInPlayground(page, { kind: "chat", prompt: "Tell me a story." });
    await page.locator("#pg-status", { hasText: "Done" }).waitFor();
    await page.locator("#pg-copy-curl").click();
    await page.locator("#pg-snippet-box").waitFor({ state: "visible" });
    await page.locator("#pg-error").evaluate((e: HTMLElement) => {
      // The error line's colour, checked even though this run had none.
      e.textContent = "an error";
      e.hidden = false;
    });
    await page.locator("#chart-errors summary").click();
    await usageLoad(page, () => page.locator("#usage-refresh").click());
    await page.locator("#chart-errors .chart-point[tabindex='0']").focus();
    await page.locator("#chart-errors .chart-tip").waitFor({ state: "visible" });

    const audit = (await page.evaluate(AUDIT)) as { failures: string[]; checked: number; graphics: number; background: string };
    assert.deepEqual(audit.failures, [], `${colorScheme}: ${audit.failures.join("\n")}`);
    assert.ok(audit.checked > 60, `${colorScheme}: only ${audit.checked} texts checked`);
    // Requests, tokens, the refusals (the 429 and the 5xx at least), and the legend's three swatches.
    assert.ok(audit.graphics >= 7, `${colorScheme}: only ${audit.graphics} bars and swatches checked`);
    // The audit does catch a pale text (set through the CSSOM, which the CSP allows).
    const pale = await page.evaluate(`(() => {
      const hint = document.querySelector("#pg-key-hint");
      const before = hint.style.color;
      hint.style.color = "${colorScheme === "dark" ? "#4a4f58" : "#a0a4ab"}";
      const result = ${AUDIT};
      hint.style.color = before;
      return result.failures;
    })()`);
    assert.match(String(pale), /contrast [\d.]+ < 4\.5: p\.hint/);
    // And a pale bar.
    const paleBar = await page.evaluate(`(() => {
      const bar = document.querySelector("#usage-charts rect.bar");
      bar.style.fill = "${colorScheme === "dark" ? "#2a2f38" : "#e4e7ec"}";
      const result = ${AUDIT};
      bar.style.fill = "";
      return result.failures;
    })()`);
    assert.match(String(paleBar), /graphics contrast [\d.]+ < 3: bar s-requests/);
    const [r, g, b] = audit.background.match(/\d+/g)!.map(Number);
    assert.equal(r! + g! + b! < 120, colorScheme === "dark", `${colorScheme} background: ${audit.background}`);

    // prefers-reduced-motion: the tokens' fade-in is off.
    const animation = await page
      .locator("#pg-output .tok")
      .first()
      .evaluate((e) => getComputedStyle(e).animationName);
    assert.equal(animation, colorScheme === "dark" ? "none" : "tok-in");

    // Keyboard: every tab stop shows a focus outline; the skip link comes first.
    // A click on the header (nothing focusable there) starts keyboard navigation there; Shift+Tab
    // goes back to the skip link, then Tab visits every stop to the end of the page (where focus
    // leaves the document).
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.mouse.click(3, 3);
    const stops: string[] = [];
    for (let i = 0; i < 100; i++) {
      await page.keyboard.press(i === 0 ? "Shift+Tab" : "Tab");
      const focus = await page.evaluate(() => {
        const e = document.activeElement as HTMLElement;
        const style = getComputedStyle(e);
        const what = `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.textContent?.trim().slice(0, 20)}`;
        return { what, atEnd: e === document.body, outline: style.outlineStyle, width: parseFloat(style.outlineWidth) };
      });
      if (focus.atEnd) break;
      stops.push(focus.what);
      assert.ok(focus.outline !== "none" && focus.width >= 2, `${colorScheme}: no visible focus on ${focus.what}`);
    }
    assert.ok(stops.length > 30 && stops.length < 100, `${stops.length} tab stops`);
    assert.match(stops[0]!, /^a.*Skip to content/);
    assert.match(stops.at(-1)!, /^pre#pg-snippet/);
    assert.ok(stops.some((s) => s.startsWith("input#pg-key")));
    assert.ok(stops.some((s) => s.startsWith("button#pg-run")));
    // The usage controls, then each chart: one stop for its bars, one for its table's summary (and the open table).
    const usageStops = stops.slice(
      stops.findIndex((s) => s.startsWith("select#usage-key")) - 1,
      stops.findIndex((s) => s.startsWith("div#.table-wrap chart-table")) + 1,
    );
    assert.deepEqual(
      usageStops.map((s) => s.split(" ")[0]),
      [
        "input#.",
        "select#usage-key.",
        "button#usage-refresh.secondary",
        "span#.chart-point",
        "summary#.",
        "span#.chart-point",
        "summary#.",
        "span#.chart-point",
        "summary#.",
        "div#.table-wrap",
      ],
      usageStops.join("\n"),
    );
    assert.deepEqual(pageErrors, []);
    await context.close();
  }
});

test("keyboard alone runs the playground: kind with arrow keys, Ctrl+Enter in the prompt", { skip: noChromium }, async () => {
  const { context, page, pageErrors } = await signedIn();
  await page.locator("#pg-key").fill(TEST_KEY);
  await page.locator('input[name="kind"][value="regex"]').focus();
  for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowRight");
  assert.equal(await page.locator('input[name="kind"]:checked').getAttribute("value"), "chat");
  assert.equal(await page.locator("#pg-prompt-label").innerText(), "Message");
  assert.equal(await page.locator("#pg-endpoint").innerText(), "POST /v1/chat/completions");
  await page.locator("#pg-prompt").focus();
  await page.keyboard.press("Control+Enter");
  await page.locator("#pg-status", { hasText: "Done" }).waitFor();
  assert.ok((await page.locator("#pg-output .tok").count()) >= 2);
  // A run ends by reloading the usage charts above the playground: clicks wait until they are
  // drawn, or the page may move under one (a loaded CI run clicked beside the radio button).
  await page.locator('#usage-charts[aria-busy="false"]').waitFor({ state: "attached" });
  // Switching kinds keeps what was typed for each.
  await page.locator("#pg-prompt").fill("my chat message");
  await page.locator('input[name="kind"][value="regex"]').check();
  assert.equal(await page.locator("#pg-constraint").inputValue(), "(19|20)[0-9]{2}");
  await page.locator('input[name="kind"][value="chat"]').check();
  assert.equal(await page.locator("#pg-prompt").inputValue(), "my chat message");
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test("at a phone's 375 px the page never scrolls sideways (the keys table scrolls in its own box)", { skip: noChromium }, async () => {
  const { context, page, pageErrors } = await signedIn({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true });
  const overflow = () =>
    page.evaluate(() => ({
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      widest: [...document.querySelectorAll("body *")]
        .filter(
          (e) => !e.parentElement?.closest(".table-wrap") && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5,
        )
        .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`)
        .slice(0, 5),
    }));
  assert.deepEqual(await overflow(), { page: 0, widest: [] }, "signed in");
  await page.locator("#key-name").fill("a-key-with-a-rather-long-name-for-a-phone");
  await page.locator("#key-rate-limit").fill("30");
  await page.locator("#create-form button[type=submit]").click();
  await page.locator("#new-key").waitFor({ state: "visible" });
  await page.locator("#keys-body tr").first().waitFor();
  await page.locator("#use-key").click();
  await runInPlayground(page, { kind: "chat", prompt: "Tell me a story." });
  await page.locator("#pg-status", { hasText: "Done" }).waitFor();
  await page.locator("#pg-copy-curl").click();
  await page.locator("#pg-snippet-box").waitFor({ state: "visible" });
  await runInPlayground(page, { kind: "grammar", prompt: "x", constraint: 'start: "a" B\nB: "b" | ("c"   \n' });
  await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
  assert.deepEqual(await overflow(), { page: 0, widest: [] }, "with a key, a table, an answer, a snippet and an error");
  // The usage charts at the phone's width: drawn to fit, every table open, a tooltip on the newest
  // bar (the right edge) and on the oldest, per day and per hour.
  for (const bucket of ["day", "hour"]) {
    await usageLoad(page, () => page.locator(`input[name="usage-bucket"][value="${bucket}"]`).check());
    for (const summary of await page.locator("#usage-charts summary").all()) {
      if (!(await summary.evaluate((e) => (e.parentElement as HTMLDetailsElement).open))) await summary.click();
    }
    const widths = await page.locator("#usage-charts svg").evaluateAll((svgs) => svgs.map((svg) => svg.getBoundingClientRect().width));
    assert.equal(widths.length, 3);
    for (const width of widths) assert.ok(width > 250 && width <= 375 - 2 * 16, `chart width ${width}`);
    // The charts' tables are narrow enough not to scroll sideways even here.
    const tables = await page.locator(".chart-table").evaluateAll((wraps) => wraps.map((e) => e.scrollWidth - e.clientWidth));
    assert.deepEqual(tables, [0, 0, 0]);
    await page.locator("#chart-tokens .chart-point[tabindex='0']").focus();
    assert.deepEqual(await overflow(), { page: 0, widest: [] }, `charts per ${bucket}, the newest bar's tooltip`);
    await page.keyboard.press("Home");
    assert.deepEqual(await overflow(), { page: 0, widest: [] }, `charts per ${bucket}, the oldest bar's tooltip`);
  }
  const table = await page
    .locator("#keys-panel .table-wrap")
    .evaluate((e) => ({ scrolls: e.scrollWidth > e.clientWidth, overflowX: getComputedStyle(e).overflowX }));
  assert.deepEqual(table, { scrolls: true, overflowX: "auto" });
  assert.deepEqual(pageErrors, []);
  await context.close();
});

/** Waits until the playground's run has ended (Run enabled again); answers the status line. */
async function ranToEnd(page: Page): Promise<string> {
  await page.waitForFunction(() => !(document.getElementById("pg-run") as HTMLButtonElement).disabled, undefined, { timeout: 20_000 });
  return page.locator("#pg-status").innerText();
}

const SIZES = [
  { name: "desktop", options: { viewport: { width: 1280, height: 800 } } },
  { name: "phone", options: { viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true } },
] as const;

test("screenshots of every view (sign-in, keys, usage charts, playground, API reference) at desktop and phone sizes go to .cache/screenshots/", {
  skip: noChromium,
}, async () => {
  const written: string[] = [];
  const shot = async (target: Page | Locator, name: string, fullPage = false) => {
    const path = join(SCREENSHOTS, `${name}.png`);
    await target.screenshot(fullPage ? { path, fullPage } : { path });
    written.push(path);
  };
  for (const size of SIZES) {
    const context = await browser.newContext({ ...size.options, locale: "en-US", timezoneId: "UTC" });
    const page = await context.newPage();
    const outside: string[] = [];
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    page.on("request", (r) => {
      if (!r.url().startsWith(base) && !r.url().startsWith("data:")) outside.push(r.url());
    });
    try {
      await page.goto(`${base}/dashboard`);
      await page.locator("#sign-in").waitFor({ state: "visible" });
      await shot(page, `sign-in-${size.name}`);
      await page.locator("#admin-token").fill("admin-secret");
      await page.locator("#sign-in-form button").click();
      await page.locator("#keys-panel").waitFor({ state: "visible" });

      // A key with some use: answers, a bad pattern, so the charts and the table have something to show.
      const key = await createKeyInPage(page, `shots-${size.name}`, { rateLimit: "30" });
      for (const pattern of ["[0-9]{3}", "(19|20)[0-9]{2}", "ab(cd"]) {
        await fetch(`${base}/v1/completion/regex`, {
          method: "POST",
          headers: auth(key),
          body: JSON.stringify({ prompt: "x", pattern, max_new_tokens: 6 }),
        });
      }
      await shot(page.locator("#keys-panel"), `keys-${size.name}`);
      await usageLoad(page, () => page.locator("#usage-refresh").click());
      await page.locator("#chart-requests .chart-point[tabindex='0']").focus();
      await page.locator("#chart-requests .chart-tip").waitFor({ state: "visible" });
      await shot(page.locator("#usage"), `usage-${size.name}`);
      await usageLoad(page, () => page.locator('input[name="usage-bucket"][value="day"]').check());
      await page.locator("#chart-errors summary").click();
      await shot(page.locator("#usage"), `usage-daily-${size.name}`);

      // The playground: a streamed chat answer (one token's probability showing), then a categorization.
      await page.locator("#use-key").click();
      await runInPlayground(page, { kind: "chat", prompt: "Tell me a story.", seed: "7" });
      assert.match(await ranToEnd(page), /^Done/);
      await page.locator("#pg-copy-sdk").click();
      await page.locator("#pg-output .tok").nth(5).focus();
      await shot(page.locator("#playground"), `playground-${size.name}`);
      await runInPlayground(page, { kind: "categorize", prompt: "What animal barks?", constraint: "dog\ncat\nbird\nfish" });
      assert.match(await ranToEnd(page), /^Done/);
      await shot(page.locator("#playground"), `playground-categorize-${size.name}`);
      await shot(page, `dashboard-${size.name}`, true);

      // The API reference (its own page; the top of it).
      await page.goto(`${base}/docs`);
      await page.locator('.opblock-summary-path[data-path="/v1/chat/completions"]').first().waitFor({ state: "visible" });
      await shot(page, `api-reference-${size.name}`);
      assert.deepEqual(pageErrors, []);
      assert.deepEqual(outside, [], "nothing loaded from outside the service");
    } finally {
      await context.close();
    }
  }
  assert.equal(written.length, 2 * 8);
  for (const path of written) {
    const png = readFileSync(path);
    assert.ok(png.length > 2000 && png.subarray(1, 4).toString() === "PNG", `${path}: ${png.length} bytes`);
  }
});

test("each playground mode against the real engine (stories260K.gguf): text appears, chat streams token by token; the usage chart counts the requests", {
  skip: noChromium || (!existsSync(STORIES_260K) && `no ${STORIES_260K}`),
}, async () => {
  const realStore = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const real = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 2, contextSize: 512 });
  const realApp = await createService({
    engine: real,
    config: testConfig({ maxNewTokensLimit: 64 }),
    store: realStore,
    adminTokenHash: sha256Hex("admin-secret"),
  });
  await realApp.listen({ host: "127.0.0.1", port: 0 });
  const at = `http://127.0.0.1:${(realApp.server.address() as { port: number }).port}`;
  const { context, page, pageErrors, outside } = await signedIn({ viewport: { width: 1280, height: 800 } }, at);
  try {
    await createKeyInPage(page, "real-engine");
    await page.locator("#use-key").click();
    const none = { requests: 0, tokens: 0, "rate-limited": 0, "client-errors": 0, "server-errors": 0 };
    await waitForTotals(page, none);
    const output = () => page.locator("#pg-output").innerText();
    const tokensOf = (status: string) => Number(/^Done: (\d+) tokens/.exec(status)?.[1] ?? Number.NaN);
    let tokens = 0;

    // Regex, grammar and JSON Schema: the whole completion at once, matching its constraint.
    await runInPlayground(page, {
      kind: "regex",
      prompt: "The year the wall fell: ",
      constraint: "(19|20)[0-9]{2}",
      maxTokens: "8",
      seed: "1",
    });
    let status = await ranToEnd(page);
    assert.match(status, /^Done: \d+ tokens, stop reason pattern_match\.$/);
    assert.match(await output(), /^(19|20)\d{2}$/);
    tokens += tokensOf(status);

    await runInPlayground(page, { kind: "grammar", prompt: "A list of two colors: ", maxTokens: "16" });
    status = await ranToEnd(page);
    assert.match(status, /^Done: \d+ tokens, stop reason pattern_match\.$/);
    assert.match(await output(), /^\[(red|green|blue), (red|green|blue)\]$/);
    tokens += tokensOf(status);

    const schema = {
      type: "object",
      properties: { name: { type: "string", maxLength: 8 }, age: { type: "integer", minimum: 0, maximum: 99 } },
      required: ["name", "age"],
      additionalProperties: false,
    };
    await runInPlayground(page, { kind: "json", prompt: "A user: ", constraint: JSON.stringify(schema), maxTokens: "48" });
    status = await ranToEnd(page);
    assert.match(status, /^Done: \d+ tokens, stop reason pattern_match\.$/);
    const user = JSON.parse(await output()) as { name: string; age: number };
    assert.deepEqual(Object.keys(user), ["name", "age"]);
    assert.ok(typeof user.name === "string" && user.name.length <= 8 && Number.isInteger(user.age) && user.age <= 99, JSON.stringify(user));
    tokens += tokensOf(status);

    // Categorization: one of the categories chosen, every category's probability shown (they sum to 100 %).
    await runInPlayground(page, { kind: "categorize", prompt: "What animal barks?", constraint: "dog\ncat\nbird" });
    status = await ranToEnd(page);
    assert.match(status, /^Done: (dog|cat|bird) \([\d.]+%\)\.$/);
    const scores = await page.locator("#pg-output .cat-score").allInnerTexts();
    assert.equal(scores.length, 3);
    const sum = scores.reduce((total, text) => total + Number.parseFloat(text), 0);
    assert.ok(Math.abs(sum - 100) < 0.5, `${scores.join(" + ")} = ${sum}`);
    assert.equal(await page.locator("#pg-output .cat.chosen").count(), 1);

    // Chat, streamed: token spans appear while the answer is still streaming (the status says so
    // when the first one arrives), each with its probability.
    await page.evaluate(`(() => {
      window.__firstToken = null;
      new MutationObserver((records) => {
        if (window.__firstToken !== null) return;
        if (!records.some((r) => [...r.addedNodes].some((n) => n.classList && n.classList.contains("tok")))) return;
        window.__firstToken = { status: document.getElementById("pg-status").textContent, spans: document.querySelectorAll("#pg-output .tok").length };
      }).observe(document.getElementById("pg-output"), { childList: true });
    })()`);
    await runInPlayground(page, { kind: "chat", prompt: "Tell me a story.", maxTokens: "16", seed: "7" });
    status = await ranToEnd(page);
    assert.match(status, /^Done: \d+ tokens, finish reason (stop|length)\.$/);
    const first = (await page.evaluate("window.__firstToken")) as { status: string; spans: number } | null;
    assert.equal(first?.status, "Streaming…", "the first token showed while the answer was streaming");
    const spans = await page
      .locator("#pg-output .tok")
      .evaluateAll((all) => all.map((s) => ({ text: s.textContent, tip: s.getAttribute("data-tip") })));
    assert.ok(spans.length >= 2, `${spans.length} token spans`);
    assert.ok((await output()).trim().length > 0);
    for (const span of spans) assert.match(span.tip ?? "", /^\d+(\.\d+)?%$/);
    assert.match(await page.locator("#pg-stats").innerText(), /tokens\/s · first token after \d+ ms$/);
    tokens += tokensOf(status);
    await shot(page.locator("#playground"), "playground-real-engine-desktop");

    // The usage chart counts them: six requests (the five runs, and the GET /v1/models the chat
    // asked first for the model's id: the key's usage counts every request it authenticates), the
    // tokens the page reported (categorization generates none), no refusals. It loaded by itself
    // after each run; Refresh gives the same.
    const expected = { ...none, requests: 6, tokens };
    await waitForTotals(page, expected);
    await usageLoad(page, () => page.locator("#usage-refresh").click());
    assert.deepEqual(await usageTotals(page), expected);
    assert.deepEqual(await usageTotals(page), await storeTotals(realStore, "hour"));
    const [requestsChart] = await chartsShown(page);
    assert.match(requestsChart!.summary, /^Requests per hour, last 48 hours \(UTC\): 6 in all; the most, \d, in /);
    assert.equal(requestsChart!.newest[1], String(realStore.usageHistory("hour").at(-1)!.requests));
    await shot(page.locator("#usage"), "usage-real-engine-desktop");
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(outside, [], "nothing loaded from outside the service");
  } finally {
    await context.close();
    await realApp.close();
    await real.close();
    realStore.close();
  }
});

/** Saves a screenshot of `target` in the screenshots folder. */
async function shot(target: Page | Locator, name: string): Promise<void> {
  await target.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}
