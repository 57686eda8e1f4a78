// @ts-check
// The playground: runs one request against the public API with a key typed (or just created)
// here: regex, grammar, JSON Schema, categorization, or an OpenAI chat streamed token by token
// with each token's probability. The key is read from its input at run time and kept nowhere
// else (no storage, no cookie).
import { FormError, JsonSyntaxError, clearConstraintError, jsonSpans, showApiError, showFormError } from "./playground-errors.js";
import { $, ApiError, button, checkedValue, copyText, input, messageOf, show, showError, textarea } from "./shared.js";
import { snippetLabel, snippetOf } from "./snippets.js";
import { refreshUsage } from "./usage.js";

/** @typedef {"regex" | "grammar" | "json" | "categorize" | "chat"} Kind */
/**
 * How a kind's form reads and where it sends. `field` is the body field the constraint goes in.
 * @typedef {object} KindSpec
 * @property {string} path
 * @property {string} field
 * @property {string} promptLabel
 * @property {string} constraintLabel
 * @property {string} hint
 * @property {number} rows The constraint editor's.
 * @property {Draft} example
 */
/** @typedef {{ prompt: string, constraint: string }} Draft What was typed for a kind. */
/**
 * @typedef {object} CategorizeBody POST /v1/categorize.
 * @property {string} prompt
 * @property {string[]} categories
 * @property {boolean} include_scores
 * @property {boolean} [allow_multiple_classes]
 * @property {boolean} [allow_null_category]
 */
/**
 * @typedef {object} ChatBody POST /v1/chat/completions (streamed, with per-token probabilities).
 * @property {string} model
 * @property {{ role: "user", content: string }[]} messages
 * @property {number} [max_tokens]
 * @property {number} [temperature]
 * @property {number} [seed]
 * @property {boolean} [logprobs]
 * @property {number} [top_logprobs]
 * @property {boolean} [stream]
 * @property {{ include_usage: boolean }} [stream_options]
 * @property {{ type: "json_schema", json_schema: { name: string, schema: unknown } }} [response_format]
 */
/**
 * POST /v1/completion/{regex,cfg,json}: the prompt, the constraint in its kind's field, the knobs.
 * @typedef {{ prompt: string, max_new_tokens?: number, temperature?: number, seed?: number, [field: string]: unknown }} CompletionBody
 */
/**
 * The request the form describes.
 * @typedef {{ kind: "categorize", path: string, body: CategorizeBody }
 *   | { kind: "chat", path: string, body: ChatBody }
 *   | { kind: "regex" | "grammar" | "json", path: string, body: CompletionBody }} FormRequest
 */
/**
 * A request sent: the form's, with its absolute URL and the body as sent; what the copy buttons reproduce.
 * @typedef {FormRequest & { url: string, bodyText: string }} SentRequest
 */
/** @typedef {{ token: string, logprob: number }} TokenChoice */
/** @typedef {TokenChoice & { top_logprobs?: TokenChoice[] }} TokenLogprob A chat token and the likeliest alternatives. */
/**
 * A chunk of the chat stream (or its error event).
 * @typedef {object} ChatChunk
 * @property {{ completion_tokens?: number }} [usage]
 * @property {{ delta?: { content?: string | null }, logprobs?: { content?: TokenLogprob[] | null } | null, finish_reason?: string | null }[]} [choices]
 */

/** @type {Record<Kind, KindSpec>} */
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

/** @type {Partial<Record<Kind, string>>} */
const OUTPUT_HINTS = {
  chat: "The answer streams in, each token in its own shade. Hover a token, or Tab to the answer and move with ← and →, for its probability.",
  categorize: "Every category with its probability, most likely first; the chosen ones are marked.",
};
const THIGGLE_OUTPUT_HINT =
  "This endpoint answers with the whole completion at once (it reports no tokens); choose Chat to watch tokens stream in with their probabilities.";

