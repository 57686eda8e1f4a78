// The JSON Schema compiler's own choices (README "JSON Schema completion"): what we write where
// the spec allows more (key order, whitespace, bounded unrolling, long strings, repeated keys),
// and the refusals that name their keyword and JSON pointer.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  compileJsonSchema,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  type JsonSchemaOptions,
} from "../src/schema/index.js";
import { codePointBounds, maxNesting } from "../src/schema/json-schema/json-text.js";
import { matchesString, minimalDfa, regexClock } from "../src/regex/index.js";
import { RuleNetworkAutomaton, ruleNetworkAutomaton } from "../src/grammar/index.js";
import { compileServedSchema, refusalOf } from "../src/compile/task.js";
import { refusalWithWork, WORK_LIMIT_SLACK } from "./support/regex-work.js";

function verdicts(schema: unknown, texts: readonly string[], options?: JsonSchemaOptions): boolean[] {
  const { dfa } = compileJsonSchema(schema, options);
  return texts.map((t) => matchesString(dfa, t));
}

/** How the service answers a compile's refusal: its status and whether the verdict is kept. */
function answer(error: unknown): { status: string; lasting: boolean } | undefined {
  const refused = refusalOf(error, "schema");
  return refused ? { status: refused.status, lasting: refused.lasting } : undefined;
}

function refusal(schema: unknown, options?: JsonSchemaOptions): Error {
  try {
    compileJsonSchema(schema, options);
  } catch (error) {
    return error as Error;
  }
  assert.fail(`${JSON.stringify(schema)} compiled`);
}

test("properties are written in the schema's order, unnamed ones after them", () => {
  const schema = { type: "object", properties: { b: { type: "integer" }, a: { type: "integer" } } };
  assert.deepEqual(verdicts(schema, ['{"b": 1, "a": 2}', '{"a": 2, "b": 1}', '{"b": 1, "x": 0}', '{"x": 0, "b": 1}']), [
    true,
    false,
    true,
    false,
  ]);
  // A schema's own properties, then its $ref's (2019-09 on: beside $ref), then its allOf's.
  const extended = {
    $defs: { base: { properties: { id: { type: "integer" } } } },
    $ref: "#/$defs/base",
    allOf: [{ properties: { tag: { type: "string" } } }],
    properties: { name: { type: "string" } },
  };
  assert.deepEqual(verdicts(extended, ['{"name": "n", "id": 1, "tag": "t"}', '{"id": 1, "name": "n", "tag": "t"}']), [true, false]);
  // Keys only a dependency requires come before its trigger.
  const dependent = { dependentRequired: { card: ["address"] }, additionalProperties: false, patternProperties: { "^[a-z]+$": true } };
  assert.deepEqual(verdicts(dependent, ['{"address": "a", "card": 1}', '{"card": 1, "address": "a"}']), [true, false]);
});

test("an enum/const object the rest of the schema writes in another key order is kept, in that order", () => {
  // properties writes a before b; the const lists b first: the document is {"a": 2, "b": 1}.
  const reordered = { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, const: { b: 1, a: 2 } };
  assert.deepEqual(verdicts(reordered, ['{"a": 2, "b": 1}', '{"b": 1, "a": 2}', '{"a": 1, "b": 2}']), [true, false, false]);
  // Nested objects too, and enum values the rest allows in their own order stay as they are.
  const nested = {
    properties: { p: { properties: { y: true, x: true } } },
    enum: [{ p: { x: 1, y: 2 } }, { p: { y: 3 } }],
  };
  assert.deepEqual(verdicts(nested, ['{"p": {"y": 2, "x": 1}}', '{"p": {"x": 1, "y": 2}}', '{"p": {"y": 3}}']), [true, false, true]);
});

test("whitespace styles: default (json.dumps or compact), compact, indented (json.dumps(indent=2))", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "array", items: { type: "integer" } } },
    required: ["a"],
    additionalProperties: false,
  };
  const texts = ['{"a": [1, 2]}', '{"a":[1,2]}', '{ "a": [1, 2]}', '{"a":  [1]}', '{\n  "a": [\n    1,\n    2\n  ]\n}', '{\n  "a": []\n}'];
  assert.deepEqual(verdicts(schema, texts), [true, true, false, false, false, false]);
  assert.deepEqual(verdicts(schema, texts, { whitespace: "compact" }), [false, true, false, false, false, false]);
  assert.deepEqual(verdicts(schema, texts, { whitespace: "indented" }), [false, false, false, false, true, true]);
});

test("a recursive schema is written at most a few levels deep", () => {
  const tree = {
    $defs: {
      node: {
        type: "object",
        properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" } } },
        required: ["v"],
        additionalProperties: false,
      },
    },
    $ref: "#/$defs/node",
  };
  const nested = (depth: number): string => (depth === 1 ? '{"v": 1}' : `{"v": 1, "kids": [${nested(depth - 1)}]}`);
  assert.deepEqual(verdicts(tree, [nested(1), nested(3), nested(4), nested(9), '{"v": 1, "kids": [{"w": 2}]}']), [
    true,
    true,
    true,
    false,
    false,
  ]);
  // Under a subtraction the over-approximation holds every depth: where the schema re-enters
  // itself (the items' items here), any value. So `not n` writes no integer and no array of
  // integers, ["s"] (valid: a string is no n), but not [["s"]] (valid too: writing less is the
  // safe side).
  const notNested = {
    $defs: { n: { anyOf: [{ type: "integer" }, { type: "array", items: { $ref: "#/$defs/n" } }] } },
    not: { $ref: "#/$defs/n" },
  };
  assert.deepEqual(verdicts(notNested, ['"s"', "1", "[1]", "[[[1]]]", '["s"]', '[["s"]]', '{"a": 1}']), [
    true,
    false,
    false,
    false,
    true,
    false,
    true,
  ]);
});

