/**
 * regex/ — Python `re` patterns → byte-level DFAs with full-match semantics (re.fullmatch).
 *
 * Key types: `ByteDfa` (states × byte classes → next state, accepting, byte distances; only live
 * states), `MultiByteDfa` (one DFA for a lexer's patterns: which accept, which can still accept).
 * Errors: `RegexSyntaxError` (position, construct → 400), `RegexTooComplexError` (limit → 422).
 *
 *   const dfa = compileRegex("[a-z]+@[a-z]+\\.com", { maxDfaStates, timeoutMs });
 *   matchesString(dfa, "a@b.com");                      // the verdict, for tests and tools
 *   const lexer = compileMultiRegex([{ source: "[a-z]+" }, { source: "if" }]);
 *
 * The dialect (what is read, and what Python and JavaScript disagree on) is in compile.ts;
 * the pipeline parser.ts → nfa.ts → dfa/ (subset.ts's determinize).
 */
export { isEmptyLanguage, type ByteDfa, type MultiByteDfa } from "./dfa/types.js";
export { patternDistances } from "./dfa/distances.js";
export { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
export { matchesBytes, matchesString, sampleMember, sampleString, shortestCompletion, walkBytes } from "./sample.js";
export type { SampleOptions } from "./sample.js";
export { parseRegex, parseFlagString } from "./parser.js";
export type { RegexNode, RegexFlags } from "./parser.js";
export {
  acceptedPatterns,
  acceptsPattern,
  canReachPattern,
  compileMultiRegex,
  compileRegex,
  DEFAULT_REGEX_LIMITS,
  RegexCache,
  type PatternSpec,
  type RegexLimits,
  type RegexOptions,
} from "./compile.js";
