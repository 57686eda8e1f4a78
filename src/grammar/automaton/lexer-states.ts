// The automaton's lexer states: the token in progress (a position in its scanner's byte DFA plus
// what Lark's first-match rule still needs), interned, and their byte steps, computed once per
// class of bytes a state cannot tell apart (byte labels) and kept in one step table, which the
// automaton reads (GrammarAutomaton.step, lexerStep). None of it depends on the parser stack: this
// is the stack-free part the token layer walks.

import { grownTo, IntMap, uint8Of, type TableSlab } from "../../support/index.js";
import {
  buildScannerDfa,
  committedTerminal,
  scannerDfaBytes,
  type GrammarScanners,
  type ScannerDfa,
  type ScannerParts,
} from "../scanner-dfa.js";
import type { Scanner } from "../lexer.js";
import { INT_MAP_FIRST_BYTES, MEMO_CAPACITY } from "./tables.js";

/** lexerEndKey: the text may end here and the parser stack stays as it is. */
export const LEXER_END_KEEPS_STACK = -2;

/** Letters, digits, then the rest of printable ASCII, then every other byte. */
const BYTES_PRINTABLE_FIRST: readonly number[] = (() => {
  const rank = (b: number): number =>
    b >= 0x61 && b <= 0x7a ? 0 : b >= 0x30 && b <= 0x39 ? 1 : b >= 0x41 && b <= 0x5a ? 2 : b >= 0x20 && b < 0x7f ? 3 : 4;
  return Array.from({ length: 256 }, (_, b) => b).sort((x, y) => rank(x) - rank(y) || x - y);
})();

export const LEX_FIELDS = 6; // scanner, dfa state, first accepted, token length, ignored run, constraints id
export const STEP_FIELDS = 4; // see LexerStates.lexSteps
/** Lexer states the first field table holds, and the first step table. */
const FIRST_LEX_STATES = 8;
const FIRST_STEP_LEX_STATES = 4;

/** The first tables of LexerStates in the automaton's slab: one IntMap, the field and step tables. */
export const LEXER_TABLE_BYTES = INT_MAP_FIRST_BYTES + 256 * FIRST_STEP_LEX_STATES * STEP_FIELDS * 4 + LEX_FIELDS * FIRST_LEX_STATES * 4;

/**
 * A lexer state is everything about the token in progress: scanner, its DFA state, the lowest
 * terminal that accepted so far, the token's length and the ignored run before it (only kept
 * exactly while the token may still end up ignored: otherwise they cannot change what is
 * accepted, and leaving them out keeps the number of states small), and the pending "earlier
 * terminal must not match" constraints. Lexer states and their byte steps do not depend on the
 * stack; that is what `lexerStep` offers the token layer.
 */
export class LexerStates {
  /** Per scanner id: its terminals, and its byte DFA once built (see scannerDfa). */
  private readonly scanners: readonly Scanner[];
  private readonly scannerDfas: (ScannerDfa | undefined)[];
  // Interned lexer states and their byte steps (slot = lexer state * 256 + byte).
  // Sized for a few lexer states and doubled as they come: a small grammar should not fill
  // 256 KB of step tables when it is compiled.
  /** LEX_FIELDS ints per lexer state (read only outside this class; replaced as it grows). */
  lexFields: Int32Array;
  numLex = 0;
  private readonly lexIds = new Map<string, number>();
  private readonly constraintLists: number[][] = [[]];
  private readonly constraintIds = new Map<string, number>([["", 0]]);
  /**
   * Per slot, STEP_FIELDS ints side by side (one cache line for a step, one allocation), offset
   * so that a fresh zeroed table means "not computed yet": continued lexer state + 2 (1: none),
   * restarted lexer state + 1 (0: none), committed terminal + 1 (0: none), the constraints
   * the next token inherits after that commit. Read only outside this class, and replaced as it
   * grows: read it after lexSlot (GrammarAutomaton reads it: step, lexerStep, lexerRestart,
   * lexerCommitKey).
   */
  lexSteps: Int32Array;
  private readonly startLexMemo: IntMap;
  private readonly byteRepsMemo = new Map<number, Uint8Array>();
  private readonly byteLabelsMemo = new Map<number, Uint8Array>();
  /** bytesByLabel's index per labels array (a scanner's classes, or byteLabelsMemo's). */
  private readonly labelIndex = new WeakMap<Uint8Array, { order: Uint8Array; first: Int32Array }>();
  /**
   * The work of making lexer steps and scanner DFAs so far, in trie-node steps: a step's patterns
   * weighed and pending constraints advanced, a scanner DFA built on first use and its cells. A
   * scanner of 500 terminals makes each new lexer step cost 500 pattern checks, which no walk's
   * count of trie nodes shows; the token layer charges this too (GrammarAutomaton.lexerWork).
   */
  work = 0;
  /** lexerRunClass per lexer state (-1: not asked yet), and the classes by key. */
  private runClassOf = new Int32Array(0);
  private readonly runClassIds = new Map<string, number>();

