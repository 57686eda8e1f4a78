import { utf8Sequences, type CodeSet } from "./charset.js";
import { regexClock } from "./clock.js";
import { RegexTooComplexError } from "./errors.js";
import type { RegexNode } from "./parser.js";

/** The compile's time limit (see clock.ts: kept in a const of this module for the hot loops). */
const clock = regexClock;

/**
 * Thompson NFA over bytes. A state has epsilon successors, byte-range edges, optionally one
 * assertion (a conditional epsilon edge to `assertTarget`), and optionally accepts a pattern.
 */
export class ByteNfa {
  readonly eps: number[][] = [];
  readonly edges: number[][] = []; // flat [lo, hi, target, ...]
  readonly assertion: number[] = []; // Assertion code, 0 = none
  readonly assertTarget: number[] = [];
  /** Per state: index into assertSets for lookbehind/lookahead assertions, else -1. */
  readonly assertSet: number[] = [];
  /** Byte sets (flat ranges) that lookarounds test the previous/next byte against; deduplicated. */
  readonly assertSets: number[][] = [];
  /** Pattern position of each lookahead state, for errors raised during determinization. */
  readonly assertPosition: number[] = [];
  private readonly assertSetIds = new Map<string, number>();
  readonly accept: number[] = []; // pattern index, -1 = none
  hasAssertions = false;
  private readonly sequenceCache = new Map<string, number[][]>();

  constructor(private readonly maxStates: number) {}

  get size(): number {
    return this.eps.length;
  }

  newState(): number {
    const id = this.eps.length;
    clock.tick(1);
    if (id >= this.maxStates) {
      throw new RegexTooComplexError(
        `pattern too complex: its automaton needs more than ${this.maxStates} NFA states (large counted repeats?)`,
        "nfaStates",
      );
    }
    this.eps.push([]);
    this.edges.push([]);
    this.assertion.push(0);
    this.assertTarget.push(-1);
    this.assertSet.push(-1);
    this.assertPosition.push(-1);
    this.accept.push(-1);
    return id;
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
          this.eps[entry]!.push(branch);
          this.eps[this.emit(item, branch)]!.push(exit);
        }
        return exit;
      }
      case "repeat": {
        let cur = entry;
        for (let i = 0; i < node.min; i++) cur = this.emit(node.item, cur);
        if (node.max === -1) {
          const loop = this.newState();
          this.eps[cur]!.push(loop);
          this.eps[this.emit(node.item, loop)]!.push(loop);
          return loop;
        }
        if (node.max === node.min) return cur;
        const exit = this.newState();
        for (let i = node.min; i < node.max; i++) {
          this.eps[cur]!.push(exit);
          cur = this.emit(node.item, cur);
        }
        this.eps[cur]!.push(exit);
        return exit;
      }
      case "assert": {
        const s = this.newState();
        const t = this.newState();
        this.eps[entry]!.push(s);
        this.assertion[s] = node.assertion;
        this.assertTarget[s] = t;
        if (node.set) {
          const key = node.set.join(",");
          let id = this.assertSetIds.get(key);
          if (id === undefined) {
            id = this.assertSets.length;
            this.assertSetIds.set(key, id);
            this.assertSets.push(node.set);
          }
          this.assertSet[s] = id;
        }
        if (node.position !== undefined) this.assertPosition[s] = node.position;
        this.hasAssertions = true;
        return t;
      }
    }
  }

  private emitSet(set: CodeSet, entry: number): number {
    const exit = this.newState();
    if (set.length === 0) return exit; // matches nothing: exit is unreachable
    const start = this.newState();
    this.eps[entry]!.push(start);
    let ascii = true;
    for (let i = 1; i < set.length && ascii; i += 2) ascii = set[i]! < 0x80;
    if (ascii) {
      // ASCII only (literal text, most classes): one byte per character, nothing to share.
      const edges = this.edges[start]!;
      for (let i = 0; i < set.length; i += 2) edges.push(set[i]!, set[i + 1]!, exit);
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
          this.edges[state]!.push(seq[k]!, seq[k + 1]!, cur);
          suffix.set(key, state);
        }
        cur = state;
      }
      this.edges[start]!.push(seq[0]!, seq[1]!, cur);
    }
    return exit;
  }
}
