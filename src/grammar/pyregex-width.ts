// sre_parse's getwidth() over the Python-regex AST: a pattern's [min, max] match width, which
// Lark sorts terminals by and refuses zero-width ones with; the parser asks it of a lookbehind.

import type { ParsedRegex, RegexSyntaxNode } from "./pyregex.js";

/** Python's sre MAXREPEAT: widths saturate here, so two unbounded terminals compare equal. */
export const MAXREPEAT = 4294967295;

export function widthOf(n: RegexSyntaxNode, groups?: Map<number, [number, number]>): [number, number] {
  switch (n.k) {
    case "set":
    case "any":
      return [1, 1];
    case "seq": {
      let lo = 0,
        hi = 0;
      for (const it of n.items) {
        const [a, b] = widthOf(it, groups);
        lo += a;
        hi += b;
      }
      return [Math.min(lo, MAXREPEAT - 1), Math.min(hi, MAXREPEAT)];
    }
    case "alt": {
      let lo = MAXREPEAT - 1,
        hi = 0;
      for (const a of n.alts) {
        const [x, y] = widthOf(a, groups);
        lo = Math.min(lo, x);
        hi = Math.max(hi, y);
      }
      return [lo, hi];
    }
    case "group": {
      const w = widthOf(n.body, groups);
      groups?.set(n.index, w);
      return w;
    }
    case "rep": {
      const [a, b] = widthOf(n.body, groups);
      const lo = Math.min(a * n.min, MAXREPEAT - 1);
      const hi = n.max === Infinity && b ? MAXREPEAT : Math.min(b * (n.max === Infinity ? MAXREPEAT : n.max), MAXREPEAT);
      return [lo, hi];
    }
    case "assert":
    case "look":
      return [0, 0];
    case "backref":
      return groups?.get(n.index) ?? [0, 0];
  }
}

/** [min, max] match width exactly as Python's sre_parse reports it (max saturates at MAXREPEAT). */
export function regexWidth(parsed: ParsedRegex): [number, number] {
  return widthOf(parsed.root, new Map());
}
