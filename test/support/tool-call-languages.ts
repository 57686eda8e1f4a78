/** What the tool-call language tests (test/schema-tool-call-*.test.ts) share: compiled languages, streams, the text before the calls. */
import type { ByteDfa } from "../../src/regex/index.js";
import { AutoToolStream } from "../../src/generate/index.js";
import { compileToolCallLanguage, TOOL_CALL_OPEN, type ToolCallStyle, type ToolDeclaration } from "../../src/schema/index.js";
import { CONTROL_MARKERS, markerBytes } from "../../src/support/index.js";

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