  /**
   * `approximate`: the automaton's, where a scanner built on first use records its terminals;
   * `prebuilt`: the DFAs another automaton built (not counted in retainedBytes).
   */
  constructor(
    scanners: GrammarScanners,
    private readonly maxIgnoredRun: number,
    private readonly approximate: Set<string>,
    private readonly prebuilt: ScannerParts | undefined,
    tables: TableSlab,
  ) {
    this.scanners = scanners.scanners;
    this.scannerDfas = scanners.scannerDfas;
    this.lexFields = tables.int32(LEX_FIELDS * FIRST_LEX_STATES);
    this.lexSteps = tables.int32(256 * FIRST_STEP_LEX_STATES * STEP_FIELDS);
    this.startLexMemo = new IntMap(MEMO_CAPACITY, tables);
  }

  /** A scanner's byte DFA, built on first use when the compile left it (see buildGrammarScanners). */
  scannerDfa(id: number): ScannerDfa {
    const built = this.scannerDfas[id];
    if (built !== undefined) return built;
    const made = buildScannerDfa(this.scanners[id]!, this.approximate);
    // A small scanner's build is mostly fixed costs (~0.05 ms here), then its table's cells.
    this.work += 2048 + made.dfa.numStates * (made.dfa.numClasses + made.numPatterns);
    return (this.scannerDfas[id] = made);
  }

  /** Its part of GrammarAutomaton.retainedBytes beyond the slab (see there). */
  retainedBytes(): number {
    let bytes = this.lexFields.byteLength + this.lexSteps.byteLength + this.startLexMemo.byteLength;
    bytes += this.numLex * 160;
    // A labels array of byteLabelsMemo, or a scanner's, also has its bytesByLabel index (~400).
    bytes += (this.byteRepsMemo.size + 2 * this.byteLabelsMemo.size + this.scannerDfas.length) * 400;
    bytes += this.runClassOf.byteLength + this.runClassIds.size * 80;
    for (let id = 0; id < this.scannerDfas.length; id++) {
      // Built here on first use (the compile's DFAs are accounted with the grammar).
      const dfa = this.scannerDfas[id];
      if (dfa !== undefined && this.prebuilt?.scannerDfas[id] === undefined) bytes += scannerDfaBytes(dfa);
    }
    return bytes;
  }

  private internConstraints(list: number[]): number {
    if (list.length === 0) return 0;
    const key = list.join(".");
    let id = this.constraintIds.get(key);
    if (id === undefined) {
      id = this.constraintLists.length;
      this.constraintLists.push(list);
      this.constraintIds.set(key, id);
    }
    return id;
  }

  private internLex(scanner: number, dfaState: number, first: number, tokenLen: number, ignoredRun: number, constraints: number): number {
    const key = `${scanner},${dfaState},${first},${tokenLen},${ignoredRun},${constraints}`;
    let id = this.lexIds.get(key);
    if (id !== undefined) return id;
    id = this.numLex++;
    this.lexIds.set(key, id);
    if (this.numLex * LEX_FIELDS > this.lexFields.length) this.lexFields = grownTo(this.lexFields, this.lexFields.length * 2);
    const fields = this.lexFields;
    const f = id * LEX_FIELDS;
    fields[f] = scanner;
    fields[f + 1] = dfaState;
    fields[f + 2] = first;
    fields[f + 3] = tokenLen;
    fields[f + 4] = ignoredRun;
    fields[f + 5] = constraints;
    if (this.numLex * 256 * STEP_FIELDS > this.lexSteps.length) this.lexSteps = grownTo(this.lexSteps, this.lexSteps.length * 2);
    return id;
  }

