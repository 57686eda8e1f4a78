/**
 * `POST /v1/embeddings` in OpenAI's shape: a string, an array of strings, an array of token ids or
 * an array of token-id arrays → one unit-length vector per input, as floats or base64
 * (little-endian float32, as OpenAI sends it). Registered inside the OpenAI plugin's context, so
 * its key check and error shape are the plugin's.
 *
 * Every request is bounded before it reaches the model: at most `embeddingMaxInputs` inputs,
 * each at most `maxPromptChars` characters and `Engine.embeddingInputTokens` tokens, and
 * `embeddingMaxTokens` tokens in all. The tokens are what the key's quota is charged (reserved
 * at admission, like a generation's most tokens), and the work runs under the same concurrency
 * gate and deadline as a generation (generation.ts).
 */
import type { FastifyInstance } from "fastify";
import type { Config } from "../../config.js";
import type { EmbeddingInput, Engine } from "../../generate/index.js";
import { generation } from "../generation.js";
import { OpenAIRequestError } from "./errors.js";
import { checkModel } from "./request.js";

interface EmbeddingsBody {
  input: unknown;
  model: string;
  encoding_format?: "float" | "base64" | null;
  dimensions?: number | null;
  user?: string | null;
}

export function embeddingsBody(config: Config): Record<string, unknown> {
  return {
    type: "object",
    required: ["input", "model"],
    additionalProperties: false,
    properties: {
      // Checked item by item by the route, so a refusal names the input at fault (input[3]).
      input: {
        anyOf: [{ type: "string" }, { type: "array" }],
        description: `A string, an array of strings (at most ${config.embeddingMaxInputs}), an array of token ids, or an array of token-id arrays.`,
      },
      model: { type: "string", maxLength: 256, description: "The served model's id, as GET /v1/models lists it." },
      encoding_format: {
        type: ["string", "null"],
        enum: ["float", "base64", null],
        description: "float (default): arrays of numbers; base64: little-endian float32 bytes.",
      },
      dimensions: {
        type: ["integer", "null"],
        description: "Refused: Trellis does not shorten embeddings (no served model is known to be trained for it).",
      },
      user: { type: ["string", "null"], maxLength: 256, description: "Your end user's id (recorded in the log)." },
    },
  };
}

/** The inputs of a request as the engine takes them, with the field each came from. */
interface ParsedInputs {
  inputs: EmbeddingInput[];
  fields: string[];
  /** Tokens per input. */
  tokens: number[];
}

const SHAPES = "a string, an array of strings, an array of token ids, or an array of token-id arrays";

const isTokenId = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value);

/**
 * The request's `input` checked and counted: 400 naming the field (and index) at fault for an
 * empty one, a wrong shape, a token id the model lacks, and each bound past.
 */
