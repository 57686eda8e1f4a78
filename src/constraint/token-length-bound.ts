/**
 * The byte lower bound of the budget questions, in tokens: text of `lower` bytes needs more than
 * `budget` tokens when even that many of the longest tokens are too short, or that many of the
 * longest tokens made only of bytes the constraint can contain (40 terminals over `a` and `b`,
 * with no token joining the two, need a token per byte). DFA and grammar budgets both ask it.
 */
import type { TokenTrie } from "./trie.js";

export class TokenLengthBound {
  /** The most bytes of a token made only of the alphabet's bytes; -1 until first need. */
  private longest = -1;

  /** `alphabet`: the bytes the constraint's text can contain, as 8 words (undefined: any), asked once. */
  constructor(
    private readonly trie: TokenTrie,
    private readonly alphabet: () => Uint32Array | undefined,
  ) {}

  /** Whether `lower` bytes surely need more than `budget` tokens. */
  exceeds(lower: number, budget: number): boolean {
    if (lower === Number.POSITIVE_INFINITY || lower > budget * this.trie.maxTokenLength) return true;
    if (lower <= budget) return false;
    if (this.longest < 0) {
      const bytes = this.alphabet();
      this.longest = bytes === undefined ? this.trie.maxTokenLength : this.trie.longestTokenWithin(bytes);
    }
    return lower > budget * this.longest;
  }
}
