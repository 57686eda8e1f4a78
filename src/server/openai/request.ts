/**
 * An OpenAI request body → what the engine runs: the constraint (response_format,
 * structured_outputs, tool_choice), the sampling knobs with OpenAI's defaults, stop strings and
 * logit adjustments, and the conversation as the chat template takes it. Every check here names
 * the parameter it is about.
 */
import type { ConstraintSpec, ToolCallStyle, ToolMode } from "../../generate/index.js";
import { MAX_IGNORED_RUN } from "../../generate/index.js";
import { pyReEscape } from "../../regex/index.js";
import { toolCallSchema } from "../../schema/index.js";
import type { ChatMessage, ChatTool, ChatToolCall } from "../../prompt/index.js";
import { codePointLength } from "../../store/index.js";
import { stopStrings } from "../completion-fields.js";
import { OpenAIRequestError } from "./errors.js";

/** OpenAI's fields shared by both completion endpoints. */
export interface SharedBody {
  model: string;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  /** Trellis: append the text the constraint forces without sampling it (default: the service's TRELLIS_FAST_FORWARD). */
  fast_forward?: boolean | null;
  /** Trellis: a JSON output's (or a call's arguments') named properties in the schema's order (default) or in any. */
  property_order?: "schema" | "any" | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  user?: string | null;
  top_k?: number | null;
  repetition_penalty?: number | null;
  structured_outputs?: { json?: unknown; regex?: string; choice?: string[]; grammar?: string } | null;
  response_format?: {
    type: "text" | "json_object" | "json_schema";
    json_schema?: { name: string; description?: string; schema?: unknown; strict?: boolean | null };
    /** With json_object: the schema (Instructor's JSON_SCHEMA mode, other local servers' extension). */
    schema?: unknown;
  } | null;
}

export interface ChatBody extends SharedBody {
  messages: RequestMessage[];
  max_completion_tokens?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  tools?: ChatTool[] | null;
  tool_choice?: "none" | "auto" | "required" | { type: "function"; function: { name: string } } | null;
  parallel_tool_calls?: boolean | null;
  functions?: ChatTool["function"][] | null;
  function_call?: "none" | "auto" | { name: string } | null;
  store?: boolean | null;
  metadata?: Record<string, string> | null;
  service_tier?: "auto" | "default" | "flex" | "scale" | "priority" | null;
  reasoning_effort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | null;
  /** Trellis's: most tokens of reasoning (the section's closing marker included) on a model that reasons. */
  reasoning_budget?: number | null;
  verbosity?: "low" | "medium" | "high" | null;
  prompt_cache_key?: string | null;
  safety_identifier?: string | null;
  modalities?: ("text" | "audio")[] | null;
}

/**
 * Legacy `functions` / `function_call` (OpenAI's tools before `tools`) as `tools` / `tool_choice`,
 * one call at most; `legacy` says to answer in the legacy shape (message.function_call). Both
 * generations of the fields in one request are a 400.
 */
export function withLegacyFunctions(body: ChatBody): { body: ChatBody; legacy: boolean } {
  const hasFunctions = body.functions != null;
  const hasCall = body.function_call != null;
  if (!hasFunctions && !hasCall) return { body, legacy: false };
  if (body.tools != null)
    throw new OpenAIRequestError(400, "functions and tools are two ways to declare tools: give only one", "functions");
  if (body.tool_choice != null)
    throw new OpenAIRequestError(400, "function_call and tool_choice are two ways to choose a tool: give only one", "function_call");
  if (body.parallel_tool_calls === true)
    throw new OpenAIRequestError(
      400,
      "the legacy functions make one call at most: parallel_tool_calls goes with tools",
      "parallel_tool_calls",
    );
  const functions = body.functions ?? [];
  if (hasCall && !hasFunctions && body.function_call !== "none")
    throw new OpenAIRequestError(400, "function_call needs functions to choose from", "function_call");
  const call = body.function_call ?? (functions.length > 0 ? "auto" : "none");
  const names = new Set<string>();
  functions.forEach((f, i) => {
    if (names.has(f.name))
      throw new OpenAIRequestError(400, `functions[${i}]: the function name ${f.name} is declared twice`, `functions[${i}].name`);
    names.add(f.name);
  });
  if (typeof call === "object" && !names.has(call.name))
    throw new OpenAIRequestError(400, `function_call names ${call.name}, which is not among the functions`, "function_call.name");
  const { functions: _f, function_call: _c, ...rest } = body;
  return {
    body: {
      ...rest,
      tools: functions.map((f) => ({ type: "function", function: f })),
      tool_choice: typeof call === "string" ? call : { type: "function", function: { name: call.name } },
      parallel_tool_calls: false,
    },
    legacy: true,
  };
}

