export { Categorizer, answerEndTokens, wordTokens, type CategorizerOptions } from "./categorizer.js";
export { ScoringJob, logSumExp, logSumExpWithSets, type ScoringRequest, type ScoringResult, type ScoringStats } from "./scoring.js";
export {
  NULL_OPTION,
  NULL_OPTION_ALTERNATIVE,
  answerText,
  chatFormatFor,
  formatMultiPrompt,
  formatSinglePrompt,
  promptStyleFor,
  type ChatFormat,
  type PromptSegment,
  type PromptStyle,
} from "./format.js";
export { PromptTokenizer, mergePlain, type Tokenizer } from "./tokens.js";
