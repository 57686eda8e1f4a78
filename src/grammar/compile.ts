// Grammar text → terminals + BNF rules, as Lark's load_grammar() (load_grammar.py 1408–1411):
// GrammarBuilder.load_grammar, then build() → Grammar.compile. Lark's passes are under lark/, one
// file per class of load_grammar.py (each header names the lines it ports), in the order they run:
//   grammar-builder.ts (GrammarBuilder, PrepareGrammar, imports; resolve-term-references.ts),
//   grammar.ts (Grammar.compile): compile-terminals.ts (PrepareLiterals in literals.ts,
//   TerminalTreeToPattern in terminal-tree-to-pattern.ts), then per rule
//   prepare-anon-terminals.ts, apply-templates.ts, ebnf-to-bnf.ts, and simplify-rule.ts;
//   tree.ts is Lark's Tree API, patterns.ts PatternStr/PatternRE, compile-context.ts the budget.

import { compileBudget, type CompileBudget } from "./limits.js";
import { withCompileBudget } from "./lark/compile-context.js";
import { GrammarBuilder } from "./lark/grammar-builder.js";
import type { CompiledGrammar } from "./lark/definitions.js";

export type { CompiledGrammar, TerminalDef } from "./lark/definitions.js";

export function compileGrammarText(text: string, start = "start", budget: CompileBudget = compileBudget()): CompiledGrammar {
  return withCompileBudget(budget, () => {
    const builder = new GrammarBuilder(budget);
    builder.loadGrammar(text, null);
    return builder.build().compile(start, budget.limits);
  });
}
