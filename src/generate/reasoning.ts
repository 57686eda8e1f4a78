/**
 * Reasoning before an answer, in the decode loop: the request's constraint wrapped in the
 * reasoning section (constraint/'s ReasoningConstraint, over one cached matcher per marker pair
 * and vocabulary), and the generated text split back into reasoning and answer, streamed or whole.
 */
import {
  DfaConstraintState,
  type DfaTokenMatcher,
  dfaTokenMatcherFor,
  ReasoningConstraint,
  reasoningDfa,
  type TokenConstraint,
  type TokenTrie,
} from "../constraint/index.js";
import type { ByteDfa } from "../regex/index.js";
import { LruCache } from "../support/index.js";
import { heldBackLength } from "./stream.js";
import type { ReasoningSection } from "./types.js";

type Factory = (forcedPrefix: Uint8Array | undefined) => TokenConstraint;

/**
 * One DFA per vocabulary and marker pair, the markers spelled as that vocabulary writes them (its
 * matcher is then dfaTokenMatcherFor's, keyed on both): looked up by the markers' text, so a
 * request spells nothing.
 */
const sectionDfas = new WeakMap<TokenTrie, LruCache<ByteDfa>>();

/**
 * The section's matcher over `trie`: a marker that is a control token of the vocabulary (Cohere's
 * `<|END_THINKING|>`, Mistral's `[/THINK]`) is written as that token, else as text.
 */
function sectionMatcher(trie: TokenTrie, section: ReasoningSection): DfaTokenMatcher {
  let dfas = sectionDfas.get(trie);
  if (dfas === undefined) sectionDfas.set(trie, (dfas = new LruCache<ByteDfa>(64)));
  const key = `${section.open ?? ""}\0${section.close}`;
  let dfa = dfas.get(key);
  if (dfa === undefined) {
    dfa = reasoningDfa(section.open === null ? null : trie.markerSpelling(section.open), trie.markerSpelling(section.close));
    dfas.set(key, dfa);
  }
  return dfaTokenMatcherFor(trie, dfa);
}

/** `answer`'s factory behind the reasoning section (a forced prefix applies to the section's first token). */
export function withReasoning(trie: TokenTrie, section: ReasoningSection, answer: Factory): Factory {
  const matcher = sectionMatcher(trie, section);
  const maxTokens = section.maxTokens ?? Number.POSITIVE_INFINITY;
  return (prefix) => new ReasoningConstraint(new DfaConstraintState(matcher, prefix), answer(undefined), maxTokens);
}

/**
 * Splits generated text into the reasoning (markers left out) and the answer (the whitespace the
 * model writes right after the closing marker left out), as it streams: a piece that may still
 * turn out to begin the closing marker is held back until it is decided.
 */
export class ReasoningSplitter {
  private openLeft: string;
  private pending = "";
  private closed = false;
  private answerStarted = false;

  constructor(private readonly section: ReasoningSection) {
    this.openLeft = section.open ?? "";
  }

  /** One streamed piece of text → its reasoning part and its answer part (either may be ""). */
  push(delta: string): { reasoning: string; content: string } {
    if (this.closed) return { reasoning: "", content: this.answer(delta) };
    let text = this.pending + delta;
    this.pending = "";
    if (this.openLeft.length > 0) {
      let n = 0;
      while (n < text.length && n < this.openLeft.length && text[n] === this.openLeft[n]) n++;
      // The constraint makes the text start with the opening marker; anything else ends the search.
      this.openLeft = n < this.openLeft.length && n < text.length ? "" : this.openLeft.slice(n);
      text = text.slice(n);
    }
    const close = this.section.close;
    const at = text.indexOf(close);
    if (at >= 0) {
      this.closed = true;
      return { reasoning: text.slice(0, at), content: this.answer(text.slice(at + close.length)) };
    }
    const keep = heldBackLength(text, close);
    this.pending = text.slice(text.length - keep);
    return { reasoning: text.slice(0, text.length - keep), content: "" };
  }

  /** At the end: what was held back (reasoning cut short by a stop or the model's end). */
  flush(): { reasoning: string; content: string } {
    const reasoning = this.pending;
    this.pending = "";
    return { reasoning, content: "" };
  }

  private answer(text: string): string {
    if (this.answerStarted) return text;
    const trimmed = text.replace(/^\s+/, "");
    if (trimmed.length > 0) this.answerStarted = true;
    return trimmed;
  }
}

/** A whole generated text split as ReasoningSplitter splits it streamed. */
export function splitReasoning(text: string, section: ReasoningSection): { reasoning: string; content: string } {
  const splitter = new ReasoningSplitter(section);
  const a = splitter.push(text);
  const b = splitter.flush();
  return { reasoning: a.reasoning + b.reasoning, content: a.content };
}
