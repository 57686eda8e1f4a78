/**
 * Kimi-K2's tool calls, whose markers are control tokens, as the templates write an assistant
 * turn's history ("kimi-k2": Kimi-K2 Instruct and Thinking):
 * `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>`,
 * the number after the name counting the conversation's calls (any decimal number is allowed).
 * Markers are written as their control tokens' spellings (marker-node.ts); free text may not
 * contain the opening marker's text. The reader works on the generated text, each control token
 * standing as its text.
 */
import { compileRegex, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { literal } from "./nodes.js";

export const KIMI_CALLS_OPEN = "<|tool_calls_section_begin|>";
const CALLS_CLOSE = "<|tool_calls_section_end|>";
const CALL_OPEN = "<|tool_call_begin|>";
const ARGUMENTS = "<|tool_call_argument_begin|>";
const CALL_CLOSE = "<|tool_call_end|>";

/** The control markers the style writes (the model's vocabulary must have them as control tokens). */
export const KIMI_MARKERS: readonly string[] = [KIMI_CALLS_OPEN, CALLS_CLOSE, CALL_OPEN, ARGUMENTS, CALL_CLOSE];

/** The section of calls: see the module comment. */
export function kimiCallsLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { section: RegexNode; warnings: JsonSchemaWarning[] } {
  const index: RegexNode = { kind: "dfa", dfa: compileRegex("[0-9]+", options.limits ?? {}) };
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    markerNode(CALL_OPEN),
    literal(`functions.${name}:`),
    index,
    markerNode(ARGUMENTS),
    args,
    markerNode(CALL_CLOSE),
  ]);
  const all: RegexNode = { kind: "repeat", item: call, min: 1, max: parallel ? -1 : 1 };
  return { section: { kind: "concat", items: [markerNode(KIMI_CALLS_OPEN), all, markerNode(CALLS_CLOSE)] }, warnings };
}

/** The calls of a section of the language above (the text from its opening marker on). */
export function parseKimiCalls(text: string): { name: string; arguments: string }[] {
  const calls: { name: string; arguments: string }[] = [];
  const prefix = `${CALL_OPEN}functions.`;
  for (let at = KIMI_CALLS_OPEN.length; text.startsWith(prefix, at); ) {
    at += prefix.length;
    // A name is letters, digits, _ and - (the API's rule): it ends at the colon before the number.
    const colon = text.indexOf(":", at);
    const name = text.slice(at, colon);
    at = text.indexOf(ARGUMENTS, colon) + ARGUMENTS.length;
    const end = jsonValueEnd(text, at, CALL_CLOSE);
    calls.push({ name, arguments: JSON.stringify(JSON.parse(text.slice(at, end))) });
    at = end + CALL_CLOSE.length;
  }
  return calls;
}
