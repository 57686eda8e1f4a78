/**
 * Solar Open's replies, as its template writes an assistant turn after `<|begin|>assistant`: text
 * under the content header, `<|content|>text<|end|>`, or the calls under the calls header,
 * `<|tool_calls|>` then per call `<|tool_call:begin|>id<|tool_call:name|>f<|tool_call:args|>{…}<|tool_call:end|>`
 * (a reply is one or the other: the template drops an assistant's text beside its calls). The id
 * is ten lowercase letters or digits, as the template's instructions ask. The headers are control
 * tokens; `<|end|>` is text (llama.cpp renders it), and `<|calls|>`, which follows the calls, ends
 * the generation, so neither is required of the reply. The text never spells `<|end|>` nor a
 * header's text, so the reply reads back unambiguously; the reader works on the generated text,
 * each control token standing as its text.
 */
import { compileRegex, compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { textWithout } from "./text.js";
import { concat, literal } from "./nodes.js";

export const SOLAR_CONTENT = "<|content|>";
/** Text, as llama.cpp renders it in this vocabulary: the content's end. */
export const SOLAR_END = "<|end|>";
export const SOLAR_CALLS_OPEN = "<|tool_calls|>";
const CALL_OPEN = "<|tool_call:begin|>";
const CALL_NAME = "<|tool_call:name|>";
const CALL_ARGS = "<|tool_call:args|>";
const CALL_CLOSE = "<|tool_call:end|>";
/** The control tokens the calls and their text are made of. */
export const SOLAR_MARKERS: readonly string[] = [SOLAR_CONTENT, SOLAR_CALLS_OPEN, CALL_OPEN, CALL_NAME, CALL_ARGS, CALL_CLOSE];

/** The reply: see the module comment. */
export function solarLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const id: RegexNode = { kind: "dfa", dfa: compileRegex("[a-z0-9]{10}", limits) };
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    markerNode(CALL_OPEN),
    id,
    markerNode(CALL_NAME),
    literal(name),
    markerNode(CALL_ARGS),
    args,
    markerNode(CALL_CLOSE),
  ]);
  const calls = concat(markerNode(SOLAR_CALLS_OPEN), call, { kind: "repeat", item: call, min: 0, max: parallel ? -1 : 0 });
  const text: RegexNode = { kind: "dfa", dfa: textWithout([SOLAR_END, ...SOLAR_MARKERS], limits) };
  const answer = concat(markerNode(SOLAR_CONTENT), text, { kind: "repeat", item: literal(SOLAR_END), min: 0, max: 1 });
  return { dfa: compileRegexNode({ kind: "alt", items: [answer, calls] }, limits), warnings };
}

/** A reply of the language above: its text, or its calls. */
export function parseSolarReply(reply: string): { content: string | null; calls: { name: string; arguments: string }[] } {
  if (!reply.startsWith(SOLAR_CALLS_OPEN)) {
    const text = reply.startsWith(SOLAR_CONTENT) ? reply.slice(SOLAR_CONTENT.length) : reply;
    const end = text.indexOf(SOLAR_END);
    return { content: end < 0 ? text : text.slice(0, end), calls: [] };
  }
  const calls: { name: string; arguments: string }[] = [];
  for (let at = reply.indexOf(CALL_OPEN); at >= 0; at = reply.indexOf(CALL_OPEN, at)) {
    const name = reply.indexOf(CALL_NAME, at) + CALL_NAME.length;
    const args = reply.indexOf(CALL_ARGS, name);
    // The arguments end where their JSON does (a string in them may spell any marker).
    const end = jsonValueEnd(reply, args + CALL_ARGS.length);
    calls.push({ name: reply.slice(name, args), arguments: JSON.stringify(JSON.parse(reply.slice(args + CALL_ARGS.length, end))) });
    at = end + CALL_CLOSE.length;
  }
  return { content: null, calls };
}
