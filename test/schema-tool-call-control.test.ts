/**
 * The tool-call styles whose markers are control tokens: Mistral's (schema/tool-calls/mistral.ts)
 * "mistral" (`[TOOL_CALLS]f[ARGS]{…}`, Small 3.2 / Devstral / Ministral 3) and "mistral-nemo"
 * (`[TOOL_CALLS][{"name": …, "arguments": …, "id": …}]`), and Kimi-K2's (tool-calls/kimi.ts,
 * `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`). In a constraint a marker is its control
 * token's spelling (support/control-markers.ts), which the token trie gives that token alone.
 * Shown: the trie holds the marker tokens and no other control token, free text never offers them;
 * random members of each language read back (markers as their text, as the detokenizer writes them)
 * into declared calls whose arguments Python's jsonschema finds valid; the text never spells
 * "[TOOL_CALLS]"; a walk over a small vocabulary's token masks writes calls only through the
 * control tokens; what each real template writes for an assistant's calls is in the language and
 * reads back the same; a stream splits text from calls the same at every cut.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { DfaConstraintState, dfaTokenMatcherFor, reasoningDfa, TokenTrie } from "../src/constraint/index.js";
import { autoReply } from "../src/generate/index.js";
import { FreeTextConstraint } from "../src/generate/free-text.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesBytes, sampleMember } from "../src/regex/index.js";
import { compileToolCallLanguage, parseToolReply, TOOL_CALL_OPEN, type ToolDeclaration } from "../src/schema/index.js";
import { CONTROL_MARKERS, markerBytes } from "../src/support/index.js";
import { TokenKind } from "../src/vocab/index.js";
import { makeVocab } from "./support/constraint-fixtures.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import { markersAsBytes, markersAsText, streamedReply, textBeforeCalls, toolCallLanguages } from "./support/tool-call-languages.js";

type Mistral = "mistral" | "mistral-nemo" | "kimi-k2";
const STYLES: Mistral[] = ["mistral", "mistral-nemo", "kimi-k2"];
const TEMPLATES: Record<Mistral, string[]> = {
  mistral: [
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
  ],
  "mistral-nemo": ["mistralai-Mistral-Nemo-Instruct-2407.jinja"],
  "kimi-k2": ["Kimi-K2-Instruct.jinja", "Kimi-K2-Thinking.jinja", "moonshotai-Kimi-K2.jinja"],
};
const TEMPLATE_DIR = resolve(REPO_ROOT, "..", "shared", "chat-templates");
const OPTIONS = { whitespace: "default", strict: true } as const;
const utf8 = new TextEncoder();

const TOOLS: ToolDeclaration[] = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string", minLength: 1, maxLength: 24 }, days: { type: "integer", minimum: 1, maximum: 14 } },
      required: ["city"],
      additionalProperties: false,
    },
  },
  {
    name: "search",
    parameters: {
      type: "object",
      properties: { query: { type: "string", pattern: "^[a-z ]+$" }, tags: { type: "array", items: { type: "string" }, maxItems: 3 } },
      required: ["query"],
      additionalProperties: false,
    },
  },
  { name: "now", parameters: { type: "object", properties: {}, additionalProperties: false } },
];
const schemaOf = (name: string): unknown => TOOLS.find((t) => t.name === name)!.parameters;

const language = toolCallLanguages((_style: Mistral) => TOOLS, OPTIONS);

const streamed = streamedReply;
const openOf = (style: Mistral): string => TOOL_CALL_OPEN[style];
const textBefore = textBeforeCalls;

function callsText(style: Mistral, calls: { name: string; args: string }[]): string {
  if (style === "kimi-k2")
    return `<|tool_calls_section_begin|>${calls
      .map((c, i) => `<|tool_call_begin|>functions.${c.name}:${i}<|tool_call_argument_begin|>${c.args}<|tool_call_end|>`)
      .join("")}<|tool_calls_section_end|>`;
  return style === "mistral"
    ? calls.map((c) => `[TOOL_CALLS]${c.name}[ARGS]${c.args}`).join("")
    : `[TOOL_CALLS][${calls.map((c) => `{"name": "${c.name}", "arguments": ${c.args}}`).join(", ")}]`;
}

describe("control markers in the token trie", () => {
  // Control tokens 0-2, then text: "[TOOL_CALLS]" as a plain token too (text, not the marker).
  // Byte tokens 0xFF, 0x80, 0x81 (a byte-level vocabulary has them): two of them could spell a marker.
  const texts: (string | Uint8Array)[] = [
    "<s>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[TOOL_CALLS]",
    "[",
    "]",
    "{",
    "}",
    '"',
    ":",
    " ",
    ",",
    ..."abcdefghijklmnopqrstuvwxyz",
  ];
  const PLAIN_MARKER = 3;
  const BYTE_FF = texts.push(Uint8Array.of(0xff)) - 1;
  texts.push(Uint8Array.of(0x80), Uint8Array.of(0x81));
  const vocab = makeVocab(
    texts,
    texts.map((_, id) => (id < 3 ? TokenKind.Control : TokenKind.Normal)),
  );
  const trie = TokenTrie.build(vocab);

  test("the markers are in the trie under their spelling; other control tokens are not; free text never offers them", () => {
    assert.deepEqual([...trie.markerTokens], [1, 2]);
    assert.deepEqual([...trie.tokenBytes(1)], [...markerBytes("[TOOL_CALLS]")!]);
    assert.ok(trie.isGenerable(1) && trie.isGenerable(2) && !trie.isGenerable(0));
    assert.ok(!trie.isGenerable(BYTE_FF), "no text token starts with the markers' lead byte");
    assert.ok(trie.isGenerable(BYTE_FF + 1));
    assert.equal(new TextDecoder().decode(trie.tokenBytes(PLAIN_MARKER)), "[TOOL_CALLS]", "a plain token keeps its text");
    const free = new FreeTextConstraint(trie);
    const mask = new Uint32Array(2);
    free.writeMask(10, mask);
    assert.equal(mask[0]! & 0b111, 0, "no control token, markers included");
    assert.ok(!free.advance(1));
    // Every other constraint reads UTF-8 text: a broad one (any text) never offers a marker.
    const anyText = new DfaConstraintState(dfaTokenMatcherFor(trie, compileRegex(".*", { flags: "s" })));
    for (const next of ["a", "[", "b"]) {
      const textMask = anyText.mask(10);
      assert.equal(textMask[0]! & 0b110, 0, "no marker in a regex's mask");
      assert.ok((textMask[PLAIN_MARKER >>> 5]! >>> (PLAIN_MARKER & 31)) & 1, "the plain token with the marker's text is text");
      assert.ok(anyText.advance(texts.indexOf(next)));
    }
    // A reasoning section is text: the marker's spelling is no part of it.
    const thinking = new DfaConstraintState(dfaTokenMatcherFor(trie, reasoningDfa(null, utf8.encode("]"))));
    assert.ok(!thinking.advance(1));
    assert.ok(thinking.advance(texts.indexOf("a")));
  });

  for (const style of ["mistral", "mistral-nemo"] as const) {
    test(`${style}: token masks write calls only through the control tokens`, () => {
      const dfa = compileToolCallLanguage(
        [{ name: "a", parameters: { type: "object", properties: {}, additionalProperties: false } }],
        style,
        true,
        OPTIONS,
      ).dfa;
      const random = seededRandom(style === "mistral" ? 3 : 5);
      let called = 0;
      for (let run = 0; run < 40; run++) {
        const state = new DfaConstraintState(dfaTokenMatcherFor(trie, dfa));
        const tokens: number[] = [];
        for (let step = 0; step < 60; step++) {
          if (state.isAccepting() && random() < 0.2) break;
          const mask = state.mask(60 - step);
          const allowed = Array.from({ length: vocab.size }, (_, id) => id).filter((id) => (mask[id >>> 5]! >>> (id & 31)) & 1);
          if (allowed.length === 0) break;
          // Markers first when allowed, often: calls get written.
          const marker = allowed.filter((id) => id === 1 || id === 2);
          const id = marker.length > 0 && random() < 0.5 ? marker[0]! : allowed[Math.floor(random() * allowed.length)]!;
          assert.ok(state.advance(id));
          tokens.push(id);
        }
        if (!state.isAccepting()) continue;
        assert.ok(!tokens.includes(PLAIN_MARKER), "the text [TOOL_CALLS] is never written");
        const text = new TextDecoder("utf-8", { fatal: true }).decode(
          Uint8Array.from(tokens.flatMap((t) => [...vocab.data.subarray(vocab.offsets[t]!, vocab.offsets[t + 1]!)])),
        );
        const parsed = parseToolReply(text, style, []);
        if (parsed.calls.length > 0) {
          called++;
          assert.ok(tokens.includes(1));
          for (const call of parsed.calls) assert.deepEqual({ ...call }, { name: "a", arguments: "{}" });
        } else assert.equal(parsed.content, text);
      }
      assert.ok(called > 0, "some walks wrote calls");
    });
  }
});

describe("Mistral tool calls: the language", () => {
  test("Mistral's open with [TOOL_CALLS], Kimi-K2's with <|tool_calls_section_begin|>", () => {
    assert.equal(openOf("mistral"), "[TOOL_CALLS]");
    assert.equal(openOf("mistral-nemo"), "[TOOL_CALLS]");
    assert.equal(openOf("kimi-k2"), "<|tool_calls_section_begin|>");
  });

  for (const style of STYLES) {
    test(`${style}: sampled calls read back into declared calls whose arguments are valid; text never spells the marker`, () => {
      const dfa = language(style);
      const calls = intersectDfas(dfa, compileRegex("(?:[^\\[<].*)?", { flags: "s" }));
      const random = seededRandom(style === "mistral" ? 59 : 61);
      const checks: { schema: string; text: string }[] = [];
      let withCalls = 0;
      for (let i = 0; i < 200; i++) {
        const bytes = sampleMember(i % 2 === 0 ? dfa : calls, random, { maxBytes: 700, stopProbability: 0.05 })!;
        const reply = markersAsText(bytes);
        const parsed = parseToolReply(reply, style, TOOLS);
        const before = textBefore(style, reply);
        assert.ok(!markersAsText(bytes.subarray(0, utf8.encode(before).length)).includes(openOf(style)));
        if (parsed.calls.length === 0) assert.equal(parsed.content, reply);
        else {
          withCalls++;
          assert.equal(parsed.content, before.trim().length > 0 ? before : null);
          for (const call of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
        assert.equal(streamed(style, [...reply]), before);
      }
      assert.ok(withCalls > 20, `${withCalls} replies with calls`);
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: valid calls are in; the marker as text, undeclared names and invalid arguments are out`, () => {
      const dfa = language(style);
      const weather = { name: "get_weather", args: '{"city": "Oslo", "days": 3}' };
      const now = { name: "now", args: "{}" };
      for (const text of [
        "Just text.",
        "",
        callsText(style, [weather]),
        `Let me check.${callsText(style, [weather])}`,
        callsText(style, [weather, now]),
      ])
        assert.ok(matchesBytes(dfa, markersAsBytes(text)), JSON.stringify(text));
      for (const text of [
        callsText(style, [{ name: "delete_all", args: "{}" }]),
        callsText(style, [{ name: "get_weather", args: '{"days": 3}' }]),
        callsText(style, [{ name: "get_weather", args: '{"city": "Oslo", "town": "x"}' }]),
        `${callsText(style, [weather])} and text after`,
      ])
        assert.ok(!matchesBytes(dfa, markersAsBytes(text)), JSON.stringify(text));
      // The marker spelled as text (not the control token) opens nothing and is not text either.
      assert.ok(!matchesBytes(dfa, utf8.encode(callsText(style, [weather]))));
      assert.ok(!matchesBytes(dfa, utf8.encode(`see ${openOf(style)} here`)));
      const one = markersAsBytes(callsText(style, [now]));
      const two = markersAsBytes(callsText(style, [now, weather]));
      assert.ok(matchesBytes(language(style, false), one));
      assert.ok(!matchesBytes(language(style, false), two));
    });
  }

  test("mistral: a call id ([CALL_ID] and 9 letters or digits, as Small 3.2's history has it) may come before [ARGS]", () => {
    const dfa = language("mistral");
    const reply = '[TOOL_CALLS]now[CALL_ID]a1B2c3D4e[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{"city": "x [ARGS] y"}';
    assert.ok(matchesBytes(dfa, markersAsBytes(reply.replace("x [ARGS] y", "x"))));
    assert.ok(!matchesBytes(dfa, markersAsBytes("[TOOL_CALLS]now[CALL_ID]short[ARGS]{}")));
    assert.deepEqual(parseToolReply(reply, "mistral", TOOLS).calls, [
      { name: "now", arguments: "{}" },
      { name: "get_weather", arguments: '{"city":"x [ARGS] y"}' },
    ]);
  });
});

type Call = { name: string; arguments: Record<string, unknown> };

function renderedReply(style: Mistral, file: string, calls: Call[], content: string): string {
  const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
    specialTexts: [
      ...CONTROL_MARKERS,
      ...["<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]"],
      ...["<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>"],
    ],
    bosText: "<s>",
    eosText: "</s>",
    addsBos: false,
  });
  const messages: ChatMessage[] = [
    { role: "user", content: "Plan my trip." },
    {
      role: "assistant",
      content,
      tool_calls: calls.map((c, i) => ({ id: `call0000${i}`, type: "function", function: { name: c.name, arguments: c.arguments } })),
    },
  ];
  const tools: ChatTool[] = TOOLS.map((t) => ({ type: "function", function: { name: t.name, parameters: t.parameters } }));
  const rendered = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  const text = rendered.slice(rendered.indexOf("Plan my trip.") + "Plan my trip.".length);
  const from = text.indexOf(openOf(style));
  const close = "<|tool_calls_section_end|>";
  const to = style === "kimi-k2" ? text.indexOf(close, from) + close.length : text.lastIndexOf("</s>");
  assert.ok(from >= 0 && to > from, `${file}: ${JSON.stringify(text)}`);
  return text.slice(from, to);
}

const CONVERSATIONS: Call[][] = [
  [
    { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', days: 3 } },
    { name: "search", arguments: { query: "cheap flights", tags: ["a", 'b "c"'] } },
    { name: "now", arguments: {} },
  ],
  [{ name: "now", arguments: {} }],
];

describe("Mistral tool calls: round trip through the real templates", () => {
  for (const style of STYLES) {
    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same`, () => {
        for (const calls of CONVERSATIONS) {
          const reply = renderedReply(style, file, calls, "");
          assert.ok(matchesBytes(language(style), markersAsBytes(reply)), `${file}: ${JSON.stringify(reply)}`);
          const parsed = parseToolReply(reply, style, TOOLS);
          assert.deepEqual(
            parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
            calls,
          );
          assert.deepEqual(autoReply(reply, style, TOOLS), { content: parsed.content, calls: parsed.calls });
          for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamed(style, [reply.slice(0, cut), reply.slice(cut)]), "");
        }
      });
    }
  }
});
