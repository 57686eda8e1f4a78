// A rule network's byte-level recognizer: rules are byte DFAs whose paths may spell calls of
// rules (support/rule-calls.ts), the pushdown form the schema stage gives a JSON Schema whose
// values nest without bound (recursive `$ref`s, free values at any depth). A state is a set of
// stacks; a stack is a persistent list of frames (a rule's DFA state), the top frame the position
// in the rule being read, the frames below the states each caller returns to.
//
// States are closed under the moves that read nothing: a frame whose DFA state may call rule c
// pushes c's start (over its own state after the call), and a frame that accepts may pop. Rules
// read at least one byte before any call (JSON values open with a byte), so the closure is finite:
// a network where a rule can call without reading first is refused when it is made.
//
// Distances are exact: the fewest bytes of each rule (a fixpoint over the rules, calls weighing
// their callee's fewest) and, per DFA state, the fewest to its rule's end; a stack needs the sum
// over its frames. So the lower bound the token layer plans with is the exact shortest completion,
// and `completingBytes` spells one.

import { forEachCall, Int32Arena, IntMap, RULE_CALL_LEAD, TableSlab } from "../../support/index.js";
import type { ByteDfa } from "../../regex/index.js";
import { GrammarError } from "../errors.js";
import { LEXER_COMMITS } from "./grammar-automaton.js";
import { INT_MAP_FIRST_BYTES, IntListIds, MEMO_CAPACITY, walkText } from "./tables.js";

/** Stacks one state's closure may hold before the network is taken as unbounded (left recursion). */
const MAX_CLOSURE_STACKS = 4096;

const SLAB_BYTES = 3 * INT_MAP_FIRST_BYTES;
/**
 * computeDistances' temporaries (reversed edges, queues, flags): a dozen arrays per automaton
 * were a tenth of a small schema's network setup in allocation alone. Reset at each use.
 */
const distanceArena = new Int32Arena(1 << 18);

/** Rule DFAs; rule 0 is the sentence. */
export interface RuleNetwork {
  readonly rules: readonly ByteDfa[];
  /**
   * The tables an automaton of these rules made elsewhere (the compile worker's, for its probe):
   * taken as they are when their sizes fit the rules, instead of being computed again on the
   * serving thread.
   */
  readonly tables?: RuleNetworkTables;
}

/** What an automaton computes once per network: where calls are spelled, what they call and return to, the distances. */
export interface RuleNetworkTables {
  readonly inCall: Uint8Array;
  readonly callFirst: Int32Array;
  readonly callee: Int32Array;
  readonly callReturn: Int32Array;
  readonly dist: Float64Array;
  readonly minLength: Float64Array;
}

/** Whether `t` has the sizes of the tables of a network of `rules` holding `total` DFA states. */
function tablesFit(t: RuleNetworkTables, rules: readonly ByteDfa[], total: number): boolean {
  const calls = t.callFirst.length === total + 1 ? t.callFirst[total]! : -1;
  return (
    t.inCall.length === total &&
    t.dist.length === total &&
    t.minLength.length === rules.length &&
    calls >= 0 &&
    t.callee.length === calls &&
    t.callReturn.length === calls
  );
}

export class RuleNetworkAutomaton {
  /**
   * The start state. Interned as the automaton is made (a rule calling itself before it reads is
   * found then), but for ruleNetworkAutomaton's plain automaton, made only for its tables where a
   * lexer-level one is returned instead: it never interns anything.
   */
  get start(): number {
    if (this.startSet < 0) {
      const root = this.internStack(-1, this.offset[0]! + this.rules[0]!.start);
      this.startSet = this.internSet(this.closure([root]));
    }
    return this.startSet;
  }
  private startSet = -1;
  protected readonly rules: readonly ByteDfa[];
  /** Global DFA state g = offset[r] + q. */
  protected readonly offset: Int32Array;
  protected readonly ruleOf: Int32Array;
  /** States inside a call's spelling (after its lead or its first byte): never reached by text. */
  protected readonly inCall: Uint8Array;
  /** Per global state, its calls: callFirst[g] .. callFirst[g + 1] index callee / callReturn. */
  protected readonly callFirst: Int32Array;
  protected readonly callee: Int32Array;
  protected readonly callReturn: Int32Array;
  /** Fewest bytes from a global state to its rule's end (Infinity: none), and of each rule. */
  protected readonly dist: Float64Array;
  protected readonly minLength: Float64Array;
  protected readonly tables = new TableSlab(SLAB_BYTES);
  // Interned stacks: top frame (global state), the stack below (-1: none), fewest bytes to finish.
  protected readonly stackTop: number[] = [];
  protected readonly stackBelow: number[] = [];
  protected readonly stackCost: number[] = [];
  private readonly stackIds = new IntMap(MEMO_CAPACITY, this.tables);
  // Interned states: sorted stack ids, closed under pushes and pops.
  private readonly setIds = new IntListIds();
  protected readonly sets = this.setIds.lists;
  private readonly singleSetIds = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly stepMemo = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly scratch: number[] = [];
  /** Per global state, the first move of a fewest-bytes spelling and where it leads (spellInto; made on first need). */
  private spellMove: Int32Array | null = null;
  private spellNext: Int32Array | null = null;
  /** Per rule, one text byte per byte class (classRepresentatives). */
  protected readonly textBytes: readonly number[][];

