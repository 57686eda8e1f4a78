/**
 * What the tool-call formats that write each call's arguments as one JSON value share: one
 * alternative per declared function around its compiled parameters schema (the languages), and
 * where that JSON ends in a reply (the readers).
 */
import type { RegexNode } from "../../regex/index.js";
import { compileJsonSchema, type JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";

/**
 * One call of each of `tools`: `around(name, args)` places the function's name and its arguments'
 * language (its parameters schema compiled alone, so its `#…` references resolve in it); `call`
 * is their alternative, `calls` each one.
 */
export function toolCallAlternatives(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  options: JsonSchemaOptions,
  around: (name: string, args: RegexNode) => RegexNode[],
): { call: RegexNode; calls: RegexNode[]; warnings: JsonSchemaWarning[] } {
  const warnings: JsonSchemaWarning[] = [];
  const calls = tools.map((t): RegexNode => {
    const args = compileJsonSchema(t.parameters ?? { type: "object" }, options);
    warnings.push(...args.warnings);
    return { kind: "concat", items: around(t.name, { kind: "dfa", dfa: args.dfa }) };
  });
  return { call: calls.length === 1 ? calls[0]! : { kind: "alt", items: calls }, calls, warnings };
}

/**
 * Where the JSON value starting at `from` in `text` ends, for the tool-call readers: an object,
 * array or string at its closing character (strings skipped whole, so a string may spell any
 * marker); a number or literal where `after` next occurs, or at the end of the text.
 */
export function jsonValueEnd(text: string, from: number, after?: string): number {
  const first = text[from];
  if (first !== "{" && first !== "[" && first !== '"') {
    const next = after === undefined ? -1 : text.indexOf(after, from);
    return next < 0 ? text.length : next;
  }
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      if (depth === 0) return i + 1;
    } else if (c === "{" || c === "[") depth++;
    else if ((c === "}" || c === "]") && --depth === 0) return i + 1;
  }
  throw new Error(`parseToolReply: the JSON value from ${from} does not end`);
}
