/**
 * Token budgets of the regex matcher: `mask(state, remaining)` admits token t only if acceptance
 * stays reachable within remaining - 1 further tokens. When every single byte is a token,
 * minTokens(x) ≤ minBytes(x), so a budget the byte distances already meet needs nothing here.
 * Otherwise each successor is decided by its token-distance bounds, searched only where they
 * straddle the budget (DfaBudgets.fits), and the budgeted mask is cached per (state, limit). A
 * budgeted mask is the full mask with the few token ranges that lead elsewhere than the state's
 * main successor fixed up (ranges kept from one extra walk), or a filtered walk when there are
 * too many ranges.
 */
import { bytesRead } from "../../regex/index.js";
import { TokenLengthBound } from "../token-length-bound.js";
import type { TokenTrie } from "../trie.js";
import type { ByteDfa } from "../types.js";
import type { WorkMeter } from "../work-meter.js";
import { popCount, sampledWordHash, type BufferTally, type MaskStore } from "./mask-store.js";
import type { DfaMatcherView } from "./matcher-view.js";

/** minTokens value for a state from which acceptance is unreachable with whole tokens. */
export const UNREACHABLE = 0x7fffffff;
/**
 * The `remaining` of a caller that sets no budget. Every finite distance fits under it, and
 * UNREACHABLE does not: the budget asks remaining - 1 of the successors.
 */
export const NO_BUDGET = UNREACHABLE;
/**
 * States one search may expand before it hands over to the exact exploration: a budget just
 * short of a state's distance is refuted only by searching everything within it, which the
 * exploration (one walk per reachable state, then every distance exact) does for good.
 */
const SEARCH_FRAMES = 4096;
/** minTokens value not computed yet. */
const UNKNOWN = -1;
/** decide()'s answers. */
const NO_FIT = 0;
const FITS = 1;
const UNDECIDED = 2;

/** Most minor token ranges kept per state for budgeted masks (beyond that, a second walk). */
export const MAX_MINOR_SPANS = 16384;

/** ub value not computed yet. */
const UB_UNKNOWN = -1;

/**
 * The token distances and budgeted masks of one matcher's states.
 *
 * Deciding "acceptance within k tokens" (fits) does not need exact distances: each state has an
 * upper bound `ub` (the fewest tokens spelling its shortest byte completion — a real token path,
 * found along that one path with no trie walk) and a proven lower bound `lb`. Only when k falls
 * between the two is the state's token graph searched, depth-first to depth k, each answer
 * raising lb past k or lowering ub to k, so no (state, k) is searched twice. Near the end of a
 * generation the successors that matter are the few whose bounds straddle the budget; the exact
 * all-states exploration runs only for uncapped questions (minTokensToAccept without a cap).
 */
