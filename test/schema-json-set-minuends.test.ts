/**
 * What a set operation's minuend can hold (schema/json-schema: objects.ts, values.ts). A minuend
 * is written without repeated keys, so with one key the schema does not name at most; schemas
 * that need two such keys (a `not` of `propertyNames`) had no value we could write and were
 * refused as unsatisfiable. Now a few unnamed keys are listed as members of their own, and so are
 * the keys the subtrahends mention; an enum value is checked against the rest of its schema by
 * its value (a number past our exponent digits) and as deep as it nests. Shown on MaskBench's
 * Handwritten and Synthesized shapes: they compile, the texts Python's jsonschema calls valid are
 * accepted, and every text sampled from them is valid under Python's jsonschema.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { matchesString, sampleString, type ByteDfa } from "../src/regex/index.js";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { JSON_SCHEMA_WORK_FACTOR } from "../src/compile/index.js";
import { defaultConfig } from "../src/config.js";
import { compileJsonSchema, DEFAULT_JSON_SCHEMA_OPTIONS } from "../src/schema/json-schema/compile.js";
import { apart } from "../src/schema/json-schema/facts.js";
import { seededRandom } from "./support/generate-harness.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { REPO_ROOT } from "./support/paths.js";

/** Compiles `schema`; the texts in `accepted` are accepted and valid, 300 sampled texts are valid. */
function check(schema: object, accepted: readonly string[]): void {
  const { dfa } = compileJsonSchema(schema);
  for (const text of accepted) assert.ok(matchesString(dfa, text), text);
  const random = seededRandom(59);
  const sampled = Array.from({ length: 300 }, () => sampleString(dfa, random, { maxBytes: 300, stopProbability: 0.08 })!);
  const texts = [...accepted, ...sampled];
  pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text }))).forEach((v, i) => assert.equal(v, "valid", texts[i]));
}

/**
 * `dfa` (compiled from `schema`) accepts `accepted` and refuses `rejected`, and Python's
 * jsonschema agrees on each and calls 200 texts sampled from the DFA valid.
 */
function checkVerdicts(schema: object, dfa: ByteDfa, accepted: readonly string[], rejected: readonly string[], seed: number): void {
  for (const text of accepted) assert.ok(matchesString(dfa, text), text);
  for (const text of rejected) assert.ok(!matchesString(dfa, text), text);
  const random = seededRandom(seed);
  const sampled = Array.from({ length: 200 }, () => sampleString(dfa, random, { maxBytes: 300, stopProbability: 0.08 })!);
  const texts = [...accepted, ...rejected, ...sampled];
  const expected = [...accepted.map(() => "valid"), ...rejected.map(() => "invalid"), ...sampled.map(() => "valid")];
  const written = JSON.stringify(schema);
  pythonVerdicts(texts.map((text) => ({ schema: written, text }))).forEach((v, i) => assert.equal(v.split(":")[0], expected[i], texts[i]));
}

const someKeyIn = (keys: string[]) => ({ propertyNames: { not: { enum: keys } } });

test("two keys of a finite unnamed language under a `not` of propertyNames (Handwritten pnmp)", () => {
  const schema = {
    type: "object",
    patternProperties: { "^[0-9]$": { type: "array", minItems: 2 } },
    additionalProperties: false,
    not: { anyOf: [someKeyIn(["1", "3"]), someKeyIn(["2", "3"]), someKeyIn(["2", "4", "5"]), someKeyIn(["1", "2", "5"])] },
    maxProperties: 2,
  };
  check(schema, ['{"2": [1, 2], "3": [true, null]}', '{"1": [1, 2], "2": [1, 2]}']);
  const { dfa } = compileJsonSchema(schema);
  // One key cannot meet all four; a repeated one is not written.
  for (const text of ['{"2": [1, 2]}', '{"3": [1, 2], "3": [1, 2]}', '{"2": [1, 2], "3": [1]}']) assert.ok(!matchesString(dfa, text), text);
});

test("keys the subtrahends name, where the unnamed keys are an infinite language (Handwritten notnames4)", () => {
  const mustHave = (key: string) => ({ not: { propertyNames: { not: { const: key } } } });
  const schema = {
    type: "object",
    allOf: [
      mustHave("a4"),
      mustHave("a4d3"),
      { patternProperties: { "3": { type: "boolean" } } },
      { propertyNames: { pattern: "^(\\w\\d)+$" } },
    ],
  };
  check(schema, ['{"a4": 1, "a4d3": true}', '{"a4": "x", "a4d3": false}']);
  const { dfa } = compileJsonSchema(schema);
  for (const text of ['{"a4": 1}', '{"a4": 1, "a4d3": 2}', '{"a4": 1, "a4": 2}']) assert.ok(!matchesString(dfa, text), text);
});

