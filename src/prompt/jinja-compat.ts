/**
 * Python Jinja2 semantics on top of @huggingface/jinja, for chat templates.
 *
 * Chat templates are written against Python Jinja2 as transformers' `apply_chat_template` runs it
 * (an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loopcontrols; a `tojson`
 * with ensure_ascii=False; `raise_exception` and `strftime_now`). @huggingface/jinja parses them
 * all, but renders some of them differently or not at all. The library has no way to register
 * filters, so this module does not fork it: `PythonInterpreter` subclasses its exported
 * `Interpreter` and overrides the public `evaluate(node, env)` (which the library calls for every
 * node), handling the cases below and handing everything else back to the library, with operands
 * it has already evaluated (a `Precomputed` node) so that nothing is evaluated twice.
 *
 * Where the two differ, this follows Python Jinja2 (each case checked against Jinja2 3.1 in the
 * transformers environment, see test/prompt-chat-templates.test.ts):
 * - undefined values are Jinja2's `Undefined`: iterating one yields nothing, `length` is 0, string
 *   filters (`trim`, `upper`, `string`, ...) give "", `list`/`items`/`selectattr`/`map`... give [];
 *   `select`/`reject`/`map` families give [] on any falsy operand (Jinja2 checks `if value:`);
 * - printing (`{{ x }}`, `~`, `|string`, `|join`, `str.format`) uses Python's `str()`: None, True,
 *   1.0, 1e-05, `{'a': [1, 'b']}`;
 * - `==`, `!=`, `in` compare structurally (1 == true, [1] == [1], undefined != none);
 *   `<`/`>` compare strings and lists; `"ab" * 2` repeats;
 * - `tojson` is transformers' `json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)`,
 *   byte for byte (Python float reprs, indent=0, code-point key order, tuples);
 * - filters the library lacks or gets wrong: `string` on mappings, `min`, `max`, `unique`
 *   (case-insensitive), `join` of non-strings, Jinja2's `title` and `capitalize`, `trim(chars)`,
 *   `default` without arguments, `escape`;
 * - Python tests: `number` (booleans are numbers), `iterable` (mappings, tuples and undefined are),
 *   `float`, `lower`/`upper` (need a cased character), `escaped`;
 * - `x.items`/`x.keys`/`x.values`/`x.get` on a mapping are its methods even when it has such a key
 *   (Jinja2's attribute lookup tries the Python attribute first);
 * - mapping literals may have integer keys (`{0: 0, 512: 128}`), looked up, iterated and sorted as
 *   Python does;
 * - string methods `strip/lstrip/rstrip(chars)` with Python's whitespace, `str.format`;
 *   tuples unpack in `for a, b in [(1, 2)]`;
 * - `|safe` makes a Markup: `Markup + str` escapes the str (`&#34;`), as Python does.
 * - `list.append` / `list.pop` mutate the list as plain Jinja2 and llama.cpp's minja do
 *   (transformers' immutable sandbox refuses them with a SecurityError: the one place where this
 *   renders what the template's authors meant rather than what transformers does).
 *
 * Deliberately lenient where Python raises (a render beats a failure, and the text is unchanged
 * where Python succeeds): `tojson` of an undefined value is `null`; `"a" + 1` concatenates, and
 * `"a" + mapping` joins the mapping's JSON (templates written for string tool-call arguments, such
 * as functionary-v3.2, then read what json.dumps(arguments) would have given them); `map` gives a
 * list, not Python's generator (llama.cpp's deepseek-r1 template pipes it to `tojson`, as minja allows).
 *
 * `verbatim` characters (the sentinels chat-template.ts wraps user strings in) are never escaped by
 * `repr` or `tojson(ensure_ascii=True)`, so they still mark user text after such a filter.
 */
import { Environment, Interpreter, Template } from "@huggingface/jinja";

/**
 * A runtime value of the library. Its classes are not exported, and under NodeNext its typings do
 * not resolve (dist/index.d.ts imports "./runtime" without an extension), so the shape is stated
 * here: `type` and `value` are public fields of every value class.
 */
interface Value {
  readonly type: string;
  readonly value: unknown;
  __bool__(): { readonly value: boolean };
}
type Dict = Map<string, Value>;
type NativeFunction = (args: Value[], scope: Environment) => Value;

/** An AST node of the library (ast.d.ts; the shapes this module reads are stated below). */
interface Node {
  readonly type: string;
}
type Statement = Node;
interface IdentifierNode extends Node {
  readonly value: string;
}
interface CallNode extends Node {
  readonly callee: Node;
  readonly args: Node[];
}
interface MemberNode extends Node {
  readonly object: Node;
  readonly property: Node;
  readonly computed: boolean;
}
interface FilterNode extends Node {
  readonly operand: Node;
  readonly filter: Node;
}
interface BodyNode extends Node {
  readonly body: Node[];
}
interface BinaryNode extends Node {
  readonly operator: { readonly value: string };
  readonly left: Node;
  readonly right: Node;
}
interface TestNode extends Node {
  readonly operand: Node;
  readonly negate: boolean;
  readonly test: IdentifierNode;
}
interface ForNode extends Node {
  readonly loopvar: Node;
  readonly iterable: Node;
}
interface SelectNode extends Node {
  readonly lhs: Node;
}
interface ObjectLiteralNode extends Node {
  readonly value: Map<Node, Node>;
}
interface KeywordArgumentNode extends Node {
  readonly key: IdentifierNode;
  readonly value: Node;
}
interface SpreadNode extends Node {
  readonly argument: Node;
}
/** A node standing for a value already evaluated (handed back to the library inside a copied node). */
interface Precomputed extends Node {
  readonly type: typeof PRECOMPUTED;
  readonly value: Value;
}
const PRECOMPUTED = "TrellisPrecomputed";

