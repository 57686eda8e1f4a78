// Long SentencePiece texts tokenized in pieces (src/model/tokenize-pieces.ts): the same tokens as
// llama.cpp's whole-text tokenization on mixed ASCII / CJK / emoji / control-token texts, cut into
// pieces of 1 to 8 characters, on four SentencePiece vocabularies (byte fallback on stories260K,
// LSTRIP/RSTRIP markers on phi-3); a long text through LlamaModel.tokenize reaches llama.cpp in
// bounded pieces only.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import {
  loadModel,
  nativeAddon,
  nextBoundary,
  type RawTokenize,
  TOKENIZE_PIECE_CHARS,
  tokenCodePoints,
  tokenizeInPieces,
} from "../src/model/index.js";
import { seededRandom } from "../src/support/index.js";
import { ggufStringArray, readGguf } from "../src/vocab/index.js";
import { LLAMA2_TINY_RANDOM, STORIES_260K, vocabFile } from "./support/paths.js";

const VOCABS = [STORIES_260K, LLAMA2_TINY_RANDOM, vocabFile("llama-spm"), vocabFile("phi-3")];

/** llama.cpp's own tokenize, the whole text at once. */
function wholeTokenizer(path: string): RawTokenize {
  loadModel(path, { vocabOnly: true, threads: 1 }).dispose(); // loads the runtime
  const native = new (nativeAddon().Model)(path, true, 0, true);
  return (text, addSpecial, parseSpecial) => native.tokenize(text, addSpecial, parseSpecial);
}

function codePointsOf(path: string): Uint32Array {
  return tokenCodePoints(ggufStringArray(readGguf(path), "tokenizer.ggml.tokens")!);
}

const ALPHABET = [
  "a",
  "Hello",
  " world",
  " ",
  "  ",
  "\n",
  "\t",
  ".",
  "你",
  "好",
  "世界",
  "。",
  "😀",
  "🎉",
  "🚀",
  "é",
  "\u2581",
  "<s>",
  "</s>",
  "<|user|>",
  "<|end|>",
  "<|assistant|>",
  "\ud800",
  "\udc00",
];

function randomText(rand: () => number): string {
  const n = 1 + Math.floor(rand() * 40);
  let text = "";
  for (let i = 0; i < n; i++) text += ALPHABET[Math.floor(rand() * ALPHABET.length)]!;
  return text;
}

describe("SentencePiece tokenization in pieces", () => {
  for (const path of VOCABS) {
    test(`${path.split("/").pop()}: pieces of 1-8 characters give llama.cpp's whole-text tokens`, () => {
      const whole = wholeTokenizer(path);
      const inVocab = codePointsOf(path);
      const addBos = loadModel(path, { vocabOnly: true, threads: 1 }).addBos;
      const rand = seededRandom(0x70c5);
      const fixed = [
        "你好世界😀🎉 hello 世界。\n<|user|>你好<|end|>\n😀😀",
        "a你b好c😀d",
        "<s>你好</s>世界",
        "  你好  ",
        "😀\ud800😀\udc00你",
      ];
      const texts = [...fixed, ...Array.from({ length: 250 }, () => randomText(rand))];
      let cut = 0;
      for (const text of texts) {
        for (const pieceChars of [1, 2, 3, 8]) {
          if (nextBoundary(text, pieceChars, inVocab) >= 0) cut++;
          for (const addSpecial of [false, true]) {
            for (const parseSpecial of [false, true]) {
              const want = whole(text, addSpecial, parseSpecial);
              const got = tokenizeInPieces(text, addSpecial, parseSpecial, whole, inVocab, addBos, pieceChars);
              assert.deepEqual(
                Array.from(got),
                Array.from(want),
                `${JSON.stringify(text)} pieces of ${pieceChars}, addSpecial ${addSpecial}, parseSpecial ${parseSpecial}`,
              );
            }
          }
        }
      }
      // stories260K has no CJK or emoji token: its texts were cut; the larger vocabularies still cut at emoji.
      assert.ok(cut > texts.length, `only ${cut} texts were cut`);
    });
  }

  test("stories260K: a long CJK and emoji text reaches llama.cpp in bounded pieces, with the whole text's tokens", () => {
    const model = loadModel(STORIES_260K, { threads: 1 });
    try {
      const whole = wholeTokenizer(STORIES_260K);
      const inVocab = codePointsOf(STORIES_260K);
      const units = [..."你好世界这是一个测试😀🎉🚀 mixed, text.\n"];
      let text = "";
      for (let i = 0; text.length < 16_000; i++) text += units[i % units.length]!;
      let longest = 0;
      const counting: RawTokenize = (t, a, p) => {
        longest = Math.max(longest, t.length);
        return whole(t, a, p);
      };
      const pieces = tokenizeInPieces(text, true, false, counting, inVocab, model.addBos, TOKENIZE_PIECE_CHARS);
      assert.ok(longest <= TOKENIZE_PIECE_CHARS + 40, `a piece of ${longest} characters`);
      const want = Array.from(whole(text, true, false));
      assert.deepEqual(Array.from(pieces), want);
      assert.deepEqual(Array.from(model.tokenize(text, { addSpecial: true })), want);
      assert.deepEqual(Array.from(model.tokenize(text, { addSpecial: false, parseSpecial: true })), Array.from(whole(text, false, true)));
    } finally {
      model.dispose();
    }
  });
});
