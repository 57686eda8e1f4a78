/**
 * Sets of lexer states (a hypothesis's token in progress, and the fresh tokens that ignored
 * terminals ending on the way start), interned as small ids, and what a byte does to one: the
 * next set and whether a terminal may end (`stepCode`, one table slot per set and byte, written
 * for the whole class of bytes a lone lexer state cannot tell apart), the terminals it commits,
 * the bytes a set begins tokens with and the bytes it loops on. The lexer-level walks
 * (lexer-walks.ts) walk the trie over these; nothing here depends on a parser stack.
 */
import { LEXER_COMMITS } from "../../grammar/index.js";
import { grownTo, IntMap, type TableSlab } from "../../support/index.js";
import { loopsOnEveryUtf8Char, type TokenTrie } from "../trie.js";
import type { LexerLevelAutomaton } from "./contracts.js";
import { EMPTY, listOf, MEMO_CAPACITY } from "./tables.js";

/**
 * The sets a body set passes through inside multi-byte characters (a string's contents read
 * "é" as two steps): class 0 is the set itself, class k > 0 the k-th set met. rows[c * 256 + b]
 * is where byte b leads from class c: a class, -1 (no token goes on), or -2 in row 0 for the
 * bytes the set's own region handles (ASCII, loop bytes). Only when no byte of a character
 * commits and every such byte stays among the classes: then a root walk's loop region goes on
 * through characters, and sets with the same rows (`signature`) share it.
 */
export interface Utf8Closure {
  readonly rows: Int16Array;
  /** The set of each class, for this set. */
  readonly sets: readonly number[];
  /** Bytes from the set to each class: where another set with the same signature finds its own. */
  readonly paths: readonly (readonly number[])[];
  readonly signature: string;
}

/**
 * A set that steps on each of its content bytes to one next set without committing (a string of
 * at most N characters: each position is a set of its own), through a Utf8Closure whose classes
 * lead to that next set as a body's lead back to itself. Sets of a chain with the same `key`
 * walk the same region of the trie, each token ending in the set as many characters on (see
 * CountedRegion in loop-slices.ts).
 */
export interface CountedShape {
  readonly next: number;
  /** The content bytes (ASCII, or lead bytes that complete a character at once: none in UTF-8). */
  readonly loop: Uint32Array;
  /** Class 0 is the set; rows lead to 0 where they reach `next`. Null: ASCII content only. */
  readonly closure: Utf8Closure | null;
  readonly key: string;
}

/** The bytes of each label of a labels array (lexerByteLabels): label l's are bytes[start[l] .. start[l + 1]). */
interface LabelBytes {
  readonly start: Uint16Array;
  readonly bytes: Uint8Array;
}

const labelBytes = new WeakMap<Uint8Array, LabelBytes>();

/** The bytes of each label, made once per labels array (an automaton keeps one per rule or scanner). */
function labelBytesOf(labels: Uint8Array): LabelBytes {
  let out = labelBytes.get(labels);
  if (out === undefined) {
    const start = new Uint16Array(258);
    for (let b = 0; b < 256; b++) start[labels[b]! + 1]!++;
    for (let l = 1; l < 258; l++) start[l]! += start[l - 1]!;
    const at = start.slice();
    const bytes = new Uint8Array(256);
    for (let b = 0; b < 256; b++) bytes[at[labels[b]!]!++] = b;
    out = { start, bytes };
    labelBytes.set(labels, out);
  }
  return out;
}

/**
 * A closure's rows as a key: the rows of bytes 0x80–0xFF, class after class (ASCII's are the same
 * in every closure: the region's in class 0, none in the others), run-length encoded (runs of a
 * class, or of -1, bytes that cannot follow) as two UTF-16 units a run, its value + 3 and its
 * length; closureLeadingTo writes the runs as it writes the rows (a second pass over them was
 * half of a closure's time).
 */
const runUnits: number[] = [];

/** Classes a closure may have (a JSON string's contents need 9). */
const MAX_CLOSURE_CLASSES = 16;

/** Pages of stepCode's memo one allocation holds at most (see newPage). */
const MAX_PAGE_CHUNK = 16;

/** Sets per page of stepCode's memo (16 KB). */
const PAGE_SHIFT = 4;
const PAGE_SETS = 1 << PAGE_SHIFT;
const PAGE_MASK = PAGE_SETS - 1;

