/**
 * One grammar request's position (GrammarConstraintState): the decode loop's view of a grammar
 * constraint over a shared GrammarTokenMatcher, with prompt-boundary healing.
 */
import { copyMaskInto, type ForcedBytes, type TokenConstraint } from "../token-constraint.js";
import { PREFIX_PENDING } from "../types.js";
import type { GrammarTokenMatcher } from "./matcher.js";

/**
 * One request's position in a GrammarTokenMatcher, with optional prompt-boundary healing: the
 * first token must begin with `forcedPrefix`, whose bytes are not part of the sentence.
 *
 * Healing follows the rule DfaConstraintState documents (dfa/state.ts), not its code: here the
 * first step's edges are a token list the matcher caches per prefix (prefixEdges, made when the
 * state is), and a budgeted first mask is made afresh on each call, since a grammar's budget
 * answers may improve between calls (a search that gave up is not remembered as "no"); the regex
 * state walks the prefix's subtree into token ranges on first use and keeps one mask per budget.
 */
export class GrammarConstraintState implements TokenConstraint {
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

  /** The matcher's walks ahead (shared by every state of it), this state's next step's first; true when none are left. */
  walkAhead(deadline: number): boolean {
    this.matcher.work.begin();
    return this.matcher.walkAhead(deadline, this.state);
  }

  /** Allowed tokens with `remaining` tokens left: the matcher's shared bitset (read only), or a new one while healing. */
  mask(remaining: number): Uint32Array {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.mask(this.state, remaining);
    const mask = new Uint32Array(this.matcher.words);
    this.writePrefixMask(remaining, mask);
    return mask;
  }

  /** The decode loop's form of mask(), into the caller's buffer (the healing step allocates nothing). */
  writeMask(remaining: number, out: Uint32Array): void {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) {
      copyMaskInto(this.matcher.mask(this.state, remaining), out);
      return;
    }
    if (out.length !== this.matcher.words)
      throw new RangeError(`a mask of ${this.matcher.words} words written into a buffer of ${out.length}`);
    out.fill(0);
    this.writePrefixMask(remaining, out);
  }

  /** The healing step's tokens that can still finish within `remaining`, set in a zeroed `mask`. */
  private writePrefixMask(remaining: number, mask: Uint32Array): void {
    if (remaining <= 0) return;
    const tokens = this.prefixTokens!;
    const targets = this.prefixTargets!;
    for (let i = 0; i < tokens.length; i++) {
      if (this.matcher.canAcceptWithin(targets[i]!, remaining - 1)) {
        const id = tokens[i]!;
        mask[id >>> 5]! |= 1 << (id & 31);
      }
    }
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
    // The whole limit: its searches give up at their share of it (TokenBudgets.minTokensAtLeast)
    // instead of throwing, so the matcher stays usable.
    this.matcher.work.begin();
    return this.state === PREFIX_PENDING ? 0 : this.matcher.minTokensAtLeast(this.state, cap);
  }

  /**
   * Fewest tokens to a complete sentence, searched up to `cap`; as the DFA state's, when a known
   * completion surely fits within `cap`, its count instead (≤ cap, and exact when cap is the
   * fewest): proving every smaller budget too small is the costly part, and admission only asks
   * whether the budget fits.
   */
  minTokensToAccept(cap = 64): number {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) {
      const sure = this.matcher.surelyWithin(this.state, cap);
      return sure <= cap ? sure : this.matcher.minTokensToAccept(this.state, cap);
    }
    let best = Number.POSITIVE_INFINITY;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++)
      best = Math.min(best, 1 + this.matcher.minTokensToAccept(targets[i]!, Math.min(cap, best - 2)));
    return best;
  }

  /** See TokenConstraint.forcedBytes: a grammar literal's bytes, while one byte at a time can follow. */
  forcedBytes(max: number): ForcedBytes | null {
    if (this.state === PREFIX_PENDING) return null;
    const m = this.matcher;
    m.work.begin();
    // Asked after every sampled token: most states force nothing, and then nothing is allocated.
    if (m.forcedByte(this.state) < 0) return null;
    const out: number[] = [];
    let s = this.state;
    for (let b = m.forcedByte(s); b >= 0 && out.length < max && s >= 0; b = m.forcedByte(s)) {
      out.push(b);
      s = m.automaton.step(s, b);
    }
    const then = new Uint32Array(8);
    if (s >= 0) m.liveBytes(s, then);
    // The end of every sentence: complete, and no byte goes on to another.
    const ends = out.length < max && m.isAccepting(s) && then.every((w) => w === 0);
    return { bytes: Uint8Array.from(out), ends, then };
  }

  /** See TokenConstraint.allowsWithin. */
  allowsWithin(token: number, remaining: number): boolean {
    if (this.state === PREFIX_PENDING || remaining < 1) return false;
    this.matcher.work.begin();
    const target = this.matcher.advance(this.state, token);
    return target >= 0 && this.matcher.canAcceptWithin(target, remaining - 1);
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
