/**
 * Admission of one generation: the model must be ready, the prompt must fit the context, the
 * key's token quota must cover the most the request may generate (reserved until the request's
 * usage is charged: server/quota.ts), the request's constraint is compiled before it takes a slot
 * (a slow compile waits in the compile pool's per-key queue, never in a generation slot), then the
 * work runs under the concurrency gate with an AbortSignal that fires when the client goes away or
 * the deadline passes (a 503).
 * Every API's routes share it (the Thiggle API's and the OpenAI API's).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ConstraintSpec } from "../generate/index.js";
import { HttpError } from "./errors.js";
import type { TrellisState } from "./state.js";

class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`request deadline of ${ms} ms exceeded; the generation was cancelled`);
    this.name = "DeadlineExceeded";
  }
}

class ClientGone extends Error {
  constructor() {
    super("client closed the connection");
    this.name = "ClientGone";
  }
}

export interface Generation {
  /**
   * Runs `work` under the gate after preparing `spec` (null: no constraint); `work` gets the
   * request's abort signal and its client (the API key's bucket). `maxTokens` is the most tokens
   * the work may generate, all choices together: reserved against the key's token quota (402
   * when the quota cannot cover it) until the request's usage is charged; undefined reserves
   * nothing and refuses only an exhausted key. Routes set `request.tokensGenerated` (the charge)
   * before they answer.
   */
  run<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    spec: ConstraintSpec | null,
    work: (signal: AbortSignal, client: string | undefined) => Promise<T>,
    maxTokens?: number,
  ): Promise<T>;
  /** A 400 unless the prompt's tokens (and `maxNewTokens` more) fit the model's context. */
  checkContext(prompt: string, maxNewTokens: number): void;
}

export function generation(state: TrellisState): Generation {
  const { engine, config, gate } = state;
  return {
    async run(request, reply, spec, work, maxTokens) {
      if (!engine.ready) throw new HttpError(503, "model is still loading; retry shortly", { "retry-after": "5" });
      // Before the compile and the queue: a request the quota cannot cover costs nothing.
      const usage = request.keyUsage;
      usage?.admit(maxTokens);
      const controller = new AbortController();
      const deadline = setTimeout(() => controller.abort(new DeadlineExceeded(config.requestTimeoutMs)), config.requestTimeoutMs);
      const onClose = (): void => {
        if (!reply.raw.writableFinished) controller.abort(new ClientGone());
      };
      reply.raw.once("close", onClose);
      const client = request.apiKey?.bucket;
      let release: (() => void) | undefined;
      try {
        if (spec !== null) await engine.prepare(spec, { client, signal: controller.signal });
        release = await gate.acquire(controller.signal);
        return await work(controller.signal, client);
      } catch (error) {
        const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
        if (reason instanceof DeadlineExceeded) throw new HttpError(503, reason.message, { "retry-after": "1" });
        if (reason instanceof ClientGone) throw new HttpError(499 as number, reason.message);
        throw error;
      } finally {
        clearTimeout(deadline);
        reply.raw.removeListener("close", onClose);
        release?.();
        usage?.generationSettled();
      }
    },

    checkContext(prompt, maxNewTokens) {
      const promptTokens = engine.countTokens(prompt);
      const context = engine.contextLength;
      if (promptTokens >= context) {
        throw new HttpError(400, `prompt is ${promptTokens} tokens, but the model context is ${context} tokens`);
      }
      if (promptTokens + maxNewTokens > context) {
        throw new HttpError(
          400,
          `max_new_tokens must be ≤ ${context - promptTokens}: the prompt takes ${promptTokens} of the model's ${context}-token context`,
        );
      }
    },
  };
}
