/**
 * Pattern → byte-level DFA (full-match semantics, like Python's re.fullmatch): the regex
 * stage's compile, and the dialect it reads.
 *
 * DIALECT: what Python `re` and JavaScript agree on, plus Python's extras, parsed the way
 * Python 3.11 parses (Python wins where the two differ):
 * - literals; escapes \n \t \r \f \v \a \0 \ooo (octal) \xHH \uHHHH \UHHHHHHHH; escaped
 *   punctuation; an escaped ASCII letter or digit we do not know is an error (as Python).
 * - classes [..] with ranges and negation; ']' first in a class is literal; \b in a class is
 *   backspace; a '{' that does not form a counted repeat is a literal (Python).
 * - groups ( ), (?: ), (?P<n> ), (?<n> ) (JS spelling), (?#comment); alternation;
 *   * + ? {m} {m,} {,n} {m,n} and their lazy forms (same language under full match).
 * - flags as compile options ("imsxau") and inline: global (?imsxau) only at the start
 *   (Python 3.11 rule), scoped (?i: ), (?-i: ), (?s-m: ) etc.
 *
 * SEMANTIC DECISIONS where Python and JS differ:
 * - \d \w \s are ASCII: exactly [0-9], [a-zA-Z0-9_], [ \t\n\r\f\v] (as JavaScript, and as
 *   Python's re.ASCII). Where a set ends up complemented — \D \W \S, or \d \w \s inside
 *   [^...] — the complement is taken of Python's full Unicode class (data generated from Python
 *   by gen-unicode-classes.py), so \S rejects U+00A0 as Python does. Result: everything we
 *   accept is accepted by plain Python re.fullmatch (Unicode mode): positives are subsets,
 *   complements are exact. Under (?i) the classes are folded like the explicit classes are in
 *   Python, e.g. (?i)\w also matches 'K' (U+212A) and 'ſ' (U+017F). With the a flag every class
 *   is ASCII, as re.ASCII.
 * - '.' is any code point except "\n" (Python; JS also excludes \r \u2028 \u2029); with s: any.
 * - '^' = start of text (\A); with m: start or after "\n".
 * - '$' exactly as Python: end of text, or before a final "\n" ("a$\n" matches "a\n",
 *   "a$" does not). With m: before any "\n" or at the end. \Z = end of text only.
 * - (?i) is Python's IGNORECASE for str patterns: sre's simple lowercase plus its extra
 *   case table (so 'ſ'~'s', 'K'~'k', 'ı'/'İ'~'i', 'µ'~'μ'...), data generated from Python by
 *   gen-casefold.py. With the a flag, only ASCII letters fold (re.ASCII|re.IGNORECASE).
 *   Negated classes complement after folding ([^a] under (?i) excludes 'A').
 * - Full Unicode: the DFA runs on UTF-8 bytes; code point sets become UTF-8 byte-sequence
 *   automata. Surrogates U+D800..U+DFFF never match (not encodable in UTF-8); "\uD83D\uDE00"
 *   is two surrogate escapes as in Python, so it matches nothing.
 * - One-character lookarounds are regular and supported: (?<=X) (?<!X) test the previous
 *   character, (?=X) (?!X) the next, when X is an ASCII class or the complement of one
 *   (e.g. (?<!\\), (?![a-z]), (?=[^a]), (?!\d)); Lark's common.ESCAPED_STRING needs (?<!\\),
 *   lark.lark/python.lark use (?![a-z]) / (?![1-9]). At the start of the text (?<!X) holds and
 *   (?<=X) fails; at the end (?!X) holds and (?=X) fails. Refused: longer lookarounds, sets
 *   with only part of non-ASCII (e.g. [a-z] under (?i) gains 'K' U+212A), and two different
 *   lookaheads (or a positive lookahead and a '$') applying at the same place
 *   (construct "lookahead combination").
 * - Refused with RegexSyntaxError { position, construct } (position in code points):
 *   backreferences (\1, (?P=n), \k<n>), longer lookarounds, atomic groups,
 *   possessive quantifiers, conditionals, \b \B (word boundaries), \N{...}, \p{...}, flag L.
 *   A pattern that can match nothing throws RegexSyntaxError with construct "empty language".
 * - Too large/slow automata throw RegexTooComplexError fast: NFA state cap (huge counted
 *   repeats, checked on the AST before building), DFA state cap, a time limit on the whole
 *   compile (every phase counts its work; clock.ts), and a group nesting cap. Defaults:
 *   DEFAULT_REGEX_LIMITS.
 *
 * PIPELINE: syntax.ts (the one reader of this dialect: a syntax tree, also read by the grammar
 * stage's Lark lexer) → parser.ts (lowered to an AST over code point sets, flags resolved; what
 * a DFA cannot express refused by name) → nfa.ts (Thompson NFA over
 * UTF-8 byte ranges) → dfa/ (alphabet.ts: byte classes; subset.ts: subset construction over
 * them, with '$'/'\Z' as per-thread modes on the remaining input and '^' resolved from the
 * previous byte; finish.ts: dead-state pruning, minimization over the live transitions
 * (minimize.ts), BFS numbering, byte classes merged by identical columns; literals.ts: the same
 * DFA for sets of literals, from their trie).
 *
 * COMPOSITION (the JSON Schema front-end): compileRegexNode compiles an AST (ecma.ts's reading of
 * ECMA-262 patterns, or nodes of kind "dfa" embedding DFAs already built); intersectDfas and
 * subtractDfas (dfa/product.ts) combine two DFAs. All three return an empty language as a DFA.
 *
 * MULTI-PATTERN (lexers): compileMultiRegex gives one DFA whose acceptMask says which patterns
 * fully match the bytes so far and whose reachMask says which can still be completed. '$' there
 * still means "end of the text being matched" (the token), as in a full match.
 */
