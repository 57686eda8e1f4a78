// A JSON Schema → the byte DFA of the JSON texts that satisfy it, as Trellis writes JSON
// (json-text.ts). Every language is exact or an under-approximation of the schema's meaning, so a
// text the DFA accepts is always valid; where we would have to over-approximate, we refuse instead.
//
// How: a subschema and the conjunction of subschemas it implies (`allOf`, `$ref`) are *merged*
// keyword by keyword (spec.ts's Spec), never intersected as automata: two object languages
// written in different key orders have an empty intersection although their schemas agree.
// `anyOf`, `oneOf`, `if`, `dependentSchemas` and `dependentRequired` are distributed into
// alternatives, each merged alike. What a branch must *not* match (`not`, the other `oneOf`
// branches, a failed `if`) is subtracted as an automaton, using an over-approximation O(S) of the
// subtracted schema (objects in any key order, some counts dropped, "any value" where S leaves
// one free); the text we write is an under-approximation U(S). U(S) ⊆ valid(S) ⊆ O(S), so
// U(A) − O(B) ⊆ valid(A ∧ ¬B). O(B) need only hold the valid texts U(A) can contain, so its "any
// value" counts brackets only as deep as U(A)'s texts nest (nestingLimit). Languages stay nodes (graphs embedding their parts) until a set
// operation or the whole document needs a DFA.
//
// Scopes: each conjunct records the in-place applicators that reached it (Conjunct.within), so an
// `unevaluated…` anywhere counts only what its own schema's subtree evaluates; each subschema
// carries its dynamic scope (document.ts), so `$dynamicRef` resolves as evaluation would get there.
//
// Objects are written with the schema's properties in its order, then any others. Values the
// schema leaves free (`{}`, `true`, absent `items`/`additionalProperties`) are written nested at
// most `freeNesting` levels; a recursive schema is unrolled MAX_RECURSION times (recursion is not
// regular), a maxLength past MAX_COUNTED_LENGTH written as that.
//
// Duplicate keys: JSON parsers keep the last of two equal keys. Each pair we write satisfies its
// own schema, so the kept one does; but a subtraction needs the minuend free of duplicates (an
// earlier pair's value escapes O(S)'s check), so a minuend writes at most one key beyond the
// named ones, and towards `minProperties` only one unnamed key counts (a repeat would count twice).

