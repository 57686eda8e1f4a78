/**
 * The tool-call styles that write one JSON list of calls after a marker (schema/tool-calls/listed.ts):
 * "granite" (`<|tool_call|>[{"name": "f", "arguments": {…}}]`, the marker a control token, the keys
 * in either order), "firefunction-v2" (`functools[{…}, …]`, text), "nemotron-v2"
 * (`<TOOLCALL>[…]</TOOLCALL>`, text) and "apertus" (`<|tools_prefix|>[{"f": {…}}]<|tools_suffix|>`,
 * control tokens); and Functionary v3.2's
 * recipients (schema/tool-calls/recipient.ts: `all\ntext>>>f\n{…}>>>g\n{…}`); and Cohere's
 * replies (schema/tool-calls/cohere.ts: text between its answer markers, or a JSON list between
 * its action markers, all control tokens), with a reasoning section's control-token markers; and
 * Command R+'s action lists (schema/tool-calls/command-r-plus.ts: calls, or `directly-answer` and
 * the answer after `\nAnswer: `).
 * Shown: random members of each language read back (control markers as their text) into calls of
 * declared functions whose arguments Python's jsonschema finds valid, and a stream sends exactly
 * the text; free text never spells the marker; undeclared names, invalid arguments, a marker
 * written as text, text after the calls are refused; without parallel calls there is one; what
 * each real template writes for an assistant's calls is in the language and reads back the same,
 * streamed at every cut; a walk over a small vocabulary's masks opens Granite's calls only with
 * the control token; a function named "all" is refused for Functionary v3.2.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { DfaConstraintState, dfaTokenMatcherFor, reasoningDfa, TokenTrie } from "../src/constraint/index.js";
import { autoReply } from "../src/generate/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../src/prompt/index.js";
import { compileRegex, intersectDfas, matchesBytes, sampleMember, subtractDfas } from "../src/regex/index.js";
import { compileToolCallLanguage, JsonSchemaError, parseToolReply, TOOL_CALL_OPEN, type ToolDeclaration } from "../src/schema/index.js";
import { CONTROL_MARKERS, markerBytes } from "../src/support/index.js";
import { TokenKind } from "../src/vocab/index.js";
import { makeVocab } from "./support/constraint-fixtures.js";
import { pythonVerdicts } from "./support/json-schema-oracle.js";
import { seededRandom } from "./support/generate-harness.js";
import { REPO_ROOT } from "./support/paths.js";
import {
  markersAsBytes,
  markersAsText,
  realTemplate,
  renderedToolLoop,
  streamedReply,
  toolCallLanguages,
} from "./support/tool-call-languages.js";

type Listed = "granite" | "firefunction-v2" | "apertus" | "nemotron-v2" | "functionary-v3.2";
const STYLES: Listed[] = ["granite", "firefunction-v2", "apertus", "nemotron-v2", "functionary-v3.2"];
/** The templates that write an assistant's calls (Granite 3.3's never does). */
const TEMPLATES: Record<Listed, string[]> = {
  granite: [],
  "firefunction-v2": ["fireworks-ai-llama-3-firefunction-v2.jinja"],
  apertus: ["Apertus-8B-Instruct.jinja"],
  "nemotron-v2": ["NVIDIA-Nemotron-Nano-v2.jinja"],
  "functionary-v3.2": ["meetkai-functionary-medium-v3.2.jinja"],
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

const language = toolCallLanguages((_style: Listed) => TOOLS, OPTIONS);

type Written = { name: string; args: string };

/** A reply as `style` writes it: `text` (or none) then the calls (or none). */
function replyText(style: Listed, text: string | null, calls: Written[]): string {
  if (style === "functionary-v3.2") {
    const each = calls.map((c) => `${c.name}\n${c.args}`).join(">>>");
    if (text === null) return each;
    return `all\n${text}${calls.length > 0 ? `>>>${each}` : ""}`;
  }
  if (calls.length === 0) return text ?? "";
  const objects = calls.map((c) => (style === "apertus" ? `{"${c.name}": ${c.args}}` : `{"name": "${c.name}", "arguments": ${c.args}}`));
  const list = `[${objects.join(", ")}]`;
  const block =
    style === "granite"
      ? `<|tool_call|>${list}`
      : style === "apertus"
        ? `<|tools_prefix|>${list}<|tools_suffix|>`
        : style === "nemotron-v2"
          ? `<TOOLCALL>${list}</TOOLCALL>`
          : `functools${list}`;
  return `${text ?? ""}${block}`;
}

/** What a stream sends of a reply: the text before the calls (Functionary: after `all\n`). */
function sentText(style: Listed, reply: string): string {
  if (style === "functionary-v3.2") {
    if (!reply.startsWith("all\n")) return "";
    const end = reply.indexOf(">>>");
    return reply.slice(4, end < 0 ? reply.length : end);
  }
  const at = reply.indexOf(TOOL_CALL_OPEN[style]);
  return at < 0 ? reply : reply.slice(0, at);
}

const weather: Written = { name: "get_weather", args: '{"city": "Oslo", "days": 3}' };
const now: Written = { name: "now", args: "{}" };

describe("JSON lists of calls, and Functionary v3.2's recipients: the language", () => {
  test("the opening markers: <|tool_call|>, functools[, <|tools_prefix|>, <TOOLCALL>, >>>", () => {
    assert.deepEqual(
      STYLES.map((s) => TOOL_CALL_OPEN[s]),
      ["<|tool_call|>", "functools[", "<|tools_prefix|>", "<TOOLCALL>", ">>>"],
    );
  });

  for (const style of STYLES) {
    test(`${style}: sampled replies read back into declared calls whose arguments are valid; the stream sends exactly the text`, () => {
      const dfa = language(style);
      // Replies that start with their calls (the marker's spelling starts with a byte no letter has).
      const open =
        style === "functionary-v3.2"
          ? "[^a]"
          : style === "firefunction-v2"
            ? "functools\\["
            : style === "nemotron-v2"
              ? "<TOOLCALL>"
              : "[^a-zA-Z]";
      const calls = intersectDfas(dfa, compileRegex(`(?:${open}.*)?`, { flags: "s" }));
      const random = seededRandom(STYLES.indexOf(style) + 71);
      const checks: { schema: string; text: string }[] = [];
      let withCalls = 0;
      let several = 0;
      for (let i = 0; i < 200; i++) {
        const reply = markersAsText(sampleMember(i % 2 === 0 ? dfa : calls, random, { maxBytes: 700, stopProbability: 0.05 })!);
        const parsed = parseToolReply(reply, style, TOOLS);
        const sent = sentText(style, reply);
        assert.ok(!sent.includes(TOOL_CALL_OPEN[style]), reply);
        if (parsed.calls.length === 0) assert.equal(parsed.content, sent);
        else {
          withCalls++;
          if (parsed.calls.length > 1) several++;
          assert.equal(parsed.content, sent.trim().length > 0 ? sent : null, reply);
          for (const call of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
        assert.equal(streamedReply(style, [...reply]), sent, reply);
      }
      assert.ok(withCalls > 20 && several > 0, `${withCalls} replies with calls, ${several} with several`);
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: valid calls are in; undeclared names, invalid arguments and text after the calls are out`, () => {
      const dfa = language(style);
      const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
      for (const text of [
        replyText(style, "Just text.", []),
        replyText(style, "", []),
        replyText(style, null, [weather]),
        replyText(style, "Let me check. ", [weather]),
        replyText(style, null, [weather, now]),
      ])
        assert.ok(has(text), JSON.stringify(text));
      for (const text of [
        replyText(style, null, [{ name: "delete_all", args: "{}" }]),
        replyText(style, null, [{ name: "get_weather", args: '{"days": 3}' }]),
        replyText(style, null, [{ name: "get_weather", args: '{"city": "Oslo", "town": "x"}' }]),
        replyText(style, null, [{ name: "get_weather", args: '{"city": "Oslo", "days": 99}' }]),
        `${replyText(style, null, [weather])} and text after`,
        replyText(style, `a ${TOOL_CALL_OPEN[style]} in text`, []),
      ])
        assert.ok(!has(text), JSON.stringify(text));
      const one = markersAsBytes(replyText(style, null, [now]));
      const two = markersAsBytes(replyText(style, null, [now, weather]));
      assert.ok(matchesBytes(language(style, false), one));
      assert.ok(!matchesBytes(language(style, false), two));
    });
  }

  test("granite: the keys in either order; the marker as text opens nothing and is not text either", () => {
    const dfa = language("granite");
    const argumentsFirst = '<|tool_call|>[{"arguments": {"city": "Oslo"}, "name": "get_weather"}]';
    assert.ok(matchesBytes(dfa, markersAsBytes(argumentsFirst)));
    assert.deepEqual(parseToolReply(argumentsFirst, "granite", TOOLS).calls, [{ name: "get_weather", arguments: '{"city":"Oslo"}' }]);
    assert.ok(!matchesBytes(dfa, utf8.encode(replyText("granite", null, [weather]))));
    assert.ok(!matchesBytes(dfa, utf8.encode("see <|tool_call|> here")));
    for (const style of ["apertus"] as const) assert.ok(!matchesBytes(language(style), utf8.encode(replyText(style, null, [weather]))));
  });

  test("firefunction-v2: the word functools is free text; only functools[ opens the calls", () => {
    const dfa = language("firefunction-v2");
    assert.ok(matchesBytes(dfa, utf8.encode("Use Python's functools module.")));
    assert.ok(!matchesBytes(dfa, utf8.encode("functools[1]")));
  });

  test("functionary-v3.2: text for the user is `all`; a string argument may spell >>>; no function may be named all", () => {
    const reply = 'all\nChecking.>>>search\n{"query": "a >>> b"}';
    assert.ok(!matchesBytes(language("functionary-v3.2"), utf8.encode(reply)), "the pattern allows letters and spaces only");
    const lookup: ToolDeclaration = { name: "note", parameters: { type: "object", properties: { text: { type: "string" } } } };
    const dfa = compileToolCallLanguage([lookup], "functionary-v3.2", true, OPTIONS).dfa;
    const note = 'all\nChecking.>>>note\n{"text": "a >>> b"}>>>note\n{}';
    assert.ok(matchesBytes(dfa, utf8.encode(note)));
    assert.deepEqual(parseToolReply(note, "functionary-v3.2", [lookup]), {
      content: "Checking.",
      calls: [
        { name: "note", arguments: '{"text":"a >>> b"}' },
        { name: "note", arguments: "{}" },
      ],
    });
    assert.ok(!matchesBytes(dfa, utf8.encode("Checking.")), "text without its recipient line");
    assert.throws(
      () => compileToolCallLanguage([{ name: "all" }], "functionary-v3.2", true, OPTIONS),
      (error: unknown) => error instanceof JsonSchemaError && error.keyword === "name" && /"all"/.test(error.message),
    );
  });
});

describe("Granite's calls through its control token, over a small vocabulary's masks", () => {
  // Control tokens 0-1, then text: "<|tool_call|>" as a plain token too (text, not the marker).
  const texts = ["<s>", "<|tool_call|>", "<|tool_call|>", "[", "]", "{", "}", '"', ":", " ", ",", ..."abcdefghijklmnopqrstuvwxyz"];
  const PLAIN_MARKER = 2;
  const vocab = makeVocab(
    texts,
    texts.map((_, id) => (id < 2 ? TokenKind.Control : TokenKind.Normal)),
  );
  const trie = TokenTrie.build(vocab);

  test("calls are opened by the control token only; the plain token of its text is never written", () => {
    const dfa = compileToolCallLanguage(
      [{ name: "a", parameters: { type: "object", properties: {}, additionalProperties: false } }],
      "granite",
      true,
      OPTIONS,
    ).dfa;
    const random = seededRandom(9);
    let called = 0;
    for (let run = 0; run < 40; run++) {
      const state = new DfaConstraintState(dfaTokenMatcherFor(trie, dfa));
      const tokens: number[] = [];
      for (let step = 0; step < 80; step++) {
        if (state.isAccepting() && random() < 0.2) break;
        const mask = state.mask(80 - step);
        const allowed = Array.from({ length: vocab.size }, (_, id) => id).filter((id) => (mask[id >>> 5]! >>> (id & 31)) & 1);
        if (allowed.length === 0) break;
        const id = allowed.includes(1) && random() < 0.5 ? 1 : allowed[Math.floor(random() * allowed.length)]!;
        assert.ok(state.advance(id));
        tokens.push(id);
      }
      if (!state.isAccepting()) continue;
      assert.ok(!tokens.includes(PLAIN_MARKER) && !tokens.includes(0));
      const text = tokens.map((t) => texts[t]).join("");
      const parsed = parseToolReply(text, "granite", []);
      if (parsed.calls.length > 0) {
        called++;
        for (const call of parsed.calls) assert.deepEqual({ ...call }, { name: "a", arguments: "{}" });
      } else assert.equal(parsed.content, text);
    }
    assert.ok(called > 0, "some walks wrote calls");
  });
});

describe("a reasoning section's markers that are control tokens of the vocabulary", () => {
  test("are written as those tokens (Cohere's <|END_THINKING|>), and as text where the vocabulary has them as text", () => {
    const texts = ["<s>", "<|END_THINKING|>", "<|", "END_THINKING", "|>", "a", "b"];
    const control = TokenKind.Control;
    const trie = TokenTrie.build(
      makeVocab(
        texts,
        texts.map((_, id) => (id < 2 ? control : TokenKind.Normal)),
      ),
    );
    const close = "<|END_THINKING|>";
    assert.deepEqual([...trie.markerSpelling(close)], [...markerBytes(close)!]);
    const textual = TokenTrie.build(
      makeVocab(
        texts,
        texts.map(() => TokenKind.Normal),
      ),
    );
    assert.deepEqual([...textual.markerSpelling(close)], [...utf8.encode(close)]);
    // Over the first vocabulary the section closes with the control token only, never the text pieces.
    const section = new DfaConstraintState(dfaTokenMatcherFor(trie, reasoningDfa(null, trie.markerSpelling(close))));
    assert.ok(section.advance(5) && section.advance(2) && section.advance(3) && section.advance(4), "the text pieces are reasoning text");
    assert.ok(!section.isAccepting());
    assert.ok(section.advance(1) && section.isAccepting());
  });
});

type Call = { name: string; arguments: Record<string, unknown> };

/** The assistant's last turn as `file` writes it, from its content (or its calls) to the end of its calls. */
function renderedReply(style: Listed, file: string, calls: Call[], content: string): string {
  const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, file), "utf8"), {
    specialTexts: [...CONTROL_MARKERS, "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"],
    bosText: "<|begin_of_text|>",
    eosText: "<|eot_id|>",
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
  // Apertus's template writes each tool's description (undefined is an error, as in Jinja).
  const tools: ChatTool[] = TOOLS.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.name, parameters: t.parameters },
  }));
  const rendered = template
    .render({ messages, tools, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
  let turn = rendered.slice(rendered.lastIndexOf("Plan my trip."));
  const start = style === "functionary-v3.2" ? "\n\n>>>" : "<|end_header_id|>\n\n";
  const header = style === "apertus" ? "<|assistant_start|>" : style === "nemotron-v2" ? "<SPECIAL_11>Assistant\n" : start;
  // Nemotron Nano v2 writes an assistant's text as a turn of its own before its calls' turn.
  turn = turn.slice((style === "nemotron-v2" ? turn.lastIndexOf(header) : turn.indexOf(header)) + header.length);
  const close = style === "apertus" ? "<|tools_suffix|>" : style === "nemotron-v2" ? "</TOOLCALL>" : null;
  const end = close !== null ? turn.indexOf(close) + close.length : turn.indexOf("<|eot_id|>");
  assert.ok(end > 0, `${file}: ${JSON.stringify(turn)}`);
  return turn.slice(0, end);
}

const CONVERSATIONS: { content: string; calls: Call[] }[] = [
  {
    content: "",
    calls: [
      { name: "get_weather", arguments: { city: 'Zürich <b>&\n"Altstadt"', days: 3 } },
      { name: "search", arguments: { query: "cheap flights", tags: ["a", 'b "c"'] } },
      { name: "now", arguments: {} },
    ],
  },
  { content: "Let me look.", calls: [{ name: "now", arguments: {} }] },
];

describe("JSON lists of calls: round trip through the real templates", () => {
  for (const style of STYLES) {
    for (const file of TEMPLATES[style]) {
      test(`${style}: ${file} writes calls the language holds, and they read back the same, streamed at every cut`, () => {
        for (const { content, calls } of CONVERSATIONS) {
          // FireFunction writes a space before `functools[`: text before the calls.
          const reply = renderedReply(style, file, calls, content);
          assert.ok(matchesBytes(language(style), markersAsBytes(reply)), `${file}: ${JSON.stringify(reply)}`);
          const parsed = parseToolReply(reply, style, TOOLS);
          assert.deepEqual(
            parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
            calls,
          );
          assert.equal(parsed.content?.trim() ?? "", style === "nemotron-v2" ? "" : content);
          assert.deepEqual(autoReply(reply, style, TOOLS), { content: parsed.content, calls: parsed.calls });
          const sent = sentText(style, reply);
          for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply(style, [reply.slice(0, cut), reply.slice(cut)]), sent);
        }
      });
    }
  }
});

describe("Cohere: text between its answer markers, or calls between its action markers", () => {
  type Cohere = "command-r7b" | "cohere2";
  const COHERE: Record<Cohere, { file: string; open: string; close: string }> = {
    "command-r7b": { file: "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", open: "<|START_RESPONSE|>", close: "<|END_RESPONSE|>" },
    cohere2: { file: "Cohere2MoE.jinja", open: "<|START_TEXT|>", close: "<|END_TEXT|>" },
  };
  const cohereLanguage = toolCallLanguages((_style: Cohere) => TOOLS, OPTIONS);
  const action = (calls: Written[]): string =>
    `<|START_ACTION|>[\n    ${calls
      .map((c, i) => `{"tool_call_id": "${i}", "tool_name": "${c.name}", "parameters": ${c.args}}`)
      .join(",\n    ")}\n]<|END_ACTION|>`;

  for (const style of ["command-r7b", "cohere2"] as const) {
    const { open, close, file } = COHERE[style];
    const answer = (text: string): string => `${open}${text}${close}`;

    test(`${style}: sampled replies read back; calls valid; the stream sends the text without its markers`, () => {
      const dfa = cohereLanguage(style);
      const random = seededRandom(style === "cohere2" ? 83 : 89);
      const checks: { schema: string; text: string }[] = [];
      let withCalls = 0;
      for (let i = 0; i < 150; i++) {
        const reply = markersAsText(sampleMember(dfa, random, { maxBytes: 700, stopProbability: 0.05 })!);
        const parsed = parseToolReply(reply, style, TOOLS);
        const text = reply.startsWith(open) ? reply.slice(open.length, reply.length - close.length) : "";
        if (parsed.calls.length === 0) assert.equal(parsed.content, text, reply);
        else {
          withCalls++;
          assert.equal(parsed.content, null);
          for (const call of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        }
        assert.ok(!text.includes(close) && !text.includes("<|START_ACTION|>"));
        assert.equal(streamedReply(style, [...reply]), text, reply);
      }
      assert.ok(withCalls > 10, `${withCalls} replies with calls`);
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: text or calls, not both; undeclared names, invalid arguments and marker texts are out`, () => {
      const dfa = cohereLanguage(style);
      const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
      for (const text of [answer("Just text."), answer(""), action([weather]), action([weather, now])]) assert.ok(has(text), text);
      for (const text of [
        "Just text.",
        `${answer("Let me check.")}${action([weather])}`,
        action([{ name: "delete_all", args: "{}" }]),
        action([{ name: "get_weather", args: '{"days": 3}' }]),
        answer(`a ${close} inside`),
        `${action([weather])} more`,
      ])
        assert.ok(!has(text), text);
      // The markers as text are neither markers nor text.
      assert.ok(!matchesBytes(dfa, utf8.encode(answer("x"))));
      assert.ok(!matchesBytes(cohereLanguage(style, false), markersAsBytes(action([weather, now]))));
      assert.ok(matchesBytes(cohereLanguage(style, false), markersAsBytes(action([now]))));
    });

    test(`${style}: ${file} writes calls (and text) the language holds, and they read back the same, streamed at every cut`, () => {
      const template = realTemplate(file, {
        controls: ["<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>", "<|USER_TOKEN|>"],
        bos: "<BOS_TOKEN>",
        eos: "<|END_OF_TURN_TOKEN|>",
      });
      for (const { calls } of CONVERSATIONS) {
        const rendered = renderedToolLoop(template, TOOLS, calls);
        const from = rendered.indexOf("<|START_ACTION|>", rendered.lastIndexOf("Plan my trip."));
        const reply = rendered.slice(from, rendered.indexOf("<|END_ACTION|>", from) + "<|END_ACTION|>".length);
        assert.ok(matchesBytes(cohereLanguage(style), markersAsBytes(reply)), JSON.stringify(reply));
        const parsed = parseToolReply(reply, style, TOOLS);
        assert.deepEqual(
          parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
          calls,
        );
        for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply(style, [reply.slice(0, cut), reply.slice(cut)]), "");
        // The text turn after the tool results.
        const text = rendered.slice(rendered.lastIndexOf(open), rendered.lastIndexOf(close) + close.length);
        assert.equal(text, answer("It is sunny."));
        assert.ok(matchesBytes(cohereLanguage(style), markersAsBytes(text)));
        assert.deepEqual(autoReply(text, style, TOOLS), { content: "It is sunny.", calls: [] });
        for (let cut = 0; cut <= text.length; cut++)
          assert.equal(streamedReply(style, [text.slice(0, cut), text.slice(cut)]), "It is sunny.");
      }
    });
  }
});

describe("Solar Open: text under its content header, or calls under theirs", () => {
  const solar = toolCallLanguages((_style: "solar-open") => TOOLS, OPTIONS);
  const FILE = "upstage-Solar-Open-100B.jinja";
  const answer = (text: string): string => `<|content|>${text}<|end|>`;
  const callsOf = (calls: Written[], id = "a1b2c3d4e5"): string =>
    `<|tool_calls|>${calls.map((c) => `<|tool_call:begin|>${id}<|tool_call:name|>${c.name}<|tool_call:args|>${c.args}<|tool_call:end|>`).join("")}`;

  test("sampled replies read back; calls valid; the stream sends the text without its header", () => {
    const dfa = solar("solar-open");
    const random = seededRandom(97);
    const checks: { schema: string; text: string }[] = [];
    let withCalls = 0;
    let several = 0;
    for (let i = 0; i < 150; i++) {
      const reply = markersAsText(sampleMember(dfa, random, { maxBytes: 700, stopProbability: 0.05 })!);
      const parsed = parseToolReply(reply, "solar-open", TOOLS);
      const text = reply.startsWith("<|content|>") ? reply.slice("<|content|>".length).replace(/<\|end\|>$/, "") : "";
      if (parsed.calls.length === 0) assert.equal(parsed.content, text, reply);
      else {
        withCalls++;
        if (parsed.calls.length > 1) several++;
        assert.equal(parsed.content, null);
        for (const call of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
      }
      assert.ok(!text.includes("<|end|>") && !text.includes("<|tool_calls|>"), reply);
      assert.equal(streamedReply("solar-open", [...reply]), text, reply);
    }
    assert.ok(withCalls > 10 && several > 0, `${withCalls} replies with calls, ${several} with several`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("text or calls, not both; ids of ten letters or digits; undeclared names, invalid arguments and marker texts are out", () => {
    const dfa = solar("solar-open");
    const has = (text: string): boolean => matchesBytes(dfa, markersAsBytes(text));
    for (const text of [answer("Just text."), answer(""), "<|content|>Unended", callsOf([weather]), callsOf([weather, now])])
      assert.ok(has(text), text);
    for (const text of [
      "Just text.",
      `${answer("Let me check.")}${callsOf([weather])}`,
      callsOf([{ name: "delete_all", args: "{}" }]),
      callsOf([{ name: "get_weather", args: '{"days": 3}' }]),
      callsOf([weather], "ABCDEFGHIJ"),
      callsOf([weather], "abc"),
      answer("a <|end|> inside"),
      `${answer("x")} more`,
    ])
      assert.ok(!has(text), text);
    // The headers as text are neither headers nor text.
    assert.ok(!matchesBytes(dfa, utf8.encode(answer("x"))));
    assert.ok(!matchesBytes(solar("solar-open", false), markersAsBytes(callsOf([weather, now]))));
    assert.ok(matchesBytes(solar("solar-open", false), markersAsBytes(callsOf([now]))));
  });

  test(`${FILE} writes calls and text the language holds, and they read back the same, streamed at every cut`, () => {
    const template = realTemplate(FILE, { controls: ["<|calls|>", "<|flush|>", "<|tool_response|>"], eos: "<|flush|>" });
    for (const { calls } of CONVERSATIONS) {
      const rendered = renderedToolLoop(template, TOOLS, calls, { id: (i) => `call${i}abcde` });
      // The reasoning of the turn after the last user message is kept, in its own message.
      assert.ok(rendered.includes("<|begin|>assistant<|think|>Plan.<|end|>"), rendered);
      const from = rendered.indexOf("<|tool_calls|>");
      const reply = rendered.slice(from, rendered.indexOf("<|calls|>", from));
      assert.ok(matchesBytes(solar("solar-open"), markersAsBytes(reply)), JSON.stringify(reply));
      assert.deepEqual(
        parseToolReply(reply, "solar-open", TOOLS).calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
        calls,
      );
      for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply("solar-open", [reply.slice(0, cut), reply.slice(cut)]), "");
      const text = rendered.slice(rendered.lastIndexOf("<|content|>"));
      assert.equal(text, answer("It is sunny."));
      assert.ok(matchesBytes(solar("solar-open"), markersAsBytes(text)));
      assert.deepEqual(autoReply(text, "solar-open", TOOLS), { content: "It is sunny.", calls: [] });
      for (let cut = 0; cut <= text.length; cut++)
        assert.equal(streamedReply("solar-open", [text.slice(0, cut), text.slice(cut)]), "It is sunny.");
    }
  });
});

describe("GigaChat 3 and 3.1: text, then one call in its own message (3) or after <|function_call|> (3.1)", () => {
  type GigaChat = "gigachat3" | "gigachat3.1";
  const FILES: Record<GigaChat, string> = { gigachat3: "GigaChat3-10B-A1.8B.jinja", "gigachat3.1": "GigaChat3.1-10B-A1.8B.jinja" };
  const giga = toolCallLanguages((_style: GigaChat) => TOOLS, OPTIONS);
  const replyOf = (style: GigaChat, text: string, call: Written | null, ended = true): string => {
    const json = call === null ? "" : `{"name": "${call.name}", "arguments": ${call.args}}`;
    const body =
      call === null
        ? text
        : style === "gigachat3"
          ? `${text}<|message_sep|>\n\nfunction call<|role_sep|>\n${json}`
          : `${text}<|function_call|>${json}`;
    return ended ? `${body}<|message_sep|>` : body;
  };

  for (const style of ["gigachat3", "gigachat3.1"] as const) {
    test(`${style}: sampled replies read back; the call valid; the stream sends the text before the separator`, () => {
      const dfa = giga(style);
      const random = seededRandom(style === "gigachat3" ? 101 : 103);
      // Replies holding a separator (a control token's spelling is no UTF-8 text): most hold a call.
      const calls = subtractDfas(dfa, compileRegex(".*", { flags: "s" }));
      const checks: { schema: string; text: string }[] = [];
      let withCalls = 0;
      for (let i = 0; i < 150; i++) {
        const reply = markersAsText(sampleMember(i % 2 === 0 ? dfa : calls, random, { maxBytes: 700, stopProbability: 0.05 })!);
        const parsed = parseToolReply(reply, style, TOOLS);
        const cut = [reply.indexOf("<|message_sep|>"), reply.indexOf("<|function_call|>")].filter((n) => n >= 0);
        const text = cut.length === 0 ? reply : reply.slice(0, Math.min(...cut));
        assert.ok(parsed.calls.length <= 1);
        if (parsed.calls.length === 0) assert.equal(parsed.content, text, reply);
        else {
          withCalls++;
          assert.equal(parsed.content, text.trim().length > 0 ? text : null, reply);
          checks.push({ schema: JSON.stringify(schemaOf(parsed.calls[0]!.name)), text: parsed.calls[0]!.arguments });
        }
        assert.equal(streamedReply(style, [...reply]), text, reply);
      }
      assert.ok(withCalls > 20, `${withCalls} replies with a call`);
      pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
    });

    test(`${style}: one call at most; undeclared names, invalid arguments and separator texts are out`, () => {
      const has = (text: string): boolean => matchesBytes(giga(style), markersAsBytes(text));
      for (const text of [
        "Just text.",
        replyOf(style, "Just text.", null),
        replyOf(style, "", weather),
        replyOf(style, "Let me check.", weather, false),
        replyOf(style, "", now),
      ])
        assert.ok(has(text), JSON.stringify(text));
      for (const text of [
        replyOf(style, "", { name: "delete_all", args: "{}" }),
        replyOf(style, "", { name: "get_weather", args: '{"days": 3}' }),
        `${replyOf(style, "", weather)}${replyOf(style, "", now)}`,
        `${replyOf(style, "x", null)} more`,
        replyOf(style, "a <|message_sep|> b", null),
      ])
        assert.ok(!has(text), JSON.stringify(text));
      assert.ok(!matchesBytes(giga(style), utf8.encode(replyOf(style, "", weather))), "separators as text");
    });

    test(`${style}: ${FILES[style]} writes a call and text the language holds; they read back the same, streamed at every cut`, () => {
      const template = new ChatTemplate(readFileSync(resolve(TEMPLATE_DIR, FILES[style]), "utf8"), {
        specialTexts: [...CONTROL_MARKERS],
        bosText: "<s>",
        eosText: "</s>",
        addsBos: false,
      });
      const tools: ChatTool[] = TOOLS.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.name, parameters: t.parameters },
      }));
      for (const { content, calls } of CONVERSATIONS) {
        const call = calls[0]!;
        const messages: ChatMessage[] = [
          { role: "user", content: "Plan my trip." },
          {
            role: "assistant",
            content,
            tool_calls: [{ id: "c0", type: "function", function: { name: call.name, arguments: call.arguments } }],
          },
          { role: "tool", content: "result", tool_call_id: "c0" },
          { role: "assistant", content: "It is sunny." },
        ];
        const rendered = template
          .render({ messages, tools, addGenerationPrompt: false })
          .map((s) => s.text)
          .join("");
        const start = "assistant<|role_sep|>\n";
        const from = rendered.indexOf(start, rendered.indexOf("Plan my trip.")) + start.length;
        const reply = rendered.slice(from, rendered.indexOf("\n\nfunction result", from));
        assert.ok(matchesBytes(giga(style), markersAsBytes(reply)), JSON.stringify(reply));
        const parsed = parseToolReply(reply, style, TOOLS);
        assert.deepEqual(
          parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
          [call],
        );
        assert.equal(parsed.content ?? "", content);
        for (let cut = 0; cut <= reply.length; cut++) assert.equal(streamedReply(style, [reply.slice(0, cut), reply.slice(cut)]), content);
        const last = rendered.lastIndexOf(start) + start.length;
        const text = rendered.slice(last, rendered.indexOf("\n\n", last));
        assert.equal(text, "It is sunny.<|message_sep|>");
        assert.ok(matchesBytes(giga(style), markersAsBytes(text)));
        assert.deepEqual(autoReply(text, style, TOOLS), { content: "It is sunny.", calls: [] });
        for (let cut = 0; cut <= text.length; cut++)
          assert.equal(streamedReply(style, [text.slice(0, cut), text.slice(cut)]), "It is sunny.");
      }
    });
  }
});

describe("Command R+: an action list of calls, or its directly-answer action and the answer", () => {
  const rPlus = toolCallLanguages((_style: "command-r-plus") => TOOLS, OPTIONS);
  const FILE = "CohereForAI-c4ai-command-r-plus-tool_use.jinja";
  const entry = (name: string, args: string): string => `{\n        "tool_name": "${name}",\n        "parameters": ${args}\n    }`;
  const actions = (calls: Written[], sep = " "): string =>
    `Action:${sep}\`\`\`json\n[\n    ${calls.map((c) => entry(c.name, c.args)).join(",\n    ")}\n]\`\`\``;
  const direct = (text: string, sep = " "): string => `${actions([{ name: "directly-answer", args: "{}" }], sep)}\nAnswer: ${text}`;

  test("sampled replies read back; calls valid; the stream sends the answer after its lead", () => {
    const dfa = rPlus("command-r-plus");
    const random = seededRandom(97);
    const checks: { schema: string; text: string }[] = [];
    let withCalls = 0;
    let answers = 0;
    for (let i = 0; i < 150; i++) {
      const reply = new TextDecoder().decode(sampleMember(dfa, random, { maxBytes: 700, stopProbability: 0.05 })!);
      const parsed = parseToolReply(reply, "command-r-plus", TOOLS);
      const at = reply.indexOf("\nAnswer: ");
      if (parsed.calls.length === 0) {
        answers++;
        assert.ok(reply.trimStart().startsWith("Action:") && reply.includes('"tool_name": "directly-answer"'), reply);
        assert.equal(parsed.content, reply.slice(at + "\nAnswer: ".length), reply);
        assert.equal(streamedReply("command-r-plus", [...reply]), parsed.content);
      } else {
        withCalls++;
        assert.equal(parsed.content, null);
        assert.ok(!parsed.calls.some((c) => c.name === "directly-answer"));
        for (const call of parsed.calls) checks.push({ schema: JSON.stringify(schemaOf(call.name)), text: call.arguments });
        assert.equal(streamedReply("command-r-plus", [...reply]), "", reply);
      }
    }
    assert.ok(withCalls > 10 && answers > 10, `${withCalls} replies with calls, ${answers} answers`);
    pythonVerdicts(checks).forEach((v, i) => assert.equal(v, "valid", checks[i]!.text));
  });

  test("directly-answer alone and then the answer; undeclared names, invalid arguments, text before the action are out", () => {
    const dfa = rPlus("command-r-plus");
    const has = (text: string): boolean => matchesBytes(dfa, utf8.encode(text));
    for (const text of [
      direct("It is sunny."),
      direct("", "\n"),
      `\n${direct("Yes.\nAction: none")}`,
      actions([weather]),
      `${actions([weather, now], "\n")}\n`,
    ])
      assert.ok(has(text), text);
    for (const text of [
      "It is sunny.",
      `Sure. ${actions([weather])}`,
      actions([weather, { name: "directly-answer", args: "{}" }]),
      actions([{ name: "delete_all", args: "{}" }]),
      actions([{ name: "get_weather", args: '{"days": 3}' }]),
      `${actions([weather])} more`,
      actions([{ name: "directly-answer", args: "{}" }]),
    ])
      assert.ok(!has(text), text);
    assert.ok(!matchesBytes(rPlus("command-r-plus", false), utf8.encode(actions([weather, now]))));
    assert.ok(matchesBytes(rPlus("command-r-plus", false), utf8.encode(actions([now]))));
    assert.throws(
      () => compileToolCallLanguage([...TOOLS, { name: "directly-answer" }], "command-r-plus", true, OPTIONS),
      (e: unknown) => e instanceof JsonSchemaError && /directly-answer/.test(e.message),
    );
  });

  test(`${FILE} writes calls the reader reads back the same, and the language holds them with one-line arguments`, () => {
    const template = realTemplate(FILE, {
      controls: ["<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>", "<|USER_TOKEN|>", "<|SYSTEM_TOKEN|>"],
      bos: "<BOS_TOKEN>",
      eos: "<|END_OF_TURN_TOKEN|>",
    });
    // The template's python signatures need each parameter's description.
    const described = TOOLS.map((t) => {
      const parameters = t.parameters as { properties: Record<string, object> };
      const properties = Object.fromEntries(Object.entries(parameters.properties).map(([k, v]) => [k, { ...v, description: k }]));
      return { ...t, parameters: { ...parameters, properties } };
    });
    for (const { calls } of CONVERSATIONS) {
      const rendered = renderedToolLoop(template, described, calls);
      const from = rendered.indexOf("Action:", rendered.lastIndexOf("Plan my trip."));
      // The history writes each call's parameters indented (tojson(indent=4)); the reader takes them so.
      const reply = rendered.slice(from, rendered.indexOf("]```", from) + 4);
      const parsed = parseToolReply(reply, "command-r-plus", TOOLS);
      assert.deepEqual(
        parsed.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown })),
        calls,
      );
      assert.equal(parsed.content, null);
      // The same calls, their parameters on one line (the default JSON style), are in the language.
      const oneLine = actions(
        calls.map((c) => ({
          name: c.name,
          args: JSON.stringify(c.arguments, null, 1)
            .replace(/\n */g, " ")
            .replace(/\[ /g, "[")
            .replace(/{ /g, "{")
            .replace(/ ([\]}])/g, "$1"),
        })),
        "\n",
      );
      assert.ok(matchesBytes(rPlus("command-r-plus"), utf8.encode(oneLine)), oneLine);
      assert.equal(rendered.slice(from - 1, from + "Action:\n```json\n[\n".length), "\nAction:\n```json\n[\n");
      for (let cut = 0; cut <= oneLine.length; cut++)
        assert.equal(streamedReply("command-r-plus", [oneLine.slice(0, cut), oneLine.slice(cut)]), "");
    }
    const text = direct("It is sunny.", "\n");
    assert.deepEqual(autoReply(text, "command-r-plus", TOOLS), { content: "It is sunny.", calls: [] });
    for (let cut = 0; cut <= text.length; cut++)
      assert.equal(streamedReply("command-r-plus", [text.slice(0, cut), text.slice(cut)]), "It is sunny.");
  });
});
