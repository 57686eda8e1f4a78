// Trellis dashboard: sign in, create keys (shown once) with an optional token quota, expiry and
// rate limit, change a key's quota, expiry and rate limit, revoke keys, see usage and last use;
// usage over time as charts (requests, tokens and refusals per hour or day, of one key or all,
// drawn as inline SVG with a data table beside each); and a playground that runs a request
// against the public API with a key (regex, grammar, JSON Schema, categorization, or an OpenAI
// chat streamed token by token with each token's probability).
// Plain browser JavaScript (a module: strict, deferred, nothing global), no build step: the page's
// CSP allows only scripts from this service.

const $ = (id) => document.getElementById(id);
let csrf = null;

async function api(method, path, body, signal) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (csrf && method !== "GET") headers["x-csrf-token"] = csrf;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    signal,
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

/** A date and time cell that wraps only between the date and the time (tables stay narrow on phones). */
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

async function refreshKeys() {
  try {
    const data = await api("GET", "/dashboard/api/keys");
    renderKeys(data.keys);
    renderUsageKeys(data.keys);
  } catch (error) {
    if (error.status === 401) return showSignIn();
    showError($("create-error"), error.message);
  }
}

/**
 * A row's button: its label, tooltip and class; `onClick` gets the button (to disable it while
 * busy). Its accessible name also says which key ("Quota of billing-service"), read out of context.
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
  stopRun();
  // The playground's key lives only in this input: signing out forgets it.
  $("pg-key").value = "";
  show($("sign-in"), true);
  show($("keys-panel"), false);
  show($("usage"), false);
  clearUsage();
  show($("playground"), false);
  show($("site-nav"), false);
  show($("sign-out"), false);
  $("admin-token").focus();
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

/** Copies `text`; where the clipboard API is refused, selects `element`'s text and tries the legacy command. */
async function copyText(text, element) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand("copy");
  }
}

async function copyKey() {
  const copied = await copyText($("new-key-value").textContent, $("new-key-value"));
  $("copy-status").textContent = copied ? "Copied to clipboard" : "Select the key and copy it";
}

// ---------------------------------------------------------------------------------------------
// Playground: runs one request against the public API with a key typed (or just created) here.
// The key is read from its input at run time and kept nowhere else (no storage, no cookie).

/** What each kind sends, and how its form reads. `field` is the body field the constraint goes in. */
const KINDS = {
  regex: {
    path: "/v1/completion/regex",
    field: "pattern",
    promptLabel: "Prompt",
    constraintLabel: "Pattern (Python re, full match)",
    hint: "The completion fully matches this regular expression.",
    rows: 2,
    example: { prompt: "The year the Berlin wall fell: ", constraint: "(19|20)[0-9]{2}" },
  },
  grammar: {
    path: "/v1/completion/cfg",
    field: "grammar",
    promptLabel: "Prompt",
    constraintLabel: "Grammar (Lark, LALR, start rule start)",
    hint: "The completion is a sentence of this grammar.",
    rows: 5,
    example: { prompt: "A list of two colors: ", constraint: 'start: "[" COLOR ", " COLOR "]"\nCOLOR: "red" | "green" | "blue"' },
  },
  json: {
    path: "/v1/completion/json",
    field: "schema",
    promptLabel: "Prompt",
    constraintLabel: "JSON Schema",
    hint: "The completion is a JSON document valid against this schema.",
    rows: 8,
    example: {
      prompt: "A user: ",
      constraint: JSON.stringify(
        {
          type: "object",
          properties: { name: { type: "string", maxLength: 20 }, age: { type: "integer", minimum: 0 } },
          required: ["name", "age"],
          additionalProperties: false,
        },
        null,
        2,
      ),
    },
  },
  categorize: {
    path: "/v1/categorize",
    field: "categories",
    promptLabel: "Prompt",
    constraintLabel: "Categories (one per line)",
    hint: "The answer is one of these lines (or several, or none, as allowed below), each shown with its probability.",
    rows: 4,
    example: { prompt: "What animal barks?", constraint: "dog\ncat\nbird\nfish" },
  },
  chat: {
    path: "/v1/chat/completions",
    field: "response_format",
    promptLabel: "Message",
    constraintLabel: "JSON Schema for response_format (optional)",
    hint: "Empty: free text. A schema: the answer is a JSON document valid against it (response_format json_schema).",
    rows: 4,
    example: { prompt: "Tell me a short story about a robot.", constraint: "" },
  },
};

const OUTPUT_HINTS = {
  chat: "The answer streams in, each token in its own shade. Hover a token, or Tab to the answer and move with ← and →, for its probability.",
  categorize: "Every category with its probability, most likely first; the chosen ones are marked.",
  thiggle:
    "This endpoint answers with the whole completion at once (it reports no tokens); choose Chat to watch tokens stream in with their probabilities.",
};

const playground = {
  kind: "regex",
  /** Prompt and constraint typed for each kind, so switching kinds loses nothing. */
  drafts: {},
  /** The AbortController of the request in flight, or null. */
  running: null,
  /** The last request sent: {kind, url, body, bodyText}; what the copy buttons reproduce. */
  lastRequest: null,
  /** Served model id per API key (the chat body needs it); only in memory, like the key. */
  models: new Map(),
};

/** A mistake in the form found before sending: shown on its input. */
class FormError extends Error {
  constructor(message, input, range) {
    super(message);
    this.input = input;
    this.range = range;
  }
}

function selectedKind() {
  return document.querySelector('input[name="kind"]:checked').value;
}

/** Shows `kind`'s form; `keepDraft`: remember what was typed for the kind shown until now. */
function setKind(kind, keepDraft = true) {
  if (keepDraft) playground.drafts[playground.kind] = { prompt: $("pg-prompt").value, constraint: $("pg-constraint").value };
  playground.kind = kind;
  const spec = KINDS[kind];
  const draft = playground.drafts[kind] ?? spec.example;
  $("pg-prompt").value = draft.prompt;
  $("pg-constraint").value = draft.constraint;
  $("pg-constraint").rows = spec.rows;
  $("pg-prompt-label").textContent = spec.promptLabel;
  $("pg-constraint-label").textContent = spec.constraintLabel;
  $("pg-constraint-hint").textContent = spec.hint;
  $("pg-endpoint").textContent = `POST ${spec.path}`;
  $("pg-output-hint").textContent = OUTPUT_HINTS[kind] ?? OUTPUT_HINTS.thiggle;
  // Categorization takes no sampling knobs; it has its own two choices instead.
  show($("pg-knobs"), kind !== "categorize");
  show($("pg-cat-options"), kind === "categorize");
  clearConstraintError();
  updateCopyButtons();
}

/** An optional number input: undefined when empty, else a number that `check` accepts. */
function numberField(id, label, check, rule) {
  const text = $(id).value.trim();
  $(id).removeAttribute("aria-invalid");
  if (text === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || !check(value)) throw new FormError(`${label} must be ${rule}`, $(id));
  return value;
}

