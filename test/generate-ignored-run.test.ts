// max_ignored_run: a grammar constraint allows runs of %ignore'd text up to the run asked for and
// no longer, whichever tokens spell them; each run has its own matcher (the cache keys on it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_IGNORED_RUN } from "../src/generate/index.js";
import { grammarConstraintFor } from "../src/compile/index.js";
import type { TokenConstraint } from "../src/constraint/index.js";
import { maskOf } from "./support/generate-harness.js";
import { tokenTrieFor } from "../src/constraint/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { vocabFile } from "./support/paths.js";

const vocab = loadVocabulary(vocabFile("gpt-2"));
const trie = tokenTrieFor(vocab);

/** gpt-2's token of every single byte. */
const byteToken = new Int32Array(256).fill(-1);
for (let id = 0; id < vocab.size; id++) {
  const bytes = vocab.tokenBytes(id);
  if (bytes.length === 1 && byteToken[bytes[0]!] === -1) byteToken[bytes[0]!] = id;
}
const allows = (c: TokenConstraint, token: number, vocabSize = vocab.size): boolean =>
  ((maskOf(c, 1000, vocabSize)[token >>> 5]! >>> (token & 31)) & 1) === 1;

/** Feeds `tokens` while each is in the mask; true when all went in and the text is complete. */
function accepts(c: TokenConstraint, tokens: number[], vocabSize = vocab.size): boolean {
  for (const t of tokens) {
    if (!allows(c, t, vocabSize)) return false;
    assert.ok(c.advance(t));
  }
  return c.isAccepting();
}

const bytesOf = (text: string): number[] => Array.from(Buffer.from(text, "utf8"), (b) => byteToken[b]!);

const LIST = `start: "[" ITEM ("," ITEM)* "]"\nITEM: /[a-z]+/\n%ignore " "\n`;

test("runs of ignored bytes up to max_ignored_run pass, one more is masked out", () => {
  for (const run of [0, 1, 3, MAX_IGNORED_RUN, 20, 64]) {
    const make = grammarConstraintFor(trie, LIST, run);
    for (let k = 0; k <= run + 2; k++) {
      const spaces = " ".repeat(k);
      const text = `[${spaces}ab,x${spaces}]`;
      assert.equal(accepts(make(undefined), bytesOf(text)), k <= run, `run ${run}: ${JSON.stringify(text)}`);
    }
    // At the limit, no token starting with whitespace is allowed; below it, the space is.
    const c = make(undefined);
    for (const t of bytesOf(`[ab${" ".repeat(run)}`)) assert.ok(c.advance(t));
    assert.equal(allows(c, byteToken[0x20]!), false, `run ${run}: a space past the limit`);
    const mask = maskOf(c, 1000, vocab.size);
    for (let id = 0; id < vocab.size; id++) {
      if (((mask[id >>> 5]! >>> (id & 31)) & 1) === 1)
        assert.notEqual(vocab.tokenBytes(id)[0], 0x20, `run ${run}: ${JSON.stringify(vocab.tokenText(id))}`);
    }
  }
});

test("multi-byte whitespace tokens count every byte of the run (qwen2)", () => {
  const qwen = loadVocabulary(vocabFile("qwen2"));
  const qwenTrie = tokenTrieFor(qwen);
  const idOf = (text: string): number => {
    const want = Buffer.from(text, "utf8");
    for (let id = 0; id < qwen.size; id++) if (Buffer.compare(Buffer.from(qwen.tokenBytes(id)), want) === 0) return id;
    throw new Error(`no qwen2 token ${JSON.stringify(text)}`);
  };
  const [open, four, three, a, close] = ["[", "    ", "   ", "a", "]"].map(idOf) as [number, number, number, number, number];
  const run = (n: number, tokens: number[]): boolean => accepts(grammarConstraintFor(qwenTrie, LIST, n)(undefined), tokens, qwen.size);
  assert.equal(run(8, [open, four, four, a, close]), true);
  assert.equal(run(7, [open, four, four, a, close]), false);
  assert.equal(run(7, [open, four, three, a, close]), true);
  // Runs on both sides of an item are separate runs.
  assert.equal(run(4, [open, four, a, four, close]), true);
});

test("pretty-printed JSON needs a longer run than the default", () => {
  const json = `?start: value
?value: object | array | ESCAPED_STRING | SIGNED_NUMBER
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
`;
  // Depth two with four-space indents: a newline and eight spaces, nine ignored bytes.
  const text = `{\n    "a": {\n        "b": 1\n    }\n}`;
  assert.equal(accepts(grammarConstraintFor(trie, json)(undefined), bytesOf(text)), false);
  assert.equal(accepts(grammarConstraintFor(trie, json, 16)(undefined), bytesOf(text)), true);
  assert.equal(accepts(grammarConstraintFor(trie, json, 0)(undefined), bytesOf(`{"a":{"b":1}}`)), true);
  assert.equal(accepts(grammarConstraintFor(trie, json, 0)(undefined), bytesOf(`{"a": 1}`)), false);
});