  /**
   * `tablesOf`: an automaton of the same network whose tables (calls, distances: read only once
   * made) this one shares instead of computing them again; its memos are its own. `internStart`
   * false: the start is left for its first reader (see start).
   */
  constructor(network: RuleNetwork, tablesOf?: RuleNetworkAutomaton, internStart = true) {
    const rules = network.rules;
    if (rules.length === 0) throw new GrammarError("a rule network needs a rule");
    this.rules = rules;
    if (tablesOf?.sameNetwork(network)) {
      ({ offset: this.offset, ruleOf: this.ruleOf, inCall: this.inCall, textBytes: this.textBytes } = tablesOf);
      ({ callFirst: this.callFirst, callee: this.callee, callReturn: this.callReturn } = tablesOf);
      ({ minLength: this.minLength, dist: this.dist } = tablesOf);
    } else {
      this.offset = new Int32Array(rules.length + 1);
      for (let r = 0; r < rules.length; r++) this.offset[r + 1] = this.offset[r]! + rules[r]!.numStates;
      const total = this.offset[rules.length]!;
      this.ruleOf = new Int32Array(total);
      for (let r = 0; r < rules.length; r++) this.ruleOf.fill(r, this.offset[r]!, this.offset[r + 1]!);
      this.textBytes = rules.map(classRepresentatives);
      const given = network.tables;
      if (given !== undefined && tablesFit(given, rules, total)) {
        ({ inCall: this.inCall, callFirst: this.callFirst, callee: this.callee, callReturn: this.callReturn } = given);
        ({ minLength: this.minLength, dist: this.dist } = given);
      } else {
        this.inCall = new Uint8Array(total);
        const calls = this.readCalls();
        this.callFirst = calls.first;
        this.callee = calls.callee;
        this.callReturn = calls.ret;
        this.minLength = new Float64Array(rules.length).fill(Infinity);
        this.dist = new Float64Array(total).fill(Infinity);
        this.computeDistances();
      }
    }
    if (this.minLength[0] === Infinity) throw new GrammarError("the rule network accepts no sentence");
    if (internStart) this.start; // interned now (see start)
  }

  /** The calls each DFA state spells: lead byte, then the rule's two bytes, then the return state. */
  private readCalls(): { first: Int32Array; callee: Int32Array; ret: Int32Array } {
    const first = new Int32Array(this.inCall.length + 1);
    const callee: number[] = [];
    const ret: number[] = [];
    // One visitor for every state (a closure per state was most of this loop's garbage).
    let base = 0;
    const visit = (rule: number, after: number, afterLead: number, afterFirst: number): void => {
      this.inCall[base + afterLead] = 1;
      this.inCall[base + afterFirst] = 1;
      callee.push(rule);
      ret.push(base + after);
    };
    for (let r = 0; r < this.rules.length; r++) {
      const dfa = this.rules[r]!;
      base = this.offset[r]!;
      for (let q = 0; q < dfa.numStates; q++) {
        first[base + q] = callee.length;
        forEachCall(dfa, q, this.rules.length, visit);
      }
    }
    first[this.inCall.length] = callee.length;
    return { first, callee: Int32Array.from(callee), ret: Int32Array.from(ret) };
  }

  /** The global state after a text byte, or -1 (a call's spelling is no text). */
  protected textStep(g: number, byte: number): number {
    if (byte === RULE_CALL_LEAD) return -1;
    const r = this.ruleOf[g]!;
    const dfa = this.rules[r]!;
    const base = this.offset[r]!;
    const q = dfa.next[(g - base) * dfa.numClasses + dfa.byteClass[byte]!]!;
    if (q < 0 || this.inCall[base + q] === 1) return -1;
    return base + q;
  }

