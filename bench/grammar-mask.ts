/**
 * npm run bench:grammar-mask — token-mask speed of the grammar constraint (Lark grammar → LALR +
 * contextual lexer → incremental byte automaton → GrammarTokenMatcher), MaskBench style like
 * bench/mask.ts (same JSON shape, so the two can be merged): each valid target document is
 * tokenized by the real tokenizer (our llama.cpp addon, vocab-only) and replayed from a fresh
 * constraint state; at each step the mask is computed, the target's next token must be in it
 * (wrongly masked tokens are counted and must be 0), then the token is accepted.
 *
 * Each round compiles the grammar from scratch (no cross-round caches), so the lazy first visits
 * of automaton and lexer states are inside the per-token numbers; compile = grammar → automaton →
 * matcher → first mask. `oursWarmMatcher` replays on a matcher kept from the first round (the
 * server caches one per grammar and vocabulary): steady state.
 *
 * Usage: node --import tsx bench/grammar-mask.ts [--rounds N] [--vocab gpt-2,qwen2] [--workload json,...]
 */
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileGrammar, createGrammarAutomaton } from "../src/grammar/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { TokenTrie } from "../src/constraint/trie.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../src/constraint/grammar-matcher.js";
import { MAX_IGNORED_RUN } from "../src/generate/grammar-constraint.js";
import { argValue, percentile, round3 } from "./stats.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const VOCAB_DIR = resolve(REPO_ROOT, "..", "shared", "models", "vocab");

interface Workload {
  name: string;
  grammar: string;
  targets: string[];
}

const WORKLOADS: Workload[] = [
  {
    name: "json",
    grammar: `?start: value
?value: object | array | string | SIGNED_NUMBER -> number | "true" -> true | "false" -> false | "null" -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
`,
    targets: [
      JSON.stringify({ name: "Ada Lovelace", age: 36, email: "ada@analytical.engine", tags: ["math", "poetry"], active: true }),
      JSON.stringify({ id: 1042, items: [{ sku: "A-17", qty: 3, price: 9.99 }, { sku: "B-2", qty: 1, price: -0.5e2 }], note: null }, null, 2),
      JSON.stringify([1, 2, 3, [4, [5, { deep: { deeper: ["x", "y z", false] } }]]]),
      JSON.stringify({ city: "São Paulo", temp: 21.5, forecast: ["sunny", "cloudy"], alerts: [] }, null, 1),
    ],
  },
  {
    name: "arithmetic",
    grammar: `?start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul | product "/" atom -> div
?atom: NUMBER -> number | "-" atom -> neg | NAME -> var | "(" sum ")"
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`,
    targets: ["(1 + 2) * x - 3.5 / (y + -4)", "alpha * beta + gamma_2 * (delta - 10)", "((((1))))", "12345 * 678 + 9 / 3 - total_count"],
  },
  {
    name: "palindrome",
    grammar: `start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "a".."z"\n`,
    targets: ["abzba", "aabbaxabbaa", "babbmbbab", "abababaqabababa"],
  },
  {
    name: "sql_subset",
    grammar: `start: select_stmt
select_stmt: "SELECT"i select_list "FROM"i table_ref [where_clause] [order_clause] [limit_clause]
select_list: "*" | column ("," column)*
column: NAME ["AS"i NAME]
table_ref: NAME [NAME]
where_clause: "WHERE"i condition
?condition: condition "AND"i comparison | condition "OR"i comparison | comparison
comparison: operand OP operand | "(" condition ")"
operand: NAME | NUMBER | STRING
OP: "=" | "<>" | "<" | ">" | "<=" | ">="
order_clause: "ORDER"i "BY"i NAME ["ASC"i | "DESC"i]
limit_clause: "LIMIT"i INT
STRING: /'[^']*'/
%import common.CNAME -> NAME
%import common.NUMBER
%import common.INT
%import common.WS
%ignore WS
`,
    targets: [
      "SELECT name, age AS years FROM users u WHERE age >= 18 AND city = 'Paris' ORDER BY name ASC LIMIT 10",
      "select * from orders where (total > 100 or status <> 'open') limit 5",
      "SELECT id FROM t",
    ],
  },
];

interface Samples {
  compileMs: number[];
  stepUs: number[];
  maskOnlyUs: number[];
  wronglyMasked: number;
  notAccepting: number;
  tokens: number;
}

const newSamples = (): Samples => ({ compileMs: [], stepUs: [], maskOnlyUs: [], wronglyMasked: 0, notAccepting: 0, tokens: 0 });

