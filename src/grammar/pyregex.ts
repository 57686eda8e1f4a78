// Python `re` pattern syntax (the dialect Lark terminals are written in) parsed into a small AST.
// The AST serves three purposes inside the grammar stage:
//   - `toJsRegExp`: a JS RegExp (sticky, unicode) with the same backtracking preferences as
//     Python's `re`, so the lexer picks exactly the match Lark's combined alternation picks;
//   - `regexWidth`: sre_parse's getwidth() (Lark sorts terminals by it and refuses zero-width ones);
//   - `sampleRegex`: random strings for the corpus sentence sampler.
// Scoped flags (`(?i:...)`, which Lark emits for `"..."i` and /.../i) are folded into the AST
// because Node 20's RegExp has no inline modifiers.

export class PyRegexError extends Error {
  constructor(message: string, readonly pattern: string, readonly position: number) {
    super(`${message} at position ${position} in /${pattern}/`);
    this.name = "PyRegexError";
  }
}

/** Groups nested deeper than the parser's limit (its passes recurse once or more per group). */
export class PyRegexNestingError extends PyRegexError {
  constructor(readonly maxNesting: number, pattern: string, position: number) {
    super(`groups nested deeper than ${maxNesting}`, pattern, position);
    this.name = "PyRegexNestingError";
  }
}

