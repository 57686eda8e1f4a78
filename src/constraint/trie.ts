import { MARKER_LEAD, markerBytes, markerOfBytes } from "../support/index.js";
import { TokenKind } from "../vocab/index.js";
import type { VocabularyBytes } from "./types.js";

const UTF8 = new TextEncoder();
/** Alphabets whose longestTokenWithin a trie keeps (each answer is a short string key and a number). */
const LONGEST_WITHIN_KEPT = 1024;

/**
 * Every generable token's bytes as a trie in flat typed arrays (llguidance toktrie layout).
 *
 * Nodes are in DFS pre-order with children in byte order; node 0 is the root (empty prefix).
 * The first child of node p is p + 1 (when subtreeSize[p] > 1) and the next sibling of p is
 * p + subtreeSize[p], so a walk that finds a prefix dead skips the whole subtree in O(1) and
 * never needs child pointers. depth[p] = length of the prefix ending at p, which tells a walk
 * which saved automaton state to resume from after a skip.
 *
 * Tokens whose bytes end at node p are tokenIds[tokenStart[p] .. tokenStart[p + 1]); several
 * ids may share one byte string. Only Normal, Byte and UserDefined tokens with at least one byte
 * are in the trie, and the control tokens that are tool-call markers (support/control-markers.ts),
 * spelled as no text is: other control and end-of-generation tokens are decided by the decode loop.
 */
export class TokenTrie {
  readonly vocabSize: number;
  readonly numNodes: number;
  readonly nodeByte: Uint8Array;
  readonly depth: Uint16Array;
  readonly subtreeSize: Uint32Array;
  readonly tokenStart: Uint32Array;
  readonly tokenIds: Int32Array;
  /** Node where token id's bytes end, or -1 when the token is not generable (not in the trie). */
  readonly tokenNode: Int32Array;
  /** Number of tokens in the trie. */
  readonly numTokens: number;
  readonly maxTokenLength: number;
  /**
   * True when each of the 256 single bytes is a token (byte-level BPE; SentencePiece with byte
   * fallback). Then any byte path of length n is reachable in at most n tokens, which lets masks
   * skip exact token distances whenever the byte distance already fits the budget.
   */
  readonly everyByteIsToken: boolean;
  /**
   * Hot-loop packing of a node: byte (bits 0-7) | depth << 8 (bits 8-23) | bit 31 when at least
   * one token ends at the node. One read instead of three per visited node.
   */
  readonly nodeInfo: Uint32Array;
  /**
   * Per node, 8 words = the 256-bit set of bytes that occur strictly below it. A walk in an
   * automaton state that loops on all of those bytes can accept the whole subtree at once.
   */
  readonly belowBytes: Uint32Array;
  /**
   * 1 where every token below the node, read from just after the node, consists of complete,
   * valid UTF-8 characters (no token ends inside a character). With `belowBytes`, this lets a walk
   * accept a subtree at once in automaton states that loop on every multi-byte character (free
   * text, JSON string bodies) even though no single non-ASCII byte loops.
   */
  readonly utf8Aligned: Uint8Array;
  /** Bitset of every token in the trie (mask layout): the starting point of broad masks. */
  readonly generableMask: Uint32Array;
  /** generableMask without the control markers: free text's tokens. */
  readonly textMask: Uint32Array;
  /** The control markers' token ids (in the trie under their spelling), none in most vocabularies. */
  readonly markerTokens: Int32Array;
  /** The vocabulary the trie was built from, markers spelled as constraints write them: token bytes for advancing automata. */
  readonly offsets: Uint32Array;
  readonly data: Uint8Array;
  /**
   * For each ASCII byte b, the trie's tokens that contain b, as trie positions k (tokenIds[k] is
   * the id; bytes at orderedData[orderedOffsets[k] .. orderedOffsets[k + 1])):
   * asciiTokens[asciiTokenStart[b] .. asciiTokenStart[b + 1]), ascending. With `notUtf8Tokens`
   * (tokens that are not whole, valid UTF-8 characters), a state that loops on all but a few ASCII
   * bytes and on every multi-byte character keeps every token outside those few lists, so its mask
   * needs only those tokens stepped, not a walk of nearly the whole trie. Positions and a copy of
   * the bytes in trie order keep those reads moving forward through memory.
   */
  readonly asciiTokenStart: Uint32Array;
  readonly asciiTokens: Int32Array;
  readonly notUtf8Tokens: Int32Array;
  readonly orderedOffsets: Uint32Array;
  readonly orderedData: Uint8Array;
  /** Trie node of each first byte (a child of the root), or -1: walks go straight to the live ones. */
  readonly rootChild: Int32Array;
  /** Scratch for walks that list the ids they set (one mask's worth of words; one walk at a time). */
  readonly idScratch: Int32Array;
  /** Scratch for the trie positions the per-byte lists give a walk (an eighth of the tokens at most). */
  readonly listScratch: Int32Array;
  /** Scratch for walks that must count each token once (stamp per trie position; see nextTokenStamp). */
  readonly tokenStamp: Int32Array;
  private tokenStampValue = 0;

