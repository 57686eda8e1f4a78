// Python `re` pattern syntax (the dialect Lark terminals are written in) parsed into a small AST.
// The AST serves three purposes inside the grammar stage, each in a file of its own:
//   - `toJsRegExp` (pyregex-js.ts): a JS RegExp (sticky, unicode) with the same backtracking
//     preferences as Python's `re`, so the lexer picks exactly the match Lark's combined
//     alternation picks;
//   - `regexWidth` (pyregex-width.ts): sre_parse's getwidth() (Lark sorts terminals by it and
//     refuses zero-width ones);
//   - `sampleRegex` (pyregex-sample.ts): random strings for the corpus sentence sampler.
// Scoped flags (`(?i:...)`, which Lark emits for `"..."i` and /.../i) are folded into the AST
// because Node 20's RegExp has no inline modifiers. Here: the AST, the parser (a recursive
// descent, as sre_parse's), the code point range lists of its sets, and Python's re.escape.

import { widthOf } from "./pyregex-width.js";

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

export type ClassEscape = "d" | "D" | "w" | "W" | "s" | "S";

export type PyRegexNode =
  | { k: "set"; ranges: number[]; classes: ClassEscape[]; negated: boolean; caseless: boolean }
  | { k: "any"; dotAll: boolean }
  | { k: "seq"; items: PyRegexNode[] }
  | { k: "alt"; alts: PyRegexNode[] }
  | { k: "group"; body: PyRegexNode; index: number; name?: string }
  | { k: "rep"; body: PyRegexNode; min: number; max: number; lazy: boolean }
  | { k: "assert"; kind: "bol" | "eol" | "bos" | "eos" | "wordb" | "nwordb"; multiline: boolean }
  | { k: "look"; body: PyRegexNode; behind: boolean; negated: boolean }
  | { k: "backref"; index: number };

export type SetNode = Extract<PyRegexNode, { k: "set" }>;

interface Flags {
  caseless: boolean;
  dotAll: boolean;
  multiline: boolean;
  verbose: boolean;
}

export interface ParsedRegex {
  root: PyRegexNode;
  groupCount: number;
  groupNames: Map<string, number>;
}

const cp = (s: string, i: number): number => s.codePointAt(i)!;
const cpLen = (c: number): number => (c > 0xffff ? 2 : 1);

/**
 * `maxNesting`: the deepest group nesting accepted (PyRegexNestingError beyond): parsing and every
 * pass over the tree recurse per group level, so a hostile pattern must stop here.
 */
export function parsePyRegex(pattern: string, maxNesting = Infinity): ParsedRegex {
  return new PyRegexParser(pattern, maxNesting).parse();
}

const literal = (ch: number, f: Flags): PyRegexNode => ({ k: "set", ranges: [ch, ch], classes: [], negated: false, caseless: f.caseless });
const classEscapeRanges = (e: ClassEscape): PyRegexNode => ({ k: "set", ranges: [], classes: [e], negated: false, caseless: false });

/** sre_parse's recursive descent over one pattern: alternation, sequence, atom, group, escape, class. */
class PyRegexParser {
  private pos = 0;
  private groupCount = 0;
  /** Groups open around the current position (against maxNesting). */
  private depth = 0;
  private readonly groupNames = new Map<string, number>();

  constructor(
    private readonly pattern: string,
    private readonly maxNesting: number,
  ) {}

  parse(): ParsedRegex {
    const pattern = this.pattern;
    const flags: Flags = { caseless: false, dotAll: false, multiline: false, verbose: false };
    // Global flags are only legal at the very start in Python 3.11.
    const globalFlags = /^\(\?([aiLmsux]+)\)/.exec(pattern);
    if (globalFlags) {
      for (const f of globalFlags[1]!) this.applyFlag(flags, f, true);
      this.pos = globalFlags[0].length;
    }
    const root = this.parseAlt(flags);
    if (this.pos < pattern.length) {
      if (pattern[this.pos] === ")") this.fail("unbalanced parenthesis");
      this.fail("unexpected character");
    }
    return { root, groupCount: this.groupCount, groupNames: this.groupNames };
  }

