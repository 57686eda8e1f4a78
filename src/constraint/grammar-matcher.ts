/**
 * Token masks and budgets for an automaton with unboundedly many states (a grammar's lexer +
 * LALR parser), where nothing can be precomputed over all states as for a regex DFA.
 *
 * Masks: per visited state, the allowed tokens and their distinct target states, cached. A state
 * takes its commit-free tokens from a walk cached per tuple of lexer-level states (one per
 * hypothesis) and shared by every parser stack (see LexerLevelWalks below); only the trie
 * subtrees where a terminal ends are walked with the real automaton. advance() steps the token's
 * bytes through the automaton's memo, so no per-token target table is built.
 *
 * Budgets: a token is allowed with `remaining` tokens left only if a complete sentence is still
 * reachable within remaining-1 tokens after it. "Surely reachable" comes from an upper bound: the
 * fewest tokens spelling the shortest completing byte string (A* over the byte automaton; any
 * segmentation of valid bytes is a valid token path). Otherwise a bounded depth-first search over
 * cached token transitions decides; when it gives up, the token is refused: budgets may then be
 * stricter than necessary, never looser, so a completion is never a truncated half sentence.
 */
import type { TokenTrie } from "./trie.js";
import type { ByteAutomaton } from "./types.js";
import { maskWords } from "./types.js";

/** What the grammar stage's incremental recognizer offers. */
export interface CompletableAutomaton extends ByteAutomaton {
  readonly start: number;
  isComplete(state: number): boolean;
  /** Admissible lower bound on bytes to a complete sentence (Infinity when dead). */
  minBytesLowerBound(state: number): number;
  /** Exact fewest bytes to a complete sentence, or -1 when the search gave up. */
  minBytesToComplete(state: number, maxExpansions?: number): number;
}

interface StateEdges {
  mask: Uint32Array;
  /** Distinct target states of the allowed tokens, by ascending lower-bound distance. */
  distinct: Int32Array;
  /** Smallest token budget known to let every target finish (Infinity: not known yet). */
  allFitFrom: number;
}

/** Depth-first search effort per budget query before refusing (conservative). */
const SEARCH_LIMIT = 64;
/** Budgets above this are treated alike by the memo keys (they only ever mean "plenty"). */
const BUDGET_KEY_CAP = 0xffff;

export class GrammarTokenMatcher {
  readonly words: number;
  readonly emptyMask: Uint32Array;
  private readonly edges = new Map<number, StateEdges>();
  private readonly prefixCache = new Map<string, { tokens: Int32Array; targets: Int32Array }>();
  /** Per state: tokens that surely suffice to complete (see tokenUpperBound). */
  private readonly tokenBound = new Map<number, number>();
  /** state * 2^16 + budget → can finish: 1 yes, 0 no. */
  private readonly finishMemo = new Map<number, number>();
  private readonly budgetMasks = new Map<number, Uint32Array>();
  private searchLeft = 0;
  private searchGaveUp = false;
  /** Per automaton state, the walk stamp that last collected it (distinct-target dedup). */
  private seenStamp = new Int32Array(1024);
  private stamp = 0;
  private readonly collected: number[] = [];
  private readonly stateAtDepth: Int32Array;
  /** Lexer-level walks shared by all parser stacks; null when the automaton's shape is unknown. */
  private readonly lexer: LexerLevelWalks | null;

  constructor(
    readonly trie: TokenTrie,
    readonly automaton: CompletableAutomaton,
    /** Off: every state walks the trie with the automaton (the reference the tests compare with). */
    options: { lexerLevel?: boolean } = {},
  ) {
    this.words = maskWords(trie.vocabSize);
    this.emptyMask = new Uint32Array(this.words);
    this.stateAtDepth = new Int32Array(trie.maxTokenLength + 2);
    this.lexer = options.lexerLevel === false ? null : LexerLevelWalks.over(trie, automaton);
  }

  get start(): number {
    return this.automaton.start;
  }

  /** Whether masks go through the lexer-level cache (the automaton's shape was recognised). */
  get lexerLevel(): boolean {
    return this.lexer !== null;
  }

  /** Every token the grammar allows in `state`, whatever the budget. Read only. */
  allowedMask(state: number): Uint32Array {
    return state < 0 ? this.emptyMask : this.edgesOf(state).mask;
  }

  /** Distinct states the allowed tokens of `state` lead to (tests, budgets). */
  targetsOf(state: number): Int32Array {
    return state < 0 ? new Int32Array(0) : this.edgesOf(state).distinct;
  }

  isAccepting(state: number): boolean {
    return state >= 0 && this.automaton.isComplete(state);
  }

