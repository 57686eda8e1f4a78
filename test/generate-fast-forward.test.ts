/**
 * Fast-forward (src/generate/fast-forward.ts): the bytes a DFA constraint forces, how they are
 * spelled in tokens (the model's own tokens, else the longest ones; the last left open unless
 * every match ends there), and on a real model (stories260K): outputs still full matches, also
 * under the tightest budgets, streamed text equal to the answer, the per-request switch, and
 * forced tokens counted as generated.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { compileRegexCached, grammarConstraintFor, regexConstraintFor } from "../src/compile/index.js";
import { type DfaConstraintState, type GrammarConstraintState, tokenTrieFor } from "../src/constraint/index.js";
import { FAST_FORWARD_MAX_BYTES, forcedSpeller, forcedTokens } from "../src/generate/fast-forward.js";
import { CompletionJob, GenerationRuntime, runJob, type ConstrainedCompletionRequest } from "../src/generate/index.js";
import { Sampler } from "../src/sampling/index.js";
import { openRandomLogitsRuntime } from "./support/generate-harness.js";
import { matchesString } from "../src/regex/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { ORACLE_PYTHON, REPO_ROOT, STORIES_260K, vocabFile } from "./support/paths.js";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("forced bytes and their tokens", () => {
  const vocab = loadVocabulary(vocabFile("gpt-2"));
  const trie = tokenTrieFor(vocab);
  const state = (pattern: string) => regexConstraintFor(trie, compileRegexCached(pattern))(undefined) as DfaConstraintState;
  const spellLongest = forcedSpeller(vocab, trie, () => Int32Array.of(-1)); // a tokenizer that never spells: the longest tokens
  /** The token whose bytes are `s`. */
  const idOf = (s: string): number => {
    const node = trie.findNode(bytes(s));
    assert.ok(node > 0 && trie.tokenStart[node + 1]! > trie.tokenStart[node]!, `no token ${JSON.stringify(s)}`);
    return trie.tokenIds[trie.tokenStart[node]!]!;
  };

  test("a DFA forces bytes while exactly one can follow and the text is not a match", () => {
    const s = state('\\{"name": "[a-z]+", "age": [0-9]\\}');
    const forced = s.forcedBytes(FAST_FORWARD_MAX_BYTES)!;
    assert.equal(text(forced.bytes), '{"name": "');
    assert.equal(forced.ends, false);
    for (const c of '{"name": "bob') assert.ok(s.advance(idOf(c)));
    assert.equal(s.forcedBytes(64), null, "a letter or the quote may follow");
    const closing = state("abc(de)?");
    assert.equal(text(closing.forcedBytes(64)!.bytes), "abc");
    assert.equal(closing.forcedBytes(64)!.ends, false, "accepting after abc, but de may follow");
    const whole = state("hello world");
    assert.equal(text(whole.forcedBytes(64)!.bytes), "hello world");
    assert.equal(whole.forcedBytes(64)!.ends, true);
    assert.ok(
      whole.forcedBytes(64)!.then.every((w) => w === 0),
      "nothing may follow",
    );
    const then = state("ab(c|d)").forcedBytes(64)!.then;
    const followers = Array.from({ length: 256 }, (_, b) => b).filter((b) => ((then[b >>> 5]! >>> (b & 31)) & 1) === 1);
    assert.deepEqual(followers, [0x63, 0x64], "what may follow the run: c or d");
    assert.equal(text(whole.forcedBytes(5)!.bytes), "hello");
    assert.equal(whole.forcedBytes(5)!.ends, false, "cut short by max: not the end");
    assert.equal(state("a|b").forcedBytes(64), null);
  });

  test("a grammar forces a literal's bytes while one byte can follow; ignored whitespace or a choice stops it", () => {
    const grammar = (source: string) => grammarConstraintFor(trie, source)(undefined) as GrammarConstraintState;
    const followers = (then: Uint32Array) =>
      String.fromCharCode(...Array.from({ length: 256 }, (_, b) => b).filter((b) => ((then[b >>> 5]! >>> (b & 31)) & 1) === 1));
    const sql = grammar('start: "SELECT" NAME "FROM" NAME\nNAME: /[a-z]+/\n%ignore " "');
    assert.equal(sql.forcedBytes(64), null, "S, or a space (ignored)");
    assert.ok(sql.advance(idOf("S")));
    const first = sql.forcedBytes(FAST_FORWARD_MAX_BYTES)!;
    assert.equal(text(first.bytes), "ELECT");
    assert.equal(first.ends, false);
    assert.equal(followers(first.then), " abcdefghijklmnopqrstuvwxyz", "a space (ignored) or the name");
    for (const c of "ELECT x") assert.ok(sql.advance(idOf(c)));
    assert.equal(sql.forcedBytes(64), null, "the name goes on, or a space, or FROM");
    assert.ok(sql.advance(idOf(" ")));
    assert.ok(sql.advance(idOf("F")));
    assert.equal(text(sql.forcedBytes(64)!.bytes), "ROM");
    const bool = grammar('start: "true" | "false"');
    assert.equal(bool.forcedBytes(64), null, "t or f");
    assert.ok(bool.advance(idOf("t")));
    const rest = bool.forcedBytes(64)!;
    assert.equal(text(rest.bytes), "rue");
    assert.equal(rest.ends, true, "complete, and nothing may follow");
    assert.equal(followers(rest.then), "");
    assert.equal(text(bool.forcedBytes(2)!.bytes), "ru");
    assert.equal(bool.forcedBytes(2)!.ends, false, "cut short by max: not the end");
    // Every forced token is checked against the budget like a sampled one.
    assert.equal(bool.allowsWithin(idOf("rue"), 1), true);
    assert.equal(bool.allowsWithin(idOf("r"), 1), false, "r then ue: two tokens, one left");
    assert.equal(bool.allowsWithin(idOf("x"), 5), false);
  });

  test("forced text is spelled exactly; the last token stays open where a longer token could go on past the run", () => {
    const spelledBy = (tokens: Int32Array) => text(Uint8Array.from([...tokens].flatMap((t) => [...vocab.tokenBytes(t)])));
    // " the " then c or d: " c" and " d" are tokens that begin with the run's last token " ".
    assert.equal(spelledBy(forcedTokens(state(" the (cat|dog)"), spellLongest)!), " the");
    // " world" then 1 or 2: no token goes on from " world" with a digit, so it is forced too.
    assert.equal(spelledBy(forcedTokens(state("hello world(1|2)"), spellLongest)!), "hello world");
    const ends = forcedTokens(state("hello world"), spellLongest)!;
    assert.equal(text(Uint8Array.from([...ends].flatMap((t) => [...vocab.tokenBytes(t)]))), "hello world");
    // The model's own tokens when they spell the bytes; not when they do not.
    const canonical = forcedSpeller(vocab, trie, () => Int32Array.of(...[..."hello world"].map((c) => idOf(c))));
    assert.deepEqual(
      [...canonical.spell(bytes("hello world"))!].map((t) => text(vocab.tokenBytes(t))),
      [..."hello world"],
    );
    const wrong = forcedSpeller(vocab, trie, () => Int32Array.of(idOf(" hello")));
    assert.notDeepEqual([...wrong.spell(bytes("hello"))!], [idOf(" hello")]);
    // A run that ends inside a UTF-8 character stops before it.
    const utf = forcedTokens(state("ab\u00e9c|ab\u00e9d"), spellLongest);
    assert.ok(utf === null || text(Uint8Array.from([...utf].flatMap((t) => [...vocab.tokenBytes(t)]))).startsWith("ab"));
  });
});

