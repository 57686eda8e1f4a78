// One schema document: which draft it speaks, where its subschemas are, and what a `$ref` in it
// points at. References resolve within the document only: `#…` fragments (JSON pointers and
// anchors) and URIs its own `$id`s name; anything else is a remote reference, refused (400).

import { JsonSchemaError } from "./errors.js";

export type Draft = 4 | 6 | 7 | 2019 | 2020;

const DRAFT_OF_URI: ReadonlyMap<string, Draft> = new Map([
  ["https://json-schema.org/draft/2020-12/schema", 2020],
  ["https://json-schema.org/draft/2019-09/schema", 2019],
  ["http://json-schema.org/draft-07/schema", 7],
  ["http://json-schema.org/draft-06/schema", 6],
  ["http://json-schema.org/draft-04/schema", 4],
]);

/** A subschema and where it is: its JSON pointer from the document's root, and its base URI. */
export interface SchemaAt {
  readonly schema: unknown;
  readonly pointer: string;
  readonly base: string;
  /**
   * Its dynamic scope (2020-12 §7.1): the schema resources, by URI, that evaluation entered on
   * its way here, outermost first, each once (re-entering one changes no resolution: the
   * outermost declaration wins). Absent: none yet (the root). See dynamicScopeOf.
   */
  readonly dynamicScope?: readonly string[];
}

/** The base URI of a document without an `$id` (a URI nothing else resolves to). */
const DEFAULT_BASE = "https://trellis.invalid/schema.json";

/**
 * Keywords whose value is a subschema, a list or a map of them, per draft; the walks below go
 * through these only (a `$ref` into anything else still resolves, by pointer).
 */
const SCHEMA_VALUED = ["additionalItems", "additionalProperties", "contains", "not", "if", "then", "else", "propertyNames"];
const SCHEMA_VALUED_2019 = ["unevaluatedItems", "unevaluatedProperties", "contentSchema"];
const SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

export class SchemaDocument {
  readonly draft: Draft;
  /** Resources and anchors by absolute URI ("…#name" for anchors). */
  private readonly resources = new Map<string, SchemaAt>();
  /** How many subschemas declare each `$dynamicAnchor` name, and `"$recursiveAnchor": true` (key ""). */
  private readonly dynamicAnchors = new Map<string, number>();
  /** The subschemas declaring a `$dynamicAnchor`, by "resource URI#name". */
  private readonly dynamicAnchorAt = new Map<string, SchemaAt>();
  /** The resources whose root says `"$recursiveAnchor": true` (2019-09), by URI. */
  private readonly recursiveAnchorAt = new Map<string, SchemaAt>();

  constructor(readonly root: unknown) {
    this.draft = draftOf(root);
    this.index({ schema: root, pointer: "", base: DEFAULT_BASE });
    this.contestedAnchors = [...this.dynamicAnchors].filter(([, count]) => count > 1).map(([name]) => name);
  }

  /** The root as a SchemaAt (its base is its own `$id`, resolved, or a placeholder URI). */
  get rootAt(): SchemaAt {
    const at = { schema: this.root, pointer: "", base: DEFAULT_BASE };
    return { ...at, base: this.baseOf(at) };
  }

  /**
   * Whether a dynamic reference's target may depend on the dynamic scope: some dynamic anchor is
   * declared by several subschemas. Then a subschema's language depends on its scope, and the
   * compiler keys its memo on dynamicKey.
   */
  get scopeMatters(): boolean {
    return this.contestedAnchors.length > 0;
  }

  /** The dynamic anchor names (`""`: `$recursiveAnchor`) that several subschemas declare. */
  private readonly contestedAnchors: readonly string[];

  /**
   * What of `at`'s dynamic scope its language depends on: per contested anchor name, the
   * outermost resource of the scope declaring it (where a dynamic reference inside will go), or
   * none. Scopes that bind every contested name alike give the same language; the key stays as
   * small as the names are few, however many resources the scope has.
   */
  dynamicKey(at: SchemaAt): string {
    const scope = this.dynamicScopeOf(at);
    return this.contestedAnchors
      .map(
        (name) =>
          scope.find((resource) =>
            name === "" ? this.recursiveAnchorAt.has(resource) : this.dynamicAnchorAt.has(`${resource}#${name}`),
          ) ?? "",
      )
      .join("\n");
  }

  /** The dynamic scope in which `at`'s own keywords are evaluated: its scope and its own resource. */
  dynamicScopeOf(at: SchemaAt): readonly string[] {
    const scope = at.dynamicScope ?? [];
    const resource = this.baseOf(at);
    return scope.includes(resource) ? scope : [...scope, resource];
  }

