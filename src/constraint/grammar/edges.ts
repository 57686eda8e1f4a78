/**
 * The grammar matcher's per-state mask cache: per visited state, the allowed tokens and their
 * distinct target states. A state takes its commit-free tokens from a walk cached per tuple of
 * lexer-level states (one per hypothesis) and shared by every parser stack (see lexer-walks.ts);
 * only the trie subtrees where a terminal ends are walked with the real automaton. A state of
 * several hypotheses is the union of its one-hypothesis states, and states whose walks and commit
 * outcomes agree share one mask (`maskKey`). The budgets (budget.ts) read the same records and
 * redo the walks keeping only the tokens whose target still fits (`fits`).
 */
import { DenseTable, grownTo, maskWords, orInto, setTokenList, setTokenRange, type TableSlab } from "../../support/index.js";
import type { TokenTrie } from "../trie.js";
import { walkTrie } from "../walk.js";
import type { WorkMeter } from "../work-meter.js";
import type { CompletableAutomaton } from "./contracts.js";
import { applyWalkTokens, type CommitGroup, type LexerLevelWalks } from "./lexer-walks.js";
import { listOf } from "./tables.js";

/** What the cache keeps per state: its mask (or how to make it) and its targets. */
export interface StateEdges {
  /**
   * Shared between states with the same lexer-level outcome: read only. Made on first need
   * (edgeMask): a budget search reads many states' targets and few of their masks.
   */
  mask: Uint32Array | null;
  /** What makes the mask: the one hypothesis (stack, lexer state), or the parts it is the union of. */
  readonly stack: number;
  readonly lex: number;
  readonly parts: readonly StateEdges[] | null;
  /**
   * What determines the mask (lexer walks and which commits the stack takes), as numbers; the
   * string key (maskKeyOf) is made only when the mask is: a budget search reads many states'
   * targets and few of their masks, and a key string per state was garbage for the collector.
   */
  readonly signature: Int32Array | null;
  maskKey: string | null;
  /** Distinct target states of the allowed tokens. */
  distinct: Int32Array;
  /** The same, by ascending lower-bound distance (sorted on first need; a copy, as searches recurse while others iterate `distinct`). */
  nearestFirst: Int32Array | null;
  /** Smallest token budget known to let every target finish (Infinity: not known yet). */
  allFitFrom: number;
  /** The sets the targets start from are walked (GrammarTokenMatcher.walkAhead). */
  nextWalked: boolean;
}

/** Distinct masks kept for sharing between states (first in, first out past this). */
const MAX_SHARED_MASKS = 4096;

/** The allowed tokens and targets of every state met, made on first need and kept. */
export class StateEdgeCache {
  readonly words: number;
  private empty: Uint32Array | null = null;
  private readonly edges = new DenseTable<StateEdges>();
  private readonly sharedMasks = new Map<string, Uint32Array>();
  private readonly signature: number[] = [];
  /** Per automaton state, the walk stamp that last collected it (distinct-target dedup). */
  private seenStamp: Int32Array;
  private stamp = 0;
  private readonly collected: number[] = [];
  /**
   * Bytes of the masks and per-state records made so far (retainedBytes). Never lowered when a
   * shared mask leaves sharedMasks: the states that took it keep it alive.
   */
  private madeBytes = 0;
  private finalBytesMade: Uint32Array | null | undefined;

  /** `lexer`: the lexer-level walks, or null when every state walks the trie with the automaton. */
  constructor(
    private readonly trie: TokenTrie,
    private readonly automaton: CompletableAutomaton,
    private readonly lexer: LexerLevelWalks | null,
    tables: TableSlab,
    private readonly work: WorkMeter,
  ) {
    this.words = maskWords(trie.vocabSize);
    this.seenStamp = tables.int32(1024);
  }

  /** The mask of no token (made on first need: dead states and spent budgets are rare). */
  get emptyMask(): Uint32Array {
    return (this.empty ??= new Uint32Array(this.words));
  }

