/**
 * The OpenAI-compatible API: `POST /v1/chat/completions`, `POST /v1/completions`,
 * `GET /v1/models[/{model}]`, the Responses API (`/v1/responses`: responses.ts), embeddings
 * (`POST /v1/embeddings`: embeddings.ts), with OpenAI's shapes, streaming (SSE) and error bodies,
 * on the same engine, keys, limits and admission as the Thiggle API. Registered as its own
 * Fastify context: its key check, validation messages and error handler answer in OpenAI's shape
 * and touch no other route.
 *
 * Parts: request.ts (body → engine request), engine-request.ts (the planned engine request chat
 * and responses both run), choices.ts (n choices, logprobs), sse.ts (the event stream),
 * schemas.ts (request schemas), errors.ts (the error shape).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  AutoToolStream,
  autoReply,
  type CompletionResult,
  type GeneratedToken,
  ReasoningSplitter,
  replyCalls,
  type ToolCallStyle,
  type ToolMode,
} from "../../generate/index.js";
import type { ReasoningFormat } from "../../prompt/index.js";
import { apiKeyCheck } from "../auth.js";
import { type FinishReason, finishReasonOf } from "../completion-fields.js";
import { generation } from "../generation.js";
import { allowedFields } from "../schemas.js";
import { chatLogprobs, completionLogprobs, requestId, runChoices, SYSTEM_FINGERPRINT } from "./choices.js";
import { prepareChat, requestBase, tokenBudget } from "./engine-request.js";
import { mapOpenAIError, maxTokensParam, OpenAIRequestError, sendOpenAIError } from "./errors.js";
import { type ChatBody, type CompletionBody, checkModel, constraintOf, withLegacyFunctions } from "./request.js";
import { chatCompletionBody, completionBody } from "./schemas.js";
import { embeddingRoutes } from "./embeddings.js";
import { responsesRoutes } from "./responses.js";
import { replyWithStream, SseStream } from "./sse.js";

/** Unconstrained completions default to this many tokens (OpenAI's default for /v1/completions). */
const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

const route = (summary: string, body?: unknown) => ({
  schema: { summary, tags: ["OpenAI"], security: [{ bearer: [] }], ...(body ? { body } : {}) },
});