  private constructor(
    vocab: VocabularyBytes,
    numNodes: number,
    nodeByte: Uint8Array,
    depth: Uint16Array,
    subtreeSize: Uint32Array,
    tokenStart: Uint32Array,
    tokenIds: Int32Array,
    tokenNode: Int32Array,
    maxTokenLength: number,
    everyByteIsToken: boolean,
    markerTokens: Int32Array,
  ) {
    this.vocabSize = vocab.size;
    this.offsets = vocab.offsets;
    this.data = vocab.data;
    this.numNodes = numNodes;
    this.nodeByte = nodeByte;
    this.depth = depth;
    this.subtreeSize = subtreeSize;
    this.tokenStart = tokenStart;
    this.tokenIds = tokenIds;
    this.tokenNode = tokenNode;
    this.numTokens = tokenIds.length;
    this.maxTokenLength = maxTokenLength;
    this.everyByteIsToken = everyByteIsToken;
    this.generableMask = new Uint32Array((vocab.size + 31) >>> 5);
    for (let k = 0; k < tokenIds.length; k++) {
      const id = tokenIds[k]!;
      this.generableMask[id >>> 5]! |= 1 << (id & 31);
    }
    this.markerTokens = markerTokens;
    this.textMask = this.generableMask.slice();
    for (const id of markerTokens) this.textMask[id >>> 5]! &= ~(1 << (id & 31));
    const nodeInfo = new Uint32Array(numNodes);
    for (let p = 0; p < numNodes; p++) {
      nodeInfo[p] = (nodeByte[p]! | (depth[p]! << 8) | (tokenStart[p + 1]! > tokenStart[p]! ? 0x80000000 : 0)) >>> 0;
    }
    this.nodeInfo = nodeInfo;
    const parent = parentsOf(numNodes, depth, maxTokenLength);
    this.belowBytes = computeBelowBytes(numNodes, nodeByte, parent);
    this.utf8Aligned = computeUtf8Aligned(numNodes, nodeByte, tokenStart, parent);
    const index = asciiTokenIndex(tokenIds, vocab.offsets, vocab.data);
    this.asciiTokenStart = index.start;
    this.asciiTokens = index.tokens;
    this.notUtf8Tokens = index.notUtf8;
    this.orderedOffsets = index.orderedOffsets;
    this.orderedData = index.orderedData;
    this.tokenStamp = new Int32Array(tokenIds.length);
    this.idScratch = new Int32Array((vocab.size + 31) >>> 5);
    this.listScratch = new Int32Array((tokenIds.length >>> 3) + 1);
    this.rootChild = new Int32Array(256).fill(-1);
    for (let c = 1; c < numNodes; c += subtreeSize[c]!) this.rootChild[nodeByte[c]!] = c;
  }

  private charIndexMade: TokenCharIndex | null = null;

  /** The tokens by their number of characters (see TokenCharIndex), made on first need. */
  get charIndex(): TokenCharIndex {
    return (this.charIndexMade ??= tokenCharIndex(this.orderedOffsets, this.orderedData));
  }

  private heightsMade: Uint16Array | null = null;

  /**
   * Per node, the most bytes a token goes on with below it (0 at a leaf), made on first need: a
   * walk below a node can skip it when what follows needs more bytes than that.
   */
  get heights(): Uint16Array {
    if (this.heightsMade !== null) return this.heightsMade;
    const { numNodes, subtreeSize } = this;
    const heights = new Uint16Array(numNodes);
    // Preorder: a node's children come after it, so from the end every child is done first.
    for (let p = numNodes - 1; p >= 0; p--) {
      let h = 0;
      for (let c = p + 1, end = p + subtreeSize[p]!; c < end; c += subtreeSize[c]!) h = Math.max(h, heights[c]! + 1);
      heights[p] = h;
    }
    return (this.heightsMade = heights);
  }

