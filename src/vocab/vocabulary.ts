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
  type GgufStringArray,
  ggufString,
  ggufStringArray,
  ggufTypedArray,
  readGguf,
} from "./gguf.js";
import { byteTokenValue, decodeByteLevel, type NormalSpelling, unescapeWhitespace } from "./token-bytes.js";
import {
  TokenKind,
  detectSpecialTokensByText,
  endOfGenerationTokens,
  idsOfSpecialTexts,
  markUnusedControls,
  readSpecialTokenIds,
  tokenAttributes,
  tokenKinds,
} from "./token-kinds.js";

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

const LLAMA3_PRE = new Set(["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"]);
const ADD_BOS_PRE = new Set([...LLAMA3_PRE, "tekken", "chameleon"]);
/** BPE pre-tokenizers whose vocabularies use SentencePiece-style `▁` for spaces. */
const ESCAPED_WHITESPACE_PRE = new Set(["gemma4", "granite-embed-multi-311m", "sarvam-moe"]);

const utf8Decoder = new TextDecoder("utf-8");

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

export interface VocabularyLoadStats {
  /** Normal byte-level BPE tokens whose text is outside the GPT-2 byte alphabet (kept as UTF-8). */
  nonByteLevelNormalTokens: number;
}

/** What a tokenizer model starts from before the metadata's own keys override it (llama.cpp's defaults). */
interface TokenizerModelDefaults {
  normalSpelling: NormalSpelling;
  addSpacePrefix: boolean;
  addBos: boolean;
  bos: number;
  eos: number;
}

function tokenizerModelDefaults(tokenizerModel: string, tokenizerPre: string): TokenizerModelDefaults {
  switch (tokenizerModel) {
    case "llama": // SentencePiece
    case "t5":
    case "bert":
    case "plamo2":
      return {
        normalSpelling: tokenizerModel === "plamo2" ? "raw" : "spaceMark",
        addSpacePrefix: tokenizerModel === "llama",
        addBos: tokenizerModel === "llama",
        bos: tokenizerModel === "llama" ? 1 : tokenizerModel === "bert" ? 101 : tokenizerModel === "plamo2" ? 1 : -1,
        eos: tokenizerModel === "llama" ? 2 : tokenizerModel === "t5" ? 1 : tokenizerModel === "plamo2" ? 2 : -1,
      };
    case "gpt2":
    case "gemma4":
      return {
        normalSpelling: ESCAPED_WHITESPACE_PRE.has(tokenizerModel === "gemma4" ? "gemma4" : tokenizerPre) ? "spaceMark" : "byteLevel",
        addSpacePrefix: false,
        addBos: ADD_BOS_PRE.has(tokenizerPre),
        bos: tokenizerModel === "gpt2" ? 11 : -1,
        eos: tokenizerModel === "gpt2" ? 11 : -1,
      };
    default:
      throw new VocabularyError(`unsupported tokenizer model '${tokenizerModel}'`);
  }
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

  const defaults = tokenizerModelDefaults(tokenizerModel, tokenizerPre);
  const ids = readSpecialTokenIds(file, size, defaults.bos < size ? defaults.bos : -1, defaults.eos < size ? defaults.eos : -1);
  let addBos = ggufBool(file, "tokenizer.ggml.add_bos_token") ?? defaults.addBos;
  if (tokenizerModel === "gemma4") addBos = true; // llama.cpp forces it (PR 21500)
  const addSpacePrefix = ggufBool(file, "tokenizer.ggml.add_space_prefix") ?? defaults.addSpacePrefix;

  const attrs = tokenAttributes(tokenTypes, size);
  const idByText = idsOfSpecialTexts(tokens);
  detectSpecialTokensByText(ids, idByText, attrs);
  markUnusedControls(tokens, attrs);
  const eog = endOfGenerationTokens(ids, idByText, attrs, tokens);
  const kinds = tokenKinds(attrs, eog);
  const { offsets, data, nonByteLevel } = spellTokens(tokens, kinds, defaults.normalSpelling);
  if (stats) stats.nonByteLevelNormalTokens = nonByteLevel;
  const eogTokens = Int32Array.from([...eog].sort((a, b) => a - b));
  return new GgufVocabulary(
    size,
    tokenizerModel,
    tokenizerPre,
    offsets,
    data,
    kinds,
    eogTokens,
    ids.eos,
    ids.bos,
    addBos,
    addSpacePrefix,
    tokens,
  );
}

/**
 * Exact bytes per token: byte tokens their byte, normal and unused tokens through the model's
 * spelling, the others their text as stored. `nonByteLevel` counts the normal byte-level tokens
 * kept as UTF-8.
 */
function spellTokens(
  tokens: GgufStringArray,
  kinds: Uint8Array,
  normalSpelling: NormalSpelling,
): { offsets: Uint32Array; data: Uint8Array; nonByteLevel: number } {
  const size = tokens.length;
  const offsets = new Uint32Array(size + 1);
  // Decoded bytes never exceed the stored text (▁ shrinks 3→1, byte-level 2→1, <0xNN> 6→1).
  const data = new Uint8Array(tokens.bytes.length);
  let used = 0;
  let nonByteLevel = 0;
  for (let i = 0; i < size; i++) {
    const text = tokens.itemBytes(i);
    const kind = kinds[i]!;
    let n: number;
    if (kind === TokenKind.Byte) {
      const b = byteTokenValue(text);
      if (b < 0) throw new VocabularyError(`byte token ${i} has text '${utf8Decoder.decode(text)}', expected <0xNN>`);
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
  return { offsets, data: data.slice(0, used), nonByteLevel };
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
