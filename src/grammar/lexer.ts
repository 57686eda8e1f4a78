// Lark's contextual lexer (lark/lexer.py ContextualLexer + BasicLexer + Scanner), with Python-`re`
// match preferences: per parser state only the acceptable terminals (plus ignored ones) are tried,
// in Lark's order (-priority, -max_width, -len(pattern), name); the FIRST terminal whose regexp
// matches at the position wins, with that regexp's own preferred match (not the longest).
// String terminals that a same-priority regexp terminal matches exactly are handled like Lark's
// `_create_unless`: the regexp's token is retyped to the string terminal.

import { compileRegex, matchesString, RegexTooComplexError, syntaxChildren, type ByteDfa } from "../regex/index.js";
import { GrammarError } from "./lalr.js";
import type { TerminalDef } from "./compile.js";
import { activeMaxNesting } from "./lark/compile-context.js";
import { pyRepr } from "./lark/literals.js";
import { patternToRegexp, patternWidth } from "./lark/patterns.js";
import { nestingTooDeep, shortName, type CompileClock } from "./limits.js";
import { parsePyRegex, PyRegexNestingError, type ParsedRegex, type RegexSyntaxNode } from "./pyregex.js";
import { toJsRegExp } from "./pyregex-js.js";

export interface LexTerminal {
  readonly name: string;
  readonly def: TerminalDef;
  readonly parsed: ParsedRegex;
  readonly regex: RegExp;
  /** Same pattern with Python's `$` appended (Lark's match_whole scanner). */
  readonly wholeRegex: RegExp;
  readonly minWidth: number;
  readonly maxWidth: number;
  /** Index in the LALR table's terminal list, or -1 for ignore-only terminals. */
  readonly tableIndex: number;
  readonly ignored: boolean;
}

/** One BasicLexer: terminals in match order, plus the string terminals a regexp token may become. */
export interface Scanner {
  readonly order: readonly LexTerminal[];
  /**
   * Lark joins a scanner's terminals into one Python regexp `(?P<A>…)|(?P<B>…)`, which renumbers
   * groups: a backreference then points at an open or foreign group. Python refuses to compile
   * such a pattern (every parse through this scanner fails) or the terminal can never match.
   */
  readonly broken: boolean;
  readonly unless: ReadonlyMap<string, readonly LexTerminal[]>;
}

/** Code points in `s` (a sort key: counted without spreading the string). */
function cpLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * A terminal as the lexer uses it. Its JS regexps (for Lark's own verdict, `parses`, and the
 * unless check between a regexp and the strings it matches) are made on first use: the byte
 * automaton does not need them, and two RegExp compiles per terminal were about 5% of a small
 * grammar's compile.
 */
class LarkTerminal implements LexTerminal {
  private re: RegExp | null = null;
  private whole: RegExp | null = null;

  constructor(
    readonly name: string,
    readonly def: TerminalDef,
    readonly parsed: ParsedRegex,
    readonly minWidth: number,
    readonly maxWidth: number,
    readonly tableIndex: number,
    readonly ignored: boolean,
  ) {}

  get regex(): RegExp {
    return (this.re ??= this.compiled(() => toJsRegExp(this.parsed)));
  }

  get wholeRegex(): RegExp {
    return (this.whole ??= this.compiled(() => toJsRegExp(parsePyRegex(patternToRegexp(this.def.pattern) + "$"))));
  }

  private compiled(make: () => RegExp): RegExp {
    try {
      return make();
    } catch (e) {
      throw new GrammarError(`Cannot compile token ${this.name}: ${(e as Error).message}`);
    }
  }
}

/**
 * Gives terminals that crossed a thread as plain data (structured clone keeps their fields and
 * sharing but not their class) their class back, in place, so every reference stays valid.
 */
export function reviveLexTerminals(terms: Iterable<LexTerminal>): void {
  for (const t of terms) if (!(t instanceof LarkTerminal)) Object.setPrototypeOf(t, LarkTerminal.prototype);
}

export function buildLexTerminals(
  defs: readonly TerminalDef[],
  ignore: readonly string[],
  terminalIndex: ReadonlyMap<string, number>,
): LexTerminal[] {
  const out: LexTerminal[] = [];
  for (const def of defs) {
    const source = patternToRegexp(def.pattern);
    let parsed: ParsedRegex;
    try {
      parsed = parsePyRegex(source, activeMaxNesting());
    } catch (e) {
      if (e instanceof PyRegexNestingError) throw nestingTooDeep(e.maxNesting, `terminal '${shortName(def.name)}': regexp groups`);
      throw new GrammarError(`Cannot compile token ${def.name}: ${(e as Error).message}`);
    }
    const [minWidth, maxWidth] = patternWidth(def.pattern, `terminal '${shortName(def.name)}'`);
    if (minWidth === 0) throw new GrammarError(`Lexer does not allow zero-width terminals. (${def.name}: ${pyRepr(source)})`);
    out.push(new LarkTerminal(def.name, def, parsed, minWidth, maxWidth, terminalIndex.get(def.name) ?? -1, ignore.includes(def.name)));
  }
  const names = new Set(out.map((t) => t.name));
  const missing = ignore.filter((n) => !names.has(n));
  if (missing.length) throw new GrammarError(`Ignore terminals are not defined: ${missing.join(", ")}`);
  return out;
}

