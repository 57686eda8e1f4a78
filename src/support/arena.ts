/**
 * Bump allocator of filled Int32 scratch views for compile-time temporaries.
 *
 * V8 keeps a typed array of more than 64 bytes in its own off-heap backing store: allocating one
 * costs 1–3 µs, plus its share of the GC's tracking, against ~0.1 µs for a view of a buffer that
 * already exists. A small pattern's DFA build needs about sixty short-lived arrays, so their
 * allocation alone was about half of its compile time. A stage takes its temporaries from its own
 * arena and resets it when it starts again: nothing taken may outlive that (results that are
 * kept are allocated normally), and a stage that calls another must not share the callee's arena.
 */
export class Int32Arena {
  private buffer: Int32Array;
  private used = 0;

  /**
   * `capacity`: ints kept between uses. A request beyond what is left of it gets its own array:
   * a large build pays for its work far more than for its allocations, and a one-off huge
   * pattern must not leave megabytes held for good.
   */
  constructor(private readonly capacity = 1 << 16) {
    this.buffer = new Int32Array(0);
  }

  /** `n` ints, each `fill`; valid until the next reset. */
  take(n: number, fill = 0): Int32Array {
    if (this.used + n > this.buffer.length) {
      if (this.buffer.length === 0 && n <= this.capacity) this.buffer = new Int32Array(this.capacity);
      else return fill === 0 ? new Int32Array(n) : new Int32Array(n).fill(fill);
    }
    // The constructor, not subarray: subarray's species lookup costs twice as much.
    const view = new Int32Array(this.buffer.buffer, this.used * 4, n);
    this.used += n;
    // Most takes are short: a plain loop beats the fill builtin's call below a few dozen.
    if (n <= 64) for (let i = 0; i < n; i++) view[i] = fill;
    else view.fill(fill);
    return view;
  }

  /** A copy of `source` in scratch, `size` long (at least its length): a scratch table grown. */
  widened(source: Int32Array, size: number): Int32Array {
    const out = this.take(size);
    out.set(source);
    return out;
  }

  /** A copy of `source` in scratch. */
  copy(source: ArrayLike<number>): Int32Array {
    const view = this.take(source.length);
    for (let i = 0; i < source.length; i++) view[i] = source[i]!;
    return view;
  }

  /** Frees everything taken so far. */
  reset(): void {
    this.used = 0;
  }
}

/**
 * Tables that live as long as their owner (an automaton's memo maps, a matcher's step tables),
 * carved from one buffer made on first use: a structure with a dozen such tables pays one
 * off-heap allocation for them instead of a dozen (see Int32Arena for the cost). A table that no
 * longer fits gets its own array, and tables that grow are copied out (grownTo) as before.
 */
export class TableSlab {
  private buffer: ArrayBuffer | null = null;
  private used = 0;

  /** `bytes`: the buffer's size; the owner sizes it for its tables' first allocations. */
  constructor(private readonly bytes: number) {}

  int32(n: number, fill = 0): Int32Array {
    const at = this.place(n * 4);
    const view = at < 0 ? new Int32Array(n) : new Int32Array(this.buffer!, at, n);
    if (fill !== 0) view.fill(fill);
    return view;
  }

  uint32(n: number): Uint32Array {
    const at = this.place(n * 4);
    return at < 0 ? new Uint32Array(n) : new Uint32Array(this.buffer!, at, n);
  }

  uint8(n: number): Uint8Array {
    const at = this.place(n);
    return at < 0 ? new Uint8Array(n) : new Uint8Array(this.buffer!, at, n);
  }

  float64(n: number): Float64Array {
    const at = this.place(n * 8);
    return at < 0 ? new Float64Array(n) : new Float64Array(this.buffer!, at, n);
  }

  /** Byte offset of `size` fresh bytes (8-aligned), or -1 when they do not fit. */
  private place(size: number): number {
    const at = (this.used + 7) & ~7;
    if (at + size > this.bytes) return -1;
    this.buffer ??= new ArrayBuffer(this.bytes);
    this.used = at + size;
    return at;
  }
}

/**
 * A copy of `array` lengthened to `length`, the new entries `fill`: the one way the memo tables
 * of the later stages grow (their sizes double as states are met).
 */
export function grownTo<T extends Int32Array | Uint32Array | Uint8Array>(array: T, length: number, fill = 0): T {
  const out = new (array.constructor as new (n: number) => T)(length);
  if (fill !== 0) out.fill(fill, array.length);
  out.set(array);
  return out;
}

// Typed copies of plain lists by a loop: the static `from` goes through the iterator protocol,
// several times slower for the short lists compile stages keep.
/** Length of the common prefix of `a` and `b` (token sequences: the prefix cache, categorization's trie order). */
export function commonPrefixLength(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** The first index i with arr[i] >= value in an ascending array (arr.length when none). */
export function lowerBound(arr: Int32Array, value: number): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The arrays one after another in one new array. */
export function concatInt32(parts: readonly Int32Array[]): Int32Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Int32Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function int32Of(list: readonly number[]): Int32Array {
  const out = new Int32Array(list.length);
  for (let i = 0; i < list.length; i++) out[i] = list[i]!;
  return out;
}

export function uint8Of(list: readonly number[]): Uint8Array {
  const out = new Uint8Array(list.length);
  for (let i = 0; i < list.length; i++) out[i] = list[i]!;
  return out;
}
