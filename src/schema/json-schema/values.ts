// `enum`/`const`: the listed JSON values, each written as we write it and kept where the rest of
// its schema allows it; and what the other writers need of JSON values (their texts read off a
// finite automaton, JSON equality).

import { finiteMembers, isEmptyLanguage, matchesString, type ByteDfa, type RegexNode } from "../../regex/index.js";
import type { Alternative, Want, WriterContext } from "./context.js";
import { nestingDepth } from "./document.js";
import { hasCalls } from "./rules.js";
import {
  alt,
  concat,
  dfaNode,
  EMPTY,
  EXPONENT_NUMBER_TEXT,
  FALSE_TEXT,
  hasOneSpelling,
  literal,
  NULL_TEXT,
  range,
  stringLiteral,
  TRUE_TEXT,
} from "./json-text.js";
import { numberRangeNode } from "./numeric.js";
import type { Spec } from "./spec.js";

/** Keys of an enum/const object whose every order an over-approximation spells out (4! = 24). */
const MAX_PERMUTED_KEYS = 4;
/** Deepest enum/const value checked against a rest whose free values nest as deep (see enumLanguage). */
const MAX_ENUM_CHECK_LEVELS = 8;
/** Most key orders of one enum/const value written when the rest does not allow its own (4! = 24). */
const MAX_PERMUTED_ORDERS = 24;