// The library's value classes, reached through values its public Environment.set returns.
const probe = new Environment();
let probes = 0;
const classOf = <A extends unknown[]>(sample: unknown) => probe.set(`probe${probes++}`, sample).constructor as new (...args: A) => Value;
const StringValue = classOf<[string]>("");
const IntegerValue = classOf<[number]>(1);
const FloatValue = classOf<[number]>(1.5);
const BooleanValue = classOf<[boolean]>(true);
const NullValue = classOf<[]>(null);
const UndefinedValue = classOf<[]>(undefined);
const ArrayValue = classOf<[Value[]]>([]);
const ObjectValue = classOf<[Dict]>({});
const FunctionValue = classOf<[NativeFunction]>(() => null);

const str = (s: string): Value => new StringValue(s);
const bool = (b: boolean): Value => new BooleanValue(b);
const list = (items: Value[]): Value => new ArrayValue(items);
const undef = (): Value => new UndefinedValue();
const none = (): Value => new NullValue();
const num = (n: number): Value => (Number.isInteger(n) ? new IntegerValue(n) : new FloatValue(n));
const fn = (f: NativeFunction): Value => new FunctionValue(f);

const isStr = (v: Value): boolean => v.type === "StringValue";
const isUndef = (v: Value): boolean => v.type === "UndefinedValue";
const isNone = (v: Value): boolean => v.type === "NullValue";
const isList = (v: Value): boolean => v.type === "ArrayValue" || v.type === "TupleValue";
const isDict = (v: Value): boolean => v.type === "ObjectValue" || v.type === "KeywordArgumentsValue";
const isNumeric = (v: Value): boolean => v.type === "IntegerValue" || v.type === "FloatValue" || v.type === "BooleanValue";
const textOf = (v: Value): string => v.value as string;
const itemsOf = (v: Value): Value[] => v.value as Value[];
const entriesOf = (v: Value): Dict => v.value as Dict;
const numberOf = (v: Value): number => Number(v.value);
const truthy = (v: Value): boolean => v.__bool__().value;

/** Original keys of mappings built from literals with non-string keys ({0: 0}), by the string the map stores. */
const originalKeys = new WeakMap<Value, Map<string, Value>>();
/** Strings that are Markup (made by `|safe` or `|escape`, or a concatenation with one). */
const markups = new WeakSet<Value>();

function keyString(key: Value): string {
  if (key.type === "BooleanValue") return key.value ? "1" : "0";
  if (key.type === "IntegerValue" || key.type === "FloatValue") return pyFloatOrInt(numberOf(key), key.type === "FloatValue");
  if (isNone(key)) return "None";
  throw new Error(`unhashable type: '${pyTypeName(key)}'`);
}

/** The mapping's keys as Python sees them (integer keys stay integers). */
function dictKeys(dict: Value): Value[] {
  const originals = originalKeys.get(dict);
  return [...entriesOf(dict).keys()].map((k) => originals?.get(k) ?? str(k));
}

/** `dict[key]` in Python: undefined when absent. */
function dictLookup(dict: Value, key: Value): Value | undefined {
  const originals = originalKeys.get(dict);
  if (isStr(key)) return originals?.has(textOf(key)) ? undefined : entriesOf(dict).get(textOf(key));
  if (!isNumeric(key) && !isNone(key)) return undefined;
  const k = keyString(key);
  return originals?.has(k) ? entriesOf(dict).get(k) : undefined;
}

function pyTypeName(v: Value): string {
  const names: Record<string, string> = {
    StringValue: "str",
    IntegerValue: "int",
    FloatValue: "float",
    BooleanValue: "bool",
    NullValue: "NoneType",
    UndefinedValue: "Undefined",
    ArrayValue: "list",
    TupleValue: "tuple",
    ObjectValue: "dict",
    KeywordArgumentsValue: "dict",
    NamespaceValue: "Namespace",
    FunctionValue: "function",
  };
  return names[v.type] ?? v.type;
}

/** Python's repr of an int or a float (floats: shortest round-trip digits, exponent past 1e16 or under 1e-4). */
function pyFloatOrInt(n: number, isFloat: boolean): string {
  if (!isFloat) return String(n);
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  if (n === 0) return Object.is(n, -0) ? "-0.0" : "0.0";
  const abs = Math.abs(n);
  if (abs >= 1e16 || abs < 1e-4) {
    const [mantissa, exponent] = n.toExponential().split("e") as [string, string];
    const e = Number(exponent);
    return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  const text = String(n);
  return text.includes(".") ? text : `${text}.0`;
}

const NON_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
/** Python's str.strip() whitespace (str.isspace), which differs from JavaScript's trim(). */
const PY_WHITESPACE = new Set([..."\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"]);
for (let c = 0x2000; c <= 0x200a; c++) PY_WHITESPACE.add(String.fromCharCode(c));

function pyStrip(text: string, chars: string | null, left: boolean, right: boolean): string {
  const strip = chars === null ? PY_WHITESPACE : new Set(chars);
  const points = [...text];
  let start = 0;
  let end = points.length;
  if (left) while (start < end && strip.has(points[start]!)) start++;
  if (right) while (end > start && strip.has(points[end - 1]!)) end--;
  return points.slice(start, end).join("");
}

function htmlEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/'/g, "&#39;").replace(/"/g, "&#34;");
}

function markup(text: string): Value {
  const value = str(text);
  markups.add(value);
  return value;
}

/** Python's str(), repr() and json.dumps() of runtime values. */
class PyText {
  constructor(private readonly verbatim: ReadonlySet<string>) {}

  str(v: Value): string {
    switch (v.type) {
      case "StringValue":
        return textOf(v);
      case "UndefinedValue":
        return "";
      default:
        return this.repr(v);
    }
  }

  repr(v: Value): string {
    switch (v.type) {
      case "StringValue":
        return this.reprString(textOf(v));
      case "IntegerValue":
      case "FloatValue":
        return pyFloatOrInt(numberOf(v), v.type === "FloatValue");
      case "BooleanValue":
        return v.value ? "True" : "False";
      case "NullValue":
        return "None";
      case "UndefinedValue":
        return "Undefined";
      case "ArrayValue":
        return `[${itemsOf(v)
          .map((x) => this.repr(x))
          .join(", ")}]`;
      case "TupleValue": {
        const items = itemsOf(v).map((x) => this.repr(x));
        return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
      }
      case "ObjectValue":
      case "KeywordArgumentsValue":
      case "NamespaceValue": {
        const keys = dictKeys(v);
        const values = [...entriesOf(v).values()];
        const body = `{${keys.map((k, i) => `${this.repr(k)}: ${this.repr(values[i]!)}`).join(", ")}}`;
        return v.type === "NamespaceValue" ? `<Namespace ${body}>` : body;
      }
      default:
        return `<${pyTypeName(v)}>`;
    }
  }

