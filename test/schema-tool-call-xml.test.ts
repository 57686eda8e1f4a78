/**
 * The tagged tool-call styles of tool_choice "auto" (schema/tool-calls/tagged.ts): "xml-function"
 * (Qwen3-Coder, Qwen3.5, Nemotron 3, Step 3.5: `<function=f><parameter=p>`), "glm" (GLM-4.6+,
 * Ling, Laguna, Spark: `<arg_key>`/`<arg_value>`), "seed-oss" (`<seed:tool_call>` with
 * `<function=f><parameter=p>`), "minimax-m2" (`<minimax:tool_call>` with `<invoke name="f">` and
 * `<parameter name="p">`) and "minimax-m3" (`]<]minimax[>[` before each tag, `<p>…</p>`). Random
 * members of each language parse back into calls of declared functions whose arguments Python's
 * jsonschema finds valid; free text never spells the marker; undeclared functions, missing or
 * misplaced parameters and wrong types are refused; what each real template writes for an
 * assistant's calls is in the language and reads back as the same calls; a stream splits the text
 * from the calls the same at every cut; and what the format cannot say exactly is refused by keyword.
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
  JsonSchemaUnsatisfiableError,
  parseToolReply,
  TOOL_CALL_OPEN,
  type ToolDeclaration,
} from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { streamedReply, textBeforeCalls, toolCallLanguages } from "./support/tool-call-languages.js";

type Tagged = "xml-function" | "glm" | "seed-oss" | "minimax-m2" | "minimax-m3" | "hunyuan" | "minicpm5";
const STYLES: Tagged[] = ["xml-function", "glm", "seed-oss", "minimax-m2", "minimax-m3", "hunyuan", "minicpm5"];
const TEMPLATES: Record<Tagged, string[]> = {
  "xml-function": ["Qwen3-Coder.jinja", "Qwen3.5-4B.jinja", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "StepFun3.5-Flash.jinja"],
  glm: [
    "GLM-4.6.jinja",
    "GLM-4.7-Flash.jinja",
    "Spark2.5.jinja",
    "inclusionai-ling-3.0-flash.jinja",
    "poolside-Laguna-S-2.1.jinja",
    "poolside-Laguna-XS-2.1.jinja",
    "poolside-Laguna-XS.2.jinja",
  ],
  "seed-oss": ["ByteDance-Seed-OSS.jinja"],
  "minimax-m2": ["MiniMax-M2.jinja"],
  "minimax-m3": ["MiniMax-M3.jinja"],
  hunyuan: ["tencent-Hy3.jinja"],
  minicpm5: ["openbmb-MiniCPM5-1B.jinja"],
};
const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
/** MiniMax-M3's namespace token. */
const NS = "]<]minimax[>[";
/** Styles whose calls are all in one block. */
const ONE_BLOCK = new Set<Tagged>(["minimax-m2", "minimax-m3", "hunyuan"]);
/** Hunyuan 3's suffix in its tags' names. */
const HY = ":opensource";
/**
 * Styles whose general tests use scalar parameters only: MiniMax-M3 writes objects and arrays as
 * nested elements, of one type each (its own test below). Seed-OSS and MiniCPM5 write them as
 * Python's str does.
 */
const SCALAR_ONLY = new Set<Tagged>(["minimax-m3"]);
/** What ends a raw string (it never holds it). */
const RAW_STOP: Record<Tagged, string> = {
  "xml-function": "\n</parameter>",
  glm: "</arg_value>",
  "seed-oss": "</parameter>",
  "minimax-m2": "</parameter>",
  "minimax-m3": NS,
  hunyuan: "</arg_value:opensource>",
  minicpm5: "</param>",
};
/** What ends the calls (the last one, or the block holding them all). */
const CALLS_CLOSE: Record<Tagged, string> = {
  "xml-function": "</tool_call>",
  glm: "</tool_call>",
  "seed-oss": "</seed:tool_call>",
  "minimax-m2": "</minimax:tool_call>",
  "minimax-m3": `${NS}</tool_call>`,
  hunyuan: "</tool_calls:opensource>",
  minicpm5: "</function>",
};

