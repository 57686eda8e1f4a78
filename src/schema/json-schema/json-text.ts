// The JSON text the constraint lets a model write: the pieces of syntax as RegexNode languages
// (whitespace in one of three styles, strings with their escapes, numbers, literals, and "any
// value" to a bounded nesting), which compile.ts puts together per schema.
//
// Strings. A schema constrains the *decoded* string (`pattern`, `minLength`, `format`, `enum`),
// the model writes its JSON encoding. A character may be written raw (anything but `"`, `\` and
// the C0 controls), with its short escape (`\" \\ \/ \b \f \n \r \t`), or, for a C0 control, as
// `\u00XX` (either case of hex). Decoding is a function, so encoding a language commutes with
// union, intersection and difference: compile.ts intersects and subtracts encoded languages.
// Other `\uXXXX` spellings of ordinary characters are valid JSON that we never write.

import { compileRegexNode, regexClock, trimDfa, type ByteDfa, type CodeSet, type RegexLimits, type RegexNode } from "../../regex/index.js";
import { RULE_CALL_LEAD } from "../../support/index.js";

export type WhitespaceStyle = "default" | "compact" | "indented";

export const EMPTY: RegexNode = { kind: "set", set: [] };
export const NOTHING: RegexNode = { kind: "concat", items: [] };

export function range(lo: number, hi: number = lo): RegexNode {
  return { kind: "set", set: [lo, hi] };
}

export function concat(...items: RegexNode[]): RegexNode {
  return items.length === 1 ? items[0]! : { kind: "concat", items };
}

export function alt(items: RegexNode[]): RegexNode {
  if (items.length === 0) return EMPTY;
  return items.length === 1 ? items[0]! : { kind: "alt", items };
}

export function optional(item: RegexNode): RegexNode {
  return { kind: "repeat", item, min: 0, max: 1 };
}

export function repeat(item: RegexNode, min: number, max: number): RegexNode {
  return { kind: "repeat", item, min, max };
}

export function dfaNode(dfa: ByteDfa): RegexNode {
  return { kind: "dfa", dfa };
}

/** The literal text (code points, as RegexNode sets are). */
export function literal(text: string): RegexNode {
  const items: RegexNode[] = [];
  for (const ch of text) items.push(range(ch.codePointAt(0)!));
  return concat(...items);
}

/** Whitespace and punctuation of one style at a nesting depth (0: the top-level value). */
export class JsonSyntax {
  constructor(readonly style: WhitespaceStyle) {}

  private indent(depth: number): RegexNode {
    return literal(`\n${"  ".repeat(depth)}`);
  }

  /** After `{` or `[` of a container at `depth`, before its first member. */
  open(depth: number): RegexNode {
    return this.style === "indented" ? this.indent(depth + 1) : NOTHING;
  }

  /** Between two members of a container at `depth`. */
  separator(depth: number): RegexNode {
    if (this.style === "indented") return concat(range(0x2c), this.indent(depth + 1));
    return this.style === "compact" ? range(0x2c) : concat(range(0x2c), optional(range(0x20)));
  }

  /** After the last member of a container at `depth`, before `}` or `]`. */
  close(depth: number): RegexNode {
    return this.style === "indented" ? this.indent(depth) : NOTHING;
  }

  /** Between a key and its value. */
  get colon(): RegexNode {
    if (this.style === "indented") return literal(": ");
    return this.style === "compact" ? range(0x3a) : concat(range(0x3a), optional(range(0x20)));
  }
}

const HEX_LOWER = "0123456789abcdef";

/** One hex digit of value `v`, in either case. */
function hexDigit(v: number): RegexNode {
  const lower = HEX_LOWER.charCodeAt(v);
  return v < 10 ? range(lower) : { kind: "set", set: [lower - 0x20, lower - 0x20, lower, lower] };
}

const SHORT_ESCAPES: ReadonlyMap<number, string> = new Map([
  [0x22, '"'],
  [0x5c, "\\"],
  [0x2f, "/"],
  [0x08, "b"],
  [0x0c, "f"],
  [0x0a, "n"],
  [0x0d, "r"],
  [0x09, "t"],
]);

/** The characters written raw: all but `"`, `\` and the C0 controls (surrogates never occur). */
const RAW_SET: CodeSet = [0x20, 0x21, 0x23, 0x5b, 0x5d, 0x10ffff];

