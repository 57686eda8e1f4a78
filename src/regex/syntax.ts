/**
 * The one reader of Python `re` pattern text: a recursive descent as sre_parse's, over code
 * points, into a syntax tree that keeps what the text says (groups, lazy quantifiers,
 * lookarounds, backreferences, word boundaries, each node with the flags in force where it was
 * written). Two kinds of readers use the tree:
 * - the regex stage lowers it to the automaton's RegexNode (parser.ts's lowerSyntax), refusing
 *   there what a byte DFA cannot express, with the construct's name and position;
 * - the grammar stage's Lark lexer turns it into a JS RegExp with Python's match preferences,
 *   Python's width of a terminal and random samples (grammar/pyregex-*.ts).
 * Syntax errors are Python's, as RegexSyntaxError with code point positions (re.error.pos).
 *
 * Two readings differ on purpose (`python`): user patterns (the default) also accept the
 * JavaScript spelling `(?<name>…)` and leave backreferences, whatever group they name, for the
 * lowering to refuse; Lark terminals (`python: true`) are read exactly as Python 3.11 reads them:
 * `(?<name>` is an unknown extension, a backreference must name a closed group, a lookbehind
 * must have a fixed width.
 */
import { MAX_CODE_POINT, normalizeRanges } from "./charset.js";
import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";

/** Deeper group nesting is refused before it can exhaust the JS stack in the recursive passes. */
export const MAX_GROUP_NESTING = 200;

/** Python's MAXREPEAT on 64-bit builds is 2**32 - 1; larger counts are refused like Python does. */
const MAX_REPEAT_COUNT = 0xffffffff;

export type ClassEscape = "d" | "D" | "w" | "W" | "s" | "S";

/**
 * A node of the syntax tree. A set holds its explicit members (`ranges`, unfolded, normalized
 * [lo, hi] pairs) and its class escapes, under the flags where it was written; `negated` only for
 * `[^…]`. Non-capturing groups are their bodies. `at`: the code point offset where a construct
 * the lowering may refuse begins.
 */
export type RegexSyntaxNode =
  | { k: "set"; ranges: number[]; classes: ClassEscape[]; negated: boolean; caseless: boolean; ascii: boolean }
  | { k: "any"; dotAll: boolean }
  | { k: "seq"; items: RegexSyntaxNode[] }
  | { k: "alt"; alts: RegexSyntaxNode[] }
  | { k: "group"; body: RegexSyntaxNode; index: number; name?: string }
  | { k: "rep"; body: RegexSyntaxNode; min: number; max: number; lazy: boolean } // max Infinity = unbounded
  | { k: "assert"; kind: "bol" | "eol" | "bos" | "eos" | "wordb" | "nwordb"; multiline: boolean; at: number }
  | { k: "look"; body: RegexSyntaxNode; behind: boolean; negated: boolean; at: number }
  | { k: "backref"; index: number; at: number; spelling: string };

export type SetNode = Extract<RegexSyntaxNode, { k: "set" }>;

/** A node's direct children, in order (none for sets, assertions and backreferences). */
export function syntaxChildren(n: RegexSyntaxNode): readonly RegexSyntaxNode[] {
  switch (n.k) {
    case "seq":
      return n.items;
    case "alt":
      return n.alts;
    case "group":
    case "rep":
    case "look":
      return [n.body];
    default:
      return [];
  }
}

/** A whole pattern read: its tree, and its capturing groups. */
export interface ParsedRegex {
  readonly root: RegexSyntaxNode;
  readonly groupCount: number;
  readonly groupNames: ReadonlyMap<string, number>;
}

export interface RegexFlags {
  ignoreCase: boolean; // i
  dotAll: boolean; // s
  multiline: boolean; // m
  verbose: boolean; // x
  asciiCase: boolean; // a: case folding (and \d \w \s) limited to ASCII
}

export interface ReadOptions {
  /** The flags the whole pattern starts with (compile options); default none. */
  readonly flags?: RegexFlags;
  /** Read exactly as Python 3.11 does (Lark terminals); see the header. */
  readonly python?: boolean;
  /** Deepest group nesting (RegexTooComplexError "nesting" beyond); default MAX_GROUP_NESTING. */
  readonly maxNesting?: number;
}

export const NO_FLAGS: RegexFlags = { ignoreCase: false, dotAll: false, multiline: false, verbose: false, asciiCase: false };