/** The test's functions; where objects and arrays are refused, `filters` is a language code and there are no `tags`. */
function toolsOf(structured: boolean): ToolDeclaration[] {
  return [
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
          limit: { type: ["integer", "string"] },
          filters: structured
            ? {
                type: "object",
                properties: { lang: { type: "string" }, safe: { type: "boolean" } },
                required: ["lang"],
                additionalProperties: false,
              }
            : { type: "string", enum: ["en", "de", "fr"] },
          ...(structured ? { tags: { type: "array", items: { type: "string" }, maxItems: 3 } } : {}),
          when: { type: "string", format: "date" },
          ratio: { type: "number" },
          strict: { type: "boolean" },
        },
        required: ["query", "filters"],
      },
    },
    { name: "now", parameters: { type: "object", properties: {} } },
    {
      name: "lookup",
      parameters: {
        $defs: { Color: { type: "string", enum: ["red", "green"] } },
        type: "object",
        properties: { color: { $ref: "#/$defs/Color" }, anything: structured ? {} : { type: ["string", "number", "boolean", "null"] } },
        required: ["color"],
      },
    },
  ];
}
const STRUCTURED_TOOLS = toolsOf(true);
const SCALAR_TOOLS = toolsOf(false);
const toolsFor = (style: Tagged): ToolDeclaration[] => (SCALAR_ONLY.has(style) ? SCALAR_TOOLS : STRUCTURED_TOOLS);
const schemaOf = (style: Tagged, name: string): unknown => toolsFor(style).find((t) => t.name === name)!.parameters;
/** The text of `filters` = {"lang": lang} as `style` writes it. */
const filters = (style: Tagged, lang: string): string => (SCALAR_ONLY.has(style) ? lang : `{"lang": "${lang}"}`);

const language = toolCallLanguages((style: Tagged) => toolsFor(style), OPTIONS);

const streamed = streamedReply;
const textBefore = textBeforeCalls;
const SEEDS: Record<Tagged, number> = {
  "xml-function": 11,
  glm: 7,
  "seed-oss": 13,
  "minimax-m2": 17,
  "minimax-m3": 19,
  hunyuan: 23,
  minicpm5: 29,
};

