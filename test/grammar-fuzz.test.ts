// Random small grammars (fixed seed) against Lark 1.1.5: the same grammars are refused (LALR
// conflicts, duplicate expansions of optionals, ...) and the accepted ones give the same verdicts
// on sampled sentences and near misses, for both the recognizer and the byte automaton.
import { test } from "node:test";
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { compileGrammar, parses, type Grammar } from "../src/grammar/index.js";
import { GrammarAutomaton } from "../src/grammar/incremental.js";
import { literalAlphabet, makeRng, mutateSentence, sampleSentence } from "../src/grammar/sampler.js";
import { ORACLE_PYTHON, REPO_ROOT } from "./helpers/paths.js";

const ORACLE = resolve(REPO_ROOT, "test", "grammars", "lark_oracle.py");
const GRAMMARS = 300;

function randomGrammar(rng: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  const ruleNames = ["start", "a", "b", "c"].slice(0, 2 + Math.floor(rng() * 3));
  const literals = ['"x"', '"y"', '"z"', '"xy"', '"x"i'];
  const terminals = ["NAME", "NUM", "X"];
  const atom = (depth: number): string => {
    const r = rng();
    if (r < 0.3) return pick(ruleNames);
    if (r < 0.6) return pick(literals);
    if (r < 0.75) return pick(terminals);
    if (depth > 1) return pick(literals);
    return r < 0.88 ? `(${expansions(depth + 1)})` : `[${expansions(depth + 1)}]`;
  };
  const item = (depth: number): string => {
    const a = atom(depth);
    const r = rng();
    return r < 0.12 ? a + "?" : r < 0.22 ? a + "*" : r < 0.32 ? a + "+" : r < 0.36 ? `${a}~1..2` : a;
  };
  const expansion = (depth: number): string => Array.from({ length: Math.floor(rng() * 4) }, () => item(depth)).join(" ");
  const expansions = (depth: number): string => Array.from({ length: 1 + Math.floor(rng() * 3) }, () => expansion(depth) || '"w"').join(" | ");
  const lines = ruleNames.map((n) => `${rng() < 0.15 ? "?" : ""}${n}${rng() < 0.1 ? ".2" : ""}: ${expansions(0)}`);
  lines.push("NAME: /[a-z]+/", "NUM: /[0-9]+/", `X${rng() < 0.3 ? ".3" : ""}: "x" | "xx"`);
  if (rng() < 0.6) lines.push('%ignore " "');
  return lines.join("\n") + "\n";
}

test("random grammars: Lark and we refuse the same ones and agree on sentences", () => {
  const rng = makeRng(424242);
  const sources = Array.from({ length: GRAMMARS }, () => randomGrammar(rng));
  const grammars: (Grammar | null)[] = sources.map((s) => {
    try { return compileGrammar(s); } catch { return null; }
  });
  const texts: string[][] = grammars.map((g, i) => {
    if (!g) return [];
    const r = makeRng(i + 1);
    const out = new Set<string>([""]);
    for (let k = 0; k < 25; k++) {
      const s = sampleSentence(g, r, { maxDepth: 3 + (k % 5), maxTokens: 30 });
      if (s !== null) { out.add(s); out.add(mutateSentence(s, r, literalAlphabet(g))); }
    }
    return [...out];
  });
  const input = sources.map((g, i) => JSON.stringify({ grammar: g, texts: texts[i] })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [ORACLE], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const answers = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { ok: boolean; results?: boolean[]; error?: string });
  let grammarAgree = 0, refusedByBoth = 0, sentenceAgree = 0, sentences = 0, automatonAgree = 0;
  const diffs: string[] = [];
  sources.forEach((src, i) => {
    const g = grammars[i]!;
    const a = answers[i]!;
    if ((g !== null) === a.ok) grammarAgree++;
    else diffs.push(`grammar ${i} ours=${g !== null} lark=${a.ok} ${a.error ?? ""}\n${src}`);
    if (!g && !a.ok) refusedByBoth++;
    if (!g || !a.ok) return;
    const auto = new GrammarAutomaton(g, { maxIgnoredRun: 1 << 20 });
    texts[i]!.forEach((t, j) => {
      sentences++;
      const lark = a.results![j]!;
      if (parses(g, t) === lark) sentenceAgree++;
      else diffs.push(`grammar ${i} text ${JSON.stringify(t)} lark=${lark}\n${src}`);
      if (auto.isComplete(auto.walk(auto.start, t)) === lark) automatonAgree++;
      else diffs.push(`grammar ${i} automaton text ${JSON.stringify(t)} lark=${lark}\n${src}`);
    });
  });
  console.log(JSON.stringify({ grammars: GRAMMARS, grammarAgree, refusedByBoth, sentences, sentenceAgree, automatonAgree }));
  for (const d of diffs.slice(0, 10)) console.log("DIFF " + d);
  assert.deepEqual(diffs, []);
});
