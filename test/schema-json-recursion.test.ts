// JSON Schema nesting served by a stack (issue 42): a recursive `$ref` (and, with
// freeValuesAnyDepth, a free value) compiles under recursion "stack" to a rule network
// (schema/json-schema/rules.ts) that the grammar stage's RuleNetworkAutomaton recognizes at any
// depth, where the one-DFA form stops at MAX_RECURSION levels; past the one DFA's size limit a
// subschema used in many places is one shared rule. Every text here is judged by Python's jsonschema too; generation over the
// qwen2 vocabulary (152k tokens) is driven deep (≥ 10 levels) and must stay valid and complete
// within every budget.
import assert from "node:assert/strict";
import { test } from "node:test";
import { deserialize, serialize } from "node:v8";
import { compileServedSchema } from "../src/compile/index.js";
import { GrammarConstraintState, GrammarTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { compileGrammar, createGrammarAutomaton, ruleNetworkAutomaton } from "../src/grammar/index.js";
import { compileJsonSchema, JsonSchemaTooComplexError, JsonSchemaUnsatisfiableError, type JsonSchemaOptions } from "../src/schema/index.js";
import { seededRandom } from "../src/support/index.js";
import type { ByteDfa } from "../src/regex/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { singleByteTokens } from "./support/constraint-fixtures.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { vocabFile } from "./support/paths.js";

/** json.dumps(value) with its default separators, as the "default" style writes JSON. */
function dumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(dumps).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${dumps(v)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** Whether a compiled schema accepts `text`: its one DFA, or its rule network's automaton. */
function acceptor(compiled: { dfa: ByteDfa; rules?: readonly ByteDfa[] }): (text: string) => boolean {
  if (compiled.rules !== undefined) {
    const automaton = ruleNetworkAutomaton({ rules: compiled.rules });
    return (text) => {
      const s = automaton.walk(automaton.start, text);
      return s >= 0 && automaton.isComplete(s);
    };
  }
  const { dfa } = compiled;
  return (text) => {
    let s = dfa.start;
    for (const b of new TextEncoder().encode(text)) {
      s = dfa.next[s * dfa.numClasses + dfa.byteClass[b]!]!;
      if (s < 0) return false;
    }
    return dfa.accepting[s] === 1;
  };
}

const TREE = {
  type: "object",
  properties: { value: { type: "integer" }, children: { type: "array", items: { $ref: "#" } } },
  required: ["value"],
  additionalProperties: false,
};
const LIST = {
  $defs: {
    node: {
      type: "object",
      properties: { v: { type: "string", maxLength: 3 }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } },
      required: ["v", "next"],
      additionalProperties: false,
    },
  },
  $ref: "#/$defs/node",
};
const JSON_LIKE = {
  $defs: {
    json: {
      anyOf: [
        { type: "null" },
        { type: "boolean" },
        { type: "integer" },
        { type: "string", maxLength: 5 },
        { type: "array", items: { $ref: "#/$defs/json" }, maxItems: 3 },
        { type: "object", properties: { k: { $ref: "#/$defs/json" } }, additionalProperties: false },
      ],
    },
  },
  $ref: "#/$defs/json",
};
/** A and B call each other. */
const MUTUAL = {
  $defs: {
    a: { type: "object", properties: { b: { $ref: "#/$defs/b" } }, additionalProperties: false },
    b: { type: "array", items: { $ref: "#/$defs/a" }, maxItems: 2 },
  },
  $ref: "#/$defs/a",
};

/** 140 properties that all refer to one $defs entry: its one DFA is past the size limit. */
const SHARED = {
  $defs: {
    big: {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 30 }, (_, i) => [`field${i}`, { type: "string", enum: [`alpha${i}`, `beta${i}`] }]),
      ),
      additionalProperties: false,
    },
  },
  type: "object",
  properties: Object.fromEntries(Array.from({ length: 140 }, (_, i) => [`item${i}`, { $ref: "#/$defs/big" }])),
  additionalProperties: false,
};

/** Whether the rule network accepts `text` whole. */
function networkAccepts(rules: Parameters<typeof ruleNetworkAutomaton>[0]["rules"]): (text: string) => boolean {
  const automaton = ruleNetworkAutomaton({ rules });
  return (text) => {
    const s = automaton.walk(automaton.start, text);
    return s >= 0 && automaton.isComplete(s);
  };
}

const tree = (depth: number, leaf: unknown = 1): unknown =>
  depth === 0 ? { value: leaf } : { value: depth, children: [{ value: 0 }, tree(depth - 1, leaf)] };
const list = (n: number, last: unknown = "end"): unknown => (n === 0 ? { v: last, next: null } : { v: "x", next: list(n - 1, last) });
const jsonLike = (n: number, leaf: unknown = "ok"): unknown =>
  n === 0 ? leaf : n % 2 ? [true, jsonLike(n - 1, leaf)] : { k: jsonLike(n - 1, leaf) };
const mutual = (n: number, extra = false): unknown => (n === 0 ? (extra ? { c: 1 } : {}) : { b: [{}, mutual(n - 1, extra)] });

const STACK: JsonSchemaOptions = { recursion: "stack" };

/** [schema, valid deep texts, invalid deep texts] */
const CASES: [string, object, unknown[], unknown[]][] = [
  ["tree", TREE, [tree(12), tree(25)], [tree(12, "one"), tree(15, 1.5)]],
  ["linked list", LIST, [list(12), list(40)], [list(12, "long"), list(20, 7)]],
  ["JSON-like", JSON_LIKE, [jsonLike(12), jsonLike(30, null)], [jsonLike(12, "toolong"), jsonLike(13, 2.5)]],
  ["mutual", MUTUAL, [mutual(12)], [mutual(12, true)]],
];