  /** The lexer state at a token boundary of a scanner, with pending constraints. */
  startLex(scanner: number, constraints: number): number {
    const key = scanner * 0x100000 + constraints;
    let id = this.startLexMemo.get(key);
    if (id === IntMap.MISSING) {
      id = this.internLex(scanner, this.scannerDfa(scanner).dfa.start, -1, 0, 0, constraints);
      this.startLexMemo.set(key, id);
    }
    return id;
  }

  /** The lexer state at a token start of each scanner (no inherited constraints): where most tokens begin. */
  tokenStartLexers(): Int32Array {
    const out = new Int32Array(this.scanners.length);
    for (let scanner = 0; scanner < out.length; scanner++) out[scanner] = this.startLex(scanner, 0);
    return out;
  }

  /** Slot of (lexer state, byte) in the step tables, computed on first use. */
  lexSlot(lex: number, byte: number): number {
    const slot = lex * 256 + byte;
    if (this.lexSteps[slot * STEP_FIELDS] === 0) this.computeLexClass(lex, byte);
    return slot;
  }

  /**
   * The step of `byte`, written for every byte the lexer cannot tell from it (see byteLabels):
   * token-level walks ask for all 256 bytes of a state, and most share a handful of classes.
   */
  private computeLexClass(lex: number, byte: number): void {
    const base = lex * 256 * STEP_FIELDS;
    this.computeLexStep(lex, byte, lex * 256 + byte);
    const steps = this.lexSteps; // after the step, which may have grown it
    const labels = this.byteLabels(lex);
    const { order, first } = this.bytesByLabel(labels);
    const label = labels[byte]!;
    const from = base + byte * STEP_FIELDS;
    for (let i = first[label]!, end = first[label + 1]!; i < end; i++) {
      const b = order[i]!;
      if (b === byte) continue;
      const to = base + b * STEP_FIELDS;
      for (let k = 0; k < STEP_FIELDS; k++) steps[to + k] = steps[from + k]!;
    }
  }

  /**
   * The bytes of each label of `labels` (byteLabels'): `order` lists them label by label, label
   * l's from first[l] to first[l + 1]. A step written for a byte is copied to its label's bytes
   * only: scanning all 256 per step was a quarter of a cold budget mask's time (SQL's keywords).
   */
  private bytesByLabel(labels: Uint8Array): { order: Uint8Array; first: Int32Array } {
    let index = this.labelIndex.get(labels);
    if (index === undefined) {
      let most = 0;
      for (let b = 0; b < 256; b++) if (labels[b]! > most) most = labels[b]!;
      const first = new Int32Array(most + 2);
      for (let b = 0; b < 256; b++) first[labels[b]! + 1]!++;
      for (let l = 0; l <= most; l++) first[l + 1]! += first[l]!;
      const order = new Uint8Array(256);
      const at = first.slice(0, most + 1);
      for (let b = 0; b < 256; b++) order[at[labels[b]!]!++] = b;
      index = { order, first };
      this.labelIndex.set(labels, index);
    }
    return index;
  }

  /**
   * Pending constraints `old` (scanner, DFA state, highest forbidden pattern: three ints each)
   * after `byte`: each run stepped, and dropped once its DFA dies or no forbidden pattern can
   * accept on it any more. Null when a forbidden terminal accepts: the hypothesis dies.
   */
  private advanceConstraints(old: readonly number[], byte: number): number[] | null {
    // Advance pending constraints: a forbidden terminal accepting kills the hypothesis.
    const constraints: number[] = [];
    for (let c = 0; c < old.length; c += 3) {
      const cs = this.scannerDfa(old[c]!);
      const ns = cs.dfa.next[old[c + 1]! * cs.dfa.numClasses + cs.dfa.byteClass[byte]!]!;
      if (ns < 0) continue;
      const upTo = old[c + 2]!;
      for (let p = 0; p <= upTo; p++) if (cs.accept[ns * cs.numPatterns + p]) return null;
      let alive = false;
      for (let p = 0; p <= upTo && !alive; p++) if (cs.canAccept[ns * cs.numPatterns + p]) alive = true;
      if (alive) constraints.push(old[c]!, ns, upTo);
    }
    return constraints;
  }

