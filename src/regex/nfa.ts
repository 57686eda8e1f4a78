import { grownTo } from "../support/index.js";
import { utf8Sequences, type CodeSet } from "./charset.js";
import { regexClock } from "./clock.js";
import { RegexTooComplexError } from "./errors.js";
import type { ByteDfa } from "./dfa/types.js";
import type { GraphOfNodes, RegexNode } from "./parser.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;

/** A DFA embedded in an NFA: its state s is NFA state base + s; its accepting states lead to exit by ε. */
export interface EmbeddedDfa {
  readonly dfa: ByteDfa;
  readonly base: number;
  readonly exit: number;
}

/** A growable Int32 log: `n` ints used of `a`, doubled when full. */
class IntLog {
  a: Int32Array;
  n = 0;
  constructor(capacity: number) {
    this.a = new Int32Array(capacity);
  }
  push(v: number): void {
    if (this.n === this.a.length) this.a = grownTo(this.a, this.a.length * 2);
    this.a[this.n++] = v;
  }
}

/**
 * Thompson NFA over bytes. A state has epsilon successors, byte-range edges, optionally one
 * assertion (a conditional epsilon edge to `assertTarget`), and optionally accepts a pattern.
 *
 * Edges are logged in the order they are added, as flat ints ([from, to] per ε-edge, [from, lo,
 * hi, to] per byte edge), and put in per-state (CSR) order once, by the alphabet compression:
 * two lists per state were two arrays per state for the collector (a Kubernetes manifest's NFA
 * has 100k+ states, and a sixth of its compile was garbage collection).
 */
export class ByteNfa {
  /** ε-edges: [from, to, ...], in the order added. */
  readonly epsLog = new IntLog(256);
  /** Byte edges: [from, lo, hi, to, ...], in the order added. */
  readonly edgeLog = new IntLog(256);
  private numStates = 0;
  // Per-state columns (see the getters), grown together: their entries past numStates already
  // hold the defaults, so a block of states (emitDfa) is made by a count.
  private capacity = 256;
  private assertionOf: Int32Array = new Int32Array(256);
  private assertTargetOf: Int32Array = new Int32Array(256).fill(-1);
  private assertSetOf: Int32Array = new Int32Array(256).fill(-1);
  private assertPositionOf: Int32Array = new Int32Array(256).fill(-1);
  private acceptOf: Int32Array = new Int32Array(256).fill(-1);
  /** Byte sets (flat ranges) that lookarounds test the previous/next byte against; deduplicated. */
  readonly assertSets: number[][] = [];
  private readonly assertSetIds = new Map<string, number>();
  /** DFAs embedded by reference (emitDfa), in the order of their bases. */
  readonly blocks: EmbeddedDfa[] = [];
  hasAssertions = false;
  private readonly sequenceCache = new Map<string, number[][]>();

  constructor(private maxStates: number) {}

  /**
   * Empties the NFA for another build, its buffers kept (see takeNfa): a dozen typed arrays a
   * build cost more to allocate than most small builds do otherwise.
   */
  reset(maxStates: number): void {
    this.maxStates = maxStates;
    const n = this.numStates;
    // Past numStates the columns hold their defaults already.
    this.assertionOf.fill(0, 0, n);
    this.assertTargetOf.fill(-1, 0, n);
    this.assertSetOf.fill(-1, 0, n);
    this.assertPositionOf.fill(-1, 0, n);
    this.acceptOf.fill(-1, 0, n);
    this.numStates = 0;
    this.epsLog.n = 0;
    this.edgeLog.n = 0;
    this.assertSets.length = 0;
    this.assertSetIds.clear();
    this.blocks.length = 0;
    this.hasAssertions = false;
    // UTF-8 splits of code sets depend on nothing else: kept while few.
    if (this.sequenceCache.size > 64) this.sequenceCache.clear();
  }

  /** Ints its buffers hold (what keeping it for the next build retains). */
  retainedInts(): number {
    return 5 * this.capacity + this.epsLog.a.length + this.edgeLog.a.length;
  }

  get size(): number {
    return this.numStates;
  }

  /** Per state: its Assertion code, 0 = none. */
  get assertion(): Int32Array {
    return this.assertionOf.subarray(0, this.numStates);
  }

  /** Per state: where its assertion's conditional ε-edge leads, else -1. */
  get assertTarget(): Int32Array {
    return this.assertTargetOf.subarray(0, this.numStates);
  }

  /** Per state: index into assertSets for lookbehind/lookahead assertions, else -1. */
  get assertSet(): Int32Array {
    return this.assertSetOf.subarray(0, this.numStates);
  }

  /** Per state: the pattern position of a lookahead, for errors raised during determinization. */
  get assertPosition(): Int32Array {
    return this.assertPositionOf.subarray(0, this.numStates);
  }

  /** Per state: the pattern it accepts, -1 = none. */
  get accept(): Int32Array {
    return this.acceptOf.subarray(0, this.numStates);
  }