  /**
   * The allowed tokens of `state` and their distinct target states: commit-free tokens from the
   * lexer-level walk of its hypotheses' lexer states (targets from one representative token per
   * distinct lexer outcome), commit subtrees walked with the automaton.
   */
  private edgesOf(state: number): StateEdges {
    let e = this.edges.get(state);
    if (e !== undefined) return e;
    const mask = new Uint32Array(this.words);
    const collected = this.collected;
    collected.length = 0;
    const stamp = ++this.stamp;
    const lexId = this.lexer?.lexSetOf(state) ?? -1;
    if (lexId >= 0) {
      const walk = this.lexer!.walk(lexId);
      mask.set(walk.mask);
      const conts = walk.contStates;
      for (let i = 0; i < conts.length; i += 2) {
        const target = this.advanceNode(state, conts[i + 1]!);
        if (target < 0) throw new Error("grammar matcher: lexer-level walk disagrees with the automaton");
        this.collect(target, stamp);
      }
      const commits = walk.commitNodes;
      for (let i = 0; i < commits.length; i++) this.walkSubtree(state, commits[i]!, mask, stamp, null);
    } else {
      this.walkSubtree(state, 0, mask, stamp, null);
    }
    const automaton = this.automaton;
    const lb = collected.map((t) => automaton.minBytesLowerBound(t));
    const order = collected.map((_, i) => i).sort((x, y) => lb[x]! - lb[y]!);
    e = { mask, distinct: Int32Array.from(order, (i) => collected[i]!), allFitFrom: Number.POSITIVE_INFINITY };
    this.edges.set(state, e);
    return e;
  }

  private collect(target: number, stamp: number): void {
    if (target >= this.seenStamp.length) this.growSeen(target);
    if (this.seenStamp[target] !== stamp) {
      this.seenStamp[target] = stamp;
      this.collected.push(target);
    }
  }

  private growSeen(state: number): void {
    let n = this.seenStamp.length;
    while (n <= state) n *= 2;
    const grown = new Int32Array(n);
    grown.set(this.seenStamp);
    this.seenStamp = grown;
  }

  /** State after the bytes of trie node `node`'s prefix, from `state`. */
  private advanceNode(state: number, node: number): number {
    const { tokenIds, tokenStart, offsets, data, depth } = this.trie;
    const id = tokenIds[tokenStart[node]!]!; // first token at or below the node: shares its prefix
    let s = state;
    for (let i = offsets[id]!, end = i + depth[node]!; i < end && s >= 0; i++) s = this.automaton.step(s, data[i]!);
    return s;
  }

  /**
   * Walks the subtree of trie node `root` with the automaton from `state` (whose bytes lead to
   * the root first). Without `fits`: sets the bits of reachable tokens and collects their targets;
   * with it: sets the bits of reachable tokens whose target is marked true.
   */
  private walkSubtree(state: number, root: number, mask: Uint32Array, stamp: number, fits: Map<number, boolean> | null): void {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, depth } = this.trie;
    const automaton = this.automaton;
    const stateAtDepth = this.stateAtDepth;
    const rootState = root === 0 ? state : this.advanceNode(state, root);
    if (rootState < 0) return;
    const end = root + subtreeSize[root]!;
    stateAtDepth[depth[root]!] = rootState;
    let p = root;
    if (root === 0) p = 1;
    while (p < end) {
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      let ns: number;
      if (p === root) ns = rootState;
      else {
        ns = automaton.step(stateAtDepth[d - 1]!, info & 0xff);
        if (ns < 0) {
          p += subtreeSize[p]!;
          continue;
        }
        stateAtDepth[d] = ns;
      }
      if ((info & 0x80000000) !== 0 && (fits === null || fits.get(ns) === true)) {
        for (let k = tokenStart[p]!, to = tokenStart[p + 1]!; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
        if (fits === null) this.collect(ns, stamp);
      }
      p++;
    }
  }

  /** State after the token, or -1 when the grammar does not allow it here. */
  advance(state: number, token: number): number {
    if (state < 0 || !this.trie.isGenerable(token)) return -1;
    const { offsets, data } = this.trie;
    let s = state;
    for (let i = offsets[token]!, end = offsets[token + 1]!; i < end && s >= 0; i++) s = this.automaton.step(s, data[i]!);
    return s;
  }

