// The product construction: the intersection of two byte DFAs, or the strings of one the other
// rejects, explored pair by pair from the two starts over the common refinement of their byte
// classes, then finished as determinize's DFAs are (finish.ts: live states only, minimal, BFS
// numbering, merged classes, exact distances), so the result keeps the ByteDfa contract. The raw
// product is kept as transition lists only: a product of two JSON Schema DFAs has a few live
// transitions per pair among ninety classes, and a pairs × classes table of them was most of the
// memory a big subtraction wrote (its pages new each time, 6–8× the cost of writing them).
// Operands that spell calls of a rule are product-calls.ts's where some pair meets a call.

import { IntMap, RULE_CALL_LEAD } from "../../support/index.js";
import { regexClock } from "../clock.js";
import { RegexTooComplexError } from "../errors.js";
import { EdgeLists } from "./edge-lists.js";
import { finishDfa, isCanonical, singleDfa } from "./finish.js";
import { productWithCalls, type ProductCalls } from "./product-calls.js";
import { dfaArena } from "./scratch.js";
import type { TransitionLists } from "./distances.js";
import type { ByteDfa, DfaLimits } from "./types.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;
/** See scratch.ts. */
const arena = dfaArena;

/** "intersect": in a and in b. "subtract": in a and not in b. */
export type ProductMode = "intersect" | "subtract";

/**
 * The product of `a` and `b` under `mode`; an empty language is a valid result (isEmptyLanguage).
 * With `calls`, the operands' calls of that rule are read as calls (product-calls.ts).
 */
export function productDfa(a: ByteDfa, b: ByteDfa, mode: ProductMode, limits: DfaLimits, calls?: ProductCalls): ByteDfa {
  arena.reset();
  const alphabet = commonClasses(a, b);
  const pairs = new PairExploration(a, b, mode === "subtract", alphabet, limits.maxDfaStates);
  // Calls read as bytes are exact until a pair both sides are alive at reads one (a call of one
  // side alone is the result's call): most set operations over free values never meet one (a
  // number's `not` over-approximated as any value), and this loop is the fastest.
  if (!pairs.explore(calls !== undefined)) return productWithCalls(a, b, mode === "subtract", limits, calls!);
  const { rawMask, rawAccepting, keepsA } = pairs.acceptance();
  // A product that takes nothing from a (a subtraction of what a never holds, a chain of them in
  // a `oneOf`) is a's language: where a is canonical (a product's, a minimal DFA's), finishing it
  // would give a's own tables back, so a is the result (no minimization, which is most of a big
  // product's time).
  if (keepsA && isCanonical(a)) return a;
  return singleDfa(finishDfa(pairs.count, alphabet.k, null, rawMask, rawAccepting, 1, 1, alphabet.classOfByte, null, pairs.edges()));
}

/** The byte classes neither DFA tells apart (numbered by first byte) and each one's class in a and in b. */
interface CommonClasses {
  readonly k: number;
  readonly classOfByte: Int32Array;
  readonly classA: Int32Array;
  readonly classB: Int32Array;
}

function commonClasses(a: ByteDfa, b: ByteDfa): CommonClasses {
  const idOfPair = arena.take(a.numClasses * b.numClasses, -1);
  const classOfByte = arena.take(256);
  const classA = arena.take(256);
  const classB = arena.take(256);
  let k = 0;
  for (let byte = 0; byte < 256; byte++) {
    const ca = a.byteClass[byte]!;
    const cb = b.byteClass[byte]!;
    const key = ca * b.numClasses + cb;
    if (idOfPair[key] === -1) {
      classA[k] = ca;
      classB[k] = cb;
      idOfPair[key] = k++;
    }
    classOfByte[byte] = idOfPair[key]!;
  }
  return { k, classOfByte, classA, classB };
}

/**
 * The raw product: pairs (state of a, state of b or -1 when b is dead) numbered as they are met
 * breadth-first from (a.start, b.start), found through an IntMap, with their transitions.
 */
class PairExploration {
  count = 0;
  /** The transitions as lists, by pair, then class (the order finishDfa reads a row in). */
  private readonly edgeLists = new EdgeLists();
  private pairA: Int32Array;
  private pairB: Int32Array;
  private readonly ids = new IntMap(256);
  /** Pair keys are stateA * width + (stateB + 1): b's dead state is 0. */
  private readonly width: number;