test("a long maxLength is written as 256 characters; under not it is not counted at all", () => {
  const text = (n: number): string => JSON.stringify("a".repeat(n));
  assert.deepEqual(verdicts({ type: "string", maxLength: 65535 }, [text(0), text(256), text(257)]), [true, true, false]);
  assert.deepEqual(verdicts({ type: "string", minLength: 300, maxLength: 400 }, [text(299), text(300), text(400), text(401)]), [
    false,
    true,
    true,
    false,
  ]);
  // not: strings of at most 300 characters. What we write must never be one of them.
  assert.deepEqual(verdicts({ type: ["string", "integer"], not: { type: "string", maxLength: 300 } }, [text(10), text(301), "7"]), [
    false,
    false,
    true,
  ]);
});

test("unnamed properties: several may be written; towards minProperties one counts, or one per band of first characters", () => {
  const map = { type: "object", minProperties: 1, additionalProperties: { type: "string" } };
  assert.deepEqual(verdicts(map, ["{}", '{"en": "a"}', '{"en": "a", "fr": "b", "de": "c"}', '{"en": 1}']), [false, true, true, false]);
  const two = { type: "object", properties: { a: {} }, minProperties: 2, additionalProperties: { type: "integer" } };
  assert.deepEqual(verdicts(two, ['{"a": 1, "x": 2}', '{"x": 1, "y": 2}']), [true, false]);
  // More unnamed ones count where their first characters tell them apart (six bands of them).
  const banded = { type: "object", minProperties: 2, additionalProperties: { type: "integer" } };
  assert.deepEqual(verdicts(banded, ['{"a": 1, "x": 2}', '{"x": 1, "y": 2}', '{"Z": 1, "a": 2, "x": 3}', '{"x": 1}']), [
    true,
    false,
    true,
    false,
  ]);
  const error = refusal({ type: "object", minProperties: 7, additionalProperties: { type: "integer" } });
  assert.ok(error instanceof JsonSchemaError);
  assert.equal(error.keyword, "minProperties");
  assert.equal(error.pointer, "");
  // A `not` that only requires a key forbids it: no subtraction, so several unnamed properties.
  assert.deepEqual(verdicts({ type: "object", not: { required: ["a"] } }, ['{"x": 1}', '{"x": 1, "y": 2}', '{"a": 1}']), [
    true,
    true,
    false,
  ]);
  // Under a subtraction, at most one unnamed property (a repeated key would escape the check).
  const subtracted = { type: "object", not: { propertyNames: { const: "a" } } };
  assert.deepEqual(verdicts(subtracted, ['{"x": 1}', '{"x": 1, "y": 2}', '{"a": 1}', '{"a": 1, "x": 2}', "{}"]), [
    true,
    false,
    false,
    true,
    false,
  ]);
});

test("refusals name the keyword and the JSON pointer; strict: false turns them into warnings", () => {
  const schema = { type: "object", properties: { tags: { type: "array", uniqueItems: true } } };
  const error = refusal(schema);
  assert.ok(error instanceof JsonSchemaError);
  assert.equal(error.keyword, "uniqueItems");
  assert.equal(error.pointer, "/properties/tags/uniqueItems");
  const { warnings } = compileJsonSchema(schema, { strict: false });
  assert.deepEqual(
    warnings.map((w) => [w.keyword, w.pointer]),
    [["uniqueItems", "/properties/tags/uniqueItems"]],
  );
  const regex = refusal({ type: "string", format: "regex" });
  assert.ok(regex instanceof JsonSchemaError && regex.keyword === "format" && regex.pointer === "/format");
  assert.deepEqual(
    compileJsonSchema({ type: "string", format: "int32", foo: 1 }).warnings.map((w) => w.keyword),
    ["format", "foo"],
  );
});

test("dynamic references resolve in the dynamic scope: the outermost resource declaring the anchor", () => {
  // One $dynamicAnchor "n" in the document: the outermost one in any dynamic scope is that one.
  const single = { $defs: { n: { $dynamicAnchor: "n", type: "integer" } }, properties: { a: { $dynamicRef: "#n" } } };
  assert.deepEqual(verdicts(single, ['{"a": 1}', '{"a": "x"}']), [true, false]);
  // A target without the fragment's $dynamicAnchor is a plain $ref, whatever else declares it.
  const plain = {
    $id: "https://example.com/root",
    $defs: { n: { $anchor: "n", type: "integer" }, other: { $id: "other", $dynamicAnchor: "n", type: "string" } },
    properties: { a: { $dynamicRef: "#n" } },
  };
  assert.deepEqual(verdicts(plain, ['{"a": 1}', '{"a": "x"}']), [true, false]);
  // A generic list whose item type each user binds: the same subschema (list) reached through two
  // resources is two languages, so the compiler's memo must tell them apart.
  const lists = {
    $id: "https://example.com/main",
    properties: { strings: { $ref: "strings" }, numbers: { $ref: "numbers" } },
    $defs: {
      list: { $id: "list", type: "array", items: { $dynamicRef: "#item" }, $defs: { any: { $dynamicAnchor: "item" } } },
      strings: { $id: "strings", $ref: "list", $defs: { item: { $dynamicAnchor: "item", type: "string" } } },
      numbers: { $id: "numbers", $ref: "list", $defs: { item: { $dynamicAnchor: "item", type: "number" } } },
    },
  };
  assert.deepEqual(
    verdicts(lists, ['{"strings": ["a"], "numbers": [1]}', '{"strings": [1]}', '{"numbers": ["a"]}', '{"strings": [], "numbers": []}']),
    [true, false, false, true],
  );
  // Reached without a binding resource, the list's own default (any value) applies.
  const unbound = { $id: "https://example.com/main", $ref: "list", $defs: { list: lists.$defs.list } };
  assert.deepEqual(verdicts(unbound, ['["a", 1]']), [true]);
  // 2019-09: $recursiveRef goes to the outermost resource with "$recursiveAnchor": true, so an
  // extension's constraint (required v) reaches the tree's children.
  const tree = {
    $id: "https://example.com/tree",
    $recursiveAnchor: true,
    type: "object",
    properties: { v: { type: "integer" }, kids: { type: "array", items: { $recursiveRef: "#" } } },
  };
  const draft2019 = "https://json-schema.org/draft/2019-09/schema";
  const strict = {
    $schema: draft2019,
    $id: "https://example.com/strict",
    $recursiveAnchor: true,
    $ref: "tree",
    required: ["v"],
    $defs: { tree },
  };
  assert.deepEqual(verdicts(strict, ['{"v": 1, "kids": [{"v": 2}]}', '{"v": 1, "kids": [{}]}', '{"kids": []}']), [true, false, false]);
  assert.deepEqual(verdicts({ $schema: draft2019, ...tree }, ['{"v": 1, "kids": [{}]}', '{"v": 1, "kids": [{"v": "x"}]}']), [true, false]);
});

