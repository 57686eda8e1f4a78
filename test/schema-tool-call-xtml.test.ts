/**
 * Kimi-K3's XTML tool calls on tool_choice "auto" (schema/tool-calls/tagged.ts, "kimi-k3"): the
 * reply's text, its close `<|close|>response<|sep|>`, then one block
 * `<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="p" type="string"<|sep|>…`
 * (`<|open|>`, `<|close|>`, `<|sep|>` control tokens), each argument's `type` naming its JSON
 * type. Random members read back into calls of declared functions whose arguments Python's
 * jsonschema finds valid; a value's type word matches its value; what the real template writes
 * is in the language and reads back the same, streamed at every cut.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { autoReply } from "../src/generate/index.js";
import { compileRegex, matchesBytes, sampleMember, subtractDfas } from "../src/regex/index.js";
import { compileToolCallLanguage, JsonSchemaError, parseToolReply, type ToolDeclaration } from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import {
  markersAsBytes,
  markersAsText,
  realTemplate,
  renderedToolLoop,
  streamedReply,
  toolCallLanguages,
} from "./support/tool-call-languages.js";

const OPTIONS = { whitespace: "default", strict: true } as const;
const utf8 = new TextEncoder();

const TOOLS: ToolDeclaration[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1, maxLength: 24 },
        days: { type: "integer", minimum: 1, maximum: 14 },
        units: { anyOf: [{ enum: ["c", "f"] }, { type: "null" }] },
      },
      required: ["city"],
      additionalProperties: false,
    },
  },
  {
    name: "search",
    parameters: {
      type: "object",
      properties: {
        query: { type: ["string", "number"] },
        filters: { type: "object", properties: { lang: { type: "string" }, safe: { type: "boolean" } }, additionalProperties: false },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      },
      required: ["query"],
      additionalProperties: false,
    },
  },
  { name: "now", parameters: { type: "object", properties: {}, additionalProperties: false } },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;
const language = toolCallLanguages((_style: "kimi-k3") => TOOLS, OPTIONS);

const CLOSE = "<|close|>response<|sep|>";
const arg = (key: string, type: string, value: string): string =>
  `<|open|>argument key="${key}" type="${type}"<|sep|>${value}<|close|>argument<|sep|>`;
const call = (name: string, index: number, ...args: string[]): string =>
  `<|open|>call tool="${name}" index="${index}"<|sep|>${args.join("")}<|close|>call<|sep|>`;
const block = (...calls: string[]): string => `<|open|>tools<|sep|>${calls.join("")}<|close|>tools<|sep|>`;

/** The text a stream sends: up to the response's close. */
const sentText = (reply: string): string => {
  const at = reply.indexOf(CLOSE);
  return at < 0 ? reply : reply.slice(0, at);
};

