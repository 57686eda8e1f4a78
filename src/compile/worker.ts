/**
 * The compile worker's script (see ConstraintCache, support/worker-pool.ts): runs one CompileTask
 * per message and answers with its output serialized (v8.serialize: one buffer, moved by
 * transfer, whose length the cache uses to account the deserialized grammar's bytes), or with a
 * refusal, or with a bug's text.
 */
import { parentPort, workerData } from "node:worker_threads";
import { getHeapStatistics, serialize } from "node:v8";
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { TokenTrie, warmUpMatchers, type VocabularyBytes } from "../constraint/index.js";
import { preloadTypeScriptCompiler } from "../schema/index.js";
import { refusalOf, runCompileTask, type CompileTask, type ProbeOptions } from "./task.js";
import { fieldOf } from "./spec.js";

/** What the pool starts a worker with: the vocabulary (for the probe's trie) and the probe. */
export interface CompileWorkerData {
  readonly vocabulary: VocabularyBytes | null;
  readonly probe: ProbeOptions | null;
}

/** How the worker answers an error: a refusal (the request's fault) or a bug (a 500). */
export type CompileFailure = { readonly refusal: ReturnType<typeof refusalOf> & object } | { readonly bug: string };

/**
 * The worker's thread runs at a lower scheduling priority than the serving thread and
 * llama.cpp's: on a machine whose cores the model's threads fill, a busy compile (a hostile one,
 * most often) would otherwise take a core from a decode, whose spin-waiting threads then stall
 * every request. Linux only (a thread is a task with its own nice value); elsewhere a no-op.
 * Nice 10 (weight 110 against 1024), not 19 (15): at 19, beside two busy processes on 2 cores,
 * a schema's 1.4 s compile got about 1% of a core and was a 503 past the 30 s valve; at 10 it is
 * answered in 6 s (bench:load --hostile on 2 cores, one run each: legitimate p99 139.5 ms at 19,
 * 129.9 ms at 10).
 */
const COMPILE_NICE = 10;

function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, COMPILE_NICE);
  } catch {
    // not Linux, or not permitted: the compile runs at the process's priority
  }
}

const port = parentPort;
if (port) {
  lowerThreadPriority();
  const data = workerData as CompileWorkerData | null;
  // Built once per worker (~0.1 s at 152k tokens), before it reports ready.
  const trie = data?.vocabulary ? TokenTrie.build(data.vocabulary) : undefined;
  if (trie) warmUpMatchers();
  // Typed completion's first conversion would otherwise load the compiler and parse its lib
  // files (0.6–1.8 s on 2 cores) inside that request's time limit, which kills the worker before
  // it ever warms up; paid here, it counts against no task (the pool waits for `ready`).
  preloadTypeScriptCompiler();
  const probe = data?.probe ?? undefined;
  port.on("message", (message: { id: number; payload: CompileTask }) => {
    let reply: { id: number; value?: Uint8Array; error?: CompileFailure; heapUsed: number };
    let transfer: ArrayBuffer[] = [];
    try {
      const value = serialize(runCompileTask(message.payload, trie, probe));
      // Its own buffer unless Node pooled it: then it is copied, not moved.
      if (value.byteOffset === 0 && value.byteLength === value.buffer.byteLength) transfer = [value.buffer as ArrayBuffer];
      reply = { id: message.id, value, heapUsed: 0 };
    } catch (error) {
      const refusal = refusalOf(error, fieldOf(message.payload.kind));
      reply = { id: message.id, error: refusal ? { refusal } : { bug: (error as Error)?.stack ?? String(error) }, heapUsed: 0 };
    }
    reply.heapUsed = getHeapStatistics().used_heap_size;
    port.postMessage(reply, transfer);
  });
  port.postMessage({ ready: true });
}
