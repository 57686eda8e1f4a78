// Root walks derived from a body's (the key typed so far in an object whose other keys are free,
// a string's first character), keeping the base's subtrees where both walk alike: the same masks,
// budget masks and counted work as walking each set (the `loopSlices: false` reference, which
// derives nothing), on a real vocabulary's trie.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GrammarConstraintState, GrammarTokenMatcher, type TokenTrie, tokenTrieFor } from "../src/constraint/index.js";
import { compileServedSchema } from "../src/compile/index.js";
import { ruleNetworkAutomaton } from "../src/grammar/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { makeVocab, maskHas, singleByteTokens } from "./support/constraint-fixtures.js";
import { vocabFile } from "./support/paths.js";

/**
 * Walks `text` byte by byte (single-byte tokens) on both matchers: at each position the masks at
 * each budget of `budgets` and the work charged for them are the same.
 */
function sameAsWalked(
  derived: GrammarTokenMatcher,
  walked: GrammarTokenMatcher,
  single: ReadonlyMap<number, number>,
  text: string,
  budgets: readonly number[],
): void {
  const a = new GrammarConstraintState(derived);
  const b = new GrammarConstraintState(walked);
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i <= bytes.length; i++) {
    const where = `${text.slice(0, i)}⟨here⟩`;
    for (const remaining of budgets) {
      assert.deepEqual(a.mask(remaining), b.mask(remaining), `${where} with ${remaining} tokens left`);
      assert.equal(derived.work.steps, walked.work.steps, `work charged at ${where} with ${remaining} tokens left`);
    }
    if (i === bytes.length) break;
    const token = single.get(bytes[i]!)!;
    assert.ok(a.advance(token) && b.advance(token), text.slice(0, i + 1));
  }
  assert.ok(a.isAccepting() && b.isAccepting(), text);
}

/** The schema's rule network (it must compile to one) on two matchers: deriving walks, and walking each set (`loopSlices: false`). */
function matchersOf(schema: unknown, trie: TokenTrie): { derived: GrammarTokenMatcher; walked: GrammarTokenMatcher } {
  const served = compileServedSchema(schema, { whitespace: "default", strict: true, freeValuesAnyDepth: true });
  assert.equal(served.kind, "rules");
  const rules = (served as { rules: Parameters<typeof ruleNetworkAutomaton>[0]["rules"] }).rules;
  return {
    derived: new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules })),
    walked: new GrammarTokenMatcher(trie, ruleNetworkAutomaton({ rules }), { loopSlices: false }),
  };
}

/** qwen2's trie and single-byte tokens, made once for the tests that need them. */
let qwen2Made: { trie: TokenTrie; single: ReadonlyMap<number, number> } | null = null;
function qwen2(): { trie: TokenTrie; single: ReadonlyMap<number, number> } {
  if (qwen2Made === null) {
    const vocab = loadVocabulary(vocabFile("qwen2"));
    qwen2Made = { trie: tokenTrieFor(vocab), single: singleByteTokens(vocab) };
  }
  return qwen2Made;
}

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
  const { derived, walked } = matchersOf(schema, trie);
  const texts = [
    '{"name": "Ada", "note": "é z", "tags": ["a", "bcdef"], "nam": {"x": [1, "y"]}, "n": null}',
    '{"name": "", "tags": [], "notes": "free", "": true, "nZ": "\\n\\""}',
  ];
  for (const text of texts) sameAsWalked(derived, walked, single, text, [1 << 20, 1, 2, 3, 5]);
  // Derived here (the keys' prefixes beside a free key, the note's first character), never there.
  assert.ok(derived.rootWalkCounts!.derived >= 10, JSON.stringify(derived.rootWalkCounts));
  // Below a key's first byte most subtrees are the free key's again: kept from the base's walk.
  assert.ok(derived.rootWalkCounts!.keptFromBase >= 100, JSON.stringify(derived.rootWalkCounts));
  assert.equal(walked.rootWalkCounts!.derived, 0);
});

