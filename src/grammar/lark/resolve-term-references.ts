// Lark's resolve_term_references (load_grammar.py 863–894): terminal references substituted, so
// each terminal's tree becomes a DAG over the trees it names; recursion refused, and (ours) chains
// of references bounded by maxReferenceDepth. The graph walks it needs are iterative: a chain of
// references is as long as the grammar.

import { GrammarError } from "../errors.js";
import type { Tree } from "../lark-syntax.js";
import { shortName, tooComplex, type CompileBudget } from "../limits.js";
import { spend } from "./compile-context.js";
import { isSym, iterSubtrees } from "./tree.js";

/**
 * Lark's resolve_term_references: every `value` node naming a terminal gets that terminal's tree
 * (the same object, so the terminals become one DAG), then a terminal reachable from itself is
 * refused. Lark repeats whole passes over the growing DAGs until nothing changes: quadratic in a
 * chain's length (13 s for 10,000). Every value node is in one terminal's own tree, and Lark's
 * first pass visits each terminal's own tree before substituting into it (its later passes find
 * nothing left), so one pass over the own trees in Lark's order makes the same DAG and meets
 * errors in the same order. Cycles are then found on the reference graph (Tarjan's SCCs), and the
 * first terminal in definition order on one is the one Lark names.
 *
 * Returns each terminal's own subtrees (iter_subtrees order, before substitution).
 */
export function resolveTermReferences(termDefs: Map<string, Tree | null>, budget: CompileBudget): Map<string, Tree[]> {
  const names = [...termDefs.keys()];
  const indexOf = new Map<string, number>();
  names.forEach((n, i) => indexOf.set(n, i));
  const refs: number[][] = names.map(() => []);
  const own = new Map<string, Tree[]>();
  names.forEach((name, i) => {
    const t = termDefs.get(name);
    if (!t) return;
    const subtrees = iterSubtrees(t);
    own.set(name, subtrees);
    for (const exp of subtrees) {
      if (exp.data !== "value") continue;
      const item = exp.children[0]!;
      if (isSym(item) && !item.isTerm)
        throw new GrammarError(`Rules aren't allowed inside terminals (NonTerminal('${item.name}') in ${name})`);
      if (isSym(item)) {
        const v = termDefs.get(item.name);
        if (v === undefined) throw new GrammarError(`Terminal used but not defined: ${item.name}`);
        exp.children[0] = v!;
        refs[i]!.push(indexOf.get(item.name)!);
      }
    }
  });
  const cyclic = onCycle(refs);
  for (let i = 0; i < names.length; i++) {
    if (cyclic[i] && termDefs.get(names[i]!))
      throw new GrammarError(`Recursion in terminal '${names[i]}' (recursion is only allowed in rules, not terminals)`);
  }
  const depth = longestPaths(refs);
  for (let i = 0; i < names.length; i++) {
    if (depth[i]! > budget.limits.maxReferenceDepth)
      throw tooComplex(
        budget.limits,
        "maxReferenceDepth",
        depth[i]!,
        "terminal references in a chain",
        `terminal '${shortName(names[i]!)}'`,
      );
  }
  return own;
}

/** 1 for each node on a cycle of `edges` (in an SCC of two or more, or with an edge to itself). */
function onCycle(edges: readonly number[][]): Uint8Array {
  const n = edges.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const cyclic = new Uint8Array(n);
  const sccStack: number[] = [];
  // Tarjan without recursion: frames of (node, next edge to follow).
  const frameNode: number[] = [];
  const frameEdge: number[] = [];
  let counter = 0;
  const enter = (v: number): void => {
    index[v] = low[v] = counter++;
    sccStack.push(v);
    onStack[v] = 1;
    frameNode.push(v);
    frameEdge.push(0);
  };
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    enter(root);
    while (frameNode.length > 0) {
      const top = frameNode.length - 1;
      const v = frameNode[top]!;
      const out = edges[v]!;
      if (frameEdge[top]! < out.length) {
        const w = out[frameEdge[top]!++]!;
        spend(1);
        if (w === v) cyclic[v] = 1;
        if (index[w] === -1) enter(w);
        else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      frameNode.pop();
      frameEdge.pop();
      if (frameNode.length > 0) {
        const parent = frameNode[frameNode.length - 1]!;
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] !== index[v]) continue;
      // v roots an SCC: the stack holds it from v up.
      const from = sccStack.lastIndexOf(v);
      if (sccStack.length - from > 1) for (let k = from; k < sccStack.length; k++) cyclic[sccStack[k]!] = 1;
      for (let k = from; k < sccStack.length; k++) onStack[sccStack[k]!] = 0;
      sccStack.length = from;
    }
  }
  return cyclic;
}

/** Per node of an acyclic graph, the most edges on a path from it (0 for a sink). */
function longestPaths(edges: readonly number[][]): Int32Array {
  const n = edges.length;
  const depth = new Int32Array(n).fill(-1);
  const stack: number[] = [];
  for (let root = 0; root < n; root++) {
    if (depth[root] !== -1) continue;
    stack.push(root);
    while (stack.length > 0) {
      const v = stack[stack.length - 1]!;
      if (depth[v] === -2) {
        // Every successor is done: this is the node's second visit.
        let d = 0;
        for (const w of edges[v]!) d = Math.max(d, depth[w]! + 1);
        depth[v] = d;
        stack.pop();
        continue;
      }
      if (depth[v]! >= 0) {
        stack.pop();
        continue;
      }
      depth[v] = -2;
      spend(edges[v]!.length + 1);
      for (const w of edges[v]!) if (depth[w] === -1) stack.push(w);
    }
  }
  return depth;
}
