/**
 * The bytes a whole sentence of a grammar can end with: the last bytes of the terminals that can
 * come last (LAST of the start rule) and of the ignored ones. A token whose bytes below some
 * point hold none of them cannot finish a sentence there, whatever the parser stack: the budget
 * search asks "does one token finish it?" of tokens that go on into long runs (a 96-dash token
 * is 96 nested negations of an arithmetic grammar), and this answers no without the walk.
 */
import type { Grammar } from "./grammar.js";
import { firstCharsOfSet } from "./python-preference.js";
import type { RegexSyntaxNode } from "./pyregex.js";

/** The terminals a sentence can end with: LAST of the start rule, by name. */
export function lastTerminals(grammar: Grammar): Set<string> {
  const rules = grammar.compiled.rules;
  const origins = new Set(rules.map((r) => r.origin));
  const nullable = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const r of rules)
      if (!nullable.has(r.origin) && r.expansion.every((s) => nullable.has(s))) {
        nullable.add(r.origin);
        changed = true;
      }
  }
  // Per rule, the symbols a derivation can end with, up to the first one that cannot be empty.
  const last = new Map<string, Set<string>>();
  for (const o of origins) last.set(o, new Set());
  for (let changed = true; changed; ) {
    changed = false;
    for (const r of rules) {
      const into = last.get(r.origin)!;
      const before = into.size;
      for (let i = r.expansion.length - 1; i >= 0; i--) {
        const s = r.expansion[i]!;
        if (origins.has(s)) for (const t of last.get(s)!) into.add(t);
        else into.add(s);
        if (!nullable.has(s)) break;
      }
      if (into.size !== before) changed = true;
    }
  }
  const out = new Set<string>();
  for (const s of last.get(grammar.compiled.start) ?? []) if (!origins.has(s)) out.add(s);
  return out;
}

/** The 8 words (one bit per byte) of the bytes a sentence can end with. */
export function sentenceFinalBytes(grammar: Grammar): Uint32Array {
  const out = new Uint32Array(8);
  for (const name of [...lastTerminals(grammar), ...grammar.ignore]) {
    const term = grammar.terminals.get(name);
    if (term === undefined) continue; // declared without a definition: never lexed
    const chars = endOf(term.parsed.root, new Map()).last;
    for (let c = 0; c < 128; c++) if (chars[c]) out[c >>> 5]! |= 1 << (c & 31);
    // A character past ASCII ends in a continuation byte.
    if (chars[NON_ASCII]) for (let b = 0x80; b < 0xc0; b++) out[b >>> 5]! |= 1 << (b & 31);
  }
  return out;
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
    case "set": {
      const last = firstCharsOfSet(n);
      // Unicode case folding links some letters across ASCII (k and the Kelvin sign, s and ſ).
      if (n.caseless && !n.ascii) {
        last[NON_ASCII] = 1;
        for (let c = 65; c <= 90; c++) last[c] = last[c + 32] = 1;
      }
      known = { last, nullable: false };
      break;
    }
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
