// Precomputing a matcher's masks ahead (what the server does for a new pattern) gives exactly the
// masks the lazy first visits give, and stops when its time budget is spent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileRegex } from "../src/regex/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { vocabFile } from "./helpers/paths.js";

const trie = tokenTrieFor(loadVocabulary(vocabFile("gpt-2")));

test("precomputed masks equal lazily computed ones for every reachable state", () => {
  for (const pattern of ['[a-z0-9.]+@[a-z]+\\.(com|org)', '\\{"name": "[^"\\n]*", "age": [0-9]{1,3}\\}', "(yes|no|maybe)"]) {
    const dfa = compileRegex(pattern);
    const eager = new DfaTokenMatcher(trie, dfa);
    const visited = eager.precompute(10_000);
    assert.ok(visited > 1, `${pattern}: ${visited} states precomputed`);
    const lazy = new DfaTokenMatcher(trie, dfa);
    for (let s = 0; s < dfa.numStates; s++) {
      assert.deepEqual(eager.mask(s), lazy.mask(s), `${pattern}: state ${s}`);
      assert.deepEqual(eager.tokenSuccessors(s), lazy.tokenSuccessors(s), `${pattern}: successors of ${s}`);
    }
  }
});

test("a zero budget precomputes nothing beyond what is asked", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex("[a-z]+( [a-z]+)*"));
  assert.equal(matcher.precompute(0), 0);
});
