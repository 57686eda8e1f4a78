/**
 * An LRU map bounded by bytes rather than entries: compiled automata range from a few hundred
 * bytes (a refusal) to tens of megabytes (a 20,000-state DFA), so a count bound either wastes
 * memory or lets a few large entries take gigabytes.
 *
 * Each entry reports its own size (`Sized.retainedBytes`), which may grow after it is stored
 * (a matcher's mask cache fills as requests visit states): the owner calls `resize(key)` when it
 * may have, and the total is kept by deltas, so no operation sums every entry. Past the budget
 * the least recently used entries are dropped; the entry just stored or resized is dropped last,
 * and alone it may exceed the budget (it is then dropped at the next insertion).
 */
export interface Sized {
  /** An estimate of the heap bytes the entry keeps alive (never less than it really holds). */
  retainedBytes(): number;
}

/** Map and key overhead per entry, on top of what the value reports. */
const ENTRY_OVERHEAD_BYTES = 160;

interface Slot<V> {
  value: V;
  bytes: number;
  /** The count of insertions and moves to the end (ByteLruCache.appends) when it last went there. */
  at: number;
}

export interface ByteLruStats {
  entries: number;
  bytes: number;
  budgetBytes: number;
  evictions: number;
}

export class ByteLruCache<V extends Sized> {
  private readonly entries = new Map<string, Slot<V>>();
  private total = 0;
  private evictions = 0;
  /** Entries put at the end of the order so far (inserted or moved there by get). */
  private appends = 0;

  constructor(
    readonly budgetBytes: number,
    /** Called for every entry dropped to stay within the budget (not for delete/clear). */
    private readonly onEvict?: (key: string, value: V) => void,
  ) {
    if (!(budgetBytes >= 0)) throw new RangeError("byte budget must be non-negative");
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.total;
  }

  stats(): ByteLruStats {
    return { entries: this.entries.size, bytes: this.total, budgetBytes: this.budgetBytes, evictions: this.evictions };
  }

  /**
   * The value, now among the most recently used; undefined when absent. An entry already in the
   * newer half of the order (fewer appends since its own than half the entries) stays where it is:
   * a Map's delete and re-insert was most of a lookup's cost (3.4 µs each among the 5,000 DFAs a
   * compile worker shares), and eviction reaches that half only after the older one.
   */
  get(key: string): V | undefined {
    const slot = this.entries.get(key);
    if (slot === undefined) return undefined;
    if (this.appends - slot.at >= this.entries.size >>> 1) {
      this.entries.delete(key);
      this.entries.set(key, slot);
      slot.at = ++this.appends;
    }
    return slot.value;
  }

  /** Without touching its place in the LRU order. */
  peek(key: string): V | undefined {
    return this.entries.get(key)?.value;
  }

  set(key: string, value: V): void {
    this.delete(key);
    const bytes = sizeOf(key, value);
    this.entries.set(key, { value, bytes, at: ++this.appends });
    this.total += bytes;
    this.evict(key);
  }

  /** Re-reads the entry's size (it may have grown) and evicts past the budget. */
  resize(key: string): void {
    const slot = this.entries.get(key);
    if (slot === undefined) return;
    const bytes = sizeOf(key, slot.value);
    this.total += bytes - slot.bytes;
    slot.bytes = bytes;
    this.evict(key);
  }

  delete(key: string): boolean {
    const slot = this.entries.get(key);
    if (slot === undefined) return false;
    this.entries.delete(key);
    this.total -= slot.bytes;
    return true;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }

  /** Drops least recently used entries until the total fits, sparing `keep` while others remain. */
  private evict(keep: string): void {
    if (this.total <= this.budgetBytes) return;
    for (const [key, slot] of this.entries) {
      if (this.total <= this.budgetBytes) break;
      if (key === keep) continue;
      this.entries.delete(key);
      this.total -= slot.bytes;
      this.evictions++;
      this.onEvict?.(key, slot.value);
    }
  }
}

function sizeOf(key: string, value: Sized): number {
  return ENTRY_OVERHEAD_BYTES + 2 * key.length + Math.max(0, Math.ceil(value.retainedBytes()));
}
