// @ts-check
// The keys view: create a key (shown once) with an optional token quota, expiry and rate limit;
// list the keys with their usage and last use; change a key's quota, expiry and rate limit;
// revoke keys.
import { $, api, button, cell, copyText, input, isSignedOut, messageOf, show, showError, signedOut } from "./shared.js";
import { renderUsageKeys } from "./usage.js";

/** @typedef {import("./shared.js").KeyRow} KeyRow */

/**
 * A quota typed by the admin: "" (or "none", "unlimited") is unlimited (null), else whole tokens.
 * @param {string} text
 */
export function parseQuota(text) {
  const value = text.trim().toLowerCase();
  if (value === "" || value === "none" || value === "unlimited") return null;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new Error("the quota must be a whole number of tokens, or empty for unlimited");
  }
  return Number(value);
}

/**
 * A rate limit typed by the admin: "" (or "none", "default") is the service's (null), else requests per minute.
 * @param {string} text
 */
export function parseRateLimit(text) {
  const value = text.trim().toLowerCase();
  if (value === "" || value === "none" || value === "default") return null;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new Error("the rate limit must be a whole number of requests per minute, or empty for the service's limit");
  }
  return Number(value);
}

/**
 * An expiry typed by the admin: "" (or "none", "never") is never (null); the server checks the rest.
 * @param {string} text
 */
export function parseExpiry(text) {
  const value = text.trim();
  if (value === "" || value.toLowerCase() === "none" || value.toLowerCase() === "never") return null;
  return value;
}

/**
 * A date and time cell that wraps only between the date and the time (tables stay narrow on phones).
 * @param {string | null} iso
 */
function timeCell(iso, suffix = "", className = "") {
  if (!iso) return cell("never", className);
  const date = new Date(iso);
  const day = document.createElement("span");
  day.className = "nowrap";
  // The year only when it is not this one: the table stays narrow enough for a laptop's screen.
  const year = date.getFullYear() === new Date().getFullYear() ? undefined : "numeric";
  day.textContent = date.toLocaleDateString(undefined, { year, month: "short", day: "numeric" });
  const time = document.createElement("span");
  time.className = "nowrap";
  time.textContent = date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }) + suffix;
  const td = cell("", className);
  td.append(day, " ", time);
  return td;
}

function rateLimitText(/** @type {KeyRow} */ key) {
  return key.rate_limit === null || key.rate_limit === undefined ? "service default" : `${key.rate_limit.toLocaleString()}/min`;
}

function quotaText(/** @type {KeyRow} */ key) {
  if (key.quota === null || key.quota === undefined) return "unlimited";
  return `${key.quota.toLocaleString()} (${(key.quota_remaining ?? 0).toLocaleString()} left)`;
}

function renderKeys(/** @type {KeyRow[]} */ keys) {
  const body = $("keys-body");
  body.replaceChildren();
  show($("no-keys"), keys.length === 0);
  for (const key of keys) {
    const row = document.createElement("tr");
    row.dataset.keyId = String(key.id);
    if (key.revoked_at) row.className = "revoked";
    row.append(
      cell(key.name, "name"),
      cell(`${key.prefix}…`, "prefix"),
      timeCell(key.created_at),
      cell(String(key.requests), "num"),
      cell(String(key.tokens), "num"),
      timeCell(key.last_used_at),
      cell(quotaText(key), key.quota_remaining === 0 ? "num exhausted" : "num"),
      timeCell(key.expires_at, key.expired ? " (expired)" : "", key.expired ? "exhausted" : ""),
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
      const group = document.createElement("div");
      group.className = "action-buttons";
      actions.append(group);
      group.append(
        actionButton("Quota", key.name, "Set or clear this key's token quota", "secondary small", (b) => editQuota(key, b)),
        actionButton("Expiry", key.name, "Set or clear when this key expires", "secondary small", (b) => editExpiry(key, b)),
        actionButton("Rate limit", key.name, "Set or clear this key's own rate limit", "secondary small", (b) => editRateLimit(key, b)),
        actionButton("Revoke", key.name, "", "danger", (b) => revokeKey(key, b)),
      );
    }
    row.append(actions);
    body.append(row);
  }
}

export async function refreshKeys() {
  try {
    const data = /** @type {{ keys: KeyRow[] }} */ (await api("GET", "/dashboard/api/keys"));
    renderKeys(data.keys);
    renderUsageKeys(data.keys);
  } catch (error) {
    if (isSignedOut(error)) return signedOut();
    showError($("create-error"), messageOf(error));
  }
}

