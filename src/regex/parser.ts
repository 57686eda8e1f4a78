import { type CodeSet, MAX_CODE_POINT, caseClose, complementSet, normalizeRanges } from "./charset.js";
import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
import type { ByteDfa } from "./dfa/types.js";
import { UNICODE_DIGIT, UNICODE_SPACE, UNICODE_WORD } from "./unicode-classes-data.js";

/** Deeper group nesting is refused before it can exhaust the JS stack in the recursive passes. */
export const MAX_GROUP_NESTING = 200;

/**
 * Zero-width assertions we can express in a byte DFA.
 * - StartOfText: `^` (no m), `\A`: only at offset 0.
 * - StartOfLine: `^` under m: offset 0 or after "\n".
 * - EndOrFinalNewline: `$` (no m), Python: the rest of the text is "" or "\n".
 * - EndOfLine: `$` under m: the next char is "\n" or the text ends.
 * - EndOfText: `\Z`: the rest of the text is "".
 */
export enum Assertion {
  StartOfText = 1,
  StartOfLine = 2,
  EndOfLine = 3,
  EndOrFinalNewline = 4,
  EndOfText = 5,
  /** (?<=X) / (?<!X) with X one ASCII character or class: a condition on the previous byte. */
  PrecededBy = 6,
  NotPrecededBy = 7,
  /** (?=X) / (?!X) with X one character from an ASCII class or its complement: a condition on the next byte. */
  FollowedBy = 8,
  NotFollowedBy = 9,
}

export type RegexNode =
  | { readonly kind: "set"; readonly set: CodeSet }
  | { readonly kind: "concat"; readonly items: RegexNode[] }
  | { readonly kind: "alt"; readonly items: RegexNode[] }
  | { readonly kind: "repeat"; readonly item: RegexNode; readonly min: number; readonly max: number } // max -1 = unbounded
  | { readonly kind: "assert"; readonly assertion: Assertion; readonly set?: CodeSet; readonly position?: number }
  /**
   * Exactly the byte strings `dfa` accepts (full match over bytes, no UTF-8 decoding): how callers
   * compose languages they already hold as DFAs (a product's result, a schema's keys).
   */
  | { readonly kind: "dfa"; readonly dfa: ByteDfa }
  /** The strings read on the paths of a graph from `start` to its accepting states (graph.ts). */
  | { readonly kind: "graph"; readonly graph: GraphOfNodes; readonly start: number };

/** States joined by edges that each read a RegexNode (null: nothing); see graph.ts. */
export interface GraphOfNodes {
  readonly states: number;
  readonly from: readonly number[];
  readonly to: readonly number[];
  readonly reads: readonly (RegexNode | null)[];
  readonly accepting: readonly number[];
}

export interface RegexFlags {
  ignoreCase: boolean; // i
  dotAll: boolean; // s
  multiline: boolean; // m
  verbose: boolean; // x
  asciiCase: boolean; // a: case folding limited to ASCII letters
}

/** Python's MAXREPEAT on 64-bit builds is 2**32 - 1; larger counts are refused like Python does. */
const MAX_REPEAT_COUNT = 0xffffffff;

export function parseFlagString(flags: string | undefined): RegexFlags {
  const result: RegexFlags = { ignoreCase: false, dotAll: false, multiline: false, verbose: false, asciiCase: false };
  let sawUnicode = false;
  for (const ch of flags ?? "") {
    switch (ch) {
      case "i":
        result.ignoreCase = true;
        break;
      case "s":
        result.dotAll = true;
        break;
      case "m":
        result.multiline = true;
        break;
      case "x":
        result.verbose = true;
        break;
      case "a":
        result.asciiCase = true;
        break;
      case "u":
        sawUnicode = true;
        break;
      case "L":
      case "l":
        throw new RegexSyntaxError("locale flag L is not supported (Python allows it only for bytes patterns)", 0, "flag L");
      default:
        throw new RegexSyntaxError(`unknown flag '${ch}'`, 0, `flag ${ch}`);
    }
  }
  if (sawUnicode && result.asciiCase) throw new RegexSyntaxError("flags 'a' and 'u' are incompatible", 0, "flags a and u");
  return result;
}

