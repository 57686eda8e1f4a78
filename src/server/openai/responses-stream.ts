/**
 * A response's output items as they are built, and, when streaming, the Responses API's typed
 * events for each step in OpenAI's order, numbered by `sequence_number`:
 *
 *   response.created, response.in_progress
 *   reasoning:     output_item.added, content_part.added, reasoning_text.delta…, reasoning_text.done,
 *                  content_part.done, output_item.done        (a reasoning model's section, first)
 *   message:       output_item.added, content_part.added, output_text.delta…, output_text.done,
 *                  content_part.done, output_item.done
 *   function_call: output_item.added, function_call_arguments.delta…, function_call_arguments.done,
 *                  output_item.done
 *   response.completed | response.incomplete      (or error, response.failed after a failure)
 *
 * One builder serves both answers: a JSON answer builds the same items without events, so a
 * stream's final response is exactly the one a JSON answer would have been.
 */
import { randomBytes } from "node:crypto";
import type { GeneratedToken } from "../../generate/index.js";
import type { SseStream } from "./sse.js";

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface MessageItem {
  id: string;
  type: "message";
  status: "in_progress" | "completed" | "incomplete";
  role: "assistant";
  content: OutputText[];
}

export interface FunctionCallItem {
  id: string;
  type: "function_call";
  status: "in_progress" | "completed" | "incomplete";
  arguments: string;
  call_id: string;
  name: string;
}

export interface ReasoningText {
  type: "reasoning_text";
  text: string;
}

/**
 * A reasoning model's section (markers left out) as OpenAI's ResponseReasoningItem: its text in
 * `content`; no summary (Trellis writes none) and no encrypted_content (nothing is hidden).
 */
export interface ReasoningItem {
  id: string;
  type: "reasoning";
  status: "in_progress" | "completed" | "incomplete";
  summary: never[];
  content: ReasoningText[];
}

export type OutputItem = ReasoningItem | MessageItem | FunctionCallItem;

/** A response id's random part: its output items' ids carry it, so an item_reference finds its response. */
export function newResponseKey(): string {
  return randomBytes(12).toString("hex");
}

export const responseIdOf = (key: string): string => `resp_${key}`;

/**
 * The response id an item id belongs to, or null: output items are `rs_<key>_<n>`, `msg_<key>_<n>`
 * and `fc_<key>_<n>`, input items (as input_items lists them) `rs|msg|fc|fco_<key>_i<n>`.
 */
export function responseIdOfItem(itemId: string): string | null {
  const match = /^(?:rs|msg|fc|fco)_([0-9a-f]{24})_i?\d{1,6}$/.exec(itemId);
  return match ? responseIdOf(match[1]!) : null;
}

export class OutputBuilder {
  readonly items: OutputItem[] = [];
  private sequence = 0;
  private message: MessageItem | null = null;
  private call: FunctionCallItem | null = null;
  private thought: ReasoningItem | null = null;

  /** `sse`: the stream the events go to; null builds the items only. */
  constructor(
    private readonly key: string,
    private readonly sse: SseStream | null,
  ) {}

  /** Writes one event (its type, its fields, its sequence number). */
  event(type: string, fields: Record<string, unknown>): void {
    if (!this.sse) return;
    const json = JSON.stringify({ type, ...fields, sequence_number: this.sequence++ });
    this.sse.sendEvent(type, json);
  }

  private itemId(prefix: string): string {
    return `${prefix}_${this.key}_${this.items.length}`;
  }

  private get index(): number {
    return this.items.length - 1;
  }

  /** Text of the reasoning item, opening it first (it comes before the answer's items). */
  reasoning(delta: string): void {
    if (!this.thought) {
      this.thought = { id: this.itemId("rs"), type: "reasoning", status: "in_progress", summary: [], content: [] };
      this.items.push(this.thought);
      this.event("response.output_item.added", { output_index: this.index, item: { ...this.thought, content: [] } });
      const part: ReasoningText = { type: "reasoning_text", text: "" };
      this.thought.content.push(part);
      this.event("response.content_part.added", { item_id: this.thought.id, output_index: this.index, content_index: 0, part });
    }
    if (delta.length === 0) return;
    this.thought.content[0]!.text += delta;
    const at = { item_id: this.thought.id, output_index: this.items.indexOf(this.thought), content_index: 0 };
    this.event("response.reasoning_text.delta", { ...at, delta });
  }