const playground = {
  /** @type {Kind} */
  kind: "regex",
  /** @type {Partial<Record<Kind, Draft>>} Prompt and constraint typed for each kind, so switching kinds loses nothing. */
  drafts: {},
  /** @type {AbortController | null} The request in flight. */
  running: null,
  /** @type {SentRequest | null} The last request sent: what the copy buttons reproduce. */
  lastRequest: null,
  /** @type {Map<string, string>} Served model id per API key (the chat body needs it); only in memory, like the key. */
  models: new Map(),
};

/**
 * @param {string} value
 * @returns {value is Kind}
 */
function isKind(value) {
  return Object.hasOwn(KINDS, value);
}

/** @returns {Kind} */
function selectedKind() {
  const value = checkedValue("kind");
  if (!isKind(value)) throw new Error(`the page offers a kind the playground does not know: ${value}`);
  return value;
}

/**
 * Shows `kind`'s form; `keepDraft`: remember what was typed for the kind shown until now.
 * @param {Kind} kind
 */
function setKind(kind, keepDraft = true) {
  if (keepDraft) playground.drafts[playground.kind] = { prompt: textarea("pg-prompt").value, constraint: textarea("pg-constraint").value };
  playground.kind = kind;
  const spec = KINDS[kind];
  const draft = playground.drafts[kind] ?? spec.example;
  textarea("pg-prompt").value = draft.prompt;
  textarea("pg-constraint").value = draft.constraint;
  textarea("pg-constraint").rows = spec.rows;
  $("pg-prompt-label").textContent = spec.promptLabel;
  $("pg-constraint-label").textContent = spec.constraintLabel;
  $("pg-constraint-hint").textContent = spec.hint;
  $("pg-endpoint").textContent = `POST ${spec.path}`;
  $("pg-output-hint").textContent = OUTPUT_HINTS[kind] ?? THIGGLE_OUTPUT_HINT;
  // Categorization takes no sampling knobs; it has its own two choices instead.
  show($("pg-knobs"), kind !== "categorize");
  show($("pg-cat-options"), kind === "categorize");
  clearConstraintError();
  updateCopyButtons();
}

/**
 * An optional number input: undefined when empty, else a number that `check` accepts.
 * @param {string} id
 * @param {string} label
 * @param {(value: number) => boolean} check
 * @param {string} rule What `check` asks, in words.
 */
function numberField(id, label, check, rule) {
  const field = input(id);
  const text = field.value.trim();
  field.removeAttribute("aria-invalid");
  if (text === "") return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || !check(value)) throw new FormError(`${label} must be ${rule}`, field);
  return value;
}

/**
 * The request the form describes; a FormError names what is wrong.
 * @returns {Promise<FormRequest>}
 */
async function buildRequest() {
  const kind = playground.kind;
  const spec = KINDS[kind];
  const prompt = textarea("pg-prompt").value;
  const constraint = textarea("pg-constraint").value;
  // Categorization has no sampling knobs (they are hidden): its own two choices instead.
  if (kind === "categorize") {
    if (constraint.trim() === "") throw new FormError(`${spec.constraintLabel} are required`, $("pg-constraint"));
    /** @type {CategorizeBody} */
    const body = { prompt, categories: categoriesOf(constraint), include_scores: true };
    if (input("pg-allow-multiple").checked) body.allow_multiple_classes = true;
    if (input("pg-allow-none").checked) body.allow_null_category = true;
    return { kind, path: spec.path, body };
  }
  const maxTokens = numberField("pg-max-tokens", "Max tokens", (v) => Number.isInteger(v) && v >= 1, "a whole number ≥ 1");
  const temperature = numberField("pg-temperature", "Temperature", (v) => v >= 0 && v <= 2, "between 0 and 2");
  const seed = numberField("pg-seed", "Seed", (v) => Number.isSafeInteger(v) && v >= 0, "a whole number ≥ 0");
  if (kind !== "chat" && constraint.trim() === "") throw new FormError(`${spec.constraintLabel} is required`, $("pg-constraint"));
  const schema = kind === "json" || (kind === "chat" && constraint.trim() !== "") ? parseSchemaText(constraint) : undefined;

  if (kind === "chat") {
    /** @type {ChatBody} */
    const body = { model: await modelId(), messages: [{ role: "user", content: prompt }] };
    if (maxTokens !== undefined) body.max_tokens = maxTokens;
    if (temperature !== undefined) body.temperature = temperature;
    if (seed !== undefined) body.seed = seed;
    // Per-token probabilities (the chosen token and the two next most likely) and the usage at the end.
    Object.assign(body, { logprobs: true, top_logprobs: 3, stream: true, stream_options: { include_usage: true } });
    if (schema !== undefined) body.response_format = { type: "json_schema", json_schema: { name: "playground", schema } };
    return { kind, path: spec.path, body };
  }
  /** @type {CompletionBody} */
  const body = { prompt, [spec.field]: kind === "json" ? schema : constraint };
  if (maxTokens !== undefined) body.max_new_tokens = maxTokens;
  if (temperature !== undefined) body.temperature = temperature;
  if (seed !== undefined) body.seed = seed;
  return { kind, path: spec.path, body };
}

