/**
 * What the tool-call language tests (test/schema-tool-call-*.test.ts) share: compiled languages,
 * streams, the text before the calls, real templates and the tool loop they render.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { ByteDfa } from "../../src/regex/index.js";
import { ChatTemplate, type ChatMessage, type ChatTool } from "../../src/prompt/index.js";
import { AutoToolStream } from "../../src/generate/index.js";
import { compileToolCallLanguage, TOOL_CALL_OPEN, type ToolCallStyle, type ToolDeclaration } from "../../src/schema/index.js";
import { CONTROL_MARKERS, markerBytes } from "../../src/support/index.js";
import { REPO_ROOT } from "./paths.js";

const utf8 = new TextEncoder();

/** Bytes as the detokenizer writes them: each control marker's spelling as the marker's text. */
export function markersAsText(bytes: Uint8Array): string {
  const parts: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0xff) parts.push(...utf8.encode(CONTROL_MARKERS[bytes[++i]! - 0x80]!));
    else parts.push(bytes[i]!);
  }
  return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(parts));
}

/** Text with every control marker written as its spelling (what the constraint reads). */
export function markersAsBytes(text: string): Uint8Array {
  const out: number[] = [];
  const markers = new RegExp(`(${CONTROL_MARKERS.map((m) => m.replace(/[[\]|]/g, "\\$&")).join("|")})`);
  for (const [i, piece] of text.split(markers).entries()) out.push(...(i % 2 === 1 ? markerBytes(piece)! : utf8.encode(piece)));
  return Uint8Array.from(out);
}

/** Each style's language (with or without parallel calls) over `toolsOf(style)`, compiled once. */
export function toolCallLanguages<S extends ToolCallStyle>(
  toolsOf: (style: S) => readonly ToolDeclaration[],
  options: Parameters<typeof compileToolCallLanguage>[3],
): (style: S, parallel?: boolean) => ByteDfa {
  const languages = new Map<string, ByteDfa>();
  return (style, parallel = true) => {
    const key = `${style}/${parallel}`;
    let dfa = languages.get(key);
    if (!dfa) languages.set(key, (dfa = compileToolCallLanguage(toolsOf(style), style, parallel, options).dfa));
    return dfa;
  };
}

/** What a stream sends as content for a reply cut into `pieces`. */
export function streamedReply(style: ToolCallStyle, pieces: readonly string[]): string {
  const stream = new AutoToolStream(style);
  return pieces.map((p) => stream.push(p)).join("") + stream.flush();
}

/** The text before the first opening marker (all of it when there is none). */
export function textBeforeCalls(style: ToolCallStyle, reply: string): string {
  const at = reply.indexOf(TOOL_CALL_OPEN[style]);
  return at < 0 ? reply : reply.slice(0, at);
}

/** A real chat template of ../shared/chat-templates, the markers and `controls` as its control tokens. */
export function realTemplate(file: string, options: { controls?: readonly string[]; bos?: string; eos?: string } = {}): ChatTemplate {
  return new ChatTemplate(readFileSync(resolve(REPO_ROOT, "..", "shared", "chat-templates", file), "utf8"), {
    specialTexts: [...CONTROL_MARKERS, ...(options.controls ?? [])],
    bosText: options.bos ?? "",
    eosText: options.eos ?? "",
    addsBos: false,
  });
}

/**
 * The whole text `template` renders for a tool loop over `tools`: the user's "Plan my trip.", an
 * assistant turn reasoning "Plan." and saying `content` beside `calls` (ids `id(i)`), each call's
 * result ("result i"), then the assistant's "It is sunny.".
 */
export function renderedToolLoop(
  template: ChatTemplate,
  tools: readonly ToolDeclaration[],
  calls: readonly { readonly name: string; readonly arguments: unknown }[],
  options: { content?: string; id?: (i: number) => string } = {},
): string {
  const id = options.id ?? ((i: number) => `c${i}`);
  const messages: ChatMessage[] = [
    { role: "user", content: "Plan my trip." },
    {
      role: "assistant",
      content: options.content ?? "",
      reasoning_content: "Plan.",
      tool_calls: calls.map((c, i) => ({ id: id(i), type: "function", function: { name: c.name, arguments: c.arguments } })),
    },
    ...calls.map((_, i): ChatMessage => ({ role: "tool", content: `result ${i}`, tool_call_id: id(i) })),
    { role: "assistant", content: "It is sunny." },
  ];
  const declared: ChatTool[] = tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.name, parameters: t.parameters },
  }));
  return template
    .render({ messages, tools: declared, addGenerationPrompt: false })
    .map((s) => s.text)
    .join("");
}
