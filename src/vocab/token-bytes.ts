/**
 * How a token's stored text becomes its bytes, per tokenizer model's spelling: SentencePiece's
 * `▁` for a space, `<0xNN>` byte tokens, GPT-2's byte-level alphabet (the inverse of
 * bytes_to_unicode), or plain UTF-8. Each writes into the caller's buffer and returns the count.
 */

/**
 * How normal tokens spell their bytes: `▁` for spaces (SentencePiece), GPT-2's byte alphabet,
 * or plain UTF-8 text (PLaMo-2).
 */
export type NormalSpelling = "spaceMark" | "byteLevel" | "raw";

/** Inverse of GPT-2's bytes_to_unicode: code point → byte, -1 where the code point is not a byte. */
const GPT2_CODEPOINT_TO_BYTE: Int16Array = (() => {
  const table = new Int16Array(324).fill(-1);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    if (printable) table[b] = b;
    else table[256 + extra++] = b;
  }
  return table;
})();

const SPACE_MARK_0 = 0xe2; // "▁" = E2 96 81
const SPACE_MARK_1 = 0x96;
const SPACE_MARK_2 = 0x81;

/** Bytes of a `<0xNN>` token text, or -1. */
export function byteTokenValue(text: Uint8Array): number {
  if (text.length !== 6 || text[0] !== 0x3c || text[1] !== 0x30 || text[2] !== 0x78 || text[5] !== 0x3e) return -1;
  const hex = (c: number): number =>
    c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 55 : c >= 0x61 && c <= 0x66 ? c - 87 : -1;
  const hi = hex(text[3]!);
  const lo = hex(text[4]!);
  return hi < 0 || lo < 0 ? -1 : (hi << 4) | lo;
}

/**
 * Writes the GPT-2 byte-level decoding of `text` into out at `at`; returns the byte count, or -1
 * if some code point is not in the byte alphabet (then the caller keeps the text as UTF-8).
 */
export function decodeByteLevel(text: Uint8Array, out: Uint8Array, at: number): number {
  let n = 0;
  let i = 0;
  while (i < text.length) {
    const c0 = text[i]!;
    let cp: number;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else if ((c0 & 0xe0) === 0xc0 && i + 1 < text.length) {
      cp = ((c0 & 0x1f) << 6) | (text[i + 1]! & 0x3f);
      i += 2;
    } else {
      return -1; // every byte-alphabet code point is < U+0800
    }
    const b = cp < GPT2_CODEPOINT_TO_BYTE.length ? GPT2_CODEPOINT_TO_BYTE[cp]! : -1;
    if (b < 0) return -1;
    out[at + n++] = b;
  }
  return n;
}

/** Copies `text` with every `▁` replaced by a space; returns the byte count. */
export function unescapeWhitespace(text: Uint8Array, out: Uint8Array, at: number): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === SPACE_MARK_0 && text[i + 1] === SPACE_MARK_1 && text[i + 2] === SPACE_MARK_2) {
      out[at + n++] = 0x20;
      i += 2;
    } else {
      out[at + n++] = text[i]!;
    }
  }
  return n;
}
