// The per-operation work bound of constraint matchers, counted in steps, never read off a clock:
// an operation past it throws ConstraintTooCostlyError and the matcher refuses every later
// operation; the count is the same on every run; the compile worker's probe refuses a constraint
// whose first masks need too much before the serving thread runs them, and that verdict is kept;
// a request meeting the bound mid-way is a 422, and the next request gets a fresh matcher; a tight
// budget's planning inside an admitted generation may use its allowance past the bound, no more;
// walks made ahead of need are charged to the first mask that uses them, so they decide nothing.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { compileRegex } from "../src/regex/index.js";
import { compileGrammar, createGrammarAutomaton, ruleNetworkAutomaton } from "../src/grammar/index.js";
import { compileJsonSchema } from "../src/schema/index.js";
import { DfaConstraintState, DfaTokenMatcher, tokenTrieFor } from "../src/constraint/index.js";
import { type CompletableAutomaton, GrammarConstraintState, GrammarTokenMatcher } from "../src/constraint/index.js";
import { ConstraintTooCostlyError, GRAMMAR_STEP_WEIGHT, LOWER_BOUND_WORK_SHARE, PLANNING_ALLOWANCE } from "../src/constraint/index.js";
import { compileServedSchema, ConstraintCache } from "../src/compile/index.js";
import { engineOptions, loadConfig } from "../src/config.js";
import { UnsatisfiableError } from "../src/generate/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { ARITHMETIC_GRAMMAR, maskHas, singleByteTokens } from "./support/constraint-fixtures.js";
import { REPO_ROOT, STORIES_260K, vocabFile } from "./support/paths.js";

const vocab = loadVocabulary(vocabFile("qwen2"));
const trie = tokenTrieFor(vocab);
/** Seconds of trie walks for its exact token distance at 152k tokens (a 20k-state DFA of wide states). */
const COSTLY_PATTERN = "(?:[^x]{0,50}x){40}";
/**
 * Its first budget question at 512 tokens is costly: its shortest match needs more than 512 tokens,
 * which neither the byte length over the longest token nor over the longest token of x and - alone
 * (a run of dashes) shows, so proving it searches its token graph to depth 512. (x{5000} was
 * costly too, until the longest token of x alone, 8 bytes, proved it needs 625.)
 */
const COSTLY_FIRST_QUESTION = "(?:x-){2500}";

test("a regex operation past its limit throws, and the matcher refuses everything after", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex(COSTLY_PATTERN, { maxDfaStates: 100_000 }));
  matcher.work.limitSteps = 200_000;
  const state = new DfaConstraintState(matcher);
  assert.throws(() => state.minTokensToAccept(), ConstraintTooCostlyError);
  // Stopped at the first charge past the limit: a walk's worth over it at most, not seconds of work.
  assert.ok(matcher.work.steps > 200_000 && matcher.work.steps < 200_000 + 2 * trie.numNodes, `${matcher.work.steps} steps`);
  // Even a cheap question now fails: the memo may hold a half-made walk.
  assert.throws(() => state.mask(512), ConstraintTooCostlyError);
  assert.throws(() => new DfaConstraintState(matcher).advance(0), ConstraintTooCostlyError);
});

test("an operation's work is the same on every run: the verdict does not depend on the machine", () => {
  const counts = [0, 1].map(() => {
    const matcher = new DfaTokenMatcher(trie, compileRegex("[a-z]{1,12}(,[a-z]{1,12}){0,4}"));
    const state = new DfaConstraintState(matcher);
    state.minTokensToAccept(4);
    const steps = [matcher.work.steps];
    state.mask(4);
    steps.push(matcher.work.steps);
    return steps.join(",");
  });
  assert.equal(counts[0], counts[1]);
  assert.notEqual(counts[0], "0,0", "nothing was counted");
});

test("the same operations pass under a roomy limit (the bound is what refused them)", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex("[a-z]{2,8}@[a-z]{2,8}"));
  matcher.work.limitSteps = 1e12;
  const state = new DfaConstraintState(matcher);
  assert.ok(state.minTokensToAccept(8) <= 8);
  assert.ok(state.mask(8).some((w) => w !== 0));
});

test("grammar operations are bounded too: lexer searches count, not only trie walks", () => {
  const grammar = compileGrammar("start: A\nA: /.{1000}/");
  const matcher = new GrammarTokenMatcher(trie, createGrammarAutomaton(grammar));
  matcher.work.limitSteps = 20_000;
  const state = new GrammarConstraintState(matcher);
  assert.throws(() => {
    state.minTokensToAccept(8);
    state.mask(8);
  }, ConstraintTooCostlyError);
  assert.throws(() => state.mask(2000), ConstraintTooCostlyError);
});

