// Corpus agreement with Lark 1.1.5: for every grammar in test/grammars/*.lark, our accept/refuse
// of the grammar equals Lark's, and sampled sentences plus near-miss mutations get the same
// verdict from our recognizer and from `Lark(grammar, parser='lalr').parse`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { spawnSync } from "node:child_process";
import { compileGrammar, type Grammar } from "../src/grammar/index.js";
import { parses } from "../src/grammar/testing.js";
import { GrammarAutomaton } from "../src/grammar/index.js";
import { literalAlphabet, makeRng, mutateSentence, sampleSentence } from "../src/grammar/testing.js";
import { ORACLE_PYTHON, REPO_ROOT } from "./support/paths.js";

const CORPUS_DIR = resolve(REPO_ROOT, "test", "grammars");
const ORACLE = resolve(CORPUS_DIR, "lark_oracle.py");
const SAMPLES_PER_GRAMMAR = 40;
const MUTATIONS_PER_GRAMMAR = 40;
/** Grammars whose terminals use non-regular constructs (lookaround, backreferences). */
const KNOWN_AUTOMATON_REFUSALS = new Set(["lookahead-terminal.lark", "backref-terminal.lark"]);
/** Grammars Lark accepts that we refuse on purpose (nothing to generate from, or not bundled). */
const INTENDED_REFUSALS = new Map<string, RegExp>([
  ["declare.lark", /%declare/],
  ["import-unknown-lib.lark", /only Lark's common library/],
]);

interface Case {
  file: string;
  source: string;
  grammar: Grammar | null;
  error: string | null;
  texts: string[];
}

interface OracleAnswer {
  ok: boolean;
  results?: boolean[];
  error?: string;
}

function buildCases(): Case[] {
  const files = readdirSync(CORPUS_DIR)
    .filter((f) => f.endsWith(".lark"))
    .sort();
  return files.map((file, fi) => {
    const source = readFileSync(resolve(CORPUS_DIR, file), "utf8");
    let grammar: Grammar | null = null;
    let error: string | null = null;
    try {
      grammar = compileGrammar(source);
    } catch (e) {
      error = (e as Error).message;
    }
    const texts = new Set<string>();
    if (grammar) {
      const rng = makeRng(1000 + fi);
      const alphabet = literalAlphabet(grammar);
      const samples: string[] = [];
      for (let i = 0; i < SAMPLES_PER_GRAMMAR * 3 && samples.length < SAMPLES_PER_GRAMMAR; i++) {
        const s = sampleSentence(grammar, rng, { maxDepth: 4 + (i % 8) });
        if (s !== null) {
          samples.push(s);
          texts.add(s);
        }
      }
      for (let i = 0; i < MUTATIONS_PER_GRAMMAR && samples.length; i++) {
        texts.add(mutateSentence(samples[i % samples.length]!, rng, alphabet));
      }
      texts.add("");
    }
    return { file, source, grammar, error, texts: [...texts] };
  });
}

function askLark(cases: Case[]): OracleAnswer[] {
  const input = cases.map((c) => JSON.stringify({ grammar: c.source, texts: c.texts })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [ORACLE], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines.length, cases.length);
  return lines.map((l) => JSON.parse(l) as OracleAnswer);
}

test("corpus: grammar verdicts and sentence verdicts agree with Lark", () => {
  const cases = buildCases();
  assert.ok(cases.length >= 100, `corpus has ${cases.length} grammars`);
  const answers = askLark(cases);
  let grammarAgree = 0,
    sentenceAgree = 0,
    sentences = 0,
    accepted = 0,
    larkTrue = 0;
  const disagreements: string[] = [];
  cases.forEach((c, i) => {
    const a = answers[i]!;
    const ours = c.grammar !== null;
    const intended = INTENDED_REFUSALS.get(c.file);
    if (intended) {
      assert.ok(a.ok && !ours && intended.test(c.error!), `${c.file}: expected an intended refusal, got ${c.error}`);
      return;
    }
    if (ours === a.ok) grammarAgree++;
    else
      disagreements.push(
        `${c.file}: grammar ours=${ours ? "accept" : "refuse (" + c.error + ")"} lark=${a.ok ? "accept" : "refuse (" + a.error + ")"}`,
      );
    if (!ours || !a.ok) return;
    accepted++;
    c.texts.forEach((t, j) => {
      sentences++;
      const lark = a.results![j]!;
      if (lark) larkTrue++;
      const mine = parses(c.grammar!, t);
      if (mine === lark) sentenceAgree++;
      else disagreements.push(`${c.file}: ${JSON.stringify(t)} ours=${mine} lark=${lark}`);
    });
  });
  console.log(
    JSON.stringify({
      grammars: cases.length,
      intendedRefusals: INTENDED_REFUSALS.size,
      grammarAgree,
      acceptedByBoth: accepted,
      sentences,
      sentenceAgree,
      sentencesLarkAccepts: larkTrue,
    }),
  );
  for (const d of disagreements.slice(0, 40)) console.log("DISAGREE " + d);
  assert.deepEqual(disagreements, []);

  // The byte-level incremental automaton (DFA lexing) against the same Lark verdicts.
  let automata = 0,
    automatonRefused = 0,
    checked = 0,
    automatonAgree = 0,
    prefixesChecked = 0,
    finalsChecked = 0;
  let approximateGrammars = 0,
    approximateDiffs = 0;
  const automatonDisagreements: string[] = [];
  cases.forEach((c, i) => {
    const a = answers[i]!;
    if (!c.grammar || !a.ok) return;
    let auto: GrammarAutomaton;
    try {
      auto = new GrammarAutomaton(c.grammar, { maxIgnoredRun: 1 << 20 });
    } catch (e) {
      automatonRefused++;
      assert.ok(KNOWN_AUTOMATON_REFUSALS.has(c.file), `${c.file}: automaton refused: ${(e as Error).message}`);
      return;
    }
    automata++;
    if (auto.approximate.size) approximateGrammars++;
    c.texts.forEach((t, j) => {
      checked++;
      const state = auto.walk(auto.start, t);
      const complete = auto.isComplete(state);
      if (complete === a.results![j]) automatonAgree++;
      else if (auto.approximate.size) approximateDiffs++;
      else automatonDisagreements.push(`${c.file}: ${JSON.stringify(t)} automaton=${complete} lark=${a.results![j]}`);
      if (a.results![j]) {
        // Every prefix of an accepted sentence must stay alive.
        const bytes = new TextEncoder().encode(t);
        // It ends with a byte a sentence can end with (what the budgets' one-token search prunes by).
        const last = bytes[bytes.length - 1];
        if (last !== undefined && ((auto.finalBytes()[last >>> 5]! >>> (last & 31)) & 1) === 0)
          automatonDisagreements.push(`${c.file}: accepted ${JSON.stringify(t)} ends with byte ${last}, not a final byte`);
        finalsChecked += last === undefined ? 0 : 1;
        // Its every byte is one a sentence can contain (what the budgets' lower bound relies on).
        const contained = auto.sentenceBytes();
        const outside = bytes.find((b) => ((contained[b >>> 5]! >>> (b & 31)) & 1) === 0);
        if (outside !== undefined)
          automatonDisagreements.push(`${c.file}: accepted ${JSON.stringify(t)} holds byte ${outside}, not a sentence byte`);
        let s = auto.start;
        for (const b of bytes) {
          s = auto.step(s, b);
          prefixesChecked++;
          if (s < 0) break;
        }
        if (s < 0 && !auto.approximate.size) automatonDisagreements.push(`${c.file}: prefix of accepted ${JSON.stringify(t)} died`);
      }
    });
  });
  console.log(
    JSON.stringify({
      automata,
      automatonRefused,
      checked,
      automatonAgree,
      prefixesChecked,
      finalsChecked,
      approximateGrammars,
      approximateDiffs,
    }),
  );
  for (const d of automatonDisagreements.slice(0, 40)) console.log("AUTOMATON DISAGREE " + d);
  assert.deepEqual(automatonDisagreements, []);
  assert.ok(finalsChecked > 1000, `${finalsChecked} final bytes checked`);
});
