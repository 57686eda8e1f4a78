// Lark's EBNF_to_BNF with FindRuleSize (load_grammar.py 186–378): `x?`, `x*`, `x+`, `x~n..m`
// and `[x]` rewritten into plain alternatives and new rules (`__<rule>_plus_<i>`, …), cached by
// operand so that one operand used twice makes one rule; and lark.utils.small_factors, which
// splits a long `~` repeat into a chain of short rules. Ours refuses an operand (or what a repeat
// spells out) larger than maxRuleSymbols before it is keyed, measured or copied.

import { GrammarError } from "../errors.js";
import { tree, type Node, type Sym, type Token, type Tree } from "../lark-syntax.js";
import { shortName, tooComplex, type GrammarLimits } from "../limits.js";
import { spend } from "./compile-context.js";
import type { RuleOptions } from "./definitions.js";
import { describe, isSym, isTree, keyOf, spelledSize } from "./tree.js";

/** Lark's `_EMPTY`: what `[x]` leaves in place of each of x's kept symbols when x is absent. */
const EMPTY: Node = { kind: "empty" };
// Value 5 keeps the number of states in the lalr parser somewhat minimal
// It isn't optimal, but close to it. See PR #949 (from Lark)
const SMALL_FACTOR_THRESHOLD = 5;
// The Threshold whether repeat via ~ are split up into different rules: 50 keeps the number of
// states low and therefore lalr analysis time low, while not being too aggressive and creating
// rules that might create shift/reduce conflicts. (See PR #949) (from Lark)
const REPEAT_BREAK_THRESHOLD = 50;

/** lark.utils.small_factors */
function smallFactors(n: number, maxFactor: number): [number, number][] {
  if (n <= maxFactor) return [[n, 0]];
  for (let a = maxFactor; a > 1; a--) {
    const r = Math.floor(n / a),
      b = n % a;
    if (a + b <= maxFactor) return [...smallFactors(r, maxFactor), [a, b]];
  }
  throw new GrammarError(`Failed to factorize ${n}`);
}

/** A rule EBNF_to_BNF made: name, body, the options of the rule it was made for. */
export type NewRule = [name: string, tree: Tree, options: RuleOptions | null];

export class EbnfToBnf {
  readonly newRules: NewRule[] = [];
  private readonly rulesCache = new Map<string, Sym>();
  /** The rule being transformed: its name prefixes the new rules' names. */
  prefix = "anon";
  /** The next new rule's number. */
  private i = 0;
  /** The options of the rule being transformed (only keep_all_tokens is ever set). */
  ruleOptions: RuleOptions | null = null;

  constructor(private readonly limits: GrammarLimits) {}

  private nameRule(inner: string): string {
    return `__${this.prefix}_${inner}_${this.i++}`;
  }

  private addRule(key: string, name: string, expansions: Tree): Sym {
    const t: Sym = { kind: "sym", isTerm: false, name };
    this.newRules.push([name, expansions, this.ruleOptions]);
    this.rulesCache.set(key, t);
    return t;
  }

  /**
   * Refuses an EBNF operand (or what a `~` repeat spells out) larger than maxRuleSymbols before
   * it is keyed, measured or copied: nested repeats spell exponentially much from a DAG.
   */
  private boundedOperand(spelled: number): void {
    if (spelled > this.limits.maxRuleSymbols)
      throw tooComplex(
        this.limits,
        "maxRuleSymbols",
        spelled,
        "symbols spelled out by an EBNF operator",
        `rule '${shortName(this.prefix)}'`,
      );
    spend(spelled);
  }

  private addRecurseRule(type: string, expr: Node): Sym {
    this.boundedOperand(spelledSize(expr));
    const key = keyOf(expr);
    const hit = this.rulesCache.get(key);
    if (hit) return hit;
    const name = this.nameRule(type);
    const t: Sym = { kind: "sym", isTerm: false, name };
    return this.addRule(key, name, tree("expansions", [tree("expansion", [expr]), tree("expansion", [t, expr])]));
  }

  /** A rule that repeats `target` a times, then `atom` b times. */
  private addRepeatRule(a: number, b: number, target: Node, atom: Node): Sym {
    const key = `R(${a},${b},${keyOf(target)},${keyOf(atom)})`;
    const hit = this.rulesCache.get(key);
    if (hit) return hit;
    const name = this.nameRule(`repeat_a${a}_b${b}`);
    return this.addRule(key, name, tree("expansions", [tree("expansion", [...Array(a).fill(target), ...Array(b).fill(atom)])]));
  }

