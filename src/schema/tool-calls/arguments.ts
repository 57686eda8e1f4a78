/**
 * A function's arguments as the tagged tool-call styles write them ("xml-function":
 * `<parameter=p>\nvalue\n</parameter>`, "glm": `<arg_key>p</arg_key><arg_value>value</arg_value>`,
 * "seed-oss": `<parameter=p>value</parameter>`, "minimax-m2": `<parameter name="p">value</parameter>`,
 * "minimax-m3": `]<]minimax[>[<p>value]<]minimax[>[</p>`, DeepSeek's DSML
 * `<｜DSML｜parameter name="p" string="true|false">value</｜DSML｜parameter>`): one tag per parameter, in the order of
 * the schema's `properties`, its value raw text when it is a string and otherwise as the template
 * writes it (`v if v is string else v|tojson`, or Python's `v|string`; see VALUE_RULES).
 *
 * Here: which parameters a function has and how each value may be written (its string branches,
 * written raw; its other types, written as JSON), read from the `parameters` schema, or a
 * JsonSchemaError naming the keyword this form cannot say exactly. A value that may be a string
 * or something else is told apart by its text: what reads as JSON of one of its other types
 * (`reservedPattern`) is that value, anything else the string, so a raw string never spells one.
 */
import { escapePointer } from "../json-schema/document.js";
import { JsonSchemaError } from "../json-schema/errors.js";
import { isAnnotation, validationKeywords } from "../json-schema/keywords.js";
import { isObject } from "../json-schema/spec.js";
import { jsonOfLiteral } from "./python-literal.js";

/** A tool-call style whose calls tag each argument (the others write the arguments as one JSON object). */
export type TaggedToolCallStyle =
  | "xml-function"
  | "glm"
  | "seed-oss"
  | "minimax-m2"
  | "minimax-m3"
  | "deepseek-dsml"
  | "deepseek-v4"
  | "hunyuan"
  | "minicpm5"
  | "kimi-k3"
  | "muse";

/** A style whose calls write each argument on its own: the tagged styles, Gemma 4's `call:f{k:v,…}`, LFM2's `f(k=v, …)`. */
export type ArgumentStyle = TaggedToolCallStyle | "gemma4" | "lfm2";

/** How a tagged style's template writes a value that is not a string (a string is always raw text). */
export interface ValueRules {
  /** `value | string` (Python's str): `True`, `False`, `None` are written beside JSON's spellings. */
  readonly python: boolean;
  /** Whether a null can be written (MiniMax-M3 leaves a None argument out: it is never a value). */
  readonly nulls: boolean;
  /** null: objects and arrays are written as JSON; else why they cannot be read (a parameter that may be one is refused). */
  readonly structured: string | null;
  /** With pythonLiterals, objects are written as JSON even so (LFM2's template: `tojson` for a mapping, Python's repr for a list). Absent: false. */
  readonly objectsAsJson?: boolean;
  /**
   * Objects and arrays (and what they hold) may be written as Python's str writes them,
   * `{'k': True}`, beside JSON (python-literal.ts). Absent: false.
   */
  readonly pythonLiterals?: boolean;
  /** Objects and arrays are written as nested elements (MiniMax-M3, minimax-xml.ts). Absent: false. */
  readonly xmlStructured?: boolean;
  /** Characters a function or parameter name cannot hold: they would end its tag or attribute. */
  readonly nameBreaking: RegExp;
  /** How the refusals show them. */
  readonly nameBreakingText: string;
}

