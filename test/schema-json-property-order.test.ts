/**
 * `propertyOrder: "any"` (schema/json-schema/objects.ts anyOrderObject): an object's named
 * properties in any order, others among them, each at most once, required ones always, counted
 * against min/maxProperties as in the schema's order. Shown: sampled documents are valid under
 * Python's jsonschema and come in other orders than the schema's; every order of a valid document
 * is accepted, a repeated or missing key is not; the schema's order stays the default; an object
 * past MAX_ANY_ORDER_MEMBERS keeps the schema's order with a warning; a schema whose any-order form
 * is past the limits is served in the schema's order, said in a warning.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileServedSchema } from "../src/compile/task.js";
import { matchesString, sampleString } from "../src/regex/index.js";
import { compileJsonSchema } from "../src/schema/json-schema/compile.js";
import { MAX_ANY_ORDER_MEMBERS } from "../src/schema/json-schema/objects.js";
import { seededRandom } from "./support/generate-harness.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";

const SCHEMA = {
  type: "object",
  properties: {
    id: { type: "integer", minimum: 0 },
    name: { type: "string", maxLength: 6 },
    tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 2 },
    owner: { type: "object", properties: { login: { type: "string", maxLength: 4 }, admin: { type: "boolean" } }, required: ["login"] },
  },
  required: ["id", "owner"],
  additionalProperties: { type: "null" },
  maxProperties: 5,
};

/** Every order of `entries` as a JSON text in the default style. */
function orders(entries: readonly (readonly [string, unknown])[]): string[] {
  if (entries.length <= 1) return [`{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")}}`];
  const out: string[] = [];
  const permute = (rest: (readonly [string, unknown])[], done: (readonly [string, unknown])[]): void => {
    if (rest.length === 0) out.push(`{${done.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")}}`);
    rest.forEach((e, i) => permute([...rest.slice(0, i), ...rest.slice(i + 1)], [...done, e]));
  };
  permute([...entries], []);
  return out;
}

test("sampled documents are valid under Python's jsonschema, in orders other than the schema's", () => {
  const { dfa } = compileJsonSchema(SCHEMA, { propertyOrder: "any" });
  const random = seededRandom(61);
  const texts = Array.from({ length: 300 }, () => sampleString(dfa, random, { maxBytes: 400, stopProbability: 0.1 })!);
  pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(SCHEMA), text }))).forEach((v, i) => assert.equal(v, "valid", texts[i]));
  const named = Object.keys(SCHEMA.properties);
  const reordered = texts.filter((t) => {
    const keys = Object.keys(JSON.parse(t) as object).filter((k) => named.includes(k));
    return keys.some((k, i) => i > 0 && named.indexOf(k) < named.indexOf(keys[i - 1]!));
  });
  const extraFirst = texts.filter((t) => {
    const keys = Object.keys(JSON.parse(t) as object);
    return keys.length > 1 && !named.includes(keys[0]!);
  });
  assert.ok(reordered.length > 50, `${reordered.length} reordered`);
  assert.ok(extraFirst.length > 0, "an unnamed property before the named ones");
});

test("every order of a valid document is accepted; a repeated or missing key, or one too many, is not; the schema's order is the default", () => {
  const any = compileJsonSchema(SCHEMA, { propertyOrder: "any" }).dfa;
  const schemaOrder = compileJsonSchema(SCHEMA).dfa;
  const doc = [
    ["id", 7],
    ["owner", { login: "ann" }],
    ["x", null],
    ["name", "n"],
  ] as const;
  const all = orders(doc);
  assert.equal(all.length, 24);
  for (const text of all) assert.ok(matchesString(any, text), text);
  // The schema's orders: `properties`' (id, name, owner) and the required ones first (id, owner,
  // then name), x after them.
  assert.deepEqual(
    all.filter((text) => matchesString(schemaOrder, text)),
    ['{"id": 7, "owner": {"login":"ann"}, "name": "n", "x": null}', '{"id": 7, "name": "n", "owner": {"login":"ann"}, "x": null}'],
  );
  // Nested objects too.
  assert.ok(matchesString(any, '{"owner": {"admin": true, "login": "b"}, "id": 1}'));
  for (const text of [
    '{"id": 1, "owner": {"login": "a"}, "id": 2}',
    '{"owner": {"login": "a"}}',
    '{"owner": {"admin": true}, "id": 1}',
    '{"id": 1, "owner": {"login": "a"}, "x": null, "y": null, "z": null, "name": "q"}',
    '{"id": 1, "owner": {"login": "a"}, "x": 3}',
  ])
    assert.ok(!matchesString(any, text), text);
});

