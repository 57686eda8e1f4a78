/**
 * Upper bounds on the tokens that finish a sentence from a grammar state, for the budgets
 * (budget.ts): "surely reachable within k tokens" comes from a known completing byte string and
 * the fewest tokens that spell it (the automaton is byte-level, so any segmentation of valid bytes
 * into tokens is a valid token path). The string is first a greedy completion (from each
 * configuration the terminal commit with the least shortest-bytes + lower bound after it,
 * memoized along its chain of commits), which settles every roomy budget cheaply; for tight
 * budgets also the shortest completion, by A* over terminals (`tokenEnds`, per lexer state) or
 * over bytes. When every byte is a token, the greedy completion's byte length is itself a bound
 * (`byteBoundOf`), carried one byte along its path as states become current (`carryByteBound`).
 */
import { searchCheapestGoal } from "../../grammar/index.js";
import { DenseTable, IdMap, IntMap, type TableSlab } from "../../support/index.js";
import type { TokenTrie } from "../trie.js";
import type { WorkMeter } from "../work-meter.js";
import type { CompletableAutomaton } from "./contracts.js";
import { COMMIT } from "./lexer-sets.js";
import type { LexerLevelWalks } from "./lexer-walks.js";
import { MEMO_CAPACITY } from "./tables.js";

/** fewestTokensSpelling's "no spelling (yet)". */
const UNSPELLED = 0x7fffffff;
/** Commits a greedy completion may take before it gives up (then A* decides). */
const GREEDY_MAX_COMMITS = 256;
/** Lexer states a token-end search visits at most (a token's own states; ample for real terminals). */
const MAX_TOKEN_END_STATES = 4096;

/**
 * A lexer state's commits (tokenEndsOf): terminal commit keys with the shortest bytes to each,
 * shortest first, and while its breadth-first search goes on, the search (prev: lexer state to
 * parent * 256 + byte; null once it is over).
 */
interface TokenEnds {
  readonly keys: number[];
  readonly bytes: Uint8Array[];
  queue: number[];
  next: number;
  prev: Map<number, number> | null;
}

const NO_STATES: number[] = [];

/** The completions of the states met, and the token and byte bounds they give; memoized. */
export class CompletionBounds {
  /** Per state: tokens that surely suffice to complete (see tokenUpperBound). */
  private readonly tokenBound = new Map<number, number>();
  /**
   * Per state: bytes that surely suffice to complete (-1: Infinity), and where the completing
   * bytes behind that bound go on. With a single-byte token for every byte, n bytes are at most n
   * tokens: a roomy budget is settled by the greedy completion's length alone, without spelling it
   * in tokens or stepping the automaton along it (see byteBoundOf, carryByteBound).
   */
  private readonly byteBound: IdMap;
  /** Where along the greedy chain a state's byte bound goes on: `at` bytes into `node`'s step. */
  private readonly boundNode: IdMap;
  private readonly boundAt: IdMap;
  /** The automaton's byte distances are exact (it spells its shortest completions: a rule network). */
  private readonly exactDistances: boolean;
  /** Every byte is a token and a completion's length is known (lexer-level, or exact distances): byteBoundOf applies. */
  readonly bytesAreTokens: boolean;
  /** Per state: a cap its known completion's spelling was found to need more tokens than (knownPathBound). */
  private readonly spelledOver = new Map<number, number>();
  /** States whose bound has had the shortest-completion search too. */
  private readonly exactBounded = new Set<number>();
  /** Per state: the greedy completion's next commit (see greedyStep, greedyLength). */
  private readonly greedySteps = new DenseTable<{ bytes: Uint8Array; next: number } | null>();
  /**
   * Per state: the greedy completion's length in bytes (-1: none) and its commits. Memoized along
   * the chain: the completions of sibling states (one token apart) soon reach the same shorter
   * stack, so each pays only the steps until a state already measured.
   */
  private readonly greedyBytes: IdMap;
  private readonly greedyCommits: IdMap;
  private readonly greedyWalk: number[] = [];
  /** Per lexer state: the index (in tokenEnds) of the commit the last greedy step from it chose. */
  private readonly greedyHint: IdMap;
  /** fewestTokensSpelling's scratch: fewest tokens to each position, and where the last one starts. */
  private spellBest = new Int32Array(64);
  private spellFrom = new Int32Array(64);
  /** Per lexer state: see tokenEnds. */
  private readonly ends = new Map<number, TokenEnds>();
  /** Bytes of the tokenEnds searches made so far (never lowered: an estimate erring high). */
  private endsBytes = 0;

