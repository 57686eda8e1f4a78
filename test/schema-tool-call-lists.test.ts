/**
 * The tool-call styles of tool_choice "auto" that write the calls as JSON inside `<tool_calls>`
 * (schema/tool-calls/language.ts): "apriel" (Apriel 1.5, 1.6: one JSON list, `<tool_calls>[{…}, {…}]</tool_calls>`)
 * and "minimax-m1" (MiniMax-M1: a JSON object a line, `<tool_calls>\n{…}\n{…}\n</tool_calls>`).
 * Random members of each language parse back into calls of declared functions whose arguments
 * Python's jsonschema finds valid; free text never spells the marker; undeclared functions, invalid
 * arguments, keys beside name and arguments, an empty list and text after the calls are refused;
 * without parallel calls there is one; what each real template writes for an assistant's calls is
 * in the language and reads back as the same calls; a stream splits the text from the calls the
 * same at every cut.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { autoReply, replyCalls } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesString, pyReEscape, sampleString } from "../src/regex/index.js";
import {
  compileToolCallLanguage,
  JsonSchemaError,
  parseToolReply,
  TOOL_CALL_OPEN,
  type ToolCallStyle,
  type ToolDeclaration,
} from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { streamedReply, textBeforeCalls, toolCallLanguages } from "./support/tool-call-languages.js";

type Listed = "apriel" | "minimax-m1";
const STYLES: Listed[] = ["apriel", "minimax-m1"];
const TEMPLATES: Record<Listed, string[]> = {
  apriel: ["Apriel-1.6-15b-Thinker-fixed.jinja", "unsloth-Apriel-1.5.jinja"],
  "minimax-m1": ["MiniMax-M1.jinja"],
};
const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
const OPEN = "<tool_calls>";
const CLOSE = "</tool_calls>";

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
      properties: {
        query: { type: "string", pattern: "^[a-z ]+$" },
        filters: {
          type: "object",
          properties: { lang: { type: "string" }, safe: { type: "boolean" } },
          required: ["lang"],
          additionalProperties: false,
        },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
        ratio: { type: "number" },
      },
      required: ["query", "filters"],
      additionalProperties: false,
    },
  },
  { name: "now", parameters: { type: "object", properties: {}, additionalProperties: false } },
  {
    name: "lookup",
    parameters: {
      $defs: { Color: { type: "string", enum: ["red", "green"] } },
      type: "object",
      properties: { color: { $ref: "#/$defs/Color" }, anything: {} },
      required: ["color"],
      additionalProperties: false,
    },
  },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;

const language = toolCallLanguages((_style: Listed) => TOOLS, OPTIONS);

const streamed = streamedReply;

/** The calls (JSON texts of {"name", "arguments"} objects) as `style` writes them. */
function callsText(style: Listed, calls: readonly string[]): string {
  return style === "apriel" ? `${OPEN}[${calls.join(", ")}]${CLOSE}` : `${OPEN}\n${calls.map((c) => `${c}\n`).join("")}${CLOSE}`;
}

describe("listed tool calls: the markers", () => {
  test("both open with <tool_calls>", () => {
    for (const style of STYLES) assert.equal(TOOL_CALL_OPEN[style], OPEN);
  });
});

