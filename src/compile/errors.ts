/**
 * Errors the library raises for valid-looking requests it must refuse. The server maps them:
 * InvalidRequestError → 400, UnsatisfiableError → 422, OverloadedError → 503,
 * anything else → 500 without internals.
 */
export class InvalidRequestError extends Error {
  constructor(
    message: string,
    /** Request field at fault, e.g. "pattern", "grammar", "categories". */
    readonly field: string,
    /** Character offset into that field, where it applies. */
    readonly position?: number,
  ) {
    super(message);
    this.name = "InvalidRequestError";
  }
}

export class UnsatisfiableError extends Error {
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
    this.name = "UnsatisfiableError";
  }
}

export class OverloadedError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = "OverloadedError";
  }
}

/** This client's own share is spent (its compiles waiting, say): a 429 with Retry-After. */
export class ClientLimitError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = "ClientLimitError";
  }
}
