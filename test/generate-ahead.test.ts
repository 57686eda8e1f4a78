/**
 * Work ahead of the logits: the scheduler runs jobs' aheadOfLogits while the decode is in flight
 * (overlapDecode) or just before it; a completion's mask computed there is its own copy; a new
 * grammar's walks ahead happen in its first request's decode rounds, not when it is compiled.
 */
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { DecodeScheduler, runJob, type DecodeJob } from "../src/generate/index.js";
import { LlamaBatch, type LlamaContext, type SequenceSlots } from "../src/model/index.js";
import { compileRegexCached, regexConstraintFor } from "../src/compile/index.js";
import { GrammarConstraintState } from "../src/constraint/index.js";
import type { TokenConstraint } from "../src/constraint/index.js";
import type { CompletionOptions } from "../src/generate/index.js";
import { matchesString } from "../src/regex/index.js";
import { openRandomLogitsRuntime } from "./support/generate-harness.js";
import { vocabFile } from "./support/paths.js";

/** A context whose decode takes one event-loop turn and says when it starts and ends. */
function recordingContext(events: string[]): LlamaContext {
  return {
    nSeqMax: 4,
    nCtx: 64,
    createBatch: () => new LlamaBatch(16),
    async decodeAsync(): Promise<void> {
      events.push("decode start");
      await new Promise<void>((resolve) => setImmediate(resolve));
      events.push("decode end");
    },
    seqRemove: () => true,
  } as unknown as LlamaContext;
}

/** A one-round job: a row, then done; its aheadOfLogits records itself (and may throw). */
function oneRoundJob(
  events: string[],
  name: string,
  throwAhead: boolean,
  settle: (error?: unknown) => void,
): DecodeJob & { result(): string } {
  let consumed = false;
  return {
    seqsNeeded: 1,
    signal: undefined,
    prefilling: false,
    seq: -1,
    begin(this: { seq: number }, seqs: Int32Array) {
      this.seq = seqs[0]!;
    },
    fill(this: { seq: number }, batch: LlamaBatch, slots: SequenceSlots) {
      slots.append(batch, this.seq, 1, true);
    },
    aheadOfLogits() {
      events.push(`${name} ahead`);
      if (throwAhead) throw new Error("ahead failed");
    },
    consume() {
      events.push(`${name} consume`);
      consumed = true;
      return true;
    },
    settle,
    result: () => (consumed ? "done" : "not consumed"),
  } as DecodeJob & { result(): string; seq: number };
}

describe("scheduler: work ahead of the logits", () => {
  for (const overlapDecode of [true, false]) {
    test(`overlapDecode ${overlapDecode}: ${overlapDecode ? "while the decode is in flight" : "before the decode starts"}`, async () => {
      const events: string[] = [];
      const scheduler = new DecodeScheduler(recordingContext(events), { maxQueue: 4, overlapDecode });
      const results = await Promise.all([
        runJob(scheduler, (settle) => oneRoundJob(events, "a", false, settle)),
        runJob(scheduler, (settle) => oneRoundJob(events, "b", true, settle)),
      ]);
      // A throwing aheadOfLogits does not fail the round: consume() still runs.
      assert.deepEqual(results, ["done", "done"]);
      // The first submit starts the loop at once, so each job has a round of its own.
      const round = (name: string): string[] =>
        overlapDecode
          ? ["decode start", `${name} ahead`, "decode end", `${name} consume`]
          : [`${name} ahead`, "decode start", "decode end", `${name} consume`];
      const expected = [...round("a"), ...round("b")];
      assert.deepEqual(events, expected);
    });
  }
});

describe("completion jobs ahead of the logits (random logits, gpt-2 vocabulary)", () => {
  const rl = openRandomLogitsRuntime(vocabFile("gpt-2"), { maxSequences: 16 });
  after(() => rl.close());
  const base: CompletionOptions = {
    prompt: "Answer:",
    maxNewTokens: 6,
    stopAfterMatch: false,
    temperature: 1,
    topK: 0,
    topP: 1,
    repetitionPenalty: 1,
  };

  test("a mask computed ahead is the job's own: constraints sharing one scratch mask still hold", async () => {
    // Every constraint below hands out the same buffer, as a regex matcher's small-list masks do;
    // the jobs of a round all compute theirs before any consumes it.
    let scratch: Uint32Array | null = null;
    const sharing = (inner: TokenConstraint): TokenConstraint => ({
      writeMask(remaining, out) {
        scratch ??= new Uint32Array(out.length);
        inner.writeMask(remaining, scratch);
        out.set(scratch);
      },
      isAccepting: () => inner.isAccepting(),
      hasAnyToken: (remaining) => inner.hasAnyToken(remaining),
      advance: (token) => inner.advance(token),
      minTokensToAccept: (cap) => inner.minTokensToAccept(cap),
    });
    const patterns = ["[0-9]{4}", "(yes|no)", "[a-z]{2,5}", "-[0-9]+\\.[0-9]", "[A-Z][a-z]+", "(red|green|blue)!"];
    const results = await Promise.all(
      patterns.flatMap((pattern) =>
        [1, 2, 3].map(async (seed) => {
          const matcher = regexConstraintFor(rl.runtime.trie, compileRegexCached(pattern));
          const r = await rl.runtime.completeWithFactory({ ...base, seed }, (prefix) => sharing(matcher(prefix)), "pattern");
          return { pattern, completion: r.completion };
        }),
      ),
    );
    for (const { pattern, completion } of results) {
      assert.ok(matchesString(compileRegexCached(pattern), completion), `${JSON.stringify(completion)} does not match ${pattern}`);
    }
  });

  test("a new grammar walks ahead in its first request's decode rounds, not when compiled", async () => {
    const grammar = `start: "[" ITEM ("," ITEM)* "]"\nITEM: /"[a-z ]*"/ | /[0-9]+/\n`;
    const probe = async (): Promise<boolean> => {
      const state = (await rl.runtime.constraints.get({ kind: "grammar", grammar: grammar })).factory(undefined);
      assert.ok(state instanceof GrammarConstraintState);
      // The first mask before the probe: walkAhead counts its time against the walks' budget and
      // answers true once that budget is spent, which a loaded machine could make of a slow first
      // mask. Then, with a deadline already past: true only when everything was walked before.
      state.mask(12);
      return state.walkAhead(Number.NEGATIVE_INFINITY);
    };
    assert.equal(await probe(), false, "compiling the grammar walked ahead");
    const r = await rl.runtime.completeGrammar({ ...base, grammar, maxNewTokens: 12, seed: 5 });
    assert.match(r.completion, /^\[("[a-z ]*"|[0-9]+)(,("[a-z ]*"|[0-9]+))*\]$/);
    assert.equal(await probe(), true, "the request's decode rounds did not walk ahead");
  });
});