  /**
   * The most bytes of a token made only of `bytes` (8 words, one bit per byte; 0 when none is):
   * text over those bytes needs at least its length over this many tokens, where maxTokenLength
   * proves far less (`a|b` strings take a token per byte when no token joins the two). A walk of
   * the nodes within the bytes, each subtree wholly within them at once (`heights`).
   */
  longestTokenWithin(bytes: Uint32Array): number {
    // Kept per alphabet: a grammar's matchers (the compile probe's, the serving one, one after an
    // eviction) ask it of the same bytes, and the walk covers most of a large vocabulary's trie.
    const key = Array.prototype.join.call(bytes.subarray(0, 8), ",");
    let known = this.longestWithin.get(key);
    if (known === undefined) {
      known = this.walkLongestTokenWithin(bytes);
      if (this.longestWithin.size >= LONGEST_WITHIN_KEPT) this.longestWithin.delete(this.longestWithin.keys().next().value!);
      this.longestWithin.set(key, known);
    }
    return known;
  }

  /** longestTokenWithin's answers by alphabet (first in, first out past LONGEST_WITHIN_KEPT). */
  private readonly longestWithin = new Map<string, number>();

  private walkLongestTokenWithin(bytes: Uint32Array): number {
    const { numNodes, subtreeSize, nodeByte, nodeInfo, belowBytes, depth } = this;
    const heights = this.heights;
    let best = 0;
    for (let p = 1; p < numNodes; ) {
      const b = nodeByte[p]!;
      if ((bytes[b >>> 5]! & (1 << (b & 31))) === 0) {
        p += subtreeSize[p]!;
        continue;
      }
      if (nodeInfo[p]! >>> 31 === 1 && depth[p]! > best) best = depth[p]!;
      let within = true;
      for (let w = 0; w < 8 && within; w++) within = (belowBytes[p * 8 + w]! & ~bytes[w]!) === 0;
      if (within) {
        // Every token below spells only such bytes; the longest ends at the deepest leaf.
        if (depth[p]! + heights[p]! > best) best = depth[p]! + heights[p]!;
        p += subtreeSize[p]!;
      } else p++;
    }
    return best;
  }

  /** A fresh stamp for `tokenStamp` (cleared when the counter would wrap). */
  nextTokenStamp(): number {
    if (this.tokenStampValue === 0x7fffffff) {
      this.tokenStamp.fill(0);
      this.tokenStampValue = 0;
    }
    return ++this.tokenStampValue;
  }

  static build(original: VocabularyBytes): TokenTrie {
    const vocab = withMarkerSpellings(original);
    const { offsets, data, kinds, size } = vocab;
    const candidates: number[] = [...vocab.markers];
    // With markers, a text token that starts with their lead byte (the byte token 0xFF: never in
    // UTF-8) could spell a marker's bytes out of two tokens: it is left out.
    const hasMarkers = vocab.markers.length > 0;
    for (let id = 0; id < size; id++) {
      const kind = kinds[id];
      if ((kind === TokenKind.Normal || kind === TokenKind.Byte || kind === TokenKind.UserDefined) && offsets[id + 1]! > offsets[id]!) {
        if (!hasMarkers || data[offsets[id]!] !== MARKER_LEAD) candidates.push(id);
      }
    }
    const ids = Int32Array.from(candidates).sort();
    const built = buildSorted(ids, offsets, data);
    const { numNodes, nodeByte, depth, subtreeSize, tokenStart, maxLen } = built;
    const tokenNode = new Int32Array(size).fill(-1);
    for (let p = 0; p < numNodes; p++) {
      for (let k = tokenStart[p]!; k < tokenStart[p + 1]!; k++) tokenNode[ids[k]!] = p;
    }

    const singleByteSeen = new Uint8Array(256);
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!;
      if (offsets[id + 1]! - offsets[id]! === 1) singleByteSeen[data[offsets[id]!]!] = 1;
    }
    // The marker lead is only ever a marker's first byte, one token with the next: still n bytes, at most n tokens.
    if (hasMarkers) singleByteSeen[MARKER_LEAD] = 1;
    let everyByteIsToken = true;
    for (let b = 0; b < 256; b++) if (singleByteSeen[b] === 0) everyByteIsToken = false;