  /**
   * Healing: the tokens that begin with `prefix` and whose remaining bytes the grammar allows at
   * the start, with their target states. Cached: most prompts end in one of a few tokens.
   */
  prefixEdges(prefix: Uint8Array): { tokens: Int32Array; targets: Int32Array } {
    const key = String.fromCharCode(...prefix);
    let hit = this.prefixCache.get(key);
    if (hit !== undefined) return hit;
    const trie = this.trie;
    const node = trie.findNode(prefix);
    const tokens: number[] = [];
    const targets: number[] = [];
    if (node >= 0) {
      const startAfterPrefix = this.start;
      const from = trie.tokenStart[node]!;
      const to = trie.tokenStart[node + trie.subtreeSize[node]!]!;
      for (let k = from; k < to; k++) {
        const id = trie.tokenIds[k]!;
        const target = this.advanceBytes(startAfterPrefix, trie.tokenBytes(id).subarray(prefix.length));
        if (target >= 0) {
          tokens.push(id);
          targets.push(target);
        }
      }
    }
    hit = { tokens: Int32Array.from(tokens), targets: Int32Array.from(targets) };
    if (this.prefixCache.size >= 256) this.prefixCache.delete(this.prefixCache.keys().next().value!);
    this.prefixCache.set(key, hit);
    return hit;
  }

  /** State after raw bytes from `state` (healing: the bytes after a forced prefix), or -1. */
  advanceBytes(state: number, bytes: Uint8Array): number {
    let s = state;
    for (let i = 0; i < bytes.length && s >= 0; i++) s = this.automaton.step(s, bytes[i]!);
    return s;
  }

  /**
   * Tokens that surely suffice from `state` (Infinity: unknown): the fewest tokens that spell the
   * shortest completing byte string. The automaton is byte-level, so any segmentation of a valid
   * byte continuation into tokens is a valid token path.
   */
  private tokenUpperBound(state: number): number {
    const known = this.tokenBound.get(state);
    if (known !== undefined) return known;
    const path = this.shortestCompletion(state, 5000);
    if (path === null) {
      this.tokenBound.set(state, Number.POSITIVE_INFINITY);
      return Number.POSITIVE_INFINITY;
    }
    const cuts = this.fewestTokensSpelling(path);
    if (cuts === null) {
      this.tokenBound.set(state, Number.POSITIVE_INFINITY);
      return Number.POSITIVE_INFINITY;
    }
    // Record the bound along the witness too: after its first token k-1 tokens suffice, and so on.
    // Then a token allowed because of this bound leaves a state whose own bound agrees, and the
    // next mask cannot come out empty because a later search gave up.
    let s = state;
    for (let i = 0, at = 0; i < cuts.length; i++) {
      const left = cuts.length - i;
      const old = this.tokenBound.get(s);
      if (old === undefined || old > left) this.tokenBound.set(s, left);
      for (const end = cuts[i]!; at < end; at++) s = this.automaton.step(s, path[at]!);
    }
    return cuts.length;
  }

  /** Token boundaries (end offsets) of the fewest-token spelling of `bytes`; null when none. */
  private fewestTokensSpelling(bytes: Uint8Array): number[] | null {
    const n = bytes.length;
    const best = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
    const from = new Int32Array(n + 1);
    best[0] = 0;
    const { nodeByte, subtreeSize, tokenStart } = this.trie;
    for (let i = 0; i < n; i++) {
      if (best[i] === Number.POSITIVE_INFINITY) continue;
      let p = 0;
      for (let j = i; j < n; j++) {
        const end = p + subtreeSize[p]!;
        let c = p + 1;
        while (c < end && nodeByte[c]! < bytes[j]!) c += subtreeSize[c]!;
        if (c >= end || nodeByte[c] !== bytes[j]) break;
        p = c;
        if (tokenStart[p + 1]! > tokenStart[p]! && best[i]! + 1 < best[j + 1]!) {
          best[j + 1] = best[i]! + 1;
          from[j + 1] = i;
        }
      }
    }
    if (best[n] === Number.POSITIVE_INFINITY) return null;
    const cuts: number[] = [];
    for (let j = n; j > 0; j = from[j]!) cuts.push(j);
    return cuts.reverse();
  }