test("a grammar's lexer steps count the terminals its scanner weighs", () => {
  // One scanner of 400 terminals: each lexer step made checks them all, far more than its walk's nodes.
  const names = Array.from({ length: 400 }, (_, i) => `K${i}`);
  const source = `start: (${names.join(" | ")})+\n${names.map((n, i) => `${n}: "w${i}x"`).join("\n")}`;
  const automaton = createGrammarAutomaton(compileGrammar(source));
  const matcher = new GrammarTokenMatcher(trie, automaton);
  const before = automaton.lexerWork;
  assert.ok(new GrammarConstraintState(matcher).minTokensToAccept(8) <= 8);
  const lexerWork = automaton.lexerWork - before;
  assert.ok(lexerWork > 400 * 8, `${lexerWork} lexer work`);
  assert.ok(matcher.work.steps >= lexerWork, `${matcher.work.steps} steps for ${lexerWork} lexer work`);
});

const cache = new ConstraintCache(trie, { vocabulary: vocab, maskMaxWork: 2_000_000, compileTimeoutMs: 60_000 });
after(() => cache.close());

test("the compile worker tries a new constraint's first masks and refuses a costly one for good", async () => {
  await cache.get({ kind: "regex", pattern: "warm" });
  const refused = (e: unknown): boolean =>
    e instanceof UnsatisfiableError && /first token masks/.test(e.message) && /TRELLIS_MASK_MAX_WORK/.test(e.message);
  await assert.rejects(cache.get({ kind: "regex", pattern: COSTLY_FIRST_QUESTION }), refused);
  const compiles = cache.stats().compiles;
  // The count is the same on every try: the refusal is kept, not compiled again.
  await assert.rejects(cache.get({ kind: "regex", pattern: COSTLY_FIRST_QUESTION }), refused);
  assert.equal(cache.stats().compiles, compiles);
  const ok = await cache.get({ kind: "grammar", grammar: 'start: "[" V ("," V)* "]"\nV: /[0-9]+/' });
  assert.ok(ok.factory(undefined).minTokensToAccept(16) <= 16);
});

test("a request whose operation runs out mid-way is a 422; the next request gets a fresh matcher", async () => {
  const pattern = "[a-z]{1,6}(,[a-z]{1,6}){0,3}";
  const entry = await cache.get({ kind: "regex", pattern });
  // A healed prompt's first step walks the trie below its prefix: work no earlier request did.
  const state = entry.factory(new TextEncoder().encode("q"));
  const matcher = (state as DfaConstraintState).matcher;
  matcher.work.limitSteps = 0; // the next charge is past the limit
  let caught: unknown;
  try {
    state.writeMask(16, new Uint32Array(matcher.words));
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ConstraintTooCostlyError);
  const answer = cache.refuse(entry, caught);
  assert.ok(answer instanceof UnsatisfiableError && /TRELLIS_MASK_MAX_WORK/.test(answer.message));
  const again = await cache.get({ kind: "regex", pattern });
  assert.notEqual(again, entry);
  assert.ok(again.factory(undefined).minTokensToAccept(16) <= 16);
});

test("a refusal's lower bound may use only its share of the limit: the verdict is known before it", () => {
  const matcher = new DfaTokenMatcher(trie, compileRegex(COSTLY_FIRST_QUESTION));
  matcher.work.limitSteps = 500_000;
  const state = new DfaConstraintState(matcher);
  assert.equal(state.minTokensToAccept(8), Number.POSITIVE_INFINITY);
  assert.throws(() => state.minTokensAtLeast(8 + 64), ConstraintTooCostlyError);
  const share = 500_000 * LOWER_BOUND_WORK_SHARE;
  assert.ok(matcher.work.steps > share && matcher.work.steps < share + 2 * trie.numNodes, `${matcher.work.steps} steps`);
});

