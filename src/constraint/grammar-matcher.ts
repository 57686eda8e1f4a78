/**
 * Token masks and budgets for an automaton with unboundedly many states (a grammar's lexer +
 * LALR parser), where nothing can be precomputed over all states as for a regex DFA.
 *
 * Per visited state, one trie walk gives the allowed tokens and each token's target state; it is
 * cached, so revisiting a state (common: inside a string, between list items) costs a lookup.
 * Budgets: a token is allowed with `remaining` tokens left only if a complete sentence is still
 * reachable within remaining-1 tokens after it. When every byte is a token, the automaton's exact
 * byte distance to completion bounds the tokens from above; otherwise, and when that bound is too
 * loose, a bounded depth-first search over cached token transitions decides. When the search gives
 * up, the token is refused: budgets may then be stricter than necessary, never looser, so a
 * completion is never a truncated half sentence.
 */
import type { TokenTrie } from "./trie.js";
import type { ByteAutomaton } from "./types.js";
import { maskWords } from "./types.js";
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
  mask: Uint32Array;
  tokens: Int32Array;
  targets: Int32Array;
  /** Distinct targets, by ascending lower-bound distance (search order). */
  distinct: Int32Array;
}

/** Depth-first search effort per budget query before refusing (conservative). */
const SEARCH_LIMIT = 4000;

export class GrammarTokenMatcher {
  readonly words: number;
  readonly emptyMask: Uint32Array;
  private readonly edges = new Map<number, StateEdges>();
  private readonly exactBytes = new Map<number, number>();
  /** (state, budget) → can finish: 1 yes, 0 no. */
  private readonly finishMemo = new Map<string, number>();
  private readonly budgetMasks = new Map<string, Uint32Array>();
  private searchLeft = 0;
  private searchGaveUp = false;

  constructor(
    readonly trie: TokenTrie,
    readonly automaton: CompletableAutomaton,
  ) {
    this.words = maskWords(trie.vocabSize);
    this.emptyMask = new Uint32Array(this.words);
  }

  get start(): number {
    return this.automaton.start;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.automaton.isComplete(state);
  }

  private edgesOf(state: number): StateEdges {
    let e = this.edges.get(state);
    if (e !== undefined) return e;
    const mask = new Uint32Array(this.words);
    const tokens: number[] = [];
    const targets: number[] = [];
    const ids = this.trie.tokenIds;
    walkTrie(this.trie, this.automaton, state, 0, mask, (from, to, target) => {
      for (let k = from; k < to; k++) {
        tokens.push(ids[k]!);
        targets.push(target);
      }
    });
    const distinct = [...new Set(targets)];
    const lb = new Map(distinct.map((t) => [t, this.automaton.minBytesLowerBound(t)]));
    distinct.sort((a, b) => lb.get(a)! - lb.get(b)!);
    // Sorted by token id so advance() can binary-search.
    const order = tokens.map((_, i) => i).sort((a, b) => tokens[a]! - tokens[b]!);
    e = {
      mask,
      tokens: Int32Array.from(order, (i) => tokens[i]!),
      targets: Int32Array.from(order, (i) => targets[i]!),
      distinct: Int32Array.from(distinct),
    };
    this.edges.set(state, e);
    return e;
  }

