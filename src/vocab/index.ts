/**
 * vocab/ — every token's exact bytes, read from GGUF metadata by our own parser (no native
 * code): GPT-2 byte-level BPE mapping, SentencePiece `▁` and `<0xNN>` byte tokens, token kinds
 * (normal, control, end of generation, byte, unused, user-defined). See README.md here.
 *
 *   const vocab = loadVocabulary(path);        // Vocabulary: offsets + data, kinds, eog tokens
 *   vocab.tokenBytes(id);                      // a view of the token's bytes, no copy
 */
export * from "./gguf.js";
export * from "./vocabulary.js";
export { TokenKind } from "./token-kinds.js";