  /** State `state` accepts pattern `pattern`. */
  setAccept(state: number, pattern: number): void {
    this.acceptOf[state] = pattern;
  }

  /** Room in the columns for `n` more states. */
  private reserve(n: number): void {
    const needed = this.numStates + n;
    if (needed <= this.capacity) return;
    const capacity = Math.max(needed, this.capacity * 2);
    this.assertionOf = grownTo(this.assertionOf, capacity);
    this.assertTargetOf = grownTo(this.assertTargetOf, capacity, -1);
    this.assertSetOf = grownTo(this.assertSetOf, capacity, -1);
    this.assertPositionOf = grownTo(this.assertPositionOf, capacity, -1);
    this.acceptOf = grownTo(this.acceptOf, capacity, -1);
    this.capacity = capacity;
  }

  newState(): number {
    const id = this.numStates;
    clock.tick(1);
    if (id >= this.maxStates) this.tooManyStates();
    if (id === this.capacity) this.reserve(1);
    this.numStates++;
    return id;
  }

  /** An ε-edge from → to. */
  addEps(from: number, to: number): void {
    const log = this.epsLog;
    log.push(from);
    log.push(to);
  }

  /** A byte edge from → to on bytes lo..hi. */
  addEdge(from: number, lo: number, hi: number, to: number): void {
    const log = this.edgeLog;
    log.push(from);
    log.push(lo);
    log.push(hi);
    log.push(to);
  }

  /** Adds `node` after `entry`; returns the exit state. Never adds byte edges to `entry`. */
  emit(node: RegexNode, entry: number): number {
    switch (node.kind) {
      case "set":
        return this.emitSet(node.set, entry);
      case "concat": {
        let cur = entry;
        for (const item of node.items) cur = this.emit(item, cur);
        return cur;
      }
      case "alt": {
        const exit = this.newState();
        for (const item of node.items) {
          const branch = this.newState();
          this.addEps(entry, branch);
          this.addEps(this.emit(item, branch), exit);
        }
        return exit;
      }
      case "repeat": {
        let cur = entry;
        for (let i = 0; i < node.min; i++) cur = this.emit(node.item, cur);
        if (node.max === -1) {
          const loop = this.newState();
          this.addEps(cur, loop);
          this.addEps(this.emit(node.item, loop), loop);
          return loop;
        }
        if (node.max === node.min) return cur;
        const exit = this.newState();
        for (let i = node.min; i < node.max; i++) {
          this.addEps(cur, exit);
          cur = this.emit(node.item, cur);
        }
        this.addEps(cur, exit);
        return exit;
      }
      case "assert": {
        const s = this.newState();
        const t = this.newState();
        this.addEps(entry, s);
        this.assertionOf[s] = node.assertion;
        this.assertTargetOf[s] = t;
        if (node.set) {
          const key = node.set.join(",");
          let id = this.assertSetIds.get(key);
          if (id === undefined) {
            id = this.assertSets.length;
            this.assertSetIds.set(key, id);
            this.assertSets.push(node.set);
          }
          this.assertSetOf[s] = id;
        }
        if (node.position !== undefined) this.assertPositionOf[s] = node.position;
        this.hasAssertions = true;
        return t;
      }
      case "dfa":
        return this.emitDfa(node.dfa, entry);
      case "graph":
        return this.emitGraph(node.graph, node.start, entry);
    }
  }

  /** A copy of the graph: a state per graph state, its edges' languages between them. */
  private emitGraph(graph: GraphOfNodes, start: number, entry: number): number {
    const ids: number[] = [];
    for (let s = 0; s < graph.states; s++) ids.push(this.newState());
    this.addEps(entry, ids[start]!);
    for (let e = 0; e < graph.from.length; e++) {
      const from = ids[graph.from[e]!]!;
      const reads = graph.reads[e]!;
      const exit = reads === null ? from : this.emit(reads, from);
      this.addEps(exit, ids[graph.to[e]!]!);
    }
    const exit = this.newState();
    for (const s of graph.accepting) this.addEps(ids[s]!, exit);
    return exit;
  }

  /**
   * A DFA embedded by reference: a block of NFA states numbered base + s for its states s, with
   * no edges of their own in the logs (determinize reads the DFA's table for them), entered
   * at its start by ε and left by ε from its accepting states. Each occurrence gets its own block
   * (a repeat emits its item again). Copying the DFA's edges into NFA lists was a fifth of a JSON
   * Schema compile: its free values are DFAs of hundreds of states, embedded once per object.
   */
  private emitDfa(dfa: ByteDfa, entry: number): number {
    const exit = this.newState();
    const base = this.size;
    if (base + dfa.numStates > this.maxStates) this.tooManyStates();
    clock.tick(dfa.numStates);
    this.reserve(dfa.numStates);
    this.numStates += dfa.numStates;
    this.addEps(entry, base + dfa.start);
    this.blocks.push({ dfa, base, exit });
    return exit;
  }

