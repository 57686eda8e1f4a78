/**
 * The tool-call styles of tool_choice "auto" that write the name outside the JSON arguments
 * (schema/tool-calls/named.ts): "deepseek-r1"
 * (`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`),
 * "deepseek-v3" (V3.1: `<｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`) and
 * "functionary-v3.1" (`<function=f>{…}</function>`).
 * Random members of each language parse back into calls of declared functions whose arguments
 * Python's jsonschema finds valid; free text never spells the marker; undeclared functions,
 * invalid arguments, an empty block and text after the calls are refused; without parallel calls
 * there is one; what each real template writes for an assistant's calls is in the language and
 * reads back as the same calls; a stream splits the text from the calls the same at every cut; a
 * vocabulary whose marker is a control token does not read the style.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { autoReply, replyCalls } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesString, pyReEscape, sampleString } from "../src/regex/index.js";
import { compileToolCallLanguage, parseToolReply, TOOL_CALL_OPEN, type ToolDeclaration } from "../src/schema/index.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { streamedReply, textBeforeCalls, toolCallLanguages } from "./support/tool-call-languages.js";

type DeepSeek = "deepseek-r1" | "deepseek-v3" | "functionary-v3.1";
const STYLES: DeepSeek[] = ["deepseek-r1", "deepseek-v3", "functionary-v3.1"];
const TEMPLATES: Record<DeepSeek, string[]> = {
  "deepseek-r1": ["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "llama-cpp-deepseek-r1.jinja"],
  "deepseek-v3": ["deepseek-ai-DeepSeek-V3.1.jinja"],
  "functionary-v3.1": ["meetkai-functionary-medium-v3.1.jinja"],
};
const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
const DEEPSEEK_OPEN = "<｜tool▁calls▁begin｜>";
const DEEPSEEK_CLOSE = "<｜tool▁calls▁end｜>";
const openOf = (style: DeepSeek): string => (style === "functionary-v3.1" ? "<function=" : DEEPSEEK_OPEN);

const TOOLS: ToolDeclaration[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1, maxLength: 24 },
        unit: { enum: ["celsius", "fahrenheit"] },
        days: { type: "integer", minimum: 1, maximum: 14 },
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
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      },
      required: ["query"],
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

const language = toolCallLanguages((_style: DeepSeek) => TOOLS, OPTIONS);

const streamed = streamedReply;
const textBefore = textBeforeCalls;

/** One call as `style` writes it. */
function callText(style: DeepSeek, name: string, args: string): string {
  if (style === "functionary-v3.1") return `<function=${name}>${args}</function>`;
  return style === "deepseek-r1"
    ? `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`
    : `<｜tool▁call▁begin｜>${name}<｜tool▁sep｜>${args}<｜tool▁call▁end｜>`;
}
const block = (style: DeepSeek, calls: string[], between = ""): string =>
  style === "functionary-v3.1" ? calls.join(between) : `${DEEPSEEK_OPEN}${calls.join(between)}${DEEPSEEK_CLOSE}`;

