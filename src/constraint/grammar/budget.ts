/**
 * Token budgets over the grammar matcher's masks: a token is allowed with `remaining` tokens left
 * only if a complete sentence is still reachable within remaining-1 tokens after it. "Surely
 * reachable" comes from an upper bound (bounds.ts); otherwise a bounded depth-first search over
 * cached token transitions decides; when it gives up, the token is refused: budgets may then be
 * stricter than necessary, never looser, so a completion is never a truncated half sentence.
 * The search effort is bounded per query and per mask, so a tight budget holds a decode step for
 * tens of ms at most.
 */
import { IdMap, IntMap, orInto, type TableSlab } from "../../support/index.js";
import { TokenLengthBound } from "../token-length-bound.js";
import type { TokenTrie } from "../trie.js";
import { LOWER_BOUND_WORK_SHARE, type WorkMeter } from "../work-meter.js";
import type { CompletionBounds } from "./bounds.js";
import type { CompletableAutomaton } from "./contracts.js";
import type { StateEdgeCache, StateEdges } from "./edges.js";
import type { LexerLevelWalks } from "./lexer-walks.js";
import { MEMO_CAPACITY } from "./tables.js";

/** Depth-first search effort per budget query before refusing (conservative). */
const SEARCH_LIMIT = 64;
/**
 * Search effort for all the budget queries of one mask together. A tight budget asks one query
 * per target, and each new state a query visits costs a mask walk and an A*: without this cap
 * one decode step could hold the event loop for tens of ms. Queries past it only get the cheap
 * answers (known bounds, memo), so the mask may leave out a token that would have fit; never one
 * that does not, and never all of them (the path the last step was admitted on is in the memo).
 * That is one query's own effort: the slowest tight steps of bench:grammar-mask spend all of it,
 * about 10 us a state at 152k tokens, and with 160 they took 1.6-3.0 ms (json, palindrome), with
 * 64 0.6-1.1 ms. Against an unbounded search, the masks of the bench's tight replays lose 3
 * tokens of 17.3M at qwen2 (all in palindrome's 1,857) and 2 of 7.2M at gpt-2 (160: 1 and 1).
 */
const MASK_SEARCH_LIMIT = SEARCH_LIMIT;
/** Search effort for all the budgets minTokensToAccept or minTokensAtLeast tries together. */
const MIN_TOKENS_SEARCH_LIMIT = 1024;
/** Budgets above this are treated alike by the memos (they only ever mean "plenty"). */
const BUDGET_KEY_CAP = 0xffff;
/** Budgets tooSlowRuns keeps (a "too small" for more says as much for this many). */
const RUN_BUDGET_CAP = 0x7fff;

/** The budget answers and budget masks of one matcher, with their memos and search effort. */
export class TokenBudgets {
  /**
   * Per state, proven by finished searches: `within` k, a sentence is finishable within k tokens
   * (so within any more); `atLeast` k, none finishes within k - 1 (so within any fewer). One
   * answer then serves every budget on its side, in later steps and requests too.
   */
  private readonly within: IdMap;
  private readonly atLeast: IdMap;
  private readonly budgetMasks = new Map<number, Uint32Array>();
  /**
   * Per stack and run class (runKeyOf): the largest budget proven too small for a state of the
   * class (capped at RUN_BUDGET_CAP) * 2^16 + the shortest run it was proven at.
   */
  private readonly tooSlowRuns: IdMap;
  /** runKeyOf's run; its keys by state (-1: none), and their ids by text. */
  private runOfKey = 0;
  private readonly runKeys: IdMap;
  private readonly runKeyIds = new Map<string, number>();
  private searchLeft = 0;
  /** Work (the meter's steps) past which a search gives up: half its operation's limit. */
  private searchSteps = Number.POSITIVE_INFINITY;
  private searchGaveUp = false;
  /** Effort left to the mask being computed (MASK_SEARCH_LIMIT); Infinity outside mask(). */
  private maskSearchLeft = Number.POSITIVE_INFINITY;
  private readonly bytesAreTokens: boolean;
  /** The byte lower bound in tokens, over the bytes a sentence can contain. */
  private readonly lengthBound: TokenLengthBound;
  private readonly words: number;
  /** Bytes of the budget masks made so far (retainedBytes). */
  private madeBytes = 0;