test("a budget the pattern's bytes cannot fill with their longest tokens is refused without a search", () => {
  // No qwen2 token holds more than 8 x's: x{5000} needs 625 tokens, beyond 512 with no search.
  const x = new Uint32Array(8);
  x[0x78 >>> 5] = 1 << (0x78 & 31);
  assert.equal(trie.longestTokenWithin(x), 8);
  const matcher = new DfaTokenMatcher(trie, compileRegex("x{5000}"));
  const state = new DfaConstraintState(matcher);
  assert.equal(state.minTokensToAccept(512), Number.POSITIVE_INFINITY);
  assert.equal(state.minTokensAtLeast(512 + 64), 512 + 64 + 1);
  assert.equal(matcher.work.steps, 0);
  // The same for a grammar: 40 terminals over a and b, and no stories260K token joins the two.
  const small = tokenTrieFor(loadVocabulary(STORIES_260K));
  const source = `start: ${Array.from({ length: 40 }, (_, i) => `T${i}`).join(" | ")}\n${Array.from({ length: 40 }, (_, i) => `T${i}: /(a|b)*a(a|b){8}/`).join("\n")}`;
  const grammarMatcher = new GrammarTokenMatcher(small, createGrammarAutomaton(compileGrammar(source)));
  const sentence = new GrammarConstraintState(grammarMatcher);
  assert.equal(sentence.minTokensToAccept(8), Number.POSITIVE_INFINITY);
  assert.ok(grammarMatcher.work.steps < 100_000, `${grammarMatcher.work.steps} steps`);
  assert.equal(sentence.minTokensAtLeast(8 + 64), 9);
});

// A lower bound past its share is answered as a 422 without its number, not refused: the request
// only releases the entry, and that alone must drop the spent matcher.
test("an entry whose matcher an operation spent is dropped when the request releases it", async () => {
  const pattern = "[a-z]{1,5}(;[a-z]{1,5}){0,2}";
  const entry = await cache.get({ kind: "regex", pattern });
  // A healed prompt's first step: work no earlier request did.
  const state = entry.factory(new TextEncoder().encode("q")) as DfaConstraintState;
  state.matcher.work.limitSteps = 0;
  assert.equal(entry.spent, false);
  assert.throws(() => state.minTokensAtLeast(8), ConstraintTooCostlyError);
  assert.equal(entry.spent, true);
  cache.release(entry);
  const again = await cache.get({ kind: "regex", pattern });
  assert.notEqual(again, entry);
  assert.equal(again.spent, false);
  assert.ok(again.factory(undefined).minTokensToAccept(16) <= 16);
  cache.release(again);
});

test("a grammar's budget question is answered by its byte lower bound where no completion can fit", () => {
  // Far more bytes than 8 of stories260K's tokens hold: no completion is spelled (a lexer state per byte).
  const small = tokenTrieFor(loadVocabulary(STORIES_260K));
  const matcher = new GrammarTokenMatcher(small, createGrammarAutomaton(compileGrammar("start: A\nA: /.{1000}/")));
  const state = new GrammarConstraintState(matcher);
  assert.ok(1000 > 8 * small.maxTokenLength);
  assert.equal(state.minTokensToAccept(8), Number.POSITIVE_INFINITY);
  assert.ok(matcher.work.steps < 1000, `${matcher.work.steps} steps`);
});

test("a tight budget's planning inside an admitted generation may take its allowance past the limit, no more", async () => {
  const { loadModel } = await import("../src/model/index.js");
  const { MAX_IGNORED_RUN } = await import("../src/generate/index.js");
  const arithmetic = ARITHMETIC_GRAMMAR;
  const model = loadModel(vocabFile("qwen2"), { vocabOnly: true, threads: 1 });
  // Nested parentheses: the planning of the step before the last closing ones walks the most.
  const tokens = model.tokenize("a * (b + (c - (d / (e + (f * (g - 1))))))", { addSpecial: false, parseSpecial: false });
  model.dispose();
  // Measured: the first mask about 45k, the planning before the last closing ones about 224k.
  const limit = 100_000;
  const matcher = new GrammarTokenMatcher(trie, createGrammarAutomaton(compileGrammar(arithmetic), { maxIgnoredRun: MAX_IGNORED_RUN }));
  matcher.work.limitSteps = limit;
  const state = new GrammarConstraintState(matcher);
  let overLimit = 0;
  // Each step's budget is exactly what the text has left: the planning that decides the last
  // tokens walks many states a mask without a budget never needs.
  for (let i = 0; i < tokens.length; i++) {
    const mask = state.mask(tokens.length - i);
    assert.ok(((mask[tokens[i]! >>> 5]! >>> (tokens[i]! & 31)) & 1) === 1, `token ${i} allowed`);
    assert.ok(matcher.work.steps <= (1 + PLANNING_ALLOWANCE) * limit);
    if (matcher.work.steps > limit) {
      assert.ok(matcher.work.planning, "only planning may pass the limit");
      overLimit++;
    }
    assert.ok(state.advance(tokens[i]!));
  }
  assert.ok(state.isAccepting());
  // The case is chosen so that the allowance is used (pick a dearer one if planning gets cheaper).
  assert.ok(overLimit > 0, "no planning step needed more than the limit");
});

