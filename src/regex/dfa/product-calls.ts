// The product construction over operands that spell calls of one rule (support/rule-calls.ts): a
// JSON Schema's free values, whose containers' members are calls of the free-value rule, whose
// body calls it again. Where both sides call, the product reads the call as its three bytes (the
// result calls the rule there too); where one side calls and the other reads a text the rule's
// could begin with, that side's call is replaced by the rule's body, returning after it (a stack
// of such returns per side, as deep as the other side's text nests there). With h the expansion
// of every call, h(A op B) = h(A) op h(B) when each side reads each text one way only, which the
// product checks as it goes (ProductCallsClash where it cannot tell):
// - no state both calls and reads a byte a text of the rule may begin with (the call or the byte?);
// - after a call, nothing that a complete text of the rule could go on with (a call then ends
//   where its text ends, on both sides), and no other call;
// - no call of another rule (its texts are not known here).
// Then at every pair the next piece of a text is read the same way on both sides: a call on both,
// or bytes on both (a call expanded), and a text's two readings in A and B are one reading. A's
// calls may be expanded as fewer texts (ProductCalls.firstBody): the result then holds fewer of
// A's, and still none of B's.

import { forEachCall, IntMap, RULE_CALL_LEAD } from "../../support/index.js";
import { regexClock } from "../clock.js";
import { RegexTooComplexError } from "../errors.js";
import type { TransitionLists } from "./distances.js";
import { EdgeLists } from "./edge-lists.js";
import { finishDfa, singleDfa } from "./finish.js";
import { dfaArena } from "./scratch.js";
import type { ByteDfa, DfaLimits } from "./types.js";

const clock = regexClock;
const arena = dfaArena;

/**
 * The one rule product operands may call, and its body (a DFA that may call the rule again).
 * `firstBody`: what a's calls are read as where they are expanded (default `body`), texts of the
 * body only — a minuend's free values without repeated keys, which the over-approximation
 * subtracted from it assumes: the result then holds fewer of a's texts there, never more.
 */
export interface ProductCalls {
  readonly rule: number;
  readonly body: ByteDfa;
  readonly firstBody?: ByteDfa;
}

/** A product whose operands' calls could read one text in two ways (see product-calls.ts). */
export class ProductCallsClash extends Error {}

/** Calls expanded inside each other on one side, past which the product gives up (a clash). */
const MAX_EXPANDED = 256;
/** A move not computed yet (Sides.step). */
const UNKNOWN = -2;

/** The product of `a` and `b` (intersect, or subtract: a's texts b rejects), reading their calls. */
export function productWithCalls(a: ByteDfa, b: ByteDfa, subtract: boolean, limits: DfaLimits, calls: ProductCalls): ByteDfa {
  arena.reset();
  const body = calls.body;
  const firstBody = calls.firstBody ?? body;
  const alphabet = commonClasses([a, b, body, firstBody]);
  const [classA, classB, classF, classFirst] = alphabet.classes as [Int32Array, Int32Array, Int32Array, Int32Array];
  // The rule's bounds are its whole body's (firstBody's texts are some of them).
  const bounds = ruleBounds(body, classF, alphabet.k, alphabet.lead);
  for (const [dfa, classes] of [
    [a, classA],
    [b, classB],
    [body, classF],
    [firstBody, classFirst],
  ] as const)
    checkCalls(dfa, classes, alphabet, bounds.follow, calls.rule);
  const sideA = new Sides(a, classA, firstBody, classFirst, alphabet, bounds.first, calls.rule);
  const sideB = new Sides(b, classB, body, classF, alphabet, bounds.first, calls.rule);
  const pairs = new CallPairs(sideA, sideB, subtract, alphabet.k, limits.maxDfaStates);
  pairs.explore();
  const accepting = pairs.acceptance();
  return singleDfa(finishDfa(pairs.count, alphabet.k, null, accepting, accepting, 1, 1, alphabet.classOfByte, null, pairs.edges()));
}

interface CommonClasses {
  readonly k: number;
  readonly classOfByte: Int32Array;
  /** Per DFA, each common class's class in it. */
  readonly classes: readonly Int32Array[];
  /** The class of a call's lead byte. */
  readonly lead: number;
}

