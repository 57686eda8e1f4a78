// Lark's GrammarAnalyzer (lark/parsers/grammar_analysis.py 124–186) for the LALR build: the rules
// checked (duplicates, undefined rules) and numbered, the root rule `$root_<start>: <start>`
// added, every rule position an item id (RulePtr, 8–38); NULLABLE (calculate_sets 62–121: the
// DeRemer–Pennello lookaheads need no FIRST or FOLLOW), and expand_rule (163–186), the initial
// items reachable from a nonterminal through leftmost nonterminals.
//
// Everything here and in the LALR phases runs on integer ids (symbols: terminals 0..TT-1, then
// nonterminals; items: itemBase[rule] + dot) and bitsets of terminals, in arena tables and plain
// integer lists: grammars are compiled per request, and for a small one the Maps and Sets of
// symbol sets, and the typed arrays of their own, cost more than the analysis.

import type { Int32Arena } from "../../support/index.js";
import { GrammarError } from "../errors.js";
import type { BnfRule } from "../lalr-table.js";
import type { CompileClock, GrammarLimits } from "../limits.js";

/** The end-of-input terminal, terminal 0 of every table (LalrRunner feeds 0 at the end). */
export const END_TERMINAL = "$END";
/** The origin of the root rule `$root_<start>: <start>` the analysis adds. */
export const ROOT_RULE_PREFIX = "$root_";

export const ruleText = (r: BnfRule): string => `<${r.origin} : ${r.expansion.join(" ")}>`;

/**
 * The grammar as the LALR phases see it, and what every phase shares: the scratch arena and the
 * budget of the build.
 */
export interface Analysis {
  readonly arena: Int32Arena;
  readonly limits: GrammarLimits;
  readonly clock: CompileClock;
  /** The rules, the root rule last. */
  readonly rules: readonly BnfRule[];
  /** Terminal names; index 0 is "$END". */
  readonly terminals: string[];
  readonly terminalIndex: Map<string, number>;
  readonly nonterminals: string[];
  /** Terminals, nonterminals, all symbols, rules; the root rule's index. */
  readonly TT: number;
  readonly NT: number;
  readonly SYMS: number;
  readonly R: number;
  readonly rootRule: number;
  /** Items: itemBase[rule] + dot, ITEMS in all; itemNext = the symbol after the dot, or -1. */
  readonly ITEMS: number;
  readonly itemBase: Int32Array;
  readonly itemRule: Int32Array;
  readonly itemNext: Int32Array;
  /** Per rule, its origin's symbol id. */
  readonly lhs: Int32Array;
}

/** The grammar's names, checked: rules with the root rule last, terminals, nonterminals. */
interface CheckedGrammar {
  readonly allRules: BnfRule[];
  readonly terminals: string[];
  readonly terminalIndex: Map<string, number>;
  readonly ntNames: string[];
  readonly ntIndex: Map<string, number>;
}

/**
 * GrammarAnalyzer.__init__'s checks and numbering: `rules` plus the root rule, refused if a rule
 * is defined twice or uses an undefined rule; terminals numbered after "$END", nonterminals in
 * order of first definition; then (in `arena`, reset here) the items.
 */
