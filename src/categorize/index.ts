export { Categorizer, answerEndTokens, wordTokens } from "./categorizer.js";
export { ScoringJob, logSumExp, type ScoringRequest, type ScoringResult } from "./scoring.js";
export { NULL_OPTION, formatSinglePrompt, formatMultiPrompt, formatQuestion } from "./format.js";
