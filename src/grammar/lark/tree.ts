// Lark's Tree API over our parse-tree nodes, with Lark's semantics (lark/tree.py: iter_subtrees
// 129–143, find_data 165–167, scan_values 182–196, __deepcopy__ 198, __eq__/__hash__ 117–127;
// lark/visitors.py: Transformer_InPlace 270–283, Transformer_NonRecursive 285–330), plus the
// DAG walks the compile needs where Lark walks spelled-out trees. Every walk counts its work
// against the compile in progress (compile-context.ts).

import type { Node, Sym, Token, Tree } from "../lark-syntax.js";
import { tree } from "../lark-syntax.js";
import { spend } from "./compile-context.js";

export const isTree = (n: Node | undefined): n is Tree => n !== undefined && n.kind === "tree";
export const isSym = (n: Node | undefined): n is Sym => n !== undefined && n.kind === "sym";
export const isTok = (n: Node | undefined): n is Token => n !== undefined && n.kind === "token";

/** The last traversal's stamp: a tree a traversal reached has it in `visited` (no Set needed). */
let traversal = 0;

/** lark.Tree.iter_subtrees: reversed BFS (children reversed), each node once. */
export function iterSubtrees(root: Tree): Tree[] {
  const stamp = ++traversal;
  const queue: Tree[] = [root];
  root.visited = stamp;
  for (let i = 0; i < queue.length; i++) {
    const kids = queue[i]!.children;
    for (let j = kids.length - 1; j >= 0; j--) {
      const c = kids[j]!;
      if (isTree(c) && c.visited !== stamp) {
        c.visited = stamp;
        queue.push(c);
      }
    }
  }
  spend(queue.length);
  return queue.reverse();
}

/** lark.Transformer_InPlace.transform. `fn` returns the replacement for a tree (or the tree). */
export function transformInPlace(root: Tree, fn: (t: Tree) => Node): Node {
  const subtrees = iterSubtrees(root);
  for (let i = 0; i < subtrees.length; i++) {
    const kids = subtrees[i]!.children;
    for (let j = 0; j < kids.length; j++) {
      const c = kids[j]!;
      if (isTree(c)) kids[j] = fn(c);
    }
  }
  return fn(root);
}

export function deepCopy(n: Node): Node {
  if (isTree(n)) return tree(n.data, n.children.map(deepCopy));
  if (isSym(n)) return { ...n };
  return n;
}

/**
 * Structural key with Lark's equality (Symbols compare by kind+name, patterns by type/value/flags).
 * Values go in length-prefixed (unambiguous, and cheaper than quoting them).
 */
export function keyOf(n: Node): string {
  switch (n.kind) {
    case "tree":
      return `${n.data}(${n.children.map(keyOf).join(",")})`;
    case "sym":
      return (n.isTerm ? "T:" : "N:") + n.name;
    case "pattern":
      return `P${n.type}:${n.flags}:${n.value.length}:${n.value}`;
    case "token":
      return `K:${n.value.length}:${n.value}`;
    case "empty":
      return "E";
  }
}

export function findData(root: Tree, data: string): Tree[] {
  return iterSubtrees(root).filter((t) => t.data === data);
}

/**
 * The symbols below each of `roots` into `out`, depth-first and left to right (Lark's
 * scan_values), without recursion: a terminal's tree is a DAG as deep as its chain of references.
 * A subtree met before is skipped: every symbol in it is in `out` already, so the set and its
 * insertion order are those of scanning each root on its own (Lark does, once per expansion).
 */
function scanSymbols(roots: readonly Tree[], out: Set<string>): void {
  const stamp = ++traversal;
  const stack: Node[] = [];
  for (const root of roots) {
    stack.push(root);
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (isSym(n)) {
        out.add(n.name);
        continue;
      }
      if (!isTree(n) || n.visited === stamp) continue;
      n.visited = stamp;
      spend(1);
      // Children pushed right to left: they come out in order, as the recursive walk meets them.
      for (let j = n.children.length - 1; j >= 0; j--) stack.push(n.children[j]!);
    }
  }
}

/** load_grammar._find_used_symbols (load_grammar.py 910–913). */
export function usedSymbols(t: Tree): Set<string> {
  const out = new Set<string>();
  scanSymbols(findData(t, "expansion"), out);
  return out;
}

/** Children of `t` that are trees, for the DAG walks below. */
function eachTreeChild(t: Tree, fn: (c: Tree) => void): void {
  for (const c of t.children) if (isTree(c)) fn(c);
}

/**
 * Visits every tree below `root` (each once) after its children, left to right: Lark's
 * Transformer_NonRecursive order on the tree a DAG spells, where a subtree met again is already
 * done. No recursion: a terminal's DAG is as deep as its chain of references.
 */
export function postOrder(root: Tree, isDone: (t: Tree) => boolean, visit: (t: Tree) => void): void {
  const trees: Tree[] = [root];
  const expanded: boolean[] = [false];
  while (trees.length > 0) {
    const i = trees.length - 1;
    const t = trees[i]!;
    if (isDone(t)) {
      trees.pop();
      expanded.pop();
      continue;
    }
    if (expanded[i]) {
      trees.pop();
      expanded.pop();
      visit(t);
      continue;
    }
    expanded[i] = true;
    spend(t.children.length + 1);
    for (let j = t.children.length - 1; j >= 0; j--) {
      const c = t.children[j]!;
      if (isTree(c) && !isDone(c)) {
        trees.push(c);
        expanded.push(false);
      }
    }
  }
}

/**
 * Lark's "Terminals cannot be empty" test, `len(find_data('expansion')) == 1` and that one
 * empty, without listing the DAG: the first non-empty expansion met answers no, and a
 * terminal's tree begins with one.
 */
export function isOneEmptyExpansion(root: Tree): boolean {
  const stamp = ++traversal;
  const stack: Tree[] = [root];
  root.visited = stamp;
  let found = 0;
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (t.data === "expansion" && (t.children.length > 0 || ++found > 1)) return false;
    eachTreeChild(t, (c) => {
      if (c.visited !== stamp) {
        c.visited = stamp;
        stack.push(c);
      }
    });
  }
  return found === 1;
}

/** Saturated count arithmetic: past this, a count only needs to stay above every limit. */
const COUNT_CAP = 1e15;
const spelledMemo = new WeakMap<Tree, number>();

/**
 * How many nodes `n` spells as a tree (a DAG's shared subtrees counted at each use), memoized;
 * saturates at COUNT_CAP. Only asked of finished trees (EBNF operands, template bodies), which
 * are not changed afterwards.
 */
export function spelledSize(n: Node): number {
  if (!isTree(n)) return 1;
  const known = spelledMemo.get(n);
  if (known !== undefined) return known;
  let size = 1;
  for (const c of n.children) size = Math.min(COUNT_CAP, size + spelledSize(c));
  spelledMemo.set(n, size);
  return size;
}

/** Python repr of a Lark symbol / tree, as it appears in Lark's messages. */
export function describe(n: Node): string {
  if (isSym(n)) return `${n.isTerm ? "Terminal" : "NonTerminal"}('${n.name}')`;
  if (isTree(n)) return `Tree('${n.data}', [${n.children.map(describe).join(", ")}])`;
  if (n.kind === "pattern") return `P${n.type}:${n.flags}:${JSON.stringify(n.value)}`;
  if (n.kind === "token") return `K:${JSON.stringify(n.value)}`;
  return keyOf(n);
}
