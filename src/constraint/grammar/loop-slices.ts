/**
 * Loop slices: the part of a root walk that depends only on how a set loops (lexer-walks.ts).
 *
 * A body set (a string's contents, a name) steps to itself on most bytes, and through a few sets
 * of its own inside a multi-byte character (its Utf8Closure). From the trie's root, the nodes
 * reached that way are its loop region: every token ending there is allowed whatever the stack,
 * and only where a byte leaves the region (an `exit`: a closing quote, a backslash) does the walk
 * need the set itself. Every set with the same loop bytes and closure rows has the same region,
 * so it is walked once per trie and kept here, with what a walk needs to take it up anywhere:
 * at the root (a body set's own walk) and at any node the region reaches in the set itself (a
 * walk from a set of a key name's prefixes and a free key meets the free key's set at depth 1,
 * and below that node walks exactly as the region does).
 */
import { int32Of, lowerBound, maskWords, popCount32, setBits } from "../../support/index.js";
import type { TokenTrie } from "../trie.js";
import type { Utf8Closure } from "./lexer-sets.js";

export interface LoopSlice {
  /** The region's tokens (every class) as a mask, or null when it has none. */
  readonly pure: Uint32Array | null;
  readonly pureCount: number;
  /** The same tokens as a bitset over trie positions (tokenIds order): a subtree's are a range. */
  readonly purePositions: Uint32Array;
  /** Per class (Utf8Closure; 0 = the set itself), its tokens as positions, or null when none. */
  readonly classPositions: readonly (ClassPositions | null)[];
  /** Classes with tokens, by their first token in trie order: the order the walk meets their sets. */
  readonly classOrder: Int32Array;
  /** Per class: exits before its first token (-1: none), where its set joins a root walk's sets. */
  readonly classFirstAt: Int32Array;
  /** Where a byte leaves the region, in trie order: a root child that does not loop, or a node below the set itself. */
  readonly exits: Int32Array;
  /** Nodes the region's walk steps on (as walkFrom counts them), and the count before each 256-node block. */
  readonly visited: Uint32Array;
  readonly visitedRank: Uint32Array;
  readonly regionSteps: number;
  /** Nodes the region reaches in the set itself (class 0): where a walk that meets such a set takes the slice up. */
  readonly entries: Uint32Array;
  /**
   * Nodes with a subtree of MIN_SLICED_SUBTREE or more that the region reaches inside a character
   * (class > 0), ascending, and their classes: a walk from a key name's prefixes meets a free key's
   * first byte of "é" there.
   */
  readonly classEntries: Int32Array;
  readonly classEntryClass: Uint8Array;
  /** Bytes from the set to each class: another set of the same key finds its own class sets by them. */
  readonly paths: readonly (readonly number[])[];
}

/** Subtrees a walk takes up from a slice when it meets a set of its key below the root: smaller ones are walked. */
export const MIN_SLICED_SUBTREE = 64;

/** A class's tokens as positions, and per 1024 positions the first one at or after the block's start (or -1). */
interface ClassPositions {
  readonly bits: Uint32Array;
  readonly nextInBlock: Int32Array;
}

/**
 * Walks the loop region of a set over the whole trie: `loop` its loop bytes, `closure` its
 * classes (null: ASCII only), `loopsBelow(set, p)` whether a subtree goes at once (the walk's
 * own test, on class `classSets[c]`).
 *
 * With an `anchor` (a root child), the region is walked below it instead, as if the set were
 * there: the words after a space (" name") are most of a large vocabulary, and the root region
 * never reaches them. Only its entries below the anchor's children mean anything (a walk takes
 * it up where it meets the set there); its tokens are never a root walk's.
 */
