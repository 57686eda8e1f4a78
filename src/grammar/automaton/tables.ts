// The first sizes of the grammar automaton's memo tables, shared by its parts: every part carves
// its first tables from the automaton's one TableSlab (support/), whose size is the sum of theirs.

/** Entries of a memo map before its first growth. */
export const MEMO_CAPACITY = 128;

/** An IntMap's first table: 256 slots (twice MEMO_CAPACITY: it grows at half full) of two doubles. */
export const INT_MAP_FIRST_BYTES = 2 * MEMO_CAPACITY * 2 * 8;

/** An IdMap's first table: MEMO_CAPACITY ints. */
export const ID_MAP_FIRST_BYTES = MEMO_CAPACITY * 4;

/**
 * Automaton states as interned lists of ints (sorted by the caller): ids dense from 0 in order of
 * first sight, `lists[id]` read only. Lists of several ints are found by a hash of their ints,
 * candidates compared int by int (no string key per lookup); the owners key their one-element
 * states in an IntMap of their own and add them with `append`.
 */
export class IntListIds {
  readonly lists: Int32Array[] = [];
  private readonly byHash = new Map<number, number[]>();

  /** The id of the list of `list`'s ints (kept as a copy when new). */
  idOf(list: readonly number[]): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < list.length; i++) h = Math.imul(h ^ list[i]!, 0x01000193);
    let bucket = this.byHash.get(h);
    if (bucket !== undefined) {
      for (let b = 0; b < bucket.length; b++) {
        const known = this.lists[bucket[b]!]!;
        if (known.length !== list.length) continue;
        let same = true;
        for (let i = 0; i < known.length && same; i++) if (known[i] !== list[i]) same = false;
        if (same) return bucket[b]!;
      }
    } else {
      bucket = [];
      this.byHash.set(h, bucket);
    }
    bucket.push(this.lists.length);
    return this.append(Int32Array.from(list));
  }

  /** Adds a list without hashing it (its owner finds it by another key); its id. */
  append(list: Int32Array): number {
    this.lists.push(list);
    return this.lists.length - 1;
  }

  /** Ints held over all lists (for memory estimates). */
  totalLength(): number {
    let n = 0;
    for (const list of this.lists) n += list.length;
    return n;
  }
}

/** A whole text (UTF-8) fed to a byte automaton from `state`; -1 when refused on the way. */
export function walkText(automaton: { step(state: number, byte: number): number }, state: number, text: string): number {
  let s = state;
  for (const b of new TextEncoder().encode(text)) {
    s = automaton.step(s, b);
    if (s < 0) return -1;
  }
  return s;
}
