// Lark's TerminalTreeToPattern (load_grammar.py 612–660): a terminal's tree, its literals already
// patterns, joined into one PatternRE; and the same join measured without building it
// (PatternShape), so a terminal that would spell too long or too deep a regexp is refused first.

import { GrammarError } from "../errors.js";
import { regexpGroupDepth, tree, type Node, type PatternNode, type Token, type Tree } from "../lark-syntax.js";
import { shortName } from "../limits.js";
import { PY_RE_SPECIAL } from "../../regex/index.js";
import { asPattern, cpLength, FLAG_WRAPPER_CHARS, patternRe, patternToRegexp, patternWidth } from "./patterns.js";

/** TerminalTreeToPattern's rule for `t`, whose children are already transformed into `kids`. */
export function terminalTreeToPattern(t: Tree, kids: Node[], name: string): Node {
  switch (t.data) {
    case "pattern":
      return kids[0]!;
    case "value":
      return kids[0]!;
    case "expansion": {
      if (kids.length === 0) throw new GrammarError(`Terminals cannot be empty (${name})`);
      if (kids.length === 1) return kids[0]!;
      return patternRe(kids.map((k) => patternToRegexp(asPattern(k, name))).join(""), "");
    }
    case "expansions": {
      if (kids.length === 1) return kids[0]!;
      const ps = kids.map((k) => asPattern(k, name));
      const keyed = ps.map((p) => ({ p, w: patternWidth(p, `terminal '${shortName(name)}'`) }));
      keyed.sort((x, y) => y.w[1] - x.w[1] || y.w[0] - x.w[0] || cpLength(y.p.value) - cpLength(x.p.value));
      return patternRe(`(?:${keyed.map((k) => patternToRegexp(k.p)).join("|")})`, "");
    }
    case "expr": {
      const inner = asPattern(kids[0]!, name);
      const opTok = kids[1] as Token | string;
      const opv = typeof opTok === "string" ? opTok : opTok.value;
      let op = opv;
      if (opv === "~") {
        if (kids.length === 3) op = `{${Number((kids[2] as Token).value)}}`;
        else {
          const mn = Number((kids[2] as Token).value),
            mx = Number((kids[3] as Token).value);
          if (mx < mn) throw new GrammarError(`Bad Range for ${name} (${mn}..${mx} isn't allowed)`);
          op = `{${mn},${mx}}`;
        }
      }
      return patternRe(`(?:${patternToRegexp(inner)})${op}`, inner.flags);
    }
    case "maybe": {
      const inner = asPattern(kids[0]!, name);
      return patternRe(`(?:${patternToRegexp(inner)})?`, inner.flags);
    }
    case "alias":
      throw new GrammarError("Aliasing not allowed in terminals (You used -> in the wrong place)");
    case "template_usage":
      throw new GrammarError(`Templates are not allowed inside terminals (${name})`);
  }
  return kids === t.children ? t : tree(t.data, kids);
}

/**
 * What a terminal tree's pattern will be, measured without building it: the length of its
 * regexp (patternToRegexp), how deep its groups nest, and its flags (which the regexp carries as
 * `(?f:…)` wrappers). References make a terminal a DAG that can spell exponentially much
 * (`A: B B`, `B: C C`, …), so the sizes are computed over the DAG and checked before any string.
 */
export interface PatternShape {
  readonly length: number;
  readonly depth: number;
  readonly flags: string;
}

const NO_SHAPE: PatternShape = { length: 0, depth: 0, flags: "" };

export function shapeOfPattern(p: PatternNode): PatternShape {
  let length = p.value.length;
  let depth = 0;
  if (p.type === "str") {
    for (const ch of p.value) if (RE_ESCAPED.has(ch)) length++;
  } else depth = regexpGroupDepth(p.value, p.flags.includes("x"));
  return withFlags(length, depth, p.flags);
}

const RE_ESCAPED = new Set(PY_RE_SPECIAL);
const withFlags = (valueLength: number, valueDepth: number, flags: string): PatternShape => ({
  length: valueLength + FLAG_WRAPPER_CHARS * flags.length,
  depth: valueDepth + flags.length,
  flags,
});
/** `(?:` and `)`, which terminalTreeToPattern wraps alternatives and repeated operands in. */
const NON_CAPTURING_GROUP_CHARS = 4;

/** The shape terminalTreeToPattern gives `t`, from its children's shapes (see PatternShape). */
export function shapeOfTree(t: Tree, kids: readonly PatternShape[]): PatternShape {
  switch (t.data) {
    case "pattern":
    case "value":
      return kids[0] ?? NO_SHAPE;
    case "expansion": {
      if (kids.length === 1) return kids[0]!;
      let length = 0,
        depth = 0;
      for (const k of kids) {
        length += k.length;
        depth = Math.max(depth, k.depth);
      }
      return withFlags(length, depth, "");
    }
    case "expansions": {
      if (kids.length === 1) return kids[0]!;
      // `(?:a|b|c)`: the group, and a `|` between each two.
      let length = NON_CAPTURING_GROUP_CHARS + (kids.length - 1),
        depth = 0;
      for (const k of kids) {
        length += k.length;
        depth = Math.max(depth, k.depth);
      }
      return withFlags(length, depth + 1, "");
    }
    case "expr":
    case "maybe": {
      const inner = kids[0] ?? NO_SHAPE;
      let op = 1;
      if (t.data === "expr") {
        const opTok = t.children[1] as Token | string;
        const opv = typeof opTok === "string" ? opTok : opTok.value;
        // `~ n` is written `{n}`, `~ n..m` `{n,m}` (see terminalTreeToPattern).
        op =
          opv === "~"
            ? 2 +
              t.children
                .slice(2)
                .map((c) => String(Number((c as Token).value)))
                .join(",").length
            : opv.length;
      }
      return withFlags(NON_CAPTURING_GROUP_CHARS + inner.length + op, inner.depth + 1, inner.flags);
    }
  }
  return NO_SHAPE;
}
