// Trellis dashboard: sign in, create keys (shown once) with an optional token quota, expiry and
// rate limit, change a key's quota, expiry and rate limit, revoke keys, see usage and last use.
"use strict";

const $ = (id) => document.getElementById(id);
let csrf = null;

async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (csrf && method !== "GET") headers["x-csrf-token"] = csrf;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) {
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function show(element, visible) {
  element.hidden = !visible;
}

function showError(element, message) {
  element.textContent = message || "";
  show(element, Boolean(message));
}

function formatTime(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  return date.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

/** A quota typed by the admin: "" (or "none", "unlimited") is unlimited (null), else whole tokens. */
function parseQuota(text) {
  const value = text.trim().toLowerCase();
  if (value === "" || value === "none" || value === "unlimited") return null;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new Error("the quota must be a whole number of tokens, or empty for unlimited");
  }
  return Number(value);
}

/** A rate limit typed by the admin: "" (or "none", "default") is the service's (null), else requests per minute. */
function parseRateLimit(text) {
  const value = text.trim().toLowerCase();
  if (value === "" || value === "none" || value === "default") return null;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new Error("the rate limit must be a whole number of requests per minute, or empty for the service's limit");
  }
  return Number(value);
}

/** An expiry typed by the admin: "" (or "none", "never") is never (null); the server checks the rest. */
function parseExpiry(text) {
  const value = text.trim();
  if (value === "" || value.toLowerCase() === "none" || value.toLowerCase() === "never") return null;
  return value;
}

function expiryText(key) {
  if (!key.expires_at) return "never";
  return key.expired ? `${formatTime(key.expires_at)} (expired)` : formatTime(key.expires_at);
}

function rateLimitText(key) {
  return key.rate_limit === null || key.rate_limit === undefined ? "service default" : `${key.rate_limit.toLocaleString()}/min`;
}