test("recursive schemas compile to rule networks that accept any depth, exactly", () => {
  const judged: { schema: string; text: string; expected: string }[] = [];
  for (const [name, schema, valid, invalid] of CASES) {
    const stacked = compileJsonSchema(schema, STACK);
    assert.ok(stacked.rules !== undefined && stacked.rules.length >= 2, `${name}: a rule network`);
    const automaton = ruleNetworkAutomaton({ rules: stacked.rules });
    // The one-DFA form: JSON-like's unrolled recursion is past the DFA's limits altogether.
    let unrolled: ReturnType<typeof compileJsonSchema> | null = null;
    try {
      unrolled = compileJsonSchema(schema);
    } catch (error) {
      assert.ok(error instanceof JsonSchemaTooComplexError && name === "JSON-like", `${name}: ${(error as Error).message}`);
    }
    const accepts = (text: string): boolean => {
      const s = automaton.walk(automaton.start, text);
      return s >= 0 && automaton.isComplete(s);
    };
    const dfaAccepts = unrolled === null ? (): boolean => false : acceptor({ dfa: unrolled.dfa });
    for (const value of valid) {
      const text = dumps(value);
      assert.ok(accepts(text), `${name}: the network accepts ${text.slice(0, 80)}…`);
      // What the one-DFA form could not hold: recursion unrolled MAX_RECURSION levels.
      assert.ok(!dfaAccepts(text), `${name}: the unrolled DFA stops early`);
      assert.ok(accepts(JSON.stringify(value)), `${name}: compact too`);
      judged.push({ schema: JSON.stringify(schema), text, expected: "valid" });
    }
    for (const value of invalid) {
      const text = dumps(value);
      assert.ok(!accepts(text), `${name}: the network refuses ${text.slice(0, 80)}…`);
      judged.push({ schema: JSON.stringify(schema), text, expected: "invalid" });
    }
    // Shallow texts: both forms agree.
    const shallow = dumps(
      valid[0] === undefined
        ? null
        : name === "tree"
          ? tree(1)
          : name === "linked list"
            ? list(1)
            : name === "JSON-like"
              ? jsonLike(2)
              : mutual(1),
    );
    assert.ok(accepts(shallow) && (unrolled === null || dfaAccepts(shallow)), `${name}: ${shallow}`);
  }
  const verdicts = pythonVerdicts(judged);
  judged.forEach((j, i) => assert.ok(verdicts[i]!.startsWith(j.expected), `${j.text.slice(0, 60)}: Python says ${verdicts[i]}`));
});

test("a subtraction inside the recursion keeps the one-DFA form, exact as before", () => {
  // Both oneOf branches hold `{}`: the first is written minus the second, and a subtraction needs
  // the texts of its operands, so the recursion under it is unrolled.
  const schema = {
    oneOf: [
      { type: "object", properties: { a: { $ref: "#" } }, additionalProperties: false },
      { type: "object", properties: { c: { type: "integer" } } },
    ],
  };
  const compiled = compileJsonSchema(schema, STACK);
  assert.equal(compiled.rules, undefined);
  const accepts = acceptor(compiled);
  const texts = ['{"c": 1}', "{}", '{"a": {"c": 1}}', '{"c": 1, "d": {"e": 2}}', '{"a": {}}'];
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  texts.forEach((text, i) => {
    if (accepts(text)) assert.equal(verdicts[i], "valid", text);
  });
  assert.deepEqual(verdicts.slice(0, 3), ["valid", verdicts[1], verdicts[2]]);
  assert.ok(verdicts[1]!.startsWith("invalid") && verdicts[2]!.startsWith("invalid"));
  assert.ok(accepts(texts[0]!) && !accepts(texts[1]!) && !accepts(texts[2]!));
});

test("a `not` of propertyNames on objects of one key is a key failing it: the recursion under it nests at any depth", () => {
  // "Some key matches a" on objects of at most one property: the key matches a (notnames9's
  // shape). Without a product the value keeps its call of the document: any depth.
  const someKeyA = { not: { propertyNames: { not: { pattern: "a" } } } };
  const recursive = { type: "object", maxProperties: 1, allOf: [someKeyA], patternProperties: { "7": { $ref: "#" } } };
  // Untyped, and the keys told by their length: non-objects and {} are gone too.
  const untyped = { maxProperties: 1, not: { propertyNames: { maxLength: 2 } } };
  // Keys with a 7 nest the document again; the innermost, {"a": …}, ends it.
  const nested = (depth: number, key = "a7", last: unknown = { a: 1 }): unknown =>
    depth === 0 ? last : { [depth % 2 === 0 ? key : `x${key}`]: nested(depth - 1, key, last) };
  const cases: [string, object, unknown[], unknown[]][] = [
    [
      "recursive",
      recursive,
      [nested(1), nested(12), nested(11, "a7", { ab: [1, { b: 2 }] })],
      [{}, { b: 1 }, nested(12, "b7"), nested(11, "a7", { b: 1 }), nested(10, "a7", {}), { a7: 1 }, { a: 1, ab: 2 }, 5],
    ],
    ["untyped", untyped, [{ abc: 1 }, { "long key": [1, { a: 2 }] }], [{}, { ab: 1 }, 5, "abc", [1], null, { abc: 1, abd: 2 }]],
    // Every key fails `false`: one property, any key.
    ["any one key", { maxProperties: 1, not: { propertyNames: false } }, [{ a: 1 }, { "": [] }], [{}, 5, { a: 1, b: 2 }]],
  ];
  const judged: { schema: string; text: string; expected: string }[] = [];
  for (const [name, schema, valid, invalid] of cases) {
    const compiled = compileJsonSchema(schema, STACK);
    const accepts = acceptor(compiled);
    if (name === "recursive") assert.ok(compiled.rules !== undefined, "recursive: a rule network, no product");
    for (const value of valid) {
      assert.ok(accepts(dumps(value)), `${name}: accepts ${dumps(value).slice(0, 80)}`);
      judged.push({ schema: JSON.stringify(schema), text: dumps(value), expected: "valid" });
    }
    for (const value of invalid) {
      assert.ok(!accepts(dumps(value)), `${name}: refuses ${dumps(value).slice(0, 80)}`);
      judged.push({ schema: JSON.stringify(schema), text: dumps(value), expected: "invalid" });
    }
  }
  // Where nothing is left: no object of one key under maxProperties 0, no key fails `true`, and in
  // draft-04 propertyNames is no keyword (the `not` of an empty schema holds nothing).
  const none = [
    { type: "object", maxProperties: 0, not: { propertyNames: { pattern: "^$" } } },
    { maxProperties: 1, not: { propertyNames: true } },
    { $schema: "http://json-schema.org/draft-04/schema#", maxProperties: 1, not: { propertyNames: { pattern: "a" } } },
  ];
  for (const schema of none) assert.throws(() => compileJsonSchema(schema, STACK), JsonSchemaUnsatisfiableError, JSON.stringify(schema));
  for (const schema of none)
    for (const text of ["{}", '{"a": 1}', '{"": 1}', "1"]) judged.push({ schema: JSON.stringify(schema), text, expected: "invalid" });
  const verdicts = pythonVerdicts(judged);
  judged.forEach((j, i) =>
    assert.ok(verdicts[i]!.startsWith(j.expected), `${j.schema.slice(0, 60)} ${j.text.slice(0, 60)}: Python says ${verdicts[i]}`),
  );
});