import {
  compileRegexNode,
  annexBReason,
  finiteMembers,
  ecmaSearchNode,
  intersectDfas,
  isEmptyLanguage,
  LanguageGraph,
  matchesString,
  RegexSyntaxError,
  RegexTooComplexError,
  subtractDfas,
  subtractStrings,
  regexClock,
  REGEX_MAX_WORK,
  type ByteDfa,
  type RegexLimits,
  type RegexNode,
} from "../../regex/index.js";
import { ByteLruCache } from "../../support/index.js";
import { escapePointer, MAX_SCHEMA_NESTING, nestedDeeperThan, SchemaDocument, type Draft, type SchemaAt } from "./document.js";
import { JsonSchemaError, JsonSchemaTooComplexError, JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "./errors.js";
import { formatNode } from "./formats.js";
import {
  alt,
  ANY_NUMBER_TEXT,
  EMPTY,
  concat,
  dfaNode,
  codePointBounds,
  encodeNode,
  hasOneSpelling,
  anyEncodedChar,
  countedValueText,
  FALSE_TEXT,
  EXPONENT_NUMBER_TEXT,
  INTEGER_TEXT,
  INTEGER_VALUED_TEXT,
  JsonSyntax,
  maxNesting,
  literal,
  NULL_TEXT,
  NUMBER_TEXT,
  quoted,
  quoteDfa,
  range,
  repeat,
  anyStringText,
  stringLiteral,
  TRUE_TEXT,
  type WhitespaceStyle,
} from "./json-text.js";
import { integerRangeNode, multipleOfNode, numberRangeNode } from "./numeric.js";
import { isObject, mergeConjuncts, type ArrayPart, type Conjunct, type ObjectPart, type Spec } from "./spec.js";

export interface JsonSchemaOptions {
  /** "default": `{"a": 1, "b": [1, 2]}` or compact; "compact": no whitespace; "indented": json.dumps(indent=2). */
  readonly whitespace?: WhitespaceStyle;
  /** Properties the schema does not name (no `additionalProperties`) are not written. */
  readonly forbidAdditionalProperties?: boolean;
  /** A keyword we cannot enforce exactly is an error (true) or ignored with a warning (false). */
  readonly strict?: boolean;
  /** Nesting levels of a value the schema leaves free. */
  readonly freeNesting?: number;
  /** Per-automaton sizes, and the whole compile's work (maxWork) and wall-clock valve (timeoutMs). */
  readonly limits?: RegexLimits;
}

export const DEFAULT_JSON_SCHEMA_OPTIONS = {
  whitespace: "default" as WhitespaceStyle,
  forbidAdditionalProperties: false,
  strict: true,
  freeNesting: 2,
  limits: { maxDfaStates: 100_000, maxNfaStates: 400_000, maxWork: REGEX_MAX_WORK, timeoutMs: Number.POSITIVE_INFINITY } as RegexLimits,
};

export interface CompiledJsonSchema {
  readonly dfa: ByteDfa;
  readonly draft: Draft;
  readonly warnings: readonly JsonSchemaWarning[];
}

/**
 * DFAs that depend on no schema (any value, strings of a length, a pattern's or a format's
 * strings), kept across compiles: a compile worker builds each once. Bounded by bytes.
 */
const SHARED_DFA_BYTES = 64 * 1024 * 1024;
const sharedDfas = new ByteLruCache<SizedDfa>(SHARED_DFA_BYTES);

/**
 * A shared DFA with the work units its build counted: a compile that finds it cached is charged
 * them again (sharedDfa), so a compile's work, and the verdict of its work limit, is the same
 * whatever the worker compiled before.
 */
class SizedDfa {
  constructor(
    readonly dfa: ByteDfa,
    readonly work: number,
  ) {}

  retainedBytes(): number {
    return this.dfa.next.byteLength + this.dfa.accepting.byteLength + this.dfa.minBytesToAccept.byteLength + 512;
  }
}

/** The shared DFA under `key`, its build's work charged to the compile in progress; undefined if none. */
function sharedDfa(key: string): ByteDfa | undefined {
  const known = sharedDfas.get(key);
  if (known === undefined) return undefined;
  regexClock.tick(known.work);
  return known.dfa;
}

/** Builds a shared DFA and keeps it with the work its build counted (since `workBefore`). */
function keepShared(key: string, dfa: ByteDfa, workBefore: number): ByteDfa {
  sharedDfas.set(key, new SizedDfa(dfa, regexClock.used - workBefore));
  return dfa;
}

/** Most alternatives one subschema may distribute into (anyOf × oneOf × if × dependencies). */
const MAX_ALTERNATIVES = 256;
/** Deepest value nesting a schema may ask for. */
const MAX_DEPTH = 64;
/** An object's named member: its value's language, and whether it must be written. */
interface Member {
  readonly key: string;
  readonly value: RegexNode;
  readonly required: boolean;
}

/** Keys no named member takes, of one patternProperties region, and their values' language. */
interface Region {
  readonly key: RegexNode;
  readonly value: RegexNode;
}

/** Longest chain of `$ref`s and `allOf`s followed from one subschema. */
const MAX_REFERENCE_CHAIN = 256;
/** How many times a recursive subschema is written inside itself. */
const MAX_RECURSION = 3;
/**
 * Longest string we count characters of: a longer maxLength is written as this (an automaton
 * counts each character as states, about twelve per character with the escapes).
 */
const MAX_COUNTED_LENGTH = 256;
/** Longest array whose positions are states (maxItems, minItems, positional items). */
const MAX_ARRAY_POSITIONS = 4096;
/** Most contains keywords counted on one array (items fall into 2^n classes). */
const MAX_CONTAINS = 3;
/** Most distinct values the items of a uniqueItems array may take (its states are their subsets). */
const MAX_UNIQUE_VALUES = 8;
/** Most texts (spellings of those values) read off the item automaton, and their longest. */
const MAX_UNIQUE_TEXTS = 64;
const MAX_UNIQUE_TEXT_BYTES = 1024;
/** Keys of an enum/const object whose every order an over-approximation spells out (4! = 24). */
const MAX_PERMUTED_KEYS = 4;
/** Most key orders of one enum/const value written when the rest does not allow its own (4! = 24). */
const MAX_PERMUTED_ORDERS = 24;
/** The largest minProperties or maxProperties an over-approximated object counts its members to. */
const MAX_COUNTED_MEMBERS = 4;
/** Unnamed keys spelled out as members of their own where minProperties needs several (texts). */
const MAX_LISTED_KEYS = 64;
/** Required keys an over-approximated object checks the presence of. */
const MAX_TRACKED_REQUIRED = 3;
/** Most `patternProperties` (over all merged parts) one object may have: regions are 2^n. */
const MAX_PATTERNS = 6;

/**
 * Compiles a JSON Schema (object or boolean) to the DFA of the JSON texts we may write for it.
 * Throws JsonSchemaError (400: malformed, remote `$ref`, a keyword we cannot enforce under
 * `strict`), JsonSchemaTooComplexError (422: a size or time limit), JsonSchemaUnsatisfiableError.
 */
export function compileJsonSchema(schema: unknown, options: JsonSchemaOptions = {}): CompiledJsonSchema {
  if (typeof schema !== "boolean" && !isObject(schema)) throw new JsonSchemaError("a schema must be an object or a boolean", "");
  if (nestedDeeperThan(schema, MAX_SCHEMA_NESTING)) throw new JsonSchemaError(`nested deeper than ${MAX_SCHEMA_NESTING} levels`, "");
  const document = new SchemaDocument(schema);
  const limits = { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, ...options.limits };
  const compiler = new SchemaCompiler(document, { ...DEFAULT_JSON_SCHEMA_OPTIONS, ...options, limits });
  let dfa: ByteDfa;
  // One frame of work (and of the wall-clock valve) for the whole compile: every DFA built,
  // product taken or shared DFA reused in it counts against it.
  const frame = regexClock.start(limits.maxWork ?? REGEX_MAX_WORK, limits.timeoutMs ?? Number.POSITIVE_INFINITY);
  try {
    dfa = compiler.dfaOf(compiler.language([document.rootAt], { depth: 0, over: false, dupFree: false }), "");
  } catch (error) {
    // The limits above bound every recursion we know of; should one be missed, the answer is
    // still a refusal, not a crash.
    if (error instanceof RangeError && /call stack/.test(error.message)) {
      throw new JsonSchemaTooComplexError("nested too deeply to compile", "", "depth");
    }
    throw compiler.overLimit(error, "");
  } finally {
    regexClock.stop(frame);
  }
  if (isEmptyLanguage(dfa)) throw new JsonSchemaUnsatisfiableError("");
  return { dfa, draft: document.draft, warnings: compiler.warnings };
}

/** Which language of a subschema: where it is written, and U(S) or O(S) (see the header). */
interface Want {
  readonly depth: number;
  readonly over: boolean;
  readonly dupFree: boolean;
  /**
   * Over-approximations only: the deepest nesting (containers open, from the document's root)
   * of any text the language is subtracted from, so where O(S) holds "any value" it need count
   * brackets only that deep (see nestingLimit). Absent: MAX_DEPTH + freeNesting + 1.
   */
  readonly limit?: number;
}

/** One way a subschema can be satisfied: merged conjuncts, minus what it must not match. */
interface Alternative {
  readonly conjuncts: Conjunct[];
  readonly seen: Set<string>;
  readonly subtract: SchemaAt[][];
  readonly forbid: Set<string>;
  readonly require: Set<string>;
  readonly done: Set<string>;
}

type Options = typeof DEFAULT_JSON_SCHEMA_OPTIONS & JsonSchemaOptions;

class SchemaCompiler {
  readonly warnings: JsonSchemaWarning[] = [];
  private readonly warned = new Set<string>();
  /** annexBReason per pattern: patternLanguage is asked again for each key a pattern is tried on. */
  private readonly annexBReasons = new Map<string, string | null>();
  private readonly syntax: JsonSyntax;
  /** Languages by subschema(s) and Want: nodes, compiled to a DFA on their second use. */
  private readonly memo = new Map<string, RegexNode>();
  /** Subschemas being compiled, and how many times each is open (recursion unrolls). */
  private readonly inProgress = new Map<string, number>();
  /**
   * Self-references being expanded on the stack now (recursion is unrolled MAX_RECURSION of them
   * deep, on every path alike). A language built inside a recursion depends on it — the innermost
   * level writes no deeper nesting —, so languages are memoised per depth: the same subschema met
   * at another depth is another language.
   */
  private unrolled = 0;

  constructor(
    private readonly document: SchemaDocument,
    private readonly options: Options,
  ) {
    this.syntax = new JsonSyntax(options.whitespace);
  }

  // ---- the regex stage, under one deadline for the whole compile --------------------------

  private limits(pointer: string): RegexLimits {
    try {
      regexClock.read();
    } catch (error) {
      throw this.overLimit(error, pointer);
    }
    // The compile's frame (compileJsonSchema) bounds work and time; each DFA has the size limits.
    return { maxDfaStates: this.options.limits.maxDfaStates, maxNfaStates: this.options.limits.maxNfaStates };
  }

  /** A regex limit met inside the compile, as the schema's refusal at `pointer`. */
  overLimit(error: unknown, pointer: string): unknown {
    if (!(error instanceof RegexTooComplexError)) return error;
    if (error.limit === "work") {
      return new JsonSchemaTooComplexError(`compiling needs more than ${this.options.limits.maxWork} units of work`, pointer, "work");
    }
    if (error.limit === "time") {
      return new JsonSchemaTooComplexError(`compiling took longer than ${this.options.limits.timeoutMs} ms`, pointer, "time");
    }
    return new JsonSchemaTooComplexError(error.message, pointer, error.limit);
  }

  private regex<T>(pointer: string, build: (limits: RegexLimits) => T): T {
    try {
      return build(this.limits(pointer));
    } catch (error) {
      throw this.overLimit(error, pointer);
    }
  }

  private compileNode(node: RegexNode, pointer: string, minimal = true): ByteDfa {
    return this.regex(pointer, (limits) => compileRegexNode(node, { ...limits, minimal }));
  }

  /**
   * The DFA of a language. Languages stay nodes (graphs embedding their parts) until something
   * needs a DFA: a set operation, a membership test, the whole document. One subset construction
   * over the whole then replaces one per nesting level.
   *
   * Left unminimized (determinize): a subschema's subset construction is within a few percent of
   * minimal, and finishing it was ~40% of its cost. Products (set operations) still return
   * minimal DFAs, whatever their operands; a language used twice is embedded minimal (see
   * `language`), and so are the schema-independent DFAs shared between compiles.
   */
  dfaOf(node: RegexNode, pointer: string): ByteDfa {
    return node.kind === "dfa" ? node.dfa : this.compileNode(node, pointer, false);
  }

  private intersect(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa {
    return this.regex(pointer, (limits) => intersectDfas(a, b, limits));
  }

  private subtract(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa {
    return this.regex(pointer, (limits) => subtractDfas(a, b, limits));
  }

  /** A schema-independent DFA, from the shared cache or built now. */
  private shared(key: string, build: () => ByteDfa): ByteDfa {
    const known = sharedDfa(key);
    if (known) return known;
    const before = regexClock.used;
    return keepShared(key, build(), before);
  }

  // ---- warnings and refusals -----------------------------------------------------------

  warn(keyword: string, pointer: string, message: string): void {
    const key = `${pointer} ${keyword}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warnings.push({ keyword, pointer, message });
  }

  /** A keyword we cannot enforce exactly: an error under strict, else a warning and ignored. */
  unsupported(keyword: string, pointer: string, message: string): void {
    if (this.options.strict) throw new JsonSchemaError(`${message} (with "strict": false it is ignored, with a warning)`, pointer, keyword);
    this.warn(keyword, pointer, `not enforced: ${message}`);
  }

  // ---- a subschema's language ----------------------------------------------------------

  /** The language (U or O, per `want`) of the conjunction of `refs`. */
  language(refs: readonly SchemaAt[], want: Want): RegexNode {
    if (refs.length === 0) return dfaNode(this.anyValue(want.depth, this.options.freeNesting, want));
    const pointers = refs.map((r) => r.pointer).join("|");
    // Where a dynamic reference's target depends on the dynamic scope, so may the language.
    const scopes = this.document.scopeMatters ? ` ${refs.map((r) => this.document.dynamicKey(r)).join("|")}` : "";
    const pointer = refs[0]?.pointer ?? "";
    if (want.depth > MAX_DEPTH) throw new JsonSchemaTooComplexError(`values nested deeper than ${MAX_DEPTH} levels`, pointer, "depth");
    const style = this.syntax.style === "indented" ? want.depth : 0;
    // An over-approximation's language depends on how much deeper than here its limit is.
    const over = want.over ? `O${want.limit === undefined ? "" : want.limit - want.depth}` : "U";
    const baseKey = `${pointers}${scopes}#${style}${over}${want.dupFree ? "d" : ""}`;
    const known = this.memo.get(`${baseKey}@${this.unrolled}`);
    if (known) {
      // Used twice: embedded as its minimal DFA from now on, not as the graph it was built as
      // (minimal: each copy of it in a DFA around it costs states).
      if (known.kind === "dfa") return known;
      const compiled = dfaNode(this.compileNode(known, pointer));
      this.memo.set(`${baseKey}@${this.unrolled}`, compiled);
      return compiled;
    }
    const open = this.inProgress.get(pointers) ?? 0;
    if (open > 0) {
      // Recursion: what we write is unrolled MAX_RECURSION times, deeper nesting is not written.
      // An over-approximation cannot stop there (it must hold every deeper document): where the
      // schema re-enters itself it holds any value (of any depth a text we write can reach).
      if (want.over) return dfaNode(this.anyValue(want.depth, this.options.freeNesting, want));
      if (this.unrolled > MAX_RECURSION) return EMPTY;
    }
    const depth = this.unrolled;
    this.inProgress.set(pointers, open + 1);
    if (open > 0) this.unrolled++;
    let node: RegexNode;
    try {
      node = this.compileAlternatives(refs, want, pointer);
    } finally {
      this.unrolled = depth;
      if (open === 0) this.inProgress.delete(pointers);
      else this.inProgress.set(pointers, open);
    }
    this.memo.set(`${baseKey}@${depth}`, node);
    return node;
  }

  private compileAlternatives(refs: readonly SchemaAt[], want: Want, pointer: string): RegexNode {
    const alternatives = this.alternatives(refs, want);
    const parts: RegexNode[] = [];
    for (const alternative of alternatives) {
      if (
        alternative.conjuncts.length === 0 &&
        alternative.subtract.length === 0 &&
        alternative.forbid.size === 0 &&
        alternative.require.size === 0
      ) {
        parts.push(dfaNode(this.anyValue(want.depth, this.options.freeNesting, want)));
        continue;
      }
      // What provably shares no value with the alternative takes nothing away from it: most
      // `oneOf`s (branches told apart by a type, or by a required property's listed values).
      const mine = alternative.subtract.length === 0 ? null : this.valueFacts(alternative);
      const subtract = alternative.subtract.filter((subtrahend) => !this.disjoint(mine!, subtrahend));
      const minuendWant = subtract.length > 0 && !want.over ? { ...want, dupFree: true } : want;
      const spec = mergeConjuncts(alternative.conjuncts, this.document, this, refs.length === 1 ? this.scopeRoot(refs[0]!) : null);
      const base = this.specLanguage(spec, alternative, minuendWant, pointer);
      if (subtract.length === 0) {
        parts.push(base);
        continue;
      }
      let dfa = this.dfaOf(base, pointer);
      // What is subtracted only shrinks the minuend: one limit holds for every subtrahend.
      const over = !want.over;
      const limit = over ? this.nestingLimit(dfa, want.depth) : undefined;
      for (const subtrahend of subtract) {
        if (isEmptyLanguage(dfa)) break;
        const other = this.language(subtrahend, { depth: want.depth, over, dupFree: false, limit });
        const at = subtrahend[0]?.pointer ?? pointer;
        dfa = this.subtract(dfa, this.dfaOf(other, at), at);
      }
      if (!isEmptyLanguage(dfa)) parts.push(dfaNode(dfa));
    }
    return alt(parts);
  }

  /**
   * Whether no value meets both the alternative and `other` (all of its schemas), read off the
   * keywords every value of each must meet (valueFacts): their types or listed values share
   * nothing, or, where only objects could meet both, a property one of them requires is told
   * apart (its types or listed values share nothing, or the other side forbids it: a closed
   * object, an alternative's absent dependency). Sound, not complete: false means "not shown".
   * Skipping a subtraction of what is disjoint keeps U exact (nothing of it was in `other`) and
   * O a superset.
   */
  private disjoint(mine: ValueFacts, other: readonly SchemaAt[]): boolean {
    const probe: Alternative = { conjuncts: [], seen: new Set(), subtract: [], forbid: new Set(), require: new Set(), done: new Set() };
    if (!this.flatten(other, probe)) return true; // `other` holds no value at all
    // Its keywords are still read (and a malformed one refused), as compiling it would have.
    mergeConjuncts(probe.conjuncts, this.document, this);
    const theirs = this.valueFacts(probe);
    if (apart(mine.value, theirs.value)) return true;
    // A value both could hold that is not an object escapes `required` and `properties`.
    const common = JSON_TYPES.filter((t) => mine.value.types.has(t) && theirs.value.types.has(t));
    if (common.length > 1 || common[0] !== "object") return false;
    const excludes = (facts: ValueFacts, name: string): boolean =>
      facts.forbidden.has(name) || (facts.allowed !== null && !facts.allowed.has(name));
    for (const [one, two] of [
      [mine, theirs],
      [theirs, mine],
    ] as const) {
      for (const name of one.required) {
        if (excludes(two, name)) return true;
        const a = one.properties.get(name);
        const b = two.properties.get(name);
        if (a !== undefined && b !== undefined && apart(a, b)) return true;
      }
    }
    return false;
  }

  /** valueFacts of an alternative's conjuncts, with its required and forbidden keys. */
  private valueFacts(alternative: Alternative): ValueFacts {
    return valueFacts(alternative.conjuncts, alternative.require, alternative.forbid, this.document.draft >= 6);
  }

  /**
   * The schema whose subtree holds every conjunct that may evaluate something, when `at` is all
   * a value must meet: `at` itself, or the end of a chain of schemas that are a `$ref` and
   * nothing else that evaluates (definitions, descriptions): `{"$ref": "#/$defs/X"}` is X's scope.
   */
  private scopeRoot(at: SchemaAt): string {
    let current = at;
    for (let chain = 0; chain < MAX_REFERENCE_CHAIN; chain++) {
      const schema = current.schema;
      if (!isObject(schema) || typeof schema.$ref !== "string") break;
      if (!Object.keys(schema).every((k) => k === "$ref" || SCOPE_NEUTRAL.has(k) || isDescriptive(k))) break;
      current = this.document.resolve(schema.$ref, current);
    }
    return current.pointer;
  }

  /** `refs` with `allOf` and `$ref` expanded, then anyOf/oneOf/if/dependencies distributed. */
  private alternatives(refs: readonly SchemaAt[], want: Want): Alternative[] {
    const first: Alternative = { conjuncts: [], seen: new Set(), subtract: [], forbid: new Set(), require: new Set(), done: new Set() };
    if (!this.flatten(refs, first)) return [];
    const finished: Alternative[] = [];
    const pending = [first];
    while (pending.length > 0) {
      const alternative = pending.pop()!;
      const split = this.splitFirst(alternative, want);
      if (split === null) finished.push(alternative);
      else pending.push(...split);
      if (finished.length + pending.length > MAX_ALTERNATIVES) {
        throw new JsonSchemaTooComplexError(
          `anyOf/oneOf/if/dependencies combine into more than ${MAX_ALTERNATIVES} alternatives`,
          refs[0]?.pointer ?? "",
          "alternatives",
        );
      }
    }
    return finished;
  }

  /**
   * Adds `refs` (and what `allOf` and `$ref` imply) to the alternative; false: a `false` schema.
   * `within`: the conjuncts whose in-place applicators reached `refs` (see Conjunct.within).
   */
  private flatten(refs: readonly SchemaAt[], into: Alternative, chain = 0, within: readonly string[] = []): boolean {
    if (chain > MAX_REFERENCE_CHAIN) {
      throw new JsonSchemaTooComplexError(`$ref/allOf chains longer than ${MAX_REFERENCE_CHAIN}`, refs[0]?.pointer ?? "", "referenceChain");
    }
    for (const at of refs) {
      const schema = at.schema;
      if (schema === true) continue;
      if (schema === false) return false;
      if (!isObject(schema)) throw new JsonSchemaError("a schema must be an object or a boolean", at.pointer);
      if (into.seen.has(at.pointer)) continue;
      into.seen.add(at.pointer);
      const inner = [...within, at.pointer];
      // Its own keywords first, then what it reaches: an object's properties are written in
      // conjunct order, a schema's own before those of its $ref (as people write instances).
      // Before 2019-09 a $ref's siblings are ignored.
      if (!(this.document.refOverridesSiblings && schema.$ref !== undefined)) into.conjuncts.push({ at, schema, within: inner });
      // A dynamic reference is followed to the target its dynamic scope gives (resolveDynamic);
      // used in a draft that does not have it, it is refused.
      for (const dynamic of ["$dynamicRef", "$recursiveRef"] as const) {
        const value = schema[dynamic];
        if (value === undefined || this.document.draft < 2019) continue;
        const native = dynamic === "$dynamicRef" ? this.document.draft === 2020 : this.document.draft === 2019;
        if (!native) {
          this.unsupported(dynamic, at.pointer, `${dynamic} is not supported where it is not a keyword of this draft`);
          continue;
        }
        if (typeof value !== "string") throw new JsonSchemaError(`${dynamic} must be a string`, `${at.pointer}/${dynamic}`, dynamic);
        if (!this.flatten([this.document.resolveDynamic(dynamic, value, at)], into, chain + 1, inner)) return false;
      }
      const ref = schema.$ref;
      if (ref !== undefined) {
        if (typeof ref !== "string") throw new JsonSchemaError("$ref must be a string", `${at.pointer}/$ref`, "$ref");
        const target = this.document.resolve(ref, at);
        if (this.document.refOverridesSiblings) {
          const ignored = Object.keys(schema).filter((k) => k !== "$ref" && k !== "definitions" && k !== "$comment" && !isDescriptive(k));
          if (ignored.length > 0) {
            this.warn("$ref", at.pointer, `keywords beside $ref are ignored in this draft: ${ignored.join(", ")}`);
          }
          if (!this.flatten([target], into, chain + 1, inner)) return false;
          continue;
        }
        if (!this.flatten([target], into, chain + 1, inner)) return false;
      }
      if (schema.allOf !== undefined && !this.flatten(this.schemaList(at, "allOf"), into, chain + 1, inner)) return false;
    }
    return true;
  }

  /** The subschemas of a list keyword (allOf, anyOf, oneOf, prefixItems, array items). */
  schemaList(at: SchemaAt, keyword: string): SchemaAt[] {
    const value = (at.schema as Record<string, unknown>)[keyword];
    const pointer = `${at.pointer}/${keyword}`;
    if (!Array.isArray(value) || (value.length === 0 && keyword !== "prefixItems" && keyword !== "items")) {
      throw new JsonSchemaError(`${keyword} must be a non-empty array of schemas`, pointer, keyword);
    }
    return value.map((schema, i) => this.document.inside(at, schema, `${pointer}/${i}`));
  }

  /** The subschema a keyword holds. */
  child(at: SchemaAt, ...path: string[]): SchemaAt {
    let schema: unknown = at.schema;
    for (const p of path) schema = (schema as Record<string, unknown>)[p];
    return this.document.inside(at, schema, `${at.pointer}/${path.map(escapePointer).join("/")}`);
  }

  /**
   * Distributes the first applicator not yet distributed (anyOf, oneOf, not, if, dependencies) of
   * the alternative into the alternatives it stands for; null when none is left.
   */
  private splitFirst(alternative: Alternative, want: Want): Alternative[] | null {
    for (const conjunct of alternative.conjuncts) {
      const { at, schema } = conjunct;
      for (const keyword of SPLIT_KEYWORDS) {
        if (schema[keyword] === undefined) continue;
        const mark = `${at.pointer} ${keyword}`;
        if (alternative.done.has(mark)) continue;
        if (keyword === "dependencies" && this.document.draft >= 2019) continue;
        if ((keyword === "dependentRequired" || keyword === "dependentSchemas") && this.document.draft < 2019) continue;
        if (keyword === "if" && this.document.draft < 7) continue;
        alternative.done.add(mark);
        return this.split(alternative, conjunct, keyword, want);
      }
    }
    return null;
  }

  private split(alternative: Alternative, { at, schema, within }: Conjunct, keyword: string, want: Want): Alternative[] {
    const scopes = within ?? [at.pointer];
    const fork = (extra: readonly SchemaAt[], change?: (a: Alternative) => void): Alternative[] => {
      const a = copyAlternative(alternative);
      if (!this.flatten(extra, a, 0, scopes)) return [];
      change?.(a);
      return [a];
    };
    switch (keyword) {
      case "anyOf":
        return this.schemaList(at, "anyOf").flatMap((member) => fork([member]));
      case "oneOf": {
        const members = this.schemaList(at, "oneOf");
        return members.flatMap((member, i) => {
          const others = members.filter((_, j) => j !== i).map((m) => [m]);
          // O-mode too: a text in exactly one branch is in its O and in no other's U.
          return fork([member], (a) => a.subtract.push(...others));
        });
      }
      case "not":
        return fork([], (a) => a.subtract.push([this.child(at, "not")]));
      case "if": {
        const ifAt = this.child(at, "if");
        const thenAt = schema.then === undefined ? [] : [this.child(at, "then")];
        const elseAt = schema.else === undefined ? [] : [this.child(at, "else")];
        return [...fork([ifAt, ...thenAt]), ...fork(elseAt, (a) => a.subtract.push([ifAt]))];
      }
      default:
        return this.splitDependencies(alternative, at, keyword, want, scopes);
    }
  }

  /**
   * dependentRequired / dependentSchemas / dependencies: each trigger key splits an alternative
   * into "absent" and "present, with what it demands". An over-approximation may ignore them.
   */
  private splitDependencies(alternative: Alternative, at: SchemaAt, keyword: string, want: Want, within: readonly string[]): Alternative[] {
    const map = (at.schema as Record<string, unknown>)[keyword];
    if (!isObject(map)) throw new JsonSchemaError("must be an object", `${at.pointer}/${keyword}`, keyword);
    if (want.over) return [alternative];
    let current: Alternative[] = [alternative];
    for (const [trigger, demand] of Object.entries(map)) {
      const pointer = `${at.pointer}/${keyword}/${escapePointer(trigger)}`;
      const next: Alternative[] = [];
      for (const a of current) {
        const absent = copyAlternative(a);
        absent.forbid.add(trigger);
        next.push(absent);
        const present = copyAlternative(a);
        if (Array.isArray(demand)) {
          // Keys no `properties` names are written in `require` order: what the trigger needs
          // before it.
          for (const k of demand) {
            if (typeof k !== "string") throw new JsonSchemaError("must list property names (strings)", pointer, keyword);
            present.require.add(k);
          }
          present.require.add(trigger);
          next.push(present);
        } else if (keyword === "dependentRequired") {
          throw new JsonSchemaError("must be an array of property names", pointer, keyword);
        } else if (this.flatten([this.child(at, keyword, trigger)], present, 0, within)) {
          present.require.add(trigger);
          next.push(present);
        }
      }
      current = next;
      if (current.length > MAX_ALTERNATIVES) {
        throw new JsonSchemaTooComplexError(
          `${keyword} splits into more than ${MAX_ALTERNATIVES} alternatives`,
          at.pointer,
          "alternatives",
        );
      }
    }
    return current;
  }

  // ---- a merged Spec's language ------------------------------------------------------------

  private specLanguage(spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode {
    const typed: RegexNode[] = [];
    if (spec.enumValues !== null) return this.enumLanguage(spec, alternative, want, pointer);
    if (spec.types.null) typed.push(NULL_TEXT);
    if (spec.types.boolean) typed.push(TRUE_TEXT, FALSE_TEXT);
    if (spec.types.number !== "none") {
      const numbers = this.numberLanguage(spec, want, pointer);
      if (numbers) typed.push(dfaNode(numbers));
    }
    if (spec.types.string) {
      const strings = this.stringLanguage(spec, want, pointer);
      if (strings) typed.push(dfaNode(strings));
    }
    if (spec.types.array) {
      const arrays = this.arrayLanguage(spec, want, pointer);
      if (arrays) typed.push(arrays);
    }
    if (spec.types.object) {
      const objects = this.objectLanguage(spec, alternative, want, pointer);
      if (objects) typed.push(objects);
    }
    return alt(typed);
  }

  /** `enum`/`const`: the listed values, written canonically, each checked against the rest. */
  private enumLanguage(spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode {
    const withoutEnum: Spec = { ...spec, enumValues: null };
    let rest: ByteDfa | null = null;
    const parts: RegexNode[] = [];
    for (const value of spec.enumValues!) {
      if (!typeAllows(spec, value)) continue;
      // A literal has no repeated keys: the rest need not be written duplicate-free to keep it so.
      if (rest === null) rest = this.dfaOf(this.specLanguage(withoutEnum, alternative, { ...want, dupFree: false }, pointer), pointer);
      // A value we write one way only (most enums: strings, numbers) is kept or not by a walk.
      const only = want.over ? null : onlyText(value);
      if (only !== null) {
        if (matchesString(rest, only)) parts.push(literal(only));
        continue;
      }
      let kept = this.intersect(this.compileNode(this.valueText(value, want), pointer), rest, pointer);
      // The rest writes an object's properties in its own order (`properties`, `required`): an
      // object value it allows only in another key order is kept in that order (while the
      // orders are few), not dropped as if the schema could not be met.
      if (isEmptyLanguage(kept) && !want.over && keyOrders(value) <= MAX_PERMUTED_ORDERS) {
        kept = this.intersect(this.compileNode(this.valueText(value, want, true), pointer), rest, pointer);
      }
      if (!isEmptyLanguage(kept)) parts.push(dfaNode(kept));
    }
    return alt(parts);
  }

  /**
   * The texts we write for one JSON value (over: every text of an equal value we might meet).
   * An object's keys are in its own order, or in every order with `anyOrder`.
   */
  private valueText(value: unknown, want: Want, anyOrder = false): RegexNode {
    const { depth } = want;
    if (value === null) return NULL_TEXT;
    if (value === true) return TRUE_TEXT;
    if (value === false) return FALSE_TEXT;
    if (typeof value === "number") {
      if (!want.over) return literal(JSON.stringify(value));
      // Every text of this value: without exponent ("1", "1.0", …) exactly; any with one.
      const n = String(value);
      return alt([numberRangeNode({ minimum: n, maximum: n }) ?? EMPTY, EXPONENT_NUMBER_TEXT]);
    }
    if (typeof value === "string") return stringLiteral(value);
    const inner: Want = { ...want, depth: depth + 1 };
    if (Array.isArray(value)) {
      if (value.length === 0) return literal("[]");
      const items = value.map((v, i) =>
        concat(i === 0 ? this.syntax.open(depth) : this.syntax.separator(depth), this.valueText(v, inner, anyOrder)),
      );
      return concat(range(0x5b), ...items, this.syntax.close(depth), range(0x5d));
    }
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return literal("{}");
    const objectText = (order: readonly [string, unknown][]): RegexNode =>
      concat(
        range(0x7b),
        ...order.map(([k, v], i) =>
          concat(
            i === 0 ? this.syntax.open(depth) : this.syntax.separator(depth),
            stringLiteral(k),
            this.syntax.colon,
            this.valueText(v, inner, anyOrder),
          ),
        ),
        this.syntax.close(depth),
        range(0x7d),
      );
    if (!want.over) return anyOrder ? alt(permutations(entries).map(objectText)) : objectText(entries);
    // Equal objects may list their keys in any order: every order, while they are few.
    if (entries.length > MAX_PERMUTED_KEYS) return dfaNode(this.anyValue(depth, this.options.freeNesting + 1, want, "object"));
    return alt(permutations(entries).map(objectText));
  }

  /**
   * Any JSON value nested at most `levels` containers deep (`only`: of that kind). Under dupFree
   * (and not over), an object has at most one key.
   */
  anyValue(depth: number, levels: number, want: Want, only?: "object" | "array"): ByteDfa {
    const key = want.over
      ? `counted#${this.freeLevels(want, depth)}#${only ?? ""}`
      : `any#${this.syntax.style}#${this.syntax.style === "indented" ? depth : 0}#${levels}#${want.dupFree ? "d" : ""}#${only ?? ""}`;
    const known = sharedDfa(key);
    if (known) return known;
    const before = regexClock.used;
    if (want.over) {
      // Not nested `levels` deep: an over-approximation must hold every depth the text it is
      // subtracted from may reach.
      return keepShared(key, this.compileNode(countedValueText(this.freeLevels(want, depth), only), ""), before);
    }
    const items: RegexNode[] = only ? [] : [NULL_TEXT, TRUE_TEXT, FALSE_TEXT, NUMBER_TEXT, anyStringText()];
    if (levels > 0) {
      const inner = dfaNode(this.anyValue(depth + 1, levels - 1, want));
      if (only !== "object") items.push(this.sequence(0x5b, 0x5d, inner, depth, Infinity));
      if (only !== "array") {
        const pair = concat(anyStringText(), this.syntax.colon, inner);
        items.push(this.sequence(0x7b, 0x7d, pair, depth, want.dupFree && !want.over ? 1 : Infinity));
      }
    }
    return keepShared(key, this.compileNode(alt(items), ""), before);
  }

  /**
   * The levels an over-approximation's "any value" at `depth` counts: as deep as any text it is
   * subtracted from can nest there (want.limit), at least one; without a limit, as deep as any
   * text we write.
   */
  private freeLevels(want: Want, depth: number): number {
    const limit = want.limit ?? MAX_DEPTH + this.options.freeNesting + 1 + depth;
    return Math.max(1, limit - depth);
  }

  /**
   * The limit (Want.limit) for an over-approximation subtracted from `minuend`, a language of
   * values at `depth`: that depth plus the deepest nesting of the minuend's texts. A free value
   * there counting only that deep costs a few states a level instead of ~70 levels' worth: the
   * subtractions of `oneOf`/`not` were most of the slowest compiles.
   */
  private nestingLimit(minuend: ByteDfa, depth: number): number {
    const cap = MAX_DEPTH + this.options.freeNesting + 1;
    return depth + maxNesting(minuend, cap);
  }

  /** `open (member (sep member){0,max-1})? close` with the style's whitespace. */
  private sequence(open: number, close: number, member: RegexNode, depth: number, max: number): RegexNode {
    // A graph, so that `member` is embedded once (a tree would copy it for the first member and
    // the others, and nested containers would double at every level).
    const s = this.syntax;
    const graph = new LanguageGraph();
    const start = graph.state();
    const opened = graph.state();
    const before = graph.state();
    const after = graph.state();
    const end = graph.state();
    graph.accept(end);
    graph.edge(start, opened, range(open));
    graph.edge(opened, end, range(close));
    graph.edge(opened, before, s.open(depth));
    graph.edge(before, after, member);
    graph.edge(after, end, concat(s.close(depth), range(close)));
    if (max === Infinity) graph.edge(after, before, s.separator(depth));
    else if (max > 1) throw new Error("sequence: a bounded count other than 1 is not supported");
    return graph.node(start);
  }

  // ---- numbers -----------------------------------------------------------------------------

  /**
   * U: integers as INTEGER_TEXT, bounded or multiple-of numbers without exponent (numeric.ts),
   * never a negative zero.
   * O: every text whose value may satisfy the keywords: integers may also be written "3.0", and
   * any text with an exponent is kept (we never compare those).
   */
  private numberLanguage(spec: Spec, want: Want, pointer: string): ByteDfa | null {
    const integer = spec.types.number === "integer";
    const { bounds, multipleOf } = spec.numbers;
    const writeInteger = integer && !want.over;
    const nodes: RegexNode[] = [];
    for (const { bounds: b, pointer: at } of bounds) {
      const node = this.numeric(at, () => (writeInteger ? integerRangeNode(b) : numberRangeNode(b)));
      if (node === null) return want.over ? this.compileNode(EXPONENT_NUMBER_TEXT, pointer) : null;
      nodes.push(node);
    }
    for (const { value, pointer: at } of multipleOf) nodes.push(this.numeric(at, () => multipleOfNode(value, writeInteger))!);
    // The syntax we write (no "-0": numeric.ts's ranges and multiples allow it), or in O every
    // text of a value the keywords may allow.
    if (writeInteger) nodes.push(INTEGER_TEXT);
    else if (integer) nodes.push(INTEGER_VALUED_TEXT);
    else if (!want.over || nodes.length === 0) nodes.push(want.over ? ANY_NUMBER_TEXT : NUMBER_TEXT);
    if (bounds.length === 0 && multipleOf.length === 0) {
      // A number with no bounds: one of four languages, the same in every schema.
      const name = `number#${writeInteger ? "integer" : integer ? "integral" : "any"}#${want.over ? "O" : "U"}`;
      return this.shared(name, () => this.numberDfa(nodes, want, pointer));
    }
    const dfa = this.numberDfa(nodes, want, pointer);
    return isEmptyLanguage(dfa) ? null : dfa;
  }

  /** The intersection of `nodes` (in O, with any text in exponent form added). */
  private numberDfa(nodes: readonly RegexNode[], want: Want, pointer: string): ByteDfa {
    let dfa = this.compileNode(nodes[0]!, pointer);
    for (let i = 1; i < nodes.length && !isEmptyLanguage(dfa); i++)
      dfa = this.intersect(dfa, this.compileNode(nodes[i]!, pointer), pointer);
    if (want.over) dfa = this.compileNode(alt([dfaNode(dfa), EXPONENT_NUMBER_TEXT]), pointer);
    return dfa;
  }

  private numeric(pointer: string, build: () => RegexNode | null): RegexNode | null {
    try {
      return build();
    } catch (error) {
      if (error instanceof JsonSchemaError || error instanceof JsonSchemaTooComplexError) throw error;
      throw new JsonSchemaTooComplexError((error as Error).message, pointer, "multipleOf");
    }
  }

  // ---- strings -----------------------------------------------------------------------------

  /**
   * U: a maxLength over MAX_COUNTED_LENGTH is written as MAX_COUNTED_LENGTH (when minLength allows);
   * O: such bounds are dropped instead (an over-approximation may only grow).
   */
  private stringLanguage(spec: Spec, want: Want, pointer: string): ByteDfa | null {
    let { minLength, maxLength } = spec.strings;
    const { patterns, formats } = spec.strings;
    if (maxLength < minLength) return null;
    if (maxLength !== Infinity && maxLength > MAX_COUNTED_LENGTH) {
      if (want.over) maxLength = Infinity;
      else if (minLength <= MAX_COUNTED_LENGTH) maxLength = MAX_COUNTED_LENGTH;
    }
    if (want.over && minLength > MAX_COUNTED_LENGTH) minLength = 0;
    const content =
      minLength === 0 && maxLength === Infinity
        ? repeat(anyEncodedChar(), 0, -1)
        : repeat(anyEncodedChar(), minLength, maxLength === Infinity ? -1 : maxLength);
    // The formats asserted (the others are annotations), each as the JSON strings it allows.
    const asserted = formats.flatMap(({ format, pointer: at }) => {
      const node = formatNode(format);
      if (node === null) return [];
      const dfa = (): ByteDfa => this.shared(`format#${format}`, () => this.compileNode(quoted(encodeNode(node)), at));
      return [{ node, at, dfa }];
    });
    // A format whose every text is as long as the bounds allow (an email, 3 to 253 characters,
    // under maxLength 255) is the language itself: its product with the counted lengths (a DFA
    // of thousands of states) was the slowest part of many compiles.
    const withinBounds = asserted.find(({ node }) => {
      const bounds = codePointBounds(node);
      return bounds !== null && bounds[0] >= minLength && bounds[1] <= maxLength;
    });
    let dfa = withinBounds
      ? withinBounds.dfa()
      : this.shared(`string#${minLength}#${maxLength}`, () => this.compileNode(quoted(content), pointer));
    for (const { pattern, pointer: at } of patterns) {
      if (isEmptyLanguage(dfa)) break;
      dfa = this.intersect(dfa, this.patternLanguage(pattern, at), at);
    }
    for (const format of asserted) {
      if (isEmptyLanguage(dfa)) break;
      if (format !== withinBounds) dfa = this.intersect(dfa, format.dfa(), format.at);
    }
    return isEmptyLanguage(dfa) ? null : dfa;
  }

  /** The JSON strings (quotes included) whose decoded text an ECMA-262 `pattern` finds a match in. */
  patternLanguage(pattern: string, pointer: string): ByteDfa {
    let annexB = this.annexBReasons.get(pattern);
    if (annexB === undefined) this.annexBReasons.set(pattern, (annexB = annexBReason(pattern)));
    if (annexB !== null) {
      this.warn(
        keywordOf(pointer),
        pointer,
        `"${pattern}" is not valid with the u flag (${annexB.replace(/^Invalid regular expression: /, "")}), so it is read as ECMA-262 reads it without u (Annex B: an escaped "-" or ":" is that character, a brace that forms no quantifier is itself), matching characters`,
      );
    }
    const known = sharedDfa(`pattern#${pattern}`);
    if (known) return known;
    const before = regexClock.used;
    let search: RegexNode;
    try {
      search = ecmaSearchNode(pattern);
    } catch (error) {
      if (error instanceof RegexSyntaxError) {
        throw new JsonSchemaError(
          `"${pattern}": ${error.message}${error.construct ? ` (${error.construct})` : ""}`,
          pointer,
          keywordOf(pointer),
        );
      }
      throw error;
    }
    const decoded = this.compileNode(search, pointer);
    const quotedText = this.regex(pointer, (limits) => quoteDfa(decoded, limits));
    return keepShared(`pattern#${pattern}`, this.compileNode(quoted(dfaNode(quotedText)), pointer), before);
  }

  // ---- arrays ------------------------------------------------------------------------------

  /**
   * uniqueItems over items of a few values (at most MAX_UNIQUE_VALUES over every position, told
   * apart by JSON equality: `1` and `1.0` are one value, so are an object's key orders): the
   * array's states are the sets of values written so far, so no value comes twice; the count,
   * and so the position (prefixItems), is the set's size. Undefined when some position's items
   * may take more values (the caller refuses); null when minItems exceeds what can be written.
   */
  private uniqueArrayLanguage(
    item: (i: number) => RegexNode,
    prefixLength: number,
    minItems: number,
    maxItems: number,
    depth: number,
    pointer: string,
  ): RegexNode | null | undefined {
    // Item languages by position: 0 … prefixLength (the rest), those an array can reach.
    const positions = Math.min(prefixLength, maxItems - 1) + 1;
    const valueIds = new Map<string, number>();
    /** Per position, per value id: the texts spelling it there. */
    const spellings: Map<number, string[]>[] = [];
    for (let k = 0; k < positions; k++) {
      const texts = finiteTexts(this.dfaOf(item(k), pointer), MAX_UNIQUE_TEXTS, MAX_UNIQUE_TEXT_BYTES);
      if (texts === null) return undefined;
      const here = new Map<number, string[]>();
      for (const text of texts) {
        const key = canonicalJson(JSON.parse(text));
        let id = valueIds.get(key);
        if (id === undefined) {
          id = valueIds.size;
          if (id === MAX_UNIQUE_VALUES) return undefined;
          valueIds.set(key, id);
        }
        const group = here.get(id);
        if (group) group.push(text);
        else here.set(id, [text]);
      }
      spellings.push(here);
    }
    const m = valueIds.size;
    const values = spellings.map((here) => new Map([...here].map(([id, texts]) => [id, alt(texts.map((text) => literal(text)))])));
    const s = this.syntax;
    const graph = new LanguageGraph();
    const start = graph.state();
    const end = graph.state();
    graph.accept(end);
    if (minItems === 0) graph.edge(start, end, literal("[]"));
    const states = Array.from({ length: 1 << m }, () => graph.state());
    graph.edge(start, states[0]!, range(0x5b));
    let possible = minItems === 0;
    for (let used = 0; used < 1 << m; used++) {
      let count = 0;
      for (let v = used; v !== 0; v &= v - 1) count++;
      if (count >= 1 && count >= minItems) {
        graph.edge(states[used]!, end, concat(s.close(depth), range(0x5d)));
        possible = true;
      }
      if (count >= maxItems) continue;
      const lead = count === 0 ? s.open(depth) : s.separator(depth);
      for (const [v, node] of values[Math.min(count, prefixLength)]!) {
        if ((used & (1 << v)) === 0) graph.edge(states[used]!, states[used | (1 << v)]!, concat(lead, node));
      }
    }
    return possible ? graph.node(start) : null;
  }

  private arrayLanguage(spec: Spec, want: Want, pointer: string): RegexNode | null {
    const { minItems } = spec.arrays;
    let contains = spec.arrays.contains;
    let parts = spec.arrays.parts;
    // unevaluatedItems: the items no prefixItems/items of its scope evaluates (past the longest
    // prefix, when no part there has items) meet it: the merge's scope root's over every part, a
    // scoped one's over the parts within its schema. An over-approximation leaves them out: it
    // must hold documents where more branches evaluate more.
    const unevaluated: { at: SchemaAt; inScope: (part: { within: readonly string[] }) => boolean }[] = [];
    if (!want.over) {
      if (spec.arrays.unevaluated !== null) unevaluated.push({ at: spec.arrays.unevaluated, inScope: () => true });
      for (const { at, scope } of spec.arrays.scopedUnevaluated) unevaluated.push({ at, inScope: (part) => part.within.includes(scope) });
    }
    // A contains that counts nothing (minContains 0) matters only for what it evaluates.
    if (unevaluated.length === 0) contains = contains.filter((c) => c.min > 0 || c.max < Infinity);
    // Beside contains, an item a contains of the scope matches is evaluated too: the items past
    // the prefix that match none of them meet it, in itemClass below (per class of matches).
    const unevaluatedByClass: { at: SchemaAt; from: number; containsInScope: number }[] = [];
    for (const { at, inScope } of unevaluated) {
      const scoped = spec.arrays.parts.filter(inScope);
      if (scoped.some((p) => p.rest !== null)) continue;
      const longest = Math.max(0, ...scoped.map((p) => p.prefix.length));
      if (contains.length > 0) {
        let containsInScope = 0;
        contains.forEach((c, i) => {
          if (inScope(c)) containsInScope |= 1 << i;
        });
        unevaluatedByClass.push({ at, from: longest, containsInScope });
        continue;
      }
      const evaluated: SchemaAt = { ...at, schema: true };
      parts = [...parts, { prefix: Array.from({ length: longest }, () => evaluated), rest: at, within: [] }];
    }
    let maxItems = spec.arrays.maxItems;
    const depth = want.depth;
    const inner: Want = { ...want, depth: depth + 1 };
    const prefixLength = Math.max(0, ...parts.map((p) => p.prefix.length));
    // `items: false` (or additionalItems) ends arrays after the positional items.
    if (parts.some((p) => p.rest?.schema === false)) maxItems = Math.min(maxItems, prefixLength);
    if (maxItems < minItems) return null;
    const itemRefs = (i: number): SchemaAt[] =>
      parts.flatMap((p: ArrayPart) => (i < p.prefix.length ? [p.prefix[i]!] : p.rest ? [p.rest] : []));
    const items = new Map<number, RegexNode>();
    const item = (i: number): RegexNode => {
      const k = Math.min(i, prefixLength);
      let node = items.get(k);
      if (!node) {
        node = this.language(itemRefs(k), inner);
        items.set(k, node);
      }
      return node;
    };
    if (spec.arrays.unique !== null && maxItems > 1 && !want.over) {
      const unique = contains.length === 0 ? this.uniqueArrayLanguage(item, prefixLength, minItems, maxItems, depth, pointer) : undefined;
      if (unique !== undefined) return unique;
      this.unsupported(
        "uniqueItems",
        spec.arrays.unique,
        `uniqueItems is enforced only where an array's items take at most ${MAX_UNIQUE_VALUES} values in all (an enum, a const, ` +
          "booleans) and it has no contains: here two or more items may take more values",
      );
    }
    // Every contains counts the items matching it; over-approximations keep the first one's minimum
    // only (at least that many items in its O).
    const counters = want.over ? contains.slice(0, 1).map((c) => ({ ...c, max: Infinity })) : contains;
    if (counters.length > MAX_CONTAINS) {
      this.unsupported("contains", contains[MAX_CONTAINS]!.at.pointer, `more than ${MAX_CONTAINS} contains on one array are not supported`);
    }
    // Positions 0..last are states; the last loops when the length is unbounded.
    const last = maxItems === Infinity ? Math.max(prefixLength, minItems, 1) : maxItems;
    if (last > MAX_ARRAY_POSITIONS) throw new JsonSchemaTooComplexError(`arrays of up to ${last} items`, pointer, "maxItems");
    // Counter i runs 0 … its top (minContains when unbounded: more need not be told apart; else
    // maxContains): the counts are one number in mixed radix.
    const tops = counters.map((c) => (c.max === Infinity ? c.min : c.max));
    const radix = tops.map((top) => top + 1);
    const matchStates = radix.reduce((a, b) => a * b, 1);
    if (counters.length > 1 && (last + 1) * matchStates > MAX_ARRAY_POSITIONS) {
      throw new JsonSchemaTooComplexError(`arrays counting ${counters.length} contains over ${last} positions`, pointer, "maxItems");
    }
    const countsOf = (m: number): number[] => {
      const counts: number[] = [];
      for (const r of radix) {
        counts.push(m % r);
        m = Math.floor(m / r);
      }
      return counts;
    };
    const indexOf = (counts: readonly number[]): number => counts.reduceRight((m, c, i) => m * radix[i]! + c, 0);
    const satisfied = (m: number): boolean => countsOf(m).every((c, i) => c >= counters[i]!.min);
    // Items by the contains they match: class `set` (a bit per contains) is the item language
    // matching every contains in the set and none of the others (the latter minus an
    // over-approximation of each, written duplicate-free), so no item is counted wrongly.
    const classes = new Map<string, RegexNode>();
    const itemClass = (i: number, set: number): RegexNode => {
      const k = Math.min(i, prefixLength);
      const key = `${k},${set}`;
      let node = classes.get(key);
      if (!node) {
        const matched = counters.filter((_, c) => (set & (1 << c)) !== 0).map((c) => c.at);
        const unmatched = counters.filter((_, c) => (set & (1 << c)) === 0).map((c) => c.at);
        // An item past an unevaluatedItems' prefix that no contains of its scope matches meets it.
        const unevaluatedHere = unevaluatedByClass.filter((u) => k >= u.from && (set & u.containsInScope) === 0).map((u) => u.at);
        const refs = [...itemRefs(k), ...matched, ...unevaluatedHere];
        if (want.over || unmatched.length === 0) {
          // Any item may be one that does not count: the superset needs no subtraction.
          node = this.language(refs, inner);
        } else {
          let dfa = this.dfaOf(this.language(refs, { ...inner, dupFree: true }), unmatched[0]!.pointer);
          const limit = this.nestingLimit(dfa, inner.depth);
          for (const at of unmatched)
            dfa = this.subtract(dfa, this.dfaOf(this.language([at], { ...inner, over: true, limit }), at.pointer), at.pointer);
          node = dfaNode(dfa);
        }
        classes.set(key, node);
      }
      return node;
    };
    const graph = new LanguageGraph();
    const start = graph.state();
    const end = graph.state();
    graph.accept(end);
    const ids = new Map<number, number>();
    const stateOf = (p: number, m: number): number => {
      const key = p * matchStates + m;
      let id = ids.get(key);
      if (id === undefined) {
        id = graph.state();
        ids.set(key, id);
      }
      return id;
    };
    if (minItems === 0 && satisfied(0)) graph.edge(start, end, literal("[]"));
    const middles = new Map<string, number>();
    const s = this.syntax;
    for (let p = 0; p <= last; p++) {
      for (let m = 0; m < matchStates; m++) {
        if (!ids.has(p * matchStates + m) && !(p === 0 && m === 0)) continue;
        const from = stateOf(p, m);
        if (p === 0 && m === 0) graph.edge(start, from, range(0x5b));
        if (p >= 1 && p >= minItems && satisfied(m)) graph.edge(from, end, concat(s.close(depth), range(0x5d)));
        const to = p === last ? p : p + 1;
        if (p === last && maxItems !== Infinity) continue;
        const lead = p === 0 ? s.open(depth) : s.separator(depth);
        // The first item and the others meet before the item, which is embedded once per target.
        const via = (target: number, kind: string, reads: RegexNode): void => {
          const key = `${target},${kind},${Math.min(p, prefixLength)}`;
          let mid = middles.get(key);
          if (mid === undefined) {
            mid = graph.state();
            middles.set(key, mid);
            graph.edge(mid, target, reads);
          }
          graph.edge(from, mid, lead);
        };
        if (counters.length === 0) {
          via(stateOf(to, 0), "", item(p));
          continue;
        }
        const counts = countsOf(m);
        for (let set = 0; set < 1 << counters.length; set++) {
          // Each matched contains counts up, saturating at its minimum when unbounded; an item
          // that would pass a maxContains leads nowhere.
          const next = counts.map((c, i) =>
            (set & (1 << i)) === 0 ? c : counters[i]!.max === Infinity ? Math.min(c + 1, tops[i]!) : c + 1,
          );
          if (next.some((c, i) => c > tops[i]!)) continue;
          via(stateOf(to, indexOf(next)), `class${set}`, itemClass(p, set));
        }
      }
    }
    return graph.node(start);
  }

  // ---- objects -----------------------------------------------------------------------------

  private objectLanguage(spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode | null {
    const o = spec.objects;
    if (o.maxProperties < o.minProperties) return null;
    const depth = want.depth;
    const inner: Want = { ...want, depth: depth + 1 };
    const nameLanguages = o.propertyNames.map((at) =>
      this.dfaOf(this.language([at], { depth: 0, over: want.over, dupFree: false }), at.pointer),
    );
    const required = new Set([...o.required, ...(want.over ? [] : alternative.require)]);
    const forbidden = want.over ? new Set<string>() : alternative.forbid;
    const names = [...o.names];
    for (const k of required) if (!names.includes(k)) names.push(k);
    const members: Member[] = [];
    // Scoped unevaluatedProperties, each with the parts within its schema (none in O: a superset).
    const scopedParts = want.over
      ? []
      : o.scopedUnevaluated.map(({ at, scope }) => ({ at, parts: o.parts.filter((part) => part.within.includes(scope)) }));
    for (const key of names) {
      const isRequired = required.has(key);
      const allowed = !forbidden.has(key) && nameLanguages.every((dfa) => matchesString(dfa, JSON.stringify(key)));
      if (!allowed) {
        if (isRequired) return null;
        continue;
      }
      // A key only `required` (or a dependency's trigger) names is evaluated by nothing: it meets
      // unevaluatedProperties. An empty value language leaves its member unwritable: the
      // object's automaton drops the path.
      const matches = (pattern: { source: string; at: SchemaAt }): boolean =>
        matchesString(this.patternLanguage(pattern.source, pattern.at.pointer), JSON.stringify(key));
      const schemas = schemasForKey(o.parts, key, matches);
      const value = schemas.length === 0 && o.unevaluated !== null && !want.over ? [o.unevaluated] : schemas;
      // A scoped unevaluatedProperties: met where no part within its schema evaluates the key.
      for (const { at, parts } of scopedParts) if (schemasForKey(parts, key, matches).length === 0) value.push(at);
      members.push({ key, value: this.language(value, inner), required: isRequired });
    }
    const excluded = [...names, ...forbidden];
    const extras = this.extraRegions(
      o.parts,
      excluded,
      nameLanguages,
      inner,
      pointer,
      want.over ? null : o.unevaluated,
      want.over ? [] : o.scopedUnevaluated,
    );
    if (want.over) return this.looseObject(members, extras, depth, o.minProperties, o.maxProperties);
    const requiredCount = members.filter((m) => m.required).length;
    if (requiredCount > o.maxProperties) return null;
    if (o.minProperties > members.length + Math.min(extras.length, 1)) {
      // Counting several unnamed keys would need them distinct, which an automaton cannot check,
      // unless they are few: then each is a member of its own, written at most once, in order.
      const listed = listedKeys(extras, MAX_LISTED_KEYS);
      if (listed !== null && o.minProperties <= members.length + listed.length) {
        const named = new Set(members.map((m) => m.key));
        const more = listed.filter((m) => !named.has(m.key));
        return this.orderedObject([...members, ...more], [], depth, o.minProperties, o.maxProperties, want.dupFree);
      }
      this.unsupported(
        "minProperties",
        pointer,
        `minProperties ${o.minProperties} needs more than one property the schema does not name; not supported yet`,
      );
      return null;
    }
    return this.orderedObject(members, extras, depth, o.minProperties, o.maxProperties, want.dupFree);
  }

  /**
   * The keys no named property takes, split into regions by which `patternProperties` they match
   * (a key matching several must satisfy all): per region the key language and the value's.
   */
  private extraRegions(
    parts: readonly ObjectPart[],
    excluded: readonly string[],
    nameLanguages: readonly ByteDfa[],
    inner: Want,
    pointer: string,
    /** unevaluatedProperties: met by the keys no pattern and no additionalProperties evaluates. */
    unevaluated: SchemaAt | null,
    /** Scoped ones: met by the keys no pattern and no additionalProperties within their schema evaluates. */
    scopedUnevaluated: readonly { readonly at: SchemaAt; readonly scope: string }[],
  ): Region[] {
    const patterns = parts.flatMap((part, index) => part.patterns.map((p) => ({ ...p, part: index })));
    if (patterns.length > MAX_PATTERNS) {
      throw new JsonSchemaTooComplexError(`more than ${MAX_PATTERNS} patternProperties on one object`, pointer, "patternProperties");
    }
    const free = parts.every((part) => part.patterns.length === 0 && (part.additional === null || part.onlyEvaluates === true));
    if (free && this.options.forbidAdditionalProperties && !inner.over) return [];
    const strings = this.shared("string#0#Infinity", () => this.compileNode(anyStringText(), pointer));
    // Objects of one shape recur (a definition used in many places, Kubernetes' metadata): the
    // keys they leave unnamed are built once.
    let keys =
      excluded.length === 0
        ? strings
        : this.shared(`unnamed#${JSON.stringify(excluded)}`, () =>
            // Names we write one way only (most) are taken out as bytes, through their trie.
            excluded.every((name) => hasOneSpelling(name))
              ? this.regex(pointer, (limits) =>
                  subtractStrings(
                    strings,
                    excluded.map((name) => utf8Encoder.encode(JSON.stringify(name))),
                    limits,
                  ),
                )
              : this.subtract(strings, this.compileNode(alt(excluded.map(stringLiteral)), pointer), pointer),
          );
    for (const dfa of nameLanguages) keys = this.intersect(keys, dfa, pointer);
    const regions: Region[] = [];
    for (let mask = 0; mask < 1 << patterns.length; mask++) {
      let key = keys;
      const values: SchemaAt[] = [];
      for (let i = 0; i < patterns.length && !isEmptyLanguage(key); i++) {
        const language = this.patternLanguage(patterns[i]!.source, patterns[i]!.at.pointer);
        key = mask & (1 << i) ? this.intersect(key, language, pointer) : this.subtract(key, language, pointer);
      }
      if (isEmptyLanguage(key)) continue;
      let unnamed = true;
      const evaluatedBy: ObjectPart[] = [];
      parts.forEach((part, index) => {
        const matched = patterns.filter((p, i) => p.part === index && mask & (1 << i));
        if (matched.length > 0) {
          values.push(...matched.map((p) => p.at));
          unnamed = false;
          evaluatedBy.push(part);
        } else if (part.additional !== null) {
          values.push(part.additional);
          if (part.onlyEvaluates !== true) unnamed = false;
          evaluatedBy.push(part);
        }
      });
      for (const scoped of scopedUnevaluated) {
        if (!evaluatedBy.some((part) => part.within.includes(scoped.scope))) values.push(scoped.at);
      }
      if (unnamed && this.options.forbidAdditionalProperties && !inner.over) continue;
      if (evaluatedBy.length === 0 && unevaluated !== null) values.push(unevaluated);
      if (values.some((v) => v.schema === false)) continue;
      regions.push({ key: dfaNode(key), value: this.language(values, inner) });
    }
    return regions;
  }

  /**
   * O(S) of an object: members in any order (repeats too), each key with its value's O, the first
   * few required keys present (a set of them is tracked: 2^k states), and a small minProperties or
   * maxProperties kept by counting members. Counting is sound because every text an O(S) is
   * subtracted from is written without repeated keys (minuends are dupFree at every level), so
   * there its members are its properties.
   */
  private looseObject(
    members: readonly Member[],
    extras: readonly Region[],
    depth: number,
    minProperties: number,
    maxProperties: number,
  ): RegexNode {
    const s = this.syntax;
    const tracked = members.filter((m) => m.required).slice(0, MAX_TRACKED_REQUIRED);
    const free = [
      ...members.filter((m) => !tracked.includes(m)).map((m) => concat(stringLiteral(m.key), s.colon, m.value)),
      ...extras.map((r) => concat(r.key, s.colon, r.value)),
    ];
    // Counts kept: a maximum up to MAX_COUNTED_MEMBERS, else a minimum up to it (saturating).
    const most = maxProperties <= MAX_COUNTED_MEMBERS ? maxProperties : Infinity;
    const least = minProperties <= MAX_COUNTED_MEMBERS ? minProperties : 0;
    const top = most === Infinity ? least : most;
    if (tracked.length > most) return EMPTY;
    if (tracked.length === 0 && top === 0) {
      if (most === 0 || free.length === 0) return literal("{}");
      return this.sequence(0x7b, 0x7d, alt(free), depth, Infinity);
    }
    const full = (1 << tracked.length) - 1;
    const freePair = free.length > 0 ? alt(free) : null;
    const graph = new LanguageGraph();
    const start = graph.state();
    const end = graph.state();
    graph.accept(end);
    // before[mask * (top + 1) + count], after[…]: members written so far, by required set and count.
    const before: number[] = [];
    const after: number[] = [];
    for (let i = 0; i < (full + 1) * (top + 1); i++) {
      before.push(graph.state());
      after.push(graph.state());
    }
    const at = (mask: number, count: number): number => mask * (top + 1) + count;
    const counted = (count: number): number => (most === Infinity ? Math.min(count + 1, least) : count + 1);
    if (tracked.length === 0 && least === 0) graph.edge(start, end, literal("{}"));
    graph.edge(start, before[at(0, 0)]!, concat(range(0x7b), s.open(depth)));
    for (let mask = 0; mask <= full; mask++) {
      for (let count = 0; count <= top; count++) {
        const next = counted(count);
        if (next <= top) {
          tracked.forEach((m, bit) => {
            graph.edge(before[at(mask, count)]!, after[at(mask | (1 << bit), next)]!, concat(stringLiteral(m.key), s.colon, m.value));
          });
          if (freePair) graph.edge(before[at(mask, count)]!, after[at(mask, next)]!, freePair);
        }
        graph.edge(after[at(mask, count)]!, before[at(mask, count)]!, s.separator(depth));
        if (mask === full && count >= least) graph.edge(after[at(mask, count)]!, end, concat(s.close(depth), range(0x7d)));
      }
    }
    return graph.node(start);
  }

  /**
   * U(S) of an object: the named members in order (each once, required ones always), then members
   * of the other keys (at most one when `oneExtra`), between minProperties and maxProperties.
   * Towards minProperties only the first unnamed member counts (a repeated key would count twice);
   * towards maxProperties every member does.
   */
  private orderedObject(
    members: readonly Member[],
    extras: readonly Region[],
    depth: number,
    minProperties: number,
    maxProperties: number,
    oneExtra: boolean,
  ): RegexNode {
    const s = this.syntax;
    const bounded = maxProperties !== Infinity;
    const graph = new LanguageGraph();
    const start = graph.state();
    const end = graph.state();
    graph.accept(end);
    // State (i, nonEmpty, least, most, extra): before member i (n: the unnamed ones), whether a
    // member was written (a separator comes next), members surely distinct so far (saturating at
    // minProperties), members written (when there is a maximum), whether an unnamed one was.
    const n = members.length;
    const ids = new Map<string, number>();
    const pending: [number, number, number, number, number][] = [];
    const stateOf = (i: number, nonEmpty: number, least: number, most: number, extra: number): number => {
      const key = `${i},${nonEmpty},${least},${most},${extra}`;
      let id = ids.get(key);
      if (id === undefined) {
        id = graph.state();
        ids.set(key, id);
        pending.push([i, nonEmpty, least, most, extra]);
      }
      return id;
    };
    const extraPairs = alt(extras.map((r) => concat(r.key, s.colon, r.value)));
    const middles = new Map<string, number>();
    /** The state before `rest` on the way to `to` (one per key: what leads there shares it). */
    const middle = (key: string, to: number, rest: RegexNode): number => {
      let id = middles.get(key);
      if (id === undefined) {
        id = graph.state();
        middles.set(key, id);
        graph.edge(id, to, rest);
      }
      return id;
    };
    graph.edge(start, stateOf(0, 0, 0, 0, 0), range(0x7b));
    while (pending.length > 0) {
      const [i, nonEmpty, least, most, extra] = pending.pop()!;
      const from = stateOf(i, nonEmpty, least, most, extra);
      const lead = nonEmpty ? s.separator(depth) : s.open(depth);
      const moreMost = bounded ? most + 1 : 0;
      if (i < n) {
        const m = members[i]!;
        if (!m.required) graph.edge(from, stateOf(i + 1, nonEmpty, least, most, 0), null);
        if (!bounded || most + 1 <= maxProperties) {
          // Both leads meet before the value, which is embedded once per target state.
          const to = stateOf(i + 1, 1, Math.min(least + 1, minProperties), moreMost, 0);
          graph.edge(from, middle(`m${i},${to}`, to, m.value), concat(lead, stringLiteral(m.key), s.colon));
        }
        continue;
      }
      if (least >= minProperties) graph.edge(from, end, nonEmpty ? concat(s.close(depth), range(0x7d)) : range(0x7d));
      if (extras.length === 0 || (bounded && most + 1 > maxProperties) || (oneExtra && extra === 1)) continue;
      const to = stateOf(n, 1, extra ? least : Math.min(least + 1, minProperties), moreMost, 1);
      graph.edge(from, middle(`x${to}`, to, extraPairs), lead);
    }
    return graph.node(start);
  }
}

/**
 * The keys of `extras` as optional members, when their languages are finite and together hold at
 * most `limit` texts (a key's escaped spellings count apart, then fold into one member); null
 * otherwise.
 */
function listedKeys(extras: readonly Region[], limit: number): Member[] | null {
  const members = new Map<string, Member>();
  let texts = 0;
  for (const region of extras) {
    if (region.key.kind !== "dfa") return null;
    const found = finiteTexts(region.key.dfa, limit - texts, MAX_UNIQUE_TEXT_BYTES);
    if (found === null) return null;
    texts += found.length;
    for (const text of found) {
      const key = JSON.parse(text) as string;
      if (!members.has(key)) members.set(key, { key, value: region.value, required: false });
    }
  }
  return [...members.values()];
}

function copyAlternative(a: Alternative): Alternative {
  return {
    conjuncts: [...a.conjuncts],
    seen: new Set(a.seen),
    subtract: [...a.subtract],
    forbid: new Set(a.forbid),
    require: new Set(a.require),
    done: new Set(a.done),
  };
}

/**
 * How many key orders a JSON value has (the product of its objects' key counts' factorials);
 * Infinity past MAX_PERMUTED_ORDERS.
 */
function keyOrders(value: unknown): number {
  if (value === null || typeof value !== "object") return 1;
  let orders = 1;
  const children = Array.isArray(value) ? value : Object.values(value);
  if (!Array.isArray(value)) {
    for (let k = 2; k <= children.length; k++) if ((orders *= k) > MAX_PERMUTED_ORDERS) return Infinity;
  }
  for (const child of children) {
    if (orders > MAX_PERMUTED_ORDERS) return Infinity;
    orders *= keyOrders(child);
  }
  return orders > MAX_PERMUTED_ORDERS ? Infinity : orders;
}

/** All orders of `items` (few: MAX_PERMUTED_KEYS! at most). */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

const SPLIT_KEYWORDS = ["anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas", "dependencies"] as const;

/** Keywords beside a draft-07 `$ref` that say nothing about validity (not worth a warning). */
/** Keywords beside a `$ref` that evaluate nothing (see scopeRoot). */
const SCOPE_NEUTRAL = new Set(["$defs", "definitions", "$anchor", "$dynamicAnchor", "$comment", "$vocabulary", "deprecated"]);

function isDescriptive(keyword: string): boolean {
  return ["title", "description", "default", "examples", "$id", "id", "$schema", "readOnly", "writeOnly"].includes(keyword);
}

function keywordOf(pointer: string): string {
  const parts = pointer.split("/");
  return parts.includes("patternProperties") ? "patternProperties" : (parts[parts.length - 1] ?? "pattern");
}

/** The subschemas a value under `key` must satisfy, one list over the merged parts. */
/** The schemas `parts` apply to `key`; `matches`: whether a pattern of theirs finds a match in it. */
function schemasForKey(
  parts: readonly ObjectPart[],
  key: string,
  matches: (pattern: { source: string; at: SchemaAt }) => boolean,
): SchemaAt[] {
  const out: SchemaAt[] = [];
  for (const part of parts) {
    // A named key meets its properties schema and every pattern it matches; additionalProperties
    // applies to keys that neither names nor matches.
    const named = part.properties.get(key);
    const matched = part.patterns.filter(matches);
    if (named) out.push(named);
    if (matched.length > 0) out.push(...matched.map((p) => p.at));
    if (!named && matched.length === 0 && part.additional !== null) out.push(part.additional);
  }
  return out;
}

function typeAllows(spec: Spec, value: unknown): boolean {
  const t = spec.types;
  if (value === null) return t.null;
  if (typeof value === "boolean") return t.boolean;
  if (typeof value === "number") return t.number === "number" || (t.number === "integer" && Number.isInteger(value));
  if (typeof value === "string") return t.string;
  if (Array.isArray(value)) return t.array;
  return t.object;
}

/**
 * Every text `dfa` accepts, decoded (its languages are UTF-8), when there are at most `limit` of
 * at most `maxBytes` each; null otherwise (regex/sample.ts's finiteMembers).
 */
function finiteTexts(dfa: ByteDfa, limit: number, maxBytes: number): string[] | null {
  return finiteMembers(dfa, limit, maxBytes)?.map((bytes) => utf8.decode(bytes)) ?? null;
}

const utf8 = new TextDecoder();
const utf8Encoder = new TextEncoder();

/** The one text we write for a scalar value that has one (valueText's, not over), else null. */
function onlyText(value: unknown): string | null {
  if (value === null || typeof value === "boolean" || typeof value === "number") return JSON.stringify(value);
  return typeof value === "string" && hasOneSpelling(value) ? JSON.stringify(value) : null;
}

const JSON_TYPES = ["null", "boolean", "number", "string", "array", "object"] as const;
/** The names `type` takes. */
const KNOWN_TYPES: ReadonlySet<unknown> = new Set([...JSON_TYPES, "integer"]);

/** The JSON type of a value (integers are numbers). */
function jsonTypeOf(value: unknown): (typeof JSON_TYPES)[number] {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  return t === "boolean" || t === "number" || t === "string" ? t : "object";
}

/** What a value may be, as far as `type`, `enum` and `const` say: its JSON types, its values (canonicalJson; null: not listed). */
interface ScalarFacts {
  types: Set<string>;
  values: Set<string> | null;
}

/** What every value meeting some conjuncts has (valueFacts). */
interface ValueFacts {
  readonly value: ScalarFacts;
  /** If an object: the properties it has, may have (null: any), must not have, and what each may be. */
  readonly required: Set<string>;
  readonly allowed: Set<string> | null;
  readonly forbidden: ReadonlySet<string>;
  readonly properties: Map<string, ScalarFacts>;
}

/** Whether no value is in both. */
function apart(a: ScalarFacts, b: ScalarFacts): boolean {
  if (![...a.types].some((t) => b.types.has(t))) return true;
  return a.values !== null && b.values !== null && ![...a.values].some((v) => b.values!.has(v));
}

/** Narrows `facts` by one schema's `type`, `enum` and `const` (const from draft-06 on). */
function narrowScalar(facts: ScalarFacts, schema: unknown, withConst: boolean): void {
  if (schema === false) {
    facts.types.clear();
    return;
  }
  if (!isObject(schema)) return;
  const declared = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : null;
  // Malformed keywords tell nothing here (the merge refuses them where they count).
  if (declared !== null && declared.length > 0 && declared.every((t) => KNOWN_TYPES.has(t)))
    for (const t of facts.types) if (!declared.includes(t) && !(t === "number" && declared.includes("integer"))) facts.types.delete(t);
  const listed =
    withConst && "const" in schema ? [schema.const] : Array.isArray(schema.enum) && schema.enum.length > 0 ? schema.enum : null;
  if (listed === null) return;
  for (const t of facts.types) if (!listed.some((v) => jsonTypeOf(v) === t)) facts.types.delete(t);
  const texts = new Set(listed.map(canonicalJson));
  facts.values = facts.values === null ? texts : new Set([...facts.values].filter((v) => texts.has(v)));
}

/**
 * What every value meeting all of `conjuncts` has, from their own keywords only (each must hold
 * of every such value): ScalarFacts from `type`/`enum`/`const`; if an object, the properties it
 * must have (`required`, and an alternative's `require`), may have (`additionalProperties:
 * false` without `patternProperties`: the ones `properties` names), must not have (`forbid`),
 * and ScalarFacts per property from `properties`.
 */
function valueFacts(
  conjuncts: readonly Conjunct[],
  require: ReadonlySet<string>,
  forbid: ReadonlySet<string>,
  withConst: boolean,
): ValueFacts {
  const value: ScalarFacts = { types: new Set(JSON_TYPES), values: null };
  const required = new Set(require);
  let allowed: Set<string> | null = null;
  const properties = new Map<string, ScalarFacts>();
  for (const { schema } of conjuncts) {
    narrowScalar(value, schema, withConst);
    if (Array.isArray(schema.required)) for (const name of schema.required) if (typeof name === "string") required.add(name);
    const named = isObject(schema.properties) ? schema.properties : {};
    if (schema.additionalProperties === false && schema.patternProperties === undefined) {
      const names = Object.keys(named);
      allowed = allowed === null ? new Set(names) : new Set(names.filter((n) => allowed!.has(n)));
    }
    for (const [name, property] of Object.entries(named)) {
      let facts = properties.get(name);
      if (facts === undefined) properties.set(name, (facts = { types: new Set(JSON_TYPES), values: null }));
      narrowScalar(facts, property, withConst);
    }
  }
  return { value, required, allowed, forbidden: forbid, properties };
}

/** A JSON value's key under JSON equality: numbers by value, objects by their sorted members. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  if (typeof value === "number") return Object.is(value, -0) ? "0" : String(value);
  return JSON.stringify(value);
}
