// A DFA minus a finite set of byte strings, built directly: the strings' trie laid over the DFA.
// A JSON Schema object that allows more properties than it names needs "any key but these" once
// per shape; through the general product (a literal DFA, the product, its minimization) that was
// ~18% of a median schema's first compile.

import { regexClock } from "../clock.js";
import { RegexTooComplexError } from "../errors.js";
import { pruneDfa } from "./finish.js";
import { dfaArena } from "./scratch.js";
import type { ByteDfa, DfaLimits } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/**
 * The strings of `a` that are none of `strings`. A trie node stands for the state of `a` its path
 * reaches (a path that leaves `a`'s language is cut: nothing past it is in `a`); a byte the node
 * has no child for leads into `a`'s own states, which the result holds after the trie. Subtries
 * alike (same state of `a`, same ends, same children) are one state. Live states only, numbered
 * breadth-first, exact distances (pruneDfa); minimal when `a` is and no two of its states differ
 * by finitely many strings. Work: the strings' bytes plus (trie states + a's states) × classes.
 */
export function subtractStrings(a: ByteDfa, strings: readonly Uint8Array[], limits: DfaLimits): ByteDfa {
  arena.reset();
  const ka = a.numClasses;
  // 1. The trie: per node, the state of `a` it is at and whether a string ends there.
  const stateOf: number[] = [a.start];
  const ends: number[] = [0];
  const childBytes: number[][] = [[]];
  const child = new Map<number, number>(); // node * 256 + byte → node
  for (const bytes of strings) {
    clock.tick(bytes.length + 1);
    let node = 0;
    let inA = a.minBytesToAccept[a.start]! >= 0;
    for (let i = 0; i < bytes.length && inA; i++) {
      const b = bytes[i]!;
      const known = child.get(node * 256 + b);
      if (known !== undefined) {
        node = known;
        continue;
      }
      const t = a.next[stateOf[node]! * ka + a.byteClass[b]!]!;
      if (t < 0) inA = false;
      else {
        const id = stateOf.length;
        stateOf.push(t);
        ends.push(0);
        childBytes.push([]);
        child.set(node * 256 + b, id);
        childBytes[node]!.push(b);
        node = id;
      }
    }
    if (inA) ends[node] = 1;
  }
  const nodes = stateOf.length;
  // 2. Classes: a's, with each byte the trie reads in one of its own.
  const readByTrie = new Uint8Array(256);
  for (const bytes of childBytes) for (const b of bytes) readByTrie[b] = 1;
  const classOfByte = arena.take(256);
  const firstByte = arena.take(256);
  // Keys: a's class (< 256), or 256 + the byte for the trie's.
  const classOfKey = arena.take(512, -1);
  let k = 0;
  for (let b = 0; b < 256; b++) {
    const key = readByTrie[b] === 1 ? 256 + b : a.byteClass[b]!;
    if (classOfKey[key] === -1) {
      classOfKey[key] = k;
      firstByte[k++] = b;
    }
    classOfByte[b] = classOfKey[key]!;
  }
  // 3. Subtries alike are one state, found bottom-up (children are made after their parents).
  const canonical = arena.take(nodes);
  const bySignature = new Map<string, number>();
  for (let node = nodes - 1; node >= 0; node--) {
    const bytes = childBytes[node]!.sort((x, y) => x - y);
    clock.tick(bytes.length + 1);
    let signature = `${stateOf[node]} ${ends[node]}`;
    for (const b of bytes) signature += ` ${b}:${canonical[child.get(node * 256 + b)!]}`;
    const known = bySignature.get(signature);
    if (known !== undefined) canonical[node] = known;
    else {
      bySignature.set(signature, node);
      canonical[node] = node;
    }
  }
  // 4. Raw states: the canonical trie nodes (the root's first), then a's states.
  const rawOfNode = arena.take(nodes, -1);
  let trieStates = 0;
  rawOfNode[canonical[0]!] = trieStates++;
  for (let node = 1; node < nodes; node++) if (canonical[node] === node && rawOfNode[node] === -1) rawOfNode[node] = trieStates++;
  const rawCount = trieStates + a.numStates;
  if (rawCount > limits.maxDfaStates) {
    throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${limits.maxDfaStates} states`, "dfaStates");
  }
  const trans = arena.take(rawCount * k, -1);
  const accepting = arena.take(rawCount);
  for (let node = 0; node < nodes; node++) {
    if (canonical[node] !== node) continue;
    clock.tick(k);
    const raw = rawOfNode[node]!;
    const s = stateOf[node]!;
    // Off the trie into a's states, then the node's children over their bytes' classes.
    for (let c = 0; c < k; c++) {
      const t = a.next[s * ka + a.byteClass[firstByte[c]!]!]!;
      if (t >= 0) trans[raw * k + c] = trieStates + t;
    }
    for (const b of childBytes[node]!) trans[raw * k + classOfByte[b]!] = rawOfNode[canonical[child.get(node * 256 + b)!]!]!;
    accepting[raw] = a.accepting[s] === 1 && ends[node] === 0 ? 1 : 0;
  }
  for (let s = 0; s < a.numStates; s++) {
    clock.tick(k);
    const raw = trieStates + s;
    for (let c = 0; c < k; c++) {
      const t = a.next[s * ka + a.byteClass[firstByte[c]!]!]!;
      if (t >= 0) trans[raw * k + c] = trieStates + t;
    }
    accepting[raw] = a.accepting[s]!;
  }
  return pruneDfa(rawCount, k, trans, accepting, classOfByte);
}