const WORD_SET: CodeSet = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
const DIGIT_SET: CodeSet = [0x30, 0x39];
const SPACE_SET: CodeSet = [0x09, 0x0d, 0x20, 0x20]; // [ \t\n\r\f\v]
const NEWLINE = 0x0a;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isOctal = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x37;
const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
const isAsciiAlnum = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isVerboseSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/** A class escape's value: one code point, or a category set (not usable as a range end). */
type ClassAtom = { cp: number; set?: undefined } | { cp?: undefined; set: CodeSet };

const enum ItemType {
  Atom,
  Repeat,
  Assert,
}

class Parser {
  private readonly cps: number[];
  private pos = 0;
  private globalFlags: RegexFlags;
  private readonly groupNames = new Set<string>();

  constructor(
    pattern: string,
    private readonly topFlags: RegexFlags,
  ) {
    this.cps = Array.from(pattern, (ch) => ch.codePointAt(0)!);
    this.globalFlags = topFlags;
  }

  parse(): RegexNode {
    const node = this.parseAlternation(this.topFlags, 0);
    if (this.pos < this.cps.length) {
      // Only an unbalanced ')' stops the top-level alternation early.
      throw new RegexSyntaxError("unbalanced parenthesis", this.pos, "unbalanced )");
    }
    return node;
  }

  private error(message: string, position: number, construct?: string): never {
    throw new RegexSyntaxError(message, position, construct);
  }

  private refuse(construct: string, position: number, why = "is not supported (not a regular construct for a DFA)"): never {
    throw new RegexSyntaxError(`${construct} ${why}`, position, construct);
  }

  private peek(offset = 0): number | undefined {
    return this.cps[this.pos + offset];
  }

  private fold(set: CodeSet, flags: RegexFlags): CodeSet {
    return flags.ignoreCase ? caseClose(set, flags.asciiCase) : set;
  }

  private parseAlternation(flags: RegexFlags, depth: number): RegexNode {
    const branches: RegexNode[] = [this.parseSequence(flags, depth)];
    while (this.peek() === 0x7c /* | */) {
      this.pos++;
      // Global flags (only legal at the very start) apply to every top-level branch.
      branches.push(this.parseSequence(depth === 0 ? this.globalFlags : flags, depth));
    }
    return branches.length === 1 ? branches[0]! : { kind: "alt", items: branches };
  }

