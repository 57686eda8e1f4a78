/**
 * LFM2's and LFM2.5's tool calls (schema/tool-calls/pythonic.ts): a Python list of calls between
 * the control tokens `<|tool_call_start|>` and `<|tool_call_end|>`, keyword arguments in the order
 * of `properties`, strings quoted with ' (the template) or " (Liquid's documentation), raw.
 * Shown: random members of the language read back (markers as their text) into calls of declared
 * functions whose arguments Python's jsonschema finds valid, and a stream sends exactly the text
 * before them; what LFM2.5's template writes for an assistant's calls is in the language and reads
 * back the same; out of order, unquoted, undeclared and invalid arguments, and the markers written
 * as text, are refused; objects are JSON, arrays as Python's repr writes them.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { autoReply } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesBytes, sampleMember, subtractDfas } from "../src/regex/index.js";
import { compileToolCallLanguage, parseToolReply, type ToolDeclaration } from "../src/schema/index.js";
import { CONTROL_MARKERS } from "../src/support/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { markersAsBytes, markersAsText, streamedReply, textBeforeCalls } from "./support/tool-call-languages.js";

const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
const utf8 = new TextEncoder();

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
        strict: { type: "boolean" },
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
        query: { type: "string", pattern: "^[a-z ]+$" },
        when: { type: "string", format: "date" },
        filters: {
          type: "object",
          properties: { lang: { type: "string", maxLength: 5 }, safe: { type: "boolean" } },
          required: ["lang"],
          additionalProperties: false,
        },
      },
      required: ["query"],
    },
  },
  { name: "now", parameters: { type: "object", properties: {} } },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;
const language = (parallel = true) => compileToolCallLanguage(TOOLS, "lfm2", parallel, OPTIONS).dfa;

const list = (...calls: string[]): string => `<|tool_call_start|>[${calls.join(", ")}]<|tool_call_end|>`;

describe("LFM2 tool calls: the language", () => {
  test("sampled replies read back into declared calls whose arguments are valid; the stream sends the text before them", () => {
    const dfa = language();
    const calls = intersectDfas(dfa, compileRegex("(?:[^a-zA-Z].*)?", { flags: "s" }));
    const random = seededRandom(101);
    const checks: { schema: string; text: string }[] = [];
    let withCalls = 0;
    for (let i = 0; i < 200; i++) {
      const reply = markersAsText(sampleMember(i % 2 === 0 ? dfa : calls, random, { maxBytes: 700, stopProbability: 0.05 })!);
      const parsed = parseToolReply(reply, "lfm2", TOOLS);
      const before = textBeforeCalls("lfm2", reply);
      if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
      else {
        withCalls++;
        assert.equal(parsed.content, before.trim().length > 0 ? before : null);
        for (const c of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(c.name)), text: c.arguments });
      }
      assert.equal(streamedReply("lfm2", [...reply]), before);
    }
    assert.ok(withCalls > 20, `${withCalls}`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("valid calls are in; out of order, unquoted, undeclared and invalid arguments are out", () => {
    const dfa = language();
    const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
    const weather = "get_weather(city='Oslo', days=3)";
    for (const text of [
      "Just text.",
      list(weather),
      `Let me check.${list(weather, "now()")}`,
      list(`get_weather(city="Zürich 'Altstadt'", unit='celsius', days=14, note=None, strict=True)`),
      list("get_weather(city='x', note='short', strict=false)"),
      list("search(query='cheap flights', when='2024-05-01')"),
      list(`search(query='x', filters={"lang": "en", "safe": true})`),
    ])
      assert.ok(has(text), text);
    for (const text of [
      list("delete_all()"),
      list("get_weather(days=3)"),
      list("get_weather(days=3, city='Oslo')"),
      list("get_weather(city=Oslo)"),
      list("get_weather(city='Oslo', days='3')"),
      list("get_weather(city='Oslo', days=99)"),
      list("get_weather(city='it's')"),
      list("get_weather(city='Oslo',days=3)"),
      list("search(query='Cheap')"),
      list(`search(query='x', filters={"safe": true})`),
      list(`search(query='x', filters={'lang': 'en'})`),
      `${list(weather)} and text after`,
    ])
      assert.ok(!has(text), text);
    assert.ok(!matchesBytes(dfa, utf8.encode(list(weather))), "the markers as text open nothing");
    assert.ok(!matchesBytes(language(false), markersAsBytes(list(weather, "now()"))));
    assert.ok(matchesBytes(language(false), markersAsBytes(list(weather))));
  });

  test("objects are JSON (the template's tojson); arrays as Python's repr writes them (dicts in them too), read back valid", () => {
    const read = parseToolReply(list(`search(query='x', filters={"lang": "a, b)", "safe": false}, when='2024-01-02')`), "lfm2", TOOLS);
    assert.deepEqual(JSON.parse(read.calls[0]!.arguments), { query: "x", filters: { lang: "a, b)", safe: false }, when: "2024-01-02" });
    const tags: ToolDeclaration = {
      name: "tag",
      parameters: {
        type: "object",
        properties: {
          names: { type: "array", items: { type: "string", maxLength: 6 }, minItems: 1, maxItems: 3 },
          rows: {
            type: "array",
            items: { type: "object", properties: { k: { type: ["boolean", "null"] } }, required: ["k"], additionalProperties: false },
          },
        },
        required: ["names"],
        additionalProperties: false,
      },
    };
    const dfa = compileToolCallLanguage([tags], "lfm2", true, OPTIONS).dfa;
    const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
    const repr = list(`tag(names=['it\\'s', "a'b", 'c"d'], rows=[{'k': True}, {'k': None}])`);
    assert.ok(has(repr), repr);
    assert.deepEqual(JSON.parse(parseToolReply(repr, "lfm2", [tags]).calls[0]!.arguments), {
      names: ["it's", "a'b", 'c"d'],
      rows: [{ k: true }, { k: null }],
    });
    for (const text of [list(`tag(names=["x"], rows=[{"k": False}])`), list("tag(names=['x'])")]) assert.ok(has(text), text);
    for (const text of [
      list(`tag(names=['x'], rows=[{'k': false}])`),
      list("tag(names=[])"),
      list("tag(names=['toolong'])"),
      list("tag(names=['a'], rows=[{'k': 1}])"),
      list("tag(names=['a', 'b', 'c', 'd'])"),
    ])
      assert.ok(!has(text), text);
    // Sampled calls read back valid under Python's jsonschema.
    const random = seededRandom(113);
    const checks: { schema: string; text: string }[] = [];
    // Replies holding the markers (no UTF-8 text spells one): the calls.
    const calls = subtractDfas(dfa, compileRegex(".*", { flags: "s" }));
    let python = 0;
    for (let i = 0; i < 60; i++) {
      const reply = markersAsText(sampleMember(calls, random, { maxBytes: 600, stopProbability: 0.05 })!);
      if (/=\['|\{'k'|'k': (True|False|None)/.test(reply)) python++;
      for (const c of parseToolReply(reply, "lfm2", [tags]).calls)
        checks.push({ schema: JSON.stringify(tags.parameters), text: c.arguments });
    }
    assert.ok(checks.length > 20 && python > 5, `${checks.length} calls, ${python} written as Python literals`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });
});

test("LFM2.5's template writes calls the language holds, and they read back the same, streamed at every cut", () => {
  const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, "LFM2.5-8B-A1B.jinja"), "utf8"), {
    specialTexts: [...CONTROL_MARKERS, "<|startoftext|>", "<|im_start|>", "<|im_end|>"],
    bosText: "<|startoftext|>",
    eosText: "<|im_end|>",
    addsBos: false,
  });
  const tools: ChatTool[] = TOOLS.map((t) => ({ type: "function", function: { name: t.name, parameters: t.parameters } }));
  const calls = [
    { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', unit: "celsius", days: 3, note: null, strict: true } },
    { name: "search", arguments: { query: "cheap flights", when: "2024-05-01", filters: { lang: "en", safe: true } } },
    { name: "now", arguments: {} },
  ];
  const messages: ChatMessage[] = [
    { role: "user", content: "Plan my trip." },
    {
      role: "assistant",
      content: "",
      tool_calls: calls.map((c, i) => ({ id: `c${i}`, type: "function", function: { name: c.name, arguments: c.arguments } })),
    },
  ];
  const rendered = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  const from = rendered.indexOf("<|tool_call_start|>");
  const reply = rendered.slice(from, rendered.indexOf("<|tool_call_end|>") + "<|tool_call_end|>".length);
  assert.ok(matchesBytes(language(), markersAsBytes(reply)), JSON.stringify(reply));
  const parsed = parseToolReply(reply, "lfm2", TOOLS);
  assert.deepEqual(
    parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
    calls,
  );
  assert.deepEqual(autoReply(reply, "lfm2", TOOLS), { content: parsed.content, calls: parsed.calls });
  for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply("lfm2", [reply.slice(0, cut), reply.slice(cut)]), "");
});
