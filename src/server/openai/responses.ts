/**
 * OpenAI's Responses API on the chat route's engine: `POST /v1/responses` (JSON, or typed
 * Server-Sent Events with `stream`), `GET` and `DELETE /v1/responses/{id}`. A request is turned
 * into the chat body that asks the same (responses-request.ts) and planned by the chat route's own
 * prepareChat, so a `json_schema` output or a function call is never cut short: it fits
 * `max_output_tokens` or is refused before anything is generated. Admission, the quota's
 * reservation and the usage charge are generation.ts's, as on every route. A reasoning model's
 * section comes first as a reasoning item (its text in `content`, its tokens in
 * `output_tokens_details.reasoning_tokens`); sent back, it is the next turn's earlier reasoning.
 *
 * `store` (default true) keeps the response and its conversation in the key store
 * (store/responses.ts), owned by the API key, for GET, DELETE and `previous_response_id`; an
 * output item's id names its response, so an `item_reference` costs one read.
 *
 * Registered by the OpenAI plugin in a child context: its key check and error handler apply.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Histogram } from "prom-client";
import {
  AutoToolStream,
  type CompletionResult,
  type GeneratedToken,
  type ReasoningSection,
  ReasoningSplitter,
  replyCalls,
  type ToolMode,
} from "../../generate/index.js";
import { ResponseStoreFullError, type ResponseStoreLimits, sha256Hex, type StoredResponse } from "../../store/index.js";
import { generation } from "../generation.js";
import { runChoices } from "./choices.js";
import { type PreparedChat, prepareChat } from "./engine-request.js";
import { mapOpenAIError, maxTokensParam, OpenAIRequestError } from "./errors.js";
import { checkModel, writesJson } from "./request.js";
import {
  chatBodyOf,
  type ConversationItem,
  type FieldWarning,
  inputItemsOf,
  type PlacedItem,
  refuseUnserved,
  renamedError,
  type ResponsesBody,
  type ResponsesFunctionTool,
  responsesWarnings,
} from "./responses-request.js";
import { responsesBody } from "./responses-schema.js";
import { inputItemId, inputItemsPage, inputItemsQuery } from "./responses-input-items.js";
import { newResponseKey, OutputBuilder, type OutputItem, ReasoningTokenCount, responseIdOf, responseIdOfItem } from "./responses-stream.js";
import { replyWithStream, SseStream } from "./sse.js";

const DAY_MS = 86_400_000;
/** How often expired stored responses are deleted (each key's also go when it stores another). */
const PURGE_INTERVAL_MS = 3_600_000;

const route = (summary: string, body?: unknown) => ({
  schema: { summary, tags: ["OpenAI"], security: [{ bearer: [] }], ...(body ? { body } : {}) },
});

/** The stored responses' owner: the store key's id, or a fixed key's hash (its place in the list may change). */
function ownerOf(request: FastifyRequest): string {
  const key = request.apiKey!;
  if (key.storeId !== null) return `key:${key.storeId}`;
  const secret = /^\s*bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "")?.[1] ?? "";
  return `env:${sha256Hex(secret)}`;
}

/** An output item as the next response's input (its conversation). */
function asInput(item: OutputItem): ConversationItem {
  if (item.type === "reasoning") return { type: "reasoning", text: item.content.map((c) => c.text).join("") };
  if (item.type === "function_call") return { type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments };
  return { type: "message", role: "assistant", content: item.content.map((c) => c.text).join("") };
}

function notFound(id: string): OpenAIRequestError {
  return new OpenAIRequestError(404, `Response with id '${id}' not found.`, "response_id", "not_found");
}