describe("listed tool calls: random members of the language", () => {
  for (const style of STYLES) {
    test(`${style}: sampled calls parse back into declared calls whose arguments are valid`, () => {
      const calls = intersectDfas(language(style), compileRegex(`${pyReEscape(OPEN)}.*`, { flags: "s" }));
      const random = seededRandom(style === "apriel" ? 23 : 29);
      const checks: { schema: string; text: string }[] = [];
      const names = new Set<string>();
      let several = 0;
      for (let i = 0; i < 150; i++) {
        const reply = sampleString(calls, random, { maxBytes: 900, stopProbability: 0.08 })!;
        const parsed = parseToolReply(reply, style, TOOLS);
        assert.equal(parsed.content, null, reply);
        assert.ok(parsed.calls.length >= 1, reply);
        if (parsed.calls.length > 1) several++;
        for (const call of parsed.calls) {
          names.add(call.name);
          assert.ok(
            TOOLS.some((t) => t.name === call.name),
            call.name,
          );
          checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
        // A stream holds back nothing of a reply that starts with the calls.
        assert.equal(streamed(style, [...reply]), "");
      }
      assert.equal(names.size, TOOLS.length, `every function is called somewhere: ${[...names].join(", ")}`);
      assert.ok(several > 0, "some replies hold several calls");
      const verdicts = pythonVerdicts(checks);
      verdicts.forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: sampled replies: free text never spells the marker, and the stream sends exactly it`, () => {
      const dfa = language(style);
      const marked = intersectDfas(dfa, compileRegex(`.*${pyReEscape(OPEN)}.*`, { flags: "s" }));
      const random = seededRandom(style === "apriel" ? 31 : 37);
      let withCalls = 0;
      for (let i = 0; i < 300; i++) {
        const reply = sampleString(i % 2 === 0 ? dfa : marked, random, { maxBytes: 700, stopProbability: 0.05 })!;
        const parsed = parseToolReply(reply, style, TOOLS);
        const before = textBeforeCalls(style, reply);
        if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
        else {
          withCalls++;
          assert.equal(parsed.content, before.trim().length > 0 ? before : null);
        }
        assert.ok(!before.includes(OPEN));
        assert.equal(streamed(style, [...reply]), before);
      }
      assert.equal(withCalls, 150, "every reply holding the marker is text then calls");
    });
  }
});

describe("listed tool calls: what the language refuses", () => {
  const weather = '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}';
  const now = '{"name": "now", "arguments": {}}';
  for (const style of STYLES) {
    test(`${style}: valid calls are in; undeclared names, invalid arguments, other keys and trailing text are out`, () => {
      const dfa = language(style);
      const good = callsText(style, [weather]);
      for (const text of [
        "Just text, mentioning tool_calls and <tool_calls without the bracket.",
        "",
        good,
        `${good}\n`,
        `Let me check.\n${good}`,
        callsText(style, [weather, now]),
        callsText(style, ['{"name":"now","arguments":{}}']),
        callsText(style, ['{"name": "search", "arguments": {"query": "cheap", "filters": {"lang": "en"}, "tags": ["a"]}}']),
        callsText(style, ['{"name": "lookup", "arguments": {"color": "red", "anything": {"k": [1, null]}}}']),
      ])
        assert.ok(matchesString(dfa, text), JSON.stringify(text));
      for (const text of [
        `a ${OPEN} in text`,
        callsText(style, []), // no call
        callsText(style, ['{"name": "delete_all", "arguments": {}}']),
        callsText(style, ['{"name": "get_weather", "arguments": {"days": 3}}']), // city is required
        callsText(style, ['{"name": "get_weather", "arguments": {"city": "Oslo", "days": 99}}']), // maximum
        callsText(style, ['{"name": "get_weather", "arguments": {"city": "Oslo", "town": "x"}}']), // undeclared parameter
        callsText(style, ['{"name": "search", "arguments": {"query": "cheap", "filters": {}}}']), // filters.lang
        callsText(style, ['{"name": "lookup", "arguments": {"color": "blue"}}']),
        callsText(style, ['{"name": "now", "arguments": {}, "id": "call0"}']), // a history turn's id, never the model's own
        callsText(style, ['{"arguments": {}, "name": "now"}']),
        callsText(style, ["{}"]),
        good.slice(0, -3), // unclosed
        `${good}\nmore text after the calls`,
        `${good}${good}`, // one list of calls, not two
      ])
        assert.ok(!matchesString(dfa, text), JSON.stringify(text));
    });

    test(`${style}: without parallel calls, the list holds one call`, () => {
      const one = callsText(style, [now]);
      const two = callsText(style, [now, weather]);
      assert.ok(matchesString(language(style, false), one));
      assert.ok(!matchesString(language(style, false), two));
      assert.ok(matchesString(language(style, true), two));
    });
  }

  test("a string in the arguments may spell the closing marker (the calls end where the reply does)", () => {
    for (const style of STYLES) {
      const reply = `Text.\n${callsText(style, ['{"name": "get_weather", "arguments": {"city": "a</tool_calls>b"}}'])}\n`;
      assert.ok(matchesString(language(style), reply), style);
      assert.deepEqual(parseToolReply(reply, style, TOOLS), {
        content: "Text.\n",
        calls: [{ name: "get_weather", arguments: '{"city":"a</tool_calls>b"}' }],
      });
    }
  });
});

describe("calls written as JSON: each function's parameters schema is read as when it is alone", () => {
  const JSON_STYLES: ToolCallStyle[] = ["hermes", "llama3", "apriel", "minimax-m1"];
  const call = (style: ToolCallStyle, json: string): string =>
    style === "hermes"
      ? `<tool_call>\n${json}\n</tool_call>`
      : style === "llama3"
        ? json.replace('"arguments"', '"parameters"')
        : callsText(style as Listed, [json]);
  const draft7: ToolDeclaration = {
    name: "paint",
    parameters: {
      $schema: "http://json-schema.org/draft-07/schema#",
      definitions: { Color: { type: "string", enum: ["red", "green"] } },
      type: "object",
      properties: { color: { $ref: "#/definitions/Color" } },
      required: ["color"],
      additionalProperties: false,
    },
  };

  test("local $refs resolve inside the function's own parameters (with $defs or draft-07 definitions)", () => {
    for (const style of JSON_STYLES) {
      for (const tools of [TOOLS, [draft7, ...TOOLS], [draft7]]) {
        const { dfa } = compileToolCallLanguage(tools, style, true, OPTIONS);
        if (tools.includes(draft7)) {
          assert.ok(matchesString(dfa, call(style, '{"name": "paint", "arguments": {"color": "red"}}')), style);
          assert.ok(!matchesString(dfa, call(style, '{"name": "paint", "arguments": {"color": "blue"}}')), style);
        }
        if (tools.includes(TOOLS[3]!)) {
          assert.ok(matchesString(dfa, call(style, '{"name": "lookup", "arguments": {"color": "green"}}')), style);
          assert.ok(!matchesString(dfa, call(style, '{"name": "lookup", "arguments": {"color": "blue"}}')), style);
        }
      }
    }
  });

  test("functions whose parameters declare two dialects are refused by name ($schema)", () => {
    const other: ToolDeclaration = {
      name: "other",
      parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
    };
    for (const style of JSON_STYLES)
      assert.throws(
        () => compileToolCallLanguage([draft7, other], style, true, OPTIONS),
        (error: unknown) => error instanceof JsonSchemaError && error.keyword === "$schema" && /function "other"/.test(error.message),
      );
  });
});

const SPECIALS = ["<|begin_assistant|>", "<|assistant|>", "<|end|>", "<beginning_of_sentence>", "<end_of_sentence>"];
type Call = { name: string; arguments: Record<string, unknown> };

/**
 * The assistant's turn as `file` writes it when it is the model's own (the conversation's last):
 * its content (if the template writes it) and its calls, through the newline after them.
 */
function renderedReply(file: string, calls: Call[], content: string): string {
  const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
    specialTexts: SPECIALS,
    bosText: "<s>",
    eosText: "</s>",
    addsBos: false,
  });
  const messages: ChatMessage[] = [
    { role: "user", content: "Plan my trip." },
    {
      role: "assistant",
      content,
      tool_calls: calls.map((c, i) => ({ id: `call${i}`, type: "function", function: { name: c.name, arguments: c.arguments } })),
    },
  ];
  const tools: ChatTool[] = TOOLS.map((t) => ({ type: "function", function: { name: t.name, parameters: t.parameters } }));
  const text = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  const turn = text.slice(text.indexOf("Plan my trip."));
  const calledAt = turn.indexOf(OPEN);
  const from = content.length > 0 && turn.includes(content) ? turn.indexOf(content) : calledAt;
  let to = turn.lastIndexOf(CLOSE) + CLOSE.length;
  if (turn[to] === "\n") to++;
  assert.ok(calledAt >= 0 && from >= 0 && to > from, `${file}: ${JSON.stringify(turn)}`);
  return turn.slice(from, to);
}

const CONVERSATIONS: { content: string; calls: Call[] }[] = [
  {
    content: "Let me check.",
    calls: [
      { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', unit: "celsius", days: 3, note: null } },
      { name: "search", arguments: { query: "cheap flights", filters: { lang: "en", safe: true }, tags: ["a", 'b "c"'], ratio: 0.25 } },
      { name: "now", arguments: {} },
    ],
  },
  {
    content: "",
    calls: [
      { name: "lookup", arguments: { color: "green", anything: { k: [1, null, "ü"] } } },
      { name: "get_weather", arguments: { city: "Lyon", note: "short" } },
    ],
  },
  { content: "One call.", calls: [{ name: "lookup", arguments: { color: "red", anything: "free text" } }] },
];

describe("listed tool calls: round trip through the real templates", () => {
  for (const style of STYLES) {
    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same`, () => {
        const dfa = language(style);
        for (const { content, calls } of CONVERSATIONS) {
          const reply = renderedReply(file, calls, content);
          assert.ok(matchesString(dfa, reply), `${file}: ${JSON.stringify(reply)}`);
          const parsed = parseToolReply(reply, style, TOOLS);
          assert.deepEqual(
            parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
            calls,
            JSON.stringify(reply),
          );
          // MiniMax-M1 writes no content beside calls.
          assert.equal(parsed.content?.trim() ?? "", style === "minimax-m1" ? "" : content);
          assert.deepEqual(replyCalls(reply, { kind: "auto", style, tools: TOOLS }), parsed.calls);
          assert.deepEqual(autoReply(reply, style, TOOLS), { content: parsed.content, calls: parsed.calls });
          const before = textBeforeCalls(style, reply);
          for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamed(style, [reply.slice(0, cut), reply.slice(cut)]), before);
          assert.equal(streamed(style, [...reply]), before);
        }
      });
    }
  }
});
