/**
 * npm run bench:mask — token-mask speed of our DFA constraint vs XGrammar (WebAssembly build),
 * MaskBench style: each valid target string is tokenized by the real tokenizer and replayed from
 * a fresh constraint state; at each step the mask is computed, the target's next token must be in
 * it (wrongly masked tokens are counted and must be 0), then the token is accepted.
 *
 * Per workload and vocabulary, rounds alternate ours and theirs (timings drift between runs on
 * this shared VM); each round compiles from scratch (no cross-round caches), so the lazy first
 * visits of states are inside our per-token numbers. Prints one JSON document.
 *
 * Grammar workloads (bench/grammar-mask.ts: Lark grammars vs XGrammar EBNF) follow under
 * `grammarWorkloads`, with their own rounds (--grammar-rounds, default 3).
 *
 * Usage: node --import tsx bench/mask.ts [--rounds N] [--vocab gpt-2,qwen2] [--workload email,json,...]
 *        [--kind regex,grammar]
 */
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileRegex } from "../src/regex/index.js";
import { loadVocabulary, type Vocabulary } from "../src/vocab/index.js";
import { DfaConstraintState, DfaTokenMatcher, TokenTrie, warmUpMatchers } from "../src/constraint/index.js";
import { MATCHER_PRECOMPUTE_MS } from "../src/compile/index.js";
import { byteLevelVocab, loadXGrammar } from "./xgrammar.js";
import { argValue, round3 } from "./stats.js";
import { compareWorkload, cpuUs, newSamples, replayTargets, runTheirs, type Samples } from "./replay.js";
import { GRAMMAR_NOTE, grammarWorkloadResults } from "./grammar-mask.js";

// As the runtime does when it starts (the walks' JIT warm-up on a toy vocabulary).
warmUpMatchers();

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const VOCAB_DIR = resolve(REPO_ROOT, "..", "shared", "models", "vocab");

interface Workload {
  name: string;
  regex: string;
  /** The same language in XGrammar's EBNF (written by hand: no {,n}, no [\d], no '.'). */
  ebnf: string;
  targets: string[];
}

const WORDS =
  "the quick brown fox jumps over the lazy dog while seven wizards quietly hex jolly pirates " +
  "beneath a crimson sky and every morning she walks along the river to watch herons fishing " +
  "in the shallow water near the old stone bridge that was built long ago by farmers";

const WORKLOADS: Workload[] = [
  {
    name: "email",
    regex: "[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}",
    ebnf: 'root ::= [a-zA-Z0-9._%+\\-]+ "@" [a-zA-Z0-9.\\-]+ "." [a-zA-Z] [a-zA-Z]+',
    targets: [
      "john.doe@example.com",
      "alice_smith+newsletter@mail.example.co.uk",
      "Bob.O-Neil99@sub-domain.Example.org",
      "support%team@company.io",
      "x@y.zz",
      "firstname.lastname.middlename@university-of-somewhere.edu",
    ],
  },
  {
    name: "iso_date",
    regex: "[0-9]{4}-[0-9]{2}-[0-9]{2}",
    ebnf: 'root ::= [0-9] [0-9] [0-9] [0-9] "-" [0-9] [0-9] "-" [0-9] [0-9]',
    targets: ["2024-01-15", "1999-12-31", "2026-11-22", "0001-01-01", "2100-06-30", "1987-07-04"],
  },
  {
    name: "phone",
    regex: "\\(?[0-9]{3}\\)?[-. ]?[0-9]{3}[-. ]?[0-9]{4}",
    ebnf: 'root ::= "("? d d d ")"? [-. ]? d d d [-. ]? d d d d\nd ::= [0-9]',
    targets: ["(555) 123-4567", "555-123-4567", "555.123.4567", "5551234567", "(800)555 0199", "212 555 0147"],
  },
  {
    name: "lowercase_words",
    regex: "[a-z]+( [a-z]+)*",
    ebnf: 'root ::= [a-z]+ (" " [a-z]+)*',
    targets: [WORDS, WORDS.split(" ").reverse().join(" "), "hello world", "supercalifragilistic expialidocious words"],
  },
  {
    name: "free_text",
    regex: "[^\\n]*",
    ebnf: "root ::= [^\\n]*",
    targets: [
      "The meeting is scheduled for 3:30 PM on Tuesday, March 5th (room 204).",
      "Café owners in São Paulo reported a 12.5% increase in sales — surprising everyone!",
      "She said: \"It's not about the money; it's about the principle.\" Then she left.",
      "Error: cannot read property 'length' of undefined at line 42, column 17.",
      WORDS.toUpperCase() + " 1234567890 !@#$%^&*()",
    ],
  },
  {
    name: "alternation_10",
    regex: "(positive|negative|neutral|mixed|unknown|question|complaint|praise|request|spam)",
    ebnf: 'root ::= "positive" | "negative" | "neutral" | "mixed" | "unknown" | "question" | "complaint" | "praise" | "request" | "spam"',
    targets: ["positive", "negative", "neutral", "mixed", "unknown", "question", "complaint", "praise", "request", "spam"],
  },
  {
    name: "json_object",
    regex:
      '\\{"name": "[^"\\\\\\n]*", "age": [0-9]{1,3}, "email": "[a-z0-9.]+@[a-z0-9.]+", "tags": \\[("[a-z]+"(, "[a-z]+")*)?\\], "active": (true|false)\\}',
    ebnf:
      'root ::= "{\\"name\\": \\"" str "\\", \\"age\\": " [0-9] [0-9]? [0-9]? ", \\"email\\": \\"" [a-z0-9.]+ "@" [a-z0-9.]+ "\\", \\"tags\\": [" tags? "], \\"active\\": " ("true" | "false") "}"\n' +
      'str ::= [^"\\\\\\n]*\n' +
      'tags ::= "\\"" [a-z]+ "\\"" (", \\"" [a-z]+ "\\"")*',
    targets: [
      '{"name": "Ada Lovelace", "age": 36, "email": "ada@analytical.engine", "tags": ["math", "poetry"], "active": true}',
      '{"name": "", "age": 0, "email": "x@y", "tags": [], "active": false}',
      '{"name": "José Martí", "age": 42, "email": "jose.marti@cuba.example", "tags": ["writer"], "active": true}',
      '{"name": "Grace Hopper", "age": 85, "email": "grace@navy.mil", "tags": ["cobol", "compilers", "navy"], "active": false}',
    ],
  },
];

