/**
 * Free text as a constraint of its own, so one decode loop serves constrained and unconstrained
 * generation alike: every text token is allowed (not the control markers), every text is complete (the model may end it
 * with an end-of-generation token), nothing needs planning.
 */
import { copyMaskInto, type TokenConstraint, type TokenTrie } from "../constraint/index.js";

export class FreeTextConstraint implements TokenConstraint {
  constructor(private readonly trie: TokenTrie) {}

  writeMask(_remaining: number, out: Uint32Array): void {
    copyMaskInto(this.trie.textMask, out);
  }

  isAccepting(): boolean {
    return true;
  }

  hasAnyToken(remaining: number): boolean {
    return remaining > 0;
  }

  advance(token: number): boolean {
    return token >= 0 && (this.trie.textMask[token >>> 5]! & (1 << (token & 31))) !== 0;
  }

  minTokensToAccept(_cap: number): number {
    return 0;
  }
}
