/** The shapes of a BNF grammar and its LALR(1) table, below both the build (lark/) and its runner (lalr.ts). */

/** One BNF production. `expansion` holds symbol names; terminals are the names in `terminals`. */
export interface BnfRule {
  origin: string;
  expansion: string[];
  priority: number | null;
  /** Lark's `Rule.order` within its origin (used only in messages). */
  order: number;
  alias?: string | null;
}

export interface LalrTable {
  readonly numStates: number;
  /** Terminal names; index 0 is "$END". */
  readonly terminals: readonly string[];
  readonly nonterminals: readonly string[];
  readonly rules: readonly BnfRule[];
  /** action[state * numTerminals + terminal]: v > 0 shift to v-1, v < 0 reduce rule -v-1, 0 error. */
  readonly action: Int32Array;
  /** goto[state * numNonterminals + nonterminal] → state or -1. */
  readonly goto: Int32Array;
  readonly ruleLhs: Int32Array; // nonterminal index
  readonly ruleLen: Int32Array;
  readonly startState: number;
  /** Reaching this state by a reduction while feeding $END means acceptance (Lark's end_state). */
  readonly endState: number;
  readonly terminalIndex: ReadonlyMap<string, number>;
  /** Terminals with a non-error action per state (what Lark's contextual lexer accepts there). */
  readonly acceptsByState: readonly Int32Array[];
  /** LR(0) kernel items per state as (rule, dot) pairs, flattened. */
  readonly kernels: readonly Int32Array[];
}
