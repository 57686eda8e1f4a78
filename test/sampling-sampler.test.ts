// The sampler against reference computations: greedy and its ties, top_k, top_p, temperature and
// repetition penalty, frequencies against the reference distribution, seeds, masked-out tokens
// never sampled, fallbacks and refused parameters, a full-size (152k) vocabulary, and the native
// gather kernel drawing exactly what the TypeScript loop draws.
import { test } from "node:test";
import assert from "node:assert/strict";
import { nativeRowKernels } from "../src/model/index.js";
import {
  EmptyMaskError,
  Sampler,
  SamplingParamsError,
  Xoshiro128,
  gatherCandidatesScript,
  gatherKernelInUse,
  useGatherKernel,
  type SamplingParams,
} from "../src/sampling/index.js";
import { maskWords } from "../src/support/index.js";

const params = (p: Partial<SamplingParams> = {}): SamplingParams => ({
  temperature: 1,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  seed: 1,
  ...p,
});

function maskOf(size: number, allowed: Iterable<number>): Uint32Array {
  const m = new Uint32Array(maskWords(size));
  for (const id of allowed) m[id >>> 5]! |= 1 << (id & 31);
  return m;
}
const isAllowed = (mask: Uint32Array | null, id: number): boolean => !mask || (mask[id >>> 5]! & (1 << (id & 31))) !== 0;

