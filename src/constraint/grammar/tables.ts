/**
 * What the grammar matcher's parts (mask cache, budgets, lexer-level walks) agree on about their
 * tables: the one slab their first tables are carved from, sized for all of them together, the
 * capacity of their memo maps, and the typed token lists they keep.
 */
import { int32Of } from "../../support/index.js";

/** Entries of a memo map before its first growth. */
export const MEMO_CAPACITY = 128;
/**
 * A matcher's slab (TableSlab): the first tables of its and its lexer walks' two IntMaps (4 KB
 * each) and six IdMaps (0.5 KB each), their step tables (about 16 KB), the depth stack of a walk
 * and the short token lists of the first walks (SLAB_LIST_MAX): about 20 KB at a first mask.
 */
export const MATCHER_SLAB_BYTES = 48 * 1024;
/** Token lists of a walk up to this length come from the slab while it lasts. */
export const SLAB_LIST_MAX = 256;

export const EMPTY = new Int32Array(0);

/** A list as a typed array (read only: the empty ones are all EMPTY); no iterator protocol. */
export function listOf(list: readonly number[]): Int32Array {
  return list.length === 0 ? EMPTY : int32Of(list);
}