  /** State after the token, or -1 when the grammar does not allow it here. */
  advance(state: number, token: number): number {
    if (state < 0) return -1;
    const { tokens, targets } = this.edgesOf(state);
    let lo = 0;
    let hi = tokens.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const t = tokens[mid]!;
      if (t === token) return targets[mid]!;
      if (t < token) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** State after raw bytes from `state` (healing: the bytes after a forced prefix), or -1. */
  advanceBytes(state: number, bytes: Uint8Array): number {
    let s = state;
    for (let i = 0; i < bytes.length && s >= 0; i++) s = this.automaton.step(s, bytes[i]!);
    return s;
  }

  private exact(state: number): number {
    let v = this.exactBytes.get(state);
    if (v === undefined) {
      v = this.automaton.minBytesToComplete(state, 5000);
      this.exactBytes.set(state, v);
    }
    return v;
  }

  /** Whether a complete sentence is reachable from `state` within `budget` tokens. */
  canAcceptWithin(state: number, budget: number): boolean {
    this.searchLeft = SEARCH_LIMIT;
    this.searchGaveUp = false;
    return this.finishable(state, budget);
  }

  private finishable(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.automaton.isComplete(state)) return true;
    if (budget <= 0) return false;
    const lower = this.automaton.minBytesLowerBound(state);
    if (lower === Infinity || lower > budget * this.trie.maxTokenLength) return false;
    if (this.trie.everyByteIsToken) {
      const bytes = this.exact(state);
      if (bytes >= 0 && bytes <= budget) return true;
    }
    const key = `${state}:${budget}`;
    const memo = this.finishMemo.get(key);
    if (memo !== undefined) return memo === 1;
    if (this.searchLeft-- <= 0) {
      this.searchGaveUp = true;
      return false;
    }
    let found = false;
    const { distinct } = this.edgesOf(state);
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

  /** Tokens allowed in `state` with `remaining` tokens left (this one included). Read only. */
  mask(state: number, remaining: number): Uint32Array {
    if (state < 0 || remaining <= 0) return this.emptyMask;
    const e = this.edgesOf(state);
    const limit = remaining - 1;
    let all = true;
    for (let i = 0; i < e.distinct.length && all; i++) if (!this.canAcceptWithin(e.distinct[i]!, limit)) all = false;
    if (all) return e.mask;
    const key = `${state}:${limit}`;
    let mask = this.budgetMasks.get(key);
    if (mask !== undefined) return mask;
    mask = new Uint32Array(this.words);
    const ok = new Map<number, boolean>();
    for (let i = 0; i < e.tokens.length; i++) {
      const t = e.targets[i]!;
      let fits = ok.get(t);
      if (fits === undefined) {
        fits = this.canAcceptWithin(t, limit);
        ok.set(t, fits);
      }
      if (fits) {
        const id = e.tokens[i]!;
        mask[id >>> 5]! |= 1 << (id & 31);
      }
    }
    this.budgetMasks.set(key, mask);
    return mask;
  }

  hasAnyToken(state: number, remaining: number): boolean {
    const mask = this.mask(state, remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }
}

/** `state` value while a healed prompt's forced prefix is still to come. */
const PREFIX_PENDING = -2;

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
    const trie = matcher.trie;
    const node = trie.findNode(forcedPrefix);
    const tokens: number[] = [];
    const targets: number[] = [];
    if (node >= 0) {
      const from = trie.tokenStart[node]!;
      const to = trie.tokenStart[node + trie.subtreeSize[node]!]!;
      for (let k = from; k < to; k++) {
        const id = trie.tokenIds[k]!;
        const target = matcher.advanceBytes(matcher.start, trie.tokenBytes(id).subarray(forcedPrefix.length));
        if (target >= 0) {
          tokens.push(id);
          targets.push(target);
        }
      }
    }
    this.prefixTokens = Int32Array.from(tokens);
    this.prefixTargets = Int32Array.from(targets);
  }

  isAccepting(): boolean {
    return this.state !== PREFIX_PENDING && this.matcher.isAccepting(this.state);
  }

  mask(remaining: number): Uint32Array {
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
    if (this.state !== PREFIX_PENDING) return this.matcher.hasAnyToken(this.state, remaining);
    const mask = this.mask(remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }

  /** Fewest tokens to a complete sentence, searched up to `cap`. */
  minTokensToAccept(cap = 64): number {
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensToAccept(this.state, cap);
    let best = Number.POSITIVE_INFINITY;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++) best = Math.min(best, 1 + this.matcher.minTokensToAccept(targets[i]!, Math.min(cap, best - 2)));
    return best;
  }

  advance(token: number): boolean {
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
