/**
 * constraint/ — vocabulary trie × byte automaton → token masks with token budgets.
 *
 * Decode-loop use (regex):
 *   const trie = tokenTrieFor(vocab);                 // once per vocabulary (cached)
 *   const matcher = dfaTokenMatcherFor(trie, dfa);    // once per compiled pattern (cached)
 *   const st = new DfaConstraintState(matcher, healedPromptTokenBytes?);   // per request
 *   const needed = st.minTokensToAccept(maxNewTokens);  // cheap when it clearly fits
 *   if (needed > maxNewTokens) → 422 "the pattern needs at least ${needed} tokens" (exact then)
 *   each step: mask = st.mask(maxNewTokens - generated)  (shared bitset, read only, valid until
 *              the matcher's next mask(); EOG is the loop's decision: allowed when
 *              st.isAccepting()); sample; st.advance(token)
 *   stop when st.isAccepting() and (stopAfterMatch or !st.hasAnyToken(remaining)).
 *
 * The decode loop sees any constraint through `TokenConstraint` (token-constraint.ts): the same
 * questions, with writeMask(remaining, out) copying the mask into the loop's own buffer.
 *
 * Grammar stage: walkTrie(trie, automaton, state, root, mask, visit) walks the same trie with any
 * ByteAutomaton ({ step(state, byte) → state | -1 }), skipping dead subtrees.
 */
export { loopsOnEveryUtf8Char, TokenTrie, tokenTrieFor, utf8Step } from "./trie.js";
export { DfaTokenMatcher, type DfaTokenMatcherOptions } from "./dfa/matcher.js";
export { dfaTokenMatcherFor, warmUpMatchers } from "./dfa/shared-matchers.js";
export { SMALL_LIST_IDS } from "./dfa/mask-store.js";
export { GrammarTokenMatcher, WALK_AHEAD_MS } from "./grammar/matcher.js";
export { GrammarConstraintState } from "./grammar/state.js";
export type { CompletableAutomaton, LexerLevelAutomaton } from "./grammar/contracts.js";
export { ConstraintTooCostlyError, GRAMMAR_STEP_WEIGHT, LOWER_BOUND_WORK_SHARE, PLANNING_ALLOWANCE, WorkMeter } from "./work-meter.js";
export { DfaConstraintState } from "./dfa/state.js";
export { walkTrie, type TrieTokenVisitor } from "./walk.js";
export { copyMaskInto, type ForcedBytes, type TokenConstraint } from "./token-constraint.js";
export { PREFIX_PENDING, type ByteAutomaton, type ByteDfa, type VocabularyBytes } from "./types.js";
export { OptionalReasoningConstraint, ReasoningConstraint, reasoningDfa } from "./reasoning.js";
