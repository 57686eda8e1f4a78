// Python's texts of Jinja values (jinja-compat.ts): str(), repr() and json.dumps() (PyText),
// str.strip and str.format, strftime, Jinja2's title, HTML escaping.

import {
  dictKeys,
  entriesOf,
  isNone,
  isStr,
  itemsOf,
  numberOf,
  pyCompare,
  pyFloatOrInt,
  pyTypeName,
  textOf,
  type Dict,
  type Value,
} from "./jinja-compat-values.js";

const NON_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
/** Python's str.strip() whitespace (str.isspace), which differs from JavaScript's trim(). */
const PY_WHITESPACE = new Set([..."\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"]);
for (let c = 0x2000; c <= 0x200a; c++) PY_WHITESPACE.add(String.fromCharCode(c));

export function pyStrip(text: string, chars: string | null, left: boolean, right: boolean): string {
  const strip = chars === null ? PY_WHITESPACE : new Set(chars);
  const points = [...text];
  let start = 0;
  let end = points.length;
  if (left) while (start < end && strip.has(points[start]!)) start++;
  if (right) while (end > start && strip.has(points[end - 1]!)) end--;
  return points.slice(start, end).join("");
}

export function htmlEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/'/g, "&#39;").replace(/"/g, "&#34;");
}

/** Python's str(), repr() and json.dumps() of runtime values. */
export class PyText {
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

/** Python's str.format with plain fields ({}, {0}, {name}, {!r}); format specs are refused. */
export function pyFormat(template: string, args: Value[], kwargs: Dict, text: PyText): string {
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
export function jinjaTitle(text: string): string {
  return text
    .split(/([-\s({[<]+)/u)
    .map((part) => (part.length > 0 ? (part[0] ?? "").toUpperCase() + part.slice(1).toLowerCase() : part))
    .join("");
}

export const DEFAULT_JSON = { ensureAscii: false, indent: null, separators: null, sortKeys: false } as const;
