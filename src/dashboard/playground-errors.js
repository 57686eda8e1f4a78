// @ts-check
// The playground's errors, shown where they are: a mistake in the form on its input; an error
// of the service about the constraint under the editor, with the offending span marked and
// selected (a regex position, a grammar line and column, a JSON pointer into the schema, a
// category's index); anything else below the result.
import { $, input, show, showError, textarea } from "./shared.js";

/** @typedef {import("./playground.js").Kind} Kind */
/** @typedef {import("./shared.js").ApiError} ApiError */
/** @typedef {{ start: number, end: number }} TextSpan UTF-16 offsets into the editor's text. */

/** A mistake in the form found before sending: shown on its input. */
export class FormError extends Error {
  /**
   * @param {string} message
   * @param {HTMLElement} input
   * @param {TextSpan} [range] Where in the constraint editor's text, when it is about that.
   */
  constructor(message, input, range) {
    super(message);
    this.input = input;
    this.range = range;
  }
}

/** Not JSON, at `position` (jsonSpans' own messages: JSON.parse's differ between browsers). */
export class JsonSyntaxError extends SyntaxError {
  /**
   * @param {string} message
   * @param {number} position
   */
  constructor(message, position) {
    super(message);
    this.position = position;
  }
}

export function showFormError(/** @type {FormError} */ error) {
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
 * @param {ApiError} error
 * @param {Kind} kind The request's.
 * @param {string} field The body field its constraint goes in.
 * @returns {"editor" | "result"}
 */
export function showApiError(error, kind, field) {
  // A 422 "needs at least N tokens": the constraint is fine, the budget too small; one click fixes it.
  const needed = /needs at least (\d+) tokens/.exec(error.message)?.[1];
  if (needed !== undefined) {
    showError($("pg-error"), error.message);
    offerFix(`Set max tokens to ${needed}`, () => (input("pg-max-tokens").value = needed));
    return "result";
  }
  if (aboutConstraint(kind, field, error)) {
    showConstraintError(error.message, locateError(kind, error.message, textarea("pg-constraint").value));
    return "editor";
  }
  showError($("pg-error"), error.message);
  return "result";
}

/**
 * @param {string} label
 * @param {() => void} apply
 */
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

/**
 * Whether a 400/422 names the constraint's field (Thiggle: "pattern: …"; OpenAI: its param).
 * @param {Kind} kind
 * @param {string} bodyField
 * @param {ApiError} error
 */
function aboutConstraint(kind, bodyField, error) {
  const field = kind === "chat" ? "schema" : bodyField;
  if (kind === "categorize") return /^categories\b/.test(error.message);
  if (error.param === "schema" || error.param === "response_format") return kind === "chat";
  return error.message.startsWith(`${field}:`) || error.message.startsWith(`${field}[`);
}

/**
 * Where in the constraint text the service's message points, as {start, end} (UTF-16 offsets), or
 * null: regex errors say "at position N" (code points), grammar errors "line L, column C" (from 1),
 * JSON Schema errors a JSON pointer ("minLength at /properties/a/minLength: …").
 * @param {Kind} kind
 * @param {string} message
 * @param {string} text
 * @returns {TextSpan | null}
 */
function locateError(kind, message, text) {
  if (kind === "regex") {
    const match = /at position (\d+)/.exec(message);
    if (!match) return null;
    const start = codePointOffset(text, Number(match[1]));
    return { start, end: Math.min(text.length, start + ((text.codePointAt(start) ?? 0) > 0xffff ? 2 : 1)) };
  }
  if (kind === "grammar") return locateGrammarError(message, text);
  if (kind === "categorize") return locateCategory(message, text);
  const pointer = /\bat (\/[^\s:]*|the schema's root|the root)/.exec(message)?.[1];
  if (pointer === undefined) return null;
  let path = pointer.startsWith("/") ? pointer : "";
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

/**
 * "categories[N] …": the Nth category's line (empty lines are not categories); a message without an index: none.
 * @param {string} message
 * @param {string} text
 * @returns {TextSpan | null}
 */
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

/**
 * @param {string} message
 * @param {string} text
 * @returns {TextSpan | null}
 */
function locateGrammarError(message, text) {
  const match = /line (\d+),? column (\d+)/.exec(message);
  if (match) {
    const lines = text.split("\n");
    // Lines count from 1; one past the text's last line is its last line.
    const line = Math.max(0, Math.min(Number(match[1]), lines.length) - 1);
    let start = 0;
    for (const before of lines.slice(0, line)) start += before.length + 1;
    const lineEnd = start + (lines[line]?.length ?? 0);
    start = Math.min(start + Number(match[2]) - 1, lineEnd);
    // The word there (a rule or terminal name), else one character; at the end of a line, none.
    let end = start;
    while (end < lineEnd && /\w/.test(text.charAt(end))) end++;
    return { start, end: end === start && start < lineEnd ? start + 1 : end };
  }
  // No position, but a name in quotes ("Rule 'foo' used but not defined"): its first use.
  const named = /'([^']+)'/.exec(message)?.[1];
  if (named === undefined) return null;
  const escaped = named.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const found = new RegExp(`(?<![\\w])${escaped}(?![\\w])`).exec(text);
  return found ? { start: found.index, end: found.index + found[0].length } : null;
}

/**
 * @param {string} text
 * @param {number} offset
 */
function lineStart(text, offset) {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/**
 * The UTF-16 offset of code point `n` (the service counts code points, as Python does).
 * @param {string} text
 * @param {number} n
 */
function codePointOffset(text, n) {
  let offset = 0;
  for (let i = 0; i < n && offset < text.length; i++) offset += (text.codePointAt(offset) ?? 0) > 0xffff ? 2 : 1;
  return offset;
}

/**
 * Where each value of a JSON text is: JSON pointer → {start, end}. Throws a JsonSyntaxError at the
 * first mistake (JSON.parse's own messages differ between browsers).
 * @param {string} text
 */
export function jsonSpans(text) {
  /** @type {Map<string, TextSpan>} */
  const spans = new Map();
  let i = 0;
  /** @type {(what: string) => never} */
  const fail = (what) => {
    throw new JsonSyntaxError(`${what} at position ${i}`, i);
  };
  const skipSpace = () => {
    while (i < text.length && " \t\n\r".includes(text.charAt(i))) i++;
  };
  /** @returns {string} */
  const string = () => {
    const start = i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charAt(i) < " ") fail("a control character in a string");
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
  /** @param {string} pointer */
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
 * @param {string} message
 * @param {TextSpan | null} range
 */
export function showConstraintError(message, range) {
  const editor = textarea("pg-constraint");
  const text = editor.value;
  // Grammar errors quote the offending line with a caret after a blank line: the marker below
  // shows that already, so only the sentence before it is kept.
  const sentence = range ? (message.split("\n\n")[0] ?? message) : message;
  $("pg-constraint-message").textContent = range ? `${sentence} — ${whereIs(text, range.start)} is selected in the editor.` : sentence;
  $("pg-constraint-marker").replaceChildren(...(range ? markerOf(text, range) : []));
  show($("pg-constraint-marker"), range !== null);
  show($("pg-constraint-error"), true);
  editor.setAttribute("aria-invalid", "true");
  editor.setAttribute("aria-describedby", "pg-constraint-message pg-constraint-hint");
  editor.focus();
  if (range) editor.setSelectionRange(range.start, range.end);
}

export function clearConstraintError() {
  show($("pg-constraint-error"), false);
  $("pg-constraint").removeAttribute("aria-invalid");
  $("pg-constraint").setAttribute("aria-describedby", "pg-constraint-hint");
}

/**
 * @param {string} text
 * @param {number} offset
 */
function whereIs(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - lineStart(text, offset) + 1;
  return text.includes("\n") ? `line ${line}, column ${column}` : `column ${column}`;
}

/**
 * The marker's nodes: the line holding the error (cut to ~60 characters around it), the range in <mark>, a caret line.
 * @param {string} text
 * @param {TextSpan} range
 */
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
