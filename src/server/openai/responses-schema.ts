/**
 * The Responses API's request body (`POST /v1/responses`) as a JSON schema for ajv and
 * /openapi.json. Every field OpenAI defines is here: honoured, accepted with a warning, or refused
 * by name where it asks for what Trellis does not do (background, hosted tools, conversations);
 * any other field is a 400 naming it. `seed` is Trellis's extension (as on the chat route).
 */
import type { Config } from "../../config.js";
import { openAiKnobs } from "../schemas.js";
import { metadataSchema } from "./schemas.js";

type Schema = Record<string, unknown>;

const nullable = (type: string): string[] => [type, "null"];

/** Input items a request may carry (OpenAI allows more; the prompt's size is bounded apart). */
export const MAX_INPUT_ITEMS = 4096;

/** A content part: its type decides what else it holds; parts other than text are refused by name in code. */
const contentPart: Schema = {
  type: "object",
  required: ["type"],
  properties: { type: { type: "string", maxLength: 64 }, text: { type: "string" } },
};

const content: Schema = { anyOf: [{ type: "string" }, { type: "array", maxItems: MAX_INPUT_ITEMS, items: contentPart }] };

/** A reasoning item's summary part (accepted with a warning: a summary is not the reasoning itself). */
const summaryPart: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "text"],
  properties: { type: { type: "string", enum: ["summary_text"] }, text: { type: "string" } },
};

/**
 * One input item: a message (role and content), a reasoning item (its reasoning_text content, the
 * next assistant turn's earlier reasoning), a function_call, a function_call_output or an
 * item_reference. One schema for all (their fields together), so an unknown field is named; the
 * fields each type needs are checked in responses-request.ts.
 */
const inputItem: Schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    type: { type: "string", maxLength: 64 },
    role: { type: "string", enum: ["user", "assistant", "system", "developer"] },
    content,
    id: { type: nullable("string"), maxLength: 256 },
    status: { type: nullable("string"), enum: ["in_progress", "completed", "incomplete", null] },
    phase: { type: nullable("string"), enum: ["commentary", "final_answer", null] },
    call_id: { type: "string", minLength: 1, maxLength: 256 },
    name: { type: "string", maxLength: 256 },
    namespace: { type: "string", maxLength: 256 },
    arguments: { type: "string" },
    output: content,
    summary: { type: "array", maxItems: MAX_INPUT_ITEMS, items: summaryPart },
    encrypted_content: { type: nullable("string"), description: "Another service's encrypted reasoning: unreadable here (a warning)." },
  },
};

/**
 * A tool: a function (flat, as the Responses API declares it) is checked here; other types
 * (web_search, file_search, mcp, …) are refused by name in code.
 */
const tool: Schema = {
  type: "object",
  required: ["type"],
  properties: { type: { type: "string", maxLength: 64 } },
  if: { properties: { type: { const: "function" } } },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, read by ajv
  then: {
    additionalProperties: false,
    required: ["type", "name"],
    properties: {
      type: { type: "string" },
      name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
      description: { type: nullable("string") },
      parameters: { type: nullable("object"), description: "JSON Schema of the arguments (an object)." },
      strict: { type: nullable("boolean") },
      defer_loading: { type: "boolean" },
    },
  },
};

const textFormat: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["type"],
  properties: {
    type: { type: "string", enum: ["text", "json_object", "json_schema"] },
    name: { type: "string", maxLength: 64 },
    description: { type: "string" },
    schema: { type: "object", description: "The JSON Schema the output is valid against." },
    strict: { type: nullable("boolean") },
  },
};

