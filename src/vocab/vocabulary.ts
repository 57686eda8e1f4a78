/**
 * Every token's exact byte string and kind, read from a GGUF file's `tokenizer.ggml.*` metadata.
 *
 * The bytes of a token are what llama.cpp's `llama_token_to_piece(token, special = true,
 * lstrip = 0)` renders (src/llama-vocab.cpp `token_to_piece`), computed here without lossy
 * detokenization:
 * - SentencePiece (`llama`, and any vocabulary llama.cpp unescapes whitespace for, e.g. gemma4):
 *   normal tokens have `▁` (U+2581) replaced by a space 0x20; `<0xNN>` byte tokens are the single
 *   byte NN.
 * - byte-level BPE (`gpt2`): every code point of a normal token maps back through the inverse of
 *   GPT-2's `bytes_to_unicode` to one byte, so a token can be a partial UTF-8 sequence.
 * - control, unknown and user-defined tokens are their text as stored (UTF-8), not re-decoded:
 *   that is how llama.cpp renders and matches them (e.g. DeepSeek's 13 plain-text user-defined
 *   tokens).
 *
 * The SentencePiece leading-space rule: generated text is exactly the UTF-8 decoding of the
 * concatenated bytes of the generated tokens, and a `▁` is always a real space — nothing is
 * stripped during generation (a continuation "▁42" after the prompt "The answer is" is " 42").
 * The only asymmetry is at tokenization: with `addSpacePrefix`, llama.cpp's tokenizer inserts one
 * space before the text it tokenizes (at the start, and after each special token it parses). So
 * decode(tokenize(text)) = " " + text for such vocabularies; round-trips remove exactly one
 * leading space (see `stripSpacePrefix`).
 */
import {
  type GgufFile,
  GgufFormatError,
  ggufBool,
  ggufNumber,
  ggufString,
  ggufStringArray,
  ggufTypedArray,
  readGguf,
} from "./gguf.js";

export const TokenKind = {
  Normal: 0,
  /** Control and unknown tokens (`<s>`, `<|im_start|>`, `<unk>`): never part of constrained text. */
  Control: 1,
  EndOfGeneration: 2,
  /** SentencePiece `<0xNN>` byte-fallback tokens: one byte each. */
  Byte: 3,
  /** Marked unused (or undefined) by the converter; llama.cpp renders them as nothing. */
  Unused: 4,
  /** Added tokens matched as plain text by the tokenizer (bytes = their text). */
  UserDefined: 5,
} as const;
export type TokenKind = (typeof TokenKind)[keyof typeof TokenKind];

export interface Vocabulary {
  readonly size: number;
  /** tokenizer.ggml.model: "llama" (SPM), "gpt2" (byte-level BPE), "gemma4", ... */
  readonly tokenizerModel: string;
  /** tokenizer.ggml.pre ("" when absent). */
  readonly tokenizerPre: string;
  /** size + 1 entries; bytes of token i = data[offsets[i] .. offsets[i+1]). */
  readonly offsets: Uint32Array;
  readonly data: Uint8Array;
  /** TokenKind per token. */
  readonly kinds: Uint8Array;
  /** End-of-generation ids (eos, eot, eom, and llama.cpp's text-based EOG list), ascending. */
  readonly eogTokens: Int32Array;
  readonly eosToken: number; // -1 if none
  readonly bosToken: number; // -1 if none
  readonly addBos: boolean;
  /** SentencePiece leading-space rule (see the module comment). */
  readonly addSpacePrefix: boolean;
  /** Subarray view of token id's bytes (no copy). */
  tokenBytes(id: number): Uint8Array;
  /** The token's text as stored in the GGUF file (e.g. "▁the", "Ġthe", "<0x0A>"). */
  tokenText(id: number): string;
  isEog(id: number): boolean;
}

/** tokenizer.ggml.token_type values (llama.cpp LLAMA_TOKEN_TYPE_*). */
const TokenType = { Undefined: 0, Normal: 1, Unknown: 2, Control: 3, UserDefined: 4, Unused: 5, Byte: 6 } as const;

