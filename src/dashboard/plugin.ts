/**
 * The admin dashboard at /dashboard: the page (routes/assets.ts) and its small JSON API, one route
 * family per file in routes/: sessions (sign-in with the admin token, cookie + CSRF header),
 * keys (list, create, revoke), key settings (expiry, rate limit, quota), usage for the charts.
 */
import type { FastifyInstance } from "fastify";
import { assetRoutes } from "./routes/assets.js";
import { keySettingRoutes } from "./routes/key-settings.js";
import { keyRoutes } from "./routes/keys.js";
import { sessionRoutes } from "./routes/session.js";
import { usageRoute } from "./routes/usage.js";

export { requestIsHttps, SESSION_COOKIE } from "./routes/session.js";

export interface DashboardOptions {
  /** sha256 hex of the admin token, or a function returning it (read at each sign-in). */
  adminTokenHash: string | (() => string);
}

export function dashboardPlugin(options: DashboardOptions): (app: FastifyInstance) => Promise<void> {
  const { adminTokenHash: configured } = options;
  const adminTokenHash = typeof configured === "function" ? configured : () => configured;
  return async function dashboard(app) {
    await app.register(assetRoutes);
    await app.register(sessionRoutes(adminTokenHash));
    await app.register(keyRoutes);
    await app.register(keySettingRoutes);
    await app.register(usageRoute);
  };
}