  /** `lexer`: the lexer-level walks (null: only the byte-level A* gives bounds); `tables`: the matcher's slab. */
  constructor(
    private readonly trie: TokenTrie,
    private readonly automaton: CompletableAutomaton,
    private readonly lexer: LexerLevelWalks | null,
    tables: TableSlab,
    private readonly work: WorkMeter,
  ) {
    this.byteBound = new IdMap(MEMO_CAPACITY, tables);
    this.boundNode = new IdMap(MEMO_CAPACITY, tables);
    this.boundAt = new IdMap(MEMO_CAPACITY, tables);
    this.greedyBytes = new IdMap(MEMO_CAPACITY, tables);
    this.greedyCommits = new IdMap(MEMO_CAPACITY, tables);
    this.greedyHint = new IdMap(MEMO_CAPACITY, tables);
    this.exactDistances = automaton.completingBytes !== undefined;
    this.bytesAreTokens = trie.everyByteIsToken && (lexer !== null || this.exactDistances);
  }

  /** An estimate of the heap bytes of its memos, erring high (see the matcher's). */
  retainedBytes(): number {
    let bytes = 0;
    for (const map of [this.byteBound, this.boundNode, this.boundAt, this.greedyBytes, this.greedyCommits, this.greedyHint])
      bytes += map.byteLength;
    bytes += (this.tokenBound.size + this.exactBounded.size + this.spelledOver.size) * 80;
    return bytes + this.ends.size * 120 + this.endsBytes;
  }

  /**
   * Tokens that surely suffice from `state` (Infinity: unknown), from a known completing byte
   * string: the fewest tokens that spell it. The automaton is byte-level, so any segmentation of
   * a valid byte continuation into tokens is a valid token path. The first answer comes from a
   * cheap greedy completion (enough whenever the budget is roomy, the common case); `exact` asks
   * for the shortest completing bytes too (A*), once per state, when the budget is tight.
   */
  tokenUpperBound(state: number, exact: boolean, cap = Number.POSITIVE_INFINITY): number {
    const known = this.tokenBound.get(state) ?? this.knownPathBound(state, cap);
    // A completion the automaton spells itself is already the shortest.
    if (!exact || this.exactBounded.has(state) || this.exactDistances) return known;
    this.exactBounded.add(state);
    const path = (this.lexer === null ? null : this.terminalLevelCompletion(state, 2000)) ?? this.shortestCompletion(state, 5000);
    return path === null ? known : Math.min(known, this.boundAlong(state, path, Number.POSITIVE_INFINITY));
  }

  /**
   * tokenUpperBound's first answer: the fewest tokens spelling a known completion (the shortest
   * the automaton spells itself, or the greedy one), memoized; Infinity, not memoized, when they
   * are more than `cap` (a caller asking "within `cap`?" learns all it asks). A completion of
   * 600 array items (20k bytes) was spelled and stepped to its end for each budget question
   * under 512 tokens, ~190 ms of its compile's probe; spelled only as far as a cap, the caps
   * doubling from one question to the next, it is read a few thousand bytes in all.
   */
  private knownPathBound(state: number, cap: number): number {
    const over = this.spelledOver.get(state) ?? 0;
    if (over >= cap) return Number.POSITIVE_INFINITY;
    // A shortest completion the automaton spells itself (exact distances) beats the greedy one.
    const path = this.exactDistances
      ? (this.automaton.completingBytes?.(state) ?? null)
      : this.lexer === null
        ? null
        : this.greedyCompletionOf(state);
    const limit = Math.max(cap, 2 * over);
    const known = path === null ? Number.POSITIVE_INFINITY : this.boundAlong(state, path, limit);
    if (path !== null && known > limit) {
      this.spelledOver.set(state, limit);
      return Number.POSITIVE_INFINITY;
    }
    if (!this.tokenBound.has(state)) this.tokenBound.set(state, known);
    return known;
  }