// llama_token_attr bits, as far as they decide a kind.
const ATTR_UNDEFINED = 0;
const ATTR_UNKNOWN = 1 << 0;
const ATTR_UNUSED = 1 << 1;
const ATTR_NORMAL = 1 << 2;
const ATTR_CONTROL = 1 << 3;
const ATTR_USER_DEFINED = 1 << 4;
const ATTR_BYTE = 1 << 5;

function attrOfTokenType(t: number): number {
  switch (t) {
    case TokenType.Unknown:
      return ATTR_UNKNOWN;
    case TokenType.Unused:
      return ATTR_UNUSED;
    case TokenType.Normal:
      return ATTR_NORMAL;
    case TokenType.Control:
      return ATTR_CONTROL;
    case TokenType.UserDefined:
      return ATTR_USER_DEFINED;
    case TokenType.Byte:
      return ATTR_BYTE;
    default:
      return ATTR_UNDEFINED;
  }
}

// Texts llama.cpp (llama_vocab::impl::load) recognises; keep in step with src/llama-vocab.cpp.
const EOT_TEXTS = [
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
  "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
];
const EOM_TEXTS = ["<|eom_id|>"];
const FIM_PRE_TEXTS = ["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"];
const FIM_SUF_TEXTS = ["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"];
const FIM_MID_TEXTS = ["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"];
const FIM_PAD_TEXTS = ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
const FIM_REP_TEXTS = ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"];
const FIM_SEP_TEXTS = ["<|file_sep|>"];
const EOG_TEXTS = [
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
  "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
  "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
];
const ALWAYS_RENDERED_TEXTS = ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];
const LLAMA3_PRE = new Set([
  "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
]);
const ADD_BOS_PRE = new Set([...LLAMA3_PRE, "tekken", "chameleon"]);
/** BPE pre-tokenizers whose vocabularies use SentencePiece-style `▁` for spaces. */
const ESCAPED_WHITESPACE_PRE = new Set(["gemma4", "granite-embed-multi-311m", "sarvam-moe"]);

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

const utf8Decoder = new TextDecoder("utf-8");
const utf8Encoder = new TextEncoder();

const SPACE_MARK_0 = 0xe2; // "▁" = E2 96 81
const SPACE_MARK_1 = 0x96;
const SPACE_MARK_2 = 0x81;

export class VocabularyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VocabularyError";
  }
}

class GgufVocabulary implements Vocabulary {
  constructor(
    readonly size: number,
    readonly tokenizerModel: string,
    readonly tokenizerPre: string,
    readonly offsets: Uint32Array,
    readonly data: Uint8Array,
    readonly kinds: Uint8Array,
    readonly eogTokens: Int32Array,
    readonly eosToken: number,
    readonly bosToken: number,
    readonly addBos: boolean,
    readonly addSpacePrefix: boolean,
    private readonly texts: { itemBytes(i: number): Uint8Array },
  ) {}
  tokenBytes(id: number): Uint8Array {
    return this.data.subarray(this.offsets[id]!, this.offsets[id + 1]!);
  }
  tokenText(id: number): string {
    return utf8Decoder.decode(this.texts.itemBytes(id));
  }
  isEog(id: number): boolean {
    return this.kinds[id] === TokenKind.EndOfGeneration;
  }
}