export async function responsesRoutes(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config, store, metrics } = state;
  const generate = generation(state);
  const modelId = engine.modelId ?? "trellis";
  const limits: ResponseStoreLimits = {
    ttlMs: config.responsesTtlDays * DAY_MS,
    maxPerOwner: config.responsesMaxPerKey,
    maxBytesPerOwner: config.responsesMaxMbPerKey * 1024 * 1024,
  };
  const purge = setInterval(() => {
    store.responses.purgeExpired().catch((error: unknown) => api.log.warn({ err: error }, "cannot delete expired responses"));
  }, PURGE_INTERVAL_MS);
  purge.unref();
  api.addHook("onClose", async () => clearInterval(purge));

  /** An item of this owner's stored responses, by the id its output item carries. */
  const resolveItem = async (owner: string, itemId: string): Promise<ConversationItem | null> => {
    const responseId = responseIdOfItem(itemId);
    const stored = responseId === null ? null : await store.responses.get(owner, responseId);
    if (!stored || responseId === null) return null;
    const item = (stored.response.output as OutputItem[]).find((o) => o.id === itemId);
    if (item) return asInput(item);
    // An input item, by the id input_items listed it with.
    const input = stored.input as ConversationItem[];
    const key = responseId.slice("resp_".length);
    return input.find((c, i) => inputItemId(c, key, i) === itemId) ?? null;
  };

  /** The conversation and output of the stored response `id` names, before the new input (a 400 naming previous_response_id when none). */
  const previousConversation = async (owner: string, id: string): Promise<PlacedItem[]> => {
    const stored = await store.responses.get(owner, id);
    if (!stored) {
      throw new OpenAIRequestError(
        400,
        `previous_response_id: no stored response '${id}' for this API key (it was not stored, was deleted, or expired)`,
        "previous_response_id",
        "previous_response_not_found",
      );
    }
    const items = [...(stored.input as ConversationItem[]), ...(stored.response.output as OutputItem[]).map(asInput)];
    return items.map((item) => ({ item, origin: "previous_response_id" }));
  };

  api.post(
    "/v1/responses",
    route("Create a response (OpenAI Responses API)", responsesBody(config)),
    async function createResponse(request, reply) {
      const body = request.body as ResponsesBody;
      checkModel(body.model, modelId);
      maxTokensParam.set(request, "max_output_tokens");
      refuseUnserved(body);
      if (body.user) request.log.info({ user: body.user }, "OpenAI request user");
      if (body.safety_identifier) request.log.info({ safety_identifier: body.safety_identifier }, "OpenAI request safety_identifier");
      const fieldWarnings = responsesWarnings(body, (engine.reasoningFormat ?? null) !== null);
      const owner = ownerOf(request);
      const storing = body.store !== false;

      const previous = body.previous_response_id != null ? await previousConversation(owner, body.previous_response_id) : [];
      const conversation = [...previous, ...(await inputItemsOf(body.input, (id) => resolveItem(owner, id)))];
      const { chat, origins, reasoningOrigins, warnings } = chatBodyOf(body, conversation);
      let prepared: PreparedChat;
      try {
        prepared = prepareChat(engine, config, chat, "max_output_tokens");
      } catch (error) {
        throw renamedError(error, origins, reasoningOrigins);
      }
      fieldWarnings.push(...warnings, ...unreadReasoningWarnings(prepared.unreadReasoning, reasoningOrigins));
      const { spec, tools, rendered, maxNewTokens, base } = prepared;
      if (body.property_order != null && !writesJson(spec))
        fieldWarnings.push({
          keyword: "property_order",
          pointer: "/property_order",
          message: "property_order: the output is not JSON; it changes nothing",
        });
      const input = conversation.map((c) => c.item);
      // Before the generation: a key whose store is full is refused before it spends anything.
      if (storing) {
        try {
          await store.responses.checkRoom(owner, 0, limits);
        } catch (error) {
          if (error instanceof ResponseStoreFullError) throw new OpenAIRequestError(400, error.message, "store", "responses_store_full");
          throw error;
        }
      }

      const key = newResponseKey();
      const id = responseIdOf(key);
      const createdAt = Math.floor(Date.now() / 1000);
      const echo = requestEcho(body, storing);
      const head = { id, object: "response", created_at: createdAt };
      const snapshot = (status: string, output: OutputItem[], extra: Record<string, unknown> = {}) => ({
        ...head,
        status,
        background: false,
        error: null,
        incomplete_details: null,
        ...echo.before,
        model: modelId,
        output,
        ...echo.after,
        usage: null,
        ...extra,
        ...(fieldWarnings.length > 0 ? { warnings: fieldWarnings } : {}),
      });
      // The reasoning's tokens are counted as they are generated, streamed or not.
      const thought = prepared.reasoning && !prepared.reasoning.hidden ? new ReasoningTokenCount(prepared.reasoning.close) : null;
      const reasoningStatus = (result: CompletionResult) =>
        thought && !thought.closed && result.stopReason === "token_limit" ? "incomplete" : "completed";

      /** The final response from the built items; stored when asked (a full store: a warning, not stored). */
      const finish = async (builder: OutputBuilder, result: CompletionResult): Promise<Record<string, unknown>> => {
        const incomplete = result.stopReason === "token_limit";
        const warnings: FieldWarning[] = [...fieldWarnings, ...((result.warnings ?? []) as FieldWarning[])];
        let stored = storing;
        const response = () => ({
          ...snapshot(incomplete ? "incomplete" : "completed", builder.items, {
            incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
            usage: {
              input_tokens: rendered.tokens.length,
              input_tokens_details: { cached_tokens: result.cachedTokens ?? 0 },
              output_tokens: result.tokensGenerated,
              output_tokens_details: { reasoning_tokens: result.reasoningTokens ?? thought?.count ?? 0 },
              total_tokens: rendered.tokens.length + result.tokensGenerated,
            },
            ...(incomplete ? {} : { completed_at: Math.floor(Date.now() / 1000) }),
            store: stored,
          }),
          ...(warnings.length > 0 ? { warnings } : {}),
        });
        if (storing) {
          try {
            const record: StoredResponse = { response: response(), input };
            await store.responses.save(owner, id, record, limits);
          } catch (error) {
            if (!(error instanceof ResponseStoreFullError)) request.log.error({ err: error }, "cannot store a response");
            stored = false;
            const why = error instanceof ResponseStoreFullError ? error.message : "the key store could not write it";
            warnings.push({ keyword: "store", pointer: "/store", message: `store: this response was not stored (${why})` });
          }
        }
        return response();
      };

      const work = (onText?: TextHook) => {
        const hook: TextHook | undefined =
          thought || onText
            ? (index, delta, tokens) => {
                thought?.push(tokens);
                onText?.(index, delta, tokens);
              }
            : undefined;
        return generate.run(
          request,
          reply,
          spec,
          (signal, client) => runChoices(engine, { ...base, constraint: spec, signal, client }, 1, hook),
          maxNewTokens,
        );
      };

      if (!body.stream) {
        const [result] = await work();
        request.tokensGenerated = result!.tokensGenerated;
        const builder = new OutputBuilder(key, null);
        buildOutput(builder, result!, tools, false, reasoningStatus(result!));
        return finish(builder, result!);
      }
      return streamResponse({
        request,
        reply,
        key,
        tools,
        reasoning: prepared.reasoning,
        timeToFirstToken: metrics.timeToFirstToken,
        bodyLimitBytes: config.bodyLimitBytes,
        snapshot,
        work,
        finish,
        reasoningStatus,
      });
    },
  );

  api.get("/v1/responses/:id", route("A stored response (OpenAI Responses API)"), async function getResponse(request) {
    const { id } = request.params as { id: string };
    const query = request.query as Record<string, unknown>;
    if (query.stream === "true")
      throw new OpenAIRequestError(400, "stream: a stored response is answered whole (send stream=false)", "stream");
    const stored = await store.responses.get(ownerOf(request), id);
    if (!stored) throw notFound(id);
    return stored.response;
  });

  api.get(
    "/v1/responses/:id/input_items",
    route("The input items of a stored response (OpenAI Responses API)"),
    async function listInputItems(request) {
      const { id } = request.params as { id: string };
      const query = inputItemsQuery(request.query as Record<string, unknown>);
      const stored = await store.responses.get(ownerOf(request), id);
      if (!stored) throw notFound(id);
      return inputItemsPage(stored.input as ConversationItem[], id.slice("resp_".length), query);
    },
  );

  api.delete("/v1/responses/:id", route("Delete a stored response (OpenAI Responses API)"), async function deleteResponse(request) {
    const { id } = request.params as { id: string };
    if (!(await store.responses.delete(ownerOf(request), id))) throw notFound(id);
    return { id, object: "response", deleted: true };
  });
}

