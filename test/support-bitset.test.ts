// Token-mask bitsets (support/bitset.ts): the one-pass hash and count equal wordHash and popCount,
// and clearTokenRange undoes setTokenRange over a trie-ordered range of token ids.
import assert from "node:assert/strict";
import { test } from "node:test";
import { clearTokenRange, hashAndCount, maskWords, popCount, seededRandom, setTokenRange, wordHash } from "../src/support/index.js";

test("hashAndCount is wordHash and popCount in one pass, whole words included", () => {
  const random = seededRandom(7);
  const words = maskWords(1000);
  const masks = [new Uint32Array(words), new Uint32Array(words).fill(0xffffffff)];
  for (let i = 0; i < 20; i++) {
    const mask = new Uint32Array(words);
    // Runs of whole words beside sparse ones, as walks' masks are.
    for (let w = 0; w < words; w++) {
      const r = random();
      mask[w] = r < 0.3 ? 0 : r < 0.6 ? 0xffffffff : Math.floor(random() * 0x100000000);
    }
    masks.push(mask);
  }
  for (const mask of masks) assert.deepEqual(hashAndCount(mask), { hash: wordHash(mask), count: popCount(mask) });
  assert.equal(hashAndCount(masks[1]!).count, words * 32);
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