test("a set operation's operands call no rules but the free values'; the rest of the document keeps its rules", () => {
  // O(oneOf [A, B]) subtracts U(B), and U(B) holds free values: written as calls, they made the
  // whole compile start over unrolled (the tree below then stopped at MAX_RECURSION levels). Now
  // both operands' free values are calls of the free-value rule, which the product reads as calls
  // (ProductCalls): x's free members nest at any depth too (the last text, 3 levels inside x).
  const schema = {
    type: "object",
    properties: {
      tree: { $ref: "#/$defs/node" },
      x: {
        not: {
          oneOf: [
            { type: "object", properties: { a: { type: "integer" } } },
            { type: "object", required: ["b"] },
          ],
        },
      },
    },
    $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } } },
  };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined && compiled.rules.length >= 2, "a rule network");
  const accepts = networkAccepts(compiled.rules);
  const deep = (n: number): unknown => (n === 0 ? {} : { kids: [deep(n - 1)] });
  const xs: unknown[] = [5, "s", [1, { c: [2] }], { a: 1 }, {}, { b: 1, a: "s" }, { b: { d: [{}] } }];
  const texts = [dumps({ tree: deep(12) }), ...xs.map((x) => dumps({ tree: deep(1), x }))];
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.ok(accepts(texts[0]!) && verdicts[0] === "valid", "twelve levels of the tree");
  // Every text the network accepts is valid, and these valid ones are accepted.
  texts.forEach((text, i) => {
    if (accepts(text)) assert.equal(verdicts[i], "valid", text);
  });
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, true, true, false, false, false, true],
  );
});

test("a subtraction over free values reads them as calls of the free-value rule: they nest at any depth, exactly", () => {
  // MaskBench's object6 shape: "some key contains a" is the `not` of "no key does", and the
  // values are free on both sides, so each is one call (ProductCalls), not two unrolled levels.
  const some = (letter: string) => ({ not: { propertyNames: { not: { pattern: letter } } } });
  const schema = { type: "object", allOf: [some("a"), some("b"), { propertyNames: { pattern: "^..$" } }, { maxProperties: 2 }] };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined, "a rule network: the free values are calls");
  const accepts = networkAccepts(compiled.rules);
  const deep = (n: number): unknown => (n === 0 ? [1, "x"] : { k: [deep(n - 1)] });
  // (A minuend's object holds one unnamed key, as before: the two-key objects are valid, not written.)
  const values: unknown[] = [
    { ab: deep(12) },
    { ba: deep(10) },
    { ab: { q: [1, { r: 2, s: [3, {}] }] } },
    { ab: 1, cd: deep(3) },
    { xa: 1 },
    { ab: 1, cd: 2, ef: 3 },
    { abc: 1 },
    { xy: deep(10) },
  ];
  const texts = values.map(dumps);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [true, true, true, true, false, false, false, false],
  );
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, true, false, false, false, false, false],
  );
});

test("a subtrahend's deep listed value where the minuend's free value is a call: subtracted, however deep", () => {
  // The minuend's x is free (a call); the subtrahend lists x's values, one nested six levels: the
  // O written for it must hold that value although the minuend's own text nests one level (its
  // depth through a call is unbounded: maxNesting answers the cap).
  const deepValue = [[[[[[1]]]]]];
  const schema = { type: "object", not: { required: ["x"], properties: { x: { enum: [deepValue, 2] } } } };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  const accepts = acceptor(compiled);
  const values: unknown[] = [{ x: deepValue }, { x: 2 }, { x: [[[[[[2]]]]]] }, { x: 3, y: [[[[[[1]]]]]] }, {}];
  const texts = values.map(dumps);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [false, false, true, true, true],
  );
  texts.forEach((text, i) => {
    if (accepts(text)) assert.equal(verdicts[i], "valid", text);
  });
  assert.ok(accepts(texts[2]!) && accepts(texts[3]!), "the deep values the subtrahend does not list");
});

test("where the minuend's free value meets the subtrahend's text, it is read without repeated keys", () => {
  // The O subtracted reads an object's first "a"; a validator reads its last. The minuend's y is a
  // call the product reads as the subtrahend's text there: as a free value without repeated keys.
  const schema = { type: "object", not: { properties: { x: { properties: { y: { properties: { a: { type: "string" } } } } } } } };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  const accepts = acceptor(compiled);
  const texts = [
    '{"x": {"y": {"a": 1, "a": "s"}}}',
    '{"x": {"y": {"a": 1}}}',
    '{"x": {"y": {"a": [[[[1]]]]}}}',
    '{"x": {"y": {"a": "s"}}}',
  ];
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [false, true, true, false],
  );
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [false, true, true, false],
  );
});

