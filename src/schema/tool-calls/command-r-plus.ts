/**
 * Command R+'s replies, as its tool-use template asks for them ("Write 'Action:' followed by a
 * json-formatted list of actions") and writes them in history: every reply is one action list,
 *
 *   Action: ```json
 *   [
 *       {
 *           "tool_name": "f",
 *           "parameters": {…}
 *       }
 *   ]```
 *
 * "Action:" followed by a space (the instruction) or a newline (the template's history), the calls
 * of declared functions, or the one `directly-answer` action the template names for a reply
 * without calls. Cohere's pipeline then renders a second prompt for the answer; Trellis lets the
 * model write it in the same turn, after `\nAnswer: ` (the line Cohere's grounded-generation
 * prompts ask an answer on), so a text reply is one generation, streamed as it comes. An answer
 * that is not an "auto" tool reply is written after that whole lead, prefilled in the prompt
 * (COMMAND_R_PLUS_ANSWER_LEAD). A declared function named `directly-answer` is a 400.
 */
import { compileRegex, compileRegexNode, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { concat, literal } from "./nodes.js";

/** What every reply opens with (a newline before it allowed, as the history writes it). */
export const COMMAND_R_PLUS_OPEN = "Action:";
const LIST_OPEN = "```json\n[\n    ";
const LIST_CLOSE = "\n]```";
const DIRECT = "directly-answer";
const callOf = (name: string, args: string): string =>
  `{\n        "tool_name": ${JSON.stringify(name)},\n        "parameters": ${args}\n    }`;
const ANSWER = "\nAnswer: ";
/** The `directly-answer` action after "Action:" and its separator, up to the answer's text. */
const DIRECT_ACTION = `${LIST_OPEN}${callOf(DIRECT, "{}")}${LIST_CLOSE}${ANSWER}`;

/** The leads of a text reply, one per separator after "Action:" (the stream and the reader strip them). */
export const COMMAND_R_PLUS_TEXT_LEADS: readonly string[] = [" ", "\n"].map((sep) => `${COMMAND_R_PLUS_OPEN}${sep}${DIRECT_ACTION}`);

/** An answer that is not an "auto" tool reply follows this, prefilled after the generation prompt (as the history writes it). */
export const COMMAND_R_PLUS_ANSWER_LEAD = `\n${COMMAND_R_PLUS_TEXT_LEADS[1]}`;

/** The reply: see the module comment. */
export function commandRPlusLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { dfa: ByteDfa; warnings: JsonSchemaWarning[] } {
  const limits = options.limits ?? {};
  if (tools.some((t) => t.name === DIRECT))
    throw new JsonSchemaError(
      `function "${DIRECT}": Command R+'s template names its action for a reply without calls so, so no function can be named so`,
      "",
      "name",
    );
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => {
    const [before, after] = callOf(name, "\0").split("\0") as [string, string];
    return [literal(before), args, literal(after)];
  });
  const more: RegexNode = { kind: "repeat", item: concat(literal(",\n    "), call), min: 0, max: parallel ? -1 : 0 };
  const calls = concat(literal(LIST_OPEN), call, more, literal(LIST_CLOSE), { kind: "repeat", item: literal("\n"), min: 0, max: 1 });
  const answer = concat(literal(DIRECT_ACTION), { kind: "dfa", dfa: compileRegex(".*", { flags: "s", ...limits }) });
  const node = concat(
    { kind: "repeat", item: literal("\n"), min: 0, max: 1 },
    literal(COMMAND_R_PLUS_OPEN),
    { kind: "alt", items: [literal(" "), literal("\n")] },
    { kind: "alt", items: [calls, answer] },
  );
  return { dfa: compileRegexNode(node, limits), warnings };
}

/** A reply of the language above: its answer's text, or its calls. */
export function parseCommandRPlusReply(reply: string): { content: string | null; calls: { name: string; arguments: string }[] } {
  const text = reply.trimStart();
  const lead = COMMAND_R_PLUS_TEXT_LEADS.find((l) => text.startsWith(l));
  if (lead !== undefined) return { content: text.slice(lead.length), calls: [] };
  const from = text.indexOf("[");
  if (!text.startsWith(COMMAND_R_PLUS_OPEN) || from < 0) return { content: reply, calls: [] };
  const list = JSON.parse(text.slice(from, jsonValueEnd(text, from))) as { tool_name: string; parameters: unknown }[];
  return { content: null, calls: list.map((c) => ({ name: c.tool_name, arguments: JSON.stringify(c.parameters) })) };
}
