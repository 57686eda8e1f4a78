/**
 * Cohere's replies after the reasoning section, every marker a control token, as the templates
 * write an assistant turn: text between answer markers — "command-r7b" (Command R7B)
 * `<|START_RESPONSE|>text<|END_RESPONSE|>`, "cohere2" (Command A and its kin)
 * `<|START_TEXT|>text<|END_TEXT|>` — or the calls, one JSON list between action markers,
 * `<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "f", "parameters": {…}},\n    …\n]<|END_ACTION|>`
 * (a reply is one or the other: the templates drop an assistant's text beside its calls). The id
 * is any decimal number (the templates count the conversation's calls). The text never spells a
 * marker's text either, so the reply reads back unambiguously; the reader works on the generated
 * text, each control token standing as its text.
 */
import { compileRegex, compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { toolCallAlternatives } from "./json.js";
import { textWithout } from "./text.js";
import { concat, literal } from "./nodes.js";

export type CohereToolCallStyle = "command-r7b" | "cohere2";

export const COHERE_ACTION_OPEN = "<|START_ACTION|>";
const ACTION_CLOSE = "<|END_ACTION|>";

/** The markers around each style's text. */
export const COHERE_TEXT: Record<CohereToolCallStyle, { readonly open: string; readonly close: string }> = {
  "command-r7b": { open: "<|START_RESPONSE|>", close: "<|END_RESPONSE|>" },
  cohere2: { open: "<|START_TEXT|>", close: "<|END_TEXT|>" },
};

export const isCohereStyle = (style: string): style is CohereToolCallStyle => Object.hasOwn(COHERE_TEXT, style);

/** The control markers a style writes (the model's vocabulary must have them as control tokens). */
export const cohereMarkers = (style: CohereToolCallStyle): readonly string[] => [
  COHERE_TEXT[style].open,
  COHERE_TEXT[style].close,
  COHERE_ACTION_OPEN,
  ACTION_CLOSE,
];

/** The reply: see the module comment. */
export function cohereLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: CohereToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const id: RegexNode = { kind: "dfa", dfa: compileRegex("[0-9]+", limits) };
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    literal('{"tool_call_id": "'),
    id,
    literal(`", "tool_name": ${JSON.stringify(name)}, "parameters": `),
    args,
    literal("}"),
  ]);
  const more: RegexNode = { kind: "repeat", item: concat(literal(",\n    "), call), min: 0, max: parallel ? -1 : 0 };
  const action = concat(markerNode(COHERE_ACTION_OPEN), literal("[\n    "), call, more, literal("\n]"), markerNode(ACTION_CLOSE));
  const text: RegexNode = { kind: "dfa", dfa: textWithout(cohereMarkers(style), limits) };
  const answer = concat(markerNode(COHERE_TEXT[style].open), text, markerNode(COHERE_TEXT[style].close));
  return { dfa: compileRegexNode({ kind: "alt", items: [answer, action] }, limits), warnings };
}

/** A reply of the language above (leading whitespace allowed): its text, or its calls. */
export function parseCohereReply(
  reply: string,
  style: CohereToolCallStyle,
): { content: string | null; calls: { name: string; arguments: string }[] } {
  const text = reply.trimStart();
  if (!text.startsWith(COHERE_ACTION_OPEN)) {
    const { open, close } = COHERE_TEXT[style];
    if (!text.startsWith(open)) return { content: reply, calls: [] };
    const end = text.indexOf(close, open.length);
    return { content: text.slice(open.length, end < 0 ? text.length : end), calls: [] };
  }
  const body = text.slice(COHERE_ACTION_OPEN.length, text.lastIndexOf(ACTION_CLOSE));
  const list = JSON.parse(body) as { tool_name: string; parameters: unknown }[];
  return { content: null, calls: list.map((c) => ({ name: c.tool_name, arguments: JSON.stringify(c.parameters) })) };
}