/** The byte classes none of the DFAs tells apart (numbered by first byte), and each one's class in each. */
function commonClasses(dfas: readonly ByteDfa[]): CommonClasses {
  const ids = new Map<number, number>();
  const classOfByte = arena.take(256);
  const classes = dfas.map(() => arena.take(256));
  for (let byte = 0; byte < 256; byte++) {
    // The classes as digits in mixed radix (four DFAs: under 2^32, exact in a double).
    let key = 0;
    for (const dfa of dfas) key = key * dfa.numClasses + dfa.byteClass[byte]!;
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size;
      ids.set(key, id);
      for (let d = 0; d < dfas.length; d++) classes[d]![id] = dfas[d]!.byteClass[byte]!;
    }
    classOfByte[byte] = id;
  }
  return { k: ids.size, classOfByte, classes, lead: classOfByte[RULE_CALL_LEAD]! };
}

/**
 * Per class, whether a text of the rule may begin with it (`first`) and whether one of its
 * complete texts may go on with it (`follow`); a call there, or an empty text, counts as every class.
 */
function ruleBounds(body: ByteDfa, classF: Int32Array, k: number, lead: number): { first: Uint8Array; follow: Uint8Array } {
  const first = new Uint8Array(k);
  const follow = new Uint8Array(k);
  const readAt = (q: number, into: Uint8Array): void => {
    for (let c = 0; c < k; c++) {
      if (body.next[q * body.numClasses + classF[c]!]! < 0) continue;
      if (c === lead) {
        into.fill(1);
        return;
      }
      into[c] = 1;
    }
  };
  if (body.accepting[body.start] === 1) first.fill(1);
  else readAt(body.start, first);
  for (let q = 0; q < body.numStates; q++) if (body.accepting[q] === 1) readAt(q, follow);
  return { first, follow };
}

/** The state after `dfa` at `q` spells a call of `rule`, or -1. */
function afterCall(dfa: ByteDfa, q: number, rule: number): number {
  const { numClasses: k, byteClass, next } = dfa;
  const s1 = next[q * k + byteClass[RULE_CALL_LEAD]!]!;
  const s2 = s1 < 0 ? -1 : next[s1 * k + byteClass[rule >>> 8]!]!;
  return s2 < 0 ? -1 : next[s2 * k + byteClass[rule & 0xff]!]!;
}

/** Every call of `dfa` is of `rule`, and after it nothing a complete text of the rule could go on with. */
function checkCalls(dfa: ByteDfa, classes: Int32Array, alphabet: CommonClasses, follow: Uint8Array, rule: number): void {
  const { k, lead } = alphabet;
  const leadClass = dfa.byteClass[RULE_CALL_LEAD]!;
  const other = (callee: number): void => {
    if (callee !== rule) throw new ProductCallsClash();
  };
  for (let q = 0; q < dfa.numStates; q++) {
    if (dfa.next[q * dfa.numClasses + leadClass]! < 0) continue;
    forEachCall(dfa, q, 0x10000, other);
    const after = afterCall(dfa, q, rule);
    if (after < 0) throw new ProductCallsClash();
    const row = after * dfa.numClasses;
    for (let c = 0; c < k; c++) if (dfa.next[row + classes[c]!]! >= 0 && (c === lead || follow[c] === 1)) throw new ProductCallsClash();
  }
}

/**
 * One operand's states in the product: (which DFA: 0 the operand, 1 the rule's body; its state;
 * the state to return to once the body's text ends, -1 for none; whether the call at this state
 * is read as the body), interned. The operand's own states with nothing below and no call read as
 * the body (most of a product's: a minuend outside its free values) are ids 0..n-1, the state's
 * own number: their moves are read off the operand's table, with no lookup and no memo.
 */
class Sides {
  /** The ids below it are the operand's plain states (see above); the others' fields at id - plain. */
  private readonly plain: number;
  private readonly which: number[] = [];
  private readonly state: number[] = [];
  private readonly below: number[] = [];
  private readonly expanded: number[] = [];
  private readonly depth: number[] = [];
  private readonly ids = new IntMap(256);
  private readonly width: number;
  readonly k: number;
  private readonly lead: number;
  /** Per other side (id - plain) and class, step's answer (UNKNOWN: not asked yet): a side meets many of the other's. */
  private moves = new Int32Array(0);
  /** Per side, calls' and overlaps' answers (bit 1: known, bit 2: calls, bit 4: overlaps). */
  private facts: Uint8Array;

