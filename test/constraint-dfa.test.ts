// The regex token matcher (DfaTokenMatcher, DfaConstraintState) against brute force: masks, token
// distances and budgets for every state, over hand-built and random DFAs with small vocabularies
// and over real vocabularies (gpt-2, qwen2); prompt-boundary healing's forced prefix; budgeted
// generation always ends in a full match; shared masks, shared walks and derived masks stay exact.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { TokenTrie, tokenTrieFor } from "../src/constraint/index.js";
import { DfaTokenMatcher, dfaTokenMatcherFor } from "../src/constraint/index.js";
import { DfaConstraintState, PREFIX_PENDING } from "../src/constraint/index.js";
import { walkTrie } from "../src/constraint/index.js";
import type { ByteDfa, VocabularyBytes } from "../src/constraint/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { compileRegex } from "../src/regex/index.js";
import { vocabFile } from "./support/paths.js";
import {
  bruteMinTokens,
  bruteTransitions,
  finishDfa,
  makeVocab,
  maskCount,
  maskDiff,
  maskHas,
  randomDfa,
  rng,
  runDfa,
} from "./support/constraint-fixtures.js";

/** Full check of one (DFA, vocabulary) pair against brute force, for every state and budget. */
function checkAgainstBruteForce(dfa: ByteDfa, vocab: VocabularyBytes, trie: TokenTrie, label: string): void {
  checkAgainstBruteForceWith(dfa, vocab, trie, label, {});
  checkAgainstBruteForceWith(dfa, vocab, trie, `${label} (budget walks)`, { maxMinorSpans: 0 });
}

function checkAgainstBruteForceWith(
  dfa: ByteDfa,
  vocab: VocabularyBytes,
  trie: TokenTrie,
  label: string,
  opts: { maxMinorSpans?: number },
): void {
  const trans = bruteTransitions(dfa, vocab);
  const minTok = bruteMinTokens(dfa, trans);
  const matcher = new DfaTokenMatcher(trie, dfa, opts);
  const finite = minTok.filter((d) => d !== Infinity);
  const maxBudget = (finite.length ? Math.max(...finite) : 0) + 2;
  // Visit states in a shuffled-ish order so lazily computed distances start from different places.
  const order = [...Array(dfa.numStates).keys()].reverse();
  for (const s of order) {
    const row = trans[s]!;
    // Unbounded budget: live tokens (whose target can still reach acceptance with whole tokens).
    const full = matcher.mask(s);
    const wrongFull = maskDiff(full, vocab.size, (id) => row[id]! >= 0 && minTok[row[id]!] !== Infinity);
    assert.deepEqual(wrongFull, [], `${label}: full mask of state ${s}`);
    assert.equal(matcher.minTokensToAccept(s), minTok[s], `${label}: minTokens(${s})`);
    for (let r = 0; r <= maxBudget; r++) {
      const m = matcher.mask(s, r);
      const expected = (id: number): boolean => row[id]! >= 0 && minTok[row[id]!]! <= r - 1;
      assert.deepEqual(maskDiff(m, vocab.size, expected), [], `${label}: mask(${s}, remaining=${r})`);
      let any = false;
      for (let id = 0; id < vocab.size && !any; id++) any = expected(id);
      assert.equal(matcher.hasAnyToken(s, r), any, `${label}: hasAnyToken(${s}, ${r})`);
      assert.equal(matcher.canAcceptWithin(s, r), minTok[s]! <= r, `${label}: canAcceptWithin(${s}, ${r})`);
    }
    for (let id = 0; id < vocab.size; id++) assert.equal(matcher.advance(s, id), row[id], `${label}: advance(${s}, ${id})`);
    // With a cap: a number in [exact, cap] when the match fits, else Infinity; minTokensAtLeast
    // exact up to its cap, else cap + 1 (fresh matchers, so the bounds and the depth-bounded
    // search run before any exact distance is known).
    for (let cap = 0; cap <= maxBudget; cap++) {
      const v = new DfaTokenMatcher(trie, dfa, opts).minTokensToAccept(s, cap);
      if (minTok[s]! <= cap) assert.ok(v >= minTok[s]! && v <= cap, `${label}: minTokensToAccept(${s}, cap ${cap}) = ${v}`);
      else assert.equal(v, Infinity, `${label}: minTokensToAccept(${s}, cap ${cap})`);
      const atLeast = new DfaTokenMatcher(trie, dfa, opts).minTokensAtLeast(s, cap);
      assert.equal(atLeast, minTok[s]! <= cap ? minTok[s] : cap + 1, `${label}: minTokensAtLeast(${s}, cap ${cap})`);
    }
  }
}

