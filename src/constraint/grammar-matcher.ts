/**
 * Token masks and budgets for an automaton with unboundedly many states (a grammar's lexer +
 * LALR parser), where nothing can be precomputed over all states as for a regex DFA.
 *
 * Masks: per visited state, the allowed tokens and their distinct target states, cached. A state
 * takes its commit-free tokens from a walk cached per tuple of lexer-level states (one per
 * hypothesis) and shared by every parser stack (see LexerLevelWalks below); only the trie
 * subtrees where a terminal ends are walked with the real automaton. advance() steps the token's
 * bytes through the automaton's memo, so no per-token target table is built.
 *
 * Budgets: a token is allowed with `remaining` tokens left only if a complete sentence is still
 * reachable within remaining-1 tokens after it. "Surely reachable" comes from an upper bound: the
 * fewest tokens spelling the shortest completing byte string (A* over the byte automaton; any
 * segmentation of valid bytes is a valid token path). Otherwise a bounded depth-first search over
 * cached token transitions decides; when it gives up, the token is refused: budgets may then be
 * stricter than necessary, never looser, so a completion is never a truncated half sentence.
 */
import { WorkMeter } from "./work-meter.js";
import { LEXER_COMMITS, searchCheapestGoal } from "../grammar/index.js";
import { DenseTable, grownTo, IdMap, int32Of, IntMap, maskWords, orInto, setTokenList, setTokenRange, TableSlab } from "../support/index.js";
import { loopsOnEveryUtf8Char, type TokenTrie } from "./trie.js";
import { PREFIX_PENDING, type ByteAutomaton } from "./types.js";
import { walkTrie } from "./walk.js";

/** What the grammar stage's incremental recognizer offers. */
export interface CompletableAutomaton extends ByteAutomaton {
  readonly start: number;
  isComplete(state: number): boolean;
  /** Admissible lower bound on bytes to a complete sentence (Infinity when dead). */
  minBytesLowerBound(state: number): number;
  /** Exact fewest bytes to a complete sentence, or -1 when the search gave up. */
  minBytesToComplete(state: number, maxExpansions?: number): number;
}

interface StateEdges {
  /**
   * Shared between states with the same lexer-level outcome: read only. Made on first need
   * (edgeMask): a budget search reads many states' targets and few of their masks.
   */
  mask: Uint32Array | null;
  /** What makes the mask: the one hypothesis (stack, lexer state), or the parts it is the union of. */
  readonly stack: number;
  readonly lex: number;
  readonly parts: readonly StateEdges[] | null;
  /** What determines the mask (lexer walks and which commits the stack takes). */
  maskKey: string;
  /** Distinct target states of the allowed tokens. */
  distinct: Int32Array;
  /** The same, by ascending lower-bound distance (sorted on first need; a copy, as searches recurse while others iterate `distinct`). */
  nearestFirst: Int32Array | null;
  /** Smallest token budget known to let every target finish (Infinity: not known yet). */
  allFitFrom: number;
}

/** Distinct masks kept for sharing between states (first in, first out past this). */
const MAX_SHARED_MASKS = 4096;
/** Depth-first search effort per budget query before refusing (conservative). */
const SEARCH_LIMIT = 64;
/**
 * Search effort for all the budget queries of one mask together. A tight budget asks one query
 * per target, and each new state a query visits costs a mask walk and an A*: without this cap
 * one decode step could hold the event loop for tens of ms. Queries past it only get the cheap
 * answers (known bounds, memo), so the mask may leave out a token that would have fit; never one
 * that does not.
 */
const MASK_SEARCH_LIMIT = 256;
/** Search effort for all the budgets minTokensAtLeast tries together. */
const MIN_TOKENS_SEARCH_LIMIT = 1024;
/** Commits a greedy completion may take before it gives up (then A* decides). */
const GREEDY_MAX_COMMITS = 256;
/** Budgets above this are treated alike by the memo keys (they only ever mean "plenty"). */
const BUDGET_KEY_CAP = 0xffff;
/**
 * Most time one matcher spends walking ahead (walkAhead), over all calls: enough for the token
 * starts and bodies of a JSON or SQL grammar at 152k tokens, small next to a request.
 */
export const WALK_AHEAD_MS = 12;

/** Entries of a memo map before its first growth. */
const MEMO_CAPACITY = 128;
/**
 * A matcher's slab (TableSlab): the first tables of its and its lexer walks' two IntMaps (4 KB
 * each) and six IdMaps (0.5 KB each), their step tables (about 16 KB), the depth stack of a walk
 * and the short token lists of the first walks (SLAB_LIST_MAX): about 20 KB at a first mask.
 */
const MATCHER_SLAB_BYTES = 48 * 1024;
/** Token lists of a walk up to this length come from the slab while it lasts. */
const SLAB_LIST_MAX = 256;


export class GrammarTokenMatcher {
  readonly words: number;
  private empty: Uint32Array | null = null;
  private readonly tables = new TableSlab(MATCHER_SLAB_BYTES);
  private readonly edges = new DenseTable<StateEdges>();
  private readonly sharedMasks = new Map<string, Uint32Array>();
  private readonly signature: number[] = [];
  private readonly prefixCache = new Map<string, { tokens: Int32Array; targets: Int32Array }>();
  /** Per state: tokens that surely suffice to complete (see tokenUpperBound). */
  private readonly tokenBound = new Map<number, number>();
  /**
   * Per state: bytes that surely suffice to complete (-1: Infinity), and where the completing
   * bytes behind that bound go on. With a single-byte token for every byte, n bytes are at most n
   * tokens: a roomy budget is settled by the greedy completion's length alone, without spelling it
   * in tokens or stepping the automaton along it (see byteBoundOf, carryByteBound).
   */
  private readonly byteBound = new IdMap(MEMO_CAPACITY, this.tables);
  /** Where along the greedy chain a state's byte bound goes on: `at` bytes into `node`'s step. */
  private readonly boundNode = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly boundAt = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly bytesAreTokens: boolean;
  /** States whose bound has had the shortest-completion search too. */
  private readonly exactBounded = new Set<number>();
  /** Per state: the greedy completion's next commit (see greedyStep, greedyLength). */
  private readonly greedySteps = new DenseTable<{ bytes: Uint8Array; next: number } | null>();
  /**
   * Per state: the greedy completion's length in bytes (-1: none) and its commits. Memoized along
   * the chain: the completions of sibling states (one token apart) soon reach the same shorter
   * stack, so each pays only the steps until a state already measured.
   */
  private readonly greedyBytes = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly greedyCommits = new IdMap(MEMO_CAPACITY, this.tables);
  private readonly greedyWalk: number[] = [];
  /** Per lexer state: the index (in tokenEnds) of the commit the last greedy step from it chose. */
  private readonly greedyHint = new IdMap(MEMO_CAPACITY, this.tables);
  /** state * 2^16 + budget → can finish: 1 yes, 0 no. */
  private readonly finishMemo = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly budgetMasks = new Map<number, Uint32Array>();
  /** What walkAhead may still spend (ms); 0 once it has walked everything. */
  private walkAheadLeftMs = WALK_AHEAD_MS;
  private searchLeft = 0;
  private searchGaveUp = false;
  /** Effort left to the mask being computed (MASK_SEARCH_LIMIT); Infinity outside mask(). */
  private maskSearchLeft = Number.POSITIVE_INFINITY;
  /** Per automaton state, the walk stamp that last collected it (distinct-target dedup). */
  private seenStamp = this.tables.int32(1024);
  private stamp = 0;
  private readonly collected: number[] = [];
  /** Lexer-level walks shared by all parser stacks; null when the automaton's shape is unknown. */
  private readonly lexer: LexerLevelWalks | null;
  /** Bounds each operation's walks (see work-meter.ts); the constraint state begins it. */
  readonly work = new WorkMeter();
  /**
   * Bytes of the masks and per-state records made so far (retainedBytes). Never lowered when a
   * shared mask leaves sharedMasks: the states that took it keep it alive.
   */
  private madeBytes = 0;

  constructor(
    readonly trie: TokenTrie,
    readonly automaton: CompletableAutomaton,
    /** Off: every state walks the trie with the automaton (the reference the tests compare with). */
    options: { lexerLevel?: boolean } = {},
  ) {
    this.words = maskWords(trie.vocabSize);
    this.lexer = options.lexerLevel === false ? null : LexerLevelWalks.over(trie, automaton, this.tables, this.work);
    this.bytesAreTokens = trie.everyByteIsToken && this.lexer !== null;
  }

  /** The mask of no token (made on first need: dead states and spent budgets are rare). */
  get emptyMask(): Uint32Array {
    return (this.empty ??= new Uint32Array(this.words));
  }

  get start(): number {
    return this.automaton.start;
  }

  /**
   * An estimate of the heap bytes it holds (the constraint cache's budget), erring high: every
   * mask and per-state record it made, its memo tables, and its lexer walks.
   */
  retainedBytes(): number {
    let bytes = MATCHER_SLAB_BYTES + this.madeBytes + (this.lexer?.retainedBytes() ?? 0);
    for (const map of [this.byteBound, this.boundNode, this.boundAt, this.greedyBytes, this.greedyCommits, this.greedyHint]) bytes += map.byteLength;
    bytes += this.finishMemo.byteLength + this.seenStamp.byteLength;
    bytes += (this.tokenBound.size + this.exactBounded.size + this.sharedMasks.size + this.budgetMasks.size) * 80;
    for (const cached of this.prefixCache.values()) bytes += 200 + cached.tokens.byteLength + cached.targets.byteLength;
    return bytes;
  }

  /** Whether masks go through the lexer-level cache (the automaton's shape was recognised). */
  get lexerLevel(): boolean {
    return this.lexer !== null;
  }

