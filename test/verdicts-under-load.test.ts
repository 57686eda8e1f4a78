// A verdict (200, 422, 400) is a function of the request, the vocabulary and the configuration,
// never of the machine's load: limits are counted work (constraint/work-meter.ts, regex/clock.ts),
// and wall clocks are only a 503 valve. So ordinary requests, asked for as the service asks at its
// default settings (compile and probe on the worker, then admission's budget question and the first
// mask on this thread), get the same verdicts on a machine two CPU hogs keep busy as on an idle
// one, and every one of them is a 200. No timing is compared: only what the service would answer.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { loadConfig, engineOptions } from "../src/config.js";
import { MIN_TOKENS_LOOKAHEAD } from "../src/generate/index.js";
import { ConstraintCache, type ConstraintEntry } from "../src/compile/index.js";
import { tokenTrieFor, type TokenTrie } from "../src/constraint/index.js";
import { loadVocabulary, type Vocabulary } from "../src/vocab/index.js";
import { maskWords } from "../src/support/bitset.js";
import { exited, watchdog } from "./support/child-process.js";
import { DEFAULT_JSON_OPTIONS, EVERYDAY_CASES, type EverydayCase } from "./support/everyday-cases.js";
import { STORIES_260K, vocabFile } from "./support/paths.js";

const config = loadConfig({}, []).config;
// As createEngine builds the runtime's cache (src/engine.ts), the vocabulary given as the runtime gives it.
const cacheOptions = { ...engineOptions(config, "").constraints!, regexLimits: { maxDfaStates: config.regexMaxStates } };

const VOCABULARIES: readonly { name: string; vocab: Vocabulary; trie: TokenTrie }[] = [
  ["qwen2", vocabFile("qwen2")],
  ["stories260K", STORIES_260K],
].map(([name, path]) => {
  const vocab = loadVocabulary(path!);
  return { name: name!, vocab, trie: tokenTrieFor(vocab) };
});

const openCaches = new Set<ConstraintCache>();
const hogs = new Set<{ child: ChildProcess; guard: ChildProcess }>();

/** Ends the hogs (and their watchdogs, first, so none kills a reused pid). */
async function stopHogs(): Promise<void> {
  const ending = [...hogs];
  hogs.clear();
  for (const { child, guard } of ending) {
    guard.kill("SIGKILL");
    child.kill("SIGKILL");
  }
  await Promise.all(ending.map(({ child }) => exited(child)));
}

after(async () => {
  await stopHogs();
  await Promise.all([...openCaches].map((cache) => cache.close()));
});

function entryOf(cache: ConstraintCache, c: EverydayCase): Promise<ConstraintEntry> {
  const constraint = c.constraint;
  switch (constraint.kind) {
    case "regex":
      return cache.get({ kind: "regex", pattern: constraint.pattern });
    case "grammar":
      return cache.get({ kind: "grammar", grammar: constraint.grammar });
    case "json_schema":
      return cache.get({ kind: "json_schema", schema: constraint.schema, options: DEFAULT_JSON_OPTIONS });
    case "typescript":
      return cache.get({ kind: "typescript", source: constraint.source, typeName: constraint.typeName, options: DEFAULT_JSON_OPTIONS });
  }
}

/** What the service would answer: "200", or what refused it (admission as choicesWithFactory asks it). */
async function verdictOf(cache: ConstraintCache, vocab: Vocabulary, c: EverydayCase): Promise<string> {
  const max = c.maxTokens;
  try {
    const entry = await entryOf(cache, c);
    try {
      const state = entry.factory(undefined);
      const needed = state.minTokensToAccept(max);
      if (!Number.isFinite(needed)) {
        const atLeast = state.minTokensAtLeast?.(max + MIN_TOKENS_LOOKAHEAD) ?? 0;
        return atLeast > max ? `422 needs at least ${atLeast} > ${max}` : `422 no text fits within ${max}`;
      }
      if (needed > max) return `422 needs ${needed} > ${max}`;
      const mask = new Uint32Array(maskWords(vocab.size));
      state.writeMask(max, mask);
      if (!mask.some((word) => word !== 0) && !state.isAccepting()) return "first mask empty";
      return "200";
    } finally {
      cache.release(entry);
    }
  } catch (error) {
    const e = error as Error;
    return `${e.constructor?.name ?? e.name}: ${e.message}`;
  }
}

/** Two processes that keep both cores busy (at the compile worker's nice 19, it gets a sliver). */
function startHogs(): void {
  for (let i = 0; i < 2; i++) {
    const child = spawn(process.execPath, ["-e", "for(;;);"], { stdio: "ignore" });
    hogs.add({ child, guard: watchdog(child.pid) });
  }
}

/**
 * Every case on every vocabulary, through fresh caches (fresh workers, nothing compiled or
 * refused remembered), with the CPU hogs running from before the first case to after the last
 * when `underLoad`.
 */
async function allVerdicts(underLoad: boolean): Promise<string[]> {
  const caches = VOCABULARIES.map(({ vocab, trie }) => new ConstraintCache(trie, { ...cacheOptions, vocabulary: vocab }));
  for (const cache of caches) openCaches.add(cache);
  try {
    // A worker's boot (its trie, the TypeScript compiler: about a second idle) takes a minute at
    // nice 19 behind two hogs; it decides no verdict, so it is done before the load starts.
    for (const cache of caches) await cache.get({ kind: "regex", pattern: "warm" });
    if (underLoad) startHogs();
    const verdicts: string[] = [];
    for (const [i, { name, vocab }] of VOCABULARIES.entries()) {
      for (const c of EVERYDAY_CASES) verdicts.push(`${name} | ${c.name} (max ${c.maxTokens}) | ${await verdictOf(caches[i]!, vocab, c)}`);
    }
    // The load was there the whole time (a hog that died early would make this an idle run).
    for (const { child } of hogs) assert.equal(child.exitCode ?? child.signalCode, null, "a CPU hog ended before the run did");
    return verdicts;
  } finally {
    await stopHogs();
    for (const cache of caches) {
      openCaches.delete(cache);
      await cache.close();
    }
  }
}

test("ordinary requests get the same verdicts, all 200, on a loaded and on an idle machine", async () => {
  const loaded = await allVerdicts(true);
  const idle = await allVerdicts(false);

  assert.ok(idle.length > 0 && idle.length === VOCABULARIES.length * EVERYDAY_CASES.length, `${idle.length} verdicts`);
  assert.deepEqual(loaded, idle, "a verdict changed with the machine's load");
  const refused = idle.filter((v) => !v.endsWith(" | 200"));
  assert.deepEqual(refused, [], "an ordinary request was refused");
});