test("hand-built DFA for [0-9]{3} over a digit vocabulary: budgets in tokens, not bytes", () => {
  // Tokens: each digit, "12", "345", "x".
  const vocab = makeVocab(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "12", "345", "x"]);
  const byteClass = new Uint8Array(256).fill(1);
  for (let b = 0x30; b <= 0x39; b++) byteClass[b] = 0;
  // States 0..3 = digits so far; 3 accepting.
  const table = Int32Array.from([1, -1, 2, -1, 3, -1, -1, -1]);
  const dfa = finishDfa(4, 2, byteClass, table, Uint8Array.from([0, 0, 0, 1]), 0)!;
  const trie = TokenTrie.build(vocab);
  const m = new DfaTokenMatcher(trie, dfa);
  assert.equal(m.minTokensToAccept(dfa.start), 1, '"345" does it in one token');
  const full = m.mask(dfa.start);
  assert.equal(maskCount(full), 12);
  assert.ok(!maskHas(full, 12));
  // One token left: only the 3-digit token completes the match.
  const one = m.mask(dfa.start, 1);
  assert.deepEqual(
    maskDiff(one, vocab.size, (id) => id === 11),
    [],
  );
  // Two left: "12" then a digit, or a digit then "12", or "345".
  const two = m.mask(dfa.start, 2);
  assert.deepEqual(
    maskDiff(two, vocab.size, (id) => id === 10 || id === 11 || id < 10),
    [],
  );
  const after12 = m.advance(dfa.start, 10);
  assert.equal(m.minTokensToAccept(after12), 1);
  assert.deepEqual(
    maskDiff(m.mask(after12, 1), vocab.size, (id) => id < 10),
    [],
  );
  assert.equal(m.hasAnyToken(m.advance(after12, 3), 5), false, "accepting end state has no continuation");
  assert.equal(m.isAccepting(m.advance(after12, 3)), true);
  checkAgainstBruteForce(dfa, vocab, trie, "digits");
});

test("a state reachable in bytes but not in whole tokens is masked out (no byte tokens)", () => {
  // Pattern "ab" but the vocabulary has only "a" and "abc": "a" leads to a dead end.
  const vocab = makeVocab(["a", "abc", "b"].slice(0, 2));
  const byteClass = new Uint8Array(256).fill(2);
  byteClass[0x61] = 0;
  byteClass[0x62] = 1;
  const dfa = finishDfa(3, 3, byteClass, Int32Array.from([1, -1, -1, -1, 2, -1, -1, -1, -1]), Uint8Array.from([0, 0, 1]), 0)!;
  const m = new DfaTokenMatcher(TokenTrie.build(vocab), dfa);
  assert.equal(m.minTokensToAccept(dfa.start), Infinity);
  assert.equal(m.hasAnyToken(dfa.start), false);
  assert.equal(maskCount(m.mask(dfa.start)), 0);
  assert.equal(m.canAcceptWithin(dfa.start, 100), false);
});

test("random DFAs × a small random vocabulary (with and without byte tokens) equal brute force", () => {
  const rand = rng(12345);
  const alphabet = "aeiouxyzAB01 \n.,";
  for (let round = 0; round < 60; round++) {
    const tokens: string[] = [];
    const withBytes = round % 2 === 0;
    if (withBytes) for (const ch of alphabet) tokens.push(ch);
    const n = 20 + Math.floor(rand() * 40);
    for (let i = 0; i < n; i++) {
      let t = "";
      const len = 1 + Math.floor(rand() * 5);
      for (let j = 0; j < len; j++) t += alphabet[Math.floor(rand() * alphabet.length)];
      tokens.push(t);
    }
    const vocab = makeVocab(tokens);
    const trie = TokenTrie.build(vocab);
    assert.equal(trie.everyByteIsToken, false);
    const dfa = randomDfa(rand, 7);
    checkAgainstBruteForce(dfa, vocab, trie, `round ${round}`);
  }
});

