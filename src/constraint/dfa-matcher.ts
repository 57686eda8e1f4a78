import { loopsOnEveryUtf8Char, TokenTrie } from "./trie.js";
import { maskWords, setTokenList } from "../support/index.js";
import type { ByteDfa } from "./types.js";
import { WorkMeter } from "./work-meter.js";

/** minTokens value for a state from which acceptance is unreachable with whole tokens. */
const UNREACHABLE = 0x7fffffff;
/** minTokens value not computed yet. */
const UNKNOWN = -1;

/**
 * Token masks for one ByteDfa over one vocabulary trie, shared by every request that uses the
 * same compiled pattern (states are plain DFA state ids; per-request state lives in the caller or
 * in `DfaConstraintState`).
 *
 * Per DFA state, on first visit, one trie walk yields: the full mask (every token whose bytes keep
 * the DFA live), the distinct DFA states those tokens lead to (the token graph's edges), and the
 * largest byte distance to acceptance among them. Everything is cached, so the steady-state cost
 * of a step is a cache lookup plus running the DFA over the chosen token's bytes.
 *
 * Budgets: `mask(state, remaining)` admits token t only if acceptance stays reachable within
 * remaining - 1 further tokens. When every single byte is a token, minTokens(x) ≤ minBytes(x), so
 * if remaining - 1 ≥ max minBytes over the state's successors the full mask is already exact and
 * no token distance is needed. Otherwise exact token distances (BFS over the token graph of the
 * states reachable from here) are computed once, and the budgeted mask is cached per (state,
 * threshold), where threshold is the largest successor distance that still fits: masks for
 * different budgets with the same threshold are identical. A budgeted mask is the full mask with
 * the few token ranges that lead elsewhere than the state's main successor fixed up (ranges kept
 * from one extra walk), or a filtered walk when there are too many ranges.
 *
 * Walk speed: a subtree whose bytes all lead the state back to itself (ASCII self-loops, and for
 * free-text-like states whole UTF-8 characters) is accepted as one block without stepping the
 * DFA, using the trie's per-node byte sets. Identical masks of different states (counted
 * repeats) are stored once.
 */
export class DfaTokenMatcher {
  readonly trie: TokenTrie;
  readonly dfa: ByteDfa;
  readonly words: number;
  /** All-zero mask; shared, never written. */
  readonly emptyMask: Uint32Array;
  /** Bounds each operation's walks (see work-meter.ts); the constraint state begins it. */
  readonly work = new WorkMeter();

  /**
   * Per state: its full mask once materialized. A computed state (tokenCount ≥ 0) may have none
   * yet: a narrow walk keeps only its token ids (narrowLists) and the bitset is built when first
   * read (precompute reads the states it reaches). Budget questions (token counts, successors,
   * distances) never need it, and a narrow bitset of its own costs one 19 KB allocation at 152k
   * tokens instead of a share of slabs zeroed ahead (~1 MB for a 10-word alternation).
   */
  private readonly fullMasks: (Uint32Array | undefined)[];
  private readonly narrowLists: (NarrowList | undefined)[];
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
  private readonly tokenCount: Int32Array;
  private readonly successors: (Int32Array | undefined)[];
  private readonly maxSuccessorMinBytes: Int32Array;
  private readonly minTokens: Int32Array;
  /** 1 once minTokens is exact for the state's successors. */
  private readonly successorsExact: Uint8Array;
  /** Budgeted masks keyed by state * 2^22 + threshold. */
  private readonly budgetMasks = new Map<number, Uint32Array>();
  /** Distinct masks by content hash (see intern). */
  private readonly maskIntern = new Map<number, { masks: Uint32Array[]; counts: number[] }>();
  private slab = new Uint32Array(0);
  private slabUsed = 0;
  private slabMasks = 0;
  private readonly stateAtDepth: Int32Array;
  private readonly successorStamp: Int32Array;
  private readonly successorScratch: Int32Array;
  /**
   * Per state: the token ranges (trie.tokenIds[from..to)) that do NOT lead to the state's most
   * common successor, as (from, to, target) triples, so a budgeted mask is the full mask with a
   * few ranges cleared (or a few ranges set) instead of a second trie walk. Undefined when there
   * are too many ranges to keep.
   */
  private readonly minorSpans: (Int32Array | undefined)[];
  private readonly majorTarget: Int32Array;
  private readonly minorSpansTried: Uint8Array;
  /** Per state: 0 = self-loop set not computed, 1 = no byte loops back, 2 = some bytes do. */
  private readonly loopKind: Uint8Array;
  /** Per state, 8 words: the bytes on which the state goes back to itself. */
  private readonly loopBytes: Uint32Array;
  /** Per state: 1 when every multi-byte UTF-8 character leads back to the state. */
  private readonly multibyteLoop: Uint8Array;
  /** States whose full mask came from a walk / was shared from an equivalent state (stats, tests). */
  statesComputed = 0;
  statesShared = 0;
  statesDerived = 0;
  /** Narrow id lists turned into bitsets on a first read (tests). */
  listsMaterialized = 0;
  /** Reads of a small list's mask that rewrote the shared small-list mask (tests). */
  smallListWrites = 0;
  /** Walks done by the per-byte token lists (exceptionComplementMask) instead of the trie (tests). */
  statesListed = 0;
  /** Computed states with wide masks (see noteWide, derivedMask). */
  private readonly wideStates: number[] = [];
  /** See liveBlocks: undefined = not computed yet, null = not worth it for this DFA. */
  private blocks: Int32Array | null | undefined;
  /** Per block, the state whose walk serves the block (-1: none yet). */
  private blockRepresentative = new Int32Array(0);

