// Vocabularies from GGUF: every shared vocabulary loads with a consistent layout, kinds and EOG
// ids; each tokenizer family's token bytes (SentencePiece, byte-level BPE, DeepSeek's user-defined
// tokens, gemma-4, phi-3, the real models) and llama.cpp's text-based EOG and control rules.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  GgufStringArray,
  GgufValueType,
  TokenKind,
  VocabularyError,
  concatTokenBytes,
  decodeTokens,
  loadVocabulary,
  stripSpacePrefix,
  vocabularyFromGguf,
  type GgufFile,
  type GgufValue,
  type Vocabulary,
  type VocabularyLoadStats,
} from "../src/vocab/index.js";
import { LLAMA2_TINY_RANDOM, STORIES_260K, vocabFile } from "./support/paths.js";

const VOCAB_NAMES = ["gpt-2", "llama-spm", "llama-bpe", "qwen2", "phi-3", "gemma-4", "deepseek-llm", "starcoder"];
const cache = new Map<string, { vocab: Vocabulary; stats: VocabularyLoadStats }>();
function load(name: string): Vocabulary {
  let entry = cache.get(name);
  if (!entry) {
    const stats: VocabularyLoadStats = { nonByteLevelNormalTokens: -1 };
    const path = name === "stories260K" ? STORIES_260K : name === "llama-2-tiny-random" ? LLAMA2_TINY_RANDOM : vocabFile(name);
    entry = { vocab: loadVocabulary(path, stats), stats };
    cache.set(name, entry);
  }
  return entry.vocab;
}

function idOfText(v: Vocabulary, text: string): number {
  for (let i = 0; i < v.size; i++) if (v.tokenText(i) === text) return i;
  throw new Error(`no token ${JSON.stringify(text)}`);
}
const bytesOf = (v: Vocabulary, id: number): number[] => Array.from(v.tokenBytes(id));
const utf8 = (s: string): number[] => Array.from(new TextEncoder().encode(s));
const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });
function isValidUtf8(b: Uint8Array): boolean {
  try {
    fatalUtf8.decode(b);
    return true;
  } catch {
    return false;
  }
}

test("every vocabulary loads with consistent layout, kinds and EOG ids", () => {
  for (const name of [...VOCAB_NAMES, "stories260K", "llama-2-tiny-random"]) {
    const v = load(name);
    assert.equal(v.offsets.length, v.size + 1, name);
    assert.equal(v.offsets[0], 0);
    assert.equal(v.offsets[v.size], v.data.length, name);
    for (let i = 0; i < v.size; i++) assert.ok(v.offsets[i + 1]! >= v.offsets[i]!, `${name} offsets at ${i}`);
    assert.equal(v.kinds.length, v.size);
    for (const k of v.kinds) assert.ok(k >= TokenKind.Normal && k <= TokenKind.UserDefined);
    assert.ok(v.eosToken >= 0, `${name} has an eos`);
    assert.ok(v.eogTokens.includes(v.eosToken), `${name}: eos is end-of-generation`);
    const eogByKind: number[] = [];
    v.kinds.forEach((k, i) => k === TokenKind.EndOfGeneration && eogByKind.push(i));
    assert.deepEqual(Array.from(v.eogTokens), eogByKind, name);
    for (const id of v.eogTokens) assert.ok(v.isEog(id));
    // tokens that generation can emit as text are never empty
    for (let i = 0; i < v.size; i++) {
      const k = v.kinds[i];
      if (k === TokenKind.Normal || k === TokenKind.Byte || k === TokenKind.UserDefined) {
        assert.ok(v.tokenBytes(i).length > 0, `${name} token ${i} is empty`);
      }
    }
  }
});