  private fail(msg: string, at = this.pos): never {
    throw new PyRegexError(msg, this.pattern, at);
  }

  private applyFlag(target: Flags, f: string, on: boolean): void {
    if (f === "i") target.caseless = on;
    else if (f === "s") target.dotAll = on;
    else if (f === "m") target.multiline = on;
    else if (f === "x") target.verbose = on;
    else if (f === "u" || f === "a" || f === "L") {
      if (f === "L") this.fail("bad inline flags: cannot use 'L' flag with a str pattern");
    } else this.fail(`unknown flag ${f}`);
  }

  /** Under the `x` flag, whitespace and `#` comments between items. */
  private skipVerbose(f: Flags): void {
    if (!f.verbose) return;
    const pattern = this.pattern;
    for (;;) {
      const c = pattern[this.pos];
      if (c === undefined) return;
      if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f" || c === "\v") this.pos++;
      else if (c === "#") {
        while (this.pos < pattern.length && pattern[this.pos] !== "\n") this.pos++;
      } else return;
    }
  }

  private parseAlt(f: Flags): PyRegexNode {
    const alts: PyRegexNode[] = [this.parseSeq(f)];
    while (this.pattern[this.pos] === "|") {
      this.pos++;
      alts.push(this.parseSeq(f));
    }
    return alts.length === 1 ? alts[0]! : { k: "alt", alts };
  }

  private parseSeq(f: Flags): PyRegexNode {
    const pattern = this.pattern;
    const items: PyRegexNode[] = [];
    for (;;) {
      this.skipVerbose(f);
      const c = pattern[this.pos];
      if (c === undefined || c === "|" || c === ")") break;
      let atom = this.parseAtom(f);
      if (atom === null) continue;
      this.skipVerbose(f);
      const q = this.parseQuantifier();
      if (q !== null) {
        if (pattern[this.pos] === "+") this.fail("possessive quantifiers are not supported");
        atom = { k: "rep", body: atom, min: q.min, max: q.max, lazy: q.lazy };
        this.skipVerbose(f);
        // Python: a quantifier directly after a quantified atom is "multiple repeat".
        if (pattern[this.pos] !== undefined && "*+?".includes(pattern[this.pos]!)) this.fail("multiple repeat");
        if (pattern[this.pos] === "{" && this.quantifierAhead()) this.fail("multiple repeat");
      }
      items.push(atom);
    }
    return items.length === 1 ? items[0]! : { k: "seq", items };
  }

  private quantifierAhead(): boolean {
    const m = /^\{(\d*)(,(\d*))?\}/.exec(this.pattern.slice(this.pos));
    return m !== null && !(m[1] === "" && m[2] === undefined);
  }

  private parseQuantifier(): { min: number; max: number; lazy: boolean } | null {
    const pattern = this.pattern;
    const c = pattern[this.pos];
    let min: number;
    let max: number;
    if (c === "*") {
      min = 0;
      max = Infinity;
      this.pos++;
    } else if (c === "+") {
      min = 1;
      max = Infinity;
      this.pos++;
    } else if (c === "?") {
      min = 0;
      max = 1;
      this.pos++;
    } else if (c === "{") {
      const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(pattern.slice(this.pos));
      if (!m || (m[1] === "" && m[2] === undefined)) return null; // literal '{'
      min = m[1] === "" ? 0 : Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      if (max < min) this.fail("min repeat greater than max repeat");
      this.pos += m[0].length;
    } else return null;
    let lazy = false;
    if (pattern[this.pos] === "?") {
      lazy = true;
      this.pos++;
    }
    return { min, max, lazy };
  }