test("a pattern's characters are written raw or escaped as JSON allows: short escapes, \\u00XX in either case", () => {
  // quoteDfa: the pattern's DFA over decoded characters, re-spelled as JSON string text.
  const schema = { type: "string", pattern: String.raw`^[\u0000-\u001f"\\/a]*$` };
  const texts: [string, boolean][] = [
    ['"a"', true],
    [String.raw`"\n\t"`, true],
    [String.raw`"\u000a\u001f\u001F"`, true],
    [String.raw`"\"\\\/"`, true],
    ['"/a/"', true],
    ['"b"', false],
    ['"\n"', false], // a raw line feed inside a string is not JSON
    [String.raw`"\u0020"`, false],
    [String.raw`"\u0061"`, false], // "a" is never spelled as an escape
  ];
  assert.deepEqual(
    verdicts(
      schema,
      texts.map(([t]) => t),
    ),
    texts.map(([, valid]) => valid),
  );
});

test("a pattern valid only without the u flag is read as ECMA-262 reads it then, with a warning naming it", () => {
  const schema = { type: "object", properties: { id: { type: "string", pattern: "^Agenda\\:[0-9]+$" } }, required: ["id"] };
  const { dfa, warnings } = compileJsonSchema(schema, { strict: true });
  assert.deepEqual(
    warnings.map((w) => [w.keyword, w.pointer]),
    [["pattern", "/properties/id/pattern"]],
  );
  assert.match(warnings[0]!.message, /not valid with the u flag.*Annex B/);
  assert.deepEqual(
    ['{"id": "Agenda:12"}', '{"id": "Agenda\\\\:12"}', '{"id": "Agenda:"}'].map((t) => matchesString(dfa, t)),
    [true, false, false],
  );
  // Written for u (\p{…}) but invalid: refused, not read as the letters "p{…}".
  assert.throws(() => compileJsonSchema({ type: "string", pattern: "\\p{Nope}" }), /pattern at \/pattern:.*invalid ECMA-262 pattern/);
});

test("unevaluatedProperties in a subschema sees what that subschema's own subtree evaluates", () => {
  // allOf/0 evaluates only foo: bar, evaluated by a sibling, is unevaluated there (cousins).
  const cousins = { allOf: [{ properties: { foo: true }, unevaluatedProperties: false }], anyOf: [{ properties: { bar: true } }] };
  assert.deepEqual(verdicts(cousins, ['{"foo": 1}', '{"foo": 1, "bar": 2}', "{}"]), [true, false, true]);
  // Outer true, inner false: the inner schema evaluates nothing, so no property is allowed at all.
  const nested = { properties: { foo: { type: "string" } }, allOf: [{ unevaluatedProperties: false }], unevaluatedProperties: true };
  assert.deepEqual(verdicts(nested, ["{}", '{"foo": "x"}']), [true, false]);
  // What a $ref'd schema or a branch taken evaluates counts for the schema that reached it.
  const reached = {
    $defs: { base: { properties: { a: true } } },
    allOf: [{ $ref: "#/$defs/base", anyOf: [{ properties: { b: true } }], unevaluatedProperties: false }],
  };
  assert.deepEqual(verdicts(reached, ['{"a": 1}', '{"b": 1}', '{"c": 1}']), [true, true, false]);
  // A scoped non-false value applies to the keys its scope leaves unevaluated.
  const typed = { allOf: [{ properties: { n: true }, unevaluatedProperties: { type: "integer" } }] };
  assert.deepEqual(verdicts(typed, ['{"n": "s", "m": 1}', '{"m": "s"}']), [true, false]);
  // A nested unevaluatedProperties, whatever its value, evaluates every key for the schemas
  // around it: the keys its own scope leaves, it evaluates itself.
  const innerTrue = { properties: { foo: { type: "string" } }, allOf: [{ unevaluatedProperties: true }], unevaluatedProperties: false };
  assert.deepEqual(verdicts(innerTrue, ['{"foo": "foo", "bar": "bar"}', '{"foo": 1}']), [true, false]);
  const innerTyped = { allOf: [{ properties: { n: true }, unevaluatedProperties: { type: "integer" } }], unevaluatedProperties: false };
  assert.deepEqual(verdicts(innerTyped, ['{"n": "s", "m": 1}', '{"m": "s"}']), [true, false]);
  // The same for items.
  const items = { allOf: [{ prefixItems: [{ type: "string" }] }, { unevaluatedItems: true }], unevaluatedItems: false };
  assert.deepEqual(verdicts(items, ['["foo", 42, true]', "[42]"]), [true, false]);
  // A contains with minContains 0 asserts nothing, but the items it matches are evaluated.
  const counted = { contains: { type: "string" }, minContains: 0, unevaluatedItems: false };
  assert.deepEqual(verdicts(counted, ['["foo", "bar"]', '["foo", 1]', "[]"]), [true, false, true]);
  // A key it evaluates is still one the schema does not name: forbidAdditionalProperties drops it.
  const named = { properties: { foo: true }, allOf: [{ unevaluatedProperties: true }] };
  assert.deepEqual(verdicts(named, ['{"foo": 1, "bar": 2}', '{"foo": 1}']), [true, true]);
  assert.deepEqual(verdicts(named, ['{"foo": 1, "bar": 2}', '{"foo": 1}'], { forbidAdditionalProperties: true }), [false, true]);
});

