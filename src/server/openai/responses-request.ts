/**
 * A Responses API body → what the chat route runs: its input items (a stored conversation before
 * them when `previous_response_id` names one, item references resolved) as chat messages (a
 * reasoning item's text the `reasoning_content` of the assistant turn after it), its
 * `text.format`, flat function tools and `tool_choice` as the chat body's, so the constraint, the
 * rendering and the token budget are the chat route's own (engine-request.ts prepareChat). Errors
 * raised in chat terms are renamed to the field this client sent (`messages[3]` → `input[1]`,
 * `response_format` → `text.format`, `max_completion_tokens` → `max_output_tokens`).
 */
import { ChatTemplateError } from "../../prompt/index.js";
import { HttpError } from "../errors.js";
import { OpenAIRequestError } from "./errors.js";
import type { ChatBody } from "./request.js";

export interface ResponsesFunctionTool {
  type: "function";
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
  defer_loading?: boolean;
}

export interface ResponsesTextFormat {
  type: "text" | "json_object" | "json_schema";
  name?: string;
  description?: string;
  schema?: Record<string, unknown>;
  strict?: boolean | null;
}

interface ContentPart {
  type: string;
  text?: string;
  refusal?: string;
}

/** An input item as the client sends it (the schema admits their fields together). */
export interface RequestItem {
  type?: string;
  role?: "user" | "assistant" | "system" | "developer";
  content?: string | ContentPart[];
  id?: string | null;
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | ContentPart[];
  /** A reasoning item's summary and encrypted reasoning (another service's): accepted, not rendered (a warning). */
  summary?: { type: "summary_text"; text: string }[];
  encrypted_content?: string | null;
}

export interface ResponsesBody {
  model: string;
  input?: string | RequestItem[];
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  /** Trellis: as on the chat route. */
  property_order?: "schema" | "any" | null;
  text?: { format?: ResponsesTextFormat; verbosity?: "low" | "medium" | "high" | null };
  tools?: { type: string; [field: string]: unknown }[];
  tool_choice?: "none" | "auto" | "required" | { type: string; name?: string } | null;
  parallel_tool_calls?: boolean | null;
  max_tool_calls?: number | null;
  metadata?: Record<string, string> | null;
  user?: string;
  safety_identifier?: string;
  store?: boolean | null;
  previous_response_id?: string | null;
  stream?: boolean | null;
  stream_options?: { include_obfuscation?: boolean } | null;
  background?: boolean | null;
  include?: string[] | null;
  reasoning?: { effort?: string | null; summary?: string | null; generate_summary?: string | null } | null;
  truncation?: "auto" | "disabled" | null;
  service_tier?: "auto" | "default" | "flex" | "scale" | "priority" | null;
  top_logprobs?: number | null;
  prompt_cache_key?: string;
  prompt_cache_retention?: string | null;
  conversation?: unknown;
  prompt?: unknown;
  context_management?: unknown;
}

/**
 * A conversation item as Trellis keeps it (stored with a response, carried by
 * previous_response_id): a message's text, a call, a call's output, a reasoning item's text (null:
 * it carried none Trellis can read).
 */
export type ConversationItem =
  | { type: "reasoning"; text: string | null }
  | { type: "message"; role: "user" | "assistant" | "system" | "developer"; content: string }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string };

/** A conversation item and the request field it came from, for errors about it. */
export interface PlacedItem {
  item: ConversationItem;
  origin: string;
}

/** A request-field warning, in the shape of the chat route's (the JSON Schema engine's). */
export interface FieldWarning {
  keyword: string;
  pointer: string;
  message: string;
}

const warn = (field: string, message: string): FieldWarning => ({ keyword: field, pointer: `/${field}`, message });