  /** A subschema of `at` (a keyword's value): evaluated in `at`'s dynamic scope. */
  inside(at: SchemaAt, schema: unknown, pointer: string): SchemaAt {
    return { schema, pointer, base: this.baseOf(at), dynamicScope: this.dynamicScopeOf(at) };
  }

  /** The `$id` keyword's name in this draft. */
  get idKeyword(): string {
    return this.draft === 4 ? "id" : "$id";
  }

  /** Whether `$ref` replaces its siblings (drafts before 2019-09: they are ignored). */
  get refOverridesSiblings(): boolean {
    return this.draft < 2019;
  }

  /** The base URI a subschema sets for itself and what it contains. */
  baseOf(at: SchemaAt): string {
    const schema = at.schema;
    if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return at.base;
    const object = schema as Record<string, unknown>;
    const id = object[this.idKeyword];
    if (typeof id !== "string" || (this.draft < 2019 && id.startsWith("#"))) return at.base;
    // Before 2019-09 everything beside a $ref is ignored, $id included.
    if (this.draft < 2019 && object.$ref !== undefined) return at.base;
    // "http://x/s.json#" names the resource "http://x/s.json": an empty fragment is no fragment.
    return resolveUri(id, at.base, at.pointer, this.idKeyword).replace(/#$/, "");
  }

  /** What `ref` (the value of `$ref` in the subschema at `at`) points at, in `at`'s dynamic scope. */
  resolve(ref: string, at: SchemaAt): SchemaAt {
    return { ...this.resolveStatically(ref, at), dynamicScope: this.dynamicScopeOf(at) };
  }

  private resolveStatically(ref: string, at: SchemaAt): SchemaAt {
    const pointer = `${at.pointer}/$ref`;
    const uri = resolveUri(ref, this.baseOf(at), pointer, "$ref");
    const hash = uri.indexOf("#");
    const resource = hash < 0 ? uri : uri.slice(0, hash);
    const fragment = hash < 0 ? "" : decodeURIComponentSafe(uri.slice(hash + 1), pointer);
    if (fragment === "" || fragment.startsWith("/")) {
      const found = this.resources.get(resource);
      if (!found)
        throw new JsonSchemaError(`remote reference "${ref}" is not supported (only references within the schema)`, pointer, "$ref");
      return followPointer(found, fragment, ref, pointer);
    }
    const anchored = this.resources.get(`${resource}#${fragment}`);
    if (!anchored) throw new JsonSchemaError(`reference "${ref}": no "${fragment}" anchor in the schema`, pointer, "$ref");
    return anchored;
  }

  /**
   * What a `$dynamicRef` (2020-12) or `$recursiveRef` (2019-09) at `at` points at. It is resolved
   * like `$ref` first; when that target declares the matching dynamic anchor (`$dynamicAnchor` of
   * the fragment's name; `"$recursiveAnchor": true`), the answer is the declaration in the
   * outermost resource of `at`'s dynamic scope that has one, as the spec says; else the target.
   */
  resolveDynamic(keyword: "$dynamicRef" | "$recursiveRef", ref: string, at: SchemaAt): SchemaAt {
    const target = this.resolve(ref, at);
    const object = target.schema;
    if (object === null || typeof object !== "object" || Array.isArray(object)) return target;
    const scope = target.dynamicScope ?? [];
    if (keyword === "$recursiveRef") {
      if ((object as Record<string, unknown>).$recursiveAnchor !== true) return target;
      for (const resource of scope) {
        const outer = this.recursiveAnchorAt.get(resource);
        if (outer !== undefined) return { ...outer, dynamicScope: scope };
      }
      return target;
    }
    const hash = ref.indexOf("#");
    const fragment = hash < 0 ? "" : ref.slice(hash + 1);
    // Only a plain-name fragment is dynamic; a JSON pointer or none is a plain $ref.
    if (fragment === "" || fragment.startsWith("/")) return target;
    if ((object as Record<string, unknown>).$dynamicAnchor !== fragment) return target;
    for (const resource of scope) {
      const outer = this.dynamicAnchorAt.get(`${resource}#${fragment}`);
      if (outer !== undefined) return { ...outer, dynamicScope: scope };
    }
    return target;
  }

  /** Records `at` and its subschemas' resources and anchors. */
  private index(at: SchemaAt): void {
    const schema = at.schema;
    if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return;
    const object = schema as Record<string, unknown>;
    const base = this.baseOf(at);
    const here: SchemaAt = { schema, pointer: at.pointer, base };
    // A subschema with its own $id is a resource of its own; the root always is.
    if (at.pointer === "" || base !== at.base) this.resources.set(base, here);
    const id = object[this.idKeyword];
    if (this.draft < 2019 && typeof id === "string" && id.startsWith("#")) this.resources.set(`${base}${id}`, here);
    if (this.draft >= 2019) {
      const anchor = object.$anchor;
      if (typeof anchor === "string") this.resources.set(`${base}#${anchor}`, here);
      const dynamic = object.$dynamicAnchor;
      if (typeof dynamic === "string" && !this.resources.has(`${base}#${dynamic}`)) this.resources.set(`${base}#${dynamic}`, here);
      if (typeof dynamic === "string") {
        this.dynamicAnchors.set(dynamic, (this.dynamicAnchors.get(dynamic) ?? 0) + 1);
        if (!this.dynamicAnchorAt.has(`${base}#${dynamic}`)) this.dynamicAnchorAt.set(`${base}#${dynamic}`, here);
      }
      if (object.$recursiveAnchor === true) {
        this.dynamicAnchors.set("", (this.dynamicAnchors.get("") ?? 0) + 1);
        // Only a resource's root can say it (elsewhere it is ignored, as the spec says).
        if (at.pointer === "" || base !== at.base) this.recursiveAnchorAt.set(base, here);
      }
    }
    for (const [keyword, value] of Object.entries(object)) {
      const pointer = `${at.pointer}/${escapePointer(keyword)}`;
      if (SCHEMA_VALUED.includes(keyword) || (this.draft >= 2019 && SCHEMA_VALUED_2019.includes(keyword))) {
        this.index({ schema: value, pointer, base });
      } else if (keyword === "items" || SCHEMA_LISTS.includes(keyword)) {
        if (Array.isArray(value)) value.forEach((item, i) => this.index({ schema: item, pointer: `${pointer}/${i}`, base }));
        else this.index({ schema: value, pointer, base });
      } else if (SCHEMA_MAPS.includes(keyword) || (keyword === "dependencies" && this.draft < 2019)) {
        if (value !== null && typeof value === "object" && !Array.isArray(value)) {
          for (const [name, sub] of Object.entries(value)) {
            this.index({ schema: sub, pointer: `${pointer}/${escapePointer(name)}`, base });
          }
        }
      }
    }
  }
}

/** Deepest nesting of objects and arrays a schema may have: the compile recurses on it. */
export const MAX_SCHEMA_NESTING = 256;

/**
 * How many containers deep `value` nests (a scalar 0, `[]` 1), walked without recursion and
 * only as far as `cap`: a value nested deeper answers the first depth past it.
 */
export function nestingDepth(value: unknown, cap: number): number {
  let most = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== "object") continue;
    if (depth > cap) return depth;
    most = Math.max(most, depth);
    for (const child of Object.values(item)) if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
  }
  return most;
}

