// @ts-check
// The playground's "Copy as …": the last request it sent as curl, TypeScript (fetch, or the
// openai SDK for chat) or Python (openai), with the key left to $TRELLIS_API_KEY. Text only: no DOM.

/** @typedef {import("./playground.js").Kind} Kind */
/** @typedef {import("./playground.js").SentRequest} SentRequest */
/** @typedef {"curl" | "python" | "sdk"} SnippetFormat */

/**
 * What "Copy as …" offers for a kind: the OpenAI SDKs for chat, TypeScript's fetch for Thiggle's routes.
 * @type {Record<SnippetFormat, { label: string | ((kind: Kind) => string), make: (request: SentRequest) => string }>}
 */
const SNIPPETS = {
  curl: { label: "curl", make: (request) => curlSnippet(request) },
  python: { label: "Python (openai)", make: (request) => pythonSnippet(request) },
  sdk: {
    label: (kind) => (kind === "chat" ? "TypeScript (openai)" : "TypeScript (fetch)"),
    make: (request) => (request.kind === "chat" ? typescriptSnippet(request) : fetchSnippet(request)),
  },
};

/**
 * What the copy button of `format` calls a snippet for requests of `kind`.
 * @param {SnippetFormat} format
 * @param {Kind} kind
 */
export function snippetLabel(format, kind) {
  const { label } = SNIPPETS[format];
  return typeof label === "function" ? label(kind) : label;
}

/**
 * The snippet of `format` that sends `request` again.
 * @param {SnippetFormat} format
 * @param {SentRequest} request
 */
export function snippetOf(format, request) {
  return SNIPPETS[format].make(request);
}

/** A word for the shell in single quotes (a quote inside becomes '\''). */
function shellQuote(/** @type {string} */ text) {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** The last request as curl, with the key left to the shell's $TRELLIS_API_KEY. */
function curlSnippet(/** @type {SentRequest} */ request) {
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
function fetchSnippet(/** @type {SentRequest} */ request) {
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
function typescriptSnippet(/** @type {SentRequest} */ request) {
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

/**
 * A JSON value as a TypeScript literal: keys unquoted where they are identifiers, short values on one line.
 * @param {unknown} value
 * @param {string} indent
 * @returns {string}
 */
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
function pythonSnippet(/** @type {SentRequest} */ request) {
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

/**
 * A JSON value as a Python literal (JSON strings are valid Python strings).
 * @param {unknown} value
 * @param {string} indent
 * @returns {string}
 */
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