export async function openaiRoutes(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config, metrics } = state;
  const generate = generation(state);
  const modelId = engine.modelId ?? "trellis";
  const created = Math.floor(Date.now() / 1000);

  api.addHook(
    "onRequest",
    apiKeyCheck(state, (reply, status, message, headers) => sendOpenAIError(reply, status, message, headers)),
  );
  api.setErrorHandler((error, request, reply) => {
    const bodySchema = (request.routeOptions.schema?.body ?? {}) as Record<string, unknown>;
    const mapped = mapOpenAIError(error, {
      allowedFields: allowedFields(bodySchema),
      bodyLimitBytes: config.bodyLimitBytes,
      maxTokensParam: maxTokensParam.get(request) ?? "max_tokens",
    });
    if (mapped.internal) request.log.error({ err: error }, "unhandled error");
    return reply.code(mapped.status).headers(mapped.headers).type("application/json; charset=utf-8").send(mapped.body);
  });

  const model = { id: modelId, object: "model", created, owned_by: "trellis" };
  api.get("/v1/models", route("The models this server serves"), async () => ({ object: "list", data: [model] }));
  api.get("/v1/models/:model", route("One served model"), async (request) => {
    checkModel((request.params as { model: string }).model, modelId);
    return model;
  });
  // The Responses API (responses.ts), in a child context: this key check and error handler apply.
  await api.register(responsesRoutes);
  // In this context: the key check and OpenAI's error shape apply.
  await api.register(embeddingRoutes);

  const maxTokensFor = tokenBudget(engine, config);
  const baseRequest = requestBase(engine);

  // OpenAI's `user` (the caller's end user) goes to the request log.
  const logUser = (request: FastifyRequest, user: string | null | undefined): void => {
    if (user) request.log.info({ user }, "OpenAI request user");
  };

  api.post("/v1/chat/completions", route("Chat completion (OpenAI)", chatCompletionBody(config)), async (request, reply) => {
    const { body, legacy } = withLegacyFunctions(request.body as ChatBody);
    checkModel(body.model, modelId);
    logUser(request, body.user);
    if (body.safety_identifier) request.log.info({ safety_identifier: body.safety_identifier }, "OpenAI request safety_identifier");
    if (body.modalities?.includes("audio"))
      throw new OpenAIRequestError(400, 'modalities: "audio" is not supported (Trellis writes text only); send ["text"]', "modalities");
    const fieldWarnings = requestWarnings(body, engine.reasoningFormat ?? null);
    // The library's messages name max_new_tokens: the error handler names the field the client sent.
    const tokensParam = body.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
    maxTokensParam.set(request, tokensParam);
    if (body.max_tokens != null && body.max_completion_tokens != null && body.max_tokens !== body.max_completion_tokens) {
      throw new OpenAIRequestError(400, "max_tokens and max_completion_tokens differ: give one", "max_completion_tokens");
    }
    if (body.top_logprobs != null && body.logprobs !== true)
      throw new OpenAIRequestError(400, "top_logprobs needs logprobs: true", "top_logprobs");
    const { spec, tools, rendered, maxNewTokens, base, reasoning } = prepareChat(engine, config, body, tokensParam);
    const n = body.n ?? 1;
    const id = requestId("chatcmpl");
    const now = Math.floor(Date.now() / 1000);
    const head = { id, created: now, model: modelId, service_tier: "default", system_fingerprint: SYSTEM_FINGERPRINT };

    if (body.stream) {
      const auto = tools?.kind === "auto" ? Array.from({ length: n }, () => new AutoToolStream(tools.style!)) : null;
      const thinking = reasoning ? Array.from({ length: n }, () => new ReasoningSplitter(reasoning)) : null;
      let warned = false;
      const chatChunk = chunkWriter({
        id: head.id,
        object: "chat.completion.chunk",
        created: head.created,
        model: modelId,
        service_tier: "default",
        system_fingerprint: SYSTEM_FINGERPRINT,
      });
      return streamChoices(request, reply, n, body.stream_options?.include_usage === true, {
        run: (signal, client, onText) => runChoices(engine, { ...base, constraint: spec, signal, client }, n, onText),
        spec,
        maxTokens: maxNewTokens * n,
        chunk: (choices, usage) => {
          // The request's warnings go with the stream's first chunk.
          const extra = !warned && fieldWarnings.length > 0 ? { warnings: fieldWarnings } : undefined;
          warned = true;
          return chatChunk(choices, usage, extra);
        },
        first: (index) => ({
          index,
          delta:
            tools && tools.kind !== "auto"
              ? {
                  role: "assistant",
                  content: null,
                  ...(tools.kind === "named"
                    ? legacy
                      ? { function_call: { name: tools.name!, arguments: "" } }
                      : { tool_calls: [namedCallHead(tools)] }
                    : {}),
                }
              : { role: "assistant", content: "" },
          logprobs: null,
          finish_reason: null,
        }),
        delta: (index, piece, tokens) => {
          // The reasoning streams as delta.reasoning_content; the answer after it as before.
          const split = thinking ? thinking[index]!.push(piece) : { reasoning: "", content: piece };
          const thought = split.reasoning.length > 0 ? { reasoning_content: split.reasoning } : {};
          const text = split.content;
          const logprobs = base.logprobs !== undefined ? chatLogprobs(tokens) : null;
          let answer: Record<string, unknown> = {};
          if (tools?.kind === "required" || text.length === 0)
            answer = {}; // required calls are sent whole at the end
          else if (auto) {
            const content = auto[index]!.push(text);
            answer = content.length === 0 ? {} : { content };
          } else
            answer = !tools
              ? { content: text }
              : legacy
                ? { function_call: { arguments: text } }
                : { tool_calls: [{ index: 0, function: { arguments: text } }] };
          const delta = { ...thought, ...answer };
          if (Object.keys(delta).length === 0) return null;
          return { index, delta, logprobs, finish_reason: null };
        },
        last: (index, result) => {
          const held = thinking ? thinking[index]!.flush().reasoning : "";
          let delta: Record<string, unknown> = held.length > 0 ? { reasoning_content: held } : {};
          if (tools?.kind === "required")
            delta = { ...delta, tool_calls: requiredCalls(result.completion).map((c, i) => ({ index: i, ...c })) };
          if (auto) {
            const rest = auto[index]!.flush();
            const calls = autoCalls(result.completion, tools!.style!);
            delta = {
              ...delta,
              ...(rest.length > 0 ? { content: rest } : {}),
              ...(calls.length === 0
                ? {}
                : legacy
                  ? { function_call: calls[0]!.function }
                  : { tool_calls: calls.map((c, i) => ({ index: i, ...c })) }),
            };
          }
          return { index, delta, logprobs: null, finish_reason: chatFinish(result, tools, legacy) };
        },
      });
    }

    const results = await generate.run(
      request,
      reply,
      spec,
      (signal, client) => runChoices(engine, { ...base, constraint: spec, signal, client }, n),
      maxNewTokens * n,
    );
    request.tokensGenerated = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
    return {
      ...head,
      object: "chat.completion",
      choices: results.map((r, index) => ({
        index,
        message: withReasoning(legacy ? legacyMessage(chatMessage(r, tools)) : chatMessage(r, tools), r),
        logprobs: r.tokens ? chatLogprobs(r.tokens) : null,
        finish_reason: chatFinish(r, tools, legacy),
      })),
      usage: usageOf(results, rendered.tokens.length),
      ...warningsOf(results, fieldWarnings),
    };
  });

  api.post("/v1/completions", route("Text completion (OpenAI, legacy)", completionBody(config)), async (request, reply) => {
    const body = request.body as CompletionBody;
    checkModel(body.model, modelId);
    logUser(request, body.user);
    const n = body.n ?? 1;
    if (body.best_of != null && body.best_of !== n) {
      throw new OpenAIRequestError(400, `best_of must equal n (${n}): Trellis returns every choice it generates`, "best_of");
    }
    if (body.suffix) throw new OpenAIRequestError(400, "suffix is not supported", "suffix");
    const { spec } = constraintOf(body, false);
    const prompts = typeof body.prompt === "string" ? [body.prompt] : body.prompt;
    if (prompts.length * n > 16) throw new OpenAIRequestError(400, `prompts × n must be ≤ 16 (got ${prompts.length * n})`, "n");
    const promptTokens = prompts.map((p) => engine.countTokens(p));
    const fallback = spec.kind === "text" ? COMPLETIONS_DEFAULT_MAX_TOKENS : config.maxNewTokensLimit;
    const maxNewTokens = Math.min(...promptTokens.map((t) => maxTokensFor(t, body.max_tokens, fallback, "prompt", "max_tokens")));
    const logprobs = body.logprobs ?? undefined;
    const echo = body.echo === true;
    const id = requestId("cmpl");
    const head = { id, created: Math.floor(Date.now() / 1000), model: modelId, system_fingerprint: SYSTEM_FINGERPRINT };
    const run = (
      signal: AbortSignal,
      client: string | undefined,
      onText?: (index: number, delta: string, tokens: readonly GeneratedToken[]) => void,
    ) =>
      Promise.all(
        prompts.map((prompt, p) =>
          runChoices(
            engine,
            {
              ...baseRequest(body, prompt, maxNewTokens, spec.kind !== "text"),
              ...(logprobs !== undefined ? { logprobs } : {}),
              constraint: spec,
              signal,
              client,
            },
            n,
            onText ? (i, delta, tokens) => onText(p * n + i, delta, tokens) : undefined,
          ),
        ),
      ).then((all) => all.flat());
    const promptOf = (index: number): string => prompts[Math.floor(index / n)]!;
    const promptTotal = promptTokens.reduce((a, b) => a + b, 0);

    if (body.stream) {
      return streamChoices(request, reply, prompts.length * n, body.stream_options?.include_usage === true, {
        run,
        spec,
        maxTokens: maxNewTokens * prompts.length * n,
        promptTokens: promptTotal,
        chunk: chunkWriter({
          id: head.id,
          object: "text_completion",
          created: head.created,
          model: modelId,
          system_fingerprint: SYSTEM_FINGERPRINT,
        }),
        first: (index) => (echo ? { index, text: promptOf(index), logprobs: null, finish_reason: null } : null),
        delta: (index, text, tokens) => ({
          index,
          text,
          logprobs: logprobs !== undefined ? completionLogprobs(tokens, 0) : null,
          finish_reason: null,
        }),
        last: (index, result) => ({ index, text: "", logprobs: null, finish_reason: finishReasonOf(result) }),
      });
    }

    const results = await generate.run(request, reply, spec, (signal, client) => run(signal, client), maxNewTokens * prompts.length * n);
    request.tokensGenerated = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
    return {
      ...head,
      object: "text_completion",
      choices: results.map((r, index) => {
        const prefix = echo ? promptOf(index) : "";
        return {
          index,
          text: prefix + r.completion,
          logprobs: r.tokens ? completionLogprobs(r.tokens, prefix.length) : null,
          finish_reason: finishReasonOf(r),
        };
      }),
      usage: {
        prompt_tokens: promptTotal,
        completion_tokens: request.tokensGenerated,
        total_tokens: promptTotal + request.tokensGenerated,
      },
      ...warningsOf(results),
    };
  });

  interface StreamPlan {
    run(
      signal: AbortSignal,
      client: string | undefined,
      onText: (index: number, delta: string, tokens: readonly GeneratedToken[]) => void,
    ): Promise<CompletionResult[]>;
    spec: Parameters<typeof generate.run>[2];
    /** The most tokens the request may generate, all choices together (the quota's reservation). */
    maxTokens: number;
    /** Prompt tokens of the whole request, when the results do not carry them. */
    promptTokens?: number;
    /** A chunk's JSON text (chunkWriter). */
    chunk(choices: unknown[], usage?: unknown): string;
    /** The choice's opening chunk (chat: the role), or null. */
    first(index: number): unknown;
    /** A piece of text as a choice chunk, or null to send nothing now. */
    delta(index: number, text: string, tokens: readonly GeneratedToken[]): unknown;
    last(index: number, result: CompletionResult): unknown;
  }

  /**
   * Streams `n` choices as SSE. Errors before the first event are ordinary HTTP errors; after it,
   * an SSE error event. A client that goes away aborts the generation (generation.run's signal).
   */
  async function streamChoices(
    request: FastifyRequest,
    reply: FastifyReply,
    n: number,
    includeUsage: boolean,
    plan: StreamPlan,
  ): Promise<FastifyReply> {
    const sse = new SseStream();
    const opened = new Array<boolean>(n).fill(false);
    const lastAt = new Array<number>(n).fill(0);
    const arrived = performance.now() - reply.elapsedTime;
    let firstText = true;
    const open = (index: number): void => {
      if (opened[index]) return;
      opened[index] = true;
      const first = plan.first(index);
      if (first !== null) sse.sendJson(plan.chunk([first]));
    };
    const onText = (index: number, text: string, tokens: readonly GeneratedToken[]): void => {
      open(index);
      // Counted as they stream, so a stream cut short still accounts for what it cost.
      request.tokensGenerated += tokens.length;
      const now = performance.now();
      if (text.length > 0) {
        if (firstText) metrics.timeToFirstToken.observe((now - arrived) / 1000);
        else if (lastAt[index]! > 0) metrics.interTokenLatency.observe((now - lastAt[index]!) / 1000);
        firstText = false;
        lastAt[index] = now;
      }
      const choice = plan.delta(index, text, tokens);
      if (choice !== null) sse.sendJson(plan.chunk([choice]));
    };
    const work = generate.run(request, reply, plan.spec, (signal, client) => plan.run(signal, client, onText), plan.maxTokens);
    const finished = work.then(
      (results) => {
        request.tokensGenerated = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
        results.forEach((result, index) => {
          open(index);
          sse.sendJson(plan.chunk([plan.last(index, result)]));
        });
        if (includeUsage) {
          const usage =
            plan.promptTokens !== undefined
              ? {
                  prompt_tokens: plan.promptTokens,
                  completion_tokens: request.tokensGenerated,
                  total_tokens: plan.promptTokens + request.tokensGenerated,
                }
              : usageOf(results, results[0]?.promptTokens ?? 0);
          sse.sendJson(plan.chunk([], usage));
        }
        sse.end();
      },
      (error: unknown) => {
        if (!opened.some(Boolean)) throw error;
        const mapped = mapOpenAIError(error, {
          allowedFields: [],
          bodyLimitBytes: config.bodyLimitBytes,
          maxTokensParam: maxTokensParam.get(request) ?? "max_tokens",
        });
        if (mapped.internal) request.log.error({ err: error }, "error while streaming");
        sse.fail(mapped.body);
      },
    );
    return replyWithStream(reply, sse, finished);
  }
}