test("a forced run spelled in more tokens than the budget has stops where it would no longer fit; the text still matches", async () => {
  const rt = openRandomLogitsRuntime(vocabFile("gpt-2"), { maxSequences: 4 });
  try {
    const { runtime } = rt;
    const pattern = "hello world, hello world";
    const dfa = compileRegexCached(pattern);
    const make = regexConstraintFor(runtime.trie, dfa);
    // minTokensToAccept(cap) answers "fits within cap" cheaply: the fewest is the first budget that fits.
    let fewest = 1;
    while (make(undefined).minTokensToAccept(fewest) > fewest) fewest++;
    assert.ok(fewest < 10, `fewest ${fewest}`);
    // A speller that writes every byte as its own token: far more tokens than the fewest.
    const byteTokens = (b: Uint8Array) => {
      const node = (c: number) => runtime.trie.tokenIds[runtime.trie.tokenStart[runtime.trie.rootChild[c]!]!]!;
      return Int32Array.from(b, node);
    };
    const speller = { trie: runtime.trie, spell: byteTokens };
    for (const budget of [fewest, fewest + 3, 64]) {
      const constraint = make(undefined);
      const job = await runJob(
        runtime.scheduler,
        (settle) =>
          new CompletionJob({
            promptTokens: runtime.tokenizePrompt("Say:"),
            constraint,
            sampler: new Sampler(runtime.vocab.size, { temperature: 1, topK: 0, topP: 1, repetitionPenalty: 1, seed: budget }),
            vocab: runtime.vocab,
            maxNewTokens: budget,
            stopAfterMatch: true,
            forcedPrefixLength: 0,
            signal: undefined,
            settle,
            fastForward: speller,
          }),
      );
      assert.equal(job.completion, pattern, `budget ${budget}`);
      assert.ok(job.tokensGenerated <= budget, `budget ${budget}: ${job.tokensGenerated} tokens`);
      if (budget === 64)
        assert.equal(job.fastForwardedTokens, job.tokensGenerated - 1, "everything after the first (sampled) token forced");
      else assert.ok((job.fastForwardedTokens ?? 0) < pattern.length - 1, "the run stopped where the budget required");
    }
  } finally {
    await rt.close();
  }
});