const SQL_GRAMMAR = `start: select
select: "SELECT"i NAME ("," NAME)* "FROM"i NAME ["WHERE"i NAME OP (NAME | NUMBER)]
OP: "=" | "<" | ">" | "<=" | ">="
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS
%ignore WS
`;

/**
 * The steps each mask along `text` charges on a fresh matcher of `automaton()`, after walking
 * ahead as far as it goes before each (or not at all), and whether walking ahead ever exhausted it.
 */
function chargesAlong(automaton: () => CompletableAutomaton, text: string, ahead: boolean): number[] {
  // Every walk ahead, however slow the machine (the service's matcher stops after WALK_AHEAD_MS).
  const matcher = new GrammarTokenMatcher(trie, automaton(), { walkAheadMs: Number.POSITIVE_INFINITY });
  matcher.work.limitSteps = 4_000_000;
  const state = new GrammarConstraintState(matcher);
  const single = singleByteTokens(vocab);
  const charges: number[] = [];
  state.mask(64);
  charges.push(matcher.work.steps);
  let done = !ahead;
  // Many walks in one call, as a long decode round allows.
  for (let round = 0; round < 200 && !done; round++) done = state.walkAhead(Number.POSITIVE_INFINITY);
  assert.ok(done);
  for (const byte of new TextEncoder().encode(text)) {
    assert.ok(state.advance(single.get(byte)!), String.fromCharCode(byte));
    if (ahead) state.walkAhead(Number.POSITIVE_INFINITY);
    state.mask(64);
    charges.push(matcher.work.steps);
  }
  assert.ok(state.isAccepting());
  assert.equal(matcher.work.exhausted, null);
  if (ahead) {
    const counts = matcher.rootWalkCounts!;
    assert.ok(counts.walked + counts.takenOver > 20, JSON.stringify(counts));
  }
  return charges;
}

test("walking ahead changes no verdict: the first mask to use a walk made ahead pays for it", () => {
  // A rule network (no equivalent sets): each mask charges exactly what it does without walks ahead.
  const schema = {
    type: "object",
    properties: { name: { type: "string", maxLength: 40 }, tags: { type: "array", items: { type: "string" } }, n: { type: "integer" } },
    required: ["name", "tags", "n"],
  };
  const network = () => ruleNetworkAutomaton({ rules: compileJsonSchema(schema, { freeValuesAnyDepth: true, recursion: "stack" }).rules! });
  const json = '{"name": "Ann Lee", "tags": ["x", "yz"], "n": 42}';
  assert.deepEqual(chargesAlong(network, json, true), chargesAlong(network, json, false));
  // A Lark grammar: a walk taken over from an equivalent one charges the walk, so which walks
  // were there to take over from changes nothing; the lexer steps two walks share are charged to
  // the first made, so a mask may differ by those (6% at most here), never by its walks.
  const sql = () => createGrammarAutomaton(compileGrammar(SQL_GRAMMAR), { maxIgnoredRun: 8 });
  const text = "SELECT a, b FROM t WHERE a >= 3";
  const cold = chargesAlong(sql, text, false);
  const warm = chargesAlong(sql, text, true);
  assert.equal(warm.length, cold.length);
  for (let i = 0; i < cold.length; i++)
    assert.ok(Math.abs(warm[i]! - cold[i]!) <= 0.1 * cold[i]!, `mask ${i}: ${warm[i]} steps, ${cold[i]} without walks ahead`);
});