  /** The greedy completion's bytes, spelled out from the memoized chain (null: none). */
  private greedyCompletionOf(state: number): Uint8Array | null {
    const length = this.greedyLength(state);
    if (length === Number.POSITIVE_INFINITY) return null;
    const out = new Uint8Array(length);
    for (let s = state, at = 0; at < length; ) {
      const step = this.greedySteps.get(s)!;
      out.set(step.bytes, at);
      at += step.bytes.length;
      s = step.next;
    }
    return out;
  }

  /** Bytes that surely suffice from `state` (Infinity: unknown): the greedy completion's length. */
  byteBoundOf(state: number): number {
    if (this.exactDistances) return this.automaton.minBytesLowerBound(state);
    if (this.lexer === null) return Number.POSITIVE_INFINITY;
    const known = this.byteBound.get(state);
    if (known !== IntMap.MISSING) return known < 0 ? Number.POSITIVE_INFINITY : known;
    const length = this.greedyLength(state);
    if (length === Number.POSITIVE_INFINITY) {
      this.byteBound.set(state, -1);
      return length;
    }
    this.byteBound.set(state, length);
    this.boundNode.set(state, state);
    this.boundAt.set(state, 0);
    return length;
  }

  /**
   * The greedy completion's length from `state` (Infinity: it dead-ends, loops or runs past
   * GREEDY_MAX_COMMITS): its steps until a state already measured (or complete), then the
   * lengths of all the states walked, backwards.
   */
  private greedyLength(state: number): number {
    const lengths = this.greedyBytes;
    const commits = this.greedyCommits;
    const automaton = this.automaton;
    let tail = lengths.get(state);
    if (tail !== IntMap.MISSING) return tail < 0 ? Number.POSITIVE_INFINITY : tail;
    const walk = this.greedyWalk;
    walk.length = 0;
    let tailCommits = 0;
    for (let s = state; ; ) {
      if (automaton.isComplete(s)) {
        tail = 0;
        break;
      }
      const known = lengths.get(s);
      if (known !== IntMap.MISSING) {
        tail = known;
        tailCommits = commits.get(s);
        break;
      }
      const step = walk.length < GREEDY_MAX_COMMITS ? this.greedyStep(s) : null;
      if (step === null) {
        tail = -1;
        break;
      }
      walk.push(s);
      s = step.next;
    }
    for (let i = walk.length - 1; i >= 0; i--) {
      const s = walk[i]!;
      if (tail >= 0) {
        tail += this.greedySteps.get(s)!.bytes.length;
        if (++tailCommits > GREEDY_MAX_COMMITS) tail = -1;
      }
      lengths.set(s, tail);
      commits.set(s, tailCommits);
    }
    return tail < 0 ? Number.POSITIVE_INFINITY : tail;
  }

  /**
   * Called when `state` is current: the state one byte along its bound's bytes gets that bound
   * less one. A token allowed because its target's byte bound fit leaves a state where at least
   * that byte's own token still fits, so a mask never comes out empty because of this bound.
   */
  carryByteBound(state: number): void {
    let node = this.boundNode.get(state);
    if (node === IntMap.MISSING) return;
    let at = this.boundAt.get(state);
    let step = this.greedySteps.get(node);
    // Steps of no bytes (a terminal already lexed, only committed) are passed over.
    while (step !== undefined && step !== null && at >= step.bytes.length) {
      node = step.next;
      at = 0;
      step = this.greedySteps.get(node);
    }
    if (step === undefined || step === null) return;
    const next = this.automaton.step(state, step.bytes[at]!);
    if (next < 0) return;
    const left = this.byteBound.get(state) - 1;
    const old = this.byteBound.get(next);
    if (old >= 0 && old <= left) return; // MISSING and -1 (Infinity) are negative
    this.byteBound.set(next, left);
    const stepEnds = at + 1 >= step.bytes.length;
    this.boundNode.set(next, stepEnds ? step.next : node);
    this.boundAt.set(next, stepEnds ? 0 : at + 1);
  }

