/**
 * How a categorization is put to the model.
 *
 * A formatted prompt is a list of segments: plain text (tokenized as text, never parsed for
 * special tokens, so a prompt or category that spells "<|im_end|>" stays text) and chat-template
 * markers (tokenized with special-token parsing). The answer is appended to the last segment,
 * which is always plain text, so the model's own tokenization of "prompt end + answer" is scored.
 *
 * Instruct models (GGUF tokenizer.chat_template) get their chat format as the model's own template
 * renders one user turn and the start of the assistant's reply (the Jinja renderer of prompt/, the
 * one chat completions use); a template that cannot render that is recognised by its markers the
 * way llama.cpp's llama_chat_apply_template recognises built-in templates. Models without a
 * template, or with one we do not know, get a plain completion format in which the answer follows
 * "Answer:".
 */

import { type ChatTemplate, type PromptSegment, type ReasoningFormat, withPlainTail } from "../prompt/index.js";

/** The extra option that competes in single mode when a null answer is allowed. */
export const NULL_OPTION = "none of these";
/** Used instead when a category already is NULL_OPTION. */
export const NULL_OPTION_ALTERNATIVE = "none of the above";

/** A chat format: the markers around one user turn and the start of the assistant's reply. */
export interface ChatFormat {
  name: string;
  /** Segments before the user's message. */
  userStart: PromptSegment[];
  /** Segments after it, ending with the assistant's header (the last one is plain text). */
  assistantStart: PromptSegment[];
}

export type PromptStyle = { kind: "plain" } | { kind: "chat"; format: ChatFormat };

const mark = (text: string): PromptSegment => ({ text, special: true });
const plain = (text: string): PromptSegment => ({ text, special: false });

/**
 * The chat format a GGUF chat template stands for, recognised by its markers; null when there is
 * no template or it is not one we know (then the plain format is used).
 */
export function chatFormatFor(template: string | null): ChatFormat | null {
  if (!template) return null;
  if (template.includes("<|im_start|>")) {
    return {
      name: "chatml",
      userStart: [mark("<|im_start|>"), plain("user\n")],
      assistantStart: [mark("<|im_end|>"), plain("\n"), mark("<|im_start|>"), plain("assistant\n")],
    };
  }
  if (template.includes("<|start_header_id|>")) {
    return {
      name: "llama3",
      userStart: [mark("<|start_header_id|>"), plain("user"), mark("<|end_header_id|>"), plain("\n\n")],
      assistantStart: [mark("<|eot_id|>"), mark("<|start_header_id|>"), plain("assistant"), mark("<|end_header_id|>"), plain("\n\n")],
    };
  }
  if (template.includes("<|turn>")) {
    return {
      name: "gemma4",
      userStart: [mark("<|turn>"), plain("user\n")],
      assistantStart: [mark("<turn|>"), plain("\n"), mark("<|turn>"), plain("model\n")],
    };
  }
  if (template.includes("<start_of_turn>")) {
    return {
      name: "gemma",
      userStart: [mark("<start_of_turn>"), plain("user\n")],
      assistantStart: [mark("<end_of_turn>"), plain("\n"), mark("<start_of_turn>"), plain("model\n")],
    };
  }
  if (template.includes("<|user|>") && template.includes("<|assistant|>") && template.includes("<|end|>")) {
    return {
      name: "phi3",
      userStart: [mark("<|user|>"), plain("\n")],
      assistantStart: [mark("<|end|>"), plain("\n"), mark("<|assistant|>"), plain("\n")],
    };
  }
  if (template.includes("[INST]")) {
    // Llama 2 / Mistral: the reply follows "[/INST]" after a space, as the model writes it.
    return { name: "inst", userStart: [plain("[INST] ")], assistantStart: [plain(" [/INST]")] };
  }
  return null;
}

/**
 * The chat format of a template as the Jinja renderer writes it: one user turn (whatever the
 * template puts around it: a default system prompt, a date line) and the start of the assistant's
 * reply. Null when the template cannot render a lone user turn.
 */
