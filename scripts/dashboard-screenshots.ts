/**
 * node --import tsx scripts/dashboard-screenshots.ts [out-dir]
 *
 * Screenshots of the dashboard for people to look at: the keys view, the usage charts (90 days
 * of made-up history, one bar focused to show its tooltip) and the playground (a chat answer
 * streamed token by token, one token's probability shown), at desktop (1280×800) and phone
 * (375×812) sizes, in the light and the dark colour scheme. Runs the service in-process with the
 * fake engine the browser test uses (no model needed; its key store in a temporary folder, where
 * the history is written as the service would have) and Debian's /usr/bin/chromium through
 * playwright-core. Writes docs/screenshots/dashboard-{keys,usage,playground}-{desktop,phone}-{light,dark}.png,
 * dashboard-usage-daily-desktop-light.png (per day, one key), dashboard-playground-error-desktop-light.png
 * (a grammar error marked at its position) and dashboard-playground-categorize-desktop-light.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { chromium, type Browser, type Page } from "playwright-core";
import { createService } from "../src/service.js";
import { KeyStore, sha256Hex } from "../src/store/index.js";
import { auth, testConfig } from "../test/support/fake-engine.js";
import { createPlaygroundEngine } from "../test/support/playground-engine.js";

const OUT = resolve(process.argv[2] ?? "docs/screenshots");
const ADMIN = "admin-secret";
const SIZES = [
  { name: "desktop", viewport: { width: 1280, height: 800 } },
  { name: "phone", viewport: { width: 375, height: 812 } },
] as const;
const SCHEMES = ["light", "dark"] as const;

async function signIn(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/dashboard`);
  await page.locator("#admin-token").fill(ADMIN);
  await page.locator("#sign-in-form button").click();
  await page.locator("#keys-panel").waitFor({ state: "visible" });
  await page.locator("#keys-body tr").first().waitFor();
}

/** Creates a key from the page; answers the key shown once. */
async function createKey(page: Page, name: string, settings: { quota?: string; expires?: string; rateLimit?: string } = {}) {
  await page.locator("#key-name").fill(name);
  await page.locator("#key-quota").fill(settings.quota ?? "");
  await page.locator("#key-expires").fill(settings.expires ?? "");
  await page.locator("#key-rate-limit").fill(settings.rateLimit ?? "");
  await page.locator("#create-form button[type=submit]").click();
  await page.locator("#new-key-name", { hasText: name }).waitFor();
  return (await page.locator("#new-key-value").innerText()).trim();
}

/** The page from the top of `from` to the bottom of `to` (whole width, page coordinates), for a full-page screenshot. */
async function clipOf(page: Page, from: string, to: string) {
  const [top, bottom] = await page.evaluate(
    ({ a, b }) => [document.querySelector(a)!, document.querySelector(b)!].map((e) => e.getBoundingClientRect().top + window.scrollY),
    { a: from, b: to },
  );
  const height = await page.locator(to).evaluate((e) => e.getBoundingClientRect().height);
  const y = Math.max(0, top! - 8);
  return { x: 0, y, width: page.viewportSize()!.width, height: bottom! + height - y + 16 };
}

/** Waits for the usage charts' next load after `action` (the panel's data-version goes up). */
async function usageLoad(page: Page, action: () => Promise<unknown>): Promise<void> {
  const before = Number((await page.locator("#usage").getAttribute("data-version")) ?? "0");
  await action();
  await page.waitForFunction((v) => Number(document.getElementById("usage")!.dataset.version ?? "0") > v, before);
}

/** A small deterministic random number generator (mulberry32), so the screenshots do not change between runs. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * 90 days of hourly usage, written into the store's usage_hourly table (and the keys' totals) as
 * the service's flushes would have: a service used in office hours on weekdays, with a burst of
 * rate-limited calls now and then, and a nightly batch job that generates many tokens at 02:00 UTC.
 */