  /**
   * The fewest bytes of each rule and from each state to its rule's end, in one pass: Dijkstra
   * over the reversed edges of all rules at once (text bytes weigh 1), where a call from p
   * returning to g weighs its callee's fewest, known once the callee's start is settled — Knuth's
   * generalization to grammars: a call's weight is relaxed when the later of its return state and
   * its callee's start is settled (both values are final then, and their sum is no smaller than
   * either). Repeating a plain Dijkstra until the rules' fewest settled cost a round per level of
   * rule nesting.
   */
  private computeDistances(): void {
    const arena = distanceArena;
    arena.reset();
    const total = this.inCall.length;
    // Reversed text edges (each (q, t) once) and calls, as compact lists per target.
    // Straight off each rule's table, one column per text class (textStep, inlined: this loop
    // visits every state and class of the network, the most of a small schema's compile).
    let edgeFrom = arena.take(Math.max(16, total * 4));
    let edgeTo = arena.take(edgeFrom.length);
    let edges = 0;
    const inCall = this.inCall;
    const seenFrom = arena.take(total, -1);
    // A rule that calls nothing (a long string's, JsonSchemaOptions.stringRules) reads text only:
    // its DFA's own distances are its distances, and its edges are not needed (MaskBench's 6,390
    // networks: the same tables, made in 8% less time).
    const callFree = this.rules.map((_, r) => this.callFirst[this.offset[r]!] === this.callFirst[this.offset[r + 1]!]);
    for (let r = 0; r < this.rules.length; r++) {
      if (callFree[r]) continue;
      const dfa = this.rules[r]!;
      const base = this.offset[r]!;
      const next = dfa.next;
      const width = dfa.numClasses;
      // Every class is text but the call lead's when it holds no other byte: rows read in order.
      const skip = this.textBytes[r]!.length === width ? -1 : dfa.byteClass[RULE_CALL_LEAD]!;
      for (let q = 0; q < dfa.numStates; q++) {
        const from = base + q;
        if (inCall[from] === 1) continue;
        const row = q * width;
        // Neighbouring classes mostly lead to the same state (a string's characters): those
        // repeats are passed over before the random reads below.
        let last = -2;
        for (let c = 0; c < width; c++) {
          const target = next[row + c]!;
          if (target === last) continue;
          if (c === skip) {
            last = -2; // the call lead's target may still be text through the next class
            continue;
          }
          last = target;
          if (target < 0) continue;
          const t = base + target;
          if (inCall[t] === 1 || seenFrom[t] === from) continue;
          seenFrom[t] = from;
          if (edges === edgeFrom.length) {
            edgeFrom = arena.widened(edgeFrom, 2 * edges);
            edgeTo = arena.widened(edgeTo, 2 * edges);
          }
          edgeFrom[edges] = from;
          edgeTo[edges++] = t;
        }
      }
    }
    const into = arena.take(edges);
    const intoFirst = byTarget(arena, edgeTo, edges, total, edgeFrom, into);
    // Calls by the state they return to, and by their callee.
    const calls = this.callee.length;
    const callIndex = arena.take(calls);
    for (let i = 0; i < calls; i++) callIndex[i] = i;
    const callsInto = arena.take(calls);
    const callsIntoFirst = byTarget(arena, this.callReturn, calls, total, callIndex, callsInto);
    const callsOf = arena.take(calls);
    const callsOfFirst = byTarget(arena, this.callee, calls, this.rules.length, callIndex, callsOf);
    const callFrom = arena.take(calls);
    for (let g = 0; g < total; g++) for (let i = this.callFirst[g]!; i < this.callFirst[g + 1]!; i++) callFrom[i] = g;
    const ruleStartingAt = arena.take(total, -1);
    for (let r = 0; r < this.rules.length; r++) if (!callFree[r]) ruleStartingAt[this.offset[r]! + this.rules[r]!.start] = r;
    const settled = arena.take(total);
    const dist = this.dist;
    dist.fill(Infinity);
    for (let r = 0; r < this.rules.length; r++) {
      if (!callFree[r]) continue;
      const { numStates, minBytesToAccept, start } = this.rules[r]!;
      const base = this.offset[r]!;
      for (let q = 0; q < numStates; q++) dist[base + q] = minBytesToAccept[q]! >= 0 ? minBytesToAccept[q]! : Infinity;
      this.minLength[r] = dist[base + start]!;
    }
    // Dijkstra with two queues: a text edge weighs 1, so its relaxations enter a FIFO in order
    // of distance (each pop is no nearer than the last); only calls, whose weights vary, go
    // through the heap, and the next state is the nearer of the two heads. Pops come in order of
    // distance, so a later text relaxation never improves one made earlier: a state enters the
    // FIFO once at most (an end state at 0, any other by its first text relaxation).
    const fifoState = arena.take(total);
    const fifoDist = new Float64Array(total);
    let head = 0;
    let tail = 0;
    const heap = new MinHeap();
    for (let r = 0; r < this.rules.length; r++) {
      if (callFree[r]) continue;
      const dfa = this.rules[r]!;
      for (let q = 0; q < dfa.numStates; q++) {
        const g = this.offset[r]! + q;
        if (dfa.accepting[q] === 1 && inCall[g] === 0) {
          dist[g] = 0;
          fifoState[tail] = g;
          fifoDist[tail++] = 0;
        }
      }
    }
    const relaxByCall = (p: number, d: number): void => {
      if (d < dist[p]!) {
        dist[p] = d;
        heap.push(p, d);
      }
    };
    while (head < tail || heap.size > 0) {
      let g: number;
      let d: number;
      if (heap.size > 0 && (head === tail || heap.topKey() < fifoDist[head]!)) {
        d = heap.topKey();
        g = heap.pop();
      } else {
        g = fifoState[head]!;
        d = fifoDist[head++]!;
      }
      if (settled[g] === 1 || d > dist[g]!) continue;
      settled[g] = 1;
      const further = d + 1;
      for (let e = intoFirst[g]!; e < intoFirst[g + 1]!; e++) {
        const p = into[e]!;
        if (further < dist[p]!) {
          dist[p] = further;
          fifoState[tail] = p;
          fifoDist[tail++] = further;
        }
      }
      // Calls returning here whose callee's fewest is known.
      for (let k = callsIntoFirst[g]!; k < callsIntoFirst[g + 1]!; k++) {
        const i = callsInto[k]!;
        const fewest = this.minLength[this.callee[i]!]!;
        if (fewest !== Infinity) relaxByCall(callFrom[i]!, d + fewest);
      }
      // A rule's start: its fewest is known, and the calls of it whose return state is settled weigh it now.
      const r = ruleStartingAt[g]!;
      if (r >= 0) {
        this.minLength[r] = d;
        for (let k = callsOfFirst[r]!; k < callsOfFirst[r + 1]!; k++) {
          const i = callsOf[k]!;
          const ret = this.callReturn[i]!;
          if (settled[ret] === 1) relaxByCall(callFrom[i]!, dist[ret]! + d);
        }
      }
    }
  }