  /**
   * Walks ahead of need until `deadline` (performance.now() time), within WALK_AHEAD_MS over the
   * matcher's life: the start state's walk, then the trie walks of every scanner's token start and
   * of the token bodies one byte in (string contents, names, numbers), which the first states of
   * most sentences need and which cost the most (a few ms each at 152k tokens). The decode loop
   * runs it ahead of the logits (CompletionJob.aheadOfLogits), so first requests do not pay these
   * walks token by token, and the first mask does not wait for them. True when none are left.
   */
  walkAhead(deadline: number): boolean {
    if (this.walkAheadLeftMs <= 0) return true;
    const began = performance.now();
    this.allowedMask(this.start); // the first mask needs it anyway
    const done = this.lexer === null || this.lexer.walkAhead(Math.min(deadline, began + this.walkAheadLeftMs));
    this.walkAheadLeftMs = done ? 0 : this.walkAheadLeftMs - (performance.now() - began);
    return this.walkAheadLeftMs <= 0;
  }

  /** Every token the grammar allows in `state`, whatever the budget. Read only. */
  allowedMask(state: number): Uint32Array {
    return state < 0 ? this.emptyMask : this.edgeMask(this.edgesOf(state));
  }

  /** Distinct states the allowed tokens of `state` lead to (tests, budgets). */
  targetsOf(state: number): Int32Array {
    return state < 0 ? new Int32Array(0) : this.edgesOf(state).distinct;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.automaton.isComplete(state);
  }

  /**
   * The allowed tokens of `state` and their distinct target states. With the lexer-level walks a
   * state of several hypotheses is the union of its one-hypothesis states (hypotheses step
   * independently, so a token is allowed iff one of them allows it, and a budget is met iff one of
   * them meets it); its targets are theirs.
   */
  private edgesOf(state: number): StateEdges {
    let e = this.edges.get(state);
    if (e !== undefined) return e;
    this.work.charge(1);
    const collected = this.collected;
    const lexer = this.lexer;
    let mask: Uint32Array | null = null;
    let maskKey: string;
    let stack = -1, lex = -1;
    let parts: StateEdges[] | null = null;
    if (lexer === null) {
      collected.length = 0;
      mask = new Uint32Array(this.words);
      this.madeBytes += mask.byteLength;
      this.walkWhole(state, mask, ++this.stamp, null);
      maskKey = "";
    } else {
      const hyps = lexer.automaton.hypotheses(state);
      if (hyps.length > 2) {
        parts = [];
        for (let i = 0; i < hyps.length; i += 2) parts.push(this.edgesOf(lexer.automaton.withStack(hyps[i]!, [hyps[i + 1]!])));
        collected.length = 0;
        const stamp = ++this.stamp;
        for (const part of parts) for (let i = 0; i < part.distinct.length; i++) this.collect(part.distinct[i]!, stamp);
        maskKey = parts.map((part) => part.maskKey).sort().join("|");
      } else {
        // The mask follows from the root walk and, per commit group, the lexer state the next
        // token starts in (or none): states that agree there share one mask.
        collected.length = 0;
        stack = hyps[0]!;
        lex = hyps[1]!;
        const signature = this.signature;
        signature.length = 0;
        this.collectHypothesis(stack, lexer.setOfLexer(lex), ++this.stamp, signature);
        maskKey = signature.join(",");
      }
      mask = this.sharedMasks.get(maskKey) ?? null;
    }
    e = { mask, stack, lex, parts, maskKey, distinct: listOf(collected), nearestFirst: null, allFitFrom: Number.POSITIVE_INFINITY };
    this.edges.set(state, e);
    // The record, its target list (and the sorted copy a budget search may make), its key.
    this.madeBytes += 200 + 8 * e.distinct.length + 2 * maskKey.length;
    return e;
  }

  /** The allowed tokens of the state `e` was made for (see StateEdges.mask). */
  private edgeMask(e: StateEdges): Uint32Array {
    if (e.mask !== null) return e.mask;
    let shared = this.sharedMasks.get(e.maskKey);
    if (shared === undefined) {
      shared = new Uint32Array(this.words);
      this.madeBytes += shared.byteLength;
      if (e.parts !== null) for (const part of e.parts) orInto(shared, this.edgeMask(part));
      else this.applyHypothesis(e.stack, e.lex, shared, 0, null);
      this.shareMask(e.maskKey, shared);
    }
    e.mask = shared;
    return shared;
  }

  /** The targets nearest first (by lower bound), for the depth-first budget search; sorted once, on first need. */
  private targetsByDistance(e: StateEdges): Int32Array {
    if (e.nearestFirst === null) {
      const automaton = this.automaton;
      const n = e.distinct.length;
      const lb = new Float64Array(n);
      const order = new Int32Array(n);
      for (let i = 0; i < n; i++) {
        lb[i] = automaton.minBytesLowerBound(e.distinct[i]!);
        order[i] = i;
      }
      // Stable on ties, as the sort of the targets themselves was.
      order.sort((x, y) => lb[x]! - lb[y]! || x - y);
      const nearest = new Int32Array(n);
      for (let i = 0; i < n; i++) nearest[i] = e.distinct[order[i]!]!;
      e.nearestFirst = nearest;
    }
    return e.nearestFirst;
  }

  private shareMask(key: string, mask: Uint32Array): void {
    if (this.sharedMasks.size >= MAX_SHARED_MASKS) this.sharedMasks.delete(this.sharedMasks.keys().next().value!);
    this.sharedMasks.set(key, mask);
  }

  /** applyHypothesis without the mask: collects the targets and writes the mask's signature. */
  private collectHypothesis(stack: number, setId: number, stamp: number, signature: number[]): void {
    const lexer = this.lexer!;
    const walk = lexer.rootWalk(setId);
    // Sets with one walk (equivalent lexer behaviour) give one mask for the same commit outcomes.
    signature.push(walk.owner);
    const conts = walk.contSets;
    for (let i = 0; i < conts.length; i++) this.collect(lexer.stateOf(stack, conts[i]!), stamp);
    this.collectGroups(stack, walk.groups, stamp, signature);
  }

