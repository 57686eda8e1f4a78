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
// Objects are written with the schema's properties in its order (its own first, then what its
// references reach; where its text lists those first, that order as well; where `required` lists its
// keys in another order, the document and its members with required ones first in that order as
// well), then any others (or, with
// propertyOrder "any", small objects' properties in any order, others among them). Values the
// schema leaves free (`{}`, `true`, absent `items`/`additionalProperties`) are written nested at
// most `freeNesting` levels; a recursive schema is unrolled MAX_RECURSION times (recursion is not
// regular), a maxLength past MAX_COUNTED_LENGTH written as that.
//
// Duplicate keys: JSON parsers keep the last of two equal keys. Each pair we write satisfies its
// own schema, so the kept one does; but a subtraction needs the minuend free of duplicates (an
// earlier pair's value escapes O(S)'s check), so a minuend writes at most one key beyond the
// named ones, and towards `minProperties` only one unnamed key counts (a repeat would count twice).
//
// Here: the entry, `$ref`/recursion, the distribution of combinators into alternatives, caching,
// and the regex stage under the compile's limits. A merged Spec's values are written, through
// WriterContext (context.ts), by kind: numbers.ts, strings.ts, arrays.ts, objects.ts, and
// values.ts for `enum`/`const`; facts.ts tells what a `oneOf`/`not` subtraction may skip.

import {
  compileRegexNode,
  dfaHash,
  intersectDfas,
  isEmptyLanguage,
  LanguageGraph,
  matchesString,
  minimalDfa,
  ProductCallsClash,
  RegexTooComplexError,
  sameDfa,
  subtractDfas,
  regexClock,
  REGEX_MAX_WORK,
  type ByteDfa,
  type ProductCalls,
  type RegexLimits,
  type RegexNode,
} from "../../regex/index.js";
import { arrayLanguage } from "./arrays.js";
import type { Alternative, Subtrahend, Want, WriterContext } from "./context.js";
import { escapePointer, MAX_SCHEMA_NESTING, nestedDeeperThan, SchemaDocument, type Draft, type SchemaAt } from "./document.js";
import { JsonSchemaError, JsonSchemaTooComplexError, JsonSchemaUnsatisfiableError, type JsonSchemaWarning } from "./errors.js";
import { apart, isObjectOnlyType, JSON_TYPES, valueFacts, type ScalarFacts, type ValueFacts } from "./facts.js";
import {
  alt,
  EMPTY,
  concat,
  dfaNode,
  countedValueText,
  FALSE_TEXT,
  JsonSyntax,
  maxNesting,
  NULL_TEXT,
  NUMBER_TEXT,
  range,
  anyStringText,
  TRUE_TEXT,
  type WhitespaceStyle,
} from "./json-text.js";
import { numberLanguage } from "./numbers.js";
import { validationKeywords } from "./keywords.js";
import { objectLanguage, schemasForKey } from "./objects.js";
import { keepShared, sharedDfa } from "./shared-dfas.js";
import { MAX_RULES } from "../../support/index.js";
import { constrainsNothing, isObject, mergeConjuncts, type Conjunct, type Spec } from "./spec.js";
import { callNode, callsBeforeReading, hasCalls, productiveRules } from "./rules.js";
import { patternLanguage, stringLanguage } from "./strings.js";
import { enumLanguage } from "./values.js";

export interface JsonSchemaOptions {
  /** "default": `{"a": 1, "b": [1, 2]}` or compact; "compact": no whitespace; "indented": json.dumps(indent=2). */
  readonly whitespace?: WhitespaceStyle;
  /** Properties the schema does not name (no `additionalProperties`) are not written. */
  readonly forbidAdditionalProperties?: boolean;
  /** A keyword we cannot enforce exactly is an error (true) or ignored with a warning (false). */
  readonly strict?: boolean;
  /** Nesting levels of a value the schema leaves free. */
  readonly freeNesting?: number;
  /** With recursion "stack": a free value is a call too, so it nests to any depth (not freeNesting levels). */
  readonly freeValuesAnyDepth?: boolean;
  /**
   * With recursion "stack": a subschema's language used a second time is a call of one rule, not
   * another copy of its DFA (big schemas whose one DFA is past the size limits).
   */
  readonly shareSubschemas?: boolean;
  /**
   * With recursion "stack": a string value whose DFA has LEAF_RULE_STATES states or more (a
   * maxLength of about 31 or more) is a call of a rule of its own, not a copy of its DFA.
   */
  readonly stringRules?: boolean;
  /** Per-automaton sizes, and the whole compile's work (maxWork) and wall-clock valve (timeoutMs). */
  readonly limits?: RegexLimits;
  /**
   * Products kept for the compiles of one schema in several forms (compileServedSchema's tries,
   * which take most of the same set operations again): each is taken once. Without it, one
   * compile keeps its own.
   */
  readonly products?: ProductMemo;
  /**
   * "unrolled": one DFA (recursion written MAX_RECURSION levels deep, free values `freeNesting`);
   * "stack": where values nest without bound, calls of rules (CompiledJsonSchema.rules), served
   * by a pushdown automaton, so recursion and free values reach any depth. The indented style
   * stays unrolled (its indentation is per depth), as does whatever a set operation needs.
   */
  readonly recursion?: "unrolled" | "stack";
  /**
   * "schema": an object's named properties in the schema's order, then others; "any": in any
   * order, and others among them (objects of at most MAX_ANY_ORDER_MEMBERS named properties; a
   * bigger one keeps the schema's order, with a warning).
   */
  readonly propertyOrder?: "schema" | "any";
}

export const DEFAULT_JSON_SCHEMA_OPTIONS = {
  whitespace: "default" as WhitespaceStyle,
  forbidAdditionalProperties: false,
  strict: true,
  freeNesting: 2,
  recursion: "unrolled" as "unrolled" | "stack",
  freeValuesAnyDepth: false,
  shareSubschemas: false,
  stringRules: true,
  propertyOrder: "schema" as "schema" | "any",
  limits: { maxDfaStates: 100_000, maxNfaStates: 400_000, maxWork: REGEX_MAX_WORK, timeoutMs: Number.POSITIVE_INFINITY } as RegexLimits,
};

export interface CompiledJsonSchema {
  /** The language; with `rules`, rule 0's DFA, whose calls of the other rules it spells. */
  readonly dfa: ByteDfa;
  /** Under recursion "stack", where calls were written: every rule's DFA (rule 0 is `dfa`). */
  readonly rules?: readonly ByteDfa[];
  /** Some string value was written as a call of a rule of its own (JsonSchemaOptions.stringRules). */
  readonly stringRulesWritten?: boolean;
  readonly draft: Draft;
  readonly warnings: readonly JsonSchemaWarning[];
}

/** Most alternatives one subschema may distribute into (anyOf × oneOf × if × dependencies). */
const MAX_ALTERNATIVES = 256;
/** Deepest value nesting a schema may ask for. */
const MAX_DEPTH = 64;
/** Longest chain of `$ref`s and `allOf`s followed from one subschema. */
const MAX_REFERENCE_CHAIN = 256;
/**
 * States past which a language's copies (SchemaCompiler.repeated) are one rule's calls instead.
 * Below it nothing changes: a DFA of that size compiles in milliseconds and serves the fastest masks.
 */
const REPEATED_AS_RULE_STATES = 20_000;
/**
 * Fewest copies worth that question: fewer copies of a language that big are rare, and measuring
 * every array's item alone (an unbounded array embeds its item twice) tripled some Kubernetes
 * compiles (kb_712: 71 → 258 ms).
 */
const REPEATED_MIN_COPIES = 8;
/**
 * States from which a string value is a rule's call instead of its DFA embedded (stringLeaf):
 * about maxLength 31. A counted string costs ~13 states a character, and every object, array
 * item and alternative it types copied them into its own DFA: on MaskBench (qwen2) the compile
 * time summed over all schemas fell 13%, the schemas over 200 ms from 18 to 10, 3 schemas past
 * the DFA's size limit now compile, and the masks' p99 stayed where it was (223 against 229 µs).
 * Measured at 150, 250, 400 and 1000 states: 250–1000 alike.
 */
const LEAF_RULE_STATES = 400;
/**
 * States up to which a language used a second time is embedded as its subset construction's DFA,
 * not minimized: finishing it was most of its cost (two fifths of a small function-calling
 * schema's compile, whose `required` order writes its members twice), and embedded, as the
 * graph's first copy is, it costs a few more states (3% at the median). Past it, the minimal DFA:
 * copies of unminimized DFAs inside one another multiply (Handwritten notnames10 went past the
 * DFA's size limit unminimized at any size). On MaskBench's median band: compile p50 −4 to −11%,
 * the same with 4,000 states.
 */
const REUSED_UNMINIMIZED_STATES = 1000;
/** How many times a recursive subschema is written inside itself. */
const MAX_RECURSION = 3;
/**
 * States of reused languages embedded again as copies, where calls of a shared rule could be
 * written instead, past which the compile starts over sharing them (shareSubschemas): Github
 * o21108 and o21112 (4k characters) copy 250k states into a DFA past the size limit, refused
 * after 280 ms, and share into rules in 25 ms. Below it the copies stay: on MaskBench, schemas
 * copying 10k–100k states compile about as fast either way, some slower sharing, and one DFA
 * serves the fastest masks.
 */