test("the generic walkTrie with a ByteAutomaton gives the specialized masks", () => {
  const rand = rng(7);
  const vocab = makeVocab(["ab", "abc", "b", "ba", "c", "cab", "bb", "a"]);
  const trie = TokenTrie.build(vocab);
  for (let round = 0; round < 30; round++) {
    const dfa = randomDfa(rand, 5);
    const m = new DfaTokenMatcher(trie, dfa);
    const automaton = { step: (s: number, b: number) => dfa.next[s * dfa.numClasses + dfa.byteClass[b]!]! };
    for (let s = 0; s < dfa.numStates; s++) {
      const mask = new Uint32Array(m.words);
      const targets = new Int32Array(vocab.size).fill(-1);
      const count = walkTrie(trie, automaton, s, 0, mask, (from, to, state) => {
        for (let k = from; k < to; k++) targets[trie.tokenIds[k]!] = state;
      });
      assert.equal(count, maskCount(mask));
      // Specialized mask additionally drops dead-end targets (no byte tokens here), so compare
      // the live sets: every specialized token is in the generic one with the same target.
      for (let id = 0; id < vocab.size; id++) {
        assert.equal(targets[id], m.advance(s, id));
        assert.equal(maskHas(mask, id), m.advance(s, id) >= 0);
      }
    }
  }
});

test("forced prefix (prompt-boundary healing): first token starts with the prefix", () => {
  const vocab = makeVocab(["a", "b", " ", " a", " ab", " b", "ab", " abb", "b ", " "]);
  // Pattern over {a, b}: a b* (state 0 -a-> 1 accepting, 1 -b-> 1).
  const byteClass = new Uint8Array(256).fill(2);
  byteClass[0x61] = 0;
  byteClass[0x62] = 1;
  const dfa = finishDfa(2, 3, byteClass, Int32Array.from([1, -1, -1, -1, 1, -1]), Uint8Array.from([0, 1]), 0)!;
  const trie = TokenTrie.build(vocab);
  const m = dfaTokenMatcherFor(trie, dfa);
  assert.equal(dfaTokenMatcherFor(trie, dfa), m, "matchers are shared per (trie, dfa)");
  const st = new DfaConstraintState(m, new TextEncoder().encode(" "));
  assert.equal(st.state, PREFIX_PENDING);
  assert.equal(st.isAccepting(), false);
  // Tokens starting with " " whose rest matches a prefix of a b*: " ", " a", " ab", " abb", and
  // the duplicate " " (id 9). " b" is out: "b" is not a live start.
  assert.deepEqual(
    maskDiff(st.mask(), vocab.size, (id) => [2, 3, 4, 7, 9].includes(id)),
    [],
  );
  // Budget 1: the token must complete the match.
  assert.deepEqual(
    maskDiff(st.mask(1), vocab.size, (id) => [3, 4, 7].includes(id)),
    [],
  );
  assert.equal(st.minTokensToAccept(), 1);
  assert.equal(st.canAcceptWithin(1), true);
  assert.equal(st.canAcceptWithin(0), false);
  assert.equal(st.advance(5), false, '" b" is rejected');
  assert.equal(st.state, PREFIX_PENDING);
  assert.equal(st.advance(2), true);
  assert.equal(st.state, dfa.start);
  assert.equal(st.minTokensToAccept(), 1);
  assert.equal(st.advance(6), true, '"ab"');
  assert.equal(st.isAccepting(), true);
  assert.equal(st.advance(0), false, '"a" after "ab" is rejected');
  // Prefix that no token extends: nothing allowed.
  const none = new DfaConstraintState(m, new TextEncoder().encode("zz"));
  assert.equal(none.hasAnyToken(), false);
  assert.equal(none.minTokensToAccept(), Infinity);
  // No prefix: the plain start state.
  assert.equal(new DfaConstraintState(m).state, dfa.start);
});