/** Fields Trellis refuses by name (it cannot do what they ask), and every non-function tool. */
export function refuseUnserved(body: ResponsesBody): void {
  if (body.background === true)
    throw new OpenAIRequestError(
      400,
      "background: true is not supported; Trellis answers in the foreground (send false or stream)",
      "background",
    );
  const unserved = [
    ["conversation", "conversations are not served; chain responses with previous_response_id"],
    ["prompt", "stored prompt templates are not served; send the input itself"],
    ["context_management", "context management (compaction) is not served"],
  ] as const;
  for (const [field, why] of unserved) {
    if (body[field] !== undefined && body[field] !== null) throw new OpenAIRequestError(400, `${field}: ${why}`, field);
  }
  body.tools?.forEach((t, i) => {
    if (t.type !== "function") {
      throw new OpenAIRequestError(
        400,
        `tools[${i}].type: ${JSON.stringify(t.type)} tools are not supported (Trellis has no hosted tools); declare functions ({type: "function", name, parameters})`,
        `tools[${i}].type`,
      );
    }
  });
  const choice = body.tool_choice;
  if (choice && typeof choice === "object") {
    if (choice.type !== "function")
      throw new OpenAIRequestError(
        400,
        `tool_choice.type: ${JSON.stringify(choice.type)} is not supported; name a function ({type: "function", name})`,
        "tool_choice.type",
      );
    if (typeof choice.name !== "string")
      throw new OpenAIRequestError(400, "tool_choice.name is required with type function", "tool_choice.name");
  }
  const format = body.text?.format;
  if (format?.type === "json_schema") {
    if (format.name === undefined)
      throw new OpenAIRequestError(400, "text.format.name is required with type json_schema", "text.format.name");
    if (format.schema === undefined)
      throw new OpenAIRequestError(400, "text.format.schema is required with type json_schema", "text.format.schema");
  } else if (format && (format.schema !== undefined || format.name !== undefined || format.strict != null)) {
    throw new OpenAIRequestError(400, `text.format: name, schema and strict go with type json_schema, not ${format.type}`, "text.format");
  }
}

/** OpenAI's fields Trellis accepts without acting on them, each said in `warnings`. */
export function responsesWarnings(body: ResponsesBody, reasons: boolean): FieldWarning[] {
  const out: FieldWarning[] = [];
  const r = body.reasoning;
  if (!reasons && r && ((r.effort != null && r.effort !== "none") || r.summary != null || r.generate_summary != null))
    out.push(warn("reasoning", "reasoning: this model does not reason; its effort and summary change nothing"));
  if (reasons && r && (r.summary != null || r.generate_summary != null))
    out.push(
      warn(
        "reasoning.summary",
        "reasoning.summary: Trellis writes no reasoning summaries; the reasoning itself comes whole, as the reasoning item's reasoning_text content",
      ),
    );
  if (body.truncation === "auto")
    out.push(warn("truncation", 'truncation: "auto" drops nothing here; a conversation longer than the context is refused (400)'));
  for (const item of body.include ?? [])
    out.push(
      warn(
        "include",
        item === "reasoning.encrypted_content"
          ? 'include: "reasoning.encrypted_content" is not produced: Trellis encrypts no reasoning; its reasoning items carry their text in content, to send back as they are'
          : `include: ${JSON.stringify(item)} is not produced by Trellis`,
      ),
    );
  out.push(...reasoningItemWarnings(body.input));
  const tier = body.service_tier;
  if (tier === "flex" || tier === "scale" || tier === "priority")
    out.push(warn("service_tier", `service_tier: Trellis has one tier; served as "default", not "${tier}"`));
  if (body.text?.verbosity != null)
    out.push(warn("text.verbosity", `text.verbosity: not steered by Trellis; "${body.text.verbosity}" changes nothing`));
  if (body.top_logprobs != null && body.top_logprobs > 0)
    out.push(warn("top_logprobs", "top_logprobs: log-probabilities are not reported here"));
  if (body.max_tool_calls != null)
    out.push(warn("max_tool_calls", "max_tool_calls: not enforced (parallel_tool_calls: false makes one call at most)"));
  if (body.prompt_cache_key != null)
    out.push(warn("prompt_cache_key", "prompt_cache_key: not used (Trellis caches every prompt prefix on its own, whatever the key)"));
  if (body.prompt_cache_retention != null)
    out.push(
      warn(
        "prompt_cache_retention",
        "prompt_cache_retention: not used (the prefix cache keeps what the idle KV cells hold, for as long as no request needs them)",
      ),
    );
  return out;
}

