// What every value meeting some conjuncts has, read off their own keywords (type, enum, const,
// required, properties, a closed object): compile.ts skips subtracting what provably shares no
// value with an alternative (most oneOf branches) by these facts.

import { isObject, type Conjunct } from "./spec.js";
import { canonicalJson } from "./values.js";

export const JSON_TYPES = ["null", "boolean", "number", "string", "array", "object"] as const;

/** The names `type` takes. */
const KNOWN_TYPES: ReadonlySet<unknown> = new Set([...JSON_TYPES, "integer"]);

/** The JSON type of a value (integers are numbers). */
function jsonTypeOf(value: unknown): (typeof JSON_TYPES)[number] {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  return t === "boolean" || t === "number" || t === "string" ? t : "object";
}

/** What a value may be, as far as `type`, `enum` and `const` say: its JSON types, its values (canonicalJson; null: not listed). */
export interface ScalarFacts {
  types: Set<string>;
  values: Set<string> | null;
  /** Values it cannot be, from a `not` that lists them (`{"not": {"enum": ["CAN", "USA"]}}`; canonicalJson). */
  excluded: Set<string>;
  /** `pattern`s a string value matches (compile.ts reads two sides' apart by their languages). */
  patterns: string[];
}

/** What every value meeting some conjuncts has (valueFacts). */
export interface ValueFacts {
  readonly value: ScalarFacts;
  /** If an object: the properties it has, may have (null: any), must not have, and what each may be. */
  readonly required: Set<string>;
  readonly allowed: Set<string> | null;
  readonly forbidden: ReadonlySet<string>;
  readonly properties: Map<string, ScalarFacts>;
}

/** Whether no value is in both. */
export function apart(a: ScalarFacts, b: ScalarFacts): boolean {
  if (![...a.types].some((t) => b.types.has(t))) return true;
  // Every value one side lists, the other excludes (a country listed against "none of these").
  if (a.values !== null && [...a.values].every((v) => b.excluded.has(v))) return true;
  if (b.values !== null && [...b.values].every((v) => a.excluded.has(v))) return true;
  return a.values !== null && b.values !== null && ![...a.values].some((v) => b.values!.has(v));
}

/** What a fresh ScalarFacts says: any value. */
function anyScalar(): ScalarFacts {
  return { types: new Set(JSON_TYPES), values: null, excluded: new Set(), patterns: [] };
}

/** Keywords a `not` may have beside `enum`/`const` and still exclude exactly the values listed. */
const BESIDE_LISTED = new Set(["enum", "const", "type", "title", "description", "$comment"]);

/**
 * The values `not` excludes when it is `{"enum": [...]}` or `{"const": x}` (with a `type`, the
 * listed values of that type), as canonicalJson; none otherwise.
 */
function excludedBy(not: unknown, withConst: boolean): string[] {
  if (!isObject(not) || !Object.keys(not).every((k) => BESIDE_LISTED.has(k))) return [];
  const listed = withConst && "const" in not ? [not.const] : Array.isArray(not.enum) ? not.enum : null;
  if (listed === null) return [];
  // With both, a value is excluded only if it is the const and listed too: keep it simple.
  if (withConst && "const" in not && Array.isArray(not.enum)) return [];
  const declared = typeof not.type === "string" ? [not.type] : Array.isArray(not.type) ? not.type : null;
  if (declared !== null && !declared.every((t) => KNOWN_TYPES.has(t))) return [];
  const typed = (v: unknown): boolean =>
    declared === null || declared.includes(jsonTypeOf(v)) || (declared.includes("integer") && Number.isInteger(v));
  return listed.filter(typed).map(canonicalJson);
}

/**
 * Narrows `facts` by one schema's `type`, `enum` and `const` (const from draft-06 on), and, with
 * `withNot`, by what its `not` lists.
 */