  private readonly maxMinorSpans: number;
  private readonly walkContext: DfaWalkContext;

  /**
   * `maxMinorSpans`: token ranges kept per state for budgeted masks (default 16384); 0 makes
   * every budgeted mask a second trie walk (tests use it to cover that path).
   */
  constructor(trie: TokenTrie, dfa: ByteDfa, opts: { maxMinorSpans?: number } = {}) {
    this.maxMinorSpans = opts.maxMinorSpans ?? MAX_MINOR_SPANS;
    this.trie = trie;
    this.dfa = dfa;
    this.words = maskWords(trie.vocabSize);
    this.emptyMask = new Uint32Array(this.words);
    const n = dfa.numStates;
    this.fullMasks = new Array<Uint32Array | undefined>(n);
    this.narrowLists = new Array<NarrowList | undefined>(n);
    this.successors = new Array<Int32Array | undefined>(n);
    this.tokenCount = new Int32Array(n).fill(-1);
    this.maxSuccessorMinBytes = new Int32Array(n);
    this.minTokens = new Int32Array(n).fill(UNKNOWN);
    this.successorsExact = new Uint8Array(n);
    this.stateAtDepth = new Int32Array(trie.maxTokenLength + 2);
    this.successorStamp = new Int32Array(n);
    this.successorScratch = new Int32Array(n);
    this.minorSpansTried = new Uint8Array(n);
    this.minorSpans = new Array<Int32Array | undefined>(n);
    this.majorTarget = new Int32Array(n).fill(-1);
    this.loopKind = new Uint8Array(n);
    this.loopBytes = new Uint32Array(n * 8);
    this.multibyteLoop = new Uint8Array(n);
    this.walkContext = new DfaWalkContext(this, trie, dfa, this.stateAtDepth, this.successorStamp, this.successorScratch, this.loopKind, this.loopBytes, this.multibyteLoop);
  }

  /** Whether `state` goes back to itself on at least 128 byte values or on every multi-byte character. */
  private isBroadLoop(state: number): boolean {
    if (this.loopKind[state] === 0) this.computeLoop(state);
    if (this.loopKind[state] !== 2) return false;
    if (this.multibyteLoop[state] === 1) return true;
    let n = 0;
    for (let w = 0; w < 8; w++) {
      let x = this.loopBytes[state * 8 + w]!;
      while (x !== 0) {
        x &= x - 1;
        n++;
      }
    }
    return n >= 128;
  }

  /** Fills the loop sets of `state` (see loopKind); returns its loopKind. */
  computeLoop(state: number): number {
    const { next, byteClass, numClasses } = this.dfa;
    const base = state * numClasses;
    let any = false;
    for (let b = 0; b < 256; b++) {
      if (next[base + byteClass[b]!] === state) {
        this.loopBytes[state * 8 + (b >>> 5)]! |= 1 << (b & 31);
        any = true;
      }
    }
    const multibyte = this.loopsOnEveryMultibyteChar(state);
    this.multibyteLoop[state] = multibyte ? 1 : 0;
    const kind = any || multibyte ? 2 : 1;
    this.loopKind[state] = kind;
    return kind;
  }

  /** Whether every valid multi-byte UTF-8 character takes `state` back to itself (free text, string bodies). */
  private loopsOnEveryMultibyteChar(state: number): boolean {
    const { next, byteClass, numClasses } = this.dfa;
    return loopsOnEveryUtf8Char(state, (s, b) => next[s * numClasses + byteClass[b]!]!);
  }

  /** Whether every token below trie node p leads from `state` back to `state` (one block). */
  private subtreeLoops(p: number, state: number): boolean {
    let kind = this.loopKind[state]!;
    if (kind === 0) kind = this.computeLoop(state);
    return kind === 2 && subtreeLoopsOn(this.walkContext, p, state);
  }


  get start(): number {
    return this.dfa.start;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.dfa.accepting[state] === 1;
  }

  /** DFA state after the token's bytes, or -1 when the token leaves the pattern (or is not generable). */
  advance(state: number, tokenId: number): number {
    if (state < 0 || !this.trie.isGenerable(tokenId)) return -1;
    return this.advanceBytes(state, this.trie.offsets[tokenId]!, this.trie.offsets[tokenId + 1]!);
  }

  /** DFA state after `bytes` from the start state, or -1. */
  advanceFromStart(bytes: Uint8Array): number {
    return this.advanceByteArray(this.dfa.start, bytes);
  }

  /** DFA state after `bytes` from `state`, or -1. */
  advanceByteArray(state: number, bytes: Uint8Array): number {
    const { next, byteClass, numClasses } = this.dfa;
    let s = state;
    for (let i = 0; i < bytes.length && s >= 0; i++) s = next[s * numClasses + byteClass[bytes[i]!]!]!;
    return s;
  }

