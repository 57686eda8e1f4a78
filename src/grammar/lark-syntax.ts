// Parser for Lark's grammar language. Lark parses grammar text with an LALR parser over a fixed
// meta-grammar (lark/load_grammar.py: TERMINALS, RULES; here lark/meta-grammar.ts); we do the
// same with our own LALR builder, so the parse tree (and which texts are malformed) is Lark's.
// Here: the parse tree's node types, the parse (_parse_grammar, load_grammar.py 959–974), and
// its failures labelled as Lark labels them (GRAMMAR_ERRORS 936–950).

import { GrammarError, type LalrTable } from "./lalr.js";
import { END_TERMINAL } from "./lark/grammar-analysis.js";
import { getMetaParser, lexMetaToken, META_IGNORE, META_TERMINALS } from "./lark/meta-grammar.js";
import { nestingTooDeep, type CompileClock } from "./limits.js";

export interface Token {
  readonly kind: "token";
  readonly type: string;
  readonly value: string;
  readonly line: number;
  readonly column: number;
}
export interface Tree {
  readonly kind: "tree";
  data: string;
  children: Node[];
  /** The last traversal that reached this tree (see iterSubtrees): a stamp instead of a Set. */
  visited: number;
}
export type Node = Tree | Token | Sym | PatternNode | EmptyMarker;

/** A grammar symbol reference (Lark's Terminal / NonTerminal). */
export interface Sym {
  readonly kind: "sym";
  readonly isTerm: boolean;
  readonly name: string;
  filterOut?: boolean;
}
/** A compiled literal (Lark's PatternStr / PatternRE). */
export interface PatternNode {
  readonly kind: "pattern";
  readonly type: "str" | "re";
  readonly value: string;
  readonly flags: string; // sorted flag letters
  readonly raw?: string;
}
/** Lark's `_EMPTY`: a placeholder for `[x]` that vanishes from the final rule. */
export interface EmptyMarker {
  readonly kind: "empty";
}

export const tree = (data: string, children: Node[]): Tree => ({ kind: "tree", data, children, visited: 0 });

function lineCol(text: string, pos: number): { line: number; column: number } {
  let line = 1,
    lineStart = 0;
  for (let i = 0; i < pos; i++)
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  return { line, column: pos - lineStart + 1 };
}

function contextAt(text: string, pos: number): string {
  const start = text.lastIndexOf("\n", pos - 1) + 1;
  let end = text.indexOf("\n", pos);
  if (end < 0) end = text.length;
  return `\n\n${text.slice(start, end)}\n${" ".repeat(Math.max(0, pos - start))}^`;
}

interface MetaFailure {
  kind: "token" | "chars";
  stackLength: number;
  state: number;
  tokenType: string;
  tokenValue: string;
  pos: number;
  line: number;
  column: number;
  expected: string[];
}

class MetaSyntaxFailure extends Error {
  constructor(readonly failure: MetaFailure) {
    super("grammar syntax error");
  }
}

/** Lark's GRAMMAR_ERRORS: example texts whose parse failure labels a user's failure. */
const GRAMMAR_ERRORS: [string, string[]][] = [
  ["Incorrect type of value", ["a: 1\n"]],
  ["Unclosed parenthesis", ["a: (\n"]],
  ["Unmatched closing parenthesis", ["a: )\n", "a: [)\n", "a: (]\n"]],
  ["Expecting rule or terminal definition (missing colon)", ["a\n", "A\n", "a->\n", "A->\n", "a A\n"]],
  ["Illegal name for rules or terminals", ["Aa:\n"]],
  ["Alias expects lowercase name", ['a: -> "a"\n']],
  ["Unexpected colon", ["a::\n", "a: b:\n", "a: B:\n", 'a: "a":\n']],
  ["Misplaced operator", ["a: b??", "a: b(?)", "a:+\n", "a:?\n", "a:*\n", "a:|*\n"]],
  ['Expecting option ("|") or a new rule or terminal definition', ["a:a\n()\n"]],
  ["Terminal names cannot contain dots", ["A.B\n"]],
  ["Expecting rule or terminal definition", ['"a"\n']],
  ["%import expects a name", ['%import "a"\n']],
  ["%ignore expects a value", ["%ignore %import\n"]],
];

/**
 * Parses grammar text into Lark's grammar parse tree (after its tree-shaping rules). Brackets
 * (`()`, `[]`, `{}`) nested deeper than `maxNesting`, or groups nested deeper in a regexp
 * literal, are refused as the lexer meets them, with their line and column: the compile's passes
 * over the tree and over regexps recurse per level.
 */