test("malformed, remote, unsatisfiable and too complex schemas", () => {
  const cases: [unknown, new (...args: never[]) => Error, RegExp][] = [
    [{ type: 3 }, JsonSchemaError, /type at \/type/],
    [{ properties: { a: { maximum: "1" } } }, JsonSchemaError, /maximum at \/properties\/a\/maximum: must be a number/],
    [{ $ref: "other.json#/x" }, JsonSchemaError, /remote reference/],
    [{ $schema: "http://json-schema.org/draft-03/schema#" }, JsonSchemaError, /unknown dialect/],
    [{ type: "string", pattern: "(a)\\1" }, JsonSchemaError, /pattern at \/pattern:.*backreference/],
    [{ allOf: [{ type: "string" }, { type: "null" }] }, JsonSchemaUnsatisfiableError, /no JSON value satisfies/],
    [{ type: "integer", multipleOf: 1234567.891 }, JsonSchemaTooComplexError, /multipleOf too large/],
    [{ type: "string", pattern: "[ab]*a[ab]{20}" }, JsonSchemaTooComplexError, /too complex at \/pattern/],
  ];
  for (const [schema, type, message] of cases) {
    const error = refusal(schema);
    assert.ok(error instanceof type, `${JSON.stringify(schema)}: ${error.name}`);
    assert.match(error.message, message);
  }
});

test("drafts: draft-04 boolean exclusiveMinimum, draft-07 $ref siblings ignored, array items before 2020-12", () => {
  assert.deepEqual(
    verdicts({ $schema: "http://json-schema.org/draft-04/schema#", type: "integer", minimum: 3, exclusiveMinimum: true }, ["3", "4"]),
    [false, true],
  );
  const draft7 = {
    $schema: "http://json-schema.org/draft-07/schema#",
    definitions: { a: { type: "integer" } },
    $ref: "#/definitions/a",
    maximum: 0,
  };
  assert.deepEqual(verdicts(draft7, ["5", '"x"']), [true, false]);
  assert.deepEqual(
    compileJsonSchema(draft7).warnings.map((w) => w.keyword),
    ["$ref"],
  );
  const tuple = { $schema: "http://json-schema.org/draft-07/schema#", items: [{ type: "string" }], additionalItems: { type: "integer" } };
  assert.deepEqual(verdicts(tuple, ['["a", 1, 2]', "[1]", '["a", "b"]']), [true, false, false]);
  assert.match(refusal({ items: [{ type: "string" }] }).message, /items at \/items: must be a schema in draft 2020-12/);
});

test("what is subtracted holds texts of any depth (bugs the generation fuzz found)", () => {
  // Both branches hold {"t":[{"h":{}}]}; the subtracted "any value" once stopped two levels down.
  const nested = {
    oneOf: [{ properties: { t: { type: "array", items: { oneOf: [{ properties: { h: { type: "array" } } }, {}] } } } }, {}],
  };
  assert.deepEqual(verdicts(nested, ['{"t":[{"h":{}}]}', '{"t":[{"h":[]}]}'], { whitespace: "compact" }), [false, false]);
  // [[110,[{}]]] is in both branches; [[1, 2]] only in the second.
  const contains = { contains: { type: "array", contains: { const: 110 } } };
  const both = { type: "array", oneOf: [contains, { anyOf: [{ items: { type: "array", items: { type: "number" } } }, contains] }] };
  assert.deepEqual(verdicts(both, ["[[110, [{}]]]", "[[1, 2]]", "[]"]), [false, true, true]);
  // A date we write is one every reader accepts: no year 0000.
  assert.deepEqual(verdicts({ type: "string", format: "date" }, ['"0000-01-01"', '"0001-01-01"']), [false, true]);
});

test("what is subtracted counts brackets as deep as the text it is subtracted from can nest, at every depth", () => {
  // An element with "f" and "u" but no "d" is in neither branch. The "not" of the second is
  // subtracted at each unrolled level, counting free values only as deep as that level's texts
  // nest; one memoised at a deeper level (fewer levels left) once let this text through.
  const element = {
    type: "object",
    oneOf: [{ required: ["u", "d"] }, { allOf: [{ not: { required: ["u"] } }, { required: ["f"] }] }],
    properties: { d: { type: "integer" }, f: { type: "integer" }, u: { type: "array", items: { $ref: "#/$defs/e" } } },
    additionalProperties: false,
  };
  const schema = { $defs: { e: element }, $ref: "#/$defs/e" };
  const texts = ['{"f": 1, "u": [{"d": 1, "u": [{"d": 1, "u": [{"f": 1}]}]}]}', '{"f": 1, "u": [{"d": 1, "u": [{"f": 1}]}]}', '{"f": 1}'];
  assert.deepEqual(verdicts(schema, texts), [false, false, true]);
  // The nesting a subtraction's minuend reaches, read off its automaton (brackets in strings do not count).
  const nesting = (s: unknown): number => maxNesting(compileJsonSchema(s).dfa, 67);
  assert.equal(nesting({ type: "integer" }), 0);
  assert.equal(nesting({ type: "string" }), 0);
  assert.equal(nesting({ type: "array", items: { type: "array", items: { type: "string" } } }), 2);
  assert.equal(nesting({ properties: { a: { const: { b: [1] } } }, additionalProperties: false }), 3);
  assert.equal(nesting({ type: "object" }), 3);
});

