/**
 * Fast-forward: where the constraint allows exactly one continuation (a JSON key and its `": `, a
 * closing bracket, a tool call's wrapper, a grammar's literal), the decode loop appends it as
 * tokens fed in one batched decode with the next step, instead of sampling them one decode each.
 *
 * Which tokens: the forced text as the model's own tokenizer writes it (its canonical tokens: a
 * model was trained on those, not on whatever split a token trie allows), when they spell
 * exactly the forced bytes; where they do not (a SentencePiece tokenizer puts a space before a
 * text's first word), the longest token at each point instead, which is what such tokenizers
 * mostly pick. The last of them is left to be sampled
 * unless every match ends right there: a longer token could begin with its bytes and go on into
 * what follows (`"name": "` then `Jo…`), and forcing the short one would push the model into a
 * split it never saw (llguidance's rule); when no token extends it with a byte that may follow,
 * or every match ends there, it is forced too. A forced run that ends inside a UTF-8 character stops
 * before it. Each token must also be in the step's budget mask (TokenConstraint.allowsWithin):
 * the canonical split may take more tokens than the budget planned, and the run then stops
 * there and sampling goes on within the budget, so the output stays a complete match.
 */
import type { TokenConstraint, TokenTrie } from "../constraint/index.js";
import type { Vocabulary } from "../vocab/index.js";

/** Most bytes one forced run takes (a longer one continues after the next step). */
export const FAST_FORWARD_MAX_BYTES = 256;

/** Text to the model's tokens, without BOS or special-token parsing. */
export type TextTokenizer = (text: string) => Int32Array;

/** How a model spells forced text: bytes (whole UTF-8 characters) to the tokens that spell them exactly, or null. */
export interface ForcedSpeller {
  readonly trie: TokenTrie;
  spell(bytes: Uint8Array): Int32Array | null;
}

/** The speller of a model: its tokenizer's tokens when they spell the bytes, else the longest tokens. */
export function forcedSpeller(vocab: Vocabulary, trie: TokenTrie, tokenize: TextTokenizer): ForcedSpeller {
  return {
    trie,
    spell(bytes) {
      let text: string;
      try {
        text = utf8.decode(bytes);
      } catch {
        return null;
      }
      const tokens = tokenize(text);
      return spells(vocab, tokens, bytes) ? tokens : longestTokens(trie, bytes);
    },
  };
}

/** Whether `tokens` spell exactly `bytes`. */
function spells(vocab: Vocabulary, tokens: Int32Array, bytes: Uint8Array): boolean {
  let at = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = vocab.tokenBytes(tokens[i]!);
    for (let j = 0; j < t.length; j++, at++) if (at >= bytes.length || t[j] !== bytes[at]) return false;
  }
  return at === bytes.length;
}

/** `bytes` as the longest generable token at each point, or null where no token starts. */
function longestTokens(trie: TokenTrie, bytes: Uint8Array): Int32Array | null {
  const out: number[] = [];
  for (let at = 0; at < bytes.length; ) {
    let best = -1;
    let bestEnd = at;
    for (let p = 0, i = at; i < bytes.length; i++) {
      p = trie.child(p, bytes[i]!);
      if (p < 0) break;
      for (let k = trie.tokenStart[p]!; k < trie.tokenStart[p + 1]!; k++) {
        const id = trie.tokenIds[k]!;
        if (trie.isGenerable(id)) {
          best = id;
          bestEnd = i + 1;
          break;
        }
      }
    }
    if (best < 0) return null;
    out.push(best);
    at = bestEnd;
  }
  return Int32Array.from(out);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Length of `bytes` without a UTF-8 character cut off at its end. */
function wholeCharacters(bytes: Uint8Array): number {
  let lead = bytes.length - 1;
  // Back over continuation bytes (at most 3) to the last character's first byte.
  while (lead >= 0 && bytes.length - lead <= 4 && (bytes[lead]! & 0xc0) === 0x80) lead--;
  if (lead < 0) return 0;
  const b = bytes[lead]!;
  const size = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return lead + size <= bytes.length ? bytes.length : lead;
}

/**
 * Whether some token begins with `token`'s bytes and goes on with a byte of `then` (what may
 * follow the forced run): then the model might have written the run's end and what follows as
 * that longer token, and the run's last token is left to be sampled.
 */
function extendsPast(token: number, then: Uint32Array, trie: TokenTrie): boolean {
  if (!trie.isGenerable(token)) return true;
  const node = trie.tokenNode[token]!;
  const { nodeByte, subtreeSize } = trie;
  for (let c = node + 1, end = node + subtreeSize[node]!; c < end; c += subtreeSize[c]!) {
    const b = nodeByte[c]!;
    if (((then[b >>> 5]! >>> (b & 31)) & 1) !== 0) return true;
  }
  return false;
}

/**
 * The tokens to append from the constraint's position (not yet checked against the budget), or
 * null when nothing is forced or no tokens spell it.
 */
export function forcedTokens(constraint: TokenConstraint, speller: ForcedSpeller): Int32Array | null {
  if (constraint.allowsWithin === undefined) return null; // every forced token is checked against its budget
  const forced = constraint.forcedBytes?.(FAST_FORWARD_MAX_BYTES);
  if (!forced) return null;
  const length = wholeCharacters(forced.bytes);
  if (length === 0) return null;
  const tokens = speller.spell(forced.bytes.subarray(0, length));
  if (tokens === null) return null;
  const keep =
    length === forced.bytes.length && !extendsPast(tokens[tokens.length - 1]!, forced.then, speller.trie)
      ? tokens.length
      : tokens.length - 1;
  return keep > 0 ? tokens.subarray(0, keep) : null;
}
