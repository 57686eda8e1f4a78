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
import { ValueCompiler } from "./tool-calls-tagged.js";

export const GEMMA_CALL_OPEN = "<|tool_call>";
const CALL_CLOSE = "<tool_call|>";
const QUOTE = '<|"|>';

const literal = (text: string): RegexNode => parseRegex(pyReEscape(text), parseFlagString(""));
const concat = (...items: RegexNode[]): RegexNode => ({ kind: "concat", items });
const EMPTY: RegexNode = { kind: "concat", items: [] };

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
    const items: { node: RegexNode; required: boolean }[] = [];
    for (const p of sortedParameters(fn.parameters)) {
      const value = compiler.quotedValue(fn, p, QUOTE);
      if (value === null) {
        if (p.required) throw new JsonSchemaUnsatisfiableError(`${p.pointer} (function ${JSON.stringify(fn.name)})`);
        continue;
      }
      items.push({ node: concat(literal(`${p.name}:`), { kind: "dfa", dfa: value }), required: p.required });
    }
    // From the right: `after[k]` writes parameters k… once one was written (each after a comma),
    // `first[k]` before any was (the first written has none).
    let after: RegexNode = EMPTY;
    let first: RegexNode = EMPTY;
    for (let k = items.length - 1; k >= 0; k--) {
      const { node, required } = items[k]!;
      const withComma = concat(literal(","), node);
      const written = concat(node, after);
      first = required ? written : { kind: "alt", items: [written, first] };
      after = concat(required ? withComma : { kind: "repeat", item: withComma, min: 0, max: 1 }, after);
    }
    return concat(literal(`${GEMMA_CALL_OPEN}call:${fn.name}{`), first, literal(`}${CALL_CLOSE}`));
  });
  return { call: calls.length === 1 ? calls[0]! : { kind: "alt", items: calls }, warnings: compiler.warnings };
}

const PYTHON_LITERALS: Record<string, string> = { True: "true", False: "false", None: "null" };

/** The calls of a reply of the language above (from its first `<|tool_call>` on), arguments as JSON text in the order written. */
export function parseGemmaCalls(text: string): { name: string; arguments: string }[] {
  const calls: { name: string; arguments: string }[] = [];
  const prefix = `${GEMMA_CALL_OPEN}call:`;
  let at = 0;
  const fail = (what: string): never => {
    throw new Error(`parseGemmaCalls: ${what} at ${at}`);
  };
  while (text.startsWith(prefix, at)) {
    at += prefix.length;
    const brace = text.indexOf("{", at);
    if (brace < 0) fail("no arguments");
    const name = text.slice(at, brace);
    at = brace + 1;
    const args: string[] = [];
    while (text[at] !== "}") {
      if (args.length > 0) {
        if (text[at] !== ",") fail('expected ","');
        at++;
      }
      const colon = text.indexOf(":", at);
      if (colon < 0) fail('expected ":"');
      const key = text.slice(at, colon);
      at = colon + 1;
      let value: string;
      if (text.startsWith(QUOTE, at)) {
        const end = text.indexOf(QUOTE, at + QUOTE.length);
        if (end < 0) fail("an unclosed string");
        value = JSON.stringify(text.slice(at + QUOTE.length, end));
        at = end + QUOTE.length;
      } else {
        // A number, boolean or null: up to the next "," or "}" (none of them holds one).
        let end = at;
        while (end < text.length && text[end] !== "," && text[end] !== "}") end++;
        const written = text.slice(at, end);
        value = Object.hasOwn(PYTHON_LITERALS, written) ? PYTHON_LITERALS[written]! : written;
        at = end;
      }
      args.push(`${JSON.stringify(key)}:${value}`);
    }
    at++;
    if (!text.startsWith(CALL_CLOSE, at)) fail(`expected ${CALL_CLOSE}`);
    at += CALL_CLOSE.length;
    calls.push({ name, arguments: `{${args.join(",")}}` });
  }
  return calls;
}