test("a derived walk keeps only the subtrees its base walks alike: a wider key family below one letter", () => {
  // Keys: capitals only, or P and then small letters. The key typed so far, after `{"`, steps as
  // the capitals' contents on every capital but P, its base; below "P", "Pa" and its letters are
  // the small letters' family's alone (the base dies on "a": not kept), while below "PA" the set
  // is the base's own again (kept from its walk).
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const tokens: string[] = [];
  for (let b = 0x20; b < 0x7f; b++) tokens.push(String.fromCharCode(b));
  // Enough capital tokens (over SPARSE_WALK_TOKENS) that the base's walk keeps a mask.
  for (const x of letters) for (const y of letters) tokens.push(x + y);
  for (const x of "AB") for (const y of letters) for (const z of letters) tokens.push(x + y + z);
  tokens.push("Pa", "Pab", "Paz", "PAB", "PABC", "Qa");
  const trie = tokenTrieFor(makeVocab(tokens));
  const single = new Map(tokens.map((t, id) => [t.charCodeAt(0), id] as const).filter((_, id) => tokens[id]!.length === 1));
  const schema = { type: "object", patternProperties: { "^[A-Z]*$": {}, "^P[a-z]*$": {} }, additionalProperties: false };
  const { derived, walked } = matchersOf(schema, trie);
  sameAsWalked(derived, walked, single, '{"Pab": 1, "PAB": [], "QQ": null}', [1 << 20, 2, 4]);
  const first = new GrammarConstraintState(derived);
  first.advance(single.get(0x7b)!);
  first.advance(single.get(0x22)!);
  const mask = first.mask(1 << 20);
  for (const key of ["Pa", "Pab", "Paz", "PAB", "PABC", "QQ"]) assert.ok(maskHas(mask, tokens.indexOf(key)), key);
  assert.ok(!maskHas(mask, tokens.indexOf("Qa")), "Qa: a capital but P, then a small letter, is neither family's");
  assert.ok(derived.rootWalkCounts!.derived >= 1 && derived.rootWalkCounts!.keptFromBase >= 1, JSON.stringify(derived.rootWalkCounts));
});

test("a key that goes on with a space derives from the free key's walk, its bits below the space kept (qwen2 vocabulary)", () => {
  // In qwen2 the tokens beginning with a space (119k of 334k trie nodes) outweigh those of any
  // set the letters lead to: after `{"Entries` the base is still the free key's body (the letters'
  // and the multi-byte characters' first bytes step as it does), and below the space, where the
  // key typed so far dies, the body's bits are the walk's own and are left set.
  const { trie, single } = qwen2();
  const schema = {
    type: "object",
    properties: {
      "Entries Removed By Prune": { type: "integer" },
      "Soft to Hard": { type: "integer" },
      "Cache Type": { type: "string", enum: ["Soft Cache", "Hard"] },
    },
  };
  const { derived, walked } = matchersOf(schema, trie);
  const texts = [
    '{"Entries Removed By Prune": 1, "Soft to Hard": 2, "Cache Type": "Soft Cache", "Entries Rx": "é", "Soft t": {"a b": [1]}}',
    '{"Entriesx y": true, "Cache Typ": "Hard", "Soft  to": null}',
  ];
  for (const text of texts) sameAsWalked(derived, walked, single, text, [1 << 20, 2, 5]);
  const counts = derived.rootWalkCounts!;
  // After each word of a key that goes on with a space (Entries, Removed, By, Soft, to, Cache, ...).
  assert.ok(counts.derived >= 80, JSON.stringify(counts)); // 74 when the base was the set below the most nodes
  assert.ok(counts.bitsKeptFromBase >= 100, JSON.stringify(counts));
});

test("a derived walk whose root child its base's slice takes up charges the region, not the runs it kept before the slice was made (qwen2 vocabulary)", () => {
  // After `{"` the set steps into the pattern's key on "-" and the letters, and into the free key
  // (its base) on the rest. Its pass for kept runs meets "-" before any letter has made the
  // pattern key's slice, so it keeps runs below "-" (one of them at the exit "-$"); the walk then
  // takes "-" up as that slice's region, and walked the exits inside those runs twice (10 steps
  // more than the plain walk's, for the same mask).
  const { trie, single } = qwen2();
  const schema = {
    type: "object",
    patternProperties: { "^[0-9a-zA-Z_-]+$": { type: "array", items: { type: "array", items: { type: "string" } } } },
  };
  const { derived, walked } = matchersOf(schema, trie);
  sameAsWalked(derived, walked, single, '{"-x": [["a"]], "a b": {"c": 1}, "Z_9": []}', [1 << 20, 3]);
  assert.ok(derived.rootWalkCounts!.derived >= 1, JSON.stringify(derived.rootWalkCounts));
});