/**
 * A row's button: its label, tooltip and class; `onClick` gets the button (to disable it while
 * busy). Its accessible name also says which key ("Quota of billing-service"), read out of context.
 * @param {string} label
 * @param {string} keyName
 * @param {string} title
 * @param {string} className
 * @param {(button: HTMLButtonElement) => unknown} onClick
 */
function actionButton(label, keyName, title, className, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = className;
  const which = document.createElement("span");
  which.className = "visually-hidden";
  which.textContent = ` of ${keyName}`;
  button.append(label, which);
  if (title) button.title = title;
  button.addEventListener("click", () => onClick(button));
  return button;
}

/**
 * Asks for a value, posts it with the session's CSRF header, refreshes the list; errors shown.
 * @param {HTMLButtonElement} button
 * @param {string} question
 * @param {string} current
 * @param {string} path
 * @param {(answer: string) => object} toBody
 */
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
    showError($("create-error"), messageOf(error));
  }
}

/**
 * @param {KeyRow} key
 * @param {HTMLButtonElement} button
 */
function editQuota(key, button) {
  return editSetting(
    button,
    `Token quota of "${key.name}": the most tokens it may generate in all (it has used ${key.tokens}). Empty for unlimited.`,
    key.quota === null || key.quota === undefined ? "" : String(key.quota),
    `/dashboard/api/keys/${key.id}/quota`,
    (answer) => ({ quota: parseQuota(answer) }),
  );
}

/**
 * @param {KeyRow} key
 * @param {HTMLButtonElement} button
 */
function editExpiry(key, button) {
  return editSetting(
    button,
    `Expiry of "${key.name}": a date (YYYY-MM-DD, 00:00 UTC) or an ISO date and time with its offset. Empty: never expires.`,
    key.expires_at || "",
    `/dashboard/api/keys/${key.id}/expiry`,
    (answer) => ({ expires_at: parseExpiry(answer) }),
  );
}

/**
 * @param {KeyRow} key
 * @param {HTMLButtonElement} button
 */
function editRateLimit(key, button) {
  return editSetting(
    button,
    `Rate limit of "${key.name}" in requests per minute, replacing the service's limit for this key. Empty: the service's limit.`,
    key.rate_limit === null || key.rate_limit === undefined ? "" : String(key.rate_limit),
    `/dashboard/api/keys/${key.id}/rate-limit`,
    (answer) => ({ rate_limit: parseRateLimit(answer) }),
  );
}

/**
 * @param {KeyRow} key
 * @param {HTMLButtonElement} button
 */
async function revokeKey(key, button) {
  if (!window.confirm(`Revoke the key "${key.name}"? Clients using it will get 401.`)) return;
  button.disabled = true;
  try {
    await api("POST", `/dashboard/api/keys/${key.id}/revoke`, {});
    await refreshKeys();
  } catch (error) {
    button.disabled = false;
    showError($("create-error"), messageOf(error));
  }
}

async function copyKey() {
  const value = $("new-key-value");
  const copied = await copyText(value.textContent ?? "", value);
  $("copy-status").textContent = copied ? "Copied to clipboard" : "Select the key and copy it";
}

/** @typedef {{ id: number, name: string, key: string, prefix: string }} CreatedKey What POST /dashboard/api/keys answers: the key itself, shown this once. */

async function createKey(/** @type {SubmitEvent} */ event) {
  event.preventDefault();
  showError($("create-error"), "");
  try {
    /** @type {{ name: string, quota?: number, expires_at?: string, rate_limit?: number }} */
    const body = { name: input("key-name").value };
    const quota = parseQuota(input("key-quota").value);
    if (quota !== null) body.quota = quota;
    const expiresAt = parseExpiry(input("key-expires").value);
    if (expiresAt !== null) body.expires_at = expiresAt;
    const rateLimit = parseRateLimit(input("key-rate-limit").value);
    if (rateLimit !== null) body.rate_limit = rateLimit;
    const created = /** @type {CreatedKey} */ (await api("POST", "/dashboard/api/keys", body));
    $("new-key-name").textContent = created.name;
    $("new-key-value").textContent = created.key;
    $("copy-status").textContent = "";
    show($("new-key"), true);
    input("key-name").value = "";
    input("key-quota").value = "";
    input("key-expires").value = "";
    input("key-rate-limit").value = "";
    await refreshKeys();
  } catch (error) {
    showError($("create-error"), messageOf(error));
  }
}

export function initKeys() {
  $("create-form").addEventListener("submit", createKey);
  button("copy-key").addEventListener("click", copyKey);
}