describe("DeepSeek tool calls: the language", () => {
  test("DeepSeek's open with <｜tool▁calls▁begin｜>, Functionary's with <function=", () => {
    for (const style of STYLES) assert.equal(TOOL_CALL_OPEN[style], openOf(style));
  });

  for (const style of STYLES) {
    test(`${style}: sampled calls parse back into declared calls whose arguments are valid`, () => {
      const calls = intersectDfas(language(style), compileRegex(`${pyReEscape(openOf(style))}.*`, { flags: "s" }));
      const random = seededRandom(STYLES.indexOf(style) + 41);
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
          checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
        assert.equal(streamed(style, [...reply]), "");
      }
      assert.equal(names.size, TOOLS.length, `every function is called somewhere: ${[...names].join(", ")}`);
      assert.ok(several > 0, "some replies hold several calls");
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: sampled replies: free text never spells the marker, and the stream sends exactly it`, () => {
      const dfa = language(style);
      const marked = intersectDfas(dfa, compileRegex(`.*${pyReEscape(openOf(style))}.*`, { flags: "s" }));
      const random = seededRandom(STYLES.indexOf(style) + 47);
      for (let i = 0; i < 200; i++) {
        const reply = sampleString(i % 2 === 0 ? dfa : marked, random, { maxBytes: 700, stopProbability: 0.05 })!;
        const parsed = parseToolReply(reply, style, TOOLS);
        const before = textBefore(style, reply);
        if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
        else assert.equal(parsed.content, before.trim().length > 0 ? before : null);
        assert.ok(!before.includes(openOf(style)));
        assert.equal(streamed(style, [...reply]), before);
      }
    });

    test(`${style}: valid calls are in; undeclared names, invalid arguments, empty blocks and trailing text are out`, () => {
      const dfa = language(style);
      const weather = callText(style, "get_weather", '{"city": "Oslo", "days": 3}');
      const now = callText(style, "now", "{}");
      for (const text of [
        style === "functionary-v3.1"
          ? "Just text, mentioning </function> but not the opening."
          : "Just text, mentioning <｜tool▁call▁begin｜> but not the block's marker.",
        "",
        block(style, [weather]),
        `${block(style, [weather])}\n`,
        `Let me check.${block(style, [weather])}`,
        block(style, [weather, now]),
        block(style, [callText(style, "lookup", '{"color": "red", "anything": {"k": [1, null]}}')]),
      ])
        assert.ok(matchesString(dfa, text), JSON.stringify(text));
      for (const text of [
        `a ${openOf(style)} in text`,
        ...(style === "functionary-v3.1" ? [] : [block(style, [])]),
        block(style, [callText(style, "delete_all", "{}")]),
        block(style, [callText(style, "get_weather", '{"days": 3}')]),
        block(style, [callText(style, "get_weather", '{"city": "Oslo", "days": 99}')]),
        block(style, [callText(style, "get_weather", '{"city": "Oslo", "town": "x"}')]),
        block(style, [callText(style, "lookup", '{"color": "blue"}')]),
        block(style, [weather]).slice(0, -3),
        `${block(style, [weather])}\nmore text after the calls`,
        ...(style === "functionary-v3.1" ? [] : [`${block(style, [weather])}${block(style, [now])}`]),
      ])
        assert.ok(!matchesString(dfa, text), JSON.stringify(text));
      // R1's templates put a newline between two calls, llama.cpp's none; V3.1 and Functionary none.
      assert.equal(matchesString(dfa, block(style, [weather, now], "\n")), style === "deepseek-r1");
    });

    test(`${style}: without parallel calls, the block holds one call`, () => {
      const one = block(style, [callText(style, "now", "{}")]);
      const two = block(style, [callText(style, "now", "{}"), callText(style, "now", "{}")]);
      assert.ok(matchesString(language(style, false), one));
      assert.ok(!matchesString(language(style, false), two));
      assert.ok(matchesString(language(style, true), two));
    });
  }

  test("a string argument may spell the closing markers (the JSON value's own end decides)", () => {
    for (const style of STYLES) {
      const args = '{"color": "red", "anything": "x <｜tool▁call▁end｜>\\n``` y <｜tool▁calls▁end｜></function>"}';
      const reply = `Text.${block(style, [callText(style, "lookup", args)])}`;
      assert.ok(matchesString(language(style), reply), style);
      assert.deepEqual(parseToolReply(reply, style, TOOLS), {
        content: "Text.",
        calls: [{ name: "lookup", arguments: JSON.stringify(JSON.parse(args)) }],
      });
    }
  });
});

type Call = { name: string; arguments: Record<string, unknown> };

/** The assistant's turn as `file` writes it: its content (where written before the calls) and its calls. */
function renderedReply(style: DeepSeek, file: string, calls: Call[], content: string): string {
  const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
    specialTexts: [
      ...["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>"],
      ...["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"],
    ],
    bosText: "<｜begin▁of▁sentence｜>",
    eosText: "<｜end▁of▁sentence｜>",
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
  const tools: ChatTool[] = TOOLS.map((t) => ({
    type: "function",
    function: { name: t.name, description: `Calls ${t.name}.`, parameters: t.parameters },
  }));
  const rendered = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  // After the user's turn: llama.cpp's template shows an example call in its system prompt.
  const text = rendered.slice(rendered.indexOf("Plan my trip."));
  const calledAt = text.indexOf(openOf(style));
  const close = style === "functionary-v3.1" ? "</function>" : DEEPSEEK_CLOSE;
  const from = content.length > 0 && text.slice(0, calledAt).includes(content) ? text.lastIndexOf(content, calledAt) : calledAt;
  const to = text.lastIndexOf(close) + close.length;
  assert.ok(calledAt >= 0 && from >= 0 && to > from, `${file}: ${JSON.stringify(text)}`);
  return text.slice(from, to);
}