  /** `tables`: the matcher's slab. */
  constructor(
    trie: TokenTrie,
    private readonly automaton: CompletableAutomaton,
    private readonly lexer: LexerLevelWalks | null,
    private readonly edges: StateEdgeCache,
    private readonly bounds: CompletionBounds,
    tables: TableSlab,
    private readonly work: WorkMeter,
  ) {
    this.within = new IdMap(MEMO_CAPACITY, tables);
    this.atLeast = new IdMap(MEMO_CAPACITY, tables);
    this.tooSlowRuns = new IdMap(MEMO_CAPACITY);
    this.runKeys = new IdMap(MEMO_CAPACITY);
    this.bytesAreTokens = bounds.bytesAreTokens;
    this.words = edges.words;
    this.lengthBound = new TokenLengthBound(trie, () => automaton.sentenceBytes?.());
  }

  /** An estimate of the heap bytes of its masks and memo, erring high (see the matcher's). */
  retainedBytes(): number {
    return (
      this.madeBytes +
      this.within.byteLength +
      this.atLeast.byteLength +
      this.tooSlowRuns.byteLength +
      this.runKeys.byteLength +
      this.runKeyIds.size * 120 +
      this.budgetMasks.size * 80
    );
  }

  /** The share of the work limit past which a search gives up (see minTokensAtLeast). */
  private searchShare = 1;

  /** Whether a complete sentence is reachable from `state` within `budget` tokens. */
  canAcceptWithin(state: number, budget: number): boolean {
    const effort = Math.min(SEARCH_LIMIT, this.maskSearchLeft);
    this.searchLeft = effort;
    // Each state a search expands may cost a walk of its own: past half the operation's work
    // limit the search gives up (a "not proven", as when its effort runs out) instead of the
    // operation failing, so the answer is a conservative one and the rest of the operation (a
    // mask's walk) still has room.
    this.searchSteps = (this.work.operationLimit() * this.searchShare) / 2;
    this.searchGaveUp = false;
    const found = this.finishable(state, budget, true);
    this.maskSearchLeft -= effort - Math.max(0, this.searchLeft);
    return found;
  }

  /** `asked`: the query itself, not a state its search reached. */
  private finishable(state: number, budget: number, asked = false): boolean {
    if (state < 0) return false;
    this.work.charge(1);
    if (this.automaton.isComplete(state)) return true;
    if (budget <= 0) return false;
    const within = this.within.get(state);
    if (within !== IntMap.MISSING && within <= budget) return true;
    const atLeast = this.atLeast.get(state);
    if (atLeast !== IntMap.MISSING && atLeast > budget) return false;
    const runKey = this.runKeyOf(state);
    if (runKey >= 0) {
      // A state of the same class with a run no longer is proven too slow at this budget or more.
      const known = this.tooSlowRuns.get(runKey);
      if (known !== IntMap.MISSING && known >>> 16 >= budget && (known & 0xffff) <= this.runOfKey) return false;
    }
    if (this.lengthBound.exceeds(this.automaton.minBytesLowerBound(state), budget)) return false;
    // A query of one token (a mask's target with two left) is answered exactly below, as cheaply
    // as the bounds would (they say "yes" only when a greedy completion, its commits followed to
    // the end, is one token), so it skips them and is not counted as search effort; the
    // operation's work still bounds it. Inside a search such leaves are many, and counted.
    const oneTokenAsked = budget === 1 && asked;
    if (!oneTokenAsked) {
      if (this.bytesAreTokens && this.bounds.byteBoundOf(state) <= budget) return true;
      if (this.bounds.tokenUpperBound(state, false, budget) <= budget) return true;
    }
    // Each state expanded (its edges, and past one token the exact bound's A*) is search effort.
    if ((!oneTokenAsked && this.searchLeft-- <= 0) || this.work.steps > this.searchSteps) {
      this.searchGaveUp = true;
      return false;
    }
    if (budget === 1) {
      // One token left: a target itself must be complete. The state's targets answer that
      // exactly, so neither the shortest completion (an A*) nor an order of the targets helps;
      // they are searched up to the first complete one, without the state's mask record.
      return this.remember(state, 1, this.edges.completesInOneToken(state));
    }
    if (this.bounds.tokenUpperBound(state, true, budget) <= budget) return true;
    const distinct = this.targetsByDistance(this.edges.edgesOf(state));
    let found = false;
    for (let i = 0; i < distinct.length && !found; i++) found = this.finishable(distinct[i]!, budget - 1);
    // A give-up answer is not remembered as "no": another query with more effort may find a way.
    if (found || !this.searchGaveUp) this.remember(state, budget, found);
    return found;
  }