function intersectSets(a: CodeSet, b: CodeSet): CodeSet {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i]!, b[j]!);
    const hi = Math.min(a[i + 1]!, b[j + 1]!);
    if (lo <= hi) out.push(lo, hi);
    if (a[i + 1]! < b[j + 1]!) i += 2;
    else j += 2;
  }
  return out;
}

function setHas(set: CodeSet, cp: number): boolean {
  for (let i = 0; i < set.length; i += 2) if (cp >= set[i]! && cp <= set[i + 1]!) return true;
  return false;
}

/** The spellings of one character of `set` inside a JSON string (see the header). */
export function encodeSet(set: CodeSet): RegexNode {
  const items: RegexNode[] = [];
  const raw = intersectSets(set, RAW_SET);
  if (raw.length > 0) items.push({ kind: "set", set: raw });
  for (const [cp, letter] of SHORT_ESCAPES) if (setHas(set, cp)) items.push(concat(range(0x5c), range(letter.charCodeAt(0))));
  for (let cp = 0; cp < 0x20; cp++) {
    if (setHas(set, cp)) items.push(concat(literal("\\u00"), range(0x30 + (cp >> 4)), hexDigit(cp & 15)));
  }
  return alt(items);
}

/**
 * The encoded form of a decoded-string language given as a code-point RegexNode without
 * assertions or embedded DFAs (literals, classes, repeats). For patterns, see quoteDfa.
 */
export function encodeNode(node: RegexNode): RegexNode {
  switch (node.kind) {
    case "set":
      return encodeSet(node.set);
    case "concat":
      return { kind: "concat", items: node.items.map(encodeNode) };
    case "alt":
      return { kind: "alt", items: node.items.map(encodeNode) };
    case "repeat":
      return { ...node, item: encodeNode(node.item) };
    default:
      throw new Error(`encodeNode: a ${node.kind} node has no code-point form`);
  }
}

/**
 * The fewest and most characters of the strings a code-point RegexNode (encodeNode's input)
 * matches, most Infinity when unbounded; wider than the truth where a branch matches nothing.
 * Null for nodes that hold no code-point form (embedded DFAs, graphs).
 */
export function codePointBounds(node: RegexNode): [number, number] | null {
  switch (node.kind) {
    case "set":
      return [1, 1];
    case "concat": {
      let low = 0;
      let high = 0;
      for (const item of node.items) {
        const bounds = codePointBounds(item);
        if (bounds === null) return null;
        low += bounds[0];
        high += bounds[1];
      }
      return [low, high];
    }
    case "alt": {
      let low = Infinity;
      let high = 0;
      for (const item of node.items) {
        const bounds = codePointBounds(item);
        if (bounds === null) return null;
        low = Math.min(low, bounds[0]);
        high = Math.max(high, bounds[1]);
      }
      return [low === Infinity ? 0 : low, high];
    }
    case "repeat": {
      const bounds = codePointBounds(node.item);
      if (bounds === null) return null;
      return [bounds[0] * node.min, node.max === -1 ? (bounds[1] === 0 ? 0 : Infinity) : bounds[1] * node.max];
    }
    case "assert":
      return [0, 0];
    default:
      return null;
  }
}

let encodedChar: RegexNode | null = null;

/**
 * Any one character of a JSON string, encoded: as a DFA, built on first use (it is repeated per
 * counted character, and its escapes are many NFA states but few DFA states). Its build is not
 * counted: it is the same for every request, and counted it would fall on whichever compile
 * came first (RegexClock.uncounted).
 */
export function anyEncodedChar(): RegexNode {
  encodedChar ??= regexClock.uncounted(() => dfaNode(compileRegexNode(encodeSet([0, 0xd7ff, 0xe000, 0x10ffff]))));
  return encodedChar;
}

/** A whole JSON string literal whose decoded content is in the language `content` (encoded form). */
export function quoted(encodedContent: RegexNode): RegexNode {
  return concat(range(0x22), encodedContent, range(0x22));
}

/**
 * Whether we write `text` inside a JSON string one way only (encodeSet's spellings): no `"`,
 * `\`, `/` (also written `\/`), control characters, nor surrogates; JSON.stringify's is it.
 */
