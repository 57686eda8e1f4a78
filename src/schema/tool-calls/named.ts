/**
 * Tool calls that write the function's name outside its JSON arguments, between text markers, as
 * the templates write an assistant turn's history:
 * - "deepseek-r1" (DeepSeek-R1 and its Qwen/Llama distills, llama.cpp's deepseek-r1 template):
 *   `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{…}\n```<｜tool▁call▁end｜>`,
 *   the next call after a newline or straight after, then `<｜tool▁calls▁end｜>`;
 * - "deepseek-v3" (DeepSeek-V3.1): `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`;
 * - "functionary-v3.1" (Functionary medium v3.1): `<function=f>{…}</function>` per call, one after
 *   another (its template writes a tool named "python" after `<|python_tag|>` instead, which is
 *   not read: such a call is written as any other).
 * The arguments are each function's parameters schema compiled alone (its `#…` references
 * resolve in it). Function names are plain (the API allows [a-zA-Z0-9_-] only), so a name never
 * spells a marker or a newline. Where the model's vocabulary has the opening marker as a control
 * token, the chat stage does not read the style (it would have to spell a control token as text).
 */
import type { RegexLimits, RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import type { JsonSchemaWarning } from "../json-schema/errors.js";
import { jsonValueEnd, toolCallAlternatives } from "./json.js";
import { literal } from "./nodes.js";

export type NamedToolCallStyle = "deepseek-r1" | "deepseek-v3" | "functionary-v3.1";

const CALLS_OPEN = "<｜tool▁calls▁begin｜>";
const CALLS_CLOSE = "<｜tool▁calls▁end｜>";
const CALL_OPEN = "<｜tool▁call▁begin｜>";
const SEP = "<｜tool▁sep｜>";
const CALL_CLOSE = "<｜tool▁call▁end｜>";

/**
 * What comes around the calls (a block holding them all, or none), each call's name and
 * arguments, and between two calls (an optional newline, or nothing), per style.
 */
interface NamedLayout {
  readonly block: { readonly open: string; readonly close: string } | null;
  readonly beforeName: string;
  readonly beforeArguments: string;
  readonly afterArguments: string;
  readonly newlineBetween: boolean;
}

const LAYOUTS: Record<NamedToolCallStyle, NamedLayout> = {
  "deepseek-r1": {
    block: { open: CALLS_OPEN, close: CALLS_CLOSE },
    beforeName: `${CALL_OPEN}function${SEP}`,
    beforeArguments: "\n```json\n",
    afterArguments: `\n\`\`\`${CALL_CLOSE}`,
    newlineBetween: true,
  },
  "deepseek-v3": {
    block: { open: CALLS_OPEN, close: CALLS_CLOSE },
    beforeName: CALL_OPEN,
    beforeArguments: SEP,
    afterArguments: CALL_CLOSE,
    newlineBetween: false,
  },
  "functionary-v3.1": { block: null, beforeName: "<function=", beforeArguments: ">", afterArguments: "</function>", newlineBetween: false },
};

/** The marker that opens a style's calls (free text never spells it). */
export const namedCallsOpen = (style: NamedToolCallStyle): string => LAYOUTS[style].block?.open ?? LAYOUTS[style].beforeName;

export const isNamedStyle = (style: string): style is NamedToolCallStyle => Object.hasOwn(LAYOUTS, style);

/**
 * The calls: one (or, with `parallel`, several: R1's templates put a newline between two,
 * llama.cpp's none), in the style's block if it has one.
 */
export function namedCallsLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  style: NamedToolCallStyle,
  parallel: boolean,
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { block: RegexNode; warnings: JsonSchemaWarning[] } {
  const layout = LAYOUTS[style];
  const { call, warnings } = toolCallAlternatives(tools, options, (name, args) => [
    literal(`${layout.beforeName}${name}${layout.beforeArguments}`),
    args,
    literal(layout.afterArguments),
  ]);
  const between: RegexNode = layout.newlineBetween
    ? { kind: "repeat", item: literal("\n"), min: 0, max: 1 }
    : { kind: "concat", items: [] };
  const more: RegexNode = { kind: "repeat", item: { kind: "concat", items: [between, call] }, min: 0, max: parallel ? -1 : 0 };
  const items = layout.block === null ? [call, more] : [literal(layout.block.open), call, more, literal(layout.block.close)];
  return { block: { kind: "concat", items }, warnings };
}

/** The calls of a reply of the language above (the text from its opening marker on), arguments as JSON text. */
export function parseNamedCalls(text: string, style: NamedToolCallStyle): { name: string; arguments: string }[] {
  const layout = LAYOUTS[style];
  const calls: { name: string; arguments: string }[] = [];
  let at = layout.block?.open.length ?? 0;
  for (;;) {
    if (layout.newlineBetween && text.startsWith("\n", at) && text.startsWith(layout.beforeName, at + 1)) at++;
    if (!text.startsWith(layout.beforeName, at)) break;
    at += layout.beforeName.length;
    const nameEnd = text.indexOf(layout.beforeArguments, at);
    const name = text.slice(at, nameEnd);
    const from = nameEnd + layout.beforeArguments.length;
    // A string inside the arguments may spell the closing piece: the JSON value's own end decides.
    const end = jsonValueEnd(text, from, layout.afterArguments);
    calls.push({ name, arguments: JSON.stringify(JSON.parse(text.slice(from, end))) });
    at = end + layout.afterArguments.length;
  }
  return calls;
}
