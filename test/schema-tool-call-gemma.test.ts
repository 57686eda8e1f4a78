/**
 * Gemma 4's tool calls (schema/tool-calls/gemma.ts): `<|tool_call>call:f{k:v,…}<tool_call|>`, the
 * arguments in the order of their names (case left aside, as Jinja's dictsort), strings between
 * `<|"|>` quotes, numbers as JSON, booleans `true`/`false`, a null `None`.
 * Shown: random members of the language read back into calls of declared functions whose arguments
 * Python's jsonschema finds valid, and a stream sends exactly the text before them; what both real
 * Gemma 4 templates write for an assistant's calls is in the language and reads back the same;
 * out of order, unquoted, undeclared, missing and invalid arguments are refused; objects and
 * arrays are written in Gemma's notation (keys bare, in the order of their names); what that
 * notation cannot say (any-typed values, unnamed properties, oneOf of objects, $ref inside) is a
 * JsonSchemaError naming the keyword.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { autoReply } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesString, sampleString } from "../src/regex/index.js";
import { compileToolCallLanguage, JsonSchemaError, parseToolReply, type ToolDeclaration } from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { streamedReply, textBeforeCalls } from "./support/tool-call-languages.js";

const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const TEMPLATES = ["google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"];
const OPTIONS = { whitespace: "default", strict: true } as const;
const Q = '<|"|>';

const TOOLS: ToolDeclaration[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1, maxLength: 24 },
        unit: { enum: ["celsius", "fahrenheit"] },
        days: { type: "integer", minimum: 1, maximum: 14 },
        note: { anyOf: [{ type: "string", maxLength: 10 }, { type: "null" }] },
      },
      required: ["city"],
      additionalProperties: false,
    },
  },
  {
    name: "search",
    parameters: {
      type: "object",
      // Written in the order of the names, case left aside: Query, ratio, strict, when, Zone.
      properties: {
        Zone: { type: "string", enum: ["eu", "us"] },
        Query: { type: "string", pattern: "^[a-z ]+$" },
        when: { type: "string", format: "date" },
        ratio: { type: "number", minimum: 0, maximum: 1 },
        strict: { type: "boolean" },
      },
      required: ["Query", "Zone"],
    },
  },
  { name: "now", parameters: { type: "object", properties: {} } },
  {
    name: "plan",
    parameters: {
      type: "object",
      properties: {
        stops: { type: "array", items: { type: "string", maxLength: 8 }, minItems: 1, maxItems: 3 },
        filters: {
          type: "object",
          properties: { lang: { enum: ["en", "de"] }, safe: { type: "boolean" }, max: { type: ["integer", "null"], minimum: 1 } },
          required: ["lang"],
          additionalProperties: false,
        },
        points: {
          type: "array",
          items: { type: "object", properties: { x: { type: "number" }, Y: { type: "integer" } }, required: ["x", "Y"] },
          maxItems: 2,
        },
      },
      required: ["stops"],
    },
  },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;
const language = (parallel = true) => compileToolCallLanguage(TOOLS, "gemma4", parallel, OPTIONS).dfa;

const call = (name: string, args: string): string => `<|tool_call>call:${name}{${args}}<tool_call|>`;

describe("Gemma 4 tool calls: the language", () => {
  test("sampled replies read back into declared calls whose arguments are valid; the stream sends the text before them", () => {
    const dfa = language();
    const calls = intersectDfas(dfa, compileRegex("(?:<\\|tool_call>.*)?", { flags: "s" }));
    const random = seededRandom(97);
    const checks: { schema: string; text: string }[] = [];
    const names = new Set<string>();
    let several = 0;
    for (let i = 0; i < 200; i++) {
      const reply = sampleString(i % 2 === 0 ? dfa : calls, random, { maxBytes: 700, stopProbability: 0.05 })!;
      const parsed = parseToolReply(reply, "gemma4", TOOLS);
      const before = textBeforeCalls("gemma4", reply);
      if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
      else {
        assert.equal(parsed.content, before.trim().length > 0 ? before : null);
        if (parsed.calls.length > 1) several++;
        for (const c of parsed.calls) {
          names.add(c.name);
          checks.push({ schema: JSON.stringify(schemaOf(c.name)), text: c.arguments });
        }
      }
      assert.equal(streamedReply("gemma4", [...reply]), before);
    }
    assert.equal(names.size, TOOLS.length, [...names].join(", "));
    assert.ok(several > 0);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("valid calls are in; out of order, unquoted, undeclared, missing and invalid arguments are out", () => {
    const dfa = language();
    const weather = call("get_weather", `city:${Q}Oslo${Q},days:3`);
    for (const text of [
      "Just text, with <tool_call|> and call:f{} but not the opening marker.",
      "",
      weather,
      `Let me check.\n${weather}`,
      `${weather}${call("now", "")}\n`,
      call("get_weather", `city:${Q}Zürich <b>"x"\n${Q},days:14,note:None,unit:${Q}celsius${Q}`),
      call("get_weather", `city:${Q}x${Q},note:null`),
      call("get_weather", `city:${Q}x${Q},note:${Q}short${Q}`),
      call("search", `Query:${Q}cheap flights${Q},ratio:0.25,strict:false,when:${Q}2024-05-01${Q},Zone:${Q}eu${Q}`),
      call("search", `Query:${Q}x${Q},Zone:${Q}us${Q}`),
    ])
      assert.ok(matchesString(dfa, text), JSON.stringify(text));
    for (const text of [
      `a <|tool_call> in text`,
      call("delete_all", ""),
      call("get_weather", "days:3"), // city is required
      call("get_weather", `days:3,city:${Q}Oslo${Q}`), // out of order
      call("get_weather", "city:Oslo"), // unquoted string
      call("get_weather", `city:${Q}Oslo${Q},days:${Q}3${Q}`), // a quoted number
      call("get_weather", `city:${Q}Oslo${Q},days:99`), // over its maximum
      call("get_weather", `city:${Q}Oslo${Q},,days:3`),
      call("get_weather", `city:${Q}a ${Q} b${Q}`), // a string holding the quote
      call("get_weather", `city:${Q}Oslo${Q},town:${Q}x${Q}`), // undeclared
      call("get_weather", `city:${Q}Oslo${Q},unit:${Q}kelvin${Q}`),
      call("search", `Zone:${Q}eu${Q},Query:${Q}x${Q}`), // Query before Zone: the names' order, case aside
      call("search", `Query:${Q}Cheap${Q},Zone:${Q}eu${Q}`), // pattern
      call("search", `Query:${Q}x${Q},when:${Q}2024-13-01${Q},Zone:${Q}eu${Q}`), // format date
      `${weather}\nmore text after the calls`,
    ])
      assert.ok(!matchesString(dfa, text), JSON.stringify(text));
    assert.ok(!matchesString(language(false), `${weather}${call("now", "")}`));
    assert.ok(matchesString(language(false), weather));
  });

  test("objects and arrays in Gemma's notation: keys bare in the order of their names, strings quoted at any depth", () => {
    const dfa = language();
    const plan = (args: string): string => call("plan", args);
    for (const text of [
      plan(`stops:[${Q}Oslo${Q}]`),
      plan(`filters:{lang:${Q}en${Q},max:None,safe:true},stops:[${Q}a${Q},${Q}b, c${Q},${Q}d]e${Q}]`),
      plan(`filters:{lang:${Q}de${Q}},points:[],stops:[${Q}x${Q}]`),
      plan(`points:[{x:0.5,Y:-2},{x:1,Y:3}],stops:[${Q}x${Q}]`),
    ])
      assert.ok(matchesString(dfa, text), text);
    for (const text of [
      plan("stops:[]"), // minItems
      plan(`stops:[${Q}a${Q},${Q}b${Q},${Q}c${Q},${Q}d${Q}]`), // maxItems
      plan(`stops:[${Q}too long a stop${Q}]`),
      plan(`stops:[${Q}x${Q}],filters:{lang:${Q}en${Q}}`), // out of order
      plan(`filters:{safe:true,lang:${Q}en${Q}},stops:[${Q}x${Q}]`), // keys out of order
      plan(`filters:{${Q}lang${Q}:${Q}en${Q}},stops:[${Q}x${Q}]`), // a quoted key
      plan(`filters:{lang:${Q}fr${Q}},stops:[${Q}x${Q}]`),
      plan(`filters:{lang:${Q}en${Q},max:0},stops:[${Q}x${Q}]`),
      plan(`filters:{max:3},stops:[${Q}x${Q}]`), // lang is required
      plan(`points:[{Y:1,x:2}],stops:[${Q}x${Q}]`), // x before Y, case aside
      plan(`points:[{x:1}],stops:[${Q}x${Q}]`),
      plan(`stops:["Oslo"]`),
    ])
      assert.ok(!matchesString(dfa, text), text);
    const read = parseToolReply(plan(`filters:{lang:${Q}en${Q},max:None},points:[{x:0.5,Y:-2}],stops:[${Q}a,]}${Q}]`), "gemma4", TOOLS);
    assert.deepEqual(JSON.parse(read.calls[0]!.arguments), {
      filters: { lang: "en", max: null },
      points: [{ x: 0.5, Y: -2 }],
      stops: ["a,]}"],
    });
  });

  test("what the notation cannot say is refused by name", () => {
    const refused = (parameters: unknown, keyword: string): void =>
      assert.throws(
        () => compileToolCallLanguage([{ name: "f", parameters }], "gemma4", true, OPTIONS),
        (error: unknown) => error instanceof JsonSchemaError && error.keyword === keyword && /function "f"/.test(error.message),
      );
    const param = (x: unknown): unknown => ({ type: "object", properties: { x } });
    refused(param({}), "items"); // any value: an array among them, of any items
    refused(param({ type: "array" }), "items");
    refused(param({ type: "array", items: {} }), "type");
    refused(param({ type: "array", items: { type: "string" }, uniqueItems: true }), "uniqueItems");
    refused(param({ type: "object", properties: { a: { type: "string" } }, additionalProperties: true }), "additionalProperties");
    refused(param({ type: "object", properties: { a: { $ref: "#/$defs/A" } } }), "$ref");
    refused(param({ type: "object", properties: { a: { type: "string", not: { const: "b" } } } }), "not");
    refused(param({ oneOf: [{ type: "object", properties: {} }, { type: "null" }] }), "oneOf");
    refused(param({ type: "object", properties: { "a:b": { type: "string" } } }), "properties");
    refused({ type: "object", additionalProperties: true }, "additionalProperties");
    refused({ type: "object", properties: { "a:b": { type: "string" } } }, "properties");
  });
});

type Call = { name: string; arguments: Record<string, unknown> };

describe("Gemma 4 tool calls: round trip through the real templates", () => {
  const conversations: { content: string; calls: Call[] }[] = [
    {
      content: "",
      calls: [
        { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', unit: "celsius", days: 3, note: null } },
        { name: "search", arguments: { Query: "cheap flights", Zone: "eu", ratio: 0.25, strict: false, when: "2024-05-01" } },
        { name: "now", arguments: {} },
      ],
    },
    {
      content: "Let me look.",
      calls: [
        { name: "get_weather", arguments: { city: "Lyon", note: "short" } },
        {
          name: "plan",
          arguments: { stops: ["Oslo", 'a "b"'], filters: { lang: "de", max: null, safe: false }, points: [{ x: 0.5, Y: 2 }] },
        },
      ],
    },
  ];
  for (const file of TEMPLATES) {
    test(`${file} writes calls the language holds, and they read back the same, streamed at every cut`, () => {
      const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
        specialTexts: ["<bos>", "<eos>", "<|turn>", "<turn|>"],
        bosText: "<bos>",
        eosText: "<eos>",
        addsBos: false,
      });
      const tools: ChatTool[] = TOOLS.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.name, parameters: t.parameters },
      }));
      for (const { content, calls } of conversations) {
        const messages: ChatMessage[] = [
          { role: "user", content: "Plan my trip." },
          {
            role: "assistant",
            content,
            tool_calls: calls.map((c, i) => ({ id: `c${i}`, type: "function", function: { name: c.name, arguments: c.arguments } })),
          },
        ];
        const rendered = template
          .render({ messages, tools, addGenerationPrompt: false })
          .map((s) => s.text)
          .join("");
        const turn = rendered.slice(rendered.lastIndexOf("Plan my trip."));
        const from = turn.indexOf("<|tool_call>");
        const reply = turn.slice(from, turn.lastIndexOf("<tool_call|>") + "<tool_call|>".length);
        assert.ok(matchesString(language(), reply), `${file}: ${JSON.stringify(reply)}`);
        const parsed = parseToolReply(reply, "gemma4", TOOLS);
        assert.deepEqual(
          parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
          calls,
        );
        assert.deepEqual(autoReply(reply, "gemma4", TOOLS), { content: parsed.content, calls: parsed.calls });
        for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply("gemma4", [reply.slice(0, cut), reply.slice(cut)]), "");
      }
    });
  }
});