const SHARE_AFTER_COPIED_STATES = 100_000;

/**
 * Transition tables a compile's kept products may hold on to (SchemaCompiler.products), counting
 * their operands': memory a compile would otherwise have let go, kept only in case a product is
 * asked again. The schemas it helps keep a few MB (o26594's 255-character uris: 4 MB).
 */
const MAX_KEPT_PRODUCT_BYTES = 64 << 20;

/**
 * Products taken, by their operands' tables and the calls they read (dfaHash, then sameDfa): a
 * language is built anew where its memo key differs (another depth, another Want) though its DFA
 * comes out the same, and its set operations were then done again, up to a third of a compile (a
 * counted string's product with a pattern, asked once per property it types); and a schema tried
 * in several forms (compileServedSchema) takes most of its products again in each (MaskBench's
 * o37786, refused for its size: the same ten products, 1.2 s, in each of its five tries).
 *
 * Each compile (begin) sees it as a memo of its own would be: at most MAX_KEPT_PRODUCT_BYTES of
 * its own products, found for free; a product an earlier compile took is charged the work its
 * taking counted, as taking it again would be, and becomes the compile's own where that memo would
 * have kept it. So a compile's work, and its work limit's verdict, is what it was with a memo of
 * its own; only the time is saved. What earlier compiles kept makes room for a compile's own,
 * oldest first: the memo never holds more than MAX_KEPT_PRODUCT_BYTES.
 */
export class ProductMemo {
  private readonly made = new Map<string, KeptProduct[]>();
  /** What is kept, in the order kept. */
  private order: KeptProduct[] = [];
  private bytes = 0;
  /** The tables the current compile holds as its own. */
  private ownBytes = 0;
  /** The compile now taking products (begin). */
  private compile = 0;

  /** `maxBytes`: the tables it may hold (tests give less). */
  constructor(private readonly maxBytes = MAX_KEPT_PRODUCT_BYTES) {}

  /** A compile begins. */
  begin(): void {
    this.compile++;
    this.ownBytes = 0;
  }

  /**
   * The product of a and b under `mode` reading `calls`, when it is kept, with the work to charge
   * for it (0 where the compile took it itself); else null.
   */
  find(mode: "intersect" | "subtract", a: ByteDfa, b: ByteDfa, calls: ProductCalls | undefined): { result: ByteDfa; work: number } | null {
    const made = this.made.get(productKey(mode, a, b, calls));
    const kept = made?.find((p) => sameDfa(p.a, a) && sameDfa(p.b, b) && sameCalls(p.calls, calls));
    if (kept === undefined) return null;
    if (kept.compile === this.compile) return { result: kept.result, work: 0 };
    if (this.ownBytes + kept.bytes <= this.maxBytes) {
      kept.compile = this.compile;
      this.ownBytes += kept.bytes;
    }
    return { result: kept.result, work: kept.work };
  }

  /** Keeps a product the current compile just took with `work` units, where its own bytes allow. */
  keep(mode: "intersect" | "subtract", a: ByteDfa, b: ByteDfa, calls: ProductCalls | undefined, result: ByteDfa, work: number): void {
    const bytes = a.next.byteLength + b.next.byteLength + result.next.byteLength;
    if (this.ownBytes + bytes > this.maxBytes) return;
    if (this.bytes + bytes > this.maxBytes) {
      // Earlier compiles' products make room, oldest first (the compile's own fit: see above).
      const left: KeptProduct[] = [];
      for (const p of this.order) {
        if (p.compile !== this.compile && this.bytes + bytes > this.maxBytes) this.evict(p);
        else left.push(p);
      }
      this.order = left;
    }
    const kept: KeptProduct = { key: productKey(mode, a, b, calls), a, b, calls, result, bytes, work, compile: this.compile };
    this.bytes += bytes;
    this.ownBytes += bytes;
    this.order.push(kept);
    const made = this.made.get(kept.key);
    if (made === undefined) this.made.set(kept.key, [kept]);
    else made.push(kept);
  }

  private evict(kept: KeptProduct): void {
    const made = this.made.get(kept.key)!;
    made.splice(made.indexOf(kept), 1);
    if (made.length === 0) this.made.delete(kept.key);
    this.bytes -= kept.bytes;
  }
}

interface KeptProduct {
  readonly key: string;
  readonly a: ByteDfa;
  readonly b: ByteDfa;
  readonly calls: ProductCalls | undefined;
  readonly result: ByteDfa;
  readonly bytes: number;
  /** The work units taking it counted. */
  readonly work: number;
  /** The compile whose own it is (ProductMemo.begin). */
  compile: number;
}

/** ProductMemo's key: the mode, the operands' hashes, and the calls read (their rule's body and the minuend's). */
function productKey(mode: string, a: ByteDfa, b: ByteDfa, calls: ProductCalls | undefined): string {
  const read = calls === undefined ? "" : `.${calls.rule}.${dfaHash(calls.body)}.${dfaHash(calls.firstBody ?? calls.body)}`;
  return `${mode}${dfaHash(a)}.${dfaHash(b)}${read}`;
}

/** Whether two products read the same calls (the same rule, bodies of the same tables). */
function sameCalls(x: ProductCalls | undefined, y: ProductCalls | undefined): boolean {
  if (x === undefined || y === undefined) return x === y;
  return x.rule === y.rule && sameDfa(x.body, y.body) && sameDfa(x.firstBody ?? x.body, y.firstBody ?? y.body);
}

/**
 * Compiles a JSON Schema (object or boolean) to the DFA of the JSON texts we may write for it.
 * Throws JsonSchemaError (400: malformed, remote `$ref`, a keyword we cannot enforce under
 * `strict`), JsonSchemaTooComplexError (422: a size or time limit), JsonSchemaUnsatisfiableError.
 */
export function compileJsonSchema(schema: unknown, options: JsonSchemaOptions = {}): CompiledJsonSchema {
  if (typeof schema !== "boolean" && !isObject(schema)) throw new JsonSchemaError("a schema must be an object or a boolean", "");
  if (nestedDeeperThan(schema, MAX_SCHEMA_NESTING)) throw new JsonSchemaError(`nested deeper than ${MAX_SCHEMA_NESTING} levels`, "");
  const limits = { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, ...options.limits };
  const resolved = { ...DEFAULT_JSON_SCHEMA_OPTIONS, ...options, limits };
  const attempt = (options: Options): CompiledJsonSchema => {
    try {
      return compileInSomeForm(schema, options);
    } catch (error) {
      // "some key is ab…, another cd…" needs two unnamed keys of one coarse band: finer bands.
      if (!(error instanceof OneUnnamedKeyTooFew)) throw error;
      try {
        return compileInSomeForm(schema, { ...options, fineKeyBands: true });
      } catch (finer) {
        // Past a limit that way: what the first compile found stands.
        if (finer instanceof JsonSchemaTooComplexError && finer.limit !== "time") throw new JsonSchemaUnsatisfiableError("");
        throw finer;
      }
    }
  };
  try {
    return attempt({ ...resolved, requiredOrders: true });
  } catch (error) {
    // Objects in `required`'s order too are past a size limit: in `properties`' order alone.
    if (!(error instanceof RequiredOrdersTooBig)) throw error;
    return attempt({ ...resolved, requiredOrders: false });
  }
}

/** A stack of rules where the schema allows it, else one DFA. */
function compileInSomeForm(schema: unknown, options: Options): CompiledJsonSchema {
  if (options.recursion === "stack" && options.whitespace !== "indented") {
    try {
      return compileOnce(schema, options);
    } catch (error) {
      // Copies that calls of shared rules would replace: the same language, sharing them.
      if (error instanceof CopiesBetterShared) return compileInSomeForm(schema, { ...options, shareSubschemas: true });
      // A set operation met a call: the language is written unrolled instead, as one DFA.
      if (!(error instanceof CallsInSetOperation)) throw error;
    }
  }
  return compileOnce(schema, { ...options, recursion: "unrolled" });
}

/** A compile under recursion "stack" copied more than SHARE_AFTER_COPIED_STATES states of reused languages. */
class CopiesBetterShared extends Error {}

/** A compile that wrote objects in `required`'s order too met a size limit (not the time valve). */
class RequiredOrdersTooBig extends Error {}

/**
 * The spec with its required members first, in the order `required` lists them, then the others
 * in `properties`' order; null when that is its order already. A schema's author often lists
 * both in the order instances are written, and a copy of the schema whose keys were sorted keeps
 * it only in `required` (an array): MaskBench's files, whose instances follow it. One required
 * key counts too: it is the one instances begin with (Glaive's `{"shape": …, "dimensions": …}`).
 */