  private tooManyStates(): never {
    throw new RegexTooComplexError(
      `pattern too complex: its automaton needs more than ${this.maxStates} NFA states (large counted repeats?)`,
      "nfaStates",
    );
  }

  /**
   * Writes every block's DFA out as NFA edges (the states keep their numbers), for the subset
   * construction's general path: with assertions, a thread's mode filters its edges per class.
   */
  materializeBlocks(): void {
    for (const { dfa, base, exit } of this.blocks) {
      const { offsets, edges } = dfaEdges(dfa);
      clock.tick(dfa.numStates + edges.length / 3);
      for (let s = 0; s < dfa.numStates; s++) {
        for (let i = offsets[s]!; i < offsets[s + 1]!; i += 3) this.addEdge(base + s, edges[i]!, edges[i + 1]!, base + edges[i + 2]!);
        if (dfa.accepting[s] === 1) this.addEps(base + s, exit);
      }
    }
    this.blocks.length = 0;
  }

  private emitSet(set: CodeSet, entry: number): number {
    const exit = this.newState();
    if (set.length === 0) return exit; // matches nothing: exit is unreachable
    const start = this.newState();
    this.addEps(entry, start);
    let ascii = true;
    for (let i = 1; i < set.length && ascii; i += 2) ascii = set[i]! < 0x80;
    if (ascii) {
      // ASCII only (literal text, most classes): one byte per character, nothing to share.
      for (let i = 0; i < set.length; i += 2) this.addEdge(start, set[i]!, set[i + 1]!, exit);
      return exit;
    }
    const key = set.join(",");
    let sequences = this.sequenceCache.get(key);
    if (!sequences) {
      sequences = [];
      for (let i = 0; i < set.length; i += 2) utf8Sequences(set[i]!, set[i + 1]!, sequences);
      this.sequenceCache.set(key, sequences);
    }
    // Share suffixes (runs of continuation bytes) so the subset construction meets the same
    // NFA states on every path into them; lead bytes then fan out from `start`.
    const suffix = new Map<string, number>();
    for (const seq of sequences) {
      // A suffix lookup (a string key and a Map probe) costs about as much as a dozen new states.
      clock.tick(8 * seq.length);
      let cur = exit;
      for (let k = seq.length - 2; k >= 2; k -= 2) {
        const key = `${seq[k]},${seq[k + 1]},${cur}`;
        let state = suffix.get(key);
        if (state === undefined) {
          state = this.newState();
          this.addEdge(state, seq[k]!, seq[k + 1]!, cur);
          suffix.set(key, state);
        }
        cur = state;
      }
      this.addEdge(start, seq[0]!, seq[1]!, cur);
    }
    return exit;
  }
}

/**
 * A DFA's transitions as byte-range edges, per state edges[offsets[s]..offsets[s + 1]) as flat
 * [lo, hi, target, …], adjacent runs into one state merged (fewer ranges for the alphabet). Kept
 * per DFA: the DFAs embedded most (strings, numbers, shared values) are embedded many times.
 * Not counted as work, as alphabet.ts's sparseRows: no more than the DFA's own build counted, and
 * a table kept across compiles must not make a compile's count depend on the ones before it.
 */
function dfaEdges(dfa: ByteDfa): { offsets: Int32Array; edges: Int32Array } {
  const known = embeddedEdges.get(dfa);
  if (known) return known;
  const runs = byteRuns(dfa.byteClass);
  const offsets = new Int32Array(dfa.numStates + 1);
  const flat: number[] = [];
  for (let s = 0; s < dfa.numStates; s++) {
    const first = flat.length;
    for (let i = 0; i < runs.length; i += 3) {
      const t = dfa.next[s * dfa.numClasses + runs[i + 2]!]!;
      if (t < 0) continue;
      const n = flat.length;
      if (n > first && flat[n - 1] === t && flat[n - 2] === runs[i]! - 1) flat[n - 2] = runs[i + 1]!;
      else flat.push(runs[i]!, runs[i + 1]!, t);
    }
    offsets[s + 1] = flat.length;
  }
  const result = { offsets, edges: Int32Array.from(flat) };
  embeddedEdges.set(dfa, result);
  return result;
}

const embeddedEdges = new WeakMap<ByteDfa, { offsets: Int32Array; edges: Int32Array }>();

/** The maximal runs of bytes in one class, flat [lo, hi, class, ...] in byte order. */
function byteRuns(byteClass: Uint8Array): number[] {
  const runs: number[] = [];
  for (let b = 0; b < 256; b++) {
    const cls = byteClass[b]!;
    const n = runs.length;
    if (n > 0 && runs[n - 1] === cls && runs[n - 2] === b - 1) runs[n - 2] = b;
    else runs.push(b, b, cls);
  }
  return runs;
}
