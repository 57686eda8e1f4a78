// Precomputing a matcher's masks ahead (what the server does for a new pattern) gives exactly the
// masks the lazy first visits give, and stops when its time budget is spent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileRegex } from "../src/regex/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { vocabFile } from "./helpers/paths.js";
import { bruteMinTokens, bruteTransitions, maskCount, maskDiff } from "./constraint-fixtures.js";

const vocab = loadVocabulary(vocabFile("gpt-2"));
const trie = tokenTrieFor(vocab);

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

test("narrow states keep token ids until their mask is read, then equal brute force", () => {
  const dfa = compileRegex("(positive|negative|neutral|question|request|conquest)!?");
  const matcher = new DfaTokenMatcher(trie, dfa);
  // Token counts, successors and distances need no bitset.
  const counts = Array.from({ length: dfa.numStates }, (_, s) => matcher.allowedTokenCount(s));
  for (let s = 0; s < dfa.numStates; s++) matcher.minTokensToAccept(s);
  assert.equal(matcher.listsMaterialized, 0);
  const trans = bruteTransitions(dfa, vocab);
  const minTok = bruteMinTokens(dfa, trans);
  for (let s = dfa.numStates - 1; s >= 0; s--) {
    const row = trans[s]!;
    const live = (id: number): boolean => row[id]! >= 0 && minTok[row[id]!] !== Infinity;
    assert.deepEqual(maskDiff(matcher.mask(s), vocab.size, live), [], `full mask of state ${s}`);
    assert.equal(maskCount(matcher.mask(s)), counts[s], `token count of state ${s}`);
    // A budget of exactly the state's distance: the budgeted mask is built from the full one.
    const r = minTok[s]!;
    const fits = (id: number): boolean => row[id]! >= 0 && minTok[row[id]!]! <= r - 1;
    assert.deepEqual(maskDiff(matcher.mask(s, r), vocab.size, fits), [], `mask(${s}, ${r})`);
  }
  const built = matcher.listsMaterialized;
  assert.ok(built > 0 && built <= dfa.numStates, `${built} bitsets built`);
  // Precomputing builds them ahead: reading afterwards builds none.
  const eager = new DfaTokenMatcher(trie, dfa);
  assert.equal(eager.precompute(10_000), dfa.numStates);
  assert.equal(eager.listsMaterialized, built);
  for (let s = 0; s < dfa.numStates; s++) assert.deepEqual(eager.mask(s), matcher.mask(s), `precomputed state ${s}`);
  assert.equal(eager.listsMaterialized, built);
});
