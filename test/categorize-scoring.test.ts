/**
 * ScoringJob against a simulated context: a KV cache that enforces what llama.cpp does (a row's
 * sequence must hold exactly positions 0..pos-1; cells are shared by seq_cp, dropped by seq_rm)
 * and logits that are a hash of the whole token history the row sees. A wrong KV share, a missing
 * copy or a token decoded on the wrong sequence changes the history and so the scores.
 * Reference log-probabilities are computed directly from the same hash, branch by branch.
 */
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { ScoringJob, type ScoringRequest } from "../src/categorize/index.js";
import { logSumExp, logSumExpWithSets } from "../src/categorize/index.js";
import { nativeRowKernels } from "../src/model/index.js";
import { LlamaBatch, type LlamaContext } from "../src/model/index.js";
import { seededRandom } from "../src/support/index.js";

const VOCAB = 37;

/** Logits after a history: a fixed pseudo-random function of (history, token). */
function logitsFor(history: number[]): Float32Array {
  let h = 2166136261;
  for (const t of history) h = Math.imul(h ^ (t + 1), 16777619);
  const out = new Float32Array(VOCAB);
  for (let v = 0; v < VOCAB; v++) {
    let x = Math.imul(h ^ (v * 2654435761), 1597334677) >>> 0;
    x ^= x >>> 15;
    out[v] = ((x % 1000) / 1000) * 6 - 3;
  }
  return out;
}

function logSoftmaxAt(logits: Float32Array, ids: number[]): number {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  let m2 = -Infinity;
  for (const id of ids) m2 = Math.max(m2, logits[id]!);
  let s2 = 0;
  for (const id of ids) s2 += Math.exp(logits[id]! - m2);
  return m2 + Math.log(s2) - lse;
}

class FakeContext {
  /** Per sequence: position → token. */
  readonly seqs = new Map<number, Map<number, number>>();
  private rows: Float32Array[] = [];
  maxLiveCells = 0;

  private seq(s: number): Map<number, number> {
    let m = this.seqs.get(s);
    if (!m) this.seqs.set(s, (m = new Map()));
    return m;
  }

  decode(batch: LlamaBatch): void {
    this.rows = [];
    let extra = 0;
    for (let r = 0; r < batch.length; r++) {
      // A shared row belongs to every listed sequence; each must hold exactly 0..pos-1.
      const owners = [batch.seqIds[r]!];
      for (let k = 1; k < batch.seqCounts[r]!; k++) owners.push(batch.extraSeqs[extra++]!);
      const pos = batch.positions[r]!;
      let history: number[] = [];
      for (const id of owners) {
        const seq = this.seq(id);
        assert.equal(seq.size, pos, `sequence ${id} holds ${seq.size} positions, row at ${pos}`);
        for (let p = 0; p < pos; p++) assert.ok(seq.has(p), `sequence ${id} lacks position ${p}`);
        seq.set(pos, batch.tokens[r]!);
        const seen = Array.from({ length: pos + 1 }, (_, p) => seq.get(p)!);
        if (id !== owners[0]) assert.deepEqual(seen, history, `sequences of a shared row see different histories`);
        history = seen;
      }
      this.rows[r] = batch.wantLogits[r] ? logitsFor(history) : new Float32Array(0);
    }
    const cells = new Set<string>();
    for (const m of this.seqs.values()) for (const [p, t] of m) cells.add(`${p}:${t}`);
    this.maxLiveCells = Math.max(this.maxLiveCells, cells.size);
  }

  logits(row: number): Float32Array {
    const l = this.rows[row];
    assert.ok(l && l.length === VOCAB, `row ${row} asked no logits`);
    return l;
  }

  seqCopy(src: number, dst: number, p0: number, p1: number): void {
    const from = this.seq(src);
    const to = this.seq(dst);
    for (const [p, t] of from) if (p >= p0 && (p1 < 0 || p < p1)) to.set(p, t);
  }

  seqRemove(seq: number, p0: number, p1: number): boolean {
    const m = this.seq(seq);
    for (const p of [...m.keys()]) if ((p0 < 0 || p >= p0) && (p1 < 0 || p < p1)) m.delete(p);
    return true;
  }
}

