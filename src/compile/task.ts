/**
 * What a compile worker does, as plain functions (the worker script only moves messages): a
 * constraint of any kind in (a pattern, a grammar, a JSON Schema, a TypeScript type, tools), its
 * automaton (a byte DFA or a grammar) as structured-cloneable data out, or a refusal that says
 * which request field is at fault and why. The same functions run in-thread for tests.
 */
import { compileRegex, RegexSyntaxError, RegexTooComplexError, type ByteDfa, type RegexLimits } from "../regex/index.js";
import {
  compileGrammar,
  createGrammarAutomaton,
  GrammarError,
  reviveGrammar,
  ruleNetworkAutomaton,
  type Grammar,
  type GrammarLimits,
  type RuleNetworkAutomaton,
  type RuleNetworkTables,
  type ScannerParts,
} from "../grammar/index.js";
import {
  compileJsonSchema,
  compileToolCallLanguage,
  typeScriptToJsonSchema,
  TypeScriptSchemaError,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  ProductMemo,
  type JsonSchemaOptions,
  type JsonSchemaWarning,
} from "../schema/index.js";
import { DfaConstraintState, DfaTokenMatcher, type TokenTrie } from "../constraint/index.js";
import { GrammarConstraintState, GrammarTokenMatcher } from "../constraint/index.js";
import { ConstraintTooCostlyError, GRAMMAR_STEP_WEIGHT } from "../constraint/index.js";
import { InvalidRequestError, OverloadedError, UnsatisfiableError } from "./errors.js";
import type { CompiledSpec } from "./spec.js";

/**
 * A constraint as a compile worker receives it: the request's spec with the limits of its stage
 * (a grammar's max_ignored_run resolved).
 */
export type CompileTask =
  | (Extract<CompiledSpec, { kind: "regex" }> & { readonly limits: RegexLimits })
  | (Extract<CompiledSpec, { kind: "grammar" }> & { readonly maxIgnoredRun: number; readonly limits: Partial<GrammarLimits> })
  | (Extract<CompiledSpec, { kind: "json_schema" | "typescript" }> & {
      readonly limits: RegexLimits;
      readonly freeValuesAnyDepth?: boolean;
    })
  | (Extract<CompiledSpec, { kind: "tool_calls" }> & { readonly limits: RegexLimits });

/**
 * The JSON Schema a typed completion's TypeScript type stands for (its refusals name schema or
 * type_name), and what the conversion wants said (an `any` written as any JSON value, a JSDoc tag
 * that does not fit its type).
 */
function typeScriptSchema(task: { source: string; typeName: string }): { schema: unknown; warnings: JsonSchemaWarning[] } {
  const { schema, warnings } = typeScriptToJsonSchema(task.source, task.typeName);
  return { schema, warnings: warnings.map((message) => ({ keyword: "typescript", pointer: "", message })) };
}

/**
 * The operations a request starts with, tried on a compiled constraint before it is accepted:
 * the budget question and the first mask at each of `budgets`, each within `limitSteps` of work
 * (see probeFirstOperations).
 */
export interface ProbeOptions {
  readonly budgets: readonly number[];
  readonly limitSteps: number;
}

/**
 * A compiled constraint: a byte DFA (patterns, schemas, tool calls), a rule network (a schema
 * whose values nest without bound: rule DFAs that call each other) or a grammar's parts.
 */
export type CompileOutput =
  | { readonly kind: "dfa"; readonly dfa: ByteDfa; readonly warnings?: readonly JsonSchemaWarning[] }
  | {
      readonly kind: "rules";
      readonly rules: readonly ByteDfa[];
      /** The probe's automaton's tables, so the serving thread does not compute them again. */
      readonly tables?: RuleNetworkTables;
      readonly warnings?: readonly JsonSchemaWarning[];
    }
  | { readonly kind: "grammar"; readonly grammar: Grammar; readonly scanners: ScannerParts };

/**
 * Why a constraint cannot be built, as data that crosses threads: `invalid` is the request's
 * fault (400), `too_complex` a limit it ran into (422), `overloaded` a wall-clock valve (503,
 * retryable). `lasting` refusals come out the same on every try (syntax, sizes, work); a clock
 * depends on the machine's load.
 */
export interface Refusal {
  readonly status: "invalid" | "too_complex" | "overloaded";
  readonly field: string;
  readonly message: string;
  readonly position?: number;
  readonly lasting: boolean;
}

