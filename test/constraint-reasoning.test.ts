// A reasoning section before a constrained answer (constraint/reasoning.ts): the section's DFA
// against brute force, masks that never let the body spell the end marker, and the promise under
// tight budgets: every run ends with a complete answer, the reasoning closed by the mask when the
// budget (or the reasoning budget) requires it.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DfaConstraintState,
  dfaTokenMatcherFor,
  OptionalReasoningConstraint,
  ReasoningConstraint,
  reasoningDfa,
  TokenTrie,
} from "../src/constraint/index.js";
import { compileRegex, matchesBytes } from "../src/regex/index.js";
import { maskWords } from "../src/support/index.js";
import { makeVocab, maskHas, rng, runDfa } from "./support/constraint-fixtures.js";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Whether `bytes` is in open? · (bytes without close) · close. */
function inSection(bytes: string, open: string | null, close: string): boolean {
  if (open !== null) {
    if (!bytes.startsWith(open)) return false;
    bytes = bytes.slice(open.length);
  }
  return bytes.endsWith(close) && bytes.indexOf(close) === bytes.length - close.length;
}

test("the section's DFA accepts exactly open? · body without the marker · marker", () => {
  const rand = rng(99);
  const alphabet = "<>/thinkab";
  for (const [open, close] of [
    ["<think>", "</think>"],
    [null, "</think>"],
    [null, "aab"],
    ["[THINK]", "[/THINK]"],
    [null, "abab"],
  ] as const) {
    const dfa = reasoningDfa(open === null ? null : utf8(open), utf8(close));
    for (let i = 0; i < 4000; i++) {
      let s = i % 3 === 0 && open ? open : "";
      const len = Math.floor(rand() * 14);
      for (let j = 0; j < len; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
      if (i % 2 === 0) s += close;
      const state = runDfa(dfa, dfa.start, utf8(s));
      assert.equal(state >= 0 && dfa.accepting[state] === 1, inSection(s, open, close), `${JSON.stringify(s)} (${open}, ${close})`);
      // Every live state can still finish in minBytesToAccept bytes (the matcher's bounds rely on it).
      if (state >= 0) assert.ok(dfa.minBytesToAccept[state]! >= 0);
    }
  }
});

const TOKENS = ["</think>", "<think>", "</", "think", ">", "x</think>y", "a", "b", " ", "\n", "{", "}", '"a":', "1", "2", "a</"];

function setup(maxReasoning = Number.POSITIVE_INFINITY, preOpened = false) {
  const vocab = makeVocab(TOKENS);
  const trie = TokenTrie.build(vocab);
  const section = dfaTokenMatcherFor(trie, reasoningDfa(preOpened ? null : utf8("<think>"), utf8("</think>")));
  const answerDfa = compileRegex('\\{"a":[12]{1,3}\\}');
  const answer = dfaTokenMatcherFor(trie, answerDfa);
  const make = () => new ReasoningConstraint(new DfaConstraintState(section), new DfaConstraintState(answer), maxReasoning);
  return { vocab, trie, make, answerDfa };
}

test("a control marker's spelling (0xFF, then its byte) is no reasoning text: only as part of the end marker, and then whole", () => {
  const utf8 = (t: string) => Array.from(new TextEncoder().encode(t));
  const bytes = (...parts: (number[] | string)[]) => Uint8Array.from(parts.flatMap((p) => (typeof p === "string" ? utf8(p) : p)));
  // An end marker of two control markers and text between (as gpt-oss's would be, were its markers control tokens).
  const close = bytes([0xff, 0x80], "x", [0xff, 0x81]);
  const dfa = reasoningDfa(null, close);
  assert.ok(matchesBytes(dfa, bytes("thinking ", [0xff, 0x80], "x", [0xff, 0x81])));
  assert.ok(!matchesBytes(dfa, bytes("a", [0xff, 0x82], "b", [0xff, 0x80], "x", [0xff, 0x81])), "another marker in the body");
  assert.ok(!matchesBytes(dfa, bytes("a", [0xff, 0x80], "y", [0xff, 0x80], "x", [0xff, 0x81])), "the end begun, then left");
  assert.ok(matchesBytes(dfa, bytes("\u00e9\u4e2d ", [0xff, 0x80], "x", [0xff, 0x81])), "continuation bytes are text");
  // Text markers: the lead byte is dead in the body.
  assert.ok(!matchesBytes(reasoningDfa(null, bytes("</think>")), bytes([0xff, 0x80], "</think>")));
});

test("while reasoning, no token may spell the end marker inside the body, and the answer's tokens wait for it", () => {
  const { vocab, make } = setup(Number.POSITIVE_INFINITY, true);
  const c = make();
  const mask = new Uint32Array(maskWords(vocab.size));
  c.writeMask(100, mask);
  const allowed = TOKENS.filter((_, id) => maskHas(mask, id));
  assert.ok(allowed.includes("</think>") && allowed.includes("a") && allowed.includes("{"), allowed.join(" "));
  assert.ok(!allowed.includes("x</think>y"), "a token running past the marker");
  assert.ok(allowed.includes("a</"), "a token ending in the marker's first bytes");
  assert.equal(c.isAccepting(), false);
  // Minimum: the marker (1 token), then {"a":1} in 4 tokens.
  assert.equal(c.minTokensToAccept(100), 5);
  assert.equal(c.minTokensToAccept(4), Number.POSITIVE_INFINITY);
});

test("a tight budget closes the reasoning itself: with reserve + 1 tokens left only the marker is allowed", () => {
  const { vocab, make } = setup(Number.POSITIVE_INFINITY, true);
  const c = make();
  assert.ok(c.advance(TOKENS.indexOf("a")));
  const mask = new Uint32Array(maskWords(vocab.size));
  c.writeMask(5, mask);
  assert.deepEqual(
    TOKENS.filter((_, id) => maskHas(mask, id)),
    ["</think>"],
  );
  c.writeMask(4, mask);
  assert.equal(TOKENS.filter((_, id) => maskHas(mask, id)).length, 0, "nothing fits");
  assert.equal(c.hasAnyToken(4), false);
});

test("property: random runs under random budgets always end in a complete answer after a closed section", () => {
  const rand = rng(2026);
  for (const preOpened of [true, false]) {
    for (const maxReasoning of [Number.POSITIVE_INFINITY, 3, 7]) {
      const { vocab, make, answerDfa } = setup(maxReasoning, preOpened);
      const mask = new Uint32Array(maskWords(vocab.size));
      for (let run = 0; run < 300; run++) {
        const c = make();
        const budget = 5 + (preOpened ? 0 : 1) + Math.floor(rand() * 20);
        const needed = c.minTokensToAccept(budget);
        if (needed > budget) {
          assert.ok(maxReasoning < 2 || budget < 6, `refused at ${budget}`);
          continue;
        }
        let out = "";
        let reasoningTokens = 0;
        for (let remaining = budget; remaining > 0 && !c.isAccepting(); remaining--) {
          c.writeMask(remaining, mask);
          const ids = [...Array(vocab.size).keys()].filter((id) => maskHas(mask, id));
          assert.ok(ids.length > 0, `no token with ${remaining} left after ${JSON.stringify(out)}`);
          const id = ids[Math.floor(rand() * ids.length)]!;
          if (!c.answering) reasoningTokens++;
          assert.ok(c.advance(id));
          out += TOKENS[id];
        }
        assert.ok(c.isAccepting(), `run ${run}: ${JSON.stringify(out)} within ${budget}`);
        assert.ok(reasoningTokens <= maxReasoning, `reasoning took ${reasoningTokens} > ${maxReasoning}`);
        const end = out.indexOf("</think>") + "</think>".length;
        assert.ok(inSection(out.slice(0, end), preOpened ? null : "<think>", "</think>"), JSON.stringify(out));
        assert.ok(matchesBytes(answerDfa, utf8(out.slice(end))), `answer ${JSON.stringify(out.slice(end))}`);
      }
    }
  }
});

test("an answer's header alone (no body): exactly the marker", () => {
  const dfa = reasoningDfa(null, utf8(" to=user"), false);
  assert.ok(matchesBytes(dfa, utf8(" to=user")));
  for (const text of ["x to=user", " to=use", " to=user ", "", " to= to=user"]) assert.ok(!matchesBytes(dfa, utf8(text)), text);
});

test("property: a section the model may skip ends in the section and an answer, or the answer alone, never starting with the marker", () => {
  const tokens = ["<think>", "<", "th", "ink", ">", "</think>", "a", "b", "{", "}", '"a":', "1", "2", "x"];
  const vocab = makeVocab(tokens);
  const trie = TokenTrie.build(vocab);
  const section = dfaTokenMatcherFor(trie, reasoningDfa(utf8("<think>"), utf8("</think>")));
  // The answer alone may itself begin like the marker: "<th", "<think", "<thinka".
  const answerDfa = compileRegex('<th[a-z]*|\\{"a":[12]{1,3}\\}');
  const answer = dfaTokenMatcherFor(trie, answerDfa);
  const make = () =>
    new OptionalReasoningConstraint(
      new ReasoningConstraint(new DfaConstraintState(section), new DfaConstraintState(answer)),
      new DfaConstraintState(answer),
      "<think>".length,
    );
  const rand = rng(7);
  const mask = new Uint32Array(maskWords(vocab.size));
  const seen = new Set<string>();
  for (let run = 0; run < 600; run++) {
    const c = make();
    const budget = 3 + Math.floor(rand() * 16);
    assert.equal(c.minTokensToAccept(budget), 2, "the answer alone: <, th");
    let out = "";
    let undecided = 0;
    for (let remaining = budget; remaining > 0 && !(c.isAccepting() && rand() < 0.3); remaining--) {
      c.writeMask(remaining, mask);
      const ids = [...Array(vocab.size).keys()].filter((id) => maskHas(mask, id));
      if (ids.length === 0) break;
      const id = ids[Math.floor(rand() * ids.length)]!;
      if (c.reasons === null) undecided++;
      assert.ok(c.advance(id));
      out += tokens[id];
    }
    assert.ok(c.isAccepting(), `run ${run}: ${JSON.stringify(out)} within ${budget}`);
    if (out.startsWith("<think>")) {
      seen.add("reasoned");
      assert.equal(c.reasons, true);
      const end = out.indexOf("</think>") + "</think>".length;
      assert.ok(end > 0 && inSection(out.slice(0, end), "<think>", "</think>"), JSON.stringify(out));
      assert.ok(matchesBytes(answerDfa, utf8(out.slice(end))), `answer ${JSON.stringify(out.slice(end))}`);
    } else {
      seen.add(out.startsWith("<th") ? "answer like the marker" : "answer");
      assert.notEqual(c.reasons, true, JSON.stringify(out));
      assert.ok(matchesBytes(answerDfa, utf8(out)), JSON.stringify(out));
      assert.equal(c.reasoningTokenCount(), 0);
    }
    assert.ok(undecided <= 4, "decided by the marker's end: <, th, ink, > at most");
  }
  assert.deepEqual([...seen].sort(), ["answer", "answer like the marker", "reasoned"]);
  // Undecided after "<", "th", "ink": both masks; ">" takes the section.
  const c = make();
  for (const t of ["<", "th", "ink"]) assert.ok(c.advance(tokens.indexOf(t)));
  assert.equal(c.reasons, null);
  assert.ok(c.isAccepting(), "<think is an answer");
  c.writeMask(20, mask);
  assert.ok(maskHas(mask, tokens.indexOf(">")) && maskHas(mask, tokens.indexOf("a")));
  assert.ok(c.advance(tokens.indexOf(">")));
  assert.equal(c.reasons, true);
  assert.equal(c.isAccepting(), false);
});
