/**
 * Thiggle's typed and plain completion (`POST /v1/completion/typed`, `POST /v1/completion`) with the
 * real engine on llama-2-tiny-random (random weights, full 32k vocabulary): every typed completion,
 * over many seeds, type-checks with the TypeScript compiler itself (`const x: T = <output>` in
 * strict mode); the three Thiggle clients' requests, byte for byte as their published source sends
 * them, for every method of each, all succeed and their answers decode as those clients decode them
 * (a UUID id, RFC 3339 `created`, unix seconds in choices); 400s name the type and its line and
 * column.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import ts from "typescript";
import { LLAMA2_TINY_RANDOM } from "./support/paths.js";
import { realEngineApp } from "./support/service.js";
import { TEST_KEY } from "./support/fake-engine.js";

const MODEL = "llama-2-tiny-random";

/** Type-checks `const x_i: typeName = value_i` against the declarations, strict; the diagnostics' texts. */
function typeCheck(declarations: string, typeName: string, values: readonly string[]): string[] {
  const body = values.map((v, i) => `const x${i}: ${typeName} = ${v};`).join("\n");
  const text = `${declarations}\n${body}\nexport {};\n`;
  // No @types from node_modules: only the declarations and the values.
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const file = ts.createSourceFile("check.ts", text, ts.ScriptTarget.ES2022, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version) => (name === "check.ts" ? file : getSourceFile(name, version));
  const program = ts.createProgram(["check.ts"], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

interface ThiggleAnswer {
  id: string;
  object: string;
  created: string;
  choices: { text: string; created: number; model: string; finish_reason: string; usage: Record<string, number> }[];
  usage: { prompt_tokens: number; prediction_time_ms: number; completion_tokens: number; total_tokens: number };
}

/** What the Go client's json.Unmarshal into TypedCompletionResponse / CompletionResponse requires. */
function decodesLikeGo(answer: ThiggleAnswer): void {
  assert.match(answer.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  // time.Time's UnmarshalJSON takes RFC 3339.
  assert.match(answer.created, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  for (const choice of answer.choices) {
    assert.ok(Number.isInteger(choice.created) && Math.abs(choice.created - Date.now() / 1000) < 600);
    assert.equal(choice.model, MODEL);
    assert.ok(["stop", "length"].includes(choice.finish_reason));
  }
  for (const key of ["prompt_tokens", "prediction_time_ms", "completion_tokens", "total_tokens"] as const) {
    assert.ok(Number.isInteger(answer.usage[key]) && answer.usage[key] >= 0, key);
  }
  assert.equal(answer.usage.total_tokens, answer.usage.prompt_tokens + answer.usage.completion_tokens);
}

// (A string enum's value is its string: TypeScript checks such JSON against \`\${Color}\`, not Color,
// which test/grammar-typescript.test.ts does.)
const DECLARATIONS = `
/** A pet. */
export interface Pet {
  name: string;
  /** @minimum 0 @maximum 30 */
  age: number;
  kind: "cat" | "dog" | "bird";
  tags?: string[];
}
export enum Level { Low = 1, High = 2 }
export type Owner = { pets: Pet[]; level: Level; address: [string, number?] | null; notes: Record<string, boolean> };
export type Message = { text: string; };
`;

describe("typed and plain completion with the real engine (llama-2-tiny-random)", () => {
  let service: Awaited<ReturnType<typeof realEngineApp>>;
  let app: FastifyInstance;

  before(async () => {
    service = await realEngineApp(LLAMA2_TINY_RANDOM, { maxNewTokensLimit: 300 });
    app = service.app;
  });
  after(() => service.close());

  /** Posts the exact bytes a client sends. */
  const post = (url: string, body: string, userAgent = "thiggle-client-go/0.0.2") =>
    app.inject({
      method: "POST",
      url,
      headers: { authorization: `Bearer ${TEST_KEY}`, "content-type": "application/json", "user-agent": userAgent },
      payload: body,
    });

  test("every typed completion type-checks with the TypeScript compiler (many seeds, three types)", async () => {
    for (const typeName of ["Pet", "Owner", "Message"]) {
      const values: string[] = [];
      for (let seed = 0; seed < 12; seed++) {
        const res = await post(
          "/v1/completion/typed",
          JSON.stringify({ prompt: "A value:", schema: DECLARATIONS, type_name: typeName, max_tokens: 200, seed, temperature: 1.2 }),
        );
        assert.equal(res.statusCode, 200, res.body);
        const answer = res.json() as ThiggleAnswer;
        decodesLikeGo(answer);
        assert.equal(answer.choices[0]!.finish_reason, "stop");
        values.push(answer.choices[0]!.text);
      }
      assert.deepEqual(typeCheck(DECLARATIONS, typeName, values), [], `${typeName}: ${values.join("\n")}`);
    }
  });

  test("the Go client's requests, byte for byte: TypedCompletion and Completion", async () => {
    // json.Marshal of TypedCompletionRequest with nil pointers (omitempty) and the zero UUID.
    const typed = await post(
      "/v1/completion/typed",
      `{"user_id":"00000000-0000-0000-0000-000000000000","prompt":"Say hi","schema":${JSON.stringify(DECLARATIONS)},"type_name":"Message"}`,
    );
    assert.equal(typed.statusCode, 200, typed.body);
    decodesLikeGo(typed.json() as ThiggleAnswer);
    // CompletionRequest: model is a *StringOrSlice without omitempty (null when unset); zero numbers omitted.
    const plain = await post("/v1/completion", `{"prompt":"Once upon a time","model":null,"max_tokens":12}`);
    assert.equal(plain.statusCode, 200, plain.body);
    const answer = plain.json() as ThiggleAnswer;
    decodesLikeGo(answer);
    assert.equal(answer.object, "text_completion");
    assert.ok(answer.usage.completion_tokens <= 12);
    const named = await post("/v1/completion", `{"prompt":"Once","model":"${MODEL}","max_tokens":4,"temperature":0.7,"stop":["."]}`);
    assert.equal(named.statusCode, 200, named.body);
  });

  test("the Python client's requests, byte for byte: typed_completion (posted to /v1/completion) and completion", async () => {
    // json.dumps with Python's separators; None values dropped by the client.
    const typed = await post(
      "/v1/completion",
      `{"prompt": "Thiggle is an acronym for ", "schema": "export type Message = { text: string; }", "type_name": "Message", "max_tokens": 40}`,
      "thiggle-client-py/0.0.6",
    );
    assert.equal(typed.statusCode, 200, typed.body);
    const answer = typed.json() as ThiggleAnswer;
    assert.deepEqual(typeCheck("export type Message = { text: string; }", "Message", [answer.choices[0]!.text]), []);
    const plain = await post(
      "/v1/completion",
      `{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0.5}`,
      "thiggle-client-py/0.0.6",
    );
    assert.equal(plain.statusCode, 200, plain.body);
  });

  test("the TypeScript client's requests, byte for byte: typedCompletion and complete", async () => {
    const typed = await post(
      "/v1/completion/typed",
      JSON.stringify({ prompt: "Pet:", schema: DECLARATIONS, type_name: "Pet", max_tokens: 120 }),
      "thiggle-client-ts/0.0.6",
    );
    assert.equal(typed.statusCode, 200, typed.body);
    const plain = await post(
      "/v1/completion",
      JSON.stringify({ prompt: "Hello", model: [MODEL, "gpt-4"], max_tokens: 5 }),
      "thiggle-client-ts/0.0.6",
    );
    assert.equal(plain.statusCode, 200, plain.body);
  });

  test("every other method of the three clients, byte for byte (regex, cfg, categorize)", async () => {
    const grammar = 'start: "yes" | "no"';
    const cases: [string, string, string][] = [
      // Python 0.0.6: json.dumps of every knob, "pattern" a string.
      [
        "/v1/completion/regex",
        `{"prompt": "The year is ", "pattern": "[0-9]{4}", "max_new_tokens": 5, "stop_after_match": true, "temperature": 1.0, "top_p": 1.0, "top_k": 50, "repetition_penalty": 1.0}`,
        "thiggle-client-py/0.0.6",
      ],
      [
        "/v1/completion/cfg",
        `{"prompt": "Answer: ", "grammar": ${JSON.stringify(grammar)}, "max_new_tokens": 5, "stop_after_match": true, "temperature": 1.0, "top_p": 1.0, "top_k": 50, "repetition_penalty": 1.0}`,
        "thiggle-client-py/0.0.6",
      ],
      [
        "/v1/categorize",
        `{"prompt": "I love it", "categories": ["positive", "negative"], "allow_null_category": false, "allow_multiple_classes": false}`,
        "thiggle-client-py/0.0.6",
      ],
      // TypeScript 0.0.6: JSON.stringify of what the caller gave, "pattern" an array.
      [
        "/v1/completion/regex",
        JSON.stringify({ prompt: "The year is ", pattern: ["[0-9]{4}", "19[0-9]{2}"], max_new_tokens: 6 }),
        "thiggle-client-ts/0.0.6",
      ],
      ["/v1/completion/cfg", JSON.stringify({ prompt: "Answer: ", grammar }), "thiggle-client-ts/0.0.6"],
      ["/v1/categorize", JSON.stringify({ prompt: "I love it", categories: ["positive", "negative"] }), "thiggle-client-ts/0.0.6"],
      // Go 0.0.2: omitempty drops zero numbers, an unset Bool is null.
      ["/v1/completion/regex", `{"prompt":"The year is ","pattern":"[0-9]{4}","stop_after_match":null}`, "thiggle-client-go/0.0.2"],
      [
        "/v1/completion/cfg",
        `{"prompt":"Answer: ","grammar":${JSON.stringify(grammar)},"max_new_tokens":4,"stop_after_match":null}`,
        "thiggle-client-go/0.0.2",
      ],
      [
        "/v1/categorize",
        `{"prompt":"I love it","categories":["positive","negative"],"allow_null_category":null,"allow_multiple_classes":null}`,
        "thiggle-client-go/0.0.2",
      ],
    ];
    for (const [url, body, agent] of cases) {
      const res = await post(url, body, agent);
      assert.equal(res.statusCode, 200, `${agent} ${url}: ${res.body}`);
      const answer = res.json() as { completion?: string; choices?: string[] };
      if (url.endsWith("regex")) assert.match(answer.completion!, /^([0-9]{4})$/);
      if (url.endsWith("cfg")) assert.ok(["yes", "no"].includes(answer.completion!));
      if (url.endsWith("categorize")) assert.equal(answer.choices!.length, 1);
    }
  });

  test("400s: TypeScript that does not parse, a type that cannot be JSON, a type that is not exported, a model not served", async () => {
    const refusal = async (body: Record<string, unknown>, pattern: RegExp): Promise<void> => {
      const res = await post("/v1/completion/typed", JSON.stringify({ prompt: "x", max_tokens: 50, ...body }));
      assert.equal(res.statusCode, 400, res.body);
      assert.match((res.json() as { error: string }).error, pattern);
    };
    await refusal({ schema: "export type A = {\n  a: string;\n  b: ;\n}", type_name: "A" }, /^schema: .*line 3/);
    await refusal({ schema: "export interface A {\n  run(): void;\n}", type_name: "A" }, /^schema: .*line 2/);
    await refusal({ schema: "type Hidden = { a: string }", type_name: "Hidden" }, /^type_name: /);
    await refusal({ schema: "export type A = { a: string }", type_name: "B" }, /^type_name: /);
    await refusal({ schema: "export type A = { a: string }", type_name: "A", stop: ["}"] }, /^stop: /);
    const model = await post("/v1/completion", JSON.stringify({ prompt: "x", model: "gpt-4" }));
    assert.equal(model.statusCode, 400);
    assert.match((model.json() as { error: string }).error, /gpt-4.*llama-2-tiny-random/);
  });
});