/**
 * Compiles the task; with a trie, also tries the operations a request starts with (`probe`), so
 * that a constraint whose first masks would hold the serving thread is refused here instead.
 */
export function runCompileTask(task: CompileTask, trie?: TokenTrie, probe?: ProbeOptions): CompileOutput {
  if (task.kind !== "grammar") {
    let dfa: ByteDfa;
    let warnings: readonly JsonSchemaWarning[] | undefined;
    if (task.kind === "regex") dfa = compileRegex(task.pattern as string | string[], task.limits);
    else if (task.kind === "tool_calls") {
      const { whitespace, forbidUnnamedProperties, strict, propertyOrder } = task.options;
      const compile = (order: "schema" | "any") =>
        compileToolCallLanguage(task.tools, task.style, task.parallel, {
          whitespace,
          forbidAdditionalProperties: forbidUnnamedProperties,
          strict,
          limits: task.limits,
          propertyOrder: order,
        });
      ({ dfa, warnings } = inSomeOrder(propertyOrder, compile));
    } else {
      const { whitespace, forbidUnnamedProperties, strict, propertyOrder } = task.options;
      const typed = task.kind === "typescript" ? typeScriptSchema(task) : null;
      const schema = task.kind === "json_schema" ? task.schema : typed?.schema;
      const options = {
        whitespace,
        forbidAdditionalProperties: forbidUnnamedProperties,
        strict,
        limits: task.limits,
        freeValuesAnyDepth: task.freeValuesAnyDepth ?? false,
        ...(propertyOrder ? { propertyOrder } : {}),
      };
      // Probed with the choice of its form.
      const { warnings: own, ...served } = compileServedSchema(schema, options, trie, probe);
      const all = [...(typed?.warnings ?? []), ...(own ?? [])];
      return all.length > 0 ? { ...served, warnings: all } : served;
    }
    if (trie && probe)
      probeFirstOperations(
        () => new DfaTokenMatcher(trie, dfa, { shareEquivalentStates: task.kind === "regex" }),
        (m) => new DfaConstraintState(m),
        probe,
      );
    return warnings && warnings.length > 0 ? { kind: "dfa", dfa, warnings } : { kind: "dfa", dfa };
  }
  const grammar = compileGrammar(task.grammar, task.limits);
  // Building the automaton builds its scanner DFAs (the costly, refusable part) here too.
  const automaton = createGrammarAutomaton(grammar, { maxIgnoredRun: task.maxIgnoredRun, limits: task.limits });
  let scanners = automaton.scannerParts();
  if (trie && probe) {
    let probed: ReturnType<typeof createGrammarAutomaton> | undefined;
    const fresh = (): GrammarTokenMatcher =>
      new GrammarTokenMatcher(trie, (probed = createGrammarAutomaton(grammar, { maxIgnoredRun: task.maxIgnoredRun, prebuilt: scanners })));
    probeFirstOperations(fresh, (m) => new GrammarConstraintState(m), probe);
    // The small scanners wait for their first use; those the probe reached go along built, so
    // the serving thread does not build them again inside a request's first operations.
    if (probed !== undefined) scanners = probed.scannerParts();
  }
  return { kind: "grammar", grammar, scanners };
}

/**
 * A JSON Schema in the form the service serves it: its rule network where values nest without
 * bound (recursion; free values too under `freeValuesAnyDepth`) or its one DFA is past the size
 * limits, when that network's first operations pass the probe; otherwise its one DFA (recursion
 * unrolled, free values `freeNesting` deep: the form before rule networks, whose masks are the
 * cheapest). The forms are tried in that order, each refusal for size passing on to the next (one
 * for work straight to the one DFA) and the first refusal answered when none is left, so no schema
 * the one DFA serves is refused. bench/jsonschema.ts judges MaskBench through this same choice.
 */
export function compileServedSchema(
  schema: unknown,
  options: JsonSchemaOptions,
  trie?: TokenTrie,
  probe?: ProbeOptions,
): CompileOutput & { kind: "dfa" | "rules" } {
  // Each form tried takes most of the same set operations: each product is taken once.
  const products = options.products ?? new ProductMemo();
  return inSomeOrder(options.propertyOrder, (propertyOrder) => servedForm(schema, { ...options, propertyOrder, products }, trie, probe));
}

/**
 * `compile` in the property order asked ("any"), or in the schema's where that is past a size or
 * work limit or the probe (objects in any order multiply an object's states by the sets of its
 * members written), said in a warning.
 */
