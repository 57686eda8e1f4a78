/**
 * Lark grammars as decode-loop constraints: compiled once per grammar text (LRU), one incremental
 * recognizer and token matcher per (grammar, vocabulary), shared by every request using them.
 * A new matcher's walks ahead are not made here: the first request's decode rounds make them
 * (CompletionJob.aheadOfLogits), while the model evaluates its prompt where a core is free.
 */
import { compileGrammar, createGrammarAutomaton, GrammarError, type GrammarAutomaton } from "../grammar/index.js";
import { LruCache } from "../regex/index.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../constraint/grammar-matcher.js";
import type { TokenTrie } from "../constraint/index.js";
import type { TokenConstraint } from "./completion.js";
import { InvalidRequestError, MAX_IGNORED_RUN } from "./types.js";

export { MAX_IGNORED_RUN };

/**
 * The recognizer memoizes every state it meets and every (state, byte) step in Maps; past this
 * many states, the next request starts a fresh recognizer and matcher (in-flight requests keep the
 * old ones) so memory stays bounded and the step memo (≤ 256 entries per state) stays below V8's
 * 2^24-entry Map limit, which throws RangeError (seen in tests with unbounded exploration).
 */
export const MAX_AUTOMATON_STATES = 50_000;

interface CompiledConstraint {
  automaton: GrammarAutomaton;
  matcher: GrammarTokenMatcher;
}

const matchers = new WeakMap<TokenTrie, LruCache<CompiledConstraint | GrammarError>>();

/**
 * The constraint of `source` with at most `maxIgnoredRun` consecutive ignored bytes. The run is
 * part of the automaton's lexer states, so each (grammar, run) pair has its own matcher.
 */
export function grammarConstraintFor(trie: TokenTrie, source: string, maxIgnoredRun = MAX_IGNORED_RUN): (prefix: Uint8Array | undefined) => TokenConstraint {
  let cache = matchers.get(trie);
  if (cache === undefined) {
    cache = new LruCache(32);
    matchers.set(trie, cache);
  }
  const key = maxIgnoredRun === MAX_IGNORED_RUN ? source : `${maxIgnoredRun}\0${source}`;
  let entry = cache.get(key);
  if (entry !== undefined && !(entry instanceof GrammarError) && entry.automaton.numStates > MAX_AUTOMATON_STATES) {
    const automaton = createGrammarAutomaton(entry.automaton.grammar, { maxIgnoredRun });
    entry = { automaton, matcher: new GrammarTokenMatcher(trie, automaton) };
    cache.set(key, entry);
  }
  if (entry === undefined) {
    try {
      const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun });
      entry = { automaton, matcher: new GrammarTokenMatcher(trie, automaton) };
    } catch (error) {
      if (!(error instanceof GrammarError)) throw error;
      entry = error;
    }
    cache.set(key, entry);
  }
  if (entry instanceof GrammarError) {
    const where = entry.line !== undefined ? ` (line ${entry.line}${entry.column !== undefined ? `, column ${entry.column}` : ""})` : "";
    throw new InvalidRequestError(`grammar: ${entry.message}${where}`, "grammar");
  }
  const matcher = entry.matcher;
  return (prefix) => new GrammarConstraintState(matcher, prefix);
}