function quotaText(key) {
  if (key.quota === null || key.quota === undefined) return "unlimited";
  return `${key.quota.toLocaleString()} (${key.quota_remaining.toLocaleString()} left)`;
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function renderKeys(keys) {
  const body = $("keys-body");
  body.replaceChildren();
  show($("no-keys"), keys.length === 0);
  for (const key of keys) {
    const row = document.createElement("tr");
    row.dataset.keyId = String(key.id);
    if (key.revoked_at) row.className = "revoked";
    row.append(
      cell(key.name),
      cell(`${key.prefix}…`),
      cell(formatTime(key.created_at)),
      cell(String(key.requests), "num"),
      cell(String(key.tokens), "num"),
      cell(formatTime(key.last_used_at)),
      cell(quotaText(key), key.quota_remaining === 0 ? "num exhausted" : "num"),
      cell(expiryText(key), key.expired ? "exhausted" : ""),
      cell(rateLimitText(key), "num"),
    );
    const status = document.createElement("td");
    const badge = document.createElement("span");
    badge.className = key.revoked_at ? "badge revoked" : "badge active";
    badge.textContent = key.revoked_at ? "revoked" : "active";
    status.append(badge);
    row.append(status);
    const actions = document.createElement("td");
    actions.className = "actions";
    if (!key.revoked_at) {
      actions.append(
        actionButton("Quota", "Set or clear this key's token quota", "secondary small", (b) => editQuota(key, b)),
        actionButton("Expiry", "Set or clear when this key expires", "secondary small", (b) => editExpiry(key, b)),
        actionButton("Rate limit", "Set or clear this key's own rate limit", "secondary small", (b) => editRateLimit(key, b)),
        actionButton("Revoke", "", "danger", (b) => revokeKey(key, b)),
      );
    }
    row.append(actions);
    body.append(row);
  }
}

async function refreshKeys() {
  try {
    const data = await api("GET", "/dashboard/api/keys");
    renderKeys(data.keys);
  } catch (error) {
    if (error.status === 401) return showSignIn();
    showError($("create-error"), error.message);
  }
}

/** A row's button: its label, tooltip and class; `onClick` gets the button (to disable it while busy). */
function actionButton(label, title, className, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = className;
  button.textContent = label;
  if (title) button.title = title;
  button.addEventListener("click", () => onClick(button));
  return button;
}

function editQuota(key, button) {
  return editSetting(
    button,
    `Token quota of "${key.name}": the most tokens it may generate in all (it has used ${key.tokens}). Empty for unlimited.`,
    key.quota === null || key.quota === undefined ? "" : String(key.quota),
    `/dashboard/api/keys/${key.id}/quota`,
    (answer) => ({ quota: parseQuota(answer) }),
  );
}

/** Asks for a value, posts it with the session's CSRF header, refreshes the list; errors shown. */
async function editSetting(button, question, current, path, toBody) {
  const answer = window.prompt(question, current);
  if (answer === null) return;
  showError($("create-error"), "");
  button.disabled = true;
  try {
    await api("POST", path, toBody(answer));
    await refreshKeys();
  } catch (error) {
    button.disabled = false;
    showError($("create-error"), error.message);
  }
}

function editExpiry(key, button) {
  return editSetting(
    button,
    `Expiry of "${key.name}": a date (YYYY-MM-DD, 00:00 UTC) or an ISO date and time with its offset. Empty: never expires.`,
    key.expires_at || "",
    `/dashboard/api/keys/${key.id}/expiry`,
    (answer) => ({ expires_at: parseExpiry(answer) }),
  );
}

function editRateLimit(key, button) {
  return editSetting(
    button,
    `Rate limit of "${key.name}" in requests per minute, replacing the service's limit for this key. Empty: the service's limit.`,
    key.rate_limit === null || key.rate_limit === undefined ? "" : String(key.rate_limit),
    `/dashboard/api/keys/${key.id}/rate-limit`,
    (answer) => ({ rate_limit: parseRateLimit(answer) }),
  );
}

async function revokeKey(key, button) {
  if (!window.confirm(`Revoke the key "${key.name}"? Clients using it will get 401.`)) return;
  button.disabled = true;
  try {
    await api("POST", `/dashboard/api/keys/${key.id}/revoke`, {});
    await refreshKeys();
  } catch (error) {
    button.disabled = false;
    showError($("create-error"), error.message);
  }
}

function showSignIn() {
  csrf = null;
  show($("sign-in"), true);
  show($("keys-panel"), false);
  show($("sign-out"), false);
  $("admin-token").focus();
}

function showPanel() {
  show($("sign-in"), false);
  show($("keys-panel"), true);
  show($("sign-out"), true);
  return refreshKeys();
}

async function copyKey() {
  const value = $("new-key-value").textContent;
  let copied = false;
  try {
    await navigator.clipboard.writeText(value);
    copied = true;
  } catch {
    // Older or restricted browsers: select the text and use the legacy copy command.
    const range = document.createRange();
    range.selectNodeContents($("new-key-value"));
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    copied = document.execCommand("copy");
  }
  $("copy-status").textContent = copied ? "Copied to clipboard" : "Select the key and copy it";
}

document.addEventListener("DOMContentLoaded", async () => {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showError($("sign-in-error"), "");
    try {
      const data = await api("POST", "/dashboard/api/login", { token: $("admin-token").value });
      csrf = data.csrf;
      $("admin-token").value = "";
      await showPanel();
    } catch (error) {
      showError($("sign-in-error"), error.message);
    }
  });

  $("create-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    showError($("create-error"), "");
    try {
      const body = { name: $("key-name").value };
      const quota = parseQuota($("key-quota").value);
      if (quota !== null) body.quota = quota;
      const expiresAt = parseExpiry($("key-expires").value);
      if (expiresAt !== null) body.expires_at = expiresAt;
      const rateLimit = parseRateLimit($("key-rate-limit").value);
      if (rateLimit !== null) body.rate_limit = rateLimit;
      const created = await api("POST", "/dashboard/api/keys", body);
      $("new-key-name").textContent = created.name;
      $("new-key-value").textContent = created.key;
      $("copy-status").textContent = "";
      show($("new-key"), true);
      $("key-name").value = "";
      $("key-quota").value = "";
      $("key-expires").value = "";
      $("key-rate-limit").value = "";
      await refreshKeys();
    } catch (error) {
      showError($("create-error"), error.message);
    }
  });

  $("copy-key").addEventListener("click", copyKey);

  $("sign-out").addEventListener("click", async () => {
    try {
      await api("POST", "/dashboard/api/logout", {});
    } finally {
      show($("new-key"), false);
      showSignIn();
    }
  });

  try {
    const session = await api("GET", "/dashboard/api/session");
    if (session.signed_in) {
      csrf = session.csrf;
      await showPanel();
    } else showSignIn();
  } catch {
    showSignIn();
  }
});