  private reprString(text: string): string {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    let out = quote;
    for (const ch of text) {
      if (ch === quote || ch === "\\") out += `\\${ch}`;
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (ch !== " " && !this.verbatim.has(ch) && NON_PRINTABLE.test(ch)) {
        const cp = ch.codePointAt(0)!;
        const hex = cp.toString(16);
        out += cp < 0x100 ? `\\x${hex.padStart(2, "0")}` : cp < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
      } else out += ch;
    }
    return out + quote;
  }

  /** transformers' tojson: json.dumps(x, ensure_ascii, indent, separators, sort_keys). */
  json(v: Value, options: { ensureAscii: boolean; indent: string | null; separators: [string, string] | null; sortKeys: boolean }): string {
    const [itemSep, keySep] = options.separators ?? (options.indent === null ? [", ", ": "] : [",", ": "]);
    const encode = (x: Value, depth: number): string => {
      switch (x.type) {
        case "StringValue":
          return this.jsonString(textOf(x), options.ensureAscii);
        case "IntegerValue":
          return String(numberOf(x));
        case "FloatValue": {
          const n = numberOf(x);
          if (Number.isNaN(n)) return "NaN";
          if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
          return pyFloatOrInt(n, true);
        }
        case "BooleanValue":
          return x.value ? "true" : "false";
        case "NullValue":
        case "UndefinedValue":
          return "null";
        case "ArrayValue":
        case "TupleValue":
          return container(
            "[",
            "]",
            itemsOf(x).map((item) => encode(item, depth + 1)),
            depth,
          );
        case "ObjectValue":
        case "KeywordArgumentsValue":
        case "NamespaceValue": {
          const values = [...entriesOf(x).values()];
          let pairs = dictKeys(x).map((key, i) => [key, values[i]!] as const);
          if (options.sortKeys) pairs = [...pairs].sort(([a], [b]) => pyCompare(a, b, true));
          const encoded = pairs.map(([key, value]) => {
            const name = isStr(key) ? textOf(key) : key.type === "BooleanValue" || isNone(key) ? encode(key, 0) : this.repr(key);
            return `${this.jsonString(name, options.ensureAscii)}${keySep}${encode(value, depth + 1)}`;
          });
          return container("{", "}", encoded, depth);
        }
        default:
          throw new Error(`Object of type ${pyTypeName(x)} is not JSON serializable`);
      }
    };
    const container = (open: string, close: string, items: string[], depth: number): string => {
      if (items.length === 0) return open + close;
      if (options.indent === null) return open + items.join(itemSep) + close;
      const inner = `\n${options.indent.repeat(depth + 1)}`;
      return `${open}${inner}${items.join(itemSep + inner)}\n${options.indent.repeat(depth)}${close}`;
    };
    return encode(v, 0);
  }

  private jsonString(text: string, ensureAscii: boolean): string {
    let out = '"';
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      const code = text.charCodeAt(i);
      if (ch === '"') out += '\\"';
      else if (ch === "\\") out += "\\\\";
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (ch === "\b") out += "\\b";
      else if (ch === "\f") out += "\\f";
      else if (code < 0x20 || (ensureAscii && code > 0x7e && !this.verbatimAt(text, i))) out += `\\u${code.toString(16).padStart(4, "0")}`;
      else out += ch;
    }
    return `${out}"`;
  }

  /** Whether the UTF-16 unit at i belongs to a verbatim character. */
  private verbatimAt(text: string, i: number): boolean {
    const code = text.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff && i > 0) return this.verbatim.has(String.fromCodePoint(text.codePointAt(i - 1)!));
    return this.verbatim.has(String.fromCodePoint(text.codePointAt(i)!));
  }
}

/** Python's ordering (TypeError across kinds); strings compared by code point, lowercased unless case-sensitive. */
function pyCompare(a: Value, b: Value, caseSensitive: boolean): number {
  if (isNumeric(a) && isNumeric(b)) return Math.sign(numberOf(a) - numberOf(b));
  if (isStr(a) && isStr(b)) {
    const x = caseSensitive ? textOf(a) : textOf(a).toLowerCase();
    const y = caseSensitive ? textOf(b) : textOf(b).toLowerCase();
    return x === y ? 0 : codePointLess(x, y) ? -1 : 1;
  }
  if (isList(a) && isList(b) && a.type === b.type) {
    const xs = itemsOf(a);
    const ys = itemsOf(b);
    for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
      if (!pyEquals(xs[i]!, ys[i]!)) return pyCompare(xs[i]!, ys[i]!, caseSensitive);
    }
    return Math.sign(xs.length - ys.length);
  }
  throw new Error(`'<' not supported between instances of '${pyTypeName(a)}' and '${pyTypeName(b)}'`);
}

function codePointLess(x: string, y: string): boolean {
  const xs = [...x];
  const ys = [...y];
  for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
    if (xs[i] !== ys[i]) return xs[i]!.codePointAt(0)! < ys[i]!.codePointAt(0)!;
  }
  return xs.length < ys.length;
}

/** Python's ==. */
function pyEquals(a: Value, b: Value): boolean {
  if (isNumeric(a) && isNumeric(b)) return numberOf(a) === numberOf(b);
  if (isStr(a) || isStr(b)) return isStr(a) && isStr(b) && textOf(a) === textOf(b);
  if (isNone(a) || isNone(b)) return isNone(a) && isNone(b);
  if (isUndef(a) || isUndef(b)) return isUndef(a) && isUndef(b);
  if (isList(a) && isList(b)) {
    const xs = itemsOf(a);
    const ys = itemsOf(b);
    return a.type === b.type && xs.length === ys.length && xs.every((x, i) => pyEquals(x, ys[i]!));
  }
  if (isDict(a) && isDict(b)) {
    const xs = entriesOf(a);
    if (xs.size !== entriesOf(b).size) return false;
    const keys = dictKeys(a);
    return [...xs.values()].every((value, i) => {
      const other = dictLookup(b, keys[i]!);
      return other !== undefined && pyEquals(value, other);
    });
  }
  return a === b;
}

