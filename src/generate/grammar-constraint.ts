/**
 * Lark grammars as decode-loop constraints: compiled once per grammar text (LRU), one incremental
 * recognizer and token matcher per (grammar, vocabulary), shared by every request using them.
 */
import { compileGrammar, createGrammarAutomaton, GrammarError } from "../grammar/index.js";
import { LruCache } from "../regex/index.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../constraint/grammar-matcher.js";
import type { TokenTrie } from "../constraint/index.js";
import type { TokenConstraint } from "./completion.js";
import { InvalidRequestError } from "./types.js";

/** Consecutive %ignore'd bytes allowed anywhere (so a model cannot loop on whitespace). */
export const MAX_IGNORED_RUN = 8;

const matchers = new WeakMap<TokenTrie, LruCache<GrammarTokenMatcher | GrammarError>>();

export function grammarConstraintFor(trie: TokenTrie, source: string): (prefix: Uint8Array | undefined) => TokenConstraint {
  let cache = matchers.get(trie);
  if (cache === undefined) {
    cache = new LruCache(32);
    matchers.set(trie, cache);
  }
  let entry = cache.get(source);
  if (entry === undefined) {
    try {
      const automaton = createGrammarAutomaton(compileGrammar(source), { maxIgnoredRun: MAX_IGNORED_RUN });
      entry = new GrammarTokenMatcher(trie, automaton);
    } catch (error) {
      if (!(error instanceof GrammarError)) throw error;
      entry = error;
    }
    cache.set(source, entry);
  }
  if (entry instanceof GrammarError) {
    const where = entry.line !== undefined ? ` (line ${entry.line}${entry.column !== undefined ? `, column ${entry.column}` : ""})` : "";
    throw new InvalidRequestError(`grammar: ${entry.message}${where}`, "grammar");
  }
  const matcher = entry;
  return (prefix) => new GrammarConstraintState(matcher, prefix);
}
