/**
 * JSON Schema's numeric keywords (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf)
 * as exact languages over the number text a model writes.
 *
 *   integerRangeNode({ minimum: "2.5", exclusiveMaximum: "1e3" })   // 3..999 as integer texts
 *   numberRangeNode({ exclusiveMinimum: "0" })                       // "0.0001", not "0" or "-0.0"
 *   multipleOfNode("0.01", false)                                    // { kind: "dfa", dfa }
 *
 * Syntax (a documented choice): integer text `-?(0|[1-9][0-9]*)` ("-0" is the integer 0), number
 * text the same optionally followed by `\.[0-9]+`, never an exponent. Without exponents a bound is
 * a comparison of digit strings, so the languages are exact and their nodes and automata small
 * (about n log n for a bound of n digits, less for round ones such as 1e300); with exponents "1e3"
 * and "1000" would both have to be compared with the bound, and "1e999999" with no automaton.
 *
 * Bounds are read exactly: a decimal is a BigInt mantissa times a power of ten, never a float.
 * Ranges are built the classic "range to regex" way (llguidance's numeric.rs): a fixed prefix, one
 * digit set, then any digits; multipleOf is a DFA over (remainder, fraction digits read, phase).
 */
import type { ByteDfa, RegexNode } from "../../regex/index.js";

export interface NumericBounds {
  minimum?: string;
  maximum?: string;
  exclusiveMinimum?: string;
  exclusiveMaximum?: string;
}

/** Past this many digits (integer part or fraction) a bound is refused (plain Error "numeric bound too large"). */
const MAX_BOUND_DIGITS = 400;
/** Larger exponents are refused outright; the digit cap refuses most smaller ones anyway. */
const MAX_EXPONENT = 1_000_000_000;
/** multipleOf p / 10^q with p above this is refused ("multipleOf too large"), as are DFAs past MAX_MULTIPLE_STATES. */
const MAX_MULTIPLE_OF = 100_000;
const MAX_MULTIPLE_STATES = 1_000_000;

// ---------------------------------------------------------------------------------------------
// Exact decimals

/** value = mantissa · 10^exponent; mantissa has no trailing zero (0 is 0·10^0). */
interface Decimal {
  readonly mantissa: bigint;
  readonly exponent: number;
}

/** A lower or upper bound; strict for the exclusive keywords. */
interface Bound {
  readonly value: Decimal;
  readonly strict: boolean;
}

const JSON_NUMBER = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

function parseDecimal(text: string): Decimal {
  const m = JSON_NUMBER.exec(text);
  if (m === null) throw new Error(`numeric bound ${JSON.stringify(text)} is not a JSON number`);
  const fraction = m[3] ?? "";
  const exponent = BigInt(m[4] ?? "0") - BigInt(fraction.length);
  if (exponent > BigInt(MAX_EXPONENT) || exponent < -BigInt(MAX_EXPONENT)) throw new Error(`numeric bound too large: ${text}`);
  return normalize(BigInt(`${m[1]}${m[2]}${fraction}`), Number(exponent));
}