import { parseFlagString, parseRegex, type RegexNode } from "./parser.js";
import { ByteNfa } from "./nfa.js";
import { determinizeLiterals } from "./dfa/literals.js";
import { productDfa } from "./dfa/product.js";
import type { ProductCalls } from "./dfa/product-calls.js";
import { subtractStrings as subtractStringsNow } from "./dfa/minus-strings.js";
import { determinize } from "./dfa/subset.js";
import { finishDfa, pruneDfa, singleDfa } from "./dfa/finish.js";
import { dfaArena } from "./dfa/scratch.js";
import { isEmptyLanguage, type ByteDfa, type MultiByteDfa } from "./dfa/types.js";
import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
import { LruCache } from "../support/index.js";
import { regexClock } from "./clock.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;

/**
 * Default work budget of one compile. Measured here: a 20,000-state DFA of wide classes, the
 * largest the state limit lets through, takes ~N units; the largest patterns of the tests and
 * corpora take under M.
 */
export const REGEX_MAX_WORK = 400_000_000;

export interface RegexLimits {
  /** Cap on Thompson NFA states (bounds counted repeats such as (?:a{1000}){1000}). */
  maxNfaStates?: number;
  /** Cap on DFA states during subset construction. */
  maxDfaStates?: number;
  /**
   * Work budget for the whole compile (parse, NFA, subset construction, minimization), in units
   * of about one inner-loop iteration (see clock.ts): the deterministic bound, the same verdict
   * on any machine.
   */
  maxWork?: number;
  /**
   * Wall-clock safety valve (Infinity: none), overshot by well under a millisecond; what it
   * stops ("time") depends on load, so callers answer it as retryable.
   */
  timeoutMs?: number;
}

export interface RegexOptions extends RegexLimits {
  /** Python flag letters: i (IGNORECASE), s (DOTALL), m (MULTILINE), x (VERBOSE), a (ASCII case), u (no-op). */
  flags?: string;
  /**
   * false: compileRegexNode may return the subset construction's DFA unminimized (live states
   * only, see determinize), for a DFA that is matched against or taken once into a product,
   * where minimizing costs more than the states it saves. Default true.
   */
  minimal?: boolean;
}

export const DEFAULT_REGEX_LIMITS: Readonly<Required<RegexLimits>> = {
  maxNfaStates: 200_000,
  maxDfaStates: 20_000,
  maxWork: REGEX_MAX_WORK,
  timeoutMs: Number.POSITIVE_INFINITY,
};

export interface PatternSpec {
  source: string;
  flags?: string;
}

function parseAlternative(source: string, flags: string | undefined, alternative: number | undefined): RegexNode {
  clock.tick(source.length + 1);
  try {
    return parseRegex(source, parseFlagString(flags));
  } catch (err) {
    if (err instanceof RegexSyntaxError && alternative !== undefined) err.alternative = alternative;
    throw err;
  }
}

/**
 * A lower bound on the NFA states emit() creates, so huge counted repeats fail before building.
 * Nodes are DAGs (a language embedded in many places is one node): each is sized once (`sizes`),
 * so the bound of an exponentially large expansion costs time linear in the nodes.
 */