export function parseLarkSyntax(source: string, maxNesting = Infinity, clock?: CompileClock): Tree {
  try {
    return metaParse(source + "\n", maxNesting, clock);
  } catch (e) {
    if (!(e instanceof MetaSyntaxFailure)) throw e;
    const f = e.failure;
    if (f.kind === "chars")
      throw new GrammarError(
        `Unexpected input at line ${f.line} column ${f.column} in <string>: ${contextAt(source, f.pos)}`,
        f.line,
        f.column,
      );
    const label = matchExamples(f) ?? (f.expected.includes("STRING") ? "Expecting a value" : null);
    if (label) throw new GrammarError(`${label}, at line ${f.line} column ${f.column}${contextAt(source, f.pos)}`, f.line, f.column);
    throw new GrammarError(
      `Unexpected token ${JSON.stringify(f.tokenValue)} (${f.tokenType}) at line ${f.line}, column ${f.column}. Expected one of: ${f.expected.join(", ")}${contextAt(source, f.pos)}`,
      f.line,
      f.column,
    );
  }
}

function matchExamples(f: MetaFailure): string | null {
  let candidate: string | null = null;
  for (const [label, examples] of GRAMMAR_ERRORS) {
    for (const text of examples) {
      try {
        metaParse(text);
      } catch (e) {
        if (!(e instanceof MetaSyntaxFailure)) continue;
        const u = e.failure;
        if (u.stackLength !== f.stackLength || u.state !== f.state) continue;
        if (u.kind === "token" && f.kind === "token" && u.tokenValue === f.tokenValue && u.tokenType === f.tokenType) return label;
        if (candidate === null) candidate = label;
      }
    }
  }
  return candidate;
}

/**
 * How deep the groups of a Python regexp nest, by a scan of its text: `\` escapes a character,
 * a class `[…]` holds no groups (`]` first in it, or after `^`, is a member), `(?#…)` is a
 * comment to the next `)`, and with the x flag a `#` comments to the end of the line. With
 * `stopAbove`, returns -1 - i for the index i of the first `(` deeper than it.
 */
export function regexpGroupDepth(src: string, verbose: boolean, stopAbove = Infinity): number {
  let depth = 0,
    deepest = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x5c /* \ */) {
      i++;
      continue;
    }
    if (c === 0x5b /* [ */) {
      let j = i + 1;
      if (src.charCodeAt(j) === 0x5e /* ^ */) j++;
      if (src.charCodeAt(j) === 0x5d /* ] */) j++;
      for (; j < src.length && src.charCodeAt(j) !== 0x5d; j++) if (src.charCodeAt(j) === 0x5c) j++;
      i = j;
      continue;
    }
    if (verbose && c === 0x23 /* # */) {
      while (i + 1 < src.length && src.charCodeAt(i + 1) !== 0x0a) i++;
      continue;
    }
    if (c === 0x28 /* ( */) {
      if (src.startsWith("(?#", i)) {
        const end = src.indexOf(")", i);
        if (end < 0) break;
        i = end;
        continue;
      }
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return -1 - i;
      }
    } else if (c === 0x29 /* ) */ && depth > 0) depth--;
  }
  return deepest;
}

/** Line and column (1-based) of offset `at` of a token's text, from the token's own. */
function positionIn(tok: Token, at: number): { line: number; column: number } {
  let line = tok.line,
    column = tok.column;
  for (let i = 0; i < at; i++) {
    if (tok.value.charCodeAt(i) === 10) {
      line++;
      column = 1;
    } else column++;
  }
  return { line, column };
}

/**
 * One run of the meta-grammar's LALR parser over `text`, building the tree as Lark's tree builder
 * does (`_rule`s and `_TOKEN`s inlined, `?rule`s with one child replaced by it).
 */
class MetaParse {
  // The parse stack: states[0..top], and values[i] the nodes under states[i + 1]. Entries past
  // `top` are stale (indexing, not shrinking the arrays: setting a length is a slow builtin).
  private readonly states: number[];
  private readonly values: Node[][] = [];
  private top = 0;

  constructor(
    private readonly text: string,
    private readonly table: LalrTable,
    private readonly expand1: ReadonlySet<string>,
  ) {
    this.states = [table.startState];
  }

  /** Feeds terminal `t` (its token, null for $END): false if the parser refuses it. */
  feed(t: number, tok: Token | null): boolean {
    const table = this.table,
      states = this.states;
    const TT = table.terminals.length;
    for (;;) {
      const a = table.action[states[this.top]! * TT + t]!;
      if (a > 0) {
        states[++this.top] = a - 1;
        this.values[this.top - 1] = tok && tok.type.charCodeAt(0) !== 95 /* _ */ ? [tok] : [];
        return true;
      }
      if (a === 0) return false;
      this.reduceRule(-a - 1);
      if (t === 0 && states[this.top] === table.endState) return true;
    }
  }