test("contains: the items that do not count are free values less the counted ones, read as calls: any depth", () => {
  // Each item class is the items (free) less an O of each contains it fails (arrays.ts), a
  // subtraction whose free values are calls on both sides (ProductCalls): items nest at any depth.
  const schema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "array",
    contains: { type: "object", required: ["k"] },
    maxContains: 1,
  };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined, "a rule network: the free items are calls");
  const accepts = networkAccepts(compiled.rules);
  const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
  const values: unknown[] = [
    [{ k: 1 }, deep(12)],
    [{ j: { x: deep(10) } }, { k: deep(10) }],
    [{ k: 1 }, { k: 2 }],
    [deep(3)],
    [{ k: 1 }, { j: 1, k: deep(10) }],
  ];
  const texts = values.map(dumps);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [true, true, false, false, false],
  );
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, false, false, false],
  );
});

test("a subtrahend that constrains what the minuend leaves free: the subtraction is written without calls, still exact", () => {
  // The minuend's `b` is free, the subtrahend's a string: one text would be a call on one side and
  // bytes on the other, so the product refuses the calls (ProductCallsClash) and the operands are
  // written unrolled, as before; the rest of the document keeps its rules.
  const schema = {
    type: "object",
    properties: { tree: { $ref: "#/$defs/node" }, x: { type: "object", required: ["a"], not: { properties: { b: { type: "string" } } } } },
    $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } } },
  };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined, "a rule network");
  const accepts = networkAccepts(compiled.rules);
  const deep = (n: number): unknown => (n === 0 ? {} : { kids: [deep(n - 1)] });
  const xs: unknown[] = [{ a: 1, b: 2 }, { a: [1], b: [{}] }, { a: 1, b: "s" }, { a: 1 }, { b: 1 }, { a: "s", b: null }];
  const texts = [dumps({ tree: deep(12) }), ...xs.map((x) => dumps({ tree: deep(1), x }))];
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [true, true, true, false, false, false, true],
  );
  texts.forEach((text, i) => {
    if (accepts(text)) assert.equal(verdicts[i], "valid", text);
  });
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, true, false, false, false, true],
  );
});

test("a subtrahend that only requires keys forbids one of them: no set operation, the rules stay", () => {
  // oneOf branches told apart by which keys are present (MaskBench o57539): each branch minus the
  // other is "the other's keys, one of them absent", so free values under it nest at any depth.
  const schema = {
    type: "object",
    properties: { groups: { type: "array" }, n: { type: "integer" }, zones: { type: "array" } },
    oneOf: [{ required: ["groups", "n"] }, { required: ["zones"], not: { required: ["n"] } }],
  };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined, "a rule network");
  const accepts = networkAccepts(compiled.rules);
  const deep = (n: number): unknown => (n === 0 ? { q: [1] } : [deep(n - 1)]);
  const values: unknown[] = [
    { groups: deep(10), n: 2 },
    { groups: [], n: 1, zones: [] },
    { groups: deep(6), zones: [{}] },
    { zones: [deep(3)] },
    { zones: [], n: 1 },
    { n: 1 },
    {},
  ];
  const texts = values.map(dumps);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [true, true, true, true, false, false, false],
  );
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, true, true, false, false, false],
  );
  // A branch's own `not` is what makes the branches disjoint only once subtracted: all three keys
  // required, each branch forbids one of them (Glaive's calculate_area), so no value is left.
  const area = {
    type: "object",
    required: ["length", "width", "radius"],
    oneOf: [
      { not: { required: ["radius"] }, required: ["length", "width"] },
      { not: { required: ["length", "width"] }, required: ["radius"] },
    ],
  };
  assert.throws(() => compileJsonSchema(area, { ...STACK, freeValuesAnyDepth: true }), JsonSchemaUnsatisfiableError);
});

test("a subtrahend that requires keys and more: objects lacking one of them need no set operation, the rest is subtracted", () => {
  // MaskBench o19070: a win or a lose. The win branch minus the lose branch is "no lose key"
  // (written with its rules: the free `win` holds any object) or "a lose key, minus the lose branch".
  const schema = {
    type: "object",
    oneOf: [
      { type: "object", required: ["id", "win"], properties: { id: { type: "string" }, handleWinResponse: { type: "object" } } },
      { type: "object", required: ["id", "lose"], properties: { id: { type: "string" }, lose: { type: "object" } } },
    ],
  };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined, "a rule network");
  const accepts = networkAccepts(compiled.rules);
  const values: unknown[] = [
    { id: "g", win: { message: "won", reward: { points: [1, [2, { deep: { er: [] } }]] } } },
    { id: "g", lose: { message: "lost", by: 2 } },
    { id: "g", win: {}, lose: 5 },
    { id: "g", win: {}, lose: {} },
    { id: 1, win: {} },
    { win: {} },
  ];
  const texts = values.map(dumps);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v === "valid"),
    [true, true, true, false, false, false],
  );
  assert.deepEqual(
    texts.map((text) => accepts(text)),
    [true, true, true, false, false, false],
  );
});

