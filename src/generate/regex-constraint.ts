/**
 * Regex patterns as decode-loop constraints: compiled once per pattern (LRU), matched against the
 * vocabulary through the constraint layer's per-(trie, DFA) cached matcher. Pattern errors become
 * request errors naming the field and the position.
 */
import { RegexCache, RegexSyntaxError, RegexTooComplexError, type ByteDfa, type RegexLimits } from "../regex/index.js";
import { DfaConstraintState, dfaTokenMatcherFor, type TokenTrie } from "../constraint/index.js";
import type { TokenConstraint } from "./completion.js";
import { InvalidRequestError, UnsatisfiableError } from "./types.js";

const patterns = new RegexCache(256);

export function compileRegexCached(pattern: string | readonly string[], limits: RegexLimits = {}): ByteDfa {
  try {
    return patterns.compile(pattern, limits);
  } catch (error) {
    if (error instanceof RegexSyntaxError) {
      const which = error.alternative !== undefined ? `pattern[${error.alternative}]` : "pattern";
      const construct = error.construct ? ` (${error.construct})` : "";
      throw new InvalidRequestError(`${which}: ${error.message}${construct}`, which, error.position);
    }
    if (error instanceof RegexTooComplexError) {
      throw new UnsatisfiableError(`pattern: ${error.message}`, "pattern");
    }
    throw error;
  }
}

/**
 * Time a new matcher may spend computing masks ahead (within the 5 ms compile target): the large
 * states' first visits then happen once here instead of on decode steps.
 */
export const MATCHER_PRECOMPUTE_MS = 4;
const warmed = new WeakSet<object>();

/** A factory of per-request constraint states over the shared matcher of (trie, dfa). */
export function regexConstraintFor(trie: TokenTrie, dfa: ByteDfa): (prefix: Uint8Array | undefined) => TokenConstraint {
  const matcher = dfaTokenMatcherFor(trie, dfa);
  if (!warmed.has(matcher)) {
    warmed.add(matcher);
    matcher.precompute(MATCHER_PRECOMPUTE_MS);
  }
  return (prefix) => new DfaConstraintState(matcher, prefix);
}