function run(req: Omit<ScoringRequest, "signal">, room: number) {
  let settled: unknown = "pending";
  const job = new ScoringJob({ ...req, signal: undefined }, (e) => (settled = e));
  const seqs = Int32Array.from({ length: job.seqsNeeded }, (_, i) => 10 + i);
  job.begin(seqs);
  const ctx = new FakeContext();
  // `lengths`: the job records how much of the prefix its first sequence holds (the prefix cache keeps it).
  const slots = { context: ctx, lengths: new Int32Array(64) };
  const batch = new LlamaBatch(room);
  for (let round = 0; round < 10_000; round++) {
    batch.clear();
    job.fill(batch, slots as never, room);
    assert.ok(batch.length > 0 && batch.length <= room, `round ${round} added ${batch.length} rows`);
    ctx.decode(batch);
    if (job.consume(ctx as unknown as LlamaContext)) {
      job.settle();
      assert.equal(settled, undefined);
      return { result: job.result(), stats: job.stats, ctx };
    }
  }
  throw new Error("job never finished");
}

function reference(req: Omit<ScoringRequest, "signal">) {
  return req.branches.map((branch, b) => {
    const history = [...req.prefix];
    let sum = 0;
    for (let d = 0; d < branch.length; d++) {
      if (d >= req.scoreFrom[b]!) sum += logSoftmaxAt(logitsFor(history), [branch[d]!]);
      history.push(branch[d]!);
    }
    const after = req.readAfter.map((set) => logSoftmaxAt(logitsFor(history), [...set]));
    return { sum, after };
  });
}

/** Seeded (mulberry32), so a failure reproduces. */
const rng = seededRandom;

/** Random branches over a small alphabet, so many share prefixes or are prefixes of others. */
function randomRequest(next: () => number): Omit<ScoringRequest, "signal"> {
  const prefix = Int32Array.from({ length: 1 + Math.floor(next() * 6) }, () => Math.floor(next() * VOCAB));
  const count = 1 + Math.floor(next() * 20);
  const seen = new Set<string>();
  const branches: Int32Array[] = [];
  while (branches.length < count) {
    const b = Int32Array.from({ length: 1 + Math.floor(next() * 6) }, () => Math.floor(next() * 3));
    if (seen.has(b.join())) continue;
    seen.add(b.join());
    branches.push(b);
  }
  const scoreFrom = Int32Array.from(branches, (b) => (next() < 0.7 ? 0 : Math.floor(next() * b.length)));
  return {
    prefix,
    branches,
    scoreFrom,
    readAfter: [Int32Array.of(0, 5, 9), Int32Array.of(1)],
    maxBranchSeqs: 1 + Math.floor(next() * 8),
    maxCells: 1000,
  };
}