  /**
   * The fewest tokens spelling `path` (a completion of `state`), recorded as a bound for `state`
   * and for the states at the spelling's token boundaries: after its first token k-1 tokens
   * suffice, and so on. Then a token allowed because of this bound leaves a state whose own bound
   * agrees, and the next mask cannot come out empty because a later search gave up.
   */
  private boundAlong(state: number, path: Uint8Array, limit: number): number {
    const cuts = this.fewestTokensSpelling(path, limit);
    if (cuts === null) return Number.POSITIVE_INFINITY;
    let s = state;
    for (let i = 0, at = 0; i < cuts.length; i++) {
      const left = cuts.length - i;
      const old = this.tokenBound.get(s);
      if (old === undefined || old > left) this.tokenBound.set(s, left);
      for (const end = cuts[i]!; at < end; at++) s = this.automaton.step(s, path[at]!);
    }
    return cuts.length;
  }

  /**
   * One step of the greedy completion (some completing byte string of a state, found without
   * search): from the configuration, the terminal commit whose shortest bytes plus the
   * automaton's lower bound after it is least (`tokenEnds`, afterCommit). Memoized per
   * configuration; null when it dead-ends (then A* decides).
   */
  private greedyStep(state: number): { bytes: Uint8Array; next: number } | null {
    const known = this.greedySteps.get(state);
    if (known !== undefined) return known;
    this.work.charge(1);
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    const hyps = automaton.hypotheses(state);
    // No commit can cost less than the state's own lower bound: one that meets it is chosen at
    // once. The commit chosen last time from the same lexer state is tried first (the next
    // state down a chain usually repeats it: a closing bracket, the end of a string).
    const floor = automaton.minBytesLowerBound(state);
    let bestCost = Number.POSITIVE_INFINITY;
    let bestBytes: Uint8Array | null = null;
    let bestStack = -1;
    let bestKey = -1;
    let bestLex = -1;
    let bestIndex = -1;
    for (let h = 0; h < hyps.length && bestCost > floor; h += 2) {
      const lex = hyps[h + 1]!;
      const ends = this.tokenEndsOf(lex);
      const hint = this.greedyHint.get(lex);
      // The hint (a commit already found) first, then the others shortest first: the search
      // stops at the first longer than the best cost, whose bytes alone cost as much.
      const first = hint === IntMap.MISSING || hint >= ends.keys.length ? -1 : hint;
      for (let j = first < 0 ? 0 : -1; bestCost > floor; j++) {
        const i = j < 0 ? first : j;
        if (i === first && j >= 0) continue;
        if (i >= ends.keys.length && !this.endsFound(ends, i)) break;
        const bytes = ends.bytes[i]!;
        if (bytes.length >= bestCost) {
          if (j < 0) continue;
          break;
        }
        const cost = bytes.length + automaton.lowerBoundAfterCommit(hyps[h]!, ends.keys[i]!);
        if (cost < bestCost) {
          bestCost = cost;
          bestBytes = bytes;
          bestStack = hyps[h]!;
          bestKey = ends.keys[i]!;
          bestLex = lex;
          bestIndex = i;
        }
      }
    }
    if (bestLex >= 0) this.greedyHint.set(bestLex, bestIndex);
    // Only the chosen commit's state is made (a dead one has an infinite bound, never chosen).
    const best = bestBytes === null ? null : { bytes: bestBytes, next: automaton.afterCommit(bestStack, bestKey) };
    this.greedySteps.set(state, best);
    return best;
  }

