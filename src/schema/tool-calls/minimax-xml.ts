/**
 * MiniMax-M3's objects and arrays in a call's arguments, as its template's `to_xml` writes them:
 * an object as one element per property, `N<k>value N</k>` (a null property left out), an array
 * as `N<item>value N</item>` per item, N the namespace token `]<]minimax[>[`; inside, a string raw
 * (without N), a number or boolean as JSON. The text alone cannot tell a string from a number
 * there, nor an empty object from an empty array, so the schema decides: an object or array
 * parameter, and each value inside one, must have one type (besides null, which is never written),
 * its keywords those of its type (an object's named `properties`, an array's `items`, `minItems`,
 * `maxItems`, a string's, number's, enum's and const's); anything else is refused by name.
 */
import type { ByteDfa, RegexNode } from "../../regex/index.js";
import { JsonSchemaError } from "../json-schema/errors.js";
import { isAnnotation } from "../json-schema/keywords.js";
import { isObject } from "../json-schema/spec.js";
import type { FunctionForm, ParameterForm, StringBranch } from "./arguments.js";
import { concat, literal } from "./nodes.js";

/** What the leaves are compiled with (tagged.ts's ValueCompiler, which builds these values). */
export interface LeafCompiler {
  rawString(fn: FunctionForm, p: ParameterForm, branch: StringBranch): ByteDfa | null;
  schemaLanguage(fn: FunctionForm, p: ParameterForm, schema: unknown, pointer: string): ByteDfa | null;
}

