/**
 * Regex patterns as decode-loop constraints built on this thread, for tests and benches: compiled
 * once per pattern (LRU) and matched through the constraint layer's per-(trie, DFA) matcher. The
 * service does not use this: it compiles on worker threads through ConstraintCache.
 */
import { RegexCache, type ByteDfa, type RegexLimits } from "../regex/index.js";
import { DfaConstraintState, dfaTokenMatcherFor, type TokenTrie } from "../constraint/index.js";
import { refusalError, refusalOf } from "./compile-task.js";
import { MATCHER_PRECOMPUTE_MS, type ConstraintFactory } from "./constraint-cache.js";

export { MATCHER_PRECOMPUTE_MS };

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