test("an enum value checked by its value and as deep as it nests (Synthesized not_2)", () => {
  const arraysOf = (levels: number): object => (levels === 0 ? { type: "number" } : { type: "array", items: arraysOf(levels - 1) });
  check({ allOf: [{ enum: [[[[["1"]], [[2], [3]]], [[[4], [5], [6]]]]] }, { not: arraysOf(4) }] }, [
    '[[[["1"]], [[2], [3]]], [[[4], [5], [6]]]]',
  ]);
  check({ allOf: [{ enum: [[[[[1]], [[2], [3]]], [[[4], [5], [6]]]]] }, { not: { not: arraysOf(4) } }] }, [
    "[[[[1]], [[2], [3]]], [[[4], [5], [6]]]]",
  ]);
  // The value is checked, not written as the rest writes it: 1e+308 has three exponent digits.
  check({ enum: [1e308, 1.5e-7, "x"] }, ["1e+308", "1.5e-7"]);
  // Where the schema asks for an integer, its digits are written.
  check({ const: 1e21, type: "integer", minimum: 1e20 }, ["1000000000000000000000"]);
  const { dfa } = compileJsonSchema({ enum: [1e21, 2], maximum: 1e20 });
  assert.ok(!matchesString(dfa, "1e+21"));
  assert.ok(matchesString(dfa, "2"));
});

test("an enum integer also as a float with one zero decimal: 0.0 for 0, 2.0 for 2 (Synthesized const_id27)", () => {
  // JSON.parse reads the schema's {"a": 0.0} as 0; instances write it 0.0, and JSON equality is by value.
  check({ allOf: [{ enum: [{ a: 0.0 }] }, { not: { enum: [{ a: false }] } }] }, ['{"a": 0.0}', '{"a": 0}']);
  check({ enum: [2, 1.5, "x"] }, ["2", "2.0", "1.5"]);
  check({ type: "array", items: { enum: [1, 2] }, uniqueItems: true }, ["[1, 2.0]", "[2.0, 1.0]"]);
  assert.ok(!matchesString(compileJsonSchema({ type: "array", items: { enum: [1, 2] }, uniqueItems: true }).dfa, "[1, 1.0]"));
  const { dfa } = compileJsonSchema({ enum: [2, 1.5] });
  for (const text of ["2.01", "1.51", "20", "1.05"]) assert.ok(!matchesString(dfa, text), text);
  // Where the rest does not write a spelling, it is not written: draft-04's integer is no 2.0.
  const draft4 = compileJsonSchema({ $schema: "http://json-schema.org/draft-04/schema#", type: "integer", enum: [2] }).dfa;
  assert.deepEqual(
    ["2", "2.0"].map((text) => matchesString(draft4, text)),
    [true, false],
  );
});

test("two unnamed keys of one band where one unnamed key left no value: one band per first character (Handwritten object6)", () => {
  const someKeyHas = (letter: string) => ({ not: { propertyNames: { not: { pattern: letter } } } });
  const schema = {
    type: "object",
    allOf: [someKeyHas("a"), someKeyHas("b"), someKeyHas("c"), someKeyHas("d"), { propertyNames: { pattern: "^..$" } }],
    maxProperties: 2,
  };
  check(schema, ['{"ab": 1, "cd": 2}', '{"ac": [], "bd": null}']);
  const { dfa } = compileJsonSchema(schema);
  // In band order, each band once: "cd" before "ab" is not written, nor one key alone.
  for (const text of ['{"cd": 1, "ab": 2}', '{"ab": 1}', '{"ab": 1, "cd": 2, "ad": 3}']) assert.ok(!matchesString(dfa, text), text);
});

test("minProperties past the keys a schema names: unnamed keys told apart by their first character (Handwritten allOfPProp)", () => {
  // Every key of at least four characters, with an "a" and a "b" in it: too many to list.
  const schema = {
    type: "object",
    allOf: [
      { patternProperties: { "^[^\\n\\r]{1,3}$": false }, additionalProperties: true },
      { patternProperties: { a: true }, additionalProperties: false },
      { patternProperties: { b: true }, additionalProperties: false },
    ],
    minProperties: 4,
  };
  check(schema, [
    '{"1abc": 1, "Kab_": null, "bear": [], "nabs": {}}',
    '{"1abc": 1, "Kab_": null, "bear": [], "nabs": {}, "\u00e9ab_": "x"}',
  ]);
  const { dfa } = compileJsonSchema(schema);
  // Two keys of one band (both from a–m) are not written, whatever they are: they could repeat.
  for (const text of ['{"1abc": 1, "Kab_": null, "bear": [], "bare": {}}', '{"1abc": 1, "Kab_": null, "bear": []}'])
    assert.ok(!matchesString(dfa, text), text);
  // Past the bands (six, the empty key one of them) it is still refused, by name.
  assert.throws(() => compileJsonSchema({ type: "object", minProperties: 7 }), /minProperties 7 needs more than/);
  check({ type: "object", properties: { id: { type: "integer" } }, required: ["id"], minProperties: 3, maxProperties: 3 }, [
    '{"id": 1, "Name": "x", "tag": true}',
  ]);
});

