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
 *   and a reply that is text does not start with "{";
 * - "apriel" (Apriel 1.5, 1.6): `text\n<tool_calls>[{"name": "f", "arguments": {…}}, …]</tool_calls>`,
 *   one JSON list of the calls (of one call when parallel calls are not allowed);
 * - "minimax-m1" (MiniMax-M1): `<tool_calls>\n{"name": "f", "arguments": {…}}\n…</tool_calls>`,
 *   one JSON object a line;
 * - "xml-function" (Qwen3-Coder, Qwen3.5, Nemotron 3, Step 3.5), "glm" (GLM-4.6+, Ling, Laguna,
 *   Spark), "seed-oss" (Seed-OSS), "minimax-m2" and "minimax-m3" (MiniMax-M2, M3), "hunyuan"
 *   (Hunyuan 3), "minicpm5" (MiniCPM5): calls whose
 *   arguments are tagged one by one, strings raw (tagged.ts, arguments.ts);
 * - "deepseek-r1" (DeepSeek-R1 and its distills), "deepseek-v3" (DeepSeek-V3.1), "functionary-v3.1":
 *   the name outside the JSON arguments, between DeepSeek's `<｜tool▁call▁begin｜>` markers or in
 *   `<function=f>` (named.ts);
 * - "mistral" (Mistral Small 3.2, Devstral, Ministral 3), "mistral-nemo" (Mistral Nemo): after the
 *   `[TOOL_CALLS]` control token (mistral.ts);
 * - "kimi-k2" (Kimi-K2): `<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}`
 *   between control tokens (kimi.ts);
 * - "harmony" (gpt-oss): the final channel's text, or one call in the commentary channel
 *   (harmony.ts);
 * - "granite" (Granite 3.3), "firefunction-v2", "apertus" (Apertus), "nemotron-v2" (Nemotron Nano
 *   v2): one JSON list of calls after a marker (listed.ts);
 * - "functionary-v3.2": each message after `>>>` names its recipient, `all` the user, else a
 *   function (recipient.ts);
 * - "command-r7b" (Command R7B), "cohere2" (Command A): text between answer markers, or one JSON
 *   list of calls between action markers, all control tokens (cohere.ts);
 * - "command-r-plus" (Command R+): `Action: ```json\n[…]```` listing the calls, or the
 *   `directly-answer` action and the answer after it (command-r-plus.ts);
 * - "gemma4" (Gemma 4): `<|tool_call>call:f{k:v,…}<tool_call|>`, each argument in its own
 *   notation (gemma.ts);
 * - "lfm2" (LFM2, LFM2.5): `<|tool_call_start|>[f(k='v', n=3)]<|tool_call_end|>`, Python calls
 *   between control tokens (pythonic.ts);
 * - "solar-open" (Solar Open): text under its content header, or the calls under theirs, each
 *   `<|tool_call:begin|>id<|tool_call:name|>f<|tool_call:args|>{…}<|tool_call:end|>` (solar.ts);
 * - "kimi-k3" (Kimi-K3): the text, its close `<|close|>response<|sep|>`, then one XTML block of
 *   calls (tagged.ts);
 * - "muse" (Muse): ` to=user<|message|>` then text, or calls in ATEM tags, one per message
 *   (muse.ts);
 * - "gigachat3", "gigachat3.1" (GigaChat 3, 3.1): text, then one JSON call in a `function call`
 *   message of its own (3) or after `<|function_call|>` (3.1) (gigachat.ts).
 */