function inSomeOrder<T extends { readonly warnings?: readonly JsonSchemaWarning[] }>(
  order: "schema" | "any" | undefined,
  compile: (order: "schema" | "any") => T,
): T {
  if (order !== "any") return compile("schema");
  try {
    return compile("any");
  } catch (error) {
    const tooBig = error instanceof JsonSchemaTooComplexError && error.limit !== "time";
    if (!tooBig && !(error instanceof ConstraintTooCostlyError)) throw error;
    const served = compile("schema");
    const warning: JsonSchemaWarning = {
      keyword: "properties",
      pointer: "",
      message: `property_order "any": written in the schema's order, objects in any order being past the limits here (${(error as Error).message})`,
    };
    return { ...served, warnings: [warning, ...(served.warnings ?? [])] };
  }
}

/**
 * Schema text (JSON characters) from which the network with shared subschemas is tried first.
 * Measured on MaskBench's 123 schemas of 32k characters or more (llama-bpe): Kubernetes' 140 KB
 * manifests compile in 120–170 ms with shared rules against 270–370 ms without (40k against 48k
 * states).
 */
const SHARE_FIRST_CHARS = 32_000;

/**
 * Whether `value`'s JSON text has at least `limit` characters, counted as far as the limit and no
 * further: a schema built in memory (a TypeScript type's) may share objects, and its text could
 * then be far longer than the object graph (JSON.stringify would write all of it).
 */
function jsonTextReaches(value: unknown, limit: number): boolean {
  let length = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && length < limit) {
    const v = stack.pop();
    if (typeof v === "string") length += v.length + 2;
    else if (Array.isArray(v)) {
      length += 1 + v.length;
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === "object") {
      length += 1;
      // Keys by for…in, not Object.entries: an array per object was most of this walk.
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        length += key.length + 4;
        stack.push((v as Record<string, unknown>)[key]);
      }
    } else length += String(v).length;
  }
  return length >= limit;
}

