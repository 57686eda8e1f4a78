/**
 * A model's chat template (GGUF `tokenizer.chat_template`, Jinja) rendered by a real Jinja
 * implementation (@huggingface/jinja, the one transformers.js uses) into prompt segments.
 *
 * The promise kept here: text a user sends is never read as control tokens. A user writing
 * "<|im_end|>" must not end their turn. The template's own text is tokenized with special-token
 * parsing (that is how its markers become tokens); the users' strings are not:
 * - when no user string spells a control token (nearly always), the rendered text is one segment
 *   parsed as llama.cpp parses it: exactly llama.cpp's tokens;
 * - otherwise every user string is wrapped in two private-use sentinels before rendering, and the
 *   spans between them become plain segments. A template that rewrites a string (a `trim`, a
 *   `split`) sees the sentinels at its ends, so such rewrites do not reach that string: safe, and
 *   said in the README.
 */
import { Template } from "@huggingface/jinja";
import type { PromptSegment } from "./segments.js";

/** One message of a conversation, as the OpenAI API carries it (content already flattened to text). */
export interface ChatMessage {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string;
  readonly name?: string;
  readonly tool_calls?: readonly ChatToolCall[];
  readonly tool_call_id?: string;
}

export interface ChatToolCall {
  readonly id: string;
  readonly type: "function";
  /** Arguments as an object: templates write them with `tojson` (llama.cpp parses them too). */
  readonly function: { readonly name: string; readonly arguments: unknown };
}

/** A declared tool, as OpenAI's `tools` array carries it. */
export interface ChatTool {
  readonly type: "function";
  readonly function: { readonly name: string; readonly description?: string; readonly parameters?: unknown };
}

export interface ChatRenderRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[];
  /** End with the start of the assistant's turn (true for a chat completion). */
  readonly addGenerationPrompt: boolean;
}

/** The template could not render this conversation (it raised, or a user string is unsafe where it lands). */
export class ChatTemplateError extends Error {
  constructor(
    message: string,
    /** The request field at fault ("messages", "messages[2].name"). */
    readonly field: string,
  ) {
    super(message);
    this.name = "ChatTemplateError";
  }
}

export interface ChatTemplateOptions {
  /** Texts of the vocabulary's control tokens (what special-token parsing would turn into tokens). */
  readonly specialTexts: readonly string[];
  /** BOS and EOS token texts, as templates expect them in `bos_token` / `eos_token`. */
  readonly bosText: string;
  readonly eosText: string;
  /** The tokenizer adds BOS itself: a rendered text starting with BOS loses it (as llama.cpp does). */
  readonly addsBos: boolean;
}

/** Keys whose string values are structure a template compares, not free text (never wrapped). */
const STRUCTURAL_KEYS = new Set(["role", "type", "name", "id", "tool_call_id"]);