/** The request the form describes: {kind, path, body}; a FormError names what is wrong. */
async function buildRequest() {
  const kind = playground.kind;
  const spec = KINDS[kind];
  const prompt = $("pg-prompt").value;
  const constraint = $("pg-constraint").value;
  // Categorization has no sampling knobs (they are hidden): its own two choices instead.
  if (kind === "categorize") {
    if (constraint.trim() === "") throw new FormError(`${spec.constraintLabel} are required`, $("pg-constraint"));
    const body = { prompt, categories: categoriesOf(constraint), include_scores: true };
    if ($("pg-allow-multiple").checked) body.allow_multiple_classes = true;
    if ($("pg-allow-none").checked) body.allow_null_category = true;
    return { kind, path: spec.path, body };
  }
  const maxTokens = numberField("pg-max-tokens", "Max tokens", (v) => Number.isInteger(v) && v >= 1, "a whole number ≥ 1");
  const temperature = numberField("pg-temperature", "Temperature", (v) => v >= 0 && v <= 2, "between 0 and 2");
  const seed = numberField("pg-seed", "Seed", (v) => Number.isSafeInteger(v) && v >= 0, "a whole number ≥ 0");
  if (kind !== "chat" && constraint.trim() === "") throw new FormError(`${spec.constraintLabel} is required`, $("pg-constraint"));
  const schema = kind === "json" || (kind === "chat" && constraint.trim() !== "") ? parseSchemaText(constraint) : undefined;

  if (kind === "chat") {
    const body = { model: await modelId(), messages: [{ role: "user", content: prompt }] };
    if (maxTokens !== undefined) body.max_tokens = maxTokens;
    if (temperature !== undefined) body.temperature = temperature;
    if (seed !== undefined) body.seed = seed;
    // Per-token probabilities (the chosen token and the two next most likely) and the usage at the end.
    Object.assign(body, { logprobs: true, top_logprobs: 3, stream: true, stream_options: { include_usage: true } });
    if (schema !== undefined) body.response_format = { type: "json_schema", json_schema: { name: "playground", schema } };
    return { kind, path: spec.path, body };
  }
  const body = { prompt, [spec.field]: kind === "json" ? schema : constraint };
  if (maxTokens !== undefined) body.max_new_tokens = maxTokens;
  if (temperature !== undefined) body.temperature = temperature;
  if (seed !== undefined) body.seed = seed;
  return { kind, path: spec.path, body };
}

/**
 * The categories typed one per line (spaces around each trimmed, empty lines skipped); a repeated
 * one is marked in the editor (the service refuses duplicates).
 */
function categoriesOf(text) {
  const seen = new Set();
  const categories = [];
  let offset = 0;
  for (const line of text.split("\n")) {
    const category = line.trim();
    if (category !== "" && seen.has(category)) {
      const start = offset + line.indexOf(category);
      throw new FormError(`Category “${category}” is listed twice`, $("pg-constraint"), { start, end: start + category.length });
    }
    if (category !== "") {
      seen.add(category);
      categories.push(category);
    }
    offset += line.length + 1;
  }
  return categories;
}

/** The schema typed in the constraint editor; a syntax error is shown where it is. */
function parseSchemaText(text) {
  try {
    jsonSpans(text);
  } catch (error) {
    const at = error.position ?? 0;
    throw new FormError(`The schema is not valid JSON: ${error.message}`, $("pg-constraint"), { start: at, end: at + 1 });
  }
  return JSON.parse(text);
}

function apiKey() {
  const key = $("pg-key").value.trim();
  if (key === "") throw new FormError("Paste an API key first (or create one above and choose “Use in playground”)", $("pg-key"));
  return key;
}

/** The served model's id, asked once per key: a chat request must name it. */
async function modelId() {
  const key = apiKey();
  if (playground.models.has(key)) return playground.models.get(key);
  const response = await fetch("/v1/models", { headers: { authorization: `Bearer ${key}` }, credentials: "omit" });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(errorMessageOf(data, response.status)), { status: response.status });
  const id = data.data?.[0]?.id;
  if (!id) throw new Error("the service lists no model");
  playground.models.set(key, id);
  return id;
}

/** The message of an error body in either API's shape. */
function errorMessageOf(data, status) {
  if (typeof data.error === "string") return data.error;
  if (data.error && typeof data.error.message === "string") return data.error.message;
  return `HTTP ${status}`;
}

function resetResult() {
  $("pg-output").replaceChildren();
  $("pg-token-notes").replaceChildren();
  showError($("pg-error"), "");
  show($("pg-stats"), false);
  show($("pg-fix"), false);
  // A snippet shown is of the previous request: the copy buttons make the new one's.
  show($("pg-snippet-box"), false);
  clearConstraintError();
}

function setRunning(controller) {
  playground.running = controller;
  $("pg-run").disabled = controller !== null;
  $("pg-stop").disabled = controller === null;
  $("pg-output").setAttribute("aria-busy", String(controller !== null));
}

function stopRun() {
  playground.running?.abort();
}

async function runPlayground() {
  if (playground.running) return;
  resetResult();
  const controller = new AbortController();
  setRunning(controller);
  $("pg-status").textContent = "Running…";
  let request;
  try {
    const key = apiKey();
    request = await buildRequest();
    request.bodyText = JSON.stringify(request.body);
    request.url = new URL(request.path, window.location.origin).href;
    playground.lastRequest = request;
    updateCopyButtons();
    if (request.kind === "chat") await runChat(request, key, controller.signal);
    else if (request.kind === "categorize") await runCategorize(request, key, controller.signal);
    else await runCompletion(request, key, controller.signal);
  } catch (error) {
    if (controller.signal.aborted) {
      $("pg-status").textContent = `Stopped. ${tokenCount()} tokens arrived before the stop.`;
    } else if (error instanceof FormError) {
      $("pg-status").textContent = "Not sent: the form needs a fix.";
      showFormError(error);
    } else {
      const where = showApiError(error, request) === "editor" ? " The mistake is marked under the editor." : "";
      $("pg-status").textContent = `${error.status ? `Failed: HTTP ${error.status}.` : "Failed."}${where}`;
    }
  } finally {
    setRunning(null);
    // The request (answered or refused) is in the usage now: the charts show it.
    if (request?.url) void refreshUsage();
  }
}

/** POST with the key; an error answer becomes an Error carrying its status and message. */
async function post(request, key, signal) {
  const response = await fetch(request.path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: request.bodyText,
    signal,
    credentials: "omit",
  });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw Object.assign(new Error(errorMessageOf(data, response.status)), { status: response.status, param: data.error?.param });
  }
  return response;
}

/** The Thiggle endpoints answer once with the whole completion. */
async function runCompletion(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  const data = await response.json();
  const seconds = (performance.now() - started) / 1000;
  const span = document.createElement("span");
  span.className = "whole";
  span.textContent = data.completion;
  $("pg-output").append(span);
  $("pg-status").textContent = `Done: ${data.tokens_generated} tokens, stop reason ${data.stop_reason}.`;
  showStats([
    `${data.tokens_generated} tokens`,
    `${rate(data.tokens_generated, seconds)} tokens/s`,
    `${Math.round(seconds * 1000)} ms in all`,
  ]);
  if (Array.isArray(data.warnings) && data.warnings.length > 0) {
    showError($("pg-error"), `Warnings: ${data.warnings.map((w) => `${w.keyword} at ${w.pointer || "/"}: ${w.message}`).join("; ")}`);
  }
}

