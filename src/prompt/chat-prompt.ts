/**
 * A model's way of reading a conversation: its chat template when the GGUF carries one, else a
 * plain transcript ("System: …\nUser: …\nAssistant:"), tokenized as llama.cpp tokenizes a rendered
 * template (special-token parsing in the template's text only; see chat-template.ts).
 */
import { controlMarkersOf, TOOL_CALL_OPEN, type ToolCallStyle } from "../schema/index.js";
import { TokenKind, type Vocabulary } from "../vocab/index.js";
import { type ChatRenderRequest, ChatTemplate } from "./chat-template.js";
import type { PromptSegment } from "./segments.js";
import { type ReasoningFormat, reasoningFormatOf } from "./reasoning.js";
import { PromptTokenizer, type Tokenizer } from "./tokenize.js";

export interface RenderedPrompt {
  /** The prompt as text (template markers spelled out). */
  readonly text: string;
  readonly tokens: Int32Array;
  readonly segments: readonly PromptSegment[];
  /**
   * Some message carried `reasoning_content` and this model's template never reads the field (nor
   * does the plain transcript): that reasoning is not in the prompt. Absent: false.
   */
  readonly reasoningContentUnread?: boolean;
}

/** Texts special-token parsing turns into control tokens (not the added tokens matched as text anyway). */
export function controlTexts(vocab: Vocabulary): string[] {
  const texts = new Set<string>();
  for (let id = 0; id < vocab.size; id++) {
    const kind = vocab.kinds[id];
    if (kind !== TokenKind.Control && kind !== TokenKind.EndOfGeneration && kind !== TokenKind.Unused) continue;
    const text = vocab.tokenText(id);
    if (text.length > 0) texts.add(text);
  }
  return [...texts].sort((a, b) => b.length - a.length);
}

/**
 * The tool-call format a chat template teaches its model, recognised by what the template writes
 * (null: one Trellis does not read yet). The plain transcript teaches the Hermes format itself.
 */