function runOurs(w: Workload, trie: TokenTrie, targets: Int32Array[], budget: "large" | "tight", out: Samples, reuse?: GrammarTokenMatcher): GrammarTokenMatcher {
  const t0 = performance.now();
  const matcher = reuse ?? new GrammarTokenMatcher(trie, createGrammarAutomaton(compileGrammar(w.grammar), { maxIgnoredRun: MAX_IGNORED_RUN }));
  matcher.mask(matcher.start, 1000);
  out.compileMs.push(performance.now() - t0);
  for (const tokens of targets) {
    const st = new GrammarConstraintState(matcher);
    const n = tokens.length;
    for (let i = 0; i < n; i++) {
      const tok = tokens[i]!;
      const remaining = budget === "large" ? 1000 - i : n - i;
      const a = performance.now();
      const mask = st.mask(remaining);
      const b = performance.now();
      const ok = ((mask[tok >>> 5]! >>> (tok & 31)) & 1) === 1;
      st.advance(tok);
      const c = performance.now();
      out.maskOnlyUs.push((b - a) * 1000);
      out.stepUs.push((c - a) * 1000);
      if (!ok) out.wronglyMasked++;
    }
    out.tokens += n;
    if (!st.isAccepting()) out.notAccepting++;
  }
  return matcher;
}



function summarize(s: Samples): Record<string, number> {
  const steps = [...s.stepUs].sort((a, b) => a - b);
  const masks = [...s.maskOnlyUs].sort((a, b) => a - b);
  const compile = [...s.compileMs].sort((a, b) => a - b);
  const avg = steps.reduce((a, b) => a + b, 0) / Math.max(1, steps.length);
  return {
    compileMsMedian: round3(percentile(compile, 0.5)),
    compileMsMin: round3(compile[0] ?? NaN),
    compileMsMax: round3(compile[compile.length - 1] ?? NaN),
    perTokenUsAvg: round3(avg),
    perTokenUsP50: round3(percentile(steps, 0.5)),
    perTokenUsP99: round3(percentile(steps, 0.99)),
    maskOnlyUsP50: round3(percentile(masks, 0.5)),
    maskOnlyUsP99: round3(percentile(masks, 0.99)),
    tokensReplayed: s.tokens,
    wronglyMasked: s.wronglyMasked,
  };
}


async function main(): Promise<void> {
  const rounds = Number(argValue("rounds") ?? 3);
  const vocabNames = (argValue("vocab") ?? "gpt-2,qwen2").split(",");
  const only = argValue("workload")?.split(",");
  const workloads = WORKLOADS.filter((w) => only === undefined || only.includes(w.name));
  const { loadModel } = await import("../src/model/index.js");
  const result: Record<string, unknown> = {
    node: process.version,
    cpus: availableParallelism(),
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    rounds,
    note:
      "perTokenUs = mask + accept per target token; maskOnlyUs = mask alone. Ours: fresh grammar compile + lazy " +
      "matcher per round (compile = grammar → automaton → matcher → first mask). Budget 'large' = 1000 - step; " +
      "'tight' = exactly the target's own token count. oursWarmMatcher = same replays on the matcher kept from the " +
      "warm-up round (the server caches matchers per grammar and vocabulary). XGrammar not run here. Wall-clock on " +
      "a shared VM: see loadAverage.",
    vocabularies: {} as Record<string, unknown>,
  };
  for (const vname of vocabNames) {
    const path = resolve(VOCAB_DIR, `ggml-vocab-${vname}.gguf`);
    if (!existsSync(path)) continue;
    const vocab = loadVocabulary(path);
    const t0 = performance.now();
    const trie = TokenTrie.build(vocab);
    const trieMs = performance.now() - t0;
    const model = loadModel(path, { vocabOnly: true, threads: 2 });
    const perWorkload: Record<string, unknown> = {};
    for (const w of workloads) {
      const targets = w.targets.map((t) => model.tokenize(t, { addSpecial: false, parseSpecial: false }));
      const ours = newSamples();
      const oursTight = newSamples();
      const oursWarm = newSamples();
      const warm = runOurs(w, trie, targets, "large", newSamples());
      for (let r = 0; r < rounds; r++) {
        runOurs(w, trie, targets, "large", ours);
        runOurs(w, trie, targets, "tight", oursTight);
        runOurs(w, trie, targets, "large", oursWarm, warm);
      }
      perWorkload[w.name] = {
        ours: summarize(ours),
        oursTightBudget: summarize(oursTight),
        oursWarmMatcher: summarize(oursWarm),
        oursNotAcceptingAtEnd: ours.notAccepting + oursTight.notAccepting,
      };
      process.stderr.write(`bench:grammar-mask: ${vname} ${w.name} done\n`);
    }
    model.dispose();
    (result.vocabularies as Record<string, unknown>)[vname] = {
      vocabSize: vocab.size,
      trieTokens: trie.numTokens,
      trieNodes: trie.numNodes,
      trieBuildMs: round3(trieMs),
      tokenizer: "llama.cpp",
      workloads: perWorkload,
    };
  }
  result.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}

await main();