  private parseAtom(f: Flags): PyRegexNode | null {
    const pattern = this.pattern;
    const c = pattern[this.pos]!;
    if (c === "(") return this.parseGroup(f);
    if (c === "[") return this.parseClass(f);
    if (c === ".") {
      this.pos++;
      return { k: "any", dotAll: f.dotAll };
    }
    if (c === "^") {
      this.pos++;
      return { k: "assert", kind: "bol", multiline: f.multiline };
    }
    if (c === "$") {
      this.pos++;
      return { k: "assert", kind: "eol", multiline: f.multiline };
    }
    if (c === "*" || c === "+" || c === "?") this.fail("nothing to repeat");
    if (c === "{" && this.quantifierAhead()) this.fail("nothing to repeat");
    if (c === "\\") return this.parseEscape(f, false);
    const ch = cp(pattern, this.pos);
    this.pos += cpLen(ch);
    return literal(ch, f);
  }

  private parseGroup(f: Flags): PyRegexNode | null {
    if (this.depth >= this.maxNesting) throw new PyRegexNestingError(this.maxNesting, this.pattern, this.pos);
    this.depth++;
    try {
      return this.parseGroupBody(f);
    } finally {
      this.depth--;
    }
  }

  /** A group from its `(`: a capturing one, or an extension `(?…`; null for a comment. */
  private parseGroupBody(f: Flags): PyRegexNode | null {
    const start = this.pos;
    this.pos++; // (
    if (this.pattern[this.pos] === "?") return this.parseExtension(f, start);
    const index = ++this.groupCount;
    const body = this.parseAlt({ ...f });
    return { k: "group", body: this.closeGroup(body, start), index };
  }

