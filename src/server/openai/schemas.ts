/**
 * The OpenAI API's request bodies as JSON schemas (ajv validates them; /openapi.json publishes
 * them). Every field OpenAI defines that Trellis honours, or accepts and answers with a warning, is
 * here; any other field is a 400 naming it (additionalProperties: false), never silently dropped. vLLM's extensions are here under
 * vLLM's names: `structured_outputs`, `top_k`, `repetition_penalty`.
 */
import type { Config } from "../../config.js";
import { openAiKnobs } from "../schemas.js";

type Schema = Record<string, unknown>;

const nullable = (type: string): string[] => [type, "null"];

/** Most stop strings (OpenAI's limit), choices per request, and alternatives logprobs may list. */
export const MAX_CHOICES = 16;
export const MAX_TOP_LOGPROBS = 20;
/** Bias entries in logit_bias (OpenAI documents up to 300 tokens). */
export const MAX_LOGIT_BIAS = 300;

function sharedProperties(config: Config): Record<string, Schema> {
  return {
    model: { type: "string", maxLength: 256, description: "The served model's id, as GET /v1/models lists it." },
    max_tokens: { type: nullable("integer"), minimum: 1, maximum: config.maxNewTokensLimit, description: "Most tokens to generate." },
    ...openAiKnobs("free text only"),
    n: { type: nullable("integer"), minimum: 1, maximum: MAX_CHOICES, description: "Choices to generate, decoded in parallel." },
    seed: {
      type: nullable("integer"),
      minimum: -Number.MAX_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      description:
        "Same seed, same request, same load → same output (a prompt prefix reused from the prefix cache may move the last bits: TRELLIS_PREFIX_CACHE_TOKENS=0 for exact repeats).",
    },
    property_order: {
      type: nullable("string"),
      enum: ["schema", "any", null],
      description:
        "Trellis: how a JSON output (or a call's JSON arguments) orders an object's named properties: \"schema\" (default) in the schema's order, \"any\" in any order, other properties among them (objects of at most 8 named properties; a bigger one, or a schema past the limits that way, keeps the schema's order with a warning).",
    },
    fast_forward: {
      type: nullable("boolean"),
      description:
        "Trellis: where the constraint allows one continuation only (a JSON key, a closing bracket), append it without sampling each token (default: the service's TRELLIS_FAST_FORWARD). Off anyway with logprobs, logit_bias or penalties.",
    },
    logit_bias: {
      type: nullable("object"),
      maxProperties: MAX_LOGIT_BIAS,
      propertyNames: { pattern: "^[0-9]{1,9}$" },
      additionalProperties: { type: "number", minimum: -100, maximum: 100 },
      description: "Token id → bias added to its logit (-100 … 100).",
    },
    stream: { type: nullable("boolean"), description: "Send the answer as Server-Sent Events as it is generated." },
    stream_options: {
      type: nullable("object"),
      additionalProperties: false,
      properties: { include_usage: { type: nullable("boolean") } },
      description: "include_usage: a last chunk with the usage of the whole request.",
    },
    user: { type: nullable("string"), maxLength: 256, description: "Your end user's id (recorded in the log)." },
    top_k: { type: nullable("integer"), minimum: -1, description: "vLLM extension: keep the k most likely tokens; 0 or -1 = off." },
    repetition_penalty: { type: nullable("number"), exclusiveMinimum: 0, description: "vLLM extension: CTRL repetition penalty; 1 = off." },
    structured_outputs: {
      type: nullable("object"),
      additionalProperties: false,
      properties: {
        json: { description: "A JSON Schema the output is valid against." },
        regex: { type: "string", maxLength: config.maxPatternChars, description: "A regex (Python `re`) the output fully matches." },
        choice: {
          type: "array",
          minItems: 1,
          maxItems: 1024,
          items: { type: "string", maxLength: 4096 },
          description: "The output is one of these strings.",
        },
        grammar: {
          type: "string",
          maxLength: config.maxGrammarChars,
          description: "A Lark grammar (LALR, start rule `start`) the output is a sentence of.",
        },
      },
      description: "vLLM extension: exactly one of json, regex, choice, grammar.",
    },
    response_format: {
      type: nullable("object"),
      additionalProperties: false,
      required: ["type"],
      properties: {
        type: { type: "string", enum: ["text", "json_object", "json_schema"] },
        json_schema: {
          type: "object",
          additionalProperties: false,
          required: ["name"],
          properties: {
            name: { type: "string", maxLength: 64 },
            description: { type: "string" },
            schema: { description: "The JSON Schema." },
            strict: { type: nullable("boolean") },
          },
        },
        schema: { description: "With json_object: a JSON Schema the object is valid against (as json_schema's)." },
      },
      description: "text, json_object (any JSON object; with schema, valid against it), or json_schema (valid against the schema).",
    },
  };
}