  private collectGroups(stack: number, groups: readonly CommitGroup[], stamp: number, signature: number[]): void {
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      const after = automaton.afterCommit(stack, group.commitKey);
      if (after < 0) {
        signature.push(-1);
        continue;
      }
      const hyp = automaton.hypotheses(after);
      signature.push(hyp[1]!);
      if (group.hasEnds) this.collect(after, stamp);
      if (group.nodes.length === 0 && group.loops.length === 0) continue;
      const below = lexer.subWalk(hyp[1]!, group);
      const nextStack = hyp[0]!;
      for (let i = 0; i < below.contSets.length; i++) this.collect(lexer.stateOf(nextStack, below.contSets[i]!), stamp);
      this.collectGroups(nextStack, below.groups, stamp, signature);
    }
  }

  /**
   * One hypothesis over its lexer state's cached walk: the commit-free tokens as they are (their
   * targets keep the stack), then each commit group once per stack: the parser takes the terminal
   * (or refuses it), and the walk goes on below the group's nodes from the new token's lexer state.
   * Without `fits`: sets every allowed token and collects targets; with it: only tokens whose
   * target is marked true.
   */
  private applyHypothesis(stack: number, lex: number, mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    const lexer = this.lexer!;
    const setId = lexer.setOfLexer(lex);
    const walk = lexer.rootWalk(setId);
    const conts = walk.contSets;
    if (fits === null) {
      if (walk.mask !== null) mask.set(walk.mask); // `mask` is fresh: all clear
      if (stamp !== 0) for (let i = 0; i < conts.length; i++) this.collect(lexer.stateOf(stack, conts[i]!), stamp);
    } else {
      const keep = new Set<number>();
      for (let i = 0; i < conts.length; i++) if (fits.get(lexer.stateOf(stack, conts[i]!)) === true) keep.add(conts[i]!);
      if (keep.size === conts.length) {
        if (walk.mask !== null) orInto(mask, walk.mask);
      } else if (keep.size > 0) lexer.maskOf(setId, keep, mask);
    }
    this.applyGroups(stack, walk.groups, mask, stamp, fits);
  }

  private applyGroups(stack: number, groups: readonly CommitGroup[], mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      const after = automaton.afterCommit(stack, group.commitKey);
      if (after < 0) continue;
      if (fits === null) {
        setTokenList(mask, group.deadEnds);
        if (group.hasEnds && stamp !== 0) this.collect(after, stamp);
      } else if (fits.get(after) === true) {
        setTokenList(mask, group.deadEnds);
        setTokenList(mask, group.aliveEnds);
        const ranges = group.aliveRanges;
        for (let r = 0; r < ranges.length; r += 2) setTokenRange(mask, this.trie.tokenIds, ranges[r]!, ranges[r + 1]!);
      }
      if (group.nodes.length === 0 && group.loops.length === 0) continue;
      const hyp = automaton.hypotheses(after);
      const below = lexer.subWalk(hyp[1]!, group);
      const nextStack = hyp[0]!;
      for (let i = 0; i < below.contSets.length; i++) {
        if (fits !== null && fits.get(lexer.stateOf(nextStack, below.contSets[i]!)) !== true) continue;
        setTokenList(mask, below.tokensByCont[i]!);
        if (fits === null && stamp !== 0) this.collect(lexer.stateOf(nextStack, below.contSets[i]!), stamp);
      }
      this.applyGroups(nextStack, below.groups, mask, stamp, fits);
    }
  }

  private collect(target: number, stamp: number): void {
    if (target >= this.seenStamp.length) this.growSeen(target);
    if (this.seenStamp[target] !== stamp) {
      this.seenStamp[target] = stamp;
      this.collected.push(target);
    }
  }

  private growSeen(state: number): void {
    let n = this.seenStamp.length;
    while (n <= state) n *= 2;
    this.seenStamp = grownTo(this.seenStamp, n);
  }

  /**
   * The reference walk without the lexer-level cache: the whole trie with the automaton. Without
   * `fits`: sets the bits of reachable tokens and collects their targets; with it: sets the bits
   * of reachable tokens whose target is marked true.
   */
  private walkWhole(state: number, mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    if (fits === null) walkTrie(this.trie, this.automaton, state, 0, mask, (_from, _to, target) => this.collect(target, stamp), this.work);
    else {
      const tokenIds = this.trie.tokenIds;
      walkTrie(this.trie, this.automaton, state, 0, undefined, (from, to, target) => {
        if (fits.get(target) === true) setTokenRange(mask, tokenIds, from, to);
      });
    }
  }

  /** State after the token, or -1 when the grammar does not allow it here. */
  advance(state: number, token: number): number {
    if (state < 0 || !this.trie.isGenerable(token)) return -1;
    const { offsets, data } = this.trie;
    let s = state;
    for (let i = offsets[token]!, end = offsets[token + 1]!; i < end && s >= 0; i++) s = this.automaton.step(s, data[i]!);
    return s;
  }

  /**
   * Healing: the tokens that begin with `prefix` and whose remaining bytes the grammar allows at
   * the start, with their target states. Cached: most prompts end in one of a few tokens.
   */
  prefixEdges(prefix: Uint8Array): { tokens: Int32Array; targets: Int32Array } {
    const key = String.fromCharCode(...prefix);
    let hit = this.prefixCache.get(key);
    if (hit !== undefined) return hit;
    const trie = this.trie;
    const node = trie.findNode(prefix);
    const tokens: number[] = [];
    const targets: number[] = [];
    if (node >= 0) {
      const startAfterPrefix = this.start;
      const from = trie.tokenStart[node]!;
      const to = trie.tokenStart[node + trie.subtreeSize[node]!]!;
      for (let k = from; k < to; k++) {
        const id = trie.tokenIds[k]!;
        const target = this.advanceBytes(startAfterPrefix, trie.tokenBytes(id).subarray(prefix.length));
        if (target >= 0) {
          tokens.push(id);
          targets.push(target);
        }
      }
    }
    hit = { tokens: listOf(tokens), targets: listOf(targets) };
    if (this.prefixCache.size >= 256) this.prefixCache.delete(this.prefixCache.keys().next().value!);
    this.prefixCache.set(key, hit);
    return hit;
  }

  /** State after raw bytes from `state` (healing: the bytes after a forced prefix), or -1. */
  advanceBytes(state: number, bytes: Uint8Array): number {
    let s = state;
    for (let i = 0; i < bytes.length && s >= 0; i++) s = this.automaton.step(s, bytes[i]!);
    return s;
  }

  /**
   * Tokens that surely suffice from `state` (Infinity: unknown), from a known completing byte
   * string: the fewest tokens that spell it. The automaton is byte-level, so any segmentation of
   * a valid byte continuation into tokens is a valid token path. The first answer comes from a
   * cheap greedy completion (enough whenever the budget is roomy, the common case); `exact` asks
   * for the shortest completing bytes too (A*), once per state, when the budget is tight.
   */
  private tokenUpperBound(state: number, exact: boolean): number {
    let known = this.tokenBound.get(state);
    if (known === undefined) {
      const path = this.lexer === null ? null : this.greedyCompletionOf(state);
      known = path === null ? Number.POSITIVE_INFINITY : this.boundAlong(state, path);
      if (!this.tokenBound.has(state)) this.tokenBound.set(state, known);
    }
    if (!exact || this.exactBounded.has(state)) return known;
    this.exactBounded.add(state);
    const path = (this.lexer === null ? null : this.terminalLevelCompletion(state, 2000)) ?? this.shortestCompletion(state, 5000);
    return path === null ? known : Math.min(known, this.boundAlong(state, path));
  }

  /** The greedy completion's bytes, spelled out from the memoized chain (null: none). */
  private greedyCompletionOf(state: number): Uint8Array | null {
    const length = this.greedyLength(state);
    if (length === Number.POSITIVE_INFINITY) return null;
    const out = new Uint8Array(length);
    for (let s = state, at = 0; at < length; ) {
      const step = this.greedySteps.get(s)!;
      out.set(step.bytes, at);
      at += step.bytes.length;
      s = step.next;
    }
    return out;
  }

  /** Bytes that surely suffice from `state` (Infinity: unknown): the greedy completion's length. */
  private byteBoundOf(state: number): number {
    const known = this.byteBound.get(state);
    if (known !== IntMap.MISSING) return known < 0 ? Number.POSITIVE_INFINITY : known;
    const length = this.greedyLength(state);
    if (length === Number.POSITIVE_INFINITY) {
      this.byteBound.set(state, -1);
      return length;
    }
    this.byteBound.set(state, length);
    this.boundNode.set(state, state);
    this.boundAt.set(state, 0);
    return length;
  }

  /**
   * The greedy completion's length from `state` (Infinity: it dead-ends, loops or runs past
   * GREEDY_MAX_COMMITS): its steps until a state already measured (or complete), then the
   * lengths of all the states walked, backwards.
   */
  private greedyLength(state: number): number {
    const lengths = this.greedyBytes;
    const commits = this.greedyCommits;
    const automaton = this.automaton;
    let tail = lengths.get(state);
    if (tail !== IntMap.MISSING) return tail < 0 ? Number.POSITIVE_INFINITY : tail;
    const walk = this.greedyWalk;
    walk.length = 0;
    let tailCommits = 0;
    for (let s = state; ; ) {
      if (automaton.isComplete(s)) {
        tail = 0;
        break;
      }
      const known = lengths.get(s);
      if (known !== IntMap.MISSING) {
        tail = known;
        tailCommits = commits.get(s);
        break;
      }
      const step = walk.length < GREEDY_MAX_COMMITS ? this.greedyStep(s) : null;
      if (step === null) {
        tail = -1;
        break;
      }
      walk.push(s);
      s = step.next;
    }
    for (let i = walk.length - 1; i >= 0; i--) {
      const s = walk[i]!;
      if (tail >= 0) {
        tail += this.greedySteps.get(s)!.bytes.length;
        if (++tailCommits > GREEDY_MAX_COMMITS) tail = -1;
      }
      lengths.set(s, tail);
      commits.set(s, tailCommits);
    }
    return tail < 0 ? Number.POSITIVE_INFINITY : tail;
  }

  /**
   * Called when `state` is current: the state one byte along its bound's bytes gets that bound
   * less one. A token allowed because its target's byte bound fit leaves a state where at least
   * that byte's own token still fits, so a mask never comes out empty because of this bound.
   */
  private carryByteBound(state: number): void {
    let node = this.boundNode.get(state);
    if (node === IntMap.MISSING) return;
    let at = this.boundAt.get(state);
    let step = this.greedySteps.get(node);
    // Steps of no bytes (a terminal already lexed, only committed) are passed over.
    while (step !== undefined && step !== null && at >= step.bytes.length) {
      node = step.next;
      at = 0;
      step = this.greedySteps.get(node);
    }
    if (step === undefined || step === null) return;
    const next = this.automaton.step(state, step.bytes[at]!);
    if (next < 0) return;
    const left = this.byteBound.get(state) - 1;
    const old = this.byteBound.get(next);
    if (old >= 0 && old <= left) return; // MISSING and -1 (Infinity) are negative
    this.byteBound.set(next, left);
    const stepEnds = at + 1 >= step.bytes.length;
    this.boundNode.set(next, stepEnds ? step.next : node);
    this.boundAt.set(next, stepEnds ? 0 : at + 1);
  }

  /**
   * The fewest tokens spelling `path` (a completion of `state`), recorded as a bound for `state`
   * and for the states at the spelling's token boundaries: after its first token k-1 tokens
   * suffice, and so on. Then a token allowed because of this bound leaves a state whose own bound
   * agrees, and the next mask cannot come out empty because a later search gave up.
   */
  private boundAlong(state: number, path: Uint8Array): number {
    const cuts = this.fewestTokensSpelling(path);
    if (cuts === null) return Number.POSITIVE_INFINITY;
    let s = state;
    for (let i = 0, at = 0; i < cuts.length; i++) {
      const left = cuts.length - i;
      const old = this.tokenBound.get(s);
      if (old === undefined || old > left) this.tokenBound.set(s, left);
      for (const end = cuts[i]!; at < end; at++) s = this.automaton.step(s, path[at]!);
    }
    return cuts.length;
  }

  /**
   * One step of the greedy completion (some completing byte string of a state, found without
   * search): from the configuration, the terminal commit whose shortest bytes plus the
   * automaton's lower bound after it is least (`lexer.tokenEnds`, afterCommit). Memoized per
   * configuration; null when it dead-ends (then A* decides).
   */
  private greedyStep(state: number): { bytes: Uint8Array; next: number } | null {
    const known = this.greedySteps.get(state);
    if (known !== undefined) return known;
    this.work.charge(1);
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    const hyps = automaton.hypotheses(state);
    // No commit can cost less than the state's own lower bound: one that meets it is chosen at
    // once. The commit chosen last time from the same lexer state is tried first (the next
    // state down a chain usually repeats it: a closing bracket, the end of a string).
    const floor = automaton.minBytesLowerBound(state);
    let bestCost = Number.POSITIVE_INFINITY;
    let bestBytes: Uint8Array | null = null;
    let bestStack = -1;
    let bestKey = -1;
    let bestLex = -1;
    let bestIndex = -1;
    for (let h = 0; h < hyps.length && bestCost > floor; h += 2) {
      const lex = hyps[h + 1]!;
      const ends = lexer.tokenEnds(lex);
      const n = ends.keys.length;
      const hint = this.greedyHint.get(lex);
      const first = hint === IntMap.MISSING || hint >= n ? 0 : hint;
      for (let j = 0; j < n && bestCost > floor; j++) {
        const i = j === 0 ? first : j <= first ? j - 1 : j;
        const bytes = ends.bytes[i]!;
        if (bytes.length >= bestCost) continue;
        const cost = bytes.length + automaton.lowerBoundAfterCommit(hyps[h]!, ends.keys[i]!);
        if (cost < bestCost) {
          bestCost = cost;
          bestBytes = bytes;
          bestStack = hyps[h]!;
          bestKey = ends.keys[i]!;
          bestLex = lex;
          bestIndex = i;
        }
      }
    }
    if (bestLex >= 0) this.greedyHint.set(bestLex, bestIndex);
    // Only the chosen commit's state is made (a dead one has an infinite bound, never chosen).
    const best = bestBytes === null ? null : { bytes: bestBytes, next: automaton.afterCommit(bestStack, bestKey) };
    this.greedySteps.set(state, best);
    return best;
  }

  /** Token boundaries (end offsets) of the fewest-token spelling of `bytes`; null when none. */
  private fewestTokensSpelling(bytes: Uint8Array): number[] | null {
    const n = bytes.length;
    const best = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
    const from = new Int32Array(n + 1);
    best[0] = 0;
    const trie = this.trie;
    const tokenStart = trie.tokenStart;
    for (let i = 0; i < n; i++) {
      if (best[i] === Number.POSITIVE_INFINITY) continue;
      let p = 0;
      for (let j = i; j < n; j++) {
        p = trie.child(p, bytes[j]!);
        if (p < 0) break;
        if (tokenStart[p + 1]! > tokenStart[p]! && best[i]! + 1 < best[j + 1]!) {
          best[j + 1] = best[i]! + 1;
          from[j + 1] = i;
        }
      }
    }
    if (best[n] === Number.POSITIVE_INFINITY) return null;
    const cuts: number[] = [];
    for (let j = n; j > 0; j = from[j]!) cuts.push(j);
    return cuts.reverse();
  }

  /**
   * The shortest byte string from `state` to a complete sentence (null: none found within
   * `maxExpansions`): A* with the automaton's lower bound as heuristic. Each state's bytes
   * are grouped by their lexer-level effect, so the many bytes that merely extend a
   * string or a name cost one step.
   */
  private shortestCompletion(state: number, maxExpansions: number): Uint8Array | null {
    const automaton = this.automaton;
    const lexer = this.lexer;
    const via = new Map<number, number>(); // state → previous state * 256 + byte
    const codes: number[] = [];
    const found = searchCheapestGoal([state], {
      lowerBound: (s) => automaton.minBytesLowerBound(s),
      isGoal: (s) => automaton.isComplete(s),
      expand: (s, relax) => {
        this.work.charge(256);
        const hyps = lexer === null ? null : lexer.automaton.hypotheses(s);
        codes.length = 0;
        for (let b = 0; b < 256; b++) {
          if (hyps !== null && hyps.length === 2) {
            // Without a commit, bytes with the same lexer successor lead to the same state.
            const code = lexer!.stepCode(lexer!.setOfLexer(hyps[1]!), b);
            if (code === 0) continue;
            if ((code & COMMIT) === 0) {
              if (codes.includes(code)) continue;
              codes.push(code);
            }
          }
          const ns = automaton.step(s, b);
          if (ns >= 0 && relax(ns, 1)) via.set(ns, s * 256 + b);
        }
      },
    }, maxExpansions);
    if (found === null) return null;
    const path = new Uint8Array(found.cost);
    for (let at = found.goal, i = found.cost - 1; i >= 0; i--) {
      const link = via.get(at)!;
      path[i] = link & 0xff;
      at = (link - (link & 0xff)) / 256;
    }
    return path;
  }

  /**
   * The shortest completing byte string found by A* over terminals instead of bytes: from a
   * hypothesis, the lexer-level search (`lexer.tokenEnds`, cached per lexer state) gives the
   * shortest bytes that end each terminal the token in progress can become; the parser takes it
   * (afterCommit) and the next token starts. Every step is a real hypothesis transition, so the
   * bytes are a real completion. null when none is found within `maxExpansions` configurations.
   */
  private terminalLevelCompletion(state: number, maxExpansions: number): Uint8Array | null {
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    const via = new Map<number, { from: number; bytes: Uint8Array }>();
    const hyps = automaton.hypotheses(state);
    const starts: number[] = [];
    for (let i = 0; i < hyps.length; i += 2) starts.push(hyps.length === 2 ? state : automaton.withStack(hyps[i]!, [hyps[i + 1]!]));
    const found = searchCheapestGoal(starts, {
      lowerBound: (c) => automaton.minBytesLowerBound(c),
      isGoal: (c) => automaton.isComplete(c),
      expand: (c, relax) => {
        const h = automaton.hypotheses(c);
        const ends = lexer.tokenEnds(h[1]!);
        this.work.charge(ends.keys.length);
        for (let i = 0; i < ends.keys.length; i++) {
          const next = automaton.afterCommit(h[0]!, ends.keys[i]!);
          if (next >= 0 && relax(next, ends.bytes[i]!.length)) via.set(next, { from: c, bytes: ends.bytes[i]! });
        }
      },
    }, maxExpansions);
    if (found === null) return null;
    const out = new Uint8Array(found.cost);
    for (let at = found.goal, o = found.cost; via.has(at); at = via.get(at)!.from) {
      const bytes = via.get(at)!.bytes;
      o -= bytes.length;
      out.set(bytes, o);
    }
    return out;
  }

  /** Whether a complete sentence is reachable from `state` within `budget` tokens. */
  canAcceptWithin(state: number, budget: number): boolean {
    const effort = Math.min(SEARCH_LIMIT, this.maskSearchLeft);
    this.searchLeft = effort;
    this.searchGaveUp = false;
    const found = this.finishable(state, budget);
    this.maskSearchLeft -= effort - Math.max(0, this.searchLeft);
    return found;
  }

  private finishable(state: number, budget: number): boolean {
    if (state < 0) return false;
    this.work.charge(1);
    if (this.automaton.isComplete(state)) return true;
    if (budget <= 0) return false;
    const lower = this.automaton.minBytesLowerBound(state);
    if (lower === Infinity || lower > budget * this.trie.maxTokenLength) return false;
    if (this.bytesAreTokens && this.byteBoundOf(state) <= budget) return true;
    if (this.tokenUpperBound(state, false) <= budget) return true;
    const key = state * 65536 + Math.min(budget, BUDGET_KEY_CAP);
    const memo = this.finishMemo.get(key);
    if (memo !== IntMap.MISSING) return memo === 1;
    // The exact bound (an A*, once per state) is search effort too.
    if (this.searchLeft-- <= 0) {
      this.searchGaveUp = true;
      return false;
    }
    if (this.tokenUpperBound(state, true) <= budget) return true;
    let found = false;
    const distinct = this.targetsByDistance(this.edgesOf(state));
    for (let i = 0; i < distinct.length && !found; i++) found = this.finishable(distinct[i]!, budget - 1);
    // A give-up answer is not memoized as "no": another query with more effort may find a way.
    if (found || !this.searchGaveUp) this.finishMemo.set(key, found ? 1 : 0);
    return found;
  }

  /** Fewest tokens to a complete sentence, searched up to `cap` (Infinity beyond it). */
  minTokensToAccept(state: number, cap: number): number {
    for (let k = 0; k <= cap; k++) if (this.canAcceptWithin(state, k)) return k;
    return Number.POSITIVE_INFINITY;
  }

  /**
   * A proven lower bound on the tokens of every complete sentence from `state`: one more than the
   * largest budget up to `cap` that a finished search (not one that gave up) showed too small.
   * For the 422 message, which must not overstate what a grammar needs.
   */
  minTokensAtLeast(state: number, cap: number): number {
    // One effort budget for all the budgets tried (a 422 should come back fast); past it only
    // the cheap answers remain, and a query that gives up proves nothing.
    const outer = this.maskSearchLeft;
    if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = MIN_TOKENS_SEARCH_LIMIT;
    try {
      let atLeast = 0;
      for (let k = 0; k <= cap; k++) {
        if (this.canAcceptWithin(state, k)) return k;
        if (!this.searchGaveUp) atLeast = k + 1;
      }
      return atLeast;
    } finally {
      if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = outer;
    }
  }

  /** Tokens allowed in `state` with `remaining` tokens left (this one included). Read only. */
  mask(state: number, remaining: number): Uint32Array {
    if (state < 0 || remaining <= 0) return this.emptyMask;
    if (this.maskSearchLeft !== Number.POSITIVE_INFINITY) return this.boundedMask(state, remaining);
    this.maskSearchLeft = MASK_SEARCH_LIMIT;
    try {
      return this.boundedMask(state, remaining);
    } finally {
      this.maskSearchLeft = Number.POSITIVE_INFINITY;
    }
  }

  private boundedMask(state: number, remaining: number): Uint32Array {
    if (this.bytesAreTokens) this.carryByteBound(state);
    const e = this.edgesOf(state);
    const limit = remaining - 1;
    if (limit >= e.allFitFrom) return this.edgeMask(e);
    let all = true;
    for (let i = 0; i < e.distinct.length && all; i++) if (!this.canAcceptWithin(e.distinct[i]!, limit)) all = false;
    if (all) {
      e.allFitFrom = limit;
      return this.edgeMask(e);
    }
    const key = state * 65536 + Math.min(limit, BUDGET_KEY_CAP);
    let mask = this.budgetMasks.get(key);
    if (mask !== undefined) return mask;
    mask = this.budgetMask(state, e, limit);
    this.budgetMasks.set(key, mask);
    return mask;
  }

  /** The walk again, keeping the tokens whose target can still finish within `limit` tokens. */
  private budgetMask(state: number, e: StateEdges, limit: number): Uint32Array {
    const mask = new Uint32Array(this.words);
    this.madeBytes += mask.byteLength;
    const lexer = this.lexer;
    if (lexer !== null) {
      const hyps = lexer.automaton.hypotheses(state);
      if (hyps.length > 2) {
        // Union of the hypotheses' own budget masks (see edgesOf).
        for (let i = 0; i < hyps.length; i += 2) {
          const part = this.mask(lexer.automaton.withStack(hyps[i]!, [hyps[i + 1]!]), limit + 1);
          orInto(mask, part);
        }
        return mask;
      }
    }
    const fits = new Map<number, boolean>();
    for (let i = 0; i < e.distinct.length; i++) fits.set(e.distinct[i]!, this.canAcceptWithin(e.distinct[i]!, limit));
    if (lexer === null) this.walkWhole(state, mask, 0, fits);
    else {
      const hyps = lexer.automaton.hypotheses(state);
      this.applyHypothesis(hyps[0]!, hyps[1]!, mask, 0, fits);
    }
    return mask;
  }

  hasAnyToken(state: number, remaining: number): boolean {
    const mask = this.mask(state, remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Lexer-level walks (XGrammar's context-independent tokens, for this automaton).
//
// A state of the grammar stage's GrammarAutomaton is a set of hypotheses (parser stack, lexer
// state), and step() treats each hypothesis on its own. While a hypothesis only extends its token
// in progress (no terminal is committed), what happens depends on its lexer state alone
// (`lexerStep`), not on the stack. So one trie walk per tuple of lexer states (one entry per
// hypothesis) serves every set of stacks: it gives the tokens whose bytes never commit a terminal
// (allowed whatever the stack) and the trie nodes where a commit happens; only those subtrees
// (after a closing quote, a delimiter...) are walked with the real automaton. Inside a JSON string
// that turns a walk over the whole 152k vocabulary per parser stack into a lookup.
// test/cfg-matcher.test.ts compares both ways mask for mask.

/** The grammar stage's stack-independent view of its states (GrammarAutomaton has it). */
export interface LexerLevelAutomaton extends CompletableAutomaton {
  /** (stack, lexer state) pairs of a state. */
  hypotheses(state: number): Int32Array;
  /** (continued lexer state + 1, or 0) | LEXER_COMMITS when a terminal may end at the byte. */
  lexerStep(lex: number, byte: number): number;
  /** Lexer state after an ignored terminal ends at the byte (same stack), or -1. */
  lexerRestart(lex: number, byte: number): number;
  /** Bytes of ignored run behind a lexer state (see GrammarAutomaton.lexerIgnoredRun). */
  lexerIgnoredRun(lex: number): number;
  /** Ending the text here: the terminal fed (≥ 0), LEXER_END_KEEPS_STACK, or -1 (cannot end). */
  lexerEndKey(lex: number): number;
  /** The lexer state at a token start of each scanner. */
  tokenStartLexers(): Int32Array;
  /** One byte per class of bytes that step the lexer state alike. */
  lexerByteReps(lex: number): Uint8Array;
  /** Per byte, a label equal for the bytes that step the lexer state alike. */
  lexerByteLabels(lex: number): Uint8Array;
  /** The terminal commit at the byte, as a key for afterCommit; -1 when none. */
  lexerCommitKey(lex: number, byte: number): number;
  /** The one-hypothesis state after the commit on `stack`; -1 when the parser refuses it. */
  afterCommit(stack: number, commitKey: number): number;
  /** minBytesLowerBound of afterCommit's state, without making it (Infinity when refused). */
  lowerBoundAfterCommit(stack: number, commitKey: number): number;
  /** The state of hypotheses (stack, l) for each lexer state l. */
  withStack(stack: number, lexers: readonly number[]): number;
}

function isLexerLevel(a: CompletableAutomaton): a is LexerLevelAutomaton {
  const l = a as Partial<LexerLevelAutomaton>;
  return typeof l.hypotheses === "function" && typeof l.lexerStep === "function" && typeof l.lexerRestart === "function" && typeof l.lexerByteReps === "function" && typeof l.lexerByteLabels === "function" && typeof l.tokenStartLexers === "function" && typeof l.lexerEndKey === "function" && typeof l.lexerIgnoredRun === "function" && typeof l.lexerCommitKey === "function" && typeof l.afterCommit === "function" && typeof l.lowerBoundAfterCommit === "function" && typeof l.withStack === "function";
}

/** Trie nodes where one terminal commit (same terminal, same inherited constraints) happens. */
interface CommitGroup {
  /** The automaton's lexerCommitKey: what afterCommit() needs with a stack. */
  readonly commitKey: number;
  /** Some token ends at a node of the group (so the state after the commit is a target). */
  readonly hasEnds: boolean;
  /** Tokens ending at a node of the group where nothing else continues (needed whatever the budget). */
  readonly deadEnds: Int32Array;
  /** Tokens ending at a node of the group that the commit-free walk allows too (budget masks only). */
  readonly aliveEnds: Int32Array;
  // Node lists are plain arrays: short, and a typed array each cost more to make than to read.
  /** Ranges [from, to) of trie token order, each ending at group nodes (budget masks only). */
  readonly aliveRanges: readonly number[];
  /** Single commit nodes: the next token starts at their children. */
  readonly nodes: readonly number[];
  /** Subtree roots p where every node strictly below p commits: the next token starts two levels down. */
  readonly loops: readonly number[];
  /**
   * Walks below the nodes, per lexer-state set after the commit: most groups meet one set, kept
   * here (belowSet -1 until then); the others in `moreBelow`.
   */
  belowSet: number;
  belowWalk: LexerWalk | null;
  moreBelow: Map<number, LexerWalk> | null;
}

interface LexerWalk {
  /** The set this walk was made for (a walk taken over from an equivalent set keeps its maker's). */
  readonly owner: number;
  /** Root walks: the commit-free tokens (allowed whatever the stack); null: none, or not a root walk. */
  readonly mask: Uint32Array | null;
  /** Distinct lexer-state sets at the ends of commit-free tokens. */
  readonly contSets: readonly number[];
  /** Walks below commit nodes: the commit-free tokens per entry of contSets. */
  readonly tokensByCont: Int32Array[];
  readonly groups: CommitGroup[];
}

/** A commit group while its walk goes on; its lists are made on first need. */
interface GroupBuilder {
  hasEnds: boolean;
  nodes: number[] | null;
  loops: number[] | null;
  dead: number[] | null;
  alive: number[] | null;
  ranges: number[] | null;
}

/** The builder of `key`'s group among a walk's groups (a walk has a few: a linear search). */
function builderOf(keys: number[], builders: GroupBuilder[], key: number): GroupBuilder {
  for (let i = 0; i < keys.length; i++) if (keys[i] === key) return builders[i]!;
  const g: GroupBuilder = { hasEnds: false, nodes: null, loops: null, dead: null, alive: null, ranges: null };
  keys.push(key);
  builders.push(g);
  return g;
}

/** The node list of a group without such nodes (shared; read only). */
const NO_NODES: readonly number[] = Object.freeze([]);

/** Set in a lexer set step code, as in the grammar stage's lexer step codes. */
const COMMIT = LEXER_COMMITS;
const UNKNOWN = -1;


/**
 * Trie walks over sets of lexer states (a hypothesis's token in progress, and the fresh tokens
 * that ignored terminals ending on the way start), cached per set and shared by every stack.
 * Commits are not followed: the walk records where each kind of commit happens (CommitGroup), and
 * the walk below a group's nodes from the next token's lexer state is cached in its turn.
 */
class LexerLevelWalks {
  private readonly roots = new Map<number, LexerWalk>();
  /** Sets with a walk of their own, by behaviourSignature: where rootWalk looks for an equivalent. */
  private readonly rootsBySignature = new Map<string, number[]>();
  /** Walked sets not yet filed by signature (see rootWalk). */
  private readonly unsigned: number[] = [];
  private readonly endKeysOf = new Map<number, string>();
  private readonly setOfLex = new Map<number, number>();
  /** stack * 2^20 + set → state: interning a set of several hypotheses sorts and hashes its pairs. */
  private readonly stateMemo: IntMap;
  private readonly setMembers: number[][] = [];
  private readonly setIds = new Map<string, number>();
  private setNext: Int32Array;
  /** By slot (set * 256 + byte). */
  private readonly commitKeys = new DenseTable<Int32Array>();
  private readonly ends = new Map<number, { keys: Int32Array; bytes: Uint8Array[] }>();
  private readonly firstBytesOf = new Map<number, Uint32Array>();
  /** Per set: loop bytes computed (1), the 8 words of loopBytes, the loop's step code. */
  private loopKnown: Uint8Array;
  private loopWords: Uint32Array;
  private loopCodes: Int32Array;
  private loopsOnUtf8: Uint8Array;
  private readonly loopKeys = new Map<number, Int32Array>();
  private readonly atDepth: Int32Array;
  /** Where a sub-walk's tokens start (scratch: walkFrom reads it before the next sub-walk). */
  private readonly starts: number[] = [];
  /** Per set: the walk stamp that last met it, and its slot in that walk's contSets. */
  private seen: Int32Array;
  private seenSlot: Int32Array;
  private stamp = 0;

  /** `tables`: the matcher's slab, for the first tables below. */
  private constructor(
    private readonly trie: TokenTrie,
    readonly automaton: LexerLevelAutomaton,
    private readonly tables: TableSlab,
    private readonly work: WorkMeter,
  ) {
    this.stateMemo = new IntMap(MEMO_CAPACITY, tables);
    this.setNext = tables.int32(256 * 8, UNKNOWN);
    this.loopKnown = tables.uint8(64);
    this.loopWords = tables.uint32(64 * 8);
    this.loopCodes = tables.int32(64);
    this.loopsOnUtf8 = tables.uint8(64);
    this.seen = tables.int32(64);
    this.seenSlot = tables.int32(64);
    this.atDepth = tables.int32(trie.maxTokenLength + 2);
  }

  /** Bytes of the walks made so far (retainedBytes). */
  private madeBytes = 0;
  private commitKeysMade = 0;

  /** An estimate of the heap bytes its walks and memos hold, erring high. */
  retainedBytes(): number {
    let bytes = this.madeBytes + this.stateMemo.byteLength + this.setNext.byteLength;
    bytes += this.loopKnown.byteLength + this.loopWords.byteLength + this.loopCodes.byteLength + this.loopsOnUtf8.byteLength;
    bytes += this.seen.byteLength + this.seenSlot.byteLength;
    let members = 0;
    for (const m of this.setMembers) members += m.length;
    // A set: its member list and key, and its 256 slots of commit keys (DenseTable pointers).
    bytes += this.setMembers.length * (240 + 256 * 8) + members * 16;
    bytes += (this.roots.size + this.endKeysOf.size + this.setOfLex.size + this.ends.size + this.loopKeys.size) * 120;
    bytes += this.firstBytesOf.size * 120 + this.commitKeysMade * 80;
    return bytes;
  }

  static over(trie: TokenTrie, automaton: CompletableAutomaton, tables: TableSlab, work: WorkMeter): LexerLevelWalks | null {
    return isLexerLevel(automaton) ? new LexerLevelWalks(trie, automaton, tables, work) : null;
  }

  /** The set holding just one lexer state. */
  setOfLexer(lex: number): number {
    let id = this.setOfLex.get(lex);
    if (id === undefined) {
      id = this.internSet([lex]);
      this.setOfLex.set(lex, id);
    }
    return id;
  }

  /** The automaton state of the hypotheses (stack, l) for l in the set. */
  stateOf(stack: number, setId: number): number {
    const members = this.setMembers[setId]!;
    if (members.length === 1 || setId >= 0x100000) return this.automaton.withStack(stack, members);
    const key = stack * 0x100000 + setId;
    let state = this.stateMemo.get(key);
    if (state === IntMap.MISSING) {
      state = this.automaton.withStack(stack, members);
      this.stateMemo.set(key, state);
    }
    return state;
  }

  /** Next set + 1 (0: no token in progress can continue), | COMMIT when a terminal may end here. */
  stepCode(setId: number, byte: number): number {
    const slot = setId * 256 + byte;
    const hit = this.setNext[slot]!;
    if (hit !== UNKNOWN) return hit;
    const automaton = this.automaton;
    const members = this.setMembers[setId]!;
    let commit = 0;
    const next: number[] = [];
    for (let j = 0; j < members.length; j++) {
      const code = automaton.lexerStep(members[j]!, byte);
      commit |= code & COMMIT;
      const cont = (code & ~COMMIT) - 1;
      if (cont >= 0 && !next.includes(cont)) next.push(cont);
      const restarted = automaton.lexerRestart(members[j]!, byte);
      if (restarted >= 0 && !next.includes(restarted)) next.push(restarted);
    }
    const result = commit | (next.length > 0 ? this.internSet(next.sort((a, b) => a - b)) + 1 : 0);
    this.setNext[slot] = result;
    if (members.length === 1) {
      // The bytes the member's lexer cannot tell from this one step the set alike: a walk's first
      // and loop bytes ask for all 256, and most sets have a handful of classes.
      const labels = automaton.lexerByteLabels(members[0]!);
      const label = labels[byte]!;
      const base = setId * 256;
      for (let b = 0; b < 256; b++) if (labels[b] === label) this.setNext[base + b] = result;
    }
    return result;
  }

  /** The distinct commit keys of the set's members at `byte`. */
  private commitKeysAt(setId: number, byte: number): Int32Array {
    const slot = setId * 256 + byte;
    let keys = this.commitKeys.get(slot);
    if (keys === undefined) {
      const out: number[] = [];
      for (const m of this.setMembers[setId]!) {
        const k = this.automaton.lexerCommitKey(m, byte);
        if (k >= 0 && !out.includes(k)) out.push(k);
      }
      keys = listOf(out);
      this.commitKeys.set(slot, keys);
      this.commitKeysMade++;
    }
    return keys;
  }

  private internSet(members: number[]): number {
    const key = members.join(".");
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.setMembers.length;
      this.setMembers.push(members);
      this.setIds.set(key, id);
      if ((id + 1) * 256 > this.setNext.length) this.setNext = grownTo(this.setNext, this.setNext.length * 2, UNKNOWN);
    }
    return id;
  }

  /**
   * For a lexer state: each terminal commit reachable by extending the token (and the fresh tokens
   * after ignored ones), with the shortest bytes that get there. Breadth-first over lexer states,
   * which do not depend on the stack, so it is cached per lexer state.
   */
  tokenEnds(lex: number): { keys: Int32Array; bytes: Uint8Array[] } {
    let hit = this.ends.get(lex);
    if (hit !== undefined) return hit;
    const automaton = this.automaton;
    const prev = new Map<number, number>([[lex, -1]]); // lexer state → parent * 256 + byte
    const queue = [lex];
    const keys: number[] = [];
    const bytes: Uint8Array[] = [];
    const pathTo = (x: number, last: number): Uint8Array => {
      const rev = [last];
      for (let link = prev.get(x)!; link >= 0; link = prev.get((link - (link & 0xff)) / 256)!) rev.push(link & 0xff);
      return Uint8Array.from(rev.reverse());
    };
    for (let qi = 0; qi < queue.length && qi < MAX_TOKEN_END_STATES; qi++) {
      const x = queue[qi]!;
      const reps = automaton.lexerByteReps(x);
      this.work.charge(reps.length);
      for (let r = 0; r < reps.length; r++) {
        const b = reps[r]!;
        const code = automaton.lexerStep(x, b);
        if ((code & COMMIT) !== 0) {
          const k = automaton.lexerCommitKey(x, b);
          if (!keys.includes(k)) {
            keys.push(k);
            bytes.push(pathTo(x, b));
          }
        }
        const cont = (code & ~COMMIT) - 1;
        if (cont >= 0 && !prev.has(cont)) {
          prev.set(cont, x * 256 + b);
          queue.push(cont);
        }
        const restarted = automaton.lexerRestart(x, b);
        if (restarted >= 0 && !prev.has(restarted)) {
          prev.set(restarted, x * 256 + b);
          queue.push(restarted);
        }
      }
    }
    hit = { keys: listOf(keys), bytes };
    this.ends.set(lex, hit);
    return hit;
  }

  /** The walks of every token start and body, until `deadline`; true when all are done. */
  walkAhead(deadline: number): boolean {
    // Bodies first: they are the biggest walks, and equivalent ones (a string's contents in every
    // parser context) cost one walk between them.
    const starts = Array.from(this.automaton.tokenStartLexers(), (lex) => this.setOfLexer(lex));
    for (const set of starts) {
      for (let b = 0; b < 256; b++) {
        const body = (this.stepCode(set, b) & ~COMMIT) - 1;
        if (body < 0 || this.roots.has(body) || !this.isBody(body)) continue;
        if (performance.now() >= deadline) return false;
        this.rootWalk(body);
      }
    }
    for (const set of starts) {
      if (this.roots.has(set)) continue;
      if (performance.now() >= deadline) return false;
      this.rootWalk(set);
    }
    return true;
  }

  /** A set that loops on many bytes (a string's contents, a name, a number): its walk is a big one. */
  private isBody(setId: number): boolean {
    const loop = this.loopBytes(setId);
    let n = 0;
    for (let w = 0; w < 8; w++) for (let x = loop[w]!; x !== 0; x &= x - 1) n++;
    return n >= 10;
  }

  /**
   * The walk over the whole trie from a set; taken over from an earlier set that behaves the same
   * (the same string body in another parser context, say) when there is one.
   */
  rootWalk(setId: number): LexerWalk {
    let w = this.roots.get(setId);
    if (w === undefined) {
      // A signature only finds peers among the walks made before: the first walk (a grammar's
      // first mask, often) has none, and its own signature waits until another walk needs it.
      let signature: string | null = null;
      let peers: number[] | undefined;
      if (this.roots.size > 0) {
        this.signPending();
        signature = this.behaviourSignature(setId);
        peers = this.rootsBySignature.get(signature);
      }
      for (let i = 0; peers !== undefined && i < peers.length && i < MAX_EQUIVALENCE_TRIES && w === undefined; i++) {
        const peer = this.roots.get(peers[i]!)!;
        const correspondence = this.equivalence(peers[i]!, setId);
        if (correspondence !== null) w = { ...peer, contSets: peer.contSets.map((c) => correspondence.get(c)!) };
      }
      if (w === undefined) {
        // Only the root children a token can begin with: most sets (a keyword's scanner, the end
        // of a sentence) begin with a few bytes, and a visit is a cache miss or three.
        const first = this.firstBytes(setId);
        const rootChild = this.trie.rootChild;
        const starts: number[] = [];
        for (let b = 0; b < 256; b++) if (((first[b >>> 5]! >>> (b & 31)) & 1) !== 0 && rootChild[b]! >= 0) starts.push(rootChild[b]!);
        w = this.walkFrom(setId, starts, true);
        if (signature === null) this.unsigned.push(setId);
        else if (peers === undefined) this.rootsBySignature.set(signature, [setId]);
        else peers.push(setId);
      }
      this.roots.set(setId, w);
    }
    return w;
  }

  /** Files the walked sets still without a signature under theirs, in the order they were walked. */
  private signPending(): void {
    for (const set of this.unsigned) {
      const signature = this.behaviourSignature(set);
      const peers = this.rootsBySignature.get(signature);
      if (peers === undefined) this.rootsBySignature.set(signature, [set]);
      else peers.push(set);
    }
    this.unsigned.length = 0;
  }

  /** What ending the text does in a set: its members' distinct lexerEndKey values, sorted. */
  private endKeys(setId: number): string {
    let keys = this.endKeysOf.get(setId);
    if (keys === undefined) {
      const out: number[] = [];
      for (const m of this.setMembers[setId]!) {
        const k = this.automaton.lexerEndKey(m);
        if (k !== -1 && !out.includes(k)) out.push(k);
      }
      keys = out.sort((a, b) => a - b).join(",");
      this.endKeysOf.set(setId, keys);
    }
    return keys;
  }

  /** One byte deep: end keys, and per byte whether the set continues and which terminals it commits. */
  private behaviourSignature(setId: number): string {
    // A hash, not a spelling: equivalent sets hash alike, and `equivalence` settles collisions.
    let h = 0x811c9dc5;
    for (let b = 0; b < 256; b++) {
      const code = this.stepCode(setId, b);
      let v = code === 0 ? 0 : (code & COMMIT) === 0 ? 1 : (code & ~COMMIT) !== 0 ? 2 : 3;
      if ((code & COMMIT) !== 0) {
        // Commit keys in any order: a commutative sum of mixed keys.
        const keys = this.commitKeysAt(setId, b);
        let sum = 0;
        for (let i = 0; i < keys.length; i++) sum = (sum + Math.imul(keys[i]! + 1, 0x9e3779b1)) | 0;
        v = (v + Math.imul(sum, 0x85ebca6b)) | 0;
      }
      h = Math.imul(h ^ v, 0x01000193);
    }
    // Sets that differ only in the ignored run behind them step alike until one reaches the bound:
    // `equivalence` would explore that far to tell them apart, against every earlier peer, so a
    // model emitting whitespace under a long bound paid quadratically in it.
    let runs = 0;
    for (const m of this.setMembers[setId]!) runs = (runs + Math.imul(this.automaton.lexerIgnoredRun(m) + 1, 0x9e3779b1)) | 0;
    return `${this.endKeys(setId)}#${h >>> 0}#${runs >>> 0}`;
  }

  /**
   * A one-to-one correspondence between the sets reachable from `a` and from `b` under which every
   * byte does the same (continues or not, commits the same terminals with the same inherited
   * constraints) and ending the text does the same; null when there is none (or it grows past
   * MAX_EQUIVALENT_SETS). Walks depend on nothing else, so b's walk is a's with sets renamed.
   */
  private equivalence(a: number, b: number): Map<number, number> | null {
    const ab = new Map<number, number>([[a, b]]);
    const ba = new Map<number, number>([[b, a]]);
    const queue = [a];
    for (let qi = 0; qi < queue.length; qi++) {
      const x = queue[qi]!;
      const y = ab.get(x)!;
      if (this.endKeys(x) !== this.endKeys(y)) return null;
      for (let byte = 0; byte < 256; byte++) {
        const cx = this.stepCode(x, byte);
        const cy = this.stepCode(y, byte);
        if ((cx & COMMIT) !== (cy & COMMIT)) return null;
        if ((cx & COMMIT) !== 0 && !sameMembers(this.commitKeysAt(x, byte), this.commitKeysAt(y, byte))) return null;
        const nx = (cx & ~COMMIT) - 1;
        const ny = (cy & ~COMMIT) - 1;
        if (nx < 0 || ny < 0) {
          if (nx !== ny) return null;
          continue;
        }
        const known = ab.get(nx);
        if (known !== undefined) {
          if (known !== ny) return null;
          continue;
        }
        if (ba.has(ny) || queue.length >= MAX_EQUIVALENT_SETS) return null;
        ab.set(nx, ny);
        ba.set(ny, nx);
        queue.push(nx);
      }
    }
    return ab;
  }

  /** The walk below a group's nodes from the lexer state the new token starts in. */
  subWalk(lex: number, group: CommitGroup): LexerWalk {
    const setId = this.setOfLexer(lex);
    let w = group.belowSet === setId ? group.belowWalk! : group.moreBelow?.get(setId);
    if (w === undefined) {
      // Where the new token starts: children of single nodes, and nodes two levels below a loop
      // root; only those whose byte the new token can begin with (subtrees without such a byte
      // are skipped by their byte summary).
      const first = this.firstBytes(setId);
      let last = -1;
      for (let i = 7; i >= 0 && last < 0; i--) if (first[i] !== 0) last = i * 32 + 31 - Math.clz32(first[i]!);
      if (last < 0) {
        // Nothing can follow the commit (the end of the sentence, say): no token goes on below.
        w = { owner: setId, mask: null, contSets: [], tokensByCont: [], groups: [] };
      } else {
        const starts = this.starts;
        starts.length = 0;
        const subtreeSize = this.trie.subtreeSize;
        for (const n of group.nodes) if (this.hasByteBelow(n, first)) this.startsBelow(n, first, last, false);
        for (const p of group.loops) {
          for (let c = p + 1, end = p + subtreeSize[p]!; c < end; c += subtreeSize[c]!) if (this.hasByteBelow(c, first)) this.startsBelow(c, first, last, true);
        }
        w = this.walkFrom(setId, starts, false);
      }
      if (group.belowSet < 0) {
        group.belowSet = setId;
        group.belowWalk = w;
      } else (group.moreBelow ??= new Map()).set(setId, w);
    }
    return w;
  }

  /** Whether a byte of `first` occurs strictly below trie node `n`. */
  private hasByteBelow(n: number, first: Uint32Array): boolean {
    const belowBytes = this.trie.belowBytes;
    for (let i = 0; i < 8; i++) if ((belowBytes[n * 8 + i]! & first[i]!) !== 0) return true;
    return false;
  }

  /** Pushes to `starts` the children of `n` whose byte is in `first` (and, `deep`, those further down). */
  private startsBelow(n: number, first: Uint32Array, last: number, deep: boolean): void {
    const { subtreeSize, nodeByte } = this.trie;
    for (let c = n + 1, end = n + subtreeSize[n]!; c < end; c += subtreeSize[c]!) {
      const b = nodeByte[c]!;
      // Children come in byte order: past the set's last byte only loops can still hit.
      if (b > last && !deep) break;
      if (((first[b >>> 5]! >>> (b & 31)) & 1) !== 0) this.starts.push(c);
      if (deep && this.hasByteBelow(c, first)) this.startsBelow(c, first, last, true);
    }
  }

  /** Bytes a token can go on with from a set (continuing or committing), as 8 words. */
  private firstBytes(setId: number): Uint32Array {
    let f = this.firstBytesOf.get(setId);
    if (f === undefined) {
      f = new Uint32Array(8);
      for (let b = 0; b < 256; b++) if (this.stepCode(setId, b) !== 0) f[b >>> 5]! |= 1 << (b & 31);
      this.firstBytesOf.set(setId, f);
    }
    return f;
  }

  /**
   * Bytes on which a set steps to itself with one and the same outcome (the same commits, if
   * any), as 8 words: a subtree whose bytes are all such takes one step for all its tokens.
   */
  private loopBytes(setId: number): Uint32Array {
    if (setId < this.loopKnown.length && this.loopKnown[setId] === 1) return this.loopWords.subarray(setId * 8, setId * 8 + 8);
    const l = new Uint32Array(8);
    let code0 = -1;
    let keys0: Int32Array | null = null;
    for (let b = 0; b < 256; b++) {
      const code = this.stepCode(setId, b);
      if ((code & ~COMMIT) - 1 !== setId) continue;
      const keys = (code & COMMIT) !== 0 ? this.commitKeysAt(setId, b) : EMPTY;
      if (code0 < 0) {
        code0 = code;
        keys0 = keys;
      } else if (code !== code0 || keys.length !== keys0!.length || keys.some((k, i) => k !== keys0![i])) continue;
      l[b >>> 5]! |= 1 << (b & 31);
    }
    if (setId >= this.loopKnown.length) {
      let n = this.loopKnown.length;
      while (n <= setId) n *= 2;
      this.loopKnown = grownTo(this.loopKnown, n);
      this.loopWords = grownTo(this.loopWords, n * 8);
      this.loopCodes = grownTo(this.loopCodes, n);
      this.loopsOnUtf8 = grownTo(this.loopsOnUtf8, n);
    }
    this.loopWords.set(l, setId * 8);
    this.loopCodes[setId] = code0;
    this.loopKnown[setId] = 1;
    this.loopsOnUtf8[setId] = (code0 & COMMIT) === 0 && this.loopsOnEveryMultibyteChar(setId) ? 1 : 0;
    return l;
  }

  /**
   * Walks the subtrees of `starts` (nodes whose parent is in lexer-state set `setId`): the
   * commit-free tokens with the set each ends in, and every commit grouped by its kind.
   */
  private walkFrom(setId: number, starts: readonly number[], dense: boolean): LexerWalk {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, depth } = this.trie;
    // Made on the first commit-free token: many walks (a keyword's scanner) have none.
    let mask: Uint32Array | null = null;
    const contSets: number[] = [];
    const tokensByCont: number[][] = [];
    // Commit groups in the order met (a walk has a few): their keys and builders, searched linearly.
    const groupKeys: number[] = [];
    const builders: GroupBuilder[] = [];
    const atDepth = this.atDepth;
    const stamp = ++this.stamp;
    let steps = 0;
    for (let si = 0; si < starts.length; si++) {
      const start = starts[si]!;
      atDepth[depth[start]! - 1] = setId;
      const end = start + subtreeSize[start]!;
      let p = start;
      while (p < end) {
        steps++;
        const info = nodeInfo[p]!;
        const d = (info >>> 8) & 0xffff;
        const from = atDepth[d - 1]!;
        const byte = info & 0xff;
        const code = this.stepCode(from, byte);
        const isEnd = (info & 0x80000000) !== 0;
        const cont = (code & ~COMMIT) - 1;
        if ((code & COMMIT) !== 0) {
          const keys = this.commitKeysAt(from, byte);
          for (let k = 0; k < keys.length; k++) {
            const g = builderOf(groupKeys, builders, keys[k]!);
            if (subtreeSize[p]! > 1) (g.nodes ??= []).push(p);
            if (isEnd) {
              g.hasEnds = true;
              const list = cont < 0 ? (g.dead ??= []) : (g.alive ??= []);
              for (let t = tokenStart[p]!, to = tokenStart[p + 1]!; t < to; t++) list.push(tokenIds[t]!);
            }
          }
        }
        if (cont < 0) {
          p += subtreeSize[p]!;
          continue;
        }
        atDepth[d] = cont;
        if (isEnd) mask = this.addTokens(cont, tokenStart[p]!, tokenStart[p + 1]!, stamp, contSets, tokensByCont, dense, mask);
        const size = subtreeSize[p]!;
        if (size > 1) {
          // Everything below steps the set to itself the same way: take the subtree at once.
          if (this.loopsBelow(cont, p)) {
            const below0 = tokenStart[p + 1]!, below1 = tokenStart[p + size]!;
            mask = this.addTokens(cont, below0, below1, stamp, contSets, tokensByCont, dense, mask);
            const loopCode = this.loopCodes[cont]!;
            if ((loopCode & COMMIT) !== 0) {
              const keys = this.commitKeysOfLoop(cont);
              for (let k = 0; k < keys.length; k++) {
                const g = builderOf(groupKeys, builders, keys[k]!);
                (g.loops ??= []).push(p);
                if (below1 > below0) {
                  g.hasEnds = true;
                  (g.ranges ??= []).push(below0, below1);
                }
              }
            }
            p += size;
            continue;
          }
        }
        p++;
      }
    }
    this.work.charge(steps);
    const out: CommitGroup[] = [];
    for (let i = 0; i < builders.length; i++) {
      const g = builders[i]!;
      out.push({
        commitKey: groupKeys[i]!,
        hasEnds: g.hasEnds,
        deadEnds: g.dead === null ? EMPTY : this.keptListOf(g.dead),
        aliveEnds: g.alive === null ? EMPTY : this.keptListOf(g.alive),
        aliveRanges: g.ranges ?? NO_NODES,
        nodes: g.nodes ?? NO_NODES,
        loops: g.loops ?? NO_NODES,
        belowSet: -1,
        belowWalk: null,
        moreBelow: null,
      });
    }
    const lists: Int32Array[] = [];
    if (!dense) for (let i = 0; i < tokensByCont.length; i++) lists.push(this.keptListOf(tokensByCont[i]!));
    let bytes = 200 + (mask?.byteLength ?? 0) + 8 * contSets.length;
    for (const list of lists) bytes += 64 + list.byteLength;
    for (const g of out) bytes += 240 + g.deadEnds.byteLength + g.aliveEnds.byteLength + 8 * (g.aliveRanges.length + g.nodes.length + g.loops.length);
    this.madeBytes += bytes;
    return { owner: setId, mask, contSets, tokensByCont: lists, groups: out };
  }

  /**
   * Tokens [from, to) of trie order end a commit-free token in set `cont`: into the walk's dense
   * mask (made on first need, returned), or into the list of `cont`'s slot in the walk.
   */
  private addTokens(cont: number, from: number, to: number, stamp: number, contSets: number[], tokensByCont: number[][], dense: boolean, mask: Uint32Array | null): Uint32Array | null {
    if (from >= to) return mask;
    if (cont >= this.seen.length) {
      const n = Math.max(cont + 1, this.seen.length * 2);
      this.seen = grownTo(this.seen, n);
      this.seenSlot = grownTo(this.seenSlot, n);
    }
    if (this.seen[cont] !== stamp) {
      this.seen[cont] = stamp;
      this.seenSlot[cont] = contSets.length;
      contSets.push(cont);
      tokensByCont.push([]);
    }
    const tokenIds = this.trie.tokenIds;
    if (dense) {
      mask ??= new Uint32Array(maskWords(this.trie.vocabSize));
      setTokenRange(mask, tokenIds, from, to);
    } else {
      const list = tokensByCont[this.seenSlot[cont]!]!;
      for (let t = from; t < to; t++) list.push(tokenIds[t]!);
    }
    return mask;
  }

  /**
   * A walk's token list, kept as long as the matcher: from the slab while it lasts and the list is
   * short (a typed array of its own over 64 bytes costs 1–3 µs; see TableSlab).
   */
  private keptListOf(list: readonly number[]): Int32Array {
    if (list.length <= 16 || list.length > SLAB_LIST_MAX) return listOf(list);
    const out = this.tables.int32(list.length);
    for (let i = 0; i < list.length; i++) out[i] = list[i]!;
    return out;
  }

  /** Whether every valid multi-byte UTF-8 character takes the set back to itself without a commit. */
  private loopsOnEveryMultibyteChar(setId: number): boolean {
    return loopsOnEveryUtf8Char(setId, (x, b) => {
      const code = this.stepCode(x, b);
      return (code & COMMIT) !== 0 ? -1 : code - 1;
    });
  }

  /** The commit keys of a set's self-loop (see loopBytes); cached, walks ask once per loop subtree. */
  private commitKeysOfLoop(setId: number): Int32Array {
    let keys = this.loopKeys.get(setId);
    if (keys === undefined) {
      const loop = this.loopBytes(setId);
      keys = EMPTY;
      for (let b = 0; b < 256; b++) {
        if (((loop[b >>> 5]! >>> (b & 31)) & 1) !== 0) {
          keys = this.commitKeysAt(setId, b);
          break;
        }
      }
      this.loopKeys.set(setId, keys);
    }
    return keys;
  }

  /** Whether every byte below trie node `p` steps set `cont` to itself alike (loopBytes): the subtree's tokens all end in `cont`. */
  private loopsBelow(cont: number, p: number): boolean {
    if (cont >= this.loopKnown.length || this.loopKnown[cont] !== 1) this.loopBytes(cont);
    const { belowBytes, utf8Aligned } = this.trie;
    const loop = this.loopWords;
    const lw = cont * 8;
    for (let w = 0; w < 4; w++) if ((belowBytes[p * 8 + w]! & ~loop[lw + w]!) !== 0) return false;
    for (let w = 4; w < 8; w++) {
      // Non-ASCII below: fine when whole characters loop and no token ends inside one.
      if ((belowBytes[p * 8 + w]! & ~loop[lw + w]!) !== 0) return this.loopsOnUtf8[cont] === 1 && utf8Aligned[p] === 1;
    }
    return true;
  }

  /**
   * Sets in `mask` the commit-free tokens of the root walk from `setId` that end in a set of
   * `keep`, taking a subtree at once where the set loops on all of it, as the walk did (budget
   * masks inside a string otherwise walked nearly the whole trie node by node).
   */
  maskOf(setId: number, keep: Set<number>, mask: Uint32Array): void {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const atDepth = this.atDepth;
    atDepth[0] = setId;
    let p = 1;
    let steps = 0;
    while (p < numNodes) {
      steps++;
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const code = this.stepCode(atDepth[d - 1]!, info & 0xff);
      const cont = (code & ~COMMIT) - 1;
      if (cont < 0) {
        p += subtreeSize[p]!;
        continue;
      }
      atDepth[d] = cont;
      if ((info & 0x80000000) !== 0 && keep.has(cont)) setTokenRange(mask, tokenIds, tokenStart[p]!, tokenStart[p + 1]!);
      const size = subtreeSize[p]!;
      if (size > 1 && this.loopsBelow(cont, p)) {
        if (keep.has(cont)) setTokenRange(mask, tokenIds, tokenStart[p + 1]!, tokenStart[p + size]!);
        p += size;
        continue;
      }
      p++;
    }
    this.work.charge(steps);
  }
}

const EMPTY = new Int32Array(0);

/** A list as a typed array (read only: the empty ones are all EMPTY); no iterator protocol. */
function listOf(list: readonly number[]): Int32Array {
  return list.length === 0 ? EMPTY : int32Of(list);
}
/** Sets an equivalence check between two lexer-state sets may pair up before it gives up. */
const MAX_EQUIVALENT_SETS = 256;
/** Peers of one signature a new set is compared with (each comparison may explore that many sets). */
const MAX_EQUIVALENCE_TRIES = 16;

function sameMembers(x: Int32Array, y: Int32Array): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (!y.includes(x[i]!)) return false;
  return true;
}
/** Lexer states a token-end search visits at most (a token's own states; ample for real terminals). */
const MAX_TOKEN_END_STATES = 4096;