// ---------------------------------------------------------------------------------------------

interface Tokenizer {
  kind: string;
  tokenize(text: string): Int32Array;
}

/** The real tokenizer through our llama.cpp addon; greedy longest match over the trie if it is not built. */
async function makeTokenizer(path: string, trie: TokenTrie): Promise<Tokenizer> {
  try {
    const model = await import("../src/model/index.js");
    const m = model.loadModel(path, { vocabOnly: true, threads: 2 });
    return { kind: "llama.cpp", tokenize: (text) => m.tokenize(text, { addSpecial: false, parseSpecial: false }) };
  } catch (err) {
    process.stderr.write(`bench:mask: real tokenizer unavailable (${(err as Error).message}); using greedy longest match\n`);
    return { kind: "greedy-longest-match (fallback)", tokenize: (text) => greedyTokenize(trie, new TextEncoder().encode(text)) };
  }
}

function greedyTokenize(trie: TokenTrie, bytes: Uint8Array): Int32Array {
  const out: number[] = [];
  let i = 0;
  while (i < bytes.length) {
    let p = 0;
    let best = -1;
    let bestLen = 0;
    for (let j = i; j < bytes.length; j++) {
      const end = p + trie.subtreeSize[p]!;
      let c = p + 1;
      while (c < end && trie.nodeByte[c]! < bytes[j]!) c += trie.subtreeSize[c]!;
      if (c >= end || trie.nodeByte[c] !== bytes[j]) break;
      p = c;
      if (trie.tokenStart[p + 1]! > trie.tokenStart[p]!) {
        best = trie.tokenIds[trie.tokenStart[p]!]!;
        bestLen = j - i + 1;
      }
    }
    if (best < 0) throw new Error(`byte ${bytes[i]} has no token`);
    out.push(best);
    i += bestLen;
  }
  return Int32Array.from(out);
}

// ---------------------------------------------------------------------------------------------

/**
 * One round of ours: fresh regex compile + matcher (unless `reuse` is given: the server's
 * per-pattern matcher cache after a first request), then every target from a fresh state.
 */
/** The budget src/compile/in-thread.ts gives a new matcher (overridable to compare). */
const PRECOMPUTE_MS = Number(process.env.BENCH_PRECOMPUTE_MS ?? MATCHER_PRECOMPUTE_MS);

function runOurs(
  w: Workload,
  trie: TokenTrie,
  targets: Int32Array[],
  budget: "large" | "tight",
  out: Samples,
  reuse?: DfaTokenMatcher,
): DfaTokenMatcher {
  const cpu0 = cpuUs();
  const t0 = performance.now();
  const matcher = reuse ?? new DfaTokenMatcher(trie, compileRegex(w.regex));
  // As the server does for a new matcher: first-visit walks within the compile budget.
  if (reuse === undefined) matcher.precompute(PRECOMPUTE_MS);
  matcher.mask(matcher.start, 1000);
  out.compileMs.push(performance.now() - t0);
  out.compileCpuMs.push((cpuUs() - cpu0) / 1000);
  replayTargets(() => new DfaConstraintState(matcher), targets, budget, out, matcher.work);

  return matcher;
}