test("over-approximations stay close: enum objects in any key order, oneOf and else subtract, an id's empty fragment", () => {
  // not {"a": false}: an object literal is subtracted in every key order, so {"a": 0} survives.
  assert.deepEqual(verdicts({ allOf: [{ enum: [{ a: 0 }] }, { not: { enum: [{ a: false }] } }] }, ['{"a": 0}']), [true]);
  assert.throws(
    () => compileJsonSchema({ allOf: [{ enum: [{ a: 0, b: 1 }] }, { not: { enum: [{ b: 1, a: 0 }] } }] }),
    JsonSchemaUnsatisfiableError,
  );
  // not oneOf[integer, ≥ 2]: 3 is in both branches (so in the not); 1, 2.5 and "s" in one each.
  const notOneOf = { not: { oneOf: [{ type: "integer" }, { minimum: 2 }] } };
  assert.deepEqual(verdicts(notOneOf, ["3", "1", "2.5", '"s"']), [true, false, false, false]);
  // O(S) counts an object's members up to a small minProperties/maxProperties (what it is
  // subtracted from never repeats a key): {"a": 1, "b": 2} is in both oneOf branches.
  const counted = {
    type: "object",
    properties: { a: { type: "integer" }, b: { type: "integer" } },
    oneOf: [{ required: ["a"] }, { minProperties: 2 }],
  };
  assert.deepEqual(verdicts(counted, ['{"a": 1, "b": 2}', '{"a": 1}', '{"b": 1}', '{"b": 1, "x": 2}']), [false, true, false, true]);
  assert.deepEqual(verdicts({ allOf: [{ enum: [{ foo: 1 }] }, { not: { maxProperties: 0 } }] }, ['{"foo": 1}']), [true]);
  // not oneOf[required bar, required foo] (MaskBench's Synthesized oneOf…not_2): {"bar": 8,
  // "foo": "foo"} is in both branches, so in the not. O(oneOf) subtracts each other branch's U,
  // written with its keys in any order: in the schema's order (foo first) it missed this text, and
  // the schema was refused as unsatisfiable.
  const bothBranches = {
    allOf: [
      { enum: [{ bar: 8, foo: "foo" }] },
      {
        not: {
          oneOf: [
            { properties: { bar: {}, baz: {} }, required: ["bar"] },
            { properties: { foo: {} }, required: ["foo"] },
          ],
        },
      },
    ],
  };
  assert.deepEqual(verdicts(bothBranches, ['{"bar": 8, "foo": "foo"}', '{"bar": 8, "foo": "bar"}']), [true, false]);
  const notExactlyOne = {
    type: "object",
    properties: { bar: { type: "integer" }, foo: { type: "integer" } },
    not: { oneOf: [{ required: ["bar"] }, { required: ["foo"] }] },
  };
  assert.deepEqual(verdicts(notExactlyOne, ['{"bar": 1, "foo": 2}', "{}", '{"bar": 1}', '{"foo": 1}']), [true, true, false, false]);
  const notAtMostOne = { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, not: { maxProperties: 1 } };
  assert.deepEqual(verdicts(notAtMostOne, ['{"a": 1, "b": 2}', '{"a": 1}', "{}"]), [true, false, false]);
  // Plain numbers share one automaton across schemas; bounded ones are their own, also in O.
  const between = { type: "number", allOf: [{ not: { minimum: 5 } }, { not: { maximum: 3 } }] };
  assert.deepEqual(verdicts(between, ["4", "4.5", "6", "2", "5", "3"]), [true, true, false, false, false, false]);
  // A draft-04 id ending in "#" names the resource itself: "#/definitions/…" is local.
  const draft4 = {
    $schema: "http://json-schema.org/draft-04/schema#",
    id: "https://example.com/s.json#",
    definitions: { n: { type: "integer" } },
    properties: { a: { $ref: "#/definitions/n" } },
  };
  assert.deepEqual(verdicts(draft4, ['{"a": 1}', '{"a": "x"}']), [true, false]);
});

test("hostile schemas are refused with typed errors, by counted limits, never a crash", () => {
  const defs: Record<string, unknown> = { d20000: { type: "integer" } };
  for (let i = 0; i < 20000; i++) defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
  const chain = refusal({ $defs: defs, $ref: "#/$defs/d0" });
  assert.ok(chain instanceof JsonSchemaTooComplexError && chain.limit === "referenceChain", chain.message);
  let nested: unknown = { type: "integer" };
  for (let i = 0; i < 5000; i++) nested = { allOf: [nested] };
  const deep = refusal(nested);
  assert.ok(deep instanceof JsonSchemaError, deep.message);
  assert.ok(deep.message.length < 400, "a long pointer is shortened in the message");
  // 20,000 enum values need about 4M units of work: under a budget of 1M the compile is refused
  // by its work limit, a 422 kept for good since the count is the same on any machine, and the
  // refusal comes as the count passes the limit, not after the work is done.
  const many = { enum: Array.from({ length: 20000 }, (_, i) => `v${i}`) };
  const { error: slow, units } = refusalWithWork(() => compileJsonSchema(many, { limits: { maxWork: 1_000_000 } }));
  assert.ok(slow instanceof JsonSchemaTooComplexError && slow.limit === "work", String(slow));
  assert.match(slow.message, /compiling needs more than 1000000 units of work/);
  assert.deepEqual(answer(slow), { status: "too_complex", lasting: true });
  assert.ok(units < 1_000_000 + WORK_LIMIT_SLACK, `${units} units counted`);
  // The wall-clock valve, when set, is a refusal of its own kind: a retryable 503, never kept.
  const valve = refusal(many, { limits: { timeoutMs: 0 } });
  assert.ok(valve instanceof JsonSchemaTooComplexError && valve.limit === "time", valve.message);
  assert.match(valve.message, /compiling took longer than 0 ms/);
  assert.deepEqual(answer(valve), { status: "overloaded", lasting: false });
});

