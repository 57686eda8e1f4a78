/**
 * xoshiro128** (Blackman & Vigna), seeded through MurmurHash3's finalizer: small, fast, and reproducible across
 * platforms — a request with a seed must give the same tokens on every run, which Math.random
 * cannot promise.
 */
import { randomBytes } from "node:crypto";

export class Xoshiro128 {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  /** `seed`: any finite number (its integer part, full 53 bits, is used); omitted = random. */
  constructor(seed?: number) {
    this.seed(seed);
  }

  seed(seed?: number): void {
    let lo: number;
    let hi: number;
    if (seed === undefined) {
      const b = randomBytes(8);
      lo = b.readUInt32LE(0);
      hi = b.readUInt32LE(4);
    } else {
      if (!Number.isFinite(seed)) throw new RangeError(`seed must be a finite number, got ${seed}`);
      const n = Math.trunc(seed);
      const abs = Math.abs(n);
      lo = (abs % 0x100000000) >>> 0;
      hi = (Math.floor(abs / 0x100000000) >>> 0) ^ (n < 0 ? 0x80000000 : 0);
    }
    // (s0, s1) is a bijection of (lo, hi), so distinct seeds give distinct states; s2, s3 mix both.
    this.s0 = fmix32(lo ^ 0x9e3779b9);
    this.s1 = fmix32(hi ^ 0x7f4a7c15);
    this.s2 = fmix32((this.s0 + 0x6a09e667) ^ this.s1);
    this.s3 = fmix32((this.s1 + 0xbb67ae85) ^ this.s0);
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s3 = 1; // xoshiro's one bad state
    for (let i = 0; i < 8; i++) this.nextUint32();
  }

  /** Next 32 random bits as an unsigned integer. */
  nextUint32(): number {
    const s1 = this.s1;
    const t = s1 << 9;
    let r = Math.imul(s1, 5);
    r = Math.imul((r << 7) | (r >>> 25), 9);
    this.s2 ^= this.s0;
    this.s3 ^= s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return r >>> 0;
  }

  /** Uniform double in [0, 1) with 53 random bits. */
  nextDouble(): number {
    const a = this.nextUint32() >>> 5; // 27 bits
    const b = this.nextUint32() >>> 6; // 26 bits
    return (a * 67108864 + b) / 9007199254740992;
  }
}

/** MurmurHash3's 32-bit finalizer: a bijection on 32-bit integers with good avalanche. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
