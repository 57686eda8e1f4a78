/**
 * Python literals of JSON values, for the tool-call formats whose templates write an object or an
 * array argument as Python's str writes it (Seed-OSS, MiniCPM5, LFM2's lists): `{'k': True,
 * 'n': None, 's': 'it\'s', 'l': [1, 2.5]}`. The language is the JSON Schema's own JSON texts
 * rewritten byte by byte (a rational transduction, so the values allowed are exactly the
 * schema's): each string in single or double quotes (the other quote raw, its own escaped, the
 * escapes JSON and Python share kept, `\/` written `/`, a code point below 256 escaped as `\u00XY`
 * or as repr writes it, `\xXY`, which it also writes for DEL, C1 controls, U+00A0 and U+00AD where
 * JSON writes them raw; unprintable characters above U+00FF stay raw, which Python reads as the
 * same string), `true`/`false`/`null` as
 * `True`/`False`/`None`, numbers, brackets, separators and whitespace as they are. The reader turns
 * such a literal (or JSON) back into JSON text.
 */
import { LanguageGraph, compileRegexNode, regexClock, type ByteDfa, type RegexLimits, type RegexNode } from "../../regex/index.js";
import { spellingNode } from "../marker-node.js";

/** The transducer's states: outside strings, inside `null`, and per quote the string's states. */
const OUT = 0;
const NULL_U = 1;
const NULL_L1 = 2;
const NULL_L2 = 3;
/**
 * Per quote (0: ', 1: "): the string, after a backslash, the four hex digits of \u (written
 * `\uXXXX`), the route that writes JSON's `\u00XY` as repr does, `\xXY` (its two zeros read, not
 * written, then its two hex digits), and a raw 0xC2 lead byte whose character repr escapes.
 */
const inString = (q: number): number => 4 + q * 11;
const STATES = 26;
/** The characters of U+0080–U+00FF that repr escapes as `\xXY` (not printable: C1 controls, no-break space, soft hyphen). */
const unprintableLatin1 = (code: number): boolean => code <= 0xa0 || code === 0xad;
const QUOTES = [0x27, 0x22];

/** A step's output: the byte read itself, or these bytes. */
type Output = "copy" | Uint8Array;
const bytes = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));

/** Per state and byte read, where the transducer goes and what it writes (none: the byte never comes there). */
const STEPS: readonly (readonly (readonly [number, Output])[])[] = (() => {
  const steps: (readonly [number, Output])[][] = [];
  for (let s = 0; s < STATES; s++) {
    for (let b = 0; b < 256; b++) {
      const out: (readonly [number, Output])[] = [];
      const c = String.fromCharCode(b);
      if (s === OUT) {
        if (c === '"') for (let q = 0; q < 2; q++) out.push([inString(q), Uint8Array.of(QUOTES[q]!)]);
        else if (c === "t") out.push([OUT, bytes("T")]);
        else if (c === "f") out.push([OUT, bytes("F")]);
        else if (c === "n") out.push([NULL_U, bytes("N")]);
        else out.push([OUT, "copy"]);
      } else if (s === NULL_U) {
        if (c === "u") out.push([NULL_L1, bytes("o")]);
      } else if (s === NULL_L1) {
        if (c === "l") out.push([NULL_L2, bytes("n")]);
      } else if (s === NULL_L2) {
        if (c === "l") out.push([OUT, bytes("e")]);
      } else {
        const q = s >= inString(1) ? 1 : 0;
        const at = s - inString(q);
        const quote = QUOTES[q]!;
        if (at === 0) {
          if (c === '"') out.push([OUT, Uint8Array.of(quote)]);
          else if (c === "\\") out.push([s + 1, new Uint8Array(0)]);
          else if (b === quote) out.push([s, Uint8Array.of(0x5c, quote)]);
          else out.push([s, "copy"]);
          // Raw characters repr escapes: DEL, and (after their 0xC2 lead) C1 controls, U+00A0, U+00AD.
          if (b === 0x7f) out.push([s, bytes("\\x7f")]);
          if (b === 0xc2) out.push([s + 10, new Uint8Array(0)]);
        } else if (at === 1) {
          // After a backslash: JSON's escapes as Python reads them (\b and \f also as repr writes them).
          if (c === '"') out.push([s - 1, q === 0 ? bytes('"') : bytes('\\"')]);
          else if (c === "\\") out.push([s - 1, bytes("\\\\")]);
          else if (c === "/") out.push([s - 1, bytes("/")]);
          else if ("bfnrt".includes(c)) out.push([s - 1, bytes(`\\${c}`)]);
          else if (c === "u") out.push([s + 1, bytes("\\u")], [s + 5, new Uint8Array(0)]);
          if (c === "b") out.push([s - 1, bytes("\\x08")]);
          if (c === "f") out.push([s - 1, bytes("\\x0c")]);
        } else if (at <= 5) {
          if (/[0-9a-fA-F]/.test(c)) out.push([at === 5 ? inString(q) : s + 1, "copy"]);
        } else if (at === 6) {
          if (c === "0") out.push([s + 1, new Uint8Array(0)]);
        } else if (at === 7) {
          if (c === "0") out.push([s + 1, bytes("\\x")]);
        } else if (at <= 9) {
          if (/[0-9a-fA-F]/.test(c)) out.push([at === 9 ? inString(q) : s + 1, "copy"]);
        } else if (b >= 0x80 && unprintableLatin1(b)) out.push([inString(q), bytes(`\\x${b.toString(16)}`)]);
      }
      steps.push(out);
    }
  }
  return steps;
})();

