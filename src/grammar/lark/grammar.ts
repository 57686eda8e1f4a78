// Lark's Grammar and Grammar.compile (load_grammar.py 670–811): the builder's definitions →
// terminals and BNF rules, phase by phase as Lark runs them:
//   - Compile Terminals: PrepareLiterals, TerminalTreeToPattern (compile-terminals.ts);
//   - Compile Rules, steps 1–3 per rule (`expandRules`): PrepareLiterals, ValidateSymbols,
//     PrepareAnonTerminals, ApplyTemplates, then EBNF_to_BNF, each its own file;
//   - step 4 (`compileRules`): SimplifyRule_Visitor + RuleTreeToText into BNF rules;
//   - duplicate rules refused (empty ones dropped), unused rules and terminals removed.

import type { CompiledGrammar } from "./definitions.js";
import { GrammarError } from "../errors.js";
import type { BnfRule } from "../lalr-table.js";
import type { Node, PatternNode, Tree } from "../lark-syntax.js";
import { tooComplex, type GrammarLimits } from "../limits.js";
import { ApplyTemplates } from "./apply-templates.js";
import { spend } from "./compile-context.js";
import { compileTerminals } from "./compile-terminals.js";
import { EbnfToBnf } from "./ebnf-to-bnf.js";
import type { Definition, RuleDef, RuleOptions, TermDef } from "./definitions.js";
import { prepareLiterals } from "./literals.js";
import { PrepareAnonTerminals } from "./prepare-anon-terminals.js";
import { SimplifyRuleVisitor } from "./simplify-rule.js";
import { deepCopy, isOneEmptyExpansion, isSym, isTree, transformInPlace } from "./tree.js";

/** A rule after EBNF_to_BNF: name, tree (alternatives still nested), options. */
type ExpandedRule = [name: string, tree: Node, options: RuleOptions | null];

/** Lark's Grammar (named so that it is not taken for the compiled `Grammar` of grammar/). */
export class LarkGrammar {
  /**
   * `ownSubtrees`: each terminal's own subtrees, before references were substituted (the builder
   * has them from resolve_term_references); `definitions`: where each name was defined.
   */
  constructor(
    readonly ruleDefs: readonly RuleDef[],
    readonly termDefs: readonly TermDef[],
    readonly ignore: readonly string[],
    private readonly ownSubtrees: ReadonlyMap<string, Tree[]>,
    private readonly definitions: ReadonlyMap<string, Definition>,
  ) {}

  /** Grammar.compile: the terminals the rules use (and the ignored ones), and the BNF rules. */
  compile(start: string, limits: GrammarLimits): CompiledGrammar {
    // Compile Terminals
    for (const [name, t] of this.termDefs) {
      if (t && isOneEmptyExpansion(t)) throw new GrammarError(`Terminals cannot be empty (${name})`);
    }
    const { terminals, patternChars } = compileTerminals(this.termDefs, this.ownSubtrees, this.definitions, limits);

    // Compile Rules
    const anonTerminals = new PrepareAnonTerminals(terminals, patternChars, limits);
    const rules = this.expandRules(anonTerminals, limits);
    const termSet = anonTerminals.names;
    const compiled = withoutDuplicates(compileRules(rules, limits));
    const finalRules = withoutUnusedRules(compiled, start, termSet);

    // Filter out unused terminals
    const usedTerms = new Set<string>();
    for (const r of finalRules) for (const s of r.expansion) if (termSet.has(s)) usedTerms.add(s);
    const ignore = this.ignore;
    const finalTerminals = terminals.filter((t) => usedTerms.has(t.name) || ignore.includes(t.name));
    if (finalTerminals.length > limits.maxTerminals) throw tooComplex(limits, "maxTerminals", finalTerminals.length, "terminals");
    return { terminals: finalTerminals, rules: finalRules, ignore: [...ignore], start };
  }

  /**
   * Compile Rules, steps 1–3: each rule that is not a template, in order (the list grows as
   * templates are applied), through PrepareLiterals, ValidateSymbols, PrepareAnonTerminals,
   * ApplyTemplates and EBNF_to_BNF; then the rules EBNF_to_BNF made.
   */
  private expandRules(anonTerminals: PrepareAnonTerminals, limits: GrammarLimits): ExpandedRule[] {
    const ruleDefs = [...this.ruleDefs];
    const templates = new ApplyTemplates(ruleDefs, limits);
    const ebnfToBnf = new EbnfToBnf(limits);
    const rules: ExpandedRule[] = [];
    for (let i = 0; i < ruleDefs.length; i++) {
      const [name, params, ruleTree, options] = ruleDefs[i]!;
      if (params.length) continue;
      const ro: RuleOptions | null = options.keepAllTokens ? { keepAllTokens: true, expand1: false, priority: null } : null;
      ebnfToBnf.ruleOptions = ro;
      ebnfToBnf.prefix = name;
      anonTerminals.keepAllTokens = !!ro?.keepAllTokens;
      let t: Node = deepCopy(ruleTree);
      t = transformInPlace(t as Tree, prepareLiterals);
      if (isTree(t)) t = transformInPlace(t, validateSymbols);
      if (isTree(t)) t = transformInPlace(t, (x) => (x.data === "pattern" ? anonTerminals.pattern(x.children[0] as PatternNode) : x));
      if (isTree(t)) t = transformInPlace(t, (x) => (x.data === "template_usage" ? templates.templateUsage(x) : x));
      if (isTree(t)) t = transformInPlace(t, (x) => ebnfToBnf.transform(x));
      rules.push([name, t, options]);
    }
    for (const r of ebnfToBnf.newRules) rules.push(r);
    return rules;
  }
}