  private computeLexStep(lex: number, byte: number, slot: number): void {
    this.lexSteps[slot * STEP_FIELDS] = 1; // no continuation (until found)
    const f = lex * LEX_FIELDS;
    const fields = this.lexFields;
    const scId = fields[f]!,
      dfaState = fields[f + 1]!,
      first0 = fields[f + 2]!,
      tokenLen0 = fields[f + 3]!,
      ignoredRun = fields[f + 4]!;
    const pending = this.constraintLists[fields[f + 5]!]!;
    const constraints = this.advanceConstraints(pending, byte);
    if (constraints === null) return;
    const sc = this.scannerDfa(scId);
    if (sc.broken) return;
    const d = sc.dfa;
    const P = sc.numPatterns;
    // A pattern checked costs about a quarter of what a trie node stepped does.
    this.work += 1 + (P + pending.length) / 4;
    const ns = d.next[dfaState * d.numClasses + d.byteClass[byte]!]!;
    if (ns < 0) return;
    // The winner is the lowest-index terminal that ever matches at the token start.
    let first = first0;
    const limit = first < 0 ? sc.numOrdered : first;
    for (let p = 0; p < limit; p++)
      if (sc.accept[ns * P + p]) {
        first = p;
        break;
      }
    const tokenLen = Math.min(tokenLen0 + 1, this.maxIgnoredRun + 2);
    const newlyAccepted = first >= 0 && first !== first0;
    if (first >= 0 && sc.accept[ns * P + first] && (!sc.shortest[first] || newlyAccepted)) {
      const term = committedTerminal(sc, first, ns);
      // Longest match: no terminal up to the winner may match a longer run from here. Only kept
      // while one still can (most commits, a closing quote or a keyword, end every such run).
      const upTo = sc.shortest[first] ? first - 1 : first;
      const after = this.internConstraints(upTo < 0 || sc.minLaterPattern[ns]! > upTo ? constraints : [...constraints, scId, ns, upTo]);
      if (term.ignored) {
        const run = ignoredRun + tokenLen;
        if (run <= this.maxIgnoredRun) {
          const restart = this.internLex(scId, d.start, -1, 0, run, after); // may grow the table
          this.lexSteps[slot * STEP_FIELDS + 1] = restart + 1;
        }
      } else if (term.tableIndex >= 0) {
        this.lexSteps[slot * STEP_FIELDS + 2] = term.tableIndex + 1;
        this.lexSteps[slot * STEP_FIELDS + 3] = after;
      }
    }
    // Continuing pays off only if a later byte can make a terminal ≤ the winner-to-be accept
    // (strictly earlier terminals for a lazy winner, which never grows).
    const contBound = first < 0 ? sc.numOrdered - 1 : sc.shortest[first] ? first - 1 : first;
    if (contBound < 0 || sc.minLaterPattern[ns]! > contBound) return;
    let onlyIgnored = true;
    let mayBeIgnored = false;
    for (let p = 0; p <= contBound; p++) {
      if (!sc.canAccept[ns * P + p] && p !== first) continue;
      if (!sc.terms[sc.termOf[p]!]!.ignored) onlyIgnored = false;
      if (sc.ignorable[p]) mayBeIgnored = true;
    }
    // Ignored-run limit for a token that can only end up ignored.
    if (onlyIgnored && ignoredRun + tokenLen > this.maxIgnoredRun) return;
    const cont = mayBeIgnored
      ? this.internLex(scId, ns, first, tokenLen, ignoredRun, this.internConstraints(constraints))
      : this.internLex(scId, ns, first, 1, 0, this.internConstraints(constraints));
    this.lexSteps[slot * STEP_FIELDS] = cont + 2; // after interning, which may have grown the table
  }

  /**
   * One byte per class of bytes that step `lex` alike (the lexer sees a byte only through its
   * scanners' byte classes), printable ASCII first: searches over lexer states try these instead
   * of all 256 bytes. Read only.
   */
  lexerByteReps(lex: number): Uint8Array {
    const f = lex * LEX_FIELDS;
    const key = this.lexFields[f]! * 0x100000 + this.lexFields[f + 5]!;
    let reps = this.byteRepsMemo.get(key);
    if (reps === undefined) {
      const label = this.byteLabels(lex);
      const seen = new Uint8Array(256);
      const out: number[] = [];
      for (const b of BYTES_PRINTABLE_FIRST) {
        if (seen[label[b]!] === 0) {
          seen[label[b]!] = 1;
          out.push(b);
        }
      }
      reps = uint8Of(out);
      this.byteRepsMemo.set(key, reps);
    }
    return reps;
  }

