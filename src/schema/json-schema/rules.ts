// The pushdown form of a schema's language: where a value nests without bound (a recursive
// `$ref`, a value the schema leaves free), the compiler writes a call of a rule (its spelling,
// support/rule-calls.ts) instead of unrolling it, and each rule is one DFA. This file holds the
// calls as regex nodes and what the compiler checks of the rules once they are built.

import { forEachCall, RULE_CALL_LEAD, ruleCallBytes } from "../../support/index.js";
import type { ByteDfa, RegexNode } from "../../regex/index.js";
import { spellingNode } from "../marker-node.js";

/**
 * A call of rule `rule` as a regex node: its spelling, one DFA per rule number for every schema
 * (what the regex stage derives of an embedded DFA, its edges and classes, is kept per DFA: a
 * new one per call was 5% of a small schema's compile).
 */
export function callNode(rule: number): RegexNode {
  if (rule >= KEPT_CALL_NODES) return spellingNode(ruleCallBytes(rule));
  let node = callNodes[rule];
  if (node === undefined) callNodes[rule] = node = spellingNode(ruleCallBytes(rule));
  return node;
}

/** Rules whose call's spelling is kept (the rest, in networks that big, are made per call). */
const KEPT_CALL_NODES = 4096;
const callNodes: RegexNode[] = [];

/** Whether any state of `dfa` reads a call's lead byte: a language with calls in it. */
export function hasCalls(dfa: ByteDfa): boolean {
  const c = dfa.byteClass[RULE_CALL_LEAD]!;
  for (let q = 0; q < dfa.numStates; q++) if (dfa.next[q * dfa.numClasses + c]! >= 0) return true;
  return false;
}

/** The (callee, state after the call) pairs a DFA state spells. */
function callsAt(dfa: ByteDfa, q: number, numRules: number): [number, number][] {
  const out: [number, number][] = [];
  forEachCall(dfa, q, numRules, (rule, after) => out.push([rule, after]));
  return out;
}

/** A rule's calls by state, flat: state q's are callee/after[first[q] … first[q + 1]). */
interface RuleCalls {
  readonly first: Int32Array;
  readonly callee: number[];
  readonly after: number[];
}

function ruleCalls(dfa: ByteDfa, numRules: number): RuleCalls {
  const first = new Int32Array(dfa.numStates + 1);
  const callee: number[] = [];
  const after: number[] = [];
  // One visitor for every state (a closure per state was most of this loop's garbage).
  const visit = (rule: number, to: number): void => {
    callee.push(rule);
    after.push(to);
  };
  for (let q = 0; q < dfa.numStates; q++) {
    first[q] = callee.length;
    forEachCall(dfa, q, numRules, visit);
  }
  first[dfa.numStates] = callee.length;
  return { first, callee, after };
}

/**
 * Which rules derive at least one text (a fixpoint: a rule is productive once an accepting state
 * is reachable reading text and calling productive rules). A rule that is not can never finish
 * (`{"required": ["next"], "properties": {"next": {"$ref": "#"}}}`). Asked of every schema served
 * as a network: flat tables, one walk per rule and round, the rules last to first (the schema
 * stage numbers a rule after its first caller, so callees are mostly settled before their
 * callers). With `until`, it stops once that rule is found productive (the others are then
 * left as far as they were found): a schema asks only whether its document rule is.
 */
export function productiveRules(rules: readonly ByteDfa[], until = -1): boolean[] {
  const productive = rules.map(() => false);
  const calls: (RuleCalls | undefined)[] = [];
  const classes: (Int32Array | undefined)[] = [];
  const most = Math.max(...rules.map((dfa) => dfa.numStates));
  const seen = new Uint8Array(most);
  const stack = new Int32Array(most);
  for (let changed = true; changed; ) {
    changed = false;
    for (let r = rules.length - 1; r >= 0; r--) {
      if (productive[r]) continue;
      const dfa = rules[r]!;
      if (endsAlongShortest(dfa, productive)) {
        productive[r] = true;
        if (r === until) return productive;
        changed = true;
        continue;
      }
      const { first, callee, after } = (calls[r] ??= ruleCalls(dfa, rules.length));
      const cls = (classes[r] ??= textClasses(dfa));
      const width = dfa.numClasses;
      seen.fill(0, 0, dfa.numStates);
      let top = 0;
      stack[top++] = dfa.start;
      seen[dfa.start] = 1;
      let found = false;
      while (top > 0 && !found) {
        const q = stack[--top]!;
        if (dfa.accepting[q] === 1) found = true;
        for (let i = 0; i < cls.length; i++) {
          const t = dfa.next[q * width + cls[i]!]!;
          if (t >= 0 && seen[t] === 0) {
            seen[t] = 1;
            stack[top++] = t;
          }
        }
        for (let i = first[q]!; i < first[q + 1]!; i++) {
          const t = after[i]!;
          if (productive[callee[i]!] && seen[t] === 0) {
            seen[t] = 1;
            stack[top++] = t;
          }
        }
      }
      if (found) {
        productive[r] = true;
        if (r === until) return productive;
        changed = true;
      }
    }
  }
  return productive;
}

/**
 * Whether a shortest spelling from the start (bytes, a call's spelling three: minBytesToAccept
 * descending) reads text and calls of rules known productive to an accepting state: then the
 * rule is productive. False says nothing (the full search decides). Most rules are shown so in
 * a walk as long as their shortest text, not a search of all their states.
 */
function endsAlongShortest(dfa: ByteDfa, productive: readonly boolean[]): boolean {
  const { next, numClasses: k, byteClass, minBytesToAccept: dist, accepting } = dfa;
  const lead = byteClass[RULE_CALL_LEAD]!;
  let q = dfa.start;
  for (let steps = 0; steps <= dfa.numStates; steps++) {
    if (accepting[q] === 1) return true;
    const d = dist[q]!;
    if (d <= 0) return false;
    let moved = -1;
    for (let c = 0; c < k && moved < 0; c++) {
      const t = next[q * k + c]!;
      if (c !== lead && t >= 0 && dist[t] === d - 1) moved = t;
    }
    if (moved < 0) {
      forEachCall(dfa, q, productive.length, (rule, after) => {
        if (moved < 0 && productive[rule] && dist[after] === d - 3) moved = after;
      });
    }
    if (moved < 0) return false;
    q = moved;
  }
  return false;
}

/** The byte classes of a DFA that some text byte (not a call's lead) is in. */
function textClasses(dfa: ByteDfa): Int32Array {
  const seen = new Uint8Array(dfa.numClasses);
  const out: number[] = [];
  for (let b = 0; b < 256; b++) {
    const c = dfa.byteClass[b]!;
    if (b !== RULE_CALL_LEAD && seen[c] === 0) {
      seen[c] = 1;
      out.push(c);
    }
  }
  return Int32Array.from(out);
}

/**
 * Whether some rule can call itself again before reading a byte (through the calls its start
 * state spells): then a stack could grow without reading, which the rule automaton refuses.
 */
export function callsBeforeReading(rules: readonly ByteDfa[]): boolean {
  const first = rules.map((dfa) => callsAt(dfa, dfa.start, rules.length).map(([callee]) => callee));
  const state = new Uint8Array(rules.length); // 0 new, 1 on the path, 2 done
  const visit = (r: number): boolean => {
    if (state[r] === 1) return true;
    if (state[r] === 2) return false;
    state[r] = 1;
    for (const c of first[r]!) if (visit(c)) return true;
    state[r] = 2;
    return false;
  };
  return rules.some((_, r) => visit(r));
}