export function analyzeGrammar(
  rules: readonly BnfRule[],
  terminalNames: readonly string[],
  start: string,
  arena: Int32Arena,
  limits: GrammarLimits,
  clock: CompileClock,
): Analysis {
  const { allRules, terminals, terminalIndex, ntNames, ntIndex } = checkGrammar(rules, terminalNames, start);
  arena.reset();
  const NT = ntNames.length;
  const TT = terminals.length;
  const R = allRules.length;

  // Items: itemBase[rule] + dot; itemNext = the symbol after the dot, or -1.
  const itemBase = arena.take(R + 1);
  for (let r = 0; r < R; r++) itemBase[r + 1] = itemBase[r]! + allRules[r]!.expansion.length + 1;
  const ITEMS = itemBase[R]!;
  const itemRule = arena.take(ITEMS);
  const itemNext = arena.take(ITEMS);
  const lhs = arena.take(R);
  for (let r = 0; r < R; r++) {
    const rule = allRules[r]!;
    const b = itemBase[r]!;
    lhs[r] = TT + ntIndex.get(rule.origin)!;
    for (let d = 0; d < rule.expansion.length; d++) {
      const name = rule.expansion[d]!;
      const t = terminalIndex.get(name);
      itemRule[b + d] = r;
      itemNext[b + d] = t !== undefined ? t : TT + ntIndex.get(name)!;
    }
    itemRule[b + rule.expansion.length] = r;
    itemNext[b + rule.expansion.length] = -1;
  }
  return {
    arena,
    limits,
    clock,
    rules: allRules,
    terminals,
    terminalIndex,
    nonterminals: ntNames,
    TT,
    NT,
    SYMS: TT + NT,
    R,
    rootRule: R - 1,
    ITEMS,
    itemBase,
    itemRule,
    itemNext,
    lhs,
  };
}

/** The checks and names of GrammarAnalyzer.__init__ (see analyzeGrammar). */
function checkGrammar(rules: readonly BnfRule[], terminalNames: readonly string[], start: string): CheckedGrammar {
  const terminals = [END_TERMINAL];
  const terminalIndex = new Map<string, number>([[END_TERMINAL, 0]]);
  for (const t of terminalNames)
    if (t !== END_TERMINAL) {
      terminalIndex.set(t, terminals.length);
      terminals.push(t);
    }

  const rootName = ROOT_RULE_PREFIX + start;
  const allRules: BnfRule[] = [...rules, { origin: rootName, expansion: [start], priority: null, order: 0 }];

  // Duplicate rules (GrammarAnalyzer)
  const seen = new Set<string>();
  const dups: BnfRule[] = [];
  for (const r of allRules) {
    const key = r.origin + "\0" + r.expansion.join("\0");
    if (seen.has(key)) dups.push(r);
    else seen.add(key);
  }
  if (dups.length) throw new GrammarError("Rules defined twice: " + dups.map(ruleText).join(", "));

  const ntNames: string[] = [];
  const ntIndex = new Map<string, number>();
  for (const r of allRules)
    if (!ntIndex.has(r.origin)) {
      ntIndex.set(r.origin, ntNames.length);
      ntNames.push(r.origin);
    }
  for (const r of allRules) {
    for (const s of r.expansion) {
      if (!terminalIndex.has(s) && !ntIndex.has(s)) {
        if (/^_?[A-Z]/.test(s) || s.startsWith("__")) {
          // An unknown terminal name: treat as a terminal, as Lark does (it is a Terminal symbol).
          terminalIndex.set(s, terminals.length);
          terminals.push(s);
        } else throw new GrammarError(`Using an undefined rule: NonTerminal('${s}')`);
      }
    }
  }
  if (!ntIndex.has(start)) throw new GrammarError(`Using an undefined rule: NonTerminal('${start}')`);
  return { allRules, terminals, terminalIndex, ntNames, ntIndex };
}

/**
 * NULLABLE (calculate_sets): a worklist over each rule's count of symbols not yet known nullable
 * (the fixed point rescanning all rules is quadratic in a chain). 1 per nullable symbol.
 */