/**
 * The categories typed one per line (spaces around each trimmed, empty lines skipped); a repeated
 * one is marked in the editor (the service refuses duplicates).
 * @param {string} text
 */
function categoriesOf(text) {
  const seen = new Set();
  /** @type {string[]} */
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

/**
 * The schema typed in the constraint editor; a syntax error is shown where it is.
 * @param {string} text
 * @returns {unknown}
 */
function parseSchemaText(text) {
  try {
    jsonSpans(text);
  } catch (error) {
    const at = error instanceof JsonSyntaxError ? error.position : 0;
    throw new FormError(`The schema is not valid JSON: ${messageOf(error)}`, $("pg-constraint"), { start: at, end: at + 1 });
  }
  return JSON.parse(text);
}

function apiKey() {
  const key = input("pg-key").value.trim();
  if (key === "") throw new FormError("Paste an API key first (or create one above and choose “Use in playground”)", $("pg-key"));
  return key;
}

/**
 * The served model's id, asked once per key: a chat request must name it.
 * @returns {Promise<string>}
 */
async function modelId() {
  const key = apiKey();
  const known = playground.models.get(key);
  if (known !== undefined) return known;
  const response = await fetch("/v1/models", { headers: { authorization: `Bearer ${key}` }, credentials: "omit" });
  /** @type {{ data?: { id?: unknown }[] }} */
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(errorMessageOf(data, response.status), response.status);
  const id = data.data?.[0]?.id;
  if (typeof id !== "string" || !id) throw new Error("the service lists no model");
  playground.models.set(key, id);
  return id;
}

/**
 * The message of an error body in either API's shape: Thiggle's {error: "…"}, OpenAI's {error: {message, param}}.
 * @param {unknown} data
 * @param {number} status
 */
function errorMessageOf(data, status) {
  const error = errorOf(data);
  if (typeof error === "string") return error;
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") return error.message;
  return `HTTP ${status}`;
}

/** The body field an OpenAI error body names (`error.param`), if any. */
function errorParamOf(/** @type {unknown} */ data) {
  const error = errorOf(data);
  if (typeof error === "object" && error !== null && "param" in error && typeof error.param === "string") return error.param;
  return undefined;
}

function errorOf(/** @type {unknown} */ data) {
  return typeof data === "object" && data !== null && "error" in data ? data.error : undefined;
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

function setRunning(/** @type {AbortController | null} */ controller) {
  playground.running = controller;
  button("pg-run").disabled = controller !== null;
  button("pg-stop").disabled = controller === null;
  $("pg-output").setAttribute("aria-busy", String(controller !== null));
}

function stopRun() {
  playground.running?.abort();
}

/** Signing out: the run stops and the key typed here is forgotten. */
export function signOutPlayground() {
  stopRun();
  // The playground's key lives only in this input: signing out forgets it.
  input("pg-key").value = "";
}

async function runPlayground() {
  if (playground.running) return;
  resetResult();
  const controller = new AbortController();
  setRunning(controller);
  $("pg-status").textContent = "Running…";
  /** @type {SentRequest | undefined} */
  let request;
  try {
    const key = apiKey();
    const formRequest = await buildRequest();
    request = { ...formRequest, bodyText: JSON.stringify(formRequest.body), url: new URL(formRequest.path, window.location.origin).href };
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
      // A network failure or an unreadable answer: shown as the service's errors are, without a status.
      const failure = error instanceof ApiError ? error : new ApiError(messageOf(error), undefined);
      const kind = request?.kind ?? playground.kind;
      const where = showApiError(failure, kind, KINDS[kind].field) === "editor" ? " The mistake is marked under the editor." : "";
      $("pg-status").textContent = `${failure.status ? `Failed: HTTP ${failure.status}.` : "Failed."}${where}`;
    }
  } finally {
    setRunning(null);
    // The request (answered or refused) is in the usage now: the charts show it.
    if (request?.url) void refreshUsage();
  }
}

/**
 * POST with the key; an error answer becomes an ApiError carrying its status and message.
 * @param {SentRequest} request
 * @param {string} key
 * @param {AbortSignal} signal
 */
async function post(request, key, signal) {
  const response = await fetch(request.path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: request.bodyText,
    signal,
    credentials: "omit",
  });
  if (!response.ok) {
    /** @type {unknown} */
    const data = await response.json().catch(() => ({}));
    throw new ApiError(errorMessageOf(data, response.status), response.status, errorParamOf(data));
  }
  return response;
}