  /** Records a finished search's answer for `state` at `budget` (see within, atLeast); returns it. */
  private remember(state: number, budget: number, found: boolean): boolean {
    // Past the cap a "yes" says nothing of smaller budgets; a "no" still covers the cap.
    const k = Math.min(budget, BUDGET_KEY_CAP);
    if (found) {
      if (budget > BUDGET_KEY_CAP) return found;
      const old = this.within.get(state);
      if (old === IntMap.MISSING || old > k) this.within.set(state, k);
    } else {
      const old = this.atLeast.get(state);
      if (old === IntMap.MISSING || old < k + 1) this.atLeast.set(state, k + 1);
      const runKey = this.runKeyOf(state);
      if (runKey >= 0) {
        // The largest budget proven too small, at the shortest run it was proven for.
        const b = Math.min(k, RUN_BUDGET_CAP);
        const run = this.runOfKey;
        const known = this.tooSlowRuns.get(runKey);
        if (known === IntMap.MISSING || known >>> 16 < b || (known >>> 16 === b && (known & 0xffff) > run))
          this.tooSlowRuns.set(runKey, b * 0x10000 + run);
      }
    }
    return found;
  }

  /**
   * For a state whose hypotheses' lexer states all have the same ignored run (a whitespace run,
   * say), the id of their stacks and run classes (LexerLevelAutomaton.lexerRunClass), its run in
   * runOfKey; else -1. The states after "]" and one to eight spaces each cost a search of their
   * own; one proven too slow proves the same of those with a longer run: hypothesis by hypothesis
   * they allow less, and a state allows what one of its hypotheses does.
   */
  private runKeyOf(state: number): number {
    const automaton = this.lexer?.automaton;
    if (automaton?.lexerRunClass === undefined) return -1;
    const hyps = automaton.hypotheses(state);
    const run = automaton.lexerIgnoredRun(hyps[1]!);
    if (run <= 0 || run > 0xffff) return -1;
    this.runOfKey = run;
    const known = this.runKeys.get(state);
    if (known !== IntMap.MISSING) return known;
    let key = "";
    for (let i = 0; i < hyps.length; i += 2) {
      if (automaton.lexerIgnoredRun(hyps[i + 1]!) !== run) {
        this.runKeys.set(state, -1);
        return -1;
      }
      key += `${hyps[i]},${automaton.lexerRunClass(hyps[i + 1]!)};`;
    }
    let id = this.runKeyIds.get(key);
    if (id === undefined) this.runKeyIds.set(key, (id = this.runKeyIds.size));
    this.runKeys.set(state, id);
    return id;
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

  /**
   * Tokens that surely suffice from `state` when a known completion fits within `cap` (its bound:
   * at least the fewest, at most `cap`), else Infinity. No search: an admission question with a
   * roomy budget only asks whether it fits.
   */
  surelyWithin(state: number, cap: number): number {
    if (this.automaton.isComplete(state)) return 0;
    // Longer than `cap` of the longest tokens: nothing fits, and no completion need be spelled (a
    // terminal of 1000 characters would make a lexer state per byte to find one).
    if (this.lengthBound.exceeds(this.automaton.minBytesLowerBound(state), cap)) return Number.POSITIVE_INFINITY;
    if (this.bytesAreTokens) {
      const bytes = this.bounds.byteBoundOf(state);
      if (bytes <= cap) return bytes;
    }
    const tokens = this.bounds.tokenUpperBound(state, false, cap);
    return tokens <= cap ? tokens : Number.POSITIVE_INFINITY;
  }

  /**
   * Fewest tokens to a complete sentence, searched up to `cap` (Infinity beyond it, or where
   * the searches gave up). One effort budget for all the budgets tried, as minTokensAtLeast's:
   * each budget's search gives up past SEARCH_LIMIT, and a long document (600 array items under
   * a cap of 512) would try every budget up to the cap, each search walking states anew.
   */
  minTokensToAccept(state: number, cap: number): number {
    const outer = this.maskSearchLeft;
    if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = MIN_TOKENS_SEARCH_LIMIT;
    try {
      for (let k = 0; k <= cap; k++) if (this.canAcceptWithin(state, k)) return k;
      return Number.POSITIVE_INFINITY;
    } finally {
      if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = outer;
    }
  }

  /**
   * A proven lower bound on the tokens of every complete sentence from `state`: one more than the
   * largest budget up to `cap` that a finished search (not one that gave up) showed too small.
   * For the 422 message, which must not overstate what a grammar needs.
   */
  minTokensAtLeast(state: number, cap: number): number {
    // One effort budget for all the budgets tried (a 422 should come back fast); past it only
    // the cheap answers remain, and a query that gives up proves nothing. Its searches give up
    // at their share of the work limit (LOWER_BOUND_WORK_SHARE): the verdict is known already.
    const outer = this.maskSearchLeft;
    if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = MIN_TOKENS_SEARCH_LIMIT;
    this.searchShare = LOWER_BOUND_WORK_SHARE;
    try {
      let atLeast = 0;
      for (let k = 0; k <= cap; k++) {
        if (this.canAcceptWithin(state, k)) return k;
        if (!this.searchGaveUp) atLeast = k + 1;
      }
      return atLeast;
    } finally {
      if (outer === Number.POSITIVE_INFINITY) this.maskSearchLeft = outer;
      this.searchShare = 1;
    }
  }

  /** Tokens allowed in `state` with `remaining` tokens left (this one included). Read only. */
  mask(state: number, remaining: number): Uint32Array {
    if (state < 0 || remaining <= 0) return this.edges.emptyMask;
    if (this.maskSearchLeft !== Number.POSITIVE_INFINITY) return this.boundedMask(state, remaining);
    this.maskSearchLeft = MASK_SEARCH_LIMIT;
    try {
      return this.boundedMask(state, remaining);
    } finally {
      this.maskSearchLeft = Number.POSITIVE_INFINITY;
    }
  }

  private boundedMask(state: number, remaining: number): Uint32Array {
    if (this.bytesAreTokens) this.bounds.carryByteBound(state);
    const e = this.edges.edgesOf(state);
    const limit = remaining - 1;
    if (limit >= e.allFitFrom) return this.edges.edgeMask(e);
    const key = state * 65536 + Math.min(limit, BUDGET_KEY_CAP);
    let mask = this.budgetMasks.get(key);
    if (mask !== undefined) return mask;
    this.work.allowPlanning();
    let fit = 0;
    while (fit < e.distinct.length && this.canAcceptWithin(e.distinct[fit]!, limit)) fit++;
    if (fit === e.distinct.length) {
      e.allFitFrom = limit;
      return this.edges.edgeMask(e);
    }
    // The answers so far go to the walk below: a search that gave up is not remembered by the
    // memos, and asking its target again there searched it twice.
    const fits = new Map<number, boolean>();
    for (let i = 0; i <= fit; i++) fits.set(e.distinct[i]!, i < fit);
    mask = this.budgetMask(state, e, limit, fits);
    this.budgetMasks.set(key, mask);
    return mask;
  }

  /**
   * The walk again, keeping the tokens whose target can still finish within `limit` tokens
   * (`fits`: the answers known so far, by target).
   */
  private budgetMask(state: number, e: StateEdges, limit: number, fits: Map<number, boolean>): Uint32Array {
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
    for (let i = 0; i < e.distinct.length; i++)
      if (!fits.has(e.distinct[i]!)) fits.set(e.distinct[i]!, this.canAcceptWithin(e.distinct[i]!, limit));
    if (lexer === null) this.edges.walkWhole(state, mask, 0, fits);
    else {
      const hyps = lexer.automaton.hypotheses(state);
      this.edges.applyHypothesis(hyps[0]!, hyps[1]!, mask, 0, fits);
    }
    return mask;
  }

  hasAnyToken(state: number, remaining: number): boolean {
    const mask = this.mask(state, remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }
}