  get numStates(): number {
    return this.sets.length;
  }

  /** An estimate of the heap bytes its memos hold (erring high), as GrammarAutomaton's. */
  retainedBytes(): number {
    let bytes = SLAB_BYTES + this.stackIds.byteLength + this.singleSetIds.byteLength + this.stepMemo.byteLength;
    bytes += this.stackTop.length * 40 + (this.spellMove === null ? 0 : this.spellMove.byteLength * 2);
    return bytes + this.sets.length * 200 + this.setIds.totalLength() * 8;
  }

  protected internStack(below: number, top: number): number {
    const key = (below + 1) * this.inCall.length + top;
    let id = this.stackIds.get(key);
    if (id === IntMap.MISSING) {
      id = this.stackTop.length;
      this.stackTop.push(top);
      this.stackBelow.push(below);
      this.stackCost.push(this.dist[top]! + (below < 0 ? 0 : this.stackCost[below]!));
      this.stackIds.set(key, id);
    }
    return id;
  }

  /**
   * `stacks` with every stack reachable from them by pushes and pops, dead ones (no way to finish)
   * left out. Consumes nothing; returns a scratch array.
   */
  private closure(stacks: readonly number[]): number[] {
    const out = this.scratch;
    out.length = 0;
    for (const s of stacks) if (this.stackCost[s] !== Infinity && !out.includes(s)) out.push(s);
    for (let i = 0; i < out.length; i++) {
      const s = out[i]!;
      const g = this.stackTop[s]!;
      const below = this.stackBelow[s]!;
      for (let c = this.callFirst[g]!; c < this.callFirst[g + 1]!; c++) {
        const rule = this.callee[c]!;
        if (this.minLength[rule] === Infinity) continue;
        const caller = this.internStack(below, this.callReturn[c]!);
        if (this.stackCost[caller] === Infinity) continue;
        const pushed = this.internStack(caller, this.offset[rule]! + this.rules[rule]!.start);
        if (!out.includes(pushed)) out.push(pushed);
      }
      if (below >= 0 && this.dist[g] === 0 && !out.includes(below)) out.push(below);
      if (out.length > MAX_CLOSURE_STACKS) throw new GrammarError("a rule calls itself before reading anything (left recursion)");
    }
    return out;
  }

  protected internSet(stacks: number[]): number {
    if (stacks.length === 0) return -1;
    if (stacks.length > 1) return this.setIds.idOf(stacks.sort((a, b) => a - b));
    // One stack (most of a walk's targets): found by it, with no list to sort.
    let id = this.singleSetIds.get(stacks[0]!);
    if (id === IntMap.MISSING) {
      id = this.setIds.append(Int32Array.of(stacks[0]!));
      this.singleSetIds.set(stacks[0]!, id);
    }
    return id;
  }