  /** An estimate of the heap bytes of its masks and records, erring high (see the matcher's). */
  retainedBytes(): number {
    return this.madeBytes + this.seenStamp.byteLength + this.sharedMasks.size * 80;
  }

  /**
   * The allowed tokens of `state` and their distinct target states. With the lexer-level walks a
   * state of several hypotheses is the union of its one-hypothesis states (hypotheses step
   * independently, so a token is allowed iff one of them allows it, and a budget is met iff one of
   * them meets it); its targets are theirs.
   */
  edgesOf(state: number): StateEdges {
    let e = this.edges.get(state);
    if (e !== undefined) return e;
    this.work.charge(1);
    const collected = this.collected;
    const lexer = this.lexer;
    let mask: Uint32Array | null = null;
    let maskKey: string | null = null;
    let signature: Int32Array | null = null;
    let stack = -1,
      lex = -1;
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
      } else {
        // The mask follows from the root walk and, per commit group, the lexer state the next
        // token starts in (or none): states that agree there share one mask.
        collected.length = 0;
        stack = hyps[0]!;
        lex = hyps[1]!;
        const scratch = this.signature;
        scratch.length = 0;
        this.collectHypothesis(stack, lexer.setOfLexer(lex), ++this.stamp, scratch);
        signature = listOf(scratch);
      }
    }
    e = {
      mask,
      stack,
      lex,
      parts,
      signature,
      maskKey,
      distinct: listOf(collected),
      nearestFirst: null,
      allFitFrom: Number.POSITIVE_INFINITY,
      nextWalked: false,
    };
    this.edges.set(state, e);
    // The record, its target list (and the sorted copy a budget search may make), its signature.
    this.madeBytes += 200 + 8 * e.distinct.length + 4 * (signature?.length ?? 0);
    return e;
  }

  /**
   * Whether some token takes `state` to a complete sentence: whether a target edgesOf would list
   * is complete, searched lazily and without making the state's record: the commit-free tokens'
   * targets, then each commit group's own end, then below the groups, up to the first found. A
   * budget mask asks this of each of its targets when one token is left after them.
   */
  completesInOneToken(state: number): boolean {
    const automaton = this.automaton;
    const known = this.edges.get(state);
    const lexer = this.lexer;
    if (known !== undefined || lexer === null) {
      const distinct = (known ?? this.edgesOf(state)).distinct;
      this.work.charge(distinct.length);
      for (let i = 0; i < distinct.length; i++) if (automaton.isComplete(distinct[i]!)) return true;
      return false;
    }
    this.work.charge(1);
    // A state of several hypotheses: a token completes it iff it completes one of them (edgesOf).
    const hyps = lexer.automaton.hypotheses(state);
    for (let i = 0; i < hyps.length; i += 2) {
      const stack = hyps[i]!;
      const walk = lexer.rootWalk(lexer.setOfLexer(hyps[i + 1]!));
      const conts = walk.contSets;
      this.work.charge(conts.length);
      for (let c = 0; c < conts.length; c++) if (lexer.completeOf(stack, conts[c]!)) return true;
      if (this.groupsComplete(stack, walk.groups)) return true;
    }
    return false;
  }

  /** completesInOneToken below a walk's commit groups on `stack` (the targets collectGroups collects). */
  private groupsComplete(stack: number, groups: readonly CommitGroup[]): boolean {
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    this.work.charge(groups.length);
    // A token ending at the commit first: no walk below is needed to know its target.
    for (let g = 0; g < groups.length; g++)
      if (groups[g]!.hasEnds && automaton.completeAfterCommit(stack, groups[g]!.commitKey)) return true;
    const final = this.finalBytes;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      if (group.nodes.length === 0 && group.loops.length === 0) continue;
      // No token below ends with a byte a sentence can end with, or is long enough to finish
      // from the state after the commit: none to walk.
      if (final !== null && !lexer.anyByteBelow(group, final)) continue;
      const after = automaton.afterCommit(stack, group.commitKey);
      if (after < 0 || !lexer.anyTokenBelowReaches(group, automaton.minBytesLowerBound(after))) continue;
      const hyp = automaton.hypotheses(after);
      const below = lexer.subWalk(hyp[1]!, group);
      const nextStack = hyp[0]!;
      const conts = below.contSets;
      this.work.charge(conts.length);
      for (let c = 0; c < conts.length; c++) if (lexer.completeOf(nextStack, conts[c]!)) return true;
      if (this.groupsComplete(nextStack, below.groups)) return true;
    }
    return false;
  }

  /** The bytes a sentence can end with (LexerLevelAutomaton.finalBytes), null: any; on first need. */
  private get finalBytes(): Uint32Array | null {
    if (this.finalBytesMade === undefined) this.finalBytesMade = this.lexer?.automaton.finalBytes?.() ?? null;
    return this.finalBytesMade;
  }

  /** The record of `state` when it is made (its mask was asked for). */
  knownEdges(state: number): StateEdges | undefined {
    return this.edges.get(state);
  }

  /** The string form of what determines `e`'s mask (see StateEdges.signature), made on first need. */
  private maskKeyOf(e: StateEdges): string {
    if (e.maskKey !== null) return e.maskKey;
    let key: string;
    if (e.parts !== null) {
      const keys: string[] = [];
      for (const part of e.parts) keys.push(this.maskKeyOf(part));
      key = keys.sort().join("|");
    } else key = e.signature === null ? "" : e.signature.join(",");
    e.maskKey = key;
    this.madeBytes += 2 * key.length;
    return key;
  }

  /** The allowed tokens of the state `e` was made for (see StateEdges.mask). */
  edgeMask(e: StateEdges): Uint32Array {
    if (e.mask !== null) return e.mask;
    // Without lexer-level walks every state made its own mask on the spot (e.mask is set).
    const key = this.maskKeyOf(e);
    let shared = this.sharedMasks.get(key);
    if (shared === undefined) {
      shared = new Uint32Array(this.words);
      this.madeBytes += shared.byteLength;
      if (e.parts !== null) for (const part of e.parts) orInto(shared, this.edgeMask(part));
      else this.applyHypothesis(e.stack, e.lex, shared, 0, null);
      this.shareMask(key, shared);
    }
    e.mask = shared;
    return shared;
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
  applyHypothesis(stack: number, lex: number, mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    const lexer = this.lexer!;
    const setId = lexer.setOfLexer(lex);
    const walk = lexer.rootWalk(setId);
    const conts = walk.contSets;
    if (fits === null) {
      applyWalkTokens(walk, mask, true); // `mask` is fresh: all clear
      if (stamp !== 0) for (let i = 0; i < conts.length; i++) this.collect(lexer.stateOf(stack, conts[i]!), stamp);
    } else {
      const keep = new Set<number>();
      for (let i = 0; i < conts.length; i++) if (fits.get(lexer.stateOf(stack, conts[i]!)) === true) keep.add(conts[i]!);
      if (keep.size === conts.length) {
        applyWalkTokens(walk, mask, false);
      } else if (keep.size > 0) lexer.maskOf(setId, keep, mask);
    }
    this.applyGroups(stack, walk.groups, mask, stamp, fits);
  }

  private applyGroups(
    stack: number,
    groups: readonly CommitGroup[],
    mask: Uint32Array,
    stamp: number,
    fits: Map<number, boolean> | null,
  ): void {
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
  walkWhole(state: number, mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    if (fits === null) walkTrie(this.trie, this.automaton, state, 0, mask, (_from, _to, target) => this.collect(target, stamp), this.work);
    else {
      const tokenIds = this.trie.tokenIds;
      walkTrie(this.trie, this.automaton, state, 0, undefined, (from, to, target) => {
        if (fits.get(target) === true) setTokenRange(mask, tokenIds, from, to);
      });
    }
  }
}