/** `enum`/`const`: the listed values, written canonically, each checked against the rest. */
export function enumLanguage(c: WriterContext, spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode {
  const withoutEnum: Spec = { ...spec, enumValues: null };
  // The rest of the schema, by how deep its free values nest (freeNesting, or as deep as a value).
  const rests = new Map<number, ByteDfa>();
  const restOf = (levels: number): ByteDfa => {
    let rest = rests.get(levels);
    if (rest === undefined) {
      // A literal has no repeated keys: the rest need not be written duplicate-free to keep it so.
      const write = (): ByteDfa =>
        c.operand(() => c.dfaOf(c.specLanguage(withoutEnum, alternative, { ...want, dupFree: false }, pointer), pointer));
      rests.set(levels, (rest = levels > c.options.freeNesting ? c.withFreeNesting(levels, write) : write()));
    }
    return rest;
  };
  const parts: RegexNode[] = [];
  for (const value of spec.enumValues!) {
    if (!typeAllows(spec, value)) continue;
    let rest = restOf(c.options.freeNesting);
    // A value nested deeper than the free values we write is checked against a rest as deep.
    const levels = nestingDepth(value, MAX_ENUM_CHECK_LEVELS);
    const deeper = !want.over && levels > c.options.freeNesting && levels <= MAX_ENUM_CHECK_LEVELS;
    // A value we write one way only (most enums: strings, numbers) is kept or not by a walk.
    const only = want.over ? null : onlyText(value);
    if (only !== null) {
      if (matchesString(rest, only)) {
        // A number's other spelling ("2.0" for 2) where the rest has it too.
        const spelled = typeof value === "number" ? otherSpelling(only) : null;
        parts.push(spelled !== null && matchesString(rest, spelled) ? alt([literal(only), literal(spelled)]) : literal(only));
      } else if (typeof value === "number") {
        // A number is checked by its value: its digits without exponent ("1e+308" as the 309
        // digits of 10^308; we write at most two exponent digits, and some ranges none). Where
        // the schema asks for an integer those digits are what we write.
        const plain = plainDecimal(only);
        if (plain !== only && matchesString(rest, plain)) parts.push(literal(spec.types.number === "integer" ? plain : only));
      }
      continue;
    }
    const written = c.compileNode(valueText(c, value, want), pointer);
    let kept = c.intersect(written, rest, pointer);
    if (isEmptyLanguage(kept) && deeper) kept = c.intersect(written, (rest = restOf(levels)), pointer);
    // The rest writes an object's properties in its own order (`properties`, `required`): an
    // object value it allows only in another key order is kept in that order (while the
    // orders are few), not dropped as if the schema could not be met.
    if (isEmptyLanguage(kept) && !want.over && keyOrders(value) <= MAX_PERMUTED_ORDERS) {
      kept = c.intersect(c.compileNode(valueText(c, value, want, true), pointer), rest, pointer);
    }
    if (!isEmptyLanguage(kept)) parts.push(dfaNode(kept));
  }
  return alt(parts);
}

/**
 * The texts we write for a number (JSON.stringify's `text`): an integer also with one zero
 * decimal ("2.0"), as instances write a float that JSON.parse read as an integer (the enum's
 * `{"a": 0.0}` is `{"a": 0}` to us; JSON equality is by value). Finite, so an enum's item
 * values stay listable (uniqueItems).
 */
function numberSpellings(text: string): RegexNode {
  const other = otherSpelling(text);
  return other === null ? literal(text) : alt([literal(text), literal(other)]);
}

/** The other text numberSpellings writes for `text`, or null. */
function otherSpelling(text: string): string | null {
  return /^-?\d+$/.test(text) ? `${text}.0` : null;
}

/** A JSON number text with its exponent written out: "1.5e-7" → "0.00000015", "1e+21" → "1" and 21 zeros. */
function plainDecimal(text: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (match === null || match[4] === undefined) return text;
  const [, sign, whole, fraction = "", exponentText] = match;
  const exponent = Number(exponentText);
  const digits = whole! + fraction;
  const point = whole!.length + exponent; // where the decimal point falls in `digits`
  const padded = point <= 0 ? "0".repeat(1 - point) + digits : point >= digits.length ? digits + "0".repeat(point - digits.length) : digits;
  const at = Math.max(point, 1);
  const integer = padded.slice(0, at).replace(/^0+(?=\d)/, "");
  const decimals = padded.slice(at).replace(/0+$/, "");
  return `${sign}${integer}${decimals === "" ? "" : `.${decimals}`}`;
}

/**
 * The texts we write for one JSON value (over: every text of an equal value we might meet).
 * An object's keys are in its own order, or in every order with `anyOrder`.
 */
function valueText(c: WriterContext, value: unknown, want: Want, anyOrder = false): RegexNode {
  const { depth } = want;
  if (value === null) return NULL_TEXT;
  if (value === true) return TRUE_TEXT;
  if (value === false) return FALSE_TEXT;
  if (typeof value === "number") {
    if (!want.over) return numberSpellings(JSON.stringify(value));
    // Every text of this value: without exponent ("1", "1.0", …) exactly; any with one.
    const n = String(value);
    return alt([numberRangeNode({ minimum: n, maximum: n }) ?? EMPTY, EXPONENT_NUMBER_TEXT]);
  }
  if (typeof value === "string") return stringLiteral(value);
  const inner: Want = { ...want, depth: depth + 1 };
  if (Array.isArray(value)) {
    if (value.length === 0) return literal("[]");
    const items = value.map((v, i) => concat(i === 0 ? c.syntax.open(depth) : c.syntax.separator(depth), valueText(c, v, inner, anyOrder)));
    return concat(range(0x5b), ...items, c.syntax.close(depth), range(0x5d));
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return literal("{}");
  const objectText = (order: readonly [string, unknown][]): RegexNode =>
    concat(
      range(0x7b),
      ...order.map(([k, v], i) =>
        concat(
          i === 0 ? c.syntax.open(depth) : c.syntax.separator(depth),
          stringLiteral(k),
          c.syntax.colon,
          valueText(c, v, inner, anyOrder),
        ),
      ),
      c.syntax.close(depth),
      range(0x7d),
    );
  if (!want.over) return anyOrder ? alt(permutations(entries).map(objectText)) : objectText(entries);
  // Equal objects may list their keys in any order: every order, while they are few.
  if (entries.length > MAX_PERMUTED_KEYS) return dfaNode(c.anyValue(depth, c.options.freeNesting + 1, want, "object"));
  return alt(permutations(entries).map(objectText));
}

/**
 * How many key orders a JSON value has (the product of its objects' key counts' factorials);
 * Infinity past MAX_PERMUTED_ORDERS.
 */
function keyOrders(value: unknown): number {
  if (value === null || typeof value !== "object") return 1;
  let orders = 1;
  const children = Array.isArray(value) ? value : Object.values(value);
  if (!Array.isArray(value)) {
    for (let k = 2; k <= children.length; k++) if ((orders *= k) > MAX_PERMUTED_ORDERS) return Infinity;
  }
  for (const child of children) {
    if (orders > MAX_PERMUTED_ORDERS) return Infinity;
    orders *= keyOrders(child);
  }
  return orders > MAX_PERMUTED_ORDERS ? Infinity : orders;
}

/** All orders of `items` (few: MAX_PERMUTED_KEYS! at most). */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

function typeAllows(spec: Spec, value: unknown): boolean {
  const t = spec.types;
  if (value === null) return t.null;
  if (typeof value === "boolean") return t.boolean;
  if (typeof value === "number") return t.number === "number" || (t.number === "integer" && Number.isInteger(value));
  if (typeof value === "string") return t.string;
  if (Array.isArray(value)) return t.array;
  return t.object;
}

/** The one text we write for a scalar value that has one (valueText's, not over), else null. */
function onlyText(value: unknown): string | null {
  if (value === null || typeof value === "boolean" || typeof value === "number") return JSON.stringify(value);
  return typeof value === "string" && hasOneSpelling(value) ? JSON.stringify(value) : null;
}

/**
 * Every text `dfa` accepts, decoded (its languages are UTF-8), when there are at most `limit` of
 * at most `maxBytes` each; null otherwise (regex/sample.ts's finiteMembers), and where it calls a
 * rule (a free value's call is three bytes standing for every JSON value).
 */
export function finiteTexts(dfa: ByteDfa, limit: number, maxBytes: number): string[] | null {
  if (hasCalls(dfa)) return null;
  return finiteMembers(dfa, limit, maxBytes)?.map((bytes) => utf8.decode(bytes)) ?? null;
}

const utf8 = new TextDecoder();

/** A JSON value's key under JSON equality: numbers by value, objects by their sorted members. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  if (typeof value === "number") return Object.is(value, -0) ? "0" : String(value);
  return JSON.stringify(value);
}
