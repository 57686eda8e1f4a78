// Lark's SimplifyRule_Visitor and RuleTreeToText (load_grammar.py 381–436): a rule's tree, after
// EBNF_to_BNF, flattened into its alternatives (each a list of symbols, maybe an alias):
// alternatives inside an expansion are distributed out (`a (b|c)` → `a b | a c`) and duplicates
// dropped. `[a] [b] [c]…` distributes into 2^n alternatives, so each product is measured
// (alternatives, and symbols in them) against maxRules and maxRuleSymbols before it is made.

import { GrammarError } from "../errors.js";
import type { Node, Sym, Tree } from "../lark-syntax.js";
import { shortName, tooComplex, type GrammarLimits } from "../limits.js";
import { spend } from "./compile-context.js";
import { isTree, keyOf } from "./tree.js";

/** One alternative of a rule: RuleTreeToText's (expansion, alias). */
export interface Alt {
  syms: Node[];
  alias?: string;
}

export class SimplifyRuleVisitor {
  /** Per subtree of the rule being simplified: a rule's tree is a DAG after `~` repeats (the lists are never mutated). */
  private memo = new Map<Tree, Alt[]>();
  /** The rule being simplified (for messages). */
  private rule = "";

  constructor(private readonly limits: GrammarLimits) {}

  /** The alternatives of rule `name`, whose tree is `t`. */
  visit(name: string, t: Node): Alt[] {
    this.memo = new Map();
    this.rule = name;
    return this.alternatives(t);
  }

  private alternatives(n: Node): Alt[] {
    if (!isTree(n)) return [{ syms: [n] }];
    let alts = this.memo.get(n);
    if (alts === undefined) {
      alts = this.alternativesOf(n);
      this.memo.set(n, alts);
    }
    return alts;
  }

  private alternativesOf(n: Tree): Alt[] {
    switch (n.data) {
      case "expansions":
        return dedup(n.children.flatMap((c) => this.alternatives(c)));
      case "expansion":
        return this.expansion(n);
      case "alias": {
        const inner = this.alternatives(n.children[0]!);
        const name = (n.children[1] as Sym).name;
        return inner.map((a) => {
          if (a.alias) throw new GrammarError("Double alias not allowed");
          return { syms: a.syms, alias: name };
        });
      }
    }
    throw new GrammarError(`Unexpected ${n.data} in rule`);
  }

  /** An expansion's alternatives: the product of its children's, each product counted first. */
  private expansion(n: Tree): Alt[] {
    const limits = this.limits;
    let acc: Alt[] = [{ syms: [] }];
    let accSymbols = 0;
    for (const c of n.children) {
      const opts = this.alternatives(c);
      let optSymbols = 0;
      for (const o of opts) optSymbols += o.syms.length;
      const count = acc.length * opts.length;
      const symbols = accSymbols * opts.length + optSymbols * acc.length;
      if (count > limits.maxRules)
        throw tooComplex(limits, "maxRules", count, "alternatives after expansion", `rule '${shortName(this.rule)}'`);
      if (symbols > limits.maxRuleSymbols)
        throw tooComplex(
          limits,
          "maxRuleSymbols",
          symbols,
          "symbols in its alternatives after expansion",
          `rule '${shortName(this.rule)}'`,
        );
      spend(count + symbols);
      accSymbols = symbols;
      const next: Alt[] = [];
      for (const a of acc)
        for (const o of opts) {
          if (o.alias) throw new GrammarError(`Aliases (->) are only allowed at the top level of a rule's alternatives (alias=${o.alias})`);
          next.push({ syms: [...a.syms, ...o.syms] });
        }
      acc = next;
    }
    return acc;
  }
}

/** Lark's dedup_list over alternatives: the first of each (alias, symbols) stays. */
function dedup(alts: Alt[]): Alt[] {
  const seen = new Set<string>();
  return alts.filter((a) => {
    const k = (a.alias ?? "") + "|" + a.syms.map(keyOf).join(",");
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