test("a bounded string's masks fit the service's limit at 152k tokens without walks ahead", () => {
  // Each character of a string of at most 60 is a lexer state of its own, so the first mask
  // inside it walks 326k trie nodes: at the lexer-state weight that was five times the limit,
  // and only walks made ahead in time (free then) kept such a request from a mid-way 422.
  const limit = loadConfig({}, []).config.maskMaxWork;
  const schema = { type: "object", properties: { a: { type: "string", maxLength: 60 } }, required: ["a"] };
  const rules = compileJsonSchema(schema, { freeValuesAnyDepth: true, recursion: "stack" }).rules!;
  const matcher = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }), { walkAheadMs: 0 });
  matcher.work.limitSteps = limit;
  const state = new GrammarConstraintState(matcher);
  const single = singleByteTokens(vocab);
  let most = 0;
  for (const byte of new TextEncoder().encode('{"a": "naïve café"}')) {
    state.mask(64);
    most = Math.max(most, matcher.work.steps);
    assert.ok(state.advance(single.get(byte)!), String.fromCharCode(byte));
  }
  assert.ok(state.isAccepting());
  // The dearest mask walks the whole trie: it must have been charged for it, well within the limit.
  assert.ok(most > 300_000 && most < limit / 2, `${most} steps at most`);
});

test("a rule network whose masks would walk the whole vocabulary is not served as one (calls of two rules at one position)", () => {
  const config = loadConfig({}, []).config;
  const probe = { budgets: engineOptions(config, "").constraints!.probeBudgets, limitSteps: config.maskMaxWork };
  const options = { whitespace: "default", strict: true, freeValuesAnyDepth: true, propertyOrder: "any" } as const;
  // In any order "k" may come before "t", which tells the branches apart: after {"k": both
  // branches' rules are called, and the network has no lexer-level view.
  const schema = {
    anyOf: [
      { type: "object", properties: { t: { const: 1 }, k: { $ref: "#/$defs/A" } }, required: ["t"], additionalProperties: false },
      { type: "object", properties: { t: { const: 2 }, k: { $ref: "#/$defs/B" } }, required: ["t"], additionalProperties: false },
    ],
    $defs: {
      A: { type: "array", items: { $ref: "#/$defs/A" } },
      B: { type: "object", properties: { n: { $ref: "#/$defs/B" } }, additionalProperties: false },
    },
  };
  const anyOrder = compileJsonSchema(schema, { ...options, recursion: "stack" });
  assert.equal(ruleNetworkAutomaton({ rules: anyOrder.rules! }).lexerLevel, false);
  assert.ok(trie.numNodes * GRAMMAR_STEP_WEIGHT > probe.limitSteps, "a whole walk is past the mask limit at 152k tokens");
  // Served as the one DFA (recursion unrolled), in the order asked.
  const served = compileServedSchema(schema, options, trie, probe);
  assert.equal(served.kind, "dfa");
  assert.equal(served.warnings, undefined);
  assert.ok(served.kind === "dfa");
  const accepts = (text: string): boolean => {
    let s = served.dfa.start;
    for (const b of new TextEncoder().encode(text)) {
      s = served.dfa.next[s * served.dfa.numClasses + served.dfa.byteClass[b]!]!;
      if (s < 0) return false;
    }
    return served.dfa.accepting[s] === 1;
  };
  assert.equal(accepts('{"k": [[]], "t": 1}'), true);
  assert.equal(accepts('{"k": {"n": {}}, "t": 2}'), true);
  assert.equal(accepts('{"k": [[]], "t": 2}'), false);
});

test("objects in any order whose branches call one rule at each position keep the lexer-level view (Github o75099)", () => {
  const file = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench", "Github_medium---o75099.json");
  const schema = (JSON.parse(readFileSync(file, "utf8")) as { schema: unknown }).schema;
  const config = loadConfig({}, []).config;
  const probe = { budgets: engineOptions(config, "").constraints!.probeBudgets, limitSteps: config.maskMaxWork };
  const options = { whitespace: "default", strict: true, freeValuesAnyDepth: true, propertyOrder: "any" } as const;
  // Its free values are calls of the one free-value rule: served in any order, as a network whose masks share walks.
  const served = compileServedSchema(schema, options, trie, probe);
  assert.ok(served.kind === "rules");
  assert.equal(served.warnings, undefined);
  assert.equal(ruleNetworkAutomaton({ rules: served.rules }).lexerLevel, true);
  // And each mask of a point's document, its members in another order than the schema's, stays within the mask limit.
  const matcher = new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules: served.rules }));
  matcher.work.limitSteps = config.maskMaxWork;
  const state = new GrammarConstraintState(matcher);
  // One byte a token: a mask at every position of the document.
  const byteToken = singleByteTokens(vocab);
  for (const byte of new TextEncoder().encode('{"coordinates": [100.0, 0.0], "type": "Point"}')) {
    const token = byteToken.get(byte)!;
    assert.ok(maskHas(state.mask(1 << 20), token) && state.advance(token), String.fromCharCode(byte));
  }
  assert.ok(state.isAccepting());
});