  constructor(
    private readonly own: ByteDfa,
    private readonly classOwn: Int32Array,
    private readonly body: ByteDfa,
    private readonly classBody: Int32Array,
    alphabet: CommonClasses,
    private readonly first: Uint8Array,
    private readonly rule: number,
  ) {
    this.plain = own.numStates;
    this.width = Math.max(own.numStates, body.numStates);
    this.k = alphabet.k;
    this.lead = alphabet.lead;
    this.facts = new Uint8Array(this.plain + 64);
  }

  /** The operand's start. */
  start(): number {
    return this.own.start;
  }

  private intern(which: number, state: number, below: number, expanded: number): number {
    if (which === 0 && below < 0 && expanded === 0) return state;
    const key = ((below + 1) * this.width + state) * 4 + which * 2 + expanded;
    const known = this.ids.get(key);
    if (known !== IntMap.MISSING) return known;
    const other = this.which.length;
    const id = this.plain + other;
    const depth = below < 0 ? 0 : this.depthOf(below) + 1;
    if (depth > MAX_EXPANDED) throw new ProductCallsClash();
    this.which.push(which);
    this.state.push(state);
    this.below.push(below);
    this.expanded.push(expanded);
    this.depth.push(depth);
    this.ids.set(key, id);
    if ((other + 1) * this.k > this.moves.length) {
      const moves = new Int32Array(Math.max(64 * this.k, this.moves.length * 2)).fill(UNKNOWN);
      moves.set(this.moves);
      this.moves = moves;
    }
    if (id >= this.facts.length) {
      const facts = new Uint8Array(this.plain + 2 * (other + 1) + 64);
      facts.set(this.facts);
      this.facts = facts;
    }
    return id;
  }

  private whichOf(id: number): number {
    return id < this.plain ? 0 : this.which[id - this.plain]!;
  }

  private stateOf(id: number): number {
    return id < this.plain ? id : this.state[id - this.plain]!;
  }

  private belowOf(id: number): number {
    return id < this.plain ? -1 : this.below[id - this.plain]!;
  }

  private depthOf(id: number): number {
    return id < this.plain ? 0 : this.depth[id - this.plain]!;
  }

  /** The side after class `c`, or -1. */
  step(id: number, c: number): number {
    if (id < this.plain) {
      // A plain state: the operand's own move (its target is plain too, its id the state).
      const own = this.own;
      const t = own.next[id * own.numClasses + this.classOwn[c]!]!;
      return t < 0 ? -1 : t;
    }
    const at = (id - this.plain) * this.k + c;
    const known = this.moves[at]!;
    if (known !== UNKNOWN) return known;
    const next = this.move(id, c);
    this.moves[at] = next;
    return next;
  }

  /** A side that is not plain: its move (step memoizes it). */
  private move(id: number, c: number): number {
    const i = id - this.plain;
    const w = this.which[i]!;
    const s = this.state[i]!;
    const below = this.below[i]!;
    const dfa = w === 0 ? this.own : this.body;
    if (this.expanded[i] === 1) {
      if (c === this.lead) return -1;
      const t = this.body.next[this.body.start * this.body.numClasses + this.classBody[c]!]!;
      if (t >= 0) return this.intern(1, t, this.intern(w, afterCall(dfa, s, this.rule), below, 0), 0);
    }
    const t = dfa.next[s * dfa.numClasses + (w === 0 ? this.classOwn : this.classBody)[c]!]!;
    if (t >= 0) return this.intern(w, t, below, 0);
    // The body's text ends here (checkCalls: what follows a call is nothing it could go on with).
    if (w === 1 && this.body.accepting[s] === 1) return this.step(below, c);
    return -1;
  }

  /** Whether a text ending here is the side's (every body entered has ended). */
  accepting(id: number): boolean {
    const s = this.stateOf(id);
    if (this.whichOf(id) === 0) return this.own.accepting[s] === 1;
    return this.body.accepting[s] === 1 && this.accepting(this.belowOf(id));
  }