const sortKeyCompare = (a: LexTerminal, b: LexTerminal): number =>
  b.def.priority - a.def.priority ||
  b.maxWidth - a.maxWidth ||
  cpLength(b.def.pattern.value) - cpLength(a.def.pattern.value) ||
  (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function matchAt(re: RegExp, text: string, pos: number): string | null {
  re.lastIndex = pos;
  const m = re.exec(text);
  return m ? m[0] : null;
}

/**
 * The byte DFAs of a compile's regexp terminals, for matchesWhole (null: the regex stage cannot
 * represent the pattern). Per compile, not kept with the terminals.
 */
export type WholeMatchDfas = Map<LexTerminal, ByteDfa | null>;

/** Whether `s` is ASCII: there the byte DFA's language is Python's (\d, \w, \s and case folding differ only beyond ASCII). */
const isAscii = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
};

/**
 * Lark's `re.match(pattern, s).group(0) == s` for a string literal `s`: by the translated RegExp,
 * or at once for a plain character class (a range `"a".."z"`), which matches exactly one
 * character, without making and running a RegExp during the compile. A string the terminal's
 * byte DFA does not fully match is answered no without the RegExp: a backtracking RegExp that
 * fails takes exponential time on patterns such as `(a*)*b` (seconds for 26 letters).
 */
function matchesWhole(t: LexTerminal, s: string, dfas?: WholeMatchDfas, clock?: CompileClock): boolean {
  const root = t.parsed.root;
  if (root.k !== "set" || root.negated || root.caseless || root.classes.length > 0 || t.def.pattern.flags !== "") {
    if (dfas !== undefined && isAscii(s)) {
      let dfa = dfas.get(t);
      if (dfa === undefined) {
        try {
          const source = patternToRegexp(t.def.pattern);
          dfa = clock === undefined ? compileRegex(source) : clock.sub((limits) => compileRegex(source, limits));
        } catch (e) {
          if (e instanceof RegexTooComplexError && (e.limit === "time" || e.limit === "work")) clock?.check();
          dfa = null;
        }
        dfas.set(t, dfa);
      }
      if (dfa !== null && !matchesString(dfa, s)) return false;
    }
    return matchAt(t.regex, s, 0) === s;
  }
  const c = s.codePointAt(0);
  if (c === undefined || s.length !== (c > 0xffff ? 2 : 1)) return false;
  const ranges = root.ranges;
  for (let i = 0; i < ranges.length; i += 2) if (c >= ranges[i]! && c <= ranges[i + 1]!) return true;
  return false;
}

/**
 * BasicLexer for a set of terminals: Lark's sort, then `_create_unless`. `clock`: the compile's,
 * read as the regexp × string pairs are tried (quadratic in the scanner's terminals).
 */
export function buildScanner(terms: readonly LexTerminal[], clock?: CompileClock, dfas?: WholeMatchDfas): Scanner {
  const sorted = [...terms].sort(sortKeyCompare);
  const unless = new Map<string, LexTerminal[]>();
  const embedded = new Set<LexTerminal>();
  for (const re of sorted) {
    if (re.def.pattern.type !== "re") continue;
    clock?.spend(sorted.length);
    const list: LexTerminal[] = [];
    for (const str of sorted) {
      if (str.def.pattern.type !== "str" || str.def.priority !== re.def.priority) continue;
      const s = str.def.pattern.value;
      if (matchesWhole(re, s, dfas, clock)) {
        list.push(str);
        if ([...str.def.pattern.flags].every((f) => re.def.pattern.flags.includes(f))) embedded.add(str);
      }
    }
    if (list.length) unless.set(re.name, list);
  }
  const order = sorted.filter((t) => !embedded.has(t));
  let broken = false;
  const usable: LexTerminal[] = [];
  let groupBase = 0;
  for (const t of order) {
    const wrapper = groupBase + 1;
    const refs = backrefs(t.parsed.root);
    if (refs.some((n) => n >= wrapper)) broken = true;
    if (refs.length === 0) usable.push(t);
    groupBase = wrapper + t.parsed.groupCount;
  }
  return { order: usable, unless, broken };
}

function backrefs(n: RegexSyntaxNode): number[] {
  return n.k === "backref" ? [n.index] : syntaxChildren(n).flatMap(backrefs);
}

/**
 * Next token at `pos` (the terminal after Lark's retyping, and the matched text),
 * or null when no terminal of the scanner matches.
 */
export function scanToken(scanner: Scanner, text: string, pos: number): { term: LexTerminal; value: string } | null {
  if (scanner.broken) return null;
  for (const t of scanner.order) {
    const v = matchAt(t.regex, text, pos);
    if (v === null) continue;
    const alts = t.ignored ? undefined : scanner.unless.get(t.name);
    if (alts) {
      for (const s of alts) {
        if (matchAt(s.wholeRegex, v, 0) !== null) return { term: s, value: v };
      }
    }
    return { term: t, value: v };
  }
  return null;
}