const textPart: Schema = {
  type: "object",
  required: ["type"],
  properties: { type: { type: "string" }, text: { type: "string" } },
};

const toolCallSchema: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["id", "type", "function"],
  properties: {
    id: { type: "string", maxLength: 256 },
    type: { type: "string", enum: ["function"] },
    function: {
      type: "object",
      additionalProperties: false,
      required: ["name", "arguments"],
      properties: { name: { type: "string", maxLength: 256 }, arguments: { type: "string" } },
    },
  },
};

const messageSchema: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["role"],
  properties: {
    role: { type: "string", enum: ["system", "developer", "user", "assistant", "tool", "function"] },
    content: { anyOf: [{ type: "string" }, { type: "array", items: textPart }, { type: "null" }] },
    name: { type: "string", maxLength: 256 },
    tool_calls: { type: "array", maxItems: 128, items: toolCallSchema },
    tool_call_id: { type: "string", maxLength: 256 },
    function_call: {
      type: nullable("object"),
      additionalProperties: false,
      required: ["name", "arguments"],
      properties: { name: { type: "string", maxLength: 256 }, arguments: { type: "string" } },
    },
    refusal: { type: nullable("string") },
    // An earlier assistant turn's reasoning, as DeepSeek's and vLLM's APIs return it and their
    // clients send it back; `reasoning` is vLLM's newer name for it (vLLM now answers with
    // `reasoning` and reads either), so clients echoing vLLM's output send that one.
    reasoning_content: { type: nullable("string") },
    reasoning: { type: nullable("string") },
  },
};

const toolSchema: Schema = {
  type: "object",
  additionalProperties: false,
  required: ["type", "function"],
  properties: {
    type: { type: "string", enum: ["function"] },
    function: {
      type: "object",
      additionalProperties: false,
      required: ["name"],
      properties: {
        name: { type: "string", pattern: "^[a-zA-Z0-9_-]{1,64}$" },
        description: { type: "string" },
        parameters: { description: "JSON Schema of the arguments (an object)." },
        strict: { type: nullable("boolean") },
      },
    },
  },
};

/** OpenAI's limits on metadata (Shared.Metadata): 16 pairs, keys ≤ 64 characters, values ≤ 512. */
export const MAX_METADATA_PAIRS = 16;

/** OpenAI's `metadata`: up to 16 string pairs (Shared.Metadata). */
export function metadataSchema(description: string): Schema {
  return {
    type: nullable("object"),
    maxProperties: MAX_METADATA_PAIRS,
    propertyNames: { maxLength: 64 },
    additionalProperties: { type: "string", maxLength: 512 },
    description,
  };
}

/** Legacy `functions` (before `tools`): a function declaration as in a tool. */
const legacyFunctionSchema: Schema = (toolSchema.properties as Record<string, Schema>).function!;

/**
 * Fields of OpenAI's chat API that have nothing to change in a local model's output: each is
 * validated as OpenAI does and either honoured or answered with a warning (plugin.ts
 * requestWarnings), never silently dropped.
 */
