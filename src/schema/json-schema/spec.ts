// The conjunction of several subschemas, merged keyword by keyword into one Spec per type: the
// tightest bounds, every pattern and format, array positions and object parts kept per source
// (a property one part names may meet another part's `additionalProperties`). Reading a keyword
// checks its value: a malformed one is a JsonSchemaError at its pointer.

import { ecmaPatternError } from "../../regex/index.js";
import type { SchemaAt, SchemaDocument } from "./document.js";
import { escapePointer } from "./document.js";
import { JsonSchemaError } from "./errors.js";
import { formatNode } from "./formats.js";
import { isAnnotation, validationKeywords } from "./keywords.js";
import type { NumericBounds } from "./numeric.js";

export interface Conjunct {
  readonly at: SchemaAt;
  readonly schema: Record<string, unknown>;
  /**
   * The pointers of the conjuncts whose in-place applicators (allOf, $ref, a branch of anyOf,
   * oneOf, if, dependentSchemas) reached this one, outermost first, its own last: the schemas
   * whose evaluation its annotations count for (a scoped unevaluatedProperties). Absent: its own.
   */
  readonly within?: readonly string[];
}

/** One part's array items: positional ones, then one schema for the rest (null: anything). */
export interface ArrayPart {
  readonly prefix: SchemaAt[];
  rest: SchemaAt | null;
  /** Its conjunct's `within` (see ObjectPart). */
  readonly within: readonly string[];
}

/** One part's object members: named, by pattern, and the others (null: anything). */
export interface ObjectPart {
  readonly properties: Map<string, SchemaAt>;
  readonly patterns: { readonly source: string; readonly at: SchemaAt }[];
  readonly additional: SchemaAt | null;
  /** Its conjunct's `within`: the schemas whose evaluation its keys count for. */
  readonly within: readonly string[];
  /**
   * Stands for a nested `unevaluatedProperties` (see read): `additional` is `true`, and the part
   * only marks every key evaluated for the schemas around it; an unnamed key it "evaluates" is
   * still a property the schema does not name (forbidAdditionalProperties).
   */
  readonly onlyEvaluates?: boolean;
}

export interface Spec {
  readonly types: {
    null: boolean;
    boolean: boolean;
    object: boolean;
    array: boolean;
    string: boolean;
    number: "none" | "integer" | "number";
  };
  /** `enum`/`const`: the values every one of them allows; null: no such keyword. */
  readonly enumValues: unknown[] | null;
  readonly strings: {
    minLength: number;
    maxLength: number;
    patterns: { pattern: string; pointer: string }[];
    formats: { format: string; pointer: string }[];
  };
  readonly numbers: { bounds: { bounds: NumericBounds; pointer: string }[]; multipleOf: { value: string; pointer: string }[] };
  readonly arrays: {
    parts: ArrayPart[];
    minItems: number;
    maxItems: number;
    /** `within`: its conjunct's (which scoped unevaluatedItems its matches count for). */
    contains: { at: SchemaAt; min: number; max: number; within: readonly string[] }[];
    unique: string | null;
    /** `unevaluatedItems` of the schema the merge is scoped to (see mergeConjuncts), if not `true`. */
    unevaluated: SchemaAt | null;
    /** The other `unevaluatedItems` (not `true`), each with the pointer of the schema it is in. */
    scopedUnevaluated: { readonly at: SchemaAt; readonly scope: string }[];
  };
  readonly objects: {
    parts: ObjectPart[];
    names: string[];
    required: string[];
    minProperties: number;
    maxProperties: number;
    propertyNames: SchemaAt[];
    /** `unevaluatedProperties` of the schema the merge is scoped to (see mergeConjuncts), if not `true`. */
    unevaluated: SchemaAt | null;
    /**
     * The other `unevaluatedProperties` (not `true`), each with the pointer of the schema it is
     * in: a key no part within that schema evaluates must meet it.
     */
    scopedUnevaluated: { readonly at: SchemaAt; readonly scope: string }[];
  };
}

