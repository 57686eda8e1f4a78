// Random small grammars (fixed seed) against Lark 1.1.5: the same grammars are refused (LALR
// conflicts, duplicate expansions of optionals, ...) and the accepted ones give the same verdicts
// on sampled sentences and near misses, for both the recognizer and the byte automaton.
import { test } from "node:test";
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { compileGrammar, type Grammar } from "../src/grammar/index.js";
import { parses } from "../src/grammar/testing.js";
import { GrammarAutomaton } from "../src/grammar/index.js";
import { literalAlphabet, makeRng, mutateSentence, sampleSentence } from "../src/grammar/testing.js";
import { ORACLE_PYTHON, REPO_ROOT } from "./support/paths.js";

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
  const expansions = (depth: number): string =>
    Array.from({ length: 1 + Math.floor(rng() * 3) }, () => expansion(depth) || '"w"').join(" | ");
  const lines = ruleNames.map((n) => `${rng() < 0.15 ? "?" : ""}${n}${rng() < 0.1 ? ".2" : ""}: ${expansions(0)}`);
  lines.push("NAME: /[a-z]+/", "NUM: /[0-9]+/", `X${rng() < 0.3 ? ".3" : ""}: "x" | "xx"`);
  if (rng() < 0.6) lines.push('%ignore " "');
  return lines.join("\n") + "\n";
}

/** Grammars stressing the contextual lexer: overlapping terminals, priorities, flags, literals. */
function randomLexerGrammar(rng: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  const piece = (): string => {
    const r = rng();
    if (r < 0.3) return pick(['"a"', '"b"', '"ab"', '"ba"', '"a"i', '"aa"']);
    if (r < 0.55) return pick(["/[ab]/", "/a+/", "/b*a/", "/[a-c]+?/", "/(ab|a)/", "/a|ab/", "/[^ ]/"]);
    if (r < 0.7) return pick(['"a".."c"', '"0".."9"']);
    return `(${pick(['"a"', '"b"', "/c/"])} | ${pick(['"ab"', '"c"', "/b+/"])})${pick(["", "+", "*", "?"])}`;
  };
  const names = ["T", "U", "V", "W"].slice(0, 2 + Math.floor(rng() * 3));
  const lines: string[] = [];
  const items = [...names, '"a"', '"ab"', '"b"', '"c"i'];
  lines.push(`start: item+`);
  lines.push(
    `item: ${Array.from({ length: 2 + Math.floor(rng() * 3) }, () => pick(items) + (rng() < 0.3 ? " " + pick(items) : "")).join(" | ")}`,
  );
  for (const n of names) {
    const prio = rng() < 0.3 ? `.${pick([-1, 1, 2])}` : "";
    const body = Array.from({ length: 1 + Math.floor(rng() * 2) }, piece).join(" ");
    lines.push(`${n}${prio}: ${body}${rng() < 0.3 ? " | " + piece() : ""}`);
  }
  if (rng() < 0.7) lines.push('%ignore " "');
  return lines.join("\n") + "\n";
}

test("random lexer-heavy grammars: same verdicts as Lark", () => {
  const rng = makeRng(777);
  const sources = Array.from({ length: 200 }, () => randomLexerGrammar(rng));
  const grammars: (Grammar | null)[] = sources.map((s) => {
    try {
      return compileGrammar(s);
    } catch {
      return null;
    }
  });
  const texts: string[][] = grammars.map((g, i) => {
    if (!g) return [];
    const r = makeRng(5000 + i);
    const out = new Set<string>();
    for (let k = 0; k < 25; k++) {
      const s = sampleSentence(g, r, { maxDepth: 6, maxTokens: 12 });
      if (s !== null) {
        out.add(s);
        out.add(mutateSentence(s, r, "abc "));
      }
    }
    for (let k = 0; k < 10; k++) out.add(Array.from({ length: 1 + Math.floor(r() * 6) }, () => "abc "[Math.floor(r() * 4)]).join(""));
    return [...out];
  });
  const input = sources.map((g, i) => JSON.stringify({ grammar: g, texts: texts[i] })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [ORACLE], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const answers = r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { ok: boolean; results?: boolean[]; error?: string });
  let grammarAgree = 0,
    sentences = 0,
    sentenceAgree = 0,
    larkTrue = 0,
    automatonAgree = 0;
  let approximateGrammars = 0,
    approximateDiffs = 0;
  const diffs: string[] = [];
  sources.forEach((src, i) => {
    const g = grammars[i]!;
    const a = answers[i]!;
    if ((g !== null) === a.ok) grammarAgree++;
    else diffs.push(`grammar ${i} ours=${g !== null} lark=${a.ok} ${a.error ?? ""}\n${src}`);
    if (!g || !a.ok) return;
    const auto = new GrammarAutomaton(g, { maxIgnoredRun: 1 << 20 });
    if (auto.approximate.size) approximateGrammars++;
    texts[i]!.forEach((t, j) => {
      sentences++;
      const lark = a.results![j]!;
      if (lark) larkTrue++;
      if (parses(g, t) === lark) sentenceAgree++;
      else diffs.push(`grammar ${i} text ${JSON.stringify(t)} lark=${lark}\n${src}`);
      if (auto.isComplete(auto.walk(auto.start, t)) === lark) automatonAgree++;
      // The automaton may only differ where it says it approximates Python's match preference.
      else if (auto.approximate.size) approximateDiffs++;
      else diffs.push(`grammar ${i} automaton text ${JSON.stringify(t)} lark=${lark}\n${src}`);
    });
  });
  console.log(
    JSON.stringify({
      lexerGrammars: sources.length,
      grammarAgree,
      sentences,
      sentenceAgree,
      larkTrue,
      automatonAgree,
      approximateGrammars,
      approximateDiffs,
    }),
  );
  for (const d of diffs.slice(0, 10)) console.log("DIFF " + d);
  assert.deepEqual(diffs, []);
});

test("random grammars: Lark and we refuse the same ones and agree on sentences", () => {
  const rng = makeRng(424242);
  const sources = Array.from({ length: GRAMMARS }, () => randomGrammar(rng));
  const grammars: (Grammar | null)[] = sources.map((s) => {
    try {
      return compileGrammar(s);
    } catch {
      return null;
    }
  });
  const texts: string[][] = grammars.map((g, i) => {
    if (!g) return [];
    const r = makeRng(i + 1);
    const out = new Set<string>([""]);
    for (let k = 0; k < 25; k++) {
      const s = sampleSentence(g, r, { maxDepth: 3 + (k % 5), maxTokens: 30 });
      if (s !== null) {
        out.add(s);
        out.add(mutateSentence(s, r, literalAlphabet(g)));
      }
    }
    return [...out];
  });
  const input = sources.map((g, i) => JSON.stringify({ grammar: g, texts: texts[i] })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [ORACLE], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const answers = r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { ok: boolean; results?: boolean[]; error?: string });
  let grammarAgree = 0,
    refusedByBoth = 0,
    sentenceAgree = 0,
    sentences = 0,
    automatonAgree = 0;
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