export function computeNullable(a: Analysis): Int32Array {
  const { arena, clock, R, SYMS, lhs, ITEMS, itemBase, itemNext } = a;
  const sym = (r: number, i: number): number => itemNext[itemBase[r]! + i]!;
  const lenOf = (r: number): number => itemBase[r + 1]! - itemBase[r]! - 1;
  const nullable = arena.take(SYMS);
  const pending = arena.take(R);
  const usesStart = arena.take(SYMS + 1);
  for (let r = 0; r < R; r++) {
    pending[r] = lenOf(r);
    for (let i = 0; i < lenOf(r); i++) usesStart[sym(r, i) + 1]!++;
  }
  for (let x = 0; x < SYMS; x++) usesStart[x + 1]! += usesStart[x]!;
  const usesRule = arena.take(usesStart[SYMS]!);
  {
    const fill = arena.copy(usesStart);
    for (let r = 0; r < R; r++) for (let i = 0; i < lenOf(r); i++) usesRule[fill[sym(r, i)]!++] = r;
  }
  const nullQueue = arena.take(SYMS);
  let nullTail = 0;
  for (let r = 0; r < R; r++)
    if (pending[r] === 0 && !nullable[lhs[r]!]) {
      nullable[lhs[r]!] = 1;
      nullQueue[nullTail++] = lhs[r]!;
    }
  for (let head = 0; head < nullTail; head++) {
    const x = nullQueue[head]!;
    for (let k = usesStart[x]!; k < usesStart[x + 1]!; k++) {
      const r = usesRule[k]!;
      if (--pending[r]! === 0 && !nullable[lhs[r]!]) {
        nullable[lhs[r]!] = 1;
        nullQueue[nullTail++] = lhs[r]!;
      }
    }
  }
  clock.spend(ITEMS);
  return nullable;
}

/**
 * expand_rule, per nonterminal on first use: the initial items of every rule reachable from it
 * through leftmost nonterminals, in BFS order, kept flat in `items` (nonterminal n's are
 * items[start[n] .. end[n]), start -1 until expanded).
 */
export class RuleExpansions {
  readonly items: number[] = [];
  readonly start: Int32Array;
  readonly end: Int32Array;
  private readonly rulesStart: Int32Array;
  private readonly rulesByNt: Int32Array;
  private readonly seen: Int32Array;
  private readonly queue: Int32Array;

  constructor(private readonly a: Analysis) {
    const { arena, R, NT, TT, lhs } = a;
    const ntRulesStart = arena.take(NT + 1);
    for (let r = 0; r < R; r++) ntRulesStart[lhs[r]! - TT + 1]!++;
    for (let n = 0; n < NT; n++) ntRulesStart[n + 1]! += ntRulesStart[n]!;
    const rulesByNt = arena.take(R);
    {
      const fill = arena.copy(ntRulesStart);
      for (let r = 0; r < R; r++) rulesByNt[fill[lhs[r]! - TT]!++] = r;
    }
    this.rulesStart = ntRulesStart;
    this.rulesByNt = rulesByNt;
    this.start = arena.take(NT, -1);
    this.end = arena.take(NT);
    this.seen = arena.take(NT);
    this.queue = arena.take(NT);
  }

  /** Expands nonterminal `nt` (its symbol id minus TT) if not done yet. */
  expand(nt: number): void {
    const ntExpansionStart = this.start;
    if (ntExpansionStart[nt] !== -1) return;
    const ntExpansion = this.items,
      ntSeen = this.seen,
      ntQueue = this.queue;
    const ntRulesStart = this.rulesStart,
      rulesByNt = this.rulesByNt;
    const { itemBase, itemNext, TT } = this.a;
    ntExpansionStart[nt] = ntExpansion.length;
    ntSeen[nt] = nt + 1;
    let head = 0,
      tail = 0;
    ntQueue[tail++] = nt;
    while (head < tail) {
      const n = ntQueue[head++]!;
      for (let k = ntRulesStart[n]!; k < ntRulesStart[n + 1]!; k++) {
        const r = rulesByNt[k]!;
        ntExpansion.push(itemBase[r]!);
        const nx = itemNext[itemBase[r]!]! - TT;
        if (nx >= 0 && ntSeen[nx] !== nt + 1) {
          ntSeen[nx] = nt + 1;
          ntQueue[tail++] = nx;
        }
      }
    }
    this.end[nt] = ntExpansion.length;
  }
}
