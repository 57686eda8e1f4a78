// The token trie (TokenTrie, tokenTrieFor): structure, duplicates, excluded kinds and empty tokens
// on small vocabularies, single-byte tokens, the per-byte token lists, and the invariants and
// caching of the build on real vocabularies (gpt-2, qwen2, llama-spm).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { TokenTrie, tokenTrieFor } from "../src/constraint/index.js";
import type { VocabularyBytes } from "../src/constraint/index.js";
import { TokenKind } from "../src/vocab/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { vocabFile } from "./support/paths.js";
import { isGenerable, makeVocab } from "./support/constraint-fixtures.js";

/** The parent of node `p` (the nearest node before it one level up). */
function parentOf(trie: TokenTrie, p: number): number {
  let q = p - 1;
  while (trie.depth[q]! >= trie.depth[p]!) q--;
  return q;
}

/**
 * Checks every structural invariant by a pre-order traversal that rebuilds each node's prefix:
 * children strictly byte-sorted, subtree sizes consistent, each node's tokens have exactly its
 * prefix, and the trie holds exactly the generable tokens, each once.
 */
function checkTrie(trie: TokenTrie, vocab: VocabularyBytes): void {
  const { numNodes, depth, subtreeSize, nodeByte, tokenStart, tokenIds } = trie;
  assert.equal(depth[0], 0);
  assert.equal(subtreeSize[0], numNodes);
  assert.equal(tokenStart[0], 0);
  assert.equal(tokenStart[numNodes], tokenIds.length);
  const prefix: number[] = [];
  const seen = new Uint8Array(vocab.size);
  // Stack of (node, end) to verify that children stay inside their parent's subtree.
  const ends: number[] = [numNodes];
  const lastChildByte: number[] = [-1];
  for (let p = 0; p < numNodes; p++) {
    const d = depth[p]!;
    if (p > 0) {
      while (ends.length > d) {
        assert.equal(ends[ends.length - 1], p, `subtree of depth ${ends.length - 1} ends at ${p}`);
        ends.pop();
        lastChildByte.pop();
      }
      assert.ok(nodeByte[p]! > lastChildByte[d - 1]!, `children byte-sorted at node ${p}`);
      lastChildByte[d - 1] = nodeByte[p]!;
      prefix.length = d - 1;
      prefix.push(nodeByte[p]!);
      ends.push(p + subtreeSize[p]!);
      lastChildByte.push(-1);
      assert.ok(subtreeSize[p]! >= 1);
      assert.ok(p + subtreeSize[p]! <= ends[ends.length - 2]!);
    }
    assert.ok(tokenStart[p + 1]! >= tokenStart[p]!);
    for (let k = tokenStart[p]!; k < tokenStart[p + 1]!; k++) {
      const id = tokenIds[k]!;
      assert.deepEqual([...vocab.data.subarray(vocab.offsets[id]!, vocab.offsets[id + 1]!)], prefix, `token ${id} at node ${p}`);
      assert.equal(seen[id], 0, `token ${id} twice`);
      seen[id] = 1;
      assert.equal(trie.tokenNode[id], p);
      assert.equal(trie.findNode(vocab.data.subarray(vocab.offsets[id]!, vocab.offsets[id + 1]!)), p, `findNode of token ${id}`);
    }
    if (p > 0) {
      // No child by a byte missing between consecutive children (or past the last one).
      const next = p + subtreeSize[p]!;
      const parentEnd = ends[ends.length - 2]!;
      const gap = next < parentEnd ? nodeByte[next]! - 1 : 255;
      if (gap > nodeByte[p]!) assert.equal(trie.child(parentOf(trie, p), gap), -1, `no child by byte ${gap} beside node ${p}`);
    }
    // A leaf must end a token (no dangling prefixes).
    if (subtreeSize[p] === 1 && p > 0) assert.ok(tokenStart[p + 1]! > tokenStart[p]!, `leaf ${p} ends a token`);
  }
  for (let id = 0; id < vocab.size; id++) {
    assert.equal(seen[id] === 1, isGenerable(vocab, id), `token ${id} generable=${isGenerable(vocab, id)}`);
    assert.equal(trie.isGenerable(id), isGenerable(vocab, id));
  }
}

test("small vocabulary: structure, duplicates, excluded kinds and empty tokens", () => {
  const K = TokenKind;
  const vocab = makeVocab(
    ["ab", "a", "abc", "b", "", "<eos>", "ab", "ba", "zz", "<ctl>", "\u00e9", "x"],
    [K.Normal, K.Normal, K.Normal, K.Byte, K.Normal, K.EndOfGeneration, K.UserDefined, K.Normal, K.Unused, K.Control, K.Normal, K.Normal],
  );
  const trie = TokenTrie.build(vocab);
  checkTrie(trie, vocab);
  // Nodes: root, a, ab, abc, b, ba, x, c3, c3a9.
  assert.equal(trie.numNodes, 9);
  assert.equal(trie.numTokens, 8);
  assert.equal(trie.everyByteIsToken, false);
  const abNode = trie.findNode(new TextEncoder().encode("ab"));
  assert.ok(abNode > 0);
  // Duplicate byte strings: both ids at one node, in id order.
  assert.deepEqual([...trie.tokenIds.subarray(trie.tokenStart[abNode]!, trie.tokenStart[abNode + 1]!)], [0, 6]);
  assert.equal(trie.findNode(new TextEncoder().encode("abd")), -1);
  assert.equal(trie.findNode(new TextEncoder().encode("zz")), -1, "Unused tokens are not in the trie");
  assert.equal(trie.findNode(new Uint8Array([0xc3])), trie.tokenNode[10]! - 1, "an interior prefix node");
  assert.equal(trie.isGenerable(5), false);
  assert.equal(trie.isGenerable(9), false);
  assert.equal(trie.isGenerable(4), false);
});