export function walkLoopRegion(
  trie: TokenTrie,
  loop: Uint32Array,
  closure: Utf8Closure | null,
  setId: number,
  loopsBelow: (set: number, p: number) => boolean,
  anchor = 0,
): LoopSlice {
  const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = trie;
  const firstDepth = anchor === 0 ? 1 : trie.depth[anchor]! + 1;
  const regionEnd = anchor === 0 ? numNodes : anchor + subtreeSize[anchor]!;
  const classSets = closure === null ? [setId] : closure.sets;
  const rows = closure === null ? null : closure.rows;
  const nodeWords = (numNodes + 31) >>> 5;
  const visited = new Uint32Array(nodeWords);
  const entries = new Uint32Array(nodeWords);
  const positions = tokenIds.length;
  const purePositions = new Uint32Array((positions + 31) >>> 5);
  const classBits: (Uint32Array | null)[] = classSets.map(() => null);
  const classFirstAt = new Int32Array(classSets.length).fill(-1);
  const classFirstPos = new Int32Array(classSets.length).fill(-1);
  const atClass = new Int32Array(trie.maxTokenLength + 2);
  const exits: number[] = [];
  const classEntries: number[] = [];
  const classEntryClass: number[] = [];
  let pure: Uint32Array | null = null;
  let pureCount = 0;
  let steps = 0;
  // The set itself at the anchor (atClass is 0 there).
  let p = anchor + 1;
  while (p < regionEnd) {
    const info = nodeInfo[p]!;
    const d = (info >>> 8) & 0xffff;
    const b = info & 0xff;
    const size = subtreeSize[p]!;
    const from = atClass[d - 1]!;
    const c = from === 0 && ((loop[b >>> 5]! >>> (b & 31)) & 1) !== 0 ? 0 : rows === null ? -2 : rows[from * 256 + b]!;
    // Out of the region: the set itself walks on from here. A root child that cannot begin a
    // token is not visited at all by a root walk (its first bytes): an exit it filters out.
    if (c === -2 || (c === -1 && d === firstDepth)) {
      exits.push(p);
      p += size;
      continue;
    }
    steps++;
    visited[p >>> 5]! |= 1 << (p & 31);
    if (c === -1) {
      p += size;
      continue;
    }
    if (c === 0) entries[p >>> 5]! |= 1 << (p & 31);
    else if (size >= MIN_SLICED_SUBTREE) {
      classEntries.push(p);
      classEntryClass.push(c);
    }
    atClass[d] = c;
    const whole = size > 1 && loopsBelow(classSets[c]!, p);
    const first = tokenStart[p]!;
    const last = tokenStart[whole ? p + size : p + 1]!;
    if (last > first) {
      if (classFirstPos[c]! < 0) {
        classFirstPos[c] = first;
        classFirstAt[c] = exits.length;
      }
      pure ??= new Uint32Array(maskWords(trie.vocabSize));
      const bits = (classBits[c] ??= new Uint32Array(purePositions.length));
      for (let k = first; k < last; k++) {
        const id = tokenIds[k]!;
        pure[id >>> 5]! |= 1 << (id & 31);
        purePositions[k >>> 5]! |= 1 << (k & 31);
        bits[k >>> 5]! |= 1 << (k & 31);
      }
      pureCount += last - first;
    }
    p += whole ? size : 1;
  }
  const visitedRank = new Uint32Array((numNodes >>> 8) + 2);
  for (let block = 0, n = 0; block < visitedRank.length; block++) {
    visitedRank[block] = n;
    for (let w = block * 8; w < block * 8 + 8 && w < nodeWords; w++) n += popCount32(visited[w]!);
  }
  const classOrder = Int32Array.from(classSets.map((_, c) => c).filter((c) => classFirstPos[c]! >= 0)).sort(
    (a, b) => classFirstPos[a]! - classFirstPos[b]!,
  );
  return {
    pure,
    pureCount,
    purePositions,
    classPositions: classBits.map((bits) => (bits === null ? null : { bits, nextInBlock: blockStarts(bits) })),
    classOrder,
    classFirstAt,
    exits: Int32Array.from(exits),
    visited,
    visitedRank,
    regionSteps: steps,
    entries,
    classEntries: Int32Array.from(classEntries),
    classEntryClass: Uint8Array.from(classEntryClass),
    paths: closure === null ? [[]] : closure.paths,
  };
}

/** Bytes a slice holds, for what a trie keeps of them. */
export function sliceBytes(slice: LoopSlice): number {
  let bytes =
    400 +
    slice.classEntries.byteLength +
    slice.classEntryClass.byteLength +
    slice.purePositions.byteLength +
    slice.exits.byteLength +
    slice.visited.byteLength;
  bytes += slice.visitedRank.byteLength + slice.entries.byteLength + (slice.pure?.byteLength ?? 0);
  for (const c of slice.classPositions) if (c !== null) bytes += c.bits.byteLength + c.nextInBlock.byteLength;
  return bytes;
}