/** A request-field warning, in the shape of the JSON Schema engine's: the field, its pointer, why. */
interface FieldWarning {
  keyword: string;
  pointer: string;
  message: string;
}

const fieldWarning = (field: string, message: string): FieldWarning => ({ keyword: field, pointer: `/${field}`, message });

/** OpenAI's fields Trellis accepts without acting on them, each said in `warnings`. */
function requestWarnings(body: ChatBody, reasoning: ReasoningFormat | null): FieldWarning[] {
  const out: FieldWarning[] = [];
  if (body.store === true) out.push(fieldWarning("store", "store: Trellis does not store chat completions; this one was not stored"));
  if (body.metadata != null && Object.keys(body.metadata).length > 0)
    out.push(fieldWarning("metadata", "metadata: kept only with a stored completion, and Trellis stores none; it was not kept"));
  const tier = body.service_tier;
  if (tier === "flex" || tier === "scale" || tier === "priority")
    out.push(fieldWarning("service_tier", `service_tier: Trellis has one tier; served as "default", not "${tier}"`));
  const effort = body.reasoning_effort;
  if (reasoning === null && effort != null && effort !== "none")
    out.push(fieldWarning("reasoning_effort", `reasoning_effort: this model does not reason; "${effort}" changes nothing`));
  if (reasoning !== null && effort === "none" && reasoning.toggle === null)
    out.push(fieldWarning("reasoning_effort", "reasoning_effort: this model's chat template cannot turn reasoning off; it reasoned"));
  if (reasoning === null && body.reasoning_budget != null)
    out.push(fieldWarning("reasoning_budget", "reasoning_budget: this model does not reason; it changes nothing"));
  if (body.verbosity != null) out.push(fieldWarning("verbosity", `verbosity: not steered by Trellis; "${body.verbosity}" changes nothing`));
  if (body.prompt_cache_key != null)
    out.push(fieldWarning("prompt_cache_key", "prompt_cache_key: not used (Trellis does not route or cache prompts by key)"));
  return out;
}