  /**
   * The tokens in trie node `root`'s subtree whose bytes after the root's prefix keep the DFA
   * live from `state` (tokens at the root itself stay in `state`), as (from, to, target) triples
   * over trie.tokenIds. For prompt-boundary healing: root = the forced prefix's node.
   */
  subtreeSpans(root: number, state: number): Int32Array {
    const trie = this.trie;
    const { nodeInfo, subtreeSize, tokenStart } = trie;
    const { next, byteClass, numClasses } = this.dfa;
    const out: number[] = [];
    if (root < 0 || state < 0) return new Int32Array(0);
    if (tokenStart[root + 1]! > tokenStart[root]!) out.push(tokenStart[root]!, tokenStart[root + 1]!, state);
    const stateAtDepth = this.stateAtDepth;
    stateAtDepth[(nodeInfo[root]! >>> 8) & 0xffff] = state;
    const end = root + subtreeSize[root]!;
    let p = root + 1;
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
      const bulk = size > 8 && this.subtreeLoops(p, ns);
      if (bulk || (info & 0x80000000) !== 0) {
        out.push(tokenStart[p]!, bulk ? tokenStart[p + size]! : tokenStart[p + 1]!, ns);
      }
      p += bulk ? size : 1;
    }
    this.work.charge(steps);
    return Int32Array.from(out);
  }

  /** DFA state after data[from .. to) of the vocabulary's byte store. */
  private advanceBytes(state: number, from: number, to: number): number {
    const { next, byteClass, numClasses } = this.dfa;
    const data = this.trie.data;
    let s = state;
    for (let i = from; i < to && s >= 0; i++) s = next[s * numClasses + byteClass[data[i]!]!]!;
    return s;
  }

  /**
   * Tokens allowed in `state` with `remaining` tokens left (this one included). Read it, never
   * write it, and use it before the next mask() of this matcher: the mask of a state with only a
   * few tokens is one bitset shared by all such states, rewritten for each.
   */
  mask(state: number, remaining: number = UNREACHABLE): Uint32Array {
    if (state < 0 || remaining <= 0) return this.emptyMask;
    const full = this.fullMasks[state] ?? this.fullMaskSlow(state);
    if (this.trie.everyByteIsToken && remaining - 1 >= this.maxSuccessorMinBytes[state]!) return full;
    return this.budgetMask(state, remaining - 1, full);
  }

  /** Whether any token is allowed in `state` with `remaining` tokens left. */
  hasAnyToken(state: number, remaining: number = UNREACHABLE): boolean {
    if (state < 0 || remaining <= 0) return false;
    if (this.tokenCount[state]! < 0) this.firstMask(state);
    if (this.tokenCount[state] === 0) return false;
    if (this.trie.everyByteIsToken && remaining - 1 >= this.maxSuccessorMinBytes[state]!) return true;
    return this.threshold(state, remaining - 1) >= 0;
  }

  /**
   * Exact minimum number of tokens from `state` to a full match (0 when accepting), or
   * Number.POSITIVE_INFINITY when no sequence of generable tokens gets there.
   *
   * With `cap` (the request's max_new_tokens): when a match clearly fits within it (byte
   * distance ≤ cap and every byte is a token) the answer is some number ≤ cap — exact if already
   * known, else the byte distance, an upper bound — without exploring the pattern's states; the
   * exact value is computed only when it may exceed the cap (the 422 message needs it).
   */
  minTokensToAccept(state: number, cap: number = Number.POSITIVE_INFINITY): number {
    if (state < 0) return Number.POSITIVE_INFINITY;
    if (this.dfa.accepting[state] === 1) return 0;
    if (Number.isFinite(cap) && this.minTokens[state] === UNKNOWN && this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= cap) {
      return this.dfa.minBytesToAccept[state]!;
    }
    this.ensureExactDistances(state);
    const d = this.minTokens[state]!;
    return d === UNREACHABLE ? Number.POSITIVE_INFINITY : d;
  }

  /** The cheap half of canAcceptWithin: true when the byte distance alone shows it fits. */
  clearlyAcceptsWithin(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.dfa.accepting[state] === 1) return true;
    return this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= budget;
  }

  /** Whether a full match is reachable from `state` within `budget` tokens; cheap when it clearly is. */
  canAcceptWithin(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.dfa.accepting[state] === 1) return true;
    if (this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= budget) return true;
    return this.minTokensToAccept(state) <= budget;
  }

  /** Number of tokens in the full (unbudgeted) mask of `state`. */
  allowedTokenCount(state: number): number {
    if (state < 0) return 0;
    if (this.tokenCount[state]! < 0) this.firstMask(state);
    return this.tokenCount[state]!;
  }

  /** Distinct DFA states reachable from `state` by one allowed token. */
  tokenSuccessors(state: number): Int32Array {
    return this.successors[state] ?? (this.computeState(state), this.successors[state]!);
  }

  /**
   * Computes full masks ahead until `budgetMs` is spent; returns how many states have theirs.
   * A large state's first visit costs up to ~1 ms at 152k tokens: paid here, once per cached
   * matcher, it no longer lands on some request's decode step. The states that loop on the most
   * bytes (free text, string bodies: the large masks) go first, then the rest in state order
   * (breadth-first from the start). Masks only: successors wait for a budget that needs them.
   */
  precompute(budgetMs: number): number {
    const deadline = performance.now() + budgetMs;
    const { numStates, numClasses, next, byteClass } = this.dfa;
    const classSize = new Uint16Array(numClasses);
    for (let b = 0; b < 256; b++) classSize[byteClass[b]!]!++;
    const loops = new Uint16Array(numStates);
    for (let st = 0; st < numStates; st++) {
      let count = 0;
      for (let c = 0; c < numClasses; c++) if (next[st * numClasses + c] === st) count += classSize[c]!;
      loops[st] = count;
    }
    const order = Array.from({ length: numStates }, (_, i) => i).sort((a, b) => loops[b]! - loops[a]! || a - b);
    let done = 0;
    while (done < order.length && performance.now() < deadline) {
      const st = order[done++]!;
      if (this.tokenCount[st]! < 0) this.firstMask(st);
      // With its bitset, so no decode step builds one (a walk-through of json_object's ~100
      // states would otherwise pay ~2 µs on most steps, and its p99 with them). Small lists
      // need none (see smallScratch).
      const list = this.narrowLists[st];
      if (this.fullMasks[st] === undefined && list !== undefined && list.ids.length > SMALL_LIST_IDS) this.fullMaskSlow(st);
    }
    return done;
  }

  // --- internals ---------------------------------------------------------------------------

  /**
   * The first mask of a state: shared from an equivalent state when one was walked already (see
   * liveBlocks), else one walk. A shared mask comes without successors; its max successor byte
   * distance is bounded by the states reachable within one token's bytes instead.
   */
  private firstMask(state: number): void {
    const blocks = this.liveBlocks();
    if (blocks !== null) {
      const rep = this.blockRepresentative[blocks[state]!]!;
      if (rep >= 0 && rep !== state) {
        this.fullMasks[state] = this.fullMasks[rep];
        this.narrowLists[state] = this.narrowLists[rep];
        this.tokenCount[state] = this.tokenCount[rep]!;
        this.maxSuccessorMinBytes[state] = this.reachableMaxMinBytes(state);
        this.noteWide(state);
        this.statesShared++;
        return;
      }
      if (rep < 0) this.blockRepresentative[blocks[state]!] = state;
    }
    if (!this.derivedMask(state)) this.computeState(state);
  }

  /**
   * An estimate of the heap bytes it holds (the constraint cache's budget), erring high: its
   * per-state tables, and every mask, id list, successor list and span list it has made (a
   * buffer shared by several states, a slab or an interned mask, counted once). Measured again
   * only when states were computed or masks made since the last call.
   */
  retainedBytes(): number {
    const version = this.statesComputed + this.statesShared + this.statesDerived + this.listsMaterialized + this.budgetMasks.size + this.slabMasks;
    if (version === this.measuredVersion) return this.measuredBytes;
    const n = this.dfa.numStates;
    let bytes = 1024 + n * PER_STATE_BYTES + this.emptyMask.byteLength + (this.smallScratch?.byteLength ?? 0);
    const buffers = new Set<ArrayBufferLike>();
    const add = (a: ArrayBufferView | undefined): void => {
      if (a === undefined || buffers.has(a.buffer)) return;
      buffers.add(a.buffer);
      bytes += a.buffer.byteLength + 64;
    };
    for (let s = 0; s < n; s++) {
      add(this.fullMasks[s]);
      const list = this.narrowLists[s];
      if (list !== undefined) {
        add(list.ids);
        add(list.mask);
      }
      add(this.successors[s]);
      add(this.minorSpans[s]);
    }
    for (const mask of this.budgetMasks.values()) add(mask);
    add(this.slab);
    add(this.walkScratch);
    bytes += (this.budgetMasks.size + this.listIntern.size + this.maskIntern.size) * 80;
    if (this.blocks) bytes += this.blocks.byteLength + this.blockRepresentative.byteLength;
    this.measuredVersion = version;
    this.measuredBytes = bytes;
    return bytes;
  }

  private measuredVersion = -1;
  private measuredBytes = 0;

  /**
   * The full mask of a state not read before: computed first if need be, then materialized (a
   * small list is written into the shared small-list mask instead).
   */
  private fullMaskSlow(state: number): Uint32Array {
    if (this.tokenCount[state]! < 0) this.firstMask(state);
    const ready = this.fullMasks[state];
    if (ready !== undefined) return ready;
    const list = this.narrowLists[state]!;
    if (list.mask === undefined && list.ids.length <= SMALL_LIST_IDS) return this.smallListMask(list);
    if (list.mask === undefined) {
      // Its own allocation: one shared slab for all of them measured slower (a fresh mmap'd
      // slab page-faults on every page the ids touch), and a decode step past precompute's
      // budget should not zero masks for states not visited yet.
      const mask = new Uint32Array(this.words);
      setTokenList(mask, list.ids);
      list.mask = mask;
      this.listsMaterialized++;
    }
    this.fullMasks[state] = list.mask;
    return list.mask;
  }

  /** `list`'s bits in the shared small-list mask: the previous list's words cleared, its own set. */
  private smallListMask(list: NarrowList): Uint32Array {
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

  /**
   * The mask of a state whose every live byte goes where some wide state's same byte goes (the
   * "one more letter needed" state in front of a [a-z]+ loop, say): below each first byte both
   * walks are the same walk, so the mask is the wide state's with the subtrees of the bytes only
   * it allows cleared. False (nothing set) when no wide state qualifies or the clearing would cost
   * more than a sixteenth of the vocabulary. Comes without successors, like a shared mask.
   */
  private derivedMask(state: number): boolean {
    if (this.wideStates.length === 0) return false;
    const { next, numClasses, byteClass } = this.dfa;
    const { subtreeSize, tokenStart, tokenIds, rootChild } = this.trie;
    const base = state * numClasses;
    let best = -1;
    let bestCost = this.trie.numTokens >>> 4;
    for (const t of this.wideStates) {
      const tb = t * numClasses;
      let ok = true;
      for (let c = 0; c < numClasses && ok; c++) {
        const ns = next[base + c]!;
        if (ns >= 0 && ns !== next[tb + c]) ok = false;
      }
      if (!ok) continue;
      let cost = 0;
      for (let b = 0; b < 256; b++) {
        const p = rootChild[b]!;
        const c = byteClass[b]!;
        if (p >= 0 && next[base + c]! < 0 && next[tb + c]! >= 0) cost += tokenStart[p + subtreeSize[p]!]! - tokenStart[p]!;
      }
      if (cost < bestCost) {
        best = t;
        bestCost = cost;
      }
    }
    if (best < 0) return false;
    const mask = (this.fullMasks[best] ?? this.fullMaskSlow(best)).slice();
    const tb = best * numClasses;
    let cleared = 0;
    for (let b = 0; b < 256; b++) {
      const p = rootChild[b]!;
      const c = byteClass[b]!;
      if (p < 0 || next[base + c]! >= 0 || next[tb + c]! < 0) continue;
      for (let k = tokenStart[p]!, end = tokenStart[p + subtreeSize[p]!]!; k < end; k++) {
        const id = tokenIds[k]!;
        const bit = 1 << (id & 31);
        if ((mask[id >>> 5]! & bit) !== 0) {
          mask[id >>> 5]! &= ~bit;
          cleared++;
        }
      }
    }
    const count = this.tokenCount[best]! - cleared;
    const interned = this.intern(mask, this.wordHash(mask), count);
    this.fullMasks[state] = interned;
    this.tokenCount[state] = count;
    this.maxSuccessorMinBytes[state] = this.reachableMaxMinBytes(state);
    this.noteWide(state);
    this.statesDerived++;
    return true;
  }

  /** Keeps `state` as a candidate for derivedMask when its mask is wide (a costly walk). */
  private noteWide(state: number): void {
    if (this.wideStates.length < MAX_WIDE_STATES && this.tokenCount[state]! >= this.trie.numTokens >>> 6) this.wideStates.push(state);
  }

  /**
   * States with the same live/dead structure for every byte string up to the longest token have
   * identical full masks. Partition refinement ignoring acceptance (Moore), stopped once stable
   * or after maxTokenLength rounds; null when the DFA is too big for it to pay (work cap).
   */
  private liveBlocks(): Int32Array | null {
    if (this.blocks !== undefined) return this.blocks;
    this.blocks = null;
    const { numStates: n, numClasses: k, next } = this.dfa;
    const maxRounds = this.trie.maxTokenLength + 1;
    if (n < 2 || n * k * 8 > LIVE_BLOCK_WORK_CAP) return null;
    let block = new Int32Array(n);
    let numBlocks = 1;
    let work = 0;
    const signature = (b: Int32Array, s: number, c: number): number => {
      const t = next[s * k + c]!;
      return t < 0 ? -1 : b[t]!;
    };
    for (let round = 0; round < maxRounds; round++) {
      const nextBlock = new Int32Array(n).fill(-1);
      const reps: number[] = [];
      const byHash = new Map<number, number[]>();
      for (let s = 0; s < n; s++) {
        let h = block[s]! | 0;
        for (let c = 0; c < k; c++) h = Math.imul(h ^ (signature(block, s, c) + 1), 0x01000193);
        const candidates = byHash.get(h);
        let found = -1;
        if (candidates !== undefined) {
          for (const id of candidates) {
            const r = reps[id]!;
            if (block[r] !== block[s]) continue;
            let same = true;
            for (let c = 0; c < k && same; c++) same = signature(block, r, c) === signature(block, s, c);
            if (same) {
              found = id;
              break;
            }
          }
        }
        if (found < 0) {
          found = reps.length;
          reps.push(s);
          if (candidates === undefined) byHash.set(h, [found]);
          else candidates.push(found);
        }
        nextBlock[s] = found;
      }
      work += n * k;
      const stable = reps.length === numBlocks;
      block = nextBlock;
      numBlocks = reps.length;
      if (stable) break;
      if (work > LIVE_BLOCK_WORK_CAP && round + 1 < maxRounds) return null;
    }
    this.blocks = block;
    this.blockRepresentative = new Int32Array(numBlocks).fill(-1);
    return block;
  }

  /** Max byte distance to acceptance over states reachable from `state` in 1..maxTokenLength bytes. */
  private reachableMaxMinBytes(state: number): number {
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

  /**
   * One trie walk: full mask (or, when narrow, its token ids), successor states, max successor
   * byte distance. A state computed before (shared or derived, now walked for its successors)
   * keeps the mask it has: the walk's is the same set.
   */
  private computeState(state: number): void {
    const walk = this.walkContext;
    const firstVisit = this.tokenCount[state]! < 0;
    // States that loop on most bytes (free text, string bodies) allow most of the vocabulary:
    // start from every token and clear the dead subtrees instead of setting ~all bits one by one.
    const complement = this.isBroadLoop(state);
    let mask: Uint32Array;
    if (complement) {
      mask = this.trie.generableMask.slice();
      if (exceptionComplementMask(walk, this.trie, state, mask)) this.statesListed++;
      else walkComplementMask(walk, state, mask);
    } else {
      mask = this.walkScratch ??= this.freshMask();
      walkFullMask(walk, state, mask);
    }
    const count = walk.scalars[1]!;
    // A narrow walk kept (and hashed) its few ids: the scratch is zeroed by them and reused.
    const narrow = !complement && count < this.words;
    if (narrow) {
      const ids = walk.narrowIds;
      for (let i = 0; i < count; i++) mask[ids[i]! >>> 5] = 0;
      if (firstVisit) this.narrowLists[state] = this.internList(ids, count, walk.scalars[4]!);
    } else if (!firstVisit) {
      if (!complement) mask.fill(0);
    } else {
      if (!complement) this.walkScratch = undefined;
      const interned = this.intern(mask, this.wordHash(mask), count);
      if (interned !== mask && !complement) {
        mask.fill(0);
        this.walkScratch = mask;
      }
      this.fullMasks[state] = interned;
    }
    this.tokenCount[state] = count;
    this.successors[state] = this.successorScratch.slice(0, walk.scalars[2]!);
    this.maxSuccessorMinBytes[state] = walk.scalars[3]!;
    if (firstVisit) this.noteWide(state);
    this.statesComputed++;
  }

  /** The shared list equal to ids[0..count) (hash `h`, the walk's over them in trie order), or a new one. */
  private internList(ids: Int32Array, count: number, h: number): NarrowList {
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

  /** Largest successor token distance ≤ limit, or -1 when no successor fits. */
  private threshold(state: number, limit: number): number {
    this.ensureExactDistances(state);
    const succ = this.successors[state]!;
    const minTokens = this.minTokens;
    let best = -1;
    for (let i = 0; i < succ.length; i++) {
      const d = minTokens[succ[i]!]!;
      if (d <= limit && d > best) best = d;
    }
    return best;
  }

  private budgetMask(state: number, limit: number, full: Uint32Array): Uint32Array {
    const threshold = this.threshold(state, limit);
    if (threshold < 0) return this.emptyMask;
    // Every successor fits: the full mask is exact.
    const succ = this.successors[state]!;
    let allFit = true;
    for (let i = 0; i < succ.length; i++) if (this.minTokens[succ[i]!]! > threshold) allFit = false;
    if (allFit) return full;
    const key = state * 4194304 + threshold;
    const cached = this.budgetMasks.get(key);
    if (cached !== undefined) return cached;
    if (this.minorSpansTried[state] === 0) {
      this.minorSpansTried[state] = 1;
      if (this.maxMinorSpans > 0) this.keepMinorSpans(state);
    }
    const spans = this.minorSpans[state];
    let mask: Uint32Array;
    if (spans === undefined) {
      mask = this.walkWithThreshold(state, threshold);
    } else {
      const tokenIds = this.trie.tokenIds;
      const minTokens = this.minTokens;
      // Start from the full mask when the main successor fits, else from nothing; then fix up
      // the minor ranges whose fate differs.
      const majorFits = minTokens[this.majorTarget[state]!]! <= threshold;
      mask = majorFits ? full.slice() : new Uint32Array(this.words);
      for (let i = 0; i < spans.length; i += 3) {
        const fits = minTokens[spans[i + 2]!]! <= threshold;
        if (fits === majorFits) continue;
        for (let k = spans[i]!; k < spans[i + 1]!; k++) {
          const id = tokenIds[k]!;
          if (fits) mask[id >>> 5]! |= 1 << (id & 31);
          else mask[id >>> 5]! &= ~(1 << (id & 31));
        }
      }
    }
    const shared = this.intern(mask, this.wordHash(mask), popCount(mask));
    this.budgetMasks.set(key, shared);
    return shared;
  }

  /**
   * Returns an existing mask with the same bits when there is one. Counted repeats give many
   * states with identical masks (e.g. [a-z]{0,500}: every state far from the end), so identical
   * masks are stored once.
   */
  private wordHash(mask: Uint32Array): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < mask.length; i++) h = Math.imul(h ^ mask[i]!, 0x01000193);
    return h;
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

  /**
   * `h`: the mask's wordHash; `count`: its tokens. Returns an equal mask kept before, if any.
   */
  private intern(mask: Uint32Array, h: number, count: number): Uint32Array {
    const bucket = this.maskIntern.get(h);
    if (bucket === undefined) {
      this.maskIntern.set(h, { masks: [mask], counts: [count] });
      return mask;
    }
    outer: for (let j = 0; j < bucket.masks.length; j++) {
      if (bucket.counts[j] !== count) continue;
      const m = bucket.masks[j]!;
      for (let i = 0; i < mask.length; i++) if (m[i] !== mask[i]) continue outer;
      return m;
    }
    bucket.masks.push(mask);
    bucket.counts.push(count);
    return mask;
  }

  /**
   * One extra walk, on the first budgeted mask of a state: the token ranges with their targets,
   * kept when few enough lead anywhere but the most common successor (see minorSpans).
   */
  private keepMinorSpans(state: number): void {
    const spans = this.subtreeSpans(0, state);
    if (spans.length === 0) return;
    const count = new Map<number, number>();
    for (let i = 0; i < spans.length; i += 3) count.set(spans[i + 2]!, (count.get(spans[i + 2]!) ?? 0) + spans[i + 1]! - spans[i]!);
    let majorState = -1;
    let majorCount = -1;
    for (const [target, c] of count) {
      if (c > majorCount) {
        majorCount = c;
        majorState = target;
      }
    }
    let minor = 0;
    for (let i = 0; i < spans.length; i += 3) if (spans[i + 2] !== majorState) minor++;
    if (minor > this.maxMinorSpans) return;
    const kept = new Int32Array(minor * 3);
    let j = 0;
    for (let i = 0; i < spans.length; i += 3) {
      if (spans[i + 2] === majorState) continue;
      kept[j++] = spans[i]!;
      kept[j++] = spans[i + 1]!;
      kept[j++] = spans[i + 2]!;
    }
    this.minorSpans[state] = kept;
    this.majorTarget[state] = majorState;
  }


  /** Trie walk admitting tokens whose target state needs at most `threshold` more tokens. */
  private walkWithThreshold(state: number, threshold: number): Uint32Array {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const { next, byteClass, numClasses } = this.dfa;
    const minTokens = this.minTokens;
    const stateAtDepth = this.stateAtDepth;
    const mask = new Uint32Array(this.words);
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
        p += size;
        continue;
      }
      stateAtDepth[d] = ns;
      const bulk = size > 8 && this.subtreeLoops(p, ns);
      const from = tokenStart[p]!;
      const to = bulk ? tokenStart[p + size]! : tokenStart[p + 1]!;
      if (from !== to && minTokens[ns]! <= threshold) {
        for (let k = from; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
      }
      p += bulk ? size : 1;
    }
    this.work.charge(steps);
    return mask;
  }

  /**
   * Makes minTokens exact for `state` and each of its successors. Accepting states are sinks for
   * distances (a path through one is never shorter than stopping there), so the exploration does
   * not expand them; every other state reachable from `state` gets its successors computed.
   * Invariant: the set of states with known minTokens, with accepting states as sinks, is closed
   * under successors, so a backward BFS from the accepting states over all computed edges gives
   * exact distances for every newly explored state.
   */
  private ensureExactDistances(state: number): void {
    if (this.successorsExact[state] === 1) return;
    const minTokens = this.minTokens;
    const accepting = this.dfa.accepting;
    const n = this.dfa.numStates;
    const visited = new Uint8Array(n);
    const stack: number[] = [state];
    visited[state] = 1;
    while (stack.length > 0) {
      const s = stack.pop()!;
      this.work.charge(1);
      if (s !== state && (minTokens[s] !== UNKNOWN || accepting[s] === 1)) continue;
      const succ = this.successors[s] ?? (this.computeState(s), this.successors[s]!);
      for (let i = 0; i < succ.length; i++) {
        const t = succ[i]!;
        if (visited[t] === 0) {
          visited[t] = 1;
          stack.push(t);
        }
      }
    }
    const inStart = new Int32Array(n + 1);
    for (let s = 0; s < n; s++) {
      const succ = this.successors[s];
      if (succ === undefined) continue;
      for (let i = 0; i < succ.length; i++) inStart[succ[i]! + 1]!++;
    }
    for (let s = 0; s < n; s++) inStart[s + 1]! += inStart[s]!;
    const preds = new Int32Array(inStart[n]!);
    const fill = inStart.slice(0, n);
    for (let s = 0; s < n; s++) {
      const succ = this.successors[s];
      if (succ === undefined) continue;
      for (let i = 0; i < succ.length; i++) preds[fill[succ[i]!]!++] = s;
    }
    const dist = new Int32Array(n).fill(UNREACHABLE);
    const queue = new Int32Array(n);
    let head = 0;
    let tail = 0;
    for (let s = 0; s < n; s++) {
      if (accepting[s] === 1) {
        dist[s] = 0;
        queue[tail++] = s;
      }
    }
    while (head < tail) {
      const s = queue[head++]!;
      const ds = dist[s]! + 1;
      for (let k = inStart[s]!; k < inStart[s + 1]!; k++) {
        const pr = preds[k]!;
        if (dist[pr] === UNREACHABLE) {
          dist[pr] = ds;
          queue[tail++] = pr;
        }
      }
    }
    for (let s = 0; s < n; s++) {
      if (visited[s] === 1 || accepting[s] === 1) minTokens[s] = dist[s]!;
    }
    this.successorsExact[state] = 1;
  }
}