function normalize(mantissa: bigint, exponent: number): Decimal {
  if (mantissa === 0n) return { mantissa: 0n, exponent: 0 };
  let m = mantissa;
  let e = exponent;
  while (m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  return { mantissa: m, exponent: e };
}

const abs = (n: bigint): bigint => (n < 0n ? -n : n);
const sign = (n: bigint): number => (n > 0n ? 1 : n < 0n ? -1 : 0);
const digitCount = (n: bigint): number => abs(n).toString().length;
const negate = (d: Decimal): Decimal => ({ mantissa: -d.mantissa, exponent: d.exponent });
const ZERO: Decimal = { mantissa: 0n, exponent: 0 };

/** Exact comparison: orders of magnitude first, so 1e999999999 vs 1e-999999999 needs no 10^big. */
function compareDecimal(a: Decimal, b: Decimal): number {
  const sa = sign(a.mantissa);
  const sb = sign(b.mantissa);
  if (sa !== sb || sa === 0) return sa - sb;
  const orderA = digitCount(a.mantissa) + a.exponent;
  const orderB = digitCount(b.mantissa) + b.exponent;
  if (orderA !== orderB) return orderA > orderB ? sa : -sa;
  const e = Math.min(a.exponent, b.exponent);
  const ma = a.mantissa * 10n ** BigInt(a.exponent - e);
  const mb = b.mantissa * 10n ** BigInt(b.exponent - e);
  return ma === mb ? 0 : ma > mb ? 1 : -1;
}

/** The integer d (exponent ≥ 0), refused past MAX_BOUND_DIGITS digits. */
function integerValue(d: Decimal): bigint {
  if (digitCount(d.mantissa) + d.exponent > MAX_BOUND_DIGITS)
    throw new Error(`numeric bound too large: more than ${MAX_BOUND_DIGITS} digits`);
  return d.mantissa * 10n ** BigInt(d.exponent);
}

/** ⌊d⌋ (toward -∞). */
function floorDecimal(d: Decimal): bigint {
  if (d.exponent >= 0) return integerValue(d);
  if (-d.exponent > digitCount(d.mantissa)) return d.mantissa < 0n ? -1n : 0n;
  const scale = 10n ** BigInt(-d.exponent);
  const q = d.mantissa / scale;
  return d.mantissa < 0n && q * scale !== d.mantissa ? q - 1n : q;
}

/** ⌈d⌉. */
const ceilDecimal = (d: Decimal): bigint => -floorDecimal(negate(d));

const isInteger = (d: Decimal): boolean => d.exponent >= 0;

/** A non-negative decimal as its integer part's text and its fraction's digits (no trailing zero). */
function splitDecimal(d: Decimal): { integer: string; fraction: string } {
  if (d.exponent >= 0) return { integer: integerValue(d).toString(), fraction: "" };
  if (-d.exponent > MAX_BOUND_DIGITS) throw new Error(`numeric bound too large: more than ${MAX_BOUND_DIGITS} fraction digits`);
  const digits = d.mantissa.toString().padStart(-d.exponent + 1, "0");
  const cut = digits.length + d.exponent;
  return { integer: digits.slice(0, cut), fraction: digits.slice(cut) };
}

// ---------------------------------------------------------------------------------------------
// Combined bounds

/** The tighter of a keyword's inclusive and exclusive bound (lower: sense 1, upper: -1); on a tie the exclusive one. */
function tighter(inclusive: Bound | null, exclusive: Bound | null, sense: 1 | -1): Bound | null {
  if (inclusive === null) return exclusive;
  if (exclusive === null) return inclusive;
  return compareDecimal(inclusive.value, exclusive.value) * sense > 0 ? inclusive : exclusive;
}

function boundOf(text: string | undefined, strict: boolean): Bound | null {
  return text === undefined ? null : { value: parseDecimal(text), strict };
}

function lowerBound(bounds: NumericBounds): Bound | null {
  return tighter(boundOf(bounds.minimum, false), boundOf(bounds.exclusiveMinimum, true), 1);
}

function upperBound(bounds: NumericBounds): Bound | null {
  return tighter(boundOf(bounds.maximum, false), boundOf(bounds.exclusiveMaximum, true), -1);
}

/** True when no number lies between the bounds. */
function isEmptyInterval(lo: Bound | null, hi: Bound | null): boolean {
  if (lo === null || hi === null) return false;
  const c = compareDecimal(lo.value, hi.value);
  return c > 0 || (c === 0 && (lo.strict || hi.strict));
}

// ---------------------------------------------------------------------------------------------
// Node builders

const CHAR_0 = 0x30;
const digitSet = (lo: number, hi: number): RegexNode => ({ kind: "set", set: [CHAR_0 + lo, CHAR_0 + hi] });
const charNode = (ch: string): RegexNode => ({ kind: "set", set: [ch.charCodeAt(0), ch.charCodeAt(0)] });
const ANY_DIGIT = digitSet(0, 9);
const EPSILON: RegexNode = { kind: "concat", items: [] };

function repeat(item: RegexNode, min: number, max: number): RegexNode {
  return min === 1 && max === 1 ? item : { kind: "repeat", item, min, max };
}

/** Any min..max digits (max -1: unbounded). */
const anyDigits = (min: number, max = min): RegexNode => repeat(ANY_DIGIT, min, max);

/** Concatenation; null (the empty language) if any part is null. */
function concat(...parts: (RegexNode | null)[]): RegexNode | null {
  const items: RegexNode[] = [];
  for (const part of parts) {
    if (part === null) return null;
    if (part.kind === "concat") items.push(...part.items);
    else if (!(part.kind === "repeat" && part.max === 0)) items.push(part);
  }
  return items.length === 1 ? items[0]! : { kind: "concat", items };
}

/** Alternation of the non-null parts; null when there are none. */
function alt(...parts: (RegexNode | null)[]): RegexNode | null {
  const items = parts.filter((p): p is RegexNode => p !== null);
  if (items.length <= 1) return items[0] ?? null;
  return { kind: "alt", items };
}

/** A digit string, runs of one digit as counted repeats (so 10^300 stays three nodes). */
function literal(digits: string): RegexNode {
  const items: RegexNode[] = [];
  for (let i = 0; i < digits.length; ) {
    let j = i + 1;
    while (digits[j] === digits[i]) j++;
    const d = digits.charCodeAt(i) - CHAR_0;
    items.push(repeat(digitSet(d, d), j - i, j - i));
    i = j;
  }
  return concat(...items)!;
}

const digitAt = (s: string, i: number): number => s.charCodeAt(i) - CHAR_0;

// ---------------------------------------------------------------------------------------------
// Integers: digit strings of one length compared with a bound, then lengths

/** A bound on a natural number: its decimal digits (no leading zero) and whether it is excluded. */
interface NaturalBound {
  readonly digits: string;
  readonly strict: boolean;
}

/**
 * Strings of s.length digits above s (or below), s itself too when orEqual. Divide and conquer
 * (x = x₁x₂ is above s₁s₂ iff x₁ is above s₁, or x₁ = s₁ and x₂ is above s₂) keeps the node and
 * its automaton O(n log n) for an n-digit bound; trailing digits that cannot decide become any digits.
 */
function sameLength(s: string, above: boolean, orEqual: boolean): RegexNode | null {
  if (s === "") return orEqual ? EPSILON : null;
  const absorbed = above === orEqual ? "0" : "9";
  const t = trimEnd(s, absorbed);
  if (t.length < s.length) return concat(sameLength(t, above, orEqual), anyDigits(s.length - t.length));
  if (s.length === 1) {
    const x = digitAt(s, 0);
    const [lo, hi] = above ? [orEqual ? x : x + 1, 9] : [0, orEqual ? x : x - 1];
    return lo <= hi ? digitSet(lo, hi) : null;
  }
  // A run of the digit that cannot be absorbed (9 under ≥, 0 under >, …) is split off whole: after
  // the rest equals, the run must be itself (orEqual) or anything but itself (strict).
  const other = above === orEqual ? 9 : 0;
  const u = trimEnd(s, String(other));
  if (u === "") return orEqual ? literal(s) : notAll(other, s.length);
  const cut = u.length < s.length ? u.length : s.length >> 1;
  const head = s.slice(0, cut);
  const rest = s.slice(cut);
  return alt(concat(sameLength(head, above, false), anyDigits(rest.length)), concat(literal(head), sameLength(rest, above, orEqual)));
}

function trimEnd(s: string, digit: string): string {
  let end = s.length;
  while (end > 0 && s[end - 1] === digit) end--;
  return s.slice(0, end);
}

/** Strings of n digits other than c^n, halved recursively so that long runs stay small. */
function notAll(c: number, n: number): RegexNode {
  if (n === 1) return alt(c > 0 ? digitSet(0, c - 1) : null, c < 9 ? digitSet(c + 1, 9) : null)!;
  const a = n >> 1;
  return alt(concat(notAll(c, a), anyDigits(n - a)), concat(repeat(digitSet(c, c), a, a), notAll(c, n - a)))!;
}

/** Strings of lo.length digits between lo and hi (same length). */
function between(lo: NaturalBound, hi: NaturalBound): RegexNode | null {
  const a = lo.digits;
  const b = hi.digits;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  if (i === a.length) return lo.strict || hi.strict ? null : literal(a);
  const x = digitAt(a, i);
  const y = digitAt(b, i);
  if (x > y) return null;
  const branches = alt(
    concat(digitSet(x, x), sameLength(a.slice(i + 1), true, !lo.strict)),
    x + 1 <= y - 1 ? concat(digitSet(x + 1, y - 1), anyDigits(a.length - i - 1)) : null,
    concat(digitSet(y, y), sameLength(b.slice(i + 1), false, !hi.strict)),
  );
  return concat(literal(a.slice(0, i)), branches);
}

function checkDigits(digits: string): void {
  if (digits.length > MAX_BOUND_DIGITS) throw new Error(`numeric bound too large: more than ${MAX_BOUND_DIGITS} digits`);
}

/** Texts of the natural numbers between lo and hi (null: unbounded), without sign or leading zeros. */
function naturalRange(lo: NaturalBound, hi: NaturalBound | null): RegexNode | null {
  checkDigits(lo.digits);
  if (hi !== null) checkDigits(hi.digits);
  const zero = lo.digits === "0" && !lo.strict && (hi === null || hi.digits !== "0" || !hi.strict) ? literal("0") : null;
  return alt(zero, positiveRange(lo.digits === "0" ? { digits: "1", strict: false } : lo, hi));
}

/** naturalRange for lo ≥ 1: the bound's own length compared digit by digit, longer lengths free. */
function positiveRange(lo: NaturalBound, hi: NaturalBound | null): RegexNode | null {
  const la = lo.digits.length;
  if (hi !== null && hi.digits.length < la) return null;
  if (hi !== null && hi.digits.length === la) return between(lo, hi);
  const lb = hi?.digits.length ?? -1;
  return alt(
    sameLength(lo.digits, true, !lo.strict),
    hi === null || lb - 2 >= la ? concat(digitSet(1, 9), anyDigits(la, hi === null ? -1 : lb - 2)) : null,
    hi === null ? null : between({ digits: `1${"0".repeat(lb - 1)}`, strict: false }, hi),
  );
}

/** A bound on an integer rounded inward when it is not an integer (x ≥ 2.5 is x ≥ 3). */
function integerBound(b: Bound | null, isLower: boolean): Bound | null {
  if (b === null || isInteger(b.value)) return b;
  const rounded = isLower ? ceilDecimal(b.value) : floorDecimal(b.value);
  return { value: normalize(rounded, 0), strict: false };
}

/** A non-negative integer bound as digits. */
function naturalBound(b: Bound): NaturalBound {
  return { digits: integerValue(b.value).toString(), strict: b.strict };
}

/** The integer texts whose value satisfies every bound; null when none does. */
export function integerRangeNode(bounds: NumericBounds): RegexNode | null {
  const lower = integerBound(lowerBound(bounds), true);
  const upper = integerBound(upperBound(bounds), false);
  if (isEmptyInterval(lower, upper)) return null;
  return signed(lower, upper, (lo, hi) => naturalRange(naturalBound(lo), hi === null ? null : naturalBound(hi)));
}

/** The texts of values between the bounds: unsigned ones, and "-" before the magnitudes of negative ones (and of 0). */
function signed(lower: Bound | null, upper: Bound | null, unsigned: (lo: Bound, hi: Bound | null) => RegexNode | null): RegexNode | null {
  const nonNegative = unsignedBetween(atLeastZero(lower), upper, unsigned);
  const nonPositive = unsignedBetween(atLeastZero(negateBound(upper)), negateBound(lower), unsigned);
  return alt(nonNegative, concat(charNode("-"), nonPositive));
}

function unsignedBetween(lo: Bound, hi: Bound | null, unsigned: (lo: Bound, hi: Bound | null) => RegexNode | null): RegexNode | null {
  return isEmptyInterval(lo, hi) ? null : unsigned(lo, hi);
}

/** lo clipped to at least 0 (inclusive when the bound was below 0). */
function atLeastZero(lo: Bound | null): Bound {
  return lo === null || compareDecimal(lo.value, ZERO) < 0 ? { value: ZERO, strict: false } : lo;
}

const negateBound = (b: Bound | null): Bound | null => (b === null ? null : { value: negate(b.value), strict: b.strict });

// ---------------------------------------------------------------------------------------------
// Fractions: digit strings d compared as the value 0.d

/** A bound on a fraction 0.digits (digits without trailing zero; "" is 0). */
interface FractionBound {
  readonly digits: string;
  readonly strict: boolean;
}

/** Compares 0.a with 0.b (digit strings without trailing zeros). */
function compareFraction(a: string, b: string): number {
  const n = Math.max(a.length, b.length);
  const pa = a.padEnd(n, "0");
  const pb = b.padEnd(n, "0");
  return pa === pb ? 0 : pa > pb ? 1 : -1;
}

function isEmptyFraction(lo: FractionBound | null, hi: FractionBound | null): boolean {
  if (lo === null || hi === null) return false;
  const c = compareFraction(lo.digits, hi.digits);
  return c > 0 || (c === 0 && (lo.strict || hi.strict));
}

/** Whether the fraction 0 (no digits, or zeros) satisfies both bounds. */
function admitsZero(lo: FractionBound | null, hi: FractionBound | null): boolean {
  return lo === null && !(hi !== null && hi.digits === "" && hi.strict);
}

/** The bound on the rest of the digits after reading digit c: undefined fails, null is satisfied. */
function shiftLower(lo: FractionBound | null, c: number): FractionBound | null | undefined {
  if (lo === null) return null;
  if (lo.digits === "") return c > 0 ? null : lo;
  const a = digitAt(lo.digits, 0);
  if (c !== a) return c > a ? null : undefined;
  const rest = lo.digits.slice(1);
  return rest === "" && !lo.strict ? null : { digits: rest, strict: lo.strict };
}

function shiftUpper(hi: FractionBound | null, c: number): FractionBound | null | undefined {
  if (hi === null) return null;
  if (hi.digits === "") return c > 0 ? undefined : hi;
  const b = digitAt(hi.digits, 0);
  if (c !== b) return c < b ? null : undefined;
  return { digits: hi.digits.slice(1), strict: hi.strict };
}

/** Non-empty digit strings d with 0.d between the bounds, split by first digit. */
function fractionDigits(lo: FractionBound | null, hi: FractionBound | null): RegexNode | null {
  const branches: (RegexNode | null)[] = [];
  let free = -1; // the first of a run of digits after which any digits do (c = 10 closes the last run)
  for (let c = 0; c <= 10; c++) {
    const nextLo = c <= 9 ? shiftLower(lo, c) : undefined;
    const nextHi = c <= 9 ? shiftUpper(hi, c) : undefined;
    const isFree = nextLo === null && nextHi === null;
    if (isFree && free < 0) free = c;
    if (!isFree && free >= 0) branches.push(concat(digitSet(free, c - 1), anyDigits(0, -1))), (free = -1);
    if (!isFree && nextLo !== undefined && nextHi !== undefined) branches.push(concat(digitSet(c, c), fractionTail(nextLo, nextHi)));
  }
  return alt(...branches);
}

/** Possibly empty digit strings d with 0.d between the bounds. */
function fractionTail(lo: FractionBound | null, hi: FractionBound | null): RegexNode | null {
  if (isEmptyFraction(lo, hi)) return null;
  if (hi === null && lo === null) return anyDigits(0, -1);
  if (hi === null && lo !== null && lo.digits === "") return concat(anyDigits(0, -1), digitSet(1, 9), anyDigits(0, -1));
  if (hi !== null && hi.digits === "") return lo === null && !hi.strict ? repeat(digitSet(0, 0), 0, -1) : null;
  const run = sharedRun(lo, hi);
  if (run > 1) return runTail(lo, hi, run);
  return alt(admitsZero(lo, hi) ? EPSILON : null, fractionDigits(lo, hi));
}

/** The one bound's digits, or both bounds' common prefix when both have digits. */
function sharedRun(lo: FractionBound | null, hi: FractionBound | null): number {
  const a = lo?.digits ?? "";
  const b = hi?.digits ?? "";
  if (lo !== null && hi !== null) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    return a === "" || b === "" ? 0 : i;
  }
  const s = a || b;
  let i = 1;
  while (i < s.length && s[i] === s[0]) i++;
  return s === "" ? 0 : i;
}