test("free values at any depth (freeValuesAnyDepth) and recursion that never ends", () => {
  const inventory = {
    type: "object",
    additionalProperties: { type: "object", properties: { hosts: { type: "object" } }, required: ["hosts"] },
  };
  const deep = { atlanta: { hosts: { h1: { vars: { a: { b: { c: { d: { e: [1, [2, [3, { f: null }]]] } } } } } } } } };
  const text = dumps(deep);
  const bounded = compileJsonSchema(inventory, STACK);
  assert.equal(bounded.rules, undefined, "free values nest freeNesting levels unless asked");
  const free = compileJsonSchema(inventory, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(free.rules !== undefined);
  const automaton = ruleNetworkAutomaton({ rules: free.rules });
  const s = automaton.walk(automaton.start, text);
  assert.ok(s >= 0 && automaton.isComplete(s));
  assert.equal(automaton.walk(automaton.start, dumps({ atlanta: { vars: {} } })) >= 0 && false, false);
  const missing = automaton.walk(automaton.start, dumps({ atlanta: { vars: {} } }));
  assert.ok(missing < 0 || !automaton.isComplete(missing), "hosts is required");
  assert.deepEqual(pythonVerdicts([{ schema: JSON.stringify(inventory), text }]), ["valid"]);
  // Every tree needs a `next`, forever: no text satisfies it.
  const endless = { type: "object", properties: { next: { $ref: "#" } }, required: ["next"] };
  assert.throws(() => compileJsonSchema(endless, STACK), JsonSchemaUnsatisfiableError);
});

test("a free value inside a container is one call of the free-value rule, not its body copied in", () => {
  // An object that allows unnamed properties has a free value after each key: written in place,
  // each cost the free-value rule's ~60 states again.
  const schema = { type: "object", properties: { a: { type: "string" }, b: {} }, required: ["a"] };
  const compiled = compileJsonSchema(schema, { ...STACK, freeValuesAnyDepth: true });
  assert.ok(compiled.rules !== undefined);
  assert.equal(compiled.rules.length, 2, "the document and the free-value rule");
  const document = compiled.rules[0]!;
  // After "b": and after an unnamed key's colon, the value is a call (its lead byte), no text.
  const lead = document.byteClass[0xfe]!;
  let s = document.start;
  for (const b of new TextEncoder().encode('{"a": "x", "b": ')) s = document.next[s * document.numClasses + document.byteClass[b]!]!;
  assert.ok(s >= 0 && document.next[s * document.numClasses + lead]! >= 0, "b's value is a call");
  assert.equal(document.next[s * document.numClasses + document.byteClass[0x31]!], -1, "and no text of its own");
  const accepts = acceptor(compiled);
  const texts = [
    '{"a": "x", "b": 1}',
    '{"a": "x", "b": {"c": [1, {"d": null}]}, "e": "f"}',
    '{"a": "x", "z": [[[[[]]]]]}',
    '{"b": 1}',
    '{"a": 1}',
  ];
  const verdicts = texts.map((text) => (accepts(text) ? "valid" : "invalid"));
  assert.deepEqual(verdicts, ["valid", "valid", "valid", "invalid", "invalid"]);
  const python = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    python.map((v) => v.split(":")[0]),
    verdicts,
  );
  // Whose texts no finite listing holds: uniqueItems over free items is refused by name, as before.
  assert.throws(
    () => compileJsonSchema({ type: "array", uniqueItems: true }, { ...STACK, freeValuesAnyDepth: true }),
    (e: Error & { keyword?: string }) => e.keyword === "uniqueItems",
  );
});

/** JSON nesting depth of a text (brackets outside strings). */
function nesting(text: string): number {
  let depth = 0,
    deepest = 0,
    inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") deepest = Math.max(deepest, ++depth);
    else if (ch === "}" || ch === "]") depth--;
  }
  return deepest;
}

test("generation over qwen2's vocabulary goes deep, stays valid and finishes within every budget", (t) => {
  const vocab = loadVocabulary(vocabFile("qwen2"));
  const trie = tokenTrieFor(vocab);
  const rng = seededRandom(20261203);
  const decoder = new TextDecoder();
  const outputs: { schema: string; text: string; budget: number }[] = [];
  let deepest = 0;
  const servedAs: string[] = [];
  // Free values at any depth under `not` and `contains` (set operations reading them as calls).
  const some = (letter: string) => ({ not: { propertyNames: { not: { pattern: letter } } } });
  const underSetOperations: [string, object][] = [
    ["free values under not", { type: "object", allOf: [some("a"), some("b"), { propertyNames: { pattern: "^..$" } }] }],
    [
      "free items beside contains",
      { $schema: "https://json-schema.org/draft/2020-12/schema", type: "array", contains: { const: 7 }, maxContains: 1 },
    ],
  ];
  const cases = [
    ...CASES.map(([n, sc]) => [n, sc, false] as const),
    ["shared rule", SHARED, false] as const,
    ...underSetOperations.map(([n, sc]) => [n, sc, true] as const),
  ];
  for (const [name, schema, freeValuesAnyDepth] of cases) {
    // As the service serves it: the network, its first masks probed at the service's limits.
    const options = { whitespace: "default", freeValuesAnyDepth } as const;
    const served = compileServedSchema(schema, options, trie, { budgets: [512], limitSteps: 4_000_000 });
    // A network whose first operations cost more than the probe allows would be served as the
    // one-DFA form instead (as before networks): none of these.
    servedAs.push(`${name}: ${served.kind}`);
    if (served.kind !== "rules") continue;
    const matcher = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules: served.rules }));
    for (const budget of [24, 80, 300]) {
      const state = new GrammarConstraintState(matcher);
      const needed = state.minTokensToAccept(budget);
      if (needed > budget) continue;
      const bytes: number[] = [];
      let opened = 0;
      for (let n = 0; ; n++) {
        const remaining = budget - n;
        const text = decoder.decode(Uint8Array.from(bytes));
        const deepEnough = nesting(text) >= 12 || budget < 300;
        if (state.isAccepting() && (remaining === 0 || !state.hasAnyToken(remaining) || (deepEnough && rng() < 0.5))) break;
        assert.ok(remaining > 0, `${name}: budget spent before a complete text: ${text}`);
        const mask = state.mask(remaining);
        const allowed: number[] = [];
        for (let w = 0; w < mask.length; w++) {
          for (let bits = mask[w]!; bits !== 0; bits &= bits - 1) allowed.push(w * 32 + 31 - Math.clz32(bits & -bits));
        }
        assert.ok(allowed.length > 0, `${name}: empty mask before a complete text: ${text}`);
        // Deepening: while shallow, tokens that open more than they close; then ones that close.
        const opens = (t: number): number => {
          let d = 0;
          for (const b of vocab.tokenBytes(t)) d += b === 0x7b || b === 0x5b ? 1 : b === 0x7d || b === 0x5d ? -1 : 0;
          return d;
        };
        const wantOpen = nesting(text) - opened < 12 && budget >= 300 && n < budget / 2;
        const preferred = allowed.filter((t) => (wantOpen ? opens(t) > 0 : opens(t) < 0));
        const short = allowed.filter((t) => vocab.tokenBytes(t).length <= 3);
        const pool = preferred.length > 0 && rng() < 0.7 ? preferred : short.length > 0 && rng() < 0.8 ? short : allowed;
        const token = pool[Math.floor(rng() * pool.length)]!;
        assert.ok(state.advance(token), `${name}: the mask allowed ${token} but advance refused it`);
        bytes.push(...vocab.tokenBytes(token));
        opened = 0;
      }
      assert.ok(state.isAccepting());
      const text = decoder.decode(Uint8Array.from(bytes));
      deepest = Math.max(deepest, nesting(text));
      outputs.push({ schema: JSON.stringify(schema), text, budget });
    }
  }
  t.diagnostic(servedAs.join("; "));
  assert.ok(
    servedAs.every((s) => s.endsWith(": rules")),
    servedAs.join("; "),
  );
  assert.ok(outputs.length >= 5, `${outputs.length} outputs`);
  assert.ok(deepest >= 10, `deepest generated text nests ${deepest} levels`);
  const verdicts = pythonVerdicts(outputs);
  outputs.forEach((o, i) => assert.equal(verdicts[i], "valid", `${o.text.slice(0, 200)} (budget ${o.budget}): ${verdicts[i]}`));
});