/** A chat completion with legacy `functions`: its call as message.function_call (one at most). */
function legacyMessage(message: ReturnType<typeof chatMessage>) {
  const { tool_calls: calls, ...rest } = message as typeof message & { tool_calls?: { function: { name: string; arguments: string } }[] };
  if (!calls || calls.length === 0) return rest;
  return { ...rest, function_call: calls[0]!.function };
}

/**
 * A stream's chunks as JSON text: the fields every chunk repeats are serialised once, in OpenAI's
 * order (id, object, created, model, system_fingerprint), and only the choices each time.
 */
function chunkWriter(head: Record<string, unknown>): (choices: unknown[], usage?: unknown, extra?: Record<string, unknown>) => string {
  const prefix = `${JSON.stringify(head).slice(0, -1)},"choices":`;
  return (choices, usage, extra) =>
    `${prefix}${JSON.stringify(choices)}${usage ? `,"usage":${JSON.stringify(usage)}` : ""}${extra ? `,${JSON.stringify(extra).slice(1, -1)}` : ""}}`;
}

function namedCallHead(tools: ToolMode) {
  return { index: 0, id: requestId("call"), type: "function", function: { name: tools.name!, arguments: "" } };
}

/** The calls of a `required` answer (a JSON array of {name, arguments}), as OpenAI's tool_calls. */
function requiredCalls(text: string) {
  return replyCalls(text, { kind: "required" }).map((c) => ({
    id: requestId("call"),
    type: "function" as const,
    function: c,
  }));
}

