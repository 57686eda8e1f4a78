/**
 * Server-Sent Events as OpenAI sends them: `data: <json>\n\n` per chunk, `data: [DONE]\n\n` last
 * (Chat Completions), or `event: <type>\ndata: <json>\n\n` per typed event (the Responses API).
 * The stream is handed to Fastify only once its first chunk exists, so an error before any output
 * (a 400, a 422 of planning) is still an ordinary HTTP error; after that, an error is an SSE error
 * event and the stream closes.
 */
import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";

export class SseStream {
  readonly readable = new Readable({ read() {} });
  private startedResolve!: () => void;
  /** Resolves when the first event is written. */
  readonly started = new Promise<void>((resolve) => {
    this.startedResolve = resolve;
  });
  private ended = false;

  /** Writes one `data:` event with the JSON of `value`. */
  send(value: unknown): void {
    this.sendJson(JSON.stringify(value));
  }

  /** Writes one `data:` event whose JSON text is given. */
  sendJson(json: string): void {
    this.write(`data: ${json}\n\n`);
  }

  /** Writes one named event, `event: <name>` and its data, as the Responses API sends each. */
  sendEvent(name: string, json: string): void {
    this.write(`event: ${name}\ndata: ${json}\n\n`);
  }

  /** An error after the headers went out: OpenAI's error body as an event, then the end. */
  fail(body: unknown): void {
    this.write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
    this.end(false);
  }

  /** `data: [DONE]` (when the generation finished) and the end of the stream. */
  end(done = true): void {
    if (this.ended) return;
    if (done) this.write("data: [DONE]\n\n");
    this.ended = true;
    this.readable.push(null);
  }

  private write(text: string): void {
    if (this.ended) return;
    this.readable.push(text);
    this.startedResolve();
  }
}

/**
 * Answers with `sse` once its first event exists, or `finished` rejects first: then that error is
 * an ordinary HTTP error (a 400, a 422 of planning). Failures after the first event are the
 * stream's own (an error event).
 */
export async function replyWithStream(reply: FastifyReply, sse: SseStream, finished: Promise<void>): Promise<FastifyReply> {
  await Promise.race([sse.started, finished]);
  finished.catch(() => {}); // failures after the first event became an SSE error event
  return reply
    .header("content-type", "text/event-stream; charset=utf-8")
    .header("cache-control", "no-cache")
    .header("x-accel-buffering", "no")
    .send(sse.readable);
}
