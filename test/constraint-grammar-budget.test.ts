// Grammar budget masks against brute force: on small random grammars and small random
// vocabularies, for states reached by random token walks and budgets 1..MAX_BUDGET, the budgeted
// mask must never admit a token after which no complete sentence fits in the tokens left (sound),
// and must admit every token after which one does (exact). The brute force steps every token of
// the vocabulary breadth-first from the target, with matcher.advance as the only oracle.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileGrammar, createGrammarAutomaton, ruleNetworkAutomaton } from "../src/grammar/index.js";
import { GrammarConstraintState, GrammarTokenMatcher, TokenTrie, walkTrie, WorkMeter } from "../src/constraint/index.js";
import { compileJsonSchema } from "../src/schema/index.js";
import { StateEdgeCache } from "../src/constraint/grammar/edges.js";
import { LexerLevelWalks } from "../src/constraint/grammar/lexer-walks.js";
import { MATCHER_SLAB_BYTES } from "../src/constraint/grammar/tables.js";
import { TableSlab } from "../src/support/index.js";
import { makeVocab, rng as seededRandom } from "./support/constraint-fixtures.js";

const MAX_BUDGET = 6;

/** Grammars with nesting, choices and ignored bytes over a small alphabet (so small vocabularies cover them). */
const GRAMMARS: string[] = [
  `start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "c".."d"\n`,
  `?start: value\n?value: list | NUM | "t"\nlist: "[" [value ("," value)*] "]"\nNUM: /[0-9]+/\n%ignore " "\n`,
  `?start: sum\n?sum: atom | sum "+" atom\n?atom: NUM | "(" sum ")" | "-" atom\nNUM: /[12]+/\n%ignore " "\n`,
  `start: obj\nobj: "{" [pair ("," pair)*] "}"\npair: STR ":" val\n?val: obj | STR | "n"\nSTR: /"[ab]*"/\n`,
  `start: "x" block* "y"\nblock: "(" block* ")" | "k" "w"?\n`,
];

/** A vocabulary over the bytes the grammar uses: every single byte, then random strings of them. */
function randomVocab(alphabet: string, rand: () => number, extra: number): string[] {
  const tokens = new Set<string>(alphabet.split(""));
  while (tokens.size < alphabet.length + extra) {
    const len = 2 + Math.floor(rand() * 4);
    let t = "";
    for (let i = 0; i < len; i++) t += alphabet[Math.floor(rand() * alphabet.length)]!;
    tokens.add(t);
  }
  return [...tokens];
}

/** Fewest tokens from `state` to a complete sentence, searched up to `cap` (Infinity beyond). */
function bruteMinTokens(matcher: GrammarTokenMatcher, vocabSize: number, state: number, cap: number): number {
  let frontier = new Set<number>([state]);
  const seen = new Set<number>([state]);
  for (let k = 0; k <= cap; k++) {
    for (const s of frontier) if (matcher.isAccepting(s)) return k;
    if (k === cap) break;
    const next = new Set<number>();
    for (const s of frontier) {
      for (let t = 0; t < vocabSize; t++) {
        const n = matcher.advance(s, t);
        if (n >= 0 && !seen.has(n)) {
          seen.add(n);
          next.add(n);
        }
      }
    }
    frontier = next;
  }
  return Number.POSITIVE_INFINITY;
}

/** What compareWithBruteForce counts: masks compared, partial ones, and tokens left out that fit. */
interface Comparison {
  compared: number;
  partial: number;
  stricter: string[];
}

/**
 * Budget masks (and the admission questions) of `source` over `tokens` against the brute force,
 * for budgets 1..MAX_BUDGET at the states of `walks` random token walks of `steps` steps.
 */
