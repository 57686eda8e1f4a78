/**
 * ECMA-262 patterns (JSON Schema `pattern`, `patternProperties`) → RegexNode, read as
 * `new RegExp(pattern, "u")` reads them; compile the node with compileRegexNode.
 *
 * ecmaSearchNode is the language of the strings s for which `new RegExp(pattern, "u").test(s)`
 * holds (an unanchored search, as JSON Schema means it); ecmaFullMatchNode the strings the whole
 * of which match (as `^(?:pattern)$`). The pattern is first given to the engine itself: whatever
 * it refuses under the u flag is a RegexSyntaxError, so this parser only reads valid patterns.
 *
 * Semantics (u flag, no i, m, s): '^' start of input, '$' end of input; '.' any code point but
 * \n \r \u2028 \u2029; \d \w ASCII; \s ECMA WhiteSpace and LineTerminator; \p{..} \P{..} as the
 * engine's own Unicode data (each set read once from the engine, then cached); \b \B as
 * conditions on the previous and next byte (word characters are ASCII); lazy quantifiers match
 * the same strings. A lookaround of one character from an ASCII class or its complement is a
 * condition on the neighbouring byte, as in parser.ts.
 *
 * Refused (RegexSyntaxError, `construct` naming it): backreferences (\1, \k<name>), longer
 * lookarounds, and invalid patterns (construct "invalid pattern"). Two lookaheads (\b counts as
 * one) applying at the same place are refused at compile time ("lookahead combination").
 *
 * A pattern the engine refuses under u but accepts without it (real schemas write `^4\-.*`,
 * `^Agenda\:[0-9]+$`, `\{d}`: identity escapes and lone braces of Annex B) is read as the
 * engine reads it without u (annexBReason says so; the JSON Schema compiler warns): identity
 * escapes of any character, `{` `}` `]` that form no quantifier or class as literals, `\p` as
 * "p", `[\w-a]` as \w, "-" and "a", `\x`/`\u` without their digits as "x"/"u", octal escapes
 * where no group is referenced. It still matches code points, as everywhere here (without u,
 * `.` would match half of an astral character). What only makes sense per UTF-16 unit (a `\u`
 * surrogate escape alone) and a decimal escape where the pattern has groups (a backreference)
 * are refused by name.
 */
import { type CodeSet, MAX_CODE_POINT, complementSet, normalizeRanges } from "./charset.js";
import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
import { Assertion, boundaryBytes, MAX_GROUP_NESTING, type RegexNode } from "./parser.js";

const ANY: CodeSet = [0, MAX_CODE_POINT];
const DOT: CodeSet = [0, 0x09, 0x0b, 0x0c, 0x0e, 0x2027, 0x202a, MAX_CODE_POINT];
const DIGIT: CodeSet = [0x30, 0x39];
const WORD: CodeSet = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
/** WhiteSpace (tab, VT, FF, ZWNBSP, Zs) and LineTerminator. */
const SPACE: CodeSet = [
  0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000,
  0xfeff, 0xfeff,
];
const ANY_STAR: RegexNode = { kind: "repeat", item: { kind: "set", set: ANY }, min: 0, max: -1 };

/** The strings `new RegExp(pattern, "u").test` accepts (a match anywhere in them). */
export function ecmaSearchNode(pattern: string): RegexNode {
  return { kind: "concat", items: [ANY_STAR, ecmaFullMatchNode(pattern), ANY_STAR] };
}

/** The strings `pattern` matches as a whole (as `new RegExp("^(?:" + pattern + ")$", "u")`). */
export function ecmaFullMatchNode(pattern: string): RegexNode {
  const { annexB, error } = readingOf(pattern);
  if (error !== null) throw new RegexSyntaxError(`invalid ECMA-262 pattern (u flag): ${error}`, 0, "invalid pattern");
  return new EcmaParser(pattern, annexB !== null).parse();
}