/** Python's sre MAXREPEAT: widths saturate here, so two unbounded terminals compare equal. */
export const MAXREPEAT = 4294967295;

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
  let pos = 0;
  let groupCount = 0;
  let depth = 0;
  const groupNames = new Map<string, number>();
  const fail = (msg: string, at = pos): never => {
    throw new PyRegexError(msg, pattern, at);
  };
  const flags: Flags = { caseless: false, dotAll: false, multiline: false, verbose: false };

  // Global flags are only legal at the very start in Python 3.11.
  const globalFlags = /^\(\?([aiLmsux]+)\)/.exec(pattern);
  if (globalFlags) {
    for (const f of globalFlags[1]!) applyFlag(flags, f, true);
    pos = globalFlags[0].length;
  }

  function applyFlag(target: Flags, f: string, on: boolean): void {
    if (f === "i") target.caseless = on;
    else if (f === "s") target.dotAll = on;
    else if (f === "m") target.multiline = on;
    else if (f === "x") target.verbose = on;
    else if (f === "u" || f === "a" || f === "L") {
      if (f === "L") fail("bad inline flags: cannot use 'L' flag with a str pattern");
    } else fail(`unknown flag ${f}`);
  }

  function skipVerbose(f: Flags): void {
    if (!f.verbose) return;
    for (;;) {
      const c = pattern[pos];
      if (c === undefined) return;
      if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f" || c === "\v") pos++;
      else if (c === "#") {
        while (pos < pattern.length && pattern[pos] !== "\n") pos++;
      } else return;
    }
  }

  function parseAlt(f: Flags): PyRegexNode {
    const alts: PyRegexNode[] = [parseSeq(f)];
    while (pattern[pos] === "|") {
      pos++;
      alts.push(parseSeq(f));
    }
    return alts.length === 1 ? alts[0]! : { k: "alt", alts };
  }

  function parseSeq(f: Flags): PyRegexNode {
    const items: PyRegexNode[] = [];
    for (;;) {
      skipVerbose(f);
      const c = pattern[pos];
      if (c === undefined || c === "|" || c === ")") break;
      let atom = parseAtom(f);
      if (atom === null) continue;
      skipVerbose(f);
      const q = parseQuantifier();
      if (q !== null) {
        if (pattern[pos] === "+") fail("possessive quantifiers are not supported");
        atom = { k: "rep", body: atom, min: q.min, max: q.max, lazy: q.lazy };
        skipVerbose(f);
        // Python: a quantifier directly after a quantified atom is "multiple repeat".
        if (pattern[pos] !== undefined && "*+?".includes(pattern[pos]!)) fail("multiple repeat");
        if (pattern[pos] === "{" && quantifierAhead()) fail("multiple repeat");
      }
      items.push(atom);
    }
    return items.length === 1 ? items[0]! : { k: "seq", items };
  }

  function quantifierAhead(): boolean {
    const m = /^\{(\d*)(,(\d*))?\}/.exec(pattern.slice(pos));
    return m !== null && !(m[1] === "" && m[2] === undefined);
  }

  function parseQuantifier(): { min: number; max: number; lazy: boolean } | null {
    const c = pattern[pos];
    let min: number;
    let max: number;
    if (c === "*") { min = 0; max = Infinity; pos++; }
    else if (c === "+") { min = 1; max = Infinity; pos++; }
    else if (c === "?") { min = 0; max = 1; pos++; }
    else if (c === "{") {
      const m = /^\{(\d*)(?:(,)(\d*))?\}/.exec(pattern.slice(pos));
      if (!m || (m[1] === "" && m[2] === undefined)) return null; // literal '{'
      min = m[1] === "" ? 0 : Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      if (max < min) fail("min repeat greater than max repeat");
      pos += m[0].length;
    } else return null;
    let lazy = false;
    if (pattern[pos] === "?") { lazy = true; pos++; }
    return { min, max, lazy };
  }

  function parseAtom(f: Flags): PyRegexNode | null {
    const c = pattern[pos]!;
    if (c === "(") return parseGroup(f);
    if (c === "[") return parseClass(f);
    if (c === ".") { pos++; return { k: "any", dotAll: f.dotAll }; }
    if (c === "^") { pos++; return { k: "assert", kind: "bol", multiline: f.multiline }; }
    if (c === "$") { pos++; return { k: "assert", kind: "eol", multiline: f.multiline }; }
    if (c === "*" || c === "+" || c === "?") fail("nothing to repeat");
    if (c === "{" && quantifierAhead()) fail("nothing to repeat");
    if (c === "\\") return parseEscape(f, false);
    const ch = cp(pattern, pos);
    pos += cpLen(ch);
    return literal(ch, f);
  }

  function literal(ch: number, f: Flags): PyRegexNode {
    return { k: "set", ranges: [ch, ch], classes: [], negated: false, caseless: f.caseless };
  }

  function parseGroup(f: Flags): PyRegexNode | null {
    if (depth >= maxNesting) throw new PyRegexNestingError(maxNesting, pattern, pos);
    depth++;
    try {
      return parseGroupBody(f);
    } finally {
      depth--;
    }
  }

  function parseGroupBody(f: Flags): PyRegexNode | null {
    const start = pos;
    pos++; // (
    if (pattern[pos] === "?") {
      pos++;
      const c = pattern[pos];
      if (c === ":") { pos++; return closeGroup(parseAlt({ ...f }), start); }
      if (c === "#") {
        const end = pattern.indexOf(")", pos);
        if (end < 0) fail("missing ), unterminated comment", start);
        pos = end + 1;
        return null;
      }
      if (c === "=" || c === "!") {
        pos++;
        const body = parseAlt({ ...f });
        return { k: "look", body: closeGroup(body, start), behind: false, negated: c === "!" };
      }
      if (c === "<" && (pattern[pos + 1] === "=" || pattern[pos + 1] === "!")) {
        const negated = pattern[pos + 1] === "!";
        pos += 2;
        const body = closeGroup(parseAlt({ ...f }), start);
        const w = widthOf(body);
        if (w[0] !== w[1]) fail("look-behind requires fixed-width pattern", start);
        return { k: "look", body, behind: true, negated };
      }
      if (c === "P") {
        pos++;
        if (pattern[pos] === "<") {
          const end = pattern.indexOf(">", pos);
          if (end < 0) fail("missing >, unterminated name");
          const name = pattern.slice(pos + 1, end);
          if (!/^[A-Za-z_]\w*$/.test(name)) fail(`bad character in group name '${name}'`);
          if (groupNames.has(name)) fail(`redefinition of group name '${name}'`);
          pos = end + 1;
          const index = ++groupCount;
          groupNames.set(name, index);
          const body = parseAlt({ ...f });
          return { k: "group", body: closeGroup(body, start), index, name };
        }
        if (pattern[pos] === "=") {
          const end = pattern.indexOf(")", pos);
          if (end < 0) fail("missing ), unterminated name");
          const name = pattern.slice(pos + 1, end);
          const index = groupNames.get(name);
          if (index === undefined) fail(`unknown group name '${name}'`);
          pos = end + 1;
          return { k: "backref", index: index! };
        }
        fail("unknown extension ?P");
      }
      if (c === ">") fail("atomic groups are not supported");
      if (c === "(") fail("conditional groups are not supported");
      // Scoped flags (?imsx-imsx:...)
      const m = /^([aiLmsux]*)(?:-([imsx]*))?(:|\))/.exec(pattern.slice(pos));
      if (m && (m[1] !== "" || m[2] !== undefined)) {
        if (m[3] === ")") fail("global flags not at the start of the expression", start);
        const inner: Flags = { ...f };
        for (const fl of m[1]!) applyFlag(inner, fl, true);
        for (const fl of m[2] ?? "") applyFlag(inner, fl, false);
        pos += m[0].length;
        return closeGroup(parseAlt(inner), start);
      }
      fail("unknown extension ?" + (c ?? ""));
    }
    const index = ++groupCount;
    const body = parseAlt({ ...f });
    return { k: "group", body: closeGroup(body, start), index };
  }

  function closeGroup(body: PyRegexNode, start: number): PyRegexNode {
    if (pattern[pos] !== ")") fail("missing ), unterminated subpattern", start);
    pos++;
    return body;
  }

  function classEscapeRanges(e: ClassEscape): PyRegexNode {
    return { k: "set", ranges: [], classes: [e], negated: false, caseless: false };
  }

  // Returns a code point, or a class escape for \d etc. inside or outside classes.
  function parseEscapeValue(inClass: boolean): number | ClassEscape | PyRegexNode {
    const start = pos;
    pos++; // backslash
    const c = pattern[pos];
    if (c === undefined) fail("bad escape (end of pattern)", start);
    pos++;
    switch (c) {
      case "n": return 10;
      case "t": return 9;
      case "r": return 13;
      case "f": return 12;
      case "v": return 11;
      case "a": return 7;
      case "\\": return 92;
      case "d": case "D": case "w": case "W": case "s": case "S": return c as ClassEscape;
      case "x": {
        const m = /^[0-9a-fA-F]{2}/.exec(pattern.slice(pos));
        if (!m) fail("incomplete escape \\x", start);
        pos += 2;
        return parseInt(m![0], 16);
      }
      case "u": case "U": {
        const n = c === "u" ? 4 : 8;
        const hex = pattern.slice(pos, pos + n);
        if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) fail(`incomplete escape \\${c}`, start);
        pos += n;
        const v = parseInt(hex, 16);
        if (v > 0x10ffff) fail("bad escape", start);
        return v;
      }
      case "N": fail("\\N{...} escapes are not supported", start);
    }
    if (c! >= "0" && c! <= "9") {
      if (c === "0" || inClass) {
        // octal escape
        pos--;
        const m = /^[0-7]{1,3}/.exec(pattern.slice(pos));
        if (!m) fail("bad escape", start);
        pos += m![0].length;
        return parseInt(m![0], 8);
      }
      // \1..\99 backreference, or 3-digit octal
      const m3 = /^[0-7]{3}/.exec(pattern.slice(pos - 1));
      if (m3) { pos += 2; return parseInt(m3[0], 8); }
      const m = /^\d{1,2}/.exec(pattern.slice(pos - 1))!;
      pos += m[0].length - 1;
      const index = Number(m[0]);
      if (index > groupCount) fail("invalid group reference " + index, start);
      return { k: "backref", index };
    }
    if (!inClass) {
      if (c === "A") return { k: "assert", kind: "bos", multiline: false };
      if (c === "Z") return { k: "assert", kind: "eos", multiline: false };
      if (c === "b") return { k: "assert", kind: "wordb", multiline: false };
      if (c === "B") return { k: "assert", kind: "nwordb", multiline: false };
    } else if (c === "b") return 8;
    if (/[A-Za-z]/.test(c!)) fail(`bad escape \\${c}`, start);
    pos--;
    const ch = cp(pattern, pos);
    pos += cpLen(ch);
    return ch;
  }

  function parseEscape(f: Flags, inClass: boolean): PyRegexNode {
    const v = parseEscapeValue(inClass);
    if (typeof v === "number") return literal(v, f);
    if (typeof v === "string") return classEscapeRanges(v);
    return v;
  }

  function parseClass(f: Flags): PyRegexNode {
    const start = pos;
    pos++;
    let negated = false;
    if (pattern[pos] === "^") { negated = true; pos++; }
    const ranges: number[] = [];
    const classes: ClassEscape[] = [];
    let first = true;
    for (;;) {
      const c = pattern[pos];
      if (c === undefined) fail("unterminated character set", start);
      if (c === "]" && !first) { pos++; break; }
      first = false;
      let lo: number | ClassEscape;
      if (c === "\\") {
        const v = parseEscapeValue(true);
        if (typeof v === "object") fail("bad escape in class", start);
        lo = v as number | ClassEscape;
      } else {
        lo = cp(pattern, pos);
        pos += cpLen(lo);
      }
      if (pattern[pos] === "-" && pattern[pos + 1] !== "]" && pattern[pos + 1] !== undefined) {
        pos++;
        let hi: number | ClassEscape;
        if (pattern[pos] === "\\") {
          const v = parseEscapeValue(true);
          if (typeof v === "object") fail("bad escape in class", start);
          hi = v as number | ClassEscape;
        } else {
          hi = cp(pattern, pos);
          pos += cpLen(hi);
        }
        if (typeof lo === "string" || typeof hi === "string") fail("bad character range", start);
        if ((hi as number) < (lo as number)) fail("bad character range", start);
        ranges.push(lo as number, hi as number);
      } else if (typeof lo === "string") classes.push(lo);
      else ranges.push(lo, lo);
    }
    return { k: "set", ranges: normalizeRanges(ranges), classes, negated, caseless: f.caseless };
  }

  const root = parseAlt(flags);
  if (pos < pattern.length) {
    if (pattern[pos] === ")") fail("unbalanced parenthesis");
    fail("unexpected character");
  }
  return { root, groupCount, groupNames };
}

