/**
 * Our GGUF-derived vocabulary against llama.cpp itself (vocab-only models through src/model):
 * every token's bytes equal llama.cpp's raw piece, kinds agree with its token attributes, EOG
 * ids agree, and tokenize → our bytes → UTF-8 reproduces the text (SentencePiece rule: one
 * leading space removed when the vocabulary adds a space prefix).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadModel, TokenAttr } from "../src/model/index.js";
import { TokenKind, decodeTokens, loadVocabulary, stripSpacePrefix } from "../src/vocab/index.js";
import { LLAMA2_TINY_RANDOM, STORIES_260K, vocabFile } from "./support/paths.js";

const FILES: Array<[string, string]> = [
  ["llama-spm", vocabFile("llama-spm")],
  ["gpt-2", vocabFile("gpt-2")],
  ["llama-bpe", vocabFile("llama-bpe")],
  ["qwen2", vocabFile("qwen2")],
  ["phi-3", vocabFile("phi-3")],
  ["gemma-4", vocabFile("gemma-4")],
  ["deepseek-llm", vocabFile("deepseek-llm")],
  ["starcoder", vocabFile("starcoder")],
  ["stories260K", STORIES_260K],
  ["llama-2-tiny-random", LLAMA2_TINY_RANDOM],
];

const CORPUS = [
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "  two leading spaces, and trailing  ",
  " one leading space",
  "tabs\tand\t\ttabs\nnew\n\nlines\r\nCRLF\n",
  "whitespace runs:      six, then\u00a0nbsp and\u3000ideographic space",
  "def fib(n: int) -> int:\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # 🐍\n",
  'const x = { a: [1, 2, 3], \'b\': "c" }; // JSON-ish {"k": null}',
  "日本語のテキストと中文字符，还有한국어 문장。",
  "emoji: 😀 👍🏽 👩‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 🤖✨",
  "العربية: مرحبا بالعالم، كيف حالك؟",
  "हिन्दी: नमस्ते दुनिया, आप कैसे हैं?",
  "Ünïcödé àccénts: café, naïve, Ångström, ß, œ, Ærø",
  "Кириллица: Привет, мир! Ёжик в тумане.",
  "math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ ≤ ∫₀^∞ e^{-t} dt ≈ π/√2 ≠ ∞",
  "rare: 𓀀𓂀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ \u{10FFFD} \u{E0001} ᚠᛇᚻ ⠓⠑⠇⠇⠕",
  "combining: e\u0301 a\u0308 n\u0303 — and zero-width\u200bspace",
  "</s> <s> <|endoftext|> <|im_end|> [INST] text that looks special",
  "a",
  "12345678901234567890 3.14159e-10 0xDEADBEEF",
];

/** Random strings over a pool that mixes scripts, whitespace and astral characters. */
function fuzzCorpus(count: number, seed: number): string[] {
  const pool = [
    ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    ..." \t\n  .,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`",
    ..."éèüßøåçñ中文字日本語한국ÄÖЖжΩλπ∑∫√€£¥",
    "😀",
    "👍🏽",
    "👩‍💻",
    "🇯🇵",
    "𓀀",
    "𝔘",
    "\u{10FFFD}",
    "\u0301",
    "\u200d",
    "\u00a0",
    "\u3000",
    "\u0600",
    "ः",
  ];
  let s = seed >>> 0;
  const next = (n: number): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let t = "";
    const len = 1 + next(40);
    for (let j = 0; j < len; j++) t += pool[next(pool.length)];
    out.push(t);
  }
  return out;
}

function expectedKind(attr: number): number {
  if (attr & TokenAttr.Unused) return TokenKind.Unused;
  if (attr & (TokenAttr.Control | TokenAttr.Unknown)) return TokenKind.Control;
  if (attr & TokenAttr.UserDefined) return TokenKind.UserDefined;
  if (attr & TokenAttr.Byte) return TokenKind.Byte;
  if (attr & TokenAttr.Normal) return TokenKind.Normal;
  return TokenKind.Unused;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const fuzz = fuzzCorpus(150, 20261122);

for (const [name, path] of FILES) {
  test(`${name}: bytes, kinds and EOG ids equal llama.cpp's; tokenize → bytes → text round-trips`, () => {
    const vocab = loadVocabulary(path);
    const model = loadModel(path, { vocabOnly: true, threads: 2 });
    try {
      assert.equal(vocab.size, model.nVocab);
      assert.deepEqual(Array.from(vocab.eogTokens), Array.from(model.eogTokens()));
      assert.equal(vocab.bosToken, model.bosToken);
      assert.equal(vocab.eosToken, model.eosToken);
      assert.equal(vocab.addBos, model.addBos);

      const attrs = model.tokenAttributes();
      const badBytes: string[] = [];
      const badKinds: string[] = [];
      for (let id = 0; id < vocab.size; id++) {
        // special = true: llama.cpp renders control tokens as their text too
        const piece = model.tokenPiece(id, true);
        const kind = vocab.kinds[id]!;
        // unused tokens render as nothing in llama.cpp; we keep their text (they are never generated)
        if (kind !== TokenKind.Unused && !sameBytes(piece, vocab.tokenBytes(id)))
          badBytes.push(`${id} ${JSON.stringify(vocab.tokenText(id))}`);
        const asAttr = kind === TokenKind.EndOfGeneration ? TokenKind.Control : kind;
        if (asAttr !== expectedKind(attrs[id]!))
          badKinds.push(`${id} ${JSON.stringify(vocab.tokenText(id))} kind ${kind} attr ${attrs[id]}`);
      }
      assert.deepEqual(badBytes.slice(0, 10), [], `${badBytes.length} tokens differ from llama.cpp's pieces`);
      assert.deepEqual(badKinds.slice(0, 10), [], `${badKinds.length} kinds disagree with llama.cpp's attributes`);

      for (const text of [...CORPUS, ...fuzz]) {
        const ids = model.tokenize(text, { addSpecial: false, parseSpecial: false });
        const decoded = decodeTokens(vocab, ids);
        if (vocab.addSpacePrefix) assert.ok(decoded.startsWith(" "), `${name}: space prefix expected for ${JSON.stringify(text)}`);
        assert.equal(stripSpacePrefix(vocab, decoded), text, `${name}: ${JSON.stringify(text)} → ids ${Array.from(ids).join(",")}`);
      }
    } finally {
      model.dispose();
    }
  });
}
