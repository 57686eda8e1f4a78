/**
 * The regex constraint's token matcher (DfaTokenMatcher): its per-state tables, the first visit
 * of a state (shared, derived or walked), and the public API the constraint state and the cache use.
 */
import { maskWords } from "../../support/index.js";
import { everyUtf8CharLeadsTo, type TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";
import { WorkMeter } from "../work-meter.js";
import { DfaBudgets, MAX_MINOR_SPANS, NO_BUDGET } from "./budget.js";
import { BufferTally, MaskStore, SMALL_LIST_IDS, sampledWordHash, type NarrowList } from "./mask-store.js";
import type { DfaMatcherView } from "./matcher-view.js";
import { MaskSharing } from "./sharing.js";
import {
  chainComplementMask,
  DfaWalkContext,
  entryComplementMask,
  exceptionComplementMask,
  subtreeLoopsOn,
  walkComplementMask,
  walkFullMask,
} from "./walks.js";

/**
 * Bytes per DFA state of a matcher's fixed tables: ten typed-array entries (29 bytes), three
 * array slots (24) and slack.
 */
const PER_STATE_BYTES = 64;

/**
 * Token masks for one ByteDfa over one vocabulary trie, shared by every request that uses the
 * same compiled pattern (states are plain DFA state ids; per-request state lives in the caller or
 * in `DfaConstraintState`). This class holds the per-state tables and the public API; its parts
 * are walks.ts (the walk kernels), mask-store.ts (where masks live), sharing.ts (masks taken from
 * other states) and budget.ts (token distances and budgeted masks).
 *
 * Per DFA state, on first visit, one trie walk yields: the full mask (every token whose bytes keep
 * the DFA live), the distinct DFA states those tokens lead to (the token graph's edges), and the
 * largest byte distance to acceptance among them. Everything is cached, so the steady-state cost
 * of a step is a cache lookup plus running the DFA over the chosen token's bytes.
 *
 * Budgets: `mask(state, remaining)` admits token t only if acceptance stays reachable within
 * remaining - 1 further tokens. When every single byte is a token, minTokens(x) ≤ minBytes(x), so
 * if remaining - 1 ≥ max minBytes over the state's successors the full mask is already exact and
 * no token distance is needed. Otherwise each successor is decided by bounds on its token
 * distance (an upper bound from tokenizing its shortest completion, proven lower bounds), with a
 * depth-bounded search only where they straddle the budget (budget.ts), and the budgeted mask is
 * cached per (state, budget).
 *
 * Walk speed: a subtree whose bytes all lead the state back to itself (ASCII self-loops, and for
 * free-text-like states whole UTF-8 characters) is accepted as one block without stepping the
 * DFA, using the trie's per-node byte sets. Identical masks of different states (counted
 * repeats) are stored once.
 */
export interface DfaTokenMatcherOptions {
  /**
   * Token ranges kept per state for budgeted masks (default 16384); 0 makes every budgeted mask a
   * second trie walk (tests use it to cover that path).
   */
  readonly maxMinorSpans?: number;
  /**
   * Whether states with the same live structure share one walk (MaskSharing's partition; default
   * true). It pays on patterns with long counted runs (`[a-z]{0,300}`); JSON Schema's DFAs never
   * share (0 of 400 MaskBench schemas), and there the partition was ~95% of the time to the
   * first mask (about 1 ms at the median), so their matchers leave it out.
   */
  readonly shareEquivalentStates?: boolean;
  /**
   * Whether the positions of a counted run (a string's `maxLength`) get their masks from the
   * per-byte token lists (chainComplementMask; default true). False walks them (tests compare).
   */
  readonly countedRuns?: boolean;
}

/** ASCII bytes one target must take from a state for the state to head a counted run (a string body: ~90). */
const MIN_RUN_BYTES = 64;
/**
 * Characters of a counted run followed ahead (each a state whose bytes are grouped once): tokens
 * longer than that are stepped (211 at 152k tokens).
 */
const MAX_RUN_AHEAD = 32;

/** Work charged per state walked, besides its trie nodes (see computeState; measured: ~5 µs). */
const STATE_STEPS = 384;

export class DfaTokenMatcher implements DfaMatcherView {
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
  private readonly tokenCount: Int32Array;
  private readonly successors: (Int32Array | undefined)[];
  private readonly maxSuccessorMinBytes: Int32Array;
  private readonly stateAtDepth: Int32Array;
  private readonly successorStamp: Int32Array;
  private readonly successorScratch: Int32Array;
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
  /** Walks done by the per-byte token lists (exceptionComplementMask) instead of the trie (tests). */
  statesListed = 0;
  /** Masks of states in front of a broad loop, by its token lists (entryComplementMask; tests). */
  statesEntered = 0;
  /** entryComplementMask's first bytes to walk; widestAsciiTarget's targets of the ASCII bytes and their weights. */
  private readonly entryRedo = new Uint8Array(256);
  private readonly entryTargets = new Int32Array(128);
  private readonly entryTokens = new Int32Array(128);
  /** Masks of a counted run's positions, by the token lists (chainComplementMask; tests). */
  statesChained = 0;
  private readonly countedRuns: boolean;
  /**
   * Per state: where each byte of its widest ASCII group and every multi-byte character lead (the
   * next position of a counted run), -1 when none, -2 not known yet; and per state, 4 words, that
   * group's bytes. Made on first need.
   */
  private runNext: Int32Array | null = null;
  private runBytes: Uint32Array | null = null;
  private readonly runChain = new Int32Array(MAX_RUN_AHEAD + 1);

  private readonly walkContext: DfaWalkContext;
  private readonly store: MaskStore;
  private readonly sharing: MaskSharing;
  private readonly budgets: DfaBudgets;

  /** See DfaTokenMatcherOptions. */
  constructor(trie: TokenTrie, dfa: ByteDfa, opts: DfaTokenMatcherOptions = {}) {
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
    this.stateAtDepth = new Int32Array(trie.maxTokenLength + 2);
    this.successorStamp = new Int32Array(n);
    this.successorScratch = new Int32Array(n);
    this.loopKind = new Uint8Array(n);
    this.loopBytes = new Uint32Array(n * 8);
    this.multibyteLoop = new Uint8Array(n);
    this.walkContext = new DfaWalkContext(
      this,
      trie,
      dfa,
      this.stateAtDepth,
      this.successorStamp,
      this.successorScratch,
      this.loopKind,
      this.loopBytes,
      this.multibyteLoop,
    );
    this.store = new MaskStore(this.words);
    this.sharing = new MaskSharing(trie, dfa, opts.shareEquivalentStates ?? true);
    this.countedRuns = opts.countedRuns ?? true;
    this.budgets = new DfaBudgets(
      this,
      trie,
      dfa,
      this.successors,
      this.store,
      this.stateAtDepth,
      this.work,
      opts.maxMinorSpans ?? MAX_MINOR_SPANS,
    );
  }

  /** Narrow id lists turned into bitsets on a first read (tests). */
  get listsMaterialized(): number {
    return this.store.listsMaterialized;
  }

  /** Reads of a small list's mask that rewrote the shared small-list mask (tests). */
  get smallListWrites(): number {
    return this.store.smallListWrites;
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

  /**
   * The broad loop (one whole characters loop on: a string's body) that the ASCII first bytes of
   * half the tokens or more lead to from `state`, or -1: then entryComplementMask may build the
   * mask from every token rather than walk ~all of them.
   */
  private entryLoop(state: number): number {
    const { rootChild, tokenStart, subtreeSize, numTokens } = this.trie;
    const best = this.widestAsciiTarget(state, (b) => {
      const p = rootChild[b]!;
      return p < 0 ? 0 : tokenStart[p + subtreeSize[p]!]! - tokenStart[p]!;
    });
    if (best < 0 || this.entryTargets[best] === state || this.entryTokens[best]! < numTokens >>> 1) return -1;
    const loop = this.entryTargets[best]!;
    return this.isBroadLoop(loop) && this.multibyteLoop[loop] === 1 ? loop : -1;
  }

  /**
   * The ASCII bytes of `state` grouped by their target (entryTargets), each group weighed by
   * `weight(b)` of its bytes (entryTokens); returns the heaviest group's index, -1 when none.
   */
  private widestAsciiTarget(state: number, weight: (b: number) => number): number {
    const { next, byteClass, numClasses } = this.dfa;
    const targets = this.entryTargets;
    const weights = this.entryTokens;
    let distinct = 0;
    for (let b = 0; b < 128; b++) {
      const w = weight(b);
      if (w === 0) continue;
      const t = next[state * numClasses + byteClass[b]!]!;
      if (t < 0) continue;
      let i = 0;
      while (i < distinct && targets[i] !== t) i++;
      if (i === distinct) {
        targets[distinct++] = t;
        weights[i] = 0;
      }
      weights[i]! += w;
    }
    let best = -1;
    for (let i = 0; i < distinct; i++) if (best < 0 || weights[i]! > weights[best]!) best = i;
    return best;
  }

  /**
   * The next position of a counted run from `state` (see runNext): the target of its widest ASCII
   * group when that has MIN_RUN_BYTES bytes, is not `state` itself (a loop) and every multi-byte
   * character leads there too; else -1.
   */
  private runNextOf(state: number): number {
    const n = this.dfa.numStates;
    const known = (this.runNext ??= new Int32Array(n).fill(-2));
    if (known[state] !== -2) return known[state]!;
    const bytes = (this.runBytes ??= new Uint32Array(n * 4));
    const { next, byteClass, numClasses } = this.dfa;
    const best = this.widestAsciiTarget(state, () => 1);
    let to = -1;
    if (best >= 0 && this.entryTokens[best]! >= MIN_RUN_BYTES && this.entryTargets[best] !== state) {
      const target = this.entryTargets[best]!;
      if (this.leadsIntoOnEveryUtf8Char(state, target)) {
        to = target;
        for (let b = 0; b < 128; b++) if (next[state * numClasses + byteClass[b]!] === to) bytes[state * 4 + (b >>> 5)]! |= 1 << (b & 31);
      }
    }
    known[state] = to;
    return to;
  }

  /** Whether two states' run groups (runBytes) are the same bytes. */
  private sameRunBytes(a: number, b: number): boolean {
    const bytes = this.runBytes!;
    for (let w = 0; w < 4; w++) if (bytes[a * 4 + w] !== bytes[b * 4 + w]) return false;
    return true;
  }

  /**
   * The mask of `state` as the head of a counted run (chainComplementMask), followed up to
   * MAX_RUN_AHEAD characters through the states with its run bytes; null when it heads none or
   * the token lists do not pay.
   */
  private countedRunMask(state: number): Uint32Array | null {
    if (!this.countedRuns) return null;
    const first = this.runNextOf(state);
    if (first < 0) return null;
    const chain = this.runChain;
    chain[0] = state;
    chain[1] = first;
    let run = 1;
    for (let q = first; run < MAX_RUN_AHEAD; ) {
      const to = this.runNextOf(q);
      if (to < 0 || !this.sameRunBytes(q, state)) break;
      chain[++run] = to;
      q = to;
    }
    const endDead = run < MAX_RUN_AHEAD && this.deadOnRunBytes(chain[run]!, state);
    return chainComplementMask(this.walkContext, this.trie, state, chain, run, endDead, this.runBytes!, state * 4);
  }

  /** Whether `end` goes nowhere on the run bytes of `head` and on every multi-byte lead byte (a run's last position). */
  private deadOnRunBytes(end: number, head: number): boolean {
    const { next, byteClass, numClasses } = this.dfa;
    const bytes = this.runBytes!;
    for (let b = 0; b < 128; b++) {
      if (((bytes[head * 4 + (b >>> 5)]! >>> (b & 31)) & 1) !== 0 && next[end * numClasses + byteClass[b]!]! >= 0) return false;
    }
    for (let b = 0xc2; b <= 0xf4; b++) if (next[end * numClasses + byteClass[b]!]! >= 0) return false;
    return true;
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
    return this.leadsIntoOnEveryUtf8Char(state, state);
  }

  /** Whether every valid multi-byte UTF-8 character read from `from` ends in `to`. */
  private leadsIntoOnEveryUtf8Char(from: number, to: number): boolean {
    const { next, byteClass, numClasses } = this.dfa;
    return everyUtf8CharLeadsTo(from, to, (s, b) => next[s * numClasses + byteClass[b]!]!);
  }

  /** Whether every token below trie node p leads from `state` back to `state` (one block; the budgets' walk asks too). */
  subtreeLoops(p: number, state: number): boolean {
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

  /**
   * The one byte that can follow `state` on the way to a match, or -1: the state accepts (the
   * text may end here), or more than one byte can follow. Memoized per state (fast-forward asks
   * once per forced byte).
   */
  forcedByte(state: number): number {
    if (state < 0) return -1;
    const memo = (this.forcedBytes ??= new Int16Array(this.dfa.numStates).fill(-2));
    let byte = memo[state]!;
    if (byte === -2) {
      byte = this.computeForcedByte(state);
      memo[state] = byte;
    }
    return byte;
  }

  private forcedBytes: Int16Array | null = null;

  private computeForcedByte(state: number): number {
    const { next, byteClass, numClasses, accepting, minBytesToAccept } = this.dfa;
    if (accepting[state] === 1) return -1;
    let only = -1;
    for (let b = 0; b < 256; b++) {
      const t = next[state * numClasses + byteClass[b]!]!;
      if (t < 0 || minBytesToAccept[t]! < 0) continue;
      if (only >= 0) return -1;
      only = b;
    }
    return only;
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
  mask(state: number, remaining: number = NO_BUDGET): Uint32Array {
    if (state < 0 || remaining <= 0) return this.emptyMask;
    const full = this.fullMasks[state] ?? this.fullMaskSlow(state);
    if (this.trie.everyByteIsToken && remaining - 1 >= this.maxSuccessorMinBytes[state]!) return full;
    return this.budgets.budgetMask(state, remaining - 1, full);
  }

  /** Whether any token is allowed in `state` with `remaining` tokens left. */
  hasAnyToken(state: number, remaining: number = NO_BUDGET): boolean {
    if (state < 0 || remaining <= 0) return false;
    if (this.tokenCount[state]! < 0) this.firstMask(state);
    if (this.tokenCount[state] === 0) return false;
    if (this.trie.everyByteIsToken && remaining - 1 >= this.maxSuccessorMinBytes[state]!) return true;
    return this.budgets.anySuccessorFits(state, remaining - 1);
  }

  /**
   * Exact minimum number of tokens from `state` to a full match (0 when accepting), or
   * Number.POSITIVE_INFINITY when no sequence of generable tokens gets there.
   *
   * With `cap` (the request's max_new_tokens): when a match fits within it, some number ≤ cap —
   * exact if already known, else an upper bound — found without exploring the pattern's states
   * where the bounds allow; Number.POSITIVE_INFINITY when none fits (see minTokensAtLeast).
   */
  minTokensToAccept(state: number, cap: number = Number.POSITIVE_INFINITY): number {
    return this.budgets.minTokensToAccept(state, cap);
  }

  /** A proven lower bound on the tokens to a full match: exact when at most `cap`, else cap + 1. */
  minTokensAtLeast(state: number, cap: number): number {
    return this.budgets.minTokensAtLeast(state, cap);
  }

  /** The cheap half of canAcceptWithin: true when the byte distance alone shows it fits. */
  clearlyAcceptsWithin(state: number, budget: number): boolean {
    return this.budgets.clearlyAcceptsWithin(state, budget);
  }

  /** Whether a full match is reachable from `state` within `budget` tokens; cheap when it clearly is. */
  canAcceptWithin(state: number, budget: number): boolean {
    return this.budgets.canAcceptWithin(state, budget);
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
    const rep = this.sharing.equivalentOf(state);
    if (rep >= 0) {
      this.fullMasks[state] = this.fullMasks[rep];
      this.narrowLists[state] = this.narrowLists[rep];
      this.tokenCount[state] = this.tokenCount[rep]!;
      this.maxSuccessorMinBytes[state] = this.sharing.reachableMaxMinBytes(state);
      this.noteWide(state);
      this.statesShared++;
      return;
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
    const version =
      this.statesComputed +
      this.statesShared +
      this.statesDerived +
      this.store.listsMaterialized +
      this.budgets.maskCount +
      this.store.slabMasks;
    if (version === this.measuredVersion) return this.measuredBytes;
    const n = this.dfa.numStates;
    const tally = new BufferTally();
    tally.bytes = 1024 + n * PER_STATE_BYTES + this.emptyMask.byteLength;
    tally.bytes += (this.runNext?.byteLength ?? 0) + (this.runBytes?.byteLength ?? 0);
    for (let s = 0; s < n; s++) {
      tally.add(this.fullMasks[s]);
      const list = this.narrowLists[s];
      if (list !== undefined) {
        tally.add(list.ids);
        tally.add(list.mask);
      }
      tally.add(this.successors[s]);
    }
    this.store.tallyInto(tally);
    this.budgets.tallyInto(tally);
    const bytes = tally.bytes + this.sharing.retainedBytes();
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
    if (list.mask === undefined && list.ids.length <= SMALL_LIST_IDS) return this.store.smallListMask(list);
    const mask = this.store.bitsetOf(list);
    this.fullMasks[state] = mask;
    return mask;
  }

  /**
   * The mask of a state whose first bytes mostly go where some wide state's same bytes go (the
   * "one more letter needed" state in front of a [a-z]+ loop; the key typed so far in an object
   * whose unnamed keys are free): below each such byte both walks are the same walk, so the mask
   * is the wide state's with the other bytes' subtrees cleared and walked again from this state
   * (see MaskSharing.derivationBase). False (nothing set) when no wide state makes that cheaper
   * than a walk. Comes without successors, like a shared mask; its largest successor distance is
   * bounded by the wide state's and the walk's.
   */
  private derivedMask(state: number): boolean {
    const best = this.sharing.derivationBase(state);
    if (best < 0) return false;
    const mask = (this.fullMasks[best] ?? this.fullMaskSlow(best)).slice();
    const kept = this.tokenCount[best]! - this.sharing.clearRedone(mask);
    walkFullMask(this.walkContext, state, mask, this.sharing.redo);
    const count = kept + this.walkContext.scalars[1]!;
    const interned = this.store.intern(mask, sampledWordHash(mask), count);
    this.fullMasks[state] = interned;
    this.tokenCount[state] = count;
    // The tokens kept end where they end from `best`; the walked ones were just seen. A bound, not
    // exact (it only decides when a mask needs no budget), and no search of the DFA.
    this.maxSuccessorMinBytes[state] = Math.max(this.maxSuccessorMinBytes[best]!, this.walkContext.scalars[3]!);
    this.noteWide(state);
    this.statesDerived++;
    return true;
  }

  /** Keeps `state` as a candidate for derivedMask when its mask is wide (a costly walk). */
  private noteWide(state: number): void {
    this.sharing.noteWide(state, this.tokenCount[state]!);
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
    let complement = this.isBroadLoop(state);
    let mask: Uint32Array;
    if (complement) {
      mask = this.trie.generableMask.slice();
      if (exceptionComplementMask(walk, this.trie, state, mask)) this.statesListed++;
      else walkComplementMask(walk, state, mask);
    } else {
      // In front of such a loop (a key's or string's first character), the same from every token.
      const loop = this.entryLoop(state);
      const entered =
        loop >= 0 && entryComplementMask(walk, this.trie, state, loop, this.leadsIntoOnEveryUtf8Char(state, loop), this.entryRedo);
      // A counted run's position (a string's maxLength), the same from every token.
      const counted = entered ? null : this.countedRunMask(state);
      if (entered) {
        mask = entered;
        complement = true;
        this.statesEntered++;
      } else if (counted !== null) {
        mask = counted;
        complement = true;
        this.statesChained++;
      } else {
        mask = this.store.scratch();
        walkFullMask(walk, state, mask, null);
      }
    }
    const count = walk.scalars[1]!;
    // A narrow walk kept (and hashed) its few ids: the scratch is zeroed by them and reused.
    const narrow = !complement && count < this.words;
    if (narrow) {
      const ids = walk.narrowIds;
      for (let i = 0; i < count; i++) mask[ids[i]! >>> 5] = 0;
      if (firstVisit) this.narrowLists[state] = this.store.internList(ids, count, walk.scalars[4]!);
    } else if (!firstVisit) {
      if (!complement) mask.fill(0);
    } else {
      if (!complement) this.store.keepScratch();
      const interned = this.store.intern(mask, sampledWordHash(mask), count);
      if (interned !== mask && !complement) {
        mask.fill(0);
        this.store.reuseScratch(mask);
      }
      this.fullMasks[state] = interned;
    }
    this.tokenCount[state] = count;
    this.successors[state] = this.successorScratch.slice(0, walk.scalars[2]!);
    this.maxSuccessorMinBytes[state] = walk.scalars[3]!;
    if (firstVisit) this.noteWide(state);
    this.statesComputed++;
    // What a state costs beyond the trie nodes its walk charged: its mask interned and hashed (a
    // narrow one's few ids, not the mask's words: 4,748 at 152k tokens, which charged a pattern of
    // narrow states ten to twenty times its time), its successor list made (a few µs: at a
    // 512-token vocabulary, more than the walk itself).
    this.work.charge(STATE_STEPS + (narrow ? count : this.words));
  }
}