  /** `(?…` from the `?`: non-capturing, comment, lookaround, named, or scoped flags. */
  private parseExtension(f: Flags, start: number): PyRegexNode | null {
    const pattern = this.pattern;
    this.pos++;
    const c = pattern[this.pos];
    if (c === ":") {
      this.pos++;
      return this.closeGroup(this.parseAlt({ ...f }), start);
    }
    if (c === "#") {
      const end = pattern.indexOf(")", this.pos);
      if (end < 0) this.fail("missing ), unterminated comment", start);
      this.pos = end + 1;
      return null;
    }
    if (c === "=" || c === "!") {
      this.pos++;
      const body = this.parseAlt({ ...f });
      return { k: "look", body: this.closeGroup(body, start), behind: false, negated: c === "!" };
    }
    if (c === "<" && (pattern[this.pos + 1] === "=" || pattern[this.pos + 1] === "!")) {
      const negated = pattern[this.pos + 1] === "!";
      this.pos += 2;
      const body = this.closeGroup(this.parseAlt({ ...f }), start);
      const w = widthOf(body);
      if (w[0] !== w[1]) this.fail("look-behind requires fixed-width pattern", start);
      return { k: "look", body, behind: true, negated };
    }
    if (c === "P") return this.parseNamed(f, start);
    if (c === ">") this.fail("atomic groups are not supported");
    if (c === "(") this.fail("conditional groups are not supported");
    // Scoped flags (?imsx-imsx:...)
    const m = /^([aiLmsux]*)(?:-([imsx]*))?(:|\))/.exec(pattern.slice(this.pos));
    if (m && (m[1] !== "" || m[2] !== undefined)) {
      if (m[3] === ")") this.fail("global flags not at the start of the expression", start);
      const inner: Flags = { ...f };
      for (const fl of m[1]!) this.applyFlag(inner, fl, true);
      for (const fl of m[2] ?? "") this.applyFlag(inner, fl, false);
      this.pos += m[0].length;
      return this.closeGroup(this.parseAlt(inner), start);
    }
    this.fail("unknown extension ?" + (c ?? ""));
  }

  /** `(?P<name>…)` or `(?P=name)`, from the `P`. */
  private parseNamed(f: Flags, start: number): PyRegexNode {
    const pattern = this.pattern;
    this.pos++;
    if (pattern[this.pos] === "<") {
      const end = pattern.indexOf(">", this.pos);
      if (end < 0) this.fail("missing >, unterminated name");
      const name = pattern.slice(this.pos + 1, end);
      if (!/^[A-Za-z_]\w*$/.test(name)) this.fail(`bad character in group name '${name}'`);
      if (this.groupNames.has(name)) this.fail(`redefinition of group name '${name}'`);
      this.pos = end + 1;
      const index = ++this.groupCount;
      this.groupNames.set(name, index);
      const body = this.parseAlt({ ...f });
      return { k: "group", body: this.closeGroup(body, start), index, name };
    }
    if (pattern[this.pos] === "=") {
      const end = pattern.indexOf(")", this.pos);
      if (end < 0) this.fail("missing ), unterminated name");
      const name = pattern.slice(this.pos + 1, end);
      const index = this.groupNames.get(name);
      if (index === undefined) this.fail(`unknown group name '${name}'`);
      this.pos = end + 1;
      return { k: "backref", index: index! };
    }
    this.fail("unknown extension ?P");
  }

  private closeGroup(body: PyRegexNode, start: number): PyRegexNode {
    if (this.pattern[this.pos] !== ")") this.fail("missing ), unterminated subpattern", start);
    this.pos++;
    return body;
  }

  // Returns a code point, or a class escape for \d etc. inside or outside classes.
  private parseEscapeValue(inClass: boolean): number | ClassEscape | PyRegexNode {
    const pattern = this.pattern;
    const start = this.pos;
    this.pos++; // backslash
    const c = pattern[this.pos];
    if (c === undefined) this.fail("bad escape (end of pattern)", start);
    this.pos++;
    switch (c) {
      case "n":
        return 10;
      case "t":
        return 9;
      case "r":
        return 13;
      case "f":
        return 12;
      case "v":
        return 11;
      case "a":
        return 7;
      case "\\":
        return 92;
      case "d":
      case "D":
      case "w":
      case "W":
      case "s":
      case "S":
        return c as ClassEscape;
      case "x": {
        const m = /^[0-9a-fA-F]{2}/.exec(pattern.slice(this.pos));
        if (!m) this.fail("incomplete escape \\x", start);
        this.pos += 2;
        return parseInt(m![0], 16);
      }
      case "u":
      case "U": {
        const n = c === "u" ? 4 : 8;
        const hex = pattern.slice(this.pos, this.pos + n);
        if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) this.fail(`incomplete escape \\${c}`, start);
        this.pos += n;
        const v = parseInt(hex, 16);
        if (v > 0x10ffff) this.fail("bad escape", start);
        return v;
      }
      case "N":
        this.fail("\\N{...} escapes are not supported", start);
    }
    if (c! >= "0" && c! <= "9") return this.parseNumericEscape(c!, inClass, start);
    if (!inClass) {
      if (c === "A") return { k: "assert", kind: "bos", multiline: false };
      if (c === "Z") return { k: "assert", kind: "eos", multiline: false };
      if (c === "b") return { k: "assert", kind: "wordb", multiline: false };
      if (c === "B") return { k: "assert", kind: "nwordb", multiline: false };
    } else if (c === "b") return 8;
    if (/[A-Za-z]/.test(c!)) this.fail(`bad escape \\${c}`, start);
    this.pos--;
    const ch = cp(pattern, this.pos);
    this.pos += cpLen(ch);
    return ch;
  }

  /** `\` and a digit `c` (pos is past it): an octal escape, or a backreference outside classes. */
  private parseNumericEscape(c: string, inClass: boolean, start: number): number | PyRegexNode {
    const pattern = this.pattern;
    if (c === "0" || inClass) {
      // octal escape
      this.pos--;
      const m = /^[0-7]{1,3}/.exec(pattern.slice(this.pos));
      if (!m) this.fail("bad escape", start);
      this.pos += m![0].length;
      return parseInt(m![0], 8);
    }
    // \1..\99 backreference, or 3-digit octal
    const m3 = /^[0-7]{3}/.exec(pattern.slice(this.pos - 1));
    if (m3) {
      this.pos += 2;
      return parseInt(m3[0], 8);
    }
    const m = /^\d{1,2}/.exec(pattern.slice(this.pos - 1))!;
    this.pos += m[0].length - 1;
    const index = Number(m[0]);
    if (index > this.groupCount) this.fail("invalid group reference " + index, start);
    return { k: "backref", index };
  }

  private parseEscape(f: Flags, inClass: boolean): PyRegexNode {
    const v = this.parseEscapeValue(inClass);
    if (typeof v === "number") return literal(v, f);
    if (typeof v === "string") return classEscapeRanges(v);
    return v;
  }

  private parseClass(f: Flags): PyRegexNode {
    const pattern = this.pattern;
    const start = this.pos;
    this.pos++;
    let negated = false;
    if (pattern[this.pos] === "^") {
      negated = true;
      this.pos++;
    }
    const ranges: number[] = [];
    const classes: ClassEscape[] = [];
    let first = true;
    for (;;) {
      const c = pattern[this.pos];
      if (c === undefined) this.fail("unterminated character set", start);
      if (c === "]" && !first) {
        this.pos++;
        break;
      }
      first = false;
      const lo = this.parseClassAtom(start);
      if (pattern[this.pos] === "-" && pattern[this.pos + 1] !== "]" && pattern[this.pos + 1] !== undefined) {
        this.pos++;
        const hi = this.parseClassAtom(start);
        if (typeof lo === "string" || typeof hi === "string") this.fail("bad character range", start);
        if ((hi as number) < (lo as number)) this.fail("bad character range", start);
        ranges.push(lo as number, hi as number);
      } else if (typeof lo === "string") classes.push(lo);
      else ranges.push(lo, lo);
    }
    return { k: "set", ranges: normalizeRanges(ranges), classes, negated, caseless: f.caseless };
  }

  /** One item of a class (`start`: the class's `[`): a code point, or a class escape like \d. */
  private parseClassAtom(start: number): number | ClassEscape {
    if (this.pattern[this.pos] === "\\") {
      const v = this.parseEscapeValue(true);
      if (typeof v === "object") this.fail("bad escape in class", start);
      return v as number | ClassEscape;
    }
    const ch = cp(this.pattern, this.pos);
    this.pos += cpLen(ch);
    return ch;
  }
}

