// Which keywords each draft has, and how we treat them: enforced (compile.ts reads them),
// annotations (no effect on validity), or unsupported (refused under `strict`, else ignored with
// a warning). A keyword a draft does not define is an annotation by the spec; we still say so.

import type { Draft } from "./document.js";

/** Keywords that never affect validity (or whose effect is through another keyword). */
const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "$comment",
  "readOnly",
  "writeOnly",
  "deprecated",
  "$schema",
  "$id",
  "id",
  "$anchor",
  "$dynamicAnchor",
  "$recursiveAnchor",
  "$vocabulary",
  "$defs",
  "definitions",
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
  "then",
  "else",
]);

const ALL_DRAFTS = [
  "type",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "patternProperties",
  "minProperties",
  "maxProperties",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "$ref",
];

const SINCE: ReadonlyArray<[Draft, readonly string[]]> = [
  [4, ["additionalItems", "dependencies"]],
  [6, ["const", "contains", "propertyNames"]],
  [7, ["if"]],
  [2019, ["dependentRequired", "dependentSchemas", "minContains", "maxContains", "unevaluatedItems", "unevaluatedProperties"]],
];

const UNTIL: ReadonlyMap<string, Draft> = new Map([
  ["dependencies", 7],
  ["additionalItems", 2019],
]);

const BY_DRAFT = new Map<Draft, ReadonlySet<string>>();

/** The validation keywords of `draft` (annotations excluded). */
export function validationKeywords(draft: Draft): ReadonlySet<string> {
  let set = BY_DRAFT.get(draft);
  if (!set) {
    const words = new Set(ALL_DRAFTS);
    for (const [since, list] of SINCE) if (draft >= since) for (const w of list) words.add(w);
    for (const [word, until] of UNTIL) if (draft > until) words.delete(word);
    if (draft === 2019) words.add("$recursiveRef");
    if (draft === 2020) words.add("prefixItems").add("$dynamicRef");
    set = words;
    BY_DRAFT.set(draft, set);
  }
  return set;
}

export function isAnnotation(keyword: string): boolean {
  return ANNOTATIONS.has(keyword);
}