test("every single byte as a token is detected", () => {
  const tokens: Uint8Array[] = [];
  for (let b = 0; b < 256; b++) tokens.push(new Uint8Array([b]));
  tokens.push(new TextEncoder().encode("hello"));
  const trie = TokenTrie.build(makeVocab(tokens));
  assert.equal(trie.everyByteIsToken, true);
  const missingOne = TokenTrie.build(makeVocab(tokens.filter((t) => t[0] !== 0x41 || t.length > 1)));
  assert.equal(missingOne.everyByteIsToken, false);
});

test("empty vocabulary", () => {
  const trie = TokenTrie.build(makeVocab([]));
  assert.equal(trie.numNodes, 1);
  assert.equal(trie.numTokens, 0);
});

/**
 * The per-byte token lists against each token's own bytes: list b holds exactly the trie positions
 * whose token contains ASCII byte b, ascending; notUtf8Tokens exactly those a strict UTF-8 decoder
 * refuses; orderedData is each token's bytes in trie order.
 */
function checkAsciiIndex(trie: TokenTrie): void {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const expected: number[][] = Array.from({ length: 128 }, () => []);
  const notUtf8: number[] = [];
  for (let k = 0; k < trie.numTokens; k++) {
    const bytes = trie.tokenBytes(trie.tokenIds[k]!);
    assert.deepEqual(trie.orderedData.subarray(trie.orderedOffsets[k]!, trie.orderedOffsets[k + 1]!), bytes, `position ${k}`);
    for (const b of new Set(bytes)) if (b < 128) expected[b]!.push(k);
    try {
      decoder.decode(bytes);
    } catch {
      notUtf8.push(k);
    }
  }
  for (let b = 0; b < 128; b++) {
    assert.deepEqual([...trie.asciiTokens.subarray(trie.asciiTokenStart[b]!, trie.asciiTokenStart[b + 1]!)], expected[b], `byte ${b}`);
  }
  assert.deepEqual([...trie.notUtf8Tokens], notUtf8);
}

test("per-byte token lists on a small vocabulary", () => {
  const vocab = makeVocab(['a"b', '"', Uint8Array.of(0xc3, 0xa9), Uint8Array.of(0xc3), Uint8Array.of(0xed, 0xa0, 0x80), "plain"]);
  const trie = TokenTrie.build(vocab);
  checkAsciiIndex(trie);
  assert.equal(trie.asciiTokenStart[35]! - trie.asciiTokenStart[34]!, 2, 'two tokens hold "');
  assert.equal(trie.notUtf8Tokens.length, 2, "a lone lead byte and a surrogate are not whole characters");
});

for (const name of ["gpt-2", "qwen2", "llama-spm"]) {
  test(`real vocabulary ${name}: invariants hold, build is cached`, { skip: !existsSync(vocabFile(name)) }, () => {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    assert.equal(tokenTrieFor(vocab), trie);
    checkTrie(trie, vocab);
    checkAsciiIndex(trie);
    assert.equal(trie.everyByteIsToken, true, "byte-level BPE / SPM byte fallback cover all bytes");
  });
}

test("the longest token made only of some bytes, against every token of real vocabularies", () => {
  const alphabets: [string, (b: number) => boolean][] = [
    ["a and b", (b) => b === 0x61 || b === 0x62],
    ["x", (b) => b === 0x78],
    ["digits", (b) => b >= 0x30 && b <= 0x39],
    ["dash and space", (b) => b === 0x2d || b === 0x20],
    ["lower case and space", (b) => (b >= 0x61 && b <= 0x7a) || b === 0x20],
    ["ASCII", (b) => b < 0x80],
    ["every byte", () => true],
    ["none", () => false],
  ];
  for (const name of ["gpt-2", "qwen2"]) {
    const vocab = loadVocabulary(vocabFile(name));
    const trie = tokenTrieFor(vocab);
    const answers: [Uint32Array, number, string][] = [];
    for (const [label, within] of alphabets) {
      const words = new Uint32Array(8);
      for (let b = 0; b < 256; b++) if (within(b)) words[b >>> 5]! |= 1 << (b & 31);
      let expected = 0;
      for (let k = 0; k < trie.numTokens; k++) {
        const bytes = trie.tokenBytes(trie.tokenIds[k]!);
        if (bytes.length > expected && bytes.every(within)) expected = bytes.length;
      }
      assert.equal(trie.longestTokenWithin(words), expected, `${name}: ${label}`);
      if (label === "every byte") assert.equal(expected, trie.maxTokenLength);
      if (label === "a and b" || label === "x") assert.ok(expected > 1 && expected < 32, `${name}: ${label}: ${expected}`);
      answers.push([words, expected, label]);
    }
    // Asked again, in the other order: the kept answers are each alphabet's own ("ASCII" and
    // "every byte" differ only in the high words).
    for (const [words, expected, label] of answers.reverse())
      assert.equal(trie.longestTokenWithin(words.slice()), expected, `${name}: ${label} again`);
  }
});