test("the lexer-level view of a network gives the reference walk's masks, budgets included", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const single = singleByteTokens(vocab);
  const free = { type: "object", properties: { meta: { type: "object" }, tags: { type: "array", items: true } } };
  const walks: [object, JsonSchemaOptions, string][] = [
    [LIST, STACK, dumps(list(3))],
    [TREE, STACK, dumps(tree(3))],
    [JSON_LIKE, STACK, dumps(jsonLike(5))],
    [free, { ...STACK, freeValuesAnyDepth: true }, dumps({ meta: { a: { b: [1, { c: "d" }, null] }, e: true }, tags: [[[]], "x"] })],
  ];
  for (const [schema, options, text] of walks) {
    const { rules } = compileJsonSchema(schema, options);
    assert.ok(rules !== undefined);
    const automaton = ruleNetworkAutomaton({ rules });
    assert.equal(typeof (automaton as unknown as { hypotheses?: unknown }).hypotheses, "function", "the lexer-level view");
    const fast = new GrammarConstraintState(new GrammarTokenMatcher(trie, automaton));
    const reference = new GrammarConstraintState(new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }), { lexerLevel: false }));
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i < bytes.length; i++) {
      for (const remaining of [1 << 20, bytes.length - i + 2, bytes.length - i]) {
        assert.deepEqual(fast.mask(remaining), reference.mask(remaining), `${text.slice(0, i)}⟨here⟩ remaining ${remaining}`);
      }
      const token = single.get(bytes[i]!)!;
      assert.ok(fast.advance(token) && reference.advance(token), text.slice(0, i + 1));
    }
    assert.ok(fast.isAccepting() && reference.isAccepting());
  }
});

test("a rule network does not compare lexer sets (its strings part after their closing quote); a Lark grammar's strings share one walk", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const single = singleByteTokens(vocab);
  // Thirty string properties: their contents alike one byte deep, apart once the next key begins.
  const properties: Record<string, object> = { meta: {} };
  const doc: Record<string, unknown> = { meta: { a: [1] } };
  for (let i = 0; i < 30; i++) {
    properties[`key${i}`] = { type: "string" };
    doc[`key${i}`] = `v${i}`;
  }
  const { rules } = compileJsonSchema(
    { type: "object", properties, required: Object.keys(properties) },
    { ...STACK, freeValuesAnyDepth: true },
  );
  assert.ok(rules !== undefined);
  const matcher = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }));
  const fast = new GrammarConstraintState(matcher);
  const reference = new GrammarConstraintState(new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }), { lexerLevel: false }));
  const text = dumps(doc);
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i++) {
    assert.deepEqual(fast.mask(1 << 20), reference.mask(1 << 20), `${text.slice(0, i)}⟨here⟩`);
    // Not even a trial: a Lark grammar compares its first sets (below).
    assert.equal(matcher.rootWalkCounts!.comparing, false);
    const token = single.get(bytes[i]!)!;
    assert.ok(fast.advance(token) && reference.advance(token), text.slice(0, i + 1));
  }
  assert.ok(fast.isAccepting() && reference.isAccepting());
  const network = matcher.rootWalkCounts!;
  assert.ok(network.walked >= 30, JSON.stringify(network));
  assert.equal(network.comparing, false, `the strings' sets are still compared: ${JSON.stringify(network)}`);
  assert.equal(network.takenOver, 0, JSON.stringify(network));

  // A Lark grammar's string terminal ends at its quote: its contents as a key and as a value are one walk.
  const lark = new GrammarTokenMatcher(
    trie,
    createGrammarAutomaton(
      compileGrammar(
        '?start: object\nobject: "{" [pair ("," pair)*] "}"\npair: ESCAPED_STRING ":" (ESCAPED_STRING | object)\n%import common.ESCAPED_STRING\n',
      ),
      { maxIgnoredRun: 8 },
    ),
  );
  const state = new GrammarConstraintState(lark);
  for (const byte of new TextEncoder().encode('{"a":"b","c":{"d":"e"}}')) {
    state.mask(1 << 20);
    assert.ok(state.advance(single.get(byte)!));
  }
  const grammar = lark.rootWalkCounts!;
  assert.ok(grammar.takenOver >= 1 && grammar.comparing, JSON.stringify(grammar));
});