/** Steps the region's walk takes on nodes [from, to) (a subtree of a node it reaches). */
export function visitedBetween(slice: LoopSlice, from: number, to: number): number {
  return rankOf(slice, to) - rankOf(slice, from);
}

function rankOf(slice: LoopSlice, x: number): number {
  const block = x >>> 8;
  const words = slice.visited;
  let r = slice.visitedRank[block]!;
  const last = x >>> 5;
  for (let w = block * 8; w < last; w++) r += popCount32(words[w]!);
  const rem = x & 31;
  if (rem !== 0) r += popCount32(words[last]! & ((1 << rem) - 1));
  return r;
}

/** Whether the region reaches node `p` in the set itself. */
export function entersAt(slice: LoopSlice, p: number): boolean {
  return ((slice.entries[p >>> 5]! >>> (p & 31)) & 1) !== 0;
}

/** The class the region reaches node `p` in when it is one of classEntries, else -1. */
export function classEntryAt(slice: LoopSlice, p: number): number {
  const i = lowerBound(slice.classEntries, p);
  return i < slice.classEntries.length && slice.classEntries[i] === p ? slice.classEntryClass[i]! : -1;
}

/** The first of `class`'s tokens at a position in [from, to), or -1. */
export function firstClassPosition(slice: LoopSlice, cls: number, from: number, to: number): number {
  const positions = slice.classPositions[cls];
  if (positions === null || positions === undefined) return -1;
  const { bits, nextInBlock } = positions;
  // Within from's block word by word, then the next block's first, if any.
  const blockEnd = Math.min(to, ((from >>> 10) + 1) << 10);
  const k = firstBitIn(bits, from, blockEnd);
  if (k >= 0 || blockEnd >= to) return k;
  const next = nextInBlock[(from >>> 10) + 1] ?? -1;
  return next >= 0 && next < to ? next : -1;
}

/**
 * Sets in `mask` the slice's tokens at positions in `ranges` (sorted, disjoint [from, to) pairs):
 * one by one when they are few, else the slice's whole mask less the tokens outside the ranges,
 * made in `scratch` (a mask's words) and or-ed in. A null `mask` is made when there is a token
 * to set (as a walk makes its mask on its first token); returns it.
 */
export function setRegionTokens(
  slice: LoopSlice,
  ranges: readonly number[],
  tokenIds: Int32Array,
  mask: Uint32Array | null,
  scratch: Uint32Array,
): Uint32Array | null {
  const bits = slice.purePositions;
  let covered = 0;
  for (let r = 0; r < ranges.length; r += 2) covered += bitsIn(bits, ranges[r]!, ranges[r + 1]!);
  if (covered === 0) return mask;
  mask ??= new Uint32Array(scratch.length);
  if (covered * 2 <= slice.pureCount) {
    for (let r = 0; r < ranges.length; r += 2) setIdsAt(bits, ranges[r]!, ranges[r + 1]!, tokenIds, mask, 1);
    return mask;
  }
  scratch.set(slice.pure!);
  let from = 0;
  for (let r = 0; r < ranges.length; r += 2) {
    setIdsAt(bits, from, ranges[r]!, tokenIds, scratch, 0);
    from = ranges[r + 1]!;
  }
  setIdsAt(bits, from, tokenIds.length, tokenIds, scratch, 0);
  for (let w = 0; w < mask.length; w++) mask[w]! |= scratch[w]!;
  return mask;
}

/**
 * Sets in `mask` the region's tokens at trie positions [from, to) of the classes `kept` marks (by
 * class): all classes at once (setRegionTokens); over the whole trie with class 0 (the set itself,
 * nearly all of them) kept, all less the dropped classes' tokens, made in `scratch`; else the kept
 * classes' one by one.
 */
