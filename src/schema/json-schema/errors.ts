// The JSON Schema front-end's typed errors. Both name where in the schema the fault is (a JSON
// pointer, "" for the root) and, where one is at fault, the keyword.

/** A pointer as messages show it: a hostile schema's pointers may be kilobytes long. */
function shown(pointer: string): string {
  return pointer.length <= 200 ? pointer : `${pointer.slice(0, 100)}…${pointer.slice(-100)}`;
}

/** A schema we refuse: malformed, remote, or asking for what we cannot enforce exactly (400). */
export class JsonSchemaError extends Error {
  constructor(
    message: string,
    readonly pointer: string,
    readonly keyword: string | null = null,
  ) {
    super(`${keyword !== null ? `${keyword} at ` : ""}${pointer === "" ? "the schema's root" : shown(pointer)}: ${message}`);
    this.name = "JsonSchemaError";
  }
}

/** A schema whose automaton would pass a size or time limit (422 "too complex"). */
export class JsonSchemaTooComplexError extends Error {
  constructor(
    message: string,
    readonly pointer: string,
    /** The limit: "time", "dfaStates", "nfaStates", "alternatives", … */
    readonly limit: string,
  ) {
    super(`too complex at ${pointer === "" ? "the root" : shown(pointer)}: ${message}`);
    this.name = "JsonSchemaTooComplexError";
  }
}

/** A keyword left unenforced under `strict: false`, or an annotation-only keyword worth saying. */
export interface JsonSchemaWarning {
  readonly keyword: string;
  readonly pointer: string;
  readonly message: string;
}

/**
 * A schema for which Trellis can write no JSON text: none satisfies it, or none of those it can
 * write (json-text.ts; what it writes is exact or less than the schema allows): 422.
 */
export class JsonSchemaUnsatisfiableError extends Error {
  constructor(readonly pointer: string) {
    super(`no JSON value satisfies the schema${pointer === "" ? "" : ` at ${pointer}`}, of those Trellis can write`);
    this.name = "JsonSchemaUnsatisfiableError";
  }
}
