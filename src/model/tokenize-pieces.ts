/**
 * Long texts for llama.cpp's SentencePiece tokenizer, in pieces. Its byte fallback reserves exactly
 * a character's bytes in the output vector, so each character of a run that falls back to bytes
 * (CJK or emoji on a small vocabulary) reallocates and copies the whole output so far: quadratic.
 * On stories260K 16k CJK characters took 43 ms, 64k took 660 ms, on the thread that serves requests.
 *
 * Pieces keep the tokens exact. A piece boundary lies between two characters that occur in no
 * token's text and are not whitespace ("isolated": characters that always fall back to bytes). No
 * merge, special-token match or whitespace strip can include them, so each side tokenizes as it
 * does within the whole. A piece after the first is tokenized with the boundary's left character in
 * front, and that character's own tokens (after the space SentencePiece puts at a text's start) are
 * cut off again; should they not lead the piece's tokens, the whole text is tokenized at once.
 * Pieces bound what one llama.cpp call returns, so the time is linear in the text. A run that falls
 * back to bytes without such boundaries (characters found only inside longer tokens) stays whole.
 */
import { concatInt32 } from "../support/index.js";
import type { GgufStringArray } from "../vocab/index.js";

/** The addon's tokenize: (text, addSpecial, parseSpecial) → token ids. */
export type RawTokenize = (text: string, addSpecial: boolean, parseSpecial: boolean) => Int32Array;

const CODE_POINTS = 0x110000;

/** A bitset of the code points that occur in some token's text (the rest are isolated). */
export function tokenCodePoints(tokens: GgufStringArray): Uint32Array {
  const bits = new Uint32Array(CODE_POINTS >>> 5);
  const add = (cp: number): void => {
    bits[cp >>> 5]! |= 1 << (cp & 31);
  };
  for (let id = 0; id < tokens.length; id++) {
    for (const ch of tokens.item(id)) add(ch.codePointAt(0)!);
  }
  // llama.cpp writes a space as U+2581 before it tokenizes; either spelling is the other. The
  // whitespace a marker with LSTRIP / RSTRIP swallows (C isspace) is never a boundary either: a
  // newline is a byte token only, yet "<|end|>\n" strips it and the next text starts a fragment.
  add(0x20);
  add(0x2581);
  for (let cp = 0x09; cp <= 0x0d; cp++) add(cp);
  return bits;
}

function isolated(inVocab: Uint32Array, cp: number): boolean {
  // A lone surrogate reaches llama.cpp as U+FFFD: never cut beside one.
  if (cp >= 0xd800 && cp <= 0xdfff) return false;
  return (inVocab[cp >>> 5]! & (1 << (cp & 31))) === 0;
}

/** UTF-16 length of the code point that ends at `at` (2 for a surrogate pair). */
function lengthBefore(text: string, at: number): number {
  const low = text.charCodeAt(at - 1);
  if (low >= 0xdc00 && low <= 0xdfff && at >= 2) {
    const high = text.charCodeAt(at - 2);
    if (high >= 0xd800 && high <= 0xdbff) return 2;
  }
  return 1;
}

/** The first boundary at or after `from` between two isolated code points, or -1. */
export function nextBoundary(text: string, from: number, inVocab: Uint32Array): number {
  for (let at = Math.max(1, from); at < text.length; at++) {
    const unit = text.charCodeAt(at);
    if (unit >= 0xdc00 && unit <= 0xdfff) continue; // inside a pair (or a lone low surrogate)
    if (!isolated(inVocab, text.codePointAt(at)!)) continue;
    if (isolated(inVocab, text.codePointAt(at - lengthBefore(text, at))!)) return at;
  }
  return -1;
}

function startsWith(ids: Int32Array, prefix: Int32Array): boolean {
  if (prefix.length > ids.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

/**
 * `tokenize(text, addSpecial, parseSpecial)` of a SentencePiece vocabulary, with `text` handed to
 * it in pieces of about `pieceChars` UTF-16 units or more (cut only between isolated characters;
 * a text without such a boundary goes whole). `addBos`: whether the special tokens that
 * `addSpecial` adds start with BOS (the others end the text).
 */
export function tokenizeInPieces(
  text: string,
  addSpecial: boolean,
  parseSpecial: boolean,
  tokenize: RawTokenize,
  inVocab: Uint32Array,
  addBos: boolean,
  pieceChars: number,
): Int32Array {
  let cut = nextBoundary(text, pieceChars, inVocab);
  if (cut < 0) return tokenize(text, addSpecial, parseSpecial);
  const parts: Int32Array[] = [];
  let start = 0;
  let lead = 0;
  for (;;) {
    const end = cut < 0 ? text.length : cut;
    const ids = tokenize(text.slice(start, end), false, parseSpecial);
    if (lead === 0) parts.push(ids);
    else {
      const leadIds = tokenize(text.slice(start, start + lead), false, parseSpecial);
      if (!startsWith(ids, leadIds)) return tokenize(text, addSpecial, parseSpecial);
      parts.push(ids.subarray(leadIds.length));
    }
    if (cut < 0) break;
    lead = lengthBefore(text, cut);
    start = cut - lead;
    cut = nextBoundary(text, cut + pieceChars, inVocab);
  }
  if (addSpecial) {
    // BOS first, EOS last (whichever the model adds): what the tokenizer adds around any text.
    const around = tokenize("", true, false);
    const head = addBos && around.length > 0 ? 1 : 0;
    parts.unshift(around.subarray(0, head));
    parts.push(around.subarray(head));
  }
  return concatInt32(parts);
}