/** Whether `value` nests objects and arrays deeper than `max` (checked without recursion). */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  return nestingDepth(value, max) > max;
}

function draftOf(root: unknown): Draft {
  if (root === null || typeof root !== "object" || Array.isArray(root)) return 2020;
  const uri = (root as Record<string, unknown>).$schema;
  if (uri === undefined) return 2020;
  if (typeof uri !== "string") throw new JsonSchemaError("$schema must be a string", "/$schema", "$schema");
  const draft = DRAFT_OF_URI.get(uri.replace(/#$/, "").replace(/^https:\/\/json-schema\.org\/draft-0/, "http://json-schema.org/draft-0"));
  if (draft === undefined) {
    throw new JsonSchemaError(
      `unknown dialect "${uri}" (known: draft 2020-12, 2019-09, draft-07, draft-06, draft-04)`,
      "/$schema",
      "$schema",
    );
  }
  return draft;
}

function resolveUri(ref: string, base: string, pointer: string, keyword: string): string {
  try {
    return new URL(ref, base).href;
  } catch {
    throw new JsonSchemaError(`"${ref}" is not a valid URI reference`, pointer, keyword);
  }
}

function decodeURIComponentSafe(text: string, pointer: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new JsonSchemaError(`"${text}" is not a valid URI fragment`, pointer, "$ref");
  }
}

export function escapePointer(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

function followPointer(from: SchemaAt, fragment: string, ref: string, pointer: string): SchemaAt {
  let node: unknown = from.schema;
  let at = from.pointer;
  if (fragment === "") return from;
  for (const raw of fragment.slice(1).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) {
      throw new JsonSchemaError(`reference "${ref}" points at nothing in the schema`, pointer, "$ref");
    }
    node = (node as Record<string, unknown>)[token];
    at = `${at}/${escapePointer(token)}`;
  }
  return { schema: node, pointer: at, base: from.base };
}