/** Categorization answers once: the chosen categories and every category's probability (include_scores). */
async function runCategorize(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  const data = await response.json();
  const seconds = (performance.now() - started) / 1000;
  const scores = data.scores ?? {};
  const chosen = new Set(data.choices);
  const ranked = request.body.categories
    .map((name, order) => ({ name, order, score: scores[name] ?? null }))
    .sort((a, b) => (b.score ?? -1) - (a.score ?? -1) || a.order - b.order);
  const list = document.createElement("ol");
  list.className = "cat-list";
  list.setAttribute("aria-label", "Categories, most likely first");
  for (const { name, score } of ranked) {
    const item = document.createElement("li");
    item.className = chosen.has(name) ? "cat chosen" : "cat";
    const label = document.createElement("span");
    label.className = "cat-name";
    label.textContent = name;
    const bar = document.createElement("span");
    bar.className = "cat-bar";
    bar.setAttribute("aria-hidden", "true");
    const fill = document.createElement("span");
    fill.className = "cat-fill";
    // A width set through the CSSOM (the page's CSP forbids style attributes, not this).
    fill.style.width = `${Math.max(0, Math.min(1, score ?? 0)) * 100}%`;
    bar.append(fill);
    const value = document.createElement("span");
    value.className = "cat-score";
    value.textContent = score === null ? "–" : share(score);
    item.append(label, bar, value);
    if (chosen.has(name)) {
      const badge = document.createElement("span");
      badge.className = "badge active";
      badge.textContent = "chosen";
      label.append(" ", badge);
    }
    list.append(item);
  }
  $("pg-output").append(list);
  const picked = data.choices.map((name) => (scores[name] === undefined ? name : `${name} (${share(scores[name])})`));
  $("pg-status").textContent = picked.length > 0 ? `Done: ${picked.join(", ")}.` : "Done: none of the categories fits.";
  showStats([`${request.body.categories.length} categories`, `${Math.round(seconds * 1000)} ms in all`]);
}

/** A probability in 0…1 as a percentage with one decimal (or two significant digits below 10 %). */
function share(probability) {
  const p = probability * 100;
  return `${p >= 10 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

function rate(tokens, seconds) {
  return seconds > 0 ? (tokens / seconds).toFixed(1) : "–";
}

function showStats(parts) {
  $("pg-stats").textContent = parts.join(" · ");
  show($("pg-stats"), true);
}

function tokenCount() {
  return $("pg-output").querySelectorAll(".tok").length;
}

/** The chat endpoint streams Server-Sent Events: each `data:` line a chunk, `[DONE]` at the end. */
async function runChat(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  $("pg-status").textContent = "Streaming…";
  let firstAt = null;
  let finish = null;
  let usage = null;
  for await (const event of serverSentEvents(response.body)) {
    if (event.data === "[DONE]") break;
    const chunk = JSON.parse(event.data);
    if (event.type === "error") throw Object.assign(new Error(errorMessageOf(chunk, 500)), { param: chunk.error?.param });
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const text = choice.delta?.content ?? "";
    if (text !== "") {
      firstAt ??= performance.now();
      appendTokens(text, choice.logprobs?.content ?? []);
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  const ended = performance.now();
  const tokens = usage?.completion_tokens ?? tokenCount();
  $("pg-status").textContent = `Done: ${tokens} tokens, finish reason ${finish ?? "unknown"}.`;
  const stats = [`${tokens} tokens`, `${rate(tokens, (ended - started) / 1000)} tokens/s`];
  if (firstAt !== null) stats.push(`first token after ${Math.round(firstAt - started)} ms`);
  showStats(stats);
}

/** Parses an SSE byte stream into {type, data} events (a blank line ends each event). */
async function* serverSentEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { type: "message", data: "" };
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.startsWith("event:")) event.type = line.slice(6).trim();
      }
      if (data.length > 0) yield { ...event, data: data.join("\n") };
      end = buffer.indexOf("\n\n");
    }
  }
}

function percent(logprob) {
  const p = Math.exp(logprob) * 100;
  return `${p >= 10 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

/** A token as people read it in a note: quotes, with whitespace spelled out. */
function shownToken(text) {
  return JSON.stringify(text);
}

/**
 * Appends a streamed piece of text as token spans. The service never splits a character across
 * events, so a piece may hold several tokens, and a token holding part of a character shows
 * lossily: when the tokens do not spell the piece exactly, the piece is one span described by them all.
 */
function appendTokens(text, logprobs) {
  const spelled = logprobs.map((t) => t.token).join("");
  if (logprobs.length > 0 && spelled === text) {
    for (const token of logprobs) addTokenSpan(token.token, token.logprob, token.top_logprobs ?? []);
  } else if (logprobs.length > 0) {
    const sum = logprobs.reduce((total, t) => total + t.logprob, 0);
    addTokenSpan(text, sum, []);
  } else addTokenSpan(text, null, []);
}

function addTokenSpan(text, logprob, alternatives) {
  const index = tokenCount();
  const span = document.createElement("span");
  span.className = "tok";
  span.textContent = text;
  // One tab stop for the whole answer (roving tabindex): the first token, then arrow keys.
  span.tabIndex = index === 0 ? 0 : -1;
  if (logprob !== null) {
    const others = alternatives.filter((a) => a.token !== text).map((a) => `${shownToken(a.token)} ${percent(a.logprob)}`);
    const note = `Token ${index + 1}, ${shownToken(text)}: probability ${percent(logprob)}${others.length > 0 ? `; next most likely ${others.join(", ")}` : ""}`;
    span.title = note;
    span.dataset.tip = percent(logprob);
    // The description lives outside the live region, so announcing the answer reads only its text.
    const noteElement = document.createElement("span");
    noteElement.id = `pg-tok-note-${index}`;
    noteElement.textContent = note;
    $("pg-token-notes").append(noteElement);
    span.setAttribute("aria-describedby", noteElement.id);
  }
  $("pg-output").append(span);
}

/** ← → Home End move between tokens of the answer (one tab stop for all of them). */
function moveTokenFocus(event) {
  const tokens = [...$("pg-output").querySelectorAll(".tok")];
  const at = tokens.indexOf(document.activeElement);
  if (at < 0) return;
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tokens.length - 1 }[event.key];
  if (next === undefined || next < 0 || next >= tokens.length) return;
  event.preventDefault();
  tokens[at].tabIndex = -1;
  tokens[next].tabIndex = 0;
  tokens[next].focus();
}

// --- Errors at their position --------------------------------------------------------------------

function showFormError(error) {
  if (error.input === $("pg-constraint")) return showConstraintError(error.message, error.range ?? null);
  showError($("pg-error"), error.message);
  if (error.input) {
    error.input.setAttribute("aria-invalid", "true");
    error.input.focus();
  }
}

/**
 * An error from the service: on the constraint editor when it is about the constraint ("editor"),
 * else below the result ("result").
 */
function showApiError(error, request) {
  const kind = request?.kind ?? playground.kind;
  // A 422 "needs at least N tokens": the constraint is fine, the budget too small; one click fixes it.
  const needed = /needs at least (\d+) tokens/.exec(error.message);
  if (needed) {
    showError($("pg-error"), error.message);
    offerFix(`Set max tokens to ${needed[1]}`, () => ($("pg-max-tokens").value = needed[1]));
    return "result";
  }
  if (aboutConstraint(kind, error)) {
    showConstraintError(error.message, locateError(kind, error.message, $("pg-constraint").value));
    return "editor";
  }
  showError($("pg-error"), error.message);
  return "result";
}

function offerFix(label, apply) {
  const button = $("pg-fix-button");
  button.textContent = label;
  button.onclick = () => {
    apply();
    show($("pg-fix"), false);
    $("pg-max-tokens").focus();
  };
  show($("pg-fix"), true);
}

/** Whether a 400/422 names the constraint's field (Thiggle: "pattern: …"; OpenAI: its param). */
function aboutConstraint(kind, error) {
  const field = kind === "chat" ? "schema" : KINDS[kind].field;
  if (kind === "categorize") return /^categories\b/.test(error.message);
  if (error.param === "schema" || error.param === "response_format") return kind === "chat";
  return error.message.startsWith(`${field}:`) || error.message.startsWith(`${field}[`);
}

/**
 * Where in the constraint text the service's message points, as {start, end} (UTF-16 offsets), or
 * null: regex errors say "at position N" (code points), grammar errors "line L, column C" (from 1),
 * JSON Schema errors a JSON pointer ("minLength at /properties/a/minLength: …").
 */
function locateError(kind, message, text) {
  if (kind === "regex") {
    const match = /at position (\d+)/.exec(message);
    if (!match) return null;
    const start = codePointOffset(text, Number(match[1]));
    return { start, end: Math.min(text.length, start + (text.codePointAt(start) > 0xffff ? 2 : 1)) };
  }
  if (kind === "grammar") return locateGrammarError(message, text);
  if (kind === "categorize") return locateCategory(message, text);
  const pointer = /\bat (\/[^\s:]*|the schema's root|the root)/.exec(message);
  if (!pointer) return null;
  let path = pointer[1].startsWith("/") ? pointer[1] : "";
  let spans;
  try {
    spans = jsonSpans(text);
  } catch {
    return null;
  }
  // A pointer into something the text does not spell (a default filled in): its nearest parent.
  while (!spans.has(path) && path !== "") path = path.slice(0, path.lastIndexOf("/"));
  return spans.get(path) ?? null;
}

/** "categories[N] …": the Nth category's line (empty lines are not categories); a message without an index: none. */
function locateCategory(message, text) {
  const match = /^categories\[(\d+)\]/.exec(message);
  if (!match) return null;
  let index = Number(match[1]);
  let offset = 0;
  for (const line of text.split("\n")) {
    const category = line.trim();
    if (category !== "" && index-- === 0) {
      const start = offset + line.indexOf(category);
      return { start, end: start + category.length };
    }
    offset += line.length + 1;
  }
  return null;
}

function locateGrammarError(message, text) {
  const match = /line (\d+),? column (\d+)/.exec(message);
  if (match) {
    const lines = text.split("\n");
    const line = Math.min(Number(match[1]), lines.length) - 1;
    let start = 0;
    for (let i = 0; i < line; i++) start += lines[i].length + 1;
    const lineEnd = start + lines[line].length;
    start = Math.min(start + Number(match[2]) - 1, lineEnd);
    // The word there (a rule or terminal name), else one character; at the end of a line, none.
    let end = start;
    while (end < lineEnd && /\w/.test(text[end])) end++;
    return { start, end: end === start && start < lineEnd ? start + 1 : end };
  }
  // No position, but a name in quotes ("Rule 'foo' used but not defined"): its first use.
  const named = /'([^']+)'/.exec(message);
  if (!named) return null;
  const escaped = named[1].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const found = new RegExp(`(?<![\\w])${escaped}(?![\\w])`).exec(text);
  return found ? { start: found.index, end: found.index + found[0].length } : null;
}

