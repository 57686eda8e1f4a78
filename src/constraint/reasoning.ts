/**
 * A reasoning section before a constrained answer, as one constraint: free text that cannot spell
 * the section's end marker, the marker, then the answer's constraint. The answer is never
 * truncated: its fewest tokens (and the marker's) are reserved from the start, so the reasoning
 * is closed by the mask itself when the budget requires it; a reasoning budget closes it sooner.
 *
 *   const dfa = reasoningDfa(utf8("<think>"), utf8("</think>"));   // open: null when pre-opened
 *   const c = new ReasoningConstraint(new DfaConstraintState(dfaTokenMatcherFor(trie, dfa)), answer, 512);
 */
import { MARKER_LEAD } from "../support/index.js";
import type { ByteDfa } from "./types.js";
import type { DfaConstraintState } from "./dfa/state.js";
import type { ForcedBytes, TokenConstraint } from "./token-constraint.js";

/**
 * The byte DFA of `open · body · close` where body is any bytes not containing `close` (a
 * Knuth–Morris–Pratt automaton on `close`) and nothing follows `close`. `open` null: the prompt
 * already opened the section. A control marker's spelling (support/control-markers.ts) is never
 * body text: it may appear only as part of `close`, and once one has, `close` must go on to its end.
 * `body` false: no body, `open · close` exactly (an answer's header, Muse's ` to=user<|message|>`).
 */
export function reasoningDfa(open: Uint8Array | null, close: Uint8Array, body = true): ByteDfa {
  if (close.length === 0) throw new RangeError("a reasoning section needs a non-empty end marker");
  const o = open?.length ?? 0;
  const m = close.length;
  const numStates = o + m + 1;
  // Byte classes: each byte of the markers its own, every other byte one class (0).
  const byteClass = new Uint8Array(256);
  let numClasses = 1;
  // The lead byte of a control marker's spelling (never in UTF-8) has a class of its own too.
  for (const b of [...(open ?? []), ...close, MARKER_LEAD]) if (byteClass[b] === 0) byteClass[b] = numClasses++;
  const next = new Int32Array(numStates * numClasses).fill(-1);
  const representative = new Uint8Array(numClasses);
  for (let b = 255; b >= 0; b--) representative[byteClass[b]!] = b;
  for (let i = 0; i < o; i++) next[i * numClasses + byteClass[open![i]!]!] = i + 1;
  // KMP failure function of `close`; body state j (0 ≤ j < m) has matched close[0..j).
  const fail = new Int32Array(m + 1);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && close[i] !== close[k]) k = fail[k]!;
    if (close[i] === close[k]) k++;
    fail[i + 1] = k;
  }
  // A control marker is no reasoning text: one may be written only as part of the closing
  // marker (gpt-oss's <|end|><|start|>…), and once one is, the rest of that marker must follow.
  const committed = new Uint8Array(m);
  for (let j = 1; j < m; j++) committed[j] = committed[j - 1]! | (close[j - 1] === MARKER_LEAD ? 1 : 0);
  for (let j = 0; j < m; j++) {
    for (let c = 0; c < numClasses; c++) {
      const b = representative[c]!;
      if (b !== close[j] && (!body || b === MARKER_LEAD || committed[j] === 1)) continue;
      let k = j;
      while (k > 0 && close[k] !== b) k = fail[k]!;
      if (close[k] === b) k++;
      next[(o + j) * numClasses + c] = o + k;
    }
  }
  const accepting = new Uint8Array(numStates);
  accepting[o + m] = 1;
  const minBytesToAccept = new Int32Array(numStates);
  for (let s = 0; s < numStates; s++) minBytesToAccept[s] = s < o ? o - s + m : m - (s - o);
  return { numStates, start: 0, numClasses, byteClass, next, accepting, minBytesToAccept };
}