describe("fast-forward on a real model (stories260K)", () => {
  let runtime: GenerationRuntime;
  before(() => {
    runtime = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, contextSize: 1024, maxSequences: 8 });
  });
  after(() => runtime.close());

  const base = {
    prompt: "Once upon a time",
    stopAfterMatch: true,
    temperature: 1,
    topK: 40,
    topP: 1,
    repetitionPenalty: 1,
  } satisfies Partial<ConstrainedCompletionRequest>;
  const pattern = '\\{"name": "[a-z]{1,8}", "legs": [0-9], "kind": "(cat|dog|bird)"\\}';

  test("forced runs are appended, counted as generated, and the output fully matches, under every budget that fits", async () => {
    const needed = (await runtime.complete({ ...base, maxNewTokens: 200, seed: 1, constraint: { kind: "regex", pattern } }))
      .tokensGenerated;
    let forcedSeen = 0;
    for (let seed = 0; seed < 12; seed++) {
      for (const maxNewTokens of [200, 40, 30]) {
        let result: Awaited<ReturnType<typeof runtime.complete>>;
        try {
          result = await runtime.complete({ ...base, maxNewTokens, seed, constraint: { kind: "regex", pattern } });
        } catch (error) {
          assert.ok(maxNewTokens < needed, `refused at ${maxNewTokens}: ${String(error)}`);
          continue;
        }
        assert.ok(matchesString(compileRegexCached(pattern), result.completion), `${maxNewTokens}: ${result.completion}`);
        assert.ok(result.tokensGenerated <= maxNewTokens);
        forcedSeen += result.fastForwardedTokens ?? 0;
        assert.ok((result.fastForwardedTokens ?? 0) < result.tokensGenerated);
      }
    }
    assert.ok(forcedSeen > 0, "some tokens were forced");
  });

  test("the tightest budget: the fewest tokens the pattern needs, forced split or not", async () => {
    const tight = "(the quick brown fox|a) jumps over the lazy dog";
    const entry = { kind: "regex" as const, pattern: tight };
    let fewest = 1;
    for (; fewest < 64; fewest++) {
      try {
        await runtime.complete({ ...base, maxNewTokens: fewest, seed: 1, constraint: entry });
        break;
      } catch {}
    }
    for (let seed = 0; seed < 8; seed++) {
      const r = await runtime.complete({ ...base, maxNewTokens: fewest, seed, constraint: entry });
      assert.ok(matchesString(compileRegexCached(tight), r.completion), r.completion);
      assert.ok(r.tokensGenerated <= fewest);
    }
  });

  test("streamed text is the answer; off per request means nothing forced", async () => {
    const req = { ...base, maxNewTokens: 120, seed: 4, constraint: { kind: "regex" as const, pattern } };
    let streamed = "";
    const r = await runtime.complete({ ...req, onText: (delta) => void (streamed += delta) });
    assert.equal(streamed, r.completion);
    assert.ok((r.fastForwardedTokens ?? 0) > 0);
    const off = await runtime.complete({ ...req, fastForward: false });
    assert.equal(off.fastForwardedTokens, undefined);
    assert.ok(matchesString(compileRegexCached(pattern), off.completion));
    const withLogprobs = await runtime.complete({ ...req, logprobs: 2 });
    assert.equal(withLogprobs.fastForwardedTokens, undefined, "logprobs: every token sampled");
    assert.equal(withLogprobs.tokens!.length, withLogprobs.tokensGenerated);
  });

  test("off for the whole runtime (TRELLIS_FAST_FORWARD=false): nothing forced unless a request asks", async () => {
    const off = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, contextSize: 512, maxSequences: 2, fastForward: false });
    try {
      const req = { ...base, maxNewTokens: 120, seed: 4, constraint: { kind: "regex" as const, pattern } };
      const r = await off.complete(req);
      assert.equal(r.fastForwardedTokens, undefined);
      assert.ok(matchesString(compileRegexCached(pattern), r.completion));
      assert.ok(((await off.complete({ ...req, fastForward: true })).fastForwardedTokens ?? 0) > 0, "a request may still ask for it");
    } finally {
      await off.close();
    }
  });

  test("grammars fast-forward through their literals; every completion is a sentence Lark accepts", async () => {
    const grammar = [
      'start: "SELECT " cols " FROM " NAME (" WHERE " cond)? ";"',
      'cols: NAME ("," " "? NAME)*',
      'cond: NAME " = " (NUMBER | "\'" NAME "\'")',
      "NAME: /[a-z]{1,6}/",
      "NUMBER: /[0-9]{1,3}/",
    ].join("\n");
    const texts: string[] = [];
    let forced = 0;
    for (let seed = 0; seed < 8; seed++) {
      for (const maxNewTokens of [120, 24]) {
        let r: Awaited<ReturnType<typeof runtime.completeGrammar>>;
        try {
          r = await runtime.completeGrammar({ ...base, prompt: "SQL: ", grammar, maxNewTokens, seed });
        } catch (error) {
          assert.equal(maxNewTokens, 24, `refused at ${maxNewTokens}: ${String(error)}`);
          continue;
        }
        assert.ok(r.tokensGenerated <= maxNewTokens);
        forced += r.fastForwardedTokens ?? 0;
        texts.push(r.completion);
      }
    }
    assert.ok(forced > 0, "some tokens were forced");
    const input = JSON.stringify({ grammar, texts }) + "\n";
    const oracle = spawnSync(ORACLE_PYTHON, [resolve(REPO_ROOT, "test", "grammars", "lark_oracle.py")], { input, encoding: "utf8" });
    const answer = JSON.parse(oracle.stdout) as { ok: boolean; results: boolean[] };
    assert.ok(answer.ok, oracle.stdout + oracle.stderr);
    answer.results.forEach((ok, i) => assert.ok(ok, `Lark refuses ${JSON.stringify(texts[i])}`));
  });

  test("a stop string inside a forced run ends the text before it", async () => {
    const r = await runtime.complete({
      ...base,
      maxNewTokens: 120,
      seed: 2,
      stopAfterMatch: false,
      stop: ['"legs'],
      constraint: { kind: "regex", pattern },
    });
    assert.equal(r.stopReason, "stop_sequence");
    assert.match(r.completion, /^\{"name": "[a-z]{1,8}", $/);
  });
});