async function main(): Promise<void> {
  const rounds = Number(argValue("rounds") ?? 7);
  const vocabNames = (argValue("vocab") ?? "gpt-2,llama-bpe,qwen2").split(",");
  const only = argValue("workload")?.split(",");
  const kinds = (argValue("kind") ?? "regex,grammar").split(",");
  const workloads = kinds.includes("regex") ? WORKLOADS.filter((w) => only === undefined || only.includes(w.name)) : [];
  const grammarRounds = Number(argValue("grammar-rounds") ?? 3);
  const xg = await loadXGrammar();
  const result: Record<string, unknown> = {
    node: process.version,
    cpus: availableParallelism(),
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    rounds,
    note:
      "perTokenUs = mask + accept per target token; maskOnlyUs = mask alone; roundMs = one round's compile plus all its masks and accepts (a request's whole constraint cost). Ours: fresh regex compile + " +
      `matcher per round (compile = regex→DFA + masks precomputed breadth-first for up to ${PRECOMPUTE_MS} ms, as the server does, + first mask). ` +
      "Theirs: XGrammar wasm, compile = compileGrammar + " +
      "matcher + first mask, tokenizer info excluded. Budget 'large' = 1000 - step; 'tight' = exactly the " +
      "target's own token count (every step tight: the first step pays the exact-distance exploration of all " +
      "reachable states), replayed 4 times a round on fresh matchers (TIGHT_REPLAYS_PER_ROUND). oursWarmMatcher = same replays on a matcher kept from an earlier round (the " +
      "server caches matchers per pattern and vocabulary), i.e. steady state. One unrecorded warm-up round " +
      "per workload plus a JIT warm-up on each vocabulary. Wall-clock on a shared VM: see loadAverage; cpu* fields = this process's CPU time " +
      "(getrusage, 1 µs resolution, includes ~1 µs of timer calls), robust to other processes' load. " +
      GRAMMAR_NOTE,
    vocabularies: {} as Record<string, unknown>,
  };
  for (const vname of vocabNames) {
    const path = resolve(VOCAB_DIR, `ggml-vocab-${vname}.gguf`);
    if (!existsSync(path)) continue;
    const vocab: Vocabulary = loadVocabulary(path);
    let t0 = performance.now();
    const trie = TokenTrie.build(vocab);
    const trieMs = performance.now() - t0;
    const tokenizer = await makeTokenizer(path, trie);
    const enc = byteLevelVocab(vocab.size, vocab.offsets, vocab.data, (id) => trie.isGenerable(id));
    t0 = performance.now();
    const tokenizerInfo = await xg.TokenizerInfo.createTokenizerInfo(enc, "byte_level", false, vocab.size, Array.from(vocab.eogTokens));
    const tokenizerInfoMs = performance.now() - t0;
    const perWorkload: Record<string, unknown> = {};
    if (workloads.length > 0) {
      // JIT warm-up (both sides) on every vocabulary, not recorded: the first optimizing compiles
      // take tens of ms on this busy 2-core VM and would land in round 1, and loading the next
      // vocabulary (hundreds of thousands of strings and typed arrays) sets V8 recompiling the
      // hot code again in the background. Measured with the warm-up on the first vocabulary only:
      // on the last one, a plain compileRegex loop ran 3-7x slower until warmed (16-22 µs after,
      // 68-132 µs before), and our compiles with it (qwen2 iso_date 0.32-0.62 ms against 0.08
      // once warmed); --no-concurrent-recompilation removed it too.
      for (let i = 0; i < 2; i++) {
        for (const w of WORKLOADS) {
          const targets = w.targets.map((t) => tokenizer.tokenize(t));
          runOurs(w, trie, targets, "large", newSamples());
          runOurs(w, trie, targets, "tight", newSamples());
          if (i === 0) await runTheirs(xg, tokenizerInfo, w, targets, vocab.size, newSamples());
        }
      }
    }
    for (const w of workloads) {
      const targets = w.targets.map((t) => tokenizer.tokenize(t));
      try {
        compileRegex(w.regex);
      } catch (err) {
        perWorkload[w.name] = { error: `regex compile failed: ${(err as Error).message}` };
        continue;
      }
      perWorkload[w.name] = await compareWorkload<DfaTokenMatcher>(
        rounds,
        (budget, out, reuse) => runOurs(w, trie, targets, budget, out, reuse),
        (out) => runTheirs(xg, tokenizerInfo, w, targets, vocab.size, out),
      );
      process.stderr.write(`bench:mask: ${vname} ${w.name} done\n`);
    }
    const grammarWorkloads = kinds.includes("grammar")
      ? await grammarWorkloadResults(trie, (t) => tokenizer.tokenize(t), xg, tokenizerInfo, vocab.size, grammarRounds, only)
      : {};
    tokenizerInfo.dispose();
    (result.vocabularies as Record<string, unknown>)[vname] = {
      vocabSize: vocab.size,
      trieTokens: trie.numTokens,
      trieNodes: trie.numNodes,
      trieBuildMs: round3(trieMs),
      xgrammarTokenizerInfoMs: round3(tokenizerInfoMs),
      tokenizer: tokenizer.kind,
      workloads: perWorkload,
      grammarWorkloads,
    };
  }
  result.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
}

await main();
