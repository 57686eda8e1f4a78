/**
 * LFM2's and LFM2.5's tool calls ("lfm2"): a Python list of calls between control tokens,
 * `<|tool_call_start|>[f(city='Oslo', days=3), g()]<|tool_call_end|>`, as LFM2.5's template writes
 * an assistant's calls (and Liquid's documentation, with double quotes): the arguments as keywords
 * in the order of `properties`, ", " between them and between calls; a string quoted with ' or ",
 * raw (it cannot hold its quote), its enum/const/length/pattern/format enforced on the text; a
 * number as JSON; a boolean or null as Python's str writes it (`True`, `None`; JSON's spellings are
 * read as well); an object as JSON (the template's `tojson`); an array as Python's repr writes it
 * (python-literal.ts). Parameters that are not named `properties` are refused by name (arguments.ts).
 */
import type { RegexLimits, RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { markerNode } from "../marker-node.js";
import { functionForm } from "./arguments.js";
import { type KeywordNotation, keywordArguments, readKeywordArguments } from "./keywords.js";
import { ValueCompiler } from "./tagged.js";
import { concat, literal } from "./nodes.js";

export const PYTHONIC_CALLS_OPEN = "<|tool_call_start|>";
const CALLS_CLOSE = "<|tool_call_end|>";
/** The control markers the style writes (the model's vocabulary must have them as control tokens). */
export const PYTHONIC_MARKERS: readonly string[] = [PYTHONIC_CALLS_OPEN, CALLS_CLOSE];
const NOTATION: KeywordNotation = { assign: "=", separator: ", ", close: ")", quotes: ["'", '"'], jsonObjects: true };

/** The list of calls (one, without parallel calls). */
export function pythonicCallsLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { calls: RegexNode; warnings: JsonSchemaWarning[] } {
  const compiler = new ValueCompiler("lfm2", options, NOTATION.quotes[0]!);
  const alternatives = tools.map((tool): RegexNode => {
    const fn = functionForm(tool, "lfm2");
    const items: { name: string; value: RegexNode; required: boolean }[] = [];
    for (const p of fn.parameters) {
      const value = compiler.quotedValue(fn, p, NOTATION.quotes);
      if (value === null) {
        if (p.required) throw new JsonSchemaUnsatisfiableError(`${p.pointer} (function ${JSON.stringify(fn.name)})`);
        continue;
      }
      items.push({ name: p.name, value: { kind: "dfa", dfa: value }, required: p.required });
    }
    return concat(literal(`${fn.name}(`), keywordArguments(items, NOTATION), literal(")"));
  });
  const call: RegexNode = alternatives.length === 1 ? alternatives[0]! : { kind: "alt", items: alternatives };
  const more: RegexNode = { kind: "repeat", item: concat(literal(", "), call), min: 0, max: parallel ? -1 : 0 };
  return {
    calls: concat(markerNode(PYTHONIC_CALLS_OPEN), literal("["), call, more, literal("]"), markerNode(CALLS_CLOSE)),
    warnings: compiler.warnings,
  };
}

/** The calls of a reply of the language above (from its opening marker on), arguments as JSON text in the order written. */
export function parsePythonicCalls(text: string): { name: string; arguments: string }[] {
  const calls: { name: string; arguments: string }[] = [];
  let at = PYTHONIC_CALLS_OPEN.length + 1; // the marker, then "["
  for (;;) {
    const paren = text.indexOf("(", at);
    if (paren < 0) throw new Error(`parsePythonicCalls: expected "(" at ${at}`);
    const { json, end } = readKeywordArguments(text, paren + 1, NOTATION);
    calls.push({ name: text.slice(at, paren), arguments: json });
    at = end;
    if (!text.startsWith(", ", at)) break;
    at += 2;
  }
  return calls;
}
