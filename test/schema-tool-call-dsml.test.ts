/**
 * DeepSeek's DSML tool calls (schema/tool-calls/tagged.ts): "deepseek-dsml" (V3.2, its block
 * `<｜DSML｜function_calls>`) and "deepseek-v4" (V4, `<｜DSML｜tool_calls>`), each parameter
 * `<｜DSML｜parameter name="p" string="true|false">value</｜DSML｜parameter>`, the attribute saying
 * how the value reads (a raw string, or JSON of another type). Random members parse back into
 * declared calls whose arguments Python's jsonschema finds valid; a value's kind must match its
 * parameter's types; what each real template writes is in the language and reads back the same; a
 * stream splits the text from the calls the same at every cut.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { autoReply } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool, toolCallStyleOf } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesString, pyReEscape, sampleString } from "../src/regex/index.js";
import { parseToolReply, TOOL_CALL_OPEN, type ToolDeclaration } from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { streamedReply, textBeforeCalls, toolCallLanguages } from "./support/tool-call-languages.js";

type Dsml = "deepseek-dsml" | "deepseek-v4";
const STYLES: Dsml[] = ["deepseek-dsml", "deepseek-v4"];
const TEMPLATES: Record<Dsml, string[]> = {
  "deepseek-dsml": ["deepseek-ai-DeepSeek-V3.2.jinja"],
  "deepseek-v4": ["deepseek-ai-DeepSeek-V4.jinja", "deepseek-ai-DeepSeek-V4-Flash-0731.jinja"],
};
const BLOCK: Record<Dsml, string> = { "deepseek-dsml": "function_calls", "deepseek-v4": "tool_calls" };
const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
const D = "｜DSML｜";

const TOOLS: ToolDeclaration[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1, maxLength: 24 },
        days: { type: "integer", minimum: 1, maximum: 14 },
        limit: { type: ["integer", "string"] },
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
        filters: { type: "object", properties: { lang: { type: "string" } }, required: ["lang"], additionalProperties: false },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      },
      required: ["query"],
      additionalProperties: false,
    },
  },
  { name: "now", parameters: { type: "object", properties: {}, additionalProperties: false } },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;

const language = toolCallLanguages((_style: Dsml) => TOOLS, OPTIONS);
const streamed = streamedReply;
const textBefore = textBeforeCalls;

/** A parameter: [name, value text, raw string or not]. */
type Param = [string, string, boolean];
function callsText(style: Dsml, calls: [string, Param[]][]): string {
  const invoke = ([name, params]: [string, Param[]]) =>
    `<${D}invoke name="${name}">\n${params
      .map(([p, v, raw]) => `<${D}parameter name="${p}" string="${raw}">${v}</${D}parameter>\n`)
      .join("")}</${D}invoke>\n`;
  return `<${D}${BLOCK[style]}>\n${calls.map(invoke).join("")}</${D}${BLOCK[style]}>`;
}

describe("DSML tool calls", () => {
  test("the templates are read as DSML", () => {
    for (const style of STYLES)
      for (const file of TEMPLATES[style]) assert.equal(toolCallStyleOf(readFileSync(resolve(TEMPLATE_DIR, file), "utf8")), style);
  });

  for (const style of STYLES) {
    test(`${style}: sampled calls parse back into declared calls whose arguments are valid; the stream sends the text before`, () => {
      const dfa = language(style);
      const calls = intersectDfas(dfa, compileRegex(`${pyReEscape(TOOL_CALL_OPEN[style])}.*`, { flags: "s" }));
      const random = seededRandom(style === "deepseek-dsml" ? 71 : 73);
      const checks: { schema: string; text: string }[] = [];
      const names = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const reply = sampleString(i % 2 === 0 ? calls : dfa, random, { maxBytes: 900, stopProbability: 0.06 })!;
        const parsed = parseToolReply(reply, style, TOOLS);
        assert.equal(streamed(style, [...reply]), textBefore(style, reply));
        for (const call of parsed.calls) {
          names.add(call.name);
          checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
      }
      assert.equal(names.size, TOOLS.length);
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: a value's kind must be its parameter's; a string or integer reads by its kind, not its text`, () => {
      const dfa = language(style);
      const ok = (params: Param[]) => callsText(style, [["get_weather", params]]);
      for (const text of [
        ok([["city", "Oslo", true]]),
        ok([
          ["city", "12", true],
          ["days", "3", false],
        ]),
        `Let me check.\n\n${ok([["city", "x", true]])}`,
        callsText(style, [
          [
            "search",
            [
              ["query", "cheap", true],
              ["filters", '{"lang": "en"}', false],
              ["tags", '["a"]', false],
            ],
          ],
          ["now", []],
        ]),
      ])
        assert.ok(matchesString(dfa, text), JSON.stringify(text));
      for (const text of [
        ok([["city", '"Oslo"', false]]), // a string is written raw
        ok([
          ["city", "Oslo", true],
          ["days", "3", true],
        ]), // an integer is not a raw string
        ok([["city", `a</${D}parameter>b`, true]]),
        callsText(style, [
          [
            "search",
            [
              ["query", "cheap", true],
              ["filters", "{}", false],
            ],
          ],
        ]),
        `a <${D}${BLOCK[style]}> in text`,
      ])
        assert.ok(!matchesString(dfa, text), JSON.stringify(text));
      const both = parseToolReply(
        ok([
          ["city", "x", true],
          ["limit", "5", true],
        ]),
        style,
        TOOLS,
      );
      assert.deepEqual(JSON.parse(both.calls[0]!.arguments), { city: "x", limit: "5" });
      const number = parseToolReply(
        ok([
          ["city", "x", true],
          ["limit", "5", false],
        ]),
        style,
        TOOLS,
      );
      assert.deepEqual(JSON.parse(number.calls[0]!.arguments), { city: "x", limit: 5 });
      assert.ok(
        !matchesString(
          language(style, false),
          callsText(style, [
            ["now", []],
            ["now", []],
          ]),
        ),
      );
    });

    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same`, () => {
        const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
          specialTexts: ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"],
          bosText: "<｜begin▁of▁sentence｜>",
          eosText: "<｜end▁of▁sentence｜>",
          addsBos: false,
        });
        const calls = [
          { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', days: 3, limit: "ten" } },
          { name: "search", arguments: { query: "cheap flights", filters: { lang: "en" }, tags: ["a", 'b "c"'] } },
          { name: "now", arguments: {} },
        ];
        const messages: ChatMessage[] = [
          { role: "user", content: "Plan my trip." },
          {
            role: "assistant",
            content: "Let me check.",
            tool_calls: calls.map((c, i) => ({ id: `call${i}`, type: "function", function: { name: c.name, arguments: c.arguments } })),
          },
        ];
        const tools: ChatTool[] = TOOLS.map((t) => ({ type: "function", function: { name: t.name, parameters: t.parameters } }));
        const rendered = template
          .render({ messages, tools, addGenerationPrompt: false })
          .map((s) => s.text)
          .join("");
        const turn = rendered.slice(rendered.indexOf("Let me check."));
        const close = `</${D}${BLOCK[style]}>`;
        const reply = turn.slice(0, turn.indexOf(close) + close.length);
        assert.ok(matchesString(language(style), reply), `${file}: ${JSON.stringify(reply)}`);
        const parsed = autoReply(reply, style, TOOLS);
        assert.deepEqual(
          parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
          calls,
        );
        assert.equal(parsed.content?.trim(), "Let me check.");
        const before = textBefore(style, reply);
        for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamed(style, [reply.slice(0, cut), reply.slice(cut)]), before);
      });
    }
  }
});