test("a recursive schema is unrolled the same on every path (a Json type: arrays in objects in arrays…)", () => {
  const branches = [
    { type: "null" },
    { type: "array", items: { $ref: "#/$defs/J" } },
    { type: "object", additionalProperties: { $ref: "#/$defs/J" } },
  ];
  const viaAnyOf = compileJsonSchema({ $ref: "#/$defs/J", $defs: { J: { anyOf: branches } } }).dfa;
  const viaTypes = compileJsonSchema({
    $ref: "#/$defs/J",
    $defs: { J: { type: ["null", "array", "object"], items: { $ref: "#/$defs/J" }, additionalProperties: { $ref: "#/$defs/J" } } },
  }).dfa;
  // Every mix of arrays and objects three levels deep, whichever comes first.
  const documents = [
    "null",
    "[]",
    "{}",
    '[{"b": null}]',
    '{"a": [null]}',
    '{"a": [{"b": null}]}',
    '[{"a": [null]}]',
    '[[{"x": null}]]',
    '{"a": {"b": [null]}}',
  ];
  for (const text of documents) {
    assert.ok(matchesString(viaAnyOf, text), `anyOf form: ${text}`);
    assert.ok(matchesString(viaTypes, text), `type-list form: ${text}`);
  }
  for (const text of ["1", '[{"b": 1}]', '{"a": "x"}']) {
    assert.ok(!matchesString(viaAnyOf, text), text);
    assert.ok(!matchesString(viaTypes, text), text);
  }
});

test("several contains on one array: each counts its own items, with its own minContains and maxContains", () => {
  const schema = {
    type: "array",
    items: { type: "integer" },
    allOf: [{ contains: { const: 1 } }, { contains: { const: 2 }, maxContains: 1 }, { contains: { minimum: 5 }, minContains: 2 }],
  };
  const texts = [
    "[1, 2, 5, 6]",
    "[6, 2, 1, 5]",
    "[1, 2, 5]",
    "[1, 5, 6]",
    "[1, 2, 2, 5, 6]",
    "[1, 2, 5, 6, 7, 3]",
    "[]",
    "[2, 1, 9, 9, 1]",
  ];
  assert.deepEqual(verdicts(schema, texts), [true, true, false, false, false, true, false, true]);
  // One item may count for several contains: 3 is an integer and at least 3.
  const overlapping = { type: "array", allOf: [{ contains: { type: "integer" }, minContains: 2 }, { contains: { minimum: 3 } }] };
  assert.deepEqual(verdicts(overlapping, ["[1, 3]", "[3, 3]", "[1, 2]", "[3]", '["a", 4, 1]']), [true, true, false, false, true]);
  const tooMany = { type: "array", allOf: [1, 2, 3, 4].map((n) => ({ contains: { const: n } })) };
  const error = refusal(tooMany);
  assert.ok(error instanceof JsonSchemaError && error.keyword === "contains", String(error));
});

test("oneOf branches shown disjoint (a type, a required property's listed values or patterns) are not subtracted", () => {
  // An object branch beside an array branch: written in full, several unnamed keys included
  // (subtracting the other branch would have kept the minuend to one unnamed key, see dupFree).
  const rowOrRows = {
    oneOf: [
      { type: "object", patternProperties: { "^[a-z_]+$": { type: ["string", "number", "boolean"] } }, additionalProperties: false },
      { type: "array", items: { type: "string" } },
    ],
  };
  assert.deepEqual(verdicts(rowOrRows, ['{"id": 1, "name": "x", "is_active": true}', '["a"]', "[1]", '{"A": 1}']), [
    true,
    true,
    false,
    false,
  ]);
  // A discriminator: both branches require "kind" and list disjoint values for it.
  const tagged = {
    type: "object",
    oneOf: [
      { required: ["kind"], properties: { kind: { const: "a" }, v: { type: "integer" } } },
      { required: ["kind"], properties: { kind: { enum: ["b", "c"] }, v: { type: "string" } } },
    ],
  };
  assert.deepEqual(
    verdicts(tagged, ['{"kind": "a", "v": 1, "x": 2, "y": 3}', '{"kind": "b", "v": "s"}', '{"kind": "a", "v": "s"}', '{"v": 1}']),
    [true, true, false, false],
  );
  // Without a type, a non-object meets both branches (required and properties only read
  // objects): still subtracted, so a string is in neither oneOf's exactly-one.
  const untyped = {
    oneOf: [
      { required: ["k"], properties: { k: { const: 1 } } },
      { required: ["k"], properties: { k: { const: 2 } } },
    ],
  };
  assert.deepEqual(verdicts(untyped, ['"s"', '{"k": 1}', '{"k": 2}', '{"k": 3}']), [false, true, true, false]);
  // not: a type the value cannot have takes nothing away.
  assert.deepEqual(verdicts({ type: "object", not: { type: "string" } }, ['{"a": 1, "b": 2}', '"s"']), [true, false]);
  // Closed objects: a property one branch requires, the other does not allow; a required
  // property's types apart; listed values apart.
  const shapes = {
    type: "object",
    oneOf: [
      { required: ["$ref"], properties: { $ref: { type: "string" } }, additionalProperties: false },
      { required: ["type"], properties: { type: { type: "string" }, n: { type: "integer" } } },
      { required: ["type"], properties: { type: { type: "integer" } } },
    ],
  };
  assert.deepEqual(
    verdicts(shapes, [
      '{"$ref": "x"}',
      '{"type": "t", "n": 1, "a": 1, "b": 2}',
      '{"type": 1, "a": 1, "b": 2}',
      '{"type": "t", "$ref": "x"}',
    ]),
    [true, true, true, true],
  );
  assert.deepEqual(verdicts({ enum: ["a", "b"], not: { const: "c" } }, ['"a"', '"b"', '"c"']), [true, true, false]);
  // A required string property's patterns share no string (jsend's status), or a listed value
  // matches none of the other's: several unnamed keys in the data (not subtracted).
  const jsend = {
    type: "object",
    oneOf: [
      { required: ["status", "data"], properties: { status: { type: "string", pattern: "^success$" } } },
      { required: ["status", "data"], properties: { status: { type: "string", pattern: "^fail" } } },
      { required: ["status"], properties: { status: { const: "error" } } },
    ],
  };
  assert.deepEqual(
    verdicts(jsend, [
      '{"status": "success", "data": {"a": 1, "b": 2}}',
      '{"status": "failed", "data": {"a": 1, "b": 2}}',
      '{"status": "error", "x": 1, "y": 2}',
      '{"status": "fail!", "data": 1}',
      '{"status": "err", "data": 1}',
    ]),
    [true, true, true, true, false],
  );
  // Patterns that overlap ("^fail" and "ed$" both match "failed") are still subtracted.
  const overlapping = {
    type: "object",
    oneOf: [
      { required: ["s"], properties: { s: { type: "string", pattern: "^fail" } } },
      { required: ["s"], properties: { s: { type: "string", pattern: "ed$" } } },
    ],
  };
  assert.deepEqual(verdicts(overlapping, ['{"s": "fail"}', '{"s": "used"}', '{"s": "failed"}', '{"s": "fail", "x": 1, "y": 2}']), [
    true,
    true,
    false,
    false,
  ]);
  // What is not subtracted is still read: a malformed keyword in it is refused by name.
  const malformed = refusal({ type: "object", not: { type: "string", minLength: "x" } });
  assert.ok(malformed instanceof JsonSchemaError && malformed.message.includes("minLength"), malformed.message);
});

