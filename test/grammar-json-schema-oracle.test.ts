// The JSON Schema front-end against Python's `jsonschema` (exact decimals, see
// support/json-schema-oracle.ts), on real schemas (a spread of MaskBench's 8,882): every text we
// may write is valid, and so is every near miss (a text one edit away from one we write) that
// our automaton still accepts. An invalid text the automaton accepts is the bug this hunts.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test } from "node:test";
import {
  compileJsonSchema,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  type WhitespaceStyle,
} from "../src/schema/index.js";
import { matchesString, sampleString, type ByteDfa } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { REPO_ROOT } from "./support/paths.js";

const MASKBENCH = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench");
const SCHEMAS = 240;
const SAMPLES_PER_SCHEMA = 4;
const MUTANTS_PER_SAMPLE = 6;
const EDIT_ALPHABET = ' "{}[],:0123456789-.eEtrufalsn\\abcxyzé\n';

function mutate(text: string, random: () => number): string {
  const chars = [...text];
  const at = Math.floor(random() * (chars.length + 1));
  const ch = EDIT_ALPHABET[Math.floor(random() * EDIT_ALPHABET.length)]!;
  const edit = Math.floor(random() * 3);
  if (edit === 0 && at < chars.length) chars[at] = ch;
  else if (edit === 1 && at < chars.length) chars.splice(at, 1);
  else chars.splice(at, 0, ch);
  return chars.join("");
}

type Checked = { schema: string; text: string; kind: "sample" | "mutant" };

/** Texts sampled from each schema's automaton (per whitespace style), and the near misses it accepts. */
function samplesAndNearMisses(
  schemas: readonly unknown[],
  styles: readonly WhitespaceStyle[],
  perStyle: number,
  random: () => number,
): Checked[] {
  const batch: Checked[] = [];
  for (const schema of schemas) {
    for (const whitespace of styles) {
      const { dfa } = compileJsonSchema(schema, { whitespace });
      for (let k = 0; k < perStyle; k++) {
        const text = sampleString(dfa, random, { maxBytes: 400, stopProbability: 0.1 });
        if (text === null) continue;
        batch.push({ schema: JSON.stringify(schema), text, kind: "sample" });
        for (let m = 0; m < MUTANTS_PER_SAMPLE; m++) {
          const mutant = mutate(text, random);
          if (mutant !== text && matchesString(dfa, mutant)) batch.push({ schema: JSON.stringify(schema), text: mutant, kind: "mutant" });
        }
      }
    }
  }
  return batch;
}

/** Every text valid per Python's jsonschema, and at least `atLeast` of them. */
function assertAllValid(batch: readonly Checked[], atLeast: number): void {
  const verdicts = pythonVerdicts(batch);
  const wrong = batch.flatMap((b, i) => (verdicts[i] === "valid" ? [] : [`${b.kind} ${b.text} under ${b.schema}: ${verdicts[i]}`]));
  assert.deepEqual(wrong, []);
  assert.ok(batch.length > atLeast, `${batch.length} texts`);
}