const realVocabs = ["gpt-2", "qwen2"].filter((n) => existsSync(vocabFile(n)));
for (const name of realVocabs) {
  test(`random DFAs × real vocabulary ${name}: lazy masks, distances and budgets equal brute force`, () => {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    const rand = rng(name === "qwen2" ? 99 : 42);
    const rounds = name === "qwen2" ? 6 : 10;
    for (let round = 0; round < rounds; round++) {
      const dfa = randomDfa(rand, 6);
      checkAgainstBruteForceSampled(dfa, vocab, trie, `${name} round ${round}`);
    }
  });
}

/**
 * Like checkAgainstBruteForce but cheaper for big vocabularies: exact per-state masks and
 * distances, and budgets checked at each distinct threshold (masks are constant between them).
 */
function checkAgainstBruteForceSampled(dfa: ByteDfa, vocab: VocabularyBytes, trie: TokenTrie, label: string): void {
  const trans = bruteTransitions(dfa, vocab);
  const minTok = bruteMinTokens(dfa, trans);
  for (const opts of [{}, { maxMinorSpans: 0 }]) checkSampledWith(dfa, vocab, trie, label, trans, minTok, opts);
}

function checkSampledWith(
  dfa: ByteDfa,
  vocab: VocabularyBytes,
  trie: TokenTrie,
  label: string,
  trans: Int32Array[],
  minTok: number[],
  opts: { maxMinorSpans?: number },
): void {
  const matcher = new DfaTokenMatcher(trie, dfa, opts);
  for (let s = dfa.numStates - 1; s >= 0; s--) {
    const row = trans[s]!;
    assert.equal(matcher.minTokensToAccept(s), minTok[s], `${label}: minTokens(${s})`);
    const budgets = new Set<number>([0, 1, 2, 3, 1 << 20]);
    for (let id = 0; id < vocab.size; id++) if (row[id]! >= 0) budgets.add(minTok[row[id]!]! + 1).add(minTok[row[id]!]!);
    for (const r of budgets) {
      const m = matcher.mask(s, r);
      const wrong = maskDiff(m, vocab.size, (id) => row[id]! >= 0 && minTok[row[id]!]! <= r - 1);
      assert.deepEqual(wrong, [], `${label}: mask(${s}, ${r})`);
    }
  }
  // Advancing by a token's bytes agrees with running the DFA.
  for (let id = 0; id < vocab.size; id += 97) {
    const t = matcher.advance(dfa.start, id);
    const b = trie.isGenerable(id) ? runDfa(dfa, dfa.start, trie.tokenBytes(id)) : -1;
    assert.equal(t, b);
  }
}

/** Real patterns (UTF-8 structure, self-loops, counted repeats) × real vocabularies vs brute force. */
const REAL_PATTERNS = [
  "[^\\n]*",
  "[a-z]+( [a-z]+)*",
  "[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}",
  "[0-9]{4}-[0-9]{2}-[0-9]{2}",
  "(positive|negative|neutral)",
  '"[^"\\\\]*"',
  "[\u00e0-\u00ff ]{1,6}",
  "(?s).{0,3}",
  "[\u4e00-\u9fff]+",
  " ?[A-Z][a-z]{2,8}",
];
for (const name of realVocabs) {
  test(`real patterns × real vocabulary ${name} equal brute force`, () => {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    for (const pattern of REAL_PATTERNS) {
      const dfa = compileRegex(pattern);
      if (dfa.numStates > 40) continue; // keeps brute force cheap
      checkAgainstBruteForceSampled(dfa, vocab, trie, `${name} /${pattern}/`);
    }
  });
}

/**
 * The core promise, as a property: sampling any allowed token at every step under a budget
 * always ends in a full match — never a truncated half-match — whenever the start fits the budget.
 */
