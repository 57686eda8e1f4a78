/**
 * JSON schemas of the API, built from the configured limits. Fastify validates requests with them
 * (ajv) and @fastify/swagger publishes them as /openapi.json, so the docs are the validator.
 *
 * Optional knobs also accept `null` meaning "use the default": the seed API's Go client sends
 * `null` for booleans it was not given.
 */
import type { Config } from "../config.js";
import { MAX_IGNORED_RUN } from "../generate/index.js";

type Schema = Record<string, unknown>;

export const DEFAULTS = {
  max_new_tokens: 5,
  stop_after_match: true,
  top_k: 50,
  top_p: 1.0,
  temperature: 1.0,
  repetition_penalty: 1.0,
  allow_multiple_classes: false,
  allow_null_category: false,
  include_scores: false,
  max_ignored_run: MAX_IGNORED_RUN,
} as const;

const nullable = (type: string): string[] => [type, "null"];

function samplingProperties(config: Config): Record<string, Schema> {
  return {
    max_new_tokens: {
      type: nullable("integer"),
      minimum: 1,
      maximum: config.maxNewTokensLimit,
      default: DEFAULTS.max_new_tokens,
      description: `Most tokens to generate (1 to ${config.maxNewTokensLimit}).`,
    },
    stop_after_match: {
      type: nullable("boolean"),
      default: DEFAULTS.stop_after_match,
      description: "Stop as soon as the output is a complete match (true), or continue while the match can be extended.",
    },
    top_k: {
      type: nullable("integer"),
      minimum: 0,
      default: DEFAULTS.top_k,
      description: "Keep only the k most likely tokens; 0 = off.",
    },
    top_p: {
      type: nullable("number"),
      exclusiveMinimum: 0,
      maximum: 1,
      default: DEFAULTS.top_p,
      description: "Nucleus sampling: keep the smallest set of tokens whose probability reaches top_p.",
    },
    temperature: {
      type: nullable("number"),
      minimum: 0,
      default: DEFAULTS.temperature,
      description: "Softmax temperature; 0 = greedy.",
    },
    repetition_penalty: {
      type: nullable("number"),
      exclusiveMinimum: 0,
      default: DEFAULTS.repetition_penalty,
      description: "CTRL repetition penalty over prompt and generated tokens; 1.0 = none.",
    },
    seed: {
      type: nullable("integer"),
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "Random seed: the same seed and request give the same output.",
    },
  };
}

function promptProperty(config: Config): Schema {
  return { type: "string", maxLength: config.maxPromptChars, description: "Text the completion continues." };
}

function patternProperty(config: Config, description: string): Schema {
  return {
    anyOf: [
      { type: "string", maxLength: config.maxPatternChars },
      {
        type: "array",
        minItems: 1,
        maxItems: config.maxPatterns,
        items: { type: "string", maxLength: config.maxPatternChars },
      },
    ],
    description,
  };
}

export const completionResponse: Schema = {
  type: "object",
  required: ["completion", "tokens_generated", "stop_reason"],
  properties: {
    completion: { type: "string" },
    tokens_generated: { type: "integer" },
    stop_reason: { type: "string", enum: ["pattern_match", "token_limit"] },
  },
};

export const categorizeResponse: Schema = {
  type: "object",
  required: ["choices"],
  properties: {
    choices: { type: "array", items: { type: "string" } },
    scores: { type: "object", additionalProperties: { type: "number" } },
  },
};

export const errorResponse: Schema = {
  type: "object",
  required: ["error", "code"],
  properties: { error: { type: "string" }, code: { type: "integer" } },
};

export function regexBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt"],
    properties: {
      prompt: promptProperty(config),
      pattern: patternProperty(
        config,
        "Regex (Python `re` syntax subset), or an array of alternatives: the completion fully matches one. Exactly one of pattern/patterns.",
      ),
      patterns: patternProperty(config, "Alias of pattern (the seed API's TypeScript and Python clients send this name)."),
      ...samplingProperties(config),
    },
  };
}

/** Defaults of /v1/completion/json where they differ from the other completions'. */
export const JSON_DEFAULTS = {
  max_new_tokens: 256,
  whitespace: "default",
  forbid_unnamed_properties: false,
  strict: true,
  property_order: "schema",
} as const;

/** `property_order` of the JSON routes. */
const propertyOrderProperty: Schema = {
  type: nullable("string"),
  enum: ["schema", "any", null],
  default: JSON_DEFAULTS.property_order,
  description:
    'An object\'s named properties in the schema\'s order ("schema") or in any order, other properties among them ("any": objects of at most 8 named properties; a bigger one, or a schema past the limits that way, keeps the schema\'s order, said in warnings).',
};