export function responsesBody(config: Config): Schema {
  const knobs = openAiKnobs("");
  return {
    type: "object",
    additionalProperties: false,
    required: ["model"],
    properties: {
      model: { type: "string", maxLength: 256, description: "The served model's id, as GET /v1/models lists it." },
      input: {
        anyOf: [{ type: "string" }, { type: "array", maxItems: MAX_INPUT_ITEMS, items: inputItem }],
        description:
          "A user message, or the conversation's items: messages, reasoning items (their text is the next assistant turn's reasoning_content, as the chat template reads it), function calls and their outputs, item references.",
      },
      instructions: { type: nullable("string"), description: "A system message before the input (not carried to the next response)." },
      max_output_tokens: {
        type: nullable("integer"),
        minimum: 1,
        maximum: config.maxNewTokensLimit,
        description: "Most tokens to generate; a JSON or function-call output is planned to fit, or refused.",
      },
      temperature: knobs.temperature!,
      top_p: knobs.top_p!,
      seed: {
        type: nullable("integer"),
        minimum: -Number.MAX_SAFE_INTEGER,
        maximum: Number.MAX_SAFE_INTEGER,
        description: "Trellis extension: same seed, same request → same output.",
      },
      property_order: {
        type: nullable("string"),
        enum: ["schema", "any", null],
        description:
          'Trellis extension (as on the chat route): an object\'s named properties in a JSON output or a call\'s arguments in the schema\'s order ("schema", default) or in any ("any").',
      },
      text: {
        type: "object",
        additionalProperties: false,
        properties: {
          format: textFormat,
          verbosity: { type: nullable("string"), enum: ["low", "medium", "high", null] },
        },
        description: "format: text, json_object, or json_schema ({name, schema, strict}); verbosity is not steered (a warning).",
      },
      tools: {
        type: "array",
        maxItems: 128,
        items: tool,
        description: "Functions the model may call ({type: function, name, parameters}).",
      },
      tool_choice: {
        anyOf: [
          { type: "string", enum: ["none", "auto", "required"] },
          { type: "object", required: ["type"], properties: { type: { type: "string" }, name: { type: "string" } } },
          { type: "null" },
        ],
        description: "none, auto, required, or {type: function, name}.",
      },
      parallel_tool_calls: { type: nullable("boolean"), description: "Allow several calls in one response (default true)." },
      max_tool_calls: { type: nullable("integer"), minimum: 1, description: "Not enforced (a warning)." },
      metadata: metadataSchema("Up to 16 string pairs kept with the response."),
      user: { type: "string", maxLength: 256, description: "Your end user's id (recorded in the log)." },
      safety_identifier: { type: "string", maxLength: 64, description: "Your end user's id (recorded in the log)." },
      store: { type: nullable("boolean"), description: "Keep the response for GET and previous_response_id (default true)." },
      previous_response_id: {
        type: nullable("string"),
        maxLength: 256,
        description: "A stored response of this API key: its conversation and output come before the input.",
      },
      stream: { type: nullable("boolean"), description: "Send the response as typed Server-Sent Events as it is generated." },
      stream_options: {
        type: nullable("object"),
        additionalProperties: false,
        properties: { include_obfuscation: { type: "boolean" } },
        description: "include_obfuscation: accepted (Trellis adds no obfuscation field).",
      },
      background: { type: nullable("boolean"), description: "Only false: Trellis answers in the foreground (true is a 400)." },
      include: {
        type: nullable("array"),
        maxItems: 16,
        items: { type: "string", maxLength: 64 },
        description: "Extra output data: none is produced (a warning); reasoning items carry their text unencrypted in content.",
      },
      reasoning: {
        type: nullable("object"),
        additionalProperties: false,
        properties: {
          effort: { type: nullable("string"), enum: ["none", "minimal", "low", "medium", "high", "xhigh", null] },
          summary: { type: nullable("string"), enum: ["auto", "concise", "detailed", null] },
          generate_summary: { type: nullable("string"), enum: ["auto", "concise", "detailed", null] },
        },
        description:
          "On a model that reasons, effort bounds its reasoning as reasoning_effort does on the chat route (none turns it off where the template can), and the reasoning comes back as a reasoning item (no summary: summary gets a warning); on others anything but none gets a warning.",
      },
      truncation: {
        type: nullable("string"),
        enum: ["auto", "disabled", null],
        description: "disabled (the default): a conversation longer than the context is a 400; auto gets a warning.",
      },
      service_tier: {
        type: nullable("string"),
        enum: ["auto", "default", "flex", "scale", "priority", null],
        description: "Trellis has one tier, default; flex, scale, priority get a warning.",
      },
      top_logprobs: { type: nullable("integer"), minimum: 0, maximum: 20, description: "Not reported (a warning when above 0)." },
      prompt_cache_key: { type: "string", maxLength: 1024, description: "Not used to route or cache: a warning." },
      prompt_cache_retention: { type: nullable("string"), enum: ["in-memory", "24h", null], description: "Not used: a warning." },
      conversation: { description: "Conversations are not served: a 400 (use previous_response_id)." },
      prompt: { description: "Stored prompt templates are not served: a 400." },
      context_management: { description: "Not served: a 400." },
    },
  };
}
