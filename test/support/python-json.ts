// JSON text as Python's json.dumps(data) writes it (separators ", " and ": ", ensure_ascii=False),
// from JSON text as a file holds it: MaskBench and the JSON Schema Test Suite judge an engine on
// exactly that serialisation. JSON.parse would lose what Python keeps: whether a number was an
// int or a float ("1.0" stays "1.0", 1e400 becomes "Infinity"), and big ints exactly.

/** A number as its source text, so that int/float and digits survive parsing. */
export class JsonNumber {
  constructor(readonly text: string) {}

  get isInteger(): boolean {
    return !/[.eE]/.test(this.text);
  }
}

export type PyJson = null | boolean | string | JsonNumber | PyJson[] | { [key: string]: PyJson };

/**
 * The keys of a parsed object in the order the text gave them: a JS object lists integer-like
 * keys ("1", "123") first whatever their place, a Python dict keeps insertion order.
 */
export const KEY_ORDER: unique symbol = Symbol("keyOrder");

/** The object's keys as Python would list them. */
export function orderedKeys(value: object): string[] {
  return (value as { [KEY_ORDER]?: string[] })[KEY_ORDER] ?? Object.keys(value);
}

/** Parses JSON text keeping number texts (JsonNumber) and key order; later duplicate keys win. */
export function parseKeepingNumbers(text: string): PyJson {
  let pos = 0;
  const ws = (): void => {
    while (pos < text.length && " \t\n\r".includes(text[pos]!)) pos++;
  };
  const value = (): PyJson => {
    ws();
    const c = text[pos];
    if (c === "{") {
      pos++;
      const out: { [key: string]: PyJson } = {};
      const order: string[] = [];
      Object.defineProperty(out, KEY_ORDER, { value: order, enumerable: false });
      ws();
      if (text[pos] === "}") {
        pos++;
        return out;
      }
      for (;;) {
        ws();
        const key = string();
        ws();
        if (text[pos++] !== ":") throw new SyntaxError(`expected ':' at ${pos - 1}`);
        const v = value();
        // Python keeps the last value but the first key's position.
        if (!Object.hasOwn(out, key)) order.push(key);
        Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        const sep = text[pos++];
        if (sep === "}") return out;
        if (sep !== ",") throw new SyntaxError(`expected ',' or '}' at ${pos - 1}`);
      }
    }
    if (c === "[") {
      pos++;
      const out: PyJson[] = [];
      ws();
      if (text[pos] === "]") {
        pos++;
        return out;
      }
      for (;;) {
        out.push(value());
        ws();
        const sep = text[pos++];
        if (sep === "]") return out;
        if (sep !== ",") throw new SyntaxError(`expected ',' or ']' at ${pos - 1}`);
      }
    }
    if (c === '"') return string();
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(pos, pos + 400));
    if (m) {
      pos += m[0].length;
      return new JsonNumber(m[0]);
    }
    for (const [word, v] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return v;
      }
    }
    throw new SyntaxError(`unexpected ${JSON.stringify(c)} at ${pos}`);
  };
  const string = (): string => {
    const start = pos;
    if (text[pos] !== '"') throw new SyntaxError(`expected a string at ${pos}`);
    pos++;
    while (pos < text.length && text[pos] !== '"') pos += text[pos] === "\\" ? 2 : 1;
    pos++;
    return JSON.parse(text.slice(start, pos)) as string;
  };
  const result = value();
  ws();
  if (pos !== text.length) throw new SyntaxError(`trailing text at ${pos}`);
  return result;
}

/** Python's repr of a float (the shortest round-trip digits, in Python's layout). */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = x.toExponential().split("e") as [string, string];
  const exp = Number(expText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let out: string;
  if (exp >= 16 || exp < -4) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    out = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  } else if (exp >= digits.length - 1) {
    out = `${digits}${"0".repeat(exp - digits.length + 1)}.0`;
  } else if (exp >= 0) {
    out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    out = `0.${"0".repeat(-exp - 1)}${digits}`;
  }
  return negative ? `-${out}` : out;
}

/** A string as json.dumps(ensure_ascii=False) writes it. */
export function pythonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (cp < 0x20) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** json.dumps(data) of the value parseKeepingNumbers read (or of plain JSON values). */
export function pythonDumps(value: PyJson | unknown): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (value instanceof JsonNumber) return value.isInteger ? BigInt(value.text).toString() : pythonFloatRepr(Number(value.text));
  if (typeof value === "number") return Number.isInteger(value) && Math.abs(value) < 2 ** 53 ? String(value) : pythonFloatRepr(value);
  if (typeof value === "string") return pythonString(value);
  if (Array.isArray(value)) return `[${value.map(pythonDumps).join(", ")}]`;
  const object = value as Record<string, unknown>;
  return `{${orderedKeys(object)
    .map((k) => `${pythonString(k)}: ${pythonDumps(object[k])}`)
    .join(", ")}}`;
}