export interface CompletionBody extends SharedBody {
  prompt: string | string[];
  logprobs?: number | null;
  echo?: boolean | null;
  best_of?: number | null;
  suffix?: string | null;
}

interface RequestMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool" | "function";
  content?: string | { type: string; text?: string }[] | null;
  name?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  function_call?: { name: string; arguments: string } | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  /** vLLM's newer name for reasoning_content. */
  reasoning?: string | null;
}

/** logit_bias with its ids checked against the vocabulary. */
export function logitBiasOf(body: SharedBody, vocabSize: number | undefined): Map<number, number> | undefined {
  if (!body.logit_bias) return undefined;
  const out = new Map<number, number>();
  for (const [key, bias] of Object.entries(body.logit_bias)) {
    const id = Number(key);
    if (vocabSize !== undefined && id >= vocabSize) {
      throw new OpenAIRequestError(400, `logit_bias: token id ${key} is outside the vocabulary (${vocabSize} tokens)`, "logit_bias");
    }
    out.set(id, bias);
  }
  return out;
}

/** The constraint a request asks for (free text when none), and whether it is a tool call. */
export function constraintOf(
  body: ChatBody | CompletionBody,
  chat: boolean,
  toolStyle: ToolCallStyle | null = null,
): { spec: ConstraintSpec; tools: ToolMode | null } {
  const sources: string[] = [];
  const so = body.structured_outputs;
  if (so) {
    const given = (["json", "regex", "choice", "grammar"] as const).filter((k) => so[k] !== undefined);
    if (given.length !== 1) {
      throw new OpenAIRequestError(
        400,
        `structured_outputs must have exactly one of json, regex, choice, grammar (got ${given.length === 0 ? "none" : given.join(", ")})`,
        "structured_outputs",
      );
    }
    sources.push("structured_outputs");
  }
  const rf = body.response_format;
  if (rf && rf.schema !== undefined && rf.type !== "json_object") {
    throw new OpenAIRequestError(
      400,
      `response_format.schema goes with type json_object (type ${rf.type}${rf.type === "json_schema" ? " takes json_schema.schema" : " has none"})`,
      "response_format.schema",
    );
  }
  if (rf && rf.type !== "text") sources.push("response_format");
  const toolChoice = chat ? toolChoiceOf(body as ChatBody, toolStyle) : null;
  if (toolChoice) sources.push("tool_choice");
  if (sources.length > 1) {
    throw new OpenAIRequestError(400, `${sources.join(" and ")} each constrain the output: give only one`, sources[1]!);
  }
  let spec: ConstraintSpec = { kind: "text" };
  if (so?.json !== undefined) spec = jsonSpec(body, so.json, true);
  else if (so?.regex !== undefined) spec = { kind: "regex", pattern: so.regex };
  else if (so?.choice !== undefined) spec = { kind: "regex", pattern: so.choice.map(pyReEscape) };
  else if (so?.grammar !== undefined) spec = { kind: "grammar", grammar: so.grammar, maxIgnoredRun: MAX_IGNORED_RUN };
  else if (rf?.type === "json_object") spec = jsonSpec(body, rf.schema !== undefined ? rf.schema : { type: "object" }, true);
  else if (rf?.type === "json_schema") {
    if (!rf.json_schema)
      throw new OpenAIRequestError(400, "response_format.json_schema is required when type is json_schema", "response_format.json_schema");
    if (rf.json_schema.schema === undefined) {
      throw new OpenAIRequestError(400, "response_format.json_schema.schema is required", "response_format.json_schema.schema");
    }
    spec = jsonSpec(body, rf.json_schema.schema, rf.json_schema.strict !== false);
  } else if (toolChoice) spec = toolChoice.spec;
  if (spec.kind !== "text" && stopStrings(body).length > 0) {
    throw new OpenAIRequestError(400, "stop cannot be combined with a constrained output: it would cut the document short", "stop");
  }
  return { spec, tools: toolChoice?.mode ?? null };
}

/** Whether a constraint writes JSON objects, which property_order shapes (a JSON output, tool calls). */
export const writesJson = (spec: ConstraintSpec): boolean =>
  spec.kind === "json_schema" || spec.kind === "typescript" || spec.kind === "tool_calls";

/** A JSON Schema constraint of `schema`, written as the request asks (its property_order). */
function jsonSpec(body: ChatBody | CompletionBody, schema: unknown, strict: boolean): ConstraintSpec {
  return { kind: "json_schema", schema, options: jsonOptions(body, strict) };
}

/** How a request's JSON is written: the default style, its property_order. */
function jsonOptions(body: ChatBody | CompletionBody, strict: boolean) {
  const order = body.property_order === "any" ? ({ propertyOrder: "any" } as const) : {};
  return { whitespace: "default", forbidUnnamedProperties: false, strict, ...order } as const;
}

