// The sampler's masks over a real model's logits (llama-2-tiny-random, 32k vocabulary): 11,200
// masked steps of 16 sequences with varied knobs, masks of every shape and adversarial EOG logits
// never sample a disallowed token, and EOG is sampled where it is the only token allowed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadModel, SequenceSlots } from "../src/model/index.js";
import { Sampler, Xoshiro128, type SamplingParams } from "../src/sampling/index.js";
import { maskWords } from "../src/support/index.js";
import { LLAMA2_TINY_RANDOM } from "./support/paths.js";

const SEQUENCES = 16;
const STEPS_PER_SEQUENCE = 700; // 16 × 700 = 11,200 masked steps
const RESTART_AT = 120; // tokens per sequence before its KV history is dropped and it restarts

const KNOBS: SamplingParams[] = [
  { temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1 },
  { temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1 },
  { temperature: 0.7, topK: 0, topP: 0.9, repetitionPenalty: 1.3 },
  { temperature: 2, topK: 5, topP: 0.5, repetitionPenalty: 1 },
];

test("masked decoding over a real 32k vocabulary never samples a disallowed token (EOG included)", () => {
  // One thread: this test is many small decodes, and on a busy 2-core machine ggml's spinning
  // barriers make 2 threads several times slower (3.5 min vs 30 s measured under load).
  const model = loadModel(LLAMA2_TINY_RANDOM, { threads: 1 });
  const ctx = model.createContext({ nCtx: SEQUENCES * (RESTART_AT + 8), nSeqMax: SEQUENCES, nBatch: SEQUENCES * 8 });
  const nVocab = model.nVocab;
  const words = maskWords(nVocab);
  const eog = model.eogTokens();
  assert.ok(eog.length > 0 && eog.includes(model.eosToken));
  const rng = new Xoshiro128(1234);
  const slots = new SequenceSlots(ctx);
  const samplers = Array.from({ length: SEQUENCES }, (_, i) => new Sampler(nVocab, { ...KNOBS[i % KNOBS.length]!, seed: i }));
  const masks = Array.from({ length: SEQUENCES }, () => new Uint32Array(words));
  const lastToken = new Int32Array(SEQUENCES);
  const rows = new Int32Array(SEQUENCES);
  const batch = ctx.createBatch();
  const seqs: number[] = [];
  for (let i = 0; i < SEQUENCES; i++) {
    seqs.push(slots.acquire());
    lastToken[i] = model.bosToken;
  }

  const setBit = (mask: Uint32Array, id: number): void => {
    mask[id >>> 5]! |= 1 << (id & 31);
  };
  const allowed = (mask: Uint32Array, id: number): boolean => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

  const sorted = new Float32Array(nVocab);
  // Fills `mask` with one of several shapes; EOG is allowed only by the EOG-only shape.
  function randomMask(mask: Uint32Array, logits: Float32Array): void {
    mask.fill(0);
    const kind = rng.nextUint32() % 6;
    if (kind === 0) {
      for (let w = 0; w < words; w++) mask[w] = rng.nextUint32(); // dense, ~half the vocabulary
    } else if (kind === 1) {
      const n = 1 + (rng.nextUint32() % 4); // sparse: a handful of tokens
      for (let i = 0; i < n; i++) setBit(mask, rng.nextUint32() % nVocab);
    } else if (kind === 2) {
      mask.fill(0xffffffff); // everything except the ~64 most likely tokens
      sorted.set(logits.subarray(0, nVocab));
      sorted.sort();
      const threshold = sorted[nVocab - 64]!;
      for (let id = 0; id < nVocab; id++) if (logits[id]! >= threshold) mask[id >>> 5]! &= ~(1 << (id & 31));
    } else if (kind === 3) {
      const start = rng.nextUint32() % nVocab; // a contiguous id range
      const len = 1 + (rng.nextUint32() % 3000);
      for (let id = start; id < Math.min(nVocab, start + len); id++) setBit(mask, id);
    } else if (kind === 4) {
      setBit(mask, eog[rng.nextUint32() % eog.length]!); // only end-of-generation allowed
      return;
    } else {
      mask.fill(0xffffffff); // all tokens but EOG
    }
    for (const id of eog) mask[id >>> 5]! &= ~(1 << (id & 31));
    if (kind !== 4 && mask.every((w) => w === 0)) setBit(mask, 3 + (rng.nextUint32() % (nVocab - 3)));
  }

  let steps = 0;
  let eogSampled = 0;
  let disallowed = 0;
  let firstViolation = "";
  for (let step = 0; step < STEPS_PER_SEQUENCE; step++) {
    batch.clear();
    for (let i = 0; i < SEQUENCES; i++) {
      const seq = seqs[i]!;
      if (slots.lengths[seq]! >= RESTART_AT) {
        slots.release(seq);
        seqs[i] = slots.acquire();
        lastToken[i] = model.bosToken;
        samplers[i]!.reset();
      }
      rows[i] = slots.append(batch, seqs[i]!, lastToken[i]!, true);
    }
    ctx.decode(batch);
    for (let i = 0; i < SEQUENCES; i++) {
      const logits = ctx.logits(rows[i]!);
      // Adversarial logits: make end-of-generation the overwhelming favourite on many steps, so
      // only the mask can keep it out.
      if (step % 3 === 0) for (const id of eog) logits[id] = step % 2 === 0 ? 1e4 : Infinity;
      const mask = masks[i]!;
      randomMask(mask, logits);
      const token = samplers[i]!.sample(logits, mask);
      steps++;
      if (!(token >= 0 && token < nVocab && allowed(mask, token))) {
        disallowed++;
        firstViolation ||= `step ${step} seq ${i}: token ${token}`;
      }
      if (eog.includes(token)) eogSampled++;
      samplers[i]!.accept(token);
      lastToken[i] = eog.includes(token) ? model.bosToken : token;
    }
  }
  ctx.dispose();
  model.dispose();
  assert.equal(disallowed, 0, `disallowed tokens sampled, first: ${firstViolation}`);
  assert.ok(steps >= 10_000, `only ${steps} steps`);
  // EOG-only masks happen (~1/6 of steps): the sampler must pick EOG there, so this is > 0.
  assert.ok(eogSampled > steps / 12, `EOG sampled ${eogSampled} times`);
});