function nfaSizeLowerBound(node: RegexNode, sizes: Map<RegexNode, number> = new Map()): number {
  const known = sizes.get(node);
  if (known !== undefined) return known;
  let size: number;
  switch (node.kind) {
    case "set":
    case "assert":
      return 2;
    // Loops, not reduce: a closure per node was most of this walk's garbage.
    case "concat":
      size = 0;
      for (const item of node.items) size += nfaSizeLowerBound(item, sizes);
      break;
    case "alt":
      size = 1;
      for (const item of node.items) size += 1 + nfaSizeLowerBound(item, sizes);
      break;
    case "repeat": {
      const copies = node.max === -1 ? node.min + 1 : node.max;
      size = copies * nfaSizeLowerBound(node.item, sizes);
      break;
    }
    case "dfa":
      return node.dfa.numStates + 1;
    case "graph": {
      size = node.graph.states + 1;
      for (const reads of node.graph.reads) if (reads !== null) size += nfaSizeLowerBound(reads, sizes);
      break;
    }
  }
  sizes.set(node, size);
  return size;
}

/** The UTF-8 bytes of a pattern that is one literal string (no class, repeat or assertion), or null. */
function literalBytes(node: RegexNode): number[] | null {
  const out: number[] = [];
  const add = (n: RegexNode): boolean => {
    if (n.kind === "concat") {
      for (const item of n.items) if (!add(item)) return false;
      return true;
    }
    if (n.kind !== "set" || n.set.length !== 2 || n.set[0] !== n.set[1]) return false;
    const cp = n.set[0]!;
    if (cp < 0x80) out.push(cp);
    else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
    else if (cp >= 0xd800 && cp <= 0xdfff)
      return false; // no UTF-8 encoding: the NFA matches nothing
    else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    return true;
  };
  return add(node) ? out : null;
}

/**
 * The members of a pattern that is one class of ASCII characters (`[a-z]`, a range `"a".."z"` in a
 * grammar), as 128 flags; null for anything else (non-ASCII members take several bytes).
 */
function asciiClassBytes(node: RegexNode): Uint8Array | null {
  if (node.kind !== "set") return null;
  const set = node.set;
  for (let i = 1; i < set.length; i += 2) if (set[i]! >= 0x80) return null;
  const member = new Uint8Array(128);
  for (let i = 0; i < set.length; i += 2) member.fill(1, set[i]!, set[i + 1]! + 1);
  return member;
}

function buildDfa(nodes: RegexNode[], limits: RegexLimits, minimal = true): MultiByteDfa {
  const maxNfaStates = limits.maxNfaStates ?? DEFAULT_REGEX_LIMITS.maxNfaStates;
  let estimate = 0;
  const sizes = new Map<RegexNode, number>();
  for (const node of nodes) estimate += nfaSizeLowerBound(node, sizes);
  if (estimate > maxNfaStates) {
    throw new RegexTooComplexError(
      `pattern too complex: its automaton needs more than ${maxNfaStates} NFA states (large counted repeats?)`,
      "nfaStates",
    );
  }
  const literals: (number[] | Uint8Array)[] = [];
  let trieSize = 1;
  for (let i = 0; i < nodes.length && literals.length === i; i++) {
    clock.tick(1);
    const bytes = literalBytes(nodes[i]!) ?? asciiClassBytes(nodes[i]!);
    if (bytes !== null) {
      literals.push(bytes);
      trieSize += bytes instanceof Uint8Array ? bytes.reduce((n, m) => n + m, 0) : bytes.length;
    }
  }
  if (literals.length === nodes.length && trieSize <= (limits.maxDfaStates ?? DEFAULT_REGEX_LIMITS.maxDfaStates))
    return determinizeLiterals(literals);
  const nfa = takeNfa(maxNfaStates);
  try {
    const start = nfa.newState();
    nodes.forEach((node, p) => {
      clock.tick(1);
      const entry = nfa.newState();
      nfa.addEps(start, entry);
      const exit = nfa.emit(node, entry);
      const accept = nfa.newState();
      nfa.addEps(exit, accept);
      nfa.setAccept(accept, p);
    });
    return determinize(nfa, start, nodes.length, { maxDfaStates: limits.maxDfaStates ?? DEFAULT_REGEX_LIMITS.maxDfaStates }, minimal);
  } finally {
    if (nfa.retainedInts() <= KEPT_NFA_INTS) keptNfa = nfa;
  }
}

/** The last build's NFA, emptied and reused by the next (ByteNfa.reset); null while one is in use. */
let keptNfa: ByteNfa | null = null;
/** Biggest NFA kept between builds (1 MB): a huge pattern's buffers are let go. */
const KEPT_NFA_INTS = 1 << 18;

