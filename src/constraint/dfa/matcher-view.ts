/**
 * What the mask walks (walks.ts) and the budget planner (budget.ts) use of their DfaTokenMatcher,
 * as an interface below all three: the matcher builds them and hands itself over.
 */
import type { WorkMeter } from "../work-meter.js";

export interface DfaMatcherView {
  /** 32-bit words of one token mask. */
  readonly words: number;
  /** A mask allowing no token. */
  readonly emptyMask: Uint32Array;
  readonly work: WorkMeter;
  /** Fills the loop sets of `state`; returns its loop kind. */
  computeLoop(state: number): number;
  /** Whether every token below trie node p leads from `state` back to `state`. */
  subtreeLoops(p: number, state: number): boolean;
  /** The tokens of trie node `root`'s subtree that keep the DFA live from `state`, as (from, to, target) triples. */
  subtreeSpans(root: number, state: number): Int32Array;
  /** Distinct DFA states reachable from `state` by one allowed token. */
  tokenSuccessors(state: number): Int32Array;
}
