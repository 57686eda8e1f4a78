/**
 * Gemma 4's tool calls ("gemma4"), as its template writes an assistant turn's calls:
 * `<|tool_call>call:f{city:<|"|>Oslo<|"|>,days:3}<tool_call|>`, one after another. The arguments
 * are written in the order of their names, case left aside (Jinja's `dictsort`); a string between
 * `<|"|>` quotes, raw (it cannot hold the quote), with its schema's enum, const, length, pattern and
 * format enforced on the raw text; a number as JSON; a boolean `true`/`false`; a null `None`
 * (Jinja's rendering of it; JSON's `null` is read as well). Objects and arrays are written in
 * Gemma's own notation, which Trellis does not read yet: a parameter that may be one is refused by
 * name, as are parameters that are not named `properties` (tool-arguments.ts). The markers are text
 * tokens in Gemma 4's vocabulary.
 */
import { parseFlagString, parseRegex, pyReEscape, type RegexLimits, type RegexNode } from "../regex/index.js";
import type { JsonSchemaOptions } from "./json-schema/compile.js";
import { JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "./json-schema/errors.js";
import { functionForm, type ParameterForm } from "./tool-arguments.js";
import { type KeywordNotation, keywordArguments, readKeywordArguments } from "./tool-call-keywords.js";
import { ValueCompiler } from "./tool-calls-tagged.js";

export const GEMMA_CALL_OPEN = "<|tool_call>";
const CALL_CLOSE = "<tool_call|>";
const QUOTE = '<|"|>';
const NOTATION: KeywordNotation = { assign: ":", separator: ",", close: "}", quotes: [QUOTE] };

const literal = (text: string): RegexNode => parseRegex(pyReEscape(text), parseFlagString(""));
const concat = (...items: RegexNode[]): RegexNode => ({ kind: "concat", items });

/** Parameters in the order `dictsort` writes them: by name, case left aside (ties keep their order). */
function sortedParameters(parameters: readonly ParameterForm[]): ParameterForm[] {
  return parameters
    .map((p, i) => ({ p, i, key: p.name.toLowerCase() }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.i - b.i))
    .map((x) => x.p);
}

/** One call of one of `tools` (every required parameter, optional ones in their place, "," between). */
export function gemmaCallLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { call: RegexNode; warnings: JsonSchemaWarning[] } {
  const compiler = new ValueCompiler("gemma4", options, QUOTE);
  const calls = tools.map((tool): RegexNode => {
    const fn = functionForm(tool, "gemma4");
    const items: { name: string; value: RegexNode; required: boolean }[] = [];
    for (const p of sortedParameters(fn.parameters)) {
      const value = compiler.quotedValue(fn, p, QUOTE);
      if (value === null) {
        if (p.required) throw new JsonSchemaUnsatisfiableError(`${p.pointer} (function ${JSON.stringify(fn.name)})`);
        continue;
      }
      items.push({ name: p.name, value: { kind: "dfa", dfa: value }, required: p.required });
    }
    return concat(literal(`${GEMMA_CALL_OPEN}call:${fn.name}{`), keywordArguments(items, NOTATION), literal(`}${CALL_CLOSE}`));
  });
  return { call: calls.length === 1 ? calls[0]! : { kind: "alt", items: calls }, warnings: compiler.warnings };
}

/** The calls of a reply of the language above (from its first `<|tool_call>` on), arguments as JSON text in the order written. */
export function parseGemmaCalls(text: string): { name: string; arguments: string }[] {
  const calls: { name: string; arguments: string }[] = [];
  const prefix = `${GEMMA_CALL_OPEN}call:`;
  for (let at = 0; text.startsWith(prefix, at); ) {
    const brace = text.indexOf("{", at + prefix.length);
    if (brace < 0) throw new Error(`parseGemmaCalls: no arguments at ${at}`);
    const name = text.slice(at + prefix.length, brace);
    const { json, end } = readKeywordArguments(text, brace + 1, NOTATION);
    if (!text.startsWith(CALL_CLOSE, end)) throw new Error(`parseGemmaCalls: expected ${CALL_CLOSE} at ${end}`);
    at = end + CALL_CLOSE.length;
    calls.push({ name, arguments: json });
  }
  return calls;
}