/** The reasoning section, then `answer`: see the module comment. */
export class ReasoningConstraint implements TokenConstraint {
  private inAnswer = false;
  private reasoningTokens = 0;
  /** The answer's fewest tokens from its start (reserved while reasoning). */
  private answerReserve = -1;

  constructor(
    private readonly reasoning: DfaConstraintState,
    private readonly answer: TokenConstraint,
    /** Most tokens of reasoning, its end marker included (Infinity: bounded by the budget only). */
    private readonly maxReasoningTokens: number = Number.POSITIVE_INFINITY,
  ) {}

  reasoningTokenCount(): number {
    return this.reasoningTokens;
  }

  /** Whether the reasoning section has ended (its marker written). */
  get answering(): boolean {
    return this.inAnswer;
  }

  /** Whether the text has gone past the section DFA's first `states` states (its opening marker's, `open`'s length). */
  openedPast(states: number): boolean {
    return this.inAnswer || this.reasoning.state >= states;
  }

  /** Tokens the reasoning section may still take when `remaining` tokens are left in all. */
  private reasoningRoom(remaining: number): number {
    return Math.min(remaining - this.reserve(remaining), this.maxReasoningTokens - this.reasoningTokens);
  }

  private reserve(cap: number): number {
    if (this.answerReserve < 0) {
      const needed = this.answer.minTokensToAccept(cap);
      if (needed === Number.POSITIVE_INFINITY) return cap + 1; // nothing fits; not remembered (a larger cap may fit)
      this.answerReserve = needed;
    }
    return this.answerReserve;
  }

  writeMask(remaining: number, out: Uint32Array): void {
    if (this.inAnswer) this.answer.writeMask(remaining, out);
    else {
      const room = this.reasoningRoom(remaining);
      if (room <= 0) out.fill(0);
      else this.reasoning.writeMask(room, out);
    }
  }

  isAccepting(): boolean {
    return this.inAnswer && this.answer.isAccepting();
  }

  hasAnyToken(remaining: number): boolean {
    if (this.inAnswer) return this.answer.hasAnyToken(remaining);
    const room = this.reasoningRoom(remaining);
    return room > 0 && this.reasoning.hasAnyToken(room);
  }

  advance(token: number): boolean {
    if (this.inAnswer) return this.answer.advance(token);
    if (!this.reasoning.advance(token)) return false;
    this.reasoningTokens++;
    if (this.reasoning.isAccepting()) this.inAnswer = true;
    return true;
  }

  minTokensToAccept(cap: number): number {
    if (this.inAnswer) return this.answer.minTokensToAccept(cap);
    const close = this.reasoning.minTokensToAccept(Math.min(cap, this.maxReasoningTokens - this.reasoningTokens));
    if (close === Number.POSITIVE_INFINITY) return close;
    const answer = this.answer.minTokensToAccept(cap - close);
    return answer === Number.POSITIVE_INFINITY || close + answer > cap ? Number.POSITIVE_INFINITY : close + answer;
  }

  minTokensAtLeast(cap: number): number {
    if (this.inAnswer) return this.answer.minTokensAtLeast ? this.answer.minTokensAtLeast(cap) : this.answer.minTokensToAccept(cap);
    const close = this.reasoning.minTokensAtLeast(cap);
    if (close > cap) return close;
    const answer = this.answer.minTokensAtLeast ? this.answer.minTokensAtLeast(cap - close) : this.answer.minTokensToAccept(cap - close);
    return Math.min(close + answer, cap + 1);
  }

  /** Fast-forward in the answer only (the answer's own); the reasoning is free text, nothing forced. */
  forcedBytes(max: number): ForcedBytes | null {
    const a = this.answer;
    return this.inAnswer && a.forcedBytes !== undefined && a.allowsWithin !== undefined ? a.forcedBytes(max) : null;
  }

  allowsWithin(token: number, remaining: number): boolean {
    return this.inAnswer && this.answer.allowsWithin?.(token, remaining) === true;
  }

  walkAhead(deadline: number): boolean {
    return this.answer.walkAhead ? this.answer.walkAhead(deadline) : true;
  }
}