const TAG_BREAKING = /[<>\n]/;
const ATTRIBUTE_BREAKING = /[<>\n"]/;
const TAG_TEXT = '"<", ">" or a newline';
const ATTRIBUTE_TEXT = '"<", ">", \'"\' or a newline';

export const VALUE_RULES: Record<ArgumentStyle, ValueRules> = {
  "xml-function": { python: true, nulls: true, structured: null, nameBreaking: TAG_BREAKING, nameBreakingText: TAG_TEXT },
  glm: { python: false, nulls: true, structured: null, nameBreaking: TAG_BREAKING, nameBreakingText: TAG_TEXT },
  hunyuan: { python: false, nulls: true, structured: null, nameBreaking: TAG_BREAKING, nameBreakingText: TAG_TEXT },
  minicpm5: {
    python: true,
    nulls: true,
    structured: null,
    pythonLiterals: true,
    nameBreaking: ATTRIBUTE_BREAKING,
    nameBreakingText: ATTRIBUTE_TEXT,
  },
  // Gemma 4 writes `None` for a null (Jinja's rendering of it), objects and arrays in its own notation.
  gemma4: {
    python: true,
    nulls: true,
    // Objects and arrays in its own notation: gemma.ts writes them.
    structured: null,
    nameBreaking: /[<>\n{}:,"]/,
    nameBreakingText: `"<", ">", "{", "}", ":", ",", '"' or a newline`,
  },
  // LFM2: Python keyword arguments, `value | string` for numbers, booleans and None.
  lfm2: {
    python: true,
    nulls: true,
    structured: null,
    objectsAsJson: true,
    pythonLiterals: true,
    nameBreaking: /[<>\n()=,'" ]/,
    nameBreakingText: `"<", ">", "(", ")", "=", ",", a quote, a space or a newline`,
  },
  "seed-oss": {
    python: true,
    nulls: true,
    structured: null,
    pythonLiterals: true,
    nameBreaking: TAG_BREAKING,
    nameBreakingText: TAG_TEXT,
  },
  "minimax-m2": { python: false, nulls: true, structured: null, nameBreaking: ATTRIBUTE_BREAKING, nameBreakingText: ATTRIBUTE_TEXT },
  muse: { python: false, nulls: true, structured: null, nameBreaking: ATTRIBUTE_BREAKING, nameBreakingText: ATTRIBUTE_TEXT },
  "deepseek-dsml": { python: false, nulls: true, structured: null, nameBreaking: ATTRIBUTE_BREAKING, nameBreakingText: ATTRIBUTE_TEXT },
  "deepseek-v4": { python: false, nulls: true, structured: null, nameBreaking: ATTRIBUTE_BREAKING, nameBreakingText: ATTRIBUTE_TEXT },
  // Kimi-K3 writes names in attributes, escaping & and " (refused here instead).
  "kimi-k3": {
    python: false,
    nulls: true,
    structured: null,
    nameBreaking: /[<>\n"&]/,
    nameBreakingText: `"<", ">", '"', "&" or a newline`,
  },
  "minimax-m3": {
    python: false,
    nulls: false,
    structured: null,
    xmlStructured: true,
    // A parameter's tag is `<p>`, its end `</p>`: a name with "/" could read as an end.
    nameBreaking: /[<>\n"/]/,
    nameBreakingText: `"<", ">", '"', "/" or a newline`,
  },
};

export type JsonType = "null" | "boolean" | "integer" | "number" | "string" | "object" | "array";
const JSON_TYPES: readonly JsonType[] = ["null", "boolean", "integer", "number", "string", "object", "array"];

/** A schema (or branch) whose string values are written raw, and where it is in the parameters schema. */
export interface StringBranch {
  readonly schema: Readonly<Record<string, unknown>>;
  readonly pointer: string;
}

export interface ParameterForm {
  readonly name: string;
  readonly required: boolean;
  /** "/properties/<name>" in the function's parameters schema. */
  readonly pointer: string;
  /** The branches under which the value may be a string, written raw (none: never a string). */
  readonly strings: readonly StringBranch[];
  /** The value's other types, written as JSON. */
  readonly jsonTypes: readonly JsonType[];
  /** The JSON Schema of its non-string values (null: it has none), read with the parameters' definitions. */
  readonly jsonSchema: unknown;
  /** Where jsonSchema's keywords are in the parameters schema (its errors name them there). */
  readonly jsonPointer: string;
}

export interface FunctionForm {
  readonly name: string;
  readonly parameters: readonly ParameterForm[];
  /** `$schema`, `$id`, `$defs`, `definitions` of the parameters schema: what a parameter's schema is read with. */
  readonly context: Readonly<Record<string, unknown>>;
}

/** Every keyword that affects validity in some draft. */
const VALIDATION = new Set<string>([4, 6, 7, 2019, 2020].flatMap((d) => [...validationKeywords(d as 4)]));
/**
 * Keywords that apply to values of every type, refused in a schema whose value may be a string: a
 * raw string is checked against type, enum, const, minLength, maxLength, pattern and format (the
 * other keywords apply to other types only).
 */
const ANY_TYPE_KEYWORDS = ["allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef", "$recursiveRef"];
const CONTEXT_KEYWORDS = ["$schema", "$id", "$defs", "definitions"];
const MAX_REFERENCES = 32;

function refuse(fn: string, pointer: string, keyword: string, message: string): never {
  throw new JsonSchemaError(`function ${JSON.stringify(fn)}: ${message}`, pointer, keyword);
}

const validationWords = (schema: Readonly<Record<string, unknown>>): string[] =>
  Object.keys(schema).filter((k) => VALIDATION.has(k) && !isAnnotation(k));

/**
 * The parameters of a declared function as the tagged styles write them. Refused (JsonSchemaError,
 * naming the keyword): parameters that are not an object schema of named `properties`
 * (`additionalProperties` true or a schema, `patternProperties`, `minProperties`, combinators…),
 * a `required` name that is not a property, a name that would end its tag, a value that may be a
 * string under a keyword the raw string cannot be checked against, and one that may be an object
 * or an array where the style does not write them as JSON (see valueForm).
 */
export function functionForm(tool: { readonly name: string; readonly parameters?: unknown }, style: ArgumentStyle): FunctionForm {
  const fn = tool.name;
  const rules = VALUE_RULES[style];
  if (rules.nameBreaking.test(fn) || fn.length === 0)
    refuse(
      fn,
      "",
      "name",
      `the ${style} call format writes the function name in a tag: it cannot be empty or hold ${rules.nameBreakingText}`,
    );
  const schema = tool.parameters ?? { type: "object", properties: {}, additionalProperties: false };
  if (schema === true) return { name: fn, parameters: [], context: {} };
  if (!isObject(schema)) refuse(fn, "", "type", "parameters must be an object schema");
  for (const word of validationWords(schema)) {
    if (word === "properties" || word === "required") continue;
    if (word === "type") {
      if (schema.type === "object" || (Array.isArray(schema.type) && schema.type.length === 1 && schema.type[0] === "object")) continue;
      refuse(fn, "/type", "type", `parameters must be of type "object" (got ${JSON.stringify(schema.type)})`);
    }
    if (word === "additionalProperties") {
      if (schema.additionalProperties === false) continue;
      refuse(
        fn,
        "/additionalProperties",
        "additionalProperties",
        `the ${style} tool-call format writes only the parameters named in properties; additionalProperties must be false or absent`,
      );
    }
    refuse(
      fn,
      `/${escapePointer(word)}`,
      word,
      `the ${style} tool-call format writes named parameters only; ${word} on the parameters is not supported`,
    );
  }
  const properties = schema.properties ?? {};
  if (!isObject(properties)) refuse(fn, "/properties", "properties", "must be an object");
  const required = schema.required ?? [];
  if (!Array.isArray(required) || required.some((r) => typeof r !== "string"))
    refuse(fn, "/required", "required", "must be an array of strings");
  for (const name of required as string[]) {
    if (!Object.hasOwn(properties, name))
      refuse(fn, "/required", "required", `${JSON.stringify(name)} is required but not among the properties, so it could never be written`);
  }
  const context: Record<string, unknown> = {};
  for (const k of CONTEXT_KEYWORDS) if (k in schema) context[k] = schema[k];
  const parameters = Object.entries(properties).map(([name, sub]): ParameterForm => {
    const pointer = `/properties/${escapePointer(name)}`;
    if (rules.nameBreaking.test(name) || name.length === 0)
      refuse(
        fn,
        pointer,
        "properties",
        `the ${style} call format writes each parameter name in a tag: it cannot be empty or hold ${rules.nameBreakingText}`,
      );
    const form = valueForm({ fn, style, rules, root: schema }, sub, pointer);
    if (rules.xmlStructured && form.strings.length > 0 && form.jsonTypes.some((t) => t === "object" || t === "array"))
      refuse(
        fn,
        pointer,
        "type",
        `this value may be a string or an object or array, which the ${style} call format writes alike (raw text and nested elements); give it one of them`,
      );
    return { name, required: (required as string[]).includes(name), pointer, ...form };
  });
  return { name: fn, parameters, context };
}

interface ValueForm {
  strings: StringBranch[];
  jsonTypes: JsonType[];
  jsonSchema: unknown;
  jsonPointer: string;
}

/** What valueForm reads a parameter's schema with. */
interface FormContext {
  readonly fn: string;
  readonly style: ArgumentStyle;
  readonly rules: ValueRules;
  /** The parameters schema (local `$ref`s are read in it). */
  readonly root: Readonly<Record<string, unknown>>;
}

/**
 * How a parameter's value is written: the branches that allow strings (raw text, checked against
 * the branch's string keywords) and the JSON Schema of its other values. A top-level `anyOf` /
 * `oneOf` (Optional[str] is `anyOf: [{type: string}, {type: null}]`) is split branch by branch;
 * any other keyword that applies to every type (allOf, not, if, a nested combinator, `$ref` with
 * siblings) in a schema that allows strings is refused, as is a `oneOf` with two string branches,
 * and a schema that allows objects or arrays where the style does not write them as JSON. Where
 * the style cannot write a null (MiniMax-M3 leaves the argument out), null is not among the values.
 */
function valueForm(cx: FormContext, given: unknown, at: string): ValueForm {
  const { fn } = cx;
  const { schema, pointer } = resolveRef(fn, cx.root, given, at);
  if (schema === false) return { strings: [], jsonTypes: [], jsonSchema: null, jsonPointer: pointer };
  if (schema === true) {
    refuseStructured(cx, JSON_TYPES, pointer, false);
    const others = writable(cx, without(JSON_TYPES));
    return { strings: [{ schema: {}, pointer }], jsonTypes: others, jsonSchema: { type: others }, jsonPointer: pointer };
  }
  if (!isObject(schema)) refuse(fn, pointer, "type", "a schema must be an object or a boolean");
  const words = validationWords(schema);
  const combinator = words.length === 1 && (words[0] === "anyOf" || words[0] === "oneOf") ? words[0] : null;
  if (combinator !== null && Array.isArray(schema[combinator]) && (schema[combinator] as unknown[]).length > 0) {
    const branches = (schema[combinator] as unknown[]).map((b, i) => valueForm(cx, b, `${pointer}/${combinator}/${i}`));
    const stringy = branches.filter((b) => b.strings.length > 0);
    if (combinator === "oneOf" && stringy.length > 1)
      refuse(fn, `${pointer}/oneOf`, "oneOf", "two branches allow strings: which one a raw string matches cannot be checked");
    const json = branches.filter((b) => b.jsonSchema !== null).map((b) => b.jsonSchema);
    const types = new Set(branches.flatMap((b) => b.jsonTypes));
    return {
      strings: branches.flatMap((b) => b.strings),
      jsonTypes: JSON_TYPES.filter((t) => types.has(t)),
      jsonSchema: json.length === 0 ? null : { [combinator]: json },
      jsonPointer: pointer,
    };
  }
  const types = typesOf(fn, schema, pointer);
  refuseStructured(cx, types, pointer, "type" in schema);
  if (!types.includes("string")) {
    const json = writable(cx, types);
    // Narrowed to the types it can write (the same as allOf [schema, {type: json}], as `type` lists no fewer).
    const jsonSchema = json.length === 0 ? null : json.length === types.length ? schema : { ...schema, type: json };
    return { strings: [], jsonTypes: json, jsonSchema, jsonPointer: pointer };
  }
  for (const word of ANY_TYPE_KEYWORDS) {
    if (word in schema && VALIDATION.has(word))
      refuse(
        fn,
        `${pointer}/${escapePointer(word)}`,
        word,
        "this value may be a string, written raw; a raw string can be checked against type, enum, const, minLength, maxLength, pattern and format only",
      );
  }
  // Its values of the other types: the schema with `type` narrowed to them (the same as
  // allOf [schema, {type: others}], as `type` lists no fewer and no keyword refers to a sibling).
  const others = writable(cx, without(types));
  return {
    strings: [{ schema, pointer }],
    jsonTypes: others,
    jsonSchema: others.length === 0 ? null : { ...schema, type: others },
    jsonPointer: pointer,
  };
}

const without = (types: readonly JsonType[]): JsonType[] => types.filter((t) => t !== "string");
/** The types the style can write a value of (all but null where nulls are left out). */
const writable = (cx: FormContext, types: readonly JsonType[]): JsonType[] => types.filter((t) => t !== "null" || cx.rules.nulls);

/** Refuses a value that may be an object or an array where the style does not write them as JSON. */
function refuseStructured(cx: FormContext, types: readonly JsonType[], pointer: string, typed: boolean): void {
  const how = cx.rules.structured;
  const structured = types.filter((t) => t === "array" || (t === "object" && !cx.rules.objectsAsJson));
  if (how === null || structured.length === 0) return;
  refuse(
    cx.fn,
    typed ? `${pointer}/type` : pointer,
    "type",
    `this value may be ${structured.length === 2 ? "an object or an array" : `an ${structured[0]}`}, which the ${cx.style} call format writes ${how}; Trellis does not read those yet (give the parameter a type without them)`,
  );
}

/** The types a schema's values may have: its `type`, else those of its `const` or `enum` members, else any. */
function typesOf(fn: string, schema: Readonly<Record<string, unknown>>, pointer: string): JsonType[] {
  let listed: unknown[];
  if ("type" in schema) {
    listed = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : [null];
    if (listed.some((t) => !JSON_TYPES.includes(t as JsonType)))
      refuse(fn, `${pointer}/type`, "type", "must be a JSON type name or an array of them");
  } else if ("const" in schema) listed = [typeOfValue(schema.const)];
  else if (Array.isArray(schema.enum)) listed = schema.enum.map(typeOfValue);
  else listed = [...JSON_TYPES];
  return JSON_TYPES.filter((t) => listed.includes(t));
}

function typeOfValue(value: unknown): JsonType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as JsonType;
}

/** A schema that is only a local `$ref` (annotations beside it) → what it names, followed to the end. */
function resolveRef(fn: string, root: unknown, schema: unknown, pointer: string): { schema: unknown; pointer: string } {
  for (let i = 0; i <= MAX_REFERENCES; i++) {
    if (!isObject(schema) || !("$ref" in schema)) return { schema, pointer };
    const ref = schema.$ref;
    // $ref with validation keywords beside it: refused where the value may be a string (valueForm).
    if (validationWords(schema).length > 1) return { schema, pointer };
    if (typeof ref !== "string" || !ref.startsWith("#"))
      refuse(fn, `${pointer}/$ref`, "$ref", "only references inside the parameters schema (#/…) are read here");
    const target = followPointer(root, ref.slice(1));
    if (target === undefined) refuse(fn, `${pointer}/$ref`, "$ref", `${JSON.stringify(ref)} names nothing in the parameters schema`);
    schema = target;
    pointer = ref.slice(1);
  }
  refuse(fn, pointer, "$ref", `more than ${MAX_REFERENCES} references in a chain`);
}

function followPointer(root: unknown, fragment: string): unknown {
  let at: unknown = root;
  let text: string;
  try {
    text = decodeURIComponent(fragment);
  } catch {
    return undefined;
  }
  if (text === "") return at;
  if (!text.startsWith("/")) return undefined;
  for (const token of text.slice(1).split("/")) {
    const key = token.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(at) && /^(0|[1-9]\d*)$/.test(key)) at = at[Number(key)];
    else if (isObject(at) && Object.hasOwn(at, key)) at = at[key];
    else return undefined;
  }
  return at;
}

/**
 * What a value's text must be to read as JSON of one of `types` (Python `re` syntax, full match):
 * the numbers, `true`/`false`, `null`, anything starting with `{` or `[`, and where the template
 * writes `value | string` ("xml-function", "seed-oss") Python's `True`, `False`, `None` as well. A
 * raw string of a value that may also be one of `types` is never one of these texts.
 */
export function reservedPattern(style: ArgumentStyle, types: readonly JsonType[]): string | null {
  const python = VALUE_RULES[style].python;
  const parts: string[] = [];
  if (types.includes("null")) parts.push(python ? "null|None" : "null");
  if (types.includes("boolean")) parts.push(python ? "true|false|True|False" : "true|false");
  if (types.includes("number") || types.includes("integer")) parts.push("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");
  if (types.includes("object")) parts.push("\\{.*");
  if (types.includes("array")) parts.push("\\[.*");
  return parts.length === 0 ? null : parts.join("|");
}

const PYTHON_LITERALS: Record<string, string> = { True: "true", False: "false", None: "null" };

/**
 * A value's text (of the language the tagged style compiled for `form`) as JSON text: a string's
 * raw text quoted, a JSON value as written (Python's True/False/None as JSON's).
 */
export function valueJson(form: ParameterForm, text: string, style: ArgumentStyle): string {
  let json = form.jsonSchema !== null;
  if (json && form.strings.length > 0) {
    const reserved = reservedPattern(style, form.jsonTypes);
    json = reserved !== null && new RegExp(`^(?:${reserved})$`, "s").test(text);
  }
  if (!json) return JSON.stringify(text);
  if (VALUE_RULES[style].pythonLiterals && (text.startsWith("{") || text.startsWith("["))) return jsonOfLiteral(text);
  return VALUE_RULES[style].python && Object.hasOwn(PYTHON_LITERALS, text) ? PYTHON_LITERALS[text]! : text;
}