/**
 * What input reasoning items carry that Trellis cannot render, said once per kind naming the first
 * item: a summary (not the model's reasoning, only a digest of it) and encrypted content (another
 * service's, unreadable here). Their reasoning_text content is what reaches the template.
 */
function reasoningItemWarnings(input: ResponsesBody["input"]): FieldWarning[] {
  if (!Array.isArray(input)) return [];
  const at = (has: (item: RequestItem) => boolean): number[] =>
    input.flatMap((item, i) => (item.type === "reasoning" && has(item) ? [i] : []));
  const said = (indices: number[], field: string, why: string): FieldWarning[] => {
    if (indices.length === 0) return [];
    const name = `input[${indices[0]}].${field}`;
    const more = indices.length > 1 ? ` (and ${indices.length - 1} more reasoning item${indices.length > 2 ? "s" : ""})` : "";
    return [warn(name, `${name}${more}: ${why}`)];
  };
  return [
    ...said(
      at((item) => (item.summary ?? []).some((part) => part.text.length > 0)),
      "summary",
      "a summary is not the model's reasoning and is not put in the prompt; the reasoning_text content is",
    ),
    ...said(
      at((item) => item.encrypted_content != null && item.encrypted_content.length > 0),
      "encrypted_content",
      "encrypted reasoning (another service's) cannot be read here and is not in the prompt",
    ),
  ];
}

function partsText(parts: string | ContentPart[] | undefined, at: string, allowed: readonly string[]): string {
  if (parts === undefined) return "";
  if (typeof parts === "string") return parts;
  return parts
    .map((part, j) => {
      if (!allowed.includes(part.type)) {
        throw new OpenAIRequestError(
          400,
          `${at}[${j}]: parts of type ${JSON.stringify(part.type)} are not supported (this model reads text: ${allowed.join(", ")})`,
          `${at}[${j}].type`,
        );
      }
      const text = part.type === "refusal" ? part.refusal : part.text;
      if (typeof text !== "string") throw new OpenAIRequestError(400, `${at}[${j}].text must be a string`, `${at}[${j}].text`);
      return text;
    })
    .join("");
}

/** Resolves an item_reference: the item a stored response of this key holds under that id, or null. */
export type ItemResolver = (id: string) => Promise<ConversationItem | null>;

/** The request's input as conversation items, references resolved; each names its field. */
export async function inputItemsOf(input: ResponsesBody["input"], resolve: ItemResolver): Promise<PlacedItem[]> {
  if (input === undefined) return [];
  if (typeof input === "string") return [{ item: { type: "message", role: "user", content: input }, origin: "input" }];
  const out: PlacedItem[] = [];
  for (let i = 0; i < input.length; i++) {
    const given = input[i]!;
    const at = `input[${i}]`;
    const type = given.type ?? (given.role !== undefined ? "message" : undefined);
    const need = (field: keyof RequestItem): void => {
      if (given[field] === undefined) throw new OpenAIRequestError(400, `${at}.${field} is required for a ${type} item`, `${at}.${field}`);
    };
    if (type === "message") {
      need("role");
      need("content");
      const allowed = given.role === "assistant" ? ["output_text", "refusal"] : ["input_text"];
      const content = partsText(given.content, `${at}.content`, allowed);
      out.push({ item: { type: "message", role: given.role!, content }, origin: at });
    } else if (type === "function_call") {
      need("call_id");
      need("name");
      need("arguments");
      try {
        JSON.parse(given.arguments!);
      } catch {
        throw new OpenAIRequestError(400, `${at}.arguments is not valid JSON`, `${at}.arguments`);
      }
      out.push({ item: { type: "function_call", call_id: given.call_id!, name: given.name!, arguments: given.arguments! }, origin: at });
    } else if (type === "function_call_output") {
      need("call_id");
      need("output");
      const output = partsText(given.output, `${at}.output`, ["input_text"]);
      out.push({ item: { type: "function_call_output", call_id: given.call_id!, output }, origin: at });
    } else if (type === "reasoning") {
      if (typeof given.content === "string")
        throw new OpenAIRequestError(400, `${at}.content: a reasoning item's content is a list of reasoning_text parts`, `${at}.content`);
      const text = given.content && given.content.length > 0 ? partsText(given.content, `${at}.content`, ["reasoning_text"]) : null;
      out.push({ item: { type: "reasoning", text }, origin: at });
    } else if (type === "item_reference") {
      if (typeof given.id !== "string") throw new OpenAIRequestError(400, `${at}.id is required for an item_reference`, `${at}.id`);
      const found = await resolve(given.id);
      if (!found)
        throw new OpenAIRequestError(
          400,
          `${at}: no item with id ${JSON.stringify(given.id)} in this API key's stored responses`,
          `${at}.id`,
        );
      out.push({ item: found, origin: at });
    } else {
      throw new OpenAIRequestError(
        400,
        type === undefined
          ? `${at}.type is required (message, reasoning, function_call, function_call_output or item_reference)`
          : `${at}.type: ${JSON.stringify(type)} items are not supported (message, reasoning, function_call, function_call_output, item_reference)`,
        `${at}.type`,
      );
    }
  }
  return out;
}

