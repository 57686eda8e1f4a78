// Completion distances of the grammar automaton: lower bounds on the bytes that finish a sentence
// (per LR item from the symbols' shortest widths, per interned parser stack, per state from its
// hypotheses' tokens in progress), and the exact fewest bytes by A* with those bounds.

import { IdMap, IntMap, type TableSlab } from "../../support/index.js";
import type { Grammar } from "../grammar.js";
import { searchCheapestGoal } from "../search.js";
import { ROOT_RULE_PREFIX } from "../lark/grammar-analysis.js";
import { LEX_FIELDS as LEXER_FIELDS, type LexerStates } from "./lexer-states.js";
import type { ParserStacks } from "./stacks.js";
import { ID_MAP_FIRST_BYTES, MEMO_CAPACITY } from "./tables.js";

/** Kept in a const of this module for the loop of lowerBound (see regex/clock.ts). */
const LEX_FIELDS = LEXER_FIELDS;

/** The first table of CompletionDistances' memo in the automaton's slab. */
export const DISTANCE_TABLE_BYTES = ID_MAP_FIRST_BYTES;

/** Per rule r, base[r] + dot indexes rest: the fewest bytes from the dot to the rule's end; root[r]: r is $root_*. */
interface ItemCosts {
  readonly base: Int32Array;
  readonly rest: Float64Array;
  readonly root: Uint8Array;
}
/** stackCostMemo's value for Infinity. */
const COST_INFINITY = 0x7fffffff;

/** Lower bounds for minimal completion: bytes per terminal / nonterminal, then per parser stack. */
export class CompletionDistances {
  private itemCosts: ItemCosts | null = null;
  /** Per stack; COST_INFINITY for Infinity. */
  private readonly stackCostMemo: IdMap;

  constructor(
    private readonly grammar: Grammar,
    private readonly stacks: ParserStacks,
    private readonly lexers: LexerStates,
    tables: TableSlab,
  ) {
    this.stackCostMemo = new IdMap(MEMO_CAPACITY, tables);
  }

  /**
   * Fewest bytes of each symbol (terminals: their shortest match; rules: a fixpoint), summed per
   * LR item from the dot to the rule's end: stackCost reads one number per kernel item.
   */
  private restCosts(): ItemCosts {
    if (this.itemCosts) return this.itemCosts;
    const m = new Map<string, number>();
    for (const [name, t] of this.grammar.terminals) m.set(name, t.minWidth);
    const rules = this.grammar.table.rules;
    for (let changed = true; changed; ) {
      changed = false;
      for (const r of rules) {
        let c = 0;
        for (const s of r.expansion) {
          const v = m.get(s);
          if (v === undefined) {
            c = Infinity;
            break;
          }
          c += v;
        }
        if (c < (m.get(r.origin) ?? Infinity)) {
          m.set(r.origin, c);
          changed = true;
        }
      }
    }
    const base = new Int32Array(rules.length + 1);
    for (let r = 0; r < rules.length; r++) base[r + 1] = base[r]! + rules[r]!.expansion.length + 1;
    const rest = new Float64Array(base[rules.length]!);
    const root = new Uint8Array(rules.length);
    for (let r = 0; r < rules.length; r++) {
      const expansion = rules[r]!.expansion;
      for (let dot = expansion.length - 1; dot >= 0; dot--)
        rest[base[r]! + dot] = rest[base[r]! + dot + 1]! + (m.get(expansion[dot]!) ?? Infinity);
      root[r] = rules[r]!.origin.startsWith(ROOT_RULE_PREFIX) ? 1 : 0;
    }
    return (this.itemCosts = { base, rest, root });
  }

  /** Lower bound on the bytes that complete the parse from an interned stack. */
  stackCost(stack: number, depth = 0): number {
    const hit = this.stackCostMemo.get(stack);
    if (hit !== IntMap.MISSING) return hit === COST_INFINITY ? Infinity : hit;
    if (depth > 200) return 0; // keep it a lower bound on pathological chains
    this.stackCostMemo.set(stack, COST_INFINITY); // cycles cannot be cheaper
    const t = this.grammar.table;
    const { base, rest: restOf, root } = this.restCosts();
    const stacks = this.stacks;
    const top = stacks.stackTop[stack]!;
    let best = Infinity;
    const kernel = t.kernels[top]!;
    for (let k = 0; k < kernel.length; k += 2) {
      const rule = kernel[k]!;
      const dot = kernel[k + 1]!;
      const rest = restOf[base[rule]! + dot]!;
      if (rest >= best) continue;
      if (root[rule] === 1) {
        best = Math.min(best, rest);
        continue;
      }
      let st = stack;
      for (let i = 0; i < dot; i++) st = stacks.stackParent[st]!;
      const g = t.goto[stacks.stackTop[st]! * t.nonterminals.length + t.ruleLhs[rule]!]!;
      if (g < 0) continue;
      best = Math.min(best, rest + this.stackCost(stacks.pushStack(st, g), depth + 1));
    }
    this.stackCostMemo.set(stack, best >= COST_INFINITY ? COST_INFINITY : best);
    return best;
  }

  /**
   * Admissible lower bound on the bytes still needed from a state of hypotheses `hyps` (stack,
   * lexer state pairs) to a complete sentence. Ignores token separation, so it can undercount.
   */
  lowerBound(hyps: Int32Array): number {
    let best = Infinity;
    const lexers = this.lexers;
    const fields = lexers.lexFields;
    for (let i = 0; i < hyps.length; i += 2) {
      const stack = hyps[i]!;
      const f = hyps[i + 1]! * LEX_FIELDS;
      if (fields[f + 3] === 0) {
        best = Math.min(best, this.stackCost(stack));
        continue;
      }
      const sc = lexers.scannerDfa(fields[f]!);
      const dfaState = fields[f + 1]!,
        first = fields[f + 2]!;
      const bound = first < 0 ? sc.numOrdered - 1 : first;
      for (let p = 0; p <= bound; p++) {
        const d = sc.dist[dfaState * sc.numPatterns + p]!;
        if (d < 0 || d >= best) continue;
        const term = sc.terms[sc.termOf[p]!]!;
        let after: number;
        if (term.ignored) after = this.stackCost(stack);
        else {
          if (term.tableIndex < 0) continue;
          const st = this.stacks.feed(stack, term.tableIndex);
          if (st < 0) continue;
          after = this.stackCost(st);
        }
        best = Math.min(best, d + after);
      }
    }
    return best;
  }
}

/** What A* over the automaton's states reads. */
export interface ByteStates {
  step(state: number, byte: number): number;
  isComplete(state: number): boolean;
  minBytesLowerBound(state: number): number;
}

/**
 * Fewest bytes from `state` to a complete sentence: A* over the automaton with
 * `minBytesLowerBound` as heuristic. -1 when none is found within `maxExpansions` states.
 */
export function fewestBytesToComplete(automaton: ByteStates, state: number, maxExpansions: number): number {
  if (state < 0) return -1;
  const found = searchCheapestGoal(
    [state],
    {
      lowerBound: (s) => automaton.minBytesLowerBound(s),
      isGoal: (s) => automaton.isComplete(s),
      expand: (s, relax) => {
        for (let b = 0; b < 256; b++) {
          const ns = automaton.step(s, b);
          if (ns >= 0) relax(ns, 1);
        }
      },
    },
    maxExpansions,
  );
  return found === null ? -1 : found.cost;
}
