/**
 * POST /v1/completion/json with the REAL engine (createEngine on stories260K) through fastify's
 * inject: every field, the three whitespace styles, budgets (422 with the least number of tokens,
 * which is then enough), 400s naming the keyword and its JSON pointer, strict: false warnings.
 * Every completion is checked by Python's jsonschema.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { STORIES_260K } from "./support/paths.js";
import { auth } from "./support/fake-engine.js";
import { realEngineApp } from "./support/service.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";

interface JsonCompletion {
  completion: string;
  tokens_generated: number;
  stop_reason: string;
  warnings?: { keyword: string; pointer: string; message: string }[];
}

const PERSON = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 12 },
    age: { type: "integer", minimum: 0, maximum: 150 },
    pets: { type: "array", items: { enum: ["cat", "dog"] }, maxItems: 3 },
  },
  required: ["name", "age"],
  additionalProperties: false,
};

/** Outside strings, a space comes only right after "," or ":", one at a time; no other whitespace. */
function onlySpacesAfterSeparators(text: string): boolean {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === " " && !(text[i - 1] === "," || text[i - 1] === ":")) return false;
    else if (c === "\n" || c === "\t" || c === "\r") return false;
  }
  return true;
}

describe("POST /v1/completion/json with the real engine (stories260K)", () => {
  let service: Awaited<ReturnType<typeof realEngineApp>>;
  let app: FastifyInstance;

  before(async () => {
    service = await realEngineApp(STORIES_260K, { maxNewTokensLimit: 300 });
    app = service.app;
  });
  after(() => service.close());

  const post = (payload: unknown) =>
    app.inject({ method: "POST", url: "/v1/completion/json", headers: auth(), payload: JSON.stringify(payload) });

  async function ok(payload: Record<string, unknown>): Promise<JsonCompletion> {
    const res = await post(payload);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as JsonCompletion;
  }

  async function error(payload: unknown, status: number, message: RegExp): Promise<string> {
    const res = await post(payload);
    assert.equal(res.statusCode, status, `${JSON.stringify(payload)} → ${res.body}`);
    const body = res.json() as { error: string; code: number };
    assert.equal(body.code, status);
    assert.match(body.error, message, JSON.stringify(payload));
    return body.error;
  }

  /** Python's verdict on each (schema, completion): all must be "valid". */
  function assertValid(pairs: [schema: unknown, completion: string][]): void {
    const verdicts = pythonVerdicts(pairs.map(([schema, text]) => ({ schema: JSON.stringify(schema), text })));
    const wrong = pairs.filter((_, i) => verdicts[i] !== "valid").map(([, text], i) => `${text} → ${verdicts[i]}`);
    assert.deepEqual(wrong, []);
  }

  test("completions are complete JSON documents valid against the schema, with defaults", async () => {
    const outputs: [unknown, string][] = [];
    for (let seed = 1; seed <= 6; seed++) {
      const body = await ok({ prompt: "Once upon a time", schema: PERSON, seed, temperature: 1.5 });
      assert.deepEqual(Object.keys(body).sort(), ["completion", "stop_reason", "tokens_generated"]);
      assert.equal(body.stop_reason, "pattern_match");
      assert.ok(body.tokens_generated >= 1 && body.tokens_generated <= 256);
      const value = JSON.parse(body.completion) as Record<string, unknown>;
      assert.deepEqual(Object.keys(value).slice(0, 2), ["name", "age"], "properties are written in the schema's order");
      outputs.push([PERSON, body.completion]);
    }
    assertValid(outputs);
  });

  test("whitespace: default is json.dumps' or compact, compact has none, indented is json.dumps(indent=2)", async () => {
    const schema = {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "array", items: { type: "boolean" }, minItems: 2 } },
      required: ["a", "b"],
      additionalProperties: false,
    };
    for (let seed = 1; seed <= 3; seed++) {
      const compact = await ok({ prompt: "x", schema, whitespace: "compact", seed });
      assert.equal(compact.completion, JSON.stringify(JSON.parse(compact.completion)));
      const indented = await ok({ prompt: "x", schema, whitespace: "indented", seed });
      assert.equal(indented.completion, JSON.stringify(JSON.parse(indented.completion), null, 2));
      const spaced = await ok({ prompt: "x", schema, seed });
      assert.ok(onlySpacesAfterSeparators(spaced.completion), spaced.completion);
      assertValid([
        [schema, compact.completion],
        [schema, indented.completion],
        [schema, spaced.completion],
      ]);
    }
  });

  test("max_new_tokens: the least number a schema needs is told in the 422, and is then enough", async () => {
    const schema = {
      type: "object",
      properties: { word: { const: "wonderful" }, n: { type: "integer", minimum: 1000 } },
      required: ["word", "n"],
    };
    const message = await error(
      { prompt: "x", schema, max_new_tokens: 2 },
      422,
      /schema needs at least (\d+) tokens but max_new_tokens is 2/,
    );
    const least = Number(/at least (\d+) tokens/.exec(message)![1]);
    assert.ok(least > 2);
    await error({ prompt: "x", schema, max_new_tokens: least - 1 }, 422, new RegExp(`at least ${least} tokens`));
    const body = await ok({ prompt: "x", schema, max_new_tokens: least, seed: 9 });
    assert.ok(body.tokens_generated <= least);
    assert.equal(body.stop_reason, "pattern_match");
    assertValid([[schema, body.completion]]);
  });

  test("recursive schemas and free values are served to any depth: valid, and the least budget is exact", async () => {
    // A tree whose nodes need their `kids` list, and a free `meta` value: a rule network.
    const tree = {
      type: "object",
      properties: { v: { const: "node" }, kids: { type: "array", items: { $ref: "#" } }, meta: { type: "object" } },
      required: ["v", "kids"],
      additionalProperties: false,
    };
    const outputs: [unknown, string][] = [];
    for (let seed = 1; seed <= 4; seed++) {
      const body = await ok({ prompt: "A tree:", schema: tree, seed, temperature: 1.5, max_new_tokens: 150 });
      assert.equal(body.stop_reason, "pattern_match");
      outputs.push([tree, body.completion]);
    }
    const message = await error({ prompt: "x", schema: tree, max_new_tokens: 2 }, 422, /schema needs at least (\d+) tokens/);
    const least = Number(/at least (\d+) tokens/.exec(message)![1]);
    await error({ prompt: "x", schema: tree, max_new_tokens: least - 1 }, 422, new RegExp(`at least ${least} tokens`));
    const body = await ok({ prompt: "x", schema: tree, max_new_tokens: least, seed: 5 });
    assert.ok(body.tokens_generated <= least);
    outputs.push([tree, body.completion]);
    assertValid(outputs);
  });

  test("malformed and remote schemas are 400s naming the keyword and its JSON pointer", async () => {
    await error({ prompt: "x", schema: { type: "strin" } }, 400, /schema: type at \/type: must be one of/);
    await error(
      { prompt: "x", schema: { properties: { a: { minLength: -1 } } } },
      400,
      /minLength at \/properties\/a\/minLength: must be a non-negative integer/,
    );
    await error({ prompt: "x", schema: { $ref: "https://example.com/s.json" } }, 400, /\$ref at \/\$ref: remote reference/);
    await error(
      { prompt: "x", schema: { $ref: "#/$defs/missing" } },
      400,
      /\$ref at \/\$ref: reference "#\/\$defs\/missing" points at nothing/,
    );
    await error({ prompt: "x", schema: { type: "string", pattern: "(" } }, 400, /schema: pattern at \/pattern:/);
    await error({ prompt: "x", schema: { $schema: "http://example.com/my-dialect" } }, 400, /\$schema at \/\$schema: unknown dialect/);
    await error({ prompt: "x", schema: 3 }, 400, /schema/);
    let deep: unknown = { type: "integer" };
    for (let i = 0; i < 300; i++) deep = { items: deep };
    await error({ prompt: "x", schema: deep }, 400, /schema: nested deeper than 256 levels/);
  });

  test("strict (default) refuses what cannot be enforced; strict: false ignores it and says so", async () => {
    const schema = { type: "array", items: { type: "string", maxLength: 3 }, uniqueItems: true, maxItems: 3 };
    await error({ prompt: "x", schema }, 400, /uniqueItems at \/uniqueItems: uniqueItems is enforced only where .* at most 8 values/);
    const body = await ok({ prompt: "x", schema, strict: false, seed: 2 });
    assert.deepEqual(
      body.warnings?.map((w) => [w.keyword, w.pointer]),
      [["uniqueItems", "/uniqueItems"]],
    );
    assert.match(body.warnings![0]!.message, /not enforced/);
    // Unknown keywords are annotations by the spec: accepted, and said.
    const unknown = await ok({ prompt: "x", schema: { type: "boolean", minimun: 3 }, seed: 1 });
    assert.deepEqual(
      unknown.warnings?.map((w) => [w.keyword, w.pointer]),
      [["minimun", "/minimun"]],
    );
    assert.ok(["true", "false"].includes(unknown.completion));
  });

  test("forbid_unnamed_properties writes only the properties the schema names", async () => {
    const schema = { type: "object", properties: { a: { type: "boolean" } } };
    for (let seed = 1; seed <= 4; seed++) {
      const body = await ok({ prompt: "x", schema, forbid_unnamed_properties: true, seed, temperature: 2 });
      const keys = Object.keys(JSON.parse(body.completion) as object);
      assert.ok(
        keys.every((k) => k === "a"),
        body.completion,
      );
    }
  });

  test('property_order "any": keys come in other orders than the schema\'s, each document valid; big objects keep the order, said', async () => {
    const schema = {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "boolean" }, c: { enum: ["x", "y"] } },
      required: ["a", "b", "c"],
      additionalProperties: false,
    };
    const orders = new Set<string>();
    const outputs: [unknown, string][] = [];
    for (let seed = 1; seed <= 12; seed++) {
      const body = await ok({ prompt: "x", schema, property_order: "any", seed, temperature: 2 });
      orders.add(Object.keys(JSON.parse(body.completion) as object).join(""));
      outputs.push([schema, body.completion]);
      assert.equal(body.warnings, undefined);
    }
    assertValid(outputs);
    assert.ok(orders.size >= 3 && [...orders].some((o) => o !== "abc"), [...orders].join(" "));
    const wide = { type: "object", properties: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, { type: "integer" }])) };
    const kept = await ok({ prompt: "x", schema: wide, property_order: "any", seed: 1 });
    assert.deepEqual(
      kept.warnings?.map((w) => [w.keyword, w.pointer]),
      [["properties", ""]],
    );
    await error({ prompt: "x", schema, property_order: "random" }, 400, /property_order/);
  });

  test("unsatisfiable and too complex schemas are 422s", async () => {
    await error({ prompt: "x", schema: { type: "string", minLength: 3, maxLength: 2 } }, 422, /no JSON value satisfies the schema/);
    await error({ prompt: "x", schema: { allOf: [{ type: "string" }, { type: "integer" }] } }, 422, /no JSON value satisfies/);
    await error(
      { prompt: "x", schema: { type: "integer", multipleOf: 1234567.891 } },
      422,
      /schema: too complex at \/multipleOf: multipleOf too large/,
    );
  });

  test("a property named __proto__ is compiled and written like any other name", async () => {
    // Raw text: in an object literal "__proto__" would set the prototype, not name a property.
    const schema =
      '{"type":"object","properties":{"__proto__":{"type":"string","maxLength":8},"constructor":{"type":"integer"}},"required":["__proto__","constructor"],"additionalProperties":false}';
    for (let seed = 1; seed <= 3; seed++) {
      const res = await app.inject({
        method: "POST",
        url: "/v1/completion/json",
        headers: { ...auth(), "content-type": "application/json" },
        payload: `{"prompt":"x","schema":${schema},"whitespace":"compact","seed":${seed}}`,
      });
      assert.equal(res.statusCode, 200, res.body);
      const { completion } = res.json() as JsonCompletion;
      const value = JSON.parse(completion) as Record<string, unknown>;
      assert.deepEqual(Object.keys(value), ["__proto__", "constructor"], completion);
      assert.equal(typeof Object.getOwnPropertyDescriptor(value, "__proto__")?.value, "string", completion);
      assert.ok(Number.isInteger(value.constructor), completion);
    }
  });

  test("request fields are validated", async () => {
    await error({ prompt: "x" }, 400, /schema/);
    await error({ prompt: "x", schema: {}, whitespace: "pretty" }, 400, /whitespace/);
    await error({ prompt: "x", schema: {}, strict: "yes" }, 400, /strict/);
    await error({ prompt: "x", schema: {}, stop_after_match: true }, 400, /stop_after_match/);
    await error({ prompt: "x", schema: {}, max_new_tokens: 0 }, 400, /max_new_tokens/);
    await error({ prompt: "x", schema: {}, max_new_tokens: 301 }, 400, /max_new_tokens/);
  });
});
