/**
 * Token masks as bitsets: `Uint32Array`s of `maskWords(vocabSize)` words, token `id` at bit
 * `id & 31` of word `id >>> 5`. The constraint stage writes them, the sampler reads them.
 */
/** Mask words for a vocabulary: bit `id & 31` of word `id >>> 5`. */
export function maskWords(vocabSize: number): number {
  return (vocabSize + 31) >>> 5;
}

/** Sets the bits of the tokens tokenIds[from .. to) (a trie subtree's tokens are one such range). */
export function setTokenRange(mask: Uint32Array, tokenIds: Int32Array, from: number, to: number): void {
  for (let k = from; k < to; k++) {
    const id = tokenIds[k]!;
    mask[id >>> 5]! |= 1 << (id & 31);
  }
}

/** Clears the bits of the tokens tokenIds[from .. to). */
export function clearTokenRange(mask: Uint32Array, tokenIds: Int32Array, from: number, to: number): void {
  for (let k = from; k < to; k++) {
    const id = tokenIds[k]!;
    mask[id >>> 5]! &= ~(1 << (id & 31));
  }
}

/** ORs every word of `from` into `into` (same length). */
export function orInto(into: Uint32Array, from: Uint32Array): void {
  for (let w = 0; w < into.length; w++) into[w]! |= from[w]!;
}

/** Sets the bits of every token in `ids`. */
export function setTokenList(mask: Uint32Array, ids: Int32Array): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    mask[id >>> 5]! |= 1 << (id & 31);
  }
}

/** The indices of the set bits, in order, written into `out` (cleared first) and returned. */
export function setBits(mask: Uint32Array, out: number[] = []): number[] {
  out.length = 0;
  for (let w = 0; w < mask.length; w++) {
    let bits = mask[w]!;
    while (bits !== 0) {
      const low = bits & -bits;
      out.push(w * 32 + 31 - Math.clz32(low));
      bits ^= low;
    }
  }
  return out;
}

/** A mask's hash over its words (FNV-1a), the key of an intern table (MaskStore.intern, LexerLevelWalks.sharedTokens). */
export function wordHash(mask: Uint32Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < mask.length; i++) h = Math.imul(h ^ mask[i]!, 0x01000193);
  return h;
}

/** Set bits of one 32-bit word. */
export function popCount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

export function popCount(mask: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) n += popCount32(mask[i]!);
  return n;
}

/**
 * wordHash and popCount in one pass, for masks about to be interned: a walk's mask is mostly
 * whole words of ones or zeros, which skip the bit count.
 */
export function hashAndCount(mask: Uint32Array): { hash: number; count: number } {
  let h = 0x811c9dc5;
  let count = 0;
  for (let i = 0; i < mask.length; i++) {
    const x = mask[i]!;
    h = Math.imul(h ^ x, 0x01000193);
    if (x !== 0) count += x === 0xffffffff ? 32 : popCount32(x);
  }
  return { hash: h, count };
}