function randomGenerations(matcher: DfaTokenMatcher, vocabSize: number, rand: () => number, trials: number, label: string): void {
  const allowed: number[] = [];
  for (let trial = 0; trial < trials; trial++) {
    const budget = 1 + Math.floor(rand() * 12);
    const st = new DfaConstraintState(matcher);
    if (!st.canAcceptWithin(budget)) {
      assert.ok(st.minTokensToAccept() > budget, label);
      continue;
    }
    for (let used = 0; used < budget; used++) {
      if (st.isAccepting() && rand() < 0.3) break;
      const mask = st.mask(budget - used);
      allowed.length = 0;
      for (let id = 0; id < vocabSize; id++) if (maskHas(mask, id)) allowed.push(id);
      assert.equal(st.hasAnyToken(budget - used), allowed.length > 0, `${label}: hasAnyToken agrees with the mask`);
      if (allowed.length === 0) break;
      const tok = allowed[Math.floor(rand() * allowed.length)]!;
      assert.equal(st.advance(tok), true);
      assert.ok(st.canAcceptWithin(budget - used - 1), `${label}: still completable after token ${tok}`);
    }
    assert.equal(st.isAccepting(), true, `${label}: trial ${trial} (budget ${budget}) ended in a full match`);
  }
}

test("property: budgeted generation always ends in a full match (random DFAs, small vocabularies)", () => {
  const rand = rng(2024);
  const alphabet = "abcxy01 ";
  for (let round = 0; round < 40; round++) {
    const tokens: string[] = round % 2 === 0 ? [...alphabet] : [];
    for (let i = 0; i < 30; i++) {
      let t = "";
      const len = 1 + Math.floor(rand() * 4);
      for (let j = 0; j < len; j++) t += alphabet[Math.floor(rand() * alphabet.length)];
      tokens.push(t);
    }
    const vocab = makeVocab(tokens);
    const matcher = new DfaTokenMatcher(TokenTrie.build(vocab), randomDfa(rand, 8));
    randomGenerations(matcher, vocab.size, rand, 30, `round ${round}`);
  }
});

if (realVocabs.includes("qwen2")) {
  test("property: budgeted generation always ends in a full match (real patterns, qwen2)", () => {
    const vocab = loadVocabulary(vocabFile("qwen2"));
    const trie = tokenTrieFor(vocab);
    const rand = rng(5);
    for (const pattern of [
      "[0-9]{4}-[0-9]{2}-[0-9]{2}",
      "(positive|negative|neutral)",
      "[a-z]{3,12}@[a-z]{2,8}\\.(com|org)",
      '\\{"n": [0-9]{1,3}\\}',
    ]) {
      randomGenerations(new DfaTokenMatcher(trie, compileRegex(pattern)), vocab.size, rand, 25, `/${pattern}/`);
    }
  });
}

test("identical masks of different states are stored once", () => {
  // [a-z]{0,40}: states 0..40 (all accepting); tokens up to 5 letters long, so every state with
  // at least 5 letters left has the same mask.
  const tokens = ["a", "b", "ab", "abc", "abcd", "abcde", "bb", "ccccc", "0"];
  const vocab = makeVocab(tokens);
  const byteClass = new Uint8Array(256).fill(1);
  for (let b = 0x61; b <= 0x7a; b++) byteClass[b] = 0;
  const n = 41;
  const table = new Int32Array(n * 2).fill(-1);
  for (let s = 0; s < n - 1; s++) table[s * 2] = s + 1;
  const dfa = finishDfa(n, 2, byteClass, table, new Uint8Array(n).fill(1), 0)!;
  const m = new DfaTokenMatcher(TokenTrie.build(vocab), dfa);
  assert.equal(m.mask(0), m.mask(35), "same bits → same object");
  assert.notEqual(m.mask(0), m.mask(37));
  assert.deepEqual(
    maskDiff(m.mask(37), vocab.size, (id) => tokens[id]!.length <= 3 && id !== 8),
    [],
  );
  assert.deepEqual(
    maskDiff(m.mask(0), vocab.size, (id) => id !== 8),
    [],
  );
});