/** Python's `needle in haystack`. */
function pyContains(needle: Value, haystack: Value): boolean {
  if (isUndef(haystack)) return false;
  if (isList(haystack)) return itemsOf(haystack).some((x) => pyEquals(needle, x));
  if (isDict(haystack)) {
    if (!isStr(needle) && !isNumeric(needle) && !isNone(needle)) throw new Error(`unhashable type: '${pyTypeName(needle)}'`);
    return dictLookup(haystack, needle) !== undefined;
  }
  if (isStr(haystack)) {
    if (!isStr(needle)) throw new Error(`'in <string>' requires string as left operand, not ${pyTypeName(needle)}`);
    return textOf(haystack).includes(textOf(needle));
  }
  throw new Error(`argument of type '${pyTypeName(haystack)}' is not iterable`);
}

/** Python's str.format with plain fields ({}, {0}, {name}, {!r}); format specs are refused. */
function pyFormat(template: string, args: Value[], kwargs: Dict, text: PyText): string {
  let auto = 0;
  let mode: "auto" | "manual" | null = null;
  return template.replace(/\{\{|\}\}|\{([^{}!:]*)(?:!([rsa]))?(?::([^{}]*))?\}/g, (whole, field: string | undefined, conversion, spec) => {
    if (whole === "{{") return "{";
    if (whole === "}}") return "}";
    if (spec) throw new Error(`format spec ${JSON.stringify(spec)} is not supported`);
    let value: Value | undefined;
    if (field === undefined || field === "") {
      if (mode === "manual") throw new Error("cannot switch from manual field specification to automatic field numbering");
      mode = "auto";
      value = args[auto++];
      if (value === undefined) throw new Error(`Replacement index ${auto - 1} out of range for positional args tuple`);
    } else if (/^\d+$/.test(field)) {
      if (mode === "auto") throw new Error("cannot switch from automatic field numbering to manual field specification");
      mode = "manual";
      value = args[Number(field)];
      if (value === undefined) throw new Error(`Replacement index ${field} out of range for positional args tuple`);
    } else {
      value = kwargs.get(field);
      if (value === undefined) throw new Error(`KeyError: '${field}'`);
    }
    return conversion === "r" || conversion === "a" ? text.repr(value) : text.str(value);
  });
}

/** Python's strftime in the C locale (the codes chat templates use, and glibc's `%-d` style flag). */
export function strftime(date: Date, format: string): string {
  const months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  const days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  const yearStart = new Date(date.getFullYear(), 0, 1);
  const dayOfYear =
    Math.round((new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime() - yearStart.getTime()) / 86_400_000) + 1;
  return format.replace(/%(-?)([a-zA-Z%])/g, (whole, flag: string, code: string) => {
    const pad = (n: number, width = 2): string => (flag === "-" ? String(n) : String(n).padStart(width, "0"));
    const hour12 = date.getHours() % 12 === 0 ? 12 : date.getHours() % 12;
    switch (code) {
      case "Y":
        return String(date.getFullYear());
      case "y":
        return pad(date.getFullYear() % 100);
      case "m":
        return pad(date.getMonth() + 1);
      case "d":
        return pad(date.getDate());
      case "e":
        return flag === "-" ? String(date.getDate()) : String(date.getDate()).padStart(2, " ");
      case "j":
        return pad(dayOfYear, 3);
      case "H":
        return pad(date.getHours());
      case "I":
        return pad(hour12);
      case "M":
        return pad(date.getMinutes());
      case "S":
        return pad(date.getSeconds());
      case "p":
        return date.getHours() < 12 ? "AM" : "PM";
      case "b":
        return months[date.getMonth()]!.slice(0, 3);
      case "B":
        return months[date.getMonth()]!;
      case "a":
        return days[date.getDay()]!.slice(0, 3);
      case "A":
        return days[date.getDay()]!;
      case "%":
        return "%";
      default:
        return whole;
    }
  });
}