/** Set in a lexer set step code, as in the grammar stage's lexer step codes. */
export const COMMIT = LEXER_COMMITS;

/**
 * The interned lexer-state sets of one matcher and their byte steps, memoized. The lexer-level
 * walks extend it, so their loops call these steps on themselves (one class: monomorphic).
 */
export class LexerSets {
  /**
   * Per lexer state, its set of one + 1 (0: not made yet). Walks into new parts of a rule network
   * meet a new lone set every few bytes, and a string key each cost more than the walk's step.
   */
  private loneSets: Int32Array;
  /** stack * 2^20 + set → state: interning a set of several hypotheses sorts and hashes its pairs. */
  private readonly stateMemo: IntMap;
  private readonly setMembers: number[][] = [];
  private readonly setIds = new Map<string, number>();
  /**
   * stepCode's memo: per set, 256 slots of its code + 1 (0: not known yet), in pages of PAGE_SETS
   * sets. One table grown by doubling copied megabytes in a big rule network, and each copy was
   * a new off-heap buffer that brought the collector in (a tenth of a cold mask phase).
   */
  private readonly nextPages: Int32Array[];
  /** The chunk newPage carves pages from, and its words handed out. */
  private pageChunk: Int32Array | null = null;
  private pageChunkUsed = 0;
  /**
   * By slot (set * 256 + byte), the index of its list in commitKeyLists: few slots commit, and an
   * array by slot grew by 256 entries per set (most of a cold mask's time and garbage in a big
   * rule network).
   */
  private readonly commitKeyIndex = new IntMap(MEMO_CAPACITY);
  private readonly commitKeyLists: Int32Array[] = [];
  private commitKeysMade = 0;
  private readonly firstBytesOf = new Map<number, Uint32Array>();
  /** Per set: loop bytes computed (1), the 8 words of loopBytes, the loop's step code. */
  private loopKnown: Uint8Array;
  private loopWords: Uint32Array;
  protected loopCodes: Int32Array;
  private loopsOnUtf8: Uint8Array;
  private readonly loopKeys = new Map<number, Int32Array>();
  private readonly closures = new Map<number, Utf8Closure | null>();
  private closureBytes = 0;
  /** closureLeadingTo's rows while they are made. */
  private closureRows: Int16Array | null = null;
  /** Per set: its counted shape, or null (countedShape). */
  private readonly countedShapes = new Map<number, CountedShape | null>();
  /** Bytes of the counted shapes' own arrays (their closures' rows, their keys). */
  private countedShapeBytes = 0;
  /** Per set: how many sets from it on share its counted shape's key (countedLevels). */
  private readonly countedRuns = new Map<number, number>();
  /** countedShapeOf's scratch: (set, bytes leading there) pairs. */
  private readonly shapeCounts: number[] = [];
  /** Per set: its whole step row is in the memo (rowOf, 1); and lexerRow's scratch. */
  private rowKnown = new Uint8Array(64);
  private readonly rowCodes = new Int32Array(256);

  /** `tables`: the matcher's slab, for the first tables below. */
  protected constructor(
    protected readonly trie: TokenTrie,
    readonly automaton: LexerLevelAutomaton,
    tables: TableSlab,
  ) {
    this.stateMemo = new IntMap(MEMO_CAPACITY, tables);
    this.loneSets = tables.int32(64);
    this.nextPages = [tables.int32(256 * PAGE_SETS)];
    this.loopKnown = tables.uint8(64);
    this.loopWords = tables.uint32(64 * 8);
    this.loopCodes = tables.int32(64);
    this.loopsOnUtf8 = tables.uint8(64);
  }

  /** An estimate of the heap bytes of the sets and their step memos, erring high. */
  protected retainedSetBytes(): number {
    let bytes = this.stateMemo.byteLength + this.nextPages.length * 1024 * PAGE_SETS;
    if (this.pageChunk !== null) bytes += 4 * (this.pageChunk.length - this.pageChunkUsed);
    bytes += this.loopKnown.byteLength + this.loopWords.byteLength + this.loopCodes.byteLength + this.loopsOnUtf8.byteLength;
    bytes += this.rowKnown.byteLength + this.rowCodes.byteLength;
    let members = 0;
    for (const m of this.setMembers) members += m.length;
    // A set: its member list and key; a commit's keys: their slot, list and pointer.
    bytes += this.setMembers.length * 240 + members * 16 + this.commitKeyIndex.byteLength;
    bytes += this.loneSets.byteLength + (this.setIds.size + this.loopKeys.size + this.closures.size) * 120 + this.closureBytes;
    bytes += this.firstBytesOf.size * 120 + this.commitKeysMade * 80;
    bytes += (this.countedShapes.size + this.countedRuns.size) * 120 + this.countedShapeBytes;
    return bytes;
  }