export function setClassTokensIn(
  slice: LoopSlice,
  kept: readonly boolean[],
  from: number,
  to: number,
  tokenIds: Int32Array,
  mask: Uint32Array,
  scratch: Uint32Array,
): void {
  const classes = slice.classPositions;
  let all = true;
  for (let c = 0; c < classes.length; c++) if (classes[c] !== null && kept[c] !== true) all = false;
  if (all) {
    setRegionTokens(slice, [from, to], tokenIds, mask, scratch);
    return;
  }
  if (kept[0] === true && classes[0] !== null && from === 0 && to === tokenIds.length) {
    scratch.set(slice.pure!);
    for (let c = 1; c < classes.length; c++)
      if (classes[c] !== null && kept[c] !== true) setIdsAt(classes[c]!.bits, 0, to, tokenIds, scratch, 0);
    for (let w = 0; w < mask.length; w++) mask[w]! |= scratch[w]!;
    return;
  }
  for (let c = 0; c < classes.length; c++)
    if (classes[c] !== null && kept[c] === true) setIdsAt(classes[c]!.bits, from, to, tokenIds, mask, 1);
}

/** For each set bit k in [from, to) of `bits`: sets (value 1) or clears (0) tokenIds[k]'s bit in `mask`. */
function setIdsAt(bits: Uint32Array, from: number, to: number, tokenIds: Int32Array, mask: Uint32Array, value: number): void {
  if (from >= to) return;
  for (let w = from >>> 5, lastW = (to - 1) >>> 5; w <= lastW; w++) {
    let x = wordIn(bits, w, from, to);
    while (x !== 0) {
      const low = x & -x;
      const id = tokenIds[w * 32 + 31 - Math.clz32(low)]!;
      if (value === 1) mask[id >>> 5]! |= 1 << (id & 31);
      else mask[id >>> 5]! &= ~(1 << (id & 31));
      x ^= low;
    }
  }
}

/** Word w of `bits`, its bits outside positions [from, to) cleared. */
function wordIn(bits: Uint32Array, w: number, from: number, to: number): number {
  let x = bits[w]!;
  if (w === from >>> 5) x &= ~0 << (from & 31);
  if (w === (to - 1) >>> 5 && (to & 31) !== 0) x &= (1 << (to & 31)) - 1;
  return x;
}

function bitsIn(bits: Uint32Array, from: number, to: number): number {
  if (from >= to) return 0;
  let n = 0;
  for (let w = from >>> 5, lastW = (to - 1) >>> 5; w <= lastW; w++) {
    const x = wordIn(bits, w, from, to);
    n += popCount32(x);
  }
  return n;
}

function firstBitIn(bits: Uint32Array, from: number, to: number): number {
  if (from >= to) return -1;
  for (let w = from >>> 5, lastW = (to - 1) >>> 5; w <= lastW; w++) {
    const x = wordIn(bits, w, from, to);
    if (x !== 0) return w * 32 + 31 - Math.clz32(x & -x);
  }
  return -1;
}

/** Per 1024-position block, the first set bit at or after its start (-1: none after). */
function blockStarts(bits: Uint32Array): Int32Array {
  const blocks = ((bits.length * 32) >>> 10) + 2;
  const out = new Int32Array(blocks).fill(-1);
  let next = -1;
  for (let block = blocks - 1; block >= 0; block--) {
    const k = firstBitIn(bits, block << 10, Math.min(bits.length * 32, (block + 1) << 10));
    if (k >= 0) next = k;
    out[block] = next;
  }
  return out;
}

/**
 * What a walk from a set of a counted chain (CountedShape in lexer-sets.ts: a string of at most N
 * characters) reads off its slice, made once per slice. Its region is a body's region, read by
 * characters: a token `k` characters deep ends in the set k on in the chain (or, inside its k-th
 * character, in that character's class of the set k - 1 on). A walk from a set with `levels` sets
 * of the same shape ahead reads the region down to that depth: its tokens at most `levels`
 * characters deep and the steps on the nodes stepped from fewer than `levels` sets on; it walks
 * its exits whose parent is fewer than `levels` characters deep (from the set there) and, from
 * each node exactly `levels` deep between characters with children (the frontier), on as the
 * plain walk does (the set there may loop or have a slice of its own). The slice is walked node by
 * node (no subtree at once: no set of a chain loops), so its steps are the plain walk's.
 */
