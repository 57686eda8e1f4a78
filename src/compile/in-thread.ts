/**
 * Constraints built on this thread, for tests and benches: regex patterns compiled once per
 * pattern (LRU) and matched through the constraint layer's per-(trie, DFA) matcher; Lark grammars
 * compiled once per (trie, grammar, max_ignored_run) and kept in a small LRU. The service does not
 * use these: it compiles on worker threads through ConstraintCache (cache.ts).
 */
import { RegexCache, type ByteDfa, type RegexLimits } from "../regex/index.js";
import { GrammarError } from "../grammar/index.js";
import { DfaConstraintState, dfaTokenMatcherFor, type TokenTrie } from "../constraint/index.js";
import { LruCache } from "../support/index.js";
import { grammarConstraintInThread, MATCHER_PRECOMPUTE_MS, type ConstraintEntry, type ConstraintFactory } from "./cache.js";
import { refusalError, refusalOf } from "./task.js";
import { MAX_IGNORED_RUN } from "./spec.js";

const patterns = new RegexCache(256);

export function compileRegexCached(pattern: string | readonly string[], limits: RegexLimits = {}): ByteDfa {
  try {
    return patterns.compile(pattern, limits);
  } catch (error) {
    const refusal = refusalOf(error);
    throw refusal ? refusalError(refusal) : error;
  }
}

const warmed = new WeakSet<object>();

/** A factory of per-request constraint states over the shared matcher of (trie, dfa). */
export function regexConstraintFor(trie: TokenTrie, dfa: ByteDfa): ConstraintFactory {
  const matcher = dfaTokenMatcherFor(trie, dfa);
  if (!warmed.has(matcher)) {
    warmed.add(matcher);
    matcher.precompute(MATCHER_PRECOMPUTE_MS);
  }
  return (prefix) => new DfaConstraintState(matcher, prefix);
}

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