test("members are written in the order `required` lists them too (a schema whose keys were sorted keeps its order there)", () => {
  // MaskBench's copy of a function's parameters: `properties` sorted, `required` as written.
  const schema = {
    type: "object",
    properties: {
      dimensions: { type: "object", properties: { length: { type: "number" }, width: { type: "number" } }, required: ["width", "length"] },
      shape: { type: "string" },
      unit: { type: "string" },
    },
    required: ["shape", "dimensions"],
  };
  const { dfa } = compileJsonSchema(schema);
  const accepted = [
    '{"shape": "square", "dimensions": {"width": 2, "length": 3}}',
    '{"shape": "square", "dimensions": {"length": 3, "width": 2}, "unit": "cm"}',
    '{"dimensions": {"length": 3, "width": 2}, "shape": "square", "unit": "cm"}',
  ];
  const refused = [
    '{"shape": "square", "unit": "cm", "dimensions": {"width": 2, "length": 3}}',
    '{"dimensions": {"width": 2}, "shape": "square"}',
    '{"shape": "square", "shape": "round", "dimensions": {"width": 2, "length": 3}}',
  ];
  for (const text of accepted) assert.ok(matchesString(dfa, text), text);
  for (const text of refused) assert.ok(!matchesString(dfa, text), text);
  const verdicts = pythonVerdicts(accepted.map((text) => ({ schema: JSON.stringify(schema), text })));
  verdicts.forEach((v, i) => assert.equal(v, "valid", accepted[i]));
  // One required key is written first too (Glaive's calculate_area: `required: ["shape"]`).
  const one = {
    type: "object",
    properties: { dimensions: { type: "object" }, shape: { type: "string" }, unit: { type: "string" } },
    required: ["shape"],
  };
  const oneDfa = compileJsonSchema(one).dfa;
  const oneAccepted = [
    '{"shape": "square", "dimensions": {"length": 3}}',
    '{"dimensions": {"length": 3}, "shape": "square", "unit": "cm"}',
  ];
  for (const text of oneAccepted) assert.ok(matchesString(oneDfa, text), text);
  assert.ok(!matchesString(oneDfa, '{"unit": "cm", "shape": "square"}'));
  pythonVerdicts(oneAccepted.map((text) => ({ schema: JSON.stringify(one), text }))).forEach((v, i) =>
    assert.equal(v, "valid", oneAccepted[i]),
  );
  // With property_order "any" every order is written already: no second order is added.
  assert.ok(matchesString(compileJsonSchema(schema, { propertyOrder: "any" }).dfa, refused[0]!));
});

test("where objects in `required`'s order too are past a size limit, `properties`' order alone is written", () => {
  const inner = { type: "string", pattern: "^[a-z]{1,12}$" };
  const schema = { type: "object", properties: { a: inner, b: inner, c: inner, d: inner }, required: ["d", "c", "b", "a"] };
  const schemaOrder = '{"a": "x", "b": "x", "c": "x", "d": "x"}';
  const requiredOrder = '{"d": "x", "c": "x", "b": "x", "a": "x"}';
  const both = compileJsonSchema(schema).dfa;
  assert.ok(matchesString(both, schemaOrder) && matchesString(both, requiredOrder));
  // Both orders need about twice the states of one: under a limit between, one order is served.
  const limited = compileJsonSchema(schema, { limits: { maxDfaStates: Math.ceil(both.numStates * 0.75) } }).dfa;
  assert.ok(limited.numStates < both.numStates);
  assert.ok(matchesString(limited, schemaOrder) && !matchesString(limited, requiredOrder));
});

test("an object past MAX_ANY_ORDER_MEMBERS named properties keeps the schema's order, with a warning", () => {
  const n = MAX_ANY_ORDER_MEMBERS + 1;
  const properties = Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "integer" }]));
  const small = { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"] };
  const schema = {
    type: "object",
    properties: { big: { type: "object", properties, required: ["p0", "p1"] }, small },
    required: ["big", "small"],
  };
  const { dfa, warnings } = compileJsonSchema(schema, { propertyOrder: "any" });
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0]!.pointer, "/properties/big");
  assert.match(warnings[0]!.message, /schema's order/);
  assert.ok(matchesString(dfa, '{"big": {"p0": 1, "p1": 2}, "small": {"b": 1, "a": 2}}'));
  assert.ok(matchesString(dfa, '{"small": {"a": 1, "b": 2}, "big": {"p0": 1, "p1": 2}}'));
  assert.ok(!matchesString(dfa, '{"big": {"p1": 1, "p0": 2}, "small": {"a": 1, "b": 2}}'));
});

