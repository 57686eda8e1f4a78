// Random sentences from a compiled grammar: bounded-depth random derivations over the BNF rules,
// terminals instantiated from their patterns, optional ignored text between tokens. Used by the
// corpus tests (our recognizer vs Lark) and handy for fuzzing the constraint layer.

import type { Grammar } from "./grammar.js";
import { sampleRegex, type Rng } from "./pyregex-sample.js";
import { seededRandom } from "../support/index.js";

/** Deterministic PRNG (mulberry32), the regex stage's. */
export const makeRng: (seed: number) => Rng = seededRandom;

export interface SentenceOptions {
  maxDepth?: number;
  /** Probability of inserting an ignored terminal between two tokens. */
  ignoreProbability?: number;
  maxTokens?: number;
}

export function sampleTerminal(grammar: Grammar, name: string, rng: Rng): string {
  const t = grammar.terminals.get(name);
  if (!t) return "";
  const p = t.def.pattern;
  if (p.type === "str") {
    if (!p.flags.includes("i")) return p.value;
    return [...p.value].map((c) => (rng() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join("");
  }
  return sampleRegex(t.parsed, rng);
}

/** A random sentence, or null when the derivation ran past the limits. */
export function sampleSentence(grammar: Grammar, rng: Rng, opts: SentenceOptions = {}): string | null {
  const maxDepth = opts.maxDepth ?? 12;
  const maxTokens = opts.maxTokens ?? 60;
  const ignoreP = opts.ignoreProbability ?? 0.3;
  const { rules, start } = grammar.compiled;
  const byOrigin = new Map<string, number[]>();
  rules.forEach((r, i) => {
    let l = byOrigin.get(r.origin);
    if (!l) byOrigin.set(r.origin, (l = []));
    l.push(i);
  });
  // Minimal derivation height per nonterminal, to steer towards termination when deep.
  const height = new Map<string, number>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const r of rules) {
      let h = 0;
      let ok = true;
      for (const s of r.expansion) {
        if (!byOrigin.has(s)) continue;
        const hs = height.get(s);
        if (hs === undefined) {
          ok = false;
          break;
        }
        h = Math.max(h, hs + 1);
      }
      if (ok && (height.get(r.origin) ?? Infinity) > h) {
        height.set(r.origin, h);
        changed = true;
      }
    }
  }
  const tokens: string[] = [];
  let overflow = false;
  const expand = (sym: string, depth: number): void => {
    if (overflow) return;
    if (depth > maxDepth + 40) {
      overflow = true;
      return;
    } // unproductive recursion
    const alts = byOrigin.get(sym);
    if (!alts) {
      tokens.push(sym);
      if (tokens.length > maxTokens) overflow = true;
      return;
    }
    let choices = alts;
    if (depth >= maxDepth) {
      const best = Math.min(...alts.map((i) => ruleHeight(i)));
      choices = alts.filter((i) => ruleHeight(i) === best);
    }
    const r = rules[choices[Math.floor(rng() * choices.length)]!]!;
    for (const s of r.expansion) expand(s, depth + 1);
  };
  const ruleHeight = (i: number): number => {
    let h = 0;
    for (const s of rules[i]!.expansion) if (byOrigin.has(s)) h = Math.max(h, (height.get(s) ?? 1e9) + 1);
    return h;
  };
  if (!byOrigin.has(start)) return null;
  expand(start, 0);
  if (overflow) return null;
  const ignored = [...grammar.ignore];
  let out = "";
  for (let i = 0; i < tokens.length; i++) {
    if (ignored.length && (i > 0 || rng() < 0.2) && rng() < ignoreP)
      out += sampleTerminal(grammar, ignored[Math.floor(rng() * ignored.length)]!, rng);
    out += sampleTerminal(grammar, tokens[i]!, rng);
    if (ignored.length && i > 0 && i === tokens.length - 1 && rng() < 0.1) out += sampleTerminal(grammar, ignored[0]!, rng);
  }
  return out;
}

/** Near misses: small edits of a sentence (delete, insert, duplicate, swap, truncate). */
export function mutateSentence(s: string, rng: Rng, alphabet: string): string {
  const chars = [...s];
  const kind = Math.floor(rng() * 5);
  const at = Math.floor(rng() * (chars.length + 1));
  const pickChar = (): string => {
    const a = [...alphabet];
    return a.length ? a[Math.floor(rng() * a.length)]! : "x";
  };
  switch (kind) {
    case 0:
      if (chars.length) chars.splice(Math.min(at, chars.length - 1), 1);
      break;
    case 1:
      chars.splice(at, 0, pickChar());
      break;
    case 2: {
      const len = 1 + Math.floor(rng() * 4);
      chars.splice(at, 0, ...chars.slice(at, at + len));
      break;
    }
    case 3:
      if (chars.length > 1) {
        const i = Math.min(at, chars.length - 2);
        [chars[i], chars[i + 1]] = [chars[i + 1]!, chars[i]!];
        break;
      } else chars.push(pickChar());
      break;
    case 4:
      chars.length = Math.floor(chars.length * rng());
      break;
  }
  return chars.join("");
}

/** Characters appearing in the grammar's string literals (a useful alphabet for mutations). */
export function literalAlphabet(grammar: Grammar): string {
  const set = new Set<string>(["a", "0", " ", "\n", '"', "(", ")"]);
  for (const t of grammar.terminals.values()) if (t.def.pattern.type === "str") for (const c of t.def.pattern.value) set.add(c);
  return [...set].join("");
}
