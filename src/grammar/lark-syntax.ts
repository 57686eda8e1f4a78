// Parser for Lark's grammar language. Lark parses grammar text with an LALR parser over a fixed
// meta-grammar (lark/load_grammar.py: TERMINALS, RULES); we do the same with our own LALR
// builder, so the parse tree (and which texts are malformed) is Lark's.

import { buildLalrTable, GrammarError, type BnfRule, type LalrTable } from "./lalr.js";
import { END_TERMINAL } from "./lark/grammar-analysis.js";
import { nestingTooDeep, type CompileClock } from "./limits.js";
import { parsePyRegex } from "./pyregex.js";
import { toJsRegExp } from "./pyregex-js.js";

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

// Sorted exactly as Lark's meta-lexer sorts them (priority, max width, pattern length, name);
// the first one that matches at a position wins.
const META_TERMINALS: [string, string][] = [
  ["REGEXP", "/(?!/)(\\\\/|\\\\\\\\|[^/])*?/[imslux]*"],
  ["STRING", '"(\\\\"|\\\\\\\\|[^"\\n])*?"i?'],
  ["RULE", "_?[a-z][_a-z0-9]*"],
  ["TERMINAL", "_?[A-Z][_A-Z0-9]*"],
  ["_NL_OR", "(\\r?\\n)+\\s*\\|"],
  ["COMMENT", "\\s*//[^\\n]*"],
  ["_NL", "(\\r?\\n)+\\s*"],
  ["BACKSLASH", "\\\\[ ]*\\n"],
  ["NUMBER", "[+-]?\\d+"],
  ["WS", "[ \\t]+"],
  ["_OVERRIDE", "%override"],
  ["_DECLARE", "%declare"],
  ["_EXTEND", "%extend"],
  ["_IGNORE", "%ignore"],
  ["_IMPORT", "%import"],
  ["RULE_MODIFIERS", "(!|![?]?|[?]!?)(?=[_a-z])"],
  ["_DOTDOT", "\\.\\."],
  ["_TO", "->"],
  ["OP", "[+*]|[?](?![a-z])"],
  ["_DOT", "\\.(?!\\.)"],
  ["_LBRA", "\\["],
  ["_LBRACE", "\\{"],
  ["_LPAR", "\\("],
  ["_OR", "\\|"],
  ["_RBRA", "\\]"],
  ["_RBRACE", "\\}"],
  ["_RPAR", "\\)"],
  ["TILDE", "~"],
  ["_COLON", ":"],
  ["_COMMA", ","],
];
const META_IGNORE = new Set(["WS", "COMMENT", "BACKSLASH"]);
/**
 * Characters that only one meta terminal can start with and match alone (punctuation): the
 * lexer takes them, and names, without running the combined regexp, most of a grammar's tokens.
 */
const SINGLE_CHAR_TERMINAL = new Int8Array(128).fill(-1);
for (const [ch, name] of [["(", "_LPAR"], [")", "_RPAR"], ["[", "_LBRA"], ["]", "_RBRA"], ["{", "_LBRACE"], ["}", "_RBRACE"], ["|", "_OR"], ["~", "TILDE"], [":", "_COLON"], [",", "_COMMA"], ["*", "OP"]] as const)
  SINGLE_CHAR_TERMINAL[ch.charCodeAt(0)] = META_TERMINALS.findIndex(([n]) => n === name);
const RULE_TERMINAL = META_TERMINALS.findIndex(([n]) => n === "RULE");
const TERMINAL_TERMINAL = META_TERMINALS.findIndex(([n]) => n === "TERMINAL");
const STRING_TERMINAL = META_TERMINALS.findIndex(([n]) => n === "STRING");
const NL_TERMINAL = META_TERMINALS.findIndex(([n]) => n === "_NL");
const WS_TERMINAL = META_TERMINALS.findIndex(([n]) => n === "WS");

