/**
 * generate/stream.ts: token bytes → text pieces. Random byte splits of random texts (multi-byte
 * characters, surrogate pairs, stop strings overlapping each other): the pieces add up to the text
 * before the first stop string (checked after each token, as vLLM and OpenAI do), no piece holds a
 * broken character, and no piece is ever sent that a stop string later takes back.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { TextStream } from "../src/generate/stream.js";
import { seededRandom } from "./support/generate-harness.js";

const ALPHABET = ["a", "b", "é", "日", "🙂", " ", "\n", "<", "/"];

test("pieces add up to the text before the first stop string; nothing sent is taken back", () => {
  const rng = seededRandom(42);
  for (let trial = 0; trial < 3000; trial++) {
    const length = Math.floor(rng() * 30);
    let text = "";
    for (let i = 0; i < length; i++) text += ALPHABET[Math.floor(rng() * ALPHABET.length)]!;
    const stops: string[] = [];
    const nStops = Math.floor(rng() * 3);
    for (let s = 0; s < nStops; s++) {
      const chars = Array.from(text);
      if (chars.length > 2 && rng() < 0.7) {
        const at = Math.floor(rng() * (chars.length - 1));
        stops.push(chars.slice(at, at + 1 + Math.floor(rng() * 4)).join(""));
      } else stops.push(["</", "🙂🙂", "a b"][s]!);
    }
    const bytes = Buffer.from(text);
    // Healing skips whole prompt characters: here one ASCII character.
    const skip = rng() < 0.2 && bytes.length > 0 && bytes[0]! < 0x80 ? 1 : 0;
    const pieces: string[] = [];
    const stream = new TextStream(stops, skip, (piece) => pieces.push(piece));
    // The rule: after each token, if the text so far holds a stop string, it ends before the
    // earliest one (a token may complete several).
    let expected: string | null = null;
    let stopped = false;
    for (let at = 0; at < bytes.length && !stopped; ) {
      const n = 1 + Math.floor(rng() * 5);
      stopped = stream.push(bytes.subarray(at, at + n));
      at += n;
      const sofar = new TextDecoder().decode(bytes.subarray(skip, Math.max(skip, Math.min(at, bytes.length))));
      let end = -1;
      for (const stop of stops) {
        const i = sofar.indexOf(stop);
        if (i >= 0 && (end < 0 || i < end)) end = i;
      }
      if (end >= 0) expected ??= sofar.slice(0, end);
    }
    if (!stopped) stream.finish();
    const cut = expected !== null;
    expected ??= new TextDecoder().decode(bytes.subarray(skip));
    const label = JSON.stringify({ text, stops, skip });
    assert.equal(pieces.join(""), expected, label);
    assert.equal(stream.text, expected, label);
    assert.equal(stream.stoppedAtStop, cut, label);
    for (const piece of pieces) {
      assert.ok(piece.length > 0, label);
      assert.ok(!piece.includes("\uFFFD"), label);
      assert.ok(!/[\uD800-\uDBFF]$/.test(piece) && !/^[\uDC00-\uDFFF]/.test(piece), `a surrogate pair split: ${label}`);
    }
  }
});

test("a broken last character becomes U+FFFD only when the generation ends on it", () => {
  const pieces: string[] = [];
  const stream = new TextStream([], 0, (p) => pieces.push(p));
  stream.push(Buffer.from("ab"));
  stream.push(Buffer.from([0xe6, 0x97]));
  assert.deepEqual(pieces, ["ab"]);
  stream.finish();
  assert.deepEqual(pieces, ["ab", "\uFFFD"]);
});