if (realVocabs.includes("qwen2")) {
  test("forced prefix on qwen2 equals brute force (first token = prefix · pattern start)", () => {
    const vocab = loadVocabulary(vocabFile("qwen2"));
    const trie = tokenTrieFor(vocab);
    const enc = new TextEncoder();
    const cases: [string, string][] = [
      [" ?[A-Z][a-z]{2,8}", " "],
      ["[0-9]{4}-[0-9]{2}-[0-9]{2}", "2"],
      ["[^\\n]*", "\n"],
      ["(positive|negative)", "po"],
    ];
    for (const [pattern, prefixText] of cases) {
      const dfa = compileRegex(pattern);
      const matcher = new DfaTokenMatcher(trie, dfa);
      const prefix = enc.encode(prefixText);
      const target = (id: number): number => {
        if (!trie.isGenerable(id)) return -1;
        const bytes = trie.tokenBytes(id);
        if (bytes.length < prefix.length || prefix.some((b, i) => bytes[i] !== b)) return -1;
        return runDfa(dfa, dfa.start, bytes.subarray(prefix.length));
      };
      const targets = Int32Array.from({ length: vocab.size }, (_, id) => target(id));
      let best = Infinity;
      for (const t of targets) if (t >= 0) best = Math.min(best, matcher.minTokensToAccept(t) + 1);
      for (const remaining of [1, 2, 3, 5, 1000]) {
        const st = new DfaConstraintState(matcher, prefix);
        const mask = st.mask(remaining);
        const expected = (id: number): boolean => targets[id]! >= 0 && matcher.minTokensToAccept(targets[id]!) <= remaining - 1;
        assert.deepEqual(
          maskDiff(mask, vocab.size, expected),
          [],
          `/${pattern}/ prefix ${JSON.stringify(prefixText)} remaining ${remaining}`,
        );
        assert.equal(st.minTokensToAccept(), best);
        const capped = new DfaConstraintState(new DfaTokenMatcher(trie, dfa), prefix).minTokensToAccept(remaining);
        if (best <= remaining) assert.ok(capped >= best && capped <= remaining, `capped ${capped} best ${best} cap ${remaining}`);
        else assert.equal(capped, Infinity);
        const atLeast = new DfaConstraintState(new DfaTokenMatcher(trie, dfa), prefix).minTokensAtLeast(remaining);
        assert.equal(atLeast, best <= remaining ? best : remaining + 1, `atLeast cap ${remaining} best ${best}`);
      }
      // Advancing follows the same rule.
      const st = new DfaConstraintState(matcher, prefix);
      for (let id = 0; id < vocab.size; id += 37) {
        const probe = new DfaConstraintState(matcher, prefix);
        assert.equal(probe.advance(id), targets[id]! >= 0, `advance ${id}`);
        if (targets[id]! >= 0) assert.equal(probe.state, targets[id]);
      }
      assert.equal(st.state, PREFIX_PENDING);
    }
  });
}

test("states with the same live structure share one walk, and their masks stay exact", () => {
  const vocab = loadVocabulary(vocabFile(realVocabs[0] ?? "gpt-2"));
  const trie = tokenTrieFor(vocab);
  for (const pattern of ["[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}", "[a-z]{0,300}", "(ab|cd){1,70}x?"]) {
    const dfa = compileRegex(pattern);
    const trans = bruteTransitions(dfa, vocab);
    const minTok = bruteMinTokens(dfa, trans);
    const matcher = new DfaTokenMatcher(trie, dfa);
    // mask() first (the sharing path), with a large budget, then a budget just above each bound.
    for (let s = 0; s < dfa.numStates; s++) {
      const row = trans[s]!;
      assert.deepEqual(
        maskDiff(matcher.mask(s, 1 << 20), vocab.size, (id) => row[id]! >= 0),
        [],
        `/${pattern}/ state ${s}`,
      );
    }
    assert.ok(matcher.statesShared > 0, `/${pattern}/: some state reused another's walk`);
    assert.ok(matcher.statesComputed < dfa.numStates);
    // Without the partition (as schemas' matchers are made): no sharing, the same masks.
    const unshared = new DfaTokenMatcher(trie, dfa, { shareEquivalentStates: false });
    for (let s = 0; s < dfa.numStates; s++) {
      const row = trans[s]!;
      assert.deepEqual(
        maskDiff(unshared.mask(s, 1 << 20), vocab.size, (id) => row[id]! >= 0),
        [],
        `/${pattern}/ unshared ${s}`,
      );
    }
    assert.equal(unshared.statesShared, 0);
    for (let s = 0; s < dfa.numStates; s++) {
      const row = trans[s]!;
      for (const r of [1, 2, 3, 8]) {
        const expected = (id: number): boolean => row[id]! >= 0 && minTok[row[id]!]! <= r - 1;
        assert.deepEqual(maskDiff(matcher.mask(s, r), vocab.size, expected), [], `/${pattern}/ mask(${s}, ${r})`);
      }
    }
  }
});