/** The request's parameters as OpenAI echoes them in the response, before and after `output`. */
function requestEcho(body: ResponsesBody, storing: boolean) {
  const tools = ((body.tools ?? []) as unknown as ResponsesFunctionTool[]).map((t) => ({
    type: "function",
    name: t.name,
    description: t.description ?? null,
    parameters: t.parameters ?? null,
    strict: t.strict ?? true,
  }));
  return {
    before: {
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      max_tool_calls: body.max_tool_calls ?? null,
    },
    after: {
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      prompt_cache_key: body.prompt_cache_key ?? null,
      reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      safety_identifier: body.safety_identifier ?? null,
      service_tier: "default",
      store: storing,
      temperature: body.temperature ?? 1,
      text: { format: body.text?.format ?? { type: "text" }, verbosity: body.text?.verbosity ?? "medium" },
      tool_choice: body.tool_choice ?? "auto",
      tools,
      top_logprobs: body.top_logprobs ?? 0,
      top_p: body.top_p ?? 1,
      truncation: body.truncation ?? "disabled",
      user: body.user ?? null,
      metadata: body.metadata ?? {},
    },
  };
}

type TextHook = (index: number, delta: string, tokens: readonly GeneratedToken[]) => void;

/** What a streamed response needs from the request it answers. */
interface ResponseStreamPlan {
  request: FastifyRequest;
  reply: FastifyReply;
  key: string;
  tools: ToolMode | null;
  /** The reasoning section the answer follows, or null. */
  reasoning: ReasoningSection | null;
  timeToFirstToken: Histogram;
  bodyLimitBytes: number;
  snapshot: (status: string, output: OutputItem[], extra?: Record<string, unknown>) => Record<string, unknown>;
  work: (onText: TextHook) => Promise<CompletionResult[]>;
  finish: (builder: OutputBuilder, result: CompletionResult) => Promise<Record<string, unknown>>;
  reasoningStatus: (result: CompletionResult) => "completed" | "incomplete";
}

