/**
 * The language of an assistant turn that may call tools (OpenAI's tool_choice "auto"), in the
 * format the model's chat template teaches it, as one byte DFA: free text, or free text followed
 * by calls. A call, once its opening marker is written, can only be a valid call of a declared
 * function (its arguments valid against the function's parameters, through the JSON Schema
 * front-end); free text can never contain the marker, so what is a call is never in doubt.
 *
 * Styles:
 * - "hermes" (Hermes 2 Pro / 3, Qwen 2.5 / 3, and the plain transcript):
 *   `text <tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call>` (then more calls, one per
 *   line, when parallel calls are allowed);
 * - "llama3" (Llama 3.1 – 3.3 custom tools): the whole reply is `{"name": "f", "parameters": {…}}`,
 *   and a reply that is text does not start with "{".
 */
import {
  compileRegex,
  compileRegexNode,
  parseFlagString,
  parseRegex,
  pyReEscape,
  type ByteDfa,
  type RegexLimits,
  type RegexNode,
  subtractDfas,
} from "../regex/index.js";
import { compileJsonSchema, type JsonSchemaOptions } from "./json-schema/compile.js";
import type { JsonSchemaWarning } from "./json-schema/errors.js";

export type ToolCallStyle = "hermes" | "llama3";

export interface ToolDeclaration {
  readonly name: string;
  /** JSON Schema of the arguments; absent: any object. */
  readonly parameters?: unknown;
}

/** The marker that opens a call, per style (llama3's is the reply's first byte). */
export const TOOL_CALL_OPEN: Record<ToolCallStyle, string> = { hermes: "<tool_call>", llama3: "{" };
export const HERMES_CALL_CLOSE = "</tool_call>";

export interface ToolCallLanguage {
  readonly dfa: ByteDfa;
  readonly warnings: readonly JsonSchemaWarning[];
}

/** The JSON Schema of one call's JSON object ({"name", "arguments"} or Llama's {"name", "parameters"}). */
export function toolCallSchema(tools: readonly ToolDeclaration[], style: ToolCallStyle): unknown {
  const argumentsKey = style === "llama3" ? "parameters" : "arguments";
  const calls = tools.map((t) => ({
    type: "object",
    additionalProperties: false,
    required: ["name", argumentsKey],
    properties: { name: { const: t.name }, [argumentsKey]: t.parameters ?? { type: "object" } },
  }));
  return calls.length === 1 ? calls[0] : { anyOf: calls };
}

const literal = (text: string): RegexNode => parseRegex(pyReEscape(text), parseFlagString(""));
const ofDfa = (dfa: ByteDfa): RegexNode => ({ kind: "dfa", dfa });

export function compileToolCallLanguage(
  tools: readonly ToolDeclaration[],
  style: ToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): ToolCallLanguage {
  const call = compileJsonSchema(toolCallSchema(tools, style), options);
  const limits = options.limits ?? {};
  if (style === "llama3") {
    const text = compileRegex("(?:[^{].*)?", { flags: "s", ...limits });
    return { dfa: compileRegexNode({ kind: "alt", items: [ofDfa(text), ofDfa(call.dfa)] }, limits), warnings: call.warnings };
  }
  const open = TOOL_CALL_OPEN.hermes;
  const anyText = compileRegex(".*", { flags: "s", ...limits });
  const withMarker = compileRegex(`.*${open.replace(/[<>_]/g, (c) => `\\${c}`)}.*`, { flags: "s", ...limits });
  const text = ofDfa(subtractDfas(anyText, withMarker, limits));
  const block: RegexNode = { kind: "concat", items: [literal(`${open}\n`), ofDfa(call.dfa), literal(`\n${HERMES_CALL_CLOSE}`)] };
  const more: RegexNode = { kind: "repeat", item: { kind: "concat", items: [literal("\n"), block] }, min: 0, max: parallel ? -1 : 0 };
  const node: RegexNode = { kind: "alt", items: [text, { kind: "concat", items: [text, block, more] }] };
  return { dfa: compileRegexNode(node, limits), warnings: call.warnings };
}

export interface ParsedToolReply {
  /** Text before the calls (null when there is none but whitespace and there are calls). */
  readonly content: string | null;
  readonly calls: readonly { readonly name: string; readonly arguments: string }[];
}

/** Splits a reply of the language above into its text and its calls (arguments as JSON text). */
export function parseToolReply(text: string, style: ToolCallStyle): ParsedToolReply {
  if (style === "llama3") {
    if (!text.startsWith("{")) return { content: text, calls: [] };
    const call = JSON.parse(text) as { name: string; parameters: unknown };
    return { content: null, calls: [{ name: call.name, arguments: JSON.stringify(call.parameters) }] };
  }
  const open = TOOL_CALL_OPEN.hermes;
  const at = text.indexOf(open);
  if (at < 0) return { content: text, calls: [] };
  const calls: { name: string; arguments: string }[] = [];
  let rest = text.slice(at);
  while (rest.startsWith(open)) {
    const end = rest.indexOf(`\n${HERMES_CALL_CLOSE}`);
    const call = JSON.parse(rest.slice(open.length + 1, end)) as { name: string; arguments: unknown };
    calls.push({ name: call.name, arguments: JSON.stringify(call.arguments) });
    rest = rest.slice(end + HERMES_CALL_CLOSE.length + 1).replace(/^\n/, "");
  }
  const before = text.slice(0, at);
  return { content: before.trim().length > 0 ? before : null, calls };
}
