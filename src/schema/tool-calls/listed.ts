/**
 * Tool calls written as one JSON list of call objects after a marker, as the templates (or, where
 * a template never writes an assistant's calls, the model's documentation) write them:
 * - "granite" (Granite 3.3): `<|tool_call|>[{"name": "f", "arguments": {…}}, …]`, the marker a
 *   control token; the keys in either order (Granite's own examples put "arguments" first);
 * - "firefunction-v2" (FireFunction v2): `functools[{"name": "f", "arguments": {…}}, …]`, text;
 * - "apertus" (Apertus): `<|tools_prefix|>[{"f": {…}}, …]<|tools_suffix|>`, each call an object
 *   whose one key is the function's name, the markers control tokens;
 * - "nemotron-v2" (Nemotron Nano v2): `<TOOLCALL>[{"name": "f", "arguments": {…}}, …]</TOOLCALL>`, text.
 * Two calls are separated by ", " as the templates join them; without parallel calls the list
 * holds one. The arguments are each function's parameters schema compiled alone (its `#…`
 * references resolve in it). Function names are plain (the API allows [a-zA-Z0-9_-] only), so a
 * name needs no escaping in a JSON string. A marker that is a control token is written as its
 * spelling (marker-node.ts); the reader works on the generated text, each control token standing
 * as its text.
 */
import type { RegexLimits, RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { toolCallAlternatives } from "./json.js";
import { concat, literal } from "./nodes.js";

export type ListedToolCallStyle = "granite" | "firefunction-v2" | "apertus" | "nemotron-v2";

/** How a call object holds the name and the arguments. */
type CallObject = "name-arguments" | "name-arguments-either-order" | "keyed-by-name";

interface ListedLayout {
  /** What opens the list (the list's "[" included where `bracketInOpen`). */
  readonly open: string;
  readonly bracketInOpen: boolean;
  /** What closes the list after its "]", or null: the calls end the reply. */
  readonly close: string | null;
  /** Whether the markers are control tokens (the vocabulary must have each as one). */
  readonly control: boolean;
  readonly object: CallObject;
}

const LAYOUTS: Record<ListedToolCallStyle, ListedLayout> = {
  granite: { open: "<|tool_call|>", bracketInOpen: false, close: null, control: true, object: "name-arguments-either-order" },
  // The text "functools" alone is free to write (Python's module); a call needs its "[".
  "firefunction-v2": { open: "functools[", bracketInOpen: true, close: null, control: false, object: "name-arguments" },
  apertus: { open: "<|tools_prefix|>", bracketInOpen: false, close: "<|tools_suffix|>", control: true, object: "keyed-by-name" },
  "nemotron-v2": { open: "<TOOLCALL>", bracketInOpen: false, close: "</TOOLCALL>", control: false, object: "name-arguments" },
};

export const isListedStyle = (style: string): style is ListedToolCallStyle => Object.hasOwn(LAYOUTS, style);

/** The marker that opens a style's calls (free text never spells it). */
export const listedCallsOpen = (style: ListedToolCallStyle): string => LAYOUTS[style].open;

/** The control markers a style writes (none for a style of text markers). */
export function listedControlMarkers(style: ListedToolCallStyle): readonly string[] {
  const { open, close, control } = LAYOUTS[style];
  return control ? (close === null ? [open] : [open, close]) : [];
}

/** The list of calls after any text: see the module comment. */
export function listedCallsLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: ListedToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { calls: RegexNode; warnings: JsonSchemaWarning[] } {
  const layout = LAYOUTS[style];
  const marker = (text: string): RegexNode => (layout.control ? markerNode(text) : literal(text));
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => {
    const quoted = JSON.stringify(name);
    if (layout.object === "keyed-by-name") return [literal(`{${quoted}: `), args, literal("}")];
    const nameFirst = concat(literal(`{"name": ${quoted}, "arguments": `), args, literal("}"));
    if (layout.object === "name-arguments") return [nameFirst];
    return [{ kind: "alt", items: [nameFirst, concat(literal('{"arguments": '), args, literal(`, "name": ${quoted}}`))] }];
  });
  const more: RegexNode = { kind: "repeat", item: concat(literal(", "), call), min: 0, max: parallel ? -1 : 0 };
  const items: RegexNode[] = [marker(layout.open)];
  if (!layout.bracketInOpen) items.push(literal("["));
  items.push(call, more, literal("]"));
  if (layout.close !== null) items.push(marker(layout.close));
  return { calls: concat(...items), warnings };
}

/** The calls of a reply of the language above (the text from its opening marker on), arguments as JSON text. */
export function parseListedCalls(text: string, style: ListedToolCallStyle): { name: string; arguments: string }[] {
  const layout = LAYOUTS[style];
  let body = text.slice(layout.open.length).replace(/\n$/, "");
  if (layout.close !== null) body = body.slice(0, body.length - layout.close.length);
  const list = JSON.parse(layout.bracketInOpen ? `[${body}` : body) as Record<string, unknown>[];
  return list.map((call) => {
    if (layout.object === "keyed-by-name") {
      const [name, args] = Object.entries(call)[0]!;
      return { name, arguments: JSON.stringify(args) };
    }
    return { name: call.name as string, arguments: JSON.stringify(call.arguments) };
  });
}