/**
 * What a Thiggle completion endpoint answers.
 * @typedef {object} CompletionAnswer
 * @property {string} completion
 * @property {number} tokens_generated
 * @property {string} stop_reason
 * @property {{ keyword: string, pointer: string, message: string }[]} [warnings] JSON Schema keywords not enforced.
 */

/**
 * The Thiggle endpoints answer once with the whole completion.
 * @param {SentRequest} request
 * @param {string} key
 * @param {AbortSignal} signal
 */
async function runCompletion(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  const data = /** @type {CompletionAnswer} */ (await response.json());
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

/**
 * Categorization answers once: the chosen categories and every category's probability (include_scores).
 * @param {SentRequest & { kind: "categorize" }} request
 * @param {string} key
 * @param {AbortSignal} signal
 */
async function runCategorize(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  const data = /** @type {{ choices: string[], scores?: Record<string, number> }} */ (await response.json());
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
  const picked = data.choices.map((name) => {
    const score = scores[name];
    return score === undefined ? name : `${name} (${share(score)})`;
  });
  $("pg-status").textContent = picked.length > 0 ? `Done: ${picked.join(", ")}.` : "Done: none of the categories fits.";
  showStats([`${request.body.categories.length} categories`, `${Math.round(seconds * 1000)} ms in all`]);
}

/** A probability in 0…1 as a percentage with one decimal (or two significant digits below 10 %). */
function share(/** @type {number} */ probability) {
  const p = probability * 100;
  return `${p >= 10 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

/**
 * @param {number} tokens
 * @param {number} seconds
 */
function rate(tokens, seconds) {
  return seconds > 0 ? (tokens / seconds).toFixed(1) : "–";
}

function showStats(/** @type {string[]} */ parts) {
  $("pg-stats").textContent = parts.join(" · ");
  show($("pg-stats"), true);
}

function tokenCount() {
  return $("pg-output").querySelectorAll(".tok").length;
}

/**
 * The chat endpoint streams Server-Sent Events: each `data:` line a chunk, `[DONE]` at the end.
 * @param {SentRequest} request
 * @param {string} key
 * @param {AbortSignal} signal
 */
async function runChat(request, key, signal) {
  const started = performance.now();
  const response = await post(request, key, signal);
  if (!response.body) throw new Error("the answer has no body to stream");
  $("pg-status").textContent = "Streaming…";
  /** @type {number | null} */
  let firstAt = null;
  /** @type {string | null} */
  let finish = null;
  /** @type {ChatChunk["usage"] | null} */
  let usage = null;
  for await (const event of serverSentEvents(response.body)) {
    if (event.data === "[DONE]") break;
    /** @type {unknown} */
    const parsed = JSON.parse(event.data);
    if (event.type === "error") throw new ApiError(errorMessageOf(parsed, 500), undefined, errorParamOf(parsed));
    const chunk = /** @type {ChatChunk} */ (parsed);
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

/**
 * Parses an SSE byte stream into {type, data} events (a blank line ends each event).
 * @param {ReadableStream<BufferSource>} body Bytes (typed so as TextDecoderStream takes them).
 * @returns {AsyncGenerator<{ type: string, data: string }>}
 */
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
      /** @type {string[]} */
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

function percent(/** @type {number} */ logprob) {
  const p = Math.exp(logprob) * 100;
  return `${p >= 10 ? p.toFixed(1) : p.toPrecision(2)}%`;
}

/** A token as people read it in a note: quotes, with whitespace spelled out. */
function shownToken(/** @type {string} */ text) {
  return JSON.stringify(text);
}

/**
 * Appends a streamed piece of text as token spans. The service never splits a character across
 * events, so a piece may hold several tokens, and a token holding part of a character shows
 * lossily: when the tokens do not spell the piece exactly, the piece is one span described by them all.
 * @param {string} text
 * @param {TokenLogprob[]} logprobs
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

/**
 * @param {string} text
 * @param {number | null} logprob null: the service sent none.
 * @param {TokenChoice[]} alternatives
 */
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

/**
 * ← → Home End move between tokens of the answer (one tab stop for all of them).
 * @param {KeyboardEvent} event
 */
function moveTokenFocus(event) {
  const tokens = [...$("pg-output").querySelectorAll(".tok")].filter((t) => t instanceof HTMLElement);
  const active = document.activeElement;
  const at = active instanceof HTMLElement ? tokens.indexOf(active) : -1;
  if (at < 0) return;
  /** @type {Record<string, number>} */
  const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tokens.length - 1 };
  const next = moves[event.key];
  const from = tokens[at];
  const to = next === undefined ? undefined : tokens[next];
  if (!from || !to) return;
  event.preventDefault();
  from.tabIndex = -1;
  to.tabIndex = 0;
  to.focus();
}
// --- Copy as curl / SDK (snippets.js writes them) --------------------------------------------------

function updateCopyButtons() {
  const request = playground.lastRequest;
  const kind = request?.kind ?? playground.kind;
  $("pg-copy-sdk").textContent = `Copy as ${snippetLabel("sdk", kind)}`;
  show($("pg-copy-python"), kind === "chat");
  const title = request === null ? "Run a request first: the copy is of the request that ran" : "";
  for (const id of ["pg-copy-curl", "pg-copy-python", "pg-copy-sdk"]) {
    button(id).disabled = request === null;
    button(id).title = title;
  }
}

/** @param {import("./snippets.js").SnippetFormat} format */
async function copySnippet(format) {
  const request = playground.lastRequest;
  if (!request) return;
  const text = snippetOf(format, request);
  $("pg-snippet-kind").textContent = snippetLabel(format, request.kind);
  $("pg-snippet").textContent = text;
  show($("pg-snippet-box"), true);
  const copied = await copyText(text, $("pg-snippet"));
  $("pg-snippet-status").textContent = copied ? "Copied to clipboard." : "Select the text above and copy it.";
}

function usePlaygroundKey() {
  input("pg-key").value = $("new-key-value").textContent ?? "";
  playground.models.clear();
  $("copy-status").textContent = "The key is in the playground's API key field.";
}

export function initPlayground() {
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
        $("pg-form", HTMLFormElement).requestSubmit();
      }
    });
  }
  $("pg-constraint").addEventListener("input", clearConstraintError);
  input("pg-key").addEventListener("input", () => {
    playground.models.clear();
    input("pg-key").removeAttribute("aria-invalid");
  });
  $("pg-stop").addEventListener("click", stopRun);
  $("pg-copy-curl").addEventListener("click", () => copySnippet("curl"));
  $("pg-copy-python").addEventListener("click", () => copySnippet("python"));
  $("pg-copy-sdk").addEventListener("click", () => copySnippet("sdk"));
  $("pg-output").addEventListener("keydown", moveTokenFocus);
  $("use-key").addEventListener("click", usePlaygroundKey);
}