export function toolCallStyleOf(template: string | null): ToolCallStyle | null {
  if (template === null) return "hermes";
  const has = (...markers: string[]): boolean => markers.every((marker) => template.includes(marker));
  // Tagged arguments: XML calls <function=f><parameter=p> in <tool_call> (Qwen3-Coder, Qwen3.5,
  // Nemotron 3, Step 3.5; not Functionary's <function=f>{JSON}) or in <seed:tool_call> (Seed-OSS),
  // GLM's <arg_key>/<arg_value> (GLM-4.6+, Ling, Laguna), MiniMax's <invoke name=…> with
  // <parameter name=…> (M2) or with the namespace token before each tag (M3).
  if (has("<seed:tool_call>", "<function=", "<parameter=")) return "seed-oss";
  // Muse: ATEM calls, one per message, each naming its function as the recipient (` to=f`).
  if (has("<atem:function_calls>", '<atem:invoke name="', '<atem:parameter name="', "'<|start|>assistant to=' + tc.function.name"))
    return "muse";
  if (has("<tool_call>", "<function=", "<parameter=")) return "xml-function";
  if (has("<tool_call>", "<arg_key>", "<arg_value>")) return "glm";
  if (has("<minimax:tool_call>", '<invoke name="', '<parameter name="')) return "minimax-m2";
  if (has("]<]minimax[>[", "<tool_call>", '<invoke name="')) return "minimax-m3";
  // A JSON list of calls in <tool_calls> (Apriel), or JSON lines in it (MiniMax-M1).
  if (has("<tool_calls>[", '"arguments": ')) return "apriel";
  if (has("<tool_calls>\\n", '"arguments": ')) return "minimax-m1";
  // gpt-oss (harmony): a call is its own message in the commentary channel, to=functions.f.
  if (has("<|start|>assistant to=", "<|channel|>commentary ")) return "harmony";
  // Kimi-K2's control tokens around `functions.f:0` and the JSON arguments.
  if (has("<|tool_calls_section_begin|>", "<|tool_call_argument_begin|>")) return "kimi-k2";
  // Mistral's control tokens: [TOOL_CALLS] before a JSON list (Nemo), or before each call's name and [ARGS].
  if (has("[TOOL_CALLS][")) return "mistral-nemo";
  if (has("[TOOL_CALLS]", "[ARGS]")) return "mistral";
  // Functionary v3.1: <function=f>{JSON}</function> (not the XML calls' <parameter=…> inside).
  if (has("<function=", "</function>") && !template.includes("<parameter=")) return "functionary-v3.1";
  // DeepSeek's markers around a name and JSON arguments: R1 writes `function<｜tool▁sep｜>f` and a ```json block, V3.1 `f<｜tool▁sep｜>{…}`.
  if (has("<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>", "```json")) return "deepseek-r1";
  if (has("<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>")) return "deepseek-v3";
  // DeepSeek's DSML: <｜DSML｜invoke name=…> with typed <｜DSML｜parameter …> in function_calls (V3.2) or tool_calls (V4).
  if (has("dsml_token", "'function_calls>", "invoke name=", 'string="true"')) return "deepseek-dsml";
  if (has("dsml_token", "'tool_calls>", "invoke name=", 'string="true"')) return "deepseek-v4";
  // MiniCPM5: <function name="f"><param name="p">value</param></function>, CDATA for strings with "<", "&" or a newline.
  if (has('<function name="', '<param name="', "<![CDATA[")) return "minicpm5";
  // Hunyuan 3: GLM's tags with its namespace suffix, `'<arg_key{}>'.format(HYTK)`.
  if (has("'<tool_calls{}>'.format(HYTK)", "'<arg_key{}>'.format(HYTK)", "HYTK = ':opensource'")) return "hunyuan";
  // One JSON list of calls after a marker: Granite 3.3's <|tool_call|> control token, FireFunction's
  // `functools[`, Nemotron Nano v2's <TOOLCALL>, Apertus's <|tools_prefix|> with each call keyed by its name.
  if (has("<|tool_call|>", "JSON list of tools")) return "granite";
  if (has(" functools[")) return "firefunction-v2";
  if (has("<TOOLCALL>[", "]</TOOLCALL>")) return "nemotron-v2";
  if (has("<|tools_prefix|>", "<|tools_suffix|>", "'{\"' + tool_call.name + '\": '")) return "apertus";
  // LFM2 and LFM2.5: a Python list of calls between <|tool_call_start|> and <|tool_call_end|>
  // (LFM2.5's template writes it; LFM2's and LFM2.5-Instruct's are known by their tool lists).
  if (has("<|tool_call_start|>[") || has("<|tool_list_start|>", "<|tool_response_start|>") || has("List of tools: [", "<|im_start|>"))
    return "lfm2";
  // Gemma 4: `<|tool_call>call:f{k:v}<tool_call|>`, its arguments in its own notation.
  if (has("<|tool_call>call:", "<tool_call|>")) return "gemma4";
  // Cohere: text in <|START_RESPONSE|> (R7B) or <|START_TEXT|> (Command A), or calls in <|START_ACTION|>.
  if (has("<|START_ACTION|>[", '"tool_name": "', "<|START_RESPONSE|>")) return "command-r7b";
  if (has("<|START_ACTION|>[", '"tool_name": "', "<|START_TEXT|>")) return "cohere2";
  // Command R+: every reply an `Action:` list in a ```json block, `directly-answer` for none.
  if (has("Write \\'Action:\\' followed by a json-formatted list", "directly-answer", '"tool_name": ')) return "command-r-plus";
  // Solar Open: text under <|content|>, or calls under <|tool_calls|>, each id, name and JSON arguments between control tokens.
  if (has("<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>")) return "solar-open";
  // Kimi-K3 (XTML): after the response's text, <|open|>tools<|sep|> with each call's arguments tagged and typed.
  if (has("'<|open|>' + tag", "open_tag('call', [('tool', fn.name)", "open_tag('argument', [('key', key), ('type', xtml_type(value))])"))
    return "kimi-k3";
  // GigaChat 3: a call is a `function call` message of its own; 3.1: it follows the text after <|function_call|>.
  if (has("<|function_call|>", "<|message_sep|>", "<|role_sep|>")) return "gigachat3.1";
  if (has("'function call'", "<|message_sep|>", "<|role_sep|>")) return "gigachat3";
  // Functionary v3.2: each message names its recipient after `>>>`, `all` for the user.
  if (has("'>>>all\\n'", "'>>>' + tool_call['function']['name'] + '\\n'")) return "functionary-v3.2";
  // Not read yet: the above's kin (DeepSeek's and others' <invoke name=…> in other blocks).
  if (["<function=", "<arg_key>", "<tool_calls>", "<invoke name="].some((marker) => template.includes(marker))) return null;
  if (template.includes("<tool_call>") && template.includes('"arguments"')) return "hermes";
  if (template.includes("<|python_tag|>") || template.includes('"parameters": dictionary of argument name')) return "llama3";
  return null;
}

