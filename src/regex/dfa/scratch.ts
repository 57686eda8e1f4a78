// The scratch arena of a DFA build, shared by its phases (alphabet, subset construction or
// literal trie, finishing, minimization) and by patternDistances.
import { Int32Arena } from "../../support/index.js";

/**
 * Temporaries of one determinize or determinizeLiterals call (finishDfa and minimize included):
 * reset at the start of each call, so a phase's views live until the next build. Modules keep it
 * in a const of their own (`const arena = dfaArena`), as they do the clock (see clock.ts).
 */
export const dfaArena = new Int32Arena(1 << 20);
