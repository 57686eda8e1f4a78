// Grammar.compile's first part, "Compile Terminals" (load_grammar.py 693–708): PrepareLiterals
// then TerminalTreeToPattern on each terminal's tree, in definition order. Lark deep-copies each
// tree first (a DAG spelled out as a tree: every referenced terminal copied again, exponentially
// for `A: B B`, `B: C C`…); here the passes run on the DAG, each node once, which gives the same
// patterns, and the same first error:
//   - literals are checked (and turned into patterns in place: the same result in every copy)
//     once; an invalid one is reported for the first terminal whose DAG holds one, and the one
//     Lark's reversed-BFS order meets first there (the deepest, then leftmost, occurrence);
//   - patterns are made in post-order, as Lark's non-recursive transformer does, memoized;
//   - before a terminal's pattern is built, its length and group nesting are measured on the DAG
//     (PatternShape) and checked against maxPatternChars, maxTotalPatternChars and maxNesting.

import type { TerminalDef } from "./definitions.js";
import { GrammarError } from "../errors.js";
import type { Node, Tree } from "../lark-syntax.js";
import { nestingTooDeep, shortName, tooComplex, type GrammarLimits } from "../limits.js";
import { spend } from "./compile-context.js";
import type { Definition, TermDef } from "./definitions.js";
import { prepareLiterals } from "./literals.js";
import { asPattern } from "./patterns.js";
import { shapeOfPattern, shapeOfTree, terminalTreeToPattern, type PatternShape } from "./terminal-tree-to-pattern.js";
import { isTree, iterSubtrees, postOrder } from "./tree.js";

/** Where the deepest invalid literal below a tree is (null: none below it). */
type InvalidBelow = { depth: number; literal: Tree } | null;

/**
 * The terminals' patterns, and the characters they hold together (the anonymous terminals'
 * count goes on from there). `ownSubtrees`: each terminal's own subtrees, before references were
 * substituted; `definitions`: where each was defined, for a nesting error.
 */
export function compileTerminals(
  termDefs: readonly TermDef[],
  ownSubtrees: ReadonlyMap<string, Tree[]>,
  definitions: ReadonlyMap<string, Definition>,
  limits: GrammarLimits,
): { terminals: TerminalDef[]; patternChars: number } {
  const invalid = prepareTerminalLiterals(termDefs, ownSubtrees);
  const deepestInvalid = new Map<Tree, InvalidBelow>();
  const shapes = new Map<Tree, PatternShape>();
  const built = new Map<Tree, Node>();
  const terminals: TerminalDef[] = [];
  let patternChars = 0;
  for (const [name, t, priority] of termDefs) {
    if (!t) continue;
    if (invalid.size > 0) {
      const found = deepestInvalidLiteral(t, invalid, deepestInvalid);
      if (found) throw invalid.get(found.literal)!;
    }
    const shape = measurePattern(t, shapes);
    if (shape.length > limits.maxPatternChars)
      throw tooComplex(limits, "maxPatternChars", shape.length, "characters in its pattern", `terminal '${shortName(name)}'`);
    if (patternChars + shape.length > limits.maxTotalPatternChars)
      throw tooComplex(limits, "maxTotalPatternChars", patternChars + shape.length, "characters in the terminals' patterns");
    if (shape.depth > limits.maxNesting) {
      const d = definitions.get(name);
      throw nestingTooDeep(
        limits.maxNesting,
        `terminal '${shortName(name)}' (its references substituted): regexp groups`,
        d?.line,
        d?.column,
      );
    }
    patternChars += shape.length;
    terminals.push({ name, pattern: asPattern(buildPattern(t, name, built), name), priority });
  }
  return { terminals, patternChars };
}

/**
 * PrepareLiterals over every terminal's own subtrees, once: a literal becomes its pattern in
 * place; an invalid one stays, with its error, in the map returned.
 */
function prepareTerminalLiterals(termDefs: readonly TermDef[], ownSubtrees: ReadonlyMap<string, Tree[]>): Map<Tree, GrammarError> {
  const invalid = new Map<Tree, GrammarError>();
  for (const [name, t] of termDefs) {
    if (!t) continue;
    const own = ownSubtrees.get(name) ?? iterSubtrees(t);
    for (const x of own) {
      const kids = x.children;
      for (let j = 0; j < kids.length; j++) {
        const c = kids[j]!;
        if (!isTree(c) || (c.data !== "literal" && c.data !== "range") || invalid.has(c)) continue;
        try {
          kids[j] = prepareLiterals(c);
        } catch (e) {
          if (!(e instanceof GrammarError)) throw e;
          invalid.set(c, e);
        }
      }
    }
  }
  return invalid;
}

/** The invalid literal Lark's reversed-BFS order meets first in `t`'s DAG (memo: per subtree). */
function deepestInvalidLiteral(t: Tree, invalid: ReadonlyMap<Tree, GrammarError>, memo: Map<Tree, InvalidBelow>): InvalidBelow {
  postOrder(
    t,
    (x) => memo.has(x),
    (x) => {
      let best: InvalidBelow = null;
      for (const c of x.children) {
        if (!isTree(c)) continue;
        const below = memo.get(c);
        const here = invalid.has(c) ? { depth: 1, literal: c } : below ? { depth: below.depth + 1, literal: below.literal } : null;
        // Strictly deeper only: on a tie the leftmost stays.
        if (here !== null && (best === null || here.depth > best.depth)) best = here;
      }
      memo.set(x, best);
    },
  );
  return memo.get(t) ?? null;
}

/** The shape of `t`'s pattern (memo: per subtree). */
function measurePattern(t: Tree, shapes: Map<Tree, PatternShape>): PatternShape {
  postOrder(
    t,
    (x) => shapes.has(x),
    (x) => {
      const kids: PatternShape[] = [];
      for (const c of x.children) {
        if (isTree(c)) kids.push(shapes.get(c)!);
        else if (c.kind === "pattern") kids.push(shapeOfPattern(c));
      }
      shapes.set(x, shapeOfTree(x, kids));
    },
  );
  return shapes.get(t)!;
}

/** TerminalTreeToPattern over `t`'s DAG, post-order (memo: per subtree). */
function buildPattern(t: Tree, name: string, built: Map<Tree, Node>): Node {
  postOrder(
    t,
    (x) => built.has(x),
    (x) => {
      const kids = x.children.map((c) => (isTree(c) ? built.get(c)! : c));
      spend(kids.length);
      built.set(x, terminalTreeToPattern(x, kids, name));
    },
  );
  return built.get(t)!;
}