/**
 * The template's tool-call style as this vocabulary can write it, else null: a style made of
 * control tokens (Mistral's `[TOOL_CALLS]`) needs each as a control token of the vocabulary; a
 * style of text markers needs its opening marker not to be one (DeepSeek's, in some conversions),
 * since the constraint would have the model spell a control token as text.
 */
export function readableToolCallStyle(template: string | null, controlTexts: readonly string[]): ToolCallStyle | null {
  const style = toolCallStyleOf(template);
  if (style === null) return null;
  const controls = controlMarkersOf(style);
  if (controls.length > 0) return controls.every((marker) => controlTexts.includes(marker)) ? style : null;
  return controlTexts.includes(TOOL_CALL_OPEN[style]) ? null : style;
}

export class ChatPrompter {
  /** The model's template, or null when it has none (the plain transcript is used). */
  readonly template: ChatTemplate | null;
  /** How this model writes tool calls (tool_choice "auto"), or null when Trellis cannot read its format. */
  readonly toolCallStyle: ToolCallStyle | null;
  /** How this model reasons before it answers, or null when it does not (or Trellis cannot read its format). */
  readonly reasoning: ReasoningFormat | null;
  /** The template reads a message's `reasoning_content` (29 of the 72 the tests read do); where it puts it is its own rule. */
  readonly readsReasoningContent: boolean;
  readonly controlTexts: readonly string[];
  private readonly tokenizer: PromptTokenizer;

  constructor(templateSource: string | null, tokenizer: Tokenizer, vocab: Vocabulary) {
    this.controlTexts = controlTexts(vocab);
    const text = (id: number): string => (id >= 0 ? vocab.tokenText(id) : "");
    this.template = templateSource
      ? new ChatTemplate(templateSource, {
          specialTexts: this.controlTexts,
          bosText: text(vocab.bosToken),
          eosText: text(vocab.eosToken),
          addsBos: vocab.addBos,
        })
      : null;
    this.toolCallStyle = readableToolCallStyle(this.template ? templateSource : null, this.controlTexts);
    // Read as reasoning.ts reads markers: from what the source spells (`message.reasoning_content`, `m['reasoning_content']`).
    this.readsReasoningContent =
      this.template !== null &&
      /\breasoning_content\b|message(?:\.(?:thinking|reasoning)\b|\[['"]thinking['"]\])|["']thinking["'] in message/.test(
        templateSource ?? "",
      );
    const template = this.template;
    this.reasoning = template
      ? reasoningFormatOf(templateSource, (request) =>
          template
            .render(request)
            .map((s) => s.text)
            .join(""),
        )
      : null;
    const start = vocab.bosToken >= 0 ? vocab.bosToken : vocab.eosToken;
    this.tokenizer = new PromptTokenizer(tokenizer, start >= 0 ? start : 0);
  }

  render(request: ChatRenderRequest): RenderedPrompt {
    const templated = this.template ? this.template.render(request) : plainTranscript(request);
    const prefill = request.assistantPrefill;
    const segments = prefill ? [...templated, { text: prefill, special: false }] : templated;
    const rendered = { text: segments.map((s) => s.text).join(""), tokens: this.tokenizer.sequence(segments), segments };
    const unread = !this.readsReasoningContent && request.messages.some((m) => m.reasoning_content !== undefined);
    return unread ? { ...rendered, reasoningContentUnread: true } : rendered;
  }
}

const SPEAKER: Record<string, string> = { system: "System", user: "User", assistant: "Assistant", tool: "Tool" };

/** A model without a chat template reads a plain transcript; everything in it is text. */
function plainTranscript(request: ChatRenderRequest): PromptSegment[] {
  const lines: string[] = [];
  if (request.tools && request.tools.length > 0) {
    lines.push(`Tools: ${JSON.stringify(request.tools.map((t) => t.function))}`);
    lines.push('To call a tool, write <tool_call>\n{"name": <tool name>, "arguments": <arguments as a JSON object>}\n</tool_call>');
  }
  for (const m of request.messages) {
    const calls = m.tool_calls?.map((c) => JSON.stringify({ name: c.function.name, arguments: c.function.arguments })) ?? [];
    const body = [m.content, ...calls].filter((t) => t.length > 0).join("\n");
    lines.push(`${SPEAKER[m.role] ?? m.role}: ${body}`);
  }
  if (request.addGenerationPrompt) lines.push("Assistant:");
  return [{ text: lines.join("\n"), special: false }];
}
