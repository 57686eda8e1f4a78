/**
 * Gemma 4's tool calls ("gemma4"), as its template writes an assistant turn's calls:
 * `<|tool_call>call:f{city:<|"|>Oslo<|"|>,days:3}<tool_call|>`, one after another. The arguments
 * are written in the order of their names, case left aside (Jinja's `dictsort`); a string between
 * `<|"|>` quotes, raw (it cannot hold the quote), with its schema's enum, const, length, pattern and
 * format enforced on the raw text; a number as JSON; a boolean `true`/`false`; a null `None`
 * (Jinja's rendering of it; JSON's `null` is read as well); an object `{k:v,…}` (its keys bare, in
 * the order of their names as above), an array `[v,…]`. Inside an object or an array a value is
 * written the same way, of a schema of `type` and its keywords: an object's named `properties`
 * (`additionalProperties` false or absent: only those are written), an array's `items`,
 * `minItems`, `maxItems`, a string's, number's, enum's and const's keywords; `anyOf` of such
 * schemas. Any other keyword there (`oneOf`, `not`, `$ref`, `prefixItems`, `uniqueItems`, …) is
 * refused by name, as are parameters that are not named `properties` (arguments.ts). The
 * markers are text tokens in Gemma 4's vocabulary.
 */
import { matchesString, type RegexLimits, type RegexNode } from "../../regex/index.js";
import type { JsonSchemaOptions } from "../json-schema/compile.js";
import { JsonSchemaError, JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "../json-schema/errors.js";
import { isAnnotation } from "../json-schema/keywords.js";
import { isObject } from "../json-schema/spec.js";
import { type FunctionForm, functionForm, type ParameterForm } from "./arguments.js";
import { type KeywordNotation, keywordArguments, readKeywordArguments } from "./keywords.js";
import { ValueCompiler } from "./tagged.js";
import { concat, literal } from "./nodes.js";

export const GEMMA_CALL_OPEN = "<|tool_call>";
const CALL_CLOSE = "<tool_call|>";
const QUOTE = '<|"|>';
const NOTATION: KeywordNotation = { assign: ":", separator: ",", close: "}", quotes: [QUOTE], nested: true };
/** Most items of an array written one by one (a larger maxItems is written as unbounded). */
const MAX_COUNTED_ITEMS = 64;

/** Names in the order `dictsort` writes them: case left aside (ties keep their order). */
function byName<T>(items: readonly T[], name: (item: T) => string): T[] {
  return items
    .map((item, i) => ({ item, i, key: name(item).toLowerCase() }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.i - b.i))
    .map((x) => x.item);
}

const KEY_BREAKING = /[<>\n{}[\]:,"]/;
/** Keywords a value inside an object or array may have beside `type` (their own type's). */
const NESTED_KEYWORDS: Record<string, readonly string[]> = {
  object: ["properties", "required", "additionalProperties"],
  array: ["items", "minItems", "maxItems"],
  string: ["minLength", "maxLength", "pattern", "format"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  boolean: [],
  null: [],
};
const JSON_TYPES = ["null", "boolean", "integer", "number", "string", "object", "array"] as const;
type JsonTypeName = (typeof JSON_TYPES)[number];
const CONTEXT_WORDS = new Set(["$schema", "$id", "$defs", "definitions"]);
/** Every keyword a value's schema may have here, whatever its type. */
const ANY_TYPE_WORDS = new Set(["type", "enum", "const", ...Object.values(NESTED_KEYWORDS).flat()]);

/** A JSON value's type, as a schema's `type` names it. */
function typeOf(value: unknown): JsonTypeName {
  if (value === null) return "null";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value === "string" ? "string" : Array.isArray(value) ? "array" : "object";
}

/** Whether a schema may allow an object or an array (no type and no members: any value). */
function mayBeStructured(schema: unknown): boolean {
  if (!isObject(schema)) return schema !== false;
  const listed = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : null;
  if (listed !== null) return listed.includes("object") || listed.includes("array");
  const members = "const" in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : null;
  if (members !== null) return members.some((m) => isObject(m) || Array.isArray(m));
  return true;
}

/** A parameter's values in Gemma's notation: strings quoted at any depth, objects and arrays as above. */
class GemmaValues {
  constructor(
    private readonly compiler: ValueCompiler,
    private readonly fn: FunctionForm,
    private readonly p: ParameterForm,
  ) {}

  private refuse(pointer: string, keyword: string, why: string): never {
    throw new JsonSchemaError(
      `function ${JSON.stringify(this.fn.name)}, parameter ${JSON.stringify(this.p.name)}: ${why}`,
      pointer,
      keyword,
    );
  }

  /** The parameter's value (null: none can be written). */
  top(): RegexNode | null {
    const items: RegexNode[] = [];
    for (const branch of this.p.strings) {
      const raw = this.compiler.rawString(this.fn, this.p, branch);
      if (raw !== null) items.push(concat(literal(QUOTE), { kind: "dfa", dfa: raw }, literal(QUOTE)));
    }
    if (this.p.jsonSchema !== null) {
      const other = this.value(this.p.jsonSchema, this.p.jsonPointer, true);
      if (other !== null) items.push(other);
    }
    return items.length === 0 ? null : { kind: "alt", items };
  }

  /** A value of `schema` (top: the parameter's own non-string values, whose string branches are the caller's). */
  private value(schema: unknown, pointer: string, top = false): RegexNode | null {
    if (!isObject(schema)) return this.refuse(pointer, "type", "inside an object or array a value needs a schema of a type");
    const words = Object.keys(schema).filter((k) => !isAnnotation(k) && !CONTEXT_WORDS.has(k));
    for (const combinator of ["anyOf", "oneOf"] as const) {
      if (!(combinator in schema)) continue;
      const branches = schema[combinator];
      if (words.length !== 1 || !Array.isArray(branches))
        return this.refuse(
          `${pointer}/${combinator}`,
          combinator,
          `${combinator} beside other keywords is not written in Gemma's notation`,
        );
      if (combinator === "oneOf") {
        // Exactly one branch: exact through the JSON front end when no branch is an object or array.
        if (!top || branches.some(mayBeStructured))
          return this.refuse(`${pointer}/oneOf`, "oneOf", "oneOf of objects or arrays, or inside them, is not written in Gemma's notation");
        return this.bare(schema, pointer);
      }
      const items = branches.map((b, i) => this.value(b, `${pointer}/anyOf/${i}`, top)).filter((n): n is RegexNode => n !== null);
      return items.length === 0 ? null : { kind: "alt", items };
    }
    const listed = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : null;
    const members = "const" in schema ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : null;
    if (listed === null && members === null) {
      const foreign = words.find((w) => !ANY_TYPE_WORDS.has(w));
      if (foreign !== undefined) return this.refuse(`${pointer}/${foreign}`, foreign, `${foreign} is not written in Gemma's notation`);
      return this.refuse(pointer, "type", "a value of any type is not written in Gemma's notation: give it a type");
    }
    const types = (listed ?? JSON_TYPES).filter((t): t is JsonTypeName => (JSON_TYPES as readonly unknown[]).includes(t));
    // Each keyword of a type the value may have (at the top, the string keywords too: the caller's branches read them).
    const allowed = new Set([
      "type",
      "enum",
      "const",
      ...[...types, ...(top ? ["string" as const] : [])].flatMap((t) => NESTED_KEYWORDS[t]),
    ]);
    for (const word of words)
      if (!allowed.has(word)) return this.refuse(`${pointer}/${word}`, word, `${word} is not written in Gemma's notation`);
    if (members !== null) {
      const where = "const" in schema ? "const" : "enum";
      if (members.some((m) => isObject(m) || Array.isArray(m)))
        return this.refuse(`${pointer}/${where}`, where, "an object or array member is not written in Gemma's notation");
      const texts = members
        .filter(
          (m) => !(top && typeof m === "string") && (types.includes(typeOf(m)) || (typeOf(m) === "integer" && types.includes("number"))),
        )
        .map((m) => this.scalar(m))
        .filter((t): t is string => t !== null);
      return texts.length === 0 ? null : { kind: "alt", items: texts.map(literal) };
    }
    const items: RegexNode[] = [];
    if (!top && types.includes("string")) {
      const raw = this.compiler.rawString(this.fn, this.p, { schema: { ...schema, type: "string" }, pointer });
      if (raw !== null) items.push(concat(literal(QUOTE), { kind: "dfa", dfa: raw }, literal(QUOTE)));
    }
    const bare = types.filter((t) => t !== "object" && t !== "array" && t !== "string");
    if (bare.length > 0) {
      const scalars = this.bare({ ...schema, type: bare }, pointer);
      if (scalars !== null) items.push(scalars);
    }
    if (types.includes("object")) {
      const object = this.object(schema, pointer);
      if (object !== null) items.push(object);
    }
    if (types.includes("array")) {
      const array = this.array(schema, pointer);
      if (array !== null) items.push(array);
    }
    return items.length === 0 ? null : { kind: "alt", items };
  }

  /** Numbers, booleans and null of `schema` (no strings, objects or arrays in it): JSON's texts, and `None` for null. */
  private bare(schema: Readonly<Record<string, unknown>>, pointer: string): RegexNode | null {
    const json = this.compiler.schemaLanguage(this.fn, this.p, schema, pointer);
    if (json === null) return null;
    const choices: RegexNode[] = [{ kind: "dfa", dfa: json }];
    if (matchesString(json, "null")) choices.push(literal("None"));
    return { kind: "alt", items: choices };
  }

  /** `{k:v,…}`: the named properties in the order of their names, the required ones always. */
  private object(schema: Readonly<Record<string, unknown>>, pointer: string): RegexNode | null {
    if ("additionalProperties" in schema && schema.additionalProperties !== false)
      return this.refuse(
        `${pointer}/additionalProperties`,
        "additionalProperties",
        "only named properties are written: additionalProperties must be false or absent",
      );
    for (const word of [
      "patternProperties",
      "minProperties",
      "maxProperties",
      "propertyNames",
      "dependentRequired",
      "dependentSchemas",
      "unevaluatedProperties",
    ])
      if (word in schema) return this.refuse(`${pointer}/${word}`, word, `${word} is not written in Gemma's notation`);
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
    for (const name of required)
      if (typeof name !== "string" || !Object.hasOwn(properties, name))
        return this.refuse(`${pointer}/required`, "required", `${JSON.stringify(name)} is required but not among the properties`);
    const items: { name: string; value: RegexNode; required: boolean }[] = [];
    for (const name of byName(Object.keys(properties), (n) => n)) {
      if (name.length === 0 || KEY_BREAKING.test(name))
        return this.refuse(
          `${pointer}/properties`,
          "properties",
          `a key is written bare: ${JSON.stringify(name)} cannot be empty or hold "<", ">", "{", "}", "[", "]", ":", ",", '"' or a newline`,
        );
      const value = this.value(properties[name], `${pointer}/properties/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`);
      const isRequired = required.includes(name);
      if (value === null) {
        if (isRequired) return null;
        continue;
      }
      items.push({ name, value, required: isRequired });
    }
    return concat(literal("{"), keywordArguments(items, NOTATION), literal("}"));
  }

  /** `[v,…]`: its items, as many as minItems and maxItems allow. */
  private array(schema: Readonly<Record<string, unknown>>, pointer: string): RegexNode | null {
    for (const word of ["prefixItems", "additionalItems", "contains", "minContains", "maxContains", "uniqueItems", "unevaluatedItems"])
      if (word in schema) return this.refuse(`${pointer}/${word}`, word, `${word} is not written in Gemma's notation`);
    if (!("items" in schema) || Array.isArray(schema.items))
      return this.refuse(
        pointer,
        "items",
        "a value that may be an array is written in Gemma's notation when its items have one schema (give the value a type, or the array its items)",
      );
    const min = typeof schema.minItems === "number" ? schema.minItems : 0;
    const max = typeof schema.maxItems === "number" && schema.maxItems <= MAX_COUNTED_ITEMS ? schema.maxItems : -1;
    if (max !== -1 && max < min) return null;
    const item = this.value(schema.items, `${pointer}/items`);
    const empty = concat(literal("[]"));
    if (item === null) return min === 0 ? empty : null;
    const rest: RegexNode = {
      kind: "repeat",
      item: concat(literal(","), item),
      min: Math.max(0, min - 1),
      max: max === -1 ? -1 : Math.max(0, max - 1),
    };
    const some = concat(literal("["), item, rest, literal("]"));
    if (max === 0) return empty;
    return min === 0 ? { kind: "alt", items: [empty, some] } : some;
  }

  /** A scalar as the template writes it (null: a string holding the quote cannot be written). */
  private scalar(value: unknown): string | null {
    if (typeof value === "string") return value.includes(QUOTE) ? null : `${QUOTE}${value}${QUOTE}`;
    if (value === null) return "None";
    return JSON.stringify(value);
  }
}

/** One call of one of `tools` (every required parameter, optional ones in their place, "," between). */
export function gemmaCallLanguage(
  tools: readonly { readonly name: string; readonly parameters?: unknown }[],
  options: JsonSchemaOptions & { limits?: RegexLimits },
): { call: RegexNode; warnings: JsonSchemaWarning[] } {
  const compiler = new ValueCompiler("gemma4", options, QUOTE);
  const calls = tools.map((tool): RegexNode => {
    const fn = functionForm(tool, "gemma4");
    const items: { name: string; value: RegexNode; required: boolean }[] = [];
    for (const p of byName(fn.parameters, (q) => q.name)) {
      const value = new GemmaValues(compiler, fn, p).top();
      if (value === null) {
        if (p.required) throw new JsonSchemaUnsatisfiableError(`${p.pointer} (function ${JSON.stringify(fn.name)})`);
        continue;
      }
      items.push({ name: p.name, value, required: p.required });
    }
    return concat(literal(`${GEMMA_CALL_OPEN}call:${fn.name}{`), keywordArguments(items, NOTATION), literal(`}${CALL_CLOSE}`));
  });
  return { call: calls.length === 1 ? calls[0]! : { kind: "alt", items: calls }, warnings: compiler.warnings };
}

/** The calls of a reply of the language above (from its first `<|tool_call>` on), arguments as JSON text in the order written. */
export function parseGemmaCalls(text: string): { name: string; arguments: string }[] {
  const calls: { name: string; arguments: string }[] = [];
  const prefix = `${GEMMA_CALL_OPEN}call:`;
  for (let at = 0; text.startsWith(prefix, at); ) {
    const brace = text.indexOf("{", at + prefix.length);
    if (brace < 0) throw new Error(`parseGemmaCalls: no arguments at ${at}`);
    const name = text.slice(at + prefix.length, brace);
    const { json, end } = readKeywordArguments(text, brace + 1, NOTATION);
    if (!text.startsWith(CALL_CLOSE, end)) throw new Error(`parseGemmaCalls: expected ${CALL_CLOSE} at ${end}`);
    at = end + CALL_CLOSE.length;
    calls.push({ name, arguments: json });
  }
  return calls;
}
