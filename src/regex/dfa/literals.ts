// The literal-trie construction: the DFA of patterns that are each one literal byte string or
// one class of ASCII bytes, built without an NFA or a subset construction and finished as
// determinize's DFAs are (finish.ts), so it is the very same DFA.

import { regexClock } from "../clock.js";
import { finishDfa } from "./finish.js";
import { dfaArena } from "./scratch.js";
import type { MultiByteDfa } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/**
 * The DFA determinize makes for patterns that are each one literal byte string (keywords and
 * punctuation: most of a grammar's terminals) or one class of ASCII bytes (128 flags: a range
 * such as a palindrome's middle letter), built as the literals' trie plus the one-byte strings of
 * the classes, and finished the same way (finishDfa's minimization and numbering are canonical,
 * so the result is the same DFA). It skips the NFA and the subset construction, which made a
 * one-literal scanner cost about ten times more.
 */
export function determinizeLiterals(patterns: readonly (readonly number[] | Uint8Array)[]): MultiByteDfa {
  arena.reset();
  const numPatterns = patterns.length;
  const { classOfByte, k, numClasses } = literalIntervals(patterns);
  let total = 1;
  for (const pattern of patterns) total += pattern instanceof Uint8Array ? 1 : pattern.length;
  // A class's bytes take the root to at most one node per interval; bounded by the intervals.
  if (numClasses > 0) total += k;
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const trans = arena.take(total * k, -1);
  const rawMask = arena.take(total * acceptWords);
  const rawAccepting = arena.take(total);
  let nodes = 1;
  for (let p = 0; p < numPatterns; p++) {
    const pattern = patterns[p]!;
    if (pattern instanceof Uint8Array) {
      // One byte from the root: the literal trie's node for it when there is one, else a node of
      // its own (classes only ever end there; minimization merges the equal ones).
      for (let b = 0; b < 128; b++) {
        if (pattern[b] !== 1) continue;
        const at = classOfByte[b]!;
        if (trans[at]! < 0) trans[at] = nodes++;
        rawMask[trans[at]! * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
        rawAccepting[trans[at]!] = 1;
      }
      continue;
    }
    let s = 0;
    clock.tick(pattern.length + 1);
    for (const b of pattern) {
      const at = s * k + classOfByte[b]!;
      if (trans[at]! < 0) trans[at] = nodes++;
      s = trans[at]!;
    }
    rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
    rawAccepting[s] = 1;
  }
  return finishDfa(nodes, k, trans, rawMask, rawAccepting, acceptWords, numPatterns, classOfByte);
}

/**
 * The byte intervals of a set of literals and ASCII classes (classOfByte, k of them) and how many
 * of the patterns are classes.
 */
function literalIntervals(patterns: readonly (readonly number[] | Uint8Array)[]): {
  classOfByte: Int32Array;
  k: number;
  numClasses: number;
} {
  // Byte intervals as determinize refines 0..255, numbered by their first byte: each byte some
  // literal uses on its own, the others grouped by the classes they are in (all other bytes
  // together when there are none).
  const literalByte = arena.take(256);
  const classes: Uint8Array[] = [];
  for (const pattern of patterns) {
    if (pattern instanceof Uint8Array) classes.push(pattern);
    else for (const b of pattern) literalByte[b] = 1;
  }
  const classOfByte = arena.take(256);
  let k = 0;
  let otherBytes = -1;
  const byMembership = classes.length === 0 ? null : new Map<string, number>();
  for (let b = 0; b < 256; b++) {
    if (literalByte[b] === 1) {
      classOfByte[b] = k++;
      continue;
    }
    let key = "";
    if (b < 128) for (let c = 0; c < classes.length; c++) if (classes[c]![b] === 1) key += c + ",";
    if (key === "") {
      if (otherBytes < 0) otherBytes = k++;
      classOfByte[b] = otherBytes;
      continue;
    }
    let id = byMembership!.get(key);
    if (id === undefined) {
      id = k++;
      byMembership!.set(key, id);
    }
    classOfByte[b] = id;
  }
  return { classOfByte, k, numClasses: classes.length };
}
