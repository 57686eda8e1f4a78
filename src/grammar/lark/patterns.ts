// Lark's PatternStr and PatternRE (lark/lexer.py 23–103): a terminal's compiled form, its
// `to_regexp()` (flags as `(?f:…)` wrappers) and its widths (sre_parse's getwidth, memoized for
// the compile in progress).

import { GrammarError } from "../errors.js";
import type { Node, PatternNode } from "../lark-syntax.js";
import { nestingTooDeep } from "../limits.js";
import { pyReEscape } from "../../regex/index.js";
import { parsePyRegex, PyRegexNestingError } from "../pyregex.js";
import { regexWidth } from "../pyregex-width.js";
import { activeMaxNesting, widthCache } from "./compile-context.js";

export const patternStr = (value: string, flags: string, raw?: string): PatternNode => ({
  kind: "pattern",
  type: "str",
  value,
  flags: sortFlags(flags),
  raw,
});
export const patternRe = (value: string, flags: string, raw?: string): PatternNode => ({
  kind: "pattern",
  type: "re",
  value,
  flags: sortFlags(flags),
  raw,
});
const sortFlags = (f: string): string => (f.length < 2 ? f : [...new Set(f)].sort().join(""));

/** The characters patternToRegexp adds per flag, `(?f:` and `)` (PatternShape counts them). */
export const FLAG_WRAPPER_CHARS = 5;

/** Pattern.to_regexp: a string's text escaped as Python's re.escape does, each flag a wrapper. */
export function patternToRegexp(p: PatternNode): string {
  let v = p.type === "str" ? pyReEscape(p.value) : p.value;
  for (const f of p.flags) v = `(?${f}:${v})`;
  return v;
}

/** Length in code points, as Python's len() counts a str. */
export const cpLength = (s: string): number => [...s].length;

/** [min_width, max_width]. `where`: what the pattern is (a terminal), for a nesting error. */
export function patternWidth(p: PatternNode, where?: string): [number, number] {
  if (p.type === "str") return [cpLength(p.value), cpLength(p.value)];
  const re = patternToRegexp(p);
  let w = widthCache.get(re);
  if (!w) {
    try {
      w = regexWidth(parsePyRegex(re, activeMaxNesting()));
    } catch (e) {
      if (e instanceof PyRegexNestingError) throw nestingTooDeep(e.maxNesting, `${where ?? "a terminal"}: regexp groups`);
      throw new GrammarError(`Cannot compile regexp ${re}: ${(e as Error).message}`);
    }
    widthCache.set(re, w);
  }
  return w;
}

/** `n` as a pattern, or Lark's refusal of a terminal whose tree did not become one. */
export function asPattern(n: Node, name: string): PatternNode {
  if (n.kind === "pattern") return n;
  throw new GrammarError(`Invalid terminal definition (${name})`);
}