/**
 * A response as typed events: the reasoning item first (a reasoning model's section, as
 * reasoning_text deltas), then the answer's items as their text arrives, then the final response.
 * The stream opens with the first generated token: a refusal before it is a plain HTTP error.
 */
function streamResponse(plan: ResponseStreamPlan): Promise<FastifyReply> {
  const { request, reply, tools } = plan;
  const sse = new SseStream();
  const builder = new OutputBuilder(plan.key, sse);
  const auto = tools?.kind === "auto" ? new AutoToolStream(tools.style!) : null;
  const thinking = plan.reasoning ? new ReasoningSplitter(plan.reasoning) : null;
  /** A section that is reasoning (not an answer's header alone): it makes a reasoning item. */
  const reasons = plan.reasoning !== null && plan.reasoning.hidden !== true;
  const arrived = performance.now() - reply.elapsedTime;
  let opened = false;
  let answering = false;
  /** The answer's first item opens once the reasoning item is done (free text: the message; a named call: the call). */
  const startAnswer = (reasoningStatus: "completed" | "incomplete" = "completed"): void => {
    if (answering) return;
    answering = true;
    builder.endReasoning(reasoningStatus);
    if (tools?.kind === "named") builder.startCall(tools.name!);
    else if (!tools) builder.text("");
  };
  const open = (): void => {
    if (opened) return;
    opened = true;
    builder.event("response.created", { response: plan.snapshot("in_progress", []) });
    builder.event("response.in_progress", { response: plan.snapshot("in_progress", []) });
    // A section the model may skip makes its item once its text comes (the answer's, else).
    if (reasons && !plan.reasoning!.skippable) builder.reasoning("");
    else if (!reasons) startAnswer();
  };
  /** The answer's text, as it becomes final. */
  const answerText = (text: string): void => {
    if (text.length === 0) return;
    startAnswer();
    if (tools?.kind === "named") builder.callArguments(text);
    else if (auto) {
      const content = auto.push(text);
      if (content.length > 0) builder.text(content);
    } else if (!tools) builder.text(text);
    // "required": the calls are sent whole at the end (the array is parsed then).
  };
  const onText: TextHook = (_index, piece, tokens) => {
    if (!opened) plan.timeToFirstToken.observe((performance.now() - arrived) / 1000);
    open();
    request.tokensGenerated += tokens.length;
    const split = thinking ? thinking.push(piece) : { reasoning: "", content: piece };
    // (A skippable section's item opens as soon as the section is known to be written.)
    if (split.reasoning.length > 0 || (reasons && !answering && thinking!.reasoned === true)) builder.reasoning(split.reasoning);
    answerText(split.content);
  };
  const finished = plan.work(onText).then(
    async ([result]) => {
      request.tokensGenerated = result!.tokensGenerated;
      open();
      const held = thinking ? thinking.flush() : { reasoning: "", content: "" };
      if (reasons && !answering && (held.reasoning.length > 0 || thinking!.reasoned === true)) builder.reasoning(held.reasoning);
      answerText(held.content);
      startAnswer(plan.reasoningStatus(result!));
      if (auto) {
        const rest = auto.flush();
        if (rest.length > 0) builder.text(rest);
      }
      buildOutput(builder, result!, tools, true, plan.reasoningStatus(result!));
      const response = await plan.finish(builder, result!);
      builder.event(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response });
      sse.end(false);
    },
    (error: unknown) => {
      if (!opened) throw error;
      const mapped = mapOpenAIError(error, { allowedFields: [], bodyLimitBytes: plan.bodyLimitBytes, maxTokensParam: "max_output_tokens" });
      if (mapped.internal) request.log.error({ err: error }, "error while streaming");
      const { message, code, param } = mapped.body.error;
      builder.event("error", { code: code ?? mapped.body.error.type, message, param });
      builder.event("response.failed", {
        response: plan.snapshot("failed", builder.items, { error: { code: code ?? "server_error", message } }),
      });
      sse.end(false);
    },
  );
  return replyWithStream(reply, sse, finished);
}

