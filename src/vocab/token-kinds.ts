/**
 * What kind each token is, as llama.cpp decides it when it loads a vocabulary
 * (src/llama-vocab.cpp, llama_vocab::impl::load; keep in step with it): token attributes from
 * tokenizer.ggml.token_type, special token ids from the metadata and, where absent, by their text,
 * "unused" control tokens, the end-of-generation set with its exceptions, and the TokenKind these
 * come down to.
 */
import { type GgufFile, type GgufStringArray, type GgufTypedArray, ggufNumber } from "./gguf.js";

const utf8Decoder = new TextDecoder("utf-8");
const utf8Encoder = new TextEncoder();

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
  "<|eot_id|>",
  "<|im_end|>",
  "<|end|>",
  "<end_of_turn>",
  "<|endoftext|>",
  "<|end_of_text|>",
  "<EOT>",
  "_<EOT>",
  "[EOT]",
  "<｜end▁of▁sentence｜>",
  "<end_of_utterance>",
];
const EOM_TEXTS = ["<|eom_id|>"];
const FIM_PRE_TEXTS = [
  "<|fim_prefix|>",
  "<fim-prefix>",
  "<fim_prefix>",
  "<｜fim▁begin｜>",
  "<PRE>",
  "▁<PRE>",
  "<|code_prefix|>",
  "<|prefix|>",
];
const FIM_SUF_TEXTS = [
  "<|fim_suffix|>",
  "<fim-suffix>",
  "<fim_suffix>",
  "<｜fim▁hole｜>",
  "<SUF>",
  "▁<SUF>",
  "<|code_suffix|>",
  "<|suffix|>",
];
const FIM_MID_TEXTS = [
  "<|fim_middle|>",
  "<fim-middle>",
  "<fim_middle>",
  "<｜fim▁end｜>",
  "<MID>",
  "▁<MID>",
  "<|code_middle|>",
  "<|middle|>",
];
const FIM_PAD_TEXTS = ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
const FIM_REP_TEXTS = ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"];
const FIM_SEP_TEXTS = ["<|file_sep|>"];
const EOG_TEXTS = [
  "<|eot_id|>",
  "<|im_end|>",
  "<|end|>",
  "<|return|>",
  "<|call|>",
  "<|flush|>",
  "<|calls|>",
  "<end_of_turn>",
  "<|endoftext|>",
  "</s>",
  "<|eom_id|>",
  "<EOT>",
  "_<EOT>",
  "[EOT]",
  "[EOS]",
  "<|end_of_text|>",
  "<end_of_utterance>",
  "<eos>",
  "<turn|>",
  "<|tool_response>",
  "<｜end▁of▁sentence｜>",
  "[e~[",
];
const ALWAYS_RENDERED_TEXTS = ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/** The special token ids llama.cpp tracks (-1 where the vocabulary has none). */
export interface SpecialTokenIds {
  bos: number;
  eos: number;
  eot: number;
  eom: number;
  fimPre: number;
  fimSuf: number;
  fimMid: number;
  fimPad: number;
  fimRep: number;
  fimSep: number;
}

/** The special ids the metadata names, over the tokenizer model's default bos and eos. */
export function readSpecialTokenIds(file: GgufFile, size: number, defaultBos: number, defaultEos: number): SpecialTokenIds {
  const specialId = (key: string, fallback: number): number => {
    const v = ggufNumber(file, `tokenizer.ggml.${key}`);
    return v !== undefined && v >= 0 && v < size ? v : fallback;
  };
  return {
    bos: specialId("bos_token_id", defaultBos),
    eos: specialId("eos_token_id", defaultEos),
    eot: specialId("eot_token_id", -1),
    eom: specialId("eom_token_id", -1),
    // llama.cpp reads the deprecated prefix/suffix/middle keys after the fim_* ones: they win.
    fimPre: specialId("prefix_token_id", specialId("fim_pre_token_id", -1)),
    fimSuf: specialId("suffix_token_id", specialId("fim_suf_token_id", -1)),
    fimMid: specialId("middle_token_id", specialId("fim_mid_token_id", -1)),
    fimPad: specialId("fim_pad_token_id", -1),
    fimRep: specialId("fim_rep_token_id", -1),
    fimSep: specialId("fim_sep_token_id", -1),
  };
}

/** llama_token_attr bits per token from tokenizer.ggml.token_type (all normal without it). */
export function tokenAttributes(tokenTypes: GgufTypedArray["values"] | undefined, size: number): Uint8Array {
  const attrs = new Uint8Array(size);
  for (let i = 0; i < size; i++) attrs[i] = tokenTypes ? attrOfTokenType(Number(tokenTypes[i])) : ATTR_NORMAL;
  return attrs;
}