/** What merging needs of the compiler. */
export interface SpecContext {
  warn(keyword: string, pointer: string, message: string): void;
  unsupported(keyword: string, pointer: string, message: string): void;
  child(at: SchemaAt, ...path: string[]): SchemaAt;
  schemaList(at: SchemaAt, keyword: string): SchemaAt[];
}

/** Keywords compile.ts distributes or expands itself (not merged here). */
const APPLICATORS = new Set([
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "$ref",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "$dynamicRef",
  "$recursiveRef",
]);

/**
 * The formats the specification defines: asserted when formats.ts knows them; the others
 * (`regex`: not a regular language; the IDN ones) are refused under strict, as
 * constraints we cannot enforce. Any other name is an annotation.
 */
const SPEC_FORMATS = new Set([
  "date-time",
  "date",
  "time",
  "duration",
  "email",
  "idn-email",
  "hostname",
  "idn-hostname",
  "ipv4",
  "ipv6",
  "uri",
  "uri-reference",
  "iri",
  "iri-reference",
  "uuid",
  "uri-template",
  "json-pointer",
  "relative-json-pointer",
  "regex",
]);

const TYPE_NAMES = new Set(["null", "boolean", "object", "array", "number", "integer", "string"]);

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The conjuncts of one alternative merged keyword by keyword. `scopeRoot`: the pointer of the one
 * schema every conjunct was reached from through in-place applicators (allOf, $ref, the branch
 * taken of anyOf/oneOf/if, dependentSchemas), or null. Its `unevaluated…` apply over every part,
 * since what counts as evaluated is what that schema's subtree evaluates; any other
 * `unevaluated…` is scoped to the parts within its own schema (Conjunct.within).
 */
export function mergeConjuncts(
  conjuncts: readonly Conjunct[],
  document: SchemaDocument,
  context: SpecContext,
  scopeRoot: string | null = null,
): Spec {
  const spec: Spec = {
    types: { null: true, boolean: true, object: true, array: true, string: true, number: "number" },
    enumValues: null,
    strings: { minLength: 0, maxLength: Infinity, patterns: [], formats: [] },
    numbers: { bounds: [], multipleOf: [] },
    arrays: { parts: [], minItems: 0, maxItems: Infinity, contains: [], unique: null, unevaluated: null, scopedUnevaluated: [] },
    objects: {
      parts: [],
      names: [],
      required: [],
      minProperties: 0,
      maxProperties: Infinity,
      propertyNames: [],
      unevaluated: null,
      scopedUnevaluated: [],
    },
  };
  const merged = { enumValues: null as unknown[] | null };
  for (const conjunct of conjuncts) new ConjunctReader(conjunct, document, context, spec, merged, conjunct.at.pointer === scopeRoot).read();
  return { ...spec, enumValues: merged.enumValues };
}

/** Whether a merged spec allows every JSON value (its conjuncts were annotations only). */
export function constrainsNothing(spec: Spec): boolean {
  const { types: t, strings: s, numbers: n, arrays: a, objects: o } = spec;
  return (
    t.null &&
    t.boolean &&
    t.object &&
    t.array &&
    t.string &&
    t.number === "number" &&
    spec.enumValues === null &&
    s.minLength === 0 &&
    s.maxLength === Infinity &&
    s.patterns.length === 0 &&
    s.formats.length === 0 &&
    n.bounds.length === 0 &&
    n.multipleOf.length === 0 &&
    a.parts.length === 0 &&
    a.minItems === 0 &&
    a.maxItems === Infinity &&
    a.contains.length === 0 &&
    a.unique === null &&
    a.unevaluated === null &&
    a.scopedUnevaluated.length === 0 &&
    o.parts.length === 0 &&
    o.names.length === 0 &&
    o.required.length === 0 &&
    o.minProperties === 0 &&
    o.maxProperties === Infinity &&
    o.propertyNames.length === 0 &&
    o.unevaluated === null &&
    o.scopedUnevaluated.length === 0
  );
}

