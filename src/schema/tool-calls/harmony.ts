/**
 * gpt-oss's replies (harmony, "harmony" style), after the generation prompt's `<|start|>assistant`
 * (or a reasoning section that ends with it): either the final channel,
 * `<|channel|>final<|message|>text`, or one call in the commentary channel,
 * ` to=functions.f<|channel|>commentary json<|message|>{…}`, which `<|call|>` ends (an
 * end-of-generation token: one call per reply). Its markers are text tokens in gpt-oss's
 * vocabulary (llama.cpp renders them), so the language spells them.
 */
import { compileRegex, compileRegexNode, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import type { ByteDfa } from "../../regex/index.js";
import { literal } from "./nodes.js";

/** What opens the final channel's text. */
export const HARMONY_FINAL = "<|channel|>final<|message|>";
/** What opens a call (after the space the template writes before it). */
export const HARMONY_CALL = "to=functions.";
const CHANNEL = "<|channel|>commentary json<|message|>";

/** The end of a reasoning section before a reply that may call tools: the reply then says which channel it is. */
export const HARMONY_TOOLS_CLOSE = "<|end|><|start|>assistant";

/** The reply: final text, or one call of one of `tools`. */
export function harmonyLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const { calls, warnings } = toolCallAlternatives(tools, options, (name, args) => [literal(` ${HARMONY_CALL}${name}${CHANNEL}`), args]);
  const text: RegexNode = {
    kind: "concat",
    items: [literal(HARMONY_FINAL), { kind: "dfa", dfa: compileRegex(".*", { flags: "s", ...limits }) }],
  };
  return { dfa: compileRegexNode({ kind: "alt", items: [text, ...calls] }, limits), warnings };
}

/**
 * A reply of the language above (leading whitespace allowed: a reasoning section's split leaves
 * it out): the final text, or the call.
 */
export function parseHarmonyReply(reply: string): { content: string | null; calls: { name: string; arguments: string }[] } {
  const text = reply.replace(/^\s+/, "");
  if (!text.startsWith(HARMONY_CALL))
    return { content: text.startsWith(HARMONY_FINAL) ? text.slice(HARMONY_FINAL.length) : reply, calls: [] };
  const nameEnd = text.indexOf(CHANNEL);
  const from = nameEnd + CHANNEL.length;
  const end = jsonValueEnd(text, from);
  return {
    content: null,
    calls: [{ name: text.slice(HARMONY_CALL.length, nameEnd), arguments: JSON.stringify(JSON.parse(text.slice(from, end))) }],
  };
}