/** tool_choice → the constraint of the call(s); null when the model answers in text. */
function toolChoiceOf(body: ChatBody, style: ToolCallStyle | null): { spec: ConstraintSpec; mode: ToolMode } | null {
  const tools = body.tools ?? [];
  const choice = body.tool_choice ?? (tools.length > 0 ? "auto" : "none");
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (names.has(t.function.name))
      throw new OpenAIRequestError(400, `tools[${i}]: the function name ${t.function.name} is declared twice`, `tools[${i}].function.name`);
    names.add(t.function.name);
  });
  if (choice === "none") return null;
  if (tools.length === 0) throw new OpenAIRequestError(400, "tool_choice needs tools to choose from", "tool_choice");
  // No parameters: an empty parameter list, so the arguments are exactly {} (OpenAI's meaning).
  const parametersOf = (t: ChatTool): unknown => t.function.parameters ?? { type: "object", properties: {}, additionalProperties: false };
  if (choice === "auto") {
    if (style === null) {
      throw new OpenAIRequestError(
        400,
        'tool_choice "auto": this model\'s chat template writes tool calls in a format Trellis does not read yet (those it reads, from Hermes/Qwen <tool_call> JSON and Llama 3.x JSON to gpt-oss, DeepSeek, Mistral, GLM, Kimi, MiniMax, Cohere and Gemma 4 calls, are listed in the README); send "required", a named function, or "none"',
        "tool_choice",
      );
    }
    const declared = tools.map((t) => ({ name: t.function.name, parameters: parametersOf(t) }));
    const options = jsonOptions(body, true);
    const parallel = body.parallel_tool_calls !== false;
    return { spec: { kind: "tool_calls", tools: declared, style, parallel, options }, mode: { kind: "auto", style, tools: declared } };
  }
  if (choice === "required") {
    // One call's schema as tool_choice "auto" reads it: each function's parameters its own
    // resource, so their local $refs resolve as they do compiled alone; the dialect on top.
    const { $schema, ...one } = toolCallSchema(
      tools.map((t) => ({ name: t.function.name, parameters: parametersOf(t) })),
      "hermes",
    );
    const array = { type: "array", minItems: 1, ...(body.parallel_tool_calls === false ? { maxItems: 1 } : {}), items: one };
    return { spec: jsonSpec(body, $schema === undefined ? array : { $schema, ...array }, true), mode: { kind: "required" } };
  }
  const tool = tools.find((t) => t.function.name === choice.function.name);
  if (!tool)
    throw new OpenAIRequestError(
      400,
      `tool_choice names ${choice.function.name}, which is not among the tools`,
      "tool_choice.function.name",
    );
  return { spec: jsonSpec(body, parametersOf(tool), true), mode: { kind: "named", name: tool.function.name } };
}

/**
 * The characters of a conversation's text that the chat template renders (contents, earlier
 * reasoning, names, tool calls, then the tools), against TRELLIS_MAX_PROMPT_CHARS: a 400 naming
 * where the sum crosses it. The body alone is bounded only by its byte limit, and tokenizing is
 * superlinear in some texts.
 */
class PromptChars {
  private used = 0;
  constructor(private readonly max: number) {}

  add(text: string, param: string): void {
    // A text has between half its UTF-16 units and all of them as code points: count only near the limit.
    const room = this.max - this.used;
    this.used += text.length <= room ? text.length : text.length > 2 * room ? room + 1 : codePointLength(text);
    if (this.used > this.max) {
      const what = param.startsWith("tools") ? "messages' and tools'" : "messages'";
      throw new OpenAIRequestError(
        400,
        `${param}: the ${what} text is longer than ${this.max} characters in all (TRELLIS_MAX_PROMPT_CHARS)`,
        param,
      );
    }
  }
}

/**
 * The request's messages as chat templates take them. Their text, with that of `tools` (those
 * rendered into the prompt), may be `maxChars` characters in all.
 */