const chatAccountingProperties: Record<string, Schema> = {
  store: { type: nullable("boolean"), description: "Trellis stores no completions: true is answered with a warning." },
  metadata: metadataSchema("Up to 16 string pairs kept with a stored completion; none is stored, so a warning."),
  service_tier: {
    type: nullable("string"),
    enum: ["auto", "default", "flex", "scale", "priority", null],
    description: "Trellis has one tier, default (echoed in the answer); flex, scale, priority get a warning.",
  },
  reasoning_effort: {
    type: nullable("string"),
    enum: ["none", "minimal", "low", "medium", "high", "xhigh", null],
    description:
      "On a model whose chat template reasons (Qwen3, DeepSeek-R1, GLM, …): none turns reasoning off where the template can; minimal, low, medium bound it to 256, 1024, 4096 tokens; high and xhigh by max_tokens only; any but none is also the template's reasoning_effort variable (gpt-oss's Reasoning: level); a model that reasons only when asked (Granite 3.3, Bielik, Reka, Hunyuan 3) reasons when it is given. On other models a warning.",
  },
  reasoning_budget: {
    type: nullable("integer"),
    minimum: 1,
    maximum: 1_000_000,
    description:
      "Trellis: most tokens of reasoning (its closing marker included) on a model that reasons; the answer is never cut short for it.",
  },
  verbosity: {
    type: nullable("string"),
    enum: ["low", "medium", "high", null],
    description: "Not steered (the model writes what it writes): a warning.",
  },
  prompt_cache_key: { type: nullable("string"), maxLength: 1024, description: "Not used to route or cache: a warning." },
  safety_identifier: { type: nullable("string"), maxLength: 64, description: "Your end user's id (recorded in the log)." },
  modalities: {
    type: nullable("array"),
    maxItems: 2,
    items: { type: "string", enum: ["text", "audio"] },
    description: 'Only ["text"]: "audio" is a 400 (Trellis writes no audio).',
  },
};

export function chatCompletionBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["model", "messages"],
    properties: {
      ...sharedProperties(config),
      messages: { type: "array", minItems: 1, maxItems: 4096, items: messageSchema, description: "The conversation so far." },
      max_completion_tokens: {
        type: nullable("integer"),
        minimum: 1,
        maximum: config.maxNewTokensLimit,
        description: "Most tokens to generate (the newer name of max_tokens).",
      },
      logprobs: { type: nullable("boolean"), description: "Report each token's log-probability." },
      top_logprobs: {
        type: nullable("integer"),
        minimum: 0,
        maximum: MAX_TOP_LOGPROBS,
        description: "Alternatives listed per token (needs logprobs).",
      },
      tools: { type: nullable("array"), maxItems: 128, items: toolSchema, description: "Functions the model may call." },
      tool_choice: {
        anyOf: [
          { type: "string", enum: ["none", "auto", "required"] },
          {
            type: "object",
            additionalProperties: false,
            required: ["type", "function"],
            properties: {
              type: { type: "string", enum: ["function"] },
              function: { type: "object", additionalProperties: false, required: ["name"], properties: { name: { type: "string" } } },
            },
          },
          { type: "null" },
        ],
        description: "none, auto, required, or {type: function, function: {name}}.",
      },
      parallel_tool_calls: { type: nullable("boolean"), description: "With tool_choice required: allow several calls (default true)." },
      functions: {
        type: nullable("array"),
        maxItems: 128,
        items: legacyFunctionSchema,
        description: "Legacy tools (deprecated by OpenAI): functions the model may call; not with tools.",
      },
      function_call: {
        anyOf: [
          { type: "string", enum: ["none", "auto"] },
          { type: "object", additionalProperties: false, required: ["name"], properties: { name: { type: "string" } } },
          { type: "null" },
        ],
        description: "Legacy tool_choice: none, auto or {name}; the answer is in message.function_call.",
      },
      ...chatAccountingProperties,
    },
  };
}

export function completionBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["model", "prompt"],
    properties: {
      ...sharedProperties(config),
      prompt: {
        anyOf: [
          { type: "string", maxLength: config.maxPromptChars },
          { type: "array", minItems: 1, maxItems: MAX_CHOICES, items: { type: "string", maxLength: config.maxPromptChars } },
        ],
        description: "The text to continue, or several (a choice set each).",
      },
      logprobs: {
        type: nullable("integer"),
        minimum: 0,
        maximum: 5,
        description: "Report each token's log-probability and this many alternatives.",
      },
      echo: { type: nullable("boolean"), description: "Put the prompt in front of the text." },
      best_of: {
        type: nullable("integer"),
        minimum: 1,
        maximum: MAX_CHOICES,
        description: "Only best_of = n is served (no server-side ranking).",
      },
      suffix: { type: nullable("string"), maxLength: 0, description: "Not supported (insertion): only null or empty." },
    },
  };
}
