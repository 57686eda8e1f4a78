// Whether Python's backtracking match of a terminal's regexp is the match the byte automaton
// models (its longest, or its shortest for one lazy part): an analysis of the regexp's AST by
// the characters each part can start with and be followed by, with byte-DFA prefix checks
// between alternation branches. A terminal where it is not is recorded as approximated.

import { compileRegexNode, isEmptyLanguage, lowerSyntax, syntaxChildren, type ByteDfa } from "../regex/index.js";
import type { CompileClock } from "./limits.js";
import type { ClassEscape, RegexSyntaxNode } from "./pyregex.js";

// ASCII characters 0..127 plus slot 128 for "some non-ASCII character".
type CharSet = Uint8Array;
const NON_ASCII = 128;
const emptySet = (): CharSet => new Uint8Array(129);
const overlaps = (a: CharSet, b: CharSet): boolean => {
  for (let i = 0; i < 129; i++) if (a[i] && b[i]) return true;
  return false;
};
const union = (a: CharSet, b: CharSet): CharSet => {
  const out = a.slice();
  for (let i = 0; i < 129; i++) if (b[i]) out[i] = 1;
  return out;
};

/** The characters a node's matches can start with, and whether it can match the empty string. */
interface NodeStart {
  first: CharSet;
  nullable: boolean;
}

const classChars = new Map<ClassEscape, Uint8Array>();

/** The ASCII characters of a class escape, 1 per member (made once per class). */
function asciiOfClass(e: ClassEscape): Uint8Array {
  let chars = classChars.get(e);
  if (chars === undefined) {
    const re = e === "d" ? /\d/ : e === "D" ? /\D/ : e === "w" ? /\w/ : e === "W" ? /\W/ : e === "s" ? /\s/ : /\S/;
    chars = new Uint8Array(128);
    for (let c = 0; c < 128; c++) if (re.test(String.fromCharCode(c))) chars[c] = 1;
    classChars.set(e, chars);
  }
  return chars;
}

export function firstCharsOfSet(n: Extract<RegexSyntaxNode, { k: "set" }>): CharSet {
  const out = emptySet();
  const member = emptySet();
  for (let i = 0; i < n.ranges.length; i += 2) {
    for (let c = n.ranges[i]!; c <= Math.min(n.ranges[i + 1]!, 127); c++) member[c] = 1;
    if (n.ranges[i + 1]! > 127) member[NON_ASCII] = 1;
  }
  for (const e of n.classes) {
    const chars = asciiOfClass(e);
    for (let c = 0; c < 128; c++) member[c] = member[c]! | chars[c]!;
    member[NON_ASCII] = 1;
  }
  if (n.caseless)
    for (let c = 65; c <= 90; c++)
      if (member[c] || member[c + 32]) {
        member[c] = 1;
        member[c + 32] = 1;
      }
  for (let c = 0; c < 129; c++) out[c] = n.negated ? (c === NON_ASCII ? 1 : 1 - member[c]!) : member[c]!;
  return out;
}

/**
 * FIRST and nullable of a node, memoized in `firsts`. They do not depend on what follows the
 * node: computed once per node. (A repeat's body needs them before it is walked, and walking the
 * body twice instead, once just for them, was exponential in nested repeats: 30 nested `+` never
 * finished.)
 */
function startOf(n: RegexSyntaxNode, firsts: Map<RegexSyntaxNode, NodeStart>): NodeStart {
  let known = firsts.get(n);
  if (known !== undefined) return known;
  switch (n.k) {
    case "set":
      known = { first: firstCharsOfSet(n), nullable: false };
      break;
    case "any": {
      const f = emptySet().fill(1);
      if (!n.dotAll) f[10] = 0;
      known = { first: f, nullable: false };
      break;
    }
    case "assert":
    case "look":
      known = { first: emptySet(), nullable: true };
      break;
    case "backref":
      known = { first: emptySet().fill(1), nullable: true };
      break;
    case "group":
      known = startOf(n.body, firsts);
      break;
    case "seq": {
      let first = emptySet();
      let nullable = true;
      for (let i = n.items.length - 1; i >= 0; i--) {
        const r = startOf(n.items[i]!, firsts);
        first = r.nullable ? union(r.first, first) : r.first;
        nullable = nullable && r.nullable;
      }
      known = { first, nullable };
      break;
    }
    case "alt": {
      let first = emptySet();
      let nullable = false;
      for (const a of n.alts) {
        const r = startOf(a, firsts);
        first = union(first, r.first);
        nullable = nullable || r.nullable;
      }
      known = { first, nullable };
      break;
    }
    case "rep": {
      const r = startOf(n.body, firsts);
      known = { first: r.first, nullable: n.min === 0 || r.nullable };
      break;
    }
  }
  firsts.set(n, known);
  return known;
}

/** Whether a node reads characters only: no assertion, lookaround or backreference (whose meaning depends on context). */
function readsOnly(n: RegexSyntaxNode): boolean {
  return n.k !== "assert" && n.k !== "look" && n.k !== "backref" && syntaxChildren(n).every(readsOnly);
}

/**
 * True when no string of `earlier` is a proper prefix of a string of `later` (byte DFAs). A
 * terminal of n overlapping alternatives asks this of n²/2 pairs, each two DFAs and a product
 * walk: `clock` (the compile's) is charged for them, and bounds the DFAs' time.
 */