  /**
   * Per byte, a label equal for bytes that step `lex` alike: alike in the classes of its scanner's
   * DFA and of every DFA its pending constraints run (the lexer sees a byte only through them).
   * Refined one DFA at a time: label = class tuple so far, renumbered densely. Read only.
   */
  byteLabels(lex: number): Uint8Array {
    const f = lex * LEX_FIELDS;
    const cs = this.constraintLists[this.lexFields[f + 5]!]!;
    const scannerClasses = this.scannerDfa(this.lexFields[f]!).dfa.byteClass;
    if (cs.length === 0) return scannerClasses;
    const key = this.lexFields[f]! * 0x100000 + this.lexFields[f + 5]!;
    let labels = this.byteLabelsMemo.get(key);
    if (labels === undefined) {
      labels = scannerClasses.slice();
      let numLabels = this.scannerDfa(this.lexFields[f]!).dfa.numClasses;
      for (let c = 0; c < cs.length; c += 3) {
        const { byteClass, numClasses } = this.scannerDfa(cs[c]!).dfa;
        const renumber = new Int32Array(numLabels * numClasses).fill(-1);
        let next = 0;
        for (let b = 0; b < 256; b++) {
          const pair = labels[b]! * numClasses + byteClass[b]!;
          if (renumber[pair] === -1) renumber[pair] = next++;
          labels[b] = renumber[pair]!;
        }
        numLabels = next;
      }
      this.byteLabelsMemo.set(key, labels);
    }
    return labels;
  }

  /**
   * The lexer states equal but for their ignored run share a class (its id; see lexerIgnoredRun):
   * the scanner, DFA state, winner so far, whether a token has begun, the pending constraints.
   * Within a class a longer run allows only less (the run limit is all it changes), so what the
   * text after a state with a longer run can be is a part of what it can be after a shorter one.
   */
  lexerRunClass(lex: number): number {
    if (lex >= this.runClassOf.length) this.runClassOf = grownTo(this.runClassOf, Math.max(lex + 1, this.runClassOf.length * 2), -1);
    let cls = this.runClassOf[lex]!;
    if (cls >= 0) return cls;
    const f = lex * LEX_FIELDS;
    const fields = this.lexFields;
    const key = `${fields[f]},${fields[f + 1]},${fields[f + 2]},${fields[f + 3] === 0 ? 0 : 1},${fields[f + 5]}`;
    cls = this.runClassIds.get(key) ?? this.runClassIds.size;
    this.runClassIds.set(key, cls);
    this.runClassOf[lex] = cls;
    return cls;
  }

  /**
   * Bytes of the ignored run a lexer state has behind it, its token included while that may still
   * end up ignored (a constant for every other state: see computeLexStep).
   */
  lexerIgnoredRun(lex: number): number {
    const f = lex * LEX_FIELDS;
    return this.lexFields[f + 4]! + this.lexFields[f + 3]!;
  }

  /**
   * What ending the text here does to a lexer state's token in progress: the terminal the parser
   * is then fed (≥ 0), LEXER_END_KEEPS_STACK (a token boundary, or an ignored terminal within the
   * run limit), or -1 (the token cannot end here). A lazy winner ends only at its first match,
   * which a surviving hypothesis with that winner has just reached or already committed.
   */
  lexerEndKey(lex: number): number {
    const f = lex * LEX_FIELDS;
    const fields = this.lexFields;
    if (fields[f + 3] === 0) return LEXER_END_KEEPS_STACK;
    const sc = this.scannerDfa(fields[f]!);
    const dfaState = fields[f + 1]!,
      i = fields[f + 2]!;
    if (i < 0 || sc.accept[dfaState * sc.numPatterns + i] !== 1 || sc.shortest[i]) return -1;
    const term = committedTerminal(sc, i, dfaState);
    if (term.ignored) return this.lexerIgnoredRun(lex) <= this.maxIgnoredRun ? LEXER_END_KEEPS_STACK : -1;
    return term.tableIndex < 0 ? -1 : term.tableIndex;
  }
}
