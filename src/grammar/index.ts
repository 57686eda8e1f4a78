/**
 * grammar/ — Lark grammar text → LALR(1) tables and contextual lexers → a byte-level automaton
 * accepting exactly what `Lark(grammar, parser='lalr').parse(text)` accepts (Lark 1.1.5, lexer
 * 'contextual').
 *
 * Key types: `Grammar` (compiled, plain data: it crosses threads), `GrammarAutomaton` (integer
 * states, each a set of (parser stack, lexer state) hypotheses: step(state, byte) → state | -1,
 * isComplete, lexer-level steps for the token layer, byte distances), `GrammarLimits`.
 * Errors: `GrammarError` (Lark's message, line/column → 400), `GrammarTooComplexError` (→ 422).
 *
 *   const grammar = compileGrammar(text, limits);       // throws GrammarError
 *   const automaton = createGrammarAutomaton(grammar, { maxIgnoredRun, limits });
 *   let s = automaton.start; for (const b of bytes) s = automaton.step(s, b);  // -1: refused
 *   automaton.isComplete(s);                              // a whole sentence
 *
 * Beside it, `ruleNetworkAutomaton(network)`: the pushdown recognizer of a rule network (byte DFAs
 * that spell calls of each other, support/rule-calls.ts), the form the schema stage gives a JSON
 * Schema whose values nest without bound; the same contract, exact byte distances, and the
 * lexer-level view (a rule's DFA state as the lexer state) where each state has one move.
 *
 * Test support (sentence samplers, Lark's verdict by translated RegExps) is in testing.ts.
 */
export { compileGrammar, reviveGrammar, type Grammar } from "./grammar.js";
export {
  GrammarAutomaton,
  createGrammarAutomaton,
  DEFAULT_MAX_IGNORED_RUN,
  LEXER_COMMITS,
  type IncrementalOptions,
} from "./automaton/grammar-automaton.js";
export { ruleNetworkAutomaton, RuleNetworkAutomaton, type RuleNetwork, type RuleNetworkTables } from "./automaton/rule-network.js";
export { LEXER_END_KEEPS_STACK } from "./automaton/lexer-states.js";
export type { ScannerParts } from "./scanner-dfa.js";
export { searchCheapestGoal, type CompletionSearch } from "./search.js";
export { GrammarError } from "./errors.js";
export type { LalrTable, BnfRule } from "./lalr-table.js";
export type { TerminalDef, CompiledGrammar } from "./compile.js";
export type { LexTerminal, Scanner } from "./lexer.js";
export { DEFAULT_GRAMMAR_LIMITS, GrammarTooComplexError, resolveLimits, type GrammarLimits } from "./limits.js";
