/**
 * The compile worker's script (see ConstraintCache, support/worker-pool.ts): runs one CompileTask
 * per message and answers with its output serialized (v8.serialize: one buffer, moved by
 * transfer, whose length the cache uses to account the deserialized grammar's bytes), or with a
 * refusal, or with a bug's text.
 */
import { parentPort } from "node:worker_threads";
import { getHeapStatistics, serialize } from "node:v8";
import { refusalOf, runCompileTask, type CompileTask } from "./compile-task.js";

/** How the worker answers an error: a refusal (the request's fault) or a bug (a 500). */
export type CompileFailure = { readonly refusal: ReturnType<typeof refusalOf> & object } | { readonly bug: string };


const port = parentPort;
if (port) {
  port.on("message", (message: { id: number; payload: CompileTask }) => {
    let reply: { id: number; value?: Uint8Array; error?: CompileFailure; heapUsed: number };
    let transfer: ArrayBuffer[] = [];
    try {
      const value = serialize(runCompileTask(message.payload));
      // Its own buffer unless Node pooled it: then it is copied, not moved.
      if (value.byteOffset === 0 && value.byteLength === value.buffer.byteLength) transfer = [value.buffer as ArrayBuffer];
      reply = { id: message.id, value, heapUsed: 0 };
    } catch (error) {
      const refusal = refusalOf(error);
      reply = { id: message.id, error: refusal ? { refusal } : { bug: (error as Error)?.stack ?? String(error) }, heapUsed: 0 };
    }
    reply.heapUsed = getHeapStatistics().used_heap_size;
    port.postMessage(reply, transfer);
  });
  port.postMessage({ ready: true });
}
