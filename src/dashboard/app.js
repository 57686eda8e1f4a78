// Trellis dashboard: sign in, create keys (shown once) with an optional token quota, expiry and
// rate limit, change a key's quota, expiry and rate limit, revoke keys, see usage and last use;
// and a playground that runs a request against the public API with a key (regex, grammar, JSON
// Schema, or an OpenAI chat streamed token by token with each token's probability).
// Plain browser JavaScript (a module: strict, deferred, nothing global), no build step: the page's
// CSP allows only scripts from this service.

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
  show($("playground"), false);
  show($("site-nav"), false);
  show($("sign-out"), false);
  $("admin-token").focus();
}

function showPanel() {
  show($("sign-in"), false);
  show($("keys-panel"), true);
  show($("playground"), true);
  show($("site-nav"), true);
  show($("sign-out"), true);
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
  $("pg-output-hint").textContent =
    kind === "chat"
      ? "The answer streams in, each token in its own shade. Hover a token, or Tab to the answer and move with ← and →, for its probability."
      : "This endpoint answers with the whole completion at once (it reports no tokens); choose Chat to watch tokens stream in with their probabilities.";
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

function updateCopyButtons() {
  const request = playground.lastRequest;
  const kind = request?.kind ?? playground.kind;
  $("pg-copy-sdk").textContent = kind === "chat" ? "Copy as Python (openai)" : "Copy as JS fetch";
  $("pg-copy-curl").disabled = request === null;
  $("pg-copy-sdk").disabled = request === null;
  const title = request === null ? "Run a request first: the copy is of the request that ran" : "";
  $("pg-copy-curl").title = title;
  $("pg-copy-sdk").title = title;
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

/** The last Thiggle request as JavaScript fetch: the same body, pretty-printed (JSON is a JS literal). */
function fetchSnippet(request) {
  const body = JSON.stringify(request.body, null, 2).replace(/\n/g, "\n  ");
  return [
    "// Node 18+ (an ES module) or a browser; the key comes from the environment.",
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
    "console.log(result.completion);",
  ].join("\n");
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
  const sdk = request.kind === "chat" ? "Python (openai)" : "JavaScript (fetch)";
  const text = format === "curl" ? curlSnippet(request) : request.kind === "chat" ? pythonSnippet(request) : fetchSnippet(request);
  $("pg-snippet-kind").textContent = format === "curl" ? "curl" : sdk;
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
  $("pg-copy-sdk").addEventListener("click", () => copySnippet("sdk"));
  $("pg-output").addEventListener("keydown", moveTokenFocus);
  $("use-key").addEventListener("click", usePlaygroundKey);
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