/**
 * A section the model may skip (MiniMax-M3's adaptive mode, Muse's message to itself): the
 * section then the answer (`reasoned`), or the answer alone (`direct`, which may open with a lead
 * of its own). Both are followed while the text is a beginning of the section's opening marker
 * (`openLength` bytes: the DFA states before the body); once the marker is whole the section is
 * taken, so the answer alone never starts with it. The mask is the union of the two while both
 * are alive; after that, the survivor's own (fast-forward included).
 */
export class OptionalReasoningConstraint implements TokenConstraint {
  private reasoned: ReasoningConstraint | null;
  private direct: TokenConstraint | null;
  /** The second mask while both are alive (allocated once, on the first step). */
  private other: Uint32Array | null = null;

  constructor(
    reasoned: ReasoningConstraint,
    direct: TokenConstraint,
    private readonly openLength: number,
  ) {
    this.reasoned = reasoned;
    this.direct = direct;
  }

  /** The section was taken (null: not decided yet). */
  get reasons(): boolean | null {
    if (this.reasoned && this.direct) return null;
    return this.reasoned !== null;
  }

  writeMask(remaining: number, out: Uint32Array): void {
    if (!this.reasoned || !this.direct) {
      (this.reasoned ?? this.direct)!.writeMask(remaining, out);
      return;
    }
    this.reasoned.writeMask(remaining, out);
    if (this.other === null || this.other.length !== out.length) this.other = new Uint32Array(out.length);
    this.direct.writeMask(remaining, this.other);
    for (let i = 0; i < out.length; i++) out[i]! |= this.other[i]!;
  }

  isAccepting(): boolean {
    return this.reasoned?.isAccepting() === true || this.direct?.isAccepting() === true;
  }

  hasAnyToken(remaining: number): boolean {
    return this.reasoned?.hasAnyToken(remaining) === true || this.direct?.hasAnyToken(remaining) === true;
  }

  advance(token: number): boolean {
    const reasoned = this.reasoned?.advance(token) === true;
    const direct = this.direct?.advance(token) === true;
    if (!reasoned && !direct) return false;
    if (!reasoned) this.reasoned = null;
    // The opening marker whole: the section is taken.
    if (!direct || (reasoned && this.reasoned!.openedPast(this.openLength))) this.direct = null;
    return true;
  }

  minTokensToAccept(cap: number): number {
    const a = this.reasoned ? this.reasoned.minTokensToAccept(cap) : Number.POSITIVE_INFINITY;
    return this.direct ? Math.min(a, this.direct.minTokensToAccept(cap)) : a;
  }

  minTokensAtLeast(cap: number): number {
    const d = this.direct;
    const a = this.reasoned ? this.reasoned.minTokensAtLeast(cap) : Number.POSITIVE_INFINITY;
    return d ? Math.min(a, d.minTokensAtLeast ? d.minTokensAtLeast(cap) : d.minTokensToAccept(cap)) : a;
  }

  /** Forced bytes only once decided (two branches force nothing in common worth planning). */
  forcedBytes(max: number): ForcedBytes | null {
    if (this.reasoned && this.direct) return null;
    const c = (this.reasoned ?? this.direct)!;
    return c.forcedBytes !== undefined && c.allowsWithin !== undefined ? c.forcedBytes(max) : null;
  }

  allowsWithin(token: number, remaining: number): boolean {
    return this.reasoned?.allowsWithin(token, remaining) === true || this.direct?.allowsWithin?.(token, remaining) === true;
  }

  walkAhead(deadline: number): boolean {
    const a = this.reasoned ? this.reasoned.walkAhead(deadline) : true;
    const d = this.direct?.walkAhead ? this.direct.walkAhead(deadline) : true;
    return a && d;
  }

  reasoningTokenCount(): number {
    return this.reasoned && !this.direct ? this.reasoned.reasoningTokenCount() : 0;
  }
}