  private parseSequence(inherited: RegexFlags, depth: number): RegexNode {
    let flags = inherited;
    const items: RegexNode[] = [];
    const types: ItemType[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === 0x7c || c === 0x29 /* ) */) break;
      const start = this.pos;
      if (flags.verbose) {
        if (isVerboseSpace(c)) {
          this.pos++;
          continue;
        }
        if (c === 0x23 /* # */) {
          while (this.pos < this.cps.length && this.cps[this.pos] !== NEWLINE) this.pos++;
          continue;
        }
      }
      if (c === 0x2a || c === 0x2b || c === 0x3f || c === 0x7b) {
        // * + ? {
        const quant = this.parseQuantifier();
        if (quant === null) {
          // A '{' that does not form {m}, {m,}, {,n}, {m,n} is a literal, as in Python.
          this.pos = start + 1;
          items.push({ kind: "set", set: [0x7b, 0x7b] });
          types.push(ItemType.Atom);
          continue;
        }
        const lastType = types[types.length - 1];
        if (items.length === 0 || lastType === ItemType.Assert) this.error("nothing to repeat", start, "nothing to repeat");
        if (lastType === ItemType.Repeat) this.error("multiple repeat", start, "multiple repeat");
        if (this.peek() === 0x3f)
          this.pos++; // lazy: same language under full match
        else if (this.peek() === 0x2b) this.refuse("possessive quantifier", this.pos);
        items[items.length - 1] = { kind: "repeat", item: items[items.length - 1]!, min: quant.min, max: quant.max };
        types[types.length - 1] = ItemType.Repeat;
        continue;
      }
      if (c === 0x28 /* ( */) {
        const group = this.parseGroup(flags, depth, items.length === 0);
        if (group === "comment") continue;
        if (group.kind === "globalFlags") {
          flags = group.flags;
          this.globalFlags = group.flags;
          continue;
        }
        items.push(group.node);
        types.push(ItemType.Atom);
        continue;
      }
      this.pos++;
      switch (c) {
        case 0x5b: // [
          items.push({ kind: "set", set: this.parseClass(flags, start) });
          types.push(ItemType.Atom);
          break;
        case 0x2e: // .
          items.push({ kind: "set", set: flags.dotAll ? [0, MAX_CODE_POINT] : [0, 0x09, 0x0b, MAX_CODE_POINT] });
          types.push(ItemType.Atom);
          break;
        case 0x5e: // ^
          items.push({ kind: "assert", assertion: flags.multiline ? Assertion.StartOfLine : Assertion.StartOfText });
          types.push(ItemType.Assert);
          break;
        case 0x24: // $
          items.push({ kind: "assert", assertion: flags.multiline ? Assertion.EndOfLine : Assertion.EndOrFinalNewline });
          types.push(ItemType.Assert);
          break;
        case 0x5c: {
          // backslash
          const node = this.parseEscape(flags, start);
          items.push(node);
          types.push(node.kind === "assert" ? ItemType.Assert : ItemType.Atom);
          break;
        }
        default:
          items.push({ kind: "set", set: this.fold([c, c], flags) });
          types.push(ItemType.Atom);
      }
    }
    return items.length === 1 ? items[0]! : { kind: "concat", items };
  }

  /** Reads a quantifier at pos; null when a '{' is not a valid counted repeat (then literal). */
  private parseQuantifier(): { min: number; max: number } | null {
    const c = this.cps[this.pos++]!;
    if (c === 0x2a) return { min: 0, max: -1 };
    if (c === 0x2b) return { min: 1, max: -1 };
    if (c === 0x3f) return { min: 0, max: 1 };
    const open = this.pos - 1;
    if (this.peek() === 0x7d) return null;
    let lo = "";
    let hi = "";
    while (isDigit(this.peek())) lo += String.fromCodePoint(this.cps[this.pos++]!);
    if (this.peek() === 0x2c) {
      this.pos++;
      while (isDigit(this.peek())) hi += String.fromCodePoint(this.cps[this.pos++]!);
    } else {
      hi = lo;
    }
    if (this.peek() !== 0x7d) return null;
    this.pos++;
    const min = lo ? Number(lo) : 0;
    const max = hi ? Number(hi) : -1;
    if (min >= MAX_REPEAT_COUNT || max >= MAX_REPEAT_COUNT) this.error("the repetition number is too large", open, "repeat count");
    if (max !== -1 && max < min) this.error("min repeat greater than max repeat", open + 1, "repeat range");
    return { min, max };
  }

  private parseGroup(
    flags: RegexFlags,
    depth: number,
    atSequenceStart: boolean,
  ): "comment" | { kind: "node"; node: RegexNode } | { kind: "globalFlags"; flags: RegexFlags } {
    const open = this.pos;
    if (depth >= MAX_GROUP_NESTING) {
      throw new RegexTooComplexError(`pattern too complex: groups nested deeper than ${MAX_GROUP_NESTING}`, "nesting");
    }
    this.pos++; // (
    let inner = flags;
    if (this.peek() === 0x3f /* ? */) {
      this.pos++;
      const c = this.peek();
      if (c === 0x3a /* : */) {
        this.pos++;
      } else if (c === 0x50 /* P */) {
        this.pos++;
        if (this.peek() === 0x3c /* < */) {
          this.pos++;
          this.readGroupName();
        } else if (this.peek() === 0x3d /* = */) {
          this.refuse("backreference (?P=name)", open);
        } else if (this.peek() === 0x3e /* > */) {
          this.refuse("recursion (?P>name)", open);
        } else {
          this.error("unknown extension ?P", open, "unknown extension");
        }
      } else if (c === 0x3c /* < */) {
        const n = this.peek(1);
        if (n === 0x3d || n === 0x21) return { kind: "node", node: this.parseLookbehind(flags, depth, open, n === 0x21) };
        this.pos++;
        this.readGroupName();
      } else if (c === 0x3d || c === 0x21) {
        return { kind: "node", node: this.parseLookahead(flags, depth, open, c === 0x21) };
      } else if (c === 0x3e) {
        this.refuse("atomic group (?>", open);
      } else if (c === 0x28) {
        this.refuse("conditional group (?(", open);
      } else if (c === 0x23 /* # */) {
        while (this.pos < this.cps.length && this.cps[this.pos] !== 0x29) this.pos++;
        if (this.pos >= this.cps.length) this.error("missing ), unterminated comment", open, "unterminated comment");
        this.pos++;
        return "comment";
      } else {
        const parsed = this.parseInlineFlags(flags, open);
        if (parsed.global) {
          if (depth > 0 || !atSequenceStart || this.sawItemBefore(open)) {
            this.error("global flags not at the start of the expression", open, "global flags");
          }
          return { kind: "globalFlags", flags: parsed.flags };
        }
        inner = parsed.flags;
      }
    }
    const node = this.parseAlternation(inner, depth + 1);
    if (this.peek() !== 0x29) this.error("missing ), unterminated subpattern", open, "unterminated group");
    this.pos++;
    return { kind: "node", node };
  }

  /**
   * A lookbehind of one ASCII character or class (e.g. Lark's ESCAPED_STRING uses (?<!\\)) is
   * a regular condition on the previous byte; anything longer is refused. pos is at '<'.
   */
  private parseLookbehind(flags: RegexFlags, depth: number, open: number, negative: boolean): RegexNode {
    const construct = negative ? "negative lookbehind (?<!" : "lookbehind (?<=";
    this.pos += 2;
    const inner = this.parseAlternation(flags, depth + 1);
    if (this.peek() !== 0x29) this.error("missing ), unterminated subpattern", open, "unterminated group");
    this.pos++;
    const bytes = inner.kind === "set" ? boundaryBytes(inner.set, 0xbf) : null;
    if (bytes === null) {
      this.refuse(construct, open, "is supported only around one character from an ASCII class or its complement");
    }
    return { kind: "assert", assertion: negative ? Assertion.NotPrecededBy : Assertion.PrecededBy, set: bytes };
  }

  /** A lookahead of one character from an ASCII class or its complement; pos is at '=' or '!'. */
  private parseLookahead(flags: RegexFlags, depth: number, open: number, negative: boolean): RegexNode {
    const construct = negative ? "negative lookahead (?!" : "lookahead (?=";
    this.pos += 1;
    const inner = this.parseAlternation(flags, depth + 1);
    if (this.peek() !== 0x29) this.error("missing ), unterminated subpattern", open, "unterminated group");
    this.pos++;
    const bytes = inner.kind === "set" ? boundaryBytes(inner.set, 0xff) : null;
    if (bytes === null) {
      this.refuse(construct, open, "is supported only around one character from an ASCII class or its complement");
    }
    return {
      kind: "assert",
      assertion: negative ? Assertion.NotFollowedBy : Assertion.FollowedBy,
      set: bytes,
      position: open,
    };
  }

  /** True when anything other than global-flag groups came before `position`. */
  private sawItemBefore(position: number): boolean {
    let p = 0;
    while (p < position) {
      if (this.cps[p] === 0x28 && this.cps[p + 1] === 0x3f) {
        let q = p + 2;
        while (q < position && this.cps[q] !== 0x29 && this.cps[q] !== 0x3a) q++;
        if (this.cps[q] === 0x29 && /^[aiLmsux]+$/.test(String.fromCodePoint(...this.cps.slice(p + 2, q)))) {
          p = q + 1;
          continue;
        }
      }
      if (this.globalFlags.verbose && isVerboseSpace(this.cps[p]!)) {
        p++;
        continue;
      }
      return true;
    }
    return false;
  }

  private parseInlineFlags(flags: RegexFlags, open: number): { flags: RegexFlags; global: boolean } {
    const result = { ...flags };
    let negative = false;
    let sawUnicode = false;
    let sawAscii = false;
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.error("missing -, : or )", this.pos, "unterminated flags");
      this.pos++;
      if (c === 0x29 /* ) */) {
        if (negative) this.error("missing flag", this.pos - 1, "inline flags");
        if (sawAscii && sawUnicode) this.error("bad inline flags: flags 'a' and 'u' are incompatible", open, "inline flags");
        return { flags: result, global: true };
      }
      if (c === 0x3a /* : */) {
        if (sawAscii && sawUnicode) this.error("bad inline flags: flags 'a' and 'u' are incompatible", open, "inline flags");
        return { flags: result, global: false };
      }
      if (c === 0x2d /* - */) {
        if (negative) this.error("bad inline flags", this.pos - 1, "inline flags");
        negative = true;
        continue;
      }
      const on = !negative;
      switch (c) {
        case 0x69:
          result.ignoreCase = on;
          break;
        case 0x73:
          result.dotAll = on;
          break;
        case 0x6d:
          result.multiline = on;
          break;
        case 0x78:
          result.verbose = on;
          break;
        case 0x61:
          if (negative) this.error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", this.pos - 1, "inline flags");
          result.asciiCase = true;
          sawAscii = true;
          break;
        case 0x75:
          if (negative) this.error("bad inline flags: cannot turn off flags 'a', 'u' and 'L'", this.pos - 1, "inline flags");
          result.asciiCase = false;
          sawUnicode = true;
          break;
        case 0x4c:
          this.refuse("locale flag (?L)", open, "is not supported (Python allows it only for bytes patterns)");
          break;
        default:
          this.error("unknown extension ?" + String.fromCodePoint(c), open + 1, "unknown extension");
      }
    }
  }

  private readGroupName(): void {
    const start = this.pos;
    while (this.pos < this.cps.length && this.cps[this.pos] !== 0x3e) this.pos++;
    if (this.pos >= this.cps.length) this.error("missing >, unterminated name", start, "group name");
    const name = String.fromCodePoint(...this.cps.slice(start, this.pos));
    this.pos++;
    if (!/^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(name)) {
      this.error(`bad character in group name '${name}'`, start, "group name");
    }
    if (this.groupNames.has(name)) this.error(`redefinition of group name '${name}'`, start, "group name");
    this.groupNames.add(name);
  }

  /** After a backslash outside a class (pos is just past it). */
  private parseEscape(flags: RegexFlags, start: number): RegexNode {
    const c = this.peek();
    if (c === undefined) this.error("bad escape (end of pattern)", start, "trailing backslash");
    switch (c) {
      case 0x41:
        this.pos++;
        return { kind: "assert", assertion: Assertion.StartOfText }; // \A
      case 0x5a:
        this.pos++;
        return { kind: "assert", assertion: Assertion.EndOfText }; // \Z
      case 0x62:
        return this.refuse("word boundary \\b", start, "is not supported (needs lookaround; not expressible in our byte DFA)");
      case 0x42:
        return this.refuse("non-word boundary \\B", start, "is not supported (needs lookaround; not expressible in our byte DFA)");
      case 0x6b: // \k<name>
        if (this.peek(1) === 0x3c) this.refuse("backreference \\k<name>", start);
        break;
      default:
        break;
    }
    if (isDigit(c) && c !== 0x30) {
      // Python: three octal digits form an octal escape, anything else is a group reference.
      if (isOctal(c) && isOctal(this.peek(1)) && isOctal(this.peek(2))) {
        const value = parseInt(String.fromCodePoint(c!, this.peek(1)!, this.peek(2)!), 8);
        if (value > 0o377) this.error(`octal escape value outside of range 0-0o377`, start, "octal escape");
        this.pos += 3;
        return { kind: "set", set: this.fold([value, value], flags) };
      }
      let end = this.pos;
      while (isDigit(this.cps[end])) end++;
      this.refuse(`backreference \\${String.fromCodePoint(...this.cps.slice(this.pos, Math.min(end, this.pos + 2)))}`, start);
    }
    const atom = this.parseCommonEscape(start, flags);
    if (atom.set) return { kind: "set", set: atom.set };
    return { kind: "set", set: this.fold([atom.cp, atom.cp], flags) };
  }

  /** Inside a negated class [^...] the items' polarity flips. */
  private inNegatedClass = false;

  /** ASCII or Python's Unicode version of \d \w \s, by the polarity the set ends up with. */
  private category(ascii: CodeSet, unicode: readonly number[], f: RegexFlags, complemented: boolean): CodeSet {
    if (f.asciiCase) return ascii;
    return complemented !== this.inNegatedClass ? [...unicode] : ascii;
  }

  /**
   * Escapes valid both inside and outside classes (pos just past the backslash); returns
   * a code point or a category set. Categories are ASCII-only and are folded like the
   * equivalent explicit class under (?i): \w ≡ [a-zA-Z0-9_], \W ≡ [^a-zA-Z0-9_].
   */
  private parseCommonEscape(start: number, f: RegexFlags): ClassAtom {
    const c = this.cps[this.pos++]!;
    switch (c) {
      // Positive classes are ASCII (a subset of Python's); where the class ends up negated
      // (\D, or \d inside [^...]) the full Unicode class is complemented, so the result is
      // still a subset of what Python accepts.
      case 0x64:
        return { set: this.fold(this.category(DIGIT_SET, UNICODE_DIGIT, f, false), f) }; // \d
      case 0x44:
        return { set: complementSet(this.fold(this.category(DIGIT_SET, UNICODE_DIGIT, f, true), f)) };
      case 0x77:
        return { set: this.fold(this.category(WORD_SET, UNICODE_WORD, f, false), f) };
      case 0x57:
        return { set: complementSet(this.fold(this.category(WORD_SET, UNICODE_WORD, f, true), f)) };
      case 0x73:
        return { set: this.category(SPACE_SET, UNICODE_SPACE, f, false) };
      case 0x53:
        return { set: complementSet(this.category(SPACE_SET, UNICODE_SPACE, f, true)) };
      case 0x6e:
        return { cp: 0x0a };
      case 0x74:
        return { cp: 0x09 };
      case 0x72:
        return { cp: 0x0d };
      case 0x66:
        return { cp: 0x0c };
      case 0x76:
        return { cp: 0x0b };
      case 0x61:
        return { cp: 0x07 };
      case 0x30: {
        // \0 plus up to two octal digits
        let digits = "0";
        while (digits.length < 3 && isOctal(this.peek())) digits += String.fromCodePoint(this.cps[this.pos++]!);
        return { cp: parseInt(digits, 8) };
      }
      case 0x78:
        return { cp: this.readHex(2, start, "\\x") };
      case 0x75:
        return { cp: this.readHex(4, start, "\\u") };
      case 0x55: {
        const cp = this.readHex(8, start, "\\U");
        if (cp > MAX_CODE_POINT) this.error(`bad escape \\U${cp.toString(16)}`, start, "\\U escape");
        return { cp };
      }
      case 0x4e:
        return this.refuse("named character escape \\N{...}", start);
      case 0x70:
      case 0x50:
        return this.refuse(`Unicode property escape \\${String.fromCodePoint(c)}`, start, "is not supported (Python re has no \\p)");
      default:
        break;
    }
    if (isAsciiAlnum(c)) {
      this.error(`bad escape \\${String.fromCodePoint(c)}`, start, `escape \\${String.fromCodePoint(c)}`);
    }
    return { cp: c };
  }

  private readHex(count: number, start: number, name: string): number {
    let text = "";
    for (let i = 0; i < count; i++) {
      const h = this.peek();
      if (!isHex(h)) this.error(`incomplete escape ${name}${text}`, start, `${name} escape`);
      text += String.fromCodePoint(h!);
      this.pos++;
    }
    return parseInt(text, 16);
  }

  /** After '['; mirrors Python's _parse for sets (']' first is literal, '-' rules, ranges). */
  private parseClass(flags: RegexFlags, open: number): CodeSet {
    let negate = false;
    if (this.peek() === 0x5e) {
      negate = true;
      this.pos++;
    }
    const itemsStart = this.pos;
    const parts: number[] = [];
    const outerNegated = this.inNegatedClass;
    this.inNegatedClass = negate;
    const addAtom = (atom: ClassAtom): void => {
      if (atom.set) parts.push(...atom.set);
      else {
        const folded = this.fold([atom.cp, atom.cp], flags);
        parts.push(...folded);
      }
    };
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.error("unterminated character set", open, "unterminated class");
      const itemPos = this.pos;
      this.pos++;
      if (c === 0x5d && itemPos !== itemsStart) break;
      const first = c === 0x5c ? this.parseClassEscape(flags, itemPos) : { cp: c };
      if (this.peek() === 0x2d /* - */) {
        this.pos++;
        const t = this.peek();
        if (t === undefined) this.error("unterminated character set", open, "unterminated class");
        const thatPos = this.pos;
        this.pos++;
        if (t === 0x5d) {
          addAtom(first);
          parts.push(0x2d, 0x2d);
          break;
        }
        const second = t === 0x5c ? this.parseClassEscape(flags, thatPos) : { cp: t };
        if (first.cp === undefined || second.cp === undefined) {
          this.error("bad character range", itemPos, "class range");
        }
        if (second.cp < first.cp) this.error("bad character range", itemPos, "class range");
        parts.push(...this.fold([first.cp, second.cp], flags));
      } else {
        addAtom(first);
      }
    }
    this.inNegatedClass = outerNegated;
    const set = normalizeRanges(parts);
    return negate ? complementSet(set) : set;
  }

  private parseClassEscape(flags: RegexFlags, start: number): ClassAtom {
    const c = this.peek();
    if (c === undefined) this.error("unterminated character set", start, "unterminated class");
    if (c === 0x62) {
      this.pos++;
      return { cp: 0x08 };
    } // \b is backspace inside a class
    if (isOctal(c) && c !== 0x30) {
      let digits = "";
      while (digits.length < 3 && isOctal(this.peek())) digits += String.fromCodePoint(this.cps[this.pos++]!);
      const value = parseInt(digits, 8);
      if (value > 0o377) this.error("octal escape value outside of range 0-0o377", start, "octal escape");
      return { cp: value };
    }
    if (c === 0x41 || c === 0x5a || c === 0x42 || (isDigit(c) && c !== 0x30)) {
      this.pos++;
      this.error(`bad escape \\${String.fromCodePoint(c)}`, start, `escape \\${String.fromCodePoint(c)}`);
    }
    return this.parseCommonEscape(start, flags);
  }
}

