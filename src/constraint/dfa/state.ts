/**
 * One regex request's position (DfaConstraintState): the decode loop's view of a regex
 * constraint over a shared DfaTokenMatcher, with prompt-boundary healing.
 */
import { setTokenRange } from "../../support/index.js";
import { copyMaskInto, type ForcedBytes, type TokenConstraint } from "../token-constraint.js";
import { PREFIX_PENDING } from "../types.js";
import { LOWER_BOUND_WORK_SHARE } from "../work-meter.js";
import { NO_BUDGET } from "./budget.js";
import type { DfaTokenMatcher } from "./matcher.js";

/**
 * One request's position in a `DfaTokenMatcher`: the decode loop's view of a regex constraint.
 *
 * Prompt-boundary healing: the decode loop may back up over the prompt's last token (bytes P) and
 * pass P as `forcedPrefix`. The first generated token must then begin with P: its bytes are
 * P · rest, and rest is matched by the pattern from its start. (Tokens that are a proper prefix of
 * P are not offered; P itself is always a candidate, landing on the pattern's start state.) The
 * caller strips P from the decoded output. The first token counts against the budget like any
 * other. Cost: one walk of P's trie subtree at the first step (token ranges with their target
 * states, computed once per request); every later step uses the matcher's shared caches.
 *
 * Each operation begins the matcher's work meter (work-meter.ts): one that would take more than
 * its limit throws ConstraintTooCostlyError, as does every operation on that matcher afterwards.
 */
export class DfaConstraintState implements TokenConstraint {
  readonly matcher: DfaTokenMatcher;
  /** Current DFA state; PREFIX_PENDING before the first token when healing. */
  state: number;
  private readonly prefix: Uint8Array | undefined;
  /** Trie node of the forced prefix (-1: no token starts with it). */
  private readonly prefixNode: number;
  /** (from, to, target) token ranges of the first step, computed on first use. */
  private prefixSpans: Int32Array | undefined;
  private prefixMaskLimit = -1;
  private prefixMask: Uint32Array | undefined;

  constructor(matcher: DfaTokenMatcher, forcedPrefix?: Uint8Array) {
    this.matcher = matcher;
    if (forcedPrefix === undefined || forcedPrefix.length === 0) {
      this.state = matcher.start;
      this.prefixNode = -1;
      return;
    }
    this.state = PREFIX_PENDING;
    this.prefix = forcedPrefix.slice();
    this.prefixNode = matcher.trie.findNode(forcedPrefix);
  }

  isAccepting(): boolean {
    return this.matcher.isAccepting(this.state);
  }

  /** Allowed tokens with `remaining` tokens left (this one included). Shared bitset: read only. */
  mask(remaining?: number): Uint32Array {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.mask(this.state, remaining);
    return this.prefixStepMask(remaining ?? NO_BUDGET);
  }

  /** The decode loop's form of mask(): a copy into the caller's buffer. */
  writeMask(remaining: number, out: Uint32Array): void {
    copyMaskInto(this.mask(remaining), out);
  }

  hasAnyToken(remaining?: number): boolean {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.hasAnyToken(this.state, remaining);
    const limit = (remaining ?? NO_BUDGET) - 1;
    if (limit < 0) return false;
    const spans = this.spans();
    for (let i = 0; i < spans.length; i += 3) if (this.matcher.canAcceptWithin(spans[i + 2]!, limit)) return true;
    return false;
  }