    const markers = Int32Array.from(vocab.markers);
    return new TokenTrie(vocab, numNodes, nodeByte, depth, subtreeSize, tokenStart, ids, tokenNode, maxLen, everyByteIsToken, markers);
  }

  /** Whether the token can ever be in a mask. */
  isGenerable(tokenId: number): boolean {
    return tokenId >= 0 && tokenId < this.vocabSize && this.tokenNode[tokenId]! >= 0;
  }

  /**
   * How constraints over this vocabulary write `text`: each control marker in it (support's
   * CONTROL_MARKERS) that one of this trie's marker tokens has, as its control spelling
   * (markerBytes); the rest as UTF-8 text. A reasoning section's markers are control tokens in some
   * vocabularies, text in others, and some are several (Solar Open's `<|end|><|begin|>assistant`:
   * text, a control token, text).
   */
  markerSpelling(text: string): Uint8Array {
    const own = this.ownMarkers();
    const parts: number[] = [];
    let plain = "";
    for (let at = 0; at < text.length; ) {
      const marker = text.startsWith("<", at) || text.startsWith("[", at) ? own.find((m) => text.startsWith(m, at)) : undefined;
      if (marker === undefined) {
        plain += text[at++];
        continue;
      }
      parts.push(...UTF8.encode(plain), ...markerBytes(marker)!);
      plain = "";
      at += marker.length;
    }
    parts.push(...UTF8.encode(plain));
    return Uint8Array.from(parts);
  }

  private ownMarkerTexts: string[] | null = null;

  /** The markers this trie has as marker tokens, longest first (markerSpelling). */
  private ownMarkers(): string[] {
    if (this.ownMarkerTexts === null) {
      const texts: string[] = [];
      for (const id of this.markerTokens) {
        const marker = markerOfBytes(this.tokenBytes(id));
        if (marker !== null) texts.push(marker);
      }
      this.ownMarkerTexts = texts.sort((a, b) => b.length - a.length);
    }
    return this.ownMarkerTexts;
  }

  tokenBytes(tokenId: number): Uint8Array {
    return this.data.subarray(this.offsets[tokenId]!, this.offsets[tokenId + 1]!);
  }

  /** Node whose prefix is exactly `bytes`, or -1 when no token starts with them. */
  findNode(bytes: Uint8Array): number {
    let p = 0;
    for (let i = 0; i < bytes.length && p >= 0; i++) p = this.child(p, bytes[i]!);
    return p;
  }

  /** The child of node `p` by byte `b`, or -1. */
  child(p: number, b: number): number {
    // The root has up to 256 children, a scan to the byte would read a hundred of them far apart.
    if (p === 0) return this.rootChild[b]!;
    const { nodeByte, subtreeSize } = this;
    const index = this.childIndex;
    if (index !== null) {
      const { start, list } = index;
      let lo = start[p]!,
        hi = start[p + 1]!;
      // Wide nodes (a quote or a bracket with a hundred continuations) by bisection.
      if (hi - lo > 8) {
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (nodeByte[list[mid]!]! < b) lo = mid + 1;
          else hi = mid;
        }
        return lo < start[p + 1]! && nodeByte[list[lo]!] === b ? list[lo]! : -1;
      }
    } else if (++this.childScans === CHILD_SCANS_BEFORE_INDEX) this.childIndex = childIndexOf(this.numNodes, subtreeSize);
    const end = p + subtreeSize[p]!;
    let c = p + 1;
    while (c < end && nodeByte[c]! < b) c += subtreeSize[c]!;
    return c < end && nodeByte[c] === b ? c : -1;
  }

  /** Per node, its children in byte order (CSR), made once child() has been asked often enough. */
  private childIndex: { start: Uint32Array; list: Int32Array } | null = null;
  private childScans = 0;
}

/** child() lookups before the trie makes its children index (a few MB at 152k tokens): most tries never need it. */
const CHILD_SCANS_BEFORE_INDEX = 4096;

/** Every node's children in trie order (so by byte): start[p]..start[p + 1] of `list`. */
function childIndexOf(numNodes: number, subtreeSize: Uint32Array): { start: Uint32Array; list: Int32Array } {
  const start = new Uint32Array(numNodes + 1);
  for (let p = 0; p < numNodes; p++) {
    let n = 0;
    for (let c = p + 1, end = p + subtreeSize[p]!; c < end; c += subtreeSize[c]!) n++;
    start[p + 1] = start[p]! + n;
  }
  const list = new Int32Array(start[numNodes]!);
  for (let p = 0; p < numNodes; p++) {
    let k = start[p]!;
    for (let c = p + 1, end = p + subtreeSize[p]!; c < end; c += subtreeSize[c]!) list[k++] = c;
  }
  return { start, list };
}