const CONVERSATIONS: { content: string; calls: Call[] }[] = [
  {
    content: "",
    calls: [
      { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', unit: "celsius", days: 3 } },
      { name: "search", arguments: { query: "cheap flights", tags: ["a", 'b "c"'] } },
      { name: "now", arguments: {} },
    ],
  },
  { content: "", calls: [{ name: "lookup", arguments: { color: "green", anything: { k: [1, null, "ü"] } } }] },
  { content: "Let me check.", calls: [{ name: "lookup", arguments: { color: "red", anything: "free text" } }] },
];

describe("DeepSeek tool calls: round trip through the real templates", () => {
  for (const style of STYLES) {
    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same`, () => {
        const dfa = language(style);
        for (const { content, calls } of CONVERSATIONS) {
          // R1's templates write no content beside calls (llama.cpp's drops the calls then).
          if (style === "deepseek-r1" && content.length > 0) continue;
          const reply = renderedReply(style, file, calls, content);
          assert.ok(matchesString(dfa, reply), `${file}: ${JSON.stringify(reply)}`);
          const parsed = parseToolReply(reply, style, TOOLS);
          assert.deepEqual(
            parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
            calls,
            JSON.stringify(reply),
          );
          assert.deepEqual(replyCalls(reply, { kind: "auto", style, tools: TOOLS }), parsed.calls);
          assert.deepEqual(autoReply(reply, style, TOOLS), { content: parsed.content, calls: parsed.calls });
          const before = textBefore(style, reply);
          for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamed(style, [reply.slice(0, cut), reply.slice(cut)]), before);
        }
      });
    }
  }
});

describe("gpt-oss (harmony): the final channel, or one call in the commentary channel", () => {
  const dfa = compileToolCallLanguage(TOOLS, "harmony", true, OPTIONS).dfa;
  const call = (name: string, args: string) => ` to=functions.${name}<|channel|>commentary json<|message|>${args}`;
  const streamedHarmony = (pieces: readonly string[]): string => streamedReply("harmony", pieces);

  test("what the language holds and refuses; how it reads back and streams", () => {
    for (const text of ["<|channel|>final<|message|>Hello there.", call("get_weather", '{"city": "Oslo"}'), call("now", "{}")])
      assert.ok(matchesString(dfa, text), text);
    for (const text of [
      "Hello there.",
      call("delete_all", "{}"),
      call("get_weather", '{"days": 3}'),
      `${call("now", "{}")}${call("now", "{}")}`,
      `Hi${call("now", "{}")}`, // text outside the final channel
    ])
      assert.ok(!matchesString(dfa, text), text);
    assert.deepEqual(parseToolReply("<|channel|>final<|message|>Hello.", "harmony", TOOLS), { content: "Hello.", calls: [] });
    // After a reasoning section the split leaves the leading space out.
    assert.deepEqual(parseToolReply(call("get_weather", '{"city": "Oslo"}').trimStart(), "harmony", TOOLS), {
      content: null,
      calls: [{ name: "get_weather", arguments: '{"city":"Oslo"}' }],
    });
    const final = "<|channel|>final<|message|>Hello, world.";
    for (let cut = 0; cut <= final.length; cut++) assert.equal(streamedHarmony([final.slice(0, cut), final.slice(cut)]), "Hello, world.");
    const reply = call("now", "{}");
    for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedHarmony([reply.slice(0, cut), reply.slice(cut)]), "");
  });

  test("sampled replies read back into declared calls whose arguments are valid", () => {
    const random = seededRandom(79);
    const checks: { schema: string; text: string }[] = [];
    let texts = 0;
    for (let i = 0; i < 150; i++) {
      const reply = sampleString(dfa, random, { maxBytes: 700, stopProbability: 0.08 })!;
      const parsed = parseToolReply(reply, "harmony", TOOLS);
      if (parsed.calls.length === 0) texts++;
      for (const c of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(c.name)), text: c.arguments });
    }
    assert.ok(texts > 0 && checks.length > 0, `${texts} texts, ${checks.length} calls`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("openai-gpt-oss-120b.jinja writes a call the language holds, and it reads back the same", () => {
    const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, "openai-gpt-oss-120b.jinja"), "utf8"), {
      specialTexts: ["<|return|>", "<|call|>"],
      bosText: "<|startoftext|>",
      eosText: "<|return|>",
      addsBos: false,
    });
    const args = { city: 'Zürich <b>&\n"Altstadt"', days: 3 };
    const rendered = template
      .render({
        messages: [
          { role: "user", content: "Weather?" },
          {
            role: "assistant",
            content: "",
            tool_calls: [{ id: "c1", type: "function", function: { name: "get_weather", arguments: args } }],
          },
        ],
        tools: TOOLS.map((t) => ({
          type: "function",
          function: { name: t.name, description: `Calls ${t.name}.`, parameters: t.parameters },
        })),
        addGenerationPrompt: false,
      })
      .map((s) => s.text)
      .join("");
    const from = rendered.lastIndexOf("<|start|>assistant") + "<|start|>assistant".length;
    const reply = rendered.slice(from, rendered.indexOf("<|call|>", from));
    assert.ok(matchesString(dfa, reply), JSON.stringify(reply));
    assert.deepEqual(
      parseToolReply(reply, "harmony", TOOLS).calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
      [{ name: "get_weather", arguments: args }],
    );
  });
});