/**
 * Why `pattern` is read with Annex B's syntax (the engine's message under u), or null when it is
 * valid under u or not read at all (ecmaFullMatchNode refuses it).
 */
export function annexBReason(pattern: string): string | null {
  return readingOf(pattern).annexB;
}

/** Why `pattern` cannot be read (the engine's message under u), or null when it can be. */
export function ecmaPatternError(pattern: string): string | null {
  return readingOf(pattern).error;
}

/**
 * How a pattern is read: under u; else, when the engine accepts it without u, with Annex B's
 * syntax (`annexB`: the message under u); else not at all (`error`). A pattern that writes `\p{`,
 * `\P{` or `\u{` meant the u flag (without it they are "p{", "uuuu" for `\u{4}`): it is refused,
 * not read otherwise.
 */
function readingOf(pattern: string): { annexB: string | null; error: string | null } {
  const unicodeError = engineError(pattern, "u");
  if (unicodeError === null) return { annexB: null, error: null };
  if (/\\[pPu]\{/.test(pattern) || engineError(pattern, "") !== null) return { annexB: null, error: unicodeError };
  return { annexB: unicodeError, error: null };
}

/** The engine's SyntaxError message for `pattern` under `flags`, or null when it compiles. */
function engineError(pattern: string, flags: string): string | null {
  try {
    new RegExp(pattern, flags);
    return null;
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    return err.message;
  }
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** A class atom: one code point (usable as a range end) or a set (\d, \p{..}...). */
type ClassAtom = { cp: number; set?: undefined } | { cp?: undefined; set: CodeSet };

const isOctal = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x37;
const isAsciiLetter = (c: number | undefined): boolean => c !== undefined && ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a));

/** Whether a pattern has capturing groups, and named ones (outside classes and escapes). */
function capturingGroups(cps: readonly number[]): { any: boolean; named: boolean } {
  let inClass = false;
  let any = false;
  let named = false;
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i]!;
    if (c === 0x5c) {
      i++;
      continue;
    }
    if (inClass) {
      if (c === 0x5d) inClass = false;
      continue;
    }
    if (c === 0x5b) inClass = true;
    else if (c === 0x28 && cps[i + 1] !== 0x3f) any = true;
    else if (c === 0x28 && cps[i + 2] === 0x3c && cps[i + 3] !== 0x3d && cps[i + 3] !== 0x21) any = named = true;
  }
  return { any, named };
}

/**
 * Reader of patterns the engine accepted (so their grammar is not re-checked): under the u flag,
 * or, with `annexB`, without it (see the header).
 */
class EcmaParser {
  private readonly cps: number[];
  private pos = 0;
  /** Annex B: whether the pattern has capturing groups / named groups (decimal escapes, \k). */
  private readonly hasGroups: boolean;
  private readonly hasNamedGroups: boolean;

  constructor(
    pattern: string,
    private readonly annexB: boolean,
  ) {
    this.cps = Array.from(pattern, (ch) => ch.codePointAt(0)!);
    const groups = annexB ? capturingGroups(this.cps) : { any: false, named: false };
    this.hasGroups = groups.any;
    this.hasNamedGroups = groups.named;
  }

  parse(): RegexNode {
    return this.parseDisjunction(0);
  }

  private peek(offset = 0): number | undefined {
    return this.cps[this.pos + offset];
  }

  private refuse(construct: string, position: number, why = "is not supported (not a regular construct for a DFA)"): never {
    throw new RegexSyntaxError(`${construct} ${why}`, position, construct);
  }

  private parseDisjunction(depth: number): RegexNode {
    const branches: RegexNode[] = [this.parseAlternative(depth)];
    while (this.peek() === 0x7c /* | */) {
      this.pos++;
      branches.push(this.parseAlternative(depth));
    }
    return branches.length === 1 ? branches[0]! : { kind: "alt", items: branches };
  }