function lineStart(text, offset) {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/** The UTF-16 offset of code point `n` (the service counts code points, as Python does). */
function codePointOffset(text, n) {
  let offset = 0;
  for (let i = 0; i < n && offset < text.length; i++) offset += text.codePointAt(offset) > 0xffff ? 2 : 1;
  return offset;
}

/**
 * Where each value of a JSON text is: JSON pointer → {start, end}. Throws a SyntaxError with a
 * `position` at the first mistake (JSON.parse's own messages differ between browsers).
 */
function jsonSpans(text) {
  const spans = new Map();
  let i = 0;
  const fail = (what) => {
    throw Object.assign(new SyntaxError(`${what} at position ${i}`), { position: i });
  };
  const skipSpace = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] < " ") fail("a control character in a string");
      i += text[i] === "\\" ? 2 : 1;
    }
    if (i >= text.length) fail("an unterminated string");
    i++;
    try {
      return JSON.parse(text.slice(start, i));
    } catch {
      i = start;
      return fail("a bad escape in a string");
    }
  };
  const value = (pointer) => {
    skipSpace();
    const start = i;
    if (text[i] === "{") {
      i++;
      skipSpace();
      if (text[i] === "}") i++;
      else
        for (;;) {
          skipSpace();
          if (text[i] !== '"') fail("expected a property name");
          const key = string();
          skipSpace();
          if (text[i] !== ":") fail("expected ':'");
          i++;
          value(`${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`);
          skipSpace();
          if (text[i] === ",") i++;
          else if (text[i] === "}") {
            i++;
            break;
          } else fail("expected ',' or '}'");
        }
    } else if (text[i] === "[") {
      i++;
      skipSpace();
      if (text[i] === "]") i++;
      else
        for (let index = 0; ; index++) {
          value(`${pointer}/${index}`);
          skipSpace();
          if (text[i] === ",") i++;
          else if (text[i] === "]") {
            i++;
            break;
          } else fail("expected ',' or ']'");
        }
    } else if (text[i] === '"') string();
    else {
      const literal = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
      literal.lastIndex = i;
      if (!literal.exec(text)) fail(i >= text.length ? "unexpected end of the text" : "unexpected text");
      i = literal.lastIndex;
    }
    spans.set(pointer, { start, end: i });
  };
  value("");
  skipSpace();
  if (i < text.length) fail("unexpected text after the JSON value");
  return spans;
}

/**
 * Shows `message` under the constraint editor, marks `range` there (the offending line with the
 * range highlighted and a caret under it) and selects it in the editor, which gets the message as
 * its description.
 */
function showConstraintError(message, range) {
  const editor = $("pg-constraint");
  const text = editor.value;
  // Grammar errors quote the offending line with a caret after a blank line: the marker below
  // shows that already, so only the sentence before it is kept.
  const sentence = range ? message.split("\n\n")[0] : message;
  $("pg-constraint-message").textContent = range ? `${sentence} — ${whereIs(text, range.start)} is selected in the editor.` : sentence;
  $("pg-constraint-marker").replaceChildren(...(range ? markerOf(text, range) : []));
  show($("pg-constraint-marker"), range !== null);
  show($("pg-constraint-error"), true);
  editor.setAttribute("aria-invalid", "true");
  editor.setAttribute("aria-describedby", "pg-constraint-message pg-constraint-hint");
  editor.focus();
  if (range) editor.setSelectionRange(range.start, range.end);
}

