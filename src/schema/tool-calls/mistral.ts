/**
 * Mistral's tool calls, whose markers are control tokens (`[TOOL_CALLS]`, `[ARGS]`, `[CALL_ID]`),
 * as the templates write an assistant turn's history:
 * - "mistral" (Mistral Small 3.2, Devstral, Ministral 3): `[TOOL_CALLS]f[ARGS]{…}` per call, one
 *   after another; Small 3.2's history puts `[CALL_ID]` and a 9-character id before `[ARGS]`, which
 *   the language allows;
 * - "mistral-nemo" (Mistral Nemo): `[TOOL_CALLS][{"name": "f", "arguments": {…}, "id": "…"}, …]`,
 *   one JSON list (the id optional: the model may write one, 9 letters or digits).
 * In the language a marker is its control token's spelling (support/control-markers.ts), which
 * the token trie gives that token alone: the model can only open a call with the real control
 * token, never by spelling `[TOOL_CALLS]` in text (free text may not contain that text either, so
 * that the reply's text reads back unambiguously). The reader works on the generated text, where
 * each control token stands as its text.
 */
import { compileRegex, type RegexLimits, type RegexNode } from "../../regex/index.js";
import { compileJsonSchema, type JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { literal } from "./nodes.js";

export type MistralToolCallStyle = "mistral" | "mistral-nemo";

export const MISTRAL_CALLS_OPEN = "[TOOL_CALLS]";
const ARGS = "[ARGS]";
const CALL_ID = "[CALL_ID]";

/** The control markers each style writes (the model's vocabulary must have them as control tokens). */
export const MISTRAL_MARKERS: Record<MistralToolCallStyle, readonly string[]> = {
  mistral: [MISTRAL_CALLS_OPEN, ARGS],
  "mistral-nemo": [MISTRAL_CALLS_OPEN],
};

export const isMistralStyle = (style: string): style is MistralToolCallStyle => Object.hasOwn(MISTRAL_MARKERS, style);

/** The calls after the text: see the module comment. */
export function mistralCallsLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: MistralToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { calls: RegexNode; warnings: JsonSchemaWarning[] } {
  if (style === "mistral-nemo") {
    const items = tools.map((t) => ({
      type: "object",
      additionalProperties: false,
      required: ["name", "arguments"],
      properties: {
        name: { const: t.name },
        arguments: t.parameters ?? { type: "object" },
        id: { type: "string", pattern: "^[a-zA-Z0-9]{9}$" },
      },
    }));
    const list = {
      type: "array",
      minItems: 1,
      ...(parallel ? {} : { maxItems: 1 }),
      items: items.length === 1 ? items[0] : { anyOf: items },
    };
    const compiled = compileJsonSchema(list, options);
    return {
      calls: { kind: "concat", items: [markerNode(MISTRAL_CALLS_OPEN), { kind: "dfa", dfa: compiled.dfa }] },
      warnings: [...compiled.warnings],
    };
  }
  const callId: RegexNode = {
    kind: "repeat",
    item: { kind: "concat", items: [markerNode(CALL_ID), { kind: "dfa", dfa: compileRegex("[a-zA-Z0-9]{9}", options.limits ?? {}) }] },
    min: 0,
    max: 1,
  };
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    markerNode(MISTRAL_CALLS_OPEN),
    literal(name),
    callId,
    markerNode(ARGS),
    args,
  ]);
  return { calls: { kind: "repeat", item: call, min: 1, max: parallel ? -1 : 1 }, warnings };
}

/** The calls of a reply of the language above, from its first `[TOOL_CALLS]` on (the text the control tokens decode to). */
export function parseMistralCalls(text: string, style: MistralToolCallStyle): { name: string; arguments: string }[] {
  if (style === "mistral-nemo") {
    const list = JSON.parse(text.slice(MISTRAL_CALLS_OPEN.length)) as { name: string; arguments: unknown }[];
    return list.map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments) }));
  }
  const calls: { name: string; arguments: string }[] = [];
  for (let at = 0; text.startsWith(MISTRAL_CALLS_OPEN, at); ) {
    at += MISTRAL_CALLS_OPEN.length;
    // A name is letters, digits, _ and - (the API's rule), so it ends where a marker begins.
    const nameEnd = text.indexOf("[", at);
    const name = text.slice(at, nameEnd);
    at = nameEnd;
    if (text.startsWith(CALL_ID, at)) at += CALL_ID.length + 9;
    at += ARGS.length;
    const end = jsonValueEnd(text, at, MISTRAL_CALLS_OPEN);
    calls.push({ name, arguments: JSON.stringify(JSON.parse(text.slice(at, end))) });
    at = end;
  }
  return calls;
}
