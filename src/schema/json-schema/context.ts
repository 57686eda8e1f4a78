// What the value writers (numbers.ts, strings.ts, arrays.ts, objects.ts, values.ts) need of the
// compiler (compile.ts): which language is asked for (Want), the alternative being written, and
// the compiler's languages of subschemas and regex operations under the compile's limits.

import type { ByteDfa, RegexLimits, RegexNode } from "../../regex/index.js";
import type { SchemaAt } from "./document.js";
import type { JsonSyntax } from "./json-text.js";
import type { Conjunct, Spec } from "./spec.js";

/** Which language of a subschema: where it is written, and U(S) or O(S) (see compile.ts's header). */
export interface Want {
  readonly depth: number;
  readonly over: boolean;
  readonly dupFree: boolean;
  /**
   * Over-approximations only: the deepest nesting (containers open, from the document's root)
   * of any text the language is subtracted from, so where O(S) holds "any value" it need count
   * brackets only that deep (see nestingLimit). Absent: MAX_DEPTH + freeNesting + 1.
   */
  readonly limit?: number;
  /**
   * U only: small objects in any key order, whatever the options ask. Set for the U(B) an O(S)
   * subtracts (O(oneOf [A, B]) ⊇ O(A) − U(B)): the more texts of B it holds, the fewer valid
   * texts the O keeps wrongly, and so the fewer a `not` around it takes away.
   */
  readonly anyOrder?: boolean;
}

/** A subtraction's subtrahend (WriterContext.subtracted): where it is, and its language under an O's limit. */
export interface Subtrahend {
  readonly at: string;
  write(limit: number | undefined): RegexNode;
}

/** One way a subschema can be satisfied: merged conjuncts, minus what it must not match. */
export interface Alternative {
  /** Merged in this order: a schema's own keywords before what its `$ref`/`allOf` reach. */
  readonly conjuncts: Conjunct[];
  /**
   * The same conjuncts in the order the schema's text lists them (`allOf` before `properties`
   * puts its properties first): objects are written in either order (compile.ts).
   */
  readonly textOrder: Conjunct[];
  readonly seen: Set<string>;
  readonly subtract: SchemaAt[][];
  readonly forbid: Set<string>;
  readonly require: Set<string>;
  readonly done: Set<string>;
  /**
   * Schemas a key of the object fails (one key each: the alternative holds objects of at most
   * one property, at least one): a subtrahend `{"propertyNames": X}` taken away as "its key fails
   * X" instead of by a set operation, so the values keep their calls (compile.ts, keyFailing).
   */
  readonly keyFails: SchemaAt[];
}

/** What the value writers need of the compiler (SchemaCompiler in compile.ts). */
export interface WriterContext {
  readonly syntax: JsonSyntax;
  readonly options: {
    readonly freeNesting: number;
    readonly forbidAdditionalProperties: boolean;
    readonly propertyOrder: "schema" | "any";
    /** A minuend's unnamed keys one per first character (objects.ts's bandedKeys). */
    readonly fineKeyBands?: boolean;
  };
  /** Set where a minuend's object held one unnamed key among too many to list. */
  oneUnnamedKeyWritten: boolean;
  /** annexBReason per pattern: patternLanguage is asked again for each key a pattern is tried on. */
  readonly annexBReasons: Map<string, string | null>;
  /** The language (U or O, per `want`) of the conjunction of `refs`. */
  language(refs: readonly SchemaAt[], want: Want): RegexNode;
  /** The language of a merged Spec within `alternative` (its enum, types and their keywords). */
  specLanguage(spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode;
  /** A language embedded `copies` times: one rule's calls where the copies would be too big (compile.ts). */
  repeated(node: RegexNode, copies: number, want: Want, pointer: string): RegexNode;
  /** Any JSON value nested at most `levels` containers deep (`only`: of that kind). */
  anyValue(depth: number, levels: number, want: Want, only?: "object" | "array"): ByteDfa;
  /** `open (member (sep member){0,max-1})? close` with the style's whitespace. */
  sequence(open: number, close: number, member: RegexNode, depth: number, max: number): RegexNode;
  /** The Want.limit for an over-approximation subtracted from `minuend`, values at `depth`. */
  nestingLimit(minuend: ByteDfa, depth: number): number;
  dfaOf(node: RegexNode, pointer: string): ByteDfa;
  compileNode(node: RegexNode, pointer: string, minimal?: boolean): ByteDfa;
  /** `write` with free values nesting at least `levels` deep (compile.ts). */
  withFreeNesting<T>(levels: number, write: () => T): T;
  /** Property names `refs` mention at their own level (compile.ts), at most `limit`. */
  mentionedKeys(refs: readonly SchemaAt[], limit: number): string[];
  /** A set operation's operand, written by `write` without calls (the operation needs its texts). */
  operand<T>(write: () => T): T;
  /**
   * What `writeMinuend` writes less each subtrahend's language, their free values read as calls
   * where that is exact (compile.ts); `limitAt`: the depth an O's limit is measured from (null:
   * none); `site` names the subtraction.
   */
  subtracted(
    site: string,
    writeMinuend: () => RegexNode,
    subtrahends: readonly Subtrahend[],
    limitAt: number | null,
    pointer: string,
  ): ByteDfa;
  intersect(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa;
  subtract(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa;
  /** A regex-stage build under the compile's limits, a limit met refused at `pointer`. */
  regex<T>(pointer: string, build: (limits: RegexLimits) => T): T;
  /** A schema-independent DFA, from the shared cache or built now. */
  shared(key: string, build: () => ByteDfa): ByteDfa;
  warn(keyword: string, pointer: string, message: string): void;
  /** A keyword we cannot enforce exactly: an error under strict, else a warning and ignored. */
  unsupported(keyword: string, pointer: string, message: string): void;
}