/**
 * The byte set equivalent to "the previous (or next) character is in `set`", or null if there
 * is none: the set's non-ASCII part must be empty or everything. Then bytes 0x80..highByte
 * stand for any non-ASCII character: a continuation byte ends every multi-byte character
 * (lookbehind, highByte 0xbf) and a byte >= 0x80 starts one (lookahead, highByte 0xff).
 */
export function boundaryBytes(set: CodeSet, highByte: number): number[] | null {
  const ascii: number[] = [];
  const high: number[] = [];
  for (let i = 0; i < set.length; i += 2) {
    const lo = set[i]!;
    const hi = set[i + 1]!;
    if (lo <= 0x7f) ascii.push(lo, Math.min(hi, 0x7f));
    if (hi >= 0x80) high.push(Math.max(lo, 0x80), hi);
  }
  if (high.length === 0) return ascii.length > 0 ? ascii : null;
  const everything = high.length === 2 && high[0] === 0x80 && high[1] === MAX_CODE_POINT;
  const everythingButSurrogates =
    high.length === 4 && high[0] === 0x80 && high[1] === 0xd7ff && high[2] === 0xe000 && high[3] === MAX_CODE_POINT;
  if (!everything && !everythingButSurrogates) return null;
  return [...ascii, 0x80, highByte];
}

export function parseRegex(pattern: string, flags: RegexFlags): RegexNode {
  return new Parser(pattern, flags).parse();
}