function compareWithBruteForce(
  source: string,
  tokens: string[],
  maxIgnoredRun: number,
  rand: () => number,
  out: Comparison,
  where: string,
  walks = 3,
  steps = 7,
): void {
  const vocab = makeVocab(tokens);
  const trie = TokenTrie.build(vocab);
  const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun });
  for (const lexerLevel of [true, false]) {
    const matcher = new GrammarTokenMatcher(trie, automaton, { lexerLevel });
    const memo = new Map<number, number>();
    const need = (s: number): number => {
      let d = memo.get(s);
      if (d === undefined) memo.set(s, (d = bruteMinTokens(matcher, vocab.size, s, MAX_BUDGET)));
      return d;
    };
    for (let walk = 0; walk < walks; walk++) {
      let state = matcher.start;
      for (let step = 0; step < steps && state >= 0; step++) {
        const allowed: number[] = [];
        for (let t = 0; t < vocab.size; t++) if (matcher.advance(state, t) >= 0) allowed.push(t);
        if (allowed.length === 0) break;
        for (let remaining = 1; remaining <= MAX_BUDGET; remaining++) {
          matcher.work.begin();
          const mask = matcher.mask(state, remaining);
          let kept = 0;
          for (const t of allowed) {
            const inMask = ((mask[t >>> 5]! >>> (t & 31)) & 1) === 1;
            const fits = need(matcher.advance(state, t)) <= remaining - 1;
            const at = `${where} lexerLevel ${lexerLevel} step ${step} remaining ${remaining} token ${JSON.stringify(new TextDecoder().decode(trie.tokenBytes(t)))}`;
            assert.ok(!inMask || fits, `admitted a token that cannot finish: ${at}`);
            if (fits && !inMask) out.stricter.push(at);
            if (inMask) kept++;
          }
          // Tokens outside the grammar are never admitted.
          for (let t = 0; t < vocab.size; t++) if (((mask[t >>> 5]! >>> (t & 31)) & 1) === 1) assert.ok(matcher.advance(state, t) >= 0);
          out.compared++;
          if (kept > 0 && kept < allowed.length) out.partial++;
          // The admission question agrees with the brute force too.
          matcher.work.begin();
          const fewest = matcher.minTokensToAccept(state, MAX_BUDGET);
          assert.equal(fewest, need(state), `minTokensToAccept: ${where} step ${step}`);
          matcher.work.begin();
          assert.ok(matcher.minTokensAtLeast(state, MAX_BUDGET) <= need(state));
        }
        state = matcher.advance(state, allowed[Math.floor(rand() * allowed.length)]!);
      }
    }
  }
}