/** The chat messages of a conversation, each with the field it came from (and its reasoning's, when it has some). */
export interface ChatConversation {
  messages: ChatBody["messages"];
  origins: string[];
  /** Per message: the reasoning item its reasoning_content came from, where it has one. */
  reasoningOrigins: (string | undefined)[];
  warnings: FieldWarning[];
}

/**
 * Conversation items as chat messages. Calls right after an assistant message (or another call)
 * are that assistant turn's; a reasoning item (several in a row: their texts in order) is the
 * reasoning_content of the assistant message or call after it, which starts a new assistant turn.
 * A reasoning item that no assistant turn follows is left out, with a warning.
 */
function chatConversationOf(instructions: string | null | undefined, conversation: readonly PlacedItem[]): ChatConversation {
  const out: ChatConversation = { messages: [], origins: [], reasoningOrigins: [], warnings: [] };
  const { messages, origins } = out;
  if (instructions != null && instructions.length > 0) {
    messages.push({ role: "system", content: instructions });
    origins.push("instructions");
  }
  // The reasoning waiting for its assistant turn (`as`: the closures below reset it).
  let thought = null as { text: string | null; origin: string } | null;
  const unfollowed = (): void => {
    if (thought?.origin.startsWith("input"))
      out.warnings.push(
        warn(
          thought.origin,
          `${thought.origin}: no assistant message or function_call follows this reasoning item, so no turn carries it; it is not in the prompt`,
        ),
      );
    thought = null;
  };
  /** A new assistant turn, carrying the reasoning before it. */
  const assistant = (message: ChatBody["messages"][number], origin: string): void => {
    if (thought?.text != null) {
      message.reasoning_content = thought.text;
      out.reasoningOrigins[messages.length] = thought.origin;
    }
    thought = null;
    messages.push(message);
    origins.push(origin);
  };
  const calls = new Set<string>();
  for (const { item, origin } of conversation) {
    if (item.type === "reasoning") {
      const texts = [thought?.text, item.text].filter((text): text is string => text != null);
      thought = { text: texts.length > 0 ? texts.join("\n\n") : null, origin: thought?.origin ?? origin };
    } else if (item.type === "message" && item.role === "assistant") {
      assistant({ role: "assistant", content: item.content }, origin);
    } else if (item.type === "message") {
      unfollowed();
      messages.push({ role: item.role, content: item.content });
      origins.push(origin);
    } else if (item.type === "function_call") {
      calls.add(item.call_id);
      const call = { id: item.call_id, type: "function" as const, function: { name: item.name, arguments: item.arguments } };
      const last = messages.at(-1);
      if (last?.role === "assistant" && thought === null) last.tool_calls = [...(last.tool_calls ?? []), call];
      else assistant({ role: "assistant", content: null, tool_calls: [call] }, origin);
    } else {
      unfollowed();
      if (!calls.has(item.call_id)) {
        throw new OpenAIRequestError(
          400,
          `${origin}: no function_call before it has call_id ${JSON.stringify(item.call_id)}`,
          origin === "previous_response_id" ? origin : `${origin}.call_id`,
        );
      }
      messages.push({ role: "tool", tool_call_id: item.call_id, content: item.output });
      origins.push(origin);
    }
  }
  unfollowed();
  return out;
}

