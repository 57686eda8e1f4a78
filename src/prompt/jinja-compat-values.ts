// The values of @huggingface/jinja's runtime as Python Jinja2 sees them (jinja-compat.ts): their
// shape and classes, mappings with non-string keys, Markup strings, and Python's ==, <, `in`.

import { Environment } from "@huggingface/jinja";

/**
 * A runtime value of the library. Its classes are not exported, and under NodeNext its typings do
 * not resolve (dist/index.d.ts imports "./runtime" without an extension), so the shape is stated
 * here: `type` and `value` are public fields of every value class.
 */
export interface Value {
  readonly type: string;
  readonly value: unknown;
  __bool__(): { readonly value: boolean };
}
export type Dict = Map<string, Value>;
export type NativeFunction = (args: Value[], scope: Environment) => Value;

// The library's value classes, reached through values its public Environment.set returns.
export const probe = new Environment();
let probes = 0;
const classOf = <A extends unknown[]>(sample: unknown) => probe.set(`probe${probes++}`, sample).constructor as new (...args: A) => Value;
const StringValue = classOf<[string]>("");
const IntegerValue = classOf<[number]>(1);
const FloatValue = classOf<[number]>(1.5);
const BooleanValue = classOf<[boolean]>(true);
const NullValue = classOf<[]>(null);
const UndefinedValue = classOf<[]>(undefined);
const ArrayValue = classOf<[Value[]]>([]);
export const ObjectValue = classOf<[Dict]>({});
const FunctionValue = classOf<[NativeFunction]>(() => null);

export const str = (s: string): Value => new StringValue(s);
export const bool = (b: boolean): Value => new BooleanValue(b);
export const list = (items: Value[]): Value => new ArrayValue(items);
export const undef = (): Value => new UndefinedValue();
export const none = (): Value => new NullValue();
export const num = (n: number): Value => (Number.isInteger(n) ? new IntegerValue(n) : new FloatValue(n));
export const fn = (f: NativeFunction): Value => new FunctionValue(f);

export const isStr = (v: Value): boolean => v.type === "StringValue";
export const isUndef = (v: Value): boolean => v.type === "UndefinedValue";
export const isNone = (v: Value): boolean => v.type === "NullValue";
export const isList = (v: Value): boolean => v.type === "ArrayValue" || v.type === "TupleValue";
export const isDict = (v: Value): boolean => v.type === "ObjectValue" || v.type === "KeywordArgumentsValue";
export const isNumeric = (v: Value): boolean => v.type === "IntegerValue" || v.type === "FloatValue" || v.type === "BooleanValue";
export const textOf = (v: Value): string => v.value as string;
export const itemsOf = (v: Value): Value[] => v.value as Value[];
export const entriesOf = (v: Value): Dict => v.value as Dict;
export const numberOf = (v: Value): number => Number(v.value);
export const truthy = (v: Value): boolean => v.__bool__().value;
/** Original keys of mappings built from literals with non-string keys ({0: 0}), by the string the map stores. */
export const originalKeys = new WeakMap<Value, Map<string, Value>>();
/** Strings that are Markup (made by `|safe` or `|escape`, or a concatenation with one). */
export const markups = new WeakSet<Value>();

export function keyString(key: Value): string {
  if (key.type === "BooleanValue") return key.value ? "1" : "0";
  if (key.type === "IntegerValue" || key.type === "FloatValue") return pyFloatOrInt(numberOf(key), key.type === "FloatValue");
  if (isNone(key)) return "None";
  throw new Error(`unhashable type: '${pyTypeName(key)}'`);
}

/** The mapping's keys as Python sees them (integer keys stay integers). */
export function dictKeys(dict: Value): Value[] {
  const originals = originalKeys.get(dict);
  return [...entriesOf(dict).keys()].map((k) => originals?.get(k) ?? str(k));
}

/** `dict[key]` in Python: undefined when absent. */
export function dictLookup(dict: Value, key: Value): Value | undefined {
  const originals = originalKeys.get(dict);
  if (isStr(key)) return originals?.has(textOf(key)) ? undefined : entriesOf(dict).get(textOf(key));
  if (!isNumeric(key) && !isNone(key)) return undefined;
  const k = keyString(key);
  return originals?.has(k) ? entriesOf(dict).get(k) : undefined;
}

export function pyTypeName(v: Value): string {
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
export function pyFloatOrInt(n: number, isFloat: boolean): string {
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

export function markup(text: string): Value {
  const value = str(text);
  markups.add(value);
  return value;
}

/** Python's ordering (TypeError across kinds); strings compared by code point, lowercased unless case-sensitive. */
export function pyCompare(a: Value, b: Value, caseSensitive: boolean): number {
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
export function pyEquals(a: Value, b: Value): boolean {
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
export function pyContains(needle: Value, haystack: Value): boolean {
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