function requiredOrderSpec(spec: Spec, depth: number): Spec | null {
  const { names, required } = spec.objects;
  if (required.length === 0) return null;
  // One required key: at the document only, and only a scalar's (a name, an id, a kind): the
  // copy of a big object (Kubernetes' lists, `required: ["items"]`) cost more than it gained.
  if (required.length === 1 && (depth > 0 || !spec.objects.parts.some((part) => isScalarSchema(part.properties.get(required[0]!)?.schema))))
    return null;
  const first = [...new Set(required)];
  const firstSet = new Set(first);
  const order = [...first, ...names.filter((name) => !firstSet.has(name))];
  const current = memberOrder(spec);
  if (order.every((name, i) => name === current[i])) return null;
  return { ...spec, objects: { ...spec.objects, names: order } };
}

/** Whether a schema admits scalars only, by its `type`, `enum` or `const` (a `$ref`: not known, no). */
function isScalarSchema(schema: unknown): boolean {
  if (!isObject(schema)) return false;
  const scalar = (value: unknown): boolean => value === null || typeof value !== "object";
  const types = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? schema.type : null;
  if (types !== null && types.length > 0) return types.every((t) => t !== "object" && t !== "array");
  if (Array.isArray(schema.enum)) return schema.enum.every(scalar);
  return "const" in schema && scalar(schema.const);
}

/** The order objectLanguage writes a spec's members in: its names, then keys only `required` names. */
function memberOrder(spec: Spec): string[] {
  const { names, required } = spec.objects;
  return [...names, ...[...new Set(required)].filter((name) => !names.includes(name))];
}

/** The spec's objects alone: another order of them adds nothing to its other types. */
function objectsOnly(spec: Spec): Spec {
  return { ...spec, types: { null: false, boolean: false, object: true, array: false, string: false, number: "none" } };
}

/** What a set operation cannot take: a language with calls (their texts are not known there). */
class CallsInSetOperation extends Error {}

function compileOnce(schema: unknown, options: Options): CompiledJsonSchema {
  const document = new SchemaDocument(schema);
  const limits = options.limits;
  const compiler = new SchemaCompiler(document, options);
  let dfa: ByteDfa;
  let rules: ByteDfa[] | undefined;
  // One frame of work (and of the wall-clock valve) for the whole compile: every DFA built,
  // product taken or shared DFA reused in it counts against it.
  const frame = regexClock.start(limits.maxWork ?? REGEX_MAX_WORK, limits.timeoutMs ?? Number.POSITIVE_INFINITY);
  try {
    dfa = compiler.dfaOf(compiler.language([document.rootAt], { depth: 0, over: false, dupFree: false }), "");
    rules = compiler.ruleDfas(dfa);
  } catch (error) {
    // The limits above bound every recursion we know of; should one be missed, the answer is
    // still a refusal, not a crash.
    if (error instanceof RangeError && /call stack/.test(error.message)) {
      throw new JsonSchemaTooComplexError("nested too deeply to compile", "", "depth");
    }
    const refusal = compiler.overLimit(error, "");
    if (compiler.requiredOrdersWritten && refusal instanceof JsonSchemaTooComplexError && refusal.limit !== "time") {
      throw new RequiredOrdersTooBig();
    }
    throw refusal;
  } finally {
    regexClock.stop(frame);
  }
  const unsatisfiable = (): Error =>
    compiler.oneUnnamedKeyWritten && options.fineKeyBands !== true ? new OneUnnamedKeyTooFew() : new JsonSchemaUnsatisfiableError("");
  if (isEmptyLanguage(dfa)) throw unsatisfiable();
  if (rules === undefined) return { dfa, draft: document.draft, warnings: compiler.warnings };
  if (!productiveRules(rules, 0)[0]) throw unsatisfiable();
  const stringRulesWritten = compiler.stringRulesWritten ? { stringRulesWritten: true } : {};
  return { dfa, rules, ...stringRulesWritten, draft: document.draft, warnings: compiler.warnings };
}

/**
 * `requiredOrders`: objects also in `required`'s order where it differs (requiredOrderSpec).
 * `fineKeyBands`: a minuend's unnamed keys one per first character (objects.ts's bandedKeys),
 * asked only once the compile without it found no value (OneUnnamedKeyTooFew).
 */
type Options = typeof DEFAULT_JSON_SCHEMA_OPTIONS &
  JsonSchemaOptions & { readonly requiredOrders?: boolean; readonly fineKeyBands?: boolean };

/** No value was found, and some minuend held one unnamed key where more might have made one. */
class OneUnnamedKeyTooFew extends Error {}

class SchemaCompiler implements WriterContext {
  readonly warnings: JsonSchemaWarning[] = [];
  private readonly warned = new Set<string>();
  /** annexBReason per pattern: patternLanguage is asked again for each key a pattern is tried on. */
  readonly annexBReasons = new Map<string, string | null>();
  readonly syntax: JsonSyntax;
  /** Languages by subschema(s) and Want: nodes, compiled to a DFA on their second use. */
  private readonly memo = new Map<string, RegexNode>();
  /** Products taken (see ProductMemo): this compile's, or its schema's other forms' too (JsonSchemaOptions.products). */
  private readonly products: ProductMemo;
  /**
   * A reused language's DFA, left unminimized (see `language`), and its minimal DFA once a set
   * operation has taken it as an operand (products of unminimized operands grow past the limits).
   */
  private readonly minimalOf = new Map<ByteDfa, ByteDfa | null>();
  /** Subschemas being compiled, and how many times each is open (recursion unrolls). */
  private readonly inProgress = new Map<string, number>();
  /**
   * Self-references being expanded on the stack now (recursion is unrolled MAX_RECURSION of them
   * deep, on every path alike). A language built inside a recursion depends on it — the innermost
   * level writes no deeper nesting —, so languages are memoised per depth: the same subschema met
   * at another depth is another language.
   */
  private unrolled = 0;
  /** Rules by the key of the language each stands for (recursion "stack"); rule 0 is the document. */
  private readonly ruleOfKey = new Map<string, number>();
  /** Each rule's language, once built (index 0: the document, set last). */
  private readonly ruleBodies: (RegexNode | null)[] = [null];
  /** Languages being built now, by key: meeting one again inside itself is a call of its rule. */
  private readonly building = new Set<string>();
  /** Open set operations' operands: no calls may be written inside them (see `stacking`). */
  private blocked = 0;
  /**
   * Open subtractions tried with free values as calls (`subtracted`): inside their operands only
   * the free-value rule is called (freeCalls), everything else written as under `blocked`.
   */
  private freeOnly = 0;
  /** freeCallRule's answers, made once per compile (an O minuend's, a U minuend's). */
  private readonly freeCallRules: (ProductCalls | undefined)[] = [];
  /** Subtractions (by where they are) whose try with calls failed (`subtracted`). */
  private readonly clashed = new Set<string>();
  /** Whether some object was written in `required`'s order too (RequiredOrdersTooBig). */
  requiredOrdersWritten = false;
  /** Whether some minuend's object held one unnamed key among too many to list (OneUnnamedKeyTooFew). */
  oneUnnamedKeyWritten = false;
  /** The rules stringLeaf made, by the DFA each one's body is. */
  private readonly leafRules = new Map<ByteDfa, number>();
  get stringRulesWritten(): boolean {
    return this.leafRules.size > 0;
  }
  /** States of reused languages embedded again where a call could have been (SHARE_AFTER_COPIED_STATES). */
  private copiedStates = 0;

