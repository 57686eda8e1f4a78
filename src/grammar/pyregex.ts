// Python `re` patterns as the Lark front-end reads them: the regex stage's one reader
// (regex/syntax.ts) in its exact-Python mode, with its errors as PyRegexError (what the Lark
// messages quote). The tree serves three purposes inside the grammar stage, each in a file of its
// own:
//   - `toJsRegExp` (pyregex-js.ts): a JS RegExp (sticky, unicode) with the same backtracking
//     preferences as Python's `re`, so the lexer picks exactly the match Lark's combined
//     alternation picks;
//   - `regexWidth` (pyregex-width.ts): sre_parse's getwidth() (Lark sorts terminals by it and
//     refuses zero-width ones);
//   - `sampleRegex` (pyregex-sample.ts): random strings for the corpus sentence sampler.
// Scoped flags (`(?i:...)`, which Lark emits for `"..."i` and /.../i) are already folded into the
// tree (each node carries its own) because Node 20's RegExp has no inline modifiers.

import { readRegexSyntax, RegexSyntaxError, RegexTooComplexError, type ParsedRegex } from "../regex/index.js";

export type { ClassEscape, ParsedRegex, RegexSyntaxNode, SetNode } from "../regex/index.js";

export class PyRegexError extends Error {
  constructor(
    message: string,
    readonly pattern: string,
    readonly position: number,
  ) {
    super(`${message} at position ${position} in /${pattern}/`);
    this.name = "PyRegexError";
  }
}

/** Groups nested deeper than the parser's limit (its passes recurse once or more per group). */
export class PyRegexNestingError extends PyRegexError {
  constructor(
    readonly maxNesting: number,
    pattern: string,
    position: number,
  ) {
    super(`groups nested deeper than ${maxNesting}`, pattern, position);
    this.name = "PyRegexNestingError";
  }
}

/**
 * Reads a Lark terminal's pattern exactly as Python 3.11 does. `maxNesting`: the deepest group
 * nesting accepted (PyRegexNestingError beyond): every pass over the tree recurses per group.
 * Positions count code points, as Python's re.error.pos.
 */
export function parsePyRegex(pattern: string, maxNesting = Infinity): ParsedRegex {
  try {
    return readRegexSyntax(pattern, { python: true, maxNesting });
  } catch (e) {
    if (e instanceof RegexTooComplexError && e.limit === "nesting") throw new PyRegexNestingError(maxNesting, pattern, 0);
    if (e instanceof RegexSyntaxError) throw new PyRegexError(e.message.replace(/ at position \d+$/, ""), pattern, e.position);
    throw e;
  }
}
