/**
 * The regex matchers a process shares: one DfaTokenMatcher per (compiled DFA, trie) pair, so masks
 * computed once serve every request, and the JIT warm-up of their walks that each thread runs
 * when it starts.
 */
import { TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";
import { DfaTokenMatcher, type DfaTokenMatcherOptions } from "./matcher.js";

const matcherCache = new WeakMap<ByteDfa, WeakMap<TokenTrie, DfaTokenMatcher>>();

/**
 * The shared matcher for a (compiled DFA, trie) pair: masks computed once serve every request.
 * `options` apply when it is made (the first call for the pair).
 */
export function dfaTokenMatcherFor(trie: TokenTrie, dfa: ByteDfa, options?: DfaTokenMatcherOptions): DfaTokenMatcher {
  let byTrie = matcherCache.get(dfa);
  if (byTrie === undefined) {
    byTrie = new WeakMap();
    matcherCache.set(dfa, byTrie);
  }
  let matcher = byTrie.get(trie);
  if (matcher === undefined) {
    matcher = new DfaTokenMatcher(trie, dfa, options);
    byTrie.set(trie, matcher);
  }
  return matcher;
}

/**
 * Runs every path of the walks once on a toy vocabulary (once per thread: the runtime and the
 * compile worker call it when they start, not the import), so V8 has type feedback
 * for all of them before the first real walk; without it the first real walks ran deoptimized
 * and recompiled several times (tens of ms each on a busy machine).
 */
let warmedUp = false;

export function warmUpMatchers(): void {
  if (warmedUp) return;
  warmedUp = true;
  const enc = new TextEncoder();
  const words = ["a", "b", "ab", "ba", "aaaaaaaaaaaa", "abababababab", "bbbbbbbbbbbbb", "c", "ca", "\u00e9\u00e9", "\u4e2d"];
  const parts = words.map((w) => enc.encode(w));
  const offsets = new Uint32Array(parts.length + 1);
  for (let i = 0; i < parts.length; i++) offsets[i + 1] = offsets[i]! + parts[i]!.length;
  const data = new Uint8Array(offsets[parts.length]!);
  for (let i = 0; i < parts.length; i++) data.set(parts[i]!, offsets[i]!);
  const trie = TokenTrie.build({ size: parts.length, offsets, data, kinds: new Uint8Array(parts.length) });
  // State 0 loops on a/b and every non-ASCII byte class (a crude [^c]*), "c" goes to accepting state 1.
  const byteClass = new Uint8Array(256);
  byteClass[0x63] = 1;
  const dfa: ByteDfa = {
    numStates: 2,
    start: 0,
    numClasses: 2,
    byteClass,
    next: Int32Array.from([0, 1, -1, -1]),
    accepting: Uint8Array.from([0, 1]),
    minBytesToAccept: Int32Array.from([1, 0]),
  };
  for (let round = 0; round < 3; round++) {
    const m = new DfaTokenMatcher(trie, dfa);
    m.mask(0);
    m.mask(1);
    m.mask(0, 1);
    m.advance(0, 2);
  }
}