function noProperPrefix(earlier: RegexSyntaxNode, later: RegexSyntaxNode, clock?: CompileClock): boolean {
  let a: ByteDfa, b: ByteDfa;
  clock?.check();
  try {
    if (!readsOnly(earlier) || !readsOnly(later)) return false;
    const compile = (node: RegexSyntaxNode): ByteDfa =>
      clock === undefined ? compileRegexNode(lowerSyntax(node)) : clock.sub((limits) => compileRegexNode(lowerSyntax(node), limits));
    a = compile(earlier);
    b = compile(later);
    // As an unmatchable pattern always was: no answer, so the terminal counts as approximated.
    if (isEmptyLanguage(a) || isEmptyLanguage(b)) return false;
  } catch {
    return false;
  }
  const seen = new Set<number>();
  const queue = [a.start * b.numStates + b.start];
  seen.add(queue[0]!);
  while (queue.length) {
    clock?.spend(256);
    const key = queue.pop()!;
    const qa = Math.floor(key / b.numStates),
      qb = key % b.numStates;
    if (a.accepting[qa]) {
      // `later` continues beyond this point to a longer string?
      for (let c = 0; c < b.numClasses; c++) if (b.next[qb * b.numClasses + c]! >= 0) return false;
    }
    for (let byte = 0; byte < 256; byte++) {
      const na = a.next[qa * a.numClasses + a.byteClass[byte]!]!;
      const nb = b.next[qb * b.numClasses + b.byteClass[byte]!]!;
      if (na < 0 || nb < 0) continue;
      const k = na * b.numStates + nb;
      if (!seen.has(k)) {
        seen.add(k);
        queue.push(k);
      }
    }
  }
  return true;
}

/** Prefix checks (noProperPrefix) one pattern may make before it counts as approximated. */
const MAX_PREFIX_CHECKS = 256;

/**
 * One walk of a regexp's AST, right to left within sequences so that each part knows what can
 * follow it, counting what decides whether Python's preferred match is the modelled one.
 */
class PreferenceWalk {
  unsafe = false;
  variableParts = 0;
  lazyParts = 0;
  overlappingAlternation = false; // "longest" there, which a lazy (shortest) pattern is not
  private readonly firsts = new Map<RegexSyntaxNode, NodeStart>();
  // Each prefix check compiles two DFAs: past MAX_PREFIX_CHECKS the pattern counts as
  // approximated (what the flag is for) rather than spending the compile's time on n² pairs.
  private prefixChecks = 0;

  constructor(private readonly clock: CompileClock | undefined) {}

  private prefixFree(alts: readonly RegexSyntaxNode[], i: number): boolean {
    if ((this.prefixChecks += i) > MAX_PREFIX_CHECKS) return false;
    for (let e = 0; e < i; e++) if (!noProperPrefix(alts[e]!, alts[i]!, this.clock)) return false;
    return true;
  }

  walk(n: RegexSyntaxNode, follow: CharSet): NodeStart {
    switch (n.k) {
      case "set":
        return { first: firstCharsOfSet(n), nullable: false };
      case "any": {
        const f = emptySet().fill(1);
        if (!n.dotAll) f[10] = 0;
        return { first: f, nullable: false };
      }
      case "assert":
      case "look":
        return { first: emptySet(), nullable: true };
      case "backref":
        this.unsafe = true;
        return { first: emptySet().fill(1), nullable: true };
      case "group":
        return this.walk(n.body, follow);
      case "seq": {
        // Right to left so each item knows what can follow it.
        let after = follow;
        let first = emptySet();
        let nullable = true;
        for (let i = n.items.length - 1; i >= 0; i--) {
          const r = this.walk(n.items[i]!, after);
          first = r.nullable ? union(r.first, first) : r.first;
          nullable = nullable && r.nullable;
          after = r.nullable ? union(r.first, after) : r.first;
        }
        return { first, nullable };
      }
      case "alt": {
        let first = emptySet();
        let nullable = false;
        const tail = follow.every((x) => x === 0);
        n.alts.forEach((a, i) => {
          const r = this.walk(a, follow);
          if (r.nullable && nullable) this.unsafe = true;
          // Python takes the first branch that matches. That is the longest match when branches
          // start differently, or (in tail position) when no earlier branch's string is a proper
          // prefix of a later branch's string.
          if (overlaps(first, r.first)) {
            this.overlappingAlternation = true;
            if (!(tail && this.prefixFree(n.alts, i))) this.unsafe = true;
          }
          first = union(first, r.first);
          nullable = nullable || r.nullable;
        });
        if (nullable) this.unsafe = true;
        return { first, nullable };
      }
      case "rep": {
        const inner = startOf(n.body, this.firsts);
        const r = this.walk(n.body, n.max > 1 ? union(inner.first, follow) : follow);
        if (n.min !== n.max) {
          this.variableParts++;
          if (n.lazy) this.lazyParts++;
          else if (overlaps(r.first, follow) || r.nullable) this.unsafe = true;
        }
        // A lazy repeat stops as soon as what follows matches: overlap there is its purpose.
        return { first: r.first, nullable: n.min === 0 || r.nullable };
      }
    }
  }
}

/**
 * Whether Python's preferred match of this pattern is what the automaton models: the longest
 * match (greedy, and every choice decided by the next character: alternation branches and
 * repeat-vs-continue start with disjoint characters), or the shortest (a single variable-length
 * part, lazy). Anything else is approximated.
 */
export function pythonPreferenceModelled(root: RegexSyntaxNode, clock?: CompileClock): boolean {
  const w = new PreferenceWalk(clock);
  w.walk(root, emptySet());
  if (w.lazyParts > 0) return w.lazyParts === 1 && w.variableParts === 1 && !w.unsafe && !w.overlappingAlternation;
  return !w.unsafe;
}