/**
 * Everything the hot walk reads, in one fixed-shape object, so the walk is a small top-level
 * function that V8 optimizes early (a walk inside a large method got deoptimized and recompiled
 * several times before settling, costing tens of ms on the first masks).
 */
class DfaWalkContext {
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
    readonly matcher: DfaTokenMatcher,
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
function subtreeLoopsOn(c: DfaWalkContext, p: number, state: number): boolean {
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
 */
function walkFullMask(c: DfaWalkContext, state: number, mask: Uint32Array): void {
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
    if (root < 0 || next[state * numClasses + byteClass[b]!]! < 0) continue;
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

function popCount(mask: Uint32Array): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) {
    let x = mask[i]!;
    x -= (x >>> 1) & 0x55555555;
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    n += (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24);
  }
  return n;
}

/** A narrow state's token ids (trie order), and its bitset once some state's mask was read. */
class NarrowList {
  mask: Uint32Array | undefined = undefined;
  constructor(readonly ids: Int32Array) {}
}

/**
 * Bytes per DFA state of a matcher's fixed tables: ten typed-array entries (29 bytes), three
 * array slots (24) and slack.
 */
const PER_STATE_BYTES = 64;

/** Narrow lists up to this many ids share one rewritten mask instead of a bitset each. */
export const SMALL_LIST_IDS = 128;

/** Most wide states derivedMask compares a new state with. */
const MAX_WIDE_STATES = 32;

/** Walk scratch masks carved from one slab allocation (see DfaTokenMatcher.freshMask). */
const SLAB_MASKS = 32;

/** Budget (states × classes × rounds) for the live-structure partition; beyond it, no sharing. */
const LIVE_BLOCK_WORK_CAP = 2_000_000;

/**
 * walkFullMask for broad states: `mask` starts as every generable token; dead subtrees are
 * cleared, everything else is left set. Same outputs in `c.scalars`.
 */
function walkComplementMask(c: DfaWalkContext, state: number, mask: Uint32Array): void {
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
 * walkComplementMask by the trie's per-byte token lists, for states that loop on every
 * multi-byte character and on all but a few ASCII bytes (free text, string bodies): only the
 * tokens holding one of those bytes, or not whole UTF-8 characters, can end anywhere but back
 * in `state`, so only they are stepped (~5k tokens at 152k instead of a walk over ~all 330k
 * trie nodes). Returns false, touching nothing, when the lists are too long to pay.
 */
function exceptionComplementMask(c: DfaWalkContext, trie: TokenTrie, state: number, mask: Uint32Array): boolean {
  if (c.multibyteLoop[state] !== 1) return false;
  const { asciiTokenStart, asciiTokens, notUtf8Tokens, orderedOffsets, orderedData, tokenStamp, tokenIds } = trie;
  const loop = c.loopBytes;
  let listed = notUtf8Tokens.length;
  for (let b = 0; b < 128; b++) {
    if (((loop[state * 8 + (b >>> 5)]! >>> (b & 31)) & 1) === 0) listed += asciiTokenStart[b + 1]! - asciiTokenStart[b]!;
  }
  if (listed > c.numTokens >>> 3) return false;
  c.matcher.work.charge(listed);
  const { next, byteClass, numClasses, minBytesToAccept, successorStamp, successorScratch } = c;
  const scalars = c.scalars;
  const stamp = ++scalars[0]!;
  const tokenMark = trie.nextTokenStamp();
  let numSucc = 0;
  let maxMinBytes = 0;
  let cleared = 0;
  let distinct = 0;
  for (let b = -1; b < 128; b++) {
    let from: number;
    let to: number;
    let list: Int32Array;
    if (b < 0) {
      list = notUtf8Tokens;
      from = 0;
      to = list.length;
    } else {
      if (((loop[state * 8 + (b >>> 5)]! >>> (b & 31)) & 1) !== 0) continue;
      list = asciiTokens;
      from = asciiTokenStart[b]!;
      to = asciiTokenStart[b + 1]!;
    }
    for (let j = from; j < to; j++) {
      const k = list[j]!;
      if (tokenStamp[k] === tokenMark) continue;
      tokenStamp[k] = tokenMark;
      distinct++;
      let s = state;
      for (let i = orderedOffsets[k]!, end = orderedOffsets[k + 1]!; i < end && s >= 0; i++) s = next[s * numClasses + byteClass[orderedData[i]!]!]!;
      if (s < 0) {
        const id = tokenIds[k]!;
        mask[id >>> 5]! &= ~(1 << (id & 31));
        cleared++;
      } else if (successorStamp[s] !== stamp) {
        successorStamp[s] = stamp;
        successorScratch[numSucc++] = s;
        const mb = minBytesToAccept[s]!;
        if (mb > maxMinBytes) maxMinBytes = mb;
      }
    }
  }
  // Every token on no list loops back to `state`.
  if (distinct < c.numTokens && successorStamp[state] !== stamp) {
    successorStamp[state] = stamp;
    successorScratch[numSucc++] = state;
    const mb = minBytesToAccept[state]!;
    if (mb > maxMinBytes) maxMinBytes = mb;
  }
  scalars[1] = c.numTokens - cleared;
  scalars[2] = numSucc;
  scalars[3] = maxMinBytes;
  return true;
}

/** Most minor token ranges kept per state for budgeted masks (beyond that, a second walk). */
const MAX_MINOR_SPANS = 16384;

const matcherCache = new WeakMap<ByteDfa, WeakMap<TokenTrie, DfaTokenMatcher>>();

/** The shared matcher for a (compiled DFA, trie) pair: masks computed once serve every request. */
export function dfaTokenMatcherFor(trie: TokenTrie, dfa: ByteDfa): DfaTokenMatcher {
  let byTrie = matcherCache.get(dfa);
  if (byTrie === undefined) {
    byTrie = new WeakMap();
    matcherCache.set(dfa, byTrie);
  }
  let matcher = byTrie.get(trie);
  if (matcher === undefined) {
    matcher = new DfaTokenMatcher(trie, dfa);
    byTrie.set(trie, matcher);
  }
  return matcher;
}

/**
 * Runs every path of the walks once on a toy vocabulary (once per thread: the runtime and the
 * compile worker call it when they start, not the import), so V8 has type feedback
 * for all of them before the first real walk; without it the first real walks ran deoptimized
 * and recompiled several times (tens of ms each on a busy machine).
 */
let warmedUp = false;

export function warmUpMatchers(): void {
  if (warmedUp) return;
  warmedUp = true;
  const enc = new TextEncoder();
  const words = ["a", "b", "ab", "ba", "aaaaaaaaaaaa", "abababababab", "bbbbbbbbbbbbb", "c", "ca", "\u00e9\u00e9", "\u4e2d"];
  const parts = words.map((w) => enc.encode(w));
  const offsets = new Uint32Array(parts.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i]! + parts[i]!.length;
  const data = new Uint8Array(offsets[parts.length]!);
  for (let i = 0; i < parts.length; i++) data.set(parts[i]!, offsets[i]!);
  const trie = TokenTrie.build({ size: parts.length, offsets, data, kinds: new Uint8Array(parts.length) });
  // State 0 loops on a/b and every non-ASCII byte class (a crude [^c]*), "c" goes to accepting state 1.
  const byteClass = new Uint8Array(256);
  byteClass[0x63] = 1;
  const dfa: ByteDfa = {
    numStates: 2,
    start: 0,
    numClasses: 2,
    byteClass,
    next: Int32Array.from([0, 1, -1, -1]),
    accepting: Uint8Array.from([0, 1]),
    minBytesToAccept: Int32Array.from([1, 0]),
  };
  for (let round = 0; round < 3; round++) {
    const m = new DfaTokenMatcher(trie, dfa);
    m.mask(0);
    m.mask(1);
    m.mask(0, 1);
    m.advance(0, 2);
  }
}