/** The calls of a tool_choice "auto" reply, as OpenAI's tool_calls. */
function autoCalls(text: string, style: ToolCallStyle) {
  return replyCalls(text, { kind: "auto", style }).map((c) => ({
    id: requestId("call"),
    type: "function" as const,
    function: c,
  }));
}

function chatMessage(result: CompletionResult, tools: ToolMode | null) {
  if (tools?.kind === "named") {
    return {
      role: "assistant",
      content: null,
      refusal: null,
      tool_calls: [{ ...namedCallHead(tools), function: { name: tools.name!, arguments: result.completion } }].map(
        ({ index: _i, ...c }) => c,
      ),
    };
  }
  if (tools?.kind === "required") return { role: "assistant", content: null, refusal: null, tool_calls: requiredCalls(result.completion) };
  if (tools?.kind === "auto") {
    const parsed = autoReply(result.completion, tools.style!);
    if (parsed.calls.length === 0) return { role: "assistant", content: result.completion, refusal: null };
    return { role: "assistant", content: parsed.content, refusal: null, tool_calls: autoCalls(result.completion, tools.style!) };
  }
  return { role: "assistant", content: result.completion, refusal: null };
}

/** The reasoning before the answer, as DeepSeek's and vLLM's APIs return it: `reasoning_content` beside `content`. */
function withReasoning<M extends object>(message: M, result: CompletionResult): M | (M & { reasoning_content: string }) {
  return result.reasoning === undefined ? message : { ...message, reasoning_content: result.reasoning };
}

function chatFinish(result: CompletionResult, tools: ToolMode | null, legacy = false): FinishReason | "function_call" {
  // OpenAI ends a forced named call with "stop", a chosen call with "tool_calls" ("function_call" legacy).
  if (tools?.kind === "required") return "tool_calls";
  if (tools?.kind === "auto" && autoCalls(result.completion, tools.style!).length > 0) return legacy ? "function_call" : "tool_calls";
  return finishReasonOf(result);
}

function usageOf(results: readonly CompletionResult[], promptTokens: number) {
  const completion = results.reduce((sum, r) => sum + r.tokensGenerated, 0);
  // The prompt is read once however many choices share it (as OpenAI counts it).
  const prompt = promptTokens;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function warningsOf(results: readonly CompletionResult[], fields: readonly FieldWarning[] = []): { warnings?: unknown } {
  const warnings = [...fields, ...(results[0]?.warnings ?? [])];
  return warnings.length > 0 ? { warnings } : {};
}
