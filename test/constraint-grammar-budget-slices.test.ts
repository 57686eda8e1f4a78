// Budget masks (a tight max_new_tokens) take the regions of names from slices, at the root and
// below the trie's " " child: the same masks and the same counted work as walking them node by
// node (the `loopSlices: false` reference), on a real vocabulary whose words follow a space.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GrammarConstraintState, GrammarTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { compileGrammar, createGrammarAutomaton } from "../src/grammar/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { singleByteTokens } from "./support/constraint-fixtures.js";
import { vocabFile } from "./support/paths.js";

test("budget masks over names taken from slices equal the walked ones: masks, work", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const single = singleByteTokens(vocab);
  const grammar = `?start: sum
?sum: product | sum "+" product | sum "-" product
?product: atom | product "*" atom
?atom: NUMBER | NAME | "(" sum ")" | "SELECT" NAME
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`;
  const automaton = createGrammarAutomaton(compileGrammar(grammar), { maxIgnoredRun: 8 });
  const sliced = new GrammarTokenMatcher(trie, automaton);
  const whole = new GrammarTokenMatcher(trie, automaton, { loopSlices: false });
  // The lexer steps the shared automaton makes are charged to whichever matcher makes them first.
  sliced.work.source = null;
  whole.work.source = null;
  const text = "(alpha + beta_2) * SELECT gamma - 10 * (delta - x)";
  const a = new GrammarConstraintState(sliced);
  const b = new GrammarConstraintState(whole);
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i++) {
    const where = `${text.slice(0, i)}⟨here⟩`;
    for (const remaining of [1, 2, 3, 5]) {
      assert.deepEqual(a.mask(remaining), b.mask(remaining), `${where} with ${remaining} tokens left`);
      assert.equal(sliced.work.steps, whole.work.steps, `work charged at ${where} with ${remaining} tokens left`);
    }
    const token = single.get(bytes[i]!)!;
    assert.ok(a.advance(token) && b.advance(token), text.slice(0, i + 1));
  }
  assert.ok(sliced.rootWalkCounts!.budgetRegionsTaken >= 1, JSON.stringify(sliced.rootWalkCounts));
  assert.equal(whole.rootWalkCounts!.budgetRegionsTaken, 0);
});