function takeNfa(maxStates: number): ByteNfa {
  const nfa = keptNfa;
  if (nfa === null) return new ByteNfa(maxStates);
  keptNfa = null;
  nfa.reset(maxStates);
  return nfa;
}

/** `compile` under the work limit (and wall-clock valve) of `limits`, started now. */
function timed<T>(limits: RegexLimits, compile: () => T): T {
  const previous = clock.start(limits.maxWork ?? DEFAULT_REGEX_LIMITS.maxWork, limits.timeoutMs ?? DEFAULT_REGEX_LIMITS.timeoutMs);
  try {
    return compile();
  } finally {
    clock.stop(previous);
  }
}

/**
 * Compiles a pattern (or an array of alternatives: the text must fully match at least one)
 * into a minimal byte DFA with only live states.
 */
export function compileRegex(pattern: string | readonly string[], opts: RegexOptions = {}): ByteDfa {
  return timed(opts, () => compileRegexNow(pattern, opts));
}

function compileRegexNow(pattern: string | readonly string[], opts: RegexOptions): ByteDfa {
  const sources = typeof pattern === "string" ? [pattern] : pattern;
  if (sources.length === 0) throw new RegexSyntaxError("empty list of alternatives matches no string", 0, "empty language");
  const nodes = sources.map((s, i) => parseAlternative(s, opts.flags, typeof pattern === "string" ? undefined : i));
  const union: RegexNode = nodes.length === 1 ? nodes[0]! : { kind: "alt", items: nodes };
  const multi = buildDfa([union], opts);
  if (isEmptyLanguage(multi)) throw new RegexSyntaxError("pattern matches no string", 0, "empty language");
  return singleDfa(multi);
}

/**
 * Compiles a parsed (or built) pattern, such as ecma.ts's or one embedding DFAs ({ kind: "dfa" }),
 * under the same limits as compileRegex; `opts.flags` is ignored (a node's flags are resolved).
 * An empty language is returned, not refused: callers composing languages test isEmptyLanguage.
 */
export function compileRegexNode(node: RegexNode, opts: RegexOptions = {}): ByteDfa {
  return timed(opts, () => singleDfa(buildDfa([node], opts, opts.minimal ?? true)));
}

/**
 * The strings of `a` that are none of `strings` (byte strings), as a DFA of the same contract
 * (not canonical: see minus-strings.ts); subtractDfas by a literal DFA, without its cost.
 */
export function subtractStrings(a: ByteDfa, strings: readonly Uint8Array[], limits: RegexLimits = {}): ByteDfa {
  return timed(limits, () => subtractStringsNow(a, strings, { maxDfaStates: limits.maxDfaStates ?? DEFAULT_REGEX_LIMITS.maxDfaStates }));
}

/**
 * A DFA built by hand (start 0, any states, any distances) made to meet the ByteDfa contract:
 * its live states reachable from the start, numbered breadth-first, with exact distances. A DFA
 * embedded in a pattern ({ kind: "dfa" }) must meet it: the subset construction steps through
 * its table and reads its distances (nfa.ts, emitDfa).
 */
export function trimDfa(dfa: ByteDfa, limits: RegexLimits = {}): ByteDfa {
  if (dfa.start !== 0) throw new Error("trimDfa: the start must be state 0");
  return timed(limits, () => {
    dfaArena.reset();
    return pruneDfa(dfa.numStates, dfa.numClasses, dfa.next, Int32Array.from(dfa.accepting), Int32Array.from(dfa.byteClass));
  });
}

/**
 * The minimal DFA of a DFA that meets the ByteDfa contract (an unminimized subset construction's,
 * `minimal: false`): the same language, finished as determinize finishes its DFAs.
 */
export function minimalDfa(dfa: ByteDfa, limits: RegexLimits = {}): ByteDfa {
  if (dfa.start !== 0) throw new Error("minimalDfa: the start must be state 0");
  return timed(limits, () => {
    dfaArena.reset();
    const accepting = dfaArena.take(dfa.numStates);
    for (let s = 0; s < dfa.numStates; s++) accepting[s] = dfa.accepting[s]!;
    const intervalOf = dfaArena.take(256);
    for (let b = 0; b < 256; b++) intervalOf[b] = dfa.byteClass[b]!;
    // Its distances are exact (the contract) and only read.
    return singleDfa(finishDfa(dfa.numStates, dfa.numClasses, dfa.next, accepting, accepting, 1, 1, intervalOf, dfa.minBytesToAccept));
  });
}

/**
 * The strings both DFAs accept, as a DFA of the same contract; empty is a valid result. With
 * `calls`, their call spellings are read as calls of those rules (ProductCalls; else ProductCallsClash).
 */