  /**
   * For a lexer state: each terminal commit reachable by extending the token (and the fresh tokens
   * after ignored ones), with the shortest bytes that get there. Breadth-first over lexer states,
   * which do not depend on the stack, so it is cached per lexer state; the commits come shortest
   * first. Made as far as asked (endsFound): a greedy step needs only the commits shorter than
   * the best it has, and a keyword-rich lexer (SQL's) reaches hundreds of lexer states, each
   * stepped on every byte class, before its search is through.
   */
  private tokenEndsOf(lex: number): TokenEnds {
    let ends = this.ends.get(lex);
    if (ends === undefined) {
      ends = { keys: [], bytes: [], queue: [lex], next: 0, prev: new Map([[lex, -1]]) };
      this.ends.set(lex, ends);
      this.endsBytes += 200;
    }
    return ends;
  }

  /** tokenEndsOf's commits, every one (terminalLevelCompletion weighs them all). */
  private tokenEnds(lex: number): TokenEnds {
    const ends = this.tokenEndsOf(lex);
    while (ends.prev !== null) this.searchEnds(ends);
    return ends;
  }

  /** Whether `ends` has a commit at index `i`, searching on as far as that takes. */
  private endsFound(ends: TokenEnds, i: number): boolean {
    while (i >= ends.keys.length && ends.prev !== null) this.searchEnds(ends);
    return i < ends.keys.length;
  }

  /** One lexer state more of the search behind `ends` (it is over when `prev` is null). */
  private searchEnds(ends: TokenEnds): void {
    const prev = ends.prev!;
    const queue = ends.queue;
    if (ends.next >= queue.length || ends.next >= MAX_TOKEN_END_STATES) {
      ends.prev = null;
      ends.queue = NO_STATES;
      return;
    }
    const automaton = this.lexer!.automaton;
    const x = queue[ends.next++]!;
    const reps = automaton.lexerByteReps(x);
    this.work.charge(reps.length);
    for (let r = 0; r < reps.length; r++) {
      const b = reps[r]!;
      const code = automaton.lexerStep(x, b);
      if ((code & COMMIT) !== 0) {
        const k = automaton.lexerCommitKey(x, b);
        if (!ends.keys.includes(k)) {
          // The path to x (parent * 256 + byte links), then b.
          const rev = [b];
          for (let link = prev.get(x)!; link >= 0; link = prev.get((link - (link & 0xff)) / 256)!) rev.push(link & 0xff);
          ends.keys.push(k);
          ends.bytes.push(Uint8Array.from(rev.reverse()));
          this.endsBytes += 72 + rev.length;
        }
      }
      const cont = (code & ~COMMIT) - 1;
      if (cont >= 0 && !prev.has(cont)) {
        prev.set(cont, x * 256 + b);
        queue.push(cont);
        this.endsBytes += 48;
      }
      const restarted = automaton.lexerRestart(x, b);
      if (restarted >= 0 && !prev.has(restarted)) {
        prev.set(restarted, x * 256 + b);
        queue.push(restarted);
        this.endsBytes += 48;
      }
    }
  }