/**
 * A run of `run` equal leading digits read at once. With both bounds the run is their common
 * prefix, a literal; with one bound every position in the run offers the same other branches,
 * so they become c{0,run-1} followed by those branches.
 */
function runTail(lo: FractionBound | null, hi: FractionBound | null, run: number): RegexNode | null {
  const s = lo?.digits || hi!.digits;
  const c = digitAt(s, 0);
  const after = (b: FractionBound | null): FractionBound | null => {
    if (b === null) return null;
    const rest = b.digits.slice(run);
    return rest === "" && b === lo && !b.strict ? null : { digits: rest, strict: b.strict };
  };
  const whole = concat(literal(s.slice(0, run)), fractionTail(after(lo), after(hi)));
  if (lo !== null && hi !== null) return whole;
  const others =
    lo !== null
      ? c < 9
        ? concat(digitSet(c + 1, 9), anyDigits(0, -1))
        : null
      : alt(EPSILON, c > 0 ? concat(digitSet(0, c - 1), anyDigits(0, -1)) : null);
  return alt(concat(repeat(digitSet(c, c), 0, run - 1), others), whole);
}

/** The optional fraction ("" or "." digits) whose value lies between the bounds. */
function fractionPart(lo: FractionBound | null, hi: FractionBound | null): RegexNode | null {
  if (isEmptyFraction(lo, hi)) return null;
  return alt(admitsZero(lo, hi) ? EPSILON : null, concat(charNode("."), fractionDigits(lo, hi)));
}

