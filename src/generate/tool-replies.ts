/**
 * A tool reply read back: the calls in what the model wrote under a tool-call constraint (a named
 * call's arguments, a `required` answer's array, an `auto` reply's marked calls in the model's
 * format), whole or as it streams.
 */
import {
  COHERE_TEXT,
  COMMAND_R_PLUS_TEXT_LEADS,
  GIGACHAT_MESSAGE_SEP,
  MUSE_TEXT_LEAD,
  MUSE_TURN_END,
  HARMONY_CALL,
  HARMONY_FINAL,
  parseToolReply,
  RECIPIENT_ALL,
  SOLAR_CONTENT,
  SOLAR_END,
  TOOL_CALL_OPEN,
  type ToolCallStyle,
  type ToolDeclaration,
} from "../schema/index.js";
import { heldBackLength } from "./stream.js";

/** How a chat request lets the model call its tools (from tool_choice). */
export interface ToolMode {
  /**
   * "named": the output is that function's arguments; "required": an array of calls; "auto": text
   * or calls in the model's own format (`style`).
   */
  readonly kind: "named" | "required" | "auto";
  readonly name?: string;
  readonly style?: ToolCallStyle;
  /** "auto": the functions declared (the tagged styles read a value as a string or JSON by its parameter's schema). */
  readonly tools?: readonly ToolDeclaration[];
}

/** A call in a tool reply: the function's name and its arguments as JSON text. */
export interface ReplyCall {
  name: string;
  arguments: string;
}

/**
 * The calls of a tool reply: a named call's arguments, a `required` answer's JSON array of
 * {name, arguments}, an `auto` reply's marked calls (none: the reply is text).
 */
export function replyCalls(text: string, tools: ToolMode): ReplyCall[] {
  if (tools.kind === "named") return [{ name: tools.name!, arguments: text }];
  if (tools.kind === "required") {
    const calls = JSON.parse(text) as { name: string; arguments: unknown }[];
    return calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments) }));
  }
  return autoReply(text, tools.style!, tools.tools).calls;
}

/**
 * A tool_choice "auto" reply: its text before any call, and its calls (none: the reply is text).
 * `tools`: those declared (needed by the tagged styles: how a value reads depends on its parameter's schema).
 */
export function autoReply(
  text: string,
  style: ToolCallStyle,
  tools: readonly ToolDeclaration[] = [],
): { content: string | null; calls: ReplyCall[] } {
  const parsed = parseToolReply(text, style, tools);
  return { content: parsed.content, calls: parsed.calls.map((c) => ({ name: c.name, arguments: c.arguments })) };
}

/**
 * Styles whose reply says at its start whether it is text (then one of these leads, not content)
 * or calls: Functionary v3.2's `all\n` (calls may follow the text), Cohere's text markers, Solar
 * Open's content header and Muse's ` to=user` (the text ends at its closing marker), Command R+'s
 * `directly-answer` action (the text runs to the reply's end).
 */
const TEXT_LEAD: Partial<Record<ToolCallStyle, { readonly opens: readonly string[]; readonly close?: string }>> = {
  "functionary-v3.2": { opens: [RECIPIENT_ALL] },
  "command-r7b": { opens: [COHERE_TEXT["command-r7b"].open], close: COHERE_TEXT["command-r7b"].close },
  cohere2: { opens: [COHERE_TEXT.cohere2.open], close: COHERE_TEXT.cohere2.close },
  "solar-open": { opens: [SOLAR_CONTENT], close: SOLAR_END },
  muse: { opens: [MUSE_TEXT_LEAD], close: MUSE_TURN_END },
  "command-r-plus": { opens: COMMAND_R_PLUS_TEXT_LEADS },
};

/**
 * Styles whose text ends at the calls' opening marker or at another (GigaChat 3.1's end of the
 * message, when no call follows), or at none (Command R+'s answer, after its lead).
 */
const TEXT_ENDS: Partial<Record<ToolCallStyle, readonly string[]>> = {
  "gigachat3.1": [TOOL_CALL_OPEN["gigachat3.1"], GIGACHAT_MESSAGE_SEP],
  "command-r-plus": [],
};

/**
 * Streaming a tool_choice "auto" reply: its text goes out as it comes, except what may still turn
 * out to be a call's opening marker; from the marker on, the reply is calls, sent whole at the end.
 */
export class AutoToolStream {
  private text = "";
  private sent = 0;
  private inCalls = false;
  /** gpt-oss: the final channel's header was read; the rest is its text. */
  private inFinal = false;
  /** A style whose reply starts by saying text or calls (TEXT_LEAD): that start was read. */
  private leadRead = false;

  constructor(private readonly style: ToolCallStyle) {}

  /** Adds a piece of the reply; returns the text that is final content now ("" for none). */
  push(delta: string): string {
    this.text += delta;
    if (this.inCalls || this.text.length === 0) return "";
    if (this.inFinal) return this.take(this.text.length);
    if (this.style === "harmony") return this.pushHarmony();
    const lead = TEXT_LEAD[this.style];
    if (lead !== undefined && !this.leadRead) {
      // The reply's start (after any whitespace) says text (its lead is not sent) or calls.
      const space = this.text.length - this.text.trimStart().length;
      const start = this.text.slice(space);
      const open = lead.opens.find((o) => start.startsWith(o));
      if (open !== undefined) {
        this.leadRead = true;
        this.sent = space + open.length;
      } else if (lead.opens.some((o) => o.startsWith(start))) return "";
      else {
        this.inCalls = true;
        return "";
      }
    }
    // The text ends where the calls open, or at its own closing marker (Cohere's).
    const open = lead?.close ?? TOOL_CALL_OPEN[this.style];
    if (this.style === "llama3") {
      // A Llama reply is a call exactly when it starts with "{".
      if (this.text.startsWith(open)) {
        this.inCalls = true;
        return "";
      }
      return this.take(this.text.length);
    }
    const ends = lead?.close === undefined ? (TEXT_ENDS[this.style] ?? [open]) : [open];
    let at = -1;
    let held = 0;
    for (const end of ends) {
      const i = this.text.indexOf(end, Math.max(0, this.sent - end.length));
      if (i >= 0 && (at < 0 || i < at)) at = i;
      held = Math.max(held, heldBackLength(this.text, end));
    }
    if (at >= 0) {
      this.inCalls = true;
      return this.take(at);
    }
    return this.take(this.text.length - held);
  }

  /** gpt-oss: its start says a call or the final channel, whose text (after its header) goes out. */
  private pushHarmony(): string {
    const lead = this.text.length - this.text.replace(/^\s+/, "").length;
    const rest = this.text.slice(lead);
    if (rest.startsWith(HARMONY_CALL)) {
      this.inCalls = true;
      return "";
    }
    if (rest.startsWith(HARMONY_FINAL)) {
      this.inFinal = true;
      this.sent = Math.max(this.sent, lead + HARMONY_FINAL.length);
      return this.take(this.text.length);
    }
    // Still a beginning of either (the constraint allows nothing else): nothing to send yet.
    return HARMONY_CALL.startsWith(rest) || HARMONY_FINAL.startsWith(rest) ? "" : this.take(this.text.length);
  }

  /** The reply ended: what was held back, when no call followed it. */
  flush(): string {
    return this.inCalls ? "" : this.take(this.text.length);
  }

  private take(end: number): string {
    const out = this.text.slice(this.sent, end);
    this.sent = Math.max(this.sent, end);
    return out;
  }
}
