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
 *
 * Rendering follows Python Jinja2 as transformers runs it (jinja-compat.ts), with the context
 * llama.cpp gives: `tools` only when there are some, and firefunction-v2's `functions`/`datetime`.
 */
import { JinjaTemplate, strftime } from "./jinja-compat.js";
import { ControlTextMatcher } from "./control-texts.js";
import type { PromptSegment } from "./segments.js";

/** One message of a conversation, as the OpenAI API carries it (content already flattened to text). */
export interface ChatMessage {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string;
  readonly name?: string;
  readonly tool_calls?: readonly ChatToolCall[];
  readonly tool_call_id?: string;
  /** An earlier assistant turn's reasoning (markers left out), as vLLM's and DeepSeek's clients send it back; the template places it. */
  readonly reasoning_content?: string;
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
  /**
   * Template variables Trellis sets itself (never a request's names): a reasoning toggle such as
   * `enable_thinking`, and `reasoning_effort` (the request's validated value).
   */
  readonly variables?: Readonly<Record<string, boolean | string>>;
  /**
   * Text the assistant's turn starts with, after the generation prompt, plain text (Command R+'s
   * `directly-answer` action before an answer): ChatPrompter.render appends it.
   */
  readonly assistantPrefill?: string;
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

/**
 * Whether the string at `path` (keys and indices from the context's root) is free text a user
 * wrote: a message's content and reasoning, a tool call's argument values, a tool's or a parameter's
 * description. Everything else (roles, names, ids, a schema's property names, `required`, `enum`)
 * is structure a template compares or prints as such: never wrapped, and a control token's text
 * there is refused.
 */
function isFreeText(path: readonly (string | number)[]): boolean {
  const [root, , field, ...rest] = path;
  if (root === "messages")
    return (
      field === "content" ||
      field === "reasoning_content" ||
      field === "thinking" ||
      field === "reasoning" ||
      (field === "tool_calls" && rest[1] === "function" && rest[2] === "arguments")
    );
  if (root === "tools" && field === "function") {
    const last = path[path.length - 1];
    return rest[0] === "description" || (rest[0] === "parameters" && (last === "description" || last === "title"));
  }
  return false;
}

/** Calls `visit` with every string of `value` and its path; returns the value with the strings `visit` returned. */
function mapStrings(
  value: unknown,
  path: (string | number)[],
  visit: (text: string, path: readonly (string | number)[]) => string,
): unknown {
  if (typeof value === "string") return visit(value, path);
  if (Array.isArray(value)) return value.map((item, i) => mapStrings(item, [...path, i], visit));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(value)) out[k] = mapStrings(item, [...path, k], visit);
    return out;
  }
  return value;
}

const pathText = (path: readonly (string | number)[]): string =>
  path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");

/** Sentinel pairs tried in turn: the first pair no user string contains is used. */
const SENTINELS: ReadonlyArray<readonly [string, string]> = [
  ["\uE000", "\uE001"],
  ["\uF8F0", "\uF8F1"],
  ["\u{F0000}", "\u{F0001}"],
];

export class ChatTemplate {
  private readonly template: JinjaTemplate;
  private readonly controls: ControlTextMatcher;

  constructor(
    readonly source: string,
    private readonly options: ChatTemplateOptions,
  ) {
    this.template = new JinjaTemplate(source);
    this.controls = new ControlTextMatcher(options.specialTexts);
  }

  /** The conversation as prompt segments (template text: special; user strings: plain where it matters). */
  render(request: ChatRenderRequest): PromptSegment[] {
    const context = { messages: request.messages.map(templateMessage), tools: request.tools };
    let spelled = false;
    const userStrings: string[] = [];
    mapStrings(context, [], (text, path) => {
      const control = this.controls.find(text);
      if (isFreeText(path)) {
        userStrings.push(text);
        spelled ||= control !== null;
      } else if (control !== null) {
        throw new ChatTemplateError(
          `${pathText(path)} spells the control token ${JSON.stringify(control)}, which is not allowed there`,
          pathText(path),
        );
      }
      return text;
    });
    this.refuseControlKeys(context, []);
    if (!spelled)
      return [
        {
          text: this.stripBos(this.renderRaw(context.messages, context.tools, request.addGenerationPrompt, [], request.variables)),
          special: true,
        },
      ];

    const pair = SENTINELS.find(([open, close]) => !userStrings.some((s) => s.includes(open) || s.includes(close)));
    if (!pair) throw new ChatTemplateError("messages contain every private-use sentinel Trellis could mark them with", "messages");
    const [open, close] = pair;
    const wrapped = mapStrings(context, [], (text, path) =>
      isFreeText(path) && text.length > 0 ? `${open}${text}${close}` : text,
    ) as typeof context;
    const text = this.stripBos(this.renderRaw(wrapped.messages, wrapped.tools, request.addGenerationPrompt, pair, request.variables));
    return splitAtSentinels(text, open, close);
  }

  private renderRaw(
    messages: readonly unknown[],
    tools: readonly unknown[] | undefined,
    addGenerationPrompt: boolean,
    sentinels: readonly string[] = [],
    variables: Readonly<Record<string, boolean | string>> = {},
  ): string {
    const context: Record<string, unknown> = {
      ...variables,
      messages,
      add_generation_prompt: addGenerationPrompt,
      bos_token: this.options.bosText,
      eos_token: this.options.eosText,
    };
    if (tools && tools.length > 0) context.tools = tools;
    // firefunction-v2 reads its tools as `functions` (JSON, indent 2) and the date as `datetime`,
    // which llama.cpp supplies (common/chat.cpp); a template that never reads them is unaffected.
    const free = this.template.freeNames;
    if (free.has("functions")) context.functions = tools && tools.length > 0 ? JSON.stringify(tools, null, 2) : "";
    if (free.has("datetime")) {
      const now = new Date();
      context.datetime = strftime(new Date(now.getTime() + now.getTimezoneOffset() * 60_000), "%b %d %Y %H:%M:%S GMT");
    }
    try {
      return this.template.render(context, { verbatim: sentinels });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ChatTemplateError(`the model's chat template cannot render these messages: ${reason}`, "messages");
    }
  }

  /** Object keys (a schema's property names) are structure: one spelling a control token is refused. */
  private refuseControlKeys(value: unknown, path: (string | number)[]): void {
    if (Array.isArray(value)) value.forEach((item, i) => this.refuseControlKeys(item, [...path, i]));
    else if (value !== null && typeof value === "object") {
      for (const [k, item] of Object.entries(value)) {
        const control = this.controls.find(k);
        if (control !== null) {
          throw new ChatTemplateError(`${pathText(path)} has a key spelling the control token ${JSON.stringify(control)}`, pathText(path));
        }
        this.refuseControlKeys(item, [...path, k]);
      }
    }
  }

  private stripBos(text: string): string {
    const bos = this.options.bosText;
    return this.options.addsBos && bos.length > 0 && text.startsWith(bos) ? text.slice(bos.length) : text;
  }
}

/** The message as templates expect it: `tool_calls` only when there are some, `reasoning_content` only when given. */
function templateMessage(message: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.name !== undefined) out.name = message.name;
  if (message.tool_calls && message.tool_calls.length > 0) out.tool_calls = message.tool_calls;
  if (message.tool_call_id !== undefined) out.tool_call_id = message.tool_call_id;
  // Some templates read earlier reasoning as `thinking` (gpt-oss keeps it before a call, LFM2.5) or
  // `reasoning` (Solar Open, Kimi-K3).
  if (message.reasoning_content !== undefined) out.reasoning_content = out.thinking = out.reasoning = message.reasoning_content;
  return out;
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