test("root walks that take their loop region from a slice equal the walks of it: masks, targets in order, work", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const single = singleByteTokens(vocab);
  // String contents (a body: one slice for all twelve), counted ones (each position a set of its
  // own, read off a counted slice: near its end as well, where the walk goes on below the depth
  // it reads), and a free value: a network.
  const properties: Record<string, object> = {
    meta: {},
    note: { type: "string", maxLength: 12 },
    code: { type: "string", minLength: 3, maxLength: 24 },
  };
  const doc: Record<string, unknown> = { meta: { a: [1] }, note: "short one", code: 'é "x" \\ 日本 😀 ok' };
  for (let i = 0; i < 12; i++) {
    properties[`key${i}`] = { type: "string" };
    doc[`key${i}`] = `v${i} with "quotes" and é`;
  }
  const { rules } = compileJsonSchema(
    { type: "object", properties, required: Object.keys(properties) },
    { ...STACK, freeValuesAnyDepth: true },
  );
  assert.ok(rules !== undefined);
  const lark =
    '?start: object\nobject: "{" [pair ("," pair)*] "}"\npair: ESCAPED_STRING ":" (ESCAPED_STRING | NAME | NUMBER | object)\n' +
    "%import common.ESCAPED_STRING\n%import common.CNAME -> NAME\n%import common.NUMBER\n%import common.WS\n%ignore WS\n";
  // Key names of a few properties or any other (a set of both: the free key's subtrees are taken
  // from its slice below the root), non-ASCII in keys and values, escapes.
  const free = compileJsonSchema(
    {
      type: "object",
      properties: { name: { type: "string" }, kind: { enum: ["pod", "node"] }, tags: {} },
      additionalProperties: { type: "string" },
    },
    { ...STACK, freeValuesAnyDepth: true },
  );
  assert.ok(free.rules !== undefined);
  const freeDoc = { name: "Zoë 日本", kind: "pod", tags: { "ключ 😀": ['a"b', 1] }, "extra ключ": 'emoji 😀 "q" \\ done', 日本語: "x" };
  const cases = [
    { automaton: ruleNetworkAutomaton({ rules }), text: dumps(doc) },
    { automaton: ruleNetworkAutomaton({ rules: free.rules }), text: dumps(freeDoc) },
    {
      automaton: createGrammarAutomaton(compileGrammar(lark), { maxIgnoredRun: 8 }),
      text: '{"a b": "c d", "e": {"f": name_1, "g": 12.5}}',
    },
  ];
  for (const { automaton, text } of cases) {
    // One automaton for both: state ids name the same states, so targets compare in order.
    const sliced = new GrammarTokenMatcher(trie, automaton);
    const whole = new GrammarTokenMatcher(trie, automaton, { loopSlices: false });
    // The walks' counts: the lexer steps the shared automaton makes are charged to whichever
    // matcher makes them first (GrammarAutomaton.lexerWork), so they are left out here.
    sliced.work.source = null;
    whole.work.source = null;
    const a = new GrammarConstraintState(sliced);
    const b = new GrammarConstraintState(whole);
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i < bytes.length; i++) {
      const where = `${text.slice(0, i)}⟨here⟩`;
      assert.deepEqual(a.mask(1 << 20), b.mask(1 << 20), where);
      assert.equal(sliced.work.steps, whole.work.steps, `work charged at ${where}`);
      if (i % 7 === 3)
        for (const remaining of [2, 3]) {
          // Budget masks inside a body set take its region from the slice too (maskOf).
          assert.deepEqual(a.mask(remaining), b.mask(remaining), `${where} with ${remaining} tokens left`);
          assert.equal(sliced.work.steps, whole.work.steps, `work charged at ${where} with ${remaining} tokens left`);
        }
      assert.deepEqual(sliced.targetsOf(a.state), whole.targetsOf(b.state), `targets at ${where}`);
      const token = single.get(bytes[i]!)!;
      assert.ok(a.advance(token) && b.advance(token), text.slice(0, i + 1));
    }
    assert.ok(a.isAccepting() && b.isAccepting());
    assert.ok(sliced.rootWalkCounts!.sliced >= 1, JSON.stringify(sliced.rootWalkCounts));
    assert.equal(whole.rootWalkCounts!.sliced, 0);
    assert.equal(whole.rootWalkCounts!.regionsTaken, 0);
    if (automaton === cases[1]!.automaton) assert.ok(sliced.rootWalkCounts!.regionsTaken >= 1, JSON.stringify(sliced.rootWalkCounts));
    if (automaton === cases[0]!.automaton) assert.ok(sliced.rootWalkCounts!.counted >= 10, JSON.stringify(sliced.rootWalkCounts));
    assert.equal(whole.rootWalkCounts!.counted, 0);
  }
});

test("a network the compile worker probed carries its automaton's tables to the serving side", () => {
  const trie = tokenTrieFor(loadVocabulary(vocabFile("gpt-2")));
  const served = compileServedSchema(TREE, { freeValuesAnyDepth: true }, trie, { budgets: [512], limitSteps: 4_000_000 });
  assert.equal(served.kind, "rules");
  if (served.kind !== "rules") return;
  assert.ok(served.tables !== undefined, "the probe's tables");
  // Across threads as the worker sends them (v8 serialization), then taken as they are.
  const { rules, tables } = deserialize(serialize(served)) as typeof served;
  const automaton = ruleNetworkAutomaton({ rules, tables: tables! });
  assert.equal(automaton.networkTables.dist, tables!.dist);
  const reference = ruleNetworkAutomaton({ rules });
  const text = dumps(tree(4));
  const [a, b] = [automaton, reference].map((x) => x.walk(x.start, text));
  assert.ok(automaton.isComplete(a!) && reference.isComplete(b!));
  assert.equal(
    automaton.minBytesLowerBound(automaton.walk(automaton.start, text.slice(0, 20))),
    reference.minBytesLowerBound(reference.walk(reference.start, text.slice(0, 20))),
  );
});