/** ASCII characters in Python's `\s` (the meta lexer's patterns are Python str patterns). */
const isAsciiSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * The meta terminal and its length at `pos` for the commonest tokens after names and
 * punctuation — a string literal without escapes, spaces, line breaks — when the combined
 * regexp would surely give the same: -1 when it must decide. The terminals are tried in order,
 * the first that matches wins: a run of white space is a COMMENT when `//` follows it, a line
 * break is _NL_OR when `|` follows its white space, and `\s` also takes characters past ASCII.
 */
function fastMetaToken(text: string, pos: number, out: { length: number }): number {
  const c = text.charCodeAt(pos);
  if (c === 0x22 /* " */) {
    // STRING `"(\\"|\\\\|[^"\n])*?"i?`: lazily, the first quote closes it when no backslash comes first.
    for (let j = pos + 1; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === 0x22) {
        out.length = j + 1 - pos + (text.charCodeAt(j + 1) === 0x69 /* i */ ? 1 : 0);
        return STRING_TERMINAL;
      }
      if (d === 0x5c || d === 0x0a) return -1;
    }
    return -1;
  }
  if (!isAsciiSpace(c)) return -1;
  let end = pos;
  while (end < text.length && isAsciiSpace(text.charCodeAt(end))) end++;
  const after = end < text.length ? text.charCodeAt(end) : -1;
  if (after === 0x2f /* / */ || after === 0x7c /* | */ || after >= 0x80 || (after >= 0x1c && after <= 0x1f)) return -1;
  if (c === 0x20 || c === 0x09) {
    let ws = pos;
    while (ws < text.length && (text.charCodeAt(ws) === 0x20 || text.charCodeAt(ws) === 0x09)) ws++;
    out.length = ws - pos;
    return WS_TERMINAL;
  }
  // _NL `(\r?\n)+\s*` takes the whole run, once it begins with a line break.
  if (c === 0x0a || (c === 0x0d && text.charCodeAt(pos + 1) === 0x0a)) {
    out.length = end - pos;
    return NL_TERMINAL;
  }
  return -1;
}
const fastLength = { length: 0 };

const META_RULES: Record<string, string[]> = {
  start: ["_list"],
  _list: ["_item", "_list _item"],
  _item: ["rule", "term", "ignore", "import", "declare", "override", "extend", "_NL"],
  rule: ["rule_modifiers RULE template_params priority _COLON expansions _NL"],
  rule_modifiers: ["RULE_MODIFIERS", ""],
  priority: ["_DOT NUMBER", ""],
  template_params: ["_LBRACE _template_params _RBRACE", ""],
  _template_params: ["RULE", "_template_params _COMMA RULE"],
  expansions: ["_expansions"],
  _expansions: ["alias", "_expansions _OR alias", "_expansions _NL_OR alias"],
  "?alias": ["expansion _TO nonterminal", "expansion"],
  expansion: ["_expansion"],
  _expansion: ["", "_expansion expr"],
  "?expr": ["atom", "atom OP", "atom TILDE NUMBER", "atom TILDE NUMBER _DOTDOT NUMBER"],
  "?atom": ["_LPAR expansions _RPAR", "maybe", "value"],
  value: ["terminal", "nonterminal", "literal", "range", "template_usage"],
  terminal: ["TERMINAL"],
  nonterminal: ["RULE"],
  "?name": ["RULE", "TERMINAL"],
  "?symbol": ["terminal", "nonterminal"],
  maybe: ["_LBRA expansions _RBRA"],
  range: ["STRING _DOTDOT STRING"],
  template_usage: ["nonterminal _LBRACE _template_args _RBRACE"],
  _template_args: ["value", "_template_args _COMMA value"],
  term: ["TERMINAL _COLON expansions _NL", "TERMINAL _DOT NUMBER _COLON expansions _NL"],
  override: ["_OVERRIDE rule", "_OVERRIDE term"],
  extend: ["_EXTEND rule", "_EXTEND term"],
  ignore: ["_IGNORE expansions _NL"],
  declare: ["_DECLARE _declare_args _NL"],
  import: ["_IMPORT _import_path _NL", "_IMPORT _import_path _LPAR name_list _RPAR _NL", "_IMPORT _import_path _TO name _NL"],
  _import_path: ["import_lib", "import_rel"],
  import_lib: ["_import_args"],
  import_rel: ["_DOT _import_args"],
  _import_args: ["name", "_import_args _DOT name"],
  name_list: ["_name_list"],
  _name_list: ["name", "_name_list _COMMA name"],
  _declare_args: ["symbol", "_declare_args symbol"],
  literal: ["REGEXP", "STRING"],
};

