/**
 * Token masks and budgets for an automaton with unboundedly many states (a grammar's lexer +
 * LALR parser), where nothing can be precomputed over all states as for a regex DFA. This file is
 * the public front (GrammarTokenMatcher); its parts are edges.ts (masks), lexer-walks.ts with
 * lexer-sets.ts and equivalence.ts (the walks shared by every stack), budget.ts and bounds.ts
 * (budgets), contracts.ts (what the automaton offers) and state.ts (one request's position).
 *
 * Masks: per visited state, the allowed tokens and their distinct target states, cached. A state
 * takes its commit-free tokens from a walk cached per tuple of lexer-level states (one per
 * hypothesis) and shared by every parser stack (see LexerLevelWalks); only the trie
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
import { TableSlab } from "../../support/index.js";
import type { TokenTrie } from "../trie.js";
import { GRAMMAR_NODE_WEIGHT, GRAMMAR_STEP_WEIGHT, WorkMeter } from "../work-meter.js";
import { CompletionBounds } from "./bounds.js";
import { TokenBudgets } from "./budget.js";
import type { CompletableAutomaton } from "./contracts.js";
import { StateEdgeCache } from "./edges.js";
import { ForcedBytesOfStates } from "./forced.js";
import { LexerLevelWalks } from "./lexer-walks.js";
import { listOf, MATCHER_SLAB_BYTES } from "./tables.js";

/**
 * Most time one matcher spends walking ahead (walkAhead), over all calls: enough at 152k tokens
 * for the token starts and bodies of a JSON or SQL grammar and the sets where their tokens end
 * (JSON's 320 sets 100 ms, arithmetic's 135 80 ms, SQL's 684 240 ms, measured here). The decode
 * loop gives it a slice of each round while the model decodes (the scheduler's
 * AHEAD_OF_LOGITS_MS), so it costs a request nothing there.
 */
export const WALK_AHEAD_MS = 400;

/**
 * The token matcher of one grammar automaton over one trie, shared by every request that uses it.
 * Its parts share the slab of their first tables and the work meter: the mask cache (edges), the
 * budgets and the bounds they start from are objects it owns, each holding the tables of its own
 * idea; the budgets read the mask cache's records.
 */
export class GrammarTokenMatcher {
  readonly words: number;
  private readonly tables = new TableSlab(MATCHER_SLAB_BYTES);
  private readonly prefixCache = new Map<string, { tokens: Int32Array; targets: Int32Array }>();
  /** What walkAhead may still spend (ms); 0 once it has walked everything. */
  private walkAheadLeftMs: number;
  /** Lexer-level walks shared by all parser stacks; null when the automaton's shape is unknown. */
  private readonly lexer: LexerLevelWalks | null;
  private readonly edges: StateEdgeCache;
  private readonly bounds: CompletionBounds;
  private readonly budgets: TokenBudgets;
  private readonly forced: ForcedBytesOfStates;
  /** Bounds each operation's walks (see work-meter.ts); the constraint state begins it. */
  readonly work = new WorkMeter(Number.POSITIVE_INFINITY, GRAMMAR_STEP_WEIGHT, GRAMMAR_NODE_WEIGHT);

  constructor(
    readonly trie: TokenTrie,
    readonly automaton: CompletableAutomaton,
    /**
     * `lexerLevel` off: every state walks the trie with the automaton; `loopSlices` off: root walks
     * walk their loop regions (the references the tests compare with). `walkAheadMs`: walkAhead's
     * time over the matcher's life (WALK_AHEAD_MS; a test that needs every walk ahead, however
     * slow the machine, gives Infinity).
     */
    options: { lexerLevel?: boolean; loopSlices?: boolean; walkAheadMs?: number } = {},
  ) {
    this.walkAheadLeftMs = options.walkAheadMs ?? WALK_AHEAD_MS;
    // The lexer steps and scanners an operation makes are its work too (a scanner of 500 terminals).
    if (automaton.lexerWork !== undefined) this.work.source = () => automaton.lexerWork!;
    this.lexer =
      options.lexerLevel === false ? null : LexerLevelWalks.over(trie, automaton, this.tables, this.work, options.loopSlices !== false);
    this.edges = new StateEdgeCache(trie, automaton, this.lexer, this.tables, this.work);
    this.bounds = new CompletionBounds(trie, automaton, this.lexer, this.tables, this.work);
    this.budgets = new TokenBudgets(trie, automaton, this.lexer, this.edges, this.bounds, this.tables, this.work);
    this.forced = new ForcedBytesOfStates(automaton, this.tables, this.work);
    this.words = this.edges.words;
  }

  /** The mask of no token (made on first need: dead states and spent budgets are rare). */
  get emptyMask(): Uint32Array {
    return this.edges.emptyMask;
  }

  get start(): number {
    return this.automaton.start;
  }

  /**
   * An estimate of the heap bytes it holds (the constraint cache's budget), erring high: every
   * mask and per-state record it made, its memo tables, and its lexer walks.
   */
  retainedBytes(): number {
    let bytes = MATCHER_SLAB_BYTES + this.edges.retainedBytes() + this.bounds.retainedBytes() + this.budgets.retainedBytes();
    bytes += (this.lexer?.retainedBytes() ?? 0) + this.forced.byteLength;
    for (const cached of this.prefixCache.values()) bytes += 200 + cached.tokens.byteLength + cached.targets.byteLength;
    return bytes;
  }

