// The per-operation time bound of constraint matchers: an operation past it throws
// ConstraintTooCostlyError and the matcher refuses every later operation; the compile worker's
// probe refuses a constraint whose first masks are too slow before the serving thread runs them;
// a request meeting the bound mid-way is a 422 and the constraint is refused afterwards.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { compileRegex } from "../src/regex/index.js";
import { compileGrammar, createGrammarAutomaton } from "../src/grammar/index.js";
import { DfaConstraintState, DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../src/constraint/index.js";
import { ConstraintTooCostlyError } from "../src/constraint/index.js";
import { ConstraintCache } from "../src/generate/index.js";
import { UnsatisfiableError } from "../src/generate/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { vocabFile } from "./support/paths.js";

const vocab = loadVocabulary(vocabFile("qwen2"));
const trie = tokenTrieFor(vocab);
/** Seconds of trie walks for its first budget question at 152k tokens (a 20k-state DFA of wide states). */
const COSTLY_PATTERN = "(?:[^x]{0,50}x){40}";

test("a regex operation past its limit throws, and the matcher refuses everything after", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex(COSTLY_PATTERN, { timeoutMs: 60_000 }));
  matcher.work.limitMs = 20;
  const state = new DfaConstraintState(matcher);
  const t0 = performance.now();
  assert.throws(() => state.minTokensToAccept(8), ConstraintTooCostlyError);
  const spent = performance.now() - t0;
  assert.ok(spent < 200, `the operation ran ${spent} ms past a 20 ms limit`);
  // Even a cheap question now fails: the memo may hold a half-made walk.
  assert.throws(() => state.mask(512), ConstraintTooCostlyError);
  assert.throws(() => new DfaConstraintState(matcher).advance(0), ConstraintTooCostlyError);
});

test("the same operations pass under a roomy limit (the bound is what refused them)", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex("[a-z]{2,8}@[a-z]{2,8}"));
  matcher.work.limitMs = 10_000;
  const state = new DfaConstraintState(matcher);
  assert.ok(state.minTokensToAccept(8) <= 8);
  assert.ok(state.mask(8).some((w) => w !== 0));
});

test("grammar operations are bounded too: lexer searches count, not only trie walks", () => {
  const grammar = compileGrammar("start: A\nA: /.{1000}/");
  const matcher = new GrammarTokenMatcher(trie, createGrammarAutomaton(grammar));
  matcher.work.limitMs = 20;
  const state = new GrammarConstraintState(matcher);
  const t0 = performance.now();
  assert.throws(() => {
    state.minTokensToAccept(8);
    state.mask(8);
  }, ConstraintTooCostlyError);
  assert.ok(performance.now() - t0 < 300);
  assert.throws(() => state.mask(2000), ConstraintTooCostlyError);
});

const cache = new ConstraintCache(trie, { vocabulary: vocab, maskTimeoutMs: 100, compileTimeoutMs: 10_000 });
after(() => cache.close());

test("the compile worker tries a new constraint's first masks and refuses a slow one before this thread runs it", async () => {
  await cache.regex("warm");
  const t0 = performance.now();
  await assert.rejects(
    cache.regex(COSTLY_PATTERN),
    (e: unknown) => e instanceof UnsatisfiableError && /first token masks/.test(e.message) && /TRELLIS_MASK_TIMEOUT_MS/.test(e.message),
  );
  assert.ok(performance.now() - t0 < 3000);
  const ok = await cache.grammar('start: "[" V ("," V)* "]"\nV: /[0-9]+/');
  assert.ok(ok.factory(undefined).minTokensToAccept(16) <= 16);
});

test("a constraint whose operation runs out during a request is refused afterwards", async () => {
  const entry = await cache.regex("[a-z]{1,6}(,[a-z]{1,6}){0,3}");
  // A healed prompt's first step walks the trie below its prefix: work no earlier request did.
  const state = entry.factory(new TextEncoder().encode("q"));
  const matcher = (state as DfaConstraintState).matcher;
  matcher.work.limitMs = -1; // the next charge is past the deadline
  let caught: unknown;
  try {
    state.writeMask(16, new Uint32Array(matcher.words));
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ConstraintTooCostlyError);
  const answer = cache.refuse(entry, caught);
  assert.ok(answer instanceof UnsatisfiableError && /TRELLIS_MASK_TIMEOUT_MS/.test(answer.message));
  await assert.rejects(cache.regex("[a-z]{1,6}(,[a-z]{1,6}){0,3}"), UnsatisfiableError);
});