  /** Whether the side reads a call here. */
  calls(id: number): boolean {
    return (this.known(id) & 2) !== 0;
  }

  /** Whether the side reads, other than as a call, a byte a text of the rule may begin with. */
  overlaps(id: number): boolean {
    return (this.known(id) & 4) !== 0;
  }

  private known(id: number): number {
    let facts = this.facts[id]!;
    if (facts === 0) {
      // Asked through step: the pair reads these moves next anyway (memoized).
      facts = 1 | (this.step(id, this.lead) >= 0 ? 2 : 0);
      for (let c = 0; c < this.k; c++) {
        if (c !== this.lead && this.first[c] === 1 && this.step(id, c) >= 0) {
          facts |= 4;
          break;
        }
      }
      this.facts[id] = facts;
    }
    return facts;
  }

  /** The side with the call it reads here (its own, or after the body's text ends) read as the body instead. */
  expand(id: number): number {
    const w = this.whichOf(id);
    const s = this.stateOf(id);
    const dfa = w === 0 ? this.own : this.body;
    if (afterCall(dfa, s, this.rule) >= 0) return this.intern(w, s, this.belowOf(id), 1);
    return this.intern(1, s, this.expand(this.belowOf(id)), 0);
  }
}

/** The raw product over two operands' sides, as PairExploration's (product.ts) over plain states. */
class CallPairs {
  count = 0;
  private readonly edgeLists = new EdgeLists();
  private readonly pairA: number[] = [];
  private readonly pairB: number[] = [];
  private readonly ids = new IntMap(256);

  constructor(
    private readonly a: Sides,
    private readonly b: Sides,
    private readonly subtract: boolean,
    private readonly k: number,
    private readonly maxStates: number,
  ) {}

  edges(): TransitionLists {
    return this.edgeLists.lists();
  }

  private intern(sa: number, sb: number): number {
    const key = sa * 0x8000000 + sb + 1;
    const known = this.ids.get(key);
    if (known !== IntMap.MISSING) return known;
    const id = this.count;
    if (id >= this.maxStates) {
      throw new RegexTooComplexError(`pattern too complex: its DFA needs more than ${this.maxStates} states`, "dfaStates");
    }
    this.pairA.push(sa);
    this.pairB.push(sb);
    this.ids.set(key, id);
    this.count++;
    return id;
  }

  explore(): void {
    const { a, b, k, subtract } = this;
    this.intern(a.start(), b.start());
    for (let p = 0; p < this.count; p++) {
      clock.tick(k);
      let sa = this.pairA[p]!;
      let sb = this.pairB[p]!;
      if (sb >= 0) {
        // A call on one side where the other reads a text of the rule: that call is read as its body.
        const callA = a.calls(sa);
        const callB = b.calls(sb);
        if (callA || callB) {
          const overA = a.overlaps(sa);
          const overB = b.overlaps(sb);
          if ((callA && overA) || (callB && overB)) throw new ProductCallsClash();
          if (callA && !callB && overB) sa = a.expand(sa);
          else if (callB && !callA && overA) sb = b.expand(sb);
        }
      }
      // Neighbouring classes mostly lead to the same pair (a string's characters): its id is
      // looked up once for the run.
      let lastA = -1;
      let lastB = -2;
      let lastId = -1;
      for (let c = 0; c < k; c++) {
        const ta = a.step(sa, c);
        if (ta < 0) continue;
        const tb = sb < 0 ? -1 : b.step(sb, c);
        if (tb < 0 && !subtract) continue;
        if (ta !== lastA || tb !== lastB) {
          lastId = this.intern(ta, tb);
          lastA = ta;
          lastB = tb;
        }
        this.edgeLists.add(p, c, lastId);
      }
    }
  }

  /** Per pair, whether it accepts (a mask word equal to the flag, as finishDfa reads it). */
  acceptance(): Int32Array {
    const accepting = arena.take(this.count);
    clock.tick(this.count);
    for (let p = 0; p < this.count; p++) {
      const sb = this.pairB[p]!;
      const inA = this.a.accepting(this.pairA[p]!);
      const inB = sb >= 0 && this.b.accepting(sb);
      accepting[p] = (this.subtract ? inA && !inB : inA && inB) ? 1 : 0;
    }
    return accepting;
  }
}