class ConjunctReader {
  private readonly keywords: ReadonlySet<string>;

  constructor(
    private readonly conjunct: Conjunct,
    private readonly document: SchemaDocument,
    private readonly context: SpecContext,
    private readonly spec: Spec,
    private readonly merged: { enumValues: unknown[] | null },
    /** This conjunct is the merge's scope root (see mergeConjuncts). */
    private readonly isScopeRoot: boolean,
  ) {
    this.keywords = validationKeywords(document.draft);
  }

  private pointer(keyword: string): string {
    return `${this.conjunct.at.pointer}/${escapePointer(keyword)}`;
  }

  private fail(keyword: string, message: string): never {
    throw new JsonSchemaError(message, this.pointer(keyword), keyword);
  }

  private count(keyword: string): number {
    const value = this.conjunct.schema[keyword];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) this.fail(keyword, "must be a non-negative integer");
    return value;
  }

  private number(keyword: string): number {
    const value = this.conjunct.schema[keyword];
    if (typeof value !== "number" || !Number.isFinite(value)) this.fail(keyword, "must be a number");
    return value;
  }

  read(): void {
    const schema = this.conjunct.schema;
    let bounds: NumericBounds | null = null;
    let array: ArrayPart | null = null;
    let object: ObjectPart | null = null;
    const within = this.conjunct.within ?? [this.conjunct.at.pointer];
    const objectPart = (): ObjectPart => (object ??= { properties: new Map(), patterns: [], additional: null, within });
    const arrayPart = (): ArrayPart => (array ??= { prefix: [], rest: null, within });
    for (const keyword of Object.keys(schema)) {
      if (APPLICATORS.has(keyword)) continue;
      if (!this.keywords.has(keyword)) {
        if (!isAnnotation(keyword))
          this.context.warn(keyword, this.pointer(keyword), "not a keyword of this draft: ignored, as the spec says");
        continue;
      }
      switch (keyword) {
        case "type":
          this.readType();
          break;
        case "enum":
        case "const":
          this.readEnum(keyword);
          break;
        case "minLength":
          this.spec.strings.minLength = Math.max(this.spec.strings.minLength, this.count(keyword));
          break;
        case "maxLength":
          this.spec.strings.maxLength = Math.min(this.spec.strings.maxLength, this.count(keyword));
          break;
        case "pattern": {
          const pattern = schema.pattern;
          if (typeof pattern !== "string") this.fail(keyword, "must be a string (an ECMA-262 regular expression)");
          this.spec.strings.patterns.push({ pattern, pointer: this.pointer(keyword) });
          break;
        }
        case "format": {
          const format = schema.format;
          if (typeof format !== "string") this.fail(keyword, "must be a string");
          if (formatNode(format) !== null) this.spec.strings.formats.push({ format, pointer: this.pointer(keyword) });
          else if (SPEC_FORMATS.has(format)) {
            this.context.unsupported("format", this.pointer(keyword), `format "${format}" cannot be checked by an automaton, or not yet`);
          } else this.context.warn("format", this.pointer(keyword), `unknown format "${format}": an annotation, not asserted`);
          break;
        }
        case "minimum":
        case "maximum":
        case "exclusiveMinimum":
        case "exclusiveMaximum":
          bounds ??= {};
          this.readBound(keyword, bounds);
          break;
        case "multipleOf": {
          const value = this.number(keyword);
          if (value <= 0) this.fail(keyword, "must be greater than 0");
          this.spec.numbers.multipleOf.push({ value: String(value), pointer: this.pointer(keyword) });
          break;
        }
        case "items":
          this.readItems(arrayPart());
          break;
        case "prefixItems":
          arrayPart().prefix.push(...this.context.schemaList(this.conjunct.at, "prefixItems"));
          break;
        case "additionalItems":
          if (Array.isArray(schema.items)) arrayPart().rest = this.context.child(this.conjunct.at, "additionalItems");
          break;
        case "minItems":
          this.spec.arrays.minItems = Math.max(this.spec.arrays.minItems, this.count(keyword));
          break;
        case "maxItems":
          this.spec.arrays.maxItems = Math.min(this.spec.arrays.maxItems, this.count(keyword));
          break;
        case "uniqueItems":
          if (typeof schema.uniqueItems !== "boolean") this.fail(keyword, "must be a boolean");
          if (schema.uniqueItems) this.spec.arrays.unique ??= this.pointer(keyword);
          break;
        case "contains":
          this.readContains();
          break;
        case "minContains":
        case "maxContains":
          this.count(keyword);
          break;
        case "properties":
          this.readProperties(objectPart());
          break;
        case "patternProperties":
          this.readPatternProperties(objectPart());
          break;
        case "additionalProperties":
          object = { ...objectPart(), additional: this.context.child(this.conjunct.at, "additionalProperties") };
          break;
        case "required":
          this.readRequired();
          break;
        case "minProperties":
          this.spec.objects.minProperties = Math.max(this.spec.objects.minProperties, this.count(keyword));
          break;
        case "maxProperties":
          this.spec.objects.maxProperties = Math.min(this.spec.objects.maxProperties, this.count(keyword));
          break;
        case "propertyNames":
          this.spec.objects.propertyNames.push(this.context.child(this.conjunct.at, "propertyNames"));
          break;
        case "unevaluatedProperties":
        case "unevaluatedItems": {
          if (!this.isScopeRoot) {
            // Whatever it says, it evaluates every key (item) for the schemas around this one:
            // those no keyword within this one evaluates, it does (2020-12 §11.2, §11.3). A part
            // of theirs that evaluates all and constrains nothing: additionalProperties (or items)
            // `true`, under a pointer of its own (languages are memoised by pointer).
            const around = within.slice(0, -1);
            const at = this.context.child(this.conjunct.at, keyword);
            const all: SchemaAt = at.schema === true ? at : { ...at, schema: true, pointer: `${at.pointer}#evaluates` };
            if (keyword === "unevaluatedProperties") {
              this.spec.objects.parts.push({ properties: new Map(), patterns: [], additional: all, within: around, onlyEvaluates: true });
            } else this.spec.arrays.parts.push({ prefix: [], rest: all, within: around });
          }
          if (schema[keyword] === true) break;
          if (!this.isScopeRoot) {
            // Scoped to this schema: what the conjuncts within it evaluate (see ObjectPart.within).
            const scoped = { at: this.context.child(this.conjunct.at, keyword), scope: this.conjunct.at.pointer };
            if (keyword === "unevaluatedProperties") this.spec.objects.scopedUnevaluated.push(scoped);
            else this.spec.arrays.scopedUnevaluated.push(scoped);
            break;
          }
          const at = this.context.child(this.conjunct.at, keyword);
          if (keyword === "unevaluatedProperties") this.spec.objects.unevaluated = at;
          else this.spec.arrays.unevaluated = at;
          break;
        }
        default:
          this.context.unsupported(keyword, this.pointer(keyword), `${keyword} is not supported`);
      }
    }
    if (bounds) this.spec.numbers.bounds.push({ bounds, pointer: this.conjunct.at.pointer });
    if (array) this.spec.arrays.parts.push(array);
    if (object) {
      this.spec.objects.parts.push(object);
      for (const name of (object as ObjectPart).properties.keys())
        if (!this.spec.objects.names.includes(name)) this.spec.objects.names.push(name);
    }
  }

  private readType(): void {
    const value = this.conjunct.schema.type;
    const names = typeof value === "string" ? [value] : value;
    if (!Array.isArray(names) || names.length === 0 || names.some((n) => typeof n !== "string" || !TYPE_NAMES.has(n))) {
      this.fail("type", `must be one of ${[...TYPE_NAMES].join(", ")}, or a non-empty array of them`);
    }
    const has = new Set(names as string[]);
    const t = this.spec.types;
    t.null &&= has.has("null");
    t.boolean &&= has.has("boolean");
    t.object &&= has.has("object");
    t.array &&= has.has("array");
    t.string &&= has.has("string");
    const number = has.has("number") ? "number" : has.has("integer") ? "integer" : "none";
    if (number === "none" || t.number === "none") t.number = "none";
    else if (number === "integer" || t.number === "integer") t.number = "integer";
  }

  private readEnum(keyword: "enum" | "const"): void {
    const value = this.conjunct.schema[keyword];
    let values: unknown[];
    if (keyword === "const") values = [value];
    else if (Array.isArray(value)) values = value;
    else this.fail(keyword, "must be an array");
    const previous = this.merged.enumValues;
    this.merged.enumValues = previous === null ? [...values] : previous.filter((v) => values.some((w) => jsonEqual(v, w)));
  }

  private readBound(keyword: "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum", bounds: NumericBounds): void {
    const schema = this.conjunct.schema;
    const value = schema[keyword];
    if (this.document.draft === 4 && (keyword === "exclusiveMinimum" || keyword === "exclusiveMaximum")) {
      if (typeof value !== "boolean") this.fail(keyword, "must be a boolean in draft-04");
      return; // read with minimum / maximum
    }
    const n = String(this.number(keyword));
    if (this.document.draft === 4 && keyword === "minimum" && schema.exclusiveMinimum === true) bounds.exclusiveMinimum = n;
    else if (this.document.draft === 4 && keyword === "maximum" && schema.exclusiveMaximum === true) bounds.exclusiveMaximum = n;
    else bounds[keyword] = n;
  }

  private readItems(part: ArrayPart): void {
    const items = this.conjunct.schema.items;
    if (Array.isArray(items)) {
      if (this.document.draft === 2020) this.fail("items", "must be a schema in draft 2020-12 (positional items are prefixItems)");
      part.prefix.push(...this.context.schemaList(this.conjunct.at, "items"));
      return;
    }
    part.rest = this.context.child(this.conjunct.at, "items");
  }

  private readContains(): void {
    const schema = this.conjunct.schema;
    const modern = this.document.draft >= 2019;
    const min = modern && schema.minContains !== undefined ? this.count("minContains") : 1;
    const max = modern && schema.maxContains !== undefined ? this.count("maxContains") : Infinity;
    // Unbounded (minContains 0), it asserts nothing but still evaluates the items it matches
    // (for unevaluatedItems): arrayLanguage drops it where no unevaluatedItems reads it.
    const within = this.conjunct.within ?? [this.conjunct.at.pointer];
    this.spec.arrays.contains.push({ at: this.context.child(this.conjunct.at, "contains"), min, max, within });
  }

  private readProperties(part: ObjectPart): void {
    const properties = this.conjunct.schema.properties;
    if (!isObject(properties)) this.fail("properties", "must be an object of schemas");
    for (const name of Object.keys(properties)) part.properties.set(name, this.context.child(this.conjunct.at, "properties", name));
  }

  private readPatternProperties(part: ObjectPart): void {
    const patterns = this.conjunct.schema.patternProperties;
    if (!isObject(patterns)) this.fail("patternProperties", "must be an object of schemas");
    for (const source of Object.keys(patterns)) {
      // Valid under u, or only without it (read as Annex B reads it: regex/ecma.ts).
      const error = ecmaPatternError(source);
      if (error !== null) {
        throw new JsonSchemaError(
          `"${source}" is not an ECMA-262 regular expression: ${error}`,
          this.pointer("patternProperties"),
          "patternProperties",
        );
      }
      part.patterns.push({ source, at: this.context.child(this.conjunct.at, "patternProperties", source) });
    }
  }

  private readRequired(): void {
    const required = this.conjunct.schema.required;
    if (!Array.isArray(required) || required.some((r) => typeof r !== "string"))
      this.fail("required", "must be an array of property names");
    for (const name of required as string[]) if (!this.spec.objects.required.includes(name)) this.spec.objects.required.push(name);
  }
}

/** JSON equality: numbers by value, objects regardless of key order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((v, i) => jsonEqual(v, other[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b as object);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b as object, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}