test("length bounds with a format: ones every text of the format meets change nothing, shorter ones cut", () => {
  // Emails are 3 to 253 characters: maxLength 255 adds nothing (the format's DFA is taken as it is,
  // without its product with the counted lengths), and codePointBounds says so.
  const email = { type: "string", format: "email" };
  const bounded = { type: "string", format: "email", minLength: 3, maxLength: 255 };
  assert.equal(compileJsonSchema(bounded).dfa.numStates, compileJsonSchema(email).dfa.numStates);
  assert.deepEqual(verdicts(bounded, ['"a@b.co"', '"a@b"', '"ab"']), verdicts(email, ['"a@b.co"', '"a@b"', '"ab"']));
  // maxLength 10 does cut emails.
  const short = { type: "string", format: "email", maxLength: 10 };
  assert.deepEqual(verdicts(short, ['"a@b.co"', '"abcde@b.co"', '"abcdef@b.co"']), [true, true, false]);
  assert.deepEqual(verdicts({ ...short, minLength: 7 }, ['"a@b.co"', '"ab@b.co"']), [false, true]);
  assert.deepEqual(codePointBounds({ kind: "repeat", item: { kind: "set", set: [0x61, 0x62] }, min: 2, max: -1 }), [2, Infinity]);
  assert.deepEqual(
    codePointBounds({
      kind: "alt",
      items: [
        { kind: "concat", items: [] },
        { kind: "repeat", item: { kind: "set", set: [0x61, 0x61] }, min: 1, max: 3 },
      ],
    }),
    [0, 3],
  );
});

test("a schema copying past 100,000 states of reused subschemas compiles sharing them as rules, the same language", () => {
  // leaf: 20 strings; mid: 20 leaves; the document: 20 mids. Copied, the document's one DFA is
  // past the 100,000-state limit (refused); the compile starts over with one rule per subschema.
  const members = (n: number, ref: string) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${ref}${i}`, { $ref: `#/$defs/${ref}` }]));
  const schema = {
    $defs: {
      leaf: {
        type: "object",
        properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`name${i}`, { type: "string" }])),
        additionalProperties: false,
      },
      mid: { type: "object", properties: members(20, "leaf"), additionalProperties: false },
    },
    type: "object",
    properties: members(20, "mid"),
    additionalProperties: false,
  };
  const compiled = compileJsonSchema(schema, { recursion: "stack" });
  assert.ok(compiled.rules !== undefined && compiled.rules.length === 3, "the document, mid and leaf as rules");
  const shared = compileJsonSchema(schema, { recursion: "stack", shareSubschemas: true });
  assert.deepEqual(
    compiled.rules.map((d) => d.numStates),
    shared.rules!.map((d) => d.numStates),
  );
  const network = new RuleNetworkAutomaton({ rules: compiled.rules });
  const accepts = (text: string): boolean => {
    const state = network.walk(network.start, text);
    return state >= 0 && network.isComplete(state);
  };
  assert.equal(accepts('{"mid3": {"leaf7": {"name2": "x", "name5": "y"}}, "mid9": {}}'), true);
  assert.equal(accepts('{"mid3": {"leaf7": {"name2": 1}}}'), false);
  assert.equal(accepts('{"mid20": {}}'), false);
});

