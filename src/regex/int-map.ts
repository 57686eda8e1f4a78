/**
 * Map from non-negative integer keys (exact up to 2^53) to int32 values, by open addressing over
 * typed arrays.
 *
 * The grammar layers memoize per (stack, terminal), (state, byte) and the like, with keys past
 * 2^31. In a JS Map such a key is a heap number: each lookup boxes it and hashes the box, and
 * these lookups were most of a first visit's time in a grammar state. Here a key stays an
 * unboxed double and a lookup is a multiply, a shift and a probe or two.
 */
export class IntMap {
  /** What get answers for a key without a value (no value stored may equal it). */
  static readonly MISSING = -0x80000000;

  private keys: Float64Array;
  private values: Int32Array;
  private shift: number;
  private count = 0;

  /**
   * `initialCapacity`: entries before the first growth. The tables are made on the first set: an
   * automaton has a dozen of these maps, and a small grammar leaves several of them empty.
   */
  constructor(private readonly initialCapacity = 128) {
    this.keys = NO_KEYS;
    this.values = NO_VALUES;
    this.shift = 32;
  }

  get size(): number {
    return this.count;
  }

  /** The value of `key`, or IntMap.MISSING. */
  get(key: number): number {
    if (this.count === 0) return IntMap.MISSING;
    const keys = this.keys;
    const mask = keys.length - 1;
    let slot = this.slotOf(key);
    for (;;) {
      const k = keys[slot]!;
      if (k === key) return this.values[slot]!;
      if (k === -1) return IntMap.MISSING;
      slot = (slot + 1) & mask;
    }
  }

  has(key: number): boolean {
    return this.get(key) !== IntMap.MISSING;
  }

  set(key: number, value: number): void {
    if (this.keys.length === 0) this.allocate();
    const keys = this.keys;
    const mask = keys.length - 1;
    let slot = this.slotOf(key);
    for (;;) {
      const k = keys[slot]!;
      if (k === key) {
        this.values[slot] = value;
        return;
      }
      if (k === -1) break;
      slot = (slot + 1) & mask;
    }
    keys[slot] = key;
    this.values[slot] = value;
    if (++this.count * 2 > keys.length) this.grow();
  }

  private slotOf(key: number): number {
    // Both halves of the key mixed (Fibonacci hashing): stack * 2^22 + terminal keys differ in
    // their high bits as much as in their low ones.
    const lo = key >>> 0;
    const hi = (key / 4294967296) >>> 0;
    return Math.imul(lo ^ Math.imul(hi, 0x27d4eb2d), 0x9e3779b1) >>> this.shift;
  }

  private allocate(): void {
    let bits = 3;
    while (1 << bits < this.initialCapacity * 2) bits++;
    this.keys = new Float64Array(1 << bits).fill(-1);
    this.values = new Int32Array(1 << bits);
    this.shift = 32 - bits;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldValues = this.values;
    this.keys = new Float64Array(oldKeys.length * 2).fill(-1);
    this.values = new Int32Array(oldKeys.length * 2);
    this.shift--;
    const mask = this.keys.length - 1;
    for (let i = 0; i < oldKeys.length; i++) {
      const k = oldKeys[i]!;
      if (k === -1) continue;
      let slot = this.slotOf(k);
      while (this.keys[slot] !== -1) slot = (slot + 1) & mask;
      this.keys[slot] = k;
      this.values[slot] = oldValues[i]!;
    }
  }
}

const NO_KEYS = new Float64Array(0);
const NO_VALUES = new Int32Array(0);
