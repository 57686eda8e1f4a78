// Lark's meta-grammar, the grammar of grammar texts: its TERMINALS (load_grammar.py 75–106) in
// the order Lark's meta-lexer tries them, its RULES (108–185), and _get_parser (916–934): the
// LALR table our builder makes of them (lalr.ts), and the meta-lexer, one sticky alternation of
// the terminals with fast paths for the commonest tokens.

import { buildLalrTable, type BnfRule, type LalrTable } from "../lalr.js";
import { parsePyRegex } from "../pyregex.js";
import { toJsRegExp } from "../pyregex-js.js";

// Sorted exactly as Lark's meta-lexer sorts them (priority, max width, pattern length, name);
// the first one that matches at a position wins.
export const META_TERMINALS: [string, string][] = [
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
export const META_IGNORE = new Set(["WS", "COMMENT", "BACKSLASH"]);
/**
 * Characters that only one meta terminal can start with and match alone (punctuation): the
 * lexer takes them, and names, without running the combined regexp, most of a grammar's tokens.
 */
const SINGLE_CHAR_TERMINAL = new Int8Array(128).fill(-1);
for (const [ch, name] of [
  ["(", "_LPAR"],
  [")", "_RPAR"],
  ["[", "_LBRA"],
  ["]", "_RBRA"],
  ["{", "_LBRACE"],
  ["}", "_RBRACE"],
  ["|", "_OR"],
  ["~", "TILDE"],
  [":", "_COLON"],
  [",", "_COMMA"],
  ["*", "OP"],
] as const)
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

/**
 * The meta terminal at `pos` (its index in META_TERMINALS, -1 if none matches) and, in
 * `out.value`, its text: names and punctuation by hand, then the commonest tokens by
 * fastMetaToken, else the combined regexp, whose first matching alternative wins.
 */
export function lexMetaToken(text: string, pos: number, lexer: RegExp, groupOf: Int32Array, out: { value: string }): number {
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
        if (m[groupOf[i]!] !== undefined) {
          matched = i;
          value = m[0];
          break;
        }
      }
    }
  }
  out.value = value;
  return matched;
}

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

export interface MetaParser {
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

export function getMetaParser(): MetaParser {
  if (metaParser) return metaParser;
  const rules: BnfRule[] = [];
  const expand1 = new Set<string>();
  for (const [rawName, alts] of Object.entries(META_RULES)) {
    const name = rawName.replace(/^\?/, "");
    if (rawName.startsWith("?")) expand1.add(name);
    alts.forEach((alt, order) => rules.push({ origin: name, expansion: alt.split(" ").filter(Boolean), priority: null, order }));
  }
  const table = buildLalrTable(
    rules,
    META_TERMINALS.map(([n]) => n),
    "start",
  );
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