/** Straightforward HF-style reference: the set of tokens that may be sampled (and their weights). */
function referenceDistribution(
  logits: Float32Array,
  mask: Uint32Array | null,
  p: SamplingParams,
  seen: Set<number>,
  topPSlack = 0,
): Map<number, number> {
  const scored: Array<[number, number]> = [];
  for (let id = 0; id < logits.length; id++) {
    if (!isAllowed(mask, id)) continue;
    let v = logits[id]!;
    if (Number.isNaN(v)) continue;
    if (seen.has(id) && p.repetitionPenalty !== 1) v = v > 0 ? v / p.repetitionPenalty : v * p.repetitionPenalty;
    if (v === -Infinity) continue;
    scored.push([id, v]);
  }
  scored.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  if (p.topK > 0 && p.topK < scored.length) {
    const kth = scored[p.topK - 1]![1];
    while (scored[scored.length - 1]![1] < kth) scored.pop();
  }
  const max = scored[0]![1];
  const weights = scored.map(([, v]) => Math.exp((v - max) / p.temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  const out = new Map<number, number>();
  let before = 0;
  for (let i = 0; i < scored.length; i++) {
    if (p.topP < 1 && before >= (p.topP + topPSlack) * total) break;
    out.set(scored[i]![0], weights[i]!);
    before += weights[i]!;
  }
  return out;
}

function maskedArgmax(logits: Float32Array, mask: Uint32Array | null, penalty = 1, seen = new Set<number>()): number {
  let best = -1;
  let bestValue = -Infinity;
  for (let id = 0; id < logits.length; id++) {
    if (!isAllowed(mask, id)) continue;
    let v = logits[id]!;
    if (seen.has(id)) v = v > 0 ? v / penalty : v * penalty;
    if (v > bestValue) {
      best = id;
      bestValue = v;
    }
  }
  return best;
}

function randomLogits(rng: Xoshiro128, n: number, scale = 8): Float32Array {
  const l = new Float32Array(n);
  for (let i = 0; i < n; i++) l[i] = (rng.nextDouble() * 2 - 1) * scale;
  return l;
}

function randomMask(rng: Xoshiro128, n: number): Uint32Array {
  const m = new Uint32Array(maskWords(n));
  const style = rng.nextUint32() % 4;
  if (style === 0) {
    m[0] = 0; // single token
    const id = rng.nextUint32() % n;
    m[id >>> 5] = 1 << (id & 31);
  } else if (style === 1) {
    for (let i = 0; i < m.length; i++) m[i] = rng.nextUint32() & rng.nextUint32() & rng.nextUint32(); // sparse
  } else if (style === 2) {
    for (let i = 0; i < m.length; i++) m[i] = rng.nextUint32() % 3 === 0 ? 0xffffffff : 0; // whole words
  } else {
    for (let i = 0; i < m.length; i++) m[i] = rng.nextUint32();
  }
  if (n % 32 !== 0) m[m.length - 1]! |= ~0 << (n % 32); // bits past the vocabulary must be ignored
  let any = false;
  for (let id = 0; id < n && !any; id++) any = isAllowed(m, id);
  if (!any) {
    const id = rng.nextUint32() % n;
    m[id >>> 5]! |= 1 << (id & 31);
  }
  return m;
}

test("temperature 0 is greedy, and top_k = 1 is argmax, over random logits and masks", () => {
  const rng = new Xoshiro128(7);
  const n = 1000;
  for (let trial = 0; trial < 400; trial++) {
    const logits = randomLogits(rng, n);
    const mask = trial % 5 === 0 ? null : randomMask(rng, n);
    const expected = maskedArgmax(logits, mask);
    const greedy = new Sampler(n, params({ temperature: 0, topK: 7, topP: 0.3, seed: trial }));
    assert.equal(greedy.sample(logits, mask), expected);
    const top1 = new Sampler(n, params({ temperature: 1.3, topK: 1, seed: trial }));
    assert.equal(top1.sample(logits, mask), expected);
  }
});

test("greedy breaks ties toward the lowest id (torch.argmax)", () => {
  const s = new Sampler(8, params({ temperature: 0 }));
  assert.equal(s.sample(new Float32Array([0, 3, 1, 3, 3, 0, 0, 0])), 1);
  assert.equal(s.sample(new Float32Array([0, 3, 1, 3, 3, 0, 0, 0]), maskOf(8, [3, 4, 5])), 3);
});

test("top_k keeps the k best (and ties with the k-th, as HF does)", () => {
  const logits = new Float32Array([5, 5, 5, 1, 0, 4.9]);
  const s = new Sampler(6, params({ topK: 1, seed: 3 }));
  const seen = new Set<number>();
  for (let i = 0; i < 300; i++) seen.add(s.sample(logits));
  assert.deepEqual([...seen].sort(), [0, 1, 2]);
  const s2 = new Sampler(6, params({ topK: 4, temperature: 50, seed: 3 }));
  const seen2 = new Set<number>();
  for (let i = 0; i < 2000; i++) seen2.add(s2.sample(logits));
  assert.deepEqual([...seen2].sort(), [0, 1, 2, 5]);
});

test("top_p keeps the smallest most-probable set reaching p, with the right frequencies", () => {
  // probabilities 0.5, 0.3, 0.15, 0.05
  const logits = Float32Array.from([0.5, 0.3, 0.15, 0.05], Math.log);
  const cases: Array<[number, number[]]> = [
    [0.45, [0]],
    [0.75, [0, 1]],
    [0.9, [0, 1, 2]],
    [0.99, [0, 1, 2, 3]],
  ];
  for (const [topP, kept] of cases) {
    const s = new Sampler(4, params({ topP, seed: 11 }));
    const counts = [0, 0, 0, 0];
    const draws = 20_000;
    for (let i = 0; i < draws; i++) counts[s.sample(logits)]!++;
    const keptMass = kept.reduce((a, id) => a + [0.5, 0.3, 0.15, 0.05][id]!, 0);
    for (let id = 0; id < 4; id++) {
      const expected = kept.includes(id) ? [0.5, 0.3, 0.15, 0.05][id]! / keptMass : 0;
      const observed = counts[id]! / draws;
      if (expected === 0) assert.equal(counts[id], 0, `top_p ${topP}: token ${id} must never be drawn`);
      else assert.ok(Math.abs(observed - expected) < 0.015, `top_p ${topP} token ${id}: ${observed} vs ${expected}`);
    }
  }
});

test("top_p over thousands of candidates (bucketed selection) keeps exactly the reference set", () => {
  const n = 6000;
  // strictly decreasing logits spread over several power-of-two buckets
  const logits = new Float32Array(n);
  for (let i = 0; i < n; i++) logits[i] = -i * 0.0013;
  for (const topP of [0.05, 0.3, 0.5, 0.9, 0.999]) {
    const ref = referenceDistribution(logits, null, params({ topP }), new Set());
    const keptCount = ref.size; // tokens 0 .. keptCount-1
    const s = new Sampler(n, params({ topP, seed: 5 }));
    let maxSeen = -1;
    for (let i = 0; i < 4000; i++) maxSeen = Math.max(maxSeen, s.sample(logits));
    assert.ok(maxSeen < keptCount, `top_p ${topP}: drew ${maxSeen}, kept set is [0, ${keptCount})`);
    assert.ok(maxSeen >= keptCount * 0.9 - 1, `top_p ${topP}: drew at most ${maxSeen} of [0, ${keptCount})`);
  }
  // all equal: exactly ceil(p * n) of them are kept
  const flat = new Float32Array(1000);
  const s = new Sampler(1000, params({ topP: 0.25, seed: 9 }));
  const drawn = new Set<number>();
  for (let i = 0; i < 20_000; i++) drawn.add(s.sample(flat));
  assert.equal(drawn.size, 250);
});

test("sampled tokens follow the reference distribution (random knobs, penalties and masks)", () => {
  const rng = new Xoshiro128(99);
  const n = 200;
  for (let trial = 0; trial < 40; trial++) {
    const logits = randomLogits(rng, n, 3);
    const mask = randomMask(rng, n);
    const p = params({
      temperature: [0.5, 1, 2][trial % 3]!,
      topK: [0, 5, 40][trial % 3]!,
      topP: [1, 0.9, 0.6, 0.95][trial % 4]!,
      repetitionPenalty: [1, 1.3, 2][trial % 3]!,
      seed: trial,
    });
    const seenIds = Array.from({ length: 20 }, () => rng.nextUint32() % n);
    const s = new Sampler(n, p);
    s.reset(seenIds);
    const ref = referenceDistribution(logits, mask, p, new Set(seenIds));
    const loose = referenceDistribution(logits, mask, p, new Set(seenIds), 1e-9);
    const total = [...ref.values()].reduce((a, b) => a + b, 0);
    const counts = new Map<number, number>();
    const draws = 3000;
    for (let i = 0; i < draws; i++) {
      const id = s.sample(logits, mask);
      assert.ok(loose.has(id), `trial ${trial}: token ${id} is outside the kept set`);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    for (const [id, w] of ref) {
      const expected = w / total;
      const observed = (counts.get(id) ?? 0) / draws;
      const tolerance = 4 * Math.sqrt((expected * (1 - expected)) / draws) + 0.003;
      assert.ok(Math.abs(observed - expected) <= tolerance, `trial ${trial} token ${id}: ${observed} vs ${expected}`);
    }
  }
});

test("repetition penalty (CTRL): lowers seen tokens for both logit signs, once per distinct token", () => {
  const greedy = (logits: number[], seen: number[], penalty: number): number => {
    const s = new Sampler(logits.length, params({ temperature: 0, repetitionPenalty: penalty }));
    s.reset(seen);
    return s.sample(Float32Array.from(logits));
  };
  assert.equal(greedy([3, 2.5], [], 1.5), 0);
  assert.equal(greedy([3, 2.5], [0], 1.5), 1); // 3 / 1.5 = 2 < 2.5
  assert.equal(greedy([-1, -1.2], [], 1.5), 0);
  assert.equal(greedy([-1, -1.2], [0], 1.5), 1); // -1 * 1.5 = -1.5 < -1.2
  // seen twice is penalised once: 3 / 1.5 = 2 > 1.8 (twice would be 1.33)
  const s = new Sampler(2, params({ temperature: 0, repetitionPenalty: 1.5 }));
  s.reset([0, 0]);
  s.accept(0);
  assert.equal(s.historySize, 1);
  assert.equal(s.sample(Float32Array.from([3, 1.8])), 0);
  // a penalty below 1 favours seen tokens
  assert.equal(greedy([2.5, 3], [0], 0.5), 0);

  // frequencies: equal logits, token 0 seen, penalty 2 → p0 = e^1 / (e^1 + e^2) for logit 2
  for (const [logit, expected] of [
    [2, Math.exp(1) / (Math.exp(1) + Math.exp(2))],
    [-1, Math.exp(-2) / (Math.exp(-2) + Math.exp(-1))],
  ] as const) {
    const sampler = new Sampler(2, params({ repetitionPenalty: 2, seed: 4 }));
    sampler.reset([0]);
    let zero = 0;
    for (let i = 0; i < 20_000; i++) if (sampler.sample(Float32Array.from([logit, logit])) === 0) zero++;
    assert.ok(Math.abs(zero / 20_000 - expected) < 0.015, `logit ${logit}: ${zero / 20_000} vs ${expected}`);
  }
  // reset forgets the history
  s.reset();
  assert.equal(s.historySize, 0);
});

test("never writes to the caller's logits", () => {
  const rng = new Xoshiro128(1);
  const logits = randomLogits(rng, 5000);
  const copy = logits.slice();
  const s = new Sampler(5000, params({ repetitionPenalty: 1.7, topK: 30, topP: 0.8, temperature: 0.7 }));
  s.reset(Array.from({ length: 300 }, (_, i) => i * 7));
  for (let i = 0; i < 50; i++) s.sample(logits, i % 2 ? randomMask(rng, 5000) : null);
  assert.deepEqual(logits, copy);
});

test("the same seed gives the same sequence; different seeds differ", () => {
  const rng = new Xoshiro128(2);
  const n = 3000;
  const steps = Array.from({ length: 64 }, () => randomLogits(rng, n, 3));
  const run = (seed: number): number[] => {
    const s = new Sampler(n, params({ seed, topK: 100, topP: 0.95, repetitionPenalty: 1.2, temperature: 0.9 }));
    const out: number[] = [];
    for (const l of steps) {
      const id = s.sample(l);
      s.accept(id);
      out.push(id);
    }
    return out;
  };
  assert.deepEqual(run(42), run(42));
  assert.notDeepEqual(run(42), run(43));
  const a = new Xoshiro128(123456789012);
  const b = new Xoshiro128(123456789012);
  for (let i = 0; i < 100; i++) assert.equal(a.nextUint32(), b.nextUint32());
  assert.notEqual(new Xoshiro128(-5).nextUint32(), new Xoshiro128(5).nextUint32());
});

test("the RNG is uniform enough", () => {
  const r = new Xoshiro128(2024);
  const bins = new Array<number>(16).fill(0);
  const draws = 160_000;
  let sum = 0;
  for (let i = 0; i < draws; i++) {
    const x = r.nextDouble();
    assert.ok(x >= 0 && x < 1);
    sum += x;
    bins[Math.floor(x * 16)]!++;
  }
  assert.ok(Math.abs(sum / draws - 0.5) < 0.005);
  for (const b of bins) assert.ok(Math.abs(b - draws / 16) < 400, `bin count ${b}`);
});

test("masked-out tokens are never sampled, whatever the knobs and logits", () => {
  const rng = new Xoshiro128(31337);
  const specials = [-Infinity, Infinity, NaN, 3.4e38, -3.4e38, 1e-45, 0];
  for (let trial = 0; trial < 3000; trial++) {
    const n = trial % 50 === 0 ? 40_000 + (rng.nextUint32() % 64) : 1 + (rng.nextUint32() % 700);
    const logits = randomLogits(rng, n, [1, 30, 1e30][trial % 3]!);
    const specialShare = rng.nextDouble();
    for (let i = 0; i < n; i++) if (rng.nextDouble() < specialShare * 0.5) logits[i] = specials[rng.nextUint32() % specials.length]!;
    const mask = trial % 7 === 0 ? null : randomMask(rng, n);
    const p = params({
      temperature: [0, 1e-30, 0.3, 1, 7, 1e30][rng.nextUint32() % 6]!,
      topK: [0, 1, 2, 17, 1000][rng.nextUint32() % 5]!,
      topP: [1, 0.999, 0.5, 1e-9][rng.nextUint32() % 4]!,
      repetitionPenalty: [1, 1.2, 1e-30, 1e30, 1e300][rng.nextUint32() % 5]!,
      seed: trial,
    });
    const s = new Sampler(n, p);
    s.reset(Array.from({ length: rng.nextUint32() % 50 }, () => rng.nextUint32() % n));
    for (let k = 0; k < 3; k++) {
      const id = s.sample(logits, mask);
      assert.ok(Number.isInteger(id) && id >= 0 && id < n, `trial ${trial}: ${id} out of range`);
      assert.ok(isAllowed(mask, id), `trial ${trial}: sampled masked-out token ${id}`);
      s.accept(id);
    }
  }
});

test("no sampleable token: deterministic fallback to an allowed token; empty mask throws", () => {
  const n = 100;
  const allMinusInf = new Float32Array(n).fill(-Infinity);
  const mask = maskOf(n, [17, 42, 99]);
  for (let seed = 0; seed < 5; seed++) {
    assert.equal(new Sampler(n, params({ seed })).sample(allMinusInf, mask), 17);
  }
  const nan = new Float32Array(n).fill(NaN);
  assert.equal(new Sampler(n, params()).sample(nan, mask), 17);
  // a penalty that overflows to -Infinity: fall back to the best raw logit among allowed tokens
  const l = new Float32Array(n).fill(-Infinity);
  l[42] = -3e38;
  l[99] = -1e38;
  l[5] = 10; // not allowed
  const s = new Sampler(n, params({ repetitionPenalty: 1e300 }));
  s.reset([42, 99]);
  assert.equal(s.sample(l, mask), 99);
  assert.throws(() => new Sampler(n, params()).sample(allMinusInf, new Uint32Array(maskWords(n))), EmptyMaskError);
  // bits past the vocabulary do not count
  const beyond = new Uint32Array(maskWords(n));
  beyond[beyond.length - 1] = ~0 << (n % 32);
  assert.throws(() => new Sampler(n, params()).sample(new Float32Array(n), beyond), EmptyMaskError);
});

test("+Infinity logits: uniform over exactly those tokens", () => {
  const l = new Float32Array([Infinity, 5, Infinity, Infinity, 7]);
  const s = new Sampler(5, params({ seed: 8 }));
  const counts = [0, 0, 0, 0, 0];
  for (let i = 0; i < 3000; i++) counts[s.sample(l, maskOf(5, [0, 1, 2, 4]))]!++;
  assert.equal(counts[1]! + counts[3]! + counts[4]!, 0);
  assert.ok(Math.abs(counts[0]! - 1500) < 150 && Math.abs(counts[2]! - 1500) < 150, String(counts));
});

test("rejects unusable parameters with SamplingParamsError", () => {
  const bad: Array<Partial<SamplingParams>> = [
    { temperature: -1 },
    { temperature: NaN },
    { temperature: Infinity },
    { topK: -1 },
    { topK: 1.5 },
    { topP: 0 },
    { topP: 1.01 },
    { topP: NaN },
    { repetitionPenalty: 0 },
    { repetitionPenalty: -1 },
    { repetitionPenalty: Infinity },
    { seed: NaN },
  ];
  for (const b of bad) assert.throws(() => new Sampler(10, params(b)), SamplingParamsError, JSON.stringify(b));
  assert.throws(() => new Sampler(10, params()).sample(new Float32Array(9)), RangeError);
  assert.throws(() => new Sampler(100, params()).sample(new Float32Array(100), new Uint32Array(3)), RangeError);
});

test("full-size vocabulary (152k): masks of every density sample only allowed tokens", () => {
  const n = 151_936;
  const rng = new Xoshiro128(5);
  const logits = randomLogits(rng, n, 10);
  for (const p of [params({ temperature: 0 }), params({ topK: 50 }), params({ topP: 0.9 }), params({ topK: 0, topP: 1 })]) {
    const s = new Sampler(n, p);
    for (let i = 0; i < 4; i++) {
      const mask = randomMask(rng, n);
      const id = s.sample(logits, mask);
      assert.ok(isAllowed(mask, id));
    }
  }
});

// The addon's gather pass (native/kernels.cc) must be the TypeScript loop, candidate for
// candidate: same seed, same inputs → the same token from both, for every knob and mask shape,
// including NaN, ±Infinity, ties, partial last mask words and penalised (excluded) tokens.
test("the native gather kernel draws exactly the tokens the TypeScript loop draws", () => {
  assert.ok(useGatherKernel("native"), "the addon is built (npm ci), so the native kernel loads");
  assert.match(gatherKernelInUse(), /^native/);
  const rng = new Xoshiro128(4242);
  let compared = 0;
  let sawPrefilteredGroups = 0;
  try {
    for (let round = 0; round < 400; round++) {
      // Sizes straddle word and 8-lane group boundaries; some rounds at a real vocabulary size.
      const n = round % 50 === 0 ? 151_936 : 1 + (rng.nextUint32() % 3000);
      const logits = new Float32Array(n);
      const spread = [0.01, 1, 8][round % 3]!;
      for (let i = 0; i < n; i++) logits[i] = Math.fround((rng.nextDouble() - 0.5) * spread);
      const specials = n < 64 ? 1 : 8;
      for (let i = 0; i < specials; i++) {
        const id = rng.nextUint32() % n;
        const r = rng.nextUint32() % 6;
        logits[id] = r === 0 ? NaN : r === 1 ? -Infinity : r === 2 ? Infinity : r === 3 ? 3.5 : r === 4 ? logits[(id + 1) % n]! : 1e30;
      }
      if (round % 7 === 0) logits.fill(2, 0, Math.min(n, 40)); // ties at the top
      let mask: Uint32Array | null = null;
      const shape = round % 5;
      if (shape > 0) {
        const density = [0, 0.001, 0.5, 0.98, 1][shape]!;
        mask = new Uint32Array(maskWords(n));
        for (let id = 0; id < n; id++) if (rng.nextDouble() < density) mask[id >>> 5]! |= 1 << (id & 31);
        const one = rng.nextUint32() % n;
        mask[one >>> 5]! |= 1 << (one & 31);
      }
      const knobs: SamplingParams = {
        temperature: [0, 0.7, 1, 1.5][rng.nextUint32() % 4]!,
        topK: [0, 1, 5, 50, n + 3][rng.nextUint32() % 5]!,
        topP: [1, 0.9, 0.3][rng.nextUint32() % 3]!,
        repetitionPenalty: [1, 1.3, 0.8][rng.nextUint32() % 3]!,
        seed: round,
      };
      const history = Array.from({ length: rng.nextUint32() % 30 }, () => rng.nextUint32() % n);
      const draws: number[][] = [];
      for (const kind of ["script", "native"] as const) {
        useGatherKernel(kind);
        const sampler = new Sampler(n, knobs);
        sampler.reset(history);
        const out: number[] = [];
        for (let d = 0; d < 6; d++) {
          const token = sampler.sample(logits, mask);
          out.push(token);
          sampler.accept(token);
        }
        draws.push(out);
      }
      assert.deepEqual(draws[1], draws[0], `round ${round}: n ${n}, mask shape ${shape}, ${JSON.stringify(knobs)}`);
      compared += 6;
      if (n >= 151_936 && knobs.topK > 0 && knobs.temperature > 0) sawPrefilteredGroups++;
    }
  } finally {
    useGatherKernel("native");
  }
  assert.equal(compared, 2400);
  assert.ok(sawPrefilteredGroups > 0);
});

test("the native gather pass stores the same candidates, heap and state as the TypeScript pass", () => {
  const kernel = nativeRowKernels();
  assert.ok(kernel, "the addon is built (npm ci)");
  const rng = new Xoshiro128(77);
  for (let round = 0; round < 300; round++) {
    const n = round % 60 === 0 ? 151_936 : 1 + (rng.nextUint32() % 2500);
    const logits = new Float32Array(n);
    for (let i = 0; i < n; i++) logits[i] = Math.fround((rng.nextDouble() - 0.5) * [0.001, 2, 40][round % 3]!);
    for (let i = 0; i < 6; i++) logits[rng.nextUint32() % n] = [NaN, -Infinity, Infinity, 0, 7][rng.nextUint32() % 5]!;
    const density = [1, 0.7, 0.05, 0.0005][round % 4]!;
    const mask = round % 5 === 0 ? null : new Uint32Array(maskWords(n));
    if (mask) for (let id = 0; id < n; id++) if (rng.nextDouble() < density) mask[id >>> 5]! |= 1 << (id & 31);
    const exclude = round % 3 === 0 ? new Uint32Array(maskWords(n)) : null;
    if (exclude)
      for (let i = 0; i < 20; i++) {
        const id = rng.nextUint32() % n;
        exclude[id >>> 5]! |= 1 << (id & 31);
      }
    const mode = (round % 3) as 0 | 1 | 2;
    const k = 1 + (rng.nextUint32() % 64);
    type Run = { state: number[]; ids: number[]; values: number[]; heap: number[] };
    const runs: Run[] = [kernel.gather, gatherCandidatesScript].map((gather): Run => {
      const ids = new Int32Array(n);
      const values = new Float64Array(n);
      const heap = new Float64Array(k).fill(-Infinity);
      const state = Float64Array.of(0, -Infinity, -1, -Infinity);
      gather(mode, logits, mask, exclude, n, k, ids, values, heap, state);
      const count = state[0]!;
      return {
        state: [...state],
        ids: [...ids.subarray(0, count)],
        values: [...values.subarray(0, count)],
        heap: mode === 1 ? [...heap] : [],
      };
    });
    assert.deepEqual(runs[0], runs[1], `round ${round}: mode ${mode}, n ${n}, k ${k}`);
  }
});
