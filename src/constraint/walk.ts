import type { TokenTrie } from "./trie.js";
import type { WorkMeter } from "./work-meter.js";
import { setTokenRange } from "../support/index.js";
import type { ByteAutomaton } from "./types.js";

/**
 * Called once per trie node that ends at least one token and is reachable: the tokens are
 * trie.tokenIds[from .. to) and `state` is the automaton state after their bytes.
 */
export type TrieTokenVisitor = (from: number, to: number, state: number) => void;

/**
 * Walks the subtree of trie node `root` (0 = whole trie) with any byte automaton, skipping every
 * subtree whose prefix the automaton rejects. The tokens at `root` itself are visited with
 * `startState` (they consume no further bytes). When `mask` is given, the bits of all reached
 * tokens are set in it. Returns the number of reached tokens.
 *
 * This is the pluggable form for automata other than a plain ByteDfa (grammar lexer + parser);
 * `DfaTokenMatcher` has its own specialized copy of the same loop.
 */
export function walkTrie(
  trie: TokenTrie,
  automaton: ByteAutomaton,
  startState: number,
  root: number,
  mask: Uint32Array | undefined,
  visit: TrieTokenVisitor | undefined,
  /** Charged with the nodes visited (see work-meter.ts). */
  meter?: WorkMeter,
): number {
  const { depth, subtreeSize, nodeByte, tokenStart, tokenIds } = trie;
  const stateAtDepth = new Int32Array(trie.maxTokenLength + 2);
  const baseDepth = depth[root]!;
  stateAtDepth[baseDepth] = startState;
  let count = 0;
  const visitNode = (p: number, state: number): void => {
    const from = tokenStart[p]!;
    const to = tokenStart[p + 1]!;
    if (from === to) return;
    count += to - from;
    if (mask !== undefined) setTokenRange(mask, tokenIds, from, to);
    if (visit !== undefined) visit(from, to, state);
  };
  if (root !== 0) visitNode(root, startState);
  const end = root + subtreeSize[root]!;
  let p = root + 1;
  let steps = 0;
  while (p < end) {
    steps++;
    const d = depth[p]!;
    const ns = automaton.step(stateAtDepth[d - 1]!, nodeByte[p]!);
    if (ns < 0) {
      p += subtreeSize[p]!;
      continue;
    }
    stateAtDepth[d] = ns;
    visitNode(p, ns);
    p++;
  }
  meter?.charge(steps);
  return count;
}
