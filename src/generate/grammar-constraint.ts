/**
 * Lark grammars as decode-loop constraints built on this thread, for tests and benches: compiled
 * once per (trie, grammar, max_ignored_run) and kept in a small LRU. The service does not use
 * this: it compiles on worker threads through ConstraintCache (constraint-cache.ts).
 */
import { GrammarError } from "../grammar/index.js";
import { LruCache } from "../support/index.js";
import type { TokenTrie } from "../constraint/index.js";
import { grammarConstraintInThread, type ConstraintEntry, type ConstraintFactory } from "./constraint-cache.js";
import { refusalError, refusalOf } from "./compile-task.js";
import { MAX_IGNORED_RUN } from "./types.js";

export { MAX_IGNORED_RUN };

const entries = new WeakMap<TokenTrie, LruCache<ConstraintEntry | GrammarError>>();

/** The constraint of `source` with at most `maxIgnoredRun` consecutive ignored bytes. */
export function grammarConstraintFor(trie: TokenTrie, source: string, maxIgnoredRun = MAX_IGNORED_RUN): ConstraintFactory {
  let cache = entries.get(trie);
  if (cache === undefined) entries.set(trie, (cache = new LruCache(32)));
  const key = `${maxIgnoredRun}\0${source}`;
  let entry = cache.get(key);
  if (entry === undefined) {
    try {
      entry = grammarConstraintInThread(trie, source, maxIgnoredRun);
    } catch (error) {
      if (!(error instanceof GrammarError)) throw error;
      entry = error;
    }
    cache.set(key, entry);
  }
  if (entry instanceof GrammarError) throw refusalError(refusalOf(entry, "grammar")!);
  return entry.factory;
}