  private parseAlternative(depth: number): RegexNode {
    const items: RegexNode[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === 0x7c || c === 0x29 /* ) */) break;
      const atom = this.parseTerm(depth);
      const q = this.peek();
      // Under u only atoms take quantifiers, so whatever precedes one here is an atom; a '{' is
      // always a quantifier there, and without u only where it forms one.
      const quantified = q === 0x2a || q === 0x2b || q === 0x3f || (q === 0x7b && (!this.annexB || this.braceQuantifierAhead()));
      items.push(quantified ? this.parseQuantifier(atom) : atom);
    }
    return items.length === 1 ? items[0]! : { kind: "concat", items };
  }

  private parseTerm(depth: number): RegexNode {
    const start = this.pos;
    const c = this.cps[this.pos++]!;
    switch (c) {
      case 0x5e: // ^
        return { kind: "assert", assertion: Assertion.StartOfText };
      case 0x24: // $
        return { kind: "assert", assertion: Assertion.EndOfText };
      case 0x2e: // .
        return { kind: "set", set: DOT };
      case 0x5b: // [
        return { kind: "set", set: this.parseClass() };
      case 0x28: // (
        return this.parseGroup(depth, start);
      case 0x5c: // backslash
        return this.parseAtomEscape(start);
      default:
        return { kind: "set", set: [c, c] };
    }
  }

  /** Annex B: whether the '{' at pos starts {n}, {n,} or {n,m} (else it is a literal). */
  private braceQuantifierAhead(): boolean {
    let p = this.pos + 1;
    const digitsFrom = p;
    while (isDigit(this.cps[p])) p++;
    if (p === digitsFrom) return false;
    if (this.cps[p] === 0x2c) {
      p++;
      while (isDigit(this.cps[p])) p++;
    }
    return this.cps[p] === 0x7d;
  }

  /** After an atom, at * + ? or {. Lazy forms match the same strings. */
  private parseQuantifier(item: RegexNode): RegexNode {
    const c = this.cps[this.pos++]!;
    let min = 0;
    let max = -1;
    if (c === 0x2b) min = 1;
    else if (c === 0x3f) max = 1;
    else if (c === 0x7b) {
      min = this.readNumber();
      max = min;
      if (this.peek() === 0x2c) {
        this.pos++;
        max = this.peek() === 0x7d ? -1 : this.readNumber();
      }
      this.pos++; // }
    }
    if (this.peek() === 0x3f) this.pos++;
    return { kind: "repeat", item, min, max };
  }

  /** Decimal digits; counts past 2^53 stay huge (compileRegexNode's NFA cap refuses them). */
  private readNumber(): number {
    let text = "";
    while (isDigit(this.peek())) text += String.fromCodePoint(this.cps[this.pos++]!);
    return Number(text);
  }

  /** After '(' (at `open`). */
  private parseGroup(depth: number, open: number): RegexNode {
    if (depth >= MAX_GROUP_NESTING) {
      throw new RegexTooComplexError(`pattern too complex: groups nested deeper than ${MAX_GROUP_NESTING}`, "nesting");
    }
    let look: { behind: boolean; negative: boolean } | null = null;
    if (this.peek() === 0x3f /* ? */) {
      const c = this.peek(1);
      const d = this.peek(2);
      if (c === 0x3a /* : */) this.pos += 2;
      else if (c === 0x3d || c === 0x21) look = { behind: false, negative: c === 0x21 };
      else if (c === 0x3c && (d === 0x3d || d === 0x21)) look = { behind: true, negative: d === 0x21 };
      else this.skipGroupName();
      if (look !== null) this.pos += look.behind ? 3 : 2;
    }
    const inner = this.parseDisjunction(depth + 1);
    this.pos++; // )
    return look === null ? inner : this.lookaround(inner, open, look.behind, look.negative);
  }

  /** At "?<name>". */
  private skipGroupName(): void {
    while (this.cps[this.pos] !== 0x3e) this.pos++;
    this.pos++;
  }

  /** A lookaround of one character from an ASCII class or its complement; refused otherwise. */
  private lookaround(inner: RegexNode, open: number, behind: boolean, negative: boolean): RegexNode {
    const construct = behind
      ? negative
        ? "negative lookbehind (?<!"
        : "lookbehind (?<="
      : negative
        ? "negative lookahead (?!"
        : "lookahead (?=";
    // A continuation byte ends every multi-byte character; a byte >= 0x80 starts one.
    const bytes = inner.kind === "set" ? boundaryBytes(inner.set, behind ? 0xbf : 0xff) : null;
    if (bytes === null) this.refuse(construct, open, "is supported only around one character from an ASCII class or its complement");
    if (behind) return { kind: "assert", assertion: negative ? Assertion.NotPrecededBy : Assertion.PrecededBy, set: bytes };
    return { kind: "assert", assertion: negative ? Assertion.NotFollowedBy : Assertion.FollowedBy, set: bytes, position: open };
  }

  /** After a backslash outside a class (at `start`). */
  private parseAtomEscape(start: number): RegexNode {
    const c = this.peek()!;
    if (c === 0x62 || c === 0x42) {
      this.pos++;
      return wordBoundary(c === 0x42, start);
    }
    if (isDigit(c) && c !== 0x30) {
      let end = this.pos;
      while (isDigit(this.cps[end])) end++;
      // Without u and without groups, \1…\7 are octal escapes and \8 \9 identity escapes.
      if (!this.annexB || this.hasGroups) {
        this.refuse(`backreference \\${String.fromCodePoint(...this.cps.slice(this.pos, end))}`, start);
      }
    }
    if (c === 0x6b /* k */ && (!this.annexB || this.hasNamedGroups)) this.refuse("backreference \\k<name>", start);
    const atom = this.parseCharacterEscape(start);
    return { kind: "set", set: atom.set ?? [atom.cp, atom.cp] };
  }

  /** Annex B's LegacyOctalEscapeSequence from the digit at pos: up to three octal digits, at most 0o377. */
  private readLegacyOctal(): number {
    let value = 0;
    for (let digits = 0; digits < 3 && isOctal(this.peek()); digits++) {
      const next = value * 8 + (this.peek()! - 0x30);
      if (next > 0o377) break;
      value = next;
      this.pos++;
    }
    return value;
  }

  /** Escapes valid both inside and outside classes (pos just past the backslash at `start`). */
  private parseCharacterEscape(start: number): ClassAtom {
    if (this.annexB) {
      const annexB = this.annexBEscape(start);
      if (annexB !== null) return annexB;
    }
    const c = this.cps[this.pos++]!;
    switch (c) {
      case 0x64: // d
        return { set: DIGIT };
      case 0x44:
        return { set: complementSet(DIGIT) };
      case 0x77: // w
        return { set: WORD };
      case 0x57:
        return { set: complementSet(WORD) };
      case 0x73: // s
        return { set: SPACE };
      case 0x53:
        return { set: complementSet(SPACE) };
      case 0x70: // p
      case 0x50: {
        const close = this.cps.indexOf(0x7d, this.pos);
        const name = String.fromCodePoint(...this.cps.slice(this.pos + 1, close));
        this.pos = close + 1;
        const set = propertySet(name);
        return { set: c === 0x50 ? complementSet(set) : set };
      }
      case 0x66:
        return { cp: 0x0c };
      case 0x6e:
        return { cp: 0x0a };
      case 0x72:
        return { cp: 0x0d };
      case 0x74:
        return { cp: 0x09 };
      case 0x76:
        return { cp: 0x0b };
      case 0x30:
        return { cp: 0 }; // under u, never followed by a digit
      case 0x63: // \cX
        return { cp: this.cps[this.pos++]! % 32 };
      case 0x78: // \xHH
        return { cp: this.readHex(2) };
      case 0x75: // u
        return { cp: this.readUnicodeEscape() };
      default:
        return { cp: c }; // identity escape: a syntax character, '/' or (in a class) '-'
    }
  }

  /**
   * The escapes Annex B reads differently from u (pos just past the backslash), or null for one it
   * reads the same: \p \P as letters; \x \u without their hex digits as "x" "u"; \0 and \1…\7
   * as octal and \8 \9 as digits (groups were ruled out by the caller); \c without a letter as
   * a backslash; a \u escape of a lone surrogate (a UTF-16 unit, not a character) is refused.
   */
  private annexBEscape(start: number): ClassAtom | null {
    const c = this.peek()!;
    if (c === 0x70 || c === 0x50) {
      this.pos++;
      return { cp: c };
    }
    if (c === 0x78 && this.hexAhead(1, 2) === null) {
      this.pos++;
      return { cp: c };
    }
    if (c === 0x75) {
      const lead = this.hexAhead(1, 4);
      if (lead === null) {
        this.pos++;
        return { cp: c };
      }
      if (lead >= 0xd800 && lead <= 0xdfff) {
        const trail = this.peek(5) === 0x5c && this.peek(6) === 0x75 ? this.hexAhead(7, 4) : null;
        const paired = lead <= 0xdbff && trail !== null && trail >= 0xdc00 && trail <= 0xdfff;
        if (!paired) this.refuse("lone surrogate escape \\u", start, "is not supported (a UTF-16 unit, not a character)");
      }
      return null;
    }
    if (isOctal(c)) return { cp: this.readLegacyOctal() };
    if (c === 0x38 || c === 0x39) {
      this.pos++;
      return { cp: c };
    }
    // "\c" without a control letter is a backslash, and the "c" reads on as a literal.
    if (c === 0x63 && !isAsciiLetter(this.peek(1))) return { cp: 0x5c };
    return null;
  }

  /** The value of `count` hex digits at pos + offset, or null where they are not all there. */
  private hexAhead(offset: number, count: number): number | null {
    const text = String.fromCodePoint(...this.cps.slice(this.pos + offset, this.pos + offset + count));
    return text.length === count && /^[0-9a-fA-F]+$/.test(text) ? parseInt(text, 16) : null;
  }

  /** After "\u": {H...} or HHHH, a lead surrogate escape followed by a trail one being their pair. */
  private readUnicodeEscape(): number {
    if (this.peek() === 0x7b) {
      this.pos++;
      const close = this.cps.indexOf(0x7d, this.pos);
      const cp = parseInt(String.fromCodePoint(...this.cps.slice(this.pos, close)), 16);
      this.pos = close + 1;
      return cp;
    }
    const lead = this.readHex(4);
    if (lead >= 0xd800 && lead <= 0xdbff && this.peek() === 0x5c && this.peek(1) === 0x75 && this.peek(2) !== 0x7b) {
      const saved = this.pos;
      this.pos += 2;
      const trail = this.readHexOrNull(4);
      if (trail !== null && trail >= 0xdc00 && trail <= 0xdfff) return 0x10000 + ((lead - 0xd800) << 10) + (trail - 0xdc00);
      this.pos = saved;
    }
    return lead;
  }

  private readHex(count: number): number {
    return this.readHexOrNull(count)!;
  }

  private readHexOrNull(count: number): number | null {
    const text = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + count));
    if (!/^[0-9a-fA-F]+$/.test(text) || text.length !== count) return null;
    this.pos += count;
    return parseInt(text, 16);
  }

  /** After '['. Under u a range's ends are single characters ([\w-a] is invalid). */
  private parseClass(): CodeSet {
    const negate = this.peek() === 0x5e;
    if (negate) this.pos++;
    const parts: number[] = [];
    while (this.peek() !== 0x5d /* ] */) {
      const first = this.parseClassAtom();
      if (this.peek() === 0x2d && this.peek(1) !== 0x5d && first.cp !== undefined) {
        this.pos++;
        const last = this.parseClassAtom();
        // Annex B: a class escape at a range's end makes the '-' literal ([a-\w]).
        if (last.cp === undefined) parts.push(first.cp, first.cp, 0x2d, 0x2d, ...last.set);
        else parts.push(first.cp, last.cp);
      } else if (first.set) parts.push(...first.set);
      else parts.push(first.cp, first.cp);
    }
    this.pos++;
    const set = normalizeRanges(parts);
    return negate ? complementSet(set) : set;
  }

  private parseClassAtom(): ClassAtom {
    const start = this.pos;
    const c = this.cps[this.pos++]!;
    if (c !== 0x5c) return { cp: c };
    if (this.peek() === 0x62 /* b */) {
      this.pos++;
      return { cp: 0x08 }; // backspace inside a class
    }
    if (this.peek() === 0x2d) {
      this.pos++;
      return { cp: 0x2d };
    }
    // Annex B: in a class, decimal escapes are octal or digits even where the pattern has groups.
    if (this.annexB && isDigit(this.peek()) && this.peek() !== 0x30) {
      if (isOctal(this.peek())) return { cp: this.readLegacyOctal() };
      return { cp: this.cps[this.pos++]! };
    }
    if (this.annexB && this.peek() === 0x63 /* c */ && (isDigit(this.peek(1)) || this.peek(1) === 0x5f)) {
      this.pos++;
      return { cp: this.cps[this.pos++]! % 32 }; // \c0…\c9, \c_ inside a class
    }
    return this.parseCharacterEscape(start);
  }
}