describe("ScoringJob over a simulated KV cache", () => {
  test("random tries, batch sizes and waves: scores equal the branch-by-branch reference", () => {
    const next = rng(12345);
    for (let k = 0; k < 300; k++) {
      const req = randomRequest(next);
      const room = 1 + Math.floor(next() * 12);
      const { result } = run(req, room);
      const ref = reference(req);
      ref.forEach((r, b) => {
        assert.ok(Math.abs(result.tokenLogProb[b]! - r.sum) < 1e-6, `case ${k} branch ${b}: ${result.tokenLogProb[b]} vs ${r.sum}`);
        r.after.forEach((v, s) => assert.ok(Math.abs(result.after[b * 2 + s]! - v) < 1e-6, `case ${k} branch ${b} set ${s}`));
      });
    }
  });

  test("each trie node is decoded once, chains in one round, the prefix once across waves", () => {
    const prefix = Int32Array.of(1, 2, 3, 4);
    // Trie: [5 6 7 8] [5 6 9] [5 6 9 10 11] [12 13 14 15 16 17]: nodes 5,6,7,8,9,10,11,12..17 = 13.
    const branches = [
      Int32Array.of(5, 6, 7, 8),
      Int32Array.of(5, 6, 9),
      Int32Array.of(5, 6, 9, 10, 11),
      Int32Array.of(12, 13, 14, 15, 16, 17),
    ];
    const req = { prefix, branches, scoreFrom: new Int32Array(4), readAfter: [Int32Array.of(0)], maxBranchSeqs: 8, maxCells: 100 };
    const { stats } = run(req, 64);
    assert.equal(stats.rows, 4 + 13);
    // Prefix (rows shared by the branches' sequences) with chains [5 6] and [12..17] in the same
    // decode; then [7 8] and [9 10 11] (a branch ending inside a chain does not cut it: its end
    // is read from the chain's row).
    assert.equal(stats.rounds, 2);
    // Logits only where read: prefix end, 5, 6, 7, 8, 9, 10, 11, 12..17.
    assert.equal(stats.logitRows, 1 + 13);
    // Unscored shared stems (a multi-class question) need no logits until their end.
    const quiet = run({ ...req, scoreFrom: Int32Array.from(branches, (b) => b.length) }, 64);
    assert.equal(quiet.stats.logitRows, 1 + 4);
    // One branch sequence: four waves over the single prefix evaluation.
    const waved = run({ ...req, maxBranchSeqs: 1 }, 64);
    assert.equal(waved.stats.rows, 4 + 4 + 3 + 5 + 6);
    const one = run(req, 64);
    for (let b = 0; b < 4; b++) assert.ok(Math.abs(waved.result.tokenLogProb[b]! - one.result.tokenLogProb[b]!) < 1e-9);
  });

  test("waves keep within the KV cell budget", () => {
    const prefix = Int32Array.from({ length: 10 }, (_, i) => i);
    const branches = Array.from({ length: 12 }, (_, i) => Int32Array.of(20 + i, 1, 2, 3, 4));
    const { ctx, result } = run(
      { prefix, branches, scoreFrom: new Int32Array(12), readAfter: [], maxBranchSeqs: 12, maxCells: 10 + 5 * 3 },
      512,
    );
    assert.ok(ctx.maxLiveCells <= 25, `live cells ${ctx.maxLiveCells}`);
    assert.equal(result.tokenLogProb.length, 12);
    assert.throws(
      () => run({ prefix, branches, scoreFrom: new Int32Array(12), readAfter: [], maxBranchSeqs: 12, maxCells: 12 }, 512),
      RangeError,
    );
  });
});

// The addon's normaliser (native/kernels.h) against the TypeScript one: every row read by a
// categorization goes through it, so both must agree far inside the scores' tolerances.
test("the native log-sum-exp agrees with the TypeScript one to 1e-6, with and without token sets", () => {
  const kernels = nativeRowKernels();
  assert.ok(kernels, "the addon is built (npm ci)");
  const random = seededRandom(99);
  let rows = 0;
  for (let round = 0; round < 200; round++) {
    const n = round % 40 === 0 ? 151_936 : 1 + Math.floor(random() * 3000);
    const logits = new Float32Array(n);
    const spread = [0.001, 5, 60][round % 3]!;
    for (let i = 0; i < n; i++) logits[i] = Math.fround((random() - 0.5) * spread + (round % 4 === 1 ? 30 : 0));
    const specials = round % 5;
    for (let i = 0; i < specials; i++) logits[Math.floor(random() * n)] = [NaN, -Infinity, -200, 88][i % 4]!;
    if (round === 7) logits.fill(-Infinity);
    if (round === 11) logits[n >> 1] = Infinity;
    const numSets = round % 9;
    const membership = new Uint8Array(n);
    for (let k = 0; k < numSets; k++) {
      const size = k === 3 ? 0 : Math.floor(random() * Math.min(n, 500));
      for (let j = 0; j < size; j++) membership[Math.floor(random() * n)]! |= 1 << k;
    }
    const want = new Float64Array(numSets);
    const got = new Float64Array(numSets);
    const lseWant = numSets > 0 ? logSumExpWithSets(logits, membership, numSets, want) : logSumExp(logits);
    const lseGot = kernels.logSumExp(logits, numSets > 0 ? membership : null, numSets, numSets > 0 ? got : null);
    const close = (a: number, b: number): boolean => a === b || Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a));
    assert.ok(close(lseGot, lseWant), `round ${round}: ${lseGot} vs ${lseWant}`);
    for (let k = 0; k < numSets; k++) assert.ok(close(got[k]!, want[k]!), `round ${round} set ${k}: ${got[k]} vs ${want[k]}`);
    rows++;
  }
  assert.equal(rows, 200);
});