export function hasOneSpelling(text: string): boolean {
  return ONE_SPELLING.test(text);
}

const ONE_SPELLING = /^[^\u0000-\u001f"\\/\ud800-\udfff]*$/;

/** The JSON string literal of exactly `text`, in every spelling we write. */
export function stringLiteral(text: string): RegexNode {
  // Most keys and enum strings have one spelling: their bytes, without a set per character.
  return hasOneSpelling(text) ? literal(JSON.stringify(text)) : quoted(encodeNode(literal(text)));
}

/**
 * The encoded form of a decoded-string language given as a byte DFA over its UTF-8 (a pattern's,
 * whose `^` and `$` must mean the string's ends). The bytes escapes stand for are single-byte
 * characters, never parts of a longer UTF-8 sequence, so each of the DFA's transitions on such a
 * byte becomes the escape's bytes. Returns a DFA, not minimal (its live states: trimDfa, under
 * `limits`): wrap it in a dfa node and compile.
 */
export function quoteDfa(dfa: ByteDfa, limits: RegexLimits = {}): ByteDfa {
  // Per original state s: s itself, then after "\" (1), after "\u" (2), "\u0" (3), "\u00" (4),
  // "\u000" (5) and "\u001" (6).
  const K = 7;
  const n = dfa.numStates * K;
  // Byte classes: the DFA's (control bytes, never written raw, in one), each byte an escape
  // spells (hex digits, short escape letters, "u") on its own. Not one class per byte: a
  // pattern's DFA of 65k states made a table of 460 MB.
  const byteClass = new Uint8Array(256);
  const ofDfaClass = new Map<number, number>();
  let k = 0;
  for (let b = 0; b < 256; b++) {
    if (b === 0x22 || b === 0x5c || ESCAPE_BYTES.has(b)) byteClass[b] = k++;
    else {
      const key = b < 0x20 ? -1 : dfa.byteClass[b]!;
      let c = ofDfaClass.get(key);
      if (c === undefined) ofDfaClass.set(key, (c = k++));
      byteClass[b] = c;
    }
  }
  const next = new Int32Array(n * k).fill(-1);
  const step = (s: number, b: number): number => dfa.next[s * dfa.numClasses + dfa.byteClass[b]!]!;
  const set = (state: number, b: number, target: number): void => {
    next[state * k + byteClass[b]!] = target;
  };
  // One byte of each class, for the raw characters (bytes of one class step alike).
  const representative = new Int32Array(k).fill(-1);
  for (let b = 0x20; b < 256; b++) if (representative[byteClass[b]!] === -1) representative[byteClass[b]!] = b;
  for (let s = 0; s < dfa.numStates; s++) {
    const base = s * K;
    for (let c = 0; c < k; c++) {
      const b = representative[c]!;
      if (b < 0 || b === 0x22 || b === 0x5c) continue;
      const t = step(s, b);
      if (t >= 0) next[base * k + c] = t * K;
    }
    set(base, 0x5c, base + 1);
    for (const [cp, letter] of SHORT_ESCAPES) {
      const t = step(s, cp);
      if (t >= 0) set(base + 1, letter.charCodeAt(0), t * K);
    }
    set(base + 1, 0x75, base + 2);
    set(base + 2, 0x30, base + 3);
    set(base + 3, 0x30, base + 4);
    set(base + 4, 0x30, base + 5);
    set(base + 4, 0x31, base + 6);
    for (let cp = 0; cp < 0x20; cp++) {
      const t = step(s, cp);
      if (t < 0) continue;
      const from = cp >> 4 === 0 ? base + 5 : base + 6;
      const lower = HEX_LOWER.charCodeAt(cp & 15);
      set(from, lower, t * K);
      if ((cp & 15) >= 10) set(from, lower - 0x20, t * K);
    }
  }
  const accepting = new Uint8Array(n);
  for (let s = 0; s < dfa.numStates; s++) accepting[s * K] = dfa.accepting[s]!;
  return trimDfa(
    { numStates: n, start: dfa.start * K, numClasses: k, byteClass, next, accepting, minBytesToAccept: new Int32Array(n) },
    limits,
  );
}

/** The bytes an escape spells after its backslash: short escape letters, "u", hex digits. */
const ESCAPE_BYTES: ReadonlySet<number> = new Set([..."bfnrt/u0123456789abcdefABCDEF"].map((ch) => ch.charCodeAt(0)));

const NONZERO_DIGITS = concat(range(0x31, 0x39), repeat(range(0x30, 0x39), 0, -1));

/** `-?(0|[1-9][0-9]*)`: every integer text JSON allows ("-0" too). */
export const ANY_INTEGER_TEXT: RegexNode = concat(optional(range(0x2d)), alt([range(0x30), NONZERO_DIGITS]));

/** `0|-?[1-9][0-9]*`: the integers as we write them (no "-0", a zero readers may not expect). */
export const INTEGER_TEXT: RegexNode = alt([range(0x30), concat(optional(range(0x2d)), NONZERO_DIGITS)]);

/** RFC 8259's number grammar with at most `exponentDigits` exponent digits (-1: any number). */
function numberText(exponentDigits: number): RegexNode {
  const exponent = concat(
    { kind: "set", set: [0x45, 0x45, 0x65, 0x65] },
    optional({ kind: "set", set: [0x2b, 0x2b, 0x2d, 0x2d] }),
    repeat(range(0x30, 0x39), 1, exponentDigits),
  );
  return concat(ANY_INTEGER_TEXT, optional(concat(range(0x2e), repeat(range(0x30, 0x39), 1, -1))), optional(exponent));
}

/**
 * The number texts we write: at most two exponent digits (1e999999999 is JSON, but parsers make it
 * infinity or refuse it), and no negative zero ("-0", "-0.00").
 */
export const NUMBER_TEXT: RegexNode = (() => {
  const digits = repeat(range(0x30, 0x39), 0, -1);
  const fraction = optional(concat(range(0x2e), repeat(range(0x30, 0x39), 1, -1)));
  const exponent = optional(
    concat(
      { kind: "set", set: [0x45, 0x45, 0x65, 0x65] },
      optional({ kind: "set", set: [0x2b, 0x2b, 0x2d, 0x2d] }),
      repeat(range(0x30, 0x39), 1, 2),
    ),
  );
  const negativeFraction = concat(literal("-0."), digits, range(0x31, 0x39), digits);
  return concat(alt([concat(range(0x30), fraction), concat(optional(range(0x2d)), NONZERO_DIGITS, fraction), negativeFraction]), exponent);
})();

/** Every JSON number text: what an over-approximation must include. */
export const ANY_NUMBER_TEXT: RegexNode = numberText(-1);

const DIGITS = repeat(range(0x30, 0x39), 1, -1);
const EXPONENT = concat({ kind: "set", set: [0x45, 0x45, 0x65, 0x65] }, optional({ kind: "set", set: [0x2b, 0x2b, 0x2d, 0x2d] }), DIGITS);

/** Number texts with an exponent part. */
export const EXPONENT_NUMBER_TEXT: RegexNode = concat(ANY_INTEGER_TEXT, optional(concat(range(0x2e), DIGITS)), EXPONENT);

/** Number texts of integer value without exponent: "3", "3.0", "-0.00". */
export const INTEGER_VALUED_TEXT: RegexNode = concat(ANY_INTEGER_TEXT, optional(concat(range(0x2e), repeat(range(0x30), 1, -1))));

/** Any JSON string. */
export function anyStringText(): RegexNode {
  return quoted(repeat(anyEncodedChar(), 0, -1));
}

/**
 * A regular superset of the JSON values nested at most `levels` deep: JSON tokens in which
 * brackets are counted but not matched by kind (`[1}` is in it). What an over-approximation puts
 * where the schema leaves a value free: it must hold every text the language it is subtracted from
 * may have there, so it is built deep (levels well past what we write), and counting, unlike
 * matching, costs a few states a level. Brackets counted, the value ends where the count returns
 * to zero, so it never runs into the text after it.
 */
export function countedValueText(levels: number, only?: "object" | "array"): RegexNode {
  const scalars = [anyStringText(), ANY_NUMBER_TEXT, literal("null"), literal("true"), literal("false")];
  const punctuation: RegexNode = { kind: "set", set: [0x09, 0x0a, 0x0d, 0x0d, 0x20, 0x20, 0x2c, 0x2c, 0x3a, 0x3a] };
  const open: RegexNode = { kind: "set", set: [0x5b, 0x5b, 0x7b, 0x7b] };
  const close: RegexNode = { kind: "set", set: [0x5d, 0x5d, 0x7d, 0x7d] };
  const token = alt([...scalars, punctuation]);
  let group: RegexNode | null = null;
  for (let level = 1; level < levels; level++) {
    const content = repeat(group === null ? token : alt([token, group]), 0, -1);
    group = concat(open, content, close);
  }
  const content = repeat(group === null ? token : alt([token, group]), 0, -1);
  const outer = (bracket: number): RegexNode => concat(range(bracket), content, close);
  if (only === "object") return outer(0x7b);
  if (only === "array") return outer(0x5b);
  return alt([...scalars, concat(open, content, close)]);
}

export const NULL_TEXT = literal("null");
export const TRUE_TEXT = literal("true");
export const FALSE_TEXT = literal("false");

// Lexical states of maxNesting's walk: between tokens, inside a string, after a backslash there.
const OUTSIDE = 0;
const IN_STRING = 1;
const ESCAPED = 2;
/** maxNesting's largest table of (state, lexical state, depth) marks, in bytes. */
const MAX_NESTING_MARKS = 1 << 22;

/**
 * The deepest nesting (containers open at once) of any text `dfa` accepts, which must all be JSON
 * texts, or `cap` if that deep or deeper. A search over (state, lexical state, depth) from the
 * start: brackets count outside strings only, and a byte class counts by the bytes in it that
 * matter (quote, backslash, brackets) and whether it has others. A call reached (a rule's texts,
 * nesting without bound) is `cap`.
 */
export function maxNesting(dfa: ByteDfa, cap: number): number {
  const { numStates, numClasses, next, byteClass } = dfa;
  // Per class, a bit per kind of byte in it: 1 quote, 2 backslash, 4 opening, 8 closing, 16 other,
  // 32 a call's lead (support/rule-calls.ts).
  const kinds = new Uint8Array(numClasses);
  for (let b = 0; b < 256; b++) {
    const kind = b === 0x22 ? 1 : b === 0x5c ? 2 : b === 0x5b || b === 0x7b ? 4 : b === 0x5d || b === 0x7d ? 8 : 16;
    kinds[byteClass[b]!]! |= kind;
  }
  kinds[byteClass[RULE_CALL_LEAD]!]! |= 32;
  const levels = cap + 1;
  // Past a few MB of marks the search is not worth it: the cap holds for every text.
  if (numStates * 3 * levels > MAX_NESTING_MARKS) return cap;
  const seen = new Uint8Array(numStates * 3 * levels);
  const stack: number[] = [];
  let deepest = 0;
  const visit = (state: number, lexical: number, depth: number): void => {
    const id = (state * 3 + lexical) * levels + depth;
    if (seen[id]) return;
    seen[id] = 1;
    stack.push(id);
    if (depth > deepest) deepest = depth;
  };
  visit(dfa.start, OUTSIDE, 0);
  while (stack.length > 0 && deepest < cap) {
    const id = stack.pop()!;
    const depth = id % levels;
    const both = (id - depth) / levels;
    const lexical = both % 3;
    const state = (both - lexical) / 3;
    for (let c = 0; c < numClasses; c++) {
      const to = next[state * numClasses + c]!;
      if (to < 0) continue;
      const kind = kinds[c]!;
      if (lexical === ESCAPED) {
        visit(to, IN_STRING, depth);
      } else if (lexical === IN_STRING) {
        if (kind & 1) visit(to, OUTSIDE, depth);
        if (kind & 2) visit(to, ESCAPED, depth);
        if (kind & (4 | 8 | 16)) visit(to, IN_STRING, depth);
      } else {
        if (kind & 1) visit(to, IN_STRING, depth);
        if (kind & 4) visit(to, OUTSIDE, Math.min(depth + 1, cap));
        if (kind & 8 && depth > 0) visit(to, OUTSIDE, depth - 1);
        if (kind & (2 | 16)) visit(to, OUTSIDE, depth);
        // A call (a free value's member, in a subtraction's operand): its texts nest without
        // bound, and a product may read it as its rule's texts (ProductCalls).
        if (kind & 32) return cap;
      }
    }
  }
  return Math.min(deepest, cap);
}