interface MetaParser {
  table: LalrTable;
  expand1: Set<string>;
  /**
   * All meta terminals as one sticky alternation in their order, each wrapped in a group
   * (`groupOf[i]`): the first alternative that matches wins, as when they are tried one by one,
   * but one exec per token instead of up to thirty.
   */
  lexer: RegExp;
  groupOf: Int32Array;
}
let metaParser: MetaParser | null = null;

function getMetaParser(): MetaParser {
  if (metaParser) return metaParser;
  const rules: BnfRule[] = [];
  const expand1 = new Set<string>();
  for (const [rawName, alts] of Object.entries(META_RULES)) {
    const name = rawName.replace(/^\?/, "");
    if (rawName.startsWith("?")) expand1.add(name);
    alts.forEach((alt, order) => rules.push({ origin: name, expansion: alt.split(" ").filter(Boolean), priority: null, order }));
  }
  const table = buildLalrTable(rules, META_TERMINALS.map(([n]) => n), "start");
  const regexps = META_TERMINALS.map(([, p]) => toJsRegExp(parsePyRegex(p)));
  const groupOf = new Int32Array(regexps.length);
  let group = 1;
  for (let i = 0; i < regexps.length; i++) {
    groupOf[i] = group;
    group += new RegExp(`${regexps[i]!.source}|`, "u").exec("")!.length; // its own groups and the wrapper
  }
  const lexer = new RegExp(regexps.map((r) => `(${r.source})`).join("|"), "uy");
  metaParser = { table, expand1, lexer, groupOf };
  return metaParser;
}

function lineCol(text: string, pos: number): { line: number; column: number } {
  let line = 1, lineStart = 0;
  for (let i = 0; i < pos; i++) if (text.charCodeAt(i) === 10) { line++; lineStart = i + 1; }
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
      throw new GrammarError(`Unexpected input at line ${f.line} column ${f.column} in <string>: ${contextAt(source, f.pos)}`, f.line, f.column);
    const label = matchExamples(f) ?? (f.expected.includes("STRING") ? "Expecting a value" : null);
    if (label) throw new GrammarError(`${label}, at line ${f.line} column ${f.column}${contextAt(source, f.pos)}`, f.line, f.column);
    throw new GrammarError(
      `Unexpected token ${JSON.stringify(f.tokenValue)} (${f.tokenType}) at line ${f.line}, column ${f.column}. Expected one of: ${f.expected.join(", ")}${contextAt(source, f.pos)}`,
      f.line, f.column,
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
  let depth = 0, deepest = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x5c /* \ */) { i++; continue; }
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
  let line = tok.line, column = tok.column;
  for (let i = 0; i < at; i++) {
    if (tok.value.charCodeAt(i) === 10) { line++; column = 1; } else column++;
  }
  return { line, column };
}