/** 256, or the service's limit when that is lower. */
export function jsonMaxNewTokensDefault(config: Config): number {
  return Math.min(JSON_DEFAULTS.max_new_tokens, config.maxNewTokensLimit);
}

export function jsonSchemaBody(config: Config): Schema {
  const { stop_after_match: _stop, max_new_tokens, ...sampling } = samplingProperties(config);
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt", "schema"],
    properties: {
      prompt: promptProperty(config),
      schema: {
        anyOf: [{ type: "object" }, { type: "boolean" }],
        description:
          "JSON Schema the completion must satisfy: draft 2020-12, or 2019-09, draft-07, -06, -04 when $schema names it. References resolve within the schema only.",
      },
      max_new_tokens: {
        ...max_new_tokens,
        default: jsonMaxNewTokensDefault(config),
        description: `Most tokens to generate (1 to ${config.maxNewTokensLimit}, default ${jsonMaxNewTokensDefault(config)}); a schema whose shortest document needs more is refused (422).`,
      },
      whitespace: {
        type: nullable("string"),
        enum: ["default", "compact", "indented", null],
        default: JSON_DEFAULTS.whitespace,
        description:
          'How the JSON is laid out: "default" (Python json.dumps: `{"a": 1, "b": [1, 2]}`, or without the spaces), "compact" (no whitespace), "indented" (json.dumps(indent=2)).',
      },
      property_order: propertyOrderProperty,
      forbid_unnamed_properties: {
        type: nullable("boolean"),
        default: JSON_DEFAULTS.forbid_unnamed_properties,
        description: "Write only properties the schema names (where it says nothing of additionalProperties).",
      },
      strict: {
        type: nullable("boolean"),
        default: JSON_DEFAULTS.strict,
        description:
          "A keyword that cannot be enforced exactly is refused (400, naming it and where); false: it is ignored and listed in warnings.",
      },
      ...sampling,
    },
  };
}

export const jsonCompletionResponse: Schema = {
  ...completionResponse,
  properties: {
    ...(completionResponse.properties as Record<string, Schema>),
    warnings: {
      type: "array",
      items: {
        type: "object",
        required: ["keyword", "pointer", "message"],
        properties: { keyword: { type: "string" }, pointer: { type: "string" }, message: { type: "string" } },
      },
    },
  },
};

export function grammarBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt", "grammar"],
    properties: {
      prompt: promptProperty(config),
      grammar: {
        type: "string",
        minLength: 1,
        maxLength: config.maxGrammarChars,
        description: "Lark grammar (LALR), start rule `start`.",
      },
      max_ignored_run: {
        type: nullable("integer"),
        minimum: 0,
        maximum: config.maxIgnoredRunLimit,
        default: DEFAULTS.max_ignored_run,
        description: `Most consecutive bytes of %ignore'd text (whitespace, comments) anywhere in the completion (0 to ${config.maxIgnoredRunLimit}; 0 = none).`,
      },
      ...samplingProperties(config),
    },
  };
}

export function categorizeBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt", "categories"],
    properties: {
      prompt: promptProperty(config),
      categories: {
        type: "array",
        minItems: 1,
        maxItems: config.maxCategories,
        uniqueItems: true,
        items: { type: "string", minLength: 1, maxLength: config.maxCategoryChars },
        description: "Distinct, non-empty category names.",
      },
      allow_multiple_classes: {
        type: nullable("boolean"),
        default: DEFAULTS.allow_multiple_classes,
        description: "Return every fitting category instead of exactly one.",
      },
      allow_null_category: {
        type: nullable("boolean"),
        default: DEFAULTS.allow_null_category,
        description: "Allow an empty choice list when no category fits.",
      },
      include_scores: {
        type: nullable("boolean"),
        default: DEFAULTS.include_scores,
        description: "Also return every category's probability in `scores`.",
      },
    },
  };
}

export function allowedFields(body: Schema): string[] {
  return Object.keys((body.properties ?? {}) as Record<string, unknown>);
}

/** Most stop strings a request may give (OpenAI's limit). */
export const MAX_STOP_STRINGS = 4;

/**
 * The sampling knobs OpenAI names (temperature, top_p, stop, presence and frequency penalties),
 * as both the OpenAI API and Thiggle's /v1/completion take them; `stopNote` says where stop applies.
 */
