import { RegexSyntaxError, RegexTooComplexError } from "./errors.js";
import type { ByteNfa } from "./nfa.js";
import { Assertion } from "./parser.js";
import { regexClock } from "./clock.js";
import { finishDfa } from "./dfa/finish.js";
import { dfaArena } from "./dfa/scratch.js";
import type { DfaLimits, MultiByteDfa } from "./dfa/types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See dfa/scratch.ts. */
const arena = dfaArena;

// Thread modes: what a pending end assertion still demands of the remaining input.
const MODE_FREE = 0;
const MODE_EOL = 1; // next byte is "\n" or the text ends
const MODE_END_OR_NL = 2; // the rest is "" or "\n"
const MODE_END = 3; // the rest is ""
// Modes 4 + 2j / 5 + 2j: the next byte must be in / must not be in (or the text ends) assertion set j.
const MODE_LOOKAHEAD_BASE = 4;
const DROP = -1;


/**
 * Subset construction over byte classes, then dead-state pruning, Hopcroft minimization,
 * BFS renumbering and merging of classes whose columns agree.
 */
export function determinize(nfa: ByteNfa, start: number, numPatterns: number, limits: DfaLimits): MultiByteDfa {
  const nStates = nfa.size;
  arena.reset();

  // Alphabet compression: bytes that every NFA edge treats alike share a class. Refine the
  // partition of 0..255 by each distinct edge range.
  const rangeIds = new Map<number, number>();
  const rangeLo: number[] = [];
  const rangeHi: number[] = [];
  const internRange = (lo: number, hi: number): number => {
    const key = lo * 256 + hi;
    let id = rangeIds.get(key);
    if (id === undefined) {
      id = rangeLo.length;
      rangeIds.set(key, id);
      rangeLo.push(lo);
      rangeHi.push(hi);
    }
    return id;
  };
  let edgeCount = 0;
  let epsCount = 0;
  for (let q = 0; q < nStates; q++) {
    edgeCount += nfa.edges[q]!.length / 3;
    epsCount += nfa.eps[q]!.length;
  }
  clock.tick(nStates);
  const edgeOff = arena.take(nStates + 1);
  const edgeRange = arena.take(edgeCount);
  const edgeTo = arena.take(edgeCount);
  const epsOff = arena.take(nStates + 1);
  const epsTo = arena.take(epsCount);
  let e = 0;
  let ep = 0;
  for (let q = 0; q < nStates; q++) {
    const list = nfa.edges[q]!;
    // A range is interned through a Map: a few units each.
    clock.tick(list.length + nfa.eps[q]!.length + 1);
    for (let i = 0; i < list.length; i += 3) {
      edgeRange[e] = internRange(list[i]!, list[i + 1]!);
      edgeTo[e++] = list[i + 2]!;
    }
    edgeOff[q + 1] = e;
    for (const t of nfa.eps[q]!) epsTo[ep++] = t;
    epsOff[q + 1] = ep;
  }
  if (nfa.hasAssertions) internRange(0x0a, 0x0a);
  // Lookaround byte sets become class boundaries, so a class is entirely inside or outside each.
  for (const set of nfa.assertSets) for (let i = 0; i < set.length; i += 2) internRange(set[i]!, set[i + 1]!);
  const byteClassRaw = arena.take(256);
  let nextClassId = 1;
  const remap = new Map<number, number>();
  for (let r = 0; r < rangeLo.length; r++) {
    clock.tick(4 * (rangeHi[r]! - rangeLo[r]! + 1));
    remap.clear();
    for (let b = rangeLo[r]!; b <= rangeHi[r]!; b++) {
      const old = byteClassRaw[b]!;
      let renamed = remap.get(old);
      if (renamed === undefined) {
        renamed = nextClassId++;
        remap.set(old, renamed);
      }
      byteClassRaw[b] = renamed;
    }
  }
  const dense = arena.take(nextClassId, -1);
  const classOfByte = arena.take(256);
  let numIntervals = 0;
  for (let b = 0; b < 256; b++) {
    const raw = byteClassRaw[b]!;
    if (dense[raw] === -1) dense[raw] = numIntervals++;
    classOfByte[b] = dense[raw]!;
  }
  const k = numIntervals;
  const newlineClass = nfa.hasAssertions ? classOfByte[0x0a]! : -1;
  // Classes covered by each distinct range (CSR).
  const rangeClassOff = arena.take(rangeLo.length + 1);
  const rangeClassList: number[] = [];
  const seen = arena.take(k, -1);
  for (let r = 0; r < rangeLo.length; r++) {
    clock.tick(rangeHi[r]! - rangeLo[r]! + 1);
    for (let b = rangeLo[r]!; b <= rangeHi[r]!; b++) {
      const c = classOfByte[b]!;
      if (seen[c] !== r) {
        seen[c] = r;
        rangeClassList.push(c);
      }
    }
    rangeClassOff[r + 1] = rangeClassList.length;
  }
  const rangeClasses = arena.copy(rangeClassList);
  const assertion = arena.copy(nfa.assertion);
  const assertSet = arena.copy(nfa.assertSet);
  const inAssertSet = arena.take(nfa.assertSets.length * k); // [set * k + class]
  const newlineInSet = arena.take(nfa.assertSets.length);
  nfa.assertSets.forEach((set, j) => {
    for (let i = 0; i < set.length; i += 2) {
      for (let b = set[i]!; b <= set[i + 1]!; b++) inAssertSet[j * k + classOfByte[b]!] = 1;
      if (set[i]! <= 0x0a && 0x0a <= set[i + 1]!) newlineInSet[j] = 1;
    }
  });
  const numModes = MODE_LOOKAHEAD_BASE + 2 * nfa.assertSets.length;
  if (nStates * numModes > 1 << 25) {
    throw new RegexTooComplexError("pattern too complex: too many distinct lookaround sets for its size", "nfaStates");
  }
  const refuseCombination = (q: number): never => {
    throw new RegexSyntaxError(
      "a lookahead combined with another lookahead or end assertion at the same place is not supported",
      Math.max(0, nfa.assertPosition[q]!),
      "lookahead combination",
    );
  };
  /** The mode after crossing end/lookahead assertion `a` (state q) in `mode`, or DROP. */
  const modeAfter = (mode: number, a: number, q: number): number => {
    if (a === Assertion.EndOfLine || a === Assertion.EndOrFinalNewline || a === Assertion.EndOfText) {
      const demanded = a === Assertion.EndOfLine ? MODE_EOL : a === Assertion.EndOrFinalNewline ? MODE_END_OR_NL : MODE_END;
      if (mode <= MODE_END) return Math.max(mode, demanded); // ordered by strictness
      const j = (mode - MODE_LOOKAHEAD_BASE) >> 1;
      const positive = ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
      if (positive) {
        if (!newlineInSet[j] || demanded === MODE_END) return DROP;
        return refuseCombination(q);
      }
      return demanded === MODE_END || newlineInSet[j] ? MODE_END : demanded;
    }
    const j = assertSet[q]!;
    const positive = a === Assertion.FollowedBy;
    const own = MODE_LOOKAHEAD_BASE + 2 * j + (positive ? 0 : 1);
    if (mode === MODE_FREE || mode === own) return own;
    if (mode === MODE_END) return positive ? DROP : MODE_END;
    if (mode === MODE_EOL || mode === MODE_END_OR_NL) {
      if (!positive) return newlineInSet[j] ? MODE_END : mode;
      if (!newlineInSet[j]) return DROP;
    }
    return refuseCombination(q);
  };
  const assertTarget = arena.copy(nfa.assertTarget);
  const acceptOf = arena.copy(nfa.accept);
  const important = arena.take(nStates);
  for (let q = 0; q < nStates; q++) if (edgeOff[q + 1]! > edgeOff[q]! || acceptOf[q]! >= 0) important[q] = 1;

  // Epsilon closure of thread ids (nfaState * numModes + mode) into closureOut, sorted.
  const visitStamp = arena.take(nStates * numModes);
  let stamp = 0;
  const stack = arena.take(nStates * numModes); // each thread is pushed at most once per closure
  let closureOut = arena.take(64);
  // prevClass: class of the byte just consumed, -1 at the start of the text.
  const closure = (seeds: Int32Array, from: number, to: number, prevClass: number): number => {
    const atStart = prevClass < 0;
    const atLineStart = atStart || prevClass === newlineClass;
    stamp++;
    let sp = 0;
    let n = 0;
    for (let i = from; i < to; i++) {
      const t = seeds[i]!;
      if (visitStamp[t] !== stamp) {
        visitStamp[t] = stamp;
        stack[sp++] = t;
      }
    }
    while (sp > 0) {
      const thread = stack[--sp]!;
      const q = (thread / numModes) | 0;
      const mode = thread - q * numModes;
      if (important[q] && (mode !== MODE_END || acceptOf[q]! >= 0)) {
        if (n === closureOut.length) {
          const grown = arena.take(closureOut.length * 2);
          grown.set(closureOut);
          closureOut = grown;
        }
        closureOut[n++] = thread;
      }
      for (let i = epsOff[q]!; i < epsOff[q + 1]!; i++) {
        const t = epsTo[i]! * numModes + mode;
        if (visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
      const a = assertion[q]!;
      if (a !== 0) {
        let t = -1;
        if (a === Assertion.StartOfText) {
          if (atStart) t = assertTarget[q]! * numModes + mode;
        } else if (a === Assertion.StartOfLine) {
          if (atLineStart) t = assertTarget[q]! * numModes + mode;
        } else if (a === Assertion.PrecededBy || a === Assertion.NotPrecededBy) {
          const inside = !atStart && inAssertSet[assertSet[q]! * k + prevClass] === 1;
          if (inside === (a === Assertion.PrecededBy)) t = assertTarget[q]! * numModes + mode;
        } else {
          const next = modeAfter(mode, a, q);
          if (next !== DROP) t = assertTarget[q]! * numModes + next;
        }
        if (t >= 0 && visitStamp[t] !== stamp) {
          visitStamp[t] = stamp;
          stack[sp++] = t;
        }
      }
    }
    closureOut.subarray(0, n).sort();
    clock.tick(n + to - from);
    return n;
  };

  // DFA states: sorted thread lists in a pool, found through an open-addressing hash table.
  let pool = arena.take(1024);
  let poolUsed = 0;
  let stateOff = arena.take(65);
  let numRaw = 0;
  let table = arena.take(256, -1);
  let trans = arena.take(64 * k, -1);
  const hashThreads = (src: Int32Array, from: number, to: number): number => {
    let h = 0x811c9dc5;
    for (let i = from; i < to; i++) h = Math.imul(h ^ src[i]!, 0x01000193);
    return h >>> 0;
  };
  const sameThreads = (id: number, n: number): boolean => {
    const off = stateOff[id]!;
    if (stateOff[id + 1]! - off !== n) return false;
    for (let i = 0; i < n; i++) if (pool[off + i] !== closureOut[i]) return false;
    return true;
  };
  const insertInTable = (id: number, h: number): void => {
    const mask = table.length - 1;
    let slot = h & mask;
    while (table[slot] !== -1) slot = (slot + 1) & mask;
    table[slot] = id;
  };
  /** Looks up or adds the state whose threads are closureOut[0..n). */
  const internState = (n: number): number => {
    const h = hashThreads(closureOut, 0, n);
    const mask = table.length - 1;
    let slot = h & mask;
    for (;;) {
      const id = table[slot]!;
      if (id === -1) break;
      if (sameThreads(id, n)) return id;
      slot = (slot + 1) & mask;
    }
    const id = numRaw;
    if (id >= limits.maxDfaStates) {
      throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${limits.maxDfaStates} states`, "dfaStates");
    }
    numRaw++;
    if (poolUsed + n > pool.length) {
      const grown = arena.take(Math.max(pool.length * 2, poolUsed + n));
      grown.set(pool);
      pool = grown;
    }
    pool.set(closureOut.subarray(0, n), poolUsed);
    poolUsed += n;
    if (numRaw + 1 > stateOff.length) {
      const grown = arena.take(stateOff.length * 2);
      grown.set(stateOff);
      stateOff = grown;
    }
    stateOff[numRaw] = poolUsed;
    if (numRaw * k > trans.length) {
      const grown = arena.take(trans.length * 2, -1);
      grown.set(trans);
      trans = grown;
    }
    if (numRaw * 2 > table.length) {
      table = arena.take(table.length * 2, -1);
      for (let other = 0; other < numRaw - 1; other++) {
        insertInTable(other, hashThreads(pool, stateOff[other]!, stateOff[other + 1]!));
      }
    }
    insertInTable(id, h);
    return id;
  };

  const seed = arena.take(1);
  seed[0] = start * numModes;
  internState(closure(seed, 0, 1, -1));
  const classCount = arena.take(k + 1);
  let moves = arena.take(256); // seeds grouped by class
  for (let s = 0; s < numRaw; s++) {
    // Pass 1 counts seeds per class, pass 2 places them (counting sort, no per-class arrays).
    classCount.fill(0);
    for (let pass = 0; pass < 2; pass++) {
      for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
        const thread = pool[i]!;
        const q = (thread / numModes) | 0;
        const mode = thread - q * numModes;
        if (mode === MODE_END) continue;
        for (let j = edgeOff[q]!; j < edgeOff[q + 1]!; j++) {
          const r = edgeRange[j]!;
          const target = edgeTo[j]! * numModes;
          for (let x = rangeClassOff[r]!; x < rangeClassOff[r + 1]!; x++) {
            const c = rangeClasses[x]!;
            let t = target;
            if (mode >= MODE_LOOKAHEAD_BASE) {
              const la = mode - MODE_LOOKAHEAD_BASE;
              const inside = inAssertSet[(la >> 1) * k + c] === 1;
              if (inside !== ((la & 1) === 0)) continue;
            } else if (mode !== MODE_FREE) {
              if (c !== newlineClass) continue;
              t = target + (mode === MODE_EOL ? MODE_FREE : MODE_END);
            }
            if (pass === 0) classCount[c + 1]!++;
            else moves[classCount[c]!++] = t;
          }
        }
      }
      if (pass === 0) {
        for (let c = 0; c < k; c++) classCount[c + 1]! += classCount[c]!;
        if (classCount[k]! > moves.length) moves = arena.take(classCount[k]! * 2);
      }
    }
    // After pass 2, classCount[c] is the end of class c's seeds (and the start of c + 1's).
    clock.tick(k + 2 * (stateOff[s + 1]! - stateOff[s]!) + classCount[k]!);
    let from = 0;
    for (let c = 0; c < k; c++) {
      const to = classCount[c]!;
      if (to > from) {
        const n = closure(moves, from, to, c);
        if (n > 0) {
          const target = internState(n);
          trans[s * k + c] = target;
        }
      }
      from = to;
    }
  }

  const rawCount = numRaw;
  const acceptWords = Math.max(1, (numPatterns + 31) >>> 5);
  const rawMask = arena.take(rawCount * acceptWords);
  const rawAccepting = arena.take(rawCount);
  for (let s = 0; s < rawCount; s++) {
    clock.tick(stateOff[s + 1]! - stateOff[s]! + 1);
    for (let i = stateOff[s]!; i < stateOff[s + 1]!; i++) {
      const thread = pool[i]!;
      const q = (thread / numModes) | 0;
      const mode = thread - q * numModes;
      const p = acceptOf[q]!;
      // A pending positive lookahead needs one more character, so it cannot accept at the end.
      const needsMore = mode >= MODE_LOOKAHEAD_BASE && ((mode - MODE_LOOKAHEAD_BASE) & 1) === 0;
      if (p >= 0 && !needsMore) {
        rawMask[s * acceptWords + (p >>> 5)]! |= 1 << (p & 31);
        rawAccepting[s] = 1;
      }
    }
  }
  return finishDfa(rawCount, k, trans, rawMask, rawAccepting, acceptWords, numPatterns, classOfByte);
}