  /**
   * Token boundaries (end offsets) of the fewest-token spelling of `bytes`; null when none, or
   * when it takes more than `limit` tokens (found as soon as no position of the last
   * maxTokenLength bytes is spelled within it: no token reaches past them).
   */
  private fewestTokensSpelling(bytes: Uint8Array, limit: number): number[] | null {
    const n = bytes.length;
    // Scratch kept between calls: a budget search spells a completion for every state it meets.
    if (this.spellBest.length <= n) {
      this.spellBest = new Int32Array(2 * n + 2);
      this.spellFrom = new Int32Array(2 * n + 2);
    }
    const best = this.spellBest;
    const from = this.spellFrom;
    best.fill(UNSPELLED, 0, n + 1);
    best[0] = 0;
    const trie = this.trie;
    const tokenStart = trie.tokenStart;
    const reach = trie.maxTokenLength;
    let lastWithin = 0;
    for (let i = 0; i < n; i++) {
      const here = best[i]!;
      if (here <= limit) lastWithin = i;
      else if (i - lastWithin >= reach) return null;
      if (here === UNSPELLED) continue;
      let p = 0;
      for (let j = i; j < n; j++) {
        p = trie.child(p, bytes[j]!);
        if (p < 0) break;
        if (here + 1 < best[j + 1]! && tokenStart[p + 1]! > tokenStart[p]!) {
          best[j + 1] = here + 1;
          from[j + 1] = i;
        }
      }
    }
    if (best[n] === UNSPELLED || best[n]! > limit) return null;
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
    const via = new Map<number, number>(); // state → previous state * 256 + byte
    const codes: number[] = [];
    const found = searchCheapestGoal(
      [state],
      {
        lowerBound: (s) => automaton.minBytesLowerBound(s),
        isGoal: (s) => automaton.isComplete(s),
        expand: (s, relax) => {
          this.work.charge(256);
          const hyps = lexer === null ? null : lexer.automaton.hypotheses(s);
          codes.length = 0;
          for (let b = 0; b < 256; b++) {
            if (hyps !== null && hyps.length === 2) {
              // Without a commit, bytes with the same lexer successor lead to the same state.
              const code = lexer!.stepCode(lexer!.setOfLexer(hyps[1]!), b);
              if (code === 0) continue;
              if ((code & COMMIT) === 0) {
                if (codes.includes(code)) continue;
                codes.push(code);
              }
            }
            const ns = automaton.step(s, b);
            if (ns >= 0 && relax(ns, 1)) via.set(ns, s * 256 + b);
          }
        },
      },
      maxExpansions,
    );
    if (found === null) return null;
    const path = new Uint8Array(found.cost);
    for (let at = found.goal, i = found.cost - 1; i >= 0; i--) {
      const link = via.get(at)!;
      path[i] = link & 0xff;
      at = (link - (link & 0xff)) / 256;
    }
    return path;
  }

  /**
   * The shortest completing byte string found by A* over terminals instead of bytes: from a
   * hypothesis, the lexer-level search (`tokenEnds`, cached per lexer state) gives the
   * shortest bytes that end each terminal the token in progress can become; the parser takes it
   * (afterCommit) and the next token starts. Every step is a real hypothesis transition, so the
   * bytes are a real completion. null when none is found within `maxExpansions` configurations.
   */
  private terminalLevelCompletion(state: number, maxExpansions: number): Uint8Array | null {
    const lexer = this.lexer!;
    const automaton = lexer.automaton;
    const via = new Map<number, { from: number; bytes: Uint8Array }>();
    const hyps = automaton.hypotheses(state);
    const starts: number[] = [];
    for (let i = 0; i < hyps.length; i += 2) starts.push(hyps.length === 2 ? state : automaton.withStack(hyps[i]!, [hyps[i + 1]!]));
    const found = searchCheapestGoal(
      starts,
      {
        lowerBound: (c) => automaton.minBytesLowerBound(c),
        isGoal: (c) => automaton.isComplete(c),
        expand: (c, relax) => {
          const h = automaton.hypotheses(c);
          const ends = this.tokenEnds(h[1]!);
          this.work.charge(ends.keys.length);
          for (let i = 0; i < ends.keys.length; i++) {
            const next = automaton.afterCommit(h[0]!, ends.keys[i]!);
            if (next >= 0 && relax(next, ends.bytes[i]!.length)) via.set(next, { from: c, bytes: ends.bytes[i]! });
          }
        },
      },
      maxExpansions,
    );
    if (found === null) return null;
    const out = new Uint8Array(found.cost);
    for (let at = found.goal, o = found.cost; via.has(at); at = via.get(at)!.from) {
      const bytes = via.get(at)!.bytes;
      o -= bytes.length;
      out.set(bytes, o);
    }
    return out;
  }
}
