/**
 * node --import tsx scripts/dashboard-screenshots.ts [out-dir]
 *
 * Screenshots of the dashboard for people to look at: the keys view and the playground (a chat
 * answer streamed token by token, one token's probability shown), at desktop (1280×800) and phone
 * (375×812) sizes, in the light and the dark colour scheme. Runs the service in-process with the
 * fake engine the browser test uses (no model needed) and Debian's /usr/bin/chromium through
 * playwright-core. Writes docs/screenshots/dashboard-{keys,playground}-{desktop,phone}-{light,dark}.png,
 * and dashboard-playground-error-desktop-light.png (a grammar error marked at its position).
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
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

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createService({ engine: createPlaygroundEngine(), config: testConfig(), store, adminTokenHash: sha256Hex(ADMIN) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });

    // Two keys with some use, so the table has something to show.
    const setup = await browser.newPage();
    await setup.goto(`${base}/dashboard`);
    await setup.locator("#admin-token").fill(ADMIN);
    await setup.locator("#sign-in-form button").click();
    await setup.locator("#keys-panel").waitFor({ state: "visible" });
    const billing = await createKey(setup, "billing-service", { quota: "50000", expires: "2027-06-30", rateLimit: "120" });
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

        // Playground: the new key, a streamed chat answer, one token focused to show its probability.
        await page.locator("#use-key").click();
        await page.locator('input[name="kind"][value="chat"]').check();
        await page.locator("#pg-seed").fill("7");
        await page.locator("#pg-run").click();
        await page.locator("#pg-status", { hasText: "Done" }).waitFor();
        await page.locator("#pg-copy-curl").click();
        await page.locator("#pg-snippet-box").waitFor({ state: "visible" });
        await page.locator("#pg-output .tok").nth(6).focus();
        await page.screenshot({
          path: join(OUT, `dashboard-playground-${suffix}.png`),
          fullPage: true,
          clip: await clipOf(page, "#playground", "#playground"),
        });
        // An error at its position: a grammar the service refuses, marked in the editor (once).
        if (suffix === "desktop-light") {
          await page.locator('input[name="kind"][value="grammar"]').check();
          await page.locator("#pg-constraint").fill('start: "[" COLOR ", " COLOR "]"\nCOLOR: "red" | "green" | ("blue"\n');
          await page.locator("#pg-run").click();
          await page.locator("#pg-constraint-error").waitFor({ state: "visible" });
          await page.screenshot({
            path: join(OUT, `dashboard-playground-error-${suffix}.png`),
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
  }
}

await main();
