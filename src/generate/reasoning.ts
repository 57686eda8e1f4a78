/**
 * Reasoning before an answer, in the decode loop: the request's constraint wrapped in the
 * reasoning section (constraint/'s ReasoningConstraint, over one cached matcher per marker pair
 * and vocabulary), and the generated text split back into reasoning and answer, streamed or whole.
 */
import {
  DfaConstraintState,
  type DfaTokenMatcher,
  dfaTokenMatcherFor,
  OptionalReasoningConstraint,
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
  const key = `${section.hidden ? "h" : "s"}${section.open ?? ""}\0${section.close}`;
  let dfa = dfas.get(key);
  if (dfa === undefined) {
    // An answer's header (hidden) is written exactly: no body before it.
    const open = section.open === null ? null : trie.markerSpelling(section.open);
    dfa = reasoningDfa(open, trie.markerSpelling(section.close), section.hidden !== true);
    dfas.set(key, dfa);
  }
  return dfaTokenMatcherFor(trie, dfa);
}

/**
 * `answer`'s factory behind the reasoning section (a forced prefix applies to the section's first
 * token); a section the model may skip is followed beside the answer alone (after its lead).
 */
export function withReasoning(trie: TokenTrie, section: ReasoningSection, answer: Factory): Factory {
  const matcher = sectionMatcher(trie, section);
  const maxTokens = section.maxTokens ?? Number.POSITIVE_INFINITY;
  const reasoned = (prefix: Uint8Array | undefined) =>
    new ReasoningConstraint(new DfaConstraintState(matcher, prefix), answer(undefined), maxTokens);
  const skippable = section.skippable;
  if (skippable === undefined) return reasoned;
  if (section.open === null) throw new RangeError("a section the model may skip is one it opens itself");
  const openLength = trie.markerSpelling(section.open).length;
  const direct = skippable.lead === "" ? answer : withReasoning(trie, { open: null, close: skippable.lead, hidden: true }, answer);
  return (prefix) => new OptionalReasoningConstraint(reasoned(prefix), direct(prefix), openLength);
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
  /** Whether the section was written: null until the text says, for one the model may skip. */
  private taken: boolean | null;
  /** A skipped section's lead (Muse's ` to=user<|message|>`), still to strip from the answer. */
  private leadLeft: string;

  constructor(private readonly section: ReasoningSection) {
    this.openLeft = section.open ?? "";
    this.taken = section.skippable ? null : true;
    this.leadLeft = section.skippable?.lead ?? "";
  }

  /** Whether the model wrote the section (null: not known yet; true for one it cannot skip). */
  get reasoned(): boolean | null {
    return this.taken;
  }

  /** One streamed piece of text → its reasoning part and its answer part (either may be ""). */
  push(delta: string): { reasoning: string; content: string } {
    if (this.taken === null) {
      // Undecided while the text may still be the opening marker (held back meanwhile).
      const text = this.pending + delta;
      const open = this.section.open!;
      this.pending = "";
      if (text.startsWith(open)) this.taken = true;
      else if (open.startsWith(text)) {
        this.pending = text;
        return { reasoning: "", content: "" };
      } else this.taken = false;
      delta = text;
    }
    if (this.taken === false) return { reasoning: "", content: this.skipped(delta) };
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

  /**
   * At the end: what was held back (reasoning cut short by a stop or the model's end; or, where
   * the model may skip the section, an answer that ended as a beginning of its opening marker).
   */
  flush(): { reasoning: string; content: string } {
    const held = this.pending;
    this.pending = "";
    if (this.taken !== null) return { reasoning: held, content: "" };
    this.taken = false;
    return { reasoning: "", content: this.skipped(held) };
  }

  /** The answer of a skipped section: its lead stripped. */
  private skipped(text: string): string {
    if (this.leadLeft.length > 0) {
      let n = 0;
      while (n < text.length && n < this.leadLeft.length && text[n] === this.leadLeft[n]) n++;
      // The constraint writes the lead whole; anything else ends the search.
      this.leadLeft = n < this.leadLeft.length && n < text.length ? "" : this.leadLeft.slice(n);
      text = text.slice(n);
    }
    return this.answer(text);
  }

  private answer(text: string): string {
    if (this.answerStarted) return text;
    const trimmed = text.replace(/^\s+/, "");
    if (trimmed.length > 0) this.answerStarted = true;
    return trimmed;
  }
}

/** A whole generated text split as ReasoningSplitter splits it streamed (`reasoned`: the section was written). */
export function splitReasoning(text: string, section: ReasoningSection): { reasoning: string; content: string; reasoned: boolean } {
  const splitter = new ReasoningSplitter(section);
  const a = splitter.push(text);
  const b = splitter.flush();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content, reasoned: splitter.reasoned === true };
}