test("grammar budget masks equal brute force on random small grammars and vocabularies", () => {
  const rand = seededRandom(20240611);
  const out: Comparison = { compared: 0, partial: 0, stricter: [] };
  for (let gi = 0; gi < GRAMMARS.length; gi++) {
    const source = GRAMMARS[gi]!;
    const alphabet =
      [...new Set(source.match(/"([^"\\]*)"/g)!.flatMap((q) => q.slice(1, -1).split("")))].join("") +
      "0123456789 ".slice(gi === 1 ? 0 : 10);
    for (let round = 0; round < 2; round++) {
      const tokens = randomVocab(alphabet.includes('"') ? alphabet : `${alphabet}"`, rand, 25 + 10 * round);
      compareWithBruteForce(source, tokens, 2, rand, out, `grammar ${gi} round ${round}`);
    }
  }
  console.log(JSON.stringify({ ...out, stricter: out.stricter.length }));
  assert.ok(out.partial >= 20, `only ${out.partial} of ${out.compared} budget masks were partial`);
  assert.deepEqual(out.stricter.slice(0, 10), [], "masks left out tokens that can finish within the budget");
});

test("budget masks equal brute force where whitespace runs, long tokens and sentence ends decide", () => {
  const rand = seededRandom(777);
  const out: Comparison = { compared: 0, partial: 0, stricter: [] };
  // Runs of spaces up to the limit in one token and across tokens: states equal but for their run
  // (a search proves one too slow for those with longer runs, never for shorter ones).
  const spaces = ["1", "+", "(", ")", " ", "  ", "   ", "    ", "1 ", "+ ", " 1", " )", ")  ", "  +", "1+", "(1"];
  compareWithBruteForce(GRAMMARS[2]!, spaces, 4, rand, out, "runs", 8, 8);
  compareWithBruteForce(
    GRAMMARS[1]!,
    ["1", "[", "]", ",", "t", " ", "  ", "   ", "[ ", " ]", ",  ", "1]"],
    3,
    rand,
    out,
    "list runs",
    8,
    8,
  );
  // After "(" and one space the only one-token finish, "  1)", keeps to the run limit; after two it does not.
  const limit = ["(", " ", "  ", "   ", "  1)", "1", ")", "(  ", "( "];
  compareWithBruteForce(GRAMMARS[2]!, limit, 3, rand, out, "run limit", 12, 6);
  // Asked in the order that tempts a wrong conclusion: the longer run proven too slow for one
  // token says nothing of the shorter one.
  const matcher = new GrammarTokenMatcher(
    TokenTrie.build(makeVocab(limit)),
    createGrammarAutomaton(compileGrammar(GRAMMARS[2]!), { maxIgnoredRun: 3 }),
  );
  const open = matcher.advance(matcher.start, 0);
  const [oneSpace, twoSpaces] = [matcher.advance(open, 1), matcher.advance(open, 2)];
  assert.equal(matcher.minTokensToAccept(twoSpaces, 4), 2);
  assert.equal(matcher.minTokensToAccept(oneSpace, 4), 1);
  assert.equal(matcher.minTokensToAccept(twoSpaces, 4), 2);
  // A token that finishes exactly at its last byte after a commit inside it (the trie's height
  // below the commit is all it has), and runs of a byte no sentence ends with ("-" and "(").
  const exact = ["[", "1", "]", "[1]", "[1", "1]"];
  compareWithBruteForce('start: "[" NUM "]"\nNUM: /[0-9]/\n', exact, 2, rand, out, "exact", 2, 3);
  const dashes = ["-", "--", "---", "----", "-1", "1", "(", "((", "(((", ")", "))", ")))", "1)", "-(", "+"];
  compareWithBruteForce(GRAMMARS[2]!, dashes, 2, rand, out, "dashes", 8, 8);
  console.log(JSON.stringify({ ...out, stricter: out.stricter.length }));
  assert.ok(out.partial >= 20, `only ${out.partial} of ${out.compared} budget masks were partial`);
  assert.deepEqual(out.stricter.slice(0, 10), [], "masks left out tokens that can finish within the budget");
});

test("one token completes a state: the lazy search agrees with the state's targets (random vocabularies)", () => {
  const rand = seededRandom(5150);
  const tries: TokenTrie[] = [];
  // Without single bytes for most characters: tokens then end terminals mid-token, in commit groups.
  for (let round = 0; round < 5; round++) {
    const alphabet = 'ab0123()[]{},:+-" cdkwxyt';
    const tokens = randomVocab(alphabet, rand, 160).filter((t, i) => t.length > 1 || i % 3 === 0 || t === " ");
    tries.push(TokenTrie.build(makeVocab(tokens)));
  }
  let compared = 0,
    yes = 0,
    viaGroups = 0;
  for (const trie of tries) {
    for (const source of GRAMMARS) {
      const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 3 });
      const cache = (): StateEdgeCache => {
        const slab = new TableSlab(MATCHER_SLAB_BYTES);
        const work = new WorkMeter();
        return new StateEdgeCache(trie, automaton, LexerLevelWalks.over(trie, automaton, slab, work), slab, work);
      };
      // `lazy` never makes a state's record, so every question takes the lazy search.
      const lazy = cache();
      const full = cache();
      const seen = new Set<number>();
      const queue = [automaton.start];
      while (queue.length > 0 && seen.size < 400) {
        const state = queue.splice(Math.floor(rand() * queue.length), 1)[0]!;
        if (seen.has(state)) continue;
        seen.add(state);
        const targets = full.edgesOf(state).distinct;
        const expected = Array.from(targets).some((t) => automaton.isComplete(t));
        assert.equal(lazy.completesInOneToken(state), expected, `state ${state} of ${JSON.stringify(source)}`);
        compared++;
        if (expected) {
          yes++;
          // Found only past the commit-free tokens: the commit groups' part of the search.
          const h = automaton.hypotheses(state);
          let plain = false;
          for (let i = 0; i < h.length && !plain; i += 2) {
            walkTrie(trie, automaton, automaton.withStack(h[i]!, [h[i + 1]!]), 0, undefined, (_f, _t, target) => {
              if (automaton.isComplete(target) && automaton.hypotheses(target)[0] === h[i]) plain = true;
            });
          }
          if (!plain) viaGroups++;
        }
        for (const t of targets) if (!seen.has(t)) queue.push(t);
      }
    }
  }
  console.log(JSON.stringify({ compared, yes, viaGroups }));
  assert.ok(compared > 1000 && yes > 100 && viaGroups > 20, JSON.stringify({ compared, yes, viaGroups }));
});

