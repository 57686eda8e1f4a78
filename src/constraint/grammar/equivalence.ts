/**
 * Set equivalence for the lexer-level walks: a lexer-state set that behaves exactly like one
 * already walked (every byte continues or not and commits the same terminals, ending the text does
 * the same, over everything reachable: checked as a one-to-one correspondence) takes over that
 * walk with its sets renamed, so a string's contents in a key, a value or an array element cost
 * one walk, not three. Candidates are found by a hash of each set's one-byte-deep behaviour
 * (`behaviourSignature`); the correspondence decides.
 */
import { COMMIT, type LexerSets } from "./lexer-sets.js";

/** An earlier set a new one corresponds to, and the renaming of the sets reachable from it. */
export interface EquivalentSet {
  readonly peer: number;
  readonly renaming: Map<number, number>;
}

/** Sets an equivalence check between two lexer-state sets may pair up before it gives up. */
const MAX_EQUIVALENT_SETS = 256;
/** Peers of one signature a new set is compared with (each comparison may explore that many sets). */
const MAX_EQUIVALENCE_TRIES = 16;
/**
 * Comparisons after which a matcher whose sets rarely correspond (fewer than one in
 * GIVE_UP_RATIO) stops looking. A Lark grammar's sets stop at each terminal, and a string's
 * contents in every context match at once. A rule network's (JSON Schema) sets run on through
 * their rule, and the contents of its strings, alike one byte deep, part a few bytes after the
 * closing quote: measured on 800 MaskBench schemas, 41 matches in 28,845 walks, and the failed
 * comparisons cost 12.5 s beside 25 s of walking. Its automaton says so (lexerSetsRarelyAlike),
 * and its sets are not compared at all: the trial alone was a sixth of its cold masks' time.
 */
const TRIAL_COMPARISONS = 48;
const GIVE_UP_RATIO = 8;

/** The walked sets filed by behaviour, and the check that a new set corresponds to one of them. */
export class SetEquivalence {
  /** Sets with a walk of their own, by behaviourSignature: where a new set looks for an equivalent. */
  private readonly bySignature = new Map<string, number[]>();
  /** Walked sets not yet filed by signature (see signatureAmongWalked). */
  private readonly unsigned: number[] = [];
  private readonly endKeysOf = new Map<number, string>();
  private comparisons = 0;
  private matches = 0;

  /** The automaton says its sets rarely correspond (a rule network's): never looked for. */
  private readonly never: boolean;

  constructor(private readonly sets: LexerSets) {
    this.never = sets.automaton.lexerSetsRarelyAlike === true;
  }

  /**
   * False for an automaton whose sets rarely correspond, or once comparisons have shown that they
   * do (see TRIAL_COMPARISONS).
   */
  get worthLooking(): boolean {
    if (this.never) return false;
    return this.comparisons < TRIAL_COMPARISONS || this.matches * GIVE_UP_RATIO >= this.comparisons;
  }

  /** An estimate of the heap bytes of its memo, erring high (see LexerLevelWalks.retainedBytes). */
  retainedBytes(): number {
    return this.endKeysOf.size * 120;
  }

  /**
   * The signature of a set about to be walked, once the sets walked before are filed under theirs
   * (the first walk files none: see `file`).
   */
  signatureAmongWalked(setId: number): string {
    this.signPending();
    return this.behaviourSignature(setId);
  }

  /** A walked set of the same signature that `setId` corresponds to; null when none does. */
  equivalentOf(setId: number, signature: string): EquivalentSet | null {
    const peers = this.bySignature.get(signature);
    for (let i = 0; peers !== undefined && i < peers.length && i < MAX_EQUIVALENCE_TRIES; i++) {
      this.comparisons++;
      const correspondence = this.equivalence(peers[i]!, setId);
      if (correspondence !== null) {
        this.matches++;
        return { peer: peers[i]!, renaming: correspondence };
      }
    }
    return null;
  }

  /**
   * Files a set that got a walk of its own under its signature; null: no walk came before it (a
   * grammar's first mask, often), and its signature waits until another walk needs it.
   */
  file(setId: number, signature: string | null): void {
    if (!this.worthLooking) return;
    if (signature === null) {
      this.unsigned.push(setId);
      return;
    }
    const peers = this.bySignature.get(signature);
    if (peers === undefined) this.bySignature.set(signature, [setId]);
    else peers.push(setId);
  }