function normalizeRanges(r: number[]): number[] {
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
function caseClose(ranges: number[]): number[] {
  const extra: number[] = [];
  let budget = 0x20000;
  for (let i = 0; i < ranges.length; i += 2) {
    const lo = ranges[i]!, hi = ranges[i + 1]!;
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

// ---------------------------------------------------------------------------------------------
// Width (sre_parse getwidth)

function widthOf(n: PyRegexNode, groups?: Map<number, [number, number]>): [number, number] {
  switch (n.k) {
    case "set": case "any": return [1, 1];
    case "seq": {
      let lo = 0, hi = 0;
      for (const it of n.items) {
        const [a, b] = widthOf(it, groups);
        lo += a; hi += b;
      }
      return [Math.min(lo, MAXREPEAT - 1), Math.min(hi, MAXREPEAT)];
    }
    case "alt": {
      let lo = MAXREPEAT - 1, hi = 0;
      for (const a of n.alts) {
        const [x, y] = widthOf(a, groups);
        lo = Math.min(lo, x); hi = Math.max(hi, y);
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
    case "assert": case "look": return [0, 0];
    case "backref": return groups?.get(n.index) ?? [0, 0];
  }
}

/** [min, max] match width exactly as Python's sre_parse reports it (max saturates at MAXREPEAT). */
export function regexWidth(parsed: ParsedRegex): [number, number] {
  return widthOf(parsed.root, new Map());
}

// ---------------------------------------------------------------------------------------------
// JS emission

const hexEsc = (c: number): string => `\\u{${c.toString(16)}}`;

function classBody(n: Extract<PyRegexNode, { k: "set" }>): string {
  const ranges = n.caseless ? caseClose(n.ranges) : n.ranges;
  let s = "";
  for (let i = 0; i < ranges.length; i += 2) {
    const lo = ranges[i]!, hi = ranges[i + 1]!;
    s += lo === hi ? hexEsc(lo) : `${hexEsc(lo)}-${hexEsc(hi)}`;
  }
  for (const c of n.classes) {
    if (c === "d") s += "\\p{Nd}";
    else if (c === "D") s += "\\P{Nd}";
    else if (c === "w") s += "\\p{L}\\p{N}_";
    else if (c === "W") s += "\\W";
    else if (c === "s") s += "\\s\\x1c-\\x1f";
    else s += "\\S";
  }
  return s;
}

function emit(n: PyRegexNode): string {
  switch (n.k) {
    case "set": {
      const body = classBody(n);
      if (!n.negated && n.classes.length === 0 && n.ranges.length === 2 && n.ranges[0] === n.ranges[1] && !n.caseless)
        return hexEsc(n.ranges[0]!);
      return n.negated ? `[^${body}]` : body === "" ? "[]" : `[${body}]`;
    }
    case "any": return n.dotAll ? "[^]" : "[^\\n]";
    case "seq": return n.items.map((it) => emit(it)).join("");
    case "alt": return `(?:${n.alts.map((a) => emit(a)).join("|")})`;
    case "group": return `(${emit(n.body)})`;
    case "rep": {
      const q = n.min === 0 && n.max === Infinity ? "*" : n.min === 1 && n.max === Infinity ? "+"
        : n.min === 0 && n.max === 1 ? "?" : n.max === Infinity ? `{${n.min},}` : n.min === n.max ? `{${n.min}}` : `{${n.min},${n.max}}`;
      return `(?:${emit(n.body)})${q}${n.lazy ? "?" : ""}`;
    }
    case "assert":
      switch (n.kind) {
        case "bol": return n.multiline ? "(?<![^\\n])" : "(?<![^])";
        case "eol": return n.multiline ? "(?=\\n|(?![^]))" : "(?=\\n?(?![^]))";
        case "bos": return "(?<![^])";
        case "eos": return "(?![^])";
        case "wordb": return "\\b";
        case "nwordb": return "\\B";
      }
      break;
    case "look": return `(?${n.behind ? "<" : ""}${n.negated ? "!" : "="}${emit(n.body)})`;
    case "backref": return `(?:\\${n.index})`;
  }
  return "";
}

/** Sticky unicode RegExp with Python's match preferences: `re.match(p, text, pos)` ≙ lastIndex = pos; exec. */
export function toJsRegExp(parsed: ParsedRegex): RegExp {
  return new RegExp(emit(parsed.root), "uy");
}

// ---------------------------------------------------------------------------------------------
// Sampling

export interface Rng {
  (): number; // uniform in [0, 1)
}

const PRINTABLE: number[] = [];
for (let c = 32; c < 127; c++) PRINTABLE.push(c);
PRINTABLE.push(9, 10);

function setContains(n: Extract<PyRegexNode, { k: "set" }>, c: number): boolean {
  const ranges = n.caseless ? caseClose(n.ranges) : n.ranges;
  let hit = false;
  for (let i = 0; i < ranges.length && !hit; i += 2) hit = c >= ranges[i]! && c <= ranges[i + 1]!;
  for (const e of n.classes) {
    if (hit) break;
    const s = String.fromCodePoint(c);
    if (e === "d") hit = /\d/.test(s);
    else if (e === "D") hit = !/\d/.test(s);
    else if (e === "w") hit = /\w/.test(s);
    else if (e === "W") hit = !/\w/.test(s);
    else if (e === "s") hit = /\s/.test(s);
    else hit = !/\s/.test(s);
  }
  return hit !== n.negated;
}

function pickFromSet(n: Extract<PyRegexNode, { k: "set" }>, rng: Rng): number | null {
  if (!n.negated && n.classes.length === 0) {
    // Prefer printable members; fall back to any member.
    const ranges = n.caseless ? caseClose(n.ranges) : n.ranges;
    const printable = PRINTABLE.filter((c) => setContains(n, c));
    if (printable.length && (rng() < 0.9 || ranges.length === 0)) return printable[Math.floor(rng() * printable.length)]!;
    if (ranges.length === 0) return null;
    const r = Math.floor(rng() * (ranges.length / 2)) * 2;
    const lo = ranges[r]!, hi = Math.min(ranges[r + 1]!, lo + 200);
    return lo + Math.floor(rng() * (hi - lo + 1));
  }
  const printable = PRINTABLE.filter((c) => setContains(n, c));
  if (!printable.length) return null;
  return printable[Math.floor(rng() * printable.length)]!;
}

/** A random string the pattern is likely to match (lookarounds are ignored). */
export function sampleRegex(parsed: ParsedRegex, rng: Rng, maxRepeat = 4): string {
  const groups = new Map<number, string>();
  const gen = (n: PyRegexNode): string => {
    switch (n.k) {
      case "set": {
        const c = pickFromSet(n, rng);
        return c === null ? "" : String.fromCodePoint(c);
      }
      case "any": {
        const pool = n.dotAll ? PRINTABLE : PRINTABLE.filter((c) => c !== 10);
        return String.fromCodePoint(pool[Math.floor(rng() * pool.length)]!);
      }
      case "seq": return n.items.map(gen).join("");
      case "alt": return gen(n.alts[Math.floor(rng() * n.alts.length)]!);
      case "group": {
        const s = gen(n.body);
        groups.set(n.index, s);
        return s;
      }
      case "rep": {
        const hi = Math.min(n.max, n.min + maxRepeat);
        const count = n.min + Math.floor(rng() * (hi - n.min + 1));
        let s = "";
        for (let i = 0; i < count; i++) s += gen(n.body);
        return s;
      }
      case "assert": case "look": return "";
      case "backref": return groups.get(n.index) ?? "";
    }
  };
  return gen(parsed.root);
}

/** The characters Python's re.escape (3.7+) escapes. */
export const PY_RE_SPECIAL = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";

/** Python's re.escape (3.7+): only PY_RE_SPECIAL is escaped. */
export function pyReEscape(s: string): string {
  let out = "";
  for (const ch of s) out += PY_RE_SPECIAL.includes(ch) ? "\\" + ch : ch;
  return out;
}