function fractionBound(digits: string, strict: boolean, isLower: boolean): FractionBound | null {
  return isLower && digits === "" && !strict ? null : { digits, strict };
}

/** Unsigned number texts with value between lo (≥ 0) and hi (null: unbounded); the interval is not empty. */
function unsignedNumbers(lo: Bound, hi: Bound | null): RegexNode | null {
  const low = splitDecimal(lo.value);
  const loFraction = fractionBound(low.fraction, lo.strict, true);
  const high = hi === null ? null : splitDecimal(hi.value);
  const hiFraction = hi === null ? null : fractionBound(splitDecimal(hi.value).fraction, hi.strict, false);
  if (high !== null && low.integer === high.integer) return concat(literal(low.integer), fractionPart(loFraction, hiFraction));
  // x ≥ A with A an integer is just an integer part ≥ A; otherwise I = A is its own case.
  const lowInMiddle = loFraction === null;
  return alt(
    lowInMiddle ? null : concat(literal(low.integer), fractionPart(loFraction, null)),
    concat(
      naturalRange({ digits: low.integer, strict: !lowInMiddle }, high === null ? null : { digits: high.integer, strict: true }),
      fractionPart(null, null),
    ),
    high === null ? null : concat(literal(high.integer), fractionPart(null, hiFraction)),
  );
}