  private reduceRule(r: number): void {
    const table = this.table,
      values = this.values;
    const NT = table.nonterminals.length;
    const origin = table.rules[r]!.origin;
    const n = table.ruleLen[r]!;
    let top = this.top;
    // The first child's list is extended in place (every slot's list is its own and is consumed
    // here): left-recursive `_list: _list _item` otherwise copies the list so far at each item,
    // quadratic in the statements of a grammar (seconds for 20,000 rules).
    const children: Node[] = n > 0 ? values[top - n]! : [];
    for (let i = top - n + 1; i < top; i++) {
      const kid = values[i]!;
      for (let j = 0; j < kid.length; j++) children.push(kid[j]!);
    }
    top -= n;
    // A kept token or tree is a one-element list; `_rule`s and filtered tokens hand up their lists.
    let result: Node[];
    if (origin.charCodeAt(0) === 95 /* _ */) result = children;
    else if (children.length === 1 && this.expand1.has(origin)) result = children;
    else result = [tree(origin, children)];
    const g = table.goto[this.states[top]! * NT + table.ruleLhs[r]!]!;
    this.states[++top] = g;
    values[top - 1] = result;
    this.top = top;
  }

  /** The failure at offset `at`, with the parser's state and what it would have accepted there. */
  failure(kind: "token" | "chars", tokenType: string, tokenValue: string, at: number): MetaSyntaxFailure {
    const table = this.table;
    const TT = table.terminals.length;
    const { line, column } = lineCol(this.text, at);
    const st = this.states[this.top]!;
    const expected: string[] = [];
    for (let t = 0; t < TT; t++) if (table.action[st * TT + t] !== 0) expected.push(table.terminals[t]!);
    return new MetaSyntaxFailure({ kind, stackLength: this.top + 1, state: st, tokenType, tokenValue, pos: at, line, column, expected });
  }

  /** The tree, once $END was accepted. */
  result(): Tree {
    return this.values[this.top - 1]![0] as Tree;
  }
}

/** The meta-lexer's out-parameter (one per thread: parses do not nest). */
const lexed = { value: "" };

/**
 * Grammar text → Lark's grammar parse tree: the meta-lexer's tokens (ignored ones dropped) fed to
 * the meta parser. Nesting deeper than `maxNesting` (brackets, or groups in a regexp literal) is
 * refused as the lexer meets it.
 */
function metaParse(text: string, maxNesting = Infinity, clock?: CompileClock): Tree {
  const { table, expand1, lexer, groupOf } = getMetaParser();
  const parse = new MetaParse(text, table, expand1);
  let pos = 0;
  let lastTokenPos = 0;
  // Line and column of `pos`, counted forward as the tokens go (lineCol from 0 would be quadratic).
  let line = 1,
    lineStart = 0,
    counted = 0;
  let brackets = 0;
  while (pos < text.length) {
    const matched = lexMetaToken(text, pos, lexer, groupOf, lexed);
    const value = lexed.value;
    if (matched < 0 || value === "") throw parse.failure("chars", "", text[pos] ?? "", pos);
    clock?.spend(1);
    const type = META_TERMINALS[matched]![0];
    if (!META_IGNORE.has(type)) {
      for (; counted < pos; counted++)
        if (text.charCodeAt(counted) === 10) {
          line++;
          lineStart = counted + 1;
        }
      const tok: Token = { kind: "token", type, value, line, column: pos - lineStart + 1 };
      if (type === "_LPAR" || type === "_LBRA" || type === "_LBRACE") {
        if (++brackets > maxNesting) throw nestingTooDeep(maxNesting, "brackets", tok.line, tok.column);
      } else if (type === "_RPAR" || type === "_RBRA" || type === "_RBRACE") brackets--;
      else if (type === "REGEXP" && maxNesting !== Infinity) {
        const flags = value.slice(value.lastIndexOf("/") + 1);
        const at = regexpGroupDepth(
          value.slice(1, value.lastIndexOf("/")),
          flags.includes("x") || /^\/\(\?[aiLmsu]*x/.test(value),
          maxNesting,
        );
        if (at < 0) {
          const where = positionIn(tok, -at);
          throw nestingTooDeep(maxNesting, "regexp groups", where.line, where.column);
        }
      }
      if (!parse.feed(table.terminalIndex.get(type)!, tok)) throw parse.failure("token", type, value, pos);
      lastTokenPos = pos;
    }
    pos += value.length;
  }
  if (!parse.feed(0, null)) throw parse.failure("token", END_TERMINAL, "", lastTokenPos);
  return parse.result();
}
