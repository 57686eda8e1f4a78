/**
 * categorize/ — choosing among categories by the model's likelihood of each whole category.
 *
 * Key types: `Categorizer` (single answer: every category scored as a whole continuation, with
 * the probability that the answer ends there; multiple answers: P(yes) against P(no) per
 * category), `ScoringJob` (a DecodeJob scoring continuations over one evaluated prompt, laid out
 * as a token trie), prompt formats (a known chat template, else plain text).
 *
 *   const categorizer = new Categorizer(runtime);
 *   await categorizer.categorize({ prompt, categories, allowMultipleClasses, ... });
 */
export { Categorizer, answerEndTokens, wordTokens, type CategorizerOptions } from "./categorizer.js";
export { ScoringJob, type ScoringRequest, type ScoringResult, type ScoringStats } from "./scoring.js";
export { logSumExp, logSumExpWithSets, useLogSumExpKernel } from "./logsumexp.js";
export {
  NULL_OPTION,
  NULL_OPTION_ALTERNATIVE,
  answerStartOf,
  answerText,
  chatFormatFor,
  formatMultiPrompt,
  formatSinglePrompt,
  promptStyleFor,
  renderedChatFormat,
  type AnswerStart,
  type ChatFormat,
  type PromptStyle,
} from "./format.js";
