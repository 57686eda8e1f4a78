// Strings: minLength/maxLength, `pattern` and asserted `format`s as the JSON strings (quotes and
// escapes included) that satisfy them; patternLanguage is also each patternProperties' key language.

import {
  annexBReason,
  ecmaSearchNode,
  isEmptyLanguage,
  regexClock,
  RegexSyntaxError,
  type ByteDfa,
  type RegexNode,
} from "../../regex/index.js";
import type { Want, WriterContext } from "./context.js";
import { JsonSchemaError } from "./errors.js";
import { formatNode } from "./formats.js";
import { anyEncodedChar, codePointBounds, dfaNode, encodeNode, quoted, quoteDfa, repeat } from "./json-text.js";
import { keepShared, sharedDfa } from "./shared-dfas.js";
import type { Spec } from "./spec.js";

/**
 * Longest string we count characters of: a longer maxLength is written as this (an automaton
 * counts each character as states, about twelve per character with the escapes).
 */
const MAX_COUNTED_LENGTH = 256;

/**
 * U: a maxLength over MAX_COUNTED_LENGTH is written as MAX_COUNTED_LENGTH (when minLength allows);
 * O: such bounds are dropped instead (an over-approximation may only grow).
 */
export function stringLanguage(c: WriterContext, spec: Spec, want: Want, pointer: string): ByteDfa | null {
  let { minLength, maxLength } = spec.strings;
  const { patterns, formats } = spec.strings;
  if (maxLength < minLength) return null;
  if (maxLength !== Infinity && maxLength > MAX_COUNTED_LENGTH) {
    if (want.over) maxLength = Infinity;
    else if (minLength <= MAX_COUNTED_LENGTH) maxLength = MAX_COUNTED_LENGTH;
  }
  if (want.over && minLength > MAX_COUNTED_LENGTH) minLength = 0;
  const content =
    minLength === 0 && maxLength === Infinity
      ? repeat(anyEncodedChar(), 0, -1)
      : repeat(anyEncodedChar(), minLength, maxLength === Infinity ? -1 : maxLength);
  // The formats asserted (the others are annotations), each as the JSON strings it allows.
  const asserted = formats.flatMap(({ format, pointer: at }) => {
    const node = formatNode(format);
    if (node === null) return [];
    const dfa = (): ByteDfa => c.shared(`format#${format}`, () => c.compileNode(quoted(encodeNode(node)), at));
    return [{ node, at, dfa }];
  });
  // A format whose every text is as long as the bounds allow (an email, 3 to 253 characters,
  // under maxLength 255) is the language itself: its product with the counted lengths (a DFA
  // of thousands of states) was the slowest part of many compiles.
  const withinBounds = asserted.find(({ node }) => {
    const bounds = codePointBounds(node);
    return bounds !== null && bounds[0] >= minLength && bounds[1] <= maxLength;
  });
  let dfa = withinBounds ? withinBounds.dfa() : c.shared(`string#${minLength}#${maxLength}`, () => c.compileNode(quoted(content), pointer));
  for (const { pattern, pointer: at } of patterns) {
    if (isEmptyLanguage(dfa)) break;
    dfa = c.intersect(dfa, patternLanguage(c, pattern, at), at);
  }
  for (const format of asserted) {
    if (isEmptyLanguage(dfa)) break;
    if (format !== withinBounds) dfa = c.intersect(dfa, format.dfa(), format.at);
  }
  return isEmptyLanguage(dfa) ? null : dfa;
}

/** The JSON strings (quotes included) whose decoded text an ECMA-262 `pattern` finds a match in. */
export function patternLanguage(c: WriterContext, pattern: string, pointer: string): ByteDfa {
  let annexB = c.annexBReasons.get(pattern);
  if (annexB === undefined) c.annexBReasons.set(pattern, (annexB = annexBReason(pattern)));
  if (annexB !== null) {
    c.warn(
      keywordOf(pointer),
      pointer,
      `"${pattern}" is not valid with the u flag (${annexB.replace(/^Invalid regular expression: /, "")}), so it is read as ECMA-262 reads it without u (Annex B: an escaped "-" or ":" is that character, a brace that forms no quantifier is itself), matching characters`,
    );
  }
  const known = sharedDfa(`pattern#${pattern}`);
  if (known) return known;
  const before = regexClock.used;
  let search: RegexNode;
  try {
    search = ecmaSearchNode(pattern);
  } catch (error) {
    if (error instanceof RegexSyntaxError) {
      throw new JsonSchemaError(
        `"${pattern}": ${error.message}${error.construct ? ` (${error.construct})` : ""}`,
        pointer,
        keywordOf(pointer),
      );
    }
    throw error;
  }
  const decoded = c.compileNode(search, pointer);
  const quotedText = c.regex(pointer, (limits) => quoteDfa(decoded, limits));
  return keepShared(`pattern#${pattern}`, c.compileNode(quoted(dfaNode(quotedText)), pointer), before);
}

function keywordOf(pointer: string): string {
  const parts = pointer.split("/");
  return parts.includes("patternProperties") ? "patternProperties" : (parts[parts.length - 1] ?? "pattern");
}
