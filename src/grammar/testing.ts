/**
 * The grammar stage's test support, a door of its own (not part of the stage's API): random
 * sentences and near-misses of a grammar, a seeded generator, and Lark's verdict on a text by
 * translated RegExps (`parses`), the reference the byte automaton is compared with; and the
 * internals the unit tests check one by one (Python-regex reading and widths, escapes).
 */
export { sampleSentence, mutateSentence, makeRng, literalAlphabet, type SentenceOptions } from "./sentences.js";
export { parses } from "./grammar.js";
export { topAlternatives } from "./scanner-dfa.js";
export { parsePyRegex } from "./pyregex.js";
export { MAXREPEAT, regexWidth } from "./pyregex-width.js";
export { toJsRegExp } from "./pyregex-js.js";
export { evalEscaping } from "./lark/literals.js";
