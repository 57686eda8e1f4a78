/**
 * The page itself: index.html (also at /dashboard/playground, a view of the same page), its
 * stylesheet and its ES modules, read once at start and served with a strict CSP.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/**
 * The page's scripts: plain ES modules served as they are (app.js imports the others), each a
 * route of its own. A new module needs its name here; tsconfig.dashboard.json (type-checking)
 * and biome.json (linting) take every src/dashboard/*.js already.
 */
const DASHBOARD_SCRIPTS = ["app.js", "shared.js", "keys.js", "usage.js", "playground.js", "playground-errors.js", "snippets.js"] as const;

/** Finds the dashboard's static files also when running from dist/ (tsc copies only .ts output). */
function assetsDir(): string {
  const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  if (existsSync(join(here, "index.html"))) return here;
  let dir = here;
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, "src", "dashboard");
    if (existsSync(join(candidate, "index.html"))) return candidate;
    dir = resolve(dir, "..");
  }
  throw new Error(`dashboard assets (index.html) not found near ${here}`);
}

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const dir = assetsDir();
  const assets = new Map<string, { type: string; body: Buffer }>([
    ["index.html", { type: "text/html; charset=utf-8", body: readFileSync(join(dir, "index.html")) }],
    ...DASHBOARD_SCRIPTS.map((name) => [name, { type: "text/javascript; charset=utf-8", body: readFileSync(join(dir, name)) }] as const),
    ["style.css", { type: "text/css; charset=utf-8", body: readFileSync(join(dir, "style.css")) }],
  ]);
  const sendAsset = (name: string) => async (_request: FastifyRequest, reply: FastifyReply) => {
    const asset = assets.get(name)!;
    return reply
      .type(asset.type)
      .header("cache-control", "no-store")
      .header("content-security-policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
      .header("x-frame-options", "DENY")
      .header("x-content-type-options", "nosniff")
      .send(asset.body);
  };
  const hidden = { schema: { hide: true } };
  app.get("/dashboard", hidden, sendAsset("index.html"));
  app.get("/dashboard/", hidden, sendAsset("index.html"));
  app.get("/dashboard/playground", hidden, sendAsset("index.html"));
  for (const name of DASHBOARD_SCRIPTS) app.get(`/dashboard/${name}`, hidden, sendAsset(name));
  app.get("/dashboard/style.css", hidden, sendAsset("style.css"));
}
