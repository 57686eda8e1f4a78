// @ts-check
// Trellis dashboard, the page's entry module: signing in and out, and which views show. The views
// are modules of their own: keys.js (create, list, change and revoke keys), usage.js (usage over
// time as SVG charts with data tables), playground.js (a request against the public API with a
// key; playground-errors.js marks its errors, snippets.js copies it as curl, TypeScript or
// Python); shared.js holds the session, the API calls and DOM helpers.
// Plain browser ES modules (strict, deferred, nothing global), no build step: the page's CSP
// allows only scripts from this service. `npm run typecheck` checks them from their JSDoc
// (tsconfig.dashboard.json); Biome lints them.
import { initKeys, refreshKeys } from "./keys.js";
import { initPlayground, signOutPlayground } from "./playground.js";
import { $, api, input, messageOf, session, show, showError } from "./shared.js";
import { clearUsage, initUsage, refreshUsage } from "./usage.js";

/** @typedef {{ signed_in: true, csrf: string }} SignedIn The session's CSRF token, for every change. */
/** @typedef {SignedIn | { signed_in: false }} SessionAnswer */

function showSignIn() {
  session.csrf = null;
  signOutPlayground();
  show($("sign-in"), true);
  show($("keys-panel"), false);
  show($("usage"), false);
  clearUsage();
  show($("playground"), false);
  show($("site-nav"), false);
  show($("sign-out"), false);
  input("admin-token").focus();
}

function showPanel() {
  show($("sign-in"), false);
  show($("keys-panel"), true);
  show($("usage"), true);
  show($("playground"), true);
  show($("site-nav"), true);
  show($("sign-out"), true);
  void refreshUsage();
  return refreshKeys();
}

document.addEventListener("DOMContentLoaded", async () => {
  session.onSignedOut = showSignIn;
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showError($("sign-in-error"), "");
    try {
      const data = /** @type {SignedIn} */ (await api("POST", "/dashboard/api/login", { token: input("admin-token").value }));
      session.csrf = data.csrf;
      input("admin-token").value = "";
      await showPanel();
    } catch (error) {
      showError($("sign-in-error"), messageOf(error));
    }
  });

  initKeys();
  initPlayground();
  initUsage();

  $("sign-out").addEventListener("click", async () => {
    try {
      await api("POST", "/dashboard/api/logout", {});
    } finally {
      show($("new-key"), false);
      showSignIn();
    }
  });

  try {
    const answer = /** @type {SessionAnswer} */ (await api("GET", "/dashboard/api/session"));
    if (answer.signed_in) {
      session.csrf = answer.csrf;
      await showPanel();
    } else showSignIn();
  } catch {
    showSignIn();
  }
});