function metaParse(text: string, maxNesting = Infinity, clock?: CompileClock): Tree {
  const { table, expand1, lexer, groupOf } = getMetaParser();
  const TT = table.terminals.length;
  const NT = table.nonterminals.length;
  // The parse stack: states[0..top], and values[i] the nodes under states[i + 1]. Entries past
  // `top` are stale (indexing, not shrinking the arrays: setting a length is a slow builtin).
  const states: number[] = [table.startState];
  const values: Node[][] = [];
  let top = 0;
  let pos = 0;
  const reduceRule = (r: number): void => {
    const origin = table.rules[r]!.origin;
    const n = table.ruleLen[r]!;
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
    else if (children.length === 1 && expand1.has(origin)) result = children;
    else result = [tree(origin, children)];
    const g = table.goto[states[top]! * NT + table.ruleLhs[r]!]!;
    states[++top] = g;
    values[top - 1] = result;
  };
  const failure = (kind: "token" | "chars", tokenType: string, tokenValue: string, at: number): MetaSyntaxFailure => {
    const { line, column } = lineCol(text, at);
    const st = states[top]!;
    const expected: string[] = [];
    for (let t = 0; t < TT; t++) if (table.action[st * TT + t] !== 0) expected.push(table.terminals[t]!);
    return new MetaSyntaxFailure({ kind, stackLength: top + 1, state: st, tokenType, tokenValue, pos: at, line, column, expected });
  };
  const feed = (t: number, tok: Token | null): boolean => {
    for (;;) {
      const a = table.action[states[top]! * TT + t]!;
      if (a > 0) {
        states[++top] = a - 1;
        values[top - 1] = tok && tok.type.charCodeAt(0) !== 95 /* _ */ ? [tok] : [];
        return true;
      }
      if (a === 0) return false;
      reduceRule(-a - 1);
      if (t === 0 && states[top] === table.endState) return true;
    }
  };
  let lastTokenPos = 0;
  // Line and column of `pos`, counted forward as the tokens go (lineCol from 0 would be quadratic).
  let line = 1, lineStart = 0, counted = 0;
  let brackets = 0;
  while (pos < text.length) {
    let matched = -1;
    let value = "";
    const c = text.charCodeAt(pos);
    const single = c < 128 ? SINGLE_CHAR_TERMINAL[c]! : -1;
    if (single >= 0) {
      matched = single;
      value = text[pos]!;
    } else if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a)) {
      // RULE or TERMINAL (no terminal before them in the order can start with a letter).
      const lower = c >= 0x61;
      let end = pos + 1;
      for (; end < text.length; end++) {
        const d = text.charCodeAt(end);
        if (!(d === 0x5f || (d >= 0x30 && d <= 0x39) || (lower ? d >= 0x61 && d <= 0x7a : d >= 0x41 && d <= 0x5a))) break;
      }
      matched = lower ? RULE_TERMINAL : TERMINAL_TERMINAL;
      value = text.slice(pos, end);
    } else if ((matched = fastMetaToken(text, pos, fastLength)) >= 0) {
      value = text.slice(pos, pos + fastLength.length);
    } else {
      lexer.lastIndex = pos;
      const m = lexer.exec(text);
      if (m !== null) {
        for (let i = 0; i < groupOf.length; i++) {
          if (m[groupOf[i]!] !== undefined) { matched = i; value = m[0]; break; }
        }
      }
    }
    if (matched < 0 || value === "") throw failure("chars", "", text[pos] ?? "", pos);
    clock?.spend(1);
    const type = META_TERMINALS[matched]![0];
    if (!META_IGNORE.has(type)) {
      for (; counted < pos; counted++) if (text.charCodeAt(counted) === 10) { line++; lineStart = counted + 1; }
      const tok: Token = { kind: "token", type, value, line, column: pos - lineStart + 1 };
      if (type === "_LPAR" || type === "_LBRA" || type === "_LBRACE") {
        if (++brackets > maxNesting) throw nestingTooDeep(maxNesting, "grammar: brackets", tok.line, tok.column);
      } else if (type === "_RPAR" || type === "_RBRA" || type === "_RBRACE") brackets--;
      else if (type === "REGEXP" && maxNesting !== Infinity) {
        const flags = value.slice(value.lastIndexOf("/") + 1);
        const at = regexpGroupDepth(value.slice(1, value.lastIndexOf("/")), flags.includes("x") || /^\/\(\?[aiLmsu]*x/.test(value), maxNesting);
        if (at < 0) {
          const where = positionIn(tok, -at);
          throw nestingTooDeep(maxNesting, "regexp: groups", where.line, where.column);
        }
      }
      if (!feed(table.terminalIndex.get(type)!, tok)) throw failure("token", type, value, pos);
      lastTokenPos = pos;
    }
    pos += value.length;
  }
  if (!feed(0, null)) throw failure("token", END_TERMINAL, "", lastTokenPos);
  return values[top - 1]![0] as Tree;
}