/** A one-byte language of the bytes in `set`. */
function byteSetNode(set: readonly number[]): RegexNode {
  const byteClass = new Uint8Array(256);
  for (const b of set) byteClass[b] = 1;
  const next = Int32Array.of(-1, 1, -1, -1);
  const dfa: ByteDfa = {
    numStates: 2,
    start: 0,
    numClasses: 2,
    byteClass,
    next,
    accepting: Uint8Array.of(0, 1),
    minBytesToAccept: Int32Array.of(1, 0),
  };
  return { kind: "dfa", dfa };
}

/** The Python literals of the values whose JSON texts `json` holds (see the module comment). */
export function pythonLiteralLanguage(json: ByteDfa, limits: RegexLimits): ByteDfa {
  // The product's construction is counted work too (a byte per unit), under the compile's limits.
  const frame = regexClock.start(limits.maxWork ?? Number.POSITIVE_INFINITY, limits.timeoutMs);
  try {
    return compileRegexNode(productGraph(json), limits);
  } finally {
    regexClock.stop(frame);
  }
}

/** The product of `json` and the transducer, as a graph whose edges read what the transducer writes. */
function productGraph(json: ByteDfa): RegexNode {
  const clock = regexClock;
  const graph = new LanguageGraph();
  const stateOf = new Map<number, number>();
  const queue: number[] = [];
  const visit = (d: number, t: number): number => {
    const key = d * STATES + t;
    let s = stateOf.get(key);
    if (s === undefined) {
      stateOf.set(key, (s = graph.state()));
      queue.push(key);
      if (t === OUT && json.accepting[d] === 1) graph.accept(s);
    }
    return s;
  };
  const start = visit(json.start, OUT);
  for (let i = 0; i < queue.length; i++) {
    const key = queue[i]!;
    const d = Math.floor(key / STATES);
    const t = key % STATES;
    const from = stateOf.get(key)!;
    const copies = new Map<number, number[]>();
    const written = new Set<string>();
    clock.tick(256);
    for (let b = 0; b < 256; b++) {
      const next = json.next[d * json.numClasses + json.byteClass[b]!]!;
      if (next < 0) continue;
      for (const [t2, out] of STEPS[t * 256 + b]!) {
        const to = visit(next, t2);
        if (out === "copy") {
          let set = copies.get(to);
          if (set === undefined) copies.set(to, (set = []));
          set.push(b);
        } else {
          const edge = `${to}:${out.join(",")}`;
          if (written.has(edge)) continue;
          written.add(edge);
          graph.edge(from, to, out.length === 0 ? null : spellingNode(out));
        }
      }
    }
    for (const [to, set] of copies) graph.edge(from, to, byteSetNode(set));
  }
  return graph.node(start);
}

/** Python's str escapes a string may hold (those the language writes, and repr's \x, \u, \U). */
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  r: "\r",
  t: "\t",
  b: "\b",
  f: "\f",
  v: "\v",
  a: "\x07",
  "0": "\0",
  "\\": "\\",
  "'": "'",
  '"': '"',
};

/**
 * One Python literal (or JSON value) from `at`: its JSON text and where it ends. Dicts, lists,
 * strings in either quote, True/False/None (and JSON's spellings), numbers; throws on anything else.
 */
export function readPythonLiteral(text: string, at: number): { json: string; end: number } {
  const fail = (what: string): never => {
    throw new Error(`reading a Python literal: ${what} at ${at}`);
  };
  const space = (): void => {
    while (at < text.length && " \t\n\r".includes(text[at]!)) at++;
  };
  const value = (): string => {
    space();
    const c = text[at];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      at++;
      const items: string[] = [];
      space();
      while (text[at] !== close) {
        if (items.length > 0) {
          if (text[at] !== ",") fail('expected ","');
          at++;
          space();
        }
        if (c === "{") {
          const key = value();
          space();
          if (text[at] !== ":") fail('expected ":"');
          at++;
          items.push(`${key}:${value()}`);
        } else items.push(value());
        space();
        if (at >= text.length) fail(`expected "${close}"`);
      }
      at++;
      return c === "{" ? `{${items.join(",")}}` : `[${items.join(",")}]`;
    }
    if (c === "'" || c === '"') return JSON.stringify(pythonString(c));
    for (const [word, json] of [
      ["True", "true"],
      ["False", "false"],
      ["None", "null"],
      ["true", "true"],
      ["false", "false"],
      ["null", "null"],
    ] as const) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return json;
      }
    }
    const number = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(at, at + 400));
    if (number === null) fail("expected a value");
    at += number![0].length;
    return number![0];
  };
  const pythonString = (quote: string): string => {
    let out = "";
    for (at++; at < text.length && text[at] !== quote; at++) {
      const c = text[at]!;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = text[++at];
      if (e === undefined) break;
      if (Object.hasOwn(SIMPLE_ESCAPES, e)) out += SIMPLE_ESCAPES[e];
      else if (e === "x" || e === "u" || e === "U") {
        const n = e === "x" ? 2 : e === "u" ? 4 : 8;
        const hex = text.slice(at + 1, at + 1 + n);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) fail("a malformed escape");
        out += String.fromCodePoint(Number.parseInt(hex, 16));
        at += n;
      } else out += `\\${e}`; // Python keeps an unknown escape as it is
    }
    if (text[at] !== quote) fail("an unclosed string");
    at++;
    return out;
  };
  const json = value();
  return { json, end: at };
}

/** A whole value's text as JSON text: JSON as it is, else read as a Python literal. */
export function jsonOfLiteral(text: string): string {
  try {
    JSON.parse(text);
    return text;
  } catch {
    const { json, end } = readPythonLiteral(text, 0);
    if (text.slice(end).trim().length > 0) throw new Error(`reading a Python literal: unexpected text at ${end}`);
    return json;
  }
}
