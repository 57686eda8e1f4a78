/**
 * The automaton's view of a pattern (RegexNode: code point sets, assertions a byte DFA can
 * express, embedded DFAs and graphs) and the lowering of syntax.ts's tree into it, where the
 * semantic decisions of compile.ts's header are made (case folding, \d \w \s, one-character
 * lookarounds) and what a DFA cannot express is refused by name. ecma.ts builds the same nodes
 * from ECMA-262 patterns.
 */
import { type CodeSet, MAX_CODE_POINT, caseClose, complementSet, normalizeRanges } from "./charset.js";
import { RegexSyntaxError } from "./errors.js";
import type { ByteDfa } from "./dfa/types.js";
import { readRegexSyntax, type ClassEscape, type RegexFlags, type RegexSyntaxNode, type SetNode } from "./syntax.js";
import { UNICODE_DIGIT, UNICODE_SPACE, UNICODE_WORD } from "./unicode-classes-data.js";

export { MAX_GROUP_NESTING, parseFlagString, type RegexFlags } from "./syntax.js";

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

const WORD_SET: CodeSet = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
const DIGIT_SET: CodeSet = [0x30, 0x39];
const SPACE_SET: CodeSet = [0x09, 0x0d, 0x20, 0x20]; // [ \t\n\r\f\v]
const ANY_BUT_NEWLINE: CodeSet = [0, 0x09, 0x0b, MAX_CODE_POINT];

/** A pattern (Python `re` text, see compile.ts) as the automaton's node; flags from compile options. */
export function parseRegex(pattern: string, flags: RegexFlags): RegexNode {
  return lowerSyntax(readRegexSyntax(pattern, { flags }).root);
}

/**
 * syntax.ts's tree as the automaton's node. Refuses (RegexSyntaxError naming the construct, at its
 * position) what a byte DFA cannot express: backreferences, word boundaries, lookarounds other
 * than one character from an ASCII class or its complement.
 */
export function lowerSyntax(node: RegexSyntaxNode): RegexNode {
  switch (node.k) {
    case "set":
      return { kind: "set", set: lowerSet(node) };
    case "any":
      return { kind: "set", set: node.dotAll ? [0, MAX_CODE_POINT] : ANY_BUT_NEWLINE };
    case "seq":
      return node.items.length === 1 ? lowerSyntax(node.items[0]!) : { kind: "concat", items: node.items.map(lowerSyntax) };
    case "alt":
      return { kind: "alt", items: node.alts.map(lowerSyntax) };
    case "group":
      return lowerSyntax(node.body);
    case "rep":
      return { kind: "repeat", item: lowerSyntax(node.body), min: node.min, max: node.max === Infinity ? -1 : node.max };
    case "assert":
      switch (node.kind) {
        case "bol":
          return { kind: "assert", assertion: node.multiline ? Assertion.StartOfLine : Assertion.StartOfText };
        case "eol":
          return { kind: "assert", assertion: node.multiline ? Assertion.EndOfLine : Assertion.EndOrFinalNewline };
        case "bos":
          return { kind: "assert", assertion: Assertion.StartOfText };
        case "eos":
          return { kind: "assert", assertion: Assertion.EndOfText };
        case "wordb":
        case "nwordb": {
          const construct = node.kind === "wordb" ? "word boundary \\b" : "non-word boundary \\B";
          throw new RegexSyntaxError(
            `${construct} is not supported (needs lookaround; not expressible in our byte DFA)`,
            node.at,
            construct,
          );
        }
      }
      break;
    case "look":
      return lowerLook(node);
    case "backref": {
      const construct = `backreference ${node.spelling}`;
      throw new RegexSyntaxError(`${construct} is not supported (not a regular construct for a DFA)`, node.at, construct);
    }
  }
}

/**
 * A lookaround of one character from an ASCII class or its complement (e.g. Lark's
 * ESCAPED_STRING uses (?<!\\)) is a regular condition on the previous or next byte; anything
 * longer is refused.
 */
function lowerLook(node: Extract<RegexSyntaxNode, { k: "look" }>): RegexNode {
  const construct = node.behind
    ? node.negated
      ? "negative lookbehind (?<!"
      : "lookbehind (?<="
    : node.negated
      ? "negative lookahead (?!"
      : "lookahead (?=";
  const inner = lowerSyntax(node.body);
  const bytes = inner.kind === "set" ? boundaryBytes(inner.set, node.behind ? 0xbf : 0xff) : null;
  if (bytes === null) {
    throw new RegexSyntaxError(
      `${construct} is supported only around one character from an ASCII class or its complement`,
      node.at,
      construct,
    );
  }
  if (node.behind) return { kind: "assert", assertion: node.negated ? Assertion.NotPrecededBy : Assertion.PrecededBy, set: bytes };
  return { kind: "assert", assertion: node.negated ? Assertion.NotFollowedBy : Assertion.FollowedBy, set: bytes, position: node.at };
}

/**
 * A set's code points: its explicit members folded under (?i), its class escapes (\d \w \s
 * are ASCII, \D \W \S complement Python's Unicode classes; inside [^...] the polarity flips,
 * so what the set ends up excluding is always Python's full class), then `[^...]`'s complement.
 */
function lowerSet(node: SetNode): CodeSet {
  const fold = (set: CodeSet): CodeSet => (node.caseless ? caseClose(set, node.ascii) : set);
  let parts: number[] = node.ranges.length === 0 ? [] : fold(node.ranges);
  for (const classEscape of node.classes) parts = parts.concat(classEscapeSet(classEscape, node.negated, node.ascii, fold));
  const set = node.classes.length === 0 ? parts : normalizeRanges(parts);
  return node.negated ? complementSet(set) : set;
}

function classEscapeSet(classEscape: ClassEscape, inNegatedClass: boolean, ascii: boolean, fold: (set: CodeSet) => CodeSet): CodeSet {
  const category = (asciiSet: CodeSet, unicode: readonly number[], complemented: boolean): CodeSet =>
    ascii ? asciiSet : complemented !== inNegatedClass ? [...unicode] : asciiSet;
  switch (classEscape) {
    case "d":
      return fold(category(DIGIT_SET, UNICODE_DIGIT, false));
    case "D":
      return complementSet(fold(category(DIGIT_SET, UNICODE_DIGIT, true)));
    case "w":
      return fold(category(WORD_SET, UNICODE_WORD, false));
    case "W":
      return complementSet(fold(category(WORD_SET, UNICODE_WORD, true)));
    case "s":
      return category(SPACE_SET, UNICODE_SPACE, false);
    case "S":
      return complementSet(category(SPACE_SET, UNICODE_SPACE, true));
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