test("SentencePiece (llama-spm): ▁ is a space, <0xNN> is one byte, specials keep their text", () => {
  const v = load("llama-spm");
  assert.equal(v.tokenizerModel, "llama");
  assert.equal(v.addSpacePrefix, true);
  assert.equal(v.addBos, true);
  assert.equal(v.bosToken, 1);
  assert.deepEqual(Array.from(v.eogTokens), [2]);
  assert.equal(v.kinds[0], TokenKind.Control); // <unk>
  assert.equal(v.kinds[1], TokenKind.Control); // <s>
  assert.deepEqual(bytesOf(v, 1), utf8("<s>"));
  assert.deepEqual(bytesOf(v, 2), utf8("</s>"));
  for (let b = 0; b < 256; b++) {
    const id = 3 + b;
    assert.equal(v.tokenText(id), `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    assert.equal(v.kinds[id], TokenKind.Byte);
    assert.deepEqual(bytesOf(v, id), [b]);
  }
  assert.deepEqual(bytesOf(v, idOfText(v, "▁the")), utf8(" the"));
  assert.deepEqual(bytesOf(v, idOfText(v, "▁▁")), utf8("  "));
  const ids = [idOfText(v, "▁Hello"), idOfText(v, "▁world"), 3 + 0x0a];
  assert.equal(decodeTokens(v, ids), " Hello world\n");
  assert.equal(stripSpacePrefix(v, decodeTokens(v, ids)), "Hello world\n");
  // partial UTF-8 through byte tokens: "中" = E4 B8 AD
  assert.equal(decodeTokens(v, [3 + 0xe4, 3 + 0xb8, 3 + 0xad]), "中");
  assert.deepEqual(Array.from(concatTokenBytes(v, [3 + 0xe4, 3 + 0xb8])), [0xe4, 0xb8]);
});

test("byte-level BPE (gpt-2, qwen2, llama-bpe): bytes_to_unicode inverse, partial UTF-8 kept as bytes", () => {
  for (const name of ["gpt-2", "qwen2", "llama-bpe", "deepseek-llm", "starcoder"]) {
    const v = load(name);
    assert.equal(v.tokenizerModel, "gpt2");
    assert.equal(v.addSpacePrefix, false);
    assert.equal(cache.get(name)!.stats.nonByteLevelNormalTokens, 0, `${name}: every normal token is byte-level`);
    // all 256 single bytes are tokens of their own
    const singles = new Set<number>();
    for (let i = 0; i < v.size; i++) if (v.kinds[i] === TokenKind.Normal && v.tokenBytes(i).length === 1) singles.add(v.tokenBytes(i)[0]!);
    const missing = [...Array(256).keys()].filter((b) => !singles.has(b));
    // DeepSeek stores the 13 bytes that never occur in UTF-8 (C0, C1, F5-FF) as user-defined
    // tokens in plain text ("ø" for F8...): llama.cpp renders them as that text, and so do we.
    const neverInUtf8 = [0xc0, 0xc1, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff];
    if (name === "deepseek-llm") assert.deepEqual(missing, neverInUtf8);
    else if (name !== "starcoder") assert.deepEqual(missing, [], name); // starcoder's vocabulary lacks a few
    assert.deepEqual(bytesOf(v, idOfText(v, "Ġthe")), utf8(" the"), name);
    assert.deepEqual(bytesOf(v, idOfText(v, "Ċ")), [0x0a], name);
    assert.deepEqual(bytesOf(v, idOfText(v, "ĉ")), [0x09], name);
  }
  const gpt2 = load("gpt-2");
  assert.deepEqual(Array.from(gpt2.eogTokens), [50256]);
  assert.deepEqual(bytesOf(gpt2, 50256), utf8("<|endoftext|>"));
  // qwen2 has ~1.4k tokens that are not valid UTF-8 on their own (node-llama-cpp shows U+FFFD)
  const qwen = load("qwen2");
  let partial = 0;
  for (let i = 0; i < qwen.size; i++) if (qwen.kinds[i] === TokenKind.Normal && !isValidUtf8(qwen.tokenBytes(i))) partial++;
  assert.ok(partial > 1000, `qwen2 partial-UTF-8 tokens: ${partial}`);
  assert.deepEqual(Array.from(qwen.eogTokens), [128247, 151643, 151645]); // </s>, <|endoftext|>, <|im_end|>
  assert.equal(qwen.kinds[idOfText(qwen, "<|im_start|>")], TokenKind.Control);
  const llama3 = load("llama-bpe");
  assert.deepEqual(Array.from(llama3.eogTokens), [128001, 128009]);
  assert.equal(llama3.addBos, true);
  assert.equal(llama3.kinds[128000], TokenKind.Control);
  const starcoder = load("starcoder");
  assert.deepEqual(Array.from(starcoder.eogTokens), [0, 4]); // <|endoftext|>, <fim_pad>
});

test("DeepSeek's plain-text user-defined tokens are their UTF-8 text", () => {
  const v = load("deepseek-llm");
  let plain = 0;
  for (let i = 0; i < v.size; i++) {
    if (v.kinds[i] !== TokenKind.UserDefined) continue;
    assert.deepEqual(bytesOf(v, i), utf8(v.tokenText(i)));
    if (/[^\u0021-\u007e]/u.test(v.tokenText(i))) plain++;
  }
  assert.ok(plain >= 13, `user-defined tokens with non-ASCII text: ${plain}`);
  assert.deepEqual(bytesOf(v, idOfText(v, "ø")), [0xc3, 0xb8]);
  assert.deepEqual(Array.from(v.eogTokens), [100001]);
});

test("gemma-4: BPE with ▁ spaces and <0xNN> byte fallback; llama.cpp's gemma4 EOG rules", () => {
  const v = load("gemma-4");
  assert.equal(v.tokenizerModel, "gemma4");
  assert.equal(v.addSpacePrefix, false);
  assert.equal(v.addBos, true);
  let byteTokens = 0;
  for (let i = 0; i < v.size; i++) if (v.kinds[i] === TokenKind.Byte) byteTokens++;
  assert.equal(byteTokens, 256);
  assert.deepEqual(bytesOf(v, idOfText(v, "<0x0A>")), [0x0a]);
  assert.deepEqual(bytesOf(v, idOfText(v, "▁the")), utf8(" the"));
  const eogTexts = Array.from(v.eogTokens, (id) => v.tokenText(id));
  assert.deepEqual(eogTexts.sort(), ["<eos>", "<turn|>", "<|tool_response>"].sort());
  assert.equal(v.kinds[idOfText(v, "<bos>")], TokenKind.Control);
});

test("phi-3: SPM with chat-turn EOG tokens", () => {
  const v = load("phi-3");
  const eogTexts = Array.from(v.eogTokens, (id) => v.tokenText(id));
  assert.deepEqual(eogTexts, ["</s>", "<|endoftext|>", "<|end|>"]);
  assert.equal(v.kinds[idOfText(v, "<|user|>")], TokenKind.Control);
});

test("real models: stories260K and llama-2-tiny-random are SentencePiece with byte tokens", () => {
  for (const name of ["stories260K", "llama-2-tiny-random"]) {
    const v = load(name);
    assert.equal(v.tokenizerModel, "llama");
    assert.equal(v.bosToken, 1);
    assert.deepEqual(Array.from(v.eogTokens), [2]);
    assert.deepEqual(bytesOf(v, 3 + 0x20), [0x20]);
  }
  assert.equal(load("stories260K").size, 512);
  assert.equal(load("llama-2-tiny-random").size, 32_000);
});

/** A GgufFile with just the tokenizer metadata (no file). */
function syntheticVocab(model: string, texts: string[], types: number[], extra: Array<[string, GgufValue]> = []): Vocabulary {
  const enc = new TextEncoder();
  const parts = texts.map((t) => enc.encode(t));
  const offsets = new Uint32Array(parts.length + 1);
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length));
  const bytes = new Uint8Array(offsets[parts.length]!);
  parts.forEach((p, i) => bytes.set(p, offsets[i]!));
  const metadata = new Map<string, GgufValue>([
    ["tokenizer.ggml.model", model],
    ["tokenizer.ggml.tokens", new GgufStringArray(offsets, bytes)],
    ["tokenizer.ggml.token_type", { itemType: GgufValueType.INT32, values: Int32Array.from(types) }],
    ...extra,
  ]);
  const file: GgufFile = { version: 3, kvs: [], metadata, tensors: [], alignment: 32, dataOffset: 0, fileSize: 0 };
  return vocabularyFromGguf(file);
}

test("llama.cpp's text-based rules: EOG texts, unused control tokens, gpt-oss and <|end|> exceptions", () => {
  const N = 1,
    C = 3;
  const v = syntheticVocab(
    "gpt2",
    ["a", "<|endoftext|>", "<|im_end|>", "<|reserved_unused_1|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>", "Ġb", "<|fim_pad|>"],
    [N, C, N, C, C, C, C, C, N, C],
    [
      ["tokenizer.ggml.eos_token_id", 1],
      ["tokenizer.ggml.pre", "qwen2"],
    ],
  );
  assert.equal(v.kinds[0], TokenKind.Normal);
  // <|im_end|> is typed normal but llama.cpp makes it control + EOG by its text
  assert.deepEqual(Array.from(v.eogTokens), [1, 2, 6, 7, 9]); // not <|end|> (gpt-oss: <|return|> and <|call|> exist)
  assert.deepEqual(bytesOf(v, 2), utf8("<|im_end|>"));
  assert.equal(v.kinds[3], TokenKind.Unused);
  assert.equal(v.kinds[4], TokenKind.UserDefined);
  assert.equal(v.kinds[5], TokenKind.UserDefined);
  assert.deepEqual(bytesOf(v, 8), utf8(" b"));
  assert.equal(v.addBos, false);

  // gemma4: </s> is ordinary text when <|tool_response> exists
  const g = syntheticVocab(
    "gemma4",
    ["<pad>", "<eos>", "</s>", "<|tool_response>", "▁x", "<0x41>"],
    [C, C, C, C, N, 6],
    [["tokenizer.ggml.eos_token_id", 1]],
  );
  assert.deepEqual(Array.from(g.eogTokens), [1, 3]);
  assert.equal(g.kinds[2], TokenKind.Normal);
  assert.deepEqual(bytesOf(g, 4), utf8(" x"));
  assert.deepEqual(bytesOf(g, 5), [0x41]);
  assert.equal(g.addBos, true);

  // PLaMo-2 spells normal tokens as plain text (no ▁ unescaping); SPM without token types
  const p = syntheticVocab("plamo2", ["<unk>", "<s>", "</s>", "▁x", "<0x0A>"], [2, C, C, N, 6]);
  assert.deepEqual(bytesOf(p, 3), utf8("▁x"));
  assert.deepEqual(bytesOf(p, 4), [0x0a]);

  assert.throws(() => syntheticVocab("rwkv", ["a"], [N]), VocabularyError);
  assert.throws(() => syntheticVocab("llama", ["<0xZZ>"], [6]), VocabularyError);
});
