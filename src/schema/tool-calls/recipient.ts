/**
 * Functionary v3.2's replies ("functionary-v3.2"), after the generation prompt's `>>>`: each
 * message names its recipient on its first line — `all\n` then text for the user, or a function's
 * name then `\n` and its JSON arguments — and the next message starts with `>>>` again:
 * `all\ntext>>>f\n{…}>>>g\n{…}`, or calls alone, `f\n{…}>>>g\n{…}`. Text never spells `>>>`, and
 * no function may be named "all" (its call would read as text). Without parallel calls there is
 * one call.
 */
import { compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { textWithout } from "./text.js";
import { concat, literal } from "./nodes.js";

/** What starts every message after the first (the generation prompt wrote the first one's). */
export const RECIPIENT_OPEN = ">>>";
/** The first line of a message to the user. */
export const RECIPIENT_ALL = "all\n";

/** The reply: text for the user then calls, or calls alone. */
export function recipientLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const clash = tools.findIndex((t) => t.name === "all");
  if (clash >= 0)
    throw new JsonSchemaError(
      'function "all": the functionary-v3.2 call format writes a message to the user as `all`, so no function can be named so',
      "",
      "name",
    );
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [literal(`${name}\n`), args]);
  const more: RegexNode = { kind: "repeat", item: concat(literal(RECIPIENT_OPEN), call), min: 0, max: parallel ? -1 : 0 };
  const calls = concat(call, more);
  const text: RegexNode = { kind: "dfa", dfa: textWithout([RECIPIENT_OPEN], limits) };
  const answer = concat(literal(RECIPIENT_ALL), text, { kind: "repeat", item: concat(literal(RECIPIENT_OPEN), calls), min: 0, max: 1 });
  return { dfa: compileRegexNode({ kind: "alt", items: [answer, calls] }, limits), warnings };
}

/** A reply of the language above: its text (after `all\n`; null when there is none but whitespace and there are calls) and its calls. */
export function parseRecipientReply(reply: string): { content: string | null; calls: { name: string; arguments: string }[] } {
  let at = 0;
  let content: string | null = null;
  if (reply.startsWith(RECIPIENT_ALL)) {
    const end = reply.indexOf(RECIPIENT_OPEN);
    content = reply.slice(RECIPIENT_ALL.length, end < 0 ? reply.length : end);
    if (end < 0) return { content, calls: [] };
    if (content.trim().length === 0) content = null;
    at = end + RECIPIENT_OPEN.length;
  }
  const calls: { name: string; arguments: string }[] = [];
  for (;;) {
    const nameEnd = reply.indexOf("\n", at);
    const from = nameEnd + 1;
    const end = jsonValueEnd(reply, from, RECIPIENT_OPEN);
    calls.push({ name: reply.slice(at, nameEnd), arguments: JSON.stringify(JSON.parse(reply.slice(from, end))) });
    if (!reply.startsWith(RECIPIENT_OPEN, end)) break;
    at = end + RECIPIENT_OPEN.length;
  }
  return { content, calls };
}