export function openAiKnobs(stopNote: string): Record<string, Schema> {
  return {
    temperature: { type: nullable("number"), minimum: 0, maximum: 2, description: "Softmax temperature (default 1); 0 = greedy." },
    top_p: { type: nullable("number"), exclusiveMinimum: 0, maximum: 1, description: "Nucleus sampling (default 1 = off)." },
    stop: {
      anyOf: [
        { type: "string", minLength: 1, maxLength: 256 },
        { type: "array", maxItems: MAX_STOP_STRINGS, items: { type: "string", minLength: 1, maxLength: 256 } },
        { type: "null" },
      ],
      description: `Up to ${MAX_STOP_STRINGS} strings; the text ends before the first one the model writes (${stopNote}).`,
    },
    presence_penalty: {
      type: nullable("number"),
      minimum: -2,
      maximum: 2,
      description: "Subtracted once from the logit of every token generated so far.",
    },
    frequency_penalty: {
      type: nullable("number"),
      minimum: -2,
      maximum: 2,
      description: "Subtracted per occurrence from the logit of every token generated so far.",
    },
  };
}

/** Fields of Thiggle's /v1/completion and /v1/completion/typed (OpenAI-style knobs, Thiggle's names). */
function thiggleCompletionProperties(config: Config): Record<string, Schema> {
  const sampling = samplingProperties(config);
  return {
    prompt: promptProperty(config),
    max_tokens: {
      type: nullable("integer"),
      minimum: 1,
      maximum: config.maxNewTokensLimit,
      description: `Most tokens to generate (1 to ${config.maxNewTokensLimit}, default ${jsonMaxNewTokensDefault(config)}).`,
    },
    ...openAiKnobs("plain completion; a typed value cannot be cut"),
    user_id: {
      type: nullable("string"),
      maxLength: 128,
      description: "Your end user's id (the Go client sends a UUID); recorded in the request log.",
    },
    top_k: sampling.top_k!,
    seed: sampling.seed!,
  };
}

const typedProperties = (config: Config): Record<string, Schema> => ({
  schema: {
    type: "string",
    minLength: 1,
    maxLength: config.maxGrammarChars,
    description: "TypeScript source declaring exported types (interfaces, type aliases, enums).",
  },
  type_name: { type: "string", minLength: 1, maxLength: 256, description: "The exported type the completion is a value of." },
  whitespace: {
    type: nullable("string"),
    enum: ["default", "compact", "indented", null],
    default: JSON_DEFAULTS.whitespace,
    description: 'How the JSON value is laid out (as in /v1/completion/json): "default", "compact" or "indented".',
  },
  property_order: propertyOrderProperty,
});

export function typedCompletionBody(config: Config): Schema {
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt", "schema", "type_name"],
    properties: { ...thiggleCompletionProperties(config), ...typedProperties(config) },
  };
}

/** /v1/completion: plain completion, or typed when `schema` and `type_name` come (the Python client posts typed_completion here). */
export function plainCompletionBody(config: Config): Schema {
  const { whitespace: _w, ...typed } = typedProperties(config);
  return {
    type: "object",
    additionalProperties: false,
    required: ["prompt"],
    properties: {
      ...thiggleCompletionProperties(config),
      model: {
        anyOf: [
          { type: "string", maxLength: 256 },
          { type: "array", maxItems: 64, items: { type: "string", maxLength: 256 } },
          { type: "null" },
        ],
        description: "The model(s) to use: the served model's id, or a list containing it; absent or null = the served model.",
      },
      ...typed,
    },
  };
}

const thiggleUsage: Schema = {
  type: "object",
  required: ["prompt_tokens", "prediction_time_ms", "completion_tokens", "total_tokens"],
  properties: {
    prompt_tokens: { type: "integer" },
    prediction_time_ms: { type: "integer" },
    completion_tokens: { type: "integer" },
    total_tokens: { type: "integer" },
  },
};

/** Thiggle's completion answer: an id (UUID), `created` in RFC 3339, choices with unix-second `created`. */
export const thiggleCompletionResponse: Schema = {
  type: "object",
  required: ["id", "object", "created", "choices", "usage"],
  properties: {
    id: { type: "string", format: "uuid" },
    object: { type: "string" },
    created: { type: "string", format: "date-time" },
    choices: {
      type: "array",
      items: {
        type: "object",
        required: ["text", "created", "model", "finish_reason", "usage"],
        properties: {
          text: { type: "string" },
          created: { type: "integer" },
          model: { type: "string" },
          finish_reason: { type: "string", enum: ["stop", "length"] },
          usage: thiggleUsage,
        },
      },
    },
    usage: thiggleUsage,
    warnings: (jsonCompletionResponse.properties as Record<string, Schema>).warnings!,
  },
};
