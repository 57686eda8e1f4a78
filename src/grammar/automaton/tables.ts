// The first sizes of the grammar automaton's memo tables, shared by its parts: every part carves
// its first tables from the automaton's one TableSlab (support/), whose size is the sum of theirs.

/** Entries of a memo map before its first growth. */
export const MEMO_CAPACITY = 128;

/** An IntMap's first table: 256 slots (twice MEMO_CAPACITY: it grows at half full) of two doubles. */
export const INT_MAP_FIRST_BYTES = 2 * MEMO_CAPACITY * 2 * 8;

/** An IdMap's first table: MEMO_CAPACITY ints. */
export const ID_MAP_FIRST_BYTES = MEMO_CAPACITY * 4;
