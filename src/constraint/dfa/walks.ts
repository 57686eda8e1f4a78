/**
 * The regex matcher's trie walk kernels: a state's full mask with its successor states and their
 * largest byte distance, by a walk of the live first bytes' subtrees (walkFullMask), by clearing
 * the dead subtrees of an all-tokens mask (walkComplementMask), or by stepping only the tokens the
 * trie lists per ASCII byte (exceptionComplementMask). Top-level functions over one fixed-shape
 * context (DfaWalkContext), so V8 optimizes them early and each call site sees one shape.
 */
import type { TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";
import type { DfaMatcherView } from "./matcher-view.js";

/**
 * Everything the hot walk reads, in one fixed-shape object, so the walk is a small top-level
 * function that V8 optimizes early (a walk inside a large method got deoptimized and recompiled
 * several times before settling, costing tens of ms on the first masks).
 */
export class DfaWalkContext {
  readonly nodeInfo: Uint32Array;
  readonly subtreeSize: Uint32Array;
  readonly tokenStart: Uint32Array;
  readonly tokenIds: Int32Array;
  readonly numNodes: number;
  readonly belowBytes: Uint32Array;
  readonly utf8Aligned: Uint8Array;
  readonly next: Int32Array;
  readonly byteClass: Uint8Array;
  readonly numClasses: number;
  readonly minBytesToAccept: Int32Array;
  readonly numTokens: number;
  /**
   * [0] walk stamp, then outputs of the last walk: [1] token count, [2] number of successors,
   * [3] max successor byte distance, [4] hash of the set ids (narrow walks). (Typed slots, not
   * fields: reassigning a field that V8 had tracked as constant deoptimizes the walk.)
   */
  readonly scalars = new Int32Array(5);
  /** The ids a narrow walk set, in order (while fewer than a mask has words); the trie's scratch. */
  readonly narrowIds: Int32Array;
  readonly rootChild: Int32Array;

  constructor(
    readonly matcher: DfaMatcherView,
    trie: TokenTrie,
    dfa: ByteDfa,
    readonly stateAtDepth: Int32Array,
    readonly successorStamp: Int32Array,
    readonly successorScratch: Int32Array,
    readonly loopKind: Uint8Array,
    readonly loopBytes: Uint32Array,
    readonly multibyteLoop: Uint8Array,
  ) {
    this.nodeInfo = trie.nodeInfo;
    this.subtreeSize = trie.subtreeSize;
    this.tokenStart = trie.tokenStart;
    this.tokenIds = trie.tokenIds;
    this.numNodes = trie.numNodes;
    this.belowBytes = trie.belowBytes;
    this.utf8Aligned = trie.utf8Aligned;
    this.next = dfa.next;
    this.byteClass = dfa.byteClass;
    this.numClasses = dfa.numClasses;
    this.minBytesToAccept = dfa.minBytesToAccept;
    this.numTokens = trie.numTokens;
    this.narrowIds = trie.idScratch;
    this.rootChild = trie.rootChild;
  }
}

/** Whether the bytes below node p keep `state` in place (ASCII loops + whole-character loops). */
export function subtreeLoopsOn(c: DfaWalkContext, p: number, state: number): boolean {
  const below = c.belowBytes;
  const loop = c.loopBytes;
  const a = p * 8;
  const l = state * 8;
  if (
    (below[a]! & ~loop[l]!) !== 0 ||
    (below[a + 1]! & ~loop[l + 1]!) !== 0 ||
    (below[a + 2]! & ~loop[l + 2]!) !== 0 ||
    (below[a + 3]! & ~loop[l + 3]!) !== 0
  ) {
    return false;
  }
  if (
    (below[a + 4]! & ~loop[l + 4]!) === 0 &&
    (below[a + 5]! & ~loop[l + 5]!) === 0 &&
    (below[a + 6]! & ~loop[l + 6]!) === 0 &&
    (below[a + 7]! & ~loop[l + 7]!) === 0
  ) {
    return true;
  }
  // Non-ASCII below: fine when whole characters loop and no token ends inside one.
  return c.multibyteLoop[state] === 1 && c.utf8Aligned[p] === 1;
}

/**
 * The full-mask walk from `state`: sets the bits of every live token, and leaves in `c` the
 * token count, the distinct successor states (in successorScratch) and their max byte distance.
 * With `onlyBytes`, only the tokens whose first byte b has onlyBytes[b] = 1 (a derived mask's).
 */
export function walkFullMask(c: DfaWalkContext, state: number, mask: Uint32Array, onlyBytes: Uint8Array | null): void {
  const { nodeInfo, subtreeSize, tokenStart, tokenIds, next, byteClass, numClasses, minBytesToAccept, narrowIds, rootChild } = c;
  const { stateAtDepth, successorStamp, successorScratch, loopKind } = c;
  const scalars = c.scalars;
  const stamp = ++scalars[0]!;
  let numSucc = 0;
  let maxMinBytes = 0;
  let count = 0;
  // Set ids in trie order (a function of the mask alone), hashed while there are few of them.
  let hash = 0x811c9dc5;
  const hashCap = mask.length;
  stateAtDepth[0] = state;
  // Only the subtrees of live first bytes, in byte (= trie) order.
  for (let b = 0; b < 256; b++) {
    const root = rootChild[b]!;
    if (root < 0 || next[state * numClasses + byteClass[b]!]! < 0 || (onlyBytes !== null && onlyBytes[b] === 0)) continue;
    const end = root + subtreeSize[root]!;
    let p = root;
    let steps = 0;
    while (p < end) {
      steps++;
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const ns = next[stateAtDepth[d - 1]! * numClasses + byteClass[info & 0xff]!]!;
      const size = subtreeSize[p]!;
      if (ns < 0) {
        p += size;
        continue;
      }
      stateAtDepth[d] = ns;
      // A subtree whose bytes all loop on ns: every token in it is allowed and ends in ns.
      let bulk = false;
      if (size > 8) {
        let kind = loopKind[ns]!;
        if (kind === 0) kind = c.matcher.computeLoop(ns);
        bulk = kind === 2 && subtreeLoopsOn(c, p, ns);
      }
      if (bulk || (info & 0x80000000) !== 0) {
        const from = tokenStart[p]!;
        const to = bulk ? tokenStart[p + size]! : tokenStart[p + 1]!;
        if (count < hashCap) {
          for (let k = from; k < to && k - from + count < hashCap; k++) {
            hash = Math.imul(hash ^ tokenIds[k]!, 0x01000193);
            narrowIds[k - from + count] = tokenIds[k]!;
          }
        }
        count += to - from;
        for (let k = from; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
        if (successorStamp[ns] !== stamp) {
          successorStamp[ns] = stamp;
          successorScratch[numSucc++] = ns;
          const mb = minBytesToAccept[ns]!;
          if (mb > maxMinBytes) maxMinBytes = mb;
        }
      }
      p += bulk ? size : 1;
    }
    c.matcher.work.charge(steps);
  }
  scalars[1] = count;
  scalars[2] = numSucc;
  scalars[3] = maxMinBytes;
  scalars[4] = hash;
}

/**
 * walkFullMask for broad states: `mask` starts as every generable token; dead subtrees are
 * cleared, everything else is left set. Same outputs in `c.scalars`.
 */
export function walkComplementMask(c: DfaWalkContext, state: number, mask: Uint32Array): void {
  const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes, next, byteClass, numClasses, minBytesToAccept } = c;
  const { stateAtDepth, successorStamp, successorScratch, loopKind } = c;
  const scalars = c.scalars;
  const stamp = ++scalars[0]!;
  let numSucc = 0;
  let maxMinBytes = 0;
  let cleared = 0;
  stateAtDepth[0] = state;
  let p = 1;
  let steps = 0;
  while (p < numNodes) {
    steps++;
    const info = nodeInfo[p]!;
    const d = (info >>> 8) & 0xffff;
    const ns = next[stateAtDepth[d - 1]! * numClasses + byteClass[info & 0xff]!]!;
    const size = subtreeSize[p]!;
    if (ns < 0) {
      const from = tokenStart[p]!;
      const to = tokenStart[p + size]!;
      cleared += to - from;
      for (let k = from; k < to; k++) {
        const id = tokenIds[k]!;
        mask[id >>> 5]! &= ~(1 << (id & 31));
      }
      p += size;
      continue;
    }
    stateAtDepth[d] = ns;
    let bulk = false;
    if (size > 8) {
      let kind = loopKind[ns]!;
      if (kind === 0) kind = c.matcher.computeLoop(ns);
      bulk = kind === 2 && subtreeLoopsOn(c, p, ns);
    }
    if ((bulk || (info & 0x80000000) !== 0) && successorStamp[ns] !== stamp) {
      successorStamp[ns] = stamp;
      successorScratch[numSucc++] = ns;
      const mb = minBytesToAccept[ns]!;
      if (mb > maxMinBytes) maxMinBytes = mb;
    }
    p += bulk ? size : 1;
  }
  c.matcher.work.charge(steps);
  scalars[1] = c.numTokens - cleared;
  scalars[2] = numSucc;
  scalars[3] = maxMinBytes;
}

/**
 * The list walks' successors (exceptionComplementMask, chainComplementMask, entryComplementMask):
 * `s` joins the `n` in successorScratch once per walk stamp; returns their new count.
 */
function noteSuccessor(c: DfaWalkContext, s: number, stamp: number, n: number): number {
  if (c.successorStamp[s] === stamp) return n;
  c.successorStamp[s] = stamp;
  c.successorScratch[n] = s;
  return n + 1;
}

/** Sets a list walk's successor count and their largest byte distance (from successorScratch[from] on, above `max`) in `c.scalars`. */
function endSuccessors(c: DfaWalkContext, from: number, n: number, max: number): void {
  for (let i = from; i < n; i++) {
    const mb = c.minBytesToAccept[c.successorScratch[i]!]!;
    if (mb > max) max = mb;
  }
  c.scalars[2] = n;
  c.scalars[3] = max;
}

/** Where the token at trie position `k` takes `state`, -1 where it dies (the list walks step their tokens so). */
function stepToken(c: DfaWalkContext, trie: TokenTrie, state: number, k: number): number {
  const { next, byteClass, numClasses } = c;
  const { orderedOffsets, orderedData } = trie;
  let s = state;
  for (let i = orderedOffsets[k]!, end = orderedOffsets[k + 1]!; i < end && s >= 0; i++)
    s = next[s * numClasses + byteClass[orderedData[i]!]!]!;
  return s;
}

/**
 * walkComplementMask by the trie's per-byte token lists, for states that loop on every
 * multi-byte character and on all but a few ASCII bytes (free text, string bodies): only the
 * tokens holding one of those bytes, or not whole UTF-8 characters, can end anywhere but back
 * in `state`, so only they are stepped (~5k tokens at 152k instead of a walk over ~all 330k
 * trie nodes). Returns false, touching nothing, when the lists are too long to pay.
 */
export function exceptionComplementMask(c: DfaWalkContext, trie: TokenTrie, state: number, mask: Uint32Array): boolean {
  if (c.multibyteLoop[state] !== 1) return false;
  const listed = listedTokens(c, trie, c.loopBytes, state * 8, 0, trie.nextTokenStamp());
  if (listed < 0) return false;
  const { tokenIds, listScratch } = trie;
  const scalars = c.scalars;
  const stamp = ++scalars[0]!;
  let numSucc = 0;
  let cleared = 0;
  for (let j = 0; j < listed; j++) {
    const k = listScratch[j]!;
    const s = stepToken(c, trie, state, k);
    if (s < 0) {
      const id = tokenIds[k]!;
      mask[id >>> 5]! &= ~(1 << (id & 31));
      cleared++;
    } else numSucc = noteSuccessor(c, s, stamp, numSucc);
  }
  // Every token on no list loops back to `state`.
  if (listed < c.numTokens) numSucc = noteSuccessor(c, state, stamp, numSucc);
  scalars[1] = c.numTokens - cleared;
  endSuccessors(c, 0, numSucc, 0);
  return true;
}

/**
 * The trie positions of the tokens on the lists of the ASCII bytes not in `bits` (4 words at `at`:
 * a loop's bytes, a counted run's) and of those that are not whole UTF-8 characters, each once
 * (stamped `tokenMark`), in trie.listScratch; their count, or -1 when they and `more` tokens the
 * caller adds hold more than an eighth of the vocabulary (a walk pays then).
 */
function listedTokens(c: DfaWalkContext, trie: TokenTrie, bits: Uint32Array, at: number, more: number, tokenMark: number): number {
  const { asciiTokenStart, asciiTokens, notUtf8Tokens, tokenStamp, listScratch } = trie;
  let listed = notUtf8Tokens.length + more;
  for (let b = 0; b < 128; b++) {
    if (((bits[at + (b >>> 5)]! >>> (b & 31)) & 1) === 0) listed += asciiTokenStart[b + 1]! - asciiTokenStart[b]!;
  }
  if (listed > c.numTokens >>> 3) return -1;
  c.matcher.work.charge(listed);
  let n = 0;
  for (let j = 0; j < notUtf8Tokens.length; j++) {
    const k = notUtf8Tokens[j]!;
    tokenStamp[k] = tokenMark;
    listScratch[n++] = k;
  }
  for (let b = 0; b < 128; b++) {
    if (((bits[at + (b >>> 5)]! >>> (b & 31)) & 1) !== 0) continue;
    for (let j = asciiTokenStart[b]!, end = asciiTokenStart[b + 1]!; j < end; j++) {
      const k = asciiTokens[j]!;
      if (tokenStamp[k] === tokenMark) continue;
      tokenStamp[k] = tokenMark;
      listScratch[n++] = k;
    }
  }
  return n;
}

/** Per character count: the listed tokens of that many characters (chainComplementMask's scratch; one walk at a time). */
const listedWithChars = new Uint32Array(256);

/**
 * The mask of a state at the head of a counted run (a string's `maxLength`: every character moves
 * one state on, chain[0] → chain[1] → … → chain[run], alike on each byte of `bytes` (4 words at
 * `at`: ASCII) and on every multi-byte character): a token on none of the per-byte lists of the
 * ASCII bytes outside `bytes` and no longer than the run ends in chain[c], c its characters; the
 * listed tokens and the longer ones are stepped, or, with `endDead` (chain[run] goes nowhere on
 * those bytes and lead bytes: the run's last position), the longer ones off the lists are dead.
 * Each position of a 255-character string is a state of its own that loops on nothing, so this
 * replaces a walk of ~all 330k trie nodes (7 ms at 152k tokens) by ~5k tokens stepped. Returns
 * the mask (made from every generable token), with the same outputs in `c.scalars` as the walks;
 * null, having made nothing, when the lists are too long to pay.
 */
export function chainComplementMask(
  c: DfaWalkContext,
  trie: TokenTrie,
  state: number,
  chain: Int32Array,
  run: number,
  endDead: boolean,
  bytes: Uint32Array,
  at: number,
): Uint32Array | null {
  const index = trie.charIndex;
  const { chars, withChars, mostFirst, maxChars } = index;
  const longer = run >= maxChars ? 0 : index.moreThan[run]!;
  const { tokenStamp, listScratch, tokenIds } = trie;
  // The tokens to step, each once: not whole characters, holding a byte outside `bytes`, and
  // (unless the run's end kills them) longer than the run.
  const tokenMark = trie.nextTokenStamp();
  let n = listedTokens(c, trie, bytes, at, endDead ? 0 : longer, tokenMark);
  if (n < 0) return null;
  c.matcher.work.charge(run + (endDead ? longer : 0));
  if (!endDead) {
    for (let j = 0; j < longer; j++) {
      const k = mostFirst[j]!;
      if (tokenStamp[k] === tokenMark) continue;
      tokenStamp[k] = tokenMark;
      listScratch[n++] = k;
    }
  }
  const scalars = c.scalars;
  const stamp = ++scalars[0]!;
  let numSucc = 0;
  let cleared = 0;
  const mask = trie.generableMask.slice();
  const top = Math.min(run, maxChars);
  listedWithChars.fill(0, 0, top + 1);
  for (let j = 0; j < n; j++) {
    const k = listScratch[j]!;
    if (chars[k]! <= top) listedWithChars[chars[k]!]!++;
    const s = stepToken(c, trie, state, k);
    if (s < 0) {
      const id = tokenIds[k]!;
      mask[id >>> 5]! &= ~(1 << (id & 31));
      cleared++;
    } else numSucc = noteSuccessor(c, s, stamp, numSucc);
  }
  // The longer ones off the lists: their next character finds the run's end.
  if (endDead) {
    for (let j = 0; j < longer; j++) {
      const k = mostFirst[j]!;
      if (tokenStamp[k] === tokenMark) continue;
      const id = tokenIds[k]!;
      mask[id >>> 5]! &= ~(1 << (id & 31));
      cleared++;
    }
  }
  // Every other token of c characters ends c states on.
  for (let k = 1; k <= top; k++) if (withChars[k]! > listedWithChars[k]!) numSucc = noteSuccessor(c, chain[k]!, stamp, numSucc);
  scalars[1] = c.numTokens - cleared;
  endSuccessors(c, 0, numSucc, 0);
  return mask;
}

/**
 * The mask of a state in front of a broad loop (`loop`: the state most first bytes lead to, such
 * as a JSON key's or string's first character leading into its body), by the loop's token lists:
 * a token whose first byte is ASCII and leads to `loop`, and which is on none of the loop's lists
 * (see exceptionComplementMask), ends in `loop`; the listed ones are stepped, and the subtrees of
 * the first bytes that lead elsewhere are cleared and walked (walkFullMask with `redo`), and so
 * are the non-ASCII ones unless every multi-byte character leads from `state` into the loop (a
 * token starting with one is otherwise read from mid-character). Returns the mask (made from
 * every generable token), with the same outputs in `c.scalars` as the other walks; null,
 * having made nothing, when the lists or the walked subtrees are too large to pay.
 */
export function entryComplementMask(
  c: DfaWalkContext,
  trie: TokenTrie,
  state: number,
  loop: number,
  /** Every multi-byte character read from `state` ends in `loop`: non-ASCII first bytes need no walk. */
  multibyteEntry: boolean,
  redo: Uint8Array,
): Uint32Array | null {
  if (c.multibyteLoop[loop] !== 1) return null;
  const { orderedOffsets, orderedData, tokenIds, rootChild, tokenStart, listScratch } = trie;
  const { next, byteClass, numClasses, subtreeSize } = c;
  let redone = 0;
  for (let b = 0; b < 256; b++) {
    const p = rootChild[b]!;
    redo[b] = p >= 0 && (b >= 0x80 ? !multibyteEntry : next[state * numClasses + byteClass[b]!] !== loop) ? 1 : 0;
    if (redo[b] === 1) redone += tokenStart[p + subtreeSize[p]!]! - tokenStart[p]!;
  }
  if (redone > c.numTokens >>> 2) return null;
  const listed = listedTokens(c, trie, c.loopBytes, loop * 8, 0, trie.nextTokenStamp());
  if (listed < 0) return null;
  c.matcher.work.charge(redone);
  const mask = trie.generableMask.slice();
  // The redone subtrees: cleared, then walked from `state` (which also starts the successor list).
  for (let b = 0; b < 256; b++) {
    if (redo[b] === 0) continue;
    const p = rootChild[b]!;
    for (let k = tokenStart[p]!, end = tokenStart[p + subtreeSize[p]!]!; k < end; k++) {
      const id = tokenIds[k]!;
      mask[id >>> 5]! &= ~(1 << (id & 31));
    }
  }
  walkFullMask(c, state, mask, redo);
  // The walk's successors so far (c.scalars), then the listed tokens'.
  const scalars = c.scalars;
  const stamp = scalars[0]!;
  const walked = scalars[2]!;
  let numSucc = walked;
  let count = c.numTokens - redone + scalars[1]!;
  // The listed tokens of the other first bytes: stepped from `state`.
  let distinct = 0;
  for (let j = 0; j < listed; j++) {
    const k = listScratch[j]!;
    if (redo[orderedData[orderedOffsets[k]!]!] === 1) continue;
    distinct++;
    const s = stepToken(c, trie, state, k);
    if (s < 0) {
      const id = tokenIds[k]!;
      mask[id >>> 5]! &= ~(1 << (id & 31));
      count--;
    } else numSucc = noteSuccessor(c, s, stamp, numSucc);
  }
  // Every other token of those first bytes ends in `loop`.
  if (distinct < c.numTokens - redone) numSucc = noteSuccessor(c, loop, stamp, numSucc);
  scalars[1] = count;
  endSuccessors(c, walked, numSucc, scalars[3]!);
  return mask;
}
