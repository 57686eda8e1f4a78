// The TypeScript front-end's typed error: a request's `schema` (TypeScript source) or `type_name`
// that cannot become a JSON Schema (400). Positions are 1-based, in the request's source.

/** Which request field is at fault. */
export type TypeScriptSchemaField = "schema" | "type_name";

/** A limit on the work one conversion may do. */
export type TypeScriptSchemaLimit = "sourceLength" | "schemaNodes" | "nesting";

export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** TypeScript declarations we refuse: they do not parse or type-check, or name no JSON type (400). */
export class TypeScriptSchemaError extends Error {
  readonly line?: number;
  readonly column?: number;

  constructor(
    message: string,
    readonly field: TypeScriptSchemaField,
    position?: SourcePosition,
    /** Set when the refusal is a limit met, not a fault in the declarations. */
    readonly limit?: TypeScriptSchemaLimit,
  ) {
    super(position === undefined ? message : `${message} (line ${position.line}, column ${position.column})`);
    this.name = "TypeScriptSchemaError";
    if (position !== undefined) {
      this.line = position.line;
      this.column = position.column;
    }
  }
}
