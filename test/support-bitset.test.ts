// Token-mask bitsets (support/bitset.ts): the memcmp comparison and the bounded count equal plain
// ones, and clearTokenRange undoes setTokenRange over a trie-ordered range of token ids.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  clearTokenRange,
  maskWords,
  popCount,
  popCountUpTo,
  sameWords,
  sampledWordHash,
  seededRandom,
  setTokenRange,
} from "../src/support/index.js";

test("sameWords and popCountUpTo agree with a plain comparison and popCount, on views into shared buffers too", () => {
  const random = seededRandom(7);
  for (const words of [3, maskWords(1000), maskWords(152_000)]) {
    const masks = [new Uint32Array(words), new Uint32Array(words).fill(0xffffffff)];
    for (let i = 0; i < 12; i++) {
      const mask = new Uint32Array(words);
      // Runs of whole words beside sparse ones, as walks' masks are.
      for (let w = 0; w < words; w++) {
        const r = random();
        mask[w] = r < 0.3 ? 0 : r < 0.6 ? 0xffffffff : Math.floor(random() * 0x100000000);
      }
      masks.push(mask);
    }
    for (const mask of masks) {
      for (const limit of [0, 1, 1025, words * 32 + 1]) assert.equal(popCountUpTo(mask, limit), Math.min(popCount(mask), limit));
      // The same words at an offset inside a bigger buffer, then one word and one bit off.
      const buffer = new Uint32Array(words + 5);
      const view = buffer.subarray(3, 3 + words);
      view.set(mask);
      assert.ok(sameWords(mask, view) && sameWords(view, mask));
      assert.equal(sampledWordHash(view), sampledWordHash(mask));
      for (const at of [0, words >>> 1, words - 1]) {
        view[at]! ^= 1 << (at & 31);
        assert.ok(!sameWords(mask, view), `bit at word ${at} of ${words}`);
        view[at]! ^= 1 << (at & 31);
      }
      assert.ok(!sameWords(mask, mask.subarray(0, words - 1)));
    }
    assert.equal(popCountUpTo(masks[1]!, Infinity), words * 32);
  }
});

test("clearTokenRange clears exactly the tokens of the range", () => {
  const random = seededRandom(3);
  const ids = Int32Array.from({ length: 300 }, (_, i) => i);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  const mask = new Uint32Array(maskWords(300)).fill(0xffffffff);
  clearTokenRange(mask, ids, 40, 120);
  for (let k = 0; k < ids.length; k++) {
    const set = ((mask[ids[k]! >>> 5]! >>> (ids[k]! & 31)) & 1) === 1;
    assert.equal(set, k < 40 || k >= 120, `token at ${k}`);
  }
  setTokenRange(mask, ids, 40, 120);
  assert.ok(mask.every((w) => w === 0xffffffff));
});