/** The number texts (optional fraction, no exponent) whose exact value satisfies every bound; null when none does. */
export function numberRangeNode(bounds: NumericBounds): RegexNode | null {
  const lower = lowerBound(bounds);
  const upper = upperBound(bounds);
  if (isEmptyInterval(lower, upper)) return null;
  return signed(lower, upper, unsignedNumbers);
}

// ---------------------------------------------------------------------------------------------
// multipleOf: a DFA over (phase, remainder, fraction digits read)

const CLASS_MINUS = 1;
const CLASS_DOT = 2;
const CLASS_DIGIT0 = 3;
const NUM_CLASSES = 13;

/** multipleOf d as p / 10^q with p, q ≥ 0 integers. */
function divisorOf(text: string): { p: number; q: number } {
  const d = parseDecimal(text);
  if (d.mantissa <= 0n) throw new Error(`multipleOf must be positive: ${text}`);
  if (d.exponent >= 0 && digitCount(d.mantissa) + d.exponent > 6) throw new Error(`multipleOf too large: ${text}`);
  const p = d.exponent >= 0 ? d.mantissa * 10n ** BigInt(d.exponent) : d.mantissa;
  if (p > BigInt(MAX_MULTIPLE_OF))
    throw new Error(`multipleOf too large: ${text} (at most ${MAX_MULTIPLE_OF} after removing the decimal point)`);
  return { p: Number(p), q: d.exponent >= 0 ? 0 : -d.exponent };
}