export interface CountedRegion {
  /** The deepest region node, in characters. */
  readonly maxLevel: number;
  /**
   * By c (0 .. maxLevel + 1), the region nodes (visited) stepped on from a set fewer than c sets
   * on: a walk reading c levels takes these steps.
   */
  readonly stepsBelow: Int32Array;
  /** Per exit, how many characters deep its parent is. */
  readonly exitLevels: Int32Array;
  /**
   * Per depth c, the region's nodes c characters deep, between characters, with children: a walk
   * reading c levels walks on from each (its step included), from the set at its parent.
   */
  readonly frontier: readonly Int32Array[];
  /**
   * Per frontier node (as `frontier`), the bytes of its character before its own (its parent is
   * the set that many bytes into the character, from the set c - 1 on): count << 24 | bytes.
   */
  readonly frontierPaths: readonly Int32Array[];
  /** (first position, depth, class) of each depth and class with a token, by first position. */
  readonly joins: Int32Array;
  /**
   * The region's token ids by depth in characters (a counting sort): those c deep are
   * tokensByLevel[levelStart[c] .. levelStart[c + 1]).
   */
  readonly tokensByLevel: Int32Array;
  readonly levelStart: Int32Array;
  /** The region's tokens at most c characters deep, by c below maxLevel (made on first need). */
  readonly masks: Map<number, Uint32Array>;
}

const countedOfSlice = new WeakMap<LoopSlice, CountedRegion>();
const charDepthsOfTrie = new WeakMap<TokenTrie, Uint8Array>();

/** Per trie node, the characters begun on its path (bytes that are not UTF-8 continuations), at most 255. */
function charDepthsOf(trie: TokenTrie): Uint8Array {
  let out = charDepthsOfTrie.get(trie);
  if (out === undefined) {
    const { nodeInfo, numNodes } = trie;
    out = new Uint8Array(numNodes);
    const atDepth = new Uint8Array(trie.maxTokenLength + 2);
    for (let p = 1; p < numNodes; p++) {
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const b = info & 0xff;
      const c = Math.min(255, atDepth[d - 1]! + (b >= 0x80 && b < 0xc0 ? 0 : 1));
      atDepth[d] = c;
      out[p] = c;
    }
    charDepthsOfTrie.set(trie, out);
  }
  return out;
}