  /**
   * Exact minimum number of tokens to a full match from here (Infinity when unreachable). With
   * `cap`: when a match fits within cap tokens, some number ≤ cap, cheaply where bounds allow;
   * Infinity when none fits (minTokensAtLeast then says how many it takes).
   */
  minTokensToAccept(cap: number = Number.POSITIVE_INFINITY): number {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensToAccept(this.state, cap);
    const spans = this.spans();
    if (Number.isFinite(cap)) {
      if (cap < 1) return Number.POSITIVE_INFINITY;
      for (let i = 0; i < spans.length; i += 3) {
        const target = spans[i + 2]!;
        if (this.matcher.canAcceptWithin(target, cap - 1)) return this.matcher.minTokensToAccept(target, cap - 1) + 1;
      }
      return Number.POSITIVE_INFINITY;
    }
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < spans.length; i += 3) {
      const d = this.matcher.minTokensToAccept(spans[i + 2]!);
      if (d < best) best = d;
    }
    return best + 1;
  }

  /** A proven lower bound on the tokens of any full match from here: exact when at most `cap`. */
  minTokensAtLeast(cap: number): number {
    this.matcher.work.begin(LOWER_BOUND_WORK_SHARE);
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensAtLeast(this.state, cap);
    if (cap < 1) return 1;
    let best = Number.POSITIVE_INFINITY;
    const spans = this.spans();
    for (let i = 0; i < spans.length; i += 3) best = Math.min(best, this.matcher.minTokensAtLeast(spans[i + 2]!, cap - 1) + 1);
    return best;
  }

  /** Whether a full match is reachable within `budget` tokens (cheap unless budgets are tight). */
  canAcceptWithin(budget: number): boolean {
    this.matcher.work.begin();
    if (this.state !== PREFIX_PENDING) return this.matcher.canAcceptWithin(this.state, budget);
    return this.hasAnyToken(budget);
  }

  /** See TokenConstraint.forcedBytes. */
  forcedBytes(max: number): ForcedBytes | null {
    // Asked after every sampled token: most states force nothing, and then nothing is allocated.
    if (this.state === PREFIX_PENDING || this.matcher.forcedByte(this.state) < 0) return null;
    const { next, numClasses, byteClass, minBytesToAccept } = this.matcher.dfa;
    const out: number[] = [];
    let s = this.state;
    for (let b = this.matcher.forcedByte(s); b >= 0 && out.length < max; b = this.matcher.forcedByte(s)) {
      out.push(b);
      s = next[s * numClasses + byteClass[b]!]!;
    }
    const then = new Uint32Array(8);
    for (let b = 0; b < 256; b++) {
      const t = next[s * numClasses + byteClass[b]!]!;
      if (t >= 0 && minBytesToAccept[t]! >= 0) then[b >>> 5]! |= 1 << (b & 31);
    }
    // The end of every match: accepting, and no byte goes on to another.
    const ends = out.length < max && this.matcher.isAccepting(s) && then.every((w) => w === 0);
    return { bytes: Uint8Array.from(out), ends, then };
  }

  /** See TokenConstraint.allowsWithin. */
  allowsWithin(tokenId: number, remaining: number): boolean {
    if (this.state === PREFIX_PENDING || remaining < 1) return false;
    this.matcher.work.begin();
    const target = this.matcher.advance(this.state, tokenId);
    return target >= 0 && this.matcher.canAcceptWithin(target, remaining - 1);
  }

  /**
   * Moves past `tokenId`. Returns false, leaving the state unchanged, when the pattern (or the
   * forced prefix) does not allow the token; budgets are the mask's business, not checked here.
   */
  advance(tokenId: number): boolean {
    this.matcher.work.begin();
    let next: number;
    if (this.state === PREFIX_PENDING) {
      next = -1;
      const trie = this.matcher.trie;
      const node = trie.isGenerable(tokenId) ? trie.tokenNode[tokenId]! : -1;
      const root = this.prefixNode;
      if (root >= 0 && node >= root && node < root + trie.subtreeSize[root]!) {
        next = this.matcher.advanceByteArray(this.matcher.start, trie.tokenBytes(tokenId).subarray(this.prefix!.length));
      }
    } else {
      next = this.matcher.advance(this.state, tokenId);
    }
    if (next < 0) return false;
    this.state = next;
    return true;
  }

  private spans(): Int32Array {
    if (this.prefixSpans === undefined) this.prefixSpans = this.matcher.subtreeSpans(this.prefixNode, this.matcher.start);
    return this.prefixSpans;
  }

  private prefixStepMask(remaining: number): Uint32Array {
    if (remaining <= 0) return this.matcher.emptyMask;
    const limit = remaining - 1;
    if (this.prefixMask !== undefined && this.prefixMaskLimit === limit) return this.prefixMask;
    const mask = new Uint32Array(this.matcher.words);
    const spans = this.spans();
    const tokenIds = this.matcher.trie.tokenIds;
    for (let i = 0; i < spans.length; i += 3) {
      if (!this.matcher.canAcceptWithin(spans[i + 2]!, limit)) continue;
      setTokenRange(mask, tokenIds, spans[i]!, spans[i + 1]!);
    }
    this.prefixMask = mask;
    this.prefixMaskLimit = limit;
    return mask;
  }
}
