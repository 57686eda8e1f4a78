/**
 * `POST /v1/chat/completions`: a conversation rendered by the model's chat template, answered as
 * text, a structured output, tool calls (named, required, or the model's own format under
 * "auto"), after the model's reasoning section where it has one; n choices, logprobs, streaming.
 */
import type { FastifyInstance } from "fastify";
import { AutoToolStream, autoReply, type CompletionResult, ReasoningSplitter, replyCalls, type ToolMode } from "../../generate/index.js";
import type { ReasoningFormat } from "../../prompt/index.js";
import type { FinishReason } from "../completion-fields.js";
import { finishReasonOf } from "../completion-fields.js";
import { generation } from "../generation.js";
import { type FieldWarning, chunkWriter, logUser, route, streamChoices, usageOf, warningsOf } from "./answers.js";
import { chatLogprobs, requestId, runChoices, SYSTEM_FINGERPRINT } from "./choices.js";
import { prepareChat } from "./engine-request.js";
import { maxTokensParam, OpenAIRequestError } from "./errors.js";
import { type ChatBody, checkModel, withLegacyFunctions, writesJson } from "./request.js";
import { chatCompletionBody } from "./schemas.js";

export async function chatRoute(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config } = state;
  const generate = generation(state);
  const modelId = engine.modelId ?? "trellis";

  api.post(
    "/v1/chat/completions",
    route("Chat completion (OpenAI)", chatCompletionBody(config)),
    async function chatCompletion(request, reply) {
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
      const { spec, tools, rendered, maxNewTokens, base, reasoning, unreadReasoning } = prepareChat(engine, config, body, tokensParam);
      if (unreadReasoning.length > 0) fieldWarnings.push(unreadReasoningWarning(body, unreadReasoning));
      if (body.property_order != null && !writesJson(spec))
        fieldWarnings.push(fieldWarning("property_order", "property_order: the output is not JSON; it changes nothing"));
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
        return streamChoices(state, generate, request, reply, n, body.stream_options?.include_usage === true, {
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
            // Held back: reasoning cut short, or an answer that ended as a beginning of a skippable section's marker.
            const held = thinking ? thinking[index]!.flush() : { reasoning: "", content: "" };
            let delta: Record<string, unknown> = held.reasoning.length > 0 ? { reasoning_content: held.reasoning } : {};
            if (tools?.kind === "required")
              delta = { ...delta, tool_calls: requiredCalls(result.completion).map((c, i) => ({ index: i, ...c })) };
            else if (!auto && held.content.length > 0)
              delta = {
                ...delta,
                ...(!tools
                  ? { content: held.content }
                  : legacy
                    ? { function_call: { arguments: held.content } }
                    : { tool_calls: [{ index: 0, function: { arguments: held.content } }] }),
              };
            if (auto) {
              const rest = auto[index]!.push(held.content) + auto[index]!.flush();
              const calls = autoCalls(result.completion, tools!);
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
    },
  );
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
  if (reasoning !== null && effort === "none" && reasoning.toggle === null && reasoning.adaptive === undefined)
    out.push(fieldWarning("reasoning_effort", "reasoning_effort: this model's chat template cannot turn reasoning off; it reasoned"));
  if (reasoning === null && body.reasoning_budget != null)
    out.push(fieldWarning("reasoning_budget", "reasoning_budget: this model does not reason; it changes nothing"));
  if (body.verbosity != null) out.push(fieldWarning("verbosity", `verbosity: not steered by Trellis; "${body.verbosity}" changes nothing`));
  if (body.prompt_cache_key != null)
    out.push(
      fieldWarning("prompt_cache_key", "prompt_cache_key: not used (Trellis caches every prompt prefix on its own, whatever the key)"),
    );
  return out;
}

/**
 * Earlier turns' reasoning that this model's chat template never reads: accepted (a client echoing
 * every turn back need not know the template), said once, naming the first message that carried it.
 */
function unreadReasoningWarning(body: ChatBody, indices: readonly number[]): FieldWarning {
  const first = indices[0]!;
  const field = `messages[${first}].${body.messages[first]!.reasoning_content != null ? "reasoning_content" : "reasoning"}`;
  const more = indices.length > 1 ? ` (and ${indices.length - 1} more message${indices.length > 2 ? "s" : ""})` : "";
  return fieldWarning(field, `${field}${more}: this model's chat template never reads earlier reasoning, so it is not in the prompt`);
}

/** A chat completion with legacy `functions`: its call as message.function_call (one at most). */
function legacyMessage(message: ReturnType<typeof chatMessage>) {
  const { tool_calls: calls, ...rest } = message as typeof message & { tool_calls?: { function: { name: string; arguments: string } }[] };
  if (!calls || calls.length === 0) return rest;
  return { ...rest, function_call: calls[0]!.function };
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
function autoCalls(text: string, tools: ToolMode) {
  return replyCalls(text, tools).map((c) => ({
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
    const parsed = autoReply(result.completion, tools.style!, tools.tools);
    // Text: what the format says is text (gpt-oss's without its final channel's header).
    if (parsed.calls.length === 0) return { role: "assistant", content: parsed.content ?? result.completion, refusal: null };
    return { role: "assistant", content: parsed.content, refusal: null, tool_calls: autoCalls(result.completion, tools) };
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
  if (tools?.kind === "auto" && autoCalls(result.completion, tools).length > 0) return legacy ? "function_call" : "tool_calls";
  return finishReasonOf(result);
}
