// Random strings a Python-regex AST likely matches (lookarounds ignored), for the corpus
// sentence sampler (sentences.ts).

import { caseClose } from "../regex/index.js";
import type { ParsedRegex, RegexSyntaxNode, SetNode } from "./pyregex.js";

/** Uniform in [0, 1). */
export type Rng = () => number;

const PRINTABLE: number[] = [];
for (let c = 32; c < 127; c++) PRINTABLE.push(c);
PRINTABLE.push(9, 10);

function setContains(n: SetNode, c: number): boolean {
  const ranges = n.caseless ? caseClose(n.ranges, n.ascii) : n.ranges;
  let hit = false;
  for (let i = 0; i < ranges.length && !hit; i += 2) hit = c >= ranges[i]! && c <= ranges[i + 1]!;
  for (const e of n.classes) {
    if (hit) break;
    const s = String.fromCodePoint(c);
    if (e === "d") hit = /\d/.test(s);
    else if (e === "D") hit = !/\d/.test(s);
    else if (e === "w") hit = /\w/.test(s);
    else if (e === "W") hit = !/\w/.test(s);
    else if (e === "s") hit = /\s/.test(s);
    else hit = !/\s/.test(s);
  }
  return hit !== n.negated;
}

function pickFromSet(n: SetNode, rng: Rng): number | null {
  if (!n.negated && n.classes.length === 0) {
    // Prefer printable members; fall back to any member.
    const ranges = n.caseless ? caseClose(n.ranges, n.ascii) : n.ranges;
    const printable = PRINTABLE.filter((c) => setContains(n, c));
    if (printable.length && (rng() < 0.9 || ranges.length === 0)) return printable[Math.floor(rng() * printable.length)]!;
    if (ranges.length === 0) return null;
    const r = Math.floor(rng() * (ranges.length / 2)) * 2;
    const lo = ranges[r]!,
      hi = Math.min(ranges[r + 1]!, lo + 200);
    return lo + Math.floor(rng() * (hi - lo + 1));
  }
  const printable = PRINTABLE.filter((c) => setContains(n, c));
  if (!printable.length) return null;
  return printable[Math.floor(rng() * printable.length)]!;
}

/** A random string the pattern is likely to match (lookarounds are ignored). */
export function sampleRegex(parsed: ParsedRegex, rng: Rng, maxRepeat = 4): string {
  const groups = new Map<number, string>();
  const gen = (n: RegexSyntaxNode): string => {
    switch (n.k) {
      case "set": {
        const c = pickFromSet(n, rng);
        return c === null ? "" : String.fromCodePoint(c);
      }
      case "any": {
        const pool = n.dotAll ? PRINTABLE : PRINTABLE.filter((c) => c !== 10);
        return String.fromCodePoint(pool[Math.floor(rng() * pool.length)]!);
      }
      case "seq":
        return n.items.map(gen).join("");
      case "alt":
        return gen(n.alts[Math.floor(rng() * n.alts.length)]!);
      case "group": {
        const s = gen(n.body);
        groups.set(n.index, s);
        return s;
      }
      case "rep": {
        const hi = Math.min(n.max, n.min + maxRepeat);
        const count = n.min + Math.floor(rng() * (hi - n.min + 1));
        let s = "";
        for (let i = 0; i < count; i++) s += gen(n.body);
        return s;
      }
      case "assert":
      case "look":
        return "";
      case "backref":
        return groups.get(n.index) ?? "";
    }
  };
  return gen(parsed.root);
}