/** The ids of the special texts above that the vocabulary holds. */
export function idsOfSpecialTexts(tokens: GgufStringArray): Map<string, number> {
  // llama.cpp maps token text → id with later duplicates winning; special detection goes by text.
  const idByText = new Map<string, number>();
  const candidateTexts = new Set([
    ...EOT_TEXTS,
    ...EOM_TEXTS,
    ...FIM_PRE_TEXTS,
    ...FIM_SUF_TEXTS,
    ...FIM_MID_TEXTS,
    ...FIM_PAD_TEXTS,
    ...FIM_REP_TEXTS,
    ...FIM_SEP_TEXTS,
    ...EOG_TEXTS,
    ...ALWAYS_RENDERED_TEXTS,
  ]);
  const maxCandidateBytes = Math.max(...[...candidateTexts].map((t) => utf8Encoder.encode(t).length));
  for (let i = 0; i < tokens.length; i++) {
    const bytes = tokens.itemBytes(i);
    if (bytes.length <= maxCandidateBytes && (bytes[0] === 0x3c || bytes[0] === 0x5b || bytes[0] === 0x5f || bytes[0] === 0xe2)) {
      const text = utf8Decoder.decode(bytes);
      if (candidateTexts.has(text)) idByText.set(text, i);
    }
  }
  return idByText;
}

/** Fills the eot, eom and fim ids the metadata left out by their texts, marking those tokens control. */
export function detectSpecialTokensByText(ids: SpecialTokenIds, idByText: ReadonlyMap<string, number>, attrs: Uint8Array): void {
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
  ids.eot = detect(ids.eot, EOT_TEXTS);
  ids.eom = detect(ids.eom, EOM_TEXTS);
  ids.fimPre = detect(ids.fimPre, FIM_PRE_TEXTS);
  ids.fimSuf = detect(ids.fimSuf, FIM_SUF_TEXTS);
  ids.fimMid = detect(ids.fimMid, FIM_MID_TEXTS);
  ids.fimPad = detect(ids.fimPad, FIM_PAD_TEXTS);
  ids.fimRep = detect(ids.fimRep, FIM_REP_TEXTS);
  ids.fimSep = detect(ids.fimSep, FIM_SEP_TEXTS);
}

/** Control tokens named "...unused..." are unused. */
export function markUnusedControls(tokens: GgufStringArray, attrs: Uint8Array): void {
  const unusedWord = utf8Encoder.encode("unused");
  for (let i = 0; i < tokens.length; i++) {
    if ((attrs[i]! & ATTR_CONTROL) !== 0 && (attrs[i]! & ATTR_UNUSED) === 0 && indexOfBytes(tokens.itemBytes(i), unusedWord) >= 0) {
      attrs[i]! |= ATTR_UNUSED;
    }
  }
}

/**
 * The end-of-generation ids (llama_vocab_is_eog), with the tokens found by their text marked
 * control, the always-rendered ones user-defined, and the exceptions of gpt-oss and gemma4.
 */
export function endOfGenerationTokens(
  ids: SpecialTokenIds,
  idByText: ReadonlyMap<string, number>,
  attrs: Uint8Array,
  tokens: GgufStringArray,
): Set<number> {
  const eog = new Set<number>();
  for (const id of [ids.fimPad, ids.fimRep, ids.fimSep]) if (id >= 0) eog.add(id);
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
  for (const id of [ids.eos, ids.eot, ids.eom]) if (id >= 0) eog.add(id);
  const textOf = (id: number): string => utf8Decoder.decode(tokens.itemBytes(id));
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
  return eog;
}

/** TokenKind per token: end of generation first, then by attribute. */
export function tokenKinds(attrs: Uint8Array, eog: ReadonlySet<number>): Uint8Array {
  const kinds = new Uint8Array(attrs.length);
  for (let i = 0; i < attrs.length; i++) {
    const attr = attrs[i]!;
    let kind: TokenKind;
    if (eog.has(i)) kind = TokenKind.EndOfGeneration;
    else if (attr & ATTR_UNUSED || attr === ATTR_UNDEFINED) kind = TokenKind.Unused;
    else if (attr & (ATTR_CONTROL | ATTR_UNKNOWN)) kind = TokenKind.Control;
    else if (attr & ATTR_USER_DEFINED) kind = TokenKind.UserDefined;
    else if (attr & ATTR_BYTE) kind = TokenKind.Byte;
    else kind = TokenKind.Normal;
    kinds[i] = kind;
  }
  return kinds;
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