  /** Next state after `byte`, or -1. */
  step(state: number, byte: number): number {
    if (state < 0) return -1;
    const memoKey = state * 256 + byte;
    const hit = this.stepMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const set = this.sets[state]!;
    const moved: number[] = [];
    for (let i = 0; i < set.length; i++) {
      const s = set[i]!;
      const t = this.textStep(this.stackTop[s]!, byte);
      if (t >= 0 && this.dist[t] !== Infinity) moved.push(this.internStack(this.stackBelow[s]!, t));
    }
    const id = this.internSet(this.closure(moved));
    this.stepMemo.set(memoKey, id);
    return id;
  }

  /** Whether the text so far is a whole sentence. */
  isComplete(state: number): boolean {
    if (state < 0) return false;
    const set = this.sets[state]!;
    for (let i = 0; i < set.length; i++) if (this.stackBelow[set[i]!] === -1 && this.dist[this.stackTop[set[i]!]!] === 0) return true;
    return false;
  }

  /** The fewest bytes to a whole sentence (exact; Infinity for a dead state). */
  minBytesLowerBound(state: number): number {
    if (state < 0) return Infinity;
    const set = this.sets[state]!;
    let best = Infinity;
    for (let i = 0; i < set.length; i++) best = Math.min(best, this.stackCost[set[i]!]!);
    return best;
  }

  /** The fewest bytes to a whole sentence, or -1 for a dead state (exact: no search needed). */
  minBytesToComplete(state: number): number {
    const n = this.minBytesLowerBound(state);
    return n === Infinity ? -1 : n;
  }

  /** One shortest byte string that completes `state`, or null for a dead state. */
  completingBytes(state: number): Uint8Array | null {
    if (state < 0) return null;
    const set = this.sets[state]!;
    let best = -1;
    for (let i = 0; i < set.length; i++) if (best < 0 || this.stackCost[set[i]!]! < this.stackCost[best]!) best = set[i]!;
    if (best < 0 || this.stackCost[best] === Infinity) return null;
    const out = new Uint8Array(this.stackCost[best]!);
    let at = 0;
    for (let s = best; s >= 0; s = this.stackBelow[s]!) at = this.spellInto(this.stackTop[s]!, out, at);
    if (at !== out.length) throw new Error("rule network distances disagree with its edges");
    return out;
  }

  /**
   * Writes the fewest bytes from global state `from` to its rule's end into `out` at `at`,
   * calls spelled out; returns the end. Each state's first move along such a path is found once
   * (spellMove): a budget's bounds ask for the spelling of every target of a mask, and where a
   * document needs thousands of bytes to finish (an object of sixty required members), trying
   * every byte class at every byte of every spelling was most of a first mask's time.
   */
  private spellInto(from: number, out: Uint8Array, at: number): number {
    if (this.spellMove === null) {
      this.spellMove = new Int32Array(this.inCall.length).fill(-1);
      this.spellNext = new Int32Array(this.inCall.length);
    }
    const move = this.spellMove;
    const next = this.spellNext!;
    for (let g = from; this.dist[g] !== 0; ) {
      if (move[g] === -1) this.findSpellMove(g);
      const m = move[g]!;
      if (m < 256) {
        out[at++] = m;
        g = next[g]!;
      } else {
        const rule = this.callee[m - 256]!;
        at = this.spellInto(this.offset[rule]! + this.rules[rule]!.start, out, at);
        g = next[g]!;
      }
    }
    return at;
  }

  /** The first move of a fewest-bytes path from `g` to its rule's end: a byte (< 256) or 256 + a call's index. */
  private findSpellMove(g: number): void {
    const d = this.dist[g]!;
    for (const b of this.textBytes[this.ruleOf[g]!]!) {
      const t = this.textStep(g, b);
      if (t >= 0 && this.dist[t]! + 1 === d) {
        this.spellMove![g] = b;
        this.spellNext![g] = t;
        return;
      }
    }
    for (let c = this.callFirst[g]!; c < this.callFirst[g + 1]!; c++) {
      if (this.minLength[this.callee[c]!]! + this.dist[this.callReturn[c]!]! !== d) continue;
      this.spellMove![g] = 256 + c;
      this.spellNext![g] = this.callReturn[c]!;
      return;
    }
    throw new Error("rule network distances disagree with its edges");
  }

