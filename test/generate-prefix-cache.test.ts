/**
 * The prefix cache (src/generate/prefix-cache.ts) on a real model (stories260K): a prompt that
 * begins like an earlier request's sequence reuses its KV cells (cachedTokens) and gives the next
 * token the log-probabilities a cold runtime gives, within float tolerance; it gives up its cells and sequences whenever an admission needs
 * them; cancelled jobs leave what they fed; off means off. The bookkeeping alone (which entry, what
 * is evicted) is checked on a fake sequence table.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { GenerationRuntime, MIN_PREFIX_MATCH, PrefixCache, type CompletionResult } from "../src/generate/index.js";
import { commonPrefixLength } from "../src/support/index.js";
import type { SequenceSlots } from "../src/model/index.js";
import { Categorizer } from "../src/categorize/index.js";
import { STORIES_260K } from "./support/paths.js";

const PROMPT = "Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friends. One day she";

const base = {
  prompt: PROMPT,
  maxNewTokens: 24,
  stopAfterMatch: false,
  temperature: 0.8,
  topK: 40,
  topP: 1,
  repetitionPenalty: 1,
  seed: 7,
  constraint: { kind: "text" as const },
};

/** A sequence table that records releases (the cache's only call into it). */
function fakeSlots(): SequenceSlots & { released: number[] } {
  const released: number[] = [];
  return { released, release: (seq: number) => void released.push(seq) } as unknown as SequenceSlots & { released: number[] };
}

const ids = (...xs: number[]) => Int32Array.from(xs);

describe("prefix cache bookkeeping", () => {
  test("the longest match wins, capped; below MIN_PREFIX_MATCH is no match", () => {
    const slots = fakeSlots();
    const cache = new PrefixCache(slots, { maxTokens: 1000, maxEntries: 8 });
    cache.keep(1, ids(1, 2, 3, 4, 5, 6));
    cache.keep(2, ids(1, 2, 3, 9, 9, 9, 9));
    assert.deepEqual(cache.match(ids(1, 2, 3, 4, 5, 7, 8), 6), { seq: 1, length: 5 });
    assert.deepEqual(cache.match(ids(1, 2, 3, 4, 5, 6, 7), 3), null, "3 < MIN_PREFIX_MATCH");
    assert.equal(MIN_PREFIX_MATCH, 4);
    assert.deepEqual(cache.match(ids(1, 2, 3, 9, 9, 9, 9, 9), 7), { seq: 2, length: 7 });
    assert.equal(cache.match(ids(5, 5, 5, 5, 5), 4), null);
    assert.equal(commonPrefixLength(ids(1, 2), ids(1, 2, 3)), 2);
  });

  test("an entry another extends is dropped; one already covered is not kept twice", () => {
    const slots = fakeSlots();
    const cache = new PrefixCache(slots, { maxTokens: 1000, maxEntries: 8 });
    cache.keep(1, ids(1, 2, 3, 4, 5));
    cache.keep(2, ids(1, 2, 3, 4, 5, 6, 7));
    assert.deepEqual(slots.released, [1], "the shorter entry goes");
    cache.keep(3, ids(1, 2, 3, 4, 5, 6));
    assert.deepEqual(slots.released, [1, 3], "covered by entry 2");
    assert.equal(cache.size, 1);
    assert.equal(cache.stats().evictions, 0, "neither is an eviction");
  });

  test("limits evict the least recently used; evictOne spares the entry asked for", () => {
    const slots = fakeSlots();
    const cache = new PrefixCache(slots, { maxTokens: 12, maxEntries: 2 });
    cache.keep(1, ids(1, 1, 1, 1, 1));
    cache.keep(2, ids(2, 2, 2, 2, 2));
    cache.use(1, 4); // entry 1 is now the most recently used
    cache.keep(3, ids(3, 3, 3, 3, 3));
    assert.deepEqual(slots.released, [2], "over maxEntries: the least recently used goes");
    assert.equal(cache.tokens, 10);
    cache.keep(4, ids(4, 4, 4, 4, 4));
    assert.equal(cache.tokens <= 12, true);
    assert.equal(cache.stats().evictions, 2);
    assert.equal(cache.evictOne(4), true);
    assert.equal(cache.holds(4), true, "spared");
    assert.equal(cache.evictOne(4), false, "nothing else to evict");
    cache.keep(5, ids(...Array.from({ length: 13 }, () => 5)));
    assert.equal(cache.holds(5), false, "longer than maxTokens: released at once");
    const off = new PrefixCache(slots, { maxTokens: 0, maxEntries: 0 });
    off.keep(6, ids(6, 6, 6, 6, 6));
    assert.equal(off.size, 0);
    assert.equal(off.match(ids(6, 6, 6, 6, 6), 4), null);
  });
});