describe("tagged tool calls: random members of the language", () => {
  for (const style of STYLES) {
    test(`${style}: sampled calls parse back into declared calls whose arguments are valid`, () => {
      const dfa = language(style);
      const tools = toolsFor(style);
      const calls = intersectDfas(dfa, compileRegex(`${pyReEscape(TOOL_CALL_OPEN[style])}.*`, { flags: "s" }));
      const random = seededRandom(SEEDS[style]);
      const checks: { schema: string; text: string }[] = [];
      const names = new Set<string>();
      for (let i = 0; i < 150; i++) {
        const reply = sampleString(calls, random, { maxBytes: 900, stopProbability: 0.08 })!;
        const parsed = parseToolReply(reply, style, tools);
        assert.equal(parsed.content, null, reply);
        assert.ok(parsed.calls.length >= 1, reply);
        for (const call of parsed.calls) {
          names.add(call.name);
          assert.ok(
            tools.some((t) => t.name === call.name),
            call.name,
          );
          const args = JSON.parse(call.arguments) as Record<string, unknown>;
          assert.equal(typeof args, "object");
          // MiniMax-M3 leaves a null argument out: it never writes one.
          if (style === "minimax-m3") assert.ok(!Object.values(args).includes(null), call.arguments);
          checks.push({ schema: JSON.stringify(schemaOf(style, call.name)), text: call.arguments });
        }
        // A stream holds back nothing of a reply that starts with a call.
        assert.equal(streamed(style, [...reply]), "");
      }
      assert.equal(names.size, tools.length, `every function is called somewhere: ${[...names].join(", ")}`);
      const verdicts = pythonVerdicts(checks);
      verdicts.forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: sampled replies: free text never spells the marker, and the stream sends exactly it`, () => {
      const dfa = language(style);
      // Replies as they come (mostly text), and replies that hold the marker somewhere (text, then calls).
      const open = TOOL_CALL_OPEN[style];
      const marked = intersectDfas(dfa, compileRegex(`.*${pyReEscape(open)}.*`, { flags: "s" }));
      const random = seededRandom(SEEDS[style] + 100);
      let withCalls = 0;
      for (let i = 0; i < 300; i++) {
        const reply = sampleString(i % 2 === 0 ? dfa : marked, random, { maxBytes: 700, stopProbability: 0.05 })!;
        const parsed = parseToolReply(reply, style, toolsFor(style));
        const before = textBefore(style, reply);
        if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
        else {
          withCalls++;
          assert.equal(parsed.content, before.trim().length > 0 ? before : null);
        }
        assert.ok(!before.includes(open));
        assert.equal(streamed(style, [...reply]), before);
      }
      assert.equal(withCalls, 150, "every reply holding the marker is text then calls");
    });
  }
});

type Args = readonly (readonly [string, string])[];

/** One call of `f` with `args` as `style` writes it (values already as text), without MiniMax's block. */
function callText(style: Tagged, f: string, args: Args): string {
  switch (style) {
    case "xml-function":
      return `<tool_call>\n<function=${f}>\n${args.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>\n</tool_call>`;
    case "glm":
      return `<tool_call>${f}\n${args.map(([k, v]) => `<arg_key>${k}</arg_key>\n<arg_value>${v}</arg_value>\n`).join("")}</tool_call>`;
    case "seed-oss":
      return `<seed:tool_call>\n<function=${f}>\n${args.map(([k, v]) => `<parameter=${k}>${v}</parameter>\n`).join("")}</function>\n</seed:tool_call>`;
    case "minimax-m2":
      return `<invoke name="${f}">\n${args.map(([k, v]) => `<parameter name="${k}">${v}</parameter>\n`).join("")}</invoke>\n`;
    case "minimax-m3":
      return `${NS}<invoke name="${f}">${args.map(([k, v]) => `${NS}<${k}>${v}${NS}</${k}>`).join("")}${NS}</invoke>\n`;
    case "minicpm5":
      return `<function name="${f}">${args.map(([k, v]) => `<param name="${k}">${v}</param>`).join("")}</function>`;
    case "hunyuan":
      return `<tool_call${HY}>${f}<tool_sep${HY}>\n${args.map(([k, v]) => `<arg_key${HY}>${k}</arg_key${HY}>\n<arg_value${HY}>${v}</arg_value${HY}>\n`).join("")}</tool_call${HY}>\n`;
  }
}

/** The calls as `style` writes them: blocks a newline apart, or MiniMax's one block holding them all. */
function callsText(style: Tagged, calls: readonly (readonly [string, Args])[]): string {
  const each = calls.map(([f, args]) => callText(style, f, args));
  if (style === "minimax-m2") return `<minimax:tool_call>\n${each.join("")}</minimax:tool_call>`;
  if (style === "minimax-m3") return `${NS}<tool_call>\n${each.join("")}${NS}</tool_call>`;
  if (style === "hunyuan") return `<tool_calls${HY}>\n${each.join("")}</tool_calls${HY}>`;
  return each.join("\n");
}

describe("tagged tool calls: what the language refuses", () => {
  for (const style of STYLES) {
    test(`${style}: valid calls are in; undeclared names, missing, extra, misplaced and mistyped parameters are out`, () => {
      const dfa = language(style);
      const call = (f: string, args: Args): string => callsText(style, [[f, args]]);
      const weather: Args = [
        ["city", "Oslo"],
        ["days", "3"],
      ];
      const good = call("get_weather", weather);
      const open = TOOL_CALL_OPEN[style];
      for (const text of [
        "Just text, mentioning tool_call and <tool_call without the bracket.",
        `Text with ${open.slice(0, -1)} and ${open.slice(1)}.`,
        "",
        good,
        `Let me check.\n\n${good}`,
        `${callsText(style, [
          ["get_weather", weather],
          ["now", []],
        ])}\n`,
        ...(ONE_BLOCK.has(style) ? [] : [`${good}${call("now", [])}\n`]),
        call("search", [
          ["query", "cheap flights"],
          ["limit", "ten"],
          ["filters", filters(style, "en")],
        ]),
        call("lookup", [
          ["color", "red"],
          ["anything", "whatever it is"],
        ]),
        call("get_weather", [
          ["city", "x"],
          ["note", style === "xml-function" || style === "seed-oss" || style === "minicpm5" ? "None" : "null"],
        ]),
      ])
        assert.ok(matchesString(dfa, text), JSON.stringify(text));
      for (const text of [
        `a ${open} in text`,
        call("delete_all", []),
        call("get_weather", [["days", "3"]]), // city is required
        call("get_weather", [
          ["days", "3"],
          ["city", "Oslo"],
        ]), // out of order
        call("get_weather", [
          ["city", "Oslo"],
          ["town", "x"],
        ]), // undeclared parameter
        call("get_weather", [
          ["city", "Oslo"],
          ["days", "three"],
        ]), // not an integer
        call("get_weather", [
          ["city", "Oslo"],
          ["days", "99"],
        ]), // over its maximum
        call("get_weather", [["city", "a city name far longer than allowed"]]), // maxLength
        call("get_weather", [
          ["city", "Oslo"],
          ["unit", "kelvin"],
        ]), // not in the enum
        call("search", [
          ["query", "Cheap"],
          ["filters", filters(style, "en")],
        ]), // pattern
        call("search", [
          ["query", "cheap"],
          ["filters", filters(style, "en")],
          ["when", "2024-13-01"],
        ]), // format date
        call("search", [
          ["query", "cheap"],
          ["filters", "{}"],
        ]), // filters.lang is required (a language code where filters is one)
        call("lookup", [["color", "blue"]]),
        good.slice(0, -3), // unclosed
        `${good}\nmore text after the calls`,
        // MiniMax's and Hunyuan's calls are all in one block: not a second one.
        ...(ONE_BLOCK.has(style) ? [`${good}\n${good}`, `${good}${good}`] : []),
      ])
        assert.ok(!matchesString(dfa, text), JSON.stringify(text));
      // A raw string never holds what ends it.
      assert.ok(!matchesString(dfa, call("get_weather", [["city", `a${RAW_STOP[style]}b`]])));
    });

    test(`${style}: without parallel calls, a second call cannot follow`, () => {
      const one = callsText(style, [["now", []]]);
      const two = callsText(style, [
        ["now", []],
        ["now", []],
      ]);
      assert.ok(matchesString(language(style, false), `${one}\n`));
      assert.ok(!matchesString(language(style, false), two));
      assert.ok(matchesString(language(style, true), two));
    });

    test(`${style}: a value that may be a string or another type reads by its text`, () => {
      const reply = callsText(style, [
        [
          "search",
          [
            ["query", "x"],
            ["limit", "12"],
            ["filters", filters(style, "de")],
          ],
        ],
        [
          "search",
          [
            ["query", "x"],
            ["limit", "twelve"],
            ["filters", filters(style, "de")],
          ],
        ],
        [
          "get_weather",
          [
            ["city", "12"],
            ["note", "nullish"],
          ],
        ],
        [
          "get_weather",
          [
            ["city", "x"],
            ["note", "null"],
          ],
        ],
      ]);
      assert.ok(matchesString(language(style), reply));
      const args = parseToolReply(reply, style, toolsFor(style)).calls.map((c) => JSON.parse(c.arguments) as Record<string, unknown>);
      assert.equal(args[0]!.limit, 12);
      assert.equal(args[1]!.limit, "twelve");
      assert.equal(args[2]!.city, "12", "a string parameter is a string whatever its text");
      assert.equal(args[2]!.note, "nullish");
      // MiniMax-M3 never writes a null (it leaves the argument out): "null" is the string.
      assert.equal(args[3]!.note, style === "minimax-m3" ? "null" : null);
    });
  }
});

const SPECIALS = [
  "<|im_start|>",
  "<|im_end|>",
  "<|user|>",
  "<|assistant|>",
  "<|observation|>",
  "<|role_end|>",
  NS,
  "<seed:bos>",
  "<seed:eos>",
];

type Call = { name: string; arguments: Record<string, unknown> };

/** The conversation's last assistant turn as `file` writes it: its content (if any) and its calls, through the newline after them. */
function renderedReply(style: Tagged, file: string, calls: Call[], content: string): string {
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
    ...calls.map((_, i): ChatMessage => ({ role: "tool", content: `result ${i}`, tool_call_id: `call${i}` })),
  ];
  const tools: ChatTool[] = toolsFor(style).map((t) => ({ type: "function", function: { name: t.name, parameters: t.parameters } }));
  const text = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  const turn = text.slice(text.indexOf("Plan my trip."));
  const from = content.length > 0 ? turn.indexOf(content) : turn.indexOf(TOOL_CALL_OPEN[style]);
  let to = turn.lastIndexOf(CALLS_CLOSE[style]) + CALLS_CLOSE[style].length;
  if (turn[to] === "\n") to++;
  assert.ok(from >= 0 && to > from, `${file}: ${JSON.stringify(turn)}`);
  return turn.slice(from, to);
}

/** Conversations whose calls the templates write; where objects and arrays are refused, `filters` is a language code, and there are no `tags`. */
function conversations(structured: boolean): { content: string; calls: Call[] }[] {
  return [
    {
      content: "Let me check.",
      calls: [
        { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', unit: "celsius", days: 3, note: null } },
        {
          name: "search",
          arguments: {
            query: "cheap flights",
            limit: "ten",
            filters: structured ? { lang: "en", safe: true } : "en",
            ...(structured ? { tags: ["a", 'b "c"'] } : {}),
            when: "2024-05-01",
            ratio: 0.25,
            strict: false,
          },
        },
        { name: "now", arguments: {} },
      ],
    },
    {
      content: "",
      calls: [
        { name: "lookup", arguments: { color: "green", anything: structured ? { k: [1, null, "ü"] } : true } },
        { name: "get_weather", arguments: { city: "Lyon", note: "short" } },
        { name: "search", arguments: { query: "x", limit: 5, filters: structured ? { lang: "fr" } : "fr" } },
        { name: "lookup", arguments: { color: "red", anything: "free text, not JSON" } },
      ],
    },
    { content: "One call.", calls: [{ name: "lookup", arguments: { color: "red", anything: 7 } }] },
  ];
}

/** The calls as they read back: MiniMax-M3 leaves null arguments out. */
function readBack(style: Tagged, calls: Call[]): Call[] {
  if (style !== "minimax-m3") return calls;
  return calls.map((c) => ({ name: c.name, arguments: Object.fromEntries(Object.entries(c.arguments).filter(([, v]) => v !== null)) }));
}

describe("tagged tool calls: round trip through the real templates", () => {
  for (const style of STYLES) {
    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same`, () => {
        const dfa = language(style);
        const tools = toolsFor(style);
        for (const { content, calls } of conversations(!SCALAR_ONLY.has(style))) {
          const reply = renderedReply(style, file, calls, content);
          assert.ok(matchesString(dfa, reply), `${file}: ${JSON.stringify(reply)}`);
          const parsed = parseToolReply(reply, style, tools);
          assert.deepEqual(
            parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
            readBack(style, calls),
            JSON.stringify(reply),
          );
          assert.equal(parsed.content?.trim() ?? "", content);
          // As the chat route reads it: the mode carries the declared tools.
          assert.deepEqual(replyCalls(reply, { kind: "auto", style, tools }), parsed.calls);
          assert.deepEqual(autoReply(reply, style, tools), { content: parsed.content, calls: parsed.calls });
          // Streamed at every cut (and character by character), the content is the text before the calls.
          const before = textBefore(style, reply);
          for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamed(style, [reply.slice(0, cut), reply.slice(cut)]), before);
          assert.equal(streamed(style, [...reply]), before);
        }
      });
    }
  }
});