test("completeAfterCommit is isComplete of afterCommit's state, without making it (Lark grammars)", () => {
  let asked = 0,
    complete = 0;
  for (const source of GRAMMARS) {
    const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: 3 });
    const seen = new Set<number>([automaton.start]);
    const queue = [automaton.start];
    while (queue.length > 0 && seen.size < 300) {
      const state = queue.shift()!;
      const h = automaton.hypotheses(state);
      for (let i = 0; i < h.length; i += 2)
        for (let b = 0; b < 128; b++) {
          const key = automaton.lexerCommitKey(h[i + 1]!, b);
          if (key < 0) continue;
          const expected = automaton.isComplete(automaton.afterCommit(h[i]!, key));
          assert.equal(automaton.completeAfterCommit(h[i]!, key), expected, `${JSON.stringify(source)}: state ${state}, byte ${b}`);
          asked++;
          if (expected) complete++;
        }
      for (let b = 0; b < 128; b++) {
        const next = automaton.step(state, b);
        if (next >= 0 && !seen.has(next)) {
          seen.add(next);
          queue.push(next);
        }
      }
    }
  }
  assert.ok(asked > 500 && complete > 20, JSON.stringify({ asked, complete }));
});

test("a budget question a long completion does not fit spells that completion only as far as the budget", () => {
  // 600 items at least: the shortest document is 12.6k bytes, far past 512 tokens of this vocabulary.
  const item = { type: "object", properties: { name: { type: "string" }, uri: { type: "string" } }, required: ["name", "uri"] };
  const { rules } = compileJsonSchema({ type: "array", minItems: 600, items: item }, { recursion: "stack" });
  assert.ok(rules !== undefined);
  const bytes = Array.from({ length: 256 }, (_, b) => new Uint8Array([b]));
  // A long token (whitespace) makes 512 tokens long enough for the bytes: only a spelling tells.
  const trie = TokenTrie.build(makeVocab([...bytes, '{"name":"', '","uri":"', '"},', '"}', " ".repeat(64)]));
  const automaton = ruleNetworkAutomaton({ rules });
  const state = new GrammarConstraintState(new GrammarTokenMatcher(trie, automaton));
  const shortest = automaton.minBytesToComplete(automaton.start);
  assert.equal(shortest, 2 + 600 * 21 - 1);
  assert.equal(state.minTokensToAccept(512), Number.POSITIVE_INFINITY);
  // Spelled to its end and stepped along, the completion made a state per token of it.
  assert.ok(automaton.numStates < 1000, `${automaton.numStates} automaton states`);
  // With room, the whole completion is spelled: "[", 3 tokens an item, "]".
  const roomy = new GrammarConstraintState(new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules })));
  assert.equal(roomy.minTokensToAccept(4000), 1 + 600 * 3 + 1);
});