  /** A rule that matches `atom` 0 to (a*n+b)-1 times, when `target` matches it n times. */
  private addRepeatOptRule(a: number, b: number, target: Node, targetOpt: Node, atom: Node): Sym {
    const key = `O(${a},${b},${keyOf(target)},${keyOf(atom)})`;
    const hit = this.rulesCache.get(key);
    if (hit) return hit;
    const name = this.nameRule(`repeat_a${a}_b${b}_opt`);
    const exps: Tree[] = [];
    for (let i = 0; i < a; i++) exps.push(tree("expansion", [...Array(i).fill(target), targetOpt]));
    for (let i = 0; i < b; i++) exps.push(tree("expansion", [...Array(a).fill(target), ...Array(i).fill(atom)]));
    return this.addRule(key, name, tree("expansions", exps));
  }

  /** `rule` between mn and mx times: spelled out below REPEAT_BREAK_THRESHOLD, else as rules. */
  private generateRepeats(rule: Node, mn: number, mx: number): Node {
    if (mx < REPEAT_BREAK_THRESHOLD) {
      const exps: Tree[] = [];
      for (let n = mn; n <= mx; n++) exps.push(tree("expansion", Array(n).fill(rule)));
      return tree("expansions", exps);
    }
    let mnTarget: Node = rule;
    for (const [a, b] of smallFactors(mn, SMALL_FACTOR_THRESHOLD)) mnTarget = this.addRepeatRule(a, b, mnTarget, rule);
    if (mx === mn) return mnTarget;
    const diff = mx - mn + 1;
    const diffFactors = smallFactors(diff, SMALL_FACTOR_THRESHOLD);
    let diffTarget: Node = rule;
    let diffOptTarget: Node = tree("expansion", []);
    for (const [a, b] of diffFactors.slice(0, -1)) {
      diffOptTarget = this.addRepeatOptRule(a, b, diffTarget, diffOptTarget, rule);
      diffTarget = this.addRepeatRule(a, b, diffTarget, rule);
    }
    const [a, b] = diffFactors[diffFactors.length - 1]!;
    diffOptTarget = this.addRepeatOptRule(a, b, diffTarget, diffOptTarget, rule);
    return tree("expansions", [tree("expansion", [mnTarget, diffOptTarget])]);
  }

  /** FindRuleSize: how many symbols of `n` the rule keeps (what `[n]` leaves EMPTY markers for). */
  private ruleSize(n: Node): number {
    if (isTree(n)) {
      const vals = n.children.map((c) => this.ruleSize(c));
      if (n.data === "expansion") return vals.reduce((a, b) => a + b, 0);
      if (n.data === "expansions") return Math.max(...vals);
      throw new GrammarError(`Unexpected ${n.data} inside [...]`);
    }
    if (isSym(n)) {
      if (!n.isTerm) return n.name.startsWith("_") ? 0 : 1;
      return this.ruleOptions?.keepAllTokens || !n.filterOut ? 1 : 0;
    }
    if (n.kind === "empty") return 0;
    throw new GrammarError("Unexpected item inside [...]");
  }

  /** The transformer's rules, `expr` and `maybe`; any other tree comes back as it is. */
  transform(t: Tree): Node {
    if (t.data === "expr") return this.expr(t);
    if (t.data === "maybe") return this.maybe(t);
    return t;
  }

  private expr(t: Tree): Node {
    const rule = t.children[0]!;
    const op = (t.children[1] as Token).value;
    if (op === "?") return tree("expansions", [rule, tree("expansion", [])]);
    if (op === "+") return this.addRecurseRule("plus", rule);
    if (op === "*") return tree("expansions", [this.addRecurseRule("star", rule), tree("expansion", [])]);
    if (op === "~") {
      let mn: number, mx: number;
      if (t.children.length === 3) mn = mx = Number((t.children[2] as Token).value);
      else {
        mn = Number((t.children[2] as Token).value);
        mx = Number((t.children[3] as Token).value);
        if (mx < mn || mn < 0) throw new GrammarError(`Bad Range for ${describe(rule)} (${mn}..${mx} isn't allowed)`);
      }
      const size = spelledSize(rule);
      // Below REPEAT_BREAK_THRESHOLD the repeat is spelled out (mn + … + mx copies), above it
      // rules of at most SMALL_FACTOR_THRESHOLD copies each are made, keyed by the operand.
      this.boundedOperand(mx < REPEAT_BREAK_THRESHOLD ? (size * ((mn + mx) * (mx - mn + 1))) / 2 : size);
      return this.generateRepeats(rule, mn, mx);
    }
    return t;
  }

  private maybe(t: Tree): Node {
    const rule = t.children[0]!;
    this.boundedOperand(spelledSize(rule));
    const size = this.ruleSize(rule);
    return tree("expansions", [rule, tree("expansion", Array(size).fill(EMPTY))]);
  }
}