/** ValidateSymbols (load_grammar.py 663–667): a `value` tree gives way to its one child. */
function validateSymbols(x: Tree): Node {
  return x.data === "value" && x.children.length === 1 ? x.children[0]! : x;
}

/**
 * Compile Rules, step 4: each rule's alternatives (SimplifyRule_Visitor + RuleTreeToText) as BNF
 * rules, EMPTY markers dropped. Alternatives are distributed out ([a] [b] … gives 2^n), so each
 * product is counted before it is made (SimplifyRuleVisitor), and the rules as they come.
 */
function compileRules(rules: readonly ExpandedRule[], limits: GrammarLimits): BnfRule[] {
  const simplify = new SimplifyRuleVisitor(limits);
  const compiled: BnfRule[] = [];
  let ruleSymbols = 0;
  for (const [name, t, options] of rules) {
    const alts = simplify.visit(name, t);
    let symbols = 0;
    for (const alt of alts) symbols += alt.syms.length;
    if (compiled.length + alts.length > limits.maxRules)
      throw tooComplex(limits, "maxRules", compiled.length + alts.length, "BNF rules after expansion");
    ruleSymbols += symbols;
    if (ruleSymbols > limits.maxRuleSymbols)
      throw tooComplex(limits, "maxRuleSymbols", ruleSymbols, "symbols in the BNF rules after expansion");
    alts.forEach((alt, order) => {
      if (alt.alias && name.startsWith("_"))
        throw new GrammarError(
          `Rule ${name} is marked for expansion (it starts with an underscore) and isn't allowed to have aliases (alias=${alt.alias})`,
        );
      const expansion: string[] = [];
      for (const s of alt.syms) {
        if (s.kind === "empty") continue;
        if (!isSym(s)) throw new GrammarError(`Invalid rule body in ${name}`);
        expansion.push(s.name);
      }
      compiled.push({ origin: name, expansion, priority: options?.priority ?? null, order, alias: alt.alias ?? null });
    });
  }
  return compiled;
}

/** Lark's duplicate check: a non-empty rule defined twice is refused, empty duplicates dropped. */
function withoutDuplicates(compiled: BnfRule[]): BnfRule[] {
  const byKey = new Map<string, BnfRule[]>();
  for (const r of compiled) {
    const k = r.origin + "\0" + r.expansion.join("\0");
    const l = byKey.get(k);
    if (l) l.push(r);
    else byKey.set(k, [r]);
  }
  if (byKey.size === compiled.length) return compiled;
  for (const dups of byKey.values()) {
    if (dups.length > 1 && dups[0]!.expansion.length)
      throw new GrammarError(
        `Rules defined twice: ${dups.map((d) => `\n  * <${d.origin} : ${d.expansion.join(" ")}>`).join("")}\n\n(Might happen due to colliding expansion of optionals: [] or ?)`,
      );
  }
  return [...byKey.values()].map((l) => l[0]!);
}

/**
 * Lark's removal of unused rules: rules whose origin no rule of another origin uses go, again
 * and again until none goes (a cycle of unused rules stays, as in Lark). Lark rescans all rules
 * per round, quadratic in a chain; peeling origins as their last user goes gives the same rules.
 */
function withoutUnusedRules(rules: BnfRule[], start: string, termSet: ReadonlySet<string>): BnfRule[] {
  const uses = new Map<string, number>();
  const byOrigin = new Map<string, BnfRule[]>();
  for (const r of rules) {
    let list = byOrigin.get(r.origin);
    if (!list) byOrigin.set(r.origin, (list = []));
    list.push(r);
    for (const s of r.expansion) if (s !== r.origin && !termSet.has(s)) uses.set(s, (uses.get(s) ?? 0) + 1);
  }
  const removed = new Set<string>();
  const queue: string[] = [];
  for (const origin of byOrigin.keys()) if (origin !== start && !uses.get(origin)) queue.push(origin);
  while (queue.length > 0) {
    const origin = queue.pop()!;
    removed.add(origin);
    for (const r of byOrigin.get(origin)!) {
      spend(r.expansion.length);
      for (const s of r.expansion) {
        if (s === r.origin || termSet.has(s)) continue;
        const n = uses.get(s)! - 1;
        uses.set(s, n);
        if (n === 0 && s !== start && byOrigin.has(s) && !removed.has(s)) queue.push(s);
      }
    }
  }
  return removed.size === 0 ? rules : rules.filter((r) => !removed.has(r.origin));
}
