/**
 * A response's output items as they are built, and, when streaming, the Responses API's typed
 * events for each step in OpenAI's order, numbered by `sequence_number`:
 *
 *   response.created, response.in_progress
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

export type OutputItem = MessageItem | FunctionCallItem;

/** A response id's random part: its output items' ids carry it, so an item_reference finds its response. */
export function newResponseKey(): string {
  return randomBytes(12).toString("hex");
}

export const responseIdOf = (key: string): string => `resp_${key}`;

/**
 * The response id an item id belongs to, or null: output items are `msg_<key>_<n>` and
 * `fc_<key>_<n>`, input items (as input_items lists them) `msg|fc|fco_<key>_i<n>`.
 */
export function responseIdOfItem(itemId: string): string | null {
  const match = /^(?:msg|fc|fco)_([0-9a-f]{24})_i?\d{1,6}$/.exec(itemId);
  return match ? responseIdOf(match[1]!) : null;
}

export class OutputBuilder {
  readonly items: OutputItem[] = [];
  private sequence = 0;
  private message: MessageItem | null = null;
  private call: FunctionCallItem | null = null;

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