function seedHistory(dataDir: string, keys: { billing: number; batch: number }): void {
  const db = new Database(join(dataDir, "trellis.db"));
  const next = random(28);
  const insert = db.prepare(
    `INSERT INTO usage_hourly (key_id, hour, requests, tokens, rate_limited, client_errors, server_errors) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const totals = db.prepare("UPDATE api_keys SET requests = requests + ?, tokens = tokens + ? WHERE id = ?");
  const thisHour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  db.transaction(() => {
    const sums = new Map<number, { requests: number; tokens: number }>([
      [keys.billing, { requests: 0, tokens: 0 }],
      [keys.batch, { requests: 0, tokens: 0 }],
    ]);
    for (let ms = thisHour - 90 * 86_400_000; ms < thisHour; ms += 3_600_000) {
      const date = new Date(ms);
      const hour = date.getUTCHours();
      const weekday = date.getUTCDay() % 6 !== 0;
      const key = `${date.toISOString().slice(0, 13)}:00:00Z`;
      // Office hours (08–18 UTC) on weekdays; a trickle otherwise; more use in recent weeks.
      const growth = 1 + (ms - (thisHour - 90 * 86_400_000)) / (90 * 86_400_000);
      const busy = weekday && hour >= 8 && hour < 18 ? 14 + 12 * Math.sin(((hour - 8) / 10) * Math.PI) : 1.5;
      const requests = Math.round(busy * growth * (0.6 + 0.8 * next()));
      if (requests > 0) {
        // A client retrying too fast now and then (and once yesterday, so the 48 hours show one).
        const burst = next() < 0.04 || ms === thisHour - 20 * 3_600_000;
        const row = [
          requests,
          requests * Math.round(18 + 30 * next()),
          burst ? Math.round(6 + 20 * next()) : 0,
          next() < 0.25 ? Math.round(1 + 2 * next()) : 0,
          next() < 0.02 ? 1 : 0,
        ];
        insert.run(keys.billing, key, ...row);
        sums.get(keys.billing)!.requests += row[0]!;
        sums.get(keys.billing)!.tokens += row[1]!;
      }
      if (hour === 2) {
        const row = [Math.round(30 + 20 * next()), Math.round(9000 + 6000 * next()), 0, next() < 0.1 ? 2 : 0, next() < 0.05 ? 1 : 0];
        insert.run(keys.batch, key, ...row);
        sums.get(keys.batch)!.requests += row[0]!;
        sums.get(keys.batch)!.tokens += row[1]!;
      }
    }
    for (const [id, sum] of sums) totals.run(sum.requests, sum.tokens, id);
  })();
  db.close();
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const dataDir = mkdtempSync(join(tmpdir(), "trellis-screenshots-"));
  const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
  const app = await createService({ engine: createPlaygroundEngine(), config: testConfig(), store, adminTokenHash: sha256Hex(ADMIN) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });

    // Two keys with a history, so the table and the charts have something to show.
    const setup = await browser.newPage();
    await setup.goto(`${base}/dashboard`);
    await setup.locator("#admin-token").fill(ADMIN);
    await setup.locator("#sign-in-form button").click();
    await setup.locator("#keys-panel").waitFor({ state: "visible" });
    const billing = await createKey(setup, "billing-service", { quota: "5000000", expires: "2027-06-30", rateLimit: "120" });
    const batch = await createKey(setup, "nightly-batch");
    for (const [key, calls] of [
      [billing, 3],
      [batch, 1],
    ] as const) {
      for (let i = 0; i < calls; i++) {
        await fetch(`${base}/v1/completion/regex`, {
          method: "POST",
          headers: auth(key),
          body: JSON.stringify({ prompt: "The year: ", pattern: "(19|20)[0-9]{2}", max_new_tokens: 4 }),
        });
      }
    }
    store.flush();
    const ids = new Map(store.listKeys().map((k) => [k.name, k.id]));
    seedHistory(dataDir, { billing: ids.get("billing-service")!, batch: ids.get("nightly-batch")! });
    await setup.close();

    for (const scheme of SCHEMES) {
      for (const size of SIZES) {
        const context = await browser.newContext({ viewport: size.viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        await signIn(page, base);
        const suffix = `${size.name}-${scheme}`;

        // Keys: a fresh key shown once, and the table.
        await createKey(page, `demo-${suffix}`, { rateLimit: "60" });
        await page.locator(`#keys-body tr`, { hasText: `demo-${suffix}` }).waitFor();
        await page.screenshot({
          path: join(OUT, `dashboard-keys-${suffix}.png`),
          fullPage: true,
          clip: await clipOf(page, "header", "#keys-panel"),
        });

        // Usage: all keys per hour, a bar of the requests chart focused from the keyboard (its tooltip shows).
        await usageLoad(page, () => page.locator("#usage-refresh").click());
        await page.locator("#chart-requests .chart-point[tabindex='0']").focus();
        for (let i = 0; i < 14; i++) await page.keyboard.press("ArrowLeft");
        await page.locator("#chart-requests .chart-tip").waitFor({ state: "visible" });
        await page.screenshot({
          path: join(OUT, `dashboard-usage-${suffix}.png`),
          fullPage: true,
          clip: await clipOf(page, "#usage", "#usage"),
        });
        if (suffix === "desktop-light") {
          // Per day, of one key, the errors chart's table open.
          await usageLoad(page, () => page.locator('input[name="usage-bucket"][value="day"]').check());
          await usageLoad(page, () => page.locator("#usage-key").selectOption(String(ids.get("billing-service"))));
          await page.locator("#chart-errors summary").click();
          await page.locator("#chart-errors .chart-point[tabindex='0']").focus();
          for (let i = 0; i < 20; i++) await page.keyboard.press("ArrowLeft");
          await page.screenshot({
            path: join(OUT, `dashboard-usage-daily-${suffix}.png`),
            fullPage: true,
            clip: await clipOf(page, "#usage", "#usage"),
          });
          await page.locator("#chart-errors summary").click();
        }

        // Playground: the new key, a streamed chat answer, one token focused to show its probability.
        await page.locator("#use-key").click();
        await page.locator('input[name="kind"][value="chat"]').check();
        await page.locator("#pg-seed").fill("7");
        await page.locator("#pg-run").click();
        await page.locator("#pg-status", { hasText: "Done" }).waitFor();
        await page.locator("#pg-copy-sdk").click();
        await page.locator("#pg-snippet-box").waitFor({ state: "visible" });
        await page.locator("#pg-output .tok").nth(6).focus();
        await page.screenshot({
          path: join(OUT, `dashboard-playground-${suffix}.png`),
          fullPage: true,
          clip: await clipOf(page, "#playground", "#playground"),
        });
        if (suffix === "desktop-light") {
          // An error at its position: a grammar the service refuses, marked in the editor.
          await page.locator('input[name="kind"][value="grammar"]').check();
          await page.locator("#pg-constraint").fill('start: "[" COLOR ", " COLOR "]"\nCOLOR: "red" | "green" | ("blue"\n');
          await page.locator("#pg-run").click();
          await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
          await page.screenshot({
            path: join(OUT, `dashboard-playground-error-${suffix}.png`),
            fullPage: true,
            clip: await clipOf(page, "#playground", "#playground"),
          });
          // Categorization: every category's probability as a bar, the chosen one marked.
          await page.locator('input[name="kind"][value="categorize"]').check();
          await page.locator("#pg-run").click();
          await page.locator("#pg-output .cat-list").waitFor();
          await page.screenshot({
            path: join(OUT, `dashboard-playground-categorize-${suffix}.png`),
            fullPage: true,
            clip: await clipOf(page, "#playground", "#playground"),
          });
        }
        await context.close();
        console.log(`wrote ${suffix}`);
      }
    }
  } finally {
    await browser?.close();
    await app.close();
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