  constructor(
    private readonly document: SchemaDocument,
    // Replaced only for a while by withFreeNesting.
    public options: Options,
  ) {
    this.syntax = new JsonSyntax(options.whitespace);
    this.products = options.products ?? new ProductMemo();
    this.products.begin();
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

  regex<T>(pointer: string, build: (limits: RegexLimits) => T): T {
    try {
      return build(this.limits(pointer));
    } catch (error) {
      throw this.overLimit(error, pointer);
    }
  }

  compileNode(node: RegexNode, pointer: string, minimal = true): ByteDfa {
    return this.regex(pointer, (limits) => compileRegexNode(node, { ...limits, minimal }));
  }

  /**
   * The DFA of a language. Languages stay nodes (graphs embedding their parts) until something
   * needs a DFA: a set operation, a membership test, the whole document. One subset construction
   * over the whole then replaces one per nesting level.
   *
   * Left unminimized (determinize): a subschema's subset construction is within a few percent of
   * minimal, and finishing it was ~40% of its cost. Products (set operations) still return
   * minimal DFAs; a language used twice is embedded unminimized up to REUSED_UNMINIMIZED_STATES
   * (see `language`) and minimized where a set operation takes it (minimalOperand); the
   * schema-independent DFAs shared between compiles are minimal.
   */
  dfaOf(node: RegexNode, pointer: string): ByteDfa {
    return node.kind === "dfa" ? node.dfa : this.compileNode(node, pointer, false);
  }

  intersect(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa {
    if (this.options.recursion === "stack" && (hasCalls(a) || hasCalls(b))) throw this.callsMet();
    return this.product(a, b, "intersect", pointer);
  }

  subtract(a: ByteDfa, b: ByteDfa, pointer: string): ByteDfa {
    if (this.options.recursion === "stack" && (hasCalls(a) || hasCalls(b))) throw this.callsMet();
    return this.product(a, b, "subtract", pointer);
  }

  /**
   * A set operation met calls where it reads bytes: inside a subtraction tried with free values as
   * calls (`subtracted`), that subtraction is written without them; elsewhere, the whole compile
   * is (CallsInSetOperation).
   */
  private callsMet(): Error {
    return this.freeOnly > 0 ? new ProductCallsClash() : new CallsInSetOperation();
  }

  /** A product of this compile's, made again from the same tables, is the one made then (see products). */
  private product(a: ByteDfa, b: ByteDfa, mode: "intersect" | "subtract", pointer: string, calls?: ProductCalls): ByteDfa {
    a = this.minimalOperand(a, pointer);
    b = this.minimalOperand(b, pointer);
    const made = this.products.find(mode, a, b, calls);
    if (made !== null) {
      // Taken by an earlier form: charged as taking it here would be (see ProductMemo).
      if (made.work > 0) this.regex(pointer, () => regexClock.tick(made.work));
      return made.result;
    }
    const before = regexClock.used;
    const result = this.regex(pointer, (limits) => (mode === "intersect" ? intersectDfas : subtractDfas)(a, b, limits, calls));
    this.products.keep(mode, a, b, calls, result, regexClock.used - before);
    return result;
  }

  /** `dfa`, minimized where it is a reused language's unminimized DFA (see minimalOf). */
  private minimalOperand(dfa: ByteDfa, pointer: string): ByteDfa {
    const known = this.minimalOf.get(dfa);
    if (known === undefined) return dfa;
    if (known !== null) return known;
    const minimal = this.regex(pointer, (limits) => minimalDfa(dfa, limits));
    this.minimalOf.set(dfa, minimal);
    return minimal;
  }

  /**
   * `write` with free values nesting at least `levels` deep: what an enum value nested deeper
   * than freeNesting is checked against (values.ts). Languages memoized meanwhile nest deeper
   * where they are reused: a U still of valid texts only, an O still a superset.
   */
  withFreeNesting<T>(levels: number, write: () => T): T {
    const saved = this.options;
    if (levels <= saved.freeNesting) return write();
    this.options = { ...saved, freeNesting: levels };
    try {
      return write();
    } finally {
      this.options = saved;
    }
  }

  /**
   * Property names the schemas `refs` list in a `propertyNames` at their own level (its `const`s
   * and `enum`s, through `$ref`s and combinators: a bounded walk), first met first, at most
   * `limit`. What objects.ts writes as members of a minuend whose subtrahends say "every key
   * differs from X": a key X is how a value escapes them. (Keys a subtrahend names in
   * `properties` or `required` are mostly what a value escapes it by leaving out: listing those
   * doubled some compiles and gained nothing.)
   */
  mentionedKeys(refs: readonly SchemaAt[], limit: number): string[] {
    const keys = new Set<string>();
    const seen = new Set<string>();
    let budget = MAX_MENTION_WALK;
    const add = (key: unknown): void => {
      if (typeof key === "string" && keys.size < limit) keys.add(key);
    };
    const walk = (at: SchemaAt, names: boolean): void => {
      const schema = at.schema;
      if (!isObject(schema) || keys.size >= limit || budget-- <= 0) return;
      const id = `${names ? "n" : "o"}${at.base}#${at.pointer}`;
      if (seen.has(id)) return;
      seen.add(id);
      const sub = (value: unknown, pointer: string, asNames: boolean): void => walk(this.document.inside(at, value, pointer), asNames);
      if (names) {
        add(schema.const);
        if (Array.isArray(schema.enum)) for (const value of schema.enum) add(value);
      } else if (schema.propertyNames !== undefined) sub(schema.propertyNames, `${at.pointer}/propertyNames`, true);
      for (const keyword of ["not", "if", "then", "else"]) {
        if (schema[keyword] !== undefined) sub(schema[keyword], `${at.pointer}/${keyword}`, names);
      }
      for (const keyword of ["allOf", "anyOf", "oneOf"]) {
        const list = schema[keyword];
        if (Array.isArray(list)) list.forEach((value, i) => sub(value, `${at.pointer}/${keyword}/${i}`, names));
      }
      if (typeof schema.$ref === "string") {
        let target: SchemaAt;
        try {
          target = this.document.resolve(schema.$ref, at);
        } catch {
          return; // compiling the subtrahend refuses it, with its reason
        }
        walk(target, names);
      }
    };
    for (const at of refs) walk(at, false);
    return [...keys];
  }

  /**
   * A language an automaton operation takes (a minuend, a subtrahend, what an enum is checked
   * against): written without calls, as the unrolled form writes it, while the rest of the
   * document keeps its calls. (Before, such a call made the whole compile start over unrolled:
   * its work twice, and recursion and free values bounded everywhere.)
   */
  operand<T>(write: () => T): T {
    this.blocked++;
    try {
      return write();
    } finally {
      this.blocked--;
    }
  }

  // ---- rules (recursion "stack") -------------------------------------------------------

  /** Whether a value that nests without bound is written as a call here (see JsonSchemaOptions.recursion). */
  private get stacking(): boolean {
    return this.options.recursion === "stack" && this.blocked === 0 && this.freeOnly === 0;
  }

  /** Whether a free value in a subtraction's operand is a call of the free-value rule here (see freeOnly). */
  private get freeCalls(): boolean {
    return this.options.recursion === "stack" && this.options.freeValuesAnyDepth === true && this.blocked === 0 && this.freeOnly > 0;
  }

  /** The rule of the language keyed `key` (made on first need). */
  private ruleFor(key: string): number {
    let rule = this.ruleOfKey.get(key);
    if (rule === undefined) {
      rule = this.ruleBodies.length;
      if (rule >= MAX_RULES) throw new JsonSchemaTooComplexError(`needs more than ${MAX_RULES} rules`, "", "rules");
      this.ruleOfKey.set(key, rule);
      this.ruleBodies.push(null);
    }
    return rule;
  }

  /**
   * A language embedded `copies` times (an array's items, once per position): where calls may be
   * written here and the copies would cost more than REPEATED_AS_RULE_STATES states, one rule
   * called from each place (`maxItems: 100` of objects with long strings: their copies were past
   * the one DFA's limits); else the language itself, copied as today (a DFA's masks are the cheapest).
   */
  repeated(node: RegexNode, copies: number, want: Want, pointer: string): RegexNode {
    if (copies < REPEATED_MIN_COPIES || !this.stacking || want.over || want.dupFree) return node;
    // Minimal: each copy of it costs its states (as a language used twice, in `language`).
    const dfa = node.kind === "dfa" ? node.dfa : this.compileNode(node, pointer);
    if (dfa.numStates * copies <= REPEATED_AS_RULE_STATES) return dfaNode(dfa);
    return callNode(this.ruleOfDfa("repeated", dfa));
  }

  /** A new rule whose body is `dfa` (`kind` names it in ruleOfKey). */
  private ruleOfDfa(kind: string, dfa: ByteDfa): number {
    const rule = this.ruleFor(`#${kind}${this.ruleBodies.length}`);
    this.ruleBodies[rule] = dfaNode(dfa);
    return rule;
  }

  /** A reused language embedded again where a call of its rule could be (see SHARE_AFTER_COPIED_STATES). */
  private copied(dfa: ByteDfa): void {
    if (this.options.shareSubschemas) return;
    this.copiedStates += dfa.numStates;
    if (this.copiedStates > SHARE_AFTER_COPIED_STATES) throw new CopiesBetterShared();
  }

  /** Every rule's DFA, the document's (`root`) first; undefined when no call was written. */
  ruleDfas(root: ByteDfa): ByteDfa[] | undefined {
    // A rule made on the way but never called from the document (a subtraction tried with calls,
    // then written without them) leaves it one DFA.
    if (this.ruleBodies.length === 1 || !hasCalls(root)) return undefined;
    const rules = [root];
    for (let r = 1; r < this.ruleBodies.length; r++) {
      const body = this.ruleBodies[r];
      if (!body) throw new Error(`rule ${r} was called but never built`);
      rules.push(this.dfaOf(body, ""));
    }
    if (callsBeforeReading(rules)) throw new CallsInSetOperation();
    return rules;
  }

  /** A schema-independent DFA, from the shared cache or built now. */
  shared(key: string, build: () => ByteDfa): ByteDfa {
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
    if (refs.length === 0) return this.freeValue(want);
    const stacking = this.stacking && !want.over && !want.dupFree;
    // Written as calls, a schema that is only a `$ref` is its target's language: keyed by the
    // target, each subschema is one rule however many places refer to it.
    const pointers = stacking && refs.length === 1 ? this.scopeRoot(refs[0]!) : refs.map((r) => r.pointer).join("|");
    // Where a dynamic reference's target depends on the dynamic scope, so may the language.
    const scopes = this.document.scopeMatters ? ` ${refs.map((r) => this.document.dynamicKey(r)).join("|")}` : "";
    const pointer = refs[0]?.pointer ?? "";
    if (want.depth > MAX_DEPTH) throw new JsonSchemaTooComplexError(`values nested deeper than ${MAX_DEPTH} levels`, pointer, "depth");
    const style = this.syntax.style === "indented" ? want.depth : 0;
    // An over-approximation's language depends on how much deeper than here its limit is.
    const over = want.over ? `O${want.limit === undefined ? "" : want.limit - want.depth}` : "U";
    const calls = stacking ? "S" : this.freeCalls ? "F" : "";
    const baseKey = `${pointers}${scopes}#${style}${over}${want.dupFree ? "d" : ""}${want.anyOrder ? "a" : ""}${calls}`;
    // Met again inside itself: a call of its rule (the rule is this very language).
    if (stacking && this.building.has(baseKey)) return callNode(this.ruleFor(baseKey));
    const known = this.memo.get(`${baseKey}@${this.unrolled}`);
    if (known) {
      // Used twice: embedded as its DFA from now on, not as the graph it was built as (each copy
      // of the graph is determinized again in the DFA around it).
      if (known.kind === "dfa") {
        if (stacking) this.copied(known.dfa);
        return known;
      }
      // Or, sharing subschemas, a call of one rule wherever it is used (its language is the same).
      if (stacking && this.options.shareSubschemas) {
        const rule = this.ruleFor(baseKey);
        this.ruleBodies[rule] = known;
        const call = callNode(rule);
        this.memo.set(`${baseKey}@${this.unrolled}`, call);
        return call;
      }
      // A small one unminimized (see REUSED_UNMINIMIZED_STATES); a set operation takes it minimized.
      let dfa = this.dfaOf(known, pointer);
      if (dfa.numStates > REUSED_UNMINIMIZED_STATES) dfa = this.regex(pointer, (limits) => minimalDfa(dfa, limits));
      else this.minimalOf.set(dfa, null);
      const compiled = dfaNode(dfa);
      this.memo.set(`${baseKey}@${this.unrolled}`, compiled);
      if (stacking) this.copied(dfa);
      return compiled;
    }
    const open = this.inProgress.get(pointers) ?? 0;
    if (open > 0) {
      // Recursion: what we write is unrolled MAX_RECURSION times, deeper nesting is not written.
      // An over-approximation cannot stop there (it must hold every deeper document): where the
      // schema re-enters itself it holds any value (of any depth a text we write can reach).
      if (want.over) return dfaNode(this.anyValue(want.depth, this.options.freeNesting, want));
      if (!stacking && this.unrolled > MAX_RECURSION) return EMPTY;
    }
    const depth = this.unrolled;
    this.inProgress.set(pointers, open + 1);
    if (open > 0 && !stacking) this.unrolled++;
    if (stacking) this.building.add(baseKey);
    let node: RegexNode;
    try {
      node = this.compileAlternatives(refs, want, pointer);
    } finally {
      this.unrolled = depth;
      if (stacking) this.building.delete(baseKey);
      if (open === 0) this.inProgress.delete(pointers);
      else this.inProgress.set(pointers, open);
    }
    const rule = stacking ? this.ruleOfKey.get(baseKey) : undefined;
    if (rule !== undefined) {
      this.ruleBodies[rule] = node;
      node = callNode(rule);
    }
    this.memo.set(`${baseKey}@${depth}`, node);
    return node;
  }

  private compileAlternatives(refs: readonly SchemaAt[], want: Want, pointer: string): RegexNode {
    const alternatives = this.alternatives(refs, want);
    const parts: RegexNode[] = [];
    for (let index = 0; index < alternatives.length; index++) {
      const alternative = alternatives[index]!;
      const keysFree = alternative.forbid.size === 0 && alternative.require.size === 0 && alternative.keyFails.length === 0;
      if (alternative.conjuncts.length === 0 && alternative.subtract.length === 0 && keysFree) {
        parts.push(this.freeValue(want));
        continue;
      }
      // What provably shares no value with the alternative takes nothing away from it: most
      // `oneOf`s (branches told apart by a type, or by a required property's listed values).
      const mine = alternative.subtract.length === 0 ? null : this.valueFacts(alternative);
      const subtract = alternative.subtract.filter((subtrahend) => !this.disjoint(mine!, subtrahend));
      // What a subtrahend requires: the objects lacking one of its keys need no set operation.
      const split =
        want.over || subtract.length === 0
          ? null
          : (this.splitByAbsentKey(alternative, mine!, subtract) ?? this.splitByToldApartKey(alternative, mine!, subtract));
      if (split !== null && alternatives.length + split.length <= MAX_ALTERNATIVES) {
        alternatives.push(...split);
        continue;
      }
      // A subtrahend that only constrains the keys of an object of one key: that key fails it.
      const keyed = want.over || subtract.length === 0 ? null : this.keyFailing(alternative, subtract);
      if (keyed !== null) {
        alternatives.push(keyed);
        continue;
      }
      const minuendWant = subtract.length > 0 && !want.over ? { ...want, dupFree: true } : want;
      const scopeRoot = refs.length === 1 ? this.scopeRoot(refs[0]!) : null;
      const spec = mergeConjuncts(alternative.conjuncts, this.document, this, scopeRoot);
      // Where the schema's text lists a `$ref`/`allOf`/combinator before its properties, its
      // object is written in that order too: instances follow either (the Test Suite's own
      // properties first, MaskBench's sorted-key schemas theirs first).
      const textSpec = want.over ? null : this.textOrderSpec(alternative, spec, scopeRoot);
      // Where `required` lists its members in another order than `properties`, that order too: at
      // the document and its members only (each order is a copy of the object's automaton, and
      // copies nested in copies multiply: one MaskBench schema compiled 13 times slower). A
      // subschema's language is memoized without its depth, so one used both there and deeper is
      // written everywhere as where it was first met (always the same for a schema).
      const requiredSpec =
        want.over || want.depth > 1 || this.options.propertyOrder === "any" || this.options.requiredOrders !== true
          ? null
          : requiredOrderSpec(spec, want.depth);
      // A minuend is written without calls (a subtraction needs its texts).
      const writeBase = (): RegexNode => {
        const written = [this.specLanguage(spec, alternative, minuendWant, pointer)];
        // The other orders: of the object alone (the other types are written already), each once.
        const orders = [memberOrder(spec)];
        for (const variant of [textSpec, requiredSpec]) {
          if (variant === null || !variant.types.object) continue;
          const order = memberOrder(variant);
          if (orders.some((o) => o.length === order.length && o.every((name, i) => name === order[i]))) continue;
          orders.push(order);
          if (variant === requiredSpec) this.requiredOrdersWritten = true;
          written.push(this.specLanguage(objectsOnly(variant), alternative, minuendWant, pointer));
        }
        return written.length === 1 ? written[0]! : alt(written);
      };
      if (subtract.length === 0) {
        // A subschema of annotations only (`{"description": …}`) is a free value too: nothing in
        // its merged keywords, nor keys the alternative forbids, requires or fails.
        const free = keysFree && this.callsFreeValue(want) && !this.options.forbidAdditionalProperties && constrainsNothing(spec);
        parts.push(free ? this.freeValue(want) : writeBase());
        continue;
      }
      // Inside an O, the U subtracted takes small objects in any order (Want.anyOrder).
      const over = !want.over;
      const subtrahends = subtract.map((refs) => ({
        at: refs[0]?.pointer ?? pointer,
        write: (limit: number | undefined) =>
          this.language(refs, { depth: want.depth, over, dupFree: false, limit, ...(over ? {} : { anyOrder: true }) }),
      }));
      const site = `${pointer} ${subtract.map((refs) => refs.map((r) => r.pointer).join("|")).join(" ")}`;
      const dfa = this.subtracted(site, writeBase, subtrahends, over ? want.depth : null, pointer);
      if (!isEmptyLanguage(dfa)) parts.push(dfaNode(dfa));
    }
    return alt(parts);
  }

  /**
   * What `writeMinuend` writes less each subtrahend's language (an O written with the limit at
   * `limitAt`'s depth, or none when null); `site` names the subtraction. Where free values nest
   * without bound (freeValuesAnyDepth) and calls may be written here, tried first with the free
   * values of both sides written as calls of the free-value rule (freeOnly), which the products
   * read as calls where that is exact (ProductCalls): the operands stay small (a free value is one
   * call, not its unrolled levels) and free values nest at any depth under `not`, `oneOf` and
   * `if` too. Where a product cannot read them so (a subtrahend constrains what the minuend leaves
   * free), the operands are written without calls, as before. (A size limit met either way is the
   * schema's refusal: written again without calls, MaskBench's met the work limit instead.) A
   * subtraction inside another's operands tried so is tried so too, and its failure undoes the
   * outer one's try (written without calls, it holds no subtraction tried with them): each
   * subtraction is written at most twice, not once more per level of nesting.
   */
  subtracted(
    site: string,
    writeMinuend: () => RegexNode,
    subtrahends: readonly Subtrahend[],
    limitAt: number | null,
    pointer: string,
  ): ByteDfa {
    if (this.freeCalls) return this.subtractEach(writeMinuend, subtrahends, limitAt, pointer, true);
    // A subtraction whose try failed is not tried again (at another depth, in another Want).
    if (this.stacking && this.options.freeValuesAnyDepth === true && !this.clashed.has(site)) {
      this.freeOnly++;
      try {
        return this.subtractEach(writeMinuend, subtrahends, limitAt, pointer, true);
      } catch (error) {
        if (!(error instanceof ProductCallsClash)) throw error;
        this.clashed.add(site);
      } finally {
        this.freeOnly--;
      }
    }
    return this.subtractEach(writeMinuend, subtrahends, limitAt, pointer, false);
  }

  private subtractEach(
    writeMinuend: () => RegexNode,
    subtrahends: readonly Subtrahend[],
    limitAt: number | null,
    pointer: string,
    calls: boolean,
  ): ByteDfa {
    const write = <T>(operand: () => T): T => (calls ? operand() : this.operand(operand));
    let dfa = this.dfaOf(write(writeMinuend), pointer);
    // What is subtracted only shrinks the minuend: one limit holds for every subtrahend.
    const limit = limitAt === null ? undefined : this.nestingLimit(dfa, limitAt);
    for (const { at, write: writeSubtrahend } of subtrahends) {
      if (isEmptyLanguage(dfa)) break;
      // A minuend without calls (no free values, or none left) meets the subtrahend's calls only
      // as texts, each read as the rule's body: written without them, the same language, sooner.
      if (calls && !hasCalls(dfa)) calls = false;
      const other = write(() => this.dfaOf(writeSubtrahend(limit), at));
      dfa =
        calls && (hasCalls(dfa) || hasCalls(other))
          ? this.product(dfa, other, "subtract", at, this.freeCallRule(limitAt !== null))
          : this.subtract(dfa, other, at);
    }
    return dfa;
  }

  /**
   * The free-value rule and its body, for products over its calls (ProductCalls). A U minuend's
   * calls are read, where the product expands them, as its free values are written: objects
   * without repeated keys (`dupFree`), which the O subtracted from it assumes (a repeated key's
   * last value is the one a validator reads, an O's object its first).
   */
  private freeCallRule(minuendIsU: boolean): ProductCalls {
    let calls = this.freeCallRules[minuendIsU ? 1 : 0];
    if (calls === undefined) {
      const rule = this.freeValueRule();
      const body = this.ruleBodies[rule]!;
      if (body.kind !== "dfa") throw new Error("the free-value rule's body is a DFA");
      calls = minuendIsU
        ? { rule, body: body.dfa, firstBody: this.anyValue(0, 0, { depth: 0, over: false, dupFree: true }) }
        : { rule, body: body.dfa };
      this.freeCallRules[minuendIsU ? 1 : 0] = calls;
    }
    return calls;
  }

  /**
   * An alternative of objects with at most one property (maxProperties <= 1, no listed values)
   * minus subtrahends S = `{"propertyNames": X}` (nothing else that evaluates: the `not` of
   * "some key matches P" in `{"not": {"propertyNames": {"not": P}}}`): S holds every non-object,
   * the empty object and the objects whose key meets X, so what is left is the objects of one key
   * that fails X. Written so (Alternative.keyFails) instead of by a product, the minuend keeps its
   * calls: recursion under such a `not` nests at any depth. Null when no subtrahend is of that form.
   */
  private keyFailing(alternative: Alternative, subtract: readonly SchemaAt[][]): Alternative | null {
    const evaluating = validationKeywords(this.document.draft);
    if (!evaluating.has("propertyNames")) return null;
    let spec: Spec | null = null;
    for (const subtrahend of subtract) {
      const probe = emptyAlternative();
      if (!this.flatten(subtrahend, probe)) continue;
      // Its conjuncts' keywords: propertyNames, the references flatten followed, and words that
      // evaluate nothing in this draft (annotations, unknown words: the spec reader ignores them).
      const names: SchemaAt[] = [];
      let onlyNames = true;
      for (const { at, schema } of probe.conjuncts) {
        for (const keyword of Object.keys(schema)) {
          if (keyword === "propertyNames") names.push(this.child(at, "propertyNames"));
          else if (
            !FOLLOWED_REFERENCES.has(keyword) &&
            (evaluating.has(keyword) || (SPLIT_KEYWORDS as readonly string[]).includes(keyword))
          )
            onlyNames = false;
        }
      }
      if (!onlyNames || names.length !== 1) continue;
      spec ??= mergeConjuncts(alternative.conjuncts, this.document, this);
      if (spec.objects.maxProperties > 1 || spec.enumValues !== null) return null;
      const keyed = copyAlternative(alternative);
      keyed.subtract.splice(keyed.subtract.indexOf(subtrahend), 1);
      keyed.keyFails.push(names[0]!);
      return keyed;
    }
    return null;
  }

  /**
   * An alternative minus a subtrahend S that requires keys K: an object lacking some key of K is
   * never in S, so the alternative is written as the alternatives that each forbid one key of K
   * the alternative does not require, without a set operation (they keep their calls, free
   * values at any depth, and their repeated keys), and, unless S only asks for keys
   * (`{"required": ["a", "b"]}`, `not: {"required": ["a"]}`, an `if` that tests for a key), one
   * that requires them all, minus S as before. Null when no subtrahend requires such a key, or
   * when S (untyped: every non-object meets it) would keep non-objects the alternative allows.
   */
  private splitByAbsentKey(alternative: Alternative, mine: ValueFacts, subtract: readonly SchemaAt[][]): Alternative[] | null {
    for (const subtrahend of subtract) {
      const probe = emptyAlternative();
      if (!this.flatten(subtrahend, probe)) continue;
      let keys: string[] = [];
      let typed = false;
      let presenceOnly = true;
      let malformed = false;
      for (const { schema } of probe.conjuncts) {
        for (const [keyword, value] of Object.entries(schema)) {
          if (keyword === "required") {
            if (Array.isArray(value) && value.every((k) => typeof k === "string")) keys.push(...value);
            else malformed = true;
          } else if (keyword === "type" && isObjectOnlyType(value)) {
            typed = true;
          } else if (!(keyword === "$ref" || keyword === "allOf" || SCOPE_NEUTRAL.has(keyword) || isDescriptive(keyword))) {
            presenceOnly = false;
          }
        }
      }
      if (malformed || (!typed && [...mine.value.types].some((t) => t !== "object"))) continue;
      keys = [...new Set(keys)].filter((k) => !mine.required.has(k));
      // Every key it asks for is required: an object-only alternative is all in S.
      if (keys.length === 0 && presenceOnly && [...mine.value.types].every((t) => t === "object")) return [];
      if (keys.length === 0) continue;
      const absent = keys.map((k) => {
        const a: Alternative = { ...copyAlternative(alternative), subtract: alternative.subtract.filter((s) => s !== subtrahend) };
        a.forbid.add(k);
        return a;
      });
      if (presenceOnly) return absent;
      // Where the alternative cannot have those keys, only the absent ones are left; a copy that
      // has them all, one per such subtrahend, multiplied the automata (four oneOf branches each
      // minus three others: 8 alternatives each), so it is written beside one subtrahend only.
      const spec = mergeConjuncts(alternative.conjuncts, this.document, this);
      if (!keys.every((k) => this.mayHaveKey(spec, k))) return absent;
      if (subtract.length > 1) continue;
      const present = copyAlternative(alternative);
      for (const k of keys) present.require.add(k);
      return [...absent, present];
    }
    return null;
  }

  /**
   * An alternative minus subtrahends that each tell its values apart by one key k it does not
   * require (their listed values or types for k share none with its own: the country of ten
   * address shapes), as two alternatives: with k, from which nothing is subtracted (disjoint then
   * drops every subtrahend), and without k, minus them all as before, the most general first (a
   * subtrahend that holds the whole minuend empties it at once, and the rest are skipped). Ten
   * `oneOf` branches, each minus nine others, were 90 products of any-order objects; the branches
   * without k mostly fall inside the one that names the fewest other properties. Null when no
   * such key is found.
   */
  private splitByToldApartKey(alternative: Alternative, mine: ValueFacts, subtract: readonly SchemaAt[][]): Alternative[] | null {
    if (subtract.length < 2 || ![...mine.value.types].every((t) => t === "object")) return null;
    // Each subtrahend here shares a value with the alternative (disjoint said so), which holds
    // only objects: with k required, disjoint's one new way to tell them apart is k's own test.
    const theirs = subtract.map((subtrahend) => this.subtrahendFacts(subtrahend));
    for (const [name, facts] of mine.properties) {
      if (mine.required.has(name) || mine.forbidden.has(name) || (facts.values === null && facts.types.size === JSON_TYPES.length))
        continue;
      if (!theirs.every((t) => t === null || this.keyToldApart(mine, t, name))) continue;
      const present = copyAlternative(alternative);
      present.require.add(name);
      const forbid = new Set([...alternative.forbid, name]);
      const absent: Alternative = { ...copyAlternative(alternative), forbid, subtract: mostGeneralFirst(subtract, theirs, forbid) };
      return [{ ...present, subtract: [] }, absent];
    }
    return null;
  }

  /** Whether an object of `spec` may have key `key`: none of the schemas its parts apply to it is `false`. */
  private mayHaveKey(spec: Spec, key: string): boolean {
    const text = JSON.stringify(key);
    const matches = (pattern: { source: string; at: SchemaAt }): boolean =>
      matchesString(patternLanguage(this, pattern.source, pattern.at.pointer), text);
    return schemasForKey(spec.objects.parts, key, matches).every((at) => at.schema !== false);
  }

  /** The alternative merged in its text order, when that writes an object's keys in another order; else null. */
  private textOrderSpec(alternative: Alternative, spec: Spec, scopeRoot: string | null): Spec | null {
    const { conjuncts, textOrder } = alternative;
    if (conjuncts.every((c, i) => textOrder[i] === c)) return null;
    const other = mergeConjuncts(textOrder, this.document, this, scopeRoot);
    const keys = (s: Spec): string => [...s.objects.names, "", ...s.objects.required].join("\u0000");
    return keys(other) === keys(spec) ? null : other;
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
    const theirs = this.subtrahendFacts(other);
    if (theirs === null) return true; // `other` holds no value at all
    if (apart(mine.value, theirs.value)) return true;
    // A value both could hold that is not an object escapes `required` and `properties`.
    const common = JSON_TYPES.filter((t) => mine.value.types.has(t) && theirs.value.types.has(t));
    if (common.length > 1 || common[0] !== "object") return false;
    for (const name of mine.required) if (this.keyToldApart(mine, theirs, name)) return true;
    for (const name of theirs.required) if (this.keyToldApart(theirs, mine, name)) return true;
    return false;
  }

  /**
   * What every value of a subtrahend has (valueFacts, its `not`s included), or null when it holds
   * no value. Its keywords are still read (and a malformed one refused), as compiling it would.
   */
  private subtrahendFacts(other: readonly SchemaAt[]): ValueFacts | null {
    const probe = emptyAlternative();
    if (!this.flatten(other, probe)) return null;
    mergeConjuncts(probe.conjuncts, this.document, this);
    return this.valueFacts(probe, true);
  }

  /**
   * Whether objects of `one` that have key `name` share none with `two`'s: `two` excludes the key
   * (forbids it, or is closed without it), or the key's values are told apart.
   */
  private keyToldApart(one: ValueFacts, two: ValueFacts, name: string): boolean {
    if (two.forbidden.has(name) || (two.allowed !== null && !two.allowed.has(name))) return true;
    const a = one.properties.get(name);
    const b = two.properties.get(name);
    return a !== undefined && b !== undefined && (apart(a, b) || this.stringsApart(a, b));
  }

  /**
   * Whether two values that can only be strings share none, by their `pattern`s: jsend's
   * `{"status": {"pattern": "^success$"}}` against `^fail$`. Sound only: false when not shown (a
   * pattern we cannot compile included; its refusal comes where it is written).
   */
  private stringsApart(a: ScalarFacts, b: ScalarFacts): boolean {
    if (a.patterns.length + b.patterns.length === 0) return false;
    if (![...a.types].every((t) => t === "string" || !b.types.has(t))) return false;
    // Each side's patterns intersected once, on first need (a side's may be needed twice below).
    const made = new Map<ScalarFacts, ByteDfa | null>();
    const matching = (facts: ScalarFacts): ByteDfa | null => {
      if (!made.has(facts))
        made.set(
          facts,
          facts.patterns.reduce<ByteDfa | null>((dfa, pattern) => {
            const language = patternLanguage(this, pattern, "");
            return dfa === null ? language : this.intersect(dfa, language, "");
          }, null),
        );
      return made.get(facts)!;
    };
    try {
      // Listed strings against the other side's patterns; else the patterns' languages.
      for (const [listed, other] of [
        [a, b],
        [b, a],
      ] as const) {
        if (listed.values === null || other.patterns.length === 0) continue;
        const dfa = matching(other)!;
        if (![...listed.values].some((v) => v.startsWith('"') && matchesString(dfa, v))) return true;
      }
      if (a.patterns.length === 0 || b.patterns.length === 0) return false;
      return isEmptyLanguage(this.intersect(matching(a)!, matching(b)!, ""));
    } catch (error) {
      if (error instanceof JsonSchemaError || (error instanceof JsonSchemaTooComplexError && error.limit !== "time")) return false;
      throw error;
    }
  }

  /** valueFacts of an alternative's conjuncts, with its required and forbidden keys. */
  private valueFacts(alternative: Alternative, withNot = false): ValueFacts {
    return valueFacts(alternative.conjuncts, alternative.require, alternative.forbid, this.document.draft >= 6, withNot);
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
    const first = emptyAlternative();
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
      // (textOrder: where the schema lists its references before its properties, theirs first.)
      const own: Conjunct | null = this.document.refOverridesSiblings && schema.$ref !== undefined ? null : { at, schema, within: inner };
      const referencesFirst = listedBefore(schema, REFERENCE_KEYWORDS, "properties");
      if (own !== null) {
        into.conjuncts.push(own);
        if (!referencesFirst) into.textOrder.push(own);
      }
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
      if (own !== null && referencesFirst) into.textOrder.push(own);
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
      const added = a.conjuncts.length;
      const addedText = a.textOrder.length;
      if (!this.flatten(extra, a, 0, scopes)) return [];
      placeBeside(a.conjuncts, added, at.pointer, false);
      placeBeside(a.textOrder, addedText, at.pointer, listedBefore(schema, [keyword], "properties"));
      change?.(a);
      return [a];
    };
    switch (keyword) {
      case "anyOf":
        return this.schemaList(at, "anyOf").flatMap((member) => fork([member]));
      case "oneOf": {
        const members = this.schemaList(at, "oneOf");
        return members.flatMap((member, i) => {
          const others = members.filter((_, j) => j !== i).flatMap((m) => this.subtrahends(m));
          // O-mode too: a text in exactly one branch is in its O and in no other's U.
          return fork([member], (a) => a.subtract.push(...others));
        });
      }
      case "not":
        return fork([], (a) => a.subtract.push(...this.subtrahends(this.child(at, "not"))));
      case "if": {
        const ifAt = this.child(at, "if");
        const thenAt = schema.then === undefined ? [] : [this.child(at, "then")];
        const elseAt = schema.else === undefined ? [] : [this.child(at, "else")];
        return [...fork([ifAt, ...thenAt]), ...fork(elseAt, (a) => a.subtract.push(...this.subtrahends(ifAt)))];
      }
      default:
        return this.splitDependencies(alternative, at, keyword, want, scopes);
    }
  }

  /**
   * What subtracting `at` subtracts: `at`, or, where it is an `anyOf` and nothing else, each of
   * its members in turn (A − (B ∪ C) = (A − B) − C). Each is then skipped where disjoint, or made
   * a forbidden key (splitByAbsentKey), and the union's automaton, a product of its members' (six
   * multipleOf: 2·13·5·7·11·37 states), is never built.
   */
  private subtrahends(at: SchemaAt, depth = 0): SchemaAt[][] {
    const schema = at.schema;
    if (depth > MAX_REFERENCE_CHAIN || !isObject(schema) || !Array.isArray(schema.anyOf) || schema.anyOf.length === 0) return [[at]];
    if (!Object.keys(schema).every((k) => k === "anyOf" || SCOPE_NEUTRAL.has(k) || isDescriptive(k))) return [[at]];
    return this.schemaList(at, "anyOf").flatMap((member) => this.subtrahends(member, depth + 1));
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
          placeBeside(present.conjuncts, a.conjuncts.length, at.pointer, false);
          const before = listedBefore(at.schema as Record<string, unknown>, [keyword], "properties");
          placeBeside(present.textOrder, a.textOrder.length, at.pointer, before);
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

  specLanguage(spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode {
    const typed: RegexNode[] = [];
    if (spec.enumValues !== null) return enumLanguage(this, spec, alternative, want, pointer);
    // A key that fails a schema: objects only (keyFailing).
    if (alternative.keyFails.length > 0 && !want.over) {
      return (spec.types.object ? objectLanguage(this, spec, alternative, want, pointer) : null) ?? EMPTY;
    }
    if (spec.types.null) typed.push(NULL_TEXT);
    if (spec.types.boolean) typed.push(TRUE_TEXT, FALSE_TEXT);
    if (spec.types.number !== "none") {
      const numbers = numberLanguage(this, spec, want, pointer);
      if (numbers) typed.push(dfaNode(numbers));
    }
    if (spec.types.string) {
      const strings = stringLanguage(this, spec, want, pointer);
      if (strings) typed.push(this.stringLeaf(strings, want));
    }
    if (spec.types.array) {
      const arrays = arrayLanguage(this, spec, want, pointer);
      if (arrays) typed.push(arrays);
    }
    if (spec.types.object) {
      const objects = objectLanguage(this, spec, alternative, want, pointer);
      if (objects) typed.push(objects);
    }
    return alt(typed);
  }

  /**
   * A value the schema leaves free, at `want`. Inside a container, at any depth, it is one call of
   * the free-value rule (whose language it is), not that rule's body written in place: an object
   * that allows unnamed properties has a free value after each of its keys, and each copy cost
   * ~60 states of its DFA (MaskBench's median schema: a third fewer states, 14% less compile
   * time, masks as costly). The document's own value is written in place (a rule may not call
   * before it reads).
   */
  private freeValue(want: Want): RegexNode {
    if (this.callsFreeValue(want)) return callNode(this.freeValueRule());
    return dfaNode(this.anyValue(want.depth, this.options.freeNesting, want));
  }

  /** Whether a free value at `want` is a call of the free-value rule (freeValue). */
  private callsFreeValue(want: Want): boolean {
    return want.depth > 0 && this.stacking && this.options.freeValuesAnyDepth === true && !want.over && !want.dupFree;
  }

  /**
   * Any JSON value nested at most `levels` containers deep (`only`: of that kind). Under dupFree
   * (and not over), an object has at most one key.
   */
  anyValue(depth: number, levels: number, want: Want, only?: "object" | "array"): ByteDfa {
    // At any depth (freeValuesAnyDepth): the container's members are calls of the free-value
    // rule, whose language is this one again; otherwise nested `levels` deep.
    // In a subtraction's operand tried with calls (freeOnly), minuend's and subtrahend's alike:
    // "any value" is the same language on both sides, and the product reads it as one call.
    const call =
      (this.stacking && this.options.freeValuesAnyDepth && !want.over && !want.dupFree) || this.freeCalls ? this.freeValueRule() : -1;
    const key =
      call >= 0
        ? `free#${this.syntax.style}#${call}#${want.dupFree && !want.over ? "d" : ""}#${only ?? ""}`
        : want.over
          ? `counted#${this.freeLevels(want, depth)}#${only ?? ""}`
          : `any#${this.syntax.style}#${this.syntax.style === "indented" ? depth : 0}#${levels}#${want.dupFree ? "d" : ""}#${only ?? ""}`;
    const known = sharedDfa(key);
    if (known) return known;
    const before = regexClock.used;
    if (want.over && call < 0) {
      // Not nested `levels` deep: an over-approximation must hold every depth the text it is
      // subtracted from may reach.
      return keepShared(key, this.compileNode(countedValueText(this.freeLevels(want, depth), only), ""), before);
    }
    const items: RegexNode[] = only ? [] : [NULL_TEXT, TRUE_TEXT, FALSE_TEXT, NUMBER_TEXT, anyStringText()];
    if (levels > 0 || call >= 0) {
      const inner = call >= 0 ? callNode(call) : dfaNode(this.anyValue(depth + 1, levels - 1, want));
      if (only !== "object") items.push(this.sequence(0x5b, 0x5d, inner, depth, Infinity));
      if (only !== "array") {
        const pair = concat(anyStringText(), this.syntax.colon, inner);
        items.push(this.sequence(0x7b, 0x7d, pair, depth, want.dupFree && !want.over ? 1 : Infinity));
      }
    }
    return keepShared(key, this.compileNode(alt(items), ""), before);
  }

  /**
   * A string's language where it is a value: a rule of its own, called, where its DFA has at
   * least LEAF_RULE_STATES states and calls may be written here; else the DFA, embedded. One rule
   * per DFA: the counted strings are shared DFAs, so every value typed the same calls one rule.
   */
  private stringLeaf(dfa: ByteDfa, want: Want): RegexNode {
    if (dfa.numStates < LEAF_RULE_STATES || !this.options.stringRules || !this.stacking || want.over || want.dupFree) return dfaNode(dfa);
    let rule = this.leafRules.get(dfa);
    if (rule === undefined) this.leafRules.set(dfa, (rule = this.ruleOfDfa("leaf", dfa)));
    return callNode(rule);
  }

  /** The free-value rule (any JSON value at any depth), its body made on first need. */
  private freeValueRule(): number {
    const rule = this.ruleFor("#free");
    if (this.ruleBodies[rule] === null) {
      // Marked first: the body's own members call the rule (anyValue asks for it again).
      this.ruleBodies[rule] = EMPTY;
      this.ruleBodies[rule] = dfaNode(this.anyValue(0, 0, { depth: 0, over: false, dupFree: false }));
    }
    return rule;
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
  nestingLimit(minuend: ByteDfa, depth: number): number {
    const cap = MAX_DEPTH + this.options.freeNesting + 1;
    return depth + maxNesting(minuend, cap);
  }

  /** `open (member (sep member){0,max-1})? close` with the style's whitespace. */
  sequence(open: number, close: number, member: RegexNode, depth: number, max: number): RegexNode {
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
}

/**
 * Moves the conjuncts from index `from` on (a branch just flattened out of a combinator of the
 * conjunct at `pointer`) to where the combinator stands in the document: right after that
 * conjunct and those reached through it, or, when the schema lists the combinator before its
 * `properties` (`before`), right before its own conjunct. Objects write their properties in
 * conjunct order, and instances follow the schema's text: in `allOf: [{oneOf: [A, B]}, C]` the
 * branch's properties come before C's, not after.
 */
function placeBeside(conjuncts: Conjunct[], from: number, pointer: string, before: boolean): void {
  let own = -1;
  let last = -1;
  for (let i = 0; i < from; i++) {
    const c = conjuncts[i]!;
    if (c.at.pointer === pointer) own = i;
    if (c.at.pointer === pointer || c.within?.includes(pointer)) last = i;
  }
  if (last < 0) return;
  const to = before && own >= 0 ? own : last + 1;
  if (to === from) return;
  const branch = conjuncts.splice(from);
  conjuncts.splice(to, 0, ...branch);
}

/** Keywords whose subschemas' properties join the schema's own (flatten). */
const REFERENCE_KEYWORDS = ["$ref", "allOf", "$dynamicRef", "$recursiveRef"];

/** Subschemas mentionedKeys visits at most per call. */
const MAX_MENTION_WALK = 256;

/**
 * Whether `schema` lists one of `keywords` before `properties` (absent: no). The properties a
 * schema reaches are written in the order its text names them (as instances are written from
 * it): MaskBench's schemas list keys sorted (`allOf` < `anyOf` < `properties`), the Test Suite's
 * mostly `properties` first.
 */
function listedBefore(schema: Record<string, unknown>, keywords: readonly string[], properties: string): boolean {
  for (const key in schema) {
    if (key === properties) return false;
    if (keywords.includes(key)) return schema[properties] !== undefined;
  }
  return false;
}

/**
 * Subtrahends ordered by how little they ask of the properties not `forbidden` (`facts`: theirs;
 * first the fewest named or required, a listed value counting twice; stable): a proxy for the
 * most general, the likeliest to hold the whole minuend.
 */
function mostGeneralFirst(
  subtract: readonly SchemaAt[][],
  facts: readonly (ValueFacts | null)[],
  forbidden: ReadonlySet<string>,
): SchemaAt[][] {
  const asked = facts.map((f) => {
    if (f === null) return 0;
    let count = 0;
    for (const name of new Set([...f.properties.keys(), ...f.required]))
      if (!forbidden.has(name)) count += f.properties.get(name)?.values == null ? 1 : 2;
    return count;
  });
  return subtract
    .map((subtrahend, i) => ({ subtrahend, n: asked[i]! }))
    .sort((a, b) => a.n - b.n)
    .map((x) => x.subtrahend);
}

function emptyAlternative(): Alternative {
  return {
    conjuncts: [],
    textOrder: [],
    seen: new Set(),
    subtract: [],
    forbid: new Set(),
    require: new Set(),
    done: new Set(),
    keyFails: [],
  };
}

function copyAlternative(a: Alternative): Alternative {
  return {
    conjuncts: [...a.conjuncts],
    textOrder: [...a.textOrder],
    seen: new Set(a.seen),
    subtract: [...a.subtract],
    forbid: new Set(a.forbid),
    require: new Set(a.require),
    done: new Set(a.done),
    keyFails: [...a.keyFails],
  };
}

const SPLIT_KEYWORDS = ["anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas", "dependencies"] as const;

/** The references flatten follows (their targets are conjuncts of their own). */
const FOLLOWED_REFERENCES = new Set(["$ref", "allOf", "$dynamicRef", "$recursiveRef"]);

/** Keywords beside a `$ref` that evaluate nothing (see scopeRoot). */
const SCOPE_NEUTRAL = new Set(["$defs", "definitions", "$anchor", "$dynamicAnchor", "$comment", "$vocabulary", "deprecated"]);

/** Keywords beside a draft-07 `$ref` that say nothing about validity (not worth a warning). */
function isDescriptive(keyword: string): boolean {
  return ["title", "description", "default", "examples", "$id", "id", "$schema", "readOnly", "writeOnly"].includes(keyword);
}