function clearConstraintError() {
  show($("pg-constraint-error"), false);
  $("pg-constraint").removeAttribute("aria-invalid");
  $("pg-constraint").setAttribute("aria-describedby", "pg-constraint-hint");
}

function whereIs(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - lineStart(text, offset) + 1;
  return text.includes("\n") ? `line ${line}, column ${column}` : `column ${column}`;
}

/** The marker's nodes: the line holding the error (cut to ~60 characters around it), the range in <mark>, a caret line. */
function markerOf(text, range) {
  const from = lineStart(text, range.start);
  const lineEnd = text.indexOf("\n", range.start) < 0 ? text.length : text.indexOf("\n", range.start);
  const end = Math.max(range.start, Math.min(range.end, lineEnd));
  const windowStart = Math.max(from, range.start - 40);
  const windowEnd = Math.min(lineEnd, end + 40);
  const lead = windowStart > from ? "…" : "";
  const before = lead + text.slice(windowStart, range.start);
  const marked = text.slice(range.start, end);
  const mark = document.createElement("mark");
  mark.textContent = marked === "" ? " " : marked;
  const caret = document.createElement("span");
  caret.className = "caret";
  caret.setAttribute("aria-hidden", "true");
  caret.textContent = `\n${" ".repeat(before.length)}^${"~".repeat(Math.max(0, marked.length - 1))}`;
  const after = text.slice(end, windowEnd) + (windowEnd < lineEnd ? "…" : "");
  return [document.createTextNode(before), mark, document.createTextNode(after), caret];
}

// --- Copy as curl / SDK ----------------------------------------------------------------------------

/** What "Copy as …" offers for a kind: the OpenAI SDKs for chat, TypeScript's fetch for Thiggle's routes. */
const SNIPPETS = {
  curl: { label: "curl", make: (request) => curlSnippet(request) },
  python: { label: "Python (openai)", make: (request) => pythonSnippet(request) },
  sdk: {
    label: (kind) => (kind === "chat" ? "TypeScript (openai)" : "TypeScript (fetch)"),
    make: (request) => (request.kind === "chat" ? typescriptSnippet(request) : fetchSnippet(request)),
  },
};

function updateCopyButtons() {
  const request = playground.lastRequest;
  const kind = request?.kind ?? playground.kind;
  $("pg-copy-sdk").textContent = `Copy as ${SNIPPETS.sdk.label(kind)}`;
  show($("pg-copy-python"), kind === "chat");
  const title = request === null ? "Run a request first: the copy is of the request that ran" : "";
  for (const id of ["pg-copy-curl", "pg-copy-python", "pg-copy-sdk"]) {
    $(id).disabled = request === null;
    $(id).title = title;
  }
}

/** A word for the shell in single quotes (a quote inside becomes '\''). */
function shellQuote(text) {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The last request as curl, with the key left to the shell's $TRELLIS_API_KEY. */
function curlSnippet(request) {
  return [
    `curl -s${request.kind === "chat" ? "N" : ""} ${shellQuote(request.url)} \\`,
    `  -H "Authorization: Bearer $TRELLIS_API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(request.bodyText)}`,
  ].join("\n");
}

/**
 * The last Thiggle request as TypeScript (and JavaScript) fetch: the same body as an object literal.
 * Node 18+ runs it as an ES module (.mts or .mjs: it awaits at the top level).
 */
function fetchSnippet(request) {
  const body = tsLiteral(request.body, "  ");
  return [
    "// TypeScript or JavaScript, an ES module (Node 18+: snippet.mts or .mjs); the key comes from the environment.",
    `const response = await fetch(${JSON.stringify(request.url)}, {`,
    '  method: "POST",',
    "  headers: {",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the snippet's own template literal
    "    Authorization: `Bearer ${process.env.TRELLIS_API_KEY}`,",
    '    "Content-Type": "application/json",',
    "  },",
    `  body: JSON.stringify(${body}),`,
    "});",
    "const result = await response.json();",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the snippet's own template literal
    "if (!response.ok) throw new Error(`${response.status}: ${result.error}`);",
    request.kind === "categorize" ? "console.log(result.choices, result.scores);" : "console.log(result.completion);",
  ].join("\n");
}

/** The last chat request with the TypeScript `openai` SDK: the body as the create() call's object, streamed to stdout. */
function typescriptSnippet(request) {
  const base = new URL("/v1", request.url).href;
  return [
    "// npm install openai; an ES module (Node 18+: snippet.mts or .mjs); the key comes from the environment.",
    'import OpenAI from "openai";',
    "",
    `const client = new OpenAI({ baseURL: ${JSON.stringify(base)}, apiKey: process.env.TRELLIS_API_KEY });`,
    `const stream = await client.chat.completions.create(${tsLiteral(request.body, "")});`,
    "for await (const chunk of stream) {",
    "  const text = chunk.choices[0]?.delta?.content;",
    "  if (text) process.stdout.write(text);",
    "}",
    'process.stdout.write("\\n");',
  ].join("\n");
}

/** A JSON value as a TypeScript literal: keys unquoted where they are identifiers, short values on one line. */
function tsLiteral(value, indent) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const inner = `${indent}  `;
  const items = Array.isArray(value)
    ? value.map((item) => tsLiteral(item, inner))
    : Object.entries(value).map(
        ([key, item]) => `${/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)}: ${tsLiteral(item, inner)}`,
      );
  if (items.length === 0) return Array.isArray(value) ? "[]" : "{}";
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{ ", " }"];
  const oneLine = `${open}${items.join(", ")}${close}`;
  if (indent !== "" && oneLine.length + inner.length <= 100 && !oneLine.includes("\n")) return oneLine;
  return `${open.trim()}\n${items.map((item) => `${inner}${item},`).join("\n")}\n${indent}${close.trim()}`;
}

/** The last chat request with the Python `openai` SDK: each body field as a keyword argument. */
function pythonSnippet(request) {
  const base = new URL("/v1", request.url).href;
  const args = Object.entries(request.body).map(([name, value]) => `    ${name}=${pythonLiteral(value, "    ")},`);
  return [
    "import os",
    "",
    "from openai import OpenAI",
    "",
    `client = OpenAI(base_url=${JSON.stringify(base)}, api_key=os.environ["TRELLIS_API_KEY"])`,
    "stream = client.chat.completions.create(",
    ...args,
    ")",
    "for chunk in stream:",
    "    if chunk.choices and chunk.choices[0].delta.content:",
    '        print(chunk.choices[0].delta.content, end="", flush=True)',
    "print()",
  ].join("\n");
}

