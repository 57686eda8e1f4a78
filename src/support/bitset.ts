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

/** A hash over all words (FNV-1a): the key of the intern table of short token lists (LexerLevelWalks.sharedList). */
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
 * A mask's hash over every 7th word and its length, the key of an intern table whose entries are
 * then compared whole (sameWords): a full hash of a 152k-token mask took 9-15 µs, several times
 * per cold grammar mask. Masks alike but for unsampled words share a bucket, and the comparison
 * tells them apart.
 */
export function sampledWordHash(mask: Uint32Array): number {
  let h = Math.imul(0x811c9dc5 ^ mask.length, 0x01000193);
  for (let i = 0; i < mask.length; i += 7) h = Math.imul(h ^ mask[i]!, 0x01000193);
  return h;
}

/** The set bits of `mask`, counted up to `limit` at most (a mask past it is "many"). */
export function popCountUpTo(mask: Uint32Array, limit: number): number {
  let n = 0;
  for (let i = 0; i < mask.length && n < limit; i++) n += popCount32(mask[i]!);
  return Math.min(n, limit);
}

/** Below this many words a loop compares faster than two Buffer views. */
const MEMCMP_WORDS = 64;

/**
 * Whether two word arrays hold the same words. Long ones are compared as bytes (memcmp, through
 * Buffer views): a JS loop over a 152k-token mask took 6-15 µs, memcmp about 1.
 */
export function sameWords(a: Uint32Array, b: Uint32Array): boolean {
  if (a.length !== b.length) return false;
  if (a.length < MEMCMP_WORDS) {
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