  /**
   * Per global state its one move — the index of its one productive call, -1 to pop (its rule
   * may end there; never in rule 0, which nothing calls), -2 none — or null when some state has
   * two moves, a call lands where its caller may move again without a byte, or a called rule may
   * move before its first byte (LexerLevelRuleNetwork's conditions).
   */
  oneMoveEach(): Int32Array | null {
    const total = this.inCall.length;
    const move = new Int32Array(total).fill(-2);
    const called = new Uint8Array(this.rules.length);
    for (let g = 0; g < total; g++) {
      if (this.dist[g] === Infinity) continue;
      let calls = 0;
      for (let c = this.callFirst[g]!; c < this.callFirst[g + 1]!; c++) {
        if (this.minLength[this.callee[c]!] === Infinity || this.dist[this.callReturn[c]!] === Infinity) continue;
        calls++;
        move[g] = c;
        called[this.callee[c]!] = 1;
      }
      const ends = this.dist[g] === 0 && this.ruleOf[g] !== 0;
      if (calls + (ends ? 1 : 0) > 1) return null;
      if (ends) move[g] = -1;
    }
    if (called[0] === 1) return null;
    for (let g = 0; g < total; g++) {
      const m = move[g]!;
      if (m < 0) continue;
      const ret = this.callReturn[m]!;
      // What a call returns to must wait for a byte (or be the document's end).
      if (move[ret] !== -2 || (this.dist[ret] === 0 && this.ruleOf[ret] !== 0)) return null;
      const start = this.offset[this.callee[m]!]! + this.rules[this.callee[m]!]!.start;
      if (move[start] !== -2 || this.dist[start] === 0) return null;
    }
    return move;
  }

  /** Whether the grammar matcher shares lexer-level walks over it (LexerLevelRuleNetwork): one move per state. */
  get lexerLevel(): boolean {
    return false;
  }

  /** Its tables, to hand to an automaton of the same rules on another thread (see RuleNetwork.tables). */
  get networkTables(): RuleNetworkTables {
    const { inCall, callFirst, callee, callReturn, dist, minLength } = this;
    return { inCall, callFirst, callee, callReturn, dist, minLength };
  }

  /** Whether `network` is this automaton's (the same rules). */
  sameNetwork(network: RuleNetwork): boolean {
    return this.rules === network.rules;
  }

  /** Feeds a whole string (UTF-8); -1 when rejected on the way. */
  walk(state: number, text: string): number {
    return walkText(this, state, text);
  }

  /** Deepest stack of a state (frames), for tests and limits. */
  depth(state: number): number {
    let deepest = 0;
    for (const s of this.sets[state] ?? []) {
      let n = 0;
      for (let t = s; t >= 0; t = this.stackBelow[t]!) n++;
      deepest = Math.max(deepest, n);
    }
    return deepest;
  }
}

/**
 * Counting sort of `values[0..n)` by `keys` (each in [0, buckets)) into `out`; returns the start
 * of each key's run (buckets + 1 entries), stable.
 */
function byTarget(arena: Int32Arena, keys: Int32Array, n: number, buckets: number, values: Int32Array, out: Int32Array): Int32Array {
  const first = arena.take(buckets + 1);
  for (let i = 0; i < n; i++) first[keys[i]! + 1]!++;
  for (let b = 0; b < buckets; b++) first[b + 1]! += first[b]!;
  const fill = arena.take(buckets);
  for (let b = 0; b < buckets; b++) fill[b] = first[b]!;
  for (let i = 0; i < n; i++) out[fill[keys[i]!]!++] = values[i]!;
  return first;
}

/** One byte per byte class of a DFA, printable ASCII first, never the call lead alone. */
export function classRepresentatives(dfa: ByteDfa): number[] {
  const seen = new Uint8Array(dfa.numClasses);
  const reps: number[] = [];
  for (let i = 0; i < 95 + 256; i++) {
    const b = i < 95 ? 0x20 + i : i - 95;
    if (b === RULE_CALL_LEAD) continue;
    const c = dfa.byteClass[b]!;
    if (seen[c] === 1) continue;
    seen[c] = 1;
    reps.push(b);
  }
  return reps;
}

/** A binary min-heap of (key, value) pairs with number keys. */
class MinHeap {
  private readonly keys: number[] = [];
  private readonly values: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  topKey(): number {
    return this.keys[0]!;
  }

  push(value: number, key: number): void {
    const keys = this.keys;
    const values = this.values;
    let i = keys.length;
    keys.push(key);
    values.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keys[parent]! <= key) break;
      keys[i] = keys[parent]!;
      values[i] = values[parent]!;
      i = parent;
    }
    keys[i] = key;
    values[i] = value;
  }

  pop(): number {
    const keys = this.keys;
    const values = this.values;
    const top = values[0]!;
    const lastKey = keys.pop()!;
    const lastValue = values.pop()!;
    const n = keys.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && keys[child + 1]! < keys[child]!) child++;
        if (keys[child]! >= lastKey) break;
        keys[i] = keys[child]!;
        values[i] = values[child]!;
        i = child;
      }
      keys[i] = lastKey;
      values[i] = lastValue;
    }
    return top;
  }
}