export function intersectDfas(a: ByteDfa, b: ByteDfa, limits: RegexLimits = {}, calls?: ProductCalls): ByteDfa {
  return timed(limits, () =>
    productDfa(a, b, "intersect", { maxDfaStates: limits.maxDfaStates ?? DEFAULT_REGEX_LIMITS.maxDfaStates }, calls),
  );
}

/** The strings `a` accepts and `b` rejects, as a DFA of the same contract; empty is a valid result. `calls`: as intersectDfas'. */
export function subtractDfas(a: ByteDfa, b: ByteDfa, limits: RegexLimits = {}, calls?: ProductCalls): ByteDfa {
  return timed(limits, () =>
    productDfa(a, b, "subtract", { maxDfaStates: limits.maxDfaStates ?? DEFAULT_REGEX_LIMITS.maxDfaStates }, calls),
  );
}

/**
 * One DFA for N patterns (e.g. a lexer's terminals): acceptMask tells which patterns fully
 * match at each state. States are live if they can still reach acceptance of any pattern;
 * minBytesToAccept is the distance to the nearest acceptance of any pattern. A pattern
 * that matches nothing is allowed (it never appears in acceptMask); if all do, the result
 * has a single non-accepting state with minBytesToAccept -1 (see isEmptyLanguage).
 * RegexSyntaxError.alternative holds the index of the offending pattern.
 */
export function compileMultiRegex(patterns: ReadonlyArray<string | PatternSpec>, limits: RegexLimits = {}): MultiByteDfa {
  return timed(limits, () => {
    const nodes = patterns.map((p, i) =>
      typeof p === "string" ? parseAlternative(p, undefined, i) : parseAlternative(p.source, p.flags, i),
    );
    return buildDfa(nodes, limits);
  });
}

/**
 * compileMultiRegex over patterns already read and lowered (the grammar stage's terminals, read
 * once by syntax.ts): the same DFA, under the same limits.
 */
export function compileMultiRegexNodes(nodes: readonly RegexNode[], limits: RegexLimits = {}): MultiByteDfa {
  return timed(limits, () => buildDfa([...nodes], limits));
}

/** Whether pattern `p` fully matches at `state` of a multi-pattern DFA. */
export function acceptsPattern(dfa: MultiByteDfa, state: number, p: number): boolean {
  return (dfa.acceptMask[state * dfa.acceptWords + (p >>> 5)]! & (1 << (p & 31))) !== 0;
}

/** Whether pattern `p` can still fully match by continuing from `state`. */
export function canReachPattern(dfa: MultiByteDfa, state: number, p: number): boolean {
  return (dfa.reachMask[state * dfa.acceptWords + (p >>> 5)]! & (1 << (p & 31))) !== 0;
}

/** Sorted indices of the patterns that fully match at `state`. */
export function acceptedPatterns(dfa: MultiByteDfa, state: number): number[] {
  const out: number[] = [];
  for (let w = 0; w < dfa.acceptWords; w++) {
    let bits = dfa.acceptMask[state * dfa.acceptWords + w]!;
    while (bits !== 0) {
      const low = bits & -bits;
      out.push(w * 32 + 31 - Math.clz32(low));
      bits ^= low;
    }
  }
  return out;
}

/**
 * Bounded LRU cache of compiled patterns keyed by pattern text, flags and limits. Refusals
 * are cached too, so a repeated bad pattern is rejected without recompiling.
 */
export class RegexCache {
  private readonly cache: LruCache<{ dfa: ByteDfa } | { error: RegexSyntaxError | RegexTooComplexError }>;
  constructor(capacity = 256) {
    this.cache = new LruCache(capacity);
  }
  get size(): number {
    return this.cache.size;
  }
  compile(pattern: string | readonly string[], opts: RegexOptions = {}): ByteDfa {
    const key = JSON.stringify([pattern, opts.flags ?? "", opts.maxNfaStates, opts.maxDfaStates, opts.maxWork, opts.timeoutMs]);
    let entry = this.cache.get(key);
    if (!entry) {
      try {
        entry = { dfa: compileRegex(pattern, opts) };
      } catch (err) {
        // Time-limit refusals depend on machine load, so only deterministic errors are kept.
        if (err instanceof RegexSyntaxError || (err instanceof RegexTooComplexError && err.limit !== "time")) {
          entry = { error: err };
        } else {
          throw err;
        }
      }
      this.cache.set(key, entry);
    }
    if ("error" in entry) throw entry.error;
    return entry.dfa;
  }
  clear(): void {
    this.cache.clear();
  }
}
