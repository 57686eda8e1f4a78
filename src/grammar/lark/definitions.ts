/**
 * The data the grammar compile passes between its phases (Lark's Definition, term_defs,
 * rule_defs, and the compiled terminals + BNF rules), below every phase that uses them.
 */
import type { BnfRule } from "../lalr-table.js";
import type { PatternNode, Tree } from "../lark-syntax.js";

/** Lark's RuleOptions, the part of it the compile uses. */
export interface RuleOptions {
  keepAllTokens: boolean;
  expand1: boolean;
  priority: number | null;
}

export interface Definition {
  isTerm: boolean;
  tree: Tree | null;
  params: string[];
  options: RuleOptions | number;
  /** Where its name is in the text (for messages about the definition as a whole). */
  line?: number;
  column?: number;
}

/** Grammar.term_defs: name, tree (null: declared only), priority. */
export type TermDef = [name: string, tree: Tree | null, priority: number];
/** Grammar.rule_defs: name, template parameters, tree, options. */
export type RuleDef = [name: string, params: string[], tree: Tree, options: RuleOptions];

export interface TerminalDef {
  readonly name: string;
  readonly pattern: PatternNode;
  readonly priority: number;
}

export interface CompiledGrammar {
  /** Used terminals (plus ignored ones), in Lark's definition order. */
  readonly terminals: TerminalDef[];
  readonly rules: BnfRule[];
  readonly ignore: string[];
  readonly start: string;
}