import { compileRegex, compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import { compileJsonSchema, type JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { isObject } from "../json-schema/spec.js";
import { jsonValueEnd } from "./json.js";
import type { TaggedToolCallStyle } from "./arguments.js";
import { isNamedStyle, type NamedToolCallStyle, namedCallsLanguage, namedCallsOpen, parseNamedCalls } from "./named.js";
import { HARMONY_CALL, harmonyLanguage, parseHarmonyReply } from "./harmony.js";
import { KIMI_CALLS_OPEN, KIMI_MARKERS, kimiCallsLanguage, parseKimiCalls } from "./kimi.js";
import {
  isMistralStyle,
  MISTRAL_CALLS_OPEN,
  MISTRAL_MARKERS,
  type MistralToolCallStyle,
  mistralCallsLanguage,
  parseMistralCalls,
} from "./mistral.js";
import {
  KIMI_K3_MARKERS,
  KIMI_K3_RESPONSE_CLOSE,
  kimiK3ReplyLanguage,
  parseKimiK3Reply,
  parseTaggedCalls,
  spelled,
  TAGGED_LAYOUTS,
  taggedCallLanguage,
} from "./tagged.js";
import {
  isListedStyle,
  type ListedToolCallStyle,
  listedCallsLanguage,
  listedCallsOpen,
  listedControlMarkers,
  parseListedCalls as parseJsonListCalls,
} from "./listed.js";
import { textWithout } from "./text.js";
import { parseRecipientReply, RECIPIENT_OPEN, recipientLanguage } from "./recipient.js";
import { GEMMA_CALL_OPEN, gemmaCallLanguage, parseGemmaCalls } from "./gemma.js";
import { PYTHONIC_CALLS_OPEN, PYTHONIC_MARKERS, parsePythonicCalls, pythonicCallsLanguage } from "./pythonic.js";
import {
  COHERE_ACTION_OPEN,
  COHERE_TEXT,
  type CohereToolCallStyle,
  cohereLanguage,
  cohereMarkers,
  isCohereStyle,
  parseCohereReply,
} from "./cohere.js";
import { COMMAND_R_PLUS_ANSWER_LEAD, COMMAND_R_PLUS_OPEN, commandRPlusLanguage, parseCommandRPlusReply } from "./command-r-plus.js";
import { parseSolarReply, SOLAR_CALLS_OPEN, SOLAR_CONTENT, SOLAR_MARKERS, solarLanguage } from "./solar.js";
import { MUSE_MARKERS, museLanguage, parseMuseReply } from "./muse.js";
import {
  type GigaChatToolCallStyle,
  gigaChatCallsOpen,
  gigaChatLanguage,
  gigaChatMarkers,
  isGigaChatStyle,
  parseGigaChatReply,
} from "./gigachat.js";
import { literal } from "./nodes.js";

/** A tool-call format a chat template teaches (see above). */
export type ToolCallStyle =
  | "hermes"
  | "llama3"
  | "apriel"
  | "minimax-m1"
  | TaggedToolCallStyle
  | NamedToolCallStyle
  | MistralToolCallStyle
  | ListedToolCallStyle
  | "kimi-k2"
  | "harmony"
  | "functionary-v3.2"
  | CohereToolCallStyle
  | "command-r-plus"
  | "gemma4"
  | "lfm2"
  | "solar-open"
  | GigaChatToolCallStyle;

/**
 * The control tokens a style's calls are made of (its vocabulary must have each as a control
 * token); none for the styles whose markers are text.
 */
export function controlMarkersOf(style: ToolCallStyle): readonly string[] {
  if (isMistralStyle(style)) return MISTRAL_MARKERS[style];
  if (isListedStyle(style)) return listedControlMarkers(style);
  if (isCohereStyle(style)) return cohereMarkers(style);
  if (style === "lfm2") return PYTHONIC_MARKERS;
  if (style === "solar-open") return SOLAR_MARKERS;
  if (isGigaChatStyle(style)) return gigaChatMarkers(style);
  if (style === "kimi-k3") return KIMI_K3_MARKERS;
  if (style === "muse") return MUSE_MARKERS;
  return style === "kimi-k2" ? KIMI_MARKERS : [];
}

/** Whether a style tags each argument (tagged.ts) rather than writing the arguments as one JSON object. */
export const isTaggedStyle = (style: ToolCallStyle): style is TaggedToolCallStyle => Object.hasOwn(TAGGED_LAYOUTS, style);

export interface ToolDeclaration {
  readonly name: string;
  /** JSON Schema of the arguments; absent: any object. */
  readonly parameters?: unknown;
}

/** The marker that opens the calls, per style (llama3's is the reply's first byte). */
export const TOOL_CALL_OPEN: Record<ToolCallStyle, string> = {
  hermes: "<tool_call>",
  llama3: "{",
  apriel: "<tool_calls>",
  "minimax-m1": "<tool_calls>",
  "xml-function": TAGGED_LAYOUTS["xml-function"].open,
  glm: TAGGED_LAYOUTS.glm.open,
  "seed-oss": TAGGED_LAYOUTS["seed-oss"].open,
  "minimax-m2": TAGGED_LAYOUTS["minimax-m2"].open,
  "minimax-m3": TAGGED_LAYOUTS["minimax-m3"].open,
  "deepseek-dsml": TAGGED_LAYOUTS["deepseek-dsml"].open,
  "deepseek-v4": TAGGED_LAYOUTS["deepseek-v4"].open,
  hunyuan: TAGGED_LAYOUTS.hunyuan.open,
  minicpm5: TAGGED_LAYOUTS.minicpm5.open,
  // Where the text ends (the block of calls, if any, follows).
  "kimi-k3": KIMI_K3_RESPONSE_CLOSE,
  // A call's recipient (the text's is ` to=user`, read by its lead).
  muse: TAGGED_LAYOUTS.muse.open,
  "deepseek-r1": namedCallsOpen("deepseek-r1"),
  "deepseek-v3": namedCallsOpen("deepseek-v3"),
  "functionary-v3.1": namedCallsOpen("functionary-v3.1"),
  mistral: MISTRAL_CALLS_OPEN,
  "mistral-nemo": MISTRAL_CALLS_OPEN,
  "kimi-k2": KIMI_CALLS_OPEN,
  harmony: HARMONY_CALL,
  granite: listedCallsOpen("granite"),
  "firefunction-v2": listedCallsOpen("firefunction-v2"),
  apertus: listedCallsOpen("apertus"),
  "nemotron-v2": listedCallsOpen("nemotron-v2"),
  "functionary-v3.2": RECIPIENT_OPEN,
  "command-r7b": COHERE_ACTION_OPEN,
  cohere2: COHERE_ACTION_OPEN,
  "command-r-plus": COMMAND_R_PLUS_OPEN,
  gemma4: GEMMA_CALL_OPEN,
  lfm2: PYTHONIC_CALLS_OPEN,
  "solar-open": SOLAR_CALLS_OPEN,
  gigachat3: gigaChatCallsOpen("gigachat3"),
  "gigachat3.1": gigaChatCallsOpen("gigachat3.1"),
};
/**
 * The header a text answer opens with in the styles whose replies start with one (Cohere's answer
 * markers, Solar Open's content header): an answer that is not an "auto" tool reply (free text,
 * a structured output, required or named calls) is written after it, as the model was trained to.
 */
export const ANSWER_OPEN: Partial<Record<ToolCallStyle, string>> = {
  "command-r7b": COHERE_TEXT["command-r7b"].open,
  cohere2: COHERE_TEXT.cohere2.open,
  "solar-open": SOLAR_CONTENT,
};
/**
 * The text such an answer follows in the styles whose every reply opens with an action (Command
 * R+'s `directly-answer`, then `Answer: `): prefilled after the generation prompt, not generated
 * (no reasoning precedes it there, and a prompt's text costs no decode step).
 */
export const ANSWER_PREFILL: Partial<Record<ToolCallStyle, string>> = {
  "command-r-plus": COMMAND_R_PLUS_ANSWER_LEAD,
};
/** What an answer that is not an "auto" tool reply follows, generated or prefilled (categorization scores what comes after it). */
export const answerLeadOf = (style: ToolCallStyle | null): string | undefined =>
  style === null ? undefined : (ANSWER_OPEN[style] ?? ANSWER_PREFILL[style]);
export const HERMES_CALL_CLOSE = "</tool_call>";
/** What closes Apriel's and MiniMax-M1's list of calls. */
const LIST_CLOSE = "</tool_calls>";

export interface ToolCallLanguage {
  readonly dfa: ByteDfa;
  readonly warnings: readonly JsonSchemaWarning[];
}

/** Where the tools' parameters schemas are placed as resources of their own (see toolCallSchema). */
const TOOLS_BASE = "https://trellis.invalid/tools/";

/**
 * The JSON Schema of one call's JSON object ({"name", "arguments"} or Llama's {"name", "parameters"}).
 * Each function's parameters schema is a resource of its own (an `$id` where it has none), so its
 * `#…` references resolve inside it, as when it is compiled alone; the document speaks the
 * dialect the parameters declare (`$schema`), which must be one (a JsonSchemaError naming it).
 */
export function toolCallSchema(tools: readonly ToolDeclaration[], style: ToolCallStyle): Record<string, unknown> {
  const argumentsKey = style === "llama3" ? "parameters" : "arguments";
  let dialect: unknown;
  tools.forEach((t, i) => {
    const declared = isObject(t.parameters) ? t.parameters.$schema : undefined;
    if (declared === undefined || declared === dialect) return;
    if (dialect !== undefined)
      throw new JsonSchemaError(
        `function ${JSON.stringify(t.name)}: its parameters declare the dialect ${JSON.stringify(declared)}, another function's ${JSON.stringify(dialect)}; the calls are one schema, of one dialect`,
        `${tools.length === 1 ? "" : `/anyOf/${i}`}/properties/${argumentsKey}/$schema`,
        "$schema",
      );
    dialect = declared;
  });
  const idKeyword = typeof dialect === "string" && dialect.includes("draft-04") ? "id" : "$id";
  const calls = tools.map((t, i): Record<string, unknown> => {
    const parameters = t.parameters ?? { type: "object" };
    const resource =
      isObject(parameters) && !(idKeyword in parameters) ? { [idKeyword]: `${TOOLS_BASE}${i}.json`, ...parameters } : parameters;
    return {
      type: "object",
      additionalProperties: false,
      required: ["name", argumentsKey],
      properties: { name: { const: t.name }, [argumentsKey]: resource },
    };
  });
  const schema = calls.length === 1 ? calls[0]! : { anyOf: calls };
  return dialect === undefined ? schema : { $schema: dialect, ...schema };
}

const ofDfa = (dfa: ByteDfa): RegexNode => ({ kind: "dfa", dfa });

export function compileToolCallLanguage(
  tools: readonly ToolDeclaration[],
  style: ToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): ToolCallLanguage {
  const limits = options.limits ?? {};
  const open = TOOL_CALL_OPEN[style];
  // Calls may end the reply with a newline (the template's turn goes on after them).
  const newline: RegexNode = { kind: "repeat", item: literal("\n"), min: 0, max: 1 };
  const textThen = (calls: RegexNode[]): RegexNode => {
    const text = freeText(open, limits);
    return { kind: "alt", items: [text, { kind: "concat", items: [text, ...calls, newline] }] };
  };
  // gpt-oss: the reply is the final channel or one call, told apart at its start.
  if (style === "harmony") return harmonyLanguage(tools, options);
  // Functionary v3.2: the reply's first line names its recipient.
  if (style === "functionary-v3.2") return recipientLanguage(tools, parallel, options);
  // Cohere: text between its answer markers, or the calls.
  if (isCohereStyle(style)) return cohereLanguage(tools, style, parallel, options);
  // Command R+: an action list, of calls or of `directly-answer` and the answer.
  if (style === "command-r-plus") return commandRPlusLanguage(tools, parallel, options);
  // Solar Open: text under its content header, or the calls under theirs.
  if (style === "solar-open") return solarLanguage(tools, parallel, options);
  // GigaChat: text, then at most one call (its templates write no more).
  if (isGigaChatStyle(style)) return gigaChatLanguage(tools, style, options);
  // Muse: the recipient says text or a call, a call per message.
  if (style === "muse") return museLanguage(tools, parallel, options);
  if (style === "kimi-k3") {
    const { call, warnings } = taggedCallLanguage(tools, style, options);
    const { block } = TAGGED_LAYOUTS[style];
    const calls: RegexNode = {
      kind: "concat",
      items: [spelled(block!.open), call, { kind: "repeat", item: call, min: 0, max: parallel ? -1 : 0 }, spelled(block!.close)],
    };
    return { dfa: compileRegexNode(kimiK3ReplyLanguage(calls, limits), limits), warnings };
  }
  if (isTaggedStyle(style)) {
    const { call, warnings } = taggedCallLanguage(tools, style, options);
    const { block } = TAGGED_LAYOUTS[style];
    // One block holding the calls one after another (MiniMax), or blocks one after another, a newline between them or not.
    const next: RegexNode = block === null ? { kind: "concat", items: [newline, call] } : call;
    const calls: RegexNode[] = [call, { kind: "repeat", item: next, min: 0, max: parallel ? -1 : 0 }];
    const items = block === null ? calls : [literal(block.open), ...calls, literal(block.close)];
    return { dfa: compileRegexNode(textThen(items), limits), warnings };
  }
  if (style === "lfm2") {
    const { calls, warnings } = pythonicCallsLanguage(tools, parallel, options);
    return { dfa: compileRegexNode(textThen([calls]), limits), warnings };
  }
  if (style === "gemma4") {
    const { call, warnings } = gemmaCallLanguage(tools, options);
    const calls: RegexNode[] = [call, { kind: "repeat", item: call, min: 0, max: parallel ? -1 : 0 }];
    return { dfa: compileRegexNode(textThen(calls), limits), warnings };
  }
  if (isNamedStyle(style)) {
    const { block, warnings } = namedCallsLanguage(tools, style, parallel, options);
    return { dfa: compileRegexNode(textThen([block]), limits), warnings };
  }
  if (isMistralStyle(style)) {
    // The text may not spell "[TOOL_CALLS]" either, though only the control token opens calls.
    const { calls, warnings } = mistralCallsLanguage(tools, style, parallel, options);
    return { dfa: compileRegexNode(textThen([calls]), limits), warnings };
  }
  if (isListedStyle(style)) {
    const { calls, warnings } = listedCallsLanguage(tools, style, parallel, options);
    return { dfa: compileRegexNode(textThen([calls]), limits), warnings };
  }
  if (style === "kimi-k2") {
    const { section, warnings } = kimiCallsLanguage(tools, parallel, options);
    return { dfa: compileRegexNode(textThen([section]), limits), warnings };
  }
  if (style === "apriel") {
    const { $schema, ...call } = toolCallSchema(tools, style);
    const list = {
      ...($schema === undefined ? {} : { $schema }),
      type: "array",
      minItems: 1,
      ...(parallel ? {} : { maxItems: 1 }),
      items: call,
    };
    const calls = compileJsonSchema(list, options);
    return {
      dfa: compileRegexNode(textThen([literal(open), ofDfa(calls.dfa), literal(LIST_CLOSE)]), limits),
      warnings: calls.warnings,
    };
  }
  const call = compileJsonSchema(toolCallSchema(tools, style), options);
  if (style === "llama3") {
    const text = compileRegex("(?:[^{].*)?", { flags: "s", ...limits });
    return { dfa: compileRegexNode({ kind: "alt", items: [ofDfa(text), ofDfa(call.dfa)] }, limits), warnings: call.warnings };
  }
  if (style === "minimax-m1") {
    const line: RegexNode = { kind: "concat", items: [ofDfa(call.dfa), literal("\n")] };
    const lines: RegexNode = { kind: "repeat", item: line, min: 1, max: parallel ? -1 : 1 };
    return { dfa: compileRegexNode(textThen([literal(`${open}\n`), lines, literal(LIST_CLOSE)]), limits), warnings: call.warnings };
  }
  const text = freeText(open, limits);
  const block: RegexNode = { kind: "concat", items: [literal(`${open}\n`), ofDfa(call.dfa), literal(`\n${HERMES_CALL_CLOSE}`)] };
  const more: RegexNode = { kind: "repeat", item: { kind: "concat", items: [literal("\n"), block] }, min: 0, max: parallel ? -1 : 0 };
  const node: RegexNode = { kind: "alt", items: [text, { kind: "concat", items: [text, block, more] }] };
  return { dfa: compileRegexNode(node, limits), warnings: call.warnings };
}

/** Any text that does not spell the opening marker. */
const freeText = (open: string, limits: RegexLimits): RegexNode => ofDfa(textWithout([open], limits));

export interface ParsedToolReply {
  /** Text before the calls (null when there is none but whitespace and there are calls). */
  readonly content: string | null;
  readonly calls: readonly { readonly name: string; readonly arguments: string }[];
}

/**
 * Splits a reply of the language above into its text and its calls (arguments as JSON text).
 * The tagged styles need the tools the language was compiled for: how a value is written (raw
 * string or JSON) depends on its parameter's schema.
 */
export function parseToolReply(text: string, style: ToolCallStyle, tools: readonly ToolDeclaration[] = []): ParsedToolReply {
  if (style === "llama3") {
    if (!text.startsWith("{")) return { content: text, calls: [] };
    const call = JSON.parse(text) as { name: string; parameters: unknown };
    return { content: null, calls: [{ name: call.name, arguments: JSON.stringify(call.parameters) }] };
  }
  if (style === "harmony") return parseHarmonyReply(text);
  if (style === "functionary-v3.2") return parseRecipientReply(text);
  if (isCohereStyle(style)) return parseCohereReply(text, style);
  if (style === "command-r-plus") return parseCommandRPlusReply(text);
  if (style === "solar-open") return parseSolarReply(text);
  if (isGigaChatStyle(style)) return parseGigaChatReply(text, style);
  if (style === "kimi-k3") return parseKimiK3Reply(text, tools);
  if (style === "muse") return parseMuseReply(text, tools);
  const open = TOOL_CALL_OPEN[style];
  const at = text.indexOf(open);
  if (at < 0) return { content: text, calls: [] };
  const before = text.slice(0, at);
  const content = before.trim().length > 0 ? before : null;
  if (isTaggedStyle(style)) return { content, calls: parseTaggedCalls(text.slice(at), style, tools) };
  if (style === "apriel" || style === "minimax-m1") return { content, calls: parseListedCalls(text.slice(at), style) };
  if (isNamedStyle(style)) return { content, calls: parseNamedCalls(text.slice(at), style) };
  if (isMistralStyle(style)) return { content, calls: parseMistralCalls(text.slice(at), style) };
  if (style === "kimi-k2") return { content, calls: parseKimiCalls(text.slice(at)) };
  if (isListedStyle(style)) return { content, calls: parseJsonListCalls(text.slice(at), style) };
  if (style === "gemma4") return { content, calls: parseGemmaCalls(text.slice(at)) };
  if (style === "lfm2") return { content, calls: parsePythonicCalls(text.slice(at)) };
  const calls: { name: string; arguments: string }[] = [];
  let rest = text.slice(at);
  while (rest.startsWith(open)) {
    const end = rest.indexOf(`\n${HERMES_CALL_CLOSE}`);
    const call = JSON.parse(rest.slice(open.length + 1, end)) as { name: string; arguments: unknown };
    calls.push({ name: call.name, arguments: JSON.stringify(call.arguments) });
    rest = rest.slice(end + HERMES_CALL_CLOSE.length + 1).replace(/^\n/, "");
  }
  return { content, calls };
}

/** Apriel's JSON list, or MiniMax-M1's JSON lines, of calls in `<tool_calls>…</tool_calls>` (the text from the marker on). */
function parseListedCalls(text: string, style: "apriel" | "minimax-m1"): { name: string; arguments: string }[] {
  const open = TOOL_CALL_OPEN[style];
  const body = text.slice(open.length, text.length - (text.endsWith(`${LIST_CLOSE}\n`) ? LIST_CLOSE.length + 1 : LIST_CLOSE.length));
  let values: unknown[];
  if (style === "apriel") values = JSON.parse(body) as unknown[];
  else {
    values = [];
    for (let at = 1; at < body.length; ) {
      const end = jsonValueEnd(body, at);
      values.push(JSON.parse(body.slice(at, end)));
      at = end + 1; // the newline after it
    }
  }
  return (values as { name: string; arguments: unknown }[]).map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments) }));
}