export function countedRegionOf(trie: TokenTrie, slice: LoopSlice): CountedRegion {
  let region = countedOfSlice.get(slice);
  if (region !== undefined) return region;
  const chars = charDepthsOf(trie);
  const { subtreeSize, tokenIds, tokenNode, nodeByte, nodeInfo, numNodes } = trie;
  const { visited, entries } = slice;
  const isSet = (bits: Uint32Array, p: number): boolean => ((bits[p >>> 5]! >>> (p & 31)) & 1) !== 0;
  // One preorder pass, each node's ancestors by depth in lastAt.
  // Steps: the set a visited node is stepped on from is, between characters (an entry, or the
  // root), the set as many characters on as its parent is deep; inside a character, the set it
  // began at. Frontier: the entries with children, by depth, in trie order.
  let maxLevel = 0;
  const counts: number[] = [];
  const lists: number[][] = [];
  const pathLists: number[][] = [];
  const lastAt = new Int32Array(trie.maxTokenLength + 2);
  for (let p = 1; p < numNodes; p++) {
    const d = (nodeInfo[p]! >>> 8) & 0xffff;
    lastAt[d] = p;
    if (!isSet(visited, p)) continue;
    const parent = d === 1 ? 0 : lastAt[d - 1]!;
    const from = parent === 0 ? 0 : isSet(entries, parent) ? chars[parent]! : chars[parent]! - 1;
    counts[from] = (counts[from] ?? 0) + 1;
    const c = chars[p]!;
    if (c > maxLevel) maxLevel = c;
    if (subtreeSize[p]! <= 1 || !isSet(entries, p)) continue;
    // The character's bytes before p's own, first byte first: its ancestors back to its first
    // byte (an ASCII p: none), as count << 24 | b0 << 16 | b1 << 8 | b2.
    let path = 0;
    let count = 0;
    if (nodeByte[p]! >= 0x80) {
      let a = d - 1;
      while (a > 1 && nodeByte[lastAt[a]!]! < 0xc0 && d - a < 3) a--;
      for (let x = a; x < d; x++) path = (path << 8) | nodeByte[lastAt[x]!]!;
      count = d - a;
    }
    (lists[c] ??= []).push(p);
    (pathLists[c] ??= []).push((count << 24) | (path << (8 * (3 - count))));
  }
  const stepsBelow = new Int32Array(maxLevel + 2);
  for (let c = 1, n = 0; c <= maxLevel + 1; c++) stepsBelow[c] = n += counts[c - 1] ?? 0;
  // An exit's parent is between characters: as deep as the exit, less the character it begins.
  const exitLevels = new Int32Array(slice.exits.length);
  for (let i = 0; i < slice.exits.length; i++) {
    const e = slice.exits[i]!;
    const b = nodeByte[e]!;
    exitLevels[i] = chars[e]! - (b >= 0x80 && b < 0xc0 ? 0 : 1);
  }
  const frontier = Array.from({ length: maxLevel + 1 }, (_, c) => int32Of(lists[c] ?? []));
  const frontierPaths = Array.from({ length: maxLevel + 1 }, (_, c) => int32Of(pathLists[c] ?? []));
  const classes = slice.classPositions.length;
  const first = new Int32Array((maxLevel + 1) * classes).fill(-1);
  for (let c = 0; c < classes; c++) {
    const bits = slice.classPositions[c]?.bits;
    if (bits === undefined) continue;
    for (const k of setBits(bits)) {
      const at = chars[tokenNode[tokenIds[k]!]!]! * classes + c;
      if (first[at]! < 0) first[at] = k;
    }
  }
  const order: number[] = [];
  for (let i = 0; i < first.length; i++) if (first[i]! >= 0) order.push(i);
  order.sort((a, b) => first[a]! - first[b]!);
  const joins = new Int32Array(order.length * 3);
  for (let i = 0; i < order.length; i++) {
    joins[3 * i] = first[order[i]!]!;
    joins[3 * i + 1] = Math.floor(order[i]! / classes);
    joins[3 * i + 2] = order[i]! % classes;
  }
  // Every token of the region, by depth (tokens are never deeper than their nodes, so maxLevel holds).
  const levelStart = new Int32Array(maxLevel + 2);
  const ids = setBits(slice.purePositions).map((position) => tokenIds[position]!);
  for (const id of ids) levelStart[chars[tokenNode[id]!]! + 1]!++;
  for (let c = 1; c < levelStart.length; c++) levelStart[c]! += levelStart[c - 1]!;
  const at = levelStart.slice();
  const tokensByLevel = new Int32Array(levelStart[maxLevel + 1]!);
  for (const id of ids) tokensByLevel[at[chars[tokenNode[id]!]!]!++] = id;
  region = { maxLevel, stepsBelow, exitLevels, frontier, frontierPaths, joins, tokensByLevel, levelStart, masks: new Map() };
  countedOfSlice.set(slice, region);
  return region;
}

/**
 * The region's tokens at most `levels` characters deep (the slice's whole region from maxLevel on),
 * kept in `region.masks` when `keep` (the trie's slices are under their cap).
 */
export function countedMaskOf(trie: TokenTrie, slice: LoopSlice, region: CountedRegion, levels: number, keep: boolean): Uint32Array | null {
  if (levels >= region.maxLevel) return slice.pure;
  let mask = region.masks.get(levels);
  if (mask === undefined) {
    // The tokens at most `levels` deep set, or the deeper ones cleared from the whole region's:
    // whichever is fewer.
    const { tokensByLevel } = region;
    const split = region.levelStart[levels + 1]!;
    if (split * 2 <= tokensByLevel.length || slice.pure === null) {
      mask = new Uint32Array(maskWords(trie.vocabSize));
      for (let i = 0; i < split; i++) mask[tokensByLevel[i]! >>> 5]! |= 1 << (tokensByLevel[i]! & 31);
    } else {
      mask = slice.pure.slice();
      for (let i = split; i < tokensByLevel.length; i++) mask[tokensByLevel[i]! >>> 5]! &= ~(1 << (tokensByLevel[i]! & 31));
    }
    if (keep) region.masks.set(levels, mask);
  }
  return mask;
}

/** Bytes a counted region holds (its masks as made so far). */
export function countedRegionBytes(region: CountedRegion): number {
  let bytes =
    200 +
    region.tokensByLevel.byteLength +
    region.levelStart.byteLength +
    region.stepsBelow.byteLength +
    region.exitLevels.byteLength +
    region.joins.byteLength;
  for (const list of region.frontier) bytes += 64 + 2 * list.byteLength;
  for (const mask of region.masks.values()) bytes += mask.byteLength;
  return bytes;
}