test("every text a MaskBench schema's automaton accepts (samples and near misses) is valid per Python's jsonschema", {
  timeout: 600_000,
}, () => {
  const files = readdirSync(MASKBENCH)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const stride = Math.max(1, Math.floor(files.length / SCHEMAS));
  const random = seededRandom(20261126);
  const batch: { schema: string; text: string; file: string; kind: "sample" | "mutant" }[] = [];
  const outcome = { compiled: 0, refused: 0, tooComplex: 0, unsatisfiable: 0, samples: 0, mutantsAccepted: 0, mutantsRefused: 0 };
  for (let i = 0; i < files.length && i / stride < SCHEMAS; i += stride) {
    const file = files[i]!;
    const schema = (JSON.parse(readFileSync(resolve(MASKBENCH, file), "utf8")) as { schema: unknown }).schema;
    let dfa: ByteDfa;
    try {
      dfa = compileJsonSchema(schema, { limits: { timeoutMs: 5_000 } }).dfa;
    } catch (error) {
      if (error instanceof JsonSchemaError) outcome.refused++;
      else if (error instanceof JsonSchemaTooComplexError) outcome.tooComplex++;
      else if (error instanceof JsonSchemaUnsatisfiableError) outcome.unsatisfiable++;
      else throw new Error(`${file}: ${(error as Error).stack}`);
      continue;
    }
    outcome.compiled++;
    const schemaText = JSON.stringify(schema);
    for (let k = 0; k < SAMPLES_PER_SCHEMA; k++) {
      const text = sampleString(dfa, random, { maxBytes: 400, stopProbability: 0.05 });
      if (text === null) continue;
      outcome.samples++;
      batch.push({ schema: schemaText, text, file, kind: "sample" });
      for (let m = 0; m < MUTANTS_PER_SAMPLE; m++) {
        const mutant = mutate(text, random);
        if (mutant === text) continue;
        if (matchesString(dfa, mutant)) {
          outcome.mutantsAccepted++;
          batch.push({ schema: schemaText, text: mutant, file, kind: "mutant" });
        } else outcome.mutantsRefused++;
      }
    }
  }
  const verdicts = pythonVerdicts(batch);
  const wrong = batch
    .map((item, i) => ({ ...item, verdict: verdicts[i]! }))
    .filter((item) => item.verdict !== "valid")
    .map((item) => `${item.file} (${item.kind}) ${JSON.stringify(item.text).slice(0, 300)} → ${item.verdict}`);
  console.log(JSON.stringify(outcome));
  assert.ok(outcome.compiled >= SCHEMAS * 0.6, `only ${outcome.compiled} of the ${SCHEMAS} schemas compiled`);
  assert.ok(outcome.samples >= outcome.compiled * 2, "too few samples");
  assert.deepEqual(wrong.slice(0, 20), [], `${wrong.length} accepted texts are not valid`);
});

test("minProperties over a few unnamed keys: each is a member of its own, written once; samples and near misses valid per Python", () => {
  const schemas: unknown[] = [
    { type: "object", propertyNames: { enum: ["x", "y", "z"] }, minProperties: 2 },
    {
      type: "object",
      patternProperties: { "^[a-d]$": { type: "integer" } },
      additionalProperties: false,
      required: ["d"],
      minProperties: 3,
    },
    { type: "object", properties: { a: {} }, propertyNames: { enum: ["a", "b", "c"] }, minProperties: 3, maxProperties: 3 },
    // Too many to list: one key from each band of first characters.
    { type: "object", properties: { id: { type: "integer" } }, minProperties: 4, additionalProperties: { type: "boolean" } },
  ];
  assertAllValid(samplesAndNearMisses(schemas, ["default"], 16, seededRandom(13)), 30);
  const xyz = compileJsonSchema(schemas[0]).dfa;
  assert.deepEqual(
    ['{"x": 1, "y": 2}', '{"x": 1, "y": 2, "z": 3}', '{"x": 1}', '{"x": 1, "x": 2}', '{"x": 1, "w": 2}'].map((t) => matchesString(xyz, t)),
    [true, true, false, false, false],
  );
  // More unnamed keys than bands: still refused by name (distinct keys cannot be counted).
  assert.throws(
    () => compileJsonSchema({ type: "object", minProperties: 7 }),
    (e: unknown) => e instanceof JsonSchemaError && e.keyword === "minProperties",
  );
});

