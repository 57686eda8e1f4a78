/**
 * Every non-200 answer is `{"error": "<what is wrong, naming the field>", "code": <status>}`.
 * This module turns library errors, Fastify errors and ajv validation errors into that shape.
 */
import type { FastifyError } from "fastify";
import { ClientLimitError, InvalidRequestError, OverloadedError, UnsatisfiableError } from "../generate/index.js";
import { QuotaExceededError } from "../store/index.js";

export interface ErrorBody {
  error: string;
  code: number;
}

/** An error whose status and message are meant for the client as they are. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** Minimal ajv ErrorObject shape (fastify's validation errors). */
export interface AjvError {
  keyword: string;
  instancePath: string;
  schemaPath?: string;
  params: Record<string, unknown>;
  message?: string;
}

/** "/categories/2" → "categories[2]"; "" → "body". */
export function fieldName(instancePath: string): string {
  if (instancePath === "") return "body";
  let name = "";
  for (const part of instancePath.split("/").slice(1)) {
    const decoded = part.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^\d+$/.test(decoded)) name += `[${decoded}]`;
    else name += name.length === 0 ? decoded : `.${decoded}`;
  }
  return name;
}

function typeWords(type: unknown): string {
  const types = (Array.isArray(type) ? type : String(type).split(",")).filter((t) => t !== "null");
  const words: Record<string, string> = {
    integer: "an integer",
    number: "a number",
    string: "a string",
    boolean: "a boolean (true or false)",
    object: "a JSON object",
    array: "an array",
  };
  return types.map((t) => words[String(t)] ?? String(t)).join(" or ");
}

/**
 * One readable sentence for the first validation failure, naming the field.
 * `allowedFields` lists the body's known properties for unknown-field errors.
 */
export function describeValidationErrors(errors: readonly AjvError[], allowedFields: readonly string[]): string {
  if (errors.length === 0) return "request is invalid";
  // A union (string | array) reports one error per branch plus the anyOf itself: prefer the
  // deepest branch error (e.g. one array item too long), else a summary of the union.
  const union = errors.find((e) => e.keyword === "anyOf" || e.keyword === "oneOf");
  if (union) {
    const deeper = errors.find((e) => e.instancePath.startsWith(union.instancePath + "/"));
    if (deeper) return describeOne(deeper, allowedFields);
    const sameLevel = errors.find((e) => e.instancePath === union.instancePath && e.keyword !== "type" && e !== union);
    if (sameLevel) return describeOne(sameLevel, allowedFields);
    return `${fieldName(union.instancePath)} must be a string or a non-empty array of strings`;
  }
  return describeOne(errors[0]!, allowedFields);
}

function describeOne(e: AjvError, allowedFields: readonly string[]): string {
  const field = fieldName(e.instancePath);
  const p = e.params;
  switch (e.keyword) {
    case "required":
      return `${String(p.missingProperty)} is required`;
    case "additionalProperties": {
      const unknown = String(p.additionalProperty);
      if (e.instancePath === "") {
        return `unknown field "${unknown}"; allowed fields: ${allowedFields.join(", ")}`;
      }
      return `${field} has an unknown field "${unknown}"`;
    }
    case "type":
      return `${field} must be ${typeWords(p.type)}`;
    case "minimum":
      return `${field} must be ≥ ${String(p.limit)}`;
    case "exclusiveMinimum":
      return `${field} must be > ${String(p.limit)}`;
    case "maximum":
      return `${field} must be ≤ ${String(p.limit)}`;
    case "exclusiveMaximum":
      return `${field} must be < ${String(p.limit)}`;
    case "minLength":
      return Number(p.limit) === 1 ? `${field} must not be empty` : `${field} must be at least ${String(p.limit)} characters`;
    case "maxLength":
      return `${field} must be at most ${String(p.limit)} characters`;
    case "minItems":
      return Number(p.limit) === 1 ? `${field} must be a non-empty array` : `${field} must have at least ${String(p.limit)} items`;
    case "maxItems":
      return `${field} must have at most ${String(p.limit)} items`;
    case "uniqueItems": {
      const a = Number(p.i);
      const b = Number(p.j);
      return `${field} must not contain duplicates (items ${Math.min(a, b)} and ${Math.max(a, b)} are equal)`;
    }
    case "enum":
      return `${field} must be one of ${JSON.stringify(p.allowedValues)}`;
    default:
      return `${field} ${e.message ?? "is invalid"}`;
  }
}

function invalidRequestMessage(err: InvalidRequestError): string {
  let message = err.message;
  if (!message.includes(err.field)) message = `${err.field}: ${message}`;
  if (err.position !== undefined && !/position/i.test(message)) message += ` (at position ${err.position})`;
  return message;
}

export interface MappedError {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
  /** True where the error is a bug: logged with its stack, never shown to the client. */
  internal: boolean;
}

const statusOf = (status: number, message: string, headers: Record<string, string> = {}): MappedError => ({
  status,
  body: { error: message, code: status },
  headers,
  internal: false,
});

export function mapError(err: unknown, context: { allowedFields: readonly string[]; bodyLimitBytes: number }): MappedError {
  if (err instanceof HttpError) return statusOf(err.statusCode, err.message, err.headers);
  if (err instanceof QuotaExceededError) return statusOf(402, err.message);
  const e = err as Partial<FastifyError> & { name?: string; retryAfterSeconds?: number; field?: string };
  if (err instanceof InvalidRequestError || e.name === "InvalidRequestError") {
    return statusOf(400, invalidRequestMessage(err as InvalidRequestError));
  }
  if (err instanceof UnsatisfiableError || e.name === "UnsatisfiableError") {
    const u = err as UnsatisfiableError;
    const message = u.field && !u.message.includes(u.field) ? `${u.field}: ${u.message}` : u.message;
    return statusOf(422, message);
  }
  if (err instanceof ClientLimitError || e.name === "ClientLimitError") {
    const seconds = Math.max(1, Math.ceil(Number((err as ClientLimitError).retryAfterSeconds) || 1));
    return statusOf(429, (err as Error).message, { "retry-after": String(seconds) });
  }
  if (err instanceof OverloadedError || e.name === "OverloadedError") {
    const seconds = Math.max(1, Math.ceil(Number((err as OverloadedError).retryAfterSeconds) || 1));
    return statusOf(503, (err as Error).message || "server is overloaded", { "retry-after": String(seconds) });
  }
  if (e.validation) {
    return statusOf(400, describeValidationErrors(e.validation as unknown as AjvError[], context.allowedFields));
  }
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return statusOf(413, `request body is larger than the limit of ${context.bodyLimitBytes} bytes`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return statusOf(415, "Content-Type must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return statusOf(400, "request body is empty; expected a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return statusOf(400, "request body is not valid JSON");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return statusOf(400, "Content-Length does not match the request body");
  }
  // secure-json-parse refuses __proto__ / constructor.prototype keys with a SyntaxError.
  if (err instanceof SyntaxError) return statusOf(400, "request body is not valid JSON");
  const status = typeof e.statusCode === "number" ? e.statusCode : 500;
  if (status >= 400 && status < 500 && typeof e.code === "string" && e.code.startsWith("FST_")) {
    return statusOf(status, e.message ?? "bad request");
  }
  return { status: 500, body: { error: "internal server error", code: 500 }, headers: {}, internal: true };
}
