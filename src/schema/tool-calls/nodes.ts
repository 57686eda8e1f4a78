/** The regex nodes the tool-call languages are built from: literal text, sequences. */
import { parseFlagString, parseRegex, pyReEscape, type RegexNode } from "../../regex/index.js";

/** Exactly `text`. */
export const literal = (text: string): RegexNode => parseRegex(pyReEscape(text), parseFlagString(""));
/** `items` one after another. */
export const concat = (...items: RegexNode[]): RegexNode => ({ kind: "concat", items });