/** See TokenTrie.asciiTokens: the bytes copied into trie order, then two passes over them (CSR). */
function asciiTokenIndex(
  ids: Int32Array,
  offsets: Uint32Array,
  data: Uint8Array,
): { start: Uint32Array; tokens: Int32Array; notUtf8: Int32Array; orderedOffsets: Uint32Array; orderedData: Uint8Array } {
  const orderedOffsets = new Uint32Array(ids.length + 1);
  for (let k = 0; k < ids.length; k++) orderedOffsets[k + 1] = orderedOffsets[k]! + offsets[ids[k]! + 1]! - offsets[ids[k]!]!;
  const orderedData = new Uint8Array(orderedOffsets[ids.length]!);
  for (let k = 0; k < ids.length; k++) orderedData.set(data.subarray(offsets[ids[k]!]!, offsets[ids[k]! + 1]!), orderedOffsets[k]!);
  const count = new Uint32Array(129);
  const seen = new Int32Array(128).fill(-1);
  const notUtf8: number[] = [];
  const utf8 = new Int8Array(8 * 256);
  for (let v = 0; v < 8; v++) for (let b = 0; b < 256; b++) utf8[v * 256 + b] = utf8Step(v, b);
  for (let k = 0; k < ids.length; k++) {
    let v = 0;
    for (let i = orderedOffsets[k]!, end = orderedOffsets[k + 1]!; i < end; i++) {
      const b = orderedData[i]!;
      if (v >= 0) v = utf8[v * 256 + b]!;
      if (b < 128 && seen[b] !== k) {
        seen[b] = k;
        count[b + 1]!++;
      }
    }
    if (v !== 0) notUtf8.push(k);
  }
  for (let b = 0; b < 128; b++) count[b + 1]! += count[b]!;
  const tokens = new Int32Array(count[128]!);
  const fill = count.slice(0, 128);
  seen.fill(-1);
  for (let k = 0; k < ids.length; k++) {
    for (let i = orderedOffsets[k]!, end = orderedOffsets[k + 1]!; i < end; i++) {
      const b = orderedData[i]!;
      if (b < 128 && seen[b] !== k) {
        seen[b] = k;
        tokens[fill[b]!++] = k;
      }
    }
  }
  return { start: count, tokens, notUtf8: Int32Array.from(notUtf8), orderedOffsets, orderedData };
}

/**
 * The trie's tokens by their characters (bytes that do not continue a UTF-8 sequence): a counted
 * run (`maxLength`) allows a token by its length in characters, so a state r characters from the
 * run's end needs only the tokens longer than r looked at (see chainComplementMask).
 */
export interface TokenCharIndex {
  /** Per trie position: its token's characters, at most 255. */
  readonly chars: Uint8Array;
  /** The most characters of any token. */
  readonly maxChars: number;
  /** Per c: tokens of exactly c characters. */
  readonly withChars: Uint32Array;
  /** Trie positions, most characters first: the tokens longer than c are the first moreThan[c]. */
  readonly mostFirst: Int32Array;
  readonly moreThan: Uint32Array;
}

function tokenCharIndex(orderedOffsets: Uint32Array, orderedData: Uint8Array): TokenCharIndex {
  const n = orderedOffsets.length - 1;
  const chars = new Uint8Array(n);
  let maxChars = 0;
  for (let k = 0; k < n; k++) {
    let c = 0;
    for (let i = orderedOffsets[k]!, end = orderedOffsets[k + 1]!; i < end; i++) if ((orderedData[i]! & 0xc0) !== 0x80) c++;
    chars[k] = Math.min(c, 255);
    if (chars[k]! > maxChars) maxChars = chars[k]!;
  }
  const withChars = new Uint32Array(maxChars + 1);
  for (let k = 0; k < n; k++) withChars[chars[k]!]!++;
  // moreThan[c] = tokens of more than c characters; positions placed by a counting sort, most first.
  const moreThan = new Uint32Array(maxChars + 2);
  for (let c = maxChars - 1; c >= 0; c--) moreThan[c] = moreThan[c + 1]! + withChars[c + 1]!;
  const fill = new Uint32Array(maxChars + 1);
  for (let c = 0; c <= maxChars; c++) fill[c] = moreThan[c]!;
  const mostFirst = new Int32Array(n);
  for (let k = 0; k < n; k++) mostFirst[fill[chars[k]!]!++] = k;
  return { chars, maxChars, withChars, mostFirst, moreThan };
}

