/**
 * Typed errors that reach users (server maps them to HTTP 400).
 * `position` counts Unicode code points from the start of the pattern (as Python's
 * re.error does), not UTF-16 units; for an array pattern, `alternative` says which entry.
 */
export class RegexSyntaxError extends Error {
  readonly position: number;
  readonly construct: string | undefined;
  alternative: number | undefined;
  constructor(message: string, position: number, construct?: string) {
    super(`${message} at position ${position}`);
    this.name = "RegexSyntaxError";
    this.position = position;
    this.construct = construct;
    this.alternative = undefined;
  }
}

/** The automaton would exceed a size or time limit; raised quickly instead of hanging. */
export class RegexTooComplexError extends Error {
  readonly limit: "nfaStates" | "dfaStates" | "work" | "time" | "nesting";
  constructor(message: string, limit: "nfaStates" | "dfaStates" | "work" | "time" | "nesting") {
    super(message);
    this.name = "RegexTooComplexError";
    this.limit = limit;
  }
}
