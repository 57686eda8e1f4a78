/**
 * Muse's ATEM tool calls on tool_choice "auto" (schema/tool-calls/muse.ts, "muse"): after the
 * generation prompt's `<|start|>assistant`, ` to=user<|message|>` then text, or calls, one per
 * message, ` to=f<|message|><atem:function_calls>\n<atem:invoke name="f">\n<atem:parameter name="p">value</atem:parameter>\n…`,
 * the next after `<|eom|><|start|>assistant` (`<|eom|>` a control token). Random members read back
 * into calls of declared functions whose arguments Python's jsonschema finds valid; what the real
 * template writes is in the language and reads back the same, streamed at every cut.
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
        detailed: { type: "boolean" },
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
        filters: { type: ["object", "null"], properties: { lang: { type: "string" } }, additionalProperties: false },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      },
      required: ["query"],
      additionalProperties: false,
    },
  },
  { name: "now", parameters: { type: "object", properties: {}, additionalProperties: false } },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;
const language = toolCallLanguages((_style: "muse") => TOOLS, OPTIONS);

const text = (body: string): string => ` to=user<|message|>${body}`;
const param = (name: string, value: string): string => `<atem:parameter name="${name}">${value}</atem:parameter>\n`;
const call = (name: string, ...params: string[]): string =>
  ` to=${name}<|message|><atem:function_calls>\n<atem:invoke name="${name}">\n${params.join("")}</atem:invoke>\n</atem:function_calls>`;
const calls = (...each: string[]): string => each.join("<|eom|><|start|>assistant");

/** What a stream sends: a message to the user's text. */
const sentText = (reply: string): string => (reply.trimStart().startsWith("to=user<|message|>") ? reply.trimStart().slice(18) : "");

describe("Muse: text to the user, or ATEM calls, one per message", () => {
  test("sampled replies read back into declared calls with valid arguments; the stream sends the text alone", () => {
    const dfa = language("muse");
    const withMarker = subtractDfas(dfa, compileRegex(".*", { flags: "s" }));
    const random = seededRandom(109);
    const checks: { schema: string; text: string }[] = [];
    let withCalls = 0;
    let several = 0;
    for (let i = 0; i < 200; i++) {
      const reply = markersAsText(sampleMember(i % 3 === 0 ? withMarker : dfa, random, { maxBytes: 900, stopProbability: 0.04 })!);
      const parsed = parseToolReply(reply, "muse", TOOLS);
      if (parsed.calls.length === 0) assert.equal(parsed.content, sentText(reply), reply);
      else {
        withCalls++;
        if (parsed.calls.length > 1) several++;
        assert.equal(parsed.content, null);
        for (const c of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(c.name)), text: c.arguments });
      }
      assert.equal(streamedReply("muse", [...reply]), sentText(reply), reply);
    }
    assert.ok(withCalls > 30 && several > 0, `${withCalls} replies with calls, ${several} with several`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("valid replies are in; undeclared names, invalid arguments, text beside calls and <|eom|> as text are out", () => {
    const dfa = language("muse");
    const has = (reply: string): boolean => matchesBytes(dfa, markersAsBytes(reply));
    const oslo = call("get_weather", param("city", "Oslo"), param("days", "3"), param("detailed", "true"));
    for (const reply of [
      text("Just text."),
      text(""),
      "to=user<|message|>After reasoning.",
      oslo,
      calls(oslo, call("now"), call("search", param("query", "cheap flights"), param("filters", "null"), param("tags", '["a"]'))),
    ])
      assert.ok(has(reply), reply);
    for (const reply of [
      "Just text.",
      call("delete_all"),
      call("get_weather", param("days", "3")),
      call("get_weather", param("city", "Oslo"), param("days", "99")),
      call("search", param("query", "Cheap!")),
      `${text("Let me check.")}${oslo}`,
      `${oslo} more`,
      text("a <|eom|> b"),
    ])
      assert.ok(!has(reply), reply);
    assert.ok(!matchesBytes(dfa, utf8.encode(calls(oslo, call("now")))), "<|eom|> as text");
    assert.ok(!matchesBytes(language("muse", false), markersAsBytes(calls(oslo, call("now")))));
  });

  test("no function may be named user or self", () => {
    for (const name of ["user", "self"])
      assert.throws(
        () => compileToolCallLanguage([{ name }], "muse", true, OPTIONS),
        (error: unknown) => error instanceof JsonSchemaError && error.keyword === "name" && error.message.includes(`"${name}"`),
      );
  });

  test("muse-glimmer.jinja writes calls and text the language holds; they read back the same, streamed at every cut", () => {
    const template = realTemplate("muse-glimmer.jinja", { controls: ["<|eot|>"], eos: "<|eot|>" });
    const written = [
      { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', days: 3, detailed: false } },
      { name: "search", arguments: { query: "cheap flights", filters: { lang: "nb" }, tags: ["a", 'b "c"'] } },
      { name: "now", arguments: {} },
    ];
    const rendered = renderedToolLoop(template, TOOLS, written);
    // The reasoning is a message to itself; the calls follow from the next message's recipient on.
    const reasoning = "<|start|>assistant to=self<|message|>Plan.<|eom|><|start|>assistant";
    const from = rendered.indexOf(reasoning) + reasoning.length;
    const reply = rendered.slice(from, rendered.indexOf("<|eot|>", from));
    assert.ok(matchesBytes(language("muse"), markersAsBytes(reply)), JSON.stringify(reply));
    assert.deepEqual(
      parseToolReply(reply, "muse", TOOLS).calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
      written,
    );
    for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply("muse", [reply.slice(0, cut), reply.slice(cut)]), "");
    const last = rendered.lastIndexOf("<|start|>assistant") + "<|start|>assistant".length;
    const answer = rendered.slice(last, rendered.indexOf("<|eot|>", last));
    assert.equal(answer, text("It is sunny."));
    assert.ok(matchesBytes(language("muse"), markersAsBytes(answer)));
    assert.deepEqual(autoReply(answer, "muse", TOOLS), { content: "It is sunny.", calls: [] });
    for (let cut = 0; cut <= answer.length; cut++)
      assert.equal(streamedReply("muse", [answer.slice(0, cut), answer.slice(cut)]), "It is sunny.");
  });
});
