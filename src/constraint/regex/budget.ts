/**
 * Token budgets of the regex matcher: `mask(state, remaining)` admits token t only if acceptance
 * stays reachable within remaining - 1 further tokens. When every single byte is a token,
 * minTokens(x) ≤ minBytes(x), so a budget the byte distances already meet needs nothing here.
 * Otherwise exact token distances (BFS over the token graph of the states reachable from here)
 * are computed once, and the budgeted mask is cached per (state, threshold), where threshold is
 * the largest successor distance that still fits: masks for different budgets with the same
 * threshold are identical. A budgeted mask is the full mask with the few token ranges that lead
 * elsewhere than the state's main successor fixed up (ranges kept from one extra walk), or a
 * filtered walk when there are too many ranges.
 */
import type { TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";
import type { WorkMeter } from "../work-meter.js";
import { popCount, wordHash, type BufferTally, type MaskStore } from "./mask-store.js";
import type { DfaTokenMatcher } from "./matcher.js";

/** minTokens value for a state from which acceptance is unreachable with whole tokens. */
export const UNREACHABLE = 0x7fffffff;
/**
 * The `remaining` of a caller that sets no budget. Every finite distance fits under it, and
 * UNREACHABLE does not: the budget asks remaining - 1 of the successors.
 */
export const NO_BUDGET = UNREACHABLE;
/** minTokens value not computed yet. */
const UNKNOWN = -1;

/** Most minor token ranges kept per state for budgeted masks (beyond that, a second walk). */
export const MAX_MINOR_SPANS = 16384;

/** The token distances and budgeted masks of one matcher's states. */
export class DfaBudgets {
  private readonly minTokens: Int32Array;
  /** 1 once minTokens is exact for the state's successors. */
  private readonly successorsExact: Uint8Array;
  /** Budgeted masks keyed by state * 2^22 + threshold. */
  private readonly budgetMasks = new Map<number, Uint32Array>();
  /**
   * Per state: the token ranges (trie.tokenIds[from..to)) that do NOT lead to the state's most
   * common successor, as (from, to, target) triples, so a budgeted mask is the full mask with a
   * few ranges cleared (or a few ranges set) instead of a second trie walk. Undefined when there
   * are too many ranges to keep.
   */
  private readonly minorSpans: (Int32Array | undefined)[];
  private readonly majorTarget: Int32Array;
  private readonly minorSpansTried: Uint8Array;

  /**
   * `successors`, `stateAtDepth`: the matcher's tables (successors filled by its walks, read
   * here); `maxMinorSpans`: see DfaTokenMatcher's constructor.
   */
  constructor(
    private readonly matcher: DfaTokenMatcher,
    private readonly trie: TokenTrie,
    private readonly dfa: ByteDfa,
    private readonly successors: readonly (Int32Array | undefined)[],
    private readonly store: MaskStore,
    private readonly stateAtDepth: Int32Array,
    private readonly work: WorkMeter,
    private readonly maxMinorSpans: number,
  ) {
    const n = dfa.numStates;
    this.minTokens = new Int32Array(n).fill(UNKNOWN);
    this.successorsExact = new Uint8Array(n);
    this.minorSpansTried = new Uint8Array(n);
    this.minorSpans = new Array<Int32Array | undefined>(n);
    this.majorTarget = new Int32Array(n).fill(-1);
  }

  /** Budgeted masks made so far (the matcher's retainedBytes version). */
  get maskCount(): number {
    return this.budgetMasks.size;
  }

  /** Its share of the matcher's retainedBytes: span lists and budgeted masks. */
  tallyInto(tally: BufferTally): void {
    for (let s = 0; s < this.minorSpans.length; s++) tally.add(this.minorSpans[s]);
    for (const mask of this.budgetMasks.values()) tally.add(mask);
    tally.bytes += this.budgetMasks.size * 80;
  }

  /**
   * Exact minimum number of tokens from `state` to a full match (0 when accepting), or
   * Number.POSITIVE_INFINITY when no sequence of generable tokens gets there.
   *
   * With `cap` (the request's max_new_tokens): when a match clearly fits within it (byte
   * distance ≤ cap and every byte is a token) the answer is some number ≤ cap — exact if already
   * known, else the byte distance, an upper bound — without exploring the pattern's states; the
   * exact value is computed only when it may exceed the cap (the 422 message needs it).
   */
  minTokensToAccept(state: number, cap: number = Number.POSITIVE_INFINITY): number {
    if (state < 0) return Number.POSITIVE_INFINITY;
    if (this.dfa.accepting[state] === 1) return 0;
    if (
      Number.isFinite(cap) &&
      this.minTokens[state] === UNKNOWN &&
      this.trie.everyByteIsToken &&
      this.dfa.minBytesToAccept[state]! <= cap
    ) {
      return this.dfa.minBytesToAccept[state]!;
    }
    this.ensureExactDistances(state);
    const d = this.minTokens[state]!;
    return d === UNREACHABLE ? Number.POSITIVE_INFINITY : d;
  }

  /** The cheap half of canAcceptWithin: true when the byte distance alone shows it fits. */
  clearlyAcceptsWithin(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.dfa.accepting[state] === 1) return true;
    return this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= budget;
  }

  /** Whether a full match is reachable from `state` within `budget` tokens; cheap when it clearly is. */
  canAcceptWithin(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.dfa.accepting[state] === 1) return true;
    if (this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= budget) return true;
    return this.minTokensToAccept(state) <= budget;
  }

  /** Largest successor token distance ≤ limit, or -1 when no successor fits. */
  threshold(state: number, limit: number): number {
    this.ensureExactDistances(state);
    const succ = this.successors[state]!;
    const minTokens = this.minTokens;
    let best = -1;
    for (let i = 0; i < succ.length; i++) {
      const d = minTokens[succ[i]!]!;
      if (d <= limit && d > best) best = d;
    }
    return best;
  }

  budgetMask(state: number, limit: number, full: Uint32Array): Uint32Array {
    const threshold = this.threshold(state, limit);
    if (threshold < 0) return this.matcher.emptyMask;
    // Every successor fits: the full mask is exact.
    const succ = this.successors[state]!;
    let allFit = true;
    for (let i = 0; i < succ.length; i++) if (this.minTokens[succ[i]!]! > threshold) allFit = false;
    if (allFit) return full;
    const key = state * 4194304 + threshold;
    const cached = this.budgetMasks.get(key);
    if (cached !== undefined) return cached;
    if (this.minorSpansTried[state] === 0) {
      this.minorSpansTried[state] = 1;
      if (this.maxMinorSpans > 0) this.keepMinorSpans(state);
    }
    const spans = this.minorSpans[state];
    let mask: Uint32Array;
    if (spans === undefined) {
      mask = this.walkWithThreshold(state, threshold);
    } else {
      const tokenIds = this.trie.tokenIds;
      const minTokens = this.minTokens;
      // Start from the full mask when the main successor fits, else from nothing; then fix up
      // the minor ranges whose fate differs.
      const majorFits = minTokens[this.majorTarget[state]!]! <= threshold;
      mask = majorFits ? full.slice() : new Uint32Array(this.matcher.words);
      for (let i = 0; i < spans.length; i += 3) {
        const fits = minTokens[spans[i + 2]!]! <= threshold;
        if (fits === majorFits) continue;
        for (let k = spans[i]!; k < spans[i + 1]!; k++) {
          const id = tokenIds[k]!;
          if (fits) mask[id >>> 5]! |= 1 << (id & 31);
          else mask[id >>> 5]! &= ~(1 << (id & 31));
        }
      }
    }
    const shared = this.store.intern(mask, wordHash(mask), popCount(mask));
    this.budgetMasks.set(key, shared);
    return shared;
  }

  /**
   * One extra walk, on the first budgeted mask of a state: the token ranges with their targets,
   * kept when few enough lead anywhere but the most common successor (see minorSpans).
   */
  private keepMinorSpans(state: number): void {
    const spans = this.matcher.subtreeSpans(0, state);
    if (spans.length === 0) return;
    const count = new Map<number, number>();
    for (let i = 0; i < spans.length; i += 3) count.set(spans[i + 2]!, (count.get(spans[i + 2]!) ?? 0) + spans[i + 1]! - spans[i]!);
    let majorState = -1;
    let majorCount = -1;
    for (const [target, c] of count) {
      if (c > majorCount) {
        majorCount = c;
        majorState = target;
      }
    }
    let minor = 0;
    for (let i = 0; i < spans.length; i += 3) if (spans[i + 2] !== majorState) minor++;
    if (minor > this.maxMinorSpans) return;
    const kept = new Int32Array(minor * 3);
    let j = 0;
    for (let i = 0; i < spans.length; i += 3) {
      if (spans[i + 2] === majorState) continue;
      kept[j++] = spans[i]!;
      kept[j++] = spans[i + 1]!;
      kept[j++] = spans[i + 2]!;
    }
    this.minorSpans[state] = kept;
    this.majorTarget[state] = majorState;
  }

  /** Trie walk admitting tokens whose target state needs at most `threshold` more tokens. */
  private walkWithThreshold(state: number, threshold: number): Uint32Array {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const { next, byteClass, numClasses } = this.dfa;
    const minTokens = this.minTokens;
    const stateAtDepth = this.stateAtDepth;
    const mask = new Uint32Array(this.matcher.words);
    stateAtDepth[0] = state;
    let p = 1;
    let steps = 0;
    while (p < numNodes) {
      steps++;
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const ns = next[stateAtDepth[d - 1]! * numClasses + byteClass[info & 0xff]!]!;
      const size = subtreeSize[p]!;
      if (ns < 0) {
        p += size;
        continue;
      }
      stateAtDepth[d] = ns;
      const bulk = size > 8 && this.matcher.subtreeLoops(p, ns);
      const from = tokenStart[p]!;
      const to = bulk ? tokenStart[p + size]! : tokenStart[p + 1]!;
      if (from !== to && minTokens[ns]! <= threshold) {
        for (let k = from; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
      }
      p += bulk ? size : 1;
    }
    this.work.charge(steps);
    return mask;
  }

  /**
   * Makes minTokens exact for `state` and each of its successors. Accepting states are sinks for
   * distances (a path through one is never shorter than stopping there), so the exploration does
   * not expand them; every other state reachable from `state` gets its successors computed.
   * Invariant: the set of states with known minTokens, with accepting states as sinks, is closed
   * under successors, so a backward BFS from the accepting states over all computed edges gives
   * exact distances for every newly explored state.
   */
  private ensureExactDistances(state: number): void {
    if (this.successorsExact[state] === 1) return;
    const minTokens = this.minTokens;
    const accepting = this.dfa.accepting;
    const n = this.dfa.numStates;
    const visited = this.exploreUnknown(state);
    const dist = this.distancesToAccept();
    for (let s = 0; s < n; s++) {
      if (visited[s] === 1 || accepting[s] === 1) minTokens[s] = dist[s]!;
    }
    this.successorsExact[state] = 1;
  }

  /**
   * The states reachable from `state` through states of unknown distance (accepting ones are not
   * expanded), as 1s by state, each expanded one with its successors computed.
   */
  private exploreUnknown(state: number): Uint8Array {
    const minTokens = this.minTokens;
    const accepting = this.dfa.accepting;
    const visited = new Uint8Array(this.dfa.numStates);
    const stack: number[] = [state];
    visited[state] = 1;
    while (stack.length > 0) {
      const s = stack.pop()!;
      this.work.charge(1);
      if (s !== state && (minTokens[s] !== UNKNOWN || accepting[s] === 1)) continue;
      const succ = this.matcher.tokenSuccessors(s);
      for (let i = 0; i < succ.length; i++) {
        const t = succ[i]!;
        if (visited[t] === 0) {
          visited[t] = 1;
          stack.push(t);
        }
      }
    }
    return visited;
  }

  /**
   * Fewest tokens from every state to an accepting one over the successor lists computed so far
   * (UNREACHABLE: none): a BFS backwards from the accepting states over the edges reversed (CSR).
   */
  private distancesToAccept(): Int32Array {
    const accepting = this.dfa.accepting;
    const n = this.dfa.numStates;
    const inStart = new Int32Array(n + 1);
    for (let s = 0; s < n; s++) {
      const succ = this.successors[s];
      if (succ === undefined) continue;
      for (let i = 0; i < succ.length; i++) inStart[succ[i]! + 1]!++;
    }
    for (let s = 0; s < n; s++) inStart[s + 1]! += inStart[s]!;
    // A pass over every state and computed edge, once per exploration.
    this.work.charge(2 * (n + inStart[n]!));
    const preds = new Int32Array(inStart[n]!);
    const fill = inStart.slice(0, n);
    for (let s = 0; s < n; s++) {
      const succ = this.successors[s];
      if (succ === undefined) continue;
      for (let i = 0; i < succ.length; i++) preds[fill[succ[i]!]!++] = s;
    }
    const dist = new Int32Array(n).fill(UNREACHABLE);
    const queue = new Int32Array(n);
    let head = 0;
    let tail = 0;
    for (let s = 0; s < n; s++) {
      if (accepting[s] === 1) {
        dist[s] = 0;
        queue[tail++] = s;
      }
    }
    while (head < tail) {
      const s = queue[head++]!;
      const ds = dist[s]! + 1;
      for (let k = inStart[s]!; k < inStart[s + 1]!; k++) {
        const pr = preds[k]!;
        if (dist[pr] === UNREACHABLE) {
          dist[pr] = ds;
          queue[tail++] = pr;
        }
      }
    }
    return dist;
  }
}
