/**
 * schema/ — schemas as byte DFAs, the front ends beside grammar/: a JSON Schema → the DFA of
 * the JSON texts that satisfy it (written in one of three whitespace styles), exact or refused,
 * never looser; a TypeScript type → its JSON Schema; an assistant turn that may call declared
 * tools (their arguments through the JSON Schema front end) in a chat template's format.
 *
 * Key types: `CompiledJsonSchema` (`dfa`, `warnings`), `JsonSchemaOptions`, `ToolDeclaration`,
 * `ToolCallStyle`. Errors: `JsonSchemaError` (400, with a JSON pointer),
 * `JsonSchemaTooComplexError` (422), `JsonSchemaUnsatisfiableError`, `TypeScriptSchemaError`.
 *
 *   const { dfa, warnings } = compileJsonSchema(schema, { whitespace: "default", strict: true });
 *   const schema = typeScriptToJsonSchema(source, "Person");
 *   const { dfa } = compileToolCallLanguage(tools, "hermes", { parallel: true }, options);
 */
export {
  compileJsonSchema,
  DEFAULT_JSON_SCHEMA_OPTIONS,
  ProductMemo,
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
export {
  ANSWER_OPEN,
  ANSWER_PREFILL,
  answerLeadOf,
  compileToolCallLanguage,
  controlMarkersOf,
  HERMES_CALL_CLOSE,
  parseToolReply,
  TOOL_CALL_OPEN,
  toolCallSchema,
  type ParsedToolReply,
  type ToolCallLanguage,
  type ToolCallStyle,
  type ToolDeclaration,
} from "./tool-calls/language.js";
export { MAX_SCHEMA_NESTING, nestedDeeperThan } from "./json-schema/document.js";
export { HARMONY_CALL, HARMONY_FINAL, HARMONY_TOOLS_CLOSE } from "./tool-calls/harmony.js";
export { RECIPIENT_ALL } from "./tool-calls/recipient.js";
export { COHERE_TEXT } from "./tool-calls/cohere.js";
export { COMMAND_R_PLUS_TEXT_LEADS } from "./tool-calls/command-r-plus.js";
export { SOLAR_CONTENT, SOLAR_END } from "./tool-calls/solar.js";
export { GIGACHAT_MESSAGE_SEP } from "./tool-calls/gigachat.js";
export { MUSE_TEXT_LEAD, MUSE_TOOLS_CLOSE, MUSE_TURN_END } from "./tool-calls/muse.js";