describe("prefix cache on a real model", () => {
  let warm: GenerationRuntime;
  let cold: GenerationRuntime;
  before(() => {
    warm = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, contextSize: 1024, maxSequences: 8 });
    cold = GenerationRuntime.open({
      modelPath: STORIES_260K,
      threads: 1,
      contextSize: 1024,
      maxSequences: 8,
      prefixCache: { tokens: 0, entries: 0 },
    });
  });
  after(async () => {
    await warm.close();
    await cold.close();
  });

  /** The first token's log-probabilities of two runs agree within float tolerance (top ids and values). */
  const assertSameFirstToken = (a: CompletionResult, b: CompletionResult, what: string) => {
    const [x, y] = [a.tokens![0]!, b.tokens![0]!];
    const top = new Map(y.top!.map((t) => [t.id, t.logprob]));
    let compared = 0;
    for (const t of x.top!) {
      const other = top.get(t.id);
      if (other === undefined) continue; // a near tie at the edge of the top 5
      assert.ok(Math.abs(other - t.logprob) < 1e-3, `${what}: token ${t.id} ${t.logprob} vs ${other}`);
      compared++;
    }
    assert.ok(compared >= 4, `${what}: the top tokens differ`);
  };

  test("a repeated and an extended prompt reuse the earlier sequence; the next token's log-probabilities are a cold runtime's", async () => {
    // One token with its log-probabilities: what the prompt's cells (cached or evaluated) give.
    const probe = { ...base, maxNewTokens: 1, logprobs: 5 };
    const first = await warm.complete(probe);
    assert.equal(first.cachedTokens, undefined, "nothing cached yet");
    const again = await warm.complete(probe);
    // The prompt is fed less its last token (healing); one more must be evaluated for logits.
    assert.equal(again.cachedTokens, first.promptTokens! - 2);
    assertSameFirstToken(again, first, "repeat");
    assertSameFirstToken(again, await cold.complete(probe), "repeat against cold");
    const extended = { ...probe, prompt: `${PROMPT} went to the park. Then` };
    const reused = await warm.complete(extended);
    assert.ok((reused.cachedTokens ?? 0) >= MIN_PREFIX_MATCH, JSON.stringify(reused));
    const fresh = await cold.complete(extended);
    assert.equal(fresh.cachedTokens, undefined);
    assertSameFirstToken(reused, fresh, "extended against cold");
    // A whole completion from cached cells is a valid one (text decoded from its tokens).
    const long = await warm.complete({ ...base, maxNewTokens: 24 });
    assert.ok((long.cachedTokens ?? 0) >= MIN_PREFIX_MATCH && long.tokensGenerated === 24);
    const stats = warm.scheduler.prefixCache.stats();
    assert.ok(stats.hits >= 3 && stats.tokensReused >= again.cachedTokens! + reused.cachedTokens!, JSON.stringify(stats));
    assert.equal(cold.scheduler.prefixCache.stats().lookups, 0, "off: not even looked up");
  });

  test("constrained choices (n > 1) share a cached prompt, each a full match", async () => {
    const req = { ...base, constraint: { kind: "regex" as const, pattern: "( [a-z]+){3,6}\\." }, seed: 3 };
    await warm.complete(req);
    const choices = await warm.completeChoices(req, 3);
    for (const c of choices) {
      assert.match(c.completion, /^( [a-z]+){3,6}\.$/);
      assert.ok((c.cachedTokens ?? 0) >= MIN_PREFIX_MATCH, "every choice reports the shared prompt's reuse");
    }
  });

  test("categorization over a cached prompt: the prefix is reused, the scores those of a cold runtime within float tolerance", async () => {
    const categories = ["a dog", "a cat", "a bird", "a fish", "a horse"];
    const req = { prompt: `${PROMPT} saw an animal. Which one?`, categories, allowNullCategory: false, includeScores: true };
    const before = warm.scheduler.prefixCache.stats().tokensReused;
    for (const allowMultipleClasses of [false, true]) {
      const first = await new Categorizer(warm).categorize({ ...req, allowMultipleClasses });
      const again = await new Categorizer(warm).categorize({ ...req, allowMultipleClasses });
      const fresh = await new Categorizer(cold).categorize({ ...req, allowMultipleClasses });
      // A reused prefix sits in other KV cells than a fresh one, and attention sums over the cells
      // in their order: the last bits may move, nothing more.
      for (const c of categories) {
        assert.ok(Math.abs(again.scores![c]! - fresh.scores![c]!) < 1e-3, `${c}: ${again.scores![c]} vs ${fresh.scores![c]}`);
        assert.ok(Math.abs(first.scores![c]! - fresh.scores![c]!) < 1e-3, c);
      }
    }
    assert.ok(warm.scheduler.prefixCache.stats().tokensReused - before >= 3 * 20, "the shared prompt was reused");
  });

  test("cached sequences give way: more concurrent requests than free sequences and cells all run", async () => {
    // A small context: 8 sequences, 256 cells; fill the cache, then ask for more than is idle.
    const small = GenerationRuntime.open({ modelPath: STORIES_260K, threads: 1, contextSize: 256, maxSequences: 4 });
    try {
      for (let i = 0; i < 4; i++) await small.complete({ ...base, prompt: `${PROMPT} ${"and ".repeat(i)}`, maxNewTokens: 8 });
      const held = small.scheduler.prefixCache.stats();
      assert.ok(held.entries >= 1 && held.tokens > 0, JSON.stringify(held));
      const results: CompletionResult[] = await Promise.all(
        Array.from({ length: 6 }, (_, i) => small.complete({ ...base, prompt: `Tom had a ${i} dog.`, maxNewTokens: 100, seed: i })),
      );
      for (const r of results) assert.equal(r.tokensGenerated > 0, true);
      const stats = small.scheduler.prefixCache.stats();
      assert.ok(stats.evictions >= 1, JSON.stringify(stats));
      assert.ok(stats.tokens <= small.contextLength);
      assert.equal(small.scheduler.kvCacheUtilization, 0, "no reservation left behind");
    } finally {
      await small.close();
    }
  });

  test("a cancelled generation leaves the tokens it fed; the next request reuses them", async () => {
    const controller = new AbortController();
    const prompt = `${PROMPT} found a small red ball under a tree and`;
    let seen = 0;
    const running = warm.complete({
      ...base,
      prompt,
      maxNewTokens: 200,
      signal: controller.signal,
      onText: () => {
        if (++seen === 10) controller.abort(new Error("client went away"));
      },
    });
    await assert.rejects(running, /client went away/);
    const next = await warm.complete({ ...base, prompt });
    assert.ok((next.cachedTokens ?? 0) >= MIN_PREFIX_MATCH, JSON.stringify(next));
  });
});