export function parseEmbeddingInputs(input: unknown, engine: Engine, config: Config): ParsedInputs {
  const vocabSize = engine.vocabSize ?? 0x7fffffff;
  const perInput = engine.embeddingInputTokens;
  const parsed: ParsedInputs = { inputs: [], fields: [], tokens: [] };
  const tokenIds = (ids: readonly unknown[], field: string): Int32Array => {
    const out = new Int32Array(ids.length);
    ids.forEach((id, j) => {
      if (!isTokenId(id) || id < 0 || id >= vocabSize) {
        throw new OpenAIRequestError(400, `${field}[${j}] must be a token id in 0 … ${vocabSize - 1}`, `${field}[${j}]`);
      }
      out[j] = id;
    });
    return out;
  };
  const add = (item: unknown, field: string): void => {
    let value: EmbeddingInput;
    let count: number;
    if (typeof item === "string") {
      if (item.length === 0) throw new OpenAIRequestError(400, `${field} must not be empty`, field);
      if (item.length > config.maxPromptChars) {
        throw new OpenAIRequestError(
          400,
          `${field} is ${item.length} characters; an input may have at most ${config.maxPromptChars}`,
          field,
        );
      }
      value = item;
      count = engine.countTokens(item);
    } else if (Array.isArray(item) && item.length > 0) {
      if (item.length > perInput) throw tooLong(field, item.length, perInput);
      value = tokenIds(item, field);
      count = value.length;
    } else if (Array.isArray(item)) {
      throw new OpenAIRequestError(400, `${field} must not be empty`, field);
    } else {
      throw new OpenAIRequestError(400, `${field} must be ${SHAPES}`, field);
    }
    if (count === 0) throw new OpenAIRequestError(400, `${field} has no tokens`, field);
    if (count > perInput) throw tooLong(field, count, perInput);
    parsed.inputs.push(value);
    parsed.fields.push(field);
    parsed.tokens.push(count);
  };

  if (typeof input === "string") add(input, "input");
  else if (!Array.isArray(input)) throw new OpenAIRequestError(400, `input must be ${SHAPES}`, "input");
  else if (input.length === 0) throw new OpenAIRequestError(400, "input must not be empty", "input");
  else if (input.every((item) => typeof item === "number")) add(input, "input");
  else {
    if (input.length > config.embeddingMaxInputs) {
      throw new OpenAIRequestError(
        400,
        `input has ${input.length} items; a request may have at most ${config.embeddingMaxInputs}`,
        "input",
      );
    }
    input.forEach((item, i) => {
      if (typeof item !== "string" && !Array.isArray(item)) {
        throw new OpenAIRequestError(400, `input[${i}] must be a string or an array of token ids (input is ${SHAPES})`, `input[${i}]`);
      }
      add(item, `input[${i}]`);
    });
  }
  const total = parsed.tokens.reduce((sum, n) => sum + n, 0);
  if (total > config.embeddingMaxTokens) {
    throw new OpenAIRequestError(400, `input is ${total} tokens in all; a request may have at most ${config.embeddingMaxTokens}`, "input");
  }
  return parsed;
}

function tooLong(field: string, tokens: number, limit: number): OpenAIRequestError {
  return new OpenAIRequestError(400, `${field} is ${tokens} tokens; an embedding input may have at most ${limit}`, field);
}

/** A vector as OpenAI's base64: its float32 values, little-endian, whatever this machine's order. */
export function base64Embedding(vector: Float32Array): string {
  const bytes = new DataView(new ArrayBuffer(vector.length * 4));
  for (let i = 0; i < vector.length; i++) bytes.setFloat32(i * 4, vector[i]!, true);
  return Buffer.from(bytes.buffer).toString("base64");
}

export async function embeddingRoutes(api: FastifyInstance): Promise<void> {
  const state = api.trellis;
  const { engine, config } = state;
  const generate = generation(state);
  const modelId = engine.modelId ?? "trellis";

  api.post(
    "/v1/embeddings",
    {
      schema: {
        summary: "Embeddings of texts or token ids (OpenAI)",
        tags: ["OpenAI"],
        security: [{ bearer: [] }],
        body: embeddingsBody(config),
      },
    },
    async (request, reply) => {
      const body = request.body as EmbeddingsBody;
      checkModel(body.model, modelId);
      if (body.user) request.log.info({ user: body.user }, "OpenAI request user");
      if (body.dimensions !== undefined && body.dimensions !== null) {
        throw new OpenAIRequestError(
          400,
          "dimensions is not supported: Trellis returns the model's whole embedding (it does not know the served model to be trained for shortened ones)",
          "dimensions",
        );
      }
      const { inputs, fields, tokens } = parseEmbeddingInputs(body.input, engine, config);
      const total = tokens.reduce((sum, n) => sum + n, 0);
      const result = await generate.run(request, reply, null, (signal) => engine.embed({ inputs, fields, signal }), total);
      // The tokens read are the request's charge (usage and quota), as a generation's are.
      request.tokensGenerated = result.promptTokens;
      const base64 = body.encoding_format === "base64";
      return {
        object: "list",
        data: result.embeddings.map((vector, index) => ({
          object: "embedding",
          index,
          embedding: base64 ? base64Embedding(vector) : Array.from(vector),
        })),
        model: modelId,
        usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
      };
    },
  );
}