/**
 * Earlier reasoning the client sent in `input` that this model's chat template never reads: said
 * once, naming the first such reasoning item (a stored conversation's own reasoning is not the
 * client's field, so it is not warned about).
 */
function unreadReasoningWarnings(indices: readonly number[], reasoningOrigins: readonly (string | undefined)[]): FieldWarning[] {
  const sent = indices.map((i) => reasoningOrigins[i]).filter((origin): origin is string => origin?.startsWith("input") === true);
  if (sent.length === 0) return [];
  const field = `${sent[0]}.content`;
  const more = sent.length > 1 ? ` (and ${sent.length - 1} more reasoning item${sent.length > 2 ? "s" : ""})` : "";
  return [
    {
      keyword: field,
      pointer: `/${field}`,
      message: `${field}${more}: this model's chat template never reads earlier reasoning, so it is not in the prompt`,
    },
  ];
}

/**
 * The result's output items, after what a stream already built (`streamed`): the reasoning item
 * (a reasoning model's section), the message's text (free text, a JSON format, an `auto` reply's
 * text before its calls), then the calls (named: its arguments; `required` and `auto`: each call
 * whole). A message ends complete, or incomplete when
 * the token limit cut it.
 */
function buildOutput(
  builder: OutputBuilder,
  result: CompletionResult,
  tools: ToolMode | null,
  streamed: boolean,
  reasoningStatus: "completed" | "incomplete",
): void {
  const status = result.stopReason === "token_limit" ? "incomplete" : "completed";
  if (!streamed && result.reasoning !== undefined) {
    builder.reasoning(result.reasoning);
    builder.endReasoning(reasoningStatus);
  }
  if (tools?.kind === "named") {
    if (!streamed) {
      builder.startCall(tools.name!);
      builder.callArguments(result.completion);
    }
    builder.endCall();
    return;
  }
  const calls = tools ? replyCalls(result.completion, tools) : [];
  if (!streamed && tools?.kind !== "required") {
    // The text a stream would have sent: all of it, or an auto reply's text before its calls.
    const auto = tools ? new AutoToolStream(tools.style!) : null;
    const text = auto ? auto.push(result.completion) + auto.flush() : result.completion;
    if (text.length > 0 || calls.length === 0) builder.text(text);
  } else if (builder.items.every((item) => item.type === "reasoning") && calls.length === 0) builder.text("");
  builder.endText(status);
  for (const call of calls) builder.wholeCall(call.name, call.arguments);
}