export function renderedChatFormat(
  template: ChatTemplate,
  controlTexts: readonly string[],
  answerStart: AnswerStart = { suffix: "" },
): ChatFormat | null {
  const slot = "\uE000";
  let text: string;
  try {
    text = template
      .render({
        messages: [{ role: "user", content: slot }],
        addGenerationPrompt: true,
        ...(answerStart.variables ? { variables: answerStart.variables } : {}),
      })
      .map((s) => s.text)
      .join("");
  } catch {
    return null;
  }
  const at = text.indexOf(slot);
  if (at < 0 || text.indexOf(slot, at + 1) >= 0) return null;
  const before = text.slice(0, at);
  const after = text.slice(at + slot.length) + answerStart.suffix;
  if (after.length === 0) return null;
  return {
    name: chatFormatFor(template.source)?.name ?? "template",
    userStart: before.length > 0 ? [mark(before)] : [],
    assistantStart: withPlainTail([mark(after)], controlTexts),
  };
}

/** How the answer starts after the generation prompt: template variables, then what follows the prompt. */
export interface AnswerStart {
  readonly variables?: Record<string, boolean | string>;
  readonly suffix: string;
}

/**
 * A categorization is the model's answer without reasoning, its header written (the answer's
 * likelihood is read where the model writes an answer, not inside a reasoning section): the
 * template's switch off, where it has one (it then writes the empty section), else the section
 * opened (where the prompt does not) and closed at once; then the answer's header where the
 * model's replies start with one (Cohere's `<|START_RESPONSE|>`, Solar's `<|content|>`).
 */
export function answerStartOf(reasoning: ReasoningFormat | null, header: string | undefined): AnswerStart {
  let variables: Record<string, boolean | string> | undefined;
  let suffix = "";
  // A model that reasons only when asked answers at once.
  if (reasoning !== null && reasoning.askedOnly !== true) {
    if (reasoning.toggle !== null) variables = { [reasoning.toggle]: reasoning.toggleValues?.off ?? false };
    else suffix = (reasoning.preOpened ? "" : reasoning.open) + reasoning.close;
  }
  suffix += header ?? "";
  return variables === undefined ? { suffix } : { variables, suffix };
}

export function promptStyleFor(template: string | null): PromptStyle {
  const format = chatFormatFor(template);
  return format ? { kind: "chat", format } : { kind: "plain" };
}

function listing(categories: readonly string[]): string {
  return categories.map((c) => `- ${c}`).join("\n");
}

/** The continuation that spells an answer after the formatted prompt. */
export function answerText(style: PromptStyle, answer: string): string {
  // In the plain format the answer follows "Answer:" as a new word; in a chat reply it starts the
  // reply (the Llama-2 "[/INST]" header keeps the space, as its model writes it).
  if (style.kind === "plain" || style.format.name === "inst") return ` ${answer}`;
  return answer;
}

function wrap(style: PromptStyle, userMessage: string, plainTail: string): PromptSegment[] {
  if (style.kind === "plain") return [plain(`${userMessage}${plainTail}`)];
  return [...style.format.userStart, plain(userMessage), ...style.format.assistantStart];
}

/** Single mode: the prompt, the options, then the answer slot. */
export function formatSinglePrompt(style: PromptStyle, prompt: string, options: readonly string[]): PromptSegment[] {
  const message = `${prompt}\n\nCategories:\n${listing(options)}\n\nThe best category is one of the above, written exactly.`;
  return wrap(style, message, "\nAnswer:");
}

/**
 * Multi mode, one prompt per category: everything but the category's name comes first and is
 * shared by all (one KV prefix); each prompt's own tokens are just the name and the answer slot,
 * which is read for yes / no.
 */
export function formatMultiPrompt(
  style: PromptStyle,
  prompt: string,
  categories: readonly string[],
): { question: (category: string) => PromptSegment[] } {
  const shared = `${prompt}\n\nCategories:\n${listing(categories)}\n\nDoes the following category apply? Answer yes or no.\nCategory: `;
  return { question: (category) => wrap(style, `${shared}${category}`, "\nAnswer:") };
}