test("string bodies and free text: masks from the per-byte token lists equal brute force, successors and budgets included", () => {
  for (const name of realVocabs) {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    // The last: the key's first characters lead into the free key's body from a state that is no
    // loop itself (entryComplementMask).
    for (const pattern of ['"[^"\\\\\\n]*", [0-9]', "[^\\n]*\\n[a-z]", "(?s)[^<]*<", '\\{"(ab": 1|[^"\\\\\\n]*": 2)\\}']) {
      const dfa = compileRegex(pattern);
      const probe = new DfaTokenMatcher(trie, dfa);
      for (let s = 0; s < dfa.numStates; s++) probe.tokenSuccessors(s);
      assert.ok(probe.statesListed > 0, `${name} /${pattern}/: a broad state used the token lists`);
      if (pattern.startsWith("\\{")) {
        assert.ok(probe.statesEntered > 0, `${name} /${pattern}/: a state in front of the body used them`);
        // The probe's own masks and successors (those walks' results), against every token run.
        const trans = bruteTransitions(dfa, vocab);
        for (let s = 0; s < dfa.numStates; s++) {
          const row = trans[s]!;
          assert.deepEqual(
            maskDiff(probe.mask(s, 1 << 20), vocab.size, (id) => row[id]! >= 0),
            [],
            `${name} /${pattern}/ state ${s}`,
          );
          const successors = [...new Set(row.filter((t) => t >= 0))].sort((x, y) => x - y);
          assert.deepEqual(
            [...probe.tokenSuccessors(s)].sort((x, y) => x - y),
            successors,
            `${name} /${pattern}/ successors(${s})`,
          );
        }
      }
      checkAgainstBruteForceSampled(dfa, vocab, trie, `${name} /${pattern}/`);
    }
  }
});

test("a state in front of a loop derives its mask from the loop state's, exactly", () => {
  for (const name of realVocabs) {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    // The last: the key typed so far ("a", "ab") goes to the free key's state on most bytes and
    // elsewhere on a few: derived with those bytes' subtrees walked again.
    for (const pattern of ["[a-z0-9.]+@[a-z0-9.]+", '\\["[a-z]+"(, "[a-z]+")*\\]', "x[0-9]+y", '"(abc": 1|abd": 2|[^"]*": 3)']) {
      const dfa = compileRegex(pattern);
      const trans = bruteTransitions(dfa, vocab);
      const minTok = bruteMinTokens(dfa, trans);
      const matcher = new DfaTokenMatcher(trie, dfa);
      // Loop states first, as precompute orders them; then every state's mask by the lazy path.
      matcher.precompute(1e9);
      if (pattern !== "x[0-9]+y") assert.ok(matcher.statesDerived > 0, `${name} /${pattern}/: some mask was derived`);
      for (let s = 0; s < dfa.numStates; s++) {
        const row = trans[s]!;
        assert.deepEqual(
          maskDiff(matcher.mask(s, 1 << 20), vocab.size, (id) => row[id]! >= 0),
          [],
          `${name} /${pattern}/ state ${s}`,
        );
        assert.equal(matcher.allowedTokenCount(s), row.filter((t) => t >= 0).length, `${name} /${pattern}/ count(${s})`);
      }
      // Budgets on derived states: their successors come from a walk when first needed.
      for (let s = 0; s < dfa.numStates; s++) {
        const row = trans[s]!;
        for (const r of [1, 2, 3, 6]) {
          const expected = (id: number): boolean => row[id]! >= 0 && minTok[row[id]!]! <= r - 1;
          assert.deepEqual(maskDiff(matcher.mask(s, r), vocab.size, expected), [], `${name} /${pattern}/ mask(${s}, ${r})`);
        }
      }
    }
  }
});
