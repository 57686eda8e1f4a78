/** What the tool-call language tests (test/schema-tool-call-*.test.ts) share: compiled languages, streams, the text before the calls. */
import type { ByteDfa } from "../../src/regex/index.js";
import { AutoToolStream } from "../../src/generate/index.js";
import { compileToolCallLanguage, TOOL_CALL_OPEN, type ToolCallStyle, type ToolDeclaration } from "../../src/schema/index.js";

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