function narrowScalar(facts: ScalarFacts, schema: unknown, withConst: boolean, withNot: boolean): void {
  if (schema === false) {
    facts.types.clear();
    return;
  }
  if (!isObject(schema)) return;
  if (withNot) for (const v of excludedBy(schema.not, withConst)) facts.excluded.add(v);
  if (typeof schema.pattern === "string") facts.patterns.push(schema.pattern);
  const declared = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : null;
  // Malformed keywords tell nothing here (the merge refuses them where they count).
  if (declared !== null && declared.length > 0 && declared.every((t) => KNOWN_TYPES.has(t)))
    for (const t of facts.types) if (!declared.includes(t) && !(t === "number" && declared.includes("integer"))) facts.types.delete(t);
  const listed =
    withConst && "const" in schema ? [schema.const] : Array.isArray(schema.enum) && schema.enum.length > 0 ? schema.enum : null;
  if (listed === null) return;
  for (const t of facts.types) if (!listed.some((v) => jsonTypeOf(v) === t)) facts.types.delete(t);
  const texts = new Set(listed.map(canonicalJson));
  facts.values = facts.values === null ? texts : new Set([...facts.values].filter((v) => texts.has(v)));
}

/**
 * What every value meeting all of `conjuncts` has, from their own keywords only (each must hold
 * of every such value): ScalarFacts from `type`/`enum`/`const`; if an object, the properties it
 * must have (`required`, and an alternative's `require`), may have (`additionalProperties:
 * false` without `patternProperties`: the ones `properties` names), must not have (`forbid`),
 * and ScalarFacts per property from `properties`.
 */
export function valueFacts(
  conjuncts: readonly Conjunct[],
  require: ReadonlySet<string>,
  forbid: ReadonlySet<string>,
  withConst: boolean,
  /**
   * Also "no key k" where a conjunct has `not: {"required": [k]}`: true only of a subtrahend (all
   * its schema holds of its values); an alternative's own `not`s hold only once subtracted, and
   * their facts must not excuse the very subtraction that enforces them.
   */
  withNot = false,
): ValueFacts {
  const value = anyScalar();
  const required = new Set(require);
  const forbidden = new Set(forbid);
  let allowed: Set<string> | null = null;
  const properties = new Map<string, ScalarFacts>();
  for (const { schema } of conjuncts) {
    narrowScalar(value, schema, withConst, withNot);
    const absent = withNot ? onlyRequiredKey(schema.not) : null;
    if (absent !== null) forbidden.add(absent);
    if (Array.isArray(schema.required)) for (const name of schema.required) if (typeof name === "string") required.add(name);
    const named = isObject(schema.properties) ? schema.properties : {};
    if (schema.additionalProperties === false && schema.patternProperties === undefined) {
      const names = Object.keys(named);
      allowed = allowed === null ? new Set(names) : new Set(names.filter((n) => allowed!.has(n)));
    }
    for (const [name, property] of Object.entries(named)) {
      let facts = properties.get(name);
      if (facts === undefined) properties.set(name, (facts = anyScalar()));
      // A property's `not` is written inside its own language, whatever is subtracted here.
      narrowScalar(facts, property, withConst, true);
    }
  }
  return { value, required, allowed, forbidden, properties };
}

/** Keywords a `not: {"required": [k]}` may have beside it and still say only "no key k". */
const BESIDE_REQUIRED = new Set(["required", "title", "description", "$comment"]);

/** k, where `schema` (a `not`'s) holds exactly the objects with key k (and, untyped, every non-object). */
function onlyRequiredKey(schema: unknown): string | null {
  if (!isObject(schema) || !Array.isArray(schema.required) || schema.required.length !== 1) return null;
  const key = schema.required[0];
  if (typeof key !== "string") return null;
  return Object.entries(schema).every(([k, v]) => BESIDE_REQUIRED.has(k) || (k === "type" && isObjectOnlyType(v))) ? key : null;
}

/** Whether a `type` keyword's value admits objects and nothing else. */
export function isObjectOnlyType(type: unknown): boolean {
  return type === "object" || (Array.isArray(type) && type.length === 1 && type[0] === "object");
}
