/** A constraint as a request names it, and the compile stage's counters. */
import { createHash } from "node:crypto";
import { DEFAULT_MAX_IGNORED_RUN } from "../grammar/index.js";
import type { ToolCallStyle, ToolDeclaration, WhitespaceStyle } from "../schema/index.js";
import type { WorkerPoolStats } from "../support/index.js";

/**
 * Consecutive %ignore'd bytes allowed anywhere unless a request says otherwise: few enough that a
 * model cannot loop on whitespace, enough for a newline and some indentation.
 */
export const MAX_IGNORED_RUN = DEFAULT_MAX_IGNORED_RUN;

/** How a JSON Schema constraint writes JSON (see schema/'s JsonSchemaOptions). */
export interface JsonSchemaTaskOptions {
  /** "default" (json.dumps' spaces or none), "compact", "indented" (json.dumps(indent=2)). */
  readonly whitespace: WhitespaceStyle;
  /** Properties the schema does not name are not written (where it has no additionalProperties). */
  readonly forbidUnnamedProperties: boolean;
  /** A keyword that cannot be enforced exactly is refused (true) or ignored with a warning. */
  readonly strict: boolean;
  /** "schema" (absent): named properties in the schema's order; "any": small objects' in any order. */
  readonly propertyOrder?: "schema" | "any";
}

/** A constraint as a request names it. */
export type ConstraintSpec =
  | { readonly kind: "text" }
  | { readonly kind: "regex"; readonly pattern: string | readonly string[] }
  | { readonly kind: "grammar"; readonly grammar: string; readonly maxIgnoredRun?: number }
  | { readonly kind: "json_schema"; readonly schema: unknown; readonly options: JsonSchemaTaskOptions }
  /** A value of a TypeScript type (Thiggle's typed completion): the type's JSON Schema, compiled as json_schema is. */
  | { readonly kind: "typescript"; readonly source: string; readonly typeName: string; readonly options: JsonSchemaTaskOptions }
  /** Free text or calls of these tools, in the chat template's format (OpenAI tool_choice "auto"). */
  | {
      readonly kind: "tool_calls";
      readonly tools: readonly ToolDeclaration[];
      readonly style: ToolCallStyle;
      readonly parallel: boolean;
      readonly options: JsonSchemaTaskOptions;
    };

/** A constraint the compile stage builds: every kind but free text. */
export type CompiledSpec = Exclude<ConstraintSpec, { kind: "text" }>;

/** The request field a constraint comes from (what its refusals name). */
export function fieldOf(kind: CompiledSpec["kind"]): string {
  return kind === "regex" ? "pattern" : kind === "grammar" ? "grammar" : kind === "tool_calls" ? "tools" : "schema";
}

/**
 * The cache key of a constraint: equal keys, equal languages. A schema's key order is kept (it
 * is the order properties are written in); a grammar's max_ignored_run is resolved first.
 */
export function keyOf(spec: CompiledSpec): string {
  switch (spec.kind) {
    case "regex":
      return digest("regex", JSON.stringify(spec.pattern));
    case "grammar":
      return digest("grammar", `${spec.maxIgnoredRun ?? MAX_IGNORED_RUN}\0${spec.grammar}`);
    case "json_schema":
      return digest("json_schema", JSON.stringify([...optionsKey(spec.options), spec.schema]));
    case "typescript":
      return digest("typescript", JSON.stringify([...optionsKey(spec.options), spec.typeName, spec.source]));
    case "tool_calls":
      return digest("tool_calls", JSON.stringify([spec.style, spec.parallel, ...optionsKey(spec.options), spec.tools]));
  }
}

const optionsKey = (o: JsonSchemaTaskOptions): unknown[] => [
  o.whitespace,
  o.forbidUnnamedProperties,
  o.strict,
  ...(o.propertyOrder === "any" ? ["any"] : []),
];

function digest(kind: string, text: string): string {
  return `${kind}:${createHash("sha256").update(text).digest("base64url")}`;
}

/** Counters of the compiled-constraint cache and its compile workers (for /metrics). */
export interface ConstraintStats {
  entries: number;
  bytes: number;
  budgetBytes: number;
  evictions: number;
  compiles: number;
  refusals: number;
  hits: number;
  pool: WorkerPoolStats;
}
