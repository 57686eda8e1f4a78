/**
 * dashboard/ — the admin page at /dashboard and its small JSON API: sign in with the admin token
 * (a session cookie, CSRF header on every change), create and revoke API keys, set their token
 * quotas, see usage. The page (index.html, style.css, app.js and the ES modules it imports, checked
 * by tsconfig.dashboard.json) loads nothing from outside the service.
 *
 *   createServer({ …, plugins: [dashboardPlugin({ adminTokenHash })] });
 */
export { dashboardPlugin, requestIsHttps, SESSION_COOKIE, type DashboardOptions } from "./plugin.js";