/** Sentinel pairs tried in turn: the first pair no user string contains is used. */
const SENTINELS: ReadonlyArray<readonly [string, string]> = [
  ["\uE000", "\uE001"],
  ["\uF8F0", "\uF8F1"],
  ["\u{F0000}", "\u{F0001}"],
];

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    readonly source: string,
    private readonly options: ChatTemplateOptions,
  ) {
    this.template = new Template(source);
  }

  /** The conversation as prompt segments (template text: special; user strings: plain where it matters). */
  render(request: ChatRenderRequest): PromptSegment[] {
    const messages = request.messages.map(templateMessage);
    const tools = request.tools;
    const unsafe = this.controlTextIn({ messages, tools });
    if (unsafe === null) return [{ text: this.stripBos(this.renderRaw(messages, tools, request.addGenerationPrompt)), special: true }];

    for (const field of unsafe) {
      if (field.structural) {
        throw new ChatTemplateError(
          `${field.path} spells the control token ${JSON.stringify(field.control)}, which is not allowed there`,
          field.path,
        );
      }
    }
    const userStrings: string[] = [];
    collectStrings({ messages, tools }, userStrings, "");
    const pair = SENTINELS.find(([open, close]) => !userStrings.some((s) => s.includes(open) || s.includes(close)));
    if (!pair) throw new ChatTemplateError("messages contain every private-use sentinel Trellis could mark them with", "messages");
    const [open, close] = pair;
    const wrap = (value: unknown, key: string): unknown => wrapStrings(value, key, open, close);
    const text = this.stripBos(
      this.renderRaw(wrap(messages, "") as unknown[], wrap(tools, "") as readonly ChatTool[] | undefined, request.addGenerationPrompt),
    );
    return splitAtSentinels(text, open, close);
  }

  private renderRaw(messages: readonly unknown[], tools: readonly unknown[] | undefined, addGenerationPrompt: boolean): string {
    const context: Record<string, unknown> = {
      messages,
      add_generation_prompt: addGenerationPrompt,
      bos_token: this.options.bosText,
      eos_token: this.options.eosText,
    };
    if (tools && tools.length > 0) context.tools = tools;
    try {
      return this.template.render(context);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ChatTemplateError(`the model's chat template cannot render these messages: ${reason}`, "messages");
    }
  }

  private stripBos(text: string): string {
    const bos = this.options.bosText;
    return this.options.addsBos && bos.length > 0 && text.startsWith(bos) ? text.slice(bos.length) : text;
  }

  /** Every user string that spells a control token, with its path; null when none does. */
  private controlTextIn(value: unknown): { path: string; control: string; structural: boolean }[] | null {
    const found: { path: string; control: string; structural: boolean }[] = [];
    const visit = (v: unknown, path: string, key: string): void => {
      if (typeof v === "string") {
        const control = this.options.specialTexts.find((t) => t.length > 0 && v.includes(t));
        if (control !== undefined) found.push({ path, control, structural: STRUCTURAL_KEYS.has(key) });
      } else if (Array.isArray(v)) {
        v.forEach((item, i) => visit(item, `${path}[${i}]`, key));
      } else if (v !== null && typeof v === "object") {
        for (const [k, item] of Object.entries(v)) visit(item, path === "" ? k : `${path}.${k}`, k);
      }
    };
    visit(value, "", "");
    return found.length > 0 ? found : null;
  }
}

/** The message as templates expect it: `tool_calls` only when there are some. */
function templateMessage(message: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.name !== undefined) out.name = message.name;
  if (message.tool_calls && message.tool_calls.length > 0) out.tool_calls = message.tool_calls;
  if (message.tool_call_id !== undefined) out.tool_call_id = message.tool_call_id;
  return out;
}

function collectStrings(value: unknown, out: string[], key: string): void {
  if (typeof value === "string") {
    if (!STRUCTURAL_KEYS.has(key)) out.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectStrings(item, out, key);
  } else if (value !== null && typeof value === "object") {
    for (const [k, item] of Object.entries(value)) collectStrings(item, out, k);
  }
}

function wrapStrings(value: unknown, key: string, open: string, close: string): unknown {
  if (typeof value === "string") return STRUCTURAL_KEYS.has(key) || value.length === 0 ? value : `${open}${value}${close}`;
  if (Array.isArray(value)) return value.map((item) => wrapStrings(item, key, open, close));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(value)) out[k] = wrapStrings(item, k, open, close);
    return out;
  }
  return value;
}

/**
 * Text outside sentinel pairs is template text (special); inside, a user's string (plain). A stray
 * sentinel (a template that cut a string in two) still marks plain text: safe either way.
 */
export function splitAtSentinels(text: string, open: string, close: string): PromptSegment[] {
  const segments: PromptSegment[] = [];
  let depth = 0;
  for (const part of text.split(new RegExp(`(${regexEscape(open)}|${regexEscape(close)})`, "u"))) {
    if (part === open) depth++;
    else if (part === close) depth = Math.max(0, depth - 1);
    else if (part.length > 0) {
      const special = depth === 0;
      const last = segments[segments.length - 1];
      if (last && last.special === special) segments[segments.length - 1] = { text: last.text + part, special };
      else segments.push({ text: part, special });
    }
  }
  return segments;
}

function regexEscape(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");
}