export class DfaBudgets {
  /** The byte lower bound in tokens, over the bytes the pattern reads. */
  private readonly lengthBound: TokenLengthBound;
  private readonly minTokens: Int32Array;
  /** 1 once minTokens is exact for the state's successors. */
  private readonly successorsExact: Uint8Array;
  /** Upper bound on each state's token distance (UB_UNKNOWN, UNREACHABLE: no bound known). */
  private readonly ub: Int32Array;
  /** Proven lower bound on each state's token distance. */
  private readonly lb: Int32Array;
  /** Max ub over the state's successors once known (UB_UNKNOWN): a budget at or above it needs no planning. */
  private readonly successorUb: Int32Array;
  /** Per state, the byte its shortest completion starts with (-1: not chosen yet). */
  private readonly pathByte: Int16Array;
  /** Per byte class, the byte standing for it in a shortest completion (-1: none). */
  private readonly classByte: Int16Array;
  /** Successor states marked as fitting the budget of the mask being made (1), else 0. */
  private readonly fitMark: Uint8Array;
  /** The search's stack: state, budget, next successor index per frame. */
  private stack = new Int32Array(3 * 64);
  /** Budgeted masks keyed by state * (numStates + 1) + min(limit, numStates). */
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
    private readonly matcher: DfaMatcherView,
    private readonly trie: TokenTrie,
    private readonly dfa: ByteDfa,
    private readonly successors: readonly (Int32Array | undefined)[],
    private readonly store: MaskStore,
    private readonly stateAtDepth: Int32Array,
    private readonly work: WorkMeter,
    private readonly maxMinorSpans: number,
  ) {
    const n = dfa.numStates;
    this.lengthBound = new TokenLengthBound(trie, () => bytesRead(dfa));
    this.minTokens = new Int32Array(n).fill(UNKNOWN);
    this.successorsExact = new Uint8Array(n);
    this.ub = new Int32Array(n).fill(UB_UNKNOWN);
    this.lb = new Int32Array(n);
    this.successorUb = new Int32Array(n).fill(UB_UNKNOWN);
    this.pathByte = new Int16Array(n).fill(-1);
    this.classByte = representativeBytes(dfa);
    this.fitMark = new Uint8Array(n);
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
   * With `cap` (the request's max_new_tokens): when a match fits within it the answer is some
   * number ≤ cap — exact if already known, else an upper bound — without exploring the pattern's
   * states; when none fits, Number.POSITIVE_INFINITY (minTokensAtLeast then says how many it takes).
   */
  minTokensToAccept(state: number, cap: number = Number.POSITIVE_INFINITY): number {
    if (state < 0) return Number.POSITIVE_INFINITY;
    if (this.dfa.accepting[state] === 1) return 0;
    if (Number.isFinite(cap)) {
      if (this.minTokens[state] !== UNKNOWN) {
        const d = this.minTokens[state]!;
        return d <= cap ? d : Number.POSITIVE_INFINITY;
      }
      if (this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= cap) return this.dfa.minBytesToAccept[state]!;
      return this.fits(state, cap) ? this.ub[state]! : Number.POSITIVE_INFINITY;
    }
    this.ensureExactDistances(state);
    const d = this.minTokens[state]!;
    return d === UNREACHABLE ? Number.POSITIVE_INFINITY : d;
  }

  /**
   * A proven lower bound on the tokens from `state` to a full match: the exact count when it is at
   * most `cap`, else cap + 1 (or Infinity when acceptance is unreachable and known to be).
   */
  minTokensAtLeast(state: number, cap: number): number {
    if (state < 0) return Number.POSITIVE_INFINITY;
    if (this.dfa.accepting[state] === 1) return 0;
    if (this.minTokens[state] !== UNKNOWN) {
      const d = this.minTokens[state]!;
      return d === UNREACHABLE ? Number.POSITIVE_INFINITY : Math.min(d, cap + 1);
    }
    if (!this.fits(state, cap)) return cap + 1;
    // lb < d ≤ ub ≤ cap: bisect, each probe raising lb or lowering ub.
    while (this.lb[state]! < this.ub[state]!) {
      const mid = (this.lb[state]! + this.ub[state]!) >>> 1;
      this.fits(state, mid);
    }
    return this.ub[state]!;
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
    if (this.clearlyAcceptsWithin(state, budget)) return true;
    return this.fits(state, budget);
  }

  /** Whether some token allowed in `state` leaves a match within `limit` further tokens. */
  anySuccessorFits(state: number, limit: number): boolean {
    if (limit < 0) return false;
    const succ = this.matcher.tokenSuccessors(state);
    this.work.allowPlanning();
    for (let i = 0; i < succ.length; i++) if (this.canAcceptWithin(succ[i]!, limit)) return true;
    return false;
  }

  /** The mask of `state` when each token must leave a match within `limit` further tokens. */
  budgetMask(state: number, limit: number, full: Uint32Array): Uint32Array {
    if (limit < 0) return this.matcher.emptyMask;
    const succ = this.matcher.tokenSuccessors(state);
    if (limit >= this.maxSuccessorUb(state, succ)) return full;
    // Finite distances are below the state count, so larger limits all make the same mask.
    const n = this.dfa.numStates;
    const key = state * (n + 1) + Math.min(limit, n);
    const cached = this.budgetMasks.get(key);
    if (cached !== undefined) return cached;
    this.work.allowPlanning();
    // Decide every successor first: the walks below share the matcher's scratch with fits' walks.
    const fitMark = this.fitMark;
    let fitting = 0;
    for (let i = 0; i < succ.length; i++) {
      const fits = this.canAcceptWithin(succ[i]!, limit);
      fitMark[succ[i]!] = fits ? 1 : 0;
      if (fits) fitting++;
    }
    if (fitting === succ.length) return full;
    if (fitting === 0) return this.matcher.emptyMask;
    if (this.minorSpansTried[state] === 0) {
      this.minorSpansTried[state] = 1;
      if (this.maxMinorSpans > 0) this.keepMinorSpans(state);
    }
    const spans = this.minorSpans[state];
    let mask: Uint32Array;
    if (spans === undefined) {
      mask = this.walkFitting(state);
    } else {
      const tokenIds = this.trie.tokenIds;
      // Start from the full mask when the main successor fits, else from nothing; then fix up
      // the minor ranges whose fate differs.
      const majorFits = fitMark[this.majorTarget[state]!] === 1;
      mask = majorFits ? full.slice() : new Uint32Array(this.matcher.words);
      for (let i = 0; i < spans.length; i += 3) {
        const fits = fitMark[spans[i + 2]!] === 1;
        if (fits === majorFits) continue;
        for (let k = spans[i]!; k < spans[i + 1]!; k++) {
          const id = tokenIds[k]!;
          if (fits) mask[id >>> 5]! |= 1 << (id & 31);
          else mask[id >>> 5]! &= ~(1 << (id & 31));
        }
      }
    }
    const shared = this.store.intern(mask, sampledWordHash(mask), popCount(mask));
    this.budgetMasks.set(key, shared);
    return shared;
  }

  /** Max ub over `state`'s successors (memoised): a budget at or above it fits every token. */
  private maxSuccessorUb(state: number, succ: Int32Array): number {
    let max = this.successorUb[state]!;
    if (max !== UB_UNKNOWN) return max;
    max = 0;
    for (let i = 0; i < succ.length; i++) {
      const u = this.dfa.accepting[succ[i]!] === 1 ? 0 : this.upperBound(succ[i]!);
      if (u > max) max = u;
    }
    this.successorUb[state] = max;
    return max;
  }

  /**
   * Whether acceptance is within `budget` tokens of `state` (exact). Decided by the bounds when
   * they can; otherwise a depth-first search of the token graph to depth `budget`, iterative (the
   * budget may be large), where each finished frame either lowers its state's ub to its budget or
   * raises its lb past it: a (state, budget) pair is searched at most once per matcher.
   */
  private fits(state: number, budget: number): boolean {
    const first = this.decide(state, budget);
    if (first !== UNDECIDED) return first === FITS;
    // A finite distance is below the state count: such a budget only asks whether acceptance is
    // reachable at all, which the exploration answers once for every state it reaches.
    if (budget >= this.dfa.numStates - 1) {
      this.ensureExactDistances(state);
      return this.minTokens[state]! <= budget;
    }
    let stack = this.stack;
    stack[0] = state;
    stack[1] = budget;
    stack[2] = 0;
    let top = 3;
    let frames = 0;
    while (top > 0) {
      const x = stack[top - 3]!;
      const k = stack[top - 2]!;
      const succ = this.matcher.tokenSuccessors(x);
      const i = stack[top - 1]!;
      if (i === succ.length) {
        // No token from x leaves a match within k - 1: x needs more than k.
        if (this.lb[x]! <= k) this.lb[x] = k + 1;
        top -= 3;
        continue;
      }
      stack[top - 1] = i + 1;
      this.work.charge(1);
      const y = succ[i]!;
      const verdict = this.decide(y, k - 1);
      if (verdict === FITS) {
        // y fits within k - 1, so every frame below fits too: unwind, lowering ub along the chain.
        let below = this.dfa.accepting[y] === 1 ? 0 : this.ub[y]!;
        for (let f = top - 3; f >= 0; f -= 3) {
          const s = stack[f]!;
          below += 1;
          if (this.ub[s] === UB_UNKNOWN || this.ub[s]! > below) this.ub[s] = below;
        }
        return true;
      }
      if (verdict === UNDECIDED) {
        if (++frames > SEARCH_FRAMES) {
          // A wide search: the exploration's exact distances serve this and every later question.
          this.ensureExactDistances(state);
          return this.minTokens[state]! <= budget;
        }
        if (top + 3 > stack.length) {
          const grown = new Int32Array(stack.length * 2);
          grown.set(stack);
          this.stack = stack = grown;
        }
        stack[top] = y;
        stack[top + 1] = k - 1;
        stack[top + 2] = 0;
        top += 3;
      }
    }
    return false;
  }

  /** fits() without a search: FITS, NO_FIT, or UNDECIDED when the bounds straddle `budget`. */
  private decide(state: number, budget: number): number {
    if (this.dfa.accepting[state] === 1) return FITS;
    const exact = this.minTokens[state]!;
    if (exact !== UNKNOWN) return exact <= budget ? FITS : NO_FIT;
    if (this.lb[state]! > budget) return NO_FIT;
    // A state that is not accepting needs a token; none is longer than maxTokenLength bytes, nor
    // than the longest token made of bytes the pattern reads.
    if (budget <= 0 || this.lengthBound.exceeds(this.dfa.minBytesToAccept[state]!, budget)) {
      this.lb[state] = budget + 1;
      return NO_FIT;
    }
    if (this.trie.everyByteIsToken && this.dfa.minBytesToAccept[state]! <= budget) {
      if (this.ub[state] === UB_UNKNOWN || this.ub[state]! > budget) this.ub[state] = this.dfa.minBytesToAccept[state]!;
      return FITS;
    }
    return this.upperBound(state) <= budget ? FITS : UNDECIDED;
  }

  /**
   * ub of `state`, computed on first need: the fewest tokens spelling its shortest byte completion
   * (each state's completion starts with pathByte, so a state's completion is the rest of its
   * predecessor's and one pass backwards along the path does every state on it). A tokenization
   * of one completion is a real token path, hence an upper bound; with no byte tokens it may not
   * exist (UNREACHABLE: no bound).
   */
  private upperBound(state: number): number {
    const ub = this.ub;
    if (ub[state] !== UB_UNKNOWN) return ub[state]!;
    const { accepting, next, byteClass, numClasses } = this.dfa;
    // The path: the states without ub, then up to maxTokenLength more (tokens may reach past).
    const path: number[] = [];
    const bytes: number[] = [];
    let x = state;
    let known = -1;
    while (x >= 0) {
      path.push(x);
      if (accepting[x] === 1) {
        if (ub[x] === UB_UNKNOWN) ub[x] = 0;
        break;
      }
      if (known < 0 && ub[x] !== UB_UNKNOWN) known = path.length - 1;
      if (known >= 0 && path.length - 1 - known >= this.trie.maxTokenLength) break;
      const b = this.completionByte(x);
      if (b < 0) break;
      bytes.push(b);
      x = next[x * numClasses + byteClass[b]!]!;
    }
    const end = known >= 0 ? known : path.length - 1;
    if (known < 0 && accepting[path[end]!] !== 1) {
      // No completion path (an empty language): no bound for any of them.
      for (let i = 0; i <= end; i++) ub[path[i]!] = UNREACHABLE;
      return UNREACHABLE;
    }
    const trie = this.trie;
    const tokenStart = trie.tokenStart;
    let steps = 0;
    for (let i = end - 1; i >= 0; i--) {
      let best = UNREACHABLE;
      let node = 0;
      for (let j = i; j < bytes.length; j++) {
        node = trie.child(node, bytes[j]!);
        steps++;
        if (node < 0) break;
        if (tokenStart[node + 1]! > tokenStart[node]!) {
          // Past the first known state, ub may be unknown (set by a search, not this pass): skip.
          const rest = ub[path[j + 1]!]!;
          if (rest !== UNREACHABLE && rest !== UB_UNKNOWN && rest + 1 < best) best = rest + 1;
        }
      }
      ub[path[i]!] = best;
    }
    this.work.charge(steps + path.length);
    return ub[state]!;
  }

  /** The first byte of `state`'s shortest completion (memoised), or -1 when it has none. */
  private completionByte(state: number): number {
    const known = this.pathByte[state]!;
    if (known >= 0) return known;
    const { next, numClasses, minBytesToAccept } = this.dfa;
    const want = minBytesToAccept[state]! - 1;
    let best = -1;
    let bestRank = 1024;
    for (let c = 0; c < numClasses; c++) {
      const t = next[state * numClasses + c]!;
      if (t < 0 || minBytesToAccept[t] !== want) continue;
      const b = this.classByte[c]!;
      if (b >= 0 && byteRank(b) < bestRank) {
        best = b;
        bestRank = byteRank(b);
      }
    }
    this.pathByte[state] = best;
    return best;
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

  /** Trie walk admitting the tokens whose target state is marked in fitMark. */
  private walkFitting(state: number): Uint32Array {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const { next, byteClass, numClasses } = this.dfa;
    const fitMark = this.fitMark;
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
      if (from !== to && fitMark[ns] === 1) {
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
      if (visited[s] === 1 || accepting[s] === 1) {
        minTokens[s] = dist[s]!;
        this.ub[s] = dist[s]!;
        this.lb[s] = dist[s]!;
      }
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

/**
 * Per byte class, the byte a shortest completion spells for it: the one most likely to sit
 * inside long tokens (lower-case letters, then digits, upper case, space, other printable ASCII,
 * then the rest), so the tokenization that gives ub is short. -1 for a class no byte has.
 */
function representativeBytes(dfa: ByteDfa): Int16Array {
  const out = new Int16Array(dfa.numClasses).fill(-1);
  for (let b = 0; b < 256; b++) {
    const c = dfa.byteClass[b]!;
    if (out[c]! < 0 || byteRank(b) < byteRank(out[c]!)) out[c] = b;
  }
  return out;
}

/** Lower is likelier inside a long token (see representativeBytes). */
function byteRank(b: number): number {
  if (b >= 0x61 && b <= 0x7a) return b - 0x61;
  if (b >= 0x30 && b <= 0x39) return 32 + b;
  if (b >= 0x41 && b <= 0x5a) return 128 + b;
  if (b === 0x20) return 256;
  if (b > 0x20 && b < 0x7f) return 384 + b;
  return 512 + b;
}
