/**
 * What a compile worker does, as plain functions (the worker script only moves messages): a
 * pattern or grammar in, its automaton as structured-cloneable data out, or a refusal that says
 * which request field is at fault and why. The same functions run in-thread for tests.
 */
import { compileRegex, RegexSyntaxError, RegexTooComplexError, type ByteDfa, type RegexLimits } from "../regex/index.js";
import { compileGrammar, createGrammarAutomaton, GrammarError, reviveGrammar, type Grammar, type ScannerParts } from "../grammar/index.js";
import { InvalidRequestError, UnsatisfiableError } from "./types.js";

export type CompileTask =
  | { readonly kind: "regex"; readonly pattern: string | readonly string[]; readonly limits: RegexLimits }
  | { readonly kind: "grammar"; readonly source: string };

export type CompileOutput =
  | { readonly kind: "regex"; readonly dfa: ByteDfa }
  | { readonly kind: "grammar"; readonly grammar: Grammar; readonly scanners: ScannerParts };

/**
 * Why a constraint cannot be built, as data that crosses threads: `invalid` is the request's
 * fault (400), `too_complex` a limit it ran into (422). `lasting` refusals come out the same on
 * every try (syntax, sizes); a time limit depends on the machine's load.
 */
export interface Refusal {
  readonly status: "invalid" | "too_complex";
  readonly field: string;
  readonly message: string;
  readonly position?: number;
  readonly lasting: boolean;
}

export function runCompileTask(task: CompileTask): CompileOutput {
  if (task.kind === "regex") return { kind: "regex", dfa: compileRegex(task.pattern as string | string[], task.limits) };
  const grammar = compileGrammar(task.source);
  // Building the automaton builds its scanner DFAs (the costly, refusable part) here too.
  const scanners = createGrammarAutomaton(grammar).scannerParts();
  return { kind: "grammar", grammar, scanners };
}

/** The output of runCompileTask after a structured clone: classes restored where it has any. */
export function reviveCompileOutput(output: CompileOutput): CompileOutput {
  if (output.kind === "grammar") reviveGrammar(output.grammar);
  return output;
}

/** The refusal a library error stands for, or null when the error is a bug. */
export function refusalOf(error: unknown): Refusal | null {
  if (error instanceof RegexSyntaxError) {
    const field = error.alternative !== undefined ? `pattern[${error.alternative}]` : "pattern";
    const construct = error.construct ? ` (${error.construct})` : "";
    return { status: "invalid", field, message: `${field}: ${error.message}${construct}`, position: error.position, lasting: true };
  }
  if (error instanceof RegexTooComplexError) {
    return { status: "too_complex", field: "pattern", message: `pattern: ${error.message}`, lasting: error.limit !== "time" };
  }
  if (error instanceof GrammarError) {
    const where = error.line !== undefined ? ` (line ${error.line}${error.column !== undefined ? `, column ${error.column}` : ""})` : "";
    const limit = (error as { limit?: unknown }).limit;
    const tooComplex = typeof limit === "string";
    return {
      status: tooComplex ? "too_complex" : "invalid",
      field: "grammar",
      message: `grammar: ${error.message}${where}`,
      lasting: limit !== "timeoutMs",
    };
  }
  return null;
}

/** The request error a refusal is answered with. */
export function refusalError(refusal: Refusal): InvalidRequestError | UnsatisfiableError {
  return refusal.status === "invalid"
    ? new InvalidRequestError(refusal.message, refusal.field, refusal.position)
    : new UnsatisfiableError(refusal.message, refusal.field);
}
