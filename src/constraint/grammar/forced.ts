/**
 * Fast-forward for grammars (TokenConstraint.forcedBytes): which bytes can follow a state on the
 * way to a complete sentence, and the one byte a state forces. A grammar literal (`"SELECT"`,
 * `"true"`, a closing `)`) runs through states that each allow one byte.
 *
 * One automaton step per class of bytes the lexer treats alike (lexerByteReps), not 256: each
 * step may make a state, and the matcher, shared by every request, keeps them. A state of several
 * hypotheses (terminals that collide) is not looked into: it forces nothing, and every byte may
 * follow it (a superset, which only makes fast-forward stop sooner).
 */
import { IdMap, IntMap, type TableSlab } from "../../support/index.js";
import type { WorkMeter } from "../work-meter.js";
import { isLexerLevel, type CompletableAutomaton, type LexerLevelAutomaton } from "./contracts.js";
import { MEMO_CAPACITY } from "./tables.js";

export class ForcedBytesOfStates {
  /** Per state: the byte it forces, or -1 (see forcedByte). */
  private readonly forced: IdMap;
  private readonly lexerLevel: LexerLevelAutomaton | null;
  /** Scratch: per lexer byte label, whether its bytes go on (liveBytes). */
  private readonly liveLabel = new Uint8Array(256);
  /** Scratch: the bytes that go on from a state being memoized (forcedByte). */
  private readonly live = new Uint32Array(8);

  constructor(
    private readonly automaton: CompletableAutomaton,
    tables: TableSlab,
    private readonly work: WorkMeter,
  ) {
    this.forced = new IdMap(MEMO_CAPACITY, tables);
    this.lexerLevel = isLexerLevel(automaton) ? automaton : null;
  }

  get byteLength(): number {
    return this.forced.byteLength;
  }

  /**
   * The one byte that can follow `state` on the way to a complete sentence, or -1: the sentence
   * may end here, more than one byte can follow, or the state is not looked into. Memoized per
   * state: fast-forward asks after every sampled token.
   */
  forcedByte(state: number): number {
    if (state < 0) return -1;
    let byte = this.forced.get(state);
    if (byte === IntMap.MISSING) {
      byte = -1;
      if (!this.automaton.isComplete(state)) {
        const live = this.live.fill(0);
        if (this.liveBytes(state, live) === 1) for (let w = 0; w < 8; w++) if (live[w] !== 0) byte = w * 32 + 31 - Math.clz32(live[w]!);
      }
      this.forced.set(state, byte);
    }
    return byte;
  }

  /**
   * Sets in `out` (8 words, zeroed by the caller) the bytes after which a complete sentence may
   * still follow from `state`, and returns how many; a state not looked into gets every byte and
   * 256. A byte counts as going on unless its state is provably dead (lower bound Infinity: an
   * admissible bound, so never a live byte left out).
   */
  liveBytes(state: number, out: Uint32Array): number {
    const a = this.lexerLevel;
    const hyps = a === null ? null : a.hypotheses(state);
    if (a === null || hyps === null || hyps.length !== 2) {
      out.fill(0xffffffff);
      return 256;
    }
    const lex = hyps[1]!;
    const reps = a.lexerByteReps(lex);
    const labels = a.lexerByteLabels(lex);
    const liveLabel = this.liveLabel;
    liveLabel.fill(0);
    this.work.charge(reps.length);
    let anyLive = false;
    for (let i = 0; i < reps.length; i++) {
      const t = a.step(state, reps[i]!);
      if (t >= 0 && a.minBytesLowerBound(t) !== Infinity) {
        liveLabel[labels[reps[i]!]!] = 1;
        anyLive = true;
      }
    }
    if (!anyLive) return 0;
    let count = 0;
    for (let b = 0; b < 256; b++) {
      if (liveLabel[labels[b]!] === 0) continue;
      out[b >>> 5]! |= 1 << (b & 31);
      count++;
    }
    return count;
  }
}