test("a long string is a rule of its own, called from every value it types; a short one stays in the DFA", () => {
  const long = { type: "string", maxLength: 60 };
  const schema = {
    type: "object",
    properties: { a: long, b: long, c: { type: "array", items: long, maxItems: 3 }, d: { type: "string", maxLength: 5 } },
    required: ["a"],
    additionalProperties: false,
  };
  const compiled = compileJsonSchema(schema, { recursion: "stack" });
  // The document and one rule for the three places the 60-character string types a value.
  assert.ok(compiled.rules !== undefined && compiled.rules.length === 2, "the document and the long string's rule");
  const unrolled = compileJsonSchema(schema, { recursion: "unrolled" });
  assert.ok(unrolled.dfa.numStates > 4 * compiled.rules[0]!.numStates, "the document's DFA no longer copies the string");
  const network = new RuleNetworkAutomaton({ rules: compiled.rules });
  const texts = [
    '{"a": ""}',
    `{"a": "${"x".repeat(60)}", "b": "\u00e9\n", "c": ["", "${"é".repeat(60)}"], "d": "12345"}`,
    `{"a": "${"x".repeat(61)}"}`,
    `{"a": "x", "c": ["${"é".repeat(61)}"]}`,
    '{"a": "x", "c": ["", "", "", ""]}',
    '{"a": "x", "d": "123456"}',
    '{"b": "x"}',
    '{"a": 1}',
  ];
  for (const text of texts) {
    const state = network.walk(network.start, text);
    assert.equal(state >= 0 && network.isComplete(state), matchesString(unrolled.dfa, text), text);
  }
  // Exact shortest completions still: the network's plan is the DFA's.
  assert.equal(network.minBytesToComplete(network.start), unrolled.dfa.minBytesToAccept[unrolled.dfa.start]);
  // Under a set operation calls cannot be written: there the string is the DFA, as before.
  const negated = compileJsonSchema({ not: schema }, { recursion: "stack" });
  assert.equal(negated.rules, undefined);
});

test("a long string's call that would meet a free value's at one state is written in place: the network keeps its lexer-level view", () => {
  // After {"c": the first branch's value is the long string, the second branch's a free value,
  // a call of the free-value rule: both calls at one state.
  const long = { type: "string", maxLength: 60 };
  const schema = { anyOf: [{ type: "object", properties: { c: long } }, { type: "object" }] };
  const options = { recursion: "stack", freeValuesAnyDepth: true } as const;
  const withCalls = compileJsonSchema(schema, options);
  assert.equal(withCalls.stringRulesWritten, true);
  assert.equal(ruleNetworkAutomaton({ rules: withCalls.rules! }).lexerLevel, false, "two calls at one state");
  const served = compileServedSchema(schema, options);
  assert.ok(served.kind === "rules");
  const network = ruleNetworkAutomaton({ rules: served.rules });
  assert.equal(network.lexerLevel, true);
  assert.equal(served.rules.length, 2, "the document and the free-value rule: the string in place");
  const accepts = (text: string): boolean => {
    const state = network.walk(network.start, text);
    return state >= 0 && network.isComplete(state);
  };
  assert.equal(accepts(`{"c": "${"x".repeat(60)}"}`), true);
  assert.equal(accepts(`{"c": "${"x".repeat(61)}"}`), true, "the free branch holds it");
  assert.equal(accepts('{"c": 1, "d": [[[[{"e": null}]]]]}'), true);
});

test("a compile counts the same work whatever the thread compiled before (tables kept across compiles are charged again)", () => {
  // The pattern's strings and the free values are DFAs kept across compiles, and so are what
  // the subset construction derives of them (their edges, their sparse rows): a compile that
  // finds them made is charged their work all the same, so a work limit's verdict is one.
  const schema = {
    type: "object",
    properties: {
      a: { type: "string", pattern: "^q[0-9]{3}(x|yy)z$" },
      b: { type: "array", items: { type: "string", pattern: "^q[0-9]{3}(x|yy)z$" } },
    },
  };
  const options = { recursion: "stack", freeValuesAnyDepth: true } as const;
  const workOf = (): number => {
    const before = regexClock.used;
    compileJsonSchema(schema, options);
    return regexClock.used - before;
  };
  const first = workOf();
  const again = [workOf(), workOf()];
  assert.deepEqual(again, [first, first]);
});

test("a language used twice, embedded unminimized, is the language its copies written out give, and a set operation over it too", () => {
  // `shape` used twice through $ref (its second use embedded as its subset construction's DFA,
  // not minimized) against the same subschema written out at each place (each a graph of its own).
  const shape = {
    type: "object",
    properties: { r: { type: "integer" }, w: { type: "integer" }, h: { type: "integer" } },
    oneOf: [{ required: ["r"] }, { required: ["w", "h"] }],
    additionalProperties: false,
  };
  const around = (first: unknown, second: unknown) => ({
    type: "object",
    properties: { a: first, b: second },
    required: ["a", "b"],
    additionalProperties: false,
  });
  const options = { recursion: "stack" as const };
  const shared = compileJsonSchema({ $defs: { shape }, ...around({ $ref: "#/$defs/shape" }, { $ref: "#/$defs/shape" }) }, options);
  const written = compileJsonSchema(around(shape, structuredClone(shape)), options);
  assert.equal(shared.rules, undefined);
  // Minimal DFAs are canonical: equal tables, the same language.
  assert.deepEqual(minimalDfa(shared.dfa), minimalDfa(written.dfa));
  assert.deepEqual(
    ['{"a":{"r":1},"b":{"w":1,"h":2}}', '{"a":{"r":1},"b":{"r":1,"w":1,"h":2}}', '{"a":{"w":1},"b":{"r":1}}'].map((t) =>
      matchesString(shared.dfa, t),
    ),
    [true, false, false],
  );
  // A `oneOf` takes each branch's language as a minuend and as the others' subtrahend: from its
  // second use on, an unminimized DFA, minimized for each product (Handwritten oneof5_2).
  const branches = {
    oneOf: [{ $ref: "#/$defs/x1" }, { $ref: "#/$defs/x2" }, { $ref: "#/$defs/x3" }],
    $defs: {
      x1: { items: { multipleOf: 10, maximum: 20 } },
      x2: { items: { multipleOf: 5, maximum: 80 } },
      x3: { items: { multipleOf: 5, maximum: 60 } },
    },
  };
  const { dfa } = compileJsonSchema(branches, options);
  assert.deepEqual(
    ["[70]", "[65, 80]", "[]", "[50]", "[10]", '"x"', "[25]", "[-10]"].map((t) => matchesString(dfa, t)),
    [true, true, false, false, false, false, false, false],
  );
});
