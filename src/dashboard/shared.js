// @ts-check
// What every view of the dashboard uses: the session (its CSRF token, who to tell when it is
// gone), calls to the dashboard's JSON API, the shapes of its answers, and small DOM helpers.

/**
 * A key as GET /dashboard/api/keys lists it (plugin.ts).
 * @typedef {object} KeyRow
 * @property {number} id
 * @property {string} name
 * @property {string} prefix
 * @property {string} created_at
 * @property {string | null} revoked_at
 * @property {number} requests
 * @property {number} tokens
 * @property {string | null} last_used_at
 * @property {number | null} quota null: unlimited.
 * @property {number | null} quota_remaining
 * @property {string | null} expires_at null: never.
 * @property {boolean} expired
 * @property {number | null} rate_limit Requests per minute; null: the service's.
 */

/** The session: its CSRF token (null: signed out), sent on every change. */
export const session = {
  /** @type {string | null} */
  csrf: null,
  /** What signing out does (app.js sets it): a view that gets a 401 calls it through signedOut(). */
  onSignedOut: () => {},
};

/** The session ended (a 401): back to the sign-in form. */
export function signedOut() {
  session.onSignedOut();
}

/** An error answer of an API: its HTTP status and, from the OpenAI routes, the body field it is about. */
export class ApiError extends Error {
  /**
   * @param {string} message
   * @param {number | undefined} status
   * @param {string | undefined} [param]
   */
  constructor(message, status, param) {
    super(message);
    this.status = status;
    this.param = param;
  }
}

/** Whether `error` says the session is gone. */
export function isSignedOut(/** @type {unknown} */ error) {
  return error instanceof ApiError && error.status === 401;
}

/** The message of anything thrown (fetch's own failures are TypeErrors and DOMExceptions). */
export function messageOf(/** @type {unknown} */ error) {
  if (error instanceof Error || error instanceof DOMException) return error.message;
  return String(error);
}

/**
 * A call to the dashboard's API with the session's cookie (and CSRF header on a change); an error
 * answer throws an ApiError. The answer's shape is the caller's to state (see plugin.ts).
 * @param {"GET" | "POST"} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {AbortSignal} [signal]
 * @returns {Promise<unknown>}
 */
export async function api(method, path, body, signal) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (session.csrf && method !== "GET") headers["x-csrf-token"] = session.csrf;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    signal,
  });
  /** @type {{ error?: unknown }} */
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok)
    throw new ApiError(typeof data.error === "string" && data.error ? data.error : `HTTP ${response.status}`, response.status);
  return data;
}

/**
 * The element with this id, of this class (HTMLElement unless told): a page that lacks it, or has
 * another kind of element there, is a mistake worth a clear error rather than a null later.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {new () => T} [type]
 * @returns {T}
 */
export function $(id, type) {
  const found = document.getElementById(id);
  const expected = type ?? HTMLElement;
  if (!(found instanceof expected)) throw new Error(`the page has no ${expected.name} #${id}`);
  return /** @type {T} */ (found);
}

/** The <input> with this id. */
export const input = (/** @type {string} */ id) => $(id, HTMLInputElement);
/** The <textarea> with this id. */
export const textarea = (/** @type {string} */ id) => $(id, HTMLTextAreaElement);
/** The <button> with this id. */
export const button = (/** @type {string} */ id) => $(id, HTMLButtonElement);

/** The value of the checked radio button of group `name`. */
export function checkedValue(/** @type {string} */ name) {
  const checked = document.querySelector(`input[name="${name}"]:checked`);
  if (!(checked instanceof HTMLInputElement)) throw new Error(`no choice of ${name} is checked`);
  return checked.value;
}

/**
 * @param {HTMLElement} element
 * @param {boolean} visible
 */
export function show(element, visible) {
  element.hidden = !visible;
}

/**
 * @param {HTMLElement} element
 * @param {string} message "": hidden.
 */
export function showError(element, message) {
  element.textContent = message || "";
  show(element, Boolean(message));
}

/**
 * A new element with a class and attributes (ids, ARIA, roles).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} [className]
 * @param {Record<string, string>} [attributes]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function element(tag, className, attributes = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/**
 * A table cell.
 * @param {string} text
 * @param {string} [className]
 */
export function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

/**
 * Copies `text`; where the clipboard API is refused, selects `element`'s text and tries the legacy command.
 * @param {string} text
 * @param {HTMLElement} element
 */
export async function copyText(text, element) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = window.getSelection();
    if (!selection) return false;
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand("copy");
  }
}