/** Jinja2's `title` filter: each word (split at whitespace, -, (, {, [, <) capitalised. */
function jinjaTitle(text: string): string {
  return text
    .split(/([-\s({[<]+)/u)
    .map((part) => (part.length > 0 ? (part[0] ?? "").toUpperCase() + part.slice(1).toLowerCase() : part))
    .join("");
}

const DEFAULT_JSON = { ensureAscii: false, indent: null, separators: null, sortKeys: false } as const;

interface Arguments {
  readonly positional: Value[];
  readonly keyword: Dict;
}

const STATEMENT_TYPES = new Set([
  "Program",
  "If",
  "For",
  "Set",
  "Macro",
  "CallStatement",
  "FilterStatement",
  "Break",
  "Continue",
  "Comment",
]);
const BODY_FIELDS = ["body", "alternate", "defaultBlock"] as const;
/** Filters whose operand is only iterated after Jinja2's `if value:`. */
const SELECTING_FILTERS = new Set(["selectattr", "rejectattr", "select", "reject", "map"]);
/** Mapping methods Jinja2 finds as attributes before it looks up a key of the same name. */
const MAPPING_METHODS = new Set(["items", "keys", "values", "get"]);
const METHOD_NAMES = new Set(["strip", "lstrip", "rstrip", "format", "append", "pop", "items", "keys", "values", "get"]);

class PythonInterpreter extends Interpreter {
  constructor(
    env: Environment,
    private readonly outputs: WeakSet<object>,
    private readonly text: PyText,
  ) {
    super(env);
  }

  // (`override` once the library's typings resolve; today its base class is `any` to TypeScript.)
  evaluate(statement: Statement | undefined, environment: Environment): Value {
    if (statement === undefined) return super.evaluate(statement, environment);
    const node = statement as unknown as Node;
    if (node.type === PRECOMPUTED) return (node as Precomputed).value;
    const value = this.evaluateNode(node, environment);
    // `{{ x }}` prints Python's str(x): None, True, {'a': 1}.
    return this.outputs.has(node) && !isStr(value) ? str(this.text.str(value)) : value;
  }

  renderProgram(program: Statement): string {
    return textOf(super.run(program) as Value);
  }

  private library(node: Node, environment: Environment): Value {
    return super.evaluate(node, environment);
  }

  private evaluateNode(node: Node, env: Environment): Value {
    switch (node.type) {
      case "FilterExpression":
        return this.filterExpression(node as FilterNode, env);
      case "FilterStatement": {
        const { filter, body } = node as FilterNode & BodyNode;
        return this.filterExpression(
          { type: "FilterExpression", operand: { type: "Program", body } as BodyNode, filter } as FilterNode,
          env,
        );
      }
      case "BinaryExpression":
        return this.binary(node as BinaryNode, env);
      case "TestExpression":
        return this.test(node as TestNode, env);
      case "MemberExpression":
        return this.member(node as MemberNode, env);
      case "CallExpression":
        return this.call(node as CallNode, env);
      case "ObjectLiteral":
        return this.objectLiteral(node as ObjectLiteralNode, env);
      case "For":
        return this.forLoop(node as ForNode, env);
      default:
        return this.library(node, env);
    }
  }

  private arguments(nodes: readonly Node[], env: Environment): Arguments {
    const positional: Value[] = [];
    const keyword: Dict = new Map();
    for (const node of nodes) {
      if (node.type === "KeywordArgumentExpression") {
        const { key, value } = node as KeywordArgumentNode;
        keyword.set(key.value, this.evaluate(value, env));
      } else if (node.type === "SpreadExpression") {
        const spread = this.evaluate((node as SpreadNode).argument, env);
        if (!isList(spread)) throw new Error(`Cannot unpack non-iterable type: ${spread.type}`);
        positional.push(...itemsOf(spread));
      } else if (node.type === "KeywordSpreadExpression") {
        const spread = this.evaluate((node as SpreadNode).argument, env);
        if (!isDict(spread)) throw new Error(`Argument after ** must be a mapping, not ${pyTypeName(spread)}`);
        for (const [k, v] of entriesOf(spread)) keyword.set(k, v);
      } else positional.push(this.evaluate(node, env));
    }
    return { positional, keyword };
  }

  private filterExpression(node: FilterNode, env: Environment): Value {
    const filter = node.filter;
    const name =
      filter.type === "Identifier"
        ? (filter as IdentifierNode).value
        : (filter as CallNode).callee.type === "Identifier"
          ? ((filter as CallNode).callee as IdentifierNode).value
          : "";
    const operand = this.evaluate(node.operand, env);
    const args = (): Arguments =>
      filter.type === "CallExpression" ? this.arguments((filter as CallNode).args, env) : { positional: [], keyword: new Map() };
    const result = this.pythonFilter(name, operand, args);
    return result ?? this.library({ ...node, operand: precomputed(operand) } as FilterNode, env);
  }

  /** A filter Python Jinja2 applies differently from the library; undefined: the library's is right. */
  private pythonFilter(name: string, v: Value, args: () => Arguments): Value | undefined {
    const arg = (a: Arguments, index: number, key: string): Value | undefined => a.positional[index] ?? a.keyword.get(key);
    if (isUndef(v)) {
      switch (name) {
        case "length":
        case "count":
        case "wordcount":
        case "sum":
          return num(0);
        case "list":
        case "items":
        case "sort":
        case "unique":
        case "reverse":
          return list([]);
        case "string":
        case "trim":
        case "upper":
        case "lower":
        case "capitalize":
        case "title":
        case "replace":
        case "join":
        case "safe":
        case "escape":
        case "e":
        case "striptags":
        case "truncate":
          return str("");
        case "first":
        case "last":
        case "min":
        case "max":
          return undef();
      }
    }
    if (SELECTING_FILTERS.has(name) && !truthy(v)) return list([]);
    switch (name) {
      case "string":
        return markups.has(v) ? v : str(this.text.str(v));
      case "safe":
        return markups.has(v) ? v : markup(this.text.str(v));
      case "escape":
      case "e":
        return markups.has(v) ? v : markup(htmlEscape(this.text.str(v)));
      case "tojson":
        return str(this.tojson(v, args()));
      case "trim": {
        const chars = arg(args(), 0, "chars");
        return str(pyStrip(this.text.str(v), chars && !isNone(chars) ? this.text.str(chars) : null, true, true));
      }
      case "upper":
        return str(this.text.str(v).toUpperCase());
      case "lower":
        return str(this.text.str(v).toLowerCase());
      case "capitalize": {
        const s = this.text.str(v);
        return str(s.length > 0 ? [...s][0]!.toUpperCase() + [...s].slice(1).join("").toLowerCase() : s);
      }
      case "title":
        return str(jinjaTitle(this.text.str(v)));
      case "length":
      case "count":
        return isStr(v) ? num([...textOf(v)].length) : undefined;
      case "list":
        if (isStr(v)) return list([...textOf(v)].map(str));
        if (isDict(v)) return list(dictKeys(v));
        return isList(v) ? list([...itemsOf(v)]) : undefined;
      case "items":
        return isDict(v) ? list(this.pairs(v)) : undefined;
      case "dictsort":
        return isDict(v) && originalKeys.has(v) ? this.dictsort(v, args()) : undefined;
      case "join":
        return this.join(v, args());
      case "min":
      case "max":
        return this.minMax(name, v, args());
      case "unique":
        return this.unique(v, args());
      case "first":
      case "last": {
        const items = isStr(v) ? [...textOf(v)].map(str) : isList(v) ? itemsOf(v) : isDict(v) ? dictKeys(v) : null;
        if (items === null) return undefined;
        return (name === "first" ? items[0] : items[items.length - 1]) ?? undef();
      }
      case "default":
      case "d": {
        const a = args();
        const fallback = arg(a, 0, "default_value") ?? str("");
        const boolean = arg(a, 1, "boolean");
        return isUndef(v) || (boolean !== undefined && truthy(boolean) && !truthy(v)) ? fallback : v;
      }
      default:
        return undefined;
    }
  }

  private tojson(v: Value, a: Arguments): string {
    // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    const get = (index: number, key: string): Value | undefined => a.positional[index] ?? a.keyword.get(key);
    const ensureAscii = get(0, "ensure_ascii");
    const indent = get(1, "indent");
    const separators = get(2, "separators");
    const sortKeys = get(3, "sort_keys");
    let indentText: string | null = null;
    if (indent && !isNone(indent)) indentText = isStr(indent) ? textOf(indent) : " ".repeat(Math.max(0, numberOf(indent)));
    let separatorPair: [string, string] | null = null;
    if (separators && !isNone(separators)) {
      const [item, key] = isList(separators) ? itemsOf(separators) : [];
      if (item === undefined || key === undefined || !isStr(item) || !isStr(key) || itemsOf(separators).length !== 2) {
        throw new Error("separators must be a pair of strings");
      }
      separatorPair = [textOf(item), textOf(key)];
    }
    return this.text.json(v, {
      ensureAscii: ensureAscii !== undefined && truthy(ensureAscii),
      indent: indentText,
      separators: separatorPair,
      sortKeys: sortKeys !== undefined && truthy(sortKeys),
    });
  }

  private pairs(dict: Value): Value[] {
    const values = [...entriesOf(dict).values()];
    return dictKeys(dict).map((key, i) => list([key, values[i]!]));
  }

  private dictsort(dict: Value, a: Arguments): Value {
    const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
    const by = a.positional[1] ?? a.keyword.get("by");
    const reverse = a.positional[2] ?? a.keyword.get("reverse");
    const index = by && isStr(by) && textOf(by) === "value" ? 1 : 0;
    const sorted = this.pairs(dict).sort((x, y) =>
      pyCompare(itemsOf(x)[index]!, itemsOf(y)[index]!, caseSensitive !== undefined && truthy(caseSensitive)),
    );
    return list(reverse !== undefined && truthy(reverse) ? sorted.reverse() : sorted);
  }

  private iterate(v: Value): Value[] | null {
    if (isStr(v)) return [...textOf(v)].map(str);
    if (isList(v)) return itemsOf(v);
    if (isDict(v)) return dictKeys(v);
    if (isUndef(v)) return [];
    return null;
  }

  private attribute(item: Value, path: string): Value {
    let value = item;
    for (const part of path.split(".")) {
      const next =
        isDict(value) || value.type === "NamespaceValue"
          ? entriesOf(value).get(part)
          : isList(value) && /^\d+$/.test(part)
            ? itemsOf(value)[Number(part)]
            : undefined;
      if (next === undefined) return undef();
      value = next;
    }
    return value;
  }

  private join(v: Value, a: Arguments): Value | undefined {
    const items = this.iterate(v);
    if (items === null) return undefined;
    const separator = a.positional[0] ?? a.keyword.get("d");
    const attribute = a.positional[1] ?? a.keyword.get("attribute");
    const picked = attribute && !isNone(attribute) ? items.map((x) => this.attribute(x, this.text.str(attribute))) : items;
    return str(picked.map((x) => this.text.str(x)).join(separator ? this.text.str(separator) : ""));
  }

  private minMax(name: string, v: Value, a: Arguments): Value | undefined {
    const items = this.iterate(v);
    if (items === null) return undefined;
    const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
    const attribute = a.positional[1] ?? a.keyword.get("attribute");
    const key = (x: Value): Value => (attribute && !isNone(attribute) ? this.attribute(x, this.text.str(attribute)) : x);
    const sensitive = caseSensitive !== undefined && truthy(caseSensitive);
    let best: Value | undefined;
    for (const item of items) {
      if (best === undefined) best = item;
      else {
        const order = pyCompare(key(item), key(best), sensitive);
        if (name === "min" ? order < 0 : order > 0) best = item;
      }
    }
    return best ?? undef();
  }

  private unique(v: Value, a: Arguments): Value | undefined {
    const items = this.iterate(v);
    if (items === null) return undefined;
    const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
    const attribute = a.positional[1] ?? a.keyword.get("attribute");
    const sensitive = caseSensitive !== undefined && truthy(caseSensitive);
    const seen: Value[] = [];
    const out: Value[] = [];
    for (const item of items) {
      let key = attribute && !isNone(attribute) ? this.attribute(item, this.text.str(attribute)) : item;
      if (!sensitive && isStr(key)) key = str(textOf(key).toLowerCase());
      if (!seen.some((s) => pyEquals(s, key))) {
        seen.push(key);
        out.push(item);
      }
    }
    return list(out);
  }

  private binary(node: BinaryNode, env: Environment): Value {
    const op = node.operator.value;
    if (op === "and" || op === "or") return this.library(node, env);
    const left = this.evaluate(node.left, env);
    const right = this.evaluate(node.right, env);
    switch (op) {
      case "==":
        return bool(pyEquals(left, right));
      case "!=":
        return bool(!pyEquals(left, right));
      case "~":
        return str(this.text.str(left) + this.text.str(right));
      case "in":
        return bool(pyContains(left, right));
      case "not in":
        return bool(!pyContains(left, right));
      case "+":
        if (isStr(left) && isStr(right)) {
          // Markup + str escapes the str (and str + Markup the other way round), as markupsafe does.
          if (markups.has(left)) return markup(textOf(left) + (markups.has(right) ? textOf(right) : htmlEscape(textOf(right))));
          if (markups.has(right)) return markup(htmlEscape(textOf(left)) + textOf(right));
        }
        // Python refuses str + mapping/list; templates written for string tool-call arguments do it
        // with the arguments object: join its JSON, as if the caller had passed json.dumps(arguments).
        if (isStr(left) && (isDict(right) || isList(right))) return str(textOf(left) + this.text.json(right, DEFAULT_JSON));
        if (isStr(right) && (isDict(left) || isList(left))) return str(this.text.json(left, DEFAULT_JSON) + textOf(right));
        break;
      case "*": {
        const [seq, times] = isNumeric(right) ? [left, right] : [right, left];
        if (isNumeric(times) && times.type !== "FloatValue" && (isStr(seq) || isList(seq))) {
          const n = Math.max(0, numberOf(times));
          if (n * (isStr(seq) ? textOf(seq).length : itemsOf(seq).length) > MAX_GENERATED_ITEMS) {
            throw new Error(`a repetition of more than ${MAX_GENERATED_ITEMS} items`);
          }
          return isStr(seq) ? str(textOf(seq).repeat(n)) : list(Array.from({ length: n }, () => itemsOf(seq)).flat());
        }
        break;
      }
      case "<":
      case ">":
      case "<=":
      case ">=":
        if ((isNumeric(left) && isNumeric(right)) || (isStr(left) && isStr(right)) || (isList(left) && isList(right))) {
          const order = pyCompare(left, right, true);
          return bool(op === "<" ? order < 0 : op === ">" ? order > 0 : op === "<=" ? order <= 0 : order >= 0);
        }
        break;
    }
    return this.library({ ...node, left: precomputed(left), right: precomputed(right) } as BinaryNode, env);
  }

  private test(node: TestNode, env: Environment): Value {
    const name = node.test.value;
    const v = (): Value => this.evaluate(node.operand, env);
    let result: boolean;
    switch (name) {
      case "number":
        result = isNumeric(v());
        break;
      case "integer":
        result = v().type === "IntegerValue";
        break;
      case "float":
        result = v().type === "FloatValue";
        break;
      case "iterable": {
        const x = v();
        result = isStr(x) || isList(x) || isDict(x) || isUndef(x);
        break;
      }
      case "sequence": {
        const x = v();
        result = isStr(x) || isList(x) || isDict(x) || isUndef(x);
        break;
      }
      case "mapping":
        result = isDict(v());
        break;
      case "lower":
      case "upper": {
        const s = this.text.str(v());
        const cased = [...s].filter((c) => c.toLowerCase() !== c.toUpperCase());
        result = cased.length > 0 && cased.every((c) => (name === "lower" ? c === c.toLowerCase() : c === c.toUpperCase()));
        break;
      }
      case "escaped":
        result = markups.has(v());
        break;
      default:
        return this.library(node, env);
    }
    return bool(node.negate ? !result : result);
  }

  private member(node: MemberNode, env: Environment): Value {
    if (node.property.type === "SliceExpression") return this.library(node, env);
    const object = this.evaluate(node.object, env);
    if (isDict(object)) {
      if (node.computed) {
        const key = this.evaluate(node.property, env);
        return (
          dictLookup(object, key) ??
          (isStr(key) ? this.library({ ...node, object: precomputed(object), property: precomputed(key) } as MemberNode, env) : undef())
        );
      }
      const name = (node.property as IdentifierNode).value;
      if (MAPPING_METHODS.has(name)) return this.mappingMethod(object, name);
    }
    return this.library({ ...node, object: precomputed(object) } as MemberNode, env);
  }

  private mappingMethod(dict: Value, name: string): Value {
    switch (name) {
      case "items":
        return fn(() => list(this.pairs(dict)));
      case "keys":
        return fn(() => list(dictKeys(dict)));
      case "values":
        return fn(() => list([...entriesOf(dict).values()]));
      default:
        return fn((args) => {
          const positional = args.filter((a) => a.type !== "KeywordArgumentsValue");
          const key = positional[0];
          if (key === undefined) throw new Error("get expected at least 1 argument, got 0");
          return dictLookup(dict, key) ?? positional[1] ?? none();
        });
    }
  }

  private call(node: CallNode, env: Environment): Value {
    const callee = node.callee as MemberNode;
    if (callee.type !== "MemberExpression" || callee.computed || callee.property.type !== "Identifier") return this.library(node, env);
    const name = (callee.property as IdentifierNode).value;
    if (!METHOD_NAMES.has(name)) return this.library(node, env);
    const target = this.evaluate(callee.object, env);
    const method = this.method(target, name);
    if (method) return method(this.arguments(node.args, env));
    return this.library({ ...node, callee: { ...callee, object: precomputed(target) } } as CallNode, env);
  }

  /** Python methods of strings and lists the library lacks or gets wrong; undefined: the library's. */
  private method(target: Value, name: string): ((a: Arguments) => Value) | undefined {
    if (isStr(target)) {
      const s = textOf(target);
      switch (name) {
        case "strip":
        case "lstrip":
        case "rstrip":
          return (a) => {
            const chars = a.positional[0] ?? a.keyword.get("chars");
            return str(pyStrip(s, chars && !isNone(chars) ? this.text.str(chars) : null, name !== "rstrip", name !== "lstrip"));
          };
        case "format":
          return (a) => str(pyFormat(s, a.positional, a.keyword, this.text));
      }
    } else if (target.type === "ArrayValue") {
      const items = itemsOf(target);
      switch (name) {
        case "append":
          return (a) => {
            if (a.positional.length !== 1) throw new Error(`list.append() takes exactly one argument (${a.positional.length} given)`);
            items.push(a.positional[0]!);
            return none();
          };
        case "pop":
          return (a) => {
            if (items.length === 0) throw new Error("pop from empty list");
            const at = a.positional[0] ? numberOf(a.positional[0]) : -1;
            const index = at < 0 ? items.length + at : at;
            if (index < 0 || index >= items.length) throw new Error("pop index out of range");
            return items.splice(index, 1)[0]!;
          };
      }
    } else if (isDict(target) && MAPPING_METHODS.has(name)) {
      const method = this.mappingMethod(target, name);
      return (a) => (method.value as NativeFunction)([...a.positional], probe);
    }
    return undefined;
  }

  private objectLiteral(node: ObjectLiteralNode, env: Environment): Value {
    const entries: Dict = new Map();
    let originals: Map<string, Value> | undefined;
    for (const [keyNode, valueNode] of node.value) {
      const key = this.evaluate(keyNode, env);
      const value = this.evaluate(valueNode, env);
      if (isStr(key)) {
        originals?.delete(textOf(key));
        entries.set(textOf(key), value);
      } else {
        const k = keyString(key);
        if (!originals?.has(k)) (originals ??= new Map()).set(k, key);
        entries.set(k, value);
      }
    }
    const dict = new ObjectValue(entries);
    if (originals) originalKeys.set(dict, originals);
    return dict;
  }

  private forLoop(node: ForNode, env: Environment): Value {
    const select = node.iterable.type === "SelectExpression" ? (node.iterable as SelectNode) : null;
    const source = this.evaluate(select ? select.lhs : node.iterable, env);
    // Python iterates undefined (nothing), strings (characters), mappings (their keys, integers too),
    // and unpacks tuples; the library only lists and mappings, and unpacks lists only.
    let items: Value = source;
    if (isUndef(source) || isStr(source) || (isDict(source) && originalKeys.has(source))) items = list(this.iterate(source)!);
    else if (isList(source) && node.loopvar.type === "TupleLiteral" && itemsOf(source).some((x) => x.type === "TupleValue")) {
      items = list(itemsOf(source).map((x) => (x.type === "TupleValue" ? list(itemsOf(x)) : x)));
    }
    const iterable = precomputed(items);
    return this.library({ ...node, iterable: select ? { ...select, lhs: iterable } : iterable } as ForNode, env);
  }
}

function precomputed(value: Value): Precomputed {
  return { type: PRECOMPUTED, value };
}

/** Every expression that stands as output in a body (`{{ x }}`, template text): printed with str(). */
function outputNodes(program: Node): WeakSet<object> {
  const outputs = new WeakSet<object>();
  const visit = (statements: readonly Node[]): void => {
    for (const s of statements) {
      if (!STATEMENT_TYPES.has(s.type)) {
        outputs.add(s);
        continue;
      }
      for (const field of BODY_FIELDS) {
        const body = (s as unknown as Record<string, unknown>)[field];
        if (Array.isArray(body)) visit(body as Node[]);
      }
    }
  };
  visit((program as BodyNode).body);
  return outputs;
}

/** Names a template reads and never assigns (variables it expects in its context). */
function freeNames(program: Node): Set<string> {
  const read = new Set<string>();
  const assigned = new Set<string>();
  const bind = (target: unknown): void => {
    const t = target as Node | undefined;
    if (t?.type === "Identifier") assigned.add((t as IdentifierNode).value);
    else if (t?.type === "TupleLiteral") for (const x of (t as unknown as { value: Node[] }).value) bind(x);
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const x of value) visit(x);
      return;
    }
    if (value instanceof Map) {
      for (const [k, v] of value) {
        visit(k);
        visit(v);
      }
      return;
    }
    if (value === null || typeof value !== "object" || typeof (value as Node).type !== "string") return;
    const node = value as Node & Record<string, unknown>;
    switch (node.type) {
      case "Identifier":
        read.add((node as unknown as IdentifierNode).value);
        return;
      case "MemberExpression":
        visit(node.object);
        if (node.computed) visit(node.property);
        return;
      case "FilterExpression":
      case "FilterStatement":
        visit(node.type === "FilterExpression" ? node.operand : node.body);
        if ((node.filter as Node).type === "CallExpression") visit((node.filter as CallNode).args);
        return;
      case "BinaryExpression":
      case "UnaryExpression":
        visit(node.left);
        visit(node.right);
        visit(node.argument);
        return;
      case "TestExpression":
        visit(node.operand);
        return;
      case "KeywordArgumentExpression":
        visit(node.value);
        return;
      case "Set":
        bind(node.assignee);
        break;
      case "For":
        bind(node.loopvar);
        break;
      case "Macro":
        bind(node.name);
        for (const a of node.args as Node[]) bind(a.type === "KeywordArgumentExpression" ? (a as KeywordArgumentNode).key : a);
        break;
    }
    for (const [key, field] of Object.entries(node)) if (key !== "type") visit(field);
  };
  visit(program);
  for (const name of assigned) read.delete(name);
  return read;
}

export interface JinjaRenderOptions {
  /** Characters never escaped by repr or tojson(ensure_ascii=True) (the user-string sentinels). */
  readonly verbatim?: readonly string[];
  /** The clock `strftime_now` reads (tests pin it). */
  readonly now?: () => Date;
}

/** A Jinja template rendered with Python Jinja2's semantics (see the header). */
export class JinjaTemplate {
  private readonly program: Statement;
  private readonly outputs: WeakSet<object>;
  /** Variables the template reads and never sets (what it expects from its caller). */
  readonly freeNames: ReadonlySet<string>;

  constructor(source: string) {
    this.program = new Template(source).parsed;
    const root = this.program as unknown as Node;
    this.outputs = outputNodes(root);
    this.freeNames = freeNames(root);
  }

  render(context: Record<string, unknown>, options: JinjaRenderOptions = {}): string {
    const now = options.now ?? (() => new Date());
    const globals: Record<string, unknown> = {
      true: true,
      false: false,
      none: null,
      True: true,
      False: false,
      None: null,
      range: pyRange,
      raise_exception: (message: unknown) => {
        throw new Error(String(message));
      },
      strftime_now: (format: unknown) => strftime(now(), String(format)),
    };
    const env = new Environment();
    for (const [name, value] of Object.entries({ ...globals, ...context })) env.set(name, value);
    const interpreter = new PythonInterpreter(env, this.outputs, new PyText(new Set(options.verbatim ?? [])));
    return interpreter.renderProgram(this.program);
  }
}

/**
 * Most characters or items a `*` repetition or a `range()` may make: a template computing them from
 * a user's input (a length, a count) must not hold the thread or the heap.
 */
const MAX_GENERATED_ITEMS = 1_000_000;

function pyRange(...args: unknown[]): number[] {
  const [a, b, c] = args.map(Number) as [number, number | undefined, number | undefined];
  const [start, stop, step] = b === undefined ? [0, a, 1] : [a, b, c ?? 1];
  if (step === 0) throw new Error("range() arg 3 must not be zero");
  if (!(Math.abs((stop - start) / step) <= MAX_GENERATED_ITEMS)) throw new Error(`a range() of more than ${MAX_GENERATED_ITEMS} items`);
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}