describe("Kimi-K3: text, the response's close, then one XTML block of typed arguments", () => {
  test("sampled replies read back into declared calls with valid arguments; each type word names its value's type", () => {
    const dfa = language("kimi-k3");
    // Replies holding a control token (no UTF-8 text is one): most hold calls.
    const marked = subtractDfas(dfa, compileRegex(".*", { flags: "s" }));
    const random = seededRandom(107);
    const checks: { schema: string; text: string }[] = [];
    let withCalls = 0;
    let several = 0;
    for (let i = 0; i < 200; i++) {
      const reply = markersAsText(sampleMember(i % 2 === 0 ? dfa : marked, random, { maxBytes: 900, stopProbability: 0.04 })!);
      const parsed = parseToolReply(reply, "kimi-k3", TOOLS);
      const sent = sentText(reply);
      if (parsed.calls.length === 0) assert.equal(parsed.content, sent, reply);
      else {
        withCalls++;
        if (parsed.calls.length > 1) several++;
        assert.equal(parsed.content, sent.trim().length > 0 ? sent : null, reply);
        for (const c of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(c.name)), text: c.arguments });
      }
      for (const [, type, value] of reply.matchAll(/type="(\w+)"<\|sep\|>(.*?)<\|close\|>argument/gs)) {
        const json = type === "string" ? null : (JSON.parse(value!) as unknown);
        const kind = json === null && type !== "null" ? "string" : Array.isArray(json) ? "array" : json === null ? "null" : typeof json;
        assert.equal(kind, type, reply);
      }
      assert.equal(streamedReply("kimi-k3", [...reply]), sent, reply);
    }
    assert.ok(withCalls > 30 && several > 0, `${withCalls} replies with calls, ${several} with several`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("valid calls are in; undeclared names, wrong type words, invalid values and the tags as text are out", () => {
    const dfa = language("kimi-k3");
    const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
    const oslo = call("get_weather", 1, arg("city", "string", "Oslo"), arg("days", "number", "3"));
    for (const text of [
      "Just text.",
      `Just text.${CLOSE}`,
      `Just text.${CLOSE}<|close|>message<|sep|>`,
      `${CLOSE}${block(oslo)}`,
      `Let me check.${CLOSE}${block(oslo, call("now", 2))}<|close|>message<|sep|>`,
      `${CLOSE}${block(call("search", 1, arg("query", "number", "42"), arg("filters", "object", '{"safe": true}')))}`,
      `${CLOSE}${block(call("search", 1, arg("query", "string", "42")))}`,
      `${CLOSE}${block(call("get_weather", 1, arg("city", "string", "Oslo"), arg("units", "null", "null")))}`,
    ])
      assert.ok(has(text), text);
    for (const text of [
      `${CLOSE}${block(call("delete_all", 1))}`,
      `${CLOSE}${block(call("get_weather", 1, arg("days", "number", "3")))}`,
      `${CLOSE}${block(call("get_weather", 1, arg("city", "number", "3")))}`,
      `${CLOSE}${block(call("get_weather", 1, arg("city", "string", "Oslo"), arg("days", "string", "3")))}`,
      `${CLOSE}${block(call("get_weather", 1, arg("city", "string", "Oslo"), arg("days", "number", "99")))}`,
      `${CLOSE}${block(call("search", 1, arg("query", "string", "x"), arg("tags", "object", "[]")))}`,
      `${CLOSE}${block(call("now", 0))}`,
      `${CLOSE}${block(oslo)} more`,
      `a <|close|> in text`,
    ])
      assert.ok(!has(text), text);
    assert.ok(!matchesBytes(dfa, utf8.encode(`${CLOSE}${block(oslo)}`)), "the tags as text");
    assert.ok(!matchesBytes(language("kimi-k3", false), markersAsBytes(`${CLOSE}${block(oslo, call("now", 2))}`)));
  });

  test("names that would end an attribute are refused by name", () => {
    assert.throws(
      () =>
        compileToolCallLanguage(
          [{ name: "f", parameters: { type: "object", properties: { 'a"b': { type: "string" } } } }],
          "kimi-k3",
          true,
          OPTIONS,
        ),
      (error: unknown) => error instanceof JsonSchemaError && error.keyword === "properties",
    );
  });

  test("Kimi-K3.jinja writes calls and text the language holds; they read back the same, streamed at every cut", () => {
    const template = realTemplate("Kimi-K3.jinja", { controls: ["<|end_of_msg|>"], eos: "<|end_of_msg|>" });
    const calls = [
      { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', days: 3, units: null } },
      { name: "search", arguments: { query: 42, filters: { lang: "nb", safe: true }, tags: ["a", 'b "c"'] } },
      { name: "now", arguments: {} },
    ];
    for (const content of ["", "Let me look."]) {
      const rendered = renderedToolLoop(template, TOOLS, calls, { content });
      const open = "<|open|>response<|sep|>";
      const from = rendered.indexOf(open) + open.length;
      const reply = rendered.slice(from, rendered.indexOf("<|end_of_msg|>", from));
      assert.ok(matchesBytes(language("kimi-k3"), markersAsBytes(reply)), JSON.stringify(reply));
      const parsed = parseToolReply(reply, "kimi-k3", TOOLS);
      assert.deepEqual(
        parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
        calls,
      );
      assert.equal(parsed.content ?? "", content);
      for (let cut = 0; cut <= reply.length; cut++)
        assert.equal(streamedReply("kimi-k3", [reply.slice(0, cut), reply.slice(cut)]), content);
      const last = rendered.lastIndexOf(open) + open.length;
      const text = rendered.slice(last, rendered.indexOf("<|end_of_msg|>", last));
      assert.equal(text, `It is sunny.${CLOSE}<|close|>message<|sep|>`);
      assert.ok(matchesBytes(language("kimi-k3"), markersAsBytes(text)));
      assert.deepEqual(autoReply(text, "kimi-k3", TOOLS), { content: "It is sunny.", calls: [] });
      for (let cut = 0; cut <= text.length; cut++)
        assert.equal(streamedReply("kimi-k3", [text.slice(0, cut), text.slice(cut)]), "It is sunny.");
    }
  });
});