function parentsOf(numNodes: number, depth: Uint16Array, maxDepth: number): Int32Array {
  const parent = new Int32Array(numNodes);
  const lastAtDepth = new Int32Array(maxDepth + 1);
  for (let p = 1; p < numNodes; p++) {
    const d = depth[p]!;
    parent[p] = lastAtDepth[d - 1]!;
    lastAtDepth[d] = p;
  }
  return parent;
}

function computeBelowBytes(numNodes: number, nodeByte: Uint8Array, parent: Int32Array): Uint32Array {
  const below = new Uint32Array(numNodes * 8);
  // Reverse pre-order visits every child before its parent.
  for (let p = numNodes - 1; p >= 1; p--) {
    const q = parent[p]! * 8;
    const c = p * 8;
    for (let w = 0; w < 8; w++) below[q + w]! |= below[c + w]!;
    const b = nodeByte[p]!;
    below[q + (b >>> 5)]! |= 1 << (b & 31);
  }
  return below;
}

/**
 * UTF-8 validator states: 0 = at a character boundary, 1/2/3 = that many continuation bytes
 * (80-BF) still needed, 4 = after E0 (needs A0-BF), 5 = after ED (80-9F, no surrogates),
 * 6 = after F0 (90-BF), 7 = after F4 (80-8F). Returns the next state or -1 (invalid).
 */
export function utf8Step(v: number, b: number): number {
  switch (v) {
    case 0:
      if (b < 0x80) return 0;
      if (b >= 0xc2 && b <= 0xdf) return 1;
      if (b === 0xe0) return 4;
      if (b === 0xed) return 5;
      if (b >= 0xe1 && b <= 0xef) return 2;
      if (b === 0xf0) return 6;
      if (b >= 0xf1 && b <= 0xf3) return 3;
      if (b === 0xf4) return 7;
      return -1;
    case 1:
    case 2:
    case 3:
      return b >= 0x80 && b <= 0xbf ? v - 1 : -1;
    case 4:
      return b >= 0xa0 && b <= 0xbf ? 1 : -1;
    case 5:
      return b >= 0x80 && b <= 0x9f ? 1 : -1;
    case 6:
      return b >= 0x90 && b <= 0xbf ? 2 : -1;
    default:
      return b >= 0x80 && b <= 0x8f ? 2 : -1;
  }
}

/**
 * Whether every valid multi-byte UTF-8 character takes `state` back to itself under `step`
 * (next state, or -1 when the byte may not continue the walk): the product of the automaton
 * with a UTF-8 validator. Walks use it to take subtrees of whole characters at once (string
 * bodies, free text).
 */
export function loopsOnEveryUtf8Char(state: number, step: (state: number, byte: number) => number): boolean {
  return everyUtf8CharLeadsTo(state, state, step);
}

/** Whether every valid multi-byte UTF-8 character read from `from` ends in `to`. */
export function everyUtf8CharLeadsTo(from: number, to: number, step: (state: number, byte: number) => number): boolean {
  const seen = new Set<number>();
  const stack: number[] = [from, 0];
  while (stack.length > 0) {
    const v = stack.pop()!;
    const s = stack.pop()!;
    for (let b = 0x80, hi = v === 0 ? 0xff : 0xbf; b <= hi; b++) {
      const w = utf8Step(v, b);
      if (w < 0) continue;
      const t = step(s, b);
      if (t < 0) return false;
      if (w === 0) {
        if (t !== to) return false;
        continue;
      }
      const key = t * 8 + w;
      if (!seen.has(key)) {
        seen.add(key);
        stack.push(t, w);
      }
    }
  }
  return true;
}

function computeUtf8Aligned(numNodes: number, nodeByte: Uint8Array, tokenStart: Uint32Array, parent: Int32Array): Uint8Array {
  // okBits[p] bit v: entering node p's byte in validator state v, p's own tokens and everything
  // below end on character boundaries. childrenOk[p] = AND of okBits over p's children.
  const childrenOk = new Uint8Array(numNodes).fill(0xff);
  const step = new Int8Array(8 * 256);
  for (let v = 0; v < 8; v++) for (let b = 0; b < 256; b++) step[v * 256 + b] = utf8Step(v, b);
  for (let p = numNodes - 1; p >= 1; p--) {
    const b = nodeByte[p]!;
    const ends = tokenStart[p + 1]! > tokenStart[p]!;
    const below = childrenOk[p]!;
    let ok = 0;
    for (let v = 0; v < 8; v++) {
      const w = step[v * 256 + b]!;
      if (w < 0 || (ends && w !== 0)) continue;
      if ((below >>> w) & 1) ok |= 1 << v;
    }
    childrenOk[parent[p]!]! &= ok;
  }
  const aligned = new Uint8Array(numNodes);
  for (let p = 0; p < numNodes; p++) aligned[p] = childrenOk[p]! & 1;
  return aligned;
}

