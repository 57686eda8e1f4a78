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
 * matcher → first mask. Then the matcher's walks ahead (walkAhead), which the server runs while
 * the model evaluates the prompt and then in the rest of each decode round (AHEAD_OF_LOGITS_MS a
 * round, the step's mask included): timed on their own (walkAheadMsMedian, all of a round's) and
 * counted in roundMs but not in compile or per token, done before the replay and after each mask
 * step as in the server (which assumes decodes of at least AHEAD_OF_LOGITS_MS, as on this
 * machine's CPU; a faster decode waits for them). `oursWarmMatcher` replays on
 * a matcher kept from the first round (the server caches one per grammar and vocabulary): steady
 * state.
 *
 * XGrammar's WebAssembly build runs the same workloads in its EBNF (written by hand; where Lark's
 * %ignore allows whitespace between any two tokens, the EBNF has explicit `ws` in those places).
 * `npm run bench:mask` includes these workloads; this file alone runs only them.
 *
 * Usage: node --import tsx bench/grammar-mask.ts [--rounds N] [--vocab gpt-2,qwen2] [--workload json,...]
 */
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileGrammar, createGrammarAutomaton } from "../src/grammar/index.js";
import { loadVocabulary } from "../src/vocab/index.js";
import { TokenTrie } from "../src/constraint/index.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../src/constraint/index.js";
import { AHEAD_OF_LOGITS_MS, MAX_IGNORED_RUN } from "../src/generate/index.js";
import { argValue, round3 } from "./stats.js";
import { compareWorkload, cpuUs, newSamples, replayTargets, runTheirs, type ReplayState, type Samples } from "./replay.js";
import { byteLevelVocab, loadXGrammar } from "./xgrammar.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const VOCAB_DIR = resolve(REPO_ROOT, "..", "shared", "models", "vocab");

interface Workload {
  name: string;
  grammar: string;
  /** The same language for XGrammar (EBNF). */
  ebnf: string;
  targets: string[];
}

/** A case-insensitive keyword in XGrammar's EBNF (it has no `i` flag). */
const ci = (word: string): string =>
  word
    .split("")
    .map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`)
    .join(" ");
const EBNF_NUMBER = 'number ::= [+\\-]? (int ("." [0-9]*)? | "." int) ([eE] [+\\-]? int)?\nint ::= [0-9]+';

export const WORKLOADS: Workload[] = [
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
    ebnf: [
      "root ::= ws value ws",
      'value ::= object | array | string | number | "true" | "false" | "null"',
      'object ::= "{" ws (pair (ws "," ws pair)*)? ws "}"',
      'pair ::= string ws ":" ws value',
      'array ::= "[" ws (value (ws "," ws value)*)? ws "]"',
      'string ::= "\\"" ([^"\\\\\\n] | "\\\\" [^\\n])* "\\""',
      EBNF_NUMBER,
      "ws ::= [ \\t\\n\\r\\f]*",
    ].join("\n"),
    targets: [
      JSON.stringify({ name: "Ada Lovelace", age: 36, email: "ada@analytical.engine", tags: ["math", "poetry"], active: true }),
      JSON.stringify(
        {
          id: 1042,
          items: [
            { sku: "A-17", qty: 3, price: 9.99 },
            { sku: "B-2", qty: 1, price: -0.5e2 },
          ],
          note: null,
        },
        null,
        2,
      ),
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
    ebnf: [
      "root ::= sum",
      "sum ::= product (ws [+\\-] ws product)*",
      "product ::= atom (ws [*/] ws atom)*",
      'atom ::= number | "-" ws atom | name | "(" ws sum ws ")"',
      "name ::= [a-zA-Z_] [a-zA-Z0-9_]*",
      EBNF_NUMBER,
      "ws ::= [ \\t]*",
    ].join("\n"),
    targets: ["(1 + 2) * x - 3.5 / (y + -4)", "alpha * beta + gamma_2 * (delta - 10)", "((((1))))", "12345 * 678 + 9 / 3 - total_count"],
  },
  {
    name: "palindrome",
    grammar: `start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "a".."z"\n`,
    ebnf: 'root ::= pal\npal ::= "a" pal "a" | "b" pal "b" | [a-z]',
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
    ebnf: [
      `root ::= ${ci("select")} ws1 select_list ws1 ${ci("from")} ws1 table_ref (ws1 where_clause)? (ws1 order_clause)? (ws1 limit_clause)?`,
      'select_list ::= "*" | column (ws "," ws column)*',
      `column ::= name (ws1 ${ci("as")} ws1 name)?`,
      "table_ref ::= name (ws1 name)?",
      `where_clause ::= ${ci("where")} ws condition`,
      `condition ::= comparison (ws1 (${ci("and")} | ${ci("or")}) ws1 comparison)*`,
      'comparison ::= operand ws op ws operand | "(" ws condition ws ")"',
      "operand ::= name | number | string",
      'op ::= "=" | "<>" | "<" | ">" | "<=" | ">="',
      `order_clause ::= ${ci("order")} ws1 ${ci("by")} ws1 name (ws1 (${ci("asc")} | ${ci("desc")}))?`,
      `limit_clause ::= ${ci("limit")} ws1 [0-9]+`,
      'string ::= "\'" [^\']* "\'"',
      "name ::= [a-zA-Z_] [a-zA-Z0-9_]*",
      EBNF_NUMBER,
      "ws ::= [ \\t\\n\\r\\f]*",
      "ws1 ::= [ \\t\\n\\r\\f]+",
    ].join("\n"),
    targets: [
      "SELECT name, age AS years FROM users u WHERE age >= 18 AND city = 'Paris' ORDER BY name ASC LIMIT 10",
      "select * from orders where (total > 100 or status <> 'open') limit 5",
      "SELECT id FROM t",
    ],
  },
];

/**
 * Grammars that are none of the workloads (a CSV table, s-expressions, key=value pairs, boolean
 * expressions with keywords, an INI file whose keywords its NAME regexp also matches, with ranges
 * and a template, words of one-letter ranges): the JIT warm-up runs our pipeline on them, so that the workloads are
 * measured as a long-running server compiles a grammar it has never seen (compiled code), not as
 * the first few compiles of a fresh process (interpreted code, 2-3x slower). The INI grammar is
 * there because the others had no string literal that a regexp terminal also matches (Lark's
 * unless) and no range: the first compiles of the palindrome grammar then deoptimized that code
 * (insufficient type feedback) and measured V8 optimizing it again, which a server that has
 * compiled varied grammars did long before. The letters grammar is there for the same reason:
 * a terminal that is one character range, alone or with a keyword it covers, has a path of its
 * own (the scanner DFA built from the trie, the range's unless check).
 */
const WARMUP_WORKLOADS: Workload[] = [
  {
    name: "csv",
    grammar: `start: row+