  /** The set holding just one lexer state. */
  setOfLexer(lex: number): number {
    if (lex < this.loneSets.length && this.loneSets[lex] !== 0) return this.loneSets[lex]! - 1;
    const id = this.newSet([lex]);
    if (lex >= this.loneSets.length) this.loneSets = grownTo(this.loneSets, Math.max(lex + 1, this.loneSets.length * 2));
    this.loneSets[lex] = id + 1;
    return id;
  }

  /** The lexer states of a set. */
  membersOf(setId: number): readonly number[] {
    return this.setMembers[setId]!;
  }

  /** The automaton state of the hypotheses (stack, l) for l in the set. */
  stateOf(stack: number, setId: number): number {
    const members = this.setMembers[setId]!;
    if (members.length === 1 || setId >= 0x100000) return this.automaton.withStack(stack, members);
    const key = stack * 0x100000 + setId;
    let state = this.stateMemo.get(key);
    if (state === IntMap.MISSING) {
      state = this.automaton.withStack(stack, members);
      this.stateMemo.set(key, state);
    }
    return state;
  }

  /**
   * isComplete(stateOf(stack, setId)) without making the state: a budget's one-token question
   * asks it of every set a token can end in, and most of those states are never needed again.
   */
  completeOf(stack: number, setId: number): boolean {
    const members = this.setMembers[setId]!;
    for (let j = 0; j < members.length; j++) if (this.automaton.completeAt(stack, members[j]!)) return true;
    return false;
  }

  /** Next set + 1 (0: no token in progress can continue), | COMMIT when a terminal may end here. */
  stepCode(setId: number, byte: number): number {
    const page = this.nextPages[setId >>> PAGE_SHIFT]!;
    const slot = ((setId & PAGE_MASK) << 8) | byte;
    const hit = page[slot]!;
    if (hit !== 0) return hit - 1;
    const automaton = this.automaton;
    const members = this.setMembers[setId]!;
    if (members.length === 1) return this.stepOne(setId, members[0]!, byte);
    let commit = 0;
    const next: number[] = [];
    for (let j = 0; j < members.length; j++) {
      const code = automaton.lexerStep(members[j]!, byte);
      commit |= code & COMMIT;
      const cont = (code & ~COMMIT) - 1;
      if (cont >= 0 && !next.includes(cont)) next.push(cont);
      const restarted = automaton.lexerRestart(members[j]!, byte);
      if (restarted >= 0 && !next.includes(restarted)) next.push(restarted);
    }
    const result = commit | (next.length > 0 ? this.internSet(next.sort((a, b) => a - b)) + 1 : 0);
    this.nextPages[setId >>> PAGE_SHIFT]![slot] = result + 1;
    return result;
  }

  /**
   * stepCode of a set of one lexer state: its next set is one or two states (continued, and
   * restarted after an ignored terminal), a lone one interned through setOfLexer without a key
   * string (walks into new parts of a rule network meet a new set every few bytes).
   */
  private stepOne(setId: number, lex: number, byte: number): number {
    const automaton = this.automaton;
    const code = automaton.lexerStep(lex, byte);
    const cont = (code & ~COMMIT) - 1;
    const restarted = automaton.lexerRestart(lex, byte);
    let next: number;
    if (restarted < 0 || restarted === cont) next = cont < 0 ? -1 : this.setOfLexer(cont);
    else if (cont < 0) next = this.setOfLexer(restarted);
    else next = this.internSet(cont < restarted ? [cont, restarted] : [restarted, cont]);
    const result = (code & COMMIT) | (next + 1);
    // The bytes the lexer state cannot tell from this one step the set alike: a walk's first and
    // loop bytes ask for all 256, and most sets have a handful of classes.
    const labels = automaton.lexerByteLabels(lex);
    const { start, bytes } = labelBytesOf(labels);
    const label = labels[byte]!;
    // Read after interning: a new set may have added a page, never replaced one.
    const page = this.nextPages[setId >>> PAGE_SHIFT]!;
    const base = (setId & PAGE_MASK) << 8;
    for (let i = start[label]!, end = start[label + 1]!; i < end; i++) page[base + bytes[i]!] = result + 1;
    return result;
  }

