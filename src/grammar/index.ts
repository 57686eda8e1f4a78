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
 * JSON Schema is the second front-end (json-schema/): a schema → the byte DFA of the JSON texts
 * that satisfy it (written in one of three whitespace styles), exact or refused, never looser:
 *
 *   const { dfa, warnings } = compileJsonSchema(schema, { whitespace: "default", strict: true });
 *   // throws JsonSchemaError (400, with a JSON pointer), JsonSchemaTooComplexError (422), …
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
export { LEXER_END_KEEPS_STACK } from "./automaton/lexer-states.js";
export type { ScannerParts } from "./scanner-dfa.js";
export { searchCheapestGoal, type CompletionSearch } from "./search.js";
export { GrammarError } from "./errors.js";
export type { LalrTable, BnfRule } from "./lalr.js";
export type { TerminalDef, CompiledGrammar } from "./compile.js";
export type { LexTerminal, Scanner } from "./lexer.js";
export { DEFAULT_GRAMMAR_LIMITS, GrammarTooComplexError, resolveLimits, type GrammarLimits } from "./limits.js";
export {
  compileJsonSchema,
  DEFAULT_JSON_SCHEMA_OPTIONS,
  type CompiledJsonSchema,
  type JsonSchemaOptions,
} from "./json-schema/compile.js";
export {
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  type JsonSchemaWarning,
} from "./json-schema/errors.js";
export type { WhitespaceStyle } from "./json-schema/json-text.js";
export {
  DEFAULT_MAX_SCHEMA_NODES,
  MAX_TYPE_NESTING,
  MAX_TYPESCRIPT_SOURCE_LENGTH,
  preloadTypeScriptCompiler,
  typeScriptToJsonSchema,
  TypeScriptSchemaError,
} from "./typescript/convert.js";
export { hasRepeatedKeys, withoutRepeatedKeys } from "./typescript/value-text.js";
export { pyReEscape } from "./pyregex.js";
export {
  compileToolCallLanguage,
  HERMES_CALL_CLOSE,
  parseToolReply,
  TOOL_CALL_OPEN,
  toolCallSchema,
  type ParsedToolReply,
  type ToolCallLanguage,
  type ToolCallStyle,
  type ToolDeclaration,
} from "./tool-calls.js";
export { MAX_SCHEMA_NESTING, nestedDeeperThan } from "./json-schema/document.js";
