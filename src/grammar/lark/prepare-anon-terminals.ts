// Lark's PrepareAnonTerminals (load_grammar.py 439–491): each literal in a rule becomes a terminal
// symbol, the named terminal with the same pattern if there is one, else a new anonymous terminal
// named as Lark names it (_TERMINAL_NAMES 35–72, the literal itself upper-cased, or __ANON_<i>).
// Ours also counts the new terminals' pattern characters against maxTotalPatternChars.

import type { TerminalDef } from "./definitions.js";
import type { PatternNode, Sym } from "../lark-syntax.js";
import { tooComplex, type GrammarLimits } from "../limits.js";
import { patternToRegexp } from "./patterns.js";
import { keyOf } from "./tree.js";

const TERMINAL_NAMES: Record<string, string> = {
  ".": "DOT",
  ",": "COMMA",
  ":": "COLON",
  ";": "SEMICOLON",
  "+": "PLUS",
  "-": "MINUS",
  "*": "STAR",
  "/": "SLASH",
  "\\": "BACKSLASH",
  "|": "VBAR",
  "?": "QMARK",
  "!": "BANG",
  "@": "AT",
  "#": "HASH",
  $: "DOLLAR",
  "%": "PERCENT",
  "^": "CIRCUMFLEX",
  "&": "AMPERSAND",
  _: "UNDERSCORE",
  "<": "LESSTHAN",
  ">": "MORETHAN",
  "=": "EQUAL",
  '"': "DBLQUOTE",
  "'": "QUOTE",
  "`": "BACKQUOTE",
  "~": "TILDE",
  "(": "LPAR",
  ")": "RPAR",
  "{": "LBRACE",
  "}": "RBRACE",
  "[": "LSQB",
  "]": "RSQB",
  "\n": "NEWLINE",
  "\r\n": "CRLF",
  "\t": "TAB",
  " ": "SPACE",
};
const ID_START = /^[\p{L}\p{Mn}\p{Mc}\p{Pc}]$/u;
const ID_CONTINUE = /^[\p{L}\p{Mn}\p{Mc}\p{Pc}\p{Nd}\p{Nl}]+$/u;

/**
 * Python's str.isidentifier as Lark uses it to name a literal's terminal; ASCII by hand (the
 * Unicode property regexps are costly to run in a cold process, and literals are mostly ASCII).
 */
function isIdentifier(v: string): boolean {
  let ascii = true;
  for (let i = 0; i < v.length && ascii; i++) {
    const c = v.charCodeAt(i);
    if (c >= 0x80) ascii = false;
    else if (!(c === 0x5f || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (i > 0 && c >= 0x30 && c <= 0x39))) return false;
  }
  return ascii || (ID_CONTINUE.test(v) && ID_START.test([...v][0]!));
}

export class PrepareAnonTerminals {
  private readonly termSet: Set<string>;
  /** Pattern (keyOf) → the terminal that has it. */
  private readonly termReverse = new Map<string, TerminalDef>();
  /** The next __ANON_ number. */
  private i = 0;
  /** The rule being transformed keeps all its tokens (Lark's rule_options.keep_all_tokens). */
  keepAllTokens = false;

  /**
   * `terminals`: the compiled terminals, which the new ones are appended to; `totalPatternChars`:
   * the characters their patterns hold so far.
   */
  constructor(
    readonly terminals: TerminalDef[],
    private totalPatternChars: number,
    private readonly limits: GrammarLimits,
  ) {
    this.termSet = new Set(terminals.map((t) => t.name));
    for (const td of terminals) this.termReverse.set(keyOf(td.pattern), td);
  }

  /** The names of every terminal, named and anonymous. */
  get names(): ReadonlySet<string> {
    return this.termSet;
  }

  /** PrepareAnonTerminals.pattern: the terminal symbol for a literal's pattern. */
  pattern(p: PatternNode): Sym {
    let termName: string | null = null;
    const known = this.termReverse.get(keyOf(p));
    if (p.type === "str") {
      if (known) termName = known.name;
      else {
        termName = TERMINAL_NAMES[p.value] ?? null;
        if (termName === null && p.value && isIdentifier(p.value) && !this.termSet.has(p.value.toUpperCase()))
          termName = p.value.toUpperCase();
        if (termName !== null && this.termSet.has(termName)) termName = null;
      }
    } else if (known) termName = known.name;
    if (termName === null) termName = `__ANON_${this.i++}`;
    if (!this.termSet.has(termName)) {
      this.termSet.add(termName);
      this.totalPatternChars += patternToRegexp(p).length;
      if (this.totalPatternChars > this.limits.maxTotalPatternChars)
        throw tooComplex(this.limits, "maxTotalPatternChars", this.totalPatternChars, "characters in the terminals' patterns");
      const td: TerminalDef = { name: termName, pattern: p, priority: 0 };
      this.termReverse.set(keyOf(p), td);
      this.terminals.push(td);
    }
    return { kind: "sym", isTerm: true, name: termName, filterOut: this.keepAllTokens ? false : p.type === "str" };
  }
}