  /** Files the walked sets still without a signature under theirs, in the order they were walked. */
  private signPending(): void {
    for (const set of this.unsigned) {
      const signature = this.behaviourSignature(set);
      const peers = this.bySignature.get(signature);
      if (peers === undefined) this.bySignature.set(signature, [set]);
      else peers.push(set);
    }
    this.unsigned.length = 0;
  }

  /** What ending the text does in a set: its members' distinct lexerEndKey values, sorted. */
  private endKeys(setId: number): string {
    let keys = this.endKeysOf.get(setId);
    if (keys === undefined) {
      const out: number[] = [];
      for (const m of this.sets.membersOf(setId)) {
        const k = this.sets.automaton.lexerEndKey(m);
        if (k !== -1 && !out.includes(k)) out.push(k);
      }
      keys = out.sort((a, b) => a - b).join(",");
      this.endKeysOf.set(setId, keys);
    }
    return keys;
  }

  /** One byte deep: end keys, and per byte whether the set continues and which terminals it commits. */
  private behaviourSignature(setId: number): string {
    const sets = this.sets;
    // A hash, not a spelling: equivalent sets hash alike, and `equivalence` settles collisions.
    let h = 0x811c9dc5;
    for (let b = 0; b < 256; b++) {
      const code = sets.stepCode(setId, b);
      let v = code === 0 ? 0 : (code & COMMIT) === 0 ? 1 : (code & ~COMMIT) !== 0 ? 2 : 3;
      if ((code & COMMIT) !== 0) {
        // Commit keys in any order: a commutative sum of mixed keys.
        const keys = sets.commitKeysAt(setId, b);
        let sum = 0;
        for (let i = 0; i < keys.length; i++) sum = (sum + Math.imul(keys[i]! + 1, 0x9e3779b1)) | 0;
        v = (v + Math.imul(sum, 0x85ebca6b)) | 0;
      }
      h = Math.imul(h ^ v, 0x01000193);
    }
    // Sets that differ only in the ignored run behind them step alike until one reaches the bound:
    // `equivalence` would explore that far to tell them apart, against every earlier peer, so a
    // model emitting whitespace under a long bound paid quadratically in it.
    let runs = 0;
    for (const m of sets.membersOf(setId)) runs = (runs + Math.imul(sets.automaton.lexerIgnoredRun(m) + 1, 0x9e3779b1)) | 0;
    return `${this.endKeys(setId)}#${h >>> 0}#${runs >>> 0}`;
  }

  /**
   * A one-to-one correspondence between the sets reachable from `a` and from `b` under which every
   * byte does the same (continues or not, commits the same terminals with the same inherited
   * constraints) and ending the text does the same; null when there is none (or it grows past
   * MAX_EQUIVALENT_SETS). Walks depend on nothing else, so b's walk is a's with sets renamed.
   */
  private equivalence(a: number, b: number): Map<number, number> | null {
    const sets = this.sets;
    const ab = new Map<number, number>([[a, b]]);
    const ba = new Map<number, number>([[b, a]]);
    const queue = [a];
    for (let qi = 0; qi < queue.length; qi++) {
      const x = queue[qi]!;
      const y = ab.get(x)!;
      if (this.endKeys(x) !== this.endKeys(y)) return null;
      for (let byte = 0; byte < 256; byte++) {
        const cx = sets.stepCode(x, byte);
        const cy = sets.stepCode(y, byte);
        if ((cx & COMMIT) !== (cy & COMMIT)) return null;
        if ((cx & COMMIT) !== 0 && !sameMembers(sets.commitKeysAt(x, byte), sets.commitKeysAt(y, byte))) return null;
        const nx = (cx & ~COMMIT) - 1;
        const ny = (cy & ~COMMIT) - 1;
        if (nx < 0 || ny < 0) {
          if (nx !== ny) return null;
          continue;
        }
        const known = ab.get(nx);
        if (known !== undefined) {
          if (known !== ny) return null;
          continue;
        }
        if (ba.has(ny) || queue.length >= MAX_EQUIVALENT_SETS) return null;
        ab.set(nx, ny);
        ba.set(ny, nx);
        queue.push(nx);
      }
    }
    return ab;
  }
}

function sameMembers(x: Int32Array, y: Int32Array): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (!y.includes(x[i]!)) return false;
  return true;
}
