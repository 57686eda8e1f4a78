/**
 * GigaChat 3's and 3.1's replies, as their templates write an assistant turn after
 * `assistant<|role_sep|>\n`: text, then at most one call (the templates write only an
 * assistant's first call), its JSON `{"name": "f", "arguments": {…}}` as the template spells it.
 * - "gigachat3" (GigaChat 3): the call is a message of its own, of the `function call` role:
 *   `text<|message_sep|>\n\nfunction call<|role_sep|>\n{…}`;
 * - "gigachat3.1" (GigaChat 3.1): the call follows the text in the same message, after
 *   `<|function_call|>`: `text<|function_call|>{…}`.
 * Either may end with `<|message_sep|>`, the end of a message (the generation may also end
 * before it). The separators are control tokens; the text never spells their text, so the reply
 * reads back unambiguously (the reader works on the generated text, each control token standing
 * as its text).
 */
import { compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { textWithout } from "./text.js";
import { literal } from "./nodes.js";

export type GigaChatToolCallStyle = "gigachat3" | "gigachat3.1";

export const GIGACHAT_MESSAGE_SEP = "<|message_sep|>";
const ROLE_SEP = "<|role_sep|>";
const FUNCTION_CALL = "<|function_call|>";
/** What opens the call, per style (GigaChat 3: the end of the text's message, then the call's own). */
const CALL_OPEN: Record<GigaChatToolCallStyle, readonly string[]> = {
  gigachat3: [GIGACHAT_MESSAGE_SEP, "\n\nfunction call", ROLE_SEP, "\n"],
  "gigachat3.1": [FUNCTION_CALL],
};

export const isGigaChatStyle = (style: string): style is GigaChatToolCallStyle => Object.hasOwn(CALL_OPEN, style);

/** The control tokens a style's replies are made of. */
export const gigaChatMarkers = (style: GigaChatToolCallStyle): readonly string[] =>
  style === "gigachat3" ? [GIGACHAT_MESSAGE_SEP, ROLE_SEP] : [FUNCTION_CALL, GIGACHAT_MESSAGE_SEP];

/** Where a style's calls begin (the text ends there): its first separator. */
export const gigaChatCallsOpen = (style: GigaChatToolCallStyle): string => CALL_OPEN[style][0]!;

const piece = (text: string): RegexNode => (text.startsWith("<|") ? markerNode(text) : literal(text));
const optional = (item: RegexNode): RegexNode => ({ kind: "repeat", item, min: 0, max: 1 });

/** The reply: see the module comment. */
export function gigaChatLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: GigaChatToolCallStyle,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    literal(`{"name": "${name}", "arguments": `),
    args,
    literal("}"),
  ]);
  const text: RegexNode = { kind: "dfa", dfa: textWithout([GIGACHAT_MESSAGE_SEP, ROLE_SEP, FUNCTION_CALL], limits) };
  const sep = markerNode(GIGACHAT_MESSAGE_SEP);
  const withCall: RegexNode = { kind: "concat", items: [...CALL_OPEN[style].map(piece), call, optional(sep)] };
  // The text alone, its message ended or not, or the text and the call.
  const node: RegexNode = { kind: "concat", items: [text, optional({ kind: "alt", items: [sep, withCall] })] };
  return { dfa: compileRegexNode(node, limits), warnings };
}

/** A reply of the language above: its text (null when empty and a call follows), and its call. */
export function parseGigaChatReply(
  reply: string,
  style: GigaChatToolCallStyle,
): { content: string | null; calls: { name: string; arguments: string }[] } {
  const open = CALL_OPEN[style].join("");
  const at = reply.indexOf(open);
  if (at < 0) {
    const end = reply.indexOf(GIGACHAT_MESSAGE_SEP);
    return { content: end < 0 ? reply : reply.slice(0, end), calls: [] };
  }
  const from = at + open.length;
  const call = JSON.parse(reply.slice(from, jsonValueEnd(reply, from))) as { name: string; arguments: unknown };
  const text = reply.slice(0, at);
  return { content: text.trim().length > 0 ? text : null, calls: [{ name: call.name, arguments: JSON.stringify(call.arguments) }] };
}