/**
 * The full state graph before pruning. States: 0 start, 1 after "-", 2 after the integer "0",
 * 3 + r an integer part ≡ r (mod p), then 3 + p + j·p + R a fraction with j digits read (j
 * capped at q + 1: past q digits only zeros keep a multiple) and (value·10^j) ≡ R (mod p).
 */
function multipleOfGraph(p: number, q: number, integerOnly: boolean): { next: Int32Array; accepting: Uint8Array } {
  const fractionStates = integerOnly ? 0 : (q + 2) * p;
  const numStates = 3 + p + fractionStates;
  if (numStates > MAX_MULTIPLE_STATES) throw new Error(`multipleOf too large: it needs ${numStates} automaton states`);
  const next = new Int32Array(numStates * NUM_CLASSES).fill(-1);
  const accepting = new Uint8Array(numStates);
  const pow10 = powersOfTenModulo(p, q);
  const integer = (r: number): number => 3 + r;
  const fraction = (j: number, r: number): number => 3 + p + j * p + r;
  const set = (s: number, cls: number, t: number): void => {
    next[s * NUM_CLASSES + cls] = t;
  };
  set(0, CLASS_MINUS, 1);
  for (const s of [0, 1]) {
    set(s, CLASS_DIGIT0, 2);
    for (let d = 1; d <= 9; d++) set(s, CLASS_DIGIT0 + d, integer(d % p));
  }
  accepting[2] = 1;
  if (!integerOnly) set(2, CLASS_DOT, fraction(0, 0));
  for (let r = 0; r < p; r++) {
    accepting[integer(r)] = (r * pow10[q]!) % p === 0 ? 1 : 0;
    for (let d = 0; d <= 9; d++) set(integer(r), CLASS_DIGIT0 + d, integer((r * 10 + d) % p));
    if (!integerOnly) set(integer(r), CLASS_DOT, fraction(0, r));
  }
  if (integerOnly) return { next, accepting };
  for (let j = 0; j <= q + 1; j++) {
    for (let r = 0; r < p; r++) {
      const s = fraction(j, r);
      accepting[s] = j >= 1 && (r * pow10[Math.max(q - j, 0)]!) % p === 0 ? 1 : 0;
      if (j >= q) set(s, CLASS_DIGIT0, fraction(q + 1, r));
      else for (let d = 0; d <= 9; d++) set(s, CLASS_DIGIT0 + d, fraction(j + 1, (r * 10 + d) % p));
    }
  }
  return { next, accepting };
}

