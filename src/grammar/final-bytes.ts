/**
 * The bytes a whole sentence of a grammar can end with: the last bytes of the terminals it can
 * end with and of the ignored ones. A token whose bytes below some point hold none of them cannot
 * finish a sentence there, whatever the parser stack: the budget search asks "does one token
 * finish it?" of tokens that go on into long runs (a 96-dash token is 96 nested negations of an
 * arithmetic grammar), and this answers no without the walk.
 */
import type { LalrTable } from "./lalr-table.js";
import type { Grammar } from "./grammar.js";
import { firstCharsOfSet } from "./python-preference.js";
import type { RegexSyntaxNode } from "./pyregex.js";

/**
 * Per table terminal, 1 when a sentence may end with it: a state its shift leads to acts on $END
 * (a sentence ending with T shifts T and then reduces or accepts on $END). A superset of LAST,
 * from one pass over the table: no fixed point over the rules, which a chain of rules makes
 * quadratic.
 */
export function lastTerminalsByIndex(table: LalrTable): Uint8Array {
  const TT = table.terminals.length;
  const last = new Uint8Array(TT);
  const { action, numStates } = table;
  for (let s = 0; s < numStates; s++)
    for (let t = 1; t < TT; t++) {
      const a = action[s * TT + t]!;
      if (a > 0 && action[(a - 1) * TT]! !== 0) last[t] = 1;
    }
  return last;
}

/** The 8 words (one bit per byte) of the bytes a sentence can end with (`last`: lastTerminalsByIndex). */
export function sentenceFinalBytes(grammar: Grammar, last: Uint8Array): Uint32Array {
  const out = new Uint32Array(8);
  const names = [...grammar.ignore];
  for (let t = 1; t < last.length; t++) if (last[t] === 1) names.push(grammar.table.terminals[t]!);
  for (const name of names) {
    const term = grammar.terminals.get(name);
    if (term === undefined) continue; // declared without a definition: never lexed
    const chars = endOf(term.parsed.root, new Map()).last;
    for (let c = 0; c < 128; c++) if (chars[c]) out[c >>> 5]! |= 1 << (c & 31);
    // A character past ASCII ends in a continuation byte.
    if (chars[NON_ASCII]) for (let b = 0x80; b < 0xc0; b++) out[b >>> 5]! |= 1 << (b & 31);
  }
  return out;
}

/**
 * The 8 words of the bytes a sentence can contain: those of every terminal's matches (a superset:
 * every terminal the grammar defines). Text over them needs at least its length over the longest
 * token made of them (TokenTrie.longestTokenWithin) in tokens.
 */
export function sentenceBytes(grammar: Grammar): Uint32Array {
  const chars = new Uint8Array(129);
  const seen = new Set<RegexSyntaxNode>();
  for (const term of grammar.terminals.values()) charsOf(term.parsed.root, chars, seen);
  const out = new Uint32Array(8);
  for (let c = 0; c < 128; c++) if (chars[c]) out[c >>> 5]! |= 1 << (c & 31);
  if (chars[NON_ASCII]) for (let w = 4; w < 8; w++) out[w] = 0xffffffff;
  return out;
}

/** A set's characters, those Unicode case folding links across ASCII included (k and the Kelvin sign, s and ſ). */
function charsOfSet(n: Extract<RegexSyntaxNode, { k: "set" }>): CharSet {
  const chars = firstCharsOfSet(n);
  if (n.caseless && !n.ascii) {
    chars[NON_ASCII] = 1;
    for (let c = 65; c <= 90; c++) chars[c] = chars[c + 32] = 1;
  }
  return chars;
}

/** Adds the characters of `n`'s matches to `chars` (slot NON_ASCII: some character past ASCII). */
function charsOf(n: RegexSyntaxNode, chars: CharSet, seen: Set<RegexSyntaxNode>): void {
  if (seen.has(n)) return;
  seen.add(n);
  switch (n.k) {
    case "set": {
      const own = charsOfSet(n);
      for (let c = 0; c < 129; c++) if (own[c]) chars[c] = 1;
      return;
    }
    case "any":
    case "backref":
      chars.fill(1);
      return;
    case "assert":
    case "look":
      return;
    case "group":
      charsOf(n.body, chars, seen);
      return;
    case "seq":
      for (const item of n.items) charsOf(item, chars, seen);
      return;
    case "alt":
      for (const a of n.alts) charsOf(a, chars, seen);
      return;
    case "rep":
      if (n.max !== 0) charsOf(n.body, chars, seen);
      return;
  }
}

// ASCII characters 0..127 plus slot 128 for "some non-ASCII character" (as python-preference.ts).
type CharSet = Uint8Array;
const NON_ASCII = 128;
const ALL: CharSet = new Uint8Array(129).fill(1);
const NONE: CharSet = new Uint8Array(129);

function union(a: CharSet, b: CharSet): CharSet {
  const out = a.slice();
  for (let i = 0; i < 129; i++) if (b[i]) out[i] = 1;
  return out;
}

/** The characters a node's matches can end with, and whether it can match the empty string. */
interface NodeEnd {
  last: CharSet;
  nullable: boolean;
}

function endOf(n: RegexSyntaxNode, memo: Map<RegexSyntaxNode, NodeEnd>): NodeEnd {
  let known = memo.get(n);
  if (known !== undefined) return known;
  switch (n.k) {
    case "set":
      known = { last: charsOfSet(n), nullable: false };
      break;
    case "any":
      known = { last: ALL, nullable: false };
      break;
    case "assert":
    case "look":
      known = { last: NONE, nullable: true };
      break;
    case "backref":
      known = { last: ALL, nullable: true };
      break;
    case "group":
      known = endOf(n.body, memo);
      break;
    case "seq": {
      let last = NONE;
      let nullable = true;
      for (const item of n.items) {
        const r = endOf(item, memo);
        last = r.nullable ? union(last, r.last) : r.last;
        nullable = nullable && r.nullable;
      }
      known = { last, nullable };
      break;
    }
    case "alt": {
      let last = NONE;
      let nullable = false;
      for (const a of n.alts) {
        const r = endOf(a, memo);
        last = union(last, r.last);
        nullable = nullable || r.nullable;
      }
      known = { last, nullable };
      break;
    }
    case "rep": {
      const r = endOf(n.body, memo);
      known = n.max === 0 ? { last: NONE, nullable: true } : { last: r.last, nullable: n.min === 0 || r.nullable };
      break;
    }
  }
  memo.set(n, known);
  return known;
}