test("uniqueItems over a few values: samples and accepted near misses are valid per Python, duplicates (by JSON equality) refused", () => {
  const schemas: unknown[] = [
    { type: "array", items: { enum: ["red", "green", "blue"] }, uniqueItems: true },
    { type: "array", items: { enum: [1, 2.5, "1", null, true] }, uniqueItems: true, minItems: 2 },
    { type: "array", prefixItems: [{ const: "id" }, { enum: ["id", "name"] }], items: { enum: ["name", "x"] }, uniqueItems: true },
    { type: "array", items: { type: "boolean" }, uniqueItems: true },
    { type: "array", items: { type: "integer", minimum: -2, maximum: 3 }, uniqueItems: true, maxItems: 4 },
    { type: "array", items: { enum: [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, [1, 2]] }, uniqueItems: true },
    {
      type: "object",
      properties: { tags: { type: "array", items: { enum: ["x", "y"] }, uniqueItems: true, minItems: 1 } },
      required: ["tags"],
    },
  ];
  assertAllValid(samplesAndNearMisses(schemas, ["default", "compact", "indented"], 12, seededRandom(7)), 100);
  // Equal values in other spellings are one value: 1 and 1.0, an object's two key orders.
  const numbers = compileJsonSchema({ type: "array", items: { enum: [1, 2] }, uniqueItems: true }).dfa;
  assert.deepEqual(
    ["[1, 2]", "[2, 1]", "[1, 1]", "[1]", "[]"].map((t) => matchesString(numbers, t)),
    [true, true, false, true, true],
  );
  const objects = compileJsonSchema(schemas[5]).dfa;
  const written = ['[{"a": 1, "b": [1, 2]}, [1, 2]]', '[{"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}]'];
  assert.deepEqual(
    written.map((t) => matchesString(objects, t)),
    [true, false],
  );
  // With prefixItems, the values of every position count together; items: false ends the array.
  const positional = compileJsonSchema({
    type: "array",
    prefixItems: [{ type: "boolean" }, { type: "boolean" }],
    items: false,
    uniqueItems: true,
  }).dfa;
  const arrays = ["[true, false]", "[false, true]", "[true, true]", "[true]", "[true, false, true]"];
  assert.deepEqual(
    arrays.map((t) => matchesString(positional, t)),
    [true, true, false, true, false],
  );
  // More values than that, or items of any value after the positional ones: still refused, by name.
  for (const schema of [
    { type: "array", items: { type: "string" }, uniqueItems: true },
    { type: "array", items: { enum: [1, 2, 3, 4, 5, 6, 7, 8, 9] }, uniqueItems: true },
    { type: "array", prefixItems: [{ type: "boolean" }], uniqueItems: true },
  ]) {
    assert.throws(
      () => compileJsonSchema(schema),
      (e: unknown) => e instanceof JsonSchemaError && e.keyword === "uniqueItems",
    );
  }
  assert.throws(
    () => compileJsonSchema({ type: "array", items: { enum: [1, 2] }, uniqueItems: true, minItems: 3 }),
    JsonSchemaUnsatisfiableError,
  );
});