row: field ("," field)* _NL
?field: WORD | SIGNED_NUMBER | ESCAPED_STRING |
_NL: /\\r?\\n/
%import common.WORD
%import common.SIGNED_NUMBER
%import common.ESCAPED_STRING
`,
    ebnf: "",
    targets: ['name,age,city\nada,36,"London"\n', "a,,-2.5\n"],
  },
  {
    name: "sexp",
    grammar: `start: sexp
sexp: "(" item* ")"
?item: sexp | SYMBOL | NUMBER
SYMBOL: /[a-z+*\\/-][a-z0-9+*\\/-]*/
%import common.NUMBER
%import common.WS
%ignore WS
`,
    ebnf: "",
    targets: ["(define (square x) (* x x))", "(+ 1 (- 2 3.5) (list a b))"],
  },
  {
    name: "pairs",
    grammar: `start: pair (";" pair)*
pair: KEY "=" VALUE
KEY: /[a-z_]+/
VALUE: /[A-Za-z0-9.]+/ | "on"i | "off"i
`,
    ebnf: "",
    targets: ["threads=2;mode=fast;ratio=0.75", "debug=ON"],
  },
  {
    name: "boolean",
    grammar: `?start: disj
?disj: conj ("or" conj)*
?conj: neg ("and" neg)*
?neg: "not" neg | atom
?atom: "true" | "false" | NAME | "(" disj ")"
NAME.-1: /[a-z]+/
%ignore " "
`,
    ebnf: "",
    targets: ["not (a and b) or c", "true and (x or not false)"],
  },
  {
    name: "ini",
    grammar: `start: section+
section: "[" NAME "]" _NL entry*
entry: NAME "=" value _NL
?value: "yes" -> yes | "no" -> no | NUMBER | HEX | NAME -> ref | "(" _sep{value, ","} ")" -> list
_sep{x, sep}: x (sep x)*
HEX: "#" HEXDIGIT~1..4
HEXDIGIT: "0".."9" | "a".."f"
NAME: /[a-z][a-z0-9_]*/
_NL: "\\n"
%import common.NUMBER
%ignore " "
`,
    ebnf: "",
    targets: ["[main]\nmode = yes\nlevel=#1f\nname = no_way\n[other]\nlist = (1, 2.5, yes, x)\n", "[a]\nb=no\n"],
  },
  {
    // One-character ranges with a keyword they cover (as in the palindrome workload, and the seed
    // API's examples): their scanners take the trie-built DFA and the range's own unless check,
    // code the other grammars never run.
    name: "letters",
    grammar: `start: word (" " word)*