export function chatMessagesOf(body: ChatBody, maxChars = Number.POSITIVE_INFINITY, tools: readonly ChatTool[] = []): ChatMessage[] {
  const chars = new PromptChars(maxChars);
  let legacyCallId: string | undefined; // the last legacy function_call, which a "function" message answers
  const messages = body.messages.map((given, i) => {
    const m = legacyMessage(given, i, legacyCallId);
    if (given.function_call) legacyCallId = m.tool_calls![0]!.id;
    const content = contentText(m.content, i);
    chars.add(content, `messages[${i}].content`);
    if (m.name !== undefined) chars.add(m.name, `messages[${i}].name`);
    m.tool_calls?.forEach((c, j) => {
      chars.add(c.function.name, `messages[${i}].tool_calls[${j}].function.name`);
      chars.add(c.function.arguments, `messages[${i}].tool_calls[${j}].function.arguments`);
    });
    const role = m.role === "developer" ? "system" : m.role === "function" ? "tool" : m.role;
    const message: { -readonly [K in keyof ChatMessage]: ChatMessage[K] } = { role, content };
    const reasoning = reasoningOf(m, i);
    if (reasoning) {
      chars.add(reasoning.text, `messages[${i}].${reasoning.field}`);
      message.reasoning_content = reasoning.text;
    }
    if (m.name !== undefined) message.name = m.name;
    if (m.tool_calls && m.tool_calls.length > 0) {
      if (m.role !== "assistant")
        throw new OpenAIRequestError(400, `messages[${i}]: only assistant messages carry tool_calls`, `messages[${i}].tool_calls`);
      message.tool_calls = m.tool_calls.map((c, j): ChatToolCall => {
        let args: unknown;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          throw new OpenAIRequestError(
            400,
            `messages[${i}].tool_calls[${j}].function.arguments is not valid JSON`,
            `messages[${i}].tool_calls[${j}].function.arguments`,
          );
        }
        return { id: c.id, type: "function", function: { name: c.function.name, arguments: args } };
      });
    }
    if (m.role === "tool") {
      if (m.tool_call_id === undefined)
        throw new OpenAIRequestError(400, `messages[${i}]: a tool message needs tool_call_id`, `messages[${i}].tool_call_id`);
      message.tool_call_id = m.tool_call_id;
    } else if (m.tool_call_id !== undefined) {
      throw new OpenAIRequestError(400, `messages[${i}]: only tool messages carry tool_call_id`, `messages[${i}].tool_call_id`);
    }
    return message;
  });
  tools.forEach((t, j) => chars.add(JSON.stringify(t.function), `tools[${j}]`));
  return messages;
}

/**
 * An assistant message's earlier reasoning and the field that carried it (`reasoning_content`, or
 * vLLM's `reasoning`), or null when it has none; on another role, or both fields differing, a 400.
 */
function reasoningOf(m: RequestMessage, i: number): { text: string; field: "reasoning_content" | "reasoning" } | null {
  const field = m.reasoning_content != null ? "reasoning_content" : m.reasoning != null ? "reasoning" : null;
  if (field === null) return null;
  if (m.role !== "assistant")
    throw new OpenAIRequestError(400, `messages[${i}]: only assistant messages carry ${field}`, `messages[${i}].${field}`);
  if (m.reasoning_content != null && m.reasoning != null && m.reasoning !== m.reasoning_content)
    throw new OpenAIRequestError(
      400,
      `messages[${i}]: reasoning and reasoning_content are two names for the same reasoning, and they differ: give one`,
      `messages[${i}].reasoning`,
    );
  return { text: m[field]!, field };
}

/**
 * A legacy message as today's: an assistant's `function_call` is a tool call, a `function`
 * message (its `name` the function's) the tool message answering the last such call.
 */
function legacyMessage(m: RequestMessage, i: number, lastCallId: string | undefined): RequestMessage {
  if (m.function_call) {
    if (m.role !== "assistant")
      throw new OpenAIRequestError(400, `messages[${i}]: only assistant messages carry function_call`, `messages[${i}].function_call`);
    if (m.tool_calls && m.tool_calls.length > 0)
      throw new OpenAIRequestError(400, `messages[${i}]: give function_call or tool_calls, not both`, `messages[${i}].function_call`);
    const { function_call: call, ...rest } = m;
    return { ...rest, tool_calls: [{ id: `call_legacy_${i}`, type: "function", function: call }] };
  }
  if (m.role === "function") {
    if (m.name === undefined)
      throw new OpenAIRequestError(400, `messages[${i}]: a function message needs the function's name`, `messages[${i}].name`);
    return { ...m, role: "tool", tool_call_id: m.tool_call_id ?? lastCallId ?? `call_legacy_${i}` };
  }
  return m;
}

function contentText(content: RequestMessage["content"], i: number): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  return content
    .map((part, j) => {
      if (part.type !== "text") {
        throw new OpenAIRequestError(
          400,
          `messages[${i}].content[${j}]: parts of type ${JSON.stringify(part.type)} are not supported (this model reads text)`,
          `messages[${i}].content[${j}].type`,
        );
      }
      if (typeof part.text !== "string")
        throw new OpenAIRequestError(400, `messages[${i}].content[${j}].text must be a string`, `messages[${i}].content[${j}].text`);
      return part.text;
    })
    .join("");
}

/** The served model, or a 404 naming the one that is. */
export function checkModel(requested: string, served: string): void {
  if (requested !== served) {
    throw new OpenAIRequestError(
      404,
      `The model \`${requested}\` does not exist; this server serves \`${served}\``,
      "model",
      "model_not_found",
    );
  }
}
