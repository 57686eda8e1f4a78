// The automaton's parser stacks: LALR stacks interned as persistent lists (a stack is its top
// state and the id of the stack below it), and the LALR feed of a terminal on an interned stack.

import { IntMap, type TableSlab } from "../../support/index.js";
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

  /** Its part of GrammarAutomaton.retainedBytes beyond the slab: tables exactly, stacks at a generous cost each. */
  retainedBytes(): number {
    return this.stackIds.byteLength + this.feedMemo.byteLength + (this.stackParent.length + this.stackTop.length) * 16;
  }
}