test("a document too long for the budget is told so within the work limit, and served with room (Github o12622)", () => {
  const trie = tokenTrieFor(loadVocabulary(vocabFile("gpt-2")));
  // 600 items of two strings: the one DFA is past its size limit; the network's budget question
  // at 512 tokens searched every budget up to 512, each search walking new states, and passed a
  // small work limit (the schema was refused as too costly). Its searches now give up at half
  // the limit: "not within 512", and the request is told that it needs more tokens.
  const item = { type: "object", properties: { name: { type: "string" }, uri: { type: "string" } }, required: ["name", "uri"] };
  const schema = {
    type: "object",
    properties: { name: { type: "string" }, pokemon: { type: "array", minItems: 600, items: item } },
    required: ["pokemon"],
  };
  const limitSteps = 200_000;
  const served = compileServedSchema(schema, { freeValuesAnyDepth: true }, trie, { budgets: [512], limitSteps });
  assert.equal(served.kind, "rules");
  const stateAt = (): GrammarConstraintState => {
    const matcher = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules: served.rules! }));
    matcher.work.limitSteps = limitSteps;
    return new GrammarConstraintState(matcher);
  };
  assert.equal(stateAt().minTokensToAccept(512), Number.POSITIVE_INFINITY);
  // Each item is at least `{"name":"","uri":""}` and a separator: 20 bytes, several tokens.
  const atLeast = stateAt().minTokensAtLeast(512);
  assert.ok(atLeast <= 512, `${atLeast}`); // proven only as far as its searches went: no overstatement
  const needed = stateAt().minTokensToAccept(8192);
  assert.ok(needed >= 600 && needed <= 8192, `${needed}`);
  assert.equal(compileServedSchema(schema, { freeValuesAnyDepth: true }, trie, { budgets: [8192], limitSteps }).kind, "rules");
});

test("a schema of 32k characters or more is served with its shared subschemas as rules from the start", () => {
  // Twenty definitions, each used twice; descriptions (annotations) make the text big, not the language.
  const schemaOf = (description: string): object => {
    const $defs: Record<string, object> = {};
    const properties: Record<string, object> = {};
    for (let i = 0; i < 20; i++) {
      $defs[`d${i}`] = { type: "object", description, properties: { name: { type: "string", maxLength: 8 }, size: { type: "integer" } } };
      properties[`p${i}`] = { $ref: `#/$defs/d${i}` };
      properties[`q${i}`] = { $ref: `#/$defs/d${i}` };
    }
    return { type: "object", $defs, properties, additionalProperties: false };
  };
  const small = schemaOf("x");
  const big = schemaOf("x".repeat(2000));
  assert.ok(JSON.stringify(small).length < 32_000 && JSON.stringify(big).length >= 32_000);
  const servedSmall = compileServedSchema(small, { freeValuesAnyDepth: true });
  const servedBig = compileServedSchema(big, { freeValuesAnyDepth: true });
  assert.equal(servedSmall.kind, "rules");
  assert.equal(servedBig.kind, "rules");
  if (servedSmall.kind !== "rules" || servedBig.kind !== "rules") return;
  // The small one as one document rule (with the free values' rule); the big one shares its definitions.
  assert.ok(servedSmall.rules.length <= 2, `${servedSmall.rules.length} rules`);
  assert.ok(servedBig.rules.length >= 20, `${servedBig.rules.length} rules`);
  // The same language either way.
  const doc: Record<string, unknown> = {};
  for (let i = 0; i < 20; i++) {
    doc[`p${i}`] = { name: "a", size: i };
    doc[`q${i}`] = {};
  }
  const text = dumps(doc);
  for (const served of [servedSmall, servedBig]) {
    const automaton = ruleNetworkAutomaton({ rules: served.rules });
    assert.ok(automaton.isComplete(automaton.walk(automaton.start, text)));
    assert.equal(automaton.walk(automaton.start, text.replace('"size": 3', '"size": "3"')), -1);
  }
});

test("past the one DFA's size limit, a subschema used in many places is one shared rule", () => {
  const schema = SHARED;
  assert.throws(
    () => compileJsonSchema(schema),
    (e: unknown) => e instanceof JsonSchemaTooComplexError && e.limit === "dfaStates",
  );
  const served = compileServedSchema(schema, {});
  assert.equal(served.kind, "rules");
  if (served.kind !== "rules") return;
  assert.equal(served.rules.length, 2, "the document and the one shared subschema");
  const accepts = networkAccepts(served.rules);
  const texts = [
    dumps({ item0: { field0: "alpha0" }, item77: { field3: "beta3", field29: "alpha29" }, item139: {} }),
    dumps({ item0: { field0: "alpha1" } }),
    dumps({ item140: {} }),
    dumps({ item5: { field0: "alpha0", extra: 1 } }),
  ];
  assert.deepEqual(texts.map(accepts), [true, false, false, false]);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.equal(verdicts[0], "valid");
  for (const v of verdicts.slice(1)) assert.ok(v.startsWith("invalid"), v);
});

test("an array's many copies of a big item are one rule's calls: maxItems 100 of objects of long strings", () => {
  // Github_medium o9910's shape: 100 positions × an item of two 256-character strings was past
  // the one DFA's limits ("nfaStates"); the item is one rule now, called at each position.
  const schema = {
    type: "array",
    items: {
      type: "object",
      properties: { key: { type: "string", maxLength: 1024 }, type: { type: "string", maxLength: 1024 } },
      additionalProperties: false,
    },
    maxItems: 100,
  };
  assert.throws(
    () => compileJsonSchema(schema),
    (e: unknown) => e instanceof JsonSchemaTooComplexError && (e.limit === "nfaStates" || e.limit === "dfaStates"),
  );
  const served = compileServedSchema(schema, {});
  assert.equal(served.kind, "rules");
  if (served.kind !== "rules") return;
  assert.equal(served.rules.length, 2, "the array and its item");
  const accepts = networkAccepts(served.rules);
  const item = (i: number) => ({ key: `k${i}`, type: "x".repeat(i) });
  const items = (n: number) => Array.from({ length: n }, (_, i) => item(i));
  const texts = [
    dumps(items(100)),
    dumps([]),
    dumps([{ key: "k", type: "t" }, {}]),
    dumps(items(101)),
    dumps([{ key: 1 }]),
    dumps([{ key: "k", other: "o" }]),
  ];
  assert.deepEqual(texts.map(accepts), [true, true, true, false, false, false]);
  const verdicts = pythonVerdicts(texts.map((text) => ({ schema: JSON.stringify(schema), text })));
  assert.deepEqual(
    verdicts.map((v) => v.split(":")[0]),
    ["valid", "valid", "valid", "invalid", "invalid", "invalid"],
  );
  // A short array of small items stays one DFA (the cheapest masks).
  const small = compileServedSchema({ type: "array", items: { type: "integer" }, maxItems: 100 }, {});
  assert.equal(small.kind, "dfa");
});