  /** Ends the open reasoning item (complete, or cut short by the token limit before the answer). */
  endReasoning(status: "completed" | "incomplete"): void {
    const thought = this.thought;
    if (!thought) return;
    this.thought = null;
    const part = thought.content[0]!;
    const at = { item_id: thought.id, output_index: this.items.indexOf(thought), content_index: 0 };
    this.event("response.reasoning_text.done", { ...at, text: part.text });
    this.event("response.content_part.done", { ...at, part });
    thought.status = status;
    this.event("response.output_item.done", { output_index: at.output_index, item: thought });
  }

  /** Text of the assistant's message, opening it first. */
  text(delta: string): void {
    if (!this.message) {
      this.message = { id: this.itemId("msg"), type: "message", status: "in_progress", role: "assistant", content: [] };
      this.items.push(this.message);
      this.event("response.output_item.added", { output_index: this.index, item: { ...this.message, content: [] } });
      const part: OutputText = { type: "output_text", text: "", annotations: [], logprobs: [] };
      this.message.content.push(part);
      this.event("response.content_part.added", { item_id: this.message.id, output_index: this.index, content_index: 0, part });
    }
    if (delta.length === 0) return;
    this.message.content[0]!.text += delta;
    const at = { item_id: this.message.id, output_index: this.items.indexOf(this.message), content_index: 0 };
    this.event("response.output_text.delta", { ...at, delta, logprobs: [] });
  }

  /** Ends the open message (complete, or cut short by the token limit). */
  endText(status: "completed" | "incomplete"): void {
    const message = this.message;
    if (!message) return;
    this.message = null;
    const part = message.content[0]!;
    const at = { item_id: message.id, output_index: this.items.indexOf(message), content_index: 0 };
    this.event("response.output_text.done", { ...at, text: part.text, logprobs: [] });
    this.event("response.content_part.done", { ...at, part });
    message.status = status;
    this.event("response.output_item.done", { output_index: at.output_index, item: message });
  }

  /** Opens a function call whose arguments follow. */
  startCall(name: string): void {
    this.call = {
      id: this.itemId("fc"),
      type: "function_call",
      status: "in_progress",
      arguments: "",
      call_id: `call_${randomBytes(12).toString("hex")}`,
      name,
    };
    this.items.push(this.call);
    this.event("response.output_item.added", { output_index: this.index, item: this.call });
  }

  callArguments(delta: string): void {
    const call = this.call!;
    if (delta.length === 0) return;
    call.arguments += delta;
    this.event("response.function_call_arguments.delta", { item_id: call.id, output_index: this.items.indexOf(call), delta });
  }

  endCall(): void {
    const call = this.call!;
    this.call = null;
    const outputIndex = this.items.indexOf(call);
    this.event("response.function_call_arguments.done", {
      item_id: call.id,
      output_index: outputIndex,
      name: call.name,
      arguments: call.arguments,
    });
    call.status = "completed";
    this.event("response.output_item.done", { output_index: outputIndex, item: call });
  }

  /** A whole call at once (a `required` or `auto` reply's calls, known when the reply is). */
  wholeCall(name: string, args: string): void {
    this.startCall(name);
    this.callArguments(args);
    this.endCall();
  }

  get hasCallOpen(): boolean {
    return this.call !== null;
  }
}

/**
 * The generated tokens that were reasoning (usage.output_tokens_details.reasoning_tokens): every
 * token up to and including the one that completes the section's closing marker, counted as the
 * tokens are generated (their bytes, so a piece of text carrying several tokens counts each).
 * `closed` says whether the section ended before the answer.
 */
export class ReasoningTokenCount {
  count = 0;
  closed = false;
  private readonly close: Uint8Array;
  /** The last bytes seen, fewer than the marker's: a marker split across tokens is still found. */
  private tail = new Uint8Array(0);

  constructor(close: string) {
    this.close = new TextEncoder().encode(close);
  }

  push(tokens: readonly GeneratedToken[]): void {
    for (const token of tokens) {
      if (this.closed) return;
      this.count++;
      const seen = new Uint8Array(this.tail.length + token.bytes.length);
      seen.set(this.tail);
      seen.set(token.bytes, this.tail.length);
      if (Buffer.from(seen.buffer, seen.byteOffset, seen.length).indexOf(this.close) >= 0) this.closed = true;
      else this.tail = seen.slice(Math.max(0, seen.length - (this.close.length - 1)));
    }
  }
}