  /**
   * The set's step codes + 1 for all 256 bytes (stepCode's memo row, made whole), for the scans
   * over every byte below (a closure's classes, a set's loop and first bytes, a counted shape):
   * a lone set of an automaton with lexerRow in one pass over its row (a rule network's document
   * rule has a hundred and more byte classes, each one stepOne call), else byte by byte. A view
   * of the memo page: pages are added, never replaced.
   */
  protected rowOf(setId: number): Int32Array {
    const page = this.nextPages[setId >>> PAGE_SHIFT]!;
    const base = (setId & PAGE_MASK) << 8;
    if (setId < this.rowKnown.length && this.rowKnown[setId] === 1) return page.subarray(base, base + 256);
    const members = this.setMembers[setId]!;
    const automaton = this.automaton;
    if (members.length === 1 && automaton.lexerRow !== undefined) {
      const codes = this.rowCodes;
      automaton.lexerRow(members[0]!, codes);
      let lastCont = -1;
      let lastSet = -1;
      for (let b = 0; b < 256; b++) {
        if (page[base + b] !== 0) continue;
        const code = codes[b]!;
        const cont = (code & ~COMMIT) - 1;
        if (cont !== lastCont) {
          lastCont = cont;
          lastSet = cont < 0 ? -1 : this.setOfLexer(cont);
        }
        page[base + b] = ((code & COMMIT) | (lastSet + 1)) + 1;
      }
    } else for (let b = 0; b < 256; b++) if (page[base + b] === 0) this.stepCode(setId, b);
    if (setId >= this.rowKnown.length) this.rowKnown = grownTo(this.rowKnown, Math.max(setId + 1, this.rowKnown.length * 2));
    this.rowKnown[setId] = 1;
    return page.subarray(base, base + 256);
  }

  /** The distinct commit keys of the set's members at `byte`. */
  commitKeysAt(setId: number, byte: number): Int32Array {
    const slot = setId * 256 + byte;
    const index = this.commitKeyIndex.get(slot);
    let keys = index === IntMap.MISSING ? undefined : this.commitKeyLists[index]!;
    if (keys === undefined) {
      const out: number[] = [];
      for (const m of this.setMembers[setId]!) {
        const k = this.automaton.lexerCommitKey(m, byte);
        if (k >= 0 && !out.includes(k)) out.push(k);
      }
      keys = listOf(out);
      this.commitKeyIndex.set(slot, this.commitKeyLists.length);
      this.commitKeyLists.push(keys);
      this.commitKeysMade++;
    }
    return keys;
  }