test("oneOf branches told apart by an optional key's listed values: with the key none is subtracted (Github_medium o35868)", () => {
  // Ten address shapes, none requiring "country", each listing its own countries: each branch
  // minus the nine others was 90 products of any-order objects, 337M units of work, refused at
  // the service's default limit. With "country" written, the branches share no value; without
  // it, a branch falls inside the catch-all shape (the fewest other properties) at once.
  const file = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench", "Github_medium---o35868.json");
  const address = JSON.parse(readFileSync(file, "utf8")).schema.definitions.address;
  const serviceLimit = JSON_SCHEMA_WORK_FACTOR * defaultConfig().compileMaxWork;
  const { dfa } = compileJsonSchema(address, { limits: { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: serviceLimit } });
  const accepted = [
    '{"country": "USA", "state": "CA", "postalCode": "94043", "street": "1 Main St"}',
    '{"country": "ITA", "state": "RM"}',
    '{"country": "FRA", "postalCode": "75001", "state": "anything"}', // "state" is not named here: it comes last
    '{"state": "nowhere"}',
    '{"postalCode": "12345678901"}',
  ];
  const rejected = [
    "{}", // every shape holds it
    '{"state": "CA"}', // the USA shape and the catch-all
    '{"country": "USA", "state": "RM"}', // none
    '{"country": "FRA", "postalCode": "123456789012345678901234567890123456789012345678901234567890"}',
  ];
  checkVerdicts(address, dfa, accepted, rejected, 35868);
});

test("the costliest MaskBench schema that compiles at all is served at the service's default work limit (Handwritten notnames10)", () => {
  // `not`s of `propertyNames` nested in `patternProperties`, under a `const`: 175M units of work,
  // past four times TRELLIS_COMPILE_MAX_WORK (128M), the JSON Schema limit before.
  const file = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench", "Handwritten---notnames10.json");
  const { schema, tests } = JSON.parse(readFileSync(file, "utf8")) as { schema: object; tests: { valid: boolean; data: unknown }[] };
  const serviceLimit = JSON_SCHEMA_WORK_FACTOR * defaultConfig().compileMaxWork;
  const { dfa } = compileJsonSchema(schema, {
    recursion: "stack",
    freeValuesAnyDepth: true,
    limits: { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: serviceLimit },
  });
  // Instances as MaskBench writes them (Python's json.dumps).
  const dumps = (v: unknown): string =>
    v !== null && typeof v === "object"
      ? `{${Object.entries(v)
          .map(([k, x]) => `${JSON.stringify(k)}: ${dumps(x)}`)
          .join(", ")}}`
      : JSON.stringify(v);
  assert.ok(tests.some((t) => t.valid));
  for (const { valid, data } of tests) assert.equal(matchesString(dfa, dumps(data)), valid, dumps(data));
});

test('a `not` that lists values tells branches apart: a country listed against a catch-all\'s "none of these" (Github_easy o35866)', () => {
  const listed = (values: string[], excluded: string[] = []) => ({
    types: new Set(["string"]),
    values: values.length === 0 ? null : new Set(values.map((v) => JSON.stringify(v))),
    excluded: new Set(excluded.map((v) => JSON.stringify(v))),
    patterns: [],
  });
  assert.ok(apart(listed(["CAN"]), listed([], ["CAN", "MEX", "USA"])));
  assert.ok(apart(listed([], ["CAN", "MEX"]), listed(["MEX", "CAN"])));
  assert.ok(!apart(listed(["CAN", "FRA"]), listed([], ["CAN", "MEX", "USA"])));
  // Three countries and a catch-all that names none of them: with "country" written, no branch
  // is subtracted from another; without it, each falls inside the catch-all at once. Half the
  // work it was (69M units), and the same language.
  const file = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench", "Github_easy---o35866.json");
  const address = JSON.parse(readFileSync(file, "utf8")).schema.definitions.address;
  const { dfa } = compileJsonSchema(address, { limits: { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: 50_000_000 } });
  const accepted = ['{"country": "CAN", "state": "AB"}', '{"country": "FRA", "state": "Paris"}', '{"state": "nowhere"}'];
  const rejected = ["{}", '{"country": "CAN", "state": "Paris"}', '{"state": "AB"}'];
  checkVerdicts(address, dfa, accepted, rejected, 35866);
});