test("a schema whose any-order form is past the limits is served in the schema's order, said in a warning", () => {
  // Three objects of seven properties, each a string with a pattern: fine in order, not in any.
  const inner = {
    type: "object",
    properties: Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`k${i}`, { type: "string", pattern: `^[a-z]{${i + 1}}$` }])),
  };
  const schema = { type: "object", properties: Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`o${i}`, inner])) };
  const options = { limits: { maxDfaStates: 3000 } };
  assert.throws(() => compileJsonSchema(schema, { ...options, propertyOrder: "any" }), /too complex|states/);
  const ordered = compileServedSchema(schema, options);
  assert.equal(ordered.warnings, undefined);
  const served = compileServedSchema(schema, { ...options, propertyOrder: "any" });
  assert.equal(served.kind, ordered.kind);
  assert.equal(served.warnings?.length, 1);
  assert.match(served.warnings![0]!.message, /^property_order "any": written in the schema's order/);
});

test("the schema's order puts a combinator branch's properties where the combinator stands in the document", () => {
  // allOf: [{oneOf: [A, B]}, C] is written A's (or B's) properties, then C's, as instances are;
  // a branch's properties used to come after every other conjunct's (C's, then A's).
  const schema = {
    allOf: [
      {
        oneOf: [
          { properties: { from: { type: "string" } }, required: ["from"] },
          { properties: { sender: { type: "integer" } }, required: ["sender"] },
        ],
      },
      { properties: { to: { type: "string" }, subject: { type: "string" } }, required: ["to"] },
    ],
    // Beside the combinator at the same conjunct: its own properties first, then the branch's.
    properties: { id: { type: "integer" } },
  };
  const { dfa } = compileJsonSchema(schema, { propertyOrder: "schema" });
  const accepted = ['{"id": 1, "from": "a", "to": "b", "subject": "c"}', '{"sender": 2, "to": "b"}', '{"from": "a", "to": "b"}'];
  for (const text of accepted) assert.ok(matchesString(dfa, text), text);
  for (const text of ['{"to": "b", "from": "a"}', '{"from": "a", "id": 1, "to": "b"}']) assert.ok(!matchesString(dfa, text), text);
  pythonVerdicts(accepted.map((text) => ({ schema: JSON.stringify(schema), text }))).forEach((v, i) =>
    assert.equal(v, "valid", accepted[i]),
  );
});

test("a schema listing $ref, allOf or a combinator before its properties is written in that order too", () => {
  // MaskBench's schemas list their keys sorted (allOf < anyOf < properties) and its instances
  // follow the text; the Test Suite's instances put a schema's own properties first. Both orders
  // are written where the text lists the references first; only the first where it does not.
  const refsFirst = {
    $defs: { base: { properties: { id: { type: "integer" } }, required: ["id"] } },
    $ref: "#/$defs/base",
    properties: { name: { type: "string" } },
  };
  // (Nothing required here: a required key is also written first, in `required`'s order.)
  const ownFirst = { properties: refsFirst.properties, $ref: "#/$defs/base", $defs: { base: { properties: { id: { type: "integer" } } } } };
  const branchFirst = {
    anyOf: [{ properties: { url: { type: "string" } }, required: ["url"] }],
    properties: { name: { type: "string" } },
    required: ["name"],
  };
  const cases: [unknown, string[], string[]][] = [
    [refsFirst, ['{"id": 1, "name": "n"}', '{"name": "n", "id": 1}', '{"id": 1}'], ['{"name": "n"}']],
    [ownFirst, ['{"name": "n", "id": 1}', '{"id": 1}'], ['{"id": 1, "name": "n"}']],
    [branchFirst, ['{"url": "u", "name": "n"}', '{"name": "n", "url": "u"}'], ['{"name": "n"}', '{"url": "u"}']],
  ];
  const judged: { schema: string; text: string }[] = [];
  for (const [schema, accepted, rejected] of cases) {
    const { dfa } = compileJsonSchema(schema);
    for (const text of accepted) assert.ok(matchesString(dfa, text), `${JSON.stringify(schema)}: ${text}`);
    for (const text of rejected) assert.ok(!matchesString(dfa, text), `${JSON.stringify(schema)}: ${text}`);
    judged.push(...accepted.map((text) => ({ schema: JSON.stringify(schema), text })));
  }
  // Every accepted text is valid; the rejected ones in the wrong order are valid too (a miss of
  // the schema's order, not of its meaning), the others invalid.
  pythonVerdicts(judged).forEach((v, i) => assert.equal(v, "valid", judged[i]!.text));
});