const trieCache = new WeakMap<object, TokenTrie>();

/** The trie for a vocabulary, built once per Vocabulary object. */
export function tokenTrieFor(vocab: VocabularyBytes): TokenTrie {
  let trie = trieCache.get(vocab);
  if (trie === undefined) {
    trie = TokenTrie.build(vocab);
    trieCache.set(vocab, trie);
  }
  return trie;
}

/**
 * Sorts `ids` in place by bytes (MSD radix: a prefix sorts before its extensions, equal strings
 * by id) and emits the trie nodes in DFS pre-order along the way. Each group of ids sharing a
 * prefix of length d is one node; its own tokens (length d) come first in the group, so the
 * group's start index is the node's tokenStart and the token ranges form a CSR in node order.
 */
function buildSorted(
  ids: Int32Array,
  offsets: Uint32Array,
  data: Uint8Array,
): {
  numNodes: number;
  nodeByte: Uint8Array;
  depth: Uint16Array;
  subtreeSize: Uint32Array;
  tokenStart: Uint32Array;
  maxLen: number;
} {
  const n = ids.length;
  let totalBytes = 0;
  let maxLen = 0;
  for (let k = 0; k < n; k++) {
    const len = offsets[ids[k]! + 1]! - offsets[ids[k]!]!;
    totalBytes += len;
    if (len > maxLen) maxLen = len;
  }
  const cap = totalBytes + 1;
  const nodes: TrieNodes = {
    nodeByte: new Uint8Array(cap),
    depth: new Uint16Array(cap),
    subtreeSize: new Uint32Array(cap),
    tokenStart: new Uint32Array(cap + 1),
  };
  const { nodeByte, depth, subtreeSize, tokenStart } = nodes;
  const radix: RadixScratch = {
    tmp: new Int32Array(n),
    counts: new Int32Array(257),
    pos: new Int32Array(257),
    touched: new Int32Array(257),
  };
  const { counts, pos, touched } = radix;
  const stLo: number[] = [];
  const stHi: number[] = [];
  const stDepth: number[] = [];
  const stByte: number[] = [];
  let numNodes = 0;

  // Work stack: (lo, hi, depth, byte) = create a node for that group; byte -1 = close node lo.
  stLo.push(0);
  stHi.push(n);
  stDepth.push(0);
  stByte.push(-2);
  while (stLo.length > 0) {
    const lo = stLo.pop()!;
    const hi = stHi.pop()!;
    const d = stDepth.pop()!;
    const byte = stByte.pop()!;
    if (byte === -1) {
      subtreeSize[lo] = numNodes - lo;
      continue;
    }
    const node = numNodes++;
    nodeByte[node] = byte < 0 ? 0 : byte;
    depth[node] = d;
    tokenStart[node] = lo;
    if (hi - lo === 1) {
      numNodes = emitChain(nodes, node, numNodes, lo, d, ids[lo]!, offsets, data);
      continue;
    }
    const numTouched = bucketByByte(radix, ids, lo, hi, d, offsets, data);
    // Children in byte order: push in reverse, after the close marker.
    stLo.push(node);
    stHi.push(0);
    stDepth.push(0);
    stByte.push(-1);
    let end = hi;
    for (let i = numTouched - 1; i >= 0; i--) {
      const key = touched[i]!;
      const begin = pos[key]! - counts[key]!;
      if (key !== 0) {
        stLo.push(begin);
        stHi.push(end);
        stDepth.push(d + 1);
        stByte.push(key - 1);
      }
      end = begin;
      counts[key] = 0;
    }
  }
  tokenStart[numNodes] = n;
  return {
    numNodes,
    nodeByte: nodeByte.slice(0, numNodes),
    depth: depth.slice(0, numNodes),
    subtreeSize: subtreeSize.slice(0, numNodes),
    tokenStart: tokenStart.slice(0, numNodes + 1),
    maxLen,
  };
}

/** The node tables buildSorted fills, one entry per token byte at most (cut to size at the end). */
interface TrieNodes {
  readonly nodeByte: Uint8Array;
  readonly depth: Uint16Array;
  readonly subtreeSize: Uint32Array;
  readonly tokenStart: Uint32Array;
}

