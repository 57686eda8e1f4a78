// Precomputing a matcher's masks ahead (what the server does for a new pattern) gives exactly the
// masks the lazy first visits give, and stops when its time budget is spent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileRegex } from "../src/regex/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { SMALL_LIST_IDS } from "../src/constraint/index.js";
import { vocabFile } from "./support/paths.js";
import { bruteMinTokens, bruteTransitions, maskCount, maskDiff } from "./support/constraint-fixtures.js";

const vocab = loadVocabulary(vocabFile("gpt-2"));
const trie = tokenTrieFor(vocab);

test("precomputed masks equal lazily computed ones for every reachable state", () => {
  for (const pattern of ["[a-z0-9.]+@[a-z]+\\.(com|org)", '\\{"name": "[^"\\n]*", "age": [0-9]{1,3}\\}', "(yes|no|maybe)"]) {
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

test("narrow states keep token ids until read; small ones share one rewritten mask; all equal brute force", () => {
  const dfa = compileRegex("(positive|negative|neutral|question|request|conquest|[0-9]{1,4})!?");
  const matcher = new DfaTokenMatcher(trie, dfa);
  // Token counts, successors and distances need no bitset (but a mask derived from a larger
  // state's, like the digits after the first one, builds that state's).
  const counts = Array.from({ length: dfa.numStates }, (_, s) => matcher.allowedTokenCount(s));
  for (let s = 0; s < dfa.numStates; s++) matcher.minTokensToAccept(s);
  const large = counts.filter((c) => c > SMALL_LIST_IDS && c < matcher.words).length;
  assert.ok(matcher.listsMaterialized < large, `${matcher.listsMaterialized} bitsets before any read`);
  assert.equal(matcher.smallListWrites, 0);
  const small = counts.filter((c) => c > 0 && c <= SMALL_LIST_IDS).length;
  assert.ok(large > 0 && small > 2, `${large} large and ${small} small narrow states`);
  const trans = bruteTransitions(dfa, vocab);
  const minTok = bruteMinTokens(dfa, trans);
  // Backwards, then forwards again: a small list's mask is mostly read right after another one's,
  // so bits left over from the previous list would show.
  const order = [
    ...Array.from({ length: dfa.numStates }, (_, s) => dfa.numStates - 1 - s),
    ...Array.from({ length: dfa.numStates }, (_, s) => s),
  ];
  for (const s of order) {
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
  assert.ok(built > 0 && built <= large, `${built} bitsets built for ${large} large states`);
  assert.ok(matcher.smallListWrites > small, `${matcher.smallListWrites} small-list writes`);
  // Precomputing builds the large ones ahead and none for the small ones: reading afterwards builds none.
  const eager = new DfaTokenMatcher(trie, dfa);
  assert.equal(eager.precompute(10_000), dfa.numStates);
  assert.equal(eager.listsMaterialized, built);
  assert.equal(eager.smallListWrites, 0);
  for (let s = 0; s < dfa.numStates; s++) assert.deepEqual(eager.mask(s), matcher.mask(s), `precomputed state ${s}`);
  assert.equal(eager.listsMaterialized, built);
});