  /** The lexer-level root walks made and taken over (see LexerLevelWalks.rootWalkCounts); null without them. */
  get rootWalkCounts(): LexerLevelWalks["rootWalkCounts"] | null {
    return this.lexer?.rootWalkCounts ?? null;
  }

  /** Whether masks go through the lexer-level cache (the automaton's shape was recognised). */
  get lexerLevel(): boolean {
    return this.lexer !== null;
  }

  /**
   * Walks ahead of need until `deadline` (performance.now() time), within WALK_AHEAD_MS over the
   * matcher's life: the start state's walk, then the trie walks of every scanner's token start and
   * of the token bodies one byte in (string contents, names, numbers), which the first states of
   * most sentences need and which cost the most (a few ms each at 152k tokens), then those of the
   * sets where their tokens end, which budget masks ask about (LexerLevelWalks); first of all,
   * those the step after `current` (a state whose mask is made) walks from, which it walks also
   * once the rest is done. The decode loop runs it ahead of the logits in every round
   * (CompletionJob.aheadOfLogits), so first requests do not pay these walks token by token, and
   * the first mask does not wait for them. True when none but the next step's are left.
   */
  walkAhead(deadline: number, current = -1): boolean {
    const lexer = this.lexer;
    if (lexer === null || (this.walkAheadLeftMs <= 0 && current < 0)) return true;
    const began = performance.now();
    if (this.walkAheadLeftMs > 0) {
      // The first mask needs it anyway: an operation of its own (the compile's probe made it on a
      // fresh matcher under the same limit), not charged on top of the last one's steps.
      this.work.begin();
      this.allowedMask(this.start);
    }
    // Walks ahead are not an operation of a request: bounded by time and bytes, each one a walk
    // some mask would make (the trie's size at most), they charge no operation; the first that
    // asks for one pays what it cost (LexerLevelWalks.aheadWalk), so the clock decides no verdict.
    // The next step's sets whatever the budget left: a few, and mostly walked already.
    this.walkNextSets(current, deadline);
    let done = true;
    if (this.walkAheadLeftMs > 0) done = lexer.walkAhead(Math.min(deadline, began + this.walkAheadLeftMs));
    if (this.walkAheadLeftMs > 0) this.walkAheadLeftMs = done ? 0 : this.walkAheadLeftMs - (performance.now() - began);
    return this.walkAheadLeftMs <= 0;
  }

  /**
   * The walks of the lexer-state sets the next step's mask walks from, whatever token comes: one
   * per hypothesis of each target of `current` (once its mask is made; else none), among them the
   * sets just after a commit, which the walks ahead of where tokens end do not meet. Once per
   * state: in every later round it is one lookup.
   */
  private walkNextSets(current: number, deadline: number): void {
    const lexer = this.lexer!;
    const e = current < 0 ? undefined : this.edges.knownEdges(current);
    if (e === undefined || e.nextWalked) return;
    const targets = e.distinct;
    for (let i = 0; i < targets.length; i++) {
      const hyps = lexer.automaton.hypotheses(targets[i]!);
      for (let h = 1; h < hyps.length; h += 2) if (!lexer.walkSet(lexer.setOfLexer(hyps[h]!), deadline)) return;
    }
    e.nextWalked = true;
  }

  /** Every token the grammar allows in `state`, whatever the budget. Read only. */
  allowedMask(state: number): Uint32Array {
    return state < 0 ? this.emptyMask : this.edges.edgeMask(this.edges.edgesOf(state));
  }

  /** Distinct states the allowed tokens of `state` lead to (tests, budgets). */
  targetsOf(state: number): Int32Array {
    return state < 0 ? new Int32Array(0) : this.edges.edgesOf(state).distinct;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.automaton.isComplete(state);
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

  /** Whether a complete sentence is reachable from `state` within `budget` tokens. */
  canAcceptWithin(state: number, budget: number): boolean {
    return this.budgets.canAcceptWithin(state, budget);
  }

  /** Fewest tokens to a complete sentence, searched up to `cap` (Infinity beyond it). */
  minTokensToAccept(state: number, cap: number): number {
    return this.budgets.minTokensToAccept(state, cap);
  }

  /** Tokens that surely suffice, ≤ cap, from a known completion; Infinity when none is known to fit (see TokenBudgets). */
  surelyWithin(state: number, cap: number): number {
    return this.budgets.surelyWithin(state, cap);
  }

  /**
   * A proven lower bound on the tokens of every complete sentence from `state`: one more than the
   * largest budget up to `cap` that a finished search (not one that gave up) showed too small.
   * For the 422 message, which must not overstate what a grammar needs.
   */
  minTokensAtLeast(state: number, cap: number): number {
    return this.budgets.minTokensAtLeast(state, cap);
  }

  /** Tokens allowed in `state` with `remaining` tokens left (this one included). Read only. */
  mask(state: number, remaining: number): Uint32Array {
    return this.budgets.mask(state, remaining);
  }

  hasAnyToken(state: number, remaining: number): boolean {
    return this.budgets.hasAnyToken(state, remaining);
  }

  /** The one byte that can follow `state` on the way to a complete sentence, or -1 (see forced.ts). */
  forcedByte(state: number): number {
    return this.forced.forcedByte(state);
  }

  /** The bytes that may follow `state` on the way to a complete sentence, set in a zeroed `out` (8 words). */
  liveBytes(state: number, out: Uint32Array): void {
    this.forced.liveBytes(state, out);
  }
}
