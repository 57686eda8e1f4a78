// LALR(1) tables as lark/parsers/lalr_analysis.py builds them (DeRemer–Pennello lookaheads):
// shift/reduce conflicts resolve to shift, reduce/reduce conflicts are resolved by rule priority
// or refused with Lark's message. The table's shape and the runner that walks it are here; the
// phases of the build, one function each as Lark names them, are in lark/grammar-analysis.ts
// (GrammarAnalyzer) and lark/lalr-analysis.ts (LALR_Analyzer).

import { Int32Arena } from "../support/index.js";
import { GrammarError } from "./errors.js";
import { analyzeGrammar, computeNullable } from "./lark/grammar-analysis.js";
import { computeIncludesLookback, computeLalr1States, computeLookaheads, computeReadsRelations } from "./lark/lalr-analysis.js";
import { computeLr0States } from "./lark/lr0-states.js";
import { compileBudget, type CompileBudget } from "./limits.js";
import type { BnfRule, LalrTable } from "./lalr-table.js";

export { GrammarError };
export type { BnfRule, LalrTable } from "./lalr-table.js";

/** Scratch tables of one build (see Int32Arena: a typed array of its own costs 1–3 µs here). */
const arena = new Int32Arena();

/**
 * Lark's LALR_Analyzer.compute_lalr over `rules` (GrammarAnalyzer's checks and numbering first),
 * phase by phase; see lark/grammar-analysis.ts and lark/lalr-analysis.ts.
 */
export function buildLalrTable(
  rules: readonly BnfRule[],
  terminalNames: readonly string[],
  start = "start",
  budget: CompileBudget = compileBudget(),
): LalrTable {
  const a = analyzeGrammar(rules, terminalNames, start, arena, budget.limits, budget.clock);
  const nullable = computeNullable(a);
  const lr0 = computeLr0States(a);
  const nt = computeReadsRelations(a, lr0, nullable);
  const lookback = computeIncludesLookback(a, lr0, nullable, nt);
  const lookaheads = computeLookaheads(a, lr0, nt, lookback);
  return computeLalr1States(a, lr0, lookaheads);
}

/** Runs the LALR automaton over a token-id sequence (ending implicitly with $END). */
export class LalrRunner {
  readonly stack: number[];
  constructor(readonly table: LalrTable) {
    this.stack = [table.startState];
  }
  get state(): number {
    return this.stack[this.stack.length - 1]!;
  }
  /** Feeds one terminal; returns false on a syntax error (stack is then unspecified). */
  feed(terminal: number): boolean {
    const t = this.table;
    const TT = t.terminals.length;
    const NT = t.nonterminals.length;
    const st = this.stack;
    for (;;) {
      const a = t.action[st[st.length - 1]! * TT + terminal]!;
      if (a > 0) {
        st.push(a - 1);
        return true;
      }
      if (a === 0) return false;
      const r = -a - 1;
      st.length -= t.ruleLen[r]!;
      const g = t.goto[st[st.length - 1]! * NT + t.ruleLhs[r]!]!;
      if (g < 0) return false;
      st.push(g);
      if (terminal === 0 && g === t.endState) return true;
    }
  }
}