  constructor(
    private readonly a: ByteDfa,
    private readonly b: ByteDfa,
    private readonly subtract: boolean,
    private readonly alphabet: CommonClasses,
    private readonly maxStates: number,
  ) {
    this.width = b.numStates + 1;
    this.pairA = arena.take(64);
    this.pairB = arena.take(64);
  }

  /** The transitions as finishDfa's lists, sorted by pair and then class. */
  edges(): TransitionLists {
    return this.edgeLists.lists();
  }

  /** The id of pair (sa, sb), added when new. */
  private intern(sa: number, sb: number): number {
    const key = sa * this.width + sb + 1;
    const known = this.ids.get(key);
    if (known !== IntMap.MISSING) return known;
    const id = this.count;
    if (id >= this.maxStates) {
      throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${this.maxStates} states`, "dfaStates");
    }
    if (id === this.pairA.length) this.grow();
    this.pairA[id] = sa;
    this.pairB[id] = sb;
    this.ids.set(key, id);
    this.count++;
    return id;
  }

  private grow(): void {
    const size = this.pairA.length * 2;
    this.pairA = arena.widened(this.pairA, size);
    this.pairB = arena.widened(this.pairB, size);
  }

  /** An intersection left out a move of a (b dead there): a's language has a text b rejects. */
  private dropsA = false;

  /**
   * Every pair reachable from the starts, and its transitions per common class. With
   * `watchCalls`, false (the exploration abandoned) at a pair both sides are alive at where one
   * reads a call's lead (support/rule-calls.ts).
   */
  explore(watchCalls = false): boolean {
    const { a, b, subtract } = this;
    const { k, classA, classB } = this.alphabet;
    const ka = a.numClasses;
    const kb = b.numClasses;
    const leadA = watchCalls ? a.byteClass[RULE_CALL_LEAD]! : -1;
    const leadB = watchCalls ? b.byteClass[RULE_CALL_LEAD]! : -1;
    this.intern(a.start, b.start);
    for (let p = 0; p < this.count; p++) {
      clock.tick(k);
      const sa = this.pairA[p]!;
      const sb = this.pairB[p]!;
      if (watchCalls && sb >= 0 && (a.next[sa * ka + leadA]! >= 0 || b.next[sb * kb + leadB]! >= 0)) return false;
      // Neighbouring classes mostly lead to the same pair (a string's characters): its id is
      // looked up once for the run.
      let lastA = -1;
      let lastB = -2;
      let lastId = -1;
      for (let c = 0; c < k; c++) {
        const ta = a.next[sa * ka + classA[c]!]!;
        if (ta < 0) continue; // nothing of a's language lies past this byte
        const tb = sb < 0 ? -1 : b.next[sb * kb + classB[c]!]!;
        if (tb < 0 && !subtract) {
          this.dropsA = true;
          continue;
        }
        if (ta !== lastA || tb !== lastB) {
          lastId = this.intern(ta, tb);
          lastA = ta;
          lastB = tb;
        }
        this.edgeLists.add(p, c, lastId);
      }
    }
    return true;
  }

  /**
   * Per pair, whether it accepts (one pattern, so one mask word equal to the flag); and whether
   * the product's language is a's (`keepsA`): every text of a reaches a pair (a's states are all
   * live, so a move an intersection left out begins one that does not), and none ends where a
   * accepts and the pair does not.
   */
  acceptance(): { rawMask: Int32Array; rawAccepting: Int32Array; keepsA: boolean } {
    const { a, b, subtract, count } = this;
    const rawAccepting = arena.take(count);
    clock.tick(count);
    let keepsA = !this.dropsA;
    for (let p = 0; p < count; p++) {
      const sb = this.pairB[p]!;
      const inA = a.accepting[this.pairA[p]!] === 1;
      const inB = sb >= 0 && b.accepting[sb] === 1;
      const accepts = subtract ? inA && !inB : inA && inB;
      rawAccepting[p] = accepts ? 1 : 0;
      if (inA && !accepts) keepsA = false;
    }
    return { rawMask: rawAccepting, rawAccepting, keepsA };
  }
}
