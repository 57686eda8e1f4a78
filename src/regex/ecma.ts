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
  checkWithEngine(pattern);
  return new EcmaParser(pattern).parse();
}

function checkWithEngine(pattern: string): void {
  try {
    new RegExp(pattern, "u");
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new RegexSyntaxError(`invalid ECMA-262 pattern (u flag): ${err.message}`, 0, "invalid pattern");
  }
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** A class atom: one code point (usable as a range end) or a set (\d, \p{..}...). */
type ClassAtom = { cp: number; set?: undefined } | { cp?: undefined; set: CodeSet };

/** Reader of patterns the engine accepted under the u flag (so its grammar is not re-checked). */
class EcmaParser {
  private readonly cps: number[];
  private pos = 0;

  constructor(pattern: string) {
    this.cps = Array.from(pattern, (ch) => ch.codePointAt(0)!);
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
      // Under u only atoms take quantifiers, so whatever precedes one here is an atom.
      items.push(q === 0x2a || q === 0x2b || q === 0x3f || q === 0x7b ? this.parseQuantifier(atom) : atom);
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
      this.refuse(`backreference \\${String.fromCodePoint(...this.cps.slice(this.pos, end))}`, start);
    }
    if (c === 0x6b /* k */) this.refuse("backreference \\k<name>", start);
    const atom = this.parseCharacterEscape();
    return { kind: "set", set: atom.set ?? [atom.cp, atom.cp] };
  }

  /** Escapes valid both inside and outside classes (pos just past the backslash). */
  private parseCharacterEscape(): ClassAtom {
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
        parts.push(first.cp, last.cp!);
      } else if (first.set) parts.push(...first.set);
      else parts.push(first.cp, first.cp);
    }
    this.pos++;
    const set = normalizeRanges(parts);
    return negate ? complementSet(set) : set;
  }

  private parseClassAtom(): ClassAtom {
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
    return this.parseCharacterEscape();
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