/** compileServedSchema's choice of form, in the property order the options ask. */
function servedForm(
  schema: unknown,
  options: JsonSchemaOptions,
  trie?: TokenTrie,
  probe?: ProbeOptions,
): CompileOutput & { kind: "dfa" | "rules" } {
  const free = options.freeValuesAnyDepth === true;
  // A big schema (Kubernetes' manifests, CI configs) has subschemas used in many places: shared as
  // rules from the start, it compiles in half the time, to fewer states (see SHARE_FIRST_CHARS).
  // Smaller ones share only past a size limit (sharing calls rules where one DFA would do).
  const shareFirst = jsonTextReaches(schema, SHARE_FIRST_CHARS);
  const stacked: JsonSchemaOptions[] = [];
  for (const freeValuesAnyDepth of free ? [true, false] : [false]) {
    if (shareFirst) stacked.push({ recursion: "stack", freeValuesAnyDepth, shareSubschemas: true });
    else stacked.push({ recursion: "stack", freeValuesAnyDepth }, { recursion: "stack", freeValuesAnyDepth, shareSubschemas: true });
  }
  let firstRefusal: JsonSchemaTooComplexError | null = null;
  let lastRefusal: JsonSchemaTooComplexError | null = null;
  let compiled: ReturnType<typeof compileJsonSchema> | null = null;
  let compiledForm: JsonSchemaOptions = {};
  for (const form of stacked) {
    // Sharing only helps past a size limit (unless it comes first).
    if (!shareFirst && form.shareSubschemas && lastRefusal?.limit !== "dfaStates" && lastRefusal?.limit !== "nfaStates") continue;
    try {
      compiled = compileJsonSchema(schema, { ...options, freeValuesAnyDepth: false, ...form });
      compiledForm = form;
      break;
    } catch (error) {
      // The wall-clock valve (503) and every other refusal are answered as they are.
      if (!(error instanceof JsonSchemaTooComplexError) || error.limit === "time") throw error;
      firstRefusal ??= error;
      lastRefusal = error;
      // Past the work limit, only the one DFA is tried again: at most twice the work in all.
      if (error.limit === "work") break;
    }
  }
  // A long string as a rule of its own (stringRules) beside a free value, where alternatives
  // meet, puts two calls at one state: such a network has no lexer-level view, and each of its
  // masks walks the whole vocabulary (Github o9961: 20.9M steps a mask at qwen2, past the mask
  // limit). It is written with its strings in place instead.
  let checked: RuleNetworkAutomaton | undefined;
  if (compiled?.stringRulesWritten === true) {
    checked = ruleNetworkAutomaton({ rules: compiled.rules! });
    if (!checked.lexerLevel) {
      checked = undefined;
      try {
        compiled = compileJsonSchema(schema, { ...options, freeValuesAnyDepth: false, ...compiledForm, stringRules: false });
      } catch (error) {
        if (!(error instanceof JsonSchemaTooComplexError) || error.limit === "time") throw error;
        firstRefusal ??= error;
        compiled = null;
      }
    }
  }
  const warned = (w: readonly JsonSchemaWarning[]) => (w.length > 0 ? { warnings: w } : {});
  /** The network's probe refusal: what a request would meet, should the one DFA fail too. */
  let probeRefusal: ConstraintTooCostlyError | null = null;
  if (compiled?.rules !== undefined) {
    const network = { rules: compiled.rules };
    // The automaton made for the check above, which the probe's matcher steps.
    let probed: RuleNetworkAutomaton | undefined = checked;
    try {
      // A network without the lexer-level view (calls of several rules meet at one position:
      // objects in any order whose branches call other rules after one key) walks the whole
      // vocabulary with the automaton for a mask inside its values, though its first masks pass:
      // where such a walk is past the mask limit, it is refused as such a mask would be (20.9M
      // steps at 152k tokens), up front.
      if (trie && probe) {
        probed ??= ruleNetworkAutomaton(network);
        if (!probed.lexerLevel && trie.numNodes * GRAMMAR_STEP_WEIGHT > probe.limitSteps) {
          const what = "a token mask inside its values (its rules' calls meet at one position, so each mask walks the whole vocabulary)";
          throw new ConstraintTooCostlyError(probe.limitSteps, what);
        }
        // The automaton itself, not another over its tables: nothing has stepped it yet (the
        // check above reads its form only), so its memos are a fresh one's and the count the same.
        const fresh = probed;
        probeFirstOperations(
          () => new GrammarTokenMatcher(trie, fresh),
          (m) => new GrammarConstraintState(m),
          probe,
        );
      }
      const tables = probed === undefined ? {} : { tables: probed.networkTables };
      return { kind: "rules", rules: compiled.rules, ...tables, ...warned(compiled.warnings) };
    } catch (error) {
      if (!(error instanceof ConstraintTooCostlyError)) throw error;
      probeRefusal = error;
    }
    compiled = null;
  }
  if (compiled === null) {
    try {
      compiled = compileJsonSchema(schema, { ...options, recursion: "unrolled" });
    } catch (error) {
      // The network compiled but its first step costs too much: that is the answer, not the
      // one DFA's size (Github o12622: minItems 600 under the default budget said "dfaStates").
      if (probeRefusal !== null && error instanceof JsonSchemaTooComplexError && error.limit !== "time") throw probeRefusal;
      throw firstRefusal ?? error;
    }
  }
  const dfa = compiled.dfa;
  if (trie && probe)
    probeFirstOperations(
      () => new DfaTokenMatcher(trie, dfa, { shareEquivalentStates: false }),
      (m) => new DfaConstraintState(m),
      probe,
    );
  return { kind: "dfa", dfa, ...warned(compiled.warnings) };
}

/**
 * Runs, at each probe budget, the budget question and the first mask, each under `limitSteps` of
 * work, on a fresh matcher: they are what a request's first step asks of the serving thread, so
 * one that needs more here is refused (ConstraintTooCostlyError) before the serving thread ever
 * runs it. The count is the same on every machine and every try, so the refusal is kept.
 */
function probeFirstOperations<M extends DfaTokenMatcher | GrammarTokenMatcher>(
  makeMatcher: () => M,
  stateOf: (matcher: M) => DfaConstraintState | GrammarConstraintState,
  probe: ProbeOptions,
): void {
  const matcher = makeMatcher();
  matcher.work.limitSteps = probe.limitSteps;
  const state = stateOf(matcher);
  try {
    for (const budget of probe.budgets) {
      const needed = state.minTokensToAccept(budget);
      if (needed <= budget) state.mask(budget);
    }
  } catch (error) {
    if (error instanceof ConstraintTooCostlyError) throw new ConstraintTooCostlyError(probe.limitSteps, "its first token masks");
    throw error;
  }
}

/** The output of runCompileTask after a structured clone: classes restored where it has any. */
export function reviveCompileOutput(output: CompileOutput): CompileOutput {
  if (output.kind === "grammar") reviveGrammar(output.grammar);
  return output;
}