/** Bytes of a `<0xNN>` token text, or -1. */
function byteTokenValue(text: Uint8Array): number {
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
function decodeByteLevel(text: Uint8Array, out: Uint8Array, at: number): number {
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
function unescapeWhitespace(text: Uint8Array, out: Uint8Array, at: number): number {
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

export interface VocabularyLoadStats {
  /** Normal byte-level BPE tokens whose text is outside the GPT-2 byte alphabet (kept as UTF-8). */
  nonByteLevelNormalTokens: number;
}

/** Builds the vocabulary from an already parsed GGUF header. */
export function vocabularyFromGguf(file: GgufFile, stats?: VocabularyLoadStats): Vocabulary {
  const tokenizerModel = ggufString(file, "tokenizer.ggml.model");
  if (tokenizerModel === undefined) throw new VocabularyError("GGUF has no tokenizer.ggml.model");
  const tokenizerPre = ggufString(file, "tokenizer.ggml.pre") ?? "";
  const tokens = ggufStringArray(file, "tokenizer.ggml.tokens");
  if (!tokens) throw new VocabularyError("GGUF has no tokenizer.ggml.tokens");
  const size = tokens.length;
  const tokenTypes = ggufTypedArray(file, "tokenizer.ggml.token_type")?.values;
  if (tokenTypes && tokenTypes.length < size) throw new VocabularyError("tokenizer.ggml.token_type is shorter than the token list");

  // How normal tokens spell their bytes: `▁` for spaces (SentencePiece), GPT-2's byte alphabet,
  // or plain UTF-8 text (PLaMo-2).
  let normalSpelling: "spaceMark" | "byteLevel" | "raw";
  let addSpacePrefix: boolean;
  let addBos: boolean;
  let bos: number;
  let eos: number;
  switch (tokenizerModel) {
    case "llama": // SentencePiece
    case "t5":
    case "bert":
    case "plamo2":
      normalSpelling = tokenizerModel === "plamo2" ? "raw" : "spaceMark";
      addSpacePrefix = tokenizerModel === "llama";
      addBos = tokenizerModel === "llama";
      bos = tokenizerModel === "llama" ? 1 : tokenizerModel === "bert" ? 101 : tokenizerModel === "plamo2" ? 1 : -1;
      eos = tokenizerModel === "llama" ? 2 : tokenizerModel === "t5" ? 1 : tokenizerModel === "plamo2" ? 2 : -1;
      break;
    case "gpt2":
    case "gemma4":
      normalSpelling = ESCAPED_WHITESPACE_PRE.has(tokenizerModel === "gemma4" ? "gemma4" : tokenizerPre) ? "spaceMark" : "byteLevel";
      addSpacePrefix = false;
      addBos = ADD_BOS_PRE.has(tokenizerPre);
      bos = tokenizerModel === "gpt2" ? 11 : -1;
      eos = tokenizerModel === "gpt2" ? 11 : -1;
      break;
    default:
      throw new VocabularyError(`unsupported tokenizer model '${tokenizerModel}'`);
  }
  if (bos >= size) bos = -1;
  if (eos >= size) eos = -1;
  const specialId = (key: string, fallback: number): number => {
    const v = ggufNumber(file, `tokenizer.ggml.${key}`);
    return v !== undefined && v >= 0 && v < size ? v : fallback;
  };
  bos = specialId("bos_token_id", bos);
  eos = specialId("eos_token_id", eos);
  let eot = specialId("eot_token_id", -1);
  let eom = specialId("eom_token_id", -1);
  // llama.cpp reads the deprecated prefix/suffix/middle keys after the fim_* ones: they win.
  let fimPre = specialId("prefix_token_id", specialId("fim_pre_token_id", -1));
  let fimSuf = specialId("suffix_token_id", specialId("fim_suf_token_id", -1));
  let fimMid = specialId("middle_token_id", specialId("fim_mid_token_id", -1));
  let fimPad = specialId("fim_pad_token_id", -1);
  let fimRep = specialId("fim_rep_token_id", -1);
  let fimSep = specialId("fim_sep_token_id", -1);
  addBos = ggufBool(file, "tokenizer.ggml.add_bos_token") ?? addBos;
  if (tokenizerModel === "gemma4") addBos = true; // llama.cpp forces it (PR 21500)
  addSpacePrefix = ggufBool(file, "tokenizer.ggml.add_space_prefix") ?? addSpacePrefix;

  const attrs = new Uint8Array(size);
  for (let i = 0; i < size; i++) attrs[i] = tokenTypes ? attrOfTokenType(Number(tokenTypes[i])) : ATTR_NORMAL;

  // llama.cpp maps token text → id with later duplicates winning; special detection goes by text.
  const idByText = new Map<string, number>();
  const candidateTexts = new Set([
    ...EOT_TEXTS, ...EOM_TEXTS, ...FIM_PRE_TEXTS, ...FIM_SUF_TEXTS, ...FIM_MID_TEXTS, ...FIM_PAD_TEXTS,
    ...FIM_REP_TEXTS, ...FIM_SEP_TEXTS, ...EOG_TEXTS, ...ALWAYS_RENDERED_TEXTS,
  ]);
  const maxCandidateBytes = Math.max(...[...candidateTexts].map((t) => utf8Encoder.encode(t).length));
  const unusedWord = utf8Encoder.encode("unused");
  for (let i = 0; i < size; i++) {
    const bytes = tokens.itemBytes(i);
    if (bytes.length <= maxCandidateBytes && (bytes[0] === 0x3c || bytes[0] === 0x5b || bytes[0] === 0x5f || bytes[0] === 0xe2)) {
      const text = utf8Decoder.decode(bytes);
      if (candidateTexts.has(text)) idByText.set(text, i);
    }
  }
  const detect = (current: number, texts: string[]): number => {
    if (current >= 0) return current;
    for (const t of texts) {
      const id = idByText.get(t);
      if (id !== undefined) {
        attrs[id]! |= ATTR_CONTROL;
        return id;
      }
    }
    return -1;
  };
  eot = detect(eot, EOT_TEXTS);
  eom = detect(eom, EOM_TEXTS);
  fimPre = detect(fimPre, FIM_PRE_TEXTS);
  fimSuf = detect(fimSuf, FIM_SUF_TEXTS);
  fimMid = detect(fimMid, FIM_MID_TEXTS);
  fimPad = detect(fimPad, FIM_PAD_TEXTS);
  fimRep = detect(fimRep, FIM_REP_TEXTS);
  fimSep = detect(fimSep, FIM_SEP_TEXTS);

  // Control tokens named "...unused..." are unused.
  for (let i = 0; i < size; i++) {
    if ((attrs[i]! & ATTR_CONTROL) !== 0 && (attrs[i]! & ATTR_UNUSED) === 0 && indexOfBytes(tokens.itemBytes(i), unusedWord) >= 0) {
      attrs[i]! |= ATTR_UNUSED;
    }
  }

  const eog = new Set<number>();
  for (const id of [fimPad, fimRep, fimSep]) if (id >= 0) eog.add(id);
  for (const t of EOG_TEXTS) {
    const id = idByText.get(t);
    if (id !== undefined) {
      eog.add(id);
      attrs[id]! |= ATTR_CONTROL;
    }
  }
  for (const t of ALWAYS_RENDERED_TEXTS) {
    const id = idByText.get(t);
    if (id !== undefined) attrs[id] = ATTR_USER_DEFINED;
  }
  for (const id of [eos, eot, eom]) if (id >= 0) eog.add(id);
  const textOf = (id: number): string => utf8Decoder.decode(tokens.itemBytes(id));
  {
    // o200k_harmony / solar-open: "<|end|>" ends a message, not the generation.
    const texts = new Map<string, number>();
    for (const id of eog) texts.set(textOf(id), id);
    const end = texts.get("<|end|>");
    const hasCall = texts.has("<|call|>") || texts.has("<|calls|>");
    if (end !== undefined && ((texts.has("<|return|>") && hasCall) || (hasCall && texts.has("<|flush|>")))) {
      eog.delete(end);
      attrs[end] = ATTR_USER_DEFINED;
    }
    // gemma4 / paddleocr: "</s>" is ordinary text there.
    const s = texts.get("</s>");
    if (s !== undefined && texts.has("<|tool_response>")) {
      eog.delete(s);
      attrs[s] = ATTR_NORMAL;
    }
  }

  // Exact bytes per token.
  const offsets = new Uint32Array(size + 1);
  // Decoded bytes never exceed the stored text (▁ shrinks 3→1, byte-level 2→1, <0xNN> 6→1).
  let data = new Uint8Array(tokens.bytes.length);
  let used = 0;
  let nonByteLevel = 0;
  const kinds = new Uint8Array(size);
  for (let i = 0; i < size; i++) {
    const text = tokens.itemBytes(i);
    const attr = attrs[i]!;
    let kind: TokenKind;
    if (eog.has(i)) kind = TokenKind.EndOfGeneration;
    else if (attr & ATTR_UNUSED || attr === ATTR_UNDEFINED) kind = TokenKind.Unused;
    else if (attr & (ATTR_CONTROL | ATTR_UNKNOWN)) kind = TokenKind.Control;
    else if (attr & ATTR_USER_DEFINED) kind = TokenKind.UserDefined;
    else if (attr & ATTR_BYTE) kind = TokenKind.Byte;
    else kind = TokenKind.Normal;
    kinds[i] = kind;

    let n: number;
    if (kind === TokenKind.Byte) {
      const b = byteTokenValue(text);
      if (b < 0) throw new VocabularyError(`byte token ${i} has text '${textOf(i)}', expected <0xNN>`);
      data[used] = b;
      n = 1;
    } else if (kind === TokenKind.Normal || kind === TokenKind.Unused) {
      if (normalSpelling === "spaceMark") {
        n = unescapeWhitespace(text, data, used);
      } else if (normalSpelling === "raw") {
        data.set(text, used);
        n = text.length;
      } else {
        n = decodeByteLevel(text, data, used);
        if (n < 0) {
          // Outside the byte alphabet (llama.cpp would print "[UNK_BYTE_…]"): keep the UTF-8 text.
          if (kind === TokenKind.Normal) nonByteLevel++;
          data.set(text, used);
          n = text.length;
        }
      }
    } else {
      data.set(text, used);
      n = text.length;
    }
    used += n;
    offsets[i + 1] = used;
  }
  if (stats) stats.nonByteLevelNormalTokens = nonByteLevel;
  data = data.slice(0, used);
  const eogTokens = Int32Array.from([...eog].sort((a, b) => a - b));
  return new GgufVocabulary(
    size, tokenizerModel, tokenizerPre, offsets, data, kinds, eogTokens, eos, bos, addBos, addSpacePrefix, tokens,
  );
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Reads the vocabulary of a GGUF model (or vocab-only) file; reads only the file's header. */
export function loadVocabulary(path: string, stats?: VocabularyLoadStats): Vocabulary {
  let file: GgufFile;
  try {
    file = readGguf(path);
  } catch (e) {
    if (e instanceof GgufFormatError) throw new VocabularyError(`${path}: ${e.message}`);
    throw e;
  }
  return vocabularyFromGguf(file, stats);
}

/** Concatenated bytes of the tokens `ids` (a fresh array). */
export function concatTokenBytes(vocab: Vocabulary, ids: ArrayLike<number>): Uint8Array {
  let total = 0;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    total += vocab.offsets[id + 1]! - vocab.offsets[id]!;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (let i = 0; i < ids.length; i++) {
    const bytes = vocab.tokenBytes(ids[i]!);
    out.set(bytes, at);
    at += bytes.length;
  }
  return out;
}

/** Text of a token sequence: UTF-8 decoding of the concatenated token bytes (U+FFFD for invalid). */
export function decodeTokens(vocab: Vocabulary, ids: ArrayLike<number>): string {
  return utf8Decoder.decode(concatTokenBytes(vocab, ids));
}

/**
 * Undoes the tokenizer's SentencePiece space prefix on decode(tokenize(text)): removes one leading
 * space when the vocabulary adds one. Generated continuations are never stripped.
 */
export function stripSpacePrefix(vocab: Vocabulary, decoded: string): string {
  return vocab.addSpacePrefix && decoded.startsWith(" ") ? decoded.slice(1) : decoded;
}
