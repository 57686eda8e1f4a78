/**
 * Muse's ATEM replies ("muse"), after the generation prompt's `<|start|>assistant`: each message
 * names its recipient after a space, ` to=user<|message|>` then text for the user, or ` to=f<|message|>` then
 * one call in ATEM tags,
 * `<atem:function_calls>\n<atem:invoke name="f">\n<atem:parameter name="p">value</atem:parameter>\n…</atem:invoke>\n</atem:function_calls>`
 * (tagged.ts: a string raw, others JSON), the next call in a message of its own after
 * `<|eom|><|start|>assistant`. A reply is text or calls (the template drops an assistant's text
 * beside its calls). `<|eom|>` is a control token; `<|start|>` and `<|message|>` are text, as
 * llama.cpp renders them. No function may be named `user` or `self` (their messages are the
 * text and the reasoning).
 */
import { compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { textWithout } from "./text.js";
import { parseTaggedCalls, spelled, taggedCallLanguage } from "./tagged.js";

/**
 * A message to the user, after the generation prompt and a space (the reply's leading space is
 * optional: after a reasoning section the answer's leading whitespace is not content).
 */
export const MUSE_TEXT_LEAD = "to=user<|message|>";
/** What ends a message whose turn goes on, and starts the next (its recipient follows). */
const NEXT_MESSAGE = "<|eom|><|start|>assistant ";
/** The end of the text's turn (the generation usually ends there). */
export const MUSE_TURN_END = "<|eot|>";
/** With reasoning and tools on "auto", the section ends at the next message's start (its recipient says text or a call). */
export const MUSE_TOOLS_CLOSE = "<|eom|><|start|>assistant";
/** The control tokens of the calls. */
export const MUSE_MARKERS: readonly string[] = ["<|eom|>"];

/** The reply: see the module comment. */
export function museLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  const clash = tools.find((t) => t.name === "user" || t.name === "self");
  if (clash !== undefined)
    throw new JsonSchemaError(
      `function ${JSON.stringify(clash.name)}: the muse call format names a message's recipient, and "${clash.name}" is the ${clash.name === "user" ? "text's" : "reasoning's"}, so no function can be named so`,
      "",
      "name",
    );
  const { call, warnings } = taggedCallLanguage(tools, "muse", options);
  const more: RegexNode = {
    kind: "repeat",
    item: { kind: "concat", items: [spelled(NEXT_MESSAGE), call] },
    min: 0,
    max: parallel ? -1 : 0,
  };
  const text: RegexNode = { kind: "dfa", dfa: textWithout(["<|eom|>", MUSE_TURN_END, "<|start|>", "<|message|>"], limits) };
  const answer: RegexNode = { kind: "concat", items: [spelled(MUSE_TEXT_LEAD), text] };
  const space: RegexNode = { kind: "repeat", item: spelled(" "), min: 0, max: 1 };
  const reply: RegexNode = { kind: "alt", items: [answer, { kind: "concat", items: [call, more] }] };
  return { dfa: compileRegexNode({ kind: "concat", items: [space, reply] }, limits), warnings };
}

/** A reply of the language above: its text, or its calls. */
export function parseMuseReply(
  reply: string,
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
): { content: string | null; calls: { name: string; arguments: string }[] } {
  reply = reply.trimStart();
  if (reply.startsWith(MUSE_TEXT_LEAD)) {
    const text = reply.slice(MUSE_TEXT_LEAD.length);
    const end = text.indexOf(MUSE_TURN_END);
    return { content: end < 0 ? text : text.slice(0, end), calls: [] };
  }
  // A string argument may not spell the next message's start: its raw text stops at `</atem:parameter>`, and JSON strings are skipped by the call reader.
  const calls: { name: string; arguments: string }[] = [];
  for (const message of splitMessages(reply)) calls.push(...parseTaggedCalls(message, "muse", tools));
  return { content: null, calls };
}

/** The reply's call messages: split where a call's close is followed by the next message's start. */
function splitMessages(reply: string): string[] {
  const close = "</atem:function_calls>";
  const out: string[] = [];
  let from = 0;
  for (let at = reply.indexOf(close + NEXT_MESSAGE); at >= 0; at = reply.indexOf(close + NEXT_MESSAGE, from)) {
    out.push(reply.slice(from, at + close.length));
    from = at + close.length + NEXT_MESSAGE.length;
  }
  out.push(reply.slice(from));
  return out;
}