/** MiniMax-M3's namespace token (the same as tagged.ts's MINIMAX_NS). */
const NS = "]<]minimax[>[";
/** Most items of an array written one by one (a larger maxItems is written as unbounded). */
const MAX_COUNTED_ITEMS = 64;
/** Keywords a value may have beside `type`, `enum`, `const` (its own type's). */
const KEYWORDS: Record<string, readonly string[]> = {
  object: ["properties", "required", "additionalProperties"],
  array: ["items", "minItems", "maxItems"],
  string: ["minLength", "maxLength", "pattern", "format"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  boolean: [],
};
const CONTEXT_WORDS = new Set(["$schema", "$id", "$defs", "definitions"]);
/** Characters an element's name cannot hold (they would end its tag, or read as its end). */
const NAME_BREAKING = /[<>\n"/]/;

const element = (name: string, value: RegexNode): RegexNode => concat(literal(`${NS}<${name}>`), value, literal(`${NS}</${name}>`));

/** A value's one type (null left out), or why it has none. */
function typeOf(schema: Readonly<Record<string, unknown>>): string | null {
  const listed = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : [];
  const types = listed.filter((t) => t !== "null");
  return types.length === 1 && typeof types[0] === "string" && Object.hasOwn(KEYWORDS, types[0]) ? types[0] : null;
}

/** An object or array parameter's values in MiniMax-M3's elements (see the module comment). */
export class MiniMaxXmlValues {
  constructor(
    private readonly compiler: LeafCompiler,
    private readonly fn: FunctionForm,
    private readonly p: ParameterForm,
  ) {}

  private refuse(pointer: string, keyword: string, why: string): never {
    throw new JsonSchemaError(
      `function ${JSON.stringify(this.fn.name)}, parameter ${JSON.stringify(this.p.name)}: ${why} (the minimax-m3 call format writes objects and arrays as nested elements)`,
      pointer,
      keyword,
    );
  }

  /** The parameter's value (null: none can be written). */
  top(): RegexNode | null {
    return this.value(this.p.jsonSchema, this.p.jsonPointer);
  }

  /** A value of `schema` between its element's tags (null: none can be written). */
  private value(given: unknown, pointer: string): RegexNode | null {
    if (!isObject(given)) return this.refuse(pointer, "type", "each value needs a schema of one type");
    const schema = given;
    const type = typeOf(schema);
    if (type === null)
      return this.refuse(`${pointer}/type`, "type", "each value needs one type besides null: the elements do not tell types apart");
    const allowed = new Set(["type", "enum", "const", ...KEYWORDS[type]!]);
    for (const word of Object.keys(schema))
      if (!isAnnotation(word) && !CONTEXT_WORDS.has(word) && !allowed.has(word))
        this.refuse(`${pointer}/${word}`, word, `${word} is not written in nested elements`);
    if (type === "object") return this.object(schema, pointer);
    if (type === "array") return this.array(schema, pointer);
    const leaf = { ...schema, type };
    const dfa =
      type === "string"
        ? this.compiler.rawString(this.fn, this.p, { schema: leaf, pointer })
        : this.compiler.schemaLanguage(this.fn, this.p, leaf, pointer);
    return dfa === null ? null : { kind: "dfa", dfa };
  }

  /** The named properties in the order of `properties`, the required ones always; a property that can only be null never. */
  private object(schema: Readonly<Record<string, unknown>>, pointer: string): RegexNode | null {
    if ("additionalProperties" in schema && schema.additionalProperties !== false)
      this.refuse(
        `${pointer}/additionalProperties`,
        "additionalProperties",
        "only named properties are written: additionalProperties must be false or absent",
      );
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    for (const name of required)
      if (typeof name !== "string" || !Object.hasOwn(properties, name))
        this.refuse(`${pointer}/required`, "required", `${JSON.stringify(name)} is required but not among the properties`);
    const items: RegexNode[] = [];
    for (const [name, sub] of Object.entries(properties)) {
      const at = `${pointer}/properties/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`;
      if (NAME_BREAKING.test(name) || name.length === 0 || name.includes(NS))
        this.refuse(at, "properties", `a property name is an element's name: it cannot be empty or hold "<", ">", '"', "/" or a newline`);
      const onlyNull =
        isObject(sub) && (sub.type === "null" || (Array.isArray(sub.type) && sub.type.length === 1 && sub.type[0] === "null"));
      const value = onlyNull ? null : this.value(sub, at);
      if (value === null) {
        if (required.includes(name)) return null;
        continue;
      }
      const tagged = element(name, value);
      items.push(required.includes(name) ? tagged : { kind: "repeat", item: tagged, min: 0, max: 1 });
    }
    return concat(...items);
  }

  /** The items, each in an `item` element. */
  private array(schema: Readonly<Record<string, unknown>>, pointer: string): RegexNode | null {
    const min = typeof schema.minItems === "number" ? schema.minItems : 0;
    let max = typeof schema.maxItems === "number" ? schema.maxItems : -1;
    if (max > MAX_COUNTED_ITEMS) max = Math.max(min, -1);
    if (max >= 0 && max < min) return null;
    if (min > MAX_COUNTED_ITEMS) this.refuse(`${pointer}/minItems`, "minItems", `more than ${MAX_COUNTED_ITEMS} items are not counted`);
    if (!("items" in schema)) this.refuse(pointer, "items", "an array needs the schema of its items");
    const item = this.value(schema.items, `${pointer}/items`);
    if (item === null) return min === 0 ? concat() : null;
    return { kind: "repeat", item: element("item", item), min, max };
  }
}

/**
 * Reads an object or array parameter's value from `at` (just after its opening tag): its JSON text
 * and where it ends (at the parameter's closing tag). `schema` is the parameter's (as the language
 * above was built from it).
 */
export function readMiniMaxXml(text: string, at: number, schema: unknown): { json: string; end: number } {
  const fail = (what: string): never => {
    throw new Error(`reading a minimax-m3 argument: ${what} at ${at}`);
  };
  const read = (sub: unknown): string => {
    const s = isObject(sub) ? sub : {};
    const type = typeOf(s);
    if (type === "object" || type === "array") {
      const properties = isObject(s.properties) ? s.properties : {};
      const parts: string[] = [];
      while (text.startsWith(`${NS}<`, at) && !text.startsWith(`${NS}</`, at)) {
        const open = at + NS.length + 1;
        const close = text.indexOf(">", open);
        if (close < 0) fail("an unclosed tag");
        const name = text.slice(open, close);
        at = close + 1;
        const value = read(type === "array" ? s.items : properties[name]);
        const end = `${NS}</${name}>`;
        if (!text.startsWith(end, at)) fail(`expected ${JSON.stringify(end)}`);
        at += end.length;
        parts.push(type === "array" ? value : `${JSON.stringify(name)}:${value}`);
      }
      return type === "array" ? `[${parts.join(",")}]` : `{${parts.join(",")}}`;
    }
    const stop = text.indexOf(NS, at);
    if (stop < 0) fail("a value without its closing tag");
    const raw = text.slice(at, stop);
    at = stop;
    return type === "string" ? JSON.stringify(raw) : raw;
  };
  const json = read(schema);
  return { json, end: at };
}
