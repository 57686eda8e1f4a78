/**
 * Calls whose arguments are keywords written one after another inside the call — Gemma 4's
 * `f{city:<|"|>Oslo<|"|>,days:3}`, LFM2's `f(city='Oslo', days=3)` — a notation each: what joins a
 * name to its value, what separates two arguments, what closes them, and the quotes around a
 * string (raw between them). Non-string values (numbers, booleans, null) are written bare, as JSON
 * or as Python's str writes them. Here: their language from the parameters' values, and their reader.
 */
import { parseFlagString, parseRegex, pyReEscape, type RegexNode } from "../regex/index.js";

export interface KeywordNotation {
  /** Between a name and its value (":", "="). */
  readonly assign: string;
  /** Between two arguments (",", ", "). */
  readonly separator: string;
  /** After the last argument ("}", ")"); a bare value never holds it nor the separator's first character. */
  readonly close: string;
  /** The quotes a string may be written between (raw: it cannot hold its quote). */
  readonly quotes: readonly string[];
}

const literal = (text: string): RegexNode => parseRegex(pyReEscape(text), parseFlagString(""));
const concat = (...items: RegexNode[]): RegexNode => ({ kind: "concat", items });
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
    const quote = notation.quotes.find((q) => text.startsWith(q, at));
    let value: string;
    if (quote !== undefined) {
      const end = text.indexOf(quote, at + quote.length);
      if (end < 0) fail("an unclosed string");
      value = JSON.stringify(text.slice(at + quote.length, end));
      at = end + quote.length;
    } else {
      // A number, boolean or null: up to the separator or the close (none of them holds either).
      let end = at;
      while (end < text.length && !stops.includes(text[end]!)) end++;
      const written = text.slice(at, end);
      value = Object.hasOwn(PYTHON_LITERALS, written) ? PYTHON_LITERALS[written]! : written;
      at = end;
    }
    args.push(`${JSON.stringify(key)}:${value}`);
  }
  return { json: `{${args.join(",")}}`, end: at + notation.close.length };
}