/**
 * A rule network whose moves are one per byte: the lexer-level view the grammar matcher shares
 * walks over (constraint/grammar/contracts.ts's LexerLevelAutomaton, by duck typing). A lexer
 * state is a rule's DFA state (global index); a hypothesis's stack is the stack below its top
 * frame, plus one (0: none). A byte "commits" where the DFA state it reaches may pop (its rule
 * ends there) or push (a call is spelled there), and the commit key is that state: in a network
 * made by the schema stage each such state has exactly one move, and the frame it leaves has
 * none left (a call is always followed by a byte of its caller, save the document's own end), so
 * a commit leads to one hypothesis, as a terminal does in an LR parser. `ruleNetworkAutomaton`
 * checks that and gives the plain automaton otherwise.
 */
class LexerLevelRuleNetwork extends RuleNetworkAutomaton {
  /** Per global state: its one move's call index (≥ 0), POP, or NO_MOVE. */
  private readonly move: Int32Array;

  get moves(): Int32Array {
    return this.move;
  }

  override get lexerLevel(): boolean {
    return true;
  }
  /**
   * A part used in several places is one shared rule, whose states are the same lexer states: the
   * matcher's search for lexer-state sets that behave alike found 41 in 28,845 walks of 800
   * MaskBench schemas, and its comparisons took a sixth of a cold mask phase's time.
   */
  readonly lexerSetsRarelyAlike = true;
  private readonly afterCommitMemo = new IntMap(MEMO_CAPACITY, this.tables);
  private readonly hypothesisPairs: (Int32Array | undefined)[] = [];
  private readonly labels: (Uint8Array | undefined)[] = [];
  private readonly reps: (Uint8Array | undefined)[] = [];
  private readonly startLexers: Int32Array;
  private readonly scratchStacks: number[] = [];
  /** lexerRow's codes per byte class. */
  private rowScratch = new Int32Array(0);

  constructor(network: RuleNetwork, move: Int32Array, tablesOf: RuleNetworkAutomaton) {
    super(network, tablesOf);
    this.move = move;
    const starts = new Set<number>();
    for (let r = 0; r < this.rules.length; r++) starts.add(this.offset[r]! + this.rules[r]!.start);
    for (const g of this.callReturn) starts.add(g);
    this.startLexers = Int32Array.from(starts);
  }

  override retainedBytes(): number {
    let pairs = 0;
    for (const p of this.hypothesisPairs) if (p !== undefined) pairs += 64 + p.byteLength;
    return super.retainedBytes() + this.afterCommitMemo.byteLength + pairs + this.move.byteLength;
  }

  hypotheses(state: number): Int32Array {
    let pairs = this.hypothesisPairs[state];
    if (pairs === undefined) {
      const set = this.sets[state]!;
      pairs = new Int32Array(set.length * 2);
      for (let i = 0; i < set.length; i++) {
        pairs[2 * i] = this.stackBelow[set[i]!]! + 1;
        pairs[2 * i + 1] = this.stackTop[set[i]!]!;
      }
      this.hypothesisPairs[state] = pairs;
    }
    return pairs;
  }

  lexerStep(lex: number, byte: number): number {
    return this.stepCodeTo(this.textStep(lex, byte));
  }

  /** lexerStep's code for a text step to global state `t` (-1: none). */
  private stepCodeTo(t: number): number {
    if (t < 0 || this.dist[t] === Infinity) return 0;
    return (t + 1) | (this.move[t]! !== NO_MOVE ? LEXER_COMMITS : 0);
  }

  /**
   * lexerStep of every byte into `out` (256 entries), in one pass over the state's DFA row: a
   * scan of all bytes (a closure's classes, a set's loop or first bytes) otherwise asks a rule's
   * every byte class on its own, and a document's rule has a hundred and more.
   */
  lexerRow(lex: number, out: Int32Array): void {
    const r = this.ruleOf[lex]!;
    const dfa = this.rules[r]!;
    const base = this.offset[r]!;
    const width = dfa.numClasses;
    const row = (lex - base) * width;
    const codes = this.rowScratch.length >= width ? this.rowScratch : (this.rowScratch = new Int32Array(width * 2));
    // textStep per class: a call's spelling is no text, nor is the call lead (below).
    for (let c = 0; c < width; c++) {
      const q = dfa.next[row + c]!;
      codes[c] = this.stepCodeTo(q < 0 || this.inCall[base + q] === 1 ? -1 : base + q);
    }
    const byteClass = dfa.byteClass;
    for (let b = 0; b < 256; b++) out[b] = codes[byteClass[b]!]!;
    out[RULE_CALL_LEAD] = 0;
  }

  lexerRestart(): number {
    return -1;
  }

  lexerIgnoredRun(): number {
    return 0;
  }