  /**
   * The shortest byte string from `state` to a complete sentence (null: none found within
   * `maxExpansions`): A* with the automaton's lower bound as heuristic. Each state's bytes
   * are grouped by their lexer-level effect, so the many bytes that merely extend a
   * string or a name cost one step.
   */
  private shortestCompletion(state: number, maxExpansions: number): Uint8Array | null {
    const automaton = this.automaton;
    const lexer = this.lexer;
    const g = new Map<number, number>([[state, 0]]);
    const via = new Map<number, number>(); // state → previous state * 256 + byte
    const buckets: number[][] = [];
    let f = 0;
    const push = (s: number, cost: number): void => {
      const h = automaton.minBytesLowerBound(s);
      if (h === Infinity) return;
      (buckets[Math.max(f, cost + h)] ??= []).push(s);
    };
    push(state, 0);
    let expansions = 0;
    const codes: number[] = [];
    for (; f < buckets.length; f++) {
      const bucket = buckets[f];
      if (!bucket) continue;
      while (bucket.length) {
        const s = bucket.pop()!;
        const cost = g.get(s)!;
        if (Math.max(f, cost + automaton.minBytesLowerBound(s)) !== f) continue;
        if (automaton.isComplete(s)) {
          const path = new Uint8Array(cost);
          for (let at = s, i = cost - 1; i >= 0; i--) {
            const link = via.get(at)!;
            path[i] = link & 0xff;
            at = (link - (link & 0xff)) / 256;
          }
          return path;
        }
        if (++expansions > maxExpansions) return null;
        const lexId = lexer === null ? -1 : lexer.lexSetOf(s);
        codes.length = 0;
        for (let b = 0; b < 256; b++) {
          if (lexId >= 0) {
            // Without a commit, bytes with the same lexer successor lead to the same state.
            const code = lexer!.stepCode(lexId, b);
            if (code === 0) continue;
            if ((code & COMMIT) === 0) {
              if (codes.includes(code)) continue;
              codes.push(code);
            }
          }
          const ns = automaton.step(s, b);
          if (ns < 0) continue;
          const old = g.get(ns);
          if (old !== undefined && old <= cost + 1) continue;
          g.set(ns, cost + 1);
          via.set(ns, s * 256 + b);
          push(ns, cost + 1);
        }
      }
    }
    return null;
  }

  /** Whether a complete sentence is reachable from `state` within `budget` tokens. */
  canAcceptWithin(state: number, budget: number): boolean {
    this.searchLeft = SEARCH_LIMIT;
    this.searchGaveUp = false;
    return this.finishable(state, budget);
  }

  private finishable(state: number, budget: number): boolean {
    if (state < 0) return false;
    if (this.automaton.isComplete(state)) return true;
    if (budget <= 0) return false;
    const lower = this.automaton.minBytesLowerBound(state);
    if (lower === Infinity || lower > budget * this.trie.maxTokenLength) return false;
    if (this.tokenUpperBound(state) <= budget) return true;
    const key = state * 65536 + Math.min(budget, BUDGET_KEY_CAP);
    const memo = this.finishMemo.get(key);
    if (memo !== undefined) return memo === 1;
    if (this.searchLeft-- <= 0) {
      this.searchGaveUp = true;
      return false;
    }
    let found = false;
    const { distinct } = this.edgesOf(state);
    for (let i = 0; i < distinct.length && !found; i++) found = this.finishable(distinct[i]!, budget - 1);
    // A give-up answer is not memoized as "no": another query with more effort may find a way.
    if (found || !this.searchGaveUp) this.finishMemo.set(key, found ? 1 : 0);
    return found;
  }

  /** Fewest tokens to a complete sentence, searched up to `cap` (Infinity beyond it). */
  minTokensToAccept(state: number, cap: number): number {
    for (let k = 0; k <= cap; k++) if (this.canAcceptWithin(state, k)) return k;
    return Number.POSITIVE_INFINITY;
  }

  /** Tokens allowed in `state` with `remaining` tokens left (this one included). Read only. */
  mask(state: number, remaining: number): Uint32Array {
    if (state < 0 || remaining <= 0) return this.emptyMask;
    const e = this.edgesOf(state);
    const limit = remaining - 1;
    if (limit >= e.allFitFrom) return e.mask;
    let all = true;
    for (let i = 0; i < e.distinct.length && all; i++) if (!this.canAcceptWithin(e.distinct[i]!, limit)) all = false;
    if (all) {
      e.allFitFrom = limit;
      return e.mask;
    }
    const key = state * 65536 + Math.min(limit, BUDGET_KEY_CAP);
    let mask = this.budgetMasks.get(key);
    if (mask !== undefined) return mask;
    mask = this.budgetMask(state, e, limit);
    this.budgetMasks.set(key, mask);
    return mask;
  }

