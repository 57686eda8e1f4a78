// Numbers: a merged Spec's number keywords (type number/integer, minimum…, multipleOf) wired to
// numeric.ts's languages, as U(S) or O(S) (compile.ts's header).

import { isEmptyLanguage, type ByteDfa, type RegexNode } from "../../regex/index.js";
import type { Want, WriterContext } from "./context.js";
import { JsonSchemaError, JsonSchemaTooComplexError } from "./errors.js";
import { alt, ANY_NUMBER_TEXT, dfaNode, EXPONENT_NUMBER_TEXT, INTEGER_TEXT, INTEGER_VALUED_TEXT, NUMBER_TEXT } from "./json-text.js";
import { integerRangeNode, multipleOfNode, numberRangeNode } from "./numeric.js";
import type { Spec } from "./spec.js";

/**
 * U: integers as INTEGER_TEXT, bounded or multiple-of numbers without exponent (numeric.ts),
 * never a negative zero.
 * O: every text whose value may satisfy the keywords: integers may also be written "3.0", and
 * any text with an exponent is kept (we never compare those).
 */
export function numberLanguage(c: WriterContext, spec: Spec, want: Want, pointer: string): ByteDfa | null {
  const integer = spec.types.number === "integer";
  const { bounds, multipleOf } = spec.numbers;
  const writeInteger = integer && !want.over;
  const nodes: RegexNode[] = [];
  for (const { bounds: b, pointer: at } of bounds) {
    const node = numeric(at, () => (writeInteger ? integerRangeNode(b) : numberRangeNode(b)));
    if (node === null) return want.over ? c.compileNode(EXPONENT_NUMBER_TEXT, pointer) : null;
    nodes.push(node);
  }
  for (const { value, pointer: at } of multipleOf) nodes.push(numeric(at, () => multipleOfNode(value, writeInteger))!);
  // The syntax we write (no "-0": numeric.ts's ranges and multiples allow it), or in O every
  // text of a value the keywords may allow.
  if (writeInteger) nodes.push(INTEGER_TEXT);
  else if (integer) nodes.push(INTEGER_VALUED_TEXT);
  else if (!want.over || nodes.length === 0) nodes.push(want.over ? ANY_NUMBER_TEXT : NUMBER_TEXT);
  if (bounds.length === 0 && multipleOf.length === 0) {
    // A number with no bounds: one of four languages, the same in every schema.
    const name = `number#${writeInteger ? "integer" : integer ? "integral" : "any"}#${want.over ? "O" : "U"}`;
    return c.shared(name, () => numberDfa(c, nodes, want, pointer));
  }
  const dfa = numberDfa(c, nodes, want, pointer);
  return isEmptyLanguage(dfa) ? null : dfa;
}

/** The intersection of `nodes` (in O, with any text in exponent form added). */
function numberDfa(c: WriterContext, nodes: readonly RegexNode[], want: Want, pointer: string): ByteDfa {
  let dfa = c.compileNode(nodes[0]!, pointer);
  for (let i = 1; i < nodes.length && !isEmptyLanguage(dfa); i++) dfa = c.intersect(dfa, c.compileNode(nodes[i]!, pointer), pointer);
  if (want.over) dfa = c.compileNode(alt([dfaNode(dfa), EXPONENT_NUMBER_TEXT]), pointer);
  return dfa;
}

function numeric(pointer: string, build: () => RegexNode | null): RegexNode | null {
  try {
    return build();
  } catch (error) {
    if (error instanceof JsonSchemaError || error instanceof JsonSchemaTooComplexError) throw error;
    throw new JsonSchemaTooComplexError((error as Error).message, pointer, "multipleOf");
  }
}