  /** The set of `members` (ascending, distinct); sets of several are interned by their spelling. */
  private internSet(members: number[]): number {
    if (members.length === 1) return this.setOfLexer(members[0]!);
    const key = members.join(".");
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.newSet(members);
      this.setIds.set(key, id);
    }
    return id;
  }

  private newSet(members: number[]): number {
    const id = this.setMembers.length;
    this.setMembers.push(members);
    if (id >>> PAGE_SHIFT === this.nextPages.length) this.nextPages.push(this.newPage());
    return id;
  }

  /**
   * A zeroed page of stepCode's memo, carved from a chunk of pages that doubles up to
   * MAX_PAGE_CHUNK: one buffer per page (16 KB, off the heap) was a few percent of a cold mask,
   * and walks into new parts of a rule network meet a new set every few bytes.
   */
  private newPage(): Int32Array {
    const words = 256 * PAGE_SETS;
    if (this.pageChunk === null || this.pageChunkUsed === this.pageChunk.length) {
      const pages = Math.min(MAX_PAGE_CHUNK, this.nextPages.length);
      this.pageChunk = new Int32Array(words * pages);
      this.pageChunkUsed = 0;
    }
    const page = this.pageChunk.subarray(this.pageChunkUsed, this.pageChunkUsed + words);
    this.pageChunkUsed += words;
    return page;
  }

  /**
   * What a root walk's loop region depends on (see LoopSlice in lexer-walks.ts): the set's loop
   * bytes and whether whole UTF-8 characters loop, as a string; null unless the set is a body
   * that loops without committing (otherwise its region is small, or not a plain one).
   */
  protected loopSliceKey(setId: number): string | null {
    if (!this.isBody(setId) || (this.loopCodes[setId]! & COMMIT) !== 0) return null;
    const closure = this.utf8Closure(setId);
    return `${this.loopBytes(setId).join(",")}/${this.loopsOnUtf8[setId]!}/${closure === null ? "-" : closure.signature}`;
  }

  /**
   * The sets a body set's multi-byte characters pass through (see Utf8Closure), or null when they
   * commit, leave for another set or pass through more than MAX_CLOSURE_CLASSES: then a root walk's
   * region stops at the first byte that does not loop, as for ASCII.
   */
  protected utf8Closure(setId: number): Utf8Closure | null {
    let closure = this.closures.get(setId);
    if (closure === undefined) {
      closure = this.closureOf(setId);
      this.closures.set(setId, closure);
      if (closure !== null) this.closureBytes += closure.rows.byteLength + 2 * closure.signature.length + 40 * closure.sets.length;
    }
    return closure;
  }

  private closureOf(setId: number): Utf8Closure | null {
    const closure = this.closureLeadingTo(setId, setId, this.loopBytes(setId));
    return closure === false ? null : closure;
  }

  /**
   * The set's counted shape (see CountedShape), or null: it loops on a byte, or no next set takes
   * ten bytes or more (a keyword's letters), or a character's bytes commit or leave the closure.
   */
  protected countedShape(setId: number): CountedShape | null {
    let shape = this.countedShapes.get(setId);
    if (shape === undefined) {
      shape = this.countedShapeOf(setId);
      this.countedShapes.set(setId, shape);
      if (shape !== null) {
        const closure = shape.closure;
        this.countedShapeBytes += 100 + 2 * shape.key.length + (closure === null ? 0 : closure.rows.byteLength + 40 * closure.sets.length);
      }
    }
    return shape;
  }

  private countedShapeOf(setId: number): CountedShape | null {
    // The next set most bytes lead to without a commit; none may lead back to the set.
    let next = -1;
    let most = 0;
    // (set, bytes) pairs: a row leads to a few sets.
    const counts = this.shapeCounts;
    counts.length = 0;
    // The whole row only where reading it asks the automaton nothing more: the loop below may
    // stop early, and a grammar's lexer charges the states its steps make.
    const row = this.automaton.lexerRow !== undefined ? this.rowOf(setId) : null;
    for (let b = 0; b < 256; b++) {
      const code = row !== null ? row[b]! - 1 : this.stepCode(setId, b);
      if (code === 0 || (code & COMMIT) !== 0) continue;
      const cont = code - 1;
      if (cont === setId) return null;
      let i = 0;
      while (i < counts.length && counts[i] !== cont) i += 2;
      if (i === counts.length) counts.push(cont, 0);
      const n = ++counts[i + 1]!;
      if (n > most) {
        most = n;
        next = cont;
      }
    }
    if (most < 10) return null;
    // Characters are counted by their first bytes: content is ASCII, and a character's other
    // bytes go through the closure (the sets inside a character step on continuation bytes).
    const loop = new Uint32Array(8);
    for (let b = 0; b < 256; b++)
      if ((row !== null ? row[b]! - 1 : this.stepCode(setId, b)) === next + 1) {
        if (b >= 0x80) return null;
        loop[b >>> 5]! |= 1 << (b & 31);
      }
    const closure = this.closureLeadingTo(setId, next, loop);
    if (closure === false) return null;
    return { next, loop, closure, key: `counted/${loop.join(",")}/${closure === null ? "-" : closure.signature}` };
  }

  /**
   * The closure of `setId` (see Utf8Closure) whose classes lead on to `back`: the set itself for
   * a body (closureOf), the next set for a counted one (countedShape). Null where a character's
   * bytes commit or leave the closure (the region then stops at the first byte that does not
   * loop). For a counted set also false where the bytes are not UTF-8's shape (a continuation byte
   * between characters, a first byte inside one, a class stepping to itself), which counting
   * characters by their first bytes needs.
   */
  private closureLeadingTo(setId: number, back: number, loop: Uint32Array): Utf8Closure | null | false {
    const counted = back !== setId;
    const sets = [setId];
    const paths: number[][] = [[]];
    // Written in scratch and copied once: Int16Array.from of a list goes through the iterator
    // protocol, and was most of a closure's cost (every string's contents in a rule network).
    const rows = (this.closureRows ??= new Int16Array(256 * MAX_CLOSURE_CLASSES));
    // Whole rows where reading them asks the automaton nothing more (as in countedShapeOf).
    const whole = this.automaton.lexerRow !== undefined;
    const units = runUnits;
    units.length = 0;
    let runValue = 0;
    let runLength = 0;
    let n = 0;
    for (let c = 0; c < sets.length; c++) {
      const x = sets[c]!;
      const row = whole ? this.rowOf(x) : null;
      if (c === 0) {
        // The set's own ASCII is the region's as it is (-2: not the closure's).
        rows.fill(-2, n, n + 0x80);
      } else {
        // ASCII goes on inside a character: not a character's bytes.
        for (let b = 0; b < 0x80; b++) if ((row !== null ? row[b]! - 1 : this.stepCode(x, b)) !== 0) return null;
        rows.fill(-1, n, n + 0x80);
      }
      n += 0x80;
      // Neighbouring bytes mostly step alike (continuation bytes, a run of lead bytes): the
      // last code's class is kept instead of searching the sets again.
      let lastCode = -1;
      let lastTo = -1;
      for (let b = 0x80; b < 256; b++) {
        let value: number;
        let code = 0;
        if (c === 0 && ((loop[b >>> 5]! >>> (b & 31)) & 1) !== 0) {
          // The set's own loop bytes are the region's as they are.
          value = -2;
        } else if ((code = row !== null ? row[b]! - 1 : this.stepCode(x, b)) === 0) value = -1;
        else {
          if (counted && (c === 0 ? b < 0xc0 : b >= 0xc0)) return false;
          if (code === lastCode) value = lastTo;
          else {
            // A terminal may end: not a character's bytes.
            if ((code & COMMIT) !== 0 || (counted && code - 1 === setId)) return null;
            let to = code - 1 === back ? 0 : sets.indexOf(code - 1);
            if (counted && to === c && c > 0) return false;
            if (to < 0) {
              if (sets.length >= MAX_CLOSURE_CLASSES) return null;
              to = sets.length;
              sets.push(code - 1);
              paths.push([...paths[c]!, b]);
            }
            lastCode = code;
            lastTo = to;
            value = to;
          }
        }
        rows[n++] = value;
        if (value === runValue && runLength > 0) runLength++;
        else {
          if (runLength > 0) units.push(runValue + 3, runLength);
          runValue = value;
          runLength = 1;
        }
      }
    }
    if (sets.length === 1) return null;
    units.push(runValue + 3, runLength);
    return { rows: rows.slice(0, n), sets, paths, signature: String.fromCharCode.apply(null, units) };
  }

  /**
   * How many sets from `setId` on, following each one's next, have a counted shape of the same key
   * as it (at most `cap`; 0 when it has none): a walk from it reads its region as far as that.
   */
  protected countedLevels(setId: number, cap: number): number {
    const known = this.countedRuns.get(setId);
    if (known !== undefined) return Math.min(known, cap);
    const key = this.countedShape(setId)?.key;
    if (key === undefined) return 0;
    const chain: number[] = [];
    let x = setId;
    let tail = 0;
    let ended = false;
    while (chain.length < cap) {
      const shape = this.countedShape(x);
      ended = shape === null || shape.key !== key;
      if (ended) break;
      const run = this.countedRuns.get(x);
      if (run !== undefined) {
        tail = run;
        ended = true;
        break;
      }
      chain.push(x);
      x = shape!.next;
    }
    // Kept only where the run's end was seen (a run cut at the cap would be kept short).
    if (ended) for (let i = chain.length - 1; i >= 0; i--) this.countedRuns.set(chain[i]!, chain.length - i + tail);
    return Math.min(chain.length + tail, cap);
  }

  /** Bytes a token can go on with from a set (continuing or committing), as 8 words. */
  protected firstBytes(setId: number): Uint32Array {
    let f = this.firstBytesOf.get(setId);
    if (f === undefined) {
      f = new Uint32Array(8);
      const row = this.rowOf(setId);
      for (let b = 0; b < 256; b++) if (row[b]! - 1 !== 0) f[b >>> 5]! |= 1 << (b & 31);
      this.firstBytesOf.set(setId, f);
    }
    return f;
  }

  /** A set that loops on many bytes (a string's contents, a name, a number): its walk is a big one. */
  protected isBody(setId: number): boolean {
    const loop = this.loopBytes(setId);
    let n = 0;
    for (let w = 0; w < 8; w++) for (let x = loop[w]!; x !== 0; x &= x - 1) n++;
    return n >= 10;
  }

  /**
   * Bytes on which a set steps to itself with one and the same outcome (the same commits, if
   * any), as 8 words: a subtree whose bytes are all such takes one step for all its tokens.
   */
  protected loopBytes(setId: number): Uint32Array {
    if (setId < this.loopKnown.length && this.loopKnown[setId] === 1) return this.loopWords.subarray(setId * 8, setId * 8 + 8);
    const l = new Uint32Array(8);
    let code0 = -1;
    let keys0: Int32Array | null = null;
    const row = this.rowOf(setId);
    for (let b = 0; b < 256; b++) {
      const code = row[b]! - 1;
      if ((code & ~COMMIT) - 1 !== setId) continue;
      const keys = (code & COMMIT) !== 0 ? this.commitKeysAt(setId, b) : EMPTY;
      if (code0 < 0) {
        code0 = code;
        keys0 = keys;
      } else if (code !== code0 || keys.length !== keys0!.length || keys.some((k, i) => k !== keys0![i])) continue;
      l[b >>> 5]! |= 1 << (b & 31);
    }
    if (setId >= this.loopKnown.length) {
      let n = this.loopKnown.length;
      while (n <= setId) n *= 2;
      this.loopKnown = grownTo(this.loopKnown, n);
      this.loopWords = grownTo(this.loopWords, n * 8);
      this.loopCodes = grownTo(this.loopCodes, n);
      this.loopsOnUtf8 = grownTo(this.loopsOnUtf8, n);
    }
    this.loopWords.set(l, setId * 8);
    this.loopCodes[setId] = code0;
    this.loopKnown[setId] = 1;
    this.loopsOnUtf8[setId] = (code0 & COMMIT) === 0 && this.loopsOnEveryMultibyteChar(setId) ? 1 : 0;
    return l;
  }

  /** Whether every valid multi-byte UTF-8 character takes the set back to itself without a commit. */
  private loopsOnEveryMultibyteChar(setId: number): boolean {
    return loopsOnEveryUtf8Char(setId, (x, b) => {
      const code = this.stepCode(x, b);
      return (code & COMMIT) !== 0 ? -1 : code - 1;
    });
  }

  /** The commit keys of a set's self-loop (see loopBytes); cached, walks ask once per loop subtree. */
  protected commitKeysOfLoop(setId: number): Int32Array {
    let keys = this.loopKeys.get(setId);
    if (keys === undefined) {
      const loop = this.loopBytes(setId);
      keys = EMPTY;
      for (let b = 0; b < 256; b++) {
        if (((loop[b >>> 5]! >>> (b & 31)) & 1) !== 0) {
          keys = this.commitKeysAt(setId, b);
          break;
        }
      }
      this.loopKeys.set(setId, keys);
    }
    return keys;
  }

  /** Whether every byte below trie node `p` steps set `cont` to itself alike (loopBytes): the subtree's tokens all end in `cont`. */
  protected loopsBelow(cont: number, p: number): boolean {
    if (cont >= this.loopKnown.length || this.loopKnown[cont] !== 1) {
      // A new set (walks into new parts of a rule network meet one every few bytes) mostly does
      // not loop at all: one byte below that leads elsewhere says so without its loop bytes.
      if ((this.stepCode(cont, this.trie.nodeByte[p + 1]!) & ~COMMIT) - 1 !== cont) return false;
      this.loopBytes(cont);
    }
    const { belowBytes, utf8Aligned } = this.trie;
    const loop = this.loopWords;
    const lw = cont * 8;
    for (let w = 0; w < 4; w++) if ((belowBytes[p * 8 + w]! & ~loop[lw + w]!) !== 0) return false;
    for (let w = 4; w < 8; w++) {
      // Non-ASCII below: fine when whole characters loop and no token ends inside one.
      if ((belowBytes[p * 8 + w]! & ~loop[lw + w]!) !== 0) return this.loopsOnUtf8[cont] === 1 && utf8Aligned[p] === 1;
    }
    return true;
  }
}
