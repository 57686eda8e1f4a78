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
 * the pipeline syntax.ts (readRegexSyntax: the one reader of Python `re` text, whose tree the
 * grammar stage's lexer also reads) → parser.ts (lowerSyntax) → nfa.ts → dfa/ (subset.ts's
 * determinize).
 *
 * Composing languages (JSON Schema): ecmaSearchNode / ecmaFullMatchNode (ecma.ts: ECMA-262
 * patterns, u flag) → compileRegexNode (an AST, maybe embedding DFAs as { kind: "dfa" }, each
 * meeting the ByteDfa contract: trimDfa for a DFA built by hand);
 * intersectDfas / subtractDfas (dfa/product.ts). These return an empty language, not an error.
 */
export { bytesRead, dfaHash, isEmptyLanguage, sameDfa, type ByteDfa, type MultiByteDfa } from "./dfa/types.js";
export { patternDistances } from "./dfa/distances.js";
export { regexClock, type ClockFrame } from "./clock.js";
export { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
export { finiteMembers, matchesBytes, matchesString, sampleMember, sampleString, shortestCompletion, walkBytes } from "./sample.js";
export type { SampleOptions } from "./sample.js";
export { lowerSyntax, parseRegex, parseFlagString } from "./parser.js";
export type { RegexNode, RegexFlags } from "./parser.js";
export { annexBReason, ecmaFullMatchNode, ecmaPatternError, ecmaSearchNode } from "./ecma.js";
export { LanguageGraph } from "./graph.js";
export type { CodeSet } from "./charset.js";
export {
  acceptedPatterns,
  acceptsPattern,
  canReachPattern,
  compileMultiRegex,
  compileMultiRegexNodes,
  compileRegex,
  compileRegexNode,
  DEFAULT_REGEX_LIMITS,
  REGEX_MAX_WORK,
  intersectDfas,
  minimalDfa,
  RegexCache,
  subtractDfas,
  subtractStrings,
  trimDfa,
  type PatternSpec,
  type RegexLimits,
  type RegexOptions,
} from "./compile.js";
export { ProductCallsClash, type ProductCalls } from "./dfa/product-calls.js";
export { readRegexSyntax, syntaxChildren, MAX_GROUP_NESTING } from "./syntax.js";
export type { ClassEscape, ParsedRegex, ReadOptions, RegexSyntaxNode, SetNode } from "./syntax.js";
export { caseClose } from "./charset.js";
export { pyReEscape, PY_RE_SPECIAL } from "./escape.js";
