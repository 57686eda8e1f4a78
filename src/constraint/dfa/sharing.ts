/**
 * Mask sharing between the states of one regex matcher, so that a state's first mask need not be
 * a walk: states with the same live/dead structure up to the longest token have the same mask
 * (liveBlocks: the first state of a block walks, the others take its mask), and a state whose
 * first bytes mostly go where a wide state's same bytes go takes that state's mask with the
 * subtrees of the other bytes redone (derivationBase, clearRedone, then a walk of those bytes).
 * Either way the mask comes without successors (see reachableMaxMinBytes).
 */
import type { TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";

/** Most wide states derivedMask compares a new state with. */
const MAX_WIDE_STATES = 32;

/** Budget (states × classes × rounds) for the live-structure partition; beyond it, no sharing. */
const LIVE_BLOCK_WORK_CAP = 2_000_000;

/** The blocks of states with equal masks, and the wide states other masks can derive from. */
export class MaskSharing {
  /** Computed states with wide masks (see noteWide, derivationBase). */
  private readonly wideStates: number[] = [];
  private wideCursor = 0;
  private askedBefore = false;
  /** Per first byte, 1 when the last derivationBase's state must redo its subtree. */
  readonly redo = new Uint8Array(256);
  /** See liveBlocks: undefined = not computed yet, null = not worth it for this DFA. */
  private blocks: Int32Array | null | undefined;
  /** Per block, the state whose walk serves the block (-1: none yet). */
  private blockRepresentative = new Int32Array(0);

  constructor(
    private readonly trie: TokenTrie,
    private readonly dfa: ByteDfa,
    /** Whether to look for blocks at all (see DfaTokenMatcherOptions.shareEquivalentStates). */
    shareEquivalentStates: boolean,
  ) {
    if (!shareEquivalentStates) this.blocks = null;
  }

  /** Bytes of its block tables (see DfaTokenMatcher.retainedBytes). */
  retainedBytes(): number {
    return this.blocks ? this.blocks.byteLength + this.blockRepresentative.byteLength : 0;
  }

  /**
   * An earlier state of `state`'s block, whose mask `state` takes as it is; -1 when there is
   * none (then `state` serves its block from now on) or the DFA has no blocks.
   */
  equivalentOf(state: number): number {
    // The first state asked about has no earlier one to share with: the partition (the costly
    // part) waits for the second, off the time to a first mask.
    if (this.blocks === undefined && !this.askedBefore) {
      this.askedBefore = true;
      return -1;
    }
    const blocks = this.liveBlocks();
    if (blocks === null) return -1;
    const rep = this.blockRepresentative[blocks[state]!]!;
    if (rep >= 0 && rep !== state) return rep;
    if (rep < 0) this.blockRepresentative[blocks[state]!] = state;
    return -1;
  }

  /**
   * Keeps `state` as a candidate for derivedMask when its mask is wide (a costly walk). The most
   * recent MAX_WIDE_STATES are kept: states met close together (the keys of one object) tend to
   * share most of their first bytes' targets.
   */
  noteWide(state: number, tokenCount: number): void {
    if (tokenCount < this.trie.numTokens >>> 6) return;
    if (this.wideStates.length < MAX_WIDE_STATES) this.wideStates.push(state);
    else this.wideStates[this.wideCursor++ % MAX_WIDE_STATES] = state;
  }

  /**
   * The wide state whose mask `state` derives from most cheaply, or -1. Below a first byte b, a
   * walk depends only on the state that b leads to: where `state` and the wide state go to the
   * same place, their tokens under b are the same. The others are redone (the wide state's tokens
   * under b cleared, `state`'s walked), which must cost under a third of walking `state` whole
   * (costs in tokens below the bytes). Leaves in `redo` the first bytes to redo.
   */
  derivationBase(state: number): number {
    if (this.wideStates.length === 0) return -1;
    const { next, numClasses, byteClass } = this.dfa;
    const { subtreeSize, tokenStart, rootChild } = this.trie;
    const base = state * numClasses;
    let fullCost = 0;
    for (let b = 0; b < 256; b++) {
      const p = rootChild[b]!;
      if (p >= 0 && next[base + byteClass[b]!]! >= 0) fullCost += tokenStart[p + subtreeSize[p]!]! - tokenStart[p]!;
    }
    let best = -1;
    let bestCost = Math.floor(fullCost / 3);
    for (const t of this.wideStates) {
      const tb = t * numClasses;
      let cost = 0;
      for (let b = 0; b < 256 && cost < bestCost; b++) {
        const p = rootChild[b]!;
        if (p < 0) continue;
        const c = byteClass[b]!;
        const ns = next[base + c]!;
        const nt = next[tb + c]!;
        if (ns === nt) continue;
        const tokens = tokenStart[p + subtreeSize[p]!]! - tokenStart[p]!;
        cost += (ns >= 0 ? tokens : 0) + (nt >= 0 ? tokens : 0);
      }
      if (cost < bestCost) {
        best = t;
        bestCost = cost;
      }
    }
    if (best < 0) return -1;
    const tb = best * numClasses;
    const redo = this.redo;
    for (let b = 0; b < 256; b++) redo[b] = rootChild[b]! >= 0 && next[base + byteClass[b]!] !== next[tb + byteClass[b]!] ? 1 : 0;
    return best;
  }

  /** Clears from `mask` (a copy of `best`'s) its tokens under the first bytes in `redo`; returns how many. */
  clearRedone(mask: Uint32Array): number {
    const { subtreeSize, tokenStart, tokenIds, rootChild } = this.trie;
    const redo = this.redo;
    let cleared = 0;
    for (let b = 0; b < 256; b++) {
      if (redo[b] === 0) continue;
      const p = rootChild[b]!;
      for (let k = tokenStart[p]!, end = tokenStart[p + subtreeSize[p]!]!; k < end; k++) {
        const id = tokenIds[k]!;
        const bit = 1 << (id & 31);
        if ((mask[id >>> 5]! & bit) !== 0) {
          mask[id >>> 5]! &= ~bit;
          cleared++;
        }
      }
    }
    return cleared;
  }

  /**
   * States with the same live/dead structure for every byte string up to the longest token have
   * identical full masks. Partition refinement ignoring acceptance (Moore), stopped once stable
   * or after maxTokenLength rounds; null when the DFA is too big for it to pay (work cap), or when
   * every state ends up alone in its block (then nothing is shared: the usual case for minimized
   * DFAs whose states differ within a few bytes, such as JSON Schema's). Each round hashes every
   * state's signature (its block and its successors' blocks per class) into an open-addressing
   * table of typed arrays, comparing signatures exactly on a hash match: no allocation per state.
   */
  private liveBlocks(): Int32Array | null {
    if (this.blocks !== undefined) return this.blocks;
    this.blocks = null;
    const { numStates: n, numClasses: k, next } = this.dfa;
    const maxRounds = this.trie.maxTokenLength + 1;
    if (n < 2 || n * k * 8 > LIVE_BLOCK_WORK_CAP) return null;
    let block = new Int32Array(n);
    let nextBlock = new Int32Array(n);
    const hashes = new Int32Array(n);
    const tableMask = (1 << Math.ceil(Math.log2(2 * n + 1))) - 1;
    /** Per slot, 1 + the first state of a new block with that signature; 0: empty. */
    const table = new Int32Array(tableMask + 1);
    let numBlocks = 1;
    let work = 0;
    for (let round = 0; round < maxRounds; round++) {
      table.fill(0);
      let count = 0;
      for (let s = 0; s < n; s++) {
        const row = s * k;
        let h = block[s]! | 0;
        for (let c = 0; c < k; c++) {
          const t = next[row + c]!;
          h = Math.imul(h ^ (t < 0 ? 0 : block[t]! + 1), 0x01000193);
        }
        hashes[s] = h;
        let slot = h & tableMask;
        for (;;) {
          const entry = table[slot]!;
          if (entry === 0) {
            table[slot] = s + 1;
            nextBlock[s] = count++;
            break;
          }
          const r = entry - 1;
          if (hashes[r] === h && block[r] === block[s] && this.sameSignature(block, r, s)) {
            nextBlock[s] = nextBlock[r]!;
            break;
          }
          slot = (slot + 1) & tableMask;
        }
      }
      work += n * k;
      const stable = count === numBlocks;
      [block, nextBlock] = [nextBlock, block];
      numBlocks = count;
      // Refinement only splits: once every state is alone, nothing can be shared.
      if (numBlocks === n) return null;
      if (stable) break;
      if (work > LIVE_BLOCK_WORK_CAP && round + 1 < maxRounds) return null;
    }
    this.blocks = block;
    this.blockRepresentative = new Int32Array(numBlocks).fill(-1);
    return block;
  }

  /** Whether states `a` and `b` go, class by class, to the same blocks (or both nowhere). */
  private sameSignature(block: Int32Array, a: number, b: number): boolean {
    const { numClasses: k, next } = this.dfa;
    for (let c = 0; c < k; c++) {
      const ta = next[a * k + c]!;
      const tb = next[b * k + c]!;
      if ((ta < 0 ? -1 : block[ta]!) !== (tb < 0 ? -1 : block[tb]!)) return false;
    }
    return true;
  }

  /** Max byte distance to acceptance over states reachable from `state` in 1..maxTokenLength bytes. */
  reachableMaxMinBytes(state: number): number {
    const { next, numClasses, minBytesToAccept, numStates } = this.dfa;
    const depth = new Int32Array(numStates).fill(-1);
    const queue = new Int32Array(numStates);
    let head = 0;
    let tail = 0;
    let best = 0;
    const limit = this.trie.maxTokenLength;
    depth[state] = 0;
    queue[tail++] = state;
    let startSeenAgain = false;
    while (head < tail) {
      const s = queue[head++]!;
      if (depth[s]! >= limit) continue;
      for (let c = 0; c < numClasses; c++) {
        const t = next[s * numClasses + c]!;
        if (t < 0) continue;
        if (t === state) startSeenAgain = true;
        if (depth[t] !== -1) continue;
        depth[t] = depth[s]! + 1;
        queue[tail++] = t;
        const mb = minBytesToAccept[t]!;
        if (mb > best) best = mb;
      }
    }
    if (startSeenAgain) best = Math.max(best, minBytesToAccept[state]!);
    return best;
  }
}