/** A JSON value as a Python literal (JSON strings are valid Python strings). */
function pythonLiteral(value, indent) {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value !== "object") return JSON.stringify(value);
  const inner = `${indent}    `;
  const items = Array.isArray(value)
    ? value.map((item) => pythonLiteral(item, inner))
    : Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${pythonLiteral(item, inner)}`);
  if (items.length === 0) return Array.isArray(value) ? "[]" : "{}";
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  const oneLine = `${open}${items.join(", ")}${close}`;
  if (oneLine.length + indent.length <= 88 && !oneLine.includes("\n")) return oneLine;
  return `${open}\n${items.map((item) => `${inner}${item},`).join("\n")}\n${indent}${close}`;
}

async function copySnippet(format) {
  const request = playground.lastRequest;
  if (!request) return;
  const snippet = SNIPPETS[format];
  const text = snippet.make(request);
  $("pg-snippet-kind").textContent = typeof snippet.label === "function" ? snippet.label(request.kind) : snippet.label;
  $("pg-snippet").textContent = text;
  show($("pg-snippet-box"), true);
  const copied = await copyText(text, $("pg-snippet"));
  $("pg-snippet-status").textContent = copied ? "Copied to clipboard." : "Select the text above and copy it.";
}

function usePlaygroundKey() {
  $("pg-key").value = $("new-key-value").textContent;
  playground.models.clear();
  $("copy-status").textContent = "The key is in the playground's API key field.";
}

function initPlayground() {
  for (const radio of document.querySelectorAll('input[name="kind"]')) radio.addEventListener("change", () => setKind(selectedKind()));
  setKind(selectedKind(), false);
  $("pg-form").addEventListener("submit", (event) => {
    event.preventDefault();
    void runPlayground();
  });
  // Ctrl/⌘+Enter runs from the text areas, where Enter is a new line.
  for (const id of ["pg-prompt", "pg-constraint"]) {
    $(id).addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        $("pg-form").requestSubmit();
      }
    });
  }
  $("pg-constraint").addEventListener("input", clearConstraintError);
  $("pg-key").addEventListener("input", () => {
    playground.models.clear();
    $("pg-key").removeAttribute("aria-invalid");
  });
  $("pg-stop").addEventListener("click", stopRun);
  $("pg-copy-curl").addEventListener("click", () => copySnippet("curl"));
  $("pg-copy-python").addEventListener("click", () => copySnippet("python"));
  $("pg-copy-sdk").addEventListener("click", () => copySnippet("sdk"));
  $("pg-output").addEventListener("keydown", moveTokenFocus);
  $("use-key").addEventListener("click", usePlaygroundKey);
}

// ---------------------------------------------------------------------------------------------
// Usage over time: GET /dashboard/api/usage (48 hourly or 90 daily UTC buckets, oldest first) as
// three bar charts drawn in inline SVG (requests, tokens, and the refused or failed requests
// stacked by kind). Each chart is an image with a summary for screen readers, a focusable point
// per bucket (one tab stop, arrow keys between them) with a tooltip, and a data table beside it.
// Colours come from classes (the CSP forbids style attributes; geometry is SVG attributes and
// CSSOM positions, which it allows).

const SVG = "http://www.w3.org/2000/svg";

const CHARTS = [
  { id: "requests", title: "Requests", series: [{ field: "requests", label: "Requests", className: "s-requests" }] },
  { id: "tokens", title: "Tokens", series: [{ field: "tokens", label: "Tokens", className: "s-tokens" }] },
  {
    id: "errors",
    title: "Refused and failed requests",
    series: [
      { field: "rate_limited", label: "Rate-limited (429)", className: "s-429" },
      { field: "client_errors", label: "Other 4xx", className: "s-4xx" },
      { field: "server_errors", label: "5xx", className: "s-5xx" },
    ],
  },
];
const FIELDS = ["requests", "tokens", "rate_limited", "client_errors", "server_errors"];
const PERIODS = {
  hour: { each: "hour", span: "last 48 hours", column: "Hour (UTC)" },
  day: { each: "day", span: "last 90 days", column: "Day (UTC)" },
};

const usage = {
  bucket: "hour",
  /** The key shown ("" for all keys). */
  key: "",
  /** The last answer: {bucket, key, points}. */
  data: null,
  /** The AbortController of the load in flight. */
  loading: null,
  /** Loads rendered so far (data-version on the panel, for tests and scripts to wait on). */
  version: 0,
  /** Chart id → its elements and the index of its focused point. */
  charts: new Map(),
  /** Width each chart was last drawn at (redrawn when it changes). */
  widths: new Map(),
};

const whole = new Intl.NumberFormat();
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const dayShort = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", month: "short", day: "numeric" });
const dayLong = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", weekday: "short", month: "short", day: "numeric" });
const hourOnly = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const clock = new Intl.DateTimeFormat(undefined, {
  timeZone: "UTC",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

function svgElement(tag, attributes = {}, className = "") {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (className) element.setAttribute("class", className);
  return element;
}

/** A bucket as people read it: "Nov 26, 06:00–07:00 UTC" or "Thu, Nov 26 (UTC)". */
function bucketName(start, bucket) {
  const date = new Date(start);
  if (bucket === "day") return `${dayLong.format(date)} (UTC)`;
  const end = new Date(date.getTime() + 3_600_000);
  return `${dayShort.format(date)}, ${hourOnly.format(date)}–${hourOnly.format(end)} UTC`;
}

/** A bucket in a table cell: "Nov 26, 06:00" or "Thu, Nov 26". */
function bucketCell(start, bucket) {
  const date = new Date(start);
  return bucket === "day" ? dayLong.format(date) : `${dayShort.format(date)}, ${hourOnly.format(date)}`;
}

function plural(n, one, many) {
  return `${whole.format(n)} ${n === 1 ? one : many}`;
}

/** Everything one bucket holds, in words (a point's accessible name and its tooltip's lines). */
function bucketLines(point, bucket) {
  return [
    bucketName(point.start, bucket),
    `${plural(point.requests, "request", "requests")}, ${plural(point.tokens, "token", "tokens")}`,
    `${whole.format(point.rate_limited)} rate-limited (429), ${whole.format(point.client_errors)} other 4xx, ${whole.format(point.server_errors)} 5xx`,
  ];
}

/** The top of the value axis and its ticks: 0 … max in 4 or 5 round steps (whole numbers). */
function valueAxis(largest) {
  if (largest <= 0) return { max: 4, ticks: [0, 1, 2, 3, 4] };
  const rough = largest / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const steps = [1, 2, 2.5, 5, 10].map((m) => m * power);
  const step = Math.max(
    1,
    steps.find((s) => s >= rough),
  );
  const max = Math.ceil(largest / step) * step;
  const ticks = [];
  for (let v = 0; v <= max + step / 2; v += step) ticks.push(v);
  return { max, ticks };
}

/** Which buckets get a label on the time axis: every `step`-th, on round hours or counted back from today. */
function timeTicks(points, bucket, columnWidth) {
  const choices = bucket === "hour" ? [1, 2, 3, 4, 6, 12, 24] : [1, 2, 7, 14, 30];
  const room = bucket === "hour" ? 52 : 50;
  const step = choices.find((s) => s * columnWidth >= room) ?? choices.at(-1);
  const ticks = [];
  points.forEach((point, i) => {
    const date = new Date(point.start);
    const on = bucket === "hour" ? date.getUTCHours() % step === 0 : (points.length - 1 - i) % step === 0;
    if (!on) return;
    const midnight = bucket === "hour" && date.getUTCHours() === 0;
    ticks.push({ i, text: bucket === "day" || midnight ? dayShort.format(date) : hourOnly.format(date), strong: midnight });
  });
  return ticks;
}

/** A new element with a class and attributes (ids, ARIA, roles). */
function element(tag, className, attributes = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** The chart's figure: heading, legend (stacked series), drawing box, data table in a <details>. */
function createChart(spec) {
  const heading = element("h3", "", { id: `chart-${spec.id}-title` });
  const figure = element("figure", "chart", { id: `chart-${spec.id}`, "aria-labelledby": heading.id });
  const caption = element("figcaption");
  caption.append(heading);
  // A legend for stacked series, under the drawing (the charts' plots stay level side by side).
  let legend = null;
  if (spec.series.length > 1) {
    legend = element("ul", "legend", { "aria-label": "Legend" });
    for (const series of spec.series) {
      const item = element("li");
      item.append(element("span", `swatch ${series.className}`, { "aria-hidden": "true" }), series.label);
      legend.append(item);
    }
  }
  const box = element("div", "chart-box");
  const points = element("div", "chart-points");
  const tip = element("div", "chart-tip", { "aria-hidden": "true" });
  tip.hidden = true;
  box.append(points, tip);

  const details = element("details", "chart-data");
  const summary = element("summary");
  summary.textContent = "Show the numbers as a table";
  const tableCaption = element("caption", "visually-hidden", { id: `chart-${spec.id}-table-caption` });
  const wrap = element("div", "table-wrap chart-table", { role: "region", "aria-labelledby": tableCaption.id });
  wrap.tabIndex = 0;
  const table = element("table");
  const head = element("thead");
  const body = element("tbody");
  table.append(tableCaption, head, body);
  wrap.append(table);
  details.append(summary, wrap);
  figure.append(caption, box, ...(legend ? [legend] : []), details);

  const chart = { spec, figure, heading, box, points, tip, head, body, tableCaption, svg: null, focus: null, bucket: null, geometry: null };
  points.addEventListener("keydown", (event) => movePointFocus(chart, event));
  points.addEventListener("focusin", (event) => pointEvent(chart, event.target, true));
  points.addEventListener("focusout", () => hideTip(chart));
  points.addEventListener("pointerover", (event) => pointEvent(chart, event.target, false));
  points.addEventListener("pointerleave", () => {
    const focused = chart.points.contains(document.activeElement) ? document.activeElement : null;
    if (focused) pointEvent(chart, focused, true);
    else hideTip(chart);
  });
  return chart;
}

function pointEvent(chart, target, focused) {
  const index = Number(target?.dataset?.index);
  if (!Number.isInteger(index)) return;
  if (focused) chart.focus = index;
  showTip(chart, index);
}

function initUsage() {
  const container = $("usage-charts");
  for (const spec of CHARTS) {
    const chart = createChart(spec);
    usage.charts.set(spec.id, chart);
    container.append(chart.figure);
  }
  for (const radio of document.querySelectorAll('input[name="usage-bucket"]')) {
    radio.addEventListener("change", () => {
      usage.bucket = document.querySelector('input[name="usage-bucket"]:checked').value;
      void refreshUsage();
    });
  }
  $("usage-key").addEventListener("change", () => {
    usage.key = $("usage-key").value;
    void refreshUsage();
  });
  $("usage-refresh").addEventListener("click", () => void refreshUsage());
  // Charts are drawn at their box's width in pixels (text keeps its size): redrawn when it changes.
  new ResizeObserver(() => {
    if (usage.data && !$("usage").hidden) drawCharts(false);
  }).observe(container);
}

/** The key selector's options: all keys, then each key (revoked ones said so); the choice kept if it still exists. */
function renderUsageKeys(keys) {
  const select = $("usage-key");
  const current = select.value;
  const options = [new Option("All keys", "")];
  for (const key of keys) options.push(new Option(`${key.name} (${key.prefix}…)${key.revoked_at ? ", revoked" : ""}`, String(key.id)));
  select.replaceChildren(...options);
  select.value = options.some((o) => o.value === current) ? current : "";
  if (select.value !== usage.key) {
    usage.key = select.value;
    void refreshUsage();
  }
}

async function refreshUsage() {
  if (csrf === null) return;
  usage.loading?.abort();
  const controller = new AbortController();
  usage.loading = controller;
  const query = new URLSearchParams({ bucket: usage.bucket });
  if (usage.key !== "") query.set("key", usage.key);
  $("usage-charts").setAttribute("aria-busy", "true");
  $("usage-status").textContent = "Loading…";
  try {
    const data = await api("GET", `/dashboard/api/usage?${query}`, undefined, controller.signal);
    if (usage.loading !== controller) return;
    usage.data = data;
    showError($("usage-error"), "");
    renderUsage();
    $("usage-status").textContent = `Updated ${clock.format(new Date())} UTC`;
  } catch (error) {
    if (controller.signal.aborted) return;
    if (error.status === 401) return showSignIn();
    $("usage-status").textContent = "";
    showError($("usage-error"), `Usage could not be loaded: ${error.message}`);
  } finally {
    if (usage.loading === controller) {
      usage.loading = null;
      $("usage-charts").setAttribute("aria-busy", "false");
    }
  }
}

function renderUsage() {
  const { points } = usage.data;
  for (const field of FIELDS) {
    const total = points.reduce((sum, p) => sum + p[field], 0);
    $(`usage-total-${field.replace("_", "-")}`).textContent = whole.format(total);
  }
  drawCharts(true);
  usage.version++;
  $("usage").dataset.version = String(usage.version);
}

/** Draws every chart; `tables`: the data changed, so the tables are rebuilt too (not on a resize). */
function drawCharts(tables) {
  const { points, bucket } = usage.data;
  for (const chart of usage.charts.values()) {
    const width = Math.floor(chart.box.clientWidth);
    if (width === 0) continue;
    if (!tables && usage.widths.get(chart) === width) continue;
    usage.widths.set(chart, width);
    drawChart(chart, points, bucket, width);
    if (tables) fillTable(chart, points, bucket);
  }
}

function chartTitle(spec, bucket) {
  return `${spec.title} per ${PERIODS[bucket].each}`;
}

/** The chart's summary, its image's accessible name: what it shows and its totals. */
function chartSummary(spec, points, bucket, values) {
  const what = `${chartTitle(spec, bucket)}, ${PERIODS[bucket].span} (UTC)`;
  if (spec.series.length > 1) {
    const totals = spec.series.map((s) => `${whole.format(points.reduce((sum, p) => sum + p[s.field], 0))} ${s.label}`);
    return `${what}: ${totals.join(", ")}.`;
  }
  const total = values.reduce((a, b) => a + b, 0);
  if (total === 0) return `${what}: none.`;
  const top = values.indexOf(Math.max(...values));
  return `${what}: ${whole.format(total)} in all; the most, ${whole.format(values[top])}, in ${bucketName(points[top].start, bucket)}.`;
}

function drawChart(chart, points, bucket, width) {
  const { spec } = chart;
  const values = points.map((p) => spec.series.reduce((sum, s) => sum + p[s.field], 0));
  const axis = valueAxis(Math.max(0, ...values));
  const labels = axis.ticks.map((v) => compact.format(v));
  const height = width < 480 ? 150 : 180;
  const margin = { top: 10, right: 6, bottom: 26, left: 14 + 7 * Math.max(...labels.map((l) => l.length)) };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const column = plotWidth / points.length;
  const y = (v) => margin.top + plotHeight - (v / axis.max) * plotHeight;

  chart.heading.textContent = chartTitle(spec, bucket);
  const svg = svgElement("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" }, "chart-svg");
  svg.setAttribute("aria-label", chartSummary(spec, points, bucket, values));

  const grid = svgElement("g", {}, "grid");
  axis.ticks.forEach((v, i) => {
    const at = Math.round(y(v)) + 0.5;
    grid.append(svgElement("line", { x1: margin.left, x2: width - margin.right, y1: at, y2: at }, i === 0 ? "baseline" : "gridline"));
    const label = svgElement("text", { x: margin.left - 6, y: at, "text-anchor": "end", "dominant-baseline": "middle" }, "axis");
    label.textContent = labels[i];
    grid.append(label);
  });
  svg.append(grid);

  const bars = svgElement("g", {}, "bars");
  const barWidth = Math.max(1, Math.min(column * 0.72, column - 1));
  points.forEach((point, i) => {
    let top = y(0);
    const x = margin.left + i * column + (column - barWidth) / 2;
    for (const series of spec.series) {
      const value = point[series.field];
      if (value <= 0) continue;
      // A bucket with little in it still shows (at least a pixel and a half).
      const h = Math.max(1.5, (value / axis.max) * plotHeight);
      top -= h;
      const rect = svgElement(
        "rect",
        { x: x.toFixed(2), y: top.toFixed(2), width: barWidth.toFixed(2), height: h.toFixed(2) },
        `bar ${series.className}`,
      );
      rect.dataset.series = series.field;
      bars.append(rect);
    }
  });
  svg.append(bars);

  const times = svgElement("g", {}, "times");
  // Newest first, so the latest bucket is always labelled; a label that would touch the one after it is left out.
  let room = width;
  for (const tick of timeTicks(points, bucket, column).reverse()) {
    const cx = margin.left + (tick.i + 0.5) * column;
    // A label near an edge ends (or starts) at its tick instead of running out of the drawing.
    const half = tick.text.length * 3.4;
    const anchor = cx + half > width ? "end" : cx - half < 0 ? "start" : "middle";
    const [from, to] = anchor === "end" ? [cx - 2 * half, cx] : anchor === "start" ? [cx, cx + 2 * half] : [cx - half, cx + half];
    if (to > room - 6) continue;
    room = from;
    times.append(svgElement("line", { x1: cx, x2: cx, y1: y(0), y2: y(0) + 4 }, "tick"));
    const label = svgElement("text", { x: cx, y: height - 6, "text-anchor": anchor }, tick.strong ? "axis strong" : "axis");
    label.textContent = tick.text;
    times.append(label);
  }
  svg.append(times);
  if (values.every((v) => v === 0)) {
    const empty = svgElement("text", { x: margin.left + plotWidth / 2, y: margin.top + plotHeight / 2, "text-anchor": "middle" }, "empty");
    empty.textContent = `None in the ${PERIODS[bucket].span}`;
    svg.append(empty);
  }

  // One focusable point per bucket over the drawing, a column of the plot's height.
  const refocus = chart.points.contains(document.activeElement);
  if (chart.bucket !== bucket) chart.focus = null;
  chart.bucket = bucket;
  const focus = Math.min(chart.focus ?? points.length - 1, points.length - 1);
  chart.focus = focus;
  const pointElements = points.map((point, i) => {
    const element = document.createElement("span");
    element.className = "chart-point";
    element.setAttribute("role", "img");
    element.setAttribute("aria-label", bucketLines(point, bucket).join("; "));
    element.dataset.index = String(i);
    element.tabIndex = i === focus ? 0 : -1;
    element.style.left = `${margin.left + i * column}px`;
    element.style.width = `${column}px`;
    element.style.top = `${margin.top}px`;
    element.style.height = `${plotHeight}px`;
    return element;
  });
  chart.geometry = { width, margin, column, plotHeight, y, values };
  chart.svg?.remove();
  chart.svg = svg;
  chart.box.prepend(svg);
  chart.points.replaceChildren(...pointElements);
  hideTip(chart);
  if (refocus) pointElements[focus].focus();
}

/** The tooltip beside bucket `index` (left of it in the chart's right half, else right), not over the column. */
function showTip(chart, index) {
  const point = usage.data?.points[index];
  if (!point || !chart.geometry) return;
  const { width, margin, column } = chart.geometry;
  const lines = bucketLines(point, usage.data.bucket);
  const strong = document.createElement("strong");
  strong.textContent = lines[0];
  chart.tip.replaceChildren(strong, ...lines.slice(1).map((text) => Object.assign(document.createElement("span"), { textContent: text })));
  chart.tip.hidden = false;
  const tipWidth = chart.tip.offsetWidth;
  const left = margin.left + index * column;
  const x = left + column / 2 > width / 2 ? left - tipWidth - 6 : left + column + 6;
  chart.tip.style.left = `${Math.max(0, Math.min(width - tipWidth, x))}px`;
  chart.tip.style.top = `${margin.top}px`;
}

function hideTip(chart) {
  chart.tip.hidden = true;
}

/** ← → Home End (and PageUp/PageDown: a day or a week) move between a chart's buckets: one tab stop each chart. */
function movePointFocus(chart, event) {
  const elements = [...chart.points.children];
  const at = elements.indexOf(document.activeElement);
  if (at < 0) return;
  const page = usage.data.bucket === "hour" ? 24 : 7;
  const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: elements.length - 1, PageUp: at - page, PageDown: at + page };
  const next = moves[event.key];
  if (next === undefined) return;
  event.preventDefault();
  const target = Math.max(0, Math.min(elements.length - 1, next));
  elements[at].tabIndex = -1;
  elements[target].tabIndex = 0;
  chart.focus = target;
  elements[target].focus();
}

/** The chart's numbers as a table, newest bucket first. */
function fillTable(chart, points, bucket) {
  const { spec } = chart;
  chart.tableCaption.textContent = `${chartTitle(spec, bucket)}, ${PERIODS[bucket].span}, newest first`;
  const headRow = document.createElement("tr");
  for (const text of [PERIODS[bucket].column, ...spec.series.map((s) => s.label)]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    if (text !== PERIODS[bucket].column) th.className = "num";
    headRow.append(th);
  }
  chart.head.replaceChildren(headRow);
  const rows = [];
  for (let i = points.length - 1; i >= 0; i--) {
    const row = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = bucketCell(points[i].start, bucket);
    row.append(th, ...spec.series.map((s) => cell(whole.format(points[i][s.field]), "num")));
    rows.push(row);
  }
  chart.body.replaceChildren(...rows);
}

function clearUsage() {
  usage.loading?.abort();
  usage.loading = null;
  usage.data = null;
  usage.widths.clear();
  for (const chart of usage.charts.values()) {
    chart.svg?.remove();
    chart.svg = null;
    chart.points.replaceChildren();
    chart.body.replaceChildren();
    hideTip(chart);
  }
  for (const field of FIELDS) $(`usage-total-${field.replace("_", "-")}`).textContent = "–";
  $("usage-status").textContent = "";
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
    const session = await api("GET", "/dashboard/api/session");
    if (session.signed_in) {
      csrf = session.csrf;
      await showPanel();
    } else showSignIn();
  } catch {
    showSignIn();
  }
});