/**
 * \b (or \B when `negated`): the previous and the next character differ (agree) in being word
 * characters, with the start and end of input counting as non-word. Word characters are ASCII,
 * so conditions on the neighbouring bytes decide it exactly.
 */
function wordBoundary(negated: boolean, position: number): RegexNode {
  const before = (word: boolean): RegexNode => ({
    kind: "assert",
    assertion: word ? Assertion.PrecededBy : Assertion.NotPrecededBy,
    set: WORD,
  });
  const after = (word: boolean): RegexNode => ({
    kind: "assert",
    assertion: word ? Assertion.FollowedBy : Assertion.NotFollowedBy,
    set: WORD,
    position,
  });
  return {
    kind: "alt",
    items: [
      { kind: "concat", items: [before(true), after(negated)] },
      { kind: "concat", items: [before(false), after(!negated)] },
    ],
  };
}

/** Property sets read from the engine, by \p{..} body; bounded (a schema has a handful). */
const propertySets = new Map<string, CodeSet>();
const MAX_PROPERTY_SETS = 64;

/**
 * The code points \p{name} matches, as the engine's own Unicode data says: one test per block of
 * 256 (none or all in it, most blocks), one per code point in mixed blocks; ~50 ms for \p{L}.
 * Surrogates are left out (never in UTF-8 text).
 */
function propertySet(name: string): CodeSet {
  const known = propertySets.get(name);
  if (known) return known;
  const any = new RegExp(`\\p{${name}}`, "u");
  const all = new RegExp(`^\\p{${name}}*$`, "u");
  const one = new RegExp(`^\\p{${name}}$`, "u");
  const out: number[] = [];
  const add = (lo: number, hi: number): void => {
    const n = out.length;
    if (n > 0 && out[n - 1] === lo - 1) out[n - 1] = hi;
    else out.push(lo, hi);
  };
  const block: number[] = [];
  for (let base = 0; base <= MAX_CODE_POINT; base += 256) {
    if (base >= 0xd800 && base < 0xe000) continue;
    block.length = 0;
    for (let cp = base; cp < base + 256; cp++) block.push(cp);
    const text = String.fromCodePoint(...block);
    if (!any.test(text)) continue;
    if (all.test(text)) add(base, base + 255);
    else for (const cp of block) if (one.test(String.fromCodePoint(cp))) add(cp, cp);
  }
  if (propertySets.size >= MAX_PROPERTY_SETS) propertySets.clear();
  propertySets.set(name, out);
  return out;
}
