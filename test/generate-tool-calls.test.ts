/**
 * tool_choice "auto" as a constraint (schema/tool-calls/language.ts): free text, or text then calls in the
 * template's format. Driven token by token as a model would write it (stories260K's tokenizer):
 * a valid call goes through; once the opening marker is written, an undeclared function, bad
 * arguments or an unclosed call cannot be written; free text can never spell the marker; and the
 * reply is split back into content and calls.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadModel } from "../src/model/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { tokenTrieFor } from "../src/constraint/index.js";
import { regexConstraintFor } from "../src/compile/index.js";
import { maskOf } from "./support/generate-harness.js";
import { compileToolCallLanguage, parseToolReply, type ToolCallStyle } from "../src/schema/index.js";
import { STORIES_260K } from "./support/paths.js";

const vocab = loadVocabulary(STORIES_260K);
const trie = tokenTrieFor(vocab);
const model = loadModel(STORIES_260K, { vocabOnly: true });
const tokenize = (text: string): Int32Array => model.tokenize(text, { addSpecial: false, parseSpecial: false });

const tools = [
  {
    name: "get_weather",
    parameters: {
      type: "object",
      properties: { city: { type: "string", maxLength: 12 } },
      required: ["city"],
      additionalProperties: false,
    },
  },
  {
    name: "get_time",
    parameters: { type: "object", properties: { zone: { type: "integer", minimum: -12, maximum: 14 } }, required: ["zone"] },
  },
];

function constraintFor(style: ToolCallStyle, parallel: boolean) {
  const { dfa } = compileToolCallLanguage(tools, style, parallel, {});
  return regexConstraintFor(trie, dfa);
}

/** What of `text` the constraint lets through, token by token, and whether it ends complete. */
function write(make: ReturnType<typeof constraintFor>, text: string): { written: string; accepting: boolean } {
  const state = make(undefined);
  const bytes: number[] = [];
  const written = (): string => Buffer.from(bytes).toString("utf8");
  for (const token of tokenize(text)) {
    const mask = maskOf(state, 1000, vocab.size);
    if ((mask[token >>> 5]! & (1 << (token & 31))) === 0) return { written: written(), accepting: false };
    assert.ok(state.advance(token));
    bytes.push(...vocab.tokenBytes(token));
  }
  return { written: written(), accepting: state.isAccepting() };
}

// SentencePiece prefixes a space; the texts below start with one so that tokenize() spells them exactly.
test("hermes: text, text then calls, parallel calls are written; the reply splits back", () => {
  const make = constraintFor("hermes", true);
  const call1 = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  const call2 = '<tool_call>\n{"name": "get_time", "arguments": {"zone": -5}}\n</tool_call>';
  for (const text of [" Just text.", ` Let me check. ${call1}`, ` ${call1}\n${call2}`]) {
    const outcome = write(make, text);
    // SentencePiece writes one more space in front.
    assert.deepEqual(outcome, { written: ` ${text}`, accepting: true }, text);
  }
  const parsed = parseToolReply(` Let me check. ${call1}\n${call2}`, "hermes");
  assert.equal(parsed.content, " Let me check. ");
  assert.deepEqual(parsed.calls, [
    { name: "get_weather", arguments: '{"city":"Paris"}' },
    { name: "get_time", arguments: '{"zone":-5}' },
  ]);
  assert.deepEqual(parseToolReply(" plain", "hermes"), { content: " plain", calls: [] });
});

test("hermes: once the marker is written, only a valid call of a declared function", () => {
  const make = constraintFor("hermes", true);
  /** `text` is refused at `bad` at the latest: what got through never holds all of it. */
  const stuck = (text: string, bad: string): void => {
    const outcome = write(make, text);
    assert.equal(outcome.accepting, false, text);
    assert.ok(!outcome.written.includes(bad), `${text}: got through ${JSON.stringify(outcome.written)}`);
  };
  stuck(' <tool_call>\n{"name": "delete_all", "arguments": {}}\n</tool_call>', '"de');
  stuck(' <tool_call>\n{"name": "get_weather", "arguments": {"town": "x"}}\n</tool_call>', '{"to');
  stuck(' <tool_call>\n{"name": "get_time", "arguments": {"zone": 99}}\n</tool_call>', '"zone": 99');
  stuck(" a <tool_call> is mentioned in text", "<tool_call> ");
  stuck(" a <tool_call>\n{} is not a call", "{}");
  // A call must be closed before the reply may end.
  const open = write(make, ' <tool_call>\n{"name": "get_time", "arguments": {"zone": 1}}');
  assert.equal(open.accepting, false);
});

test("hermes without parallel calls: a second call cannot start", () => {
  const make = constraintFor("hermes", false);
  const call = '<tool_call>\n{"name": "get_time", "arguments": {"zone": 1}}\n</tool_call>';
  assert.equal(write(make, ` ${call}`).accepting, true);
  assert.equal(write(make, ` ${call}\n${call}`).accepting, false);
});

test("llama3: the reply is text not starting with {, or one call object", () => {
  const make = constraintFor("llama3", false);
  // stories260K's SentencePiece puts a space first: Llama 3's BPE would not, so check the DFA's side with parseToolReply.
  const call = '{"name": "get_weather", "parameters": {"city": "Oslo"}}';
  const parsed = parseToolReply(call, "llama3");
  assert.deepEqual(parsed, { content: null, calls: [{ name: "get_weather", arguments: '{"city":"Oslo"}' }] });
  assert.deepEqual(parseToolReply("Sunny.", "llama3"), { content: "Sunny.", calls: [] });
  assert.equal(write(make, " Sunny today.").accepting, true);
});