describe("tagged tool calls: what the format cannot say exactly is refused by name", () => {
  const refused = (parameters: unknown, keyword: string, style: Tagged = "xml-function"): void => {
    assert.throws(
      () => compileToolCallLanguage([{ name: "f", parameters }], style, true, OPTIONS),
      (error: unknown) => {
        assert.ok(error instanceof JsonSchemaError, String(error));
        assert.equal(error.keyword, keyword, error.message);
        assert.match(error.message, /function "f"/);
        return true;
      },
    );
  };
  const param = (schema: unknown): unknown => ({ type: "object", properties: { x: schema }, required: ["x"] });

  test("the parameters: unnamed properties, object keywords, undeclared required names, names that end a tag", () => {
    for (const style of STYLES) {
      refused({ type: "object", additionalProperties: true }, "additionalProperties", style);
      refused(
        { type: "object", properties: { x: { type: "string" } }, additionalProperties: { type: "string" } },
        "additionalProperties",
        style,
      );
      refused({ type: "object", patternProperties: { "^x": {} } }, "patternProperties", style);
      refused({ type: "object", properties: { x: {} }, minProperties: 1 }, "minProperties", style);
      refused({ type: "object", properties: { x: {} }, anyOf: [{ required: ["x"] }] }, "anyOf", style);
      refused({ type: "array" }, "type", style);
      refused({ type: "object", properties: { x: {} }, required: ["y"] }, "required", style);
      refused({ type: "object", properties: { "a>b": {} } }, "properties", style);
    }
    assert.throws(() => compileToolCallLanguage([{ name: "f<g" }], "glm", true, OPTIONS), /name/);
    // MiniMax writes the function's name in a quoted attribute, and M3 a parameter's as its tag (`</p>` ends it).
    for (const style of ["minimax-m2", "minimax-m3"] as const) {
      assert.throws(
        () => compileToolCallLanguage([{ name: 'say"hi' }], style, true, OPTIONS),
        (e: unknown) => e instanceof JsonSchemaError && e.keyword === "name",
      );
      refused({ type: "object", properties: { 'a"b': { type: "string" } } }, "properties", style);
    }
    refused({ type: "object", properties: { "/invoke": { type: "string" } } }, "properties", "minimax-m3");
    assert.ok(compileToolCallLanguage([{ name: "f", parameters: param({ type: "string" }) }], "minimax-m2", true, OPTIONS));
  });

  test("minimax-m3: objects and arrays as nested elements, read back; what the elements cannot tell apart is refused by name", () => {
    const NSX = NS;
    const rows = {
      type: "array",
      items: {
        type: "object",
        properties: { k: { type: "string", maxLength: 4 }, n: { type: "integer", minimum: 0 }, ok: { type: "boolean" } },
        required: ["k"],
      },
      maxItems: 3,
    };
    const tool: ToolDeclaration = {
      name: "f",
      parameters: {
        type: "object",
        properties: { rows, opts: { type: ["object", "null"], properties: { tags: { type: "array", items: { type: "string" } } } } },
        required: ["rows"],
      },
    };
    const dfa = compileToolCallLanguage([tool], "minimax-m3", true, OPTIONS).dfa;
    const el = (name: string, inner: string): string => `${NSX}<${name}>${inner}${NSX}</${name}>`;
    const call = (params: string): string => `${NSX}<tool_call>\n${NSX}<invoke name="f">${params}${NSX}</invoke>\n${NSX}</tool_call>`;
    const good = call(
      el("rows", el("item", el("k", "ab") + el("n", "3") + el("ok", "true")) + el("item", el("k", "c"))) +
        el("opts", el("tags", el("item", "x y"))),
    );
    assert.ok(matchesString(dfa, good), good);
    assert.deepEqual(JSON.parse(parseToolReply(good, "minimax-m3", [tool]).calls[0]!.arguments), {
      rows: [{ k: "ab", n: 3, ok: true }, { k: "c" }],
      opts: { tags: ["x y"] },
    });
    assert.deepEqual(JSON.parse(parseToolReply(call(el("rows", "")), "minimax-m3", [tool]).calls[0]!.arguments), { rows: [] });
    for (const bad of [
      call(el("rows", el("item", el("n", "3")))),
      call(el("rows", el("item", el("k", "toolong")))),
      call(el("rows", el("item", el("k", "a") + el("n", "x")))),
      call(el("rows", el("item", el("k", "a")).repeat(4))),
      call(el("rows", el("item", el("k", "a") + el("z", "1")))),
    ])
      assert.ok(!matchesString(dfa, bad), bad);
    // Sampled calls read back valid under Python's jsonschema.
    const random = seededRandom(131);
    const checks: { schema: string; text: string }[] = [];
    const calls = intersectDfas(dfa, compileRegex(`${pyReEscape(`${NSX}<tool_call>`)}.*`, { flags: "s" }));
    for (let i = 0; i < 60; i++) {
      const reply = sampleString(calls, random, { maxBytes: 900, stopProbability: 0.03 })!;
      for (const c of parseToolReply(reply, "minimax-m3", [tool]).calls)
        checks.push({ schema: JSON.stringify(tool.parameters), text: c.arguments });
    }
    assert.ok(checks.filter((c) => c.text.includes('"k"')).length > 10, `${checks.length} calls`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    // What the real template writes for such arguments.
    const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, "MiniMax-M3.jinja"), "utf8"), {
      specialTexts: [],
      bosText: "",
      eosText: "",
      addsBos: false,
    });
    const args = { rows: [{ k: "ab", n: 3, ok: true }, { k: "c" }], opts: { tags: ["x", "y z"] } };
    const rendered = template
      .render({
        messages: [
          { role: "user", content: "Go." },
          { role: "assistant", content: "", tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: args } }] },
          { role: "tool", content: "done", tool_call_id: "a" },
        ],
        tools: [{ type: "function", function: { name: "f", description: "f", parameters: tool.parameters } }],
        addGenerationPrompt: false,
      })
      .map((x) => x.text)
      .join("");
    const from = rendered.indexOf(`${NSX}<tool_call>`, rendered.indexOf("Go."));
    const written = rendered.slice(from, rendered.indexOf(`${NSX}</tool_call>`, from) + `${NSX}</tool_call>`.length);
    assert.ok(matchesString(dfa, written), written);
    assert.deepEqual(JSON.parse(parseToolReply(written, "minimax-m3", [tool]).calls[0]!.arguments), args);
    // Refused: a value the elements cannot tell apart.
    for (const [parameters, pointer] of [
      [param({}), "/properties/x"],
      [param({ type: ["string", "object"] }), "/properties/x"],
      [param({ anyOf: [{ type: "string" }, { type: "array" }] }), "/properties/x"],
      [param({ type: "array", items: { type: ["string", "integer"] } }), "/properties/x/items/type"],
      [param({ type: "object", properties: { y: { anyOf: [{ type: "string" }] } } }), "/properties/x/properties/y/type"],
      [param({ type: "object", additionalProperties: true }), "/properties/x/additionalProperties"],
      [param({ type: "array", items: { type: "string" }, uniqueItems: true }), "/properties/x/uniqueItems"],
    ] as const) {
      assert.throws(
        () => compileToolCallLanguage([{ name: "f", parameters }], "minimax-m3", true, OPTIONS),
        (error: unknown) => {
          assert.ok(error instanceof JsonSchemaError, String(error));
          assert.equal(error.pointer, pointer, error.message);
          assert.match(error.message, /function "f"/);
          return true;
        },
      );
    }
  });

  test("minicpm5: a string bare (no <, & or newline) or in a CDATA section, which may hold the closing tag", () => {
    const tools: ToolDeclaration[] = [
      {
        name: "f",
        parameters: { type: "object", properties: { x: { type: "string", maxLength: 15 }, n: { type: ["integer", "string"] } } },
      },
    ];
    const dfa = compileToolCallLanguage(tools, "minicpm5", true, OPTIONS).dfa;
    const call = (x: string): string => `<function name="f"><param name="x">${x}</param></function>`;
    for (const [written, read] of [
      ["plain text", "plain text"],
      ["<![CDATA[a</param>b]]>", "a</param>b"],
      ["<![CDATA[two\nlines & <b>]]>", "two\nlines & <b>"],
    ] as const) {
      assert.ok(matchesString(dfa, call(written)), written);
      assert.deepEqual(parseToolReply(call(written), "minicpm5", tools).calls, [{ name: "f", arguments: JSON.stringify({ x: read }) }]);
    }
    for (const written of ["a<b", "a & b", "two\nlines", "<![CDATA[a]]>b]]>", "<![CDATA[sixteen characters]]>"])
      assert.ok(!matchesString(dfa, call(written)), written);
    // A CDATA section is a string, whatever its text; bare, "7" is the integer.
    const n = (v: string): string => `<function name="f"><param name="n">${v}</param></function>`;
    assert.equal(parseToolReply(n("<![CDATA[7]]>"), "minicpm5", tools).calls[0]!.arguments, '{"n":"7"}');
    assert.equal(parseToolReply(n("7"), "minicpm5", tools).calls[0]!.arguments, '{"n":7}');
    assert.ok(matchesString(dfa, n("<![CDATA[7]]>")) && matchesString(dfa, n("7")));
  });

  test("minimax-m3: a null is never written (the argument is left out), so a parameter that can only be null cannot be required", () => {
    assert.throws(
      () => compileToolCallLanguage([{ name: "f", parameters: param({ type: "null" }) }], "minimax-m3", true, OPTIONS),
      JsonSchemaUnsatisfiableError,
    );
    const optional = { type: "object", properties: { x: { type: "null" }, y: { type: ["integer", "null"] } } };
    const { dfa } = compileToolCallLanguage([{ name: "f", parameters: optional }], "minimax-m3", true, OPTIONS);
    const call = (params: string): string => `${NS}<tool_call>\n${NS}<invoke name="f">${params}${NS}</invoke>\n${NS}</tool_call>`;
    assert.ok(matchesString(dfa, call("")));
    assert.ok(matchesString(dfa, call(`${NS}<y>3${NS}</y>`)));
    assert.ok(!matchesString(dfa, call(`${NS}<x>null${NS}</x>`)));
    assert.ok(!matchesString(dfa, call(`${NS}<y>null${NS}</y>`)));
    // Elsewhere null is written: JSON's null, or Python's None where the template writes `value | string`.
    for (const [style, text] of [
      ["glm", "<tool_call>f<arg_key>x</arg_key><arg_value>null</arg_value></tool_call>"],
      ["minimax-m2", '<minimax:tool_call>\n<invoke name="f">\n<parameter name="x">null</parameter>\n</invoke>\n</minimax:tool_call>'],
      ["seed-oss", "<seed:tool_call>\n<function=f>\n<parameter=x>None</parameter>\n</function>\n</seed:tool_call>"],
    ] as const) {
      const language = compileToolCallLanguage([{ name: "f", parameters: optional }], style, true, OPTIONS).dfa;
      assert.ok(matchesString(language, text), style);
      assert.equal(parseToolReply(text, style, [{ name: "f", parameters: optional }]).calls[0]!.arguments, '{"x":null}');
    }
  });

  test("a value that may be a string: keywords a raw string cannot be checked against", () => {
    refused(param({ type: "string", not: { const: "a" } }), "not");
    refused(param({ allOf: [{ type: "string" }] }), "allOf");
    refused(param({ type: ["string", "null"], if: { type: "string" }, else: { const: null } }), "if");
    refused(param({ oneOf: [{ type: "string" }, { type: "string", maxLength: 2 }] }), "oneOf");
    refused(param({ type: "string", anyOf: [{ maxLength: 2 }, { pattern: "a" }] }), "anyOf");
    refused(param({ $ref: "https://example.com/s.json" }), "$ref");
    refused(param({ $ref: "#/$defs/Missing" }), "$ref");
    // The JSON Schema front end's own refusals, named where they are.
    refused(param({ type: "string", format: "regex" }), "format");
    refused(param({ type: "string", pattern: "(" }), "pattern");
    refused(param({ type: "integer", minimum: "zero" }), "minimum");
  });

  test("what is not refused: non-string keywords beside a string type, Optional[str], local $refs, untyped values", () => {
    const scalar = [
      param({ type: ["string", "integer"], minimum: 3, maxLength: 4 }),
      param({ anyOf: [{ type: "string", format: "date" }, { type: "null" }], default: null }),
      param({ anyOf: [{ anyOf: [{ type: "string" }, { type: "boolean" }] }, { type: "null" }] }),
      { $defs: { S: { type: "string" } }, type: "object", properties: { x: { $ref: "#/$defs/S" } } },
      { type: "object" },
    ];
    const structured = [
      {
        definitions: { O: { type: "object", properties: { y: { $ref: "#/definitions/O" } } } },
        properties: { x: { $ref: "#/definitions/O" } },
      },
      param({}),
    ];
    for (const style of STYLES)
      for (const parameters of SCALAR_ONLY.has(style) ? scalar : [...scalar, ...structured])
        assert.ok(compileToolCallLanguage([{ name: "f", parameters }], style, true, OPTIONS).dfa.numStates > 0);
    const { dfa } = compileToolCallLanguage(
      [{ name: "f", parameters: param({ type: ["string", "integer"], minimum: 3, maxLength: 4 }) }],
      "glm",
      true,
      OPTIONS,
    );
    const value = (v: string): string => `<tool_call>f<arg_key>x</arg_key><arg_value>${v}</arg_value></tool_call>`;
    assert.ok(matchesString(dfa, value("3")) && !matchesString(dfa, value("2")), "minimum applies to the integers");
    assert.ok(matchesString(dfa, value("abcd")) && !matchesString(dfa, value("abcde")), "maxLength to the strings");
  });
});
