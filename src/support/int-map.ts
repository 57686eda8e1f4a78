import { grownTo, type TableSlab } from "./arena.js";

/**
 * Map from non-negative integer keys (below 2^53) to int32 values, by open addressing over
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

  /**
   * Slot i is table[2i] (key + 1, 0 when empty) and table[2i + 1] (value): one allocation per size
   * and a key's value in the same cache line. Keys are stored plus one so that a fresh table (a
   * slab's zeroed bytes, a new array) is empty as it comes: filling every new table with a marker
   * wrote 4 KB per map, 76 KB at each grammar compile.
   */
  private table: Float64Array;
  private mask = 0;
  private shift: number;
  private count = 0;

  /**
   * `initialCapacity`: entries before the first growth. The table is made on the first set: an
   * automaton has a dozen of these maps, and a small grammar leaves several of them empty.
   */
  constructor(
    private readonly initialCapacity = 128,
    /** Where the first table comes from (the owner's other maps share it); none: its own array. */
    private readonly slab?: TableSlab,
  ) {
    this.table = NO_TABLE;
    this.shift = 32;
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of its current table (for memory accounting). */
  get byteLength(): number {
    return this.table.byteLength;
  }

  /** The value of `key`, or IntMap.MISSING. */
  get(key: number): number {
    if (this.count === 0) return IntMap.MISSING;
    const table = this.table;
    const mask = this.mask;
    const stored = key + 1;
    let slot = this.slotOf(key);
    for (;;) {
      const k = table[slot * 2]!;
      if (k === stored) return table[slot * 2 + 1]!;
      if (k === 0) return IntMap.MISSING;
      slot = (slot + 1) & mask;
    }
  }

  has(key: number): boolean {
    return this.get(key) !== IntMap.MISSING;
  }

  set(key: number, value: number): void {
    if (this.table.length === 0) this.allocate();
    const table = this.table;
    const mask = this.mask;
    const stored = key + 1;
    let slot = this.slotOf(key);
    for (;;) {
      const k = table[slot * 2]!;
      if (k === stored) {
        table[slot * 2 + 1] = value;
        return;
      }
      if (k === 0) break;
      slot = (slot + 1) & mask;
    }
    table[slot * 2] = stored;
    table[slot * 2 + 1] = value;
    if (++this.count * 2 > mask + 1) this.grow();
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
    this.resize(bits, this.slab);
  }

  private resize(bits: number, slab?: TableSlab): void {
    this.table = slab !== undefined ? slab.float64(2 << bits) : new Float64Array(2 << bits);
    this.mask = (1 << bits) - 1;
    this.shift = 32 - bits;
  }

  /** Four times the slots while small (fewer rehashes during a grammar's first visits), then twice. */
  private grow(): void {
    const old = this.table;
    const bits = 32 - this.shift;
    this.resize(bits + (bits < 13 ? 2 : 1));
    const table = this.table;
    const mask = this.mask;
    for (let i = 0; i < old.length; i += 2) {
      const k = old[i]!;
      if (k === 0) continue;
      let slot = this.slotOf(k - 1);
      while (table[slot * 2] !== 0) slot = (slot + 1) & mask;
      table[slot * 2] = k;
      table[slot * 2 + 1] = old[i + 1]!;
    }
  }
}

const NO_TABLE = new Float64Array(0);

/**
 * Map from dense ids (states, stacks and lexer states, numbered 0, 1, 2… as they are made) to
 * int32 values: a table indexed by the id itself. The memos per state or per stack are this
 * shape. As IntMaps each lookup hashed and probed, and a fresh matcher re-hashed its tables into
 * copies four times larger as a sentence's states came: replaying the palindrome grammar's
 * targets, its first visits of states cost a sixth less with these tables.
 */
export class IdMap {
  /** Values stored XOR MISSING, so that a fresh zeroed table answers MISSING everywhere. */
  private table: Int32Array = NO_IDS;

  constructor(
    /** Ids before the first growth. */
    private readonly initialCapacity = 256,
    /** Where the first table comes from (see IntMap); none: its own array. */
    private readonly slab?: TableSlab,
  ) {}

  /** Bytes of its current table (for memory accounting). */
  get byteLength(): number {
    return this.table.byteLength;
  }

  /** The value of `id`, or IntMap.MISSING. */
  get(id: number): number {
    return id < this.table.length ? this.table[id]! ^ IntMap.MISSING : IntMap.MISSING;
  }

  set(id: number, value: number): void {
    if (id >= this.table.length) this.grow(id);
    this.table[id] = value ^ IntMap.MISSING;
  }

  private grow(id: number): void {
    if (this.table.length === 0 && id < this.initialCapacity) {
      this.table = this.slab !== undefined ? this.slab.int32(this.initialCapacity) : new Int32Array(this.initialCapacity);
      return;
    }
    let n = Math.max(this.table.length, this.initialCapacity);
    while (n <= id) n *= 2;
    this.table = grownTo(this.table, n);
  }
}

const NO_IDS = new Int32Array(0);
