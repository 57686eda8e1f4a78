/**
 * prompt/ — what the model reads: chat conversations rendered by the model's own Jinja chat
 * template, and prompt segments tokenized so that users' text is never parsed into control tokens.
 *
 * Key types: `ChatTemplate` (render(messages, tools) → PromptSegment[]), `PromptSegment` (template
 * text, tokenized with special-token parsing, or plain text), `PromptTokenizer` (segments → tokens,
 * llama.cpp's way: BOS when the model wants it, LSTRIP/RSTRIP markers).
 *
 *   const template = new ChatTemplate(model.chatTemplate(), { specialTexts, bosText, eosText, addsBos });
 *   const tokens = new PromptTokenizer(model, bos).sequence(template.render({ messages, addGenerationPrompt: true }));
 */
export {
  ChatTemplate,
  ChatTemplateError,
  splitAtSentinels,
  type ChatMessage,
  type ChatRenderRequest,
  type ChatTemplateOptions,
  type ChatTool,
  type ChatToolCall,
} from "./chat-template.js";
export { ChatPrompter, controlTexts, readableToolCallStyle, toolCallStyleOf, type RenderedPrompt } from "./chat-prompt.js";
export { type PromptSegment, withPlainTail } from "./segments.js";
export { PromptTokenizer, mergePlain, type Tokenizer } from "./tokenize.js";
export { reasoningFormatOf, type ReasoningFormat } from "./reasoning.js";
