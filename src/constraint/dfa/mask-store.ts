/**
 * Where the regex matcher's masks live: narrow masks as interned token-id lists (one bitset
 * shared by all lists of at most SMALL_LIST_IDS ids, rewritten per read; a larger list's own
 * bitset made on its first read), wide masks in the walk scratch carved from slabs, and equal
 * masks interned by content, so states with the same mask hold one.
 */
import { sameWords, setTokenList } from "../../support/index.js";

export { popCount, sampledWordHash } from "../../support/index.js";

/** Masks of one sampled hash intern compares a new one with (see intern). */
const MAX_INTERN_BUCKET = 8;

/** Narrow lists up to this many ids share one rewritten mask instead of a bitset each. */
export const SMALL_LIST_IDS = 128;

/** Walk scratch masks carved from one slab allocation (see MaskStore.freshMask). */
const SLAB_MASKS = 32;

/** A narrow state's token ids (trie order), and its bitset once some state's mask was read. */
export class NarrowList {
  mask: Uint32Array | undefined = undefined;
  constructor(readonly ids: Int32Array) {}
}

/**
 * Sums the bytes of distinct buffers, each with 64 bytes of overhead: a buffer shared by several
 * states (a slab, an interned mask) counts once (see DfaTokenMatcher.retainedBytes).
 */
export class BufferTally {
  bytes = 0;
  private readonly buffers = new Set<ArrayBufferLike>();

  add(a: ArrayBufferView | undefined): void {
    if (a === undefined || this.buffers.has(a.buffer)) return;
    this.buffers.add(a.buffer);
    this.bytes += a.buffer.byteLength + 64;
  }
}

/** The interned masks and id lists of one matcher, its walk scratch and its small-list mask. */
export class MaskStore {
  /** Distinct narrow id lists by the walk's hash (states with equal masks share one). */
  private readonly listIntern = new Map<number, NarrowList[]>();
  /** The mask the next walk writes into (zeroed); taken over by the state when its mask is wide. */
  private walkScratch: Uint32Array | undefined;
  /**
   * The mask of every state with at most SMALL_LIST_IDS tokens: a bitset of its own would cost
   * one 19 KB allocation (~3 µs at 152k tokens, most of a small pattern's compile) for a few set
   * bits, while rewriting these bits costs a fraction of a microsecond. Holds `scratchList`.
   */
  private smallScratch: Uint32Array | undefined;
  private scratchList: NarrowList | null = null;
  /** Distinct masks by content hash (see intern). */
  private readonly maskIntern = new Map<number, { masks: Uint32Array[]; counts: number[] }>();
  private slab = new Uint32Array(0);
  private slabUsed = 0;
  /** Masks of the current slab (counted in the matcher's retainedBytes version). */
  slabMasks = 0;
  /** Narrow id lists turned into bitsets on a first read (tests). */
  listsMaterialized = 0;
  /** Reads of a small list's mask that rewrote the shared small-list mask (tests). */
  smallListWrites = 0;

  constructor(private readonly words: number) {}

  /** Its share of the matcher's retainedBytes: scratch, slab, and the intern tables' entries. */
  tallyInto(tally: BufferTally): void {
    tally.bytes += this.smallScratch?.byteLength ?? 0;
    tally.add(this.slab);
    tally.add(this.walkScratch);
    tally.bytes += (this.listIntern.size + this.maskIntern.size) * 80;
  }

  /** The zeroed mask the next walk writes into. */
  scratch(): Uint32Array {
    return (this.walkScratch ??= this.freshMask());
  }

  /** The walk's state keeps the scratch as its mask: the next walk gets a fresh one. */
  keepScratch(): void {
    this.walkScratch = undefined;
  }

  /** `mask`, zeroed, is the next walk's scratch (its walk's mask was interned elsewhere). */
  reuseScratch(mask: Uint32Array): void {
    this.walkScratch = mask;
  }

  /**
   * A narrow list's own bitset, made on its first read. Its own allocation: one shared slab for
   * all of them measured slower (a fresh mmap'd slab page-faults on every page the ids touch),
   * and a decode step past precompute's budget should not zero masks for states not visited yet.
   */
  bitsetOf(list: NarrowList): Uint32Array {
    if (list.mask === undefined) {
      const mask = new Uint32Array(this.words);
      setTokenList(mask, list.ids);
      list.mask = mask;
      this.listsMaterialized++;
    }
    return list.mask;
  }

  /** `list`'s bits in the shared small-list mask: the previous list's words cleared, its own set. */
  smallListMask(list: NarrowList): Uint32Array {
    let mask = this.smallScratch;
    if (mask === undefined) mask = this.smallScratch = new Uint32Array(this.words);
    const held = this.scratchList;
    if (held === list) return mask;
    if (held !== null) {
      const ids = held.ids;
      for (let i = 0; i < ids.length; i++) mask[ids[i]! >>> 5] = 0;
    }
    setTokenList(mask, list.ids);
    this.scratchList = list;
    this.smallListWrites++;
    return mask;
  }

  /** The shared list equal to ids[0..count) (hash `h`, the walk's over them in trie order), or a new one. */
  internList(ids: Int32Array, count: number, h: number): NarrowList {
    const bucket = this.listIntern.get(h);
    if (bucket !== undefined) {
      outer: for (const list of bucket) {
        if (list.ids.length !== count) continue;
        for (let i = 0; i < count; i++) if (list.ids[i] !== ids[i]) continue outer;
        return list;
      }
    }
    const list = new NarrowList(ids.slice(0, count));
    if (bucket === undefined) this.listIntern.set(h, [list]);
    else bucket.push(list);
    return list;
  }

  /**
   * Returns an existing mask with the same bits when there is one. Counted repeats give many
   * states with identical masks (e.g. [a-z]{0,500}: every state far from the end), so identical
   * masks are stored once. `h`: the mask's sampledWordHash; `count`: its tokens.
   */
  intern(mask: Uint32Array, h: number, count: number): Uint32Array {
    const bucket = this.maskIntern.get(h);
    if (bucket === undefined) {
      this.maskIntern.set(h, { masks: [mask], counts: [count] });
      return mask;
    }
    for (let j = 0; j < bucket.masks.length; j++) {
      if (bucket.counts[j] !== count) continue;
      const m = bucket.masks[j]!;
      if (sameWords(m, mask)) return m;
    }
    // A bucket is bounded: masks alike but for the words the hash skips (sampledWordHash) would
    // each be compared with all the others before them. Past it a mask is kept as its own.
    if (bucket.masks.length < MAX_INTERN_BUCKET) {
      bucket.masks.push(mask);
      bucket.counts.push(count);
    }
    return mask;
  }

  /**
   * A zeroed mask carved from a shared slab, for the walk's scratch: each wide state keeps the
   * scratch it was walked into, and one allocation (one backing store for the GC to track) per
   * 32 of them is much cheaper than one each.
   */
  private freshMask(): Uint32Array {
    const words = this.words;
    if (this.slabUsed === this.slabMasks) {
      // Slabs grow from 2 masks to SLAB_MASKS: a small pattern (a date, a phone number) should
      // not zero 600 KB at 152k tokens for the few masks it needs.
      this.slabMasks = this.slab.length === 0 ? 2 : Math.min(SLAB_MASKS, this.slabMasks * 2);
      this.slab = new Uint32Array(words * this.slabMasks);
      this.slabUsed = 0;
    }
    return this.slab.subarray(words * this.slabUsed, words * ++this.slabUsed);
  }
}