// ---------------------------------------------------------------------------------------------
// Code point range lists (a set node's `ranges`: [lo, hi] pairs)

export function normalizeRanges(r: number[]): number[] {
  const pairs: [number, number][] = [];
  for (let i = 0; i < r.length; i += 2) pairs.push([r[i]!, r[i + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of pairs) {
    const n = out.length;
    if (n && lo <= out[n - 1]! + 1) out[n - 1] = Math.max(out[n - 1]!, hi);
    else out.push(lo, hi);
  }
  return out;
}

/** Adds simple case variants (what Python's IGNORECASE matches for most letters). */
export function caseClose(ranges: number[]): number[] {
  const extra: number[] = [];
  let budget = 0x20000;
  for (let i = 0; i < ranges.length; i += 2) {
    const lo = ranges[i]!,
      hi = ranges[i + 1]!;
    if (hi - lo > budget) continue;
    budget -= hi - lo;
    for (let c = lo; c <= hi; c++) {
      const s = String.fromCodePoint(c);
      for (const v of [s.toLowerCase(), s.toUpperCase()]) {
        const vc = v.codePointAt(0)!;
        if (v.length === cpLen(vc) && vc !== c) extra.push(vc, vc);
      }
    }
  }
  return extra.length ? normalizeRanges(ranges.concat(extra)) : ranges;
}

/** The characters Python's re.escape (3.7+) escapes. */
export const PY_RE_SPECIAL = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";

/** Python's re.escape (3.7+): only PY_RE_SPECIAL is escaped. */
export function pyReEscape(s: string): string {
  let out = "";
  for (const ch of s) out += PY_RE_SPECIAL.includes(ch) ? "\\" + ch : ch;
  return out;
}