  /** The walk again, keeping the tokens whose target can still finish within `limit` tokens. */
  private budgetMask(state: number, e: StateEdges, limit: number): Uint32Array {
    const fits = new Map<number, boolean>();
    for (let i = 0; i < e.distinct.length; i++) fits.set(e.distinct[i]!, this.canAcceptWithin(e.distinct[i]!, limit));
    const mask = new Uint32Array(this.words);
    const lexId = this.lexer?.lexSetOf(state) ?? -1;
    if (lexId < 0) {
      this.walkSubtree(state, 0, mask, 0, fits);
      return mask;
    }
    const walk = this.lexer!.walk(lexId);
    const conts = walk.contStates;
    const keep = new Set<number>();
    for (let i = 0; i < conts.length; i += 2) if (fits.get(this.advanceNode(state, conts[i + 1]!)) === true) keep.add(conts[i]!);
    if (keep.size === conts.length / 2) mask.set(walk.mask);
    else if (keep.size > 0) this.lexer!.maskOf(lexId, keep, mask);
    const commits = walk.commitNodes;
    for (let i = 0; i < commits.length; i++) this.walkSubtree(state, commits[i]!, mask, 0, fits);
    return mask;
  }

  hasAnyToken(state: number, remaining: number): boolean {
    const mask = this.mask(state, remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Lexer-level walks (XGrammar's context-independent tokens, for this automaton).
//
// A state of the grammar stage's GrammarAutomaton is a set of hypotheses (parser stack, scanner DFA
// state of the token in progress, ...), and step() treats each hypothesis on its own. While a
// hypothesis only extends its token in progress (no terminal is committed), what happens depends on
// the scanner of its stack's top state and its lexer fields, not on the stack. So one trie walk
// per tuple of lexer-level states (one per hypothesis) serves every set of stacks: it gives the
// tokens whose bytes never commit a terminal (allowed whatever the stack) and the trie nodes where
// a commit happens; only those subtrees (after a closing quote, a delimiter...) are walked with the
// real automaton. Inside a JSON string that turns a walk over the whole 152k vocabulary per parser
// stack into a lookup.
//
// This mirrors the continue branch of GrammarAutomaton.step (src/grammar/incremental.ts) and reads
// its fields; it checks their shape on construction and is skipped (plain walks) when they differ.
// test/cfg-matcher.test.ts compares both ways mask for mask.

interface HypothesisView {
  stack: number;
  dfaState: number;
  firstAccepted: number;
  tokenLen: number;
  ignoredRun: number;
  constraints: number[];
}

interface ScannerView {
  dfa: { start: number; numClasses: number; byteClass: Uint8Array; next: Int32Array };
  unless: readonly (readonly [number, { ignored: boolean }])[][];
  terms: readonly { ignored: boolean }[];
  termOf: Int32Array;
  numOrdered: number;
  shortest: Uint8Array;
  canAccept: Uint8Array;
  accept: Uint8Array;
  numPatterns: number;
  broken: boolean;
}

interface AutomatonView {
  sets: HypothesisView[][];
  scannerDfas: ScannerView[];
  scannerOfState: Int32Array;
  stackTop: number[];
  maxIgnoredRun: number;
}

function automatonView(automaton: unknown): AutomatonView | null {
  const a = automaton as Partial<AutomatonView>;
  if (!Array.isArray(a.sets) || !Array.isArray(a.scannerDfas) || !(a.scannerOfState instanceof Int32Array)) return null;
  if (!Array.isArray(a.stackTop) || typeof a.maxIgnoredRun !== "number") return null;
  for (const sc of a.scannerDfas) {
    if (!(sc?.accept instanceof Uint8Array && sc.canAccept instanceof Uint8Array && sc.shortest instanceof Uint8Array)) return null;
    if (!(sc.termOf instanceof Int32Array) || typeof sc.numOrdered !== "number" || typeof sc.numPatterns !== "number") return null;
    if (!(sc.dfa?.next instanceof Int32Array) || !Array.isArray(sc.terms) || !Array.isArray(sc.unless)) return null;
    if (typeof sc.dfa.start !== "number") return null;
  }
  const start = a.sets[(automaton as { start: number }).start];
  const h = start?.[0];
  if (!h || typeof h.dfaState !== "number" || typeof h.tokenLen !== "number" || !Array.isArray(h.constraints)) return null;
  return a as AutomatonView;
}

interface LexerWalk {
  /** Tokens whose bytes only extend the token in progress (allowed whatever the stack). */
  mask: Uint32Array;
  /** Pairs (lexer state after the bytes, a trie node ending tokens with that state). */
  contStates: Int32Array;
  /** Trie nodes where a terminal commits: their subtrees need the parser. */
  commitNodes: Int32Array;
}

const COMMIT = 0x40000000;
const UNKNOWN = -1;

class LexerLevelWalks {
  private readonly fields: number[] = []; // per lexer state: scanner, dfa state, first, tokenLen, ignoredRun
  private readonly constraintsOf: number[][] = [];
  private readonly ids = new Map<string, number>();
  private next = new Int32Array(256 * 64).fill(UNKNOWN);
  /** Lexer state after an ignored terminal ends at the byte (stack unchanged), or -1. */
  private ignoredNext = new Int32Array(256 * 64).fill(-1);
  private readonly walks = new Map<number, LexerWalk>();
  private readonly setOf = new Map<number, number>();
  private readonly setMembers: number[][][] = [];
  private readonly setIds = new Map<string, number>();
  private setNext = new Int32Array(256 * 64).fill(UNKNOWN);
  private readonly atDepth: Int32Array;
  private seen = new Int32Array(64);
  private stamp = 0;

  private constructor(
    private readonly trie: TokenTrie,
    private readonly view: AutomatonView,
  ) {
    this.atDepth = new Int32Array(trie.maxTokenLength + 2);
  }

  static over(trie: TokenTrie, automaton: CompletableAutomaton): LexerLevelWalks | null {
    const view = automatonView(automaton);
    return view === null ? null : new LexerLevelWalks(trie, view);
  }

  /**
   * The lexer states of an automaton state's hypotheses, as a tuple in hypothesis order.
   * Hypotheses are independent in step(), so a token is allowed iff some member allows it; the
   * stacks only matter in commit subtrees, which the real automaton walks.
   */
  lexSetOf(state: number): number {
    let id = this.setOf.get(state);
    if (id !== undefined) return id;
    const hyps = this.view.sets[state];
    if (hyps === undefined || hyps.length === 0) id = -1;
    else {
      const members: number[][] = [];
      for (const h of hyps) {
        members.push([this.intern(this.view.scannerOfState[this.view.stackTop[h.stack]!]!, h.dfaState, h.firstAccepted, h.tokenLen, h.ignoredRun, h.constraints)]);
      }
      id = this.internSet(members);
    }
    this.setOf.set(state, id);
    return id;
  }

  private intern(scanner: number, dfaState: number, first: number, tokenLen: number, ignoredRun: number, constraints: number[]): number {
    const key = `${scanner},${dfaState},${first},${tokenLen},${ignoredRun},${constraints.join(".")}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.constraintsOf.length;
      this.fields.push(scanner, dfaState, first, tokenLen, ignoredRun);
      this.constraintsOf.push(constraints);
      this.ids.set(key, id);
      if ((id + 1) * 256 > this.next.length) {
        const grown = new Int32Array(this.next.length * 2).fill(UNKNOWN);
        grown.set(this.next);
        this.next = grown;
        const grownIgnored = new Int32Array(this.ignoredNext.length * 2).fill(-1);
        grownIgnored.set(this.ignoredNext);
        this.ignoredNext = grownIgnored;
      }
    }
    return id;
  }

  /** Next lexer-state set + 1 (0: no token in progress can continue), | COMMIT when a terminal may end here. */
  stepCode(setId: number, byte: number): number {
    return this.step(setId, byte);
  }

  private step(setId: number, byte: number): number {
    const slot = setId * 256 + byte;
    const hit = this.setNext[slot]!;
    if (hit !== UNKNOWN) return hit;
    const positions = this.setMembers[setId]!;
    let commit = 0;
    let alive = false;
    const out: number[][] = [];
    for (let i = 0; i < positions.length; i++) {
      const members = positions[i]!;
      const next: number[] = [];
      for (let j = 0; j < members.length; j++) {
        const code = this.stepOne(members[j]!, byte);
        commit |= code & COMMIT;
        const cont = (code & ~COMMIT) - 1;
        if (cont >= 0 && !next.includes(cont)) next.push(cont);
        const ignored = this.ignoredNext[members[j]! * 256 + byte]!;
        if (ignored >= 0 && !next.includes(ignored)) next.push(ignored);
      }
      if (next.length > 0) alive = true;
      out.push(next.sort((a, b) => a - b));
    }
    const result = commit | (alive ? this.internSet(out) + 1 : 0);
    this.setNext[slot] = result;
    return result;
  }

  /**
   * Positional: entry i holds the lexer states hypothesis i has become (continued, or restarted
   * after an ignored terminal: both keep its stack), so with the source state's stacks a tuple
   * determines the concrete target state.
   */
  private internSet(positions: number[][]): number {
    const key = positions.map((p) => p.join(".")).join("|");
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.setMembers.length;
      this.setMembers.push(positions);
      this.setIds.set(key, id);
      if ((id + 1) * 256 > this.setNext.length) {
        const grown = new Int32Array(this.setNext.length * 2).fill(UNKNOWN);
        grown.set(this.setNext);
        this.setNext = grown;
      }
    }
    return id;
  }

  private stepOne(id: number, byte: number): number {
    const slot = id * 256 + byte;
    const hit = this.next[slot]!;
    if (hit !== UNKNOWN) return hit;
    const result = this.compute(id, byte);
    this.next[slot] = result;
    return result;
  }

  // Mirrors GrammarAutomaton.step for one hypothesis, without the commit's parser feed.
  private compute(id: number, byte: number): number {
    const v = this.view;
    const f = id * 5;
    const scId = this.fields[f]!;
    const first0 = this.fields[f + 2]!;
    const tokenLen0 = this.fields[f + 3]!;
    const ignoredRun = this.fields[f + 4]!;
    const old = this.constraintsOf[id]!;
    const constraints: number[] = [];
    for (let c = 0; c < old.length; c += 3) {
      const cs = v.scannerDfas[old[c]!]!;
      const ns = cs.dfa.next[old[c + 1]! * cs.dfa.numClasses + cs.dfa.byteClass[byte]!]!;
      if (ns < 0) continue;
      const upTo = old[c + 2]!;
      for (let p = 0; p <= upTo; p++) if (cs.accept[ns * cs.numPatterns + p]) return 0;
      let alive = false;
      for (let p = 0; p <= upTo && !alive; p++) if (cs.canAccept[ns * cs.numPatterns + p]) alive = true;
      if (alive) constraints.push(old[c]!, ns, upTo);
    }
    const sc = v.scannerDfas[scId]!;
    if (sc.broken) return 0;
    const d = sc.dfa;
    const P = sc.numPatterns;
    const ns = d.next[this.fields[f + 1]! * d.numClasses + d.byteClass[byte]!]!;
    if (ns < 0) return 0;
    let first = first0;
    const limit = first < 0 ? sc.numOrdered : first;
    for (let p = 0; p < limit; p++) if (sc.accept[ns * P + p]) { first = p; break; }
    const tokenLen = Math.min(tokenLen0 + 1, v.maxIgnoredRun + 2);
    const newlyAccepted = first >= 0 && first !== first0;
    const commit = first >= 0 && sc.accept[ns * P + first] === 1 && (!sc.shortest[first] || newlyAccepted);
    let result = 0;
    if (commit) {
      // GrammarAutomaton.commit: the terminal (or the keyword shadowing it), then an ignored one
      // restarts the scanner on the same stack; anything else needs the parser.
      let ignored = sc.terms[sc.termOf[first]!]!.ignored;
      for (const [shadow, str] of sc.unless[sc.termOf[first]!]!) {
        if (sc.accept[ns * P + shadow]) {
          ignored = str.ignored;
          break;
        }
      }
      if (!ignored) result = COMMIT;
      else if (ignoredRun + tokenLen <= v.maxIgnoredRun) {
        const upTo = sc.shortest[first] ? first - 1 : first;
        const after = upTo < 0 ? constraints.slice() : [...constraints, scId, ns, upTo];
        const restarted = this.intern(scId, sc.dfa.start, -1, 0, ignoredRun + tokenLen, after);
        this.ignoredNext[id * 256 + byte] = restarted;
      }
    }
    const contBound = first < 0 ? sc.numOrdered - 1 : sc.shortest[first] ? first - 1 : first;
    if (contBound < 0 || !hasSuccessor(sc, ns, contBound)) return result;
    let onlyIgnored = true;
    for (let p = 0; p <= contBound && onlyIgnored; p++) {
      if ((sc.canAccept[ns * P + p] || p === first) && !sc.terms[sc.termOf[p]!]!.ignored) onlyIgnored = false;
    }
    if (onlyIgnored && ignoredRun + tokenLen > v.maxIgnoredRun) return result;
    result |= this.intern(scId, ns, first, tokenLen, ignoredRun, constraints) + 1;
    return result;
  }

  walk(lexId: number): LexerWalk {
    let w = this.walks.get(lexId);
    if (w !== undefined) return w;
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const mask = new Uint32Array(maskWords(this.trie.vocabSize));
    const conts: number[] = [];
    const commits: number[] = [];
    const atDepth = this.atDepth;
    const stamp = ++this.stamp;
    atDepth[0] = lexId;
    let p = 1;
    while (p < numNodes) {
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const code = this.step(atDepth[d - 1]!, info & 0xff);
      if ((code & COMMIT) !== 0) {
        // Every token below needs the parser: the real automaton walks this subtree.
        commits.push(p);
        p += subtreeSize[p]!;
        continue;
      }
      const cont = code - 1;
      if (cont < 0) {
        p += subtreeSize[p]!;
        continue;
      }
      atDepth[d] = cont;
      if ((info & 0x80000000) !== 0) {
        for (let k = tokenStart[p]!, to = tokenStart[p + 1]!; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
        if (cont >= this.seen.length) {
          const grown = new Int32Array(Math.max(cont + 1, this.seen.length * 2));
          grown.set(this.seen);
          this.seen = grown;
        }
        if (this.seen[cont] !== stamp) {
          this.seen[cont] = stamp;
          conts.push(cont, p);
        }
      }
      p++;
    }
    w = { mask, contStates: Int32Array.from(conts), commitNodes: Int32Array.from(commits) };
    this.walks.set(lexId, w);
    return w;
  }

  /** Sets in `mask` the commit-free tokens of the walk from `lexId` that end in a state of `keep`. */
  maskOf(lexId: number, keep: Set<number>, mask: Uint32Array): void {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, numNodes } = this.trie;
    const atDepth = this.atDepth;
    atDepth[0] = lexId;
    let p = 1;
    while (p < numNodes) {
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const code = this.step(atDepth[d - 1]!, info & 0xff);
      const cont = code - 1;
      if ((code & COMMIT) !== 0 || cont < 0) {
        p += subtreeSize[p]!;
        continue;
      }
      atDepth[d] = cont;
      if ((info & 0x80000000) !== 0 && keep.has(cont)) {
        for (let k = tokenStart[p]!, to = tokenStart[p + 1]!; k < to; k++) {
          const id = tokenIds[k]!;
          mask[id >>> 5]! |= 1 << (id & 31);
        }
      }
      p++;
    }
  }
}

function hasSuccessor(sc: ScannerView, state: number, bound: number): boolean {
  const d = sc.dfa;
  for (let c = 0; c < d.numClasses; c++) {
    const ns = d.next[state * d.numClasses + c]!;
    if (ns < 0) continue;
    for (let p = 0; p <= bound; p++) if (sc.canAccept[ns * sc.numPatterns + p]) return true;
  }
  return false;
}

/** `state` value while a healed prompt's forced prefix is still to come. */
const PREFIX_PENDING = -2;

/**
 * One request's position in a GrammarTokenMatcher, with optional prompt-boundary healing: the
 * first token must begin with `forcedPrefix`, whose bytes are not part of the sentence.
 */
export class GrammarConstraintState {
  state: number;
  private readonly prefixTokens: Int32Array | undefined;
  private readonly prefixTargets: Int32Array | undefined;

  constructor(
    readonly matcher: GrammarTokenMatcher,
    forcedPrefix?: Uint8Array,
  ) {
    if (forcedPrefix === undefined || forcedPrefix.length === 0) {
      this.state = matcher.start;
      return;
    }
    this.state = PREFIX_PENDING;
    const edges = matcher.prefixEdges(forcedPrefix);
    this.prefixTokens = edges.tokens;
    this.prefixTargets = edges.targets;
  }

  isAccepting(): boolean {
    return this.state !== PREFIX_PENDING && this.matcher.isAccepting(this.state);
  }

  mask(remaining: number): Uint32Array {
    if (this.state !== PREFIX_PENDING) return this.matcher.mask(this.state, remaining);
    const mask = new Uint32Array(this.matcher.words);
    if (remaining <= 0) return mask;
    const tokens = this.prefixTokens!;
    const targets = this.prefixTargets!;
    for (let i = 0; i < tokens.length; i++) {
      if (this.matcher.canAcceptWithin(targets[i]!, remaining - 1)) {
        const id = tokens[i]!;
        mask[id >>> 5]! |= 1 << (id & 31);
      }
    }
    return mask;
  }

  hasAnyToken(remaining: number): boolean {
    if (this.state !== PREFIX_PENDING) return this.matcher.hasAnyToken(this.state, remaining);
    const mask = this.mask(remaining);
    for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) return true;
    return false;
  }

  /** Fewest tokens to a complete sentence, searched up to `cap`. */
  minTokensToAccept(cap = 64): number {
    if (this.state !== PREFIX_PENDING) return this.matcher.minTokensToAccept(this.state, cap);
    let best = Number.POSITIVE_INFINITY;
    const targets = this.prefixTargets!;
    for (let i = 0; i < targets.length; i++) best = Math.min(best, 1 + this.matcher.minTokensToAccept(targets[i]!, Math.min(cap, best - 2)));
    return best;
  }

  advance(token: number): boolean {
    let next = -1;
    if (this.state === PREFIX_PENDING) {
      const tokens = this.prefixTokens!;
      for (let i = 0; i < tokens.length; i++) if (tokens[i] === token) next = this.prefixTargets![i]!;
    } else {
      next = this.matcher.advance(this.state, token);
    }
    if (next < 0) return false;
    this.state = next;
    return true;
  }
}