/** 10^k mod p for k = 0..q. */
function powersOfTenModulo(p: number, q: number): number[] {
  const out = [1 % p];
  for (let k = 1; k <= q; k++) out.push((out[k - 1]! * 10) % p);
  return out;
}

/** Fewest bytes from each state to acceptance (-1: dead), by a backward breadth-first search. */
function distancesToAccept(next: Int32Array, accepting: Uint8Array): Int32Array {
  const n = accepting.length;
  const inStart = new Int32Array(n + 1);
  for (const t of next) if (t >= 0) inStart[t + 1]!++;
  for (let s = 0; s < n; s++) inStart[s + 1]! += inStart[s]!;
  const fill = inStart.slice(0, n);
  const from = new Int32Array(inStart[n]!);
  for (let i = 0; i < next.length; i++) {
    const t = next[i]!;
    if (t >= 0) from[fill[t]!++] = (i / NUM_CLASSES) | 0;
  }
  const dist = new Int32Array(n).fill(-1);
  const queue = new Int32Array(n);
  let tail = 0;
  for (let s = 0; s < n; s++) if (accepting[s] === 1) (dist[s] = 0), (queue[tail++] = s);
  for (let head = 0; head < tail; head++) {
    const t = queue[head]!;
    for (let k = inStart[t]!; k < inStart[t + 1]!; k++) {
      const s = from[k]!;
      if (dist[s] === -1) (dist[s] = dist[t]! + 1), (queue[tail++] = s);
    }
  }
  return dist;
}