word: LETTER+ | "x" "=" DIGIT
LETTER: "a".."z"
DIGIT: "0".."9"
`,
    ebnf: "",
    targets: ["ab x=5 cd", "hello world", "q x=0"],
  },
];

const jitWarmedUp = new WeakSet<TokenTrie>();

/**
 * JIT warm-up before anything on a vocabulary is measured: our whole pipeline (compile, walks ahead,
 * first mask, replays with large and tight budgets) on WARMUP_WORKLOADS for `ms`. Once per
 * vocabulary: loading one sets V8 recompiling the hot code in the background (see bench/mask.ts).
 */
function jitWarmUp(trie: TokenTrie, tokenize: (text: string) => Int32Array, ms: number): void {
  if (jitWarmedUp.has(trie) || ms <= 0) return;
  jitWarmedUp.add(trie);
  const sets = WARMUP_WORKLOADS.map((w) => ({ w, targets: w.targets.map(tokenize) }));
  const deadline = performance.now() + ms;
  for (let i = 0; performance.now() < deadline; i++) {
    for (const { w, targets } of sets) runOurs(w, trie, targets, i % 4 === 3 ? "tight" : "large", newSamples());
  }
  // Compile paths run once per grammar, so the loop above (a few hundred compiles) leaves many of
  // their functions unoptimized: measured here, a 3-line grammar's compile settles from 0.38 ms
  // (first thousand compiles) to 0.06 ms only after about 6,000. A server that has compiled
  // thousands of grammars runs them optimized; so does this, by compiling the warm-up grammars
  // (text → tables → automaton → matcher → first mask) that many times.
  for (let i = 0; i < COMPILE_WARMUP_COMPILES; i++) {
    const w = WARMUP_WORKLOADS[i % WARMUP_WORKLOADS.length]!;
    const matcher = freshMatcher(w, trie);
    matcher.mask(matcher.start, 1000);
  }
}

/** Compiles of the warm-up grammars in the JIT warm-up (see jitWarmUp; GRAMMAR_NOTE says the number). */
const COMPILE_WARMUP_COMPILES = 8000;

/**
 * A matcher of the workload's grammar compiled from its text, nothing cached; with `phases`, the
 * time of each stage pushed there (compilePhasesMsMedian: where a compile's time goes).
 */
function freshMatcher(w: Workload, trie: TokenTrie, phases?: Record<string, number[]>): GrammarTokenMatcher {
  const t0 = performance.now();
  const grammar = compileGrammar(w.grammar);
  const t1 = performance.now();
  const automaton = createGrammarAutomaton(grammar, { maxIgnoredRun: MAX_IGNORED_RUN });
  const t2 = performance.now();
  const matcher = new GrammarTokenMatcher(trie, automaton);
  if (phases !== undefined) {
    (phases.grammar ??= []).push(t1 - t0);
    (phases.automaton ??= []).push(t2 - t1);
    (phases.matcher ??= []).push(performance.now() - t2);
  }
  return matcher;
}

function runOurs(
  w: Workload,
  trie: TokenTrie,
  targets: Int32Array[],
  budget: "large" | "tight",
  out: Samples,
  reuse?: GrammarTokenMatcher,
): GrammarTokenMatcher {
  const cpu0 = cpuUs();
  const t0 = performance.now();
  const phases = reuse === undefined ? (out.compilePhasesMs ??= {}) : undefined;
  const matcher = reuse ?? freshMatcher(w, trie, phases);
  const tm = performance.now();
  matcher.mask(matcher.start, 1000);
  if (phases !== undefined) (phases.firstMask ??= []).push(performance.now() - tm);
  out.compileMs.push(performance.now() - t0);
  out.compileCpuMs.push((cpuUs() - cpu0) / 1000);
  // As the server does in the first decode round, while the model evaluates the prompt, and then
  // in the rest of every round, while the model decodes (CompletionJob.aheadOfLogits; the
  // scheduler gives each round AHEAD_OF_LOGITS_MS, the step's mask included).
  const tw = performance.now();
  matcher.walkAhead(tw + AHEAD_OF_LOGITS_MS);
  out.walkAheadMs.push(performance.now() - tw);
  const ahead = (stepStarted: number, state: ReplayState): void =>
    void (state as GrammarConstraintState).walkAhead(stepStarted + AHEAD_OF_LOGITS_MS);
  replayTargets(() => new GrammarConstraintState(matcher), targets, budget, out, matcher.work, ahead);

  return matcher;
}

/**
 * The grammar workloads on one vocabulary: ours (fresh compile per round, tight budgets, warm
 * matcher) and XGrammar's, rounds alternating who goes first. `xg`/`tokenizerInfo` are XGrammar's
 * module and its tokenizer info for this vocabulary.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
export async function grammarWorkloadResults(
  trie: TokenTrie,
  tokenize: (text: string) => Int32Array,
  xg: any,
  tokenizerInfo: any,
  vocabSize: number,
  rounds: number,
  only?: readonly string[],
  jitWarmupMs: number = JIT_WARMUP_MS,
): Promise<Record<string, unknown>> {
  jitWarmUp(trie, tokenize, jitWarmupMs);
  const perWorkload: Record<string, unknown> = {};
  for (const w of WORKLOADS.filter((x) => only === undefined || only.includes(x.name))) {
    const targets = w.targets.map(tokenize);
    perWorkload[w.name] = await compareWorkload<GrammarTokenMatcher>(
      rounds,
      (budget, out, reuse) => runOurs(w, trie, targets, budget, out, reuse),
      (out) => runTheirs(xg, tokenizerInfo, w, targets, vocabSize, out),
    );
    process.stderr.write(`bench:grammar-mask: ${w.name} done\n`);
  }
  return perWorkload;
}

async function main(): Promise<void> {
  const rounds = Number(argValue("rounds") ?? 3);
  const vocabNames = (argValue("vocab") ?? "gpt-2,qwen2").split(",");
  const only = argValue("workload")?.split(",");
  const jitWarmupMs = Number(argValue("jit-warmup-ms") ?? JIT_WARMUP_MS);
  const { loadModel } = await import("../src/model/index.js");
  const xg = await loadXGrammar();
  const result: Record<string, unknown> = {
    node: process.version,
    cpus: availableParallelism(),
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    rounds,
    jitWarmupMs,
    note: GRAMMAR_NOTE,
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
    const enc = byteLevelVocab(vocab.size, vocab.offsets, vocab.data, (id) => trie.isGenerable(id));
    const tokenizerInfo = await xg.TokenizerInfo.createTokenizerInfo(enc, "byte_level", false, vocab.size, Array.from(vocab.eogTokens));
    const tokenize = (t: string): Int32Array => model.tokenize(t, { addSpecial: false, parseSpecial: false });
    const workloads = await grammarWorkloadResults(trie, tokenize, xg, tokenizerInfo, vocab.size, rounds, only, jitWarmupMs);
    tokenizerInfo.dispose();
    model.dispose();
    (result.vocabularies as Record<string, unknown>)[vname] = {
      vocabSize: vocab.size,
      trieTokens: trie.numTokens,
      trieNodes: trie.numNodes,
      trieBuildMs: round3(trieMs),
      tokenizer: "llama.cpp",
      workloads,
    };
  }
  result.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}

/** Default length of the JIT warm-up (see jitWarmUp); `--jit-warmup-ms 0` measures a fresh process. */
export const JIT_WARMUP_MS = 3000;

export const GRAMMAR_NOTE =
  "Grammar workloads: perTokenUs = mask + accept per target token. Ours: fresh Lark grammar compile + lazy matcher " +
  "per round (compile = grammar → LALR + automaton → matcher → first mask; compilePhasesMsMedian splits it: grammar text to " +
  "tables and scanners, byte automaton with its scanner DFAs, matcher, first mask at budget 1000), so first visits of lexer and parser " +
  "states are inside the per-token numbers; walkAheadMsMedian = the matcher's walks ahead after the first mask, which the server runs while " +
  "the model evaluates the prompt and in the rest of each decode round (12 ms a round, the step's mask included; in roundMs, not in compile " +
  "or per token; done before the replay and after each step's mask (with the step's state, whose next sets go first), as in the server, assuming decodes of at least 12 ms); 'tight' = budget of exactly the target's own token count, replayed 4 times a round on fresh matchers (TIGHT_REPLAYS_PER_ROUND: its p99 is a percentile, not the largest of a few dozen samples); " +
  "each target's replay starts with the server's admission question at its budget (minTokensToAccept: admissionUs, refusedAtAdmission), " +
  "and overMaskWorkLimit counts the operations that counted more work than the service's default TRELLIS_MASK_MAX_WORK; " +
  "oursWarmMatcher = replays on a matcher kept from the warm-up round (the server caches one per grammar and " +
  "vocabulary). XGrammar: compile = compileGrammar + matcher + first mask. Its EBNF allows unbounded whitespace " +
  "where ours allows at most 8 ignored bytes in a row. Before the first workload, a JIT warm-up (jitWarmupMs, once " +
  "per vocabulary) runs our pipeline on six other grammars (CSV, s-expressions, key=value pairs, boolean expressions, an INI file, words of one-letter ranges), " +
  "then compiles them (text to first mask) 8,000 times more, since compile paths run once per grammar and are optimized only after thousands, " +
  "so each workload's grammar is compiled as a long-running server compiles one it has never seen. " +
  "ratioOursOverTheirs.compilePairedMedian = the median of ours/theirs per round (each round compiles both, one right after the other), " +
  "compileRoundsOursFaster = the rounds in which ours compiled faster: robust to the machine's drift across a run. The library " +
  "runs as the tsc output in dist/ (what the server runs), not through tsx.";

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