/**
 * One token left in a group (whose node is `node`): a chain of single-child nodes for the rest of
 * its bytes, no sorting needed. Returns the node count after the chain.
 */
function emitChain(
  nodes: TrieNodes,
  node: number,
  numNodes: number,
  lo: number,
  d: number,
  id: number,
  offsets: Uint32Array,
  data: Uint8Array,
): number {
  const { nodeByte, depth, subtreeSize, tokenStart } = nodes;
  const s = offsets[id]!;
  const len = offsets[id + 1]! - s;
  for (let i = d; i < len; i++) {
    const c = numNodes++;
    nodeByte[c] = data[s + i]!;
    depth[c] = i + 1;
    tokenStart[c] = lo;
  }
  // Every chain node's range is empty except the last (the next node starts at hi).
  for (let c = node; c < numNodes - 1; c++) {
    tokenStart[c] = lo;
    subtreeSize[c] = numNodes - c;
  }
  subtreeSize[numNodes - 1] = 1;
  return numNodes;
}

/**
 * The radix step's scratch, reused by every group: per key (0 = the token ends here, else byte +
 * 1) its count and where its next id goes, and the distinct keys met, ascending.
 */
interface RadixScratch {
  readonly tmp: Int32Array;
  readonly counts: Int32Array;
  readonly pos: Int32Array;
  readonly touched: Int32Array;
}

/**
 * Sorts ids[lo..hi) by the byte at depth d (stable; key 0, the tokens that end at d, first).
 * Leaves per key its count and end position in `counts` and `pos`, the distinct keys ascending
 * in `touched`; returns how many there are.
 */
function bucketByByte(
  radix: RadixScratch,
  ids: Int32Array,
  lo: number,
  hi: number,
  d: number,
  offsets: Uint32Array,
  data: Uint8Array,
): number {
  const { tmp, counts, pos, touched } = radix;
  let numTouched = 0;
  // Bucket by the byte at depth d; key 0 = the token ends here.
  for (let k = lo; k < hi; k++) {
    const id = ids[k]!;
    const s = offsets[id]!;
    const key = offsets[id + 1]! - s === d ? 0 : data[s + d]! + 1;
    if (counts[key]!++ === 0) {
      // Insertion into the sorted list of distinct keys (usually a handful).
      let i = numTouched++;
      while (i > 0 && touched[i - 1]! > key) {
        touched[i] = touched[i - 1]!;
        i--;
      }
      touched[i] = key;
    }
  }
  let at = lo;
  for (let i = 0; i < numTouched; i++) {
    const key = touched[i]!;
    pos[key] = at;
    at += counts[key]!;
  }
  for (let k = lo; k < hi; k++) {
    const id = ids[k]!;
    const s = offsets[id]!;
    const key = offsets[id + 1]! - s === d ? 0 : data[s + d]! + 1;
    tmp[pos[key]!++] = id;
  }
  for (let k = lo; k < hi; k++) ids[k] = tmp[k]!;
  return numTouched;
}

/**
 * The vocabulary with each control token that is a marker (support/control-markers.ts) spelled as markerBytes says
 * (the same arrays when it has none, as most vocabularies), and those tokens' ids.
 */
function withMarkerSpellings(vocab: VocabularyBytes): VocabularyBytes & { markers: number[] } {
  const { offsets, data, kinds, size } = vocab;
  const spelled = new Map<number, Uint8Array>();
  const text = new TextDecoder();
  for (let id = 0; id < size; id++) {
    if (kinds[id] !== TokenKind.Control || offsets[id + 1]! - offsets[id]! > 64) continue;
    const bytes = markerBytes(text.decode(data.subarray(offsets[id]!, offsets[id + 1]!)));
    if (bytes !== null) spelled.set(id, bytes);
  }
  if (spelled.size === 0) return { ...vocab, markers: [] };
  const newOffsets = new Uint32Array(size + 1);
  for (let id = 0; id < size; id++) newOffsets[id + 1] = newOffsets[id]! + (spelled.get(id)?.length ?? offsets[id + 1]! - offsets[id]!);
  const newData = new Uint8Array(newOffsets[size]!);
  for (let id = 0; id < size; id++) newData.set(spelled.get(id) ?? data.subarray(offsets[id]!, offsets[id + 1]!), newOffsets[id]!);
  return { size, kinds, offsets: newOffsets, data: newData, markers: [...spelled.keys()] };
}
