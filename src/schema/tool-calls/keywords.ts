/**
 * Calls whose arguments are keywords written one after another inside the call — Gemma 4's
 * `f{city:<|"|>Oslo<|"|>,days:3}`, LFM2's `f(city='Oslo', days=3)` — a notation each: what joins a
 * name to its value, what separates two arguments, what closes them, and the quotes around a
 * string (raw between them). Non-string values (numbers, booleans, null) are written bare, as JSON
 * or as Python's str writes them. Here: their language from the parameters' values, and their reader.
 */
import type { RegexNode } from "../../regex/index.js";
import { jsonOfLiteral, readPythonLiteral } from "./python-literal.js";
import { concat, literal } from "./nodes.js";

export interface KeywordNotation {
  /** Between a name and its value (":", "="). */
  readonly assign: string;
  /** Between two arguments (",", ", "). */
  readonly separator: string;
  /** After the last argument ("}", ")"); a bare value never holds it nor the separator's first character. */
  readonly close: string;
  /** The quotes a string may be written between (raw: it cannot hold its quote). */
  readonly quotes: readonly string[];
  /**
   * Values may be objects `{k:v,…}` (keys bare, `assign` and `separator` as at the top) and arrays
   * `[v,…]` (Gemma 4's notation). Absent: false.
   */
  readonly nested?: boolean;
  /** Values may be JSON objects (LFM2's `tojson` of a mapping). Absent: false. */
  readonly jsonObjects?: boolean;
}

const EMPTY: RegexNode = { kind: "concat", items: [] };

/**
 * The arguments in the order given: the required ones always, the optional ones in their place
 * when written, the separator between two written ones (none before the first). The call's own
 * brackets around them are the caller's to write.
 */
export function keywordArguments(
  items: readonly { readonly name: string; readonly value: RegexNode; readonly required: boolean }[],
  notation: KeywordNotation,
): RegexNode {
  // From the right: `after` writes the rest once an argument was written (each after the
  // separator), `first` before any was.
  let after: RegexNode = EMPTY;
  let first: RegexNode = EMPTY;
  for (let k = items.length - 1; k >= 0; k--) {
    const { name, value, required } = items[k]!;
    const node = concat(literal(`${name}${notation.assign}`), value);
    const separated = concat(literal(notation.separator), node);
    const written = concat(node, after);
    first = required ? written : { kind: "alt", items: [written, first] };
    after = concat(required ? separated : { kind: "repeat", item: separated, min: 0, max: 1 }, after);
  }
  return first;
}

const PYTHON_LITERALS: Record<string, string> = { True: "true", False: "false", None: "null" };

/**
 * Reads the arguments from `at` (just after the call's opening) through `notation.close`: their
 * JSON object text, in the order written, and where the close ends. Throws on what the language
 * above never writes.
 */
export function readKeywordArguments(text: string, from: number, notation: KeywordNotation): { json: string; end: number } {
  let at = from;
  const fail = (what: string): never => {
    throw new Error(`reading tool-call arguments: ${what} at ${at}`);
  };
  const args: string[] = [];
  const stops = [notation.separator[0]!, notation.close[0]!];
  while (!text.startsWith(notation.close, at)) {
    if (args.length > 0) {
      if (!text.startsWith(notation.separator, at)) fail(`expected ${JSON.stringify(notation.separator)}`);
      at += notation.separator.length;
    }
    const assign = text.indexOf(notation.assign, at);
    if (assign < 0) fail(`expected ${JSON.stringify(notation.assign)}`);
    const key = text.slice(at, assign);
    at = assign + notation.assign.length;
    const value = readValue(text, at, notation, stops, fail);
    args.push(`${JSON.stringify(key)}:${value.json}`);
    at = value.end;
  }
  return { json: `{${args.join(",")}}`, end: at + notation.close.length };
}

/** One value from `at`: its JSON text and where it ends (`stops`: what ends a bare value there). */
function readValue(
  text: string,
  at: number,
  notation: KeywordNotation,
  stops: readonly string[],
  fail: (what: string) => never,
): { json: string; end: number } {
  const quote = notation.quotes.find((q) => text.startsWith(q, at));
  if (quote !== undefined) {
    const end = text.indexOf(quote, at + quote.length);
    if (end < 0) fail("an unclosed string");
    return { json: JSON.stringify(text.slice(at + quote.length, end)), end: end + quote.length };
  }
  if (notation.nested && text[at] === "{") return readKeywordArguments(text, at + 1, { ...notation, close: "}" });
  if (notation.jsonObjects && (text[at] === "{" || text[at] === "[")) {
    // JSON, or a Python literal (LFM2 writes a list as Python's repr): it ends where its value does.
    const { end } = readPythonLiteral(text, at);
    return { json: JSON.stringify(JSON.parse(jsonOfLiteral(text.slice(at, end)))), end };
  }
  if (notation.nested && text[at] === "[") {
    const items: string[] = [];
    let i = at + 1;
    while (text[i] !== "]") {
      if (items.length > 0) {
        if (!text.startsWith(notation.separator, i)) fail(`expected ${JSON.stringify(notation.separator)}`);
        i += notation.separator.length;
      }
      const item = readValue(text, i, notation, [notation.separator[0]!, "]"], fail);
      items.push(item.json);
      i = item.end;
    }
    return { json: `[${items.join(",")}]`, end: i + 1 };
  }
  // A number, boolean or null: up to what ends it here (none of them holds that).
  let end = at;
  while (end < text.length && !stops.includes(text[end]!)) end++;
  const written = text.slice(at, end);
  return { json: Object.hasOwn(PYTHON_LITERALS, written) ? PYTHON_LITERALS[written]! : written, end };
}
