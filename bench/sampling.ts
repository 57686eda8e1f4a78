/**
 * Masked sampling cost at a 151,936-token vocabulary (Qwen2 size), per knob setting and mask
 * density, with the gather pass in the addon (native/kernels.cc) and in TypeScript, alternating
 * within every round. Prints JSON: median microseconds per sample() call over repeated rounds,
 * and script/native per case.
 *
 *   node --import tsx bench/sampling.ts [--rounds 7] [--calls 100]
 */
import { Sampler, Xoshiro128, gatherKernelInUse, useGatherKernel, type SamplingParams } from "../src/sampling/index.js";
import { maskWords } from "../src/support/index.js";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = arg("rounds", 7);
const CALLS = arg("calls", 100);
const VOCAB = 151_936;

const rng = new Xoshiro128(12345);
// LM-like logits: a broad bulk around 0 and a few strong candidates.
const logits = new Float32Array(VOCAB);
for (let i = 0; i < VOCAB; i++) logits[i] = (rng.nextDouble() + rng.nextDouble() + rng.nextDouble() - 1.5) * 4;
for (let i = 0; i < 20; i++) logits[rng.nextUint32() % VOCAB] = 15 + rng.nextDouble() * 5;

const words = maskWords(VOCAB);
function maskWithDensity(density: number): Uint32Array {
  const m = new Uint32Array(words);
  for (let id = 0; id < VOCAB; id++) if (rng.nextDouble() < density) m[id >>> 5]! |= 1 << (id & 31);
  return m;
}
const masks: Record<string, Uint32Array | null> = {
  none: null,
  full: new Uint32Array(words).fill(0xffffffff),
  "50%": maskWithDensity(0.5),
  "2k tokens": maskWithDensity(2000 / VOCAB),
  "1 token": maskWithDensity(0),
};
masks["1 token"]![1234 >>> 5] = 1 << (1234 & 31);

const configs: Record<string, SamplingParams> = {
  greedy: { temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1 },
  "top_k 50": { temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1 },
  "top_k 50, top_p 0.9, penalty 1.1": { temperature: 0.7, topK: 50, topP: 0.9, repetitionPenalty: 1.1 },
  "top_p 0.9 (no top_k), penalty 1.1": { temperature: 1, topK: 0, topP: 0.9, repetitionPenalty: 1.1 },
  "pure softmax (no top_k/top_p)": { temperature: 1, topK: 0, topP: 1, repetitionPenalty: 1 },
};
const prompt = Array.from({ length: 500 }, () => rng.nextUint32() % VOCAB);

// CPU time as well as wall time: on a shared 2-core VM the wall clock includes waiting for a core.
const samples = new Map<string, { wall: number[]; cpu: number[] }>();
const nativeKernel = useGatherKernel("native") ? gatherKernelInUse() : null;
const kernels = nativeKernel ? (["native", "script"] as const) : (["script"] as const);
for (let round = 0; round < ROUNDS; round++) {
  // alternate configurations and kernels within each round: this VM's speed drifts between minutes
  for (const [configName, params] of Object.entries(configs)) {
    for (const kernel of kernels) {
      useGatherKernel(kernel);
      const sampler = new Sampler(VOCAB, { ...params, seed: round });
      sampler.reset(prompt);
      for (const [maskName, mask] of Object.entries(masks)) {
        for (let i = 0; i < 10; i++) sampler.sample(logits, mask);
        const cpu0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < CALLS; i++) sampler.sample(logits, mask);
        const wallUs = Number(process.hrtime.bigint() - t0) / 1e3 / CALLS;
        const cpu = process.cpuUsage(cpu0);
        const key = `${kernel}: ${configName} | mask ${maskName}`;
        if (!samples.has(key)) samples.set(key, { wall: [], cpu: [] });
        samples.get(key)!.wall.push(wallUs);
        samples.get(key)!.cpu.push((cpu.user + cpu.system) / CALLS);
      }
    }
  }
}
useGatherKernel("native");
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
};
const round1 = (x: number): number => Math.round(x * 10) / 10;
const results = [...samples].map(([name, t]) => ({
  name,
  medianWallMicroseconds: round1(median(t.wall)),
  medianCpuMicroseconds: round1(median(t.cpu)),
}));
const speedup = nativeKernel
  ? Object.fromEntries(
      [...samples.keys()]
        .filter((k) => k.startsWith("native: "))
        .map((k) => {
          const name = k.slice("native: ".length);
          return [name, round1(median(samples.get(`script: ${name}`)!.wall) / median(samples.get(k)!.wall))];
        }),
    )
  : null;
console.log(
  JSON.stringify(
    { bench: "sampling", vocabSize: VOCAB, rounds: ROUNDS, callsPerRound: CALLS, nativeKernel, scriptOverNativeWall: speedup, results },
    null,
    2,
  ),
);
