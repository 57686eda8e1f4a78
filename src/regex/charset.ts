import { lowerBound } from "../support/index.js";
import { CASE_GROUPS_FLAT } from "./casefold-data.js";

/**
 * A set of Unicode code points as sorted, disjoint, non-adjacent inclusive ranges,
 * flattened: [lo0, hi0, lo1, hi1, ...]. Surrogates may be members; they are dropped
 * when the set is turned into UTF-8 byte sequences (they cannot occur in UTF-8 text).
 */
export type CodeSet = number[];

export const MAX_CODE_POINT = 0x10ffff;

export function normalizeRanges(pairs: number[]): CodeSet {
  const n = pairs.length >> 1;
  if (n <= 1) return pairs.slice();
  const idx = Array.from({ length: n }, (_, i) => i);
  idx.sort((a, b) => pairs[2 * a]! - pairs[2 * b]!);
  const out: number[] = [];
  for (const i of idx) {
    const lo = pairs[2 * i]!;
    const hi = pairs[2 * i + 1]!;
    const last = out.length - 1;
    if (last > 0 && lo <= out[last]! + 1) {
      if (hi > out[last]!) out[last] = hi;
    } else {
      out.push(lo, hi);
    }
  }
  return out;
}

export function unionSets(a: CodeSet, b: CodeSet): CodeSet {
  if (a.length === 0) return b.slice();
  if (b.length === 0) return a.slice();
  return normalizeRanges(a.concat(b));
}

export function complementSet(a: CodeSet): CodeSet {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < a.length; i += 2) {
    if (a[i]! > next) out.push(next, a[i]! - 1);
    next = a[i + 1]! + 1;
  }
  if (next <= MAX_CODE_POINT) out.push(next, MAX_CODE_POINT);
  return out;
}

export function setContains(a: CodeSet, cp: number): boolean {
  let lo = 0;
  let hi = (a.length >> 1) - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < a[2 * mid]!) hi = mid - 1;
    else if (cp > a[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

// Case groups indexed by member code point, sorted, for range lookups.
let foldMembers: Int32Array | null = null; // sorted code points that have case partners
let foldGroupStart: Int32Array | null = null; // parallel: offset of the member's group in CASE_GROUPS_FLAT

function loadFoldTable(): void {
  if (foldMembers) return;
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < CASE_GROUPS_FLAT.length; ) {
    const size = CASE_GROUPS_FLAT[i]!;
    for (let k = 1; k <= size; k++) pairs.push([CASE_GROUPS_FLAT[i + k]!, i]);
    i += size + 1;
  }
  pairs.sort((x, y) => x[0] - y[0]);
  foldMembers = Int32Array.from(pairs, (p) => p[0]);
  foldGroupStart = Int32Array.from(pairs, (p) => p[1]);
}

/**
 * Closes a set under Python's IGNORECASE equivalence (str patterns, Unicode mode),
 * or under ASCII letter case only when `asciiOnly` (Python's re.ASCII | re.IGNORECASE).
 */
export function caseClose(a: CodeSet, asciiOnly: boolean): CodeSet {
  const extra: number[] = [];
  if (asciiOnly) {
    for (let i = 0; i < a.length; i += 2) {
      const lo = a[i]!;
      const hi = a[i + 1]!;
      const ulo = Math.max(lo, 0x41),
        uhi = Math.min(hi, 0x5a);
      if (ulo <= uhi) extra.push(ulo + 32, uhi + 32);
      const llo = Math.max(lo, 0x61),
        lhi = Math.min(hi, 0x7a);
      if (llo <= lhi) extra.push(llo - 32, lhi - 32);
    }
  } else {
    loadFoldTable();
    const members = foldMembers!;
    const starts = foldGroupStart!;
    for (let i = 0; i < a.length; i += 2) {
      const hi = a[i + 1]!;
      for (let j = lowerBound(members, a[i]!); j < members.length && members[j]! <= hi; j++) {
        const g = starts[j]!;
        const size = CASE_GROUPS_FLAT[g]!;
        for (let k = 1; k <= size; k++) {
          const cp = CASE_GROUPS_FLAT[g + k]!;
          extra.push(cp, cp);
        }
      }
    }
  }
  if (extra.length === 0) return a.slice();
  return normalizeRanges(a.concat(extra));
}

/**
 * Splits a code point range into UTF-8 byte-range sequences (each a list of [lo, hi] byte
 * ranges, one per encoded byte) whose concatenated languages are exactly the UTF-8 encodings
 * of the range minus surrogates. Standard split at encoding-length and continuation-byte
 * boundaries, so each sequence is a product of byte ranges.
 */
export function utf8Sequences(lo: number, hi: number, out: number[][]): void {
  const stack: number[] = [lo, hi];
  outer: while (stack.length > 0) {
    const e = stack.pop()!;
    const s = stack.pop()!;
    if (s > e) continue;
    if (s <= 0xdfff && e >= 0xd800) {
      if (s < 0xd800) stack.push(s, 0xd7ff);
      if (e > 0xdfff) stack.push(0xe000, e);
      continue;
    }
    for (const max of [0x7f, 0x7ff, 0xffff]) {
      if (s <= max && e > max) {
        stack.push(s, max, max + 1, e);
        continue outer;
      }
    }
    if (e <= 0x7f) {
      out.push([s, e]);
      continue;
    }
    for (let i = 1; i < 4; i++) {
      const m = (1 << (6 * i)) - 1;
      if ((s & ~m) !== (e & ~m)) {
        if ((s & m) !== 0) {
          stack.push(s, s | m, (s | m) + 1, e);
          continue outer;
        }
        if ((e & m) !== m) {
          stack.push(s, (e & ~m) - 1, e & ~m, e);
          continue outer;
        }
      }
    }
    const a = encodeUtf8(s);
    const b = encodeUtf8(e);
    const seq: number[] = [];
    for (let i = 0; i < a.length; i++) seq.push(a[i]!, b[i]!);
    out.push(seq);
  }
}

function encodeUtf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}