/**
 * The service settings of the grammar limits a request may meet (the others are fixed; their
 * messages name the limit itself).
 */
export const GRAMMAR_LIMIT_SETTINGS: Partial<Record<keyof GrammarLimits, string>> = {
  maxNesting: "TRELLIS_GRAMMAR_MAX_NESTING",
  maxTerminals: "TRELLIS_GRAMMAR_MAX_TERMINALS",
  maxRules: "TRELLIS_GRAMMAR_MAX_RULES",
  maxReferenceDepth: "TRELLIS_GRAMMAR_MAX_REFERENCE_DEPTH",
  maxScannerCells: "TRELLIS_GRAMMAR_MAX_SCANNER_CELLS",
  maxDfaStates: "TRELLIS_REGEX_MAX_STATES",
  maxWork: "TRELLIS_COMPILE_MAX_WORK",
  timeoutMs: "TRELLIS_COMPILE_TIMEOUT_MS",
};

/** A grammar message's "(maxTerminals)" as the setting that raises it, where there is one. */
function withSetting(message: string): string {
  return message.replace(/\((max[A-Za-z]+|timeoutMs)\)/g, (whole, limit: keyof GrammarLimits) => {
    const setting = GRAMMAR_LIMIT_SETTINGS[limit];
    return setting ? `(${setting})` : whole;
  });
}

/** The refusal a library error stands for, or null when the error is a bug. */
export function refusalOf(error: unknown, field = "pattern"): Refusal | null {
  if (error instanceof ConstraintTooCostlyError) {
    return { status: "too_complex", field, message: `${field}: too complex: ${error.message} (TRELLIS_MASK_MAX_WORK)`, lasting: true };
  }
  if (error instanceof TypeScriptSchemaError) {
    // The message already ends with its line and column; a limit met is "too complex" (422).
    const status = error.limit !== undefined ? "too_complex" : "invalid";
    return { status, field: error.field, message: `${error.field}: ${error.message}`, lasting: true };
  }
  if (error instanceof JsonSchemaError) {
    return { status: "invalid", field: "schema", message: `schema: ${error.message}`, lasting: true };
  }
  if (error instanceof JsonSchemaTooComplexError) {
    const setting = error.limit === "time" ? " (TRELLIS_COMPILE_TIMEOUT_MS)" : error.limit === "work" ? " (TRELLIS_COMPILE_MAX_WORK)" : "";
    return {
      status: error.limit === "time" ? "overloaded" : "too_complex",
      field: "schema",
      message: `schema: ${error.message}${setting}`,
      lasting: error.limit !== "time",
    };
  }
  if (error instanceof JsonSchemaUnsatisfiableError) {
    return { status: "too_complex", field: "schema", message: `schema: ${error.message}`, lasting: true };
  }
  if (error instanceof RegexSyntaxError) {
    const field = error.alternative !== undefined ? `pattern[${error.alternative}]` : "pattern";
    const construct = error.construct ? ` (${error.construct})` : "";
    return { status: "invalid", field, message: `${field}: ${error.message}${construct}`, position: error.position, lasting: true };
  }
  if (error instanceof RegexTooComplexError) {
    const setting = error.limit === "time" ? " (TRELLIS_COMPILE_TIMEOUT_MS)" : error.limit === "work" ? " (TRELLIS_COMPILE_MAX_WORK)" : "";
    return {
      status: error.limit === "time" ? "overloaded" : "too_complex",
      field,
      message: `${field}: ${error.message}${setting}`,
      lasting: error.limit !== "time",
    };
  }
  if (error instanceof GrammarError) {
    const where = error.line !== undefined ? ` (line ${error.line}${error.column !== undefined ? `, column ${error.column}` : ""})` : "";
    const limit = (error as { limit?: unknown }).limit;
    const tooComplex = typeof limit === "string";
    return {
      status: limit === "timeoutMs" ? "overloaded" : tooComplex ? "too_complex" : "invalid",
      field: "grammar",
      message: `grammar: ${withSetting(error.message)}${where}`,
      lasting: limit !== "timeoutMs",
    };
  }
  return null;
}

/** The request error a refusal is answered with. */
export function refusalError(refusal: Refusal): InvalidRequestError | UnsatisfiableError | OverloadedError {
  if (refusal.status === "overloaded") return new OverloadedError(`${refusal.message}; retry later`, 5);
  return refusal.status === "invalid"
    ? new InvalidRequestError(refusal.message, refusal.field, refusal.position)
    : new UnsatisfiableError(refusal.message, refusal.field);
}