  /** Ending the text: a rule that may end here (0), or -1. */
  lexerEndKey(lex: number): number {
    return this.dist[lex] === 0 ? 0 : -1;
  }

  tokenStartLexers(): Int32Array {
    return this.startLexers;
  }

  lexerByteReps(lex: number): Uint8Array {
    const r = this.ruleOf[lex]!;
    let reps = this.reps[r];
    if (reps === undefined) {
      reps = Uint8Array.from(this.textBytes[r]!);
      this.reps[r] = reps;
    }
    return reps;
  }

  lexerByteLabels(lex: number): Uint8Array {
    const r = this.ruleOf[lex]!;
    let labels = this.labels[r];
    if (labels === undefined) this.labels[r] = labels = callLeadApart(this.rules[r]!);
    return labels;
  }

  lexerCommitKey(lex: number, byte: number): number {
    const t = this.textStep(lex, byte);
    return t < 0 || this.dist[t] === Infinity || this.move[t]! === NO_MOVE ? -1 : t;
  }

  afterCommit(stack: number, commitKey: number): number {
    const memoKey = stack * this.inCall.length + commitKey;
    const hit = this.afterCommitMemo.get(memoKey);
    if (hit !== IntMap.MISSING) return hit;
    const result = this.moved(stack - 1, commitKey);
    const state = result < 0 ? -1 : this.internSet([result]);
    this.afterCommitMemo.set(memoKey, state);
    return state;
  }

  /** The stack after `t`'s move on the stack `below` (−1: none), or −1 when refused. */
  private moved(below: number, t: number): number {
    const m = this.move[t]!;
    if (m === POP) return below;
    const rule = this.callee[m]!;
    const caller = this.internStack(below, this.callReturn[m]!);
    const pushed = this.internStack(caller, this.offset[rule]! + this.rules[rule]!.start);
    return this.stackCost[pushed] === Infinity ? -1 : pushed;
  }

  completeAfterCommit(stack: number, commitKey: number): boolean {
    // A call leaves its caller below the callee: only a return to the bottom frame can complete.
    if (this.move[commitKey]! !== POP) return false;
    const below = stack - 1;
    return below >= 0 && this.stackBelow[below] === -1 && this.dist[this.stackTop[below]!] === 0;
  }

  lowerBoundAfterCommit(stack: number, commitKey: number): number {
    const m = this.move[commitKey]!;
    const below = stack - 1;
    const under = below < 0 ? 0 : this.stackCost[below]!;
    if (m === POP) return below < 0 ? Infinity : under;
    return this.minLength[this.callee[m]!]! + this.dist[this.callReturn[m]!]! + under;
  }

  /** isComplete(withStack(stack, [lex])) without making the state: the lexer state is the whole stack's top. */
  completeAt(stack: number, lex: number): boolean {
    return stack === 0 && this.dist[lex] === 0;
  }

  withStack(stack: number, lexers: readonly number[]): number {
    const stacks = this.scratchStacks;
    stacks.length = 0;
    for (const l of lexers) {
      const s = this.internStack(stack - 1, l);
      if (this.stackCost[s] !== Infinity) stacks.push(s);
    }
    return this.internSet(stacks);
  }
}

const NO_MOVE = -2;
const POP = -1;

/**
 * The automaton of a rule network (`tablesOf`: one of the same network whose tables it shares,
 * e.g. the automaton it replaces when its memos are full): the lexer-level one where each state has at most one move
 * and what a move leaves has none (see LexerLevelRuleNetwork), the plain one otherwise.
 */
export function ruleNetworkAutomaton(network: RuleNetwork, tablesOf?: RuleNetworkAutomaton): RuleNetworkAutomaton {
  const plain = new RuleNetworkAutomaton(network, tablesOf, false);
  const move = tablesOf instanceof LexerLevelRuleNetwork && tablesOf.sameNetwork(network) ? tablesOf.moves : plain.oneMoveEach();
  if (move !== null) return new LexerLevelRuleNetwork(network, move, plain);
  plain.start; // as its constructor would have
  return plain;
}

/**
 * A rule's byte classes with the call lead in a class of its own (it is no text, whatever class
 * it shares), kept per DFA: every automaton of a network asks again, and the free-value rule's
 * DFA is one for every schema.
 */
function callLeadApart(dfa: ByteDfa): Uint8Array {
  let labels = leadApart.get(dfa);
  if (labels !== undefined) return labels;
  labels = new Uint8Array(dfa.byteClass);
  const used = new Uint8Array(256);
  for (let b = 0; b < 256; b++) used[labels[b]!] = 1;
  let free = 0;
  while (used[free] === 1) free++;
  labels[RULE_CALL_LEAD] = free;
  leadApart.set(dfa, labels);
  return labels;
}

const leadApart = new WeakMap<ByteDfa, Uint8Array>();
