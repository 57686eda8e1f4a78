// The grammar token matcher's lexer-level cache against plain trie walks with the automaton: for
// states reached by random token walks in every corpus grammar, both give the same mask, the same
// last-token (budget 1) mask, and targets with the same hypotheses (the fast way lists one state per
// hypothesis, the plain way one per token; both over one automaton, so ids are comparable). Also:
// advance() agrees with the mask bit by bit.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { compileGrammar, createGrammarAutomaton, type GrammarAutomaton } from "../src/grammar/index.js";
import { makeRng } from "../src/grammar/testing.js";
import { GrammarTokenMatcher } from "../src/constraint/index.js";
import { tokenTrieFor } from "../src/constraint/index.js";
import { setBits } from "../src/support/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { REPO_ROOT, vocabFile } from "./support/paths.js";

const CORPUS_DIR = resolve(REPO_ROOT, "test", "grammars");
const WALKS_PER_GRAMMAR = 3;
const WALK_LENGTH = 12;

test("lexer-level masks equal plain automaton walks across the corpus (gpt-2 vocabulary)", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const files = readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith(".lark"))
    .sort();
  let grammars = 0,
    states = 0,
    lexerLevelGrammars = 0;
  const mismatches: string[] = [];
  files.forEach((file, fi) => {
    const source = readFileSync(resolve(CORPUS_DIR, file), "utf8");
    let fast: GrammarTokenMatcher, plain: GrammarTokenMatcher, automaton: GrammarAutomaton;
    try {
      // One automaton for both: state ids then name the same states, so targets compare exactly.
      automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 8 });
      fast = new GrammarTokenMatcher(trie, automaton);
      plain = new GrammarTokenMatcher(trie, automaton, { lexerLevel: false });
    } catch {
      return; // refused grammars have no matcher
    }
    grammars++;
    const t0 = performance.now();
    if (fast.lexerLevel) lexerLevelGrammars++;
    const rng = makeRng(500 + fi);
    for (let w = 0; w < WALKS_PER_GRAMMAR; w++) {
      let sf = fast.start,
        sp = plain.start;
      for (let step = 0; step < WALK_LENGTH && sf >= 0; step++) {
        states++;
        const mf = fast.allowedMask(sf),
          mp = plain.allowedMask(sp);
        const bf = setBits(mf),
          bp = setBits(mp);
        if (bf.join() !== bp.join()) {
          mismatches.push(`${file} step ${step}: ${bf.length} vs ${bp.length} tokens`);
          break;
        }
        // Fast targets are per hypothesis, plain ones per token: the same hypotheses either way.
        const hypsOf = (targets: Int32Array): string => {
          const pairs = new Set<string>();
          for (const t of targets) {
            const h = automaton.hypotheses(t);
            for (let i = 0; i < h.length; i += 2) pairs.add(`${h[i]}:${h[i + 1]}`);
          }
          return [...pairs].sort().join();
        };
        if (hypsOf(fast.targetsOf(sf)) !== hypsOf(plain.targetsOf(sp))) mismatches.push(`${file} step ${step}: target hypotheses differ`);
        // With one token left only completing tokens remain (exact, no search): same either way.
        if (setBits(fast.mask(sf, 1)).join() !== setBits(plain.mask(sp, 1)).join())
          mismatches.push(`${file} step ${step}: last-token masks differ`);
        if (bf.length === 0) break;
        // Spot-check advance() against the mask: allowed tokens advance, a disallowed one does not.
        const token = bf[Math.floor(rng() * bf.length)]!;
        const nf = fast.advance(sf, token),
          np = plain.advance(sp, token);
        assert.ok(nf >= 0 && np >= 0, `${file}: allowed token ${token} did not advance`);
        assert.equal(fast.isAccepting(nf), plain.isAccepting(np));
        const probe = Math.floor(rng() * vocab.size);
        const probeAllowed = ((mf[probe >>> 5]! >>> (probe & 31)) & 1) === 1;
        assert.equal(fast.advance(sf, probe) >= 0, probeAllowed, `${file}: advance/mask disagree on token ${probe}`);
        sf = nf;
        sp = np;
      }
    }
    const ms = performance.now() - t0;
    if (ms > 2000) console.log(`slow: ${file} ${Math.round(ms)} ms`);
  });
  console.log(JSON.stringify({ grammars, lexerLevelGrammars, states, mismatches: mismatches.length }));
  for (const m of mismatches.slice(0, 20)) console.log("MISMATCH " + m);
  assert.ok(grammars >= 100);
  assert.equal(lexerLevelGrammars, grammars, "the lexer-level cache did not recognise the automaton's shape");
  assert.deepEqual(mismatches, []);
});

test("budget masks where only some endings can still finish agree with plain walks (qwen2 vocabulary)", () => {
  // At a small budget the lexer-level mask keeps the commit-free tokens whose end set can still
  // finish (maskOf): digits that complete a number are kept while an open string is not, and
  // whole subtrees of digits are taken at once. Plain walks check every token.
  const vocab = loadVocabulary(vocabFile("qwen2"));
  const trie = tokenTrieFor(vocab);
  const cases: [string, string[]][] = [
    ['start: NUMBER | STRING\nNUMBER: /[0-9]+/\nSTRING: /"[a-z ]*"/\n', ["", "1", '"ab']],
    [
      'start: "[" [item ("," item)*] "]"\n?item: NUMBER | STRING | "x"\nNUMBER: /-?[0-9]+(\\.[0-9]+)?/\nSTRING: /"[^"]*"/\n%ignore " "\n',
      ["", "[", "[1", "[1, ", '["a', "[12.5"],
    ],
  ];
  let compared = 0,
    mixed = 0;
  for (const [source, prefixes] of cases) {
    const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 8 });
    const fast = new GrammarTokenMatcher(trie, automaton);
    const plain = new GrammarTokenMatcher(trie, automaton, { lexerLevel: false });
    assert.ok(fast.lexerLevel);
    for (const prefix of prefixes) {
      const state = fast.advanceBytes(fast.start, new TextEncoder().encode(prefix));
      assert.ok(state >= 0, prefix);
      const all = setBits(fast.allowedMask(state)).length;
      for (let budget = 1; budget <= 3; budget++) {
        const bf = setBits(fast.mask(state, budget)),
          bp = setBits(plain.mask(state, budget));
        assert.deepEqual(bf, bp, `${JSON.stringify(source)} after ${JSON.stringify(prefix)}, budget ${budget}`);
        compared++;
        if (bf.length > 0 && bf.length < all) mixed++;
      }
    }
  }
  // The cases do reach masks that keep some allowed tokens and drop others.
  assert.ok(mixed >= 4, `only ${mixed} of ${compared} budget masks were partial`);
});