/** The chat body that runs the same request: messages with their origins, format, tools, choice. */
export function chatBodyOf(body: ResponsesBody, conversation: readonly PlacedItem[]): { chat: ChatBody } & ChatConversation {
  const converted = chatConversationOf(body.instructions, conversation);
  const { messages } = converted;
  if (messages.length === 0) throw new OpenAIRequestError(400, "input is required: give a message (or instructions)", "input");
  const format = body.text?.format;
  const functions = (body.tools ?? []) as unknown as ResponsesFunctionTool[];
  const choice = body.tool_choice;
  const chat: ChatBody = {
    model: body.model,
    messages,
    max_completion_tokens: body.max_output_tokens ?? null,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    seed: body.seed ?? null,
    property_order: body.property_order ?? null,
    // A reasoning model's effort bounds its reasoning as on the chat route (none: off where it can be).
    reasoning_effort: (body.reasoning?.effort ?? null) as ChatBody["reasoning_effort"],
    response_format:
      format === undefined || format.type === "text"
        ? null
        : format.type === "json_object"
          ? { type: "json_object" }
          : {
              type: "json_schema",
              json_schema: {
                name: format.name!,
                schema: format.schema,
                strict: format.strict ?? null,
                ...(format.description ? { description: format.description } : {}),
              },
            },
    tools: functions.map((t) => ({
      type: "function",
      function: {
        name: t.name,
        ...(t.description != null ? { description: t.description } : {}),
        ...(t.parameters != null ? { parameters: t.parameters } : {}),
      },
    })),
    tool_choice: choice == null ? null : typeof choice === "string" ? choice : { type: "function", function: { name: choice.name! } },
    parallel_tool_calls: body.parallel_tool_calls ?? null,
  };
  return { chat, ...converted };
}

/**
 * A chat-route field name as this request's: `messages[i]…` → the item's origin (its
 * `reasoning_content` → the reasoning item's), and the renamed fields.
 */
function renameField(field: string, origins: readonly string[], reasoningOrigins: readonly (string | undefined)[]): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(field);
  if (message) {
    const i = Number(message[1]);
    const reasoning = message[2]!.startsWith(".reasoning_content");
    const origin = (reasoning ? reasoningOrigins[i] : undefined) ?? origins[i] ?? "input";
    return (reasoning || message[2]!.startsWith(".content")) && origin.startsWith("input[") ? `${origin}.content` : origin;
  }
  return field
    .replace(/^messages\b/, "input")
    .replace(/^response_format(\.json_schema)?/, "text.format")
    .replace(/^max_completion_tokens\b/, "max_output_tokens")
    .replace(/^tools\[(\d+)\]\.function\./, "tools[$1].")
    .replace(/^tool_choice\.function\./, "tool_choice.");
}

/**
 * An error of the chat route's helpers in this request's terms (the field and the message), or the
 * error itself when it names no field.
 */
export function renamedError(error: unknown, origins: readonly string[], reasoningOrigins: readonly (string | undefined)[] = []): unknown {
  let field: string | null;
  let status: number;
  let code: string | null = null;
  if (error instanceof OpenAIRequestError) {
    field = error.param;
    status = error.statusCode;
    code = error.code;
  } else if (error instanceof ChatTemplateError) {
    field = error.field;
    status = 400;
  } else if (error instanceof HttpError && error.statusCode === 400) {
    field = null;
    status = 400;
  } else return error;
  const renamed = field === null ? null : renameField(field, origins, reasoningOrigins);
  const message = error.message
    .replace(/\bmessages'/g, "input's")
    .replace(
      /\b(?:messages(?:\[\d+\](?:\.[a-z_]+|\[\d+\])*)?|response_format(?:\.json_schema)?(?:\.[a-z_]+)?|max_completion_tokens|tools\[\d+\]\.function\.[a-z_]+|tool_choice\.function\.[a-z_]+)/g,
      (name) => renameField(name, origins, reasoningOrigins),
    );
  return new OpenAIRequestError(status, message, renamed, code);
}