export function parseFlagString(flags: string | undefined): RegexFlags {
  const result: RegexFlags = { ...NO_FLAGS };
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

/** Reads a Python `re` pattern (see the header); throws RegexSyntaxError or RegexTooComplexError. */
export function readRegexSyntax(pattern: string, options: ReadOptions = {}): ParsedRegex {
  return new SyntaxReader(pattern, options).read();
}

const NEWLINE = 0x0a;
const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isOctal = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x37;
const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
const isAsciiAlnum = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isVerboseSpace = (c: number): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/** A class item: one code point, or a class escape (not usable as a range end). */
type ClassAtom = { cp: number; escape?: undefined } | { cp?: undefined; escape: ClassEscape };

/** What a sequence item is, for Python's "nothing to repeat" and "multiple repeat". */
const enum ItemType {
  Atom,
  Repeat,
  /** ^ $ \A \Z \b \B (sre's AT codes): nothing to repeat. */
  Assert,
}

class SyntaxReader {
  private readonly cps: number[];
  private pos = 0;
  private globalFlags: RegexFlags;
  private readonly python: boolean;
  private readonly maxNesting: number;
  private groupCount = 0;
  private readonly groupNames = new Map<string, number>();
  /** Capturing groups not closed yet (Python: "cannot refer to an open group"). */
  private readonly openGroups = new Set<number>();

  constructor(pattern: string, options: ReadOptions) {
    this.cps = Array.from(pattern, (ch) => ch.codePointAt(0)!);
    this.globalFlags = options.flags ?? NO_FLAGS;
    this.python = options.python ?? false;
    this.maxNesting = options.maxNesting ?? MAX_GROUP_NESTING;
  }

  read(): ParsedRegex {
    const root = this.parseAlternation(this.globalFlags, 0);
    if (this.pos < this.cps.length) {
      // Only an unbalanced ')' stops the top-level alternation early.
      throw new RegexSyntaxError("unbalanced parenthesis", this.pos, "unbalanced )");
    }
    return { root, groupCount: this.groupCount, groupNames: this.groupNames };
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

  private set(ranges: number[], classes: ClassEscape[], negated: boolean, flags: RegexFlags): SetNode {
    return { k: "set", ranges, classes, negated, caseless: flags.ignoreCase, ascii: flags.asciiCase };
  }

  private parseAlternation(flags: RegexFlags, depth: number): RegexSyntaxNode {
    const branches: RegexSyntaxNode[] = [this.parseSequence(flags, depth)];
    while (this.peek() === 0x7c /* | */) {
      this.pos++;
      // Global flags (only legal at the very start) apply to every top-level branch.
      branches.push(this.parseSequence(depth === 0 ? this.globalFlags : flags, depth));
    }
    return branches.length === 1 ? branches[0]! : { k: "alt", alts: branches };
  }

  private parseSequence(inherited: RegexFlags, depth: number): RegexSyntaxNode {
    let flags = inherited;
    const items: RegexSyntaxNode[] = [];
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
          items.push(this.set([0x7b, 0x7b], [], false, flags));
          types.push(ItemType.Atom);
          continue;
        }
        const lastType = types[types.length - 1];
        if (items.length === 0 || lastType === ItemType.Assert) this.error("nothing to repeat", start, "nothing to repeat");
        if (lastType === ItemType.Repeat) this.error("multiple repeat", start, "multiple repeat");
        let lazy = false;
        if (this.peek() === 0x3f) {
          this.pos++;
          lazy = true;
        } else if (this.peek() === 0x2b) this.refuse("possessive quantifier", this.pos);
        items[items.length - 1] = { k: "rep", body: items[items.length - 1]!, min: quant.min, max: quant.max, lazy };
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
          items.push(this.parseClass(flags, start));
          types.push(ItemType.Atom);
          break;
        case 0x2e: // .
          items.push({ k: "any", dotAll: flags.dotAll });
          types.push(ItemType.Atom);
          break;
        case 0x5e: // ^
          items.push({ k: "assert", kind: "bol", multiline: flags.multiline, at: start });
          types.push(ItemType.Assert);
          break;
        case 0x24: // $
          items.push({ k: "assert", kind: "eol", multiline: flags.multiline, at: start });
          types.push(ItemType.Assert);
          break;
        case 0x5c: {
          // backslash
          const node = this.parseEscape(flags, start);
          items.push(node);
          types.push(node.k === "assert" ? ItemType.Assert : ItemType.Atom);
          break;
        }
        default:
          items.push(this.set([c, c], [], false, flags));
          types.push(ItemType.Atom);
      }
    }
    return items.length === 1 ? items[0]! : { k: "seq", items };
  }

  /** Reads a quantifier at pos; null when a '{' is not a valid counted repeat (then literal). */
  private parseQuantifier(): { min: number; max: number } | null {
    const c = this.cps[this.pos++]!;
    if (c === 0x2a) return { min: 0, max: Infinity };
    if (c === 0x2b) return { min: 1, max: Infinity };
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
    const max = hi ? Number(hi) : Infinity;
    if (min >= MAX_REPEAT_COUNT || (max !== Infinity && max >= MAX_REPEAT_COUNT))
      this.error("the repetition number is too large", open, "repeat count");
    if (max < min) this.error("min repeat greater than max repeat", open + 1, "repeat range");
    return { min, max };
  }

  private parseGroup(
    flags: RegexFlags,
    depth: number,
    atSequenceStart: boolean,
  ): "comment" | { kind: "node"; node: RegexSyntaxNode } | { kind: "globalFlags"; flags: RegexFlags } {
    const open = this.pos;
    if (depth >= this.maxNesting) {
      throw new RegexTooComplexError(`pattern too complex: groups nested deeper than ${this.maxNesting}`, "nesting");
    }
    this.pos++; // (
    let inner = flags;
    let name: string | undefined;
    let capturing = true;
    if (this.peek() === 0x3f /* ? */) {
      this.pos++;
      capturing = false;
      const c = this.peek();
      if (c === 0x3a /* : */) {
        this.pos++;
      } else if (c === 0x50 /* P */) {
        this.pos++;
        if (this.peek() === 0x3c /* < */) {
          this.pos++;
          name = this.readGroupName();
          capturing = true;
        } else if (this.peek() === 0x3d /* = */) {
          return { kind: "node", node: this.namedBackreference(open) };
        } else if (this.peek() === 0x3e /* > */) {
          this.refuse("recursion (?P>name)", open);
        } else {
          this.error("unknown extension ?P", open, "unknown extension");
        }
      } else if (c === 0x3c /* < */) {
        const n = this.peek(1);
        if (n === 0x3d || n === 0x21) return { kind: "node", node: this.parseLook(flags, depth, open, true, n === 0x21) };
        if (this.python) this.error(`unknown extension ?<${n === undefined ? "" : String.fromCodePoint(n)}`, open + 1, "unknown extension");
        this.pos++;
        name = this.readGroupName();
        capturing = true;
      } else if (c === 0x3d || c === 0x21) {
        return { kind: "node", node: this.parseLook(flags, depth, open, false, c === 0x21) };
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
    const index = capturing ? ++this.groupCount : 0;
    if (name !== undefined) this.groupNames.set(name, index);
    if (capturing) this.openGroups.add(index);
    const body = this.parseAlternation(inner, depth + 1);
    if (this.peek() !== 0x29) this.error("missing ), unterminated subpattern", open, "unterminated group");
    this.pos++;
    this.openGroups.delete(index);
    if (!capturing) return { kind: "node", node: body };
    return { kind: "node", node: name === undefined ? { k: "group", body, index } : { k: "group", body, index, name } };
  }

  /** A lookaround's group from its `(` (`open`); pos is at `<` (behind) or at `=`/`!`. */
  private parseLook(flags: RegexFlags, depth: number, open: number, behind: boolean, negated: boolean): RegexSyntaxNode {
    this.pos += behind ? 2 : 1;
    const body = this.parseAlternation(flags, depth + 1);
    if (this.peek() !== 0x29) this.error("missing ), unterminated subpattern", open, "unterminated group");
    this.pos++;
    if (behind && this.python) {
      const [lo, hi] = fixedWidth(body);
      if (lo !== hi) this.error("look-behind requires fixed-width pattern", open, "lookbehind width");
    }
    return { k: "look", body, behind, negated, at: open };
  }

  /** `(?P=name)`, pos at `=`. */
  private namedBackreference(open: number): RegexSyntaxNode {
    const start = ++this.pos;
    while (this.pos < this.cps.length && this.cps[this.pos] !== 0x29) this.pos++;
    if (this.pos >= this.cps.length) this.error("missing ), unterminated name", start, "group name");
    const name = String.fromCodePoint(...this.cps.slice(start, this.pos));
    this.pos++;
    const index = this.groupNames.get(name);
    if (this.python) {
      if (index === undefined) this.error(`unknown group name '${name}'`, start, "group name");
      if (this.openGroups.has(index)) this.error("cannot refer to an open group", open, "backreference");
    }
    return { k: "backref", index: index ?? 0, at: open, spelling: "(?P=name)" };
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

  private readGroupName(): string {
    const start = this.pos;
    while (this.pos < this.cps.length && this.cps[this.pos] !== 0x3e) this.pos++;
    if (this.pos >= this.cps.length) this.error("missing >, unterminated name", start, "group name");
    const name = String.fromCodePoint(...this.cps.slice(start, this.pos));
    this.pos++;
    if (!/^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(name)) {
      this.error(`bad character in group name '${name}'`, start, "group name");
    }
    if (this.groupNames.has(name)) this.error(`redefinition of group name '${name}'`, start, "group name");
    return name;
  }

  /** After a backslash outside a class (pos is just past it). */
  private parseEscape(flags: RegexFlags, start: number): RegexSyntaxNode {
    const c = this.peek();
    if (c === undefined) this.error("bad escape (end of pattern)", start, "trailing backslash");
    switch (c) {
      case 0x41: // \A
        this.pos++;
        return { k: "assert", kind: "bos", multiline: false, at: start };
      case 0x5a: // \Z
        this.pos++;
        return { k: "assert", kind: "eos", multiline: false, at: start };
      case 0x62: // \b
        this.pos++;
        return { k: "assert", kind: "wordb", multiline: false, at: start };
      case 0x42: // \B
        this.pos++;
        return { k: "assert", kind: "nwordb", multiline: false, at: start };
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
        return this.set([value, value], [], false, flags);
      }
      const digits = isDigit(this.peek(1)) ? 2 : 1;
      const text = String.fromCodePoint(...this.cps.slice(this.pos, this.pos + digits));
      this.pos += digits;
      const index = Number(text);
      if (this.python) {
        if (index > this.groupCount) this.error(`invalid group reference ${index}`, start + 1, "backreference");
        if (this.openGroups.has(index)) this.error("cannot refer to an open group", start, "backreference");
      }
      return { k: "backref", index, at: start, spelling: `\\${text}` };
    }
    const atom = this.parseCommonEscape(start);
    if (atom.escape !== undefined) return this.set([], [atom.escape], false, flags);
    return this.set([atom.cp, atom.cp], [], false, flags);
  }

  /** Escapes valid both inside and outside classes (pos just past the backslash). */
  private parseCommonEscape(start: number): ClassAtom {
    const c = this.cps[this.pos++]!;
    switch (c) {
      case 0x64: // d
      case 0x44: // D
      case 0x77: // w
      case 0x57: // W
      case 0x73: // s
      case 0x53: // S
        return { escape: String.fromCodePoint(c) as ClassEscape };
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
  private parseClass(flags: RegexFlags, open: number): SetNode {
    let negated = false;
    if (this.peek() === 0x5e) {
      negated = true;
      this.pos++;
    }
    const itemsStart = this.pos;
    const ranges: number[] = [];
    const classes: ClassEscape[] = [];
    const addAtom = (atom: ClassAtom): void => {
      if (atom.escape !== undefined) {
        if (!classes.includes(atom.escape)) classes.push(atom.escape);
      } else ranges.push(atom.cp, atom.cp);
    };
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.error("unterminated character set", open, "unterminated class");
      const itemPos = this.pos;
      this.pos++;
      if (c === 0x5d && itemPos !== itemsStart) break;
      const first = c === 0x5c ? this.parseClassEscape(itemPos) : { cp: c };
      if (this.peek() === 0x2d /* - */) {
        this.pos++;
        const t = this.peek();
        if (t === undefined) this.error("unterminated character set", open, "unterminated class");
        const thatPos = this.pos;
        this.pos++;
        if (t === 0x5d) {
          addAtom(first);
          ranges.push(0x2d, 0x2d);
          break;
        }
        const second = t === 0x5c ? this.parseClassEscape(thatPos) : { cp: t };
        if (first.cp === undefined || second.cp === undefined) {
          this.error("bad character range", itemPos, "class range");
        }
        if (second.cp < first.cp) this.error("bad character range", itemPos, "class range");
        ranges.push(first.cp, second.cp);
      } else {
        addAtom(first);
      }
    }
    return this.set(normalizeRanges(ranges), classes, negated, flags);
  }

  private parseClassEscape(start: number): ClassAtom {
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
    return this.parseCommonEscape(start);
  }
}

/**
 * A node's [min, max] width in characters, Infinity for unbounded: what Python's fixed-width rule
 * for lookbehinds asks (grammar/pyregex-width.ts has sre's saturating getwidth for Lark).
 */
function fixedWidth(n: RegexSyntaxNode): [number, number] {
  switch (n.k) {
    case "set":
    case "any":
      return [1, 1];
    case "seq": {
      let lo = 0;
      let hi = 0;
      for (const item of n.items) {
        const [a, b] = fixedWidth(item);
        lo += a;
        hi += b;
      }
      return [lo, hi];
    }
    case "alt": {
      let lo = Infinity;
      let hi = 0;
      for (const alt of n.alts) {
        const [a, b] = fixedWidth(alt);
        lo = Math.min(lo, a);
        hi = Math.max(hi, b);
      }
      return [lo, hi];
    }
    case "group":
      return fixedWidth(n.body);
    case "rep": {
      const [a, b] = fixedWidth(n.body);
      return [a * n.min, b === 0 ? 0 : b * n.max];
    }
    case "assert":
    case "look":
      return [0, 0];
    case "backref":
      // Python: a backreference in a lookbehind is fixed-width only if its group is (3.5+ asks
      // the group's width); unknown here, so not fixed.
      return [0, Infinity];
  }
}