/** The live states reachable from state 0, numbered breadth-first, as a ByteDfa. */
function liveDfa(next: Int32Array, accepting: Uint8Array): ByteDfa {
  const dist = distancesToAccept(next, accepting);
  const id = new Int32Array(accepting.length).fill(-1);
  const order: number[] = [0];
  id[0] = 0;
  for (let head = 0; head < order.length; head++) {
    const s = order[head]!;
    for (let c = 0; c < NUM_CLASSES; c++) {
      const t = next[s * NUM_CLASSES + c]!;
      if (t >= 0 && dist[t]! >= 0 && id[t] === -1) (id[t] = order.length), order.push(t);
    }
  }
  const out = new Int32Array(order.length * NUM_CLASSES).fill(-1);
  order.forEach((s, i) => {
    for (let c = 0; c < NUM_CLASSES; c++) {
      const t = next[s * NUM_CLASSES + c]!;
      if (t >= 0 && dist[t]! >= 0) out[i * NUM_CLASSES + c] = id[t]!;
    }
  });
  return {
    numStates: order.length,
    start: 0,
    numClasses: NUM_CLASSES,
    byteClass: numberByteClasses(),
    next: out,
    accepting: Uint8Array.from(order, (s) => accepting[s]!),
    minBytesToAccept: Int32Array.from(order, (s) => dist[s]!),
  };
}

/** Class 0 every other byte, then "-", ".", and one class per digit. */
function numberByteClasses(): Uint8Array {
  const byteClass = new Uint8Array(256);
  byteClass[0x2d] = CLASS_MINUS;
  byteClass[0x2e] = CLASS_DOT;
  for (let d = 0; d <= 9; d++) byteClass[CHAR_0 + d] = CLASS_DIGIT0 + d;
  return byteClass;
}

/**
 * The integer (integerOnly) or number texts whose value is an exact multiple of `multipleOf`, a
 * positive JSON number. Throws a plain Error "multipleOf too large" past MAX_MULTIPLE_OF.
 */
export function multipleOfDfa(multipleOf: string, integerOnly: boolean): ByteDfa {
  const { p, q } = divisorOf(multipleOf);
  const { next, accepting } = multipleOfGraph(p, q, integerOnly);
  return liveDfa(next, accepting);
}

/** multipleOfDfa as a node to compose with others. */
export function multipleOfNode(multipleOf: string, integerOnly: boolean): RegexNode {
  return { kind: "dfa", dfa: multipleOfDfa(multipleOf, integerOnly) };
}