/**
 * One request's position in a GrammarTokenMatcher, with optional prompt-boundary healing: the
 * first token must begin with `forcedPrefix`, whose bytes are not part of the sentence.
 */
export class GrammarConstraintState {
  state: number;
  private readonly prefixTokens: Int32Array | undefined;
  private readonly prefixTargets: Int32Array | undefined;

  constructor(
    readonly matcher: GrammarTokenMatcher,
    forcedPrefix?: Uint8Array,
  ) {
    if (forcedPrefix === undefined || forcedPrefix.length === 0) {
      this.state = matcher.start;
      return;
    }
    this.state = PREFIX_PENDING;
    matcher.work.begin();
    const edges = matcher.prefixEdges(forcedPrefix);
    this.prefixTokens = edges.tokens;
    this.prefixTargets = edges.targets;
  }

  isAccepting(): boolean {
    return this.state !== PREFIX_PENDING && this.matcher.isAccepting(this.state);
  }

  /** The matcher's walks ahead (shared by every state of it); true when none are left. */
  walkAhead(deadline: number): boolean {
    this.matcher.work.begin();
    return this.matcher.walkAhead(deadline);
  }

  mask(remaining: number): Uint32Array {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.mask(this.state, remaining);
    const mask = new Uint32Array(this.matcher.words);
    if (remaining <= 0) return mask;
    const tokens = this.prefixTokens!;
    const targets = this.prefixTargets!;
    for (let i = 0; i < tokens.length; i++) {
      if (this.matcher.canAcceptWithin(targets[i]!, remaining - 1)) {
        const id = tokens[i]!;
        mask[id >>> 5]! |= 1 << (id & 31);
      }
    }
    return mask;
  }

  hasAnyToken(remaining: number): boolean {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.hasAnyToken(this.state, remaining);
    const mask = this.mask(remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }

  /** A proven lower bound on the tokens any complete sentence needs (see the matcher's). */
  minTokensAtLeast(cap: number): number {
    this.matcher.work.begin();
    return this.state === PREFIX_PENDING ? 0 : this.matcher.minTokensAtLeast(this.state, cap);
  }

  /** Fewest tokens to a complete sentence, searched up to `cap`. */
  minTokensToAccept(cap = 64): number {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensToAccept(this.state, cap);
    let best = Number.POSITIVE_INFINITY;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++) best = Math.min(best, 1 + this.matcher.minTokensToAccept(targets[i]!, Math.min(cap, best - 2)));
    return best;
  }

  advance(token: number): boolean {
    this.matcher.work.begin();
    let next = -1;
    if (this.state === PREFIX_PENDING) {
      const tokens = this.prefixTokens!;
      for (let i = 0; i < tokens.length; i++) if (tokens[i] === token) next = this.prefixTargets![i]!;
    } else {
      next = this.matcher.advance(this.state, token);
    }
    if (next < 0) return false;
    this.state = next;
    return true;
  }
}
