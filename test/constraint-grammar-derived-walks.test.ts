// Root walks derived from a body's (the key typed so far in an object whose other keys are free,
// a string's first character): the same masks, budget masks and counted work as walking each set
// (the `loopSlices: false` reference, which derives nothing), on a real vocabulary's trie.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GrammarConstraintState, GrammarTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { compileServedSchema } from "../src/compile/index.js";
import { ruleNetworkAutomaton } from "../src/grammar/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { singleByteTokens } from "./support/constraint-fixtures.js";
import { vocabFile } from "./support/paths.js";

test("derived root walks equal the walked ones: masks, budget masks, work", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const single = singleByteTokens(vocab);
  const schema = {
    type: "object",
    properties: {
      name: { type: "string" },
      note: { type: "string", minLength: 1 },
      tags: { type: "array", items: { type: "string", maxLength: 6 } },
    },
    required: ["name"],
    additionalProperties: true,
  };
  const served = compileServedSchema(schema, { whitespace: "default", strict: true, freeValuesAnyDepth: true });
  assert.equal(served.kind, "rules");
  const rules = (served as { rules: Parameters<typeof ruleNetworkAutomaton>[0]["rules"] }).rules;
  const derived = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }));
  const walked = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }), { loopSlices: false });
  const texts = [
    '{"name": "Ada", "note": "é z", "tags": ["a", "bcdef"], "nam": {"x": [1, "y"]}, "n": null}',
    '{"name": "", "tags": [], "notes": "free", "": true, "nZ": "\\n\\""}',
  ];
  for (const text of texts) {
    const a = new GrammarConstraintState(derived);
    const b = new GrammarConstraintState(walked);
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i <= bytes.length; i++) {
      const where = `${text.slice(0, i)}⟨here⟩`;
      for (const remaining of [1 << 20, 1, 2, 3, 5]) {
        assert.deepEqual(a.mask(remaining), b.mask(remaining), `${where} with ${remaining} tokens left`);
        assert.equal(derived.work.steps, walked.work.steps, `work charged at ${where} with ${remaining} tokens left`);
      }
      if (i === bytes.length) break;
      const token = single.get(bytes[i]!)!;
      assert.ok(a.advance(token) && b.advance(token), text.slice(0, i + 1));
    }
    assert.ok(a.isAccepting() && b.isAccepting(), text);
  }
  // Derived here (the keys' prefixes beside a free key, the note's first character), never there.
  assert.ok(derived.rootWalkCounts!.derived >= 10, JSON.stringify(derived.rootWalkCounts));
  assert.equal(walked.rootWalkCounts!.derived, 0);
});
