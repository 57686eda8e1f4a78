// The automaton's parser stacks: LALR stacks interned as persistent lists (a stack is its top
// state and the id of the stack below it), and the LALR feed of a terminal on an interned stack.

import { grownTo, IntMap, type TableSlab } from "../../support/index.js";
import type { Grammar } from "../grammar.js";
import { INT_MAP_FIRST_BYTES, MEMO_CAPACITY } from "./tables.js";

/** The first tables of ParserStacks' memo maps in the automaton's slab. */
export const STACK_TABLE_BYTES = 2 * INT_MAP_FIRST_BYTES;

/** Interned parser stacks; stack 0 holds the LALR start state alone. */
export class ParserStacks {
  // Interned parser stacks: parent id, LALR state.
  readonly stackParent: number[] = [-1];
  readonly stackTop: number[];
  /** (parent * LALR states + state) → stack id: numeric keys, no string per lookup. */
  private readonly stackIds: IntMap;
  private readonly feedMemo: IntMap;
  /** acceptsAtEnd's states pushed above the interned stack. */
  private scratch = new Int32Array(64);

  constructor(
    private readonly grammar: Grammar,
    tables: TableSlab,
  ) {
    this.stackTop = [grammar.table.startState];
    this.stackIds = new IntMap(MEMO_CAPACITY, tables);
    this.feedMemo = new IntMap(MEMO_CAPACITY, tables);
  }

  pushStack(parent: number, state: number): number {
    const key = parent * this.grammar.table.numStates + state;
    let id = this.stackIds.get(key);
    if (id === IntMap.MISSING) {
      id = this.stackTop.length;
      this.stackTop.push(state);
      this.stackParent.push(parent);
      this.stackIds.set(key, id);
    }
    return id;
  }

  /** LALR feed on an interned stack: new stack id, -1 on error, -2 on acceptance ($END). */
  feed(stack: number, terminal: number): number {
    const memoKey = stack * this.grammar.table.terminals.length + terminal;
    const hit = this.feedMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const t = this.grammar.table;
    const TT = t.terminals.length,
      NT = t.nonterminals.length;
    let st = stack;
    let result: number;
    for (;;) {
      const a = t.action[this.stackTop[st]! * TT + terminal]!;
      if (a > 0) {
        result = this.pushStack(st, a - 1);
        break;
      }
      if (a === 0) {
        result = -1;
        break;
      }
      const r = -a - 1;
      for (let k = t.ruleLen[r]!; k > 0; k--) st = this.stackParent[st]!;
      const g = t.goto[this.stackTop[st]! * NT + t.ruleLhs[r]!]!;
      if (g < 0) {
        result = -1;
        break;
      }
      st = this.pushStack(st, g);
      if (terminal === 0 && g === t.endState) {
        result = -2;
        break;
      }
    }
    this.feedMemo.set(memoKey, result);
    return result;
  }

  /**
   * Whether feeding `terminal` (none when negative) and then $END accepts, as
   * feed(feed(stack, terminal), 0) === -2 says, without interning the stacks on the way: a
   * budget's one-token question asks it of thousands of (stack, lexer state) pairs whose stacks
   * are never needed again, and each interned stack was a hash insert into a growing table.
   */
  acceptsAtEnd(stack: number, terminal: number): boolean {
    const t = this.grammar.table;
    const TT = t.terminals.length,
      NT = t.nonterminals.length;
    let above = this.scratch;
    let n = 0;
    let base = stack;
    for (let term = terminal < 0 ? 0 : terminal; ; term = 0) {
      for (;;) {
        const top = n > 0 ? above[n - 1]! : this.stackTop[base]!;
        const a = t.action[top * TT + term]!;
        if (a > 0) {
          // A shift of $END is not an acceptance (feed gives a stack, not -2).
          if (term === 0) return false;
          if (n === above.length) above = this.scratch = grownTo(above, n * 2);
          above[n++] = a - 1;
          break;
        }
        if (a === 0) return false;
        const r = -a - 1;
        for (let k = t.ruleLen[r]!; k > 0; k--) {
          if (n > 0) n--;
          else base = this.stackParent[base]!;
        }
        const under = n > 0 ? above[n - 1]! : this.stackTop[base]!;
        const g = t.goto[under * NT + t.ruleLhs[r]!]!;
        if (g < 0) return false;
        if (term === 0 && g === t.endState) return true;
        if (n === above.length) above = this.scratch = grownTo(above, n * 2);
        above[n++] = g;
      }
      if (term === 0) return false;
    }
  }

  /** Its part of GrammarAutomaton.retainedBytes beyond the slab: tables exactly, stacks at a generous cost each. */
  retainedBytes(): number {
    return this.stackIds.byteLength + this.feedMemo.byteLength + (this.stackParent.length + this.stackTop.length) * 16;
  }
}
