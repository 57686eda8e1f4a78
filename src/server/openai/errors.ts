/**
 * The OpenAI API's error shape, `{"error": {"message", "type", "param", "code"}}`, with the status
 * the official SDKs map to their error classes. The message is the one the Thiggle routes give
 * (server/errors.ts decides it); this module adds the type, the parameter and the code.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { ChatTemplateError } from "../../prompt/index.js";
import { HttpError, mapError, type MappedError } from "../errors.js";

/**
 * The field that set a request's token limit (max_tokens, max_completion_tokens or
 * max_output_tokens), for its errors: the library's messages name max_new_tokens.
 */
export const maxTokensParam = new WeakMap<FastifyRequest, string>();

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error for the client, naming the request parameter at fault and OpenAI's code for it. */
export class OpenAIRequestError extends HttpError {
  constructor(
    statusCode: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    headers: Record<string, string> = {},
  ) {
    super(statusCode, message, headers);
    this.name = "OpenAIRequestError";
  }
}

function typeOf(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 402) return "insufficient_quota";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

function codeOf(status: number): string | null {
  if (status === 401) return "invalid_api_key";
  if (status === 402) return "insufficient_quota";
  if (status === 429) return "rate_limit_exceeded";
  if (status === 503) return "overloaded";
  return null;
}

/** The parameter a Thiggle-style message names first ("max_tokens must be ≤ 100" → max_tokens). */
function paramOf(error: unknown, message: string): string | null {
  const e = error as { field?: unknown; validation?: { instancePath: string; keyword: string; params: Record<string, unknown> }[] };
  if (typeof e.field === "string") return e.field;
  const errors = e.validation ?? [];
  // A union reports each branch's failure: the deepest one names the field (as the message does).
  const union = errors.find((v) => v.keyword === "anyOf" || v.keyword === "oneOf");
  const first = (union && errors.find((v) => v.instancePath.startsWith(`${union.instancePath}/`))) ?? errors[0];
  if (first) {
    if (first.keyword === "additionalProperties" && first.instancePath === "") return String(first.params.additionalProperty);
    if (first.keyword === "required" && first.instancePath === "") return String(first.params.missingProperty);
    const path = first.instancePath.split("/").slice(1);
    if (first.keyword === "additionalProperties") path.push(String(first.params.additionalProperty));
    if (path.length > 0) return path.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
  }
  const match = /^([a-z_]+(?:\[\d+\]|\.[a-z_]+)*)(?::| must| is not| needs)/.exec(message);
  return match ? match[1]! : null;
}

export interface MappedOpenAIError {
  status: number;
  body: OpenAIErrorBody;
  headers: Record<string, string>;
  internal: boolean;
}

/**
 * Any error of an OpenAI route → its status and OpenAI body. The library's messages name the
 * Thiggle API's `max_new_tokens`; here they name `maxTokensParam`, the field the client sent.
 */
export function mapOpenAIError(
  error: unknown,
  context: { allowedFields: readonly string[]; bodyLimitBytes: number; maxTokensParam?: string },
): MappedOpenAIError {
  const mapped = mapOpenAIErrorAsIs(error, context);
  const name = context.maxTokensParam ?? "max_tokens";
  const { error: body } = mapped.body;
  if (!body.message.includes("max_new_tokens") && body.param !== "max_new_tokens") return mapped;
  return {
    ...mapped,
    body: {
      error: {
        ...body,
        message: body.message.replace(/\bmax_new_tokens\b/g, name),
        param: body.param === "max_new_tokens" ? name : body.param,
      },
    },
  };
}

function mapOpenAIErrorAsIs(error: unknown, context: { allowedFields: readonly string[]; bodyLimitBytes: number }): MappedOpenAIError {
  if (error instanceof ChatTemplateError)
    return shaped({ status: 400, body: { error: error.message, code: 400 }, headers: {}, internal: false }, error.field, null);
  if (error instanceof OpenAIRequestError) {
    return shaped(
      { status: error.statusCode, body: { error: error.message, code: error.statusCode }, headers: error.headers, internal: false },
      error.param,
      error.code,
    );
  }
  const mapped = mapError(error, context);
  // A constraint that cannot fit max_tokens is a 400 on this API (OpenAI's clients expect one).
  if (mapped.status === 422) {
    return shaped({ ...mapped, status: 400 }, paramOf(error, mapped.body.error), "constraint_unsatisfiable");
  }
  return shaped(mapped, mapped.internal ? null : paramOf(error, mapped.body.error), null);
}

function shaped(mapped: MappedError, param: string | null, code: string | null): MappedOpenAIError {
  return {
    status: mapped.status,
    headers: mapped.headers,
    internal: mapped.internal,
    body: { error: { message: mapped.body.error, type: typeOf(mapped.status), param, code: code ?? codeOf(mapped.status) } },
  };
}

export function sendOpenAIError(
  reply: FastifyReply,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  param: string | null = null,
  code: string | null = null,
): FastifyReply {
  const body: OpenAIErrorBody = { error: { message, type: typeOf(status), param, code: code ?? codeOf(status) } };
  return reply.code(status).headers(headers).type("application/json; charset=utf-8").send(body);
}
