import type { DfaTokenMatcher } from "./dfa-matcher.js";

/** `state` value while the forced prefix has not been generated yet. */
export const PREFIX_PENDING = -2;

/**
 * One request's position in a `DfaTokenMatcher`: the decode loop's view of a regex constraint.
 *
 * Prompt-boundary healing: the decode loop may back up over the prompt's last token (bytes P) and
 * pass P as `forcedPrefix`. The first generated token must then begin with P: its bytes are
 * P · rest, and rest is matched by the pattern from its start. (Tokens that are a proper prefix of
 * P are not offered; P itself is always a candidate, landing on the pattern's start state.) The
 * caller strips P from the decoded output. The first token counts against the budget like any
 * other. This is one extra trie walk over P's subtree at the first step, done once per request;
 * every later step uses the matcher's shared per-state caches.
 */
export class DfaConstraintState {
  readonly matcher: DfaTokenMatcher;
  /** Current DFA state; PREFIX_PENDING before the first token when healing; -1 after a rejected path. */
  state: number;
  private readonly prefixTokens: Int32Array | undefined;
  private readonly prefixTargets: Int32Array | undefined;
  private prefixMaskLimit = -1;
  private prefixMask: Uint32Array | undefined;

  constructor(matcher: DfaTokenMatcher, forcedPrefix?: Uint8Array) {
    this.matcher = matcher;
    if (forcedPrefix === undefined || forcedPrefix.length === 0) {
      this.state = matcher.start;
      return;
    }
    this.state = PREFIX_PENDING;
    const trie = matcher.trie;
    const node = trie.findNode(forcedPrefix);
    if (node < 0) {
      this.prefixTokens = new Int32Array(0);
      this.prefixTargets = new Int32Array(0);
      return;
    }
    // Tokens in P's subtree, with the DFA state after their bytes beyond P (few: usually < 1000).
    const tokens: number[] = [];
    const targets: number[] = [];
    const from = trie.tokenStart[node]!;
    const to = trie.tokenStart[node + trie.subtreeSize[node]!]!;
    for (let k = from; k < to; k++) {
      const id = trie.tokenIds[k]!;
      const rest = trie.tokenBytes(id).subarray(forcedPrefix.length);
      const target = matcher.advanceFromStart(rest);
      if (target >= 0) {
        tokens.push(id);
        targets.push(target);
      }
    }
    this.prefixTokens = Int32Array.from(tokens);
    this.prefixTargets = Int32Array.from(targets);
  }

  isAccepting(): boolean {
    return this.matcher.isAccepting(this.state);
  }

  /** Allowed tokens with `remaining` tokens left (this one included). Shared bitset: read only. */
  mask(remaining?: number): Uint32Array {
    if (this.state !== PREFIX_PENDING) return this.matcher.mask(this.state, remaining);
    return this.prefixStepMask(remaining ?? 0x7fffffff);
  }

  hasAnyToken(remaining?: number): boolean {
    if (this.state !== PREFIX_PENDING) return this.matcher.hasAnyToken(this.state, remaining);
    const limit = (remaining ?? 0x7fffffff) - 1;
    if (limit < 0) return false;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++) if (this.matcher.canAcceptWithin(targets[i]!, limit)) return true;
    return false;
  }

  /** Exact minimum number of tokens to a full match from here (Infinity when unreachable). */
  minTokensToAccept(): number {
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensToAccept(this.state);
    let best = Number.POSITIVE_INFINITY;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++) {
      const d = this.matcher.minTokensToAccept(targets[i]!);
      if (d < best) best = d;
    }
    return best + 1;
  }

  /** Whether a full match is reachable within `budget` tokens (cheap unless budgets are tight). */
  canAcceptWithin(budget: number): boolean {
    if (this.state !== PREFIX_PENDING) return this.matcher.canAcceptWithin(this.state, budget);
    return this.hasAnyToken(budget);
  }

  /**
   * Moves past `tokenId`. Returns false, leaving the state unchanged, when the token is not
   * allowed by the pattern (budgets are the caller's mask business, not checked here).
   */
  advance(tokenId: number): boolean {
    let next: number;
    if (this.state === PREFIX_PENDING) {
      next = -1;
      const tokens = this.prefixTokens!;
      for (let i = 0; i < tokens.length; i++) {
        if (tokens[i] === tokenId) {
          next = this.prefixTargets![i]!;
          break;
        }
      }
    } else {
      next = this.matcher.advance(this.state, tokenId);
    }
    if (next < 0) return false;
    this.state = next;
    return true;
  }

  private prefixStepMask(remaining: number): Uint32Array {
    if (remaining <= 0) return this.matcher.emptyMask;
    const limit = remaining - 1;
    if (this.prefixMask !== undefined && this.prefixMaskLimit === limit) return this.prefixMask;
    const mask = new Uint32Array(this.matcher.words);
    const tokens = this.prefixTokens!;
    const targets = this.prefixTargets!;
    for (let i = 0; i < tokens.length; i++) {
      if (this.matcher.canAcceptWithin(targets[i]!, limit)) {
        const id = tokens[i]!;
        mask[id >>> 5]! |= 1 << (id & 31);
      }
    }
    this.prefixMask = mask;
    this.prefixMaskLimit = limit;
    return mask;
  }
}