test("unevaluatedProperties and unevaluatedItems in any subschema, beside contains too: samples and accepted near misses valid per Python", () => {
  const schemas: unknown[] = [
    { allOf: [{ properties: { a: { type: "integer" } } }], properties: { b: { type: "string" } }, unevaluatedProperties: false },
    {
      anyOf: [
        { properties: { a: { const: 1 } }, required: ["a"] },
        { properties: { b: { const: 2 } }, required: ["b"] },
      ],
      unevaluatedProperties: false,
    },
    {
      $ref: "#/$defs/base",
      properties: { c: { type: "null" } },
      unevaluatedProperties: { type: "number" },
      $defs: { base: { properties: { a: { type: "boolean" } } } },
    },
    {
      if: { properties: { kind: { const: "x" } }, required: ["kind"] },
      // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, not a thenable.
      then: { properties: { x: { type: "integer" } } },
      else: { properties: { y: { type: "string" } } },
      unevaluatedProperties: false,
    },
    { properties: { a: {} }, patternProperties: { "^x-": { type: "string" } }, unevaluatedProperties: false },
    { properties: { a: {} }, dependentSchemas: { a: { properties: { b: { type: "integer" } } } }, unevaluatedProperties: false },
    { required: ["z"], properties: { a: {} }, unevaluatedProperties: { type: "boolean" } },
    { type: "array", prefixItems: [{ type: "integer" }], unevaluatedItems: false },
    { type: "array", allOf: [{ prefixItems: [{ type: "integer" }, { type: "string" }] }], unevaluatedItems: { type: "boolean" } },
    { type: "object", properties: { inner: { properties: { p: {} }, unevaluatedProperties: false } } },
    // A schema that is only a $ref (and definitions): the target is the scope.
    {
      $ref: "#/$defs/closed",
      $defs: { closed: { properties: { n: { type: "integer" } }, allOf: [{ properties: { m: {} } }], unevaluatedProperties: false } },
    },
    {
      type: "object",
      properties: { wrapped: { $ref: "#/$defs/pair" } },
      $defs: { pair: { prefixItems: [{}, {}], unevaluatedItems: false } },
    },
  ];
  assertAllValid(samplesAndNearMisses(schemas, ["default"], 16, seededRandom(11)), 200);
  // What the scope does not evaluate is held to it; what it evaluates is not.
  const closed = compileJsonSchema(schemas[0]).dfa;
  assert.deepEqual(
    // (Properties are written in the order merged: the schema's own, then allOf's.)
    ['{"b": "x", "a": 1}', '{"a": 1}', '{"c": 1}', "{}"].map((t) => matchesString(closed, t)),
    [true, true, false, true],
  );
  const onlyRequired = compileJsonSchema(schemas[6]).dfa;
  assert.deepEqual(
    ['{"z": true}', '{"z": 1}', '{"a": 1, "z": false}'].map((t) => matchesString(onlyRequired, t)),
    [true, false, true],
  );
  const tuple = compileJsonSchema(schemas[7]).dfa;
  assert.deepEqual(
    ["[1]", "[]", "[1, 2]"].map((t) => matchesString(tuple, t)),
    [true, true, false],
  );
  // unevaluatedProperties / unevaluatedItems inside allOf (or a $ref's target with siblings) see
  // their own branch only; beside contains, the items a contains of the scope matches are evaluated.
  const scoped = [
    { allOf: [{ properties: { a: {} }, unevaluatedProperties: false }], properties: { b: {} } },
    { allOf: [{ properties: { a: { type: "integer" } }, unevaluatedProperties: { type: "string" } }], properties: { b: {} } },
    { allOf: [{ $ref: "#/$defs/base", unevaluatedProperties: false }], $defs: { base: { properties: { a: {}, b: {} } } } },
    { $ref: "#/$defs/closed", type: "array", prefixItems: [{}], $defs: { closed: { unevaluatedItems: false } } },
    { type: "array", prefixItems: [{ type: "boolean" }], contains: { type: "string" }, unevaluatedItems: false },
    { type: "array", allOf: [{ prefixItems: [true], unevaluatedItems: { type: "integer" } }], contains: { type: "null" } },
  ];
  assertAllValid(samplesAndNearMisses(scoped, ["default"], 16, seededRandom(12)), 60);
  assert.deepEqual(
    ['{"a": 1}', '{"b": 1}', '{"a": 1, "b": 1}', "{}"].map((t) => matchesString(compileJsonSchema(scoped[0]).dfa, t)),
    [true, false, false, true],
  );
  // The $ref's target evaluates nothing: its unevaluatedItems: false leaves only [].
  assert.deepEqual(
    ["[]", "[1]"].map((t) => matchesString(compileJsonSchema(scoped[3]).dfa, t)),
    [true, false],
  );
  assert.deepEqual(
    ['[true, "a"]', '[true, "a", "b"]', "[true, 1]", "[true]", '["a"]'].map((t) => matchesString(compileJsonSchema(scoped[4]).dfa, t)),
    [true, true, false, false, false],
  );
});
