/**
 * Lexer-level walks (XGrammar's context-independent tokens, for this automaton).
 *
 * A state of the grammar stage's GrammarAutomaton is a set of hypotheses (parser stack, lexer
 * state), and step() treats each hypothesis on its own. While a hypothesis only extends its token
 * in progress (no terminal is committed), what happens depends on its lexer state alone
 * (`lexerStep`), not on the stack. So one trie walk per tuple of lexer states (one entry per
 * hypothesis) serves every set of stacks: it gives the tokens whose bytes never commit a terminal
 * (allowed whatever the stack) and the trie nodes where a commit happens; only those subtrees
 * (after a closing quote, a delimiter...) are walked with the real automaton. Inside a JSON string
 * that turns a walk over the whole 152k vocabulary per parser stack into a lookup.
 * test/constraint-grammar-matcher.test.ts compares both ways mask for mask.
 *
 * This file holds the walks; the sets of lexer states they walk over and their byte steps are
 * lexer-sets.ts, and which sets behave alike, so that one takes over another's walk, is
 * equivalence.ts.
 */
import {
  clearTokenRange,
  grownTo,
  lowerBound,
  maskWords,
  orInto,
  int32Of,
  popCountUpTo,
  sameWords,
  sampledWordHash,
  setBits,
  wordHash,
  setTokenList,
  setTokenRange,
  type TableSlab,
} from "../../support/index.js";
import type { TokenTrie } from "../trie.js";
import type { WorkMeter } from "../work-meter.js";
import { isLexerLevel, type CompletableAutomaton, type LexerLevelAutomaton } from "./contracts.js";
import { SetEquivalence } from "./equivalence.js";
import { COMMIT, LexerSets, type Utf8Closure } from "./lexer-sets.js";
import { EMPTY, listOf, SLAB_LIST_MAX } from "./tables.js";
import {
  classEntryAt,
  countedMaskOf,
  countedRegionBytes,
  countedRegionOf,
  entersAt,
  firstClassPosition,
  type LoopSlice,
  MIN_SLICED_SUBTREE,
  setRegionTokens,
  setClassTokensIn,
  sliceBytes,
  visitedBetween,
  walkLoopRegion,
} from "./loop-slices.js";

/** Trie nodes where one terminal commit (same terminal, same inherited constraints) happens. */
export interface CommitGroup {
  /** The automaton's lexerCommitKey: what afterCommit() needs with a stack. */
  readonly commitKey: number;
  /** Some token ends at a node of the group (so the state after the commit is a target). */
  readonly hasEnds: boolean;
  /** Tokens ending at a node of the group where nothing else continues (needed whatever the budget). */
  readonly deadEnds: Int32Array;
  /** Tokens ending at a node of the group that the commit-free walk allows too (budget masks only). */
  readonly aliveEnds: Int32Array;
  // Node lists are plain arrays: short, and a typed array each cost more to make than to read.
  /** Ranges [from, to) of trie token order, each ending at group nodes (budget masks only). */
  readonly aliveRanges: readonly number[];
  /** Single commit nodes: the next token starts at their children. */
  readonly nodes: readonly number[];
  /** Subtree roots p where every node strictly below p commits: the next token starts two levels down. */
  readonly loops: readonly number[];
  /** The walks below the nodes; shared by every group with the same lists. */
  readonly below: WalksBelow;
}

/**
 * The walks below one list of commit nodes, per lexer-state set after the commit: most lists meet
 * one set, kept here (`set` -1 until then); the others in `more`. Groups of other walks with the
 * same nodes (a terminal ending before the same first bytes, from each state of a whitespace run)
 * share it, so each walk below is made once.
 */
interface WalksBelow {
  set: number;
  walk: LexerWalk | null;
  more: Map<number, LexerWalk> | null;
  /** anyByteBelow's answer (UNKNOWN, YES, NO). */
  endsWithin: number;
  /** The most bytes a token goes on with below the nodes, -1 until read (anyTokenBelowReaches). */
  maxBytes: number;
}

const UNKNOWN = 0;
const YES = 1;
const NO = 2;

/** What groups of the same lists share (one object, spread into each group; see sharedShape). */
type GroupShape = Pick<CommitGroup, "deadEnds" | "aliveEnds" | "aliveRanges" | "nodes" | "loops" | "below">;

export interface LexerWalk {
  /** The set this walk was made for (a walk taken over from an equivalent set keeps its maker's). */
  readonly owner: number;
  /**
   * Root walks: the commit-free tokens (allowed whatever the stack) as a mask, or as a list when
   * they are few (`tokens`: a keyword's prefix allows a handful); both null: none, or not a root
   * walk. See applyWalkTokens.
   */
  readonly mask: Uint32Array | null;
  readonly tokens: Int32Array | null;
  /** Distinct lexer-state sets at the ends of commit-free tokens. */
  readonly contSets: readonly number[];
  /** Walks below commit nodes: the commit-free tokens per entry of contSets. */
  readonly tokensByCont: Int32Array[];
  readonly groups: CommitGroup[];
  /**
   * A body set's root walk: per entry of contSets, the root bytes (8 words each) below which one
   * of its tokens ends: a walk derived from this one keeps the sets of the subtrees it shares (see
   * derivedWalk). Null for other walks.
   */
  readonly contRoots: Uint32Array | null;
  /** A body set's root walk: the steps it charged below each root byte (a derived walk charges the same). */
  readonly rootSteps: Int32Array | null;
  /** A root walk: the weighted steps its making charged (a walk taken over from it charges them again); 0 below commits. */
  steps: number;
}

/** A walk's parts before they are kept (walkParts), or a derived walk's put together. */
interface WalkParts {
  mask: Uint32Array | null;
  /** A dense walk of few commit-free tokens (SPARSE_WALK_TOKENS at most) without a mask: their ids, ascending. */
  tokens: Int32Array | null;
  contSets: number[];
  tokensByCont: number[][];
  groupKeys: number[];
  builders: GroupBuilder[];
  /** Dense walks: contRoots's words, per slot of contSets (a view of the walker's scratch). */
  roots: Uint32Array | null;
  /** Dense walks: the steps charged below each root byte (a view of the walker's scratch). */
  rootSteps: Int32Array | null;
}

/**
 * Bytes of walks past which walkAhead stops walking the sets where tokens end (a rule network of
 * a big schema has thousands): about 400 dense walks at 152k tokens.
 */
const AHEAD_MAX_BYTES = 8 << 20;

/**
 * Slices per trie, by loop key (LexerSets.loopSliceKey), and their bytes; shared by every matcher
 * on the trie. A walk charges the steps of the region it takes from a slice as if it walked them,
 * so a set past the cap walks its region with the same verdicts.
 */
const slicesOfTrie = new WeakMap<TokenTrie, { slices: Map<string, LoopSlice>; bytes: number }>();
/** Bytes of slices kept per trie (about 300 KB each at 152k tokens). */
const MAX_SLICE_BYTES_PER_TRIE = 32 << 20;

/**
 * Per trie, the root child below which budget walks also take regions from slices (see
 * walkLoopRegion's anchor), -1 for none: the biggest subtree when it holds an eighth of the nodes
 * or more. In every vocabulary here that is " " (35-57% of the nodes: words after a space), whose
 * names a walk meets one byte down, where the root region never reaches.
 */
const anchorOfTrie = new WeakMap<TokenTrie, number>();

/**
 * Subtrees a budget walk takes up from a slice only its walks use (a name's, or one below the
 * anchor): smaller ones are walked, which costs less than a take-up's setup (measured at qwen2:
 * the SQL workload's steps p50 172-230 -> 140-200 us with 512; 64 was no better).
 */
const MIN_BUDGET_SLICED_SUBTREE = 512;

function anchorOf(trie: TokenTrie): number {
  let anchor = anchorOfTrie.get(trie);
  if (anchor === undefined) {
    anchor = -1;
    let most = trie.numNodes >>> 3;
    for (let b = 0; b < 256; b++) {
      const c = trie.rootChild[b]!;
      if (c >= 0 && trie.subtreeSize[c]! >= most) {
        most = trie.subtreeSize[c]!;
        anchor = c;
      }
    }
    anchorOfTrie.set(trie, anchor);
  }
  return anchor;
}

/** Per trie, each node's root byte (the first byte of its tokens); made on first need. */
const rootBytesOfTrie = new WeakMap<TokenTrie, Uint8Array>();

function rootBytesOf(trie: TokenTrie): Uint8Array {
  let roots = rootBytesOfTrie.get(trie);
  if (roots === undefined) {
    const { nodeInfo, numNodes } = trie;
    roots = new Uint8Array(numNodes);
    // Nodes in preorder: a depth-1 node begins its root child's subtree.
    let byte = 0;
    for (let p = 1; p < numNodes; p++) {
      const info = nodeInfo[p]!;
      if (((info >>> 8) & 0xffff) === 1) byte = info & 0xff;
      roots[p] = byte;
    }
    rootBytesOfTrie.set(trie, roots);
  }
  return roots;
}

/** Per slice (of one trie), per class, the root bytes below which the class has tokens (8 words each). */
const classRootsOfSlice = new WeakMap<LoopSlice, Uint32Array>();

function classRootsOf(trie: TokenTrie, slice: LoopSlice): Uint32Array {
  let roots = classRootsOfSlice.get(slice);
  if (roots === undefined) {
    const rootOf = rootBytesOf(trie);
    const { tokenIds, tokenNode } = trie;
    roots = new Uint32Array(8 * slice.classPositions.length);
    for (let c = 0; c < slice.classPositions.length; c++) {
      const bits = slice.classPositions[c]?.bits;
      if (bits === undefined) continue;
      for (let w = 0; w < bits.length; w++)
        for (let x = bits[w]!; x !== 0; x &= x - 1) {
          const b = rootOf[tokenNode[tokenIds[w * 32 + 31 - Math.clz32(x & -x)]!]!]!;
          roots[c * 8 + (b >>> 5)]! |= 1 << (b & 31);
        }
    }
    classRootsOfSlice.set(slice, roots);
  }
  return roots;
}

/**
 * A region walkFrom takes up from a slice below the root: the slice's exits [next, last) are
 * still to walk, from `set`; `end` is past the subtree, `at` past the exit being walked.
 * `joins`: (node, set) pairs of the region's classes by their first token, entered in the walk's
 * sets before the first exit past that node (ji: the next).
 */
interface RegionFrame {
  slice: LoopSlice;
  set: number;
  next: number;
  last: number;
  end: number;
  at: number;
  joins: number[];
  ji: number;
}

/** No region frame open: walkFrom never jumps. */
const NO_FRAME = 0x7fffffff;

/** A commit group while its walk goes on; its lists are made on first need. */
interface GroupBuilder {
  hasEnds: boolean;
  nodes: number[] | null;
  loops: number[] | null;
  dead: number[] | null;
  alive: number[] | null;
  ranges: number[] | null;
}

/** The builder of `key`'s group among a walk's groups (a walk has a few: a linear search). */
function builderOf(keys: number[], builders: GroupBuilder[], key: number): GroupBuilder {
  for (let i = 0; i < keys.length; i++) if (keys[i] === key) return builders[i]!;
  const g: GroupBuilder = { hasEnds: false, nodes: null, loops: null, dead: null, alive: null, ranges: null };
  keys.push(key);
  builders.push(g);
  return g;
}

/**
 * Two lists of a group from disjoint root subtrees as one, in trie order: each element's (or each
 * pair's, `width` 2) place by `key` (a stable sort: elements of one root child keep their order).
 */
function mergedInOrder(a: number[] | null, b: number[] | null, key: (x: number) => number, width: 1 | 2): number[] | null {
  if (b === null || b.length === 0) return a;
  if (a === null || a.length === 0) return b.slice();
  const out = a.concat(b);
  const order = Array.from({ length: out.length / width }, (_, i) => i).sort((x, y) => key(out[width * x]!) - key(out[width * y]!));
  return width === 1 ? order.map((i) => out[i]!) : order.flatMap((i) => [out[2 * i]!, out[2 * i + 1]!]);
}

/** The node list of a group without such nodes (shared; read only). */
const NO_NODES: readonly number[] = Object.freeze([]);

/**
 * A root walk's commit-free tokens as kept (LexerWalk.mask, LexerWalk.tokens) and their number
 * (a mask's: SPARSE_WALK_TOKENS + 1, not counted further).
 */
interface KeptTokens {
  readonly count: number;
  readonly dense: Uint32Array | null;
  readonly tokens: Int32Array | null;
}

const NO_TOKENS: KeptTokens = { count: 0, dense: null, tokens: null };

/** Root walks with at most this many commit-free tokens keep them as a list (4 KB, not a mask). */
const SPARSE_WALK_TOKENS = 1024;

/** Sets of its shape ahead a counted chain's set needs for its walk to be read off a slice (countedWalk). */
const MIN_COUNTED_LEVELS = 2;

/** Whether every id of `ids` is set in `mask`. */
function allSet(mask: Uint32Array, ids: Int32Array): boolean {
  for (let i = 0; i < ids.length; i++) if (((mask[ids[i]! >>> 5]! >>> (ids[i]! & 31)) & 1) === 0) return false;
  return true;
}

/**
 * Sets in `mask` a root walk's commit-free tokens (LexerWalk.mask or .tokens); `fresh`: the mask is
 * all clear, so a dense one is copied rather than or-ed in.
 */
export function applyWalkTokens(walk: LexerWalk, mask: Uint32Array, fresh: boolean): void {
  if (walk.mask !== null) {
    if (fresh) mask.set(walk.mask);
    else orInto(mask, walk.mask);
  } else if (walk.tokens !== null) setTokenList(mask, walk.tokens);
}

/** Entries a hash keeps for sharing (sharedTokens, sharedShape): colliding lists past it are not compared. */
const MAX_BUCKET = 8;

function sameList(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Trie walks over sets of lexer states (a hypothesis's token in progress, and the fresh tokens
 * that ignored terminals ending on the way start; see LexerSets), cached per set and shared by
 * every stack. Commits are not followed: the walk records where each kind of commit happens
 * (CommitGroup), and the walk below a group's nodes from the next token's lexer state is cached
 * in its turn.
 */
export class LexerLevelWalks extends LexerSets {
  private readonly roots = new Map<number, LexerWalk>();
  /** The lists of the groups met so far and their walks below, by a hash of the lists (sharedShape). */
  private readonly shapes = new Map<number, GroupShape[]>();
  /** Root walks' commit-free tokens by a hash of their mask's words (sharedTokens). */
  private readonly masks = new Map<number, KeptTokens[]>();
  /** Walks' few tokens kept as lists without a mask (sharedList), by a hash of the list. */
  private readonly lists = new Map<number, KeptTokens[]>();
  /** Where rootWalk looks for an earlier set that behaves the same (see equivalence.ts). */
  private readonly equivalents = new SetEquivalence(this);
  private readonly atDepth: Int32Array;
  /** Where a sub-walk's tokens start (scratch: walkFrom reads it before the next sub-walk). */
  private readonly starts: number[] = [];
  /** maskOf's kept sets: those whose mark is the stamp of its walk. */
  private keptMarks: Int32Array;
  private keptStamp = 0;
  /** subWalk's scratch: the subtrees [from, to) of its group's nodes without a byte of the set below. */
  private readonly cutSubtrees: number[] = [];
  /** Scratch of walkFrom's caller: (start index, set) pairs, the sets a sliced walk's region meets before that start. */
  private readonly joins: number[] = [];
  /** Per set: its loop slice, or null when it has none (undefined: not asked yet). */
  private readonly setSlices = new Map<number, LoopSlice | null>();
  /** Per set: the slice budget walks take its region from (maskSliceOf), or null. */
  private readonly maskSlices = new Map<number, LoopSlice | null>();
  /** Per set with a mask slice: its slice below the trie's anchor (anchorOf), or null. */
  private readonly anchoredSlices = new Map<number, LoopSlice | null>();
  /** Per set with a slice: the set of each of the slice's classes (classSetsOf). */
  private readonly classSets = new Map<number, Int32Array>();
  /** The sets met as classes > 0 of a set's slice: the set (class 0), the slice and the class. */
  private readonly classOwners = new Map<number, { owner: number; slice: LoopSlice; cls: number }>();
  /** Regions walkFrom takes up below the root (RegionFrame), innermost last; reused. */
  private readonly frames: RegionFrame[] = [];
  /** The slices whose regions a walk took up below the root, and their position ranges (pairs). */
  private readonly regionSlices: LoopSlice[] = [];
  private readonly regionRanges: number[][] = [];
  /** A mask's words of scratch for setRegionTokens. */
  private regionScratch: Uint32Array | null = null;
  /** keptFromBase's runs, reused; and the subtrees derived walks kept, over the walker's life. */
  private readonly keptScratch: number[] = [];
  private keptSubtrees = 0;
  /** keptFromBase's runs whose bits alone are kept, reused; and the subtrees so kept, over the walker's life. */
  private readonly bitsKeptScratch: number[] = [];
  private bitsKeptSubtrees = 0;
  /** regionEntered's owner set of the region it returned. */
  private regionOwner = -1;
  /** maskOf's kept classes of a slice, by class. */
  private readonly keptClasses: boolean[] = [];
  /** Per set: the walk stamp that last met it, and its slot in that walk's contSets. */
  private seen: Int32Array;
  private seenSlot: Int32Array;
  private stamp = 0;
  /** The stamp of the dense walk whose contSets' root bytes contRootWords holds (-1: none). */
  private rootsStamp = -1;
  /** Per slot of a dense walk's contSets, 8 words of root bytes (WalkParts.roots). */
  private contRootWords: Uint32Array;
  /** Each trie node's root byte (rootBytesOf). */
  private readonly rootOf: Uint8Array;
  /** A dense walk's steps by root byte (WalkParts.rootSteps). */
  private readonly rootStepScratch: Int32Array;
  /** countedWalk's scratch: the chain's sets, each start's set. */
  private readonly countedChain: number[] = [];
  private readonly countedStartSets: number[] = [];
  /** Root walks read off a counted slice (countedWalk). */
  private countedWalks = 0;
  /** A sliced walk's exits it does not walk (they cannot go on), by root byte. */
  private readonly deadExitsByRoot: Int32Array;
  /**
   * A dense walk's commit-free tokens while they are few, as ranges [from, to) of trie order, and
   * their number: a mask is made only past SPARSE_WALK_TOKENS. Most walks of a rule network (a key
   * spelled out, the bytes after a colon) allow a few tokens, and making, hashing and reading a
   * 152k-token mask to keep them as a list cost more than the walk. Walks do not nest while
   * these are in use (a derived walk makes its base's walk before its own).
   */
  private readonly fewRanges: number[] = [];
  private fewCount = 0;
  /** Bases' walks made for derived walks and not yet asked for themselves, with the steps they will charge then. */
  private readonly basesMade = new Map<number, { walk: LexerWalk; steps: number }>();
  /**
   * Root walks made ahead of need (aheadWalk) and not yet asked for by an operation, with the
   * steps the first one to ask pays: so an operation is charged the same whether the clock let
   * the walks ahead make them or not.
   */
  private readonly owed = new Map<number, number>();

  /** `tables`: the matcher's slab, for the first tables below (and the sets'). */
  private constructor(
    trie: TokenTrie,
    automaton: LexerLevelAutomaton,
    private readonly tables: TableSlab,
    private readonly work: WorkMeter,
    private readonly loopSlices: boolean,
  ) {
    super(trie, automaton, tables);
    this.seen = tables.int32(64);
    this.seenSlot = tables.int32(64);
    this.atDepth = tables.int32(trie.maxTokenLength + 2);
    // Scratch tables from the slab too (it has room past a first mask's tables): a typed array of
    // its own is an off-heap allocation each, for every matcher made.
    this.keptMarks = tables.int32(64);
    this.contRootWords = tables.uint32(8 * 64);
    this.rootStepScratch = tables.int32(256);
    this.deadExitsByRoot = tables.int32(256);
    this.rootOf = rootBytesOf(trie);
  }

  /** Bytes of the walks made so far (retainedBytes). */
  private madeBytes = 0;
  /** walkEndsAhead's sets in the order met, the next to walk, and every set met. */
  private aheadQueue: number[] | null = null;
  private aheadNext = 0;
  private readonly aheadMet = new Set<number>();
  /** Root walks taken over from an equivalent set (see rootWalk), and those derived from a body's (derivedWalk). */
  private takenOver = 0;
  private derived = 0;
  /** derivedWalk's scratch: (set, nodes) candidates for its base, the root bytes both step alike, the roots it walks. */
  private readonly candidates: number[] = [];
  private readonly sameRoots = new Uint32Array(8);
  private readonly diffStarts: number[] = [];
  private readonly foundConts: { cont: number; first: number; roots: Uint32Array; keep: Uint32Array | null }[] = [];
  /** Root walks that took their loop region from a slice (see LoopSlice), and subtrees below the root that did. */
  private sliced = 0;
  private regionsTaken = 0;
  /** Regions budget walks took from slices only they use (maskSliceOf, below the anchor). */
  private budgetRegionsTaken = 0;

  /** Root walks made and taken over so far, and whether new sets are still compared with walked ones (tests, benches). */
  get rootWalkCounts(): {
    walked: number;
    takenOver: number;
    derived: number;
    keptFromBase: number;
    bitsKeptFromBase: number;
    counted: number;
    comparing: boolean;
    sliced: number;
    regionsTaken: number;
    budgetRegionsTaken: number;
  } {
    return {
      walked: this.roots.size - this.takenOver,
      takenOver: this.takenOver,
      derived: this.derived,
      keptFromBase: this.keptSubtrees,
      bitsKeptFromBase: this.bitsKeptSubtrees,
      counted: this.countedWalks,
      comparing: this.equivalents.worthLooking,
      sliced: this.sliced,
      regionsTaken: this.regionsTaken,
      budgetRegionsTaken: this.budgetRegionsTaken,
    };
  }

  /** An estimate of the heap bytes its walks and memos hold, erring high. */
  retainedBytes(): number {
    let bytes = this.madeBytes + this.retainedSetBytes();
    bytes += this.seen.byteLength + this.seenSlot.byteLength;
    bytes += (this.roots.size + this.owed.size) * 120 + this.equivalents.retainedBytes();
    bytes += (this.aheadQueue?.length ?? 0) * 8 + this.aheadMet.size * 40;
    // The slices themselves are the trie's (MAX_SLICE_BYTES_PER_TRIE); a set's links to them are ours.
    bytes += (this.setSlices.size + this.maskSlices.size + this.anchoredSlices.size) * 40;
    bytes += this.classSets.size * 120 + this.classOwners.size * 80;
    bytes += this.regionScratch?.byteLength ?? 0;
    return bytes;
  }

  /** `loopSlices` false: every root walk walks its loop region (the reference the tests compare with). */
  static over(
    trie: TokenTrie,
    automaton: CompletableAutomaton,
    tables: TableSlab,
    work: WorkMeter,
    loopSlices = true,
  ): LexerLevelWalks | null {
    return isLexerLevel(automaton) ? new LexerLevelWalks(trie, automaton, tables, work, loopSlices) : null;
  }

  /** The root walk of `set` unless `deadline` has passed; whether it is made (see GrammarTokenMatcher.walkAhead). */
  walkSet(set: number, deadline: number): boolean {
    if (this.roots.has(set)) return true;
    if (performance.now() >= deadline) return false;
    this.aheadWalk(set);
    return true;
  }

  /** rootWalk ahead of need: charged to no operation now, owed by the first that asks for it. */
  private aheadWalk(set: number): LexerWalk {
    const made = this.roots.get(set);
    if (made !== undefined) return made;
    const { value, steps } = this.work.deferred(() => this.rootWalk(set));
    if (steps > 0) this.owed.set(set, steps);
    return value;
  }

  /**
   * The walks of every token start and body, then of every set where a walked token ends, until
   * `deadline`; true when all are done (or the walks ahead reached AHEAD_MAX_BYTES).
   */
  walkAhead(deadline: number): boolean {
    // Bodies first: they are the biggest walks, and equivalent ones (a string's contents in every
    // parser context) cost one walk between them.
    const starts = Array.from(this.automaton.tokenStartLexers(), (lex) => this.setOfLexer(lex));
    for (const set of starts) {
      for (let b = 0; b < 256; b++) {
        const body = (this.stepCode(set, b) & ~COMMIT) - 1;
        if (body < 0 || this.roots.has(body) || !this.isBody(body)) continue;
        if (performance.now() >= deadline) return false;
        this.aheadWalk(body);
      }
    }
    for (const set of starts) {
      if (this.roots.has(set)) continue;
      if (performance.now() >= deadline) return false;
      this.aheadWalk(set);
    }
    return this.walkEndsAhead(deadline);
  }

  /**
   * Breadth first from the walks made so far: the sets where their tokens end, where the next
   * token starts, and each member of such a set on its own (a state's hypotheses are walked one
   * by one: see edgesOf). A budget mask asks whether its targets' own tokens can finish, which
   * would otherwise walk these sets in the middle of a decode step: a few ms each at 152k tokens,
   * and one step after `(y + -` meets ten (a whitespace run of each length).
   */
  private walkEndsAhead(deadline: number): boolean {
    const queue = (this.aheadQueue ??= [...this.roots.keys()]);
    const met = this.aheadMet;
    if (met.size === 0) for (const set of queue) met.add(set);
    const meet = (set: number): void => {
      if (!met.has(set)) {
        met.add(set);
        queue.push(set);
      }
    };
    while (this.aheadNext < queue.length) {
      if (this.madeBytes > AHEAD_MAX_BYTES) return true;
      const set = queue[this.aheadNext]!;
      if (!this.roots.has(set) && performance.now() >= deadline) return false;
      this.aheadNext++;
      const walk = this.aheadWalk(set);
      for (const cont of walk.contSets) {
        meet(cont);
        const members = this.membersOf(cont);
        if (members.length > 1) for (const lex of members) meet(this.setOfLexer(lex));
      }
    }
    return true;
  }

  /**
   * The walk over the whole trie from a set; taken over from an earlier set that behaves the same
   * (the same string body in another parser context, say) when there is one.
   */
  rootWalk(setId: number): LexerWalk {
    let w = this.roots.get(setId);
    if (w !== undefined) {
      if (this.owed.size > 0) this.payOwed(setId);
    } else {
      // A signature only finds peers among the walks made before: the first walk (a grammar's
      // first mask, often) has none, and its own signature waits until another walk needs it.
      const signature = this.roots.size > 0 && this.equivalents.worthLooking ? this.equivalents.signatureAmongWalked(setId) : null;
      const same = signature === null ? null : this.equivalents.equivalentOf(setId, signature);
      if (same !== null) {
        this.takenOver++;
        const peer = this.roots.get(same.peer)!;
        // Charged the peer's walk, as if walked: which walks are there to take over from depends
        // on the walks made before (ahead of need, too), what an operation pays must not.
        this.work.chargeWeighted(peer.steps);
        const renaming = same.renaming;
        w = { ...peer, contSets: peer.contSets.map((c) => renaming.get(c)!) };
      } else {
        // A base's walk made for a derived one is charged now, when it would have been made.
        const made = this.basesMade.get(setId);
        if (made !== undefined) {
          this.basesMade.delete(setId);
          this.work.chargeWeighted(made.steps);
          w = made.walk;
          w.steps = made.steps;
        } else {
          const before = this.work.steps;
          w = this.madeWalk(setId);
          w.steps = this.work.steps - before;
        }
        this.equivalents.file(setId, signature);
      }
      this.roots.set(setId, w);
    }
    return w;
  }

  /** Charges the current operation what the walk of `set` made ahead still owes (see owed). */
  private payOwed(set: number): void {
    const steps = this.owed.get(set);
    if (steps === undefined) return;
    this.owed.delete(set);
    this.work.chargeWeighted(steps);
  }

  /** A set's root walk, made: derived from a body's, or walked (its loop region from a slice). */
  private madeWalk(setId: number): LexerWalk {
    // Only the root children a token can begin with: most sets (a keyword's scanner, the end
    // of a sentence) begin with a few bytes, and a visit is a cache miss or three.
    const first = this.firstBytes(setId);
    const body = this.isBody(setId);
    // Before the starts are gathered: it may make the base's walk, which gathers its own.
    const derived = !body && this.loopSlices ? this.derivedWalk(setId, first) : null;
    if (derived !== null) {
      this.derived++;
      return derived;
    }
    const slice = this.loopSliceOf(setId);
    if (slice === null && !body && this.loopSlices) {
      const counted = this.countedWalk(setId);
      if (counted !== null) return counted;
    }
    const starts = this.starts;
    starts.length = 0;
    if (slice === null) {
      const rootChild = this.trie.rootChild;
      for (let b = 0; b < 256; b++) if (((first[b >>> 5]! >>> (b & 31)) & 1) !== 0 && rootChild[b]! >= 0) starts.push(rootChild[b]!);
      return this.keptWalk(setId, this.walkParts(setId, starts, true, null, NO_NODES), true, body);
    }
    // The exits, as the whole walk meets them: a root child only when a token can begin with
    // its byte; each class's set joins the walk's sets where its first token comes. An exit below
    // the root on a byte the set cannot go on with (a raw newline in a JSON string: most exits at
    // 152k tokens) is one step of the walk and nothing else: counted here, not walked.
    const { exits, classOrder, classFirstAt } = slice;
    const classSets = this.classSetsOf(setId, slice);
    const { depth, nodeByte } = this.trie;
    const joins = this.joins;
    joins.length = 0;
    const deadByRoot = this.deadExitsByRoot;
    deadByRoot.fill(0);
    let dead = 0;
    let next = 0;
    for (let i = 0; i <= exits.length; i++) {
      while (next < classOrder.length && classFirstAt[classOrder[next]!] === i) joins.push(starts.length, classSets[classOrder[next++]!]!);
      if (i === exits.length) break;
      const e = exits[i]!;
      const b = nodeByte[e]!;
      if (((first[b >>> 5]! >>> (b & 31)) & 1) === 0) {
        if (depth[e] === 1) continue;
        dead++;
        deadByRoot[this.rootOf[e]!]!++;
        continue;
      }
      starts.push(e);
    }
    this.sliced++;
    const parts = this.walkParts(setId, starts, true, slice, joins);
    if (dead > 0) {
      this.work.chargeNodes(dead);
      for (let b = 0; b < 256; b++) parts.rootSteps![b]! += deadByRoot[b]!;
    }
    return this.keptWalk(setId, parts, true, body);
  }

  /**
   * The root walk of a set of a counted chain (a string of at most N characters: see CountedShape)
   * with at least MIN_COUNTED_LEVELS sets of its shape ahead: the region of its slice read down to
   * that depth (countedRegionOf), its tokens ending in the chain's sets; only its exits above that
   * depth and its frontier at it are walked. Masks, sets in the order met and steps charged are
   * the plain walk's. Null for other sets, or when the trie keeps no more slices.
   */
  private countedWalk(setId: number): LexerWalk | null {
    const shape = this.countedShape(setId);
    if (shape === null) return null;
    const levels = this.countedLevels(setId, this.trie.maxTokenLength + 1);
    if (levels < MIN_COUNTED_LEVELS) return null;
    const slice = this.keptCountedSlice(shape.key, setId, shape.loop, shape.closure);
    if (slice === null) return null;
    const region = countedRegionOf(this.trie, slice);
    const { depth, nodeByte, tokenNode, tokenIds } = this.trie;
    // The chain's sets: chain[k] is the set k characters on (the last one read past the shape).
    const chain = this.countedChain;
    chain.length = 0;
    chain.push(setId);
    for (let k = 0; k < levels; k++) chain.push(this.countedShape(chain[k]!)!.next);
    // Walked: exits whose parent is fewer than `levels` characters deep, from the set there, and
    // the frontier `levels` deep, from the set at each node's parent (the last set's steps below
    // may take subtrees at once or from its slice, as the plain walk does); in trie order.
    const starts = this.starts;
    starts.length = 0;
    const startSets = this.countedStartSets;
    startSets.length = 0;
    const { exits } = slice;
    const exitLevels = region.exitLevels;
    const frontier = levels <= region.maxLevel ? region.frontier[levels]! : EMPTY;
    const frontierPaths = levels <= region.maxLevel ? region.frontierPaths[levels]! : EMPTY;
    let dead = 0;
    let fi = 0;
    for (let i = 0; i <= exits.length; i++) {
      const e = i < exits.length ? exits[i]! : NO_FRAME;
      while (fi < frontier.length && frontier[fi]! < e) {
        const path = frontierPaths[fi]!;
        let from = chain[levels - 1]!;
        for (let k = 0, n = path >>> 24; k < n; k++) from = (this.stepCode(from, (path >>> (16 - 8 * k)) & 0xff) & ~COMMIT) - 1;
        starts.push(frontier[fi++]!);
        startSets.push(from);
      }
      if (i === exits.length) break;
      const level = exitLevels[i]!;
      if (level >= levels) continue;
      const from = chain[level]!;
      const b = nodeByte[e]!;
      if (this.stepCode(from, b) === 0) {
        // As in madeWalk: a root child the set cannot begin with is not visited; a deeper one is a step.
        if (depth[e] !== 1) dead++;
        continue;
      }
      starts.push(e);
      startSets.push(from);
    }
    // Each depth and class's set joins where its first token comes, before the starts after it
    // (both in trie order: one pass).
    const joins = this.joins;
    joins.length = 0;
    const closurePaths = shape.closure === null ? null : shape.closure.paths;
    let si = 0;
    for (let j = 0; j < region.joins.length; j += 3) {
      const level = region.joins[j + 1]!;
      if (level > levels) continue;
      const cls = region.joins[j + 2]!;
      let set: number;
      if (cls === 0) set = chain[level]!;
      else {
        set = chain[level - 1]!;
        for (const b of closurePaths![cls]!) set = (this.stepCode(set, b) & ~COMMIT) - 1;
      }
      const node = tokenNode[tokenIds[region.joins[j]!]!]!;
      while (si < starts.length && starts[si]! < node) si++;
      joins.push(si, set);
    }
    const kept = this.trieSlices;
    const made = region.masks.size;
    const regionMask = countedMaskOf(this.trie, slice, region, levels, kept.bytes < MAX_SLICE_BYTES_PER_TRIE);
    if (region.masks.size > made) kept.bytes += regionMask!.byteLength;
    const mask = regionMask === null ? null : regionMask.slice();
    const parts = this.walkParts(setId, starts, true, null, joins, mask, startSets);
    // The region's steps less the frontier's own (walked above).
    this.work.chargeNodes(region.stepsBelow[Math.min(levels, region.maxLevel + 1)]! - frontier.length + dead);
    this.countedWalks++;
    return this.keptWalk(setId, parts, true, false);
  }

  /** The trie's counted slice under `key` (walked node by node: no set of a chain loops), with its region's bytes. */
  private keptCountedSlice(key: string, setId: number, loop: Uint32Array, closure: Utf8Closure | null): LoopSlice | null {
    return this.trieSlice(
      key,
      () => walkLoopRegion(this.trie, loop, closure, setId, () => false, 0),
      (slice) => countedRegionBytes(countedRegionOf(this.trie, slice)),
    );
  }

  /** The trie's slices (slicesOfTrie), made on first need. */
  private get trieSlices(): { slices: Map<string, LoopSlice>; bytes: number } {
    let kept = slicesOfTrie.get(this.trie);
    if (kept === undefined) slicesOfTrie.set(this.trie, (kept = { slices: new Map(), bytes: 0 }));
    return kept;
  }

  /**
   * The trie's slice under `key`, walked now (`walk`) when the trie keeps none and is under its
   * cap; null past the cap. `moreBytes`: what else it holds, counted with it.
   */
  private trieSlice(key: string, walk: () => LoopSlice, moreBytes: (slice: LoopSlice) => number = () => 0): LoopSlice | null {
    const kept = this.trieSlices;
    let slice = kept.slices.get(key) ?? null;
    if (slice === null && kept.bytes < MAX_SLICE_BYTES_PER_TRIE) {
      slice = walk();
      kept.slices.set(key, slice);
      kept.bytes += sliceBytes(slice) + moreBytes(slice);
    }
    return slice;
  }

  /**
   * The root walk of body set `base` for a derived walk: its own if made, else made now without
   * charging the operation (nor filed for equivalence): rootWalk charges it when the base's own
   * walk is first asked for, so each operation is charged what it would be without derived walks.
   */
  private baseWalkOf(base: number): LexerWalk {
    const made = this.roots.get(base) ?? this.basesMade.get(base)?.walk;
    if (made !== undefined) return made;
    const { value, steps } = this.work.deferred(() => this.madeWalk(base));
    this.basesMade.set(base, { walk: value, steps });
    return value;
  }

  /**
   * The root walk of a set that steps on most first bytes as a body set does (the key typed so
   * far in an object whose other keys are free: after `"n` both "name" and any key go on; a
   * string's first character in front of its loop): below each root child where both step alike
   * the two walks are one, so the set's walk is the body's there (its tokens, the sets they end
   * in, its commits) and is walked only below the other root children (the regex matcher's
   * derived masks, for these walks). Whether a set derives depends on the steps of the two sets
   * alone (not on the slices a process holds), and it is charged the body's steps below the
   * shared root children: the verdicts of the plain walk. Null when the root children that
   * differ hold more than half the trie's nodes, those both walk alike less than half, or no body
   * fits.
   */
  private derivedWalk(setId: number, first: Uint32Array): LexerWalk | null {
    const { rootChild, subtreeSize, numNodes, tokenStart, tokenIds, tokenNode } = this.trie;
    // The base: the body below the most nodes' first bytes (a set of its own; commits are not
    // followed). Not the set below the most nodes whatever it is: after a key's word that a space
    // goes on, the space's subtree outweighs the letters' (qwen2: 119k nodes of 334k), and the
    // characters' other first bytes lead into the body's own characters (its classes' sets): the
    // root children both step alike decide below.
    const candidates = this.candidates;
    candidates.length = 0;
    for (let b = 0; b < 256; b++) {
      const c = rootChild[b]!;
      if (c < 0 || ((first[b >>> 5]! >>> (b & 31)) & 1) === 0) continue;
      const cont = (this.stepCode(setId, b) & ~COMMIT) - 1;
      if (cont < 0 || cont === setId) continue;
      let i = 0;
      while (i < candidates.length && candidates[i] !== cont) i += 2;
      if (i === candidates.length) candidates.push(cont, 0);
      candidates[i + 1]! += subtreeSize[c]!;
    }
    let base = -1;
    let most = 0;
    for (let i = 0; i < candidates.length; i += 2)
      if (candidates[i + 1]! > most && this.isBody(candidates[i]!)) {
        most = candidates[i + 1]!;
        base = candidates[i]!;
      }
    if (base < 0) return null;
    // The root children where both step alike (or neither walks), and the others the set walks.
    const same = this.sameRoots;
    same.fill(0);
    const diffStarts = this.diffStarts;
    diffStarts.length = 0;
    const baseFirst = this.firstBytes(base);
    let diffNodes = 0;
    let sharedNodes = 0;
    for (let b = 0; b < 256; b++) {
      const c = rootChild[b]!;
      if (c < 0) continue;
      const inSet = ((first[b >>> 5]! >>> (b & 31)) & 1) !== 0;
      const code = inSet ? this.stepCode(setId, b) : 0;
      const baseCode = ((baseFirst[b >>> 5]! >>> (b & 31)) & 1) !== 0 ? this.stepCode(base, b) : 0;
      if (code === baseCode && ((code & COMMIT) === 0 || sameList(this.commitKeysAt(setId, b), this.commitKeysAt(base, b)))) {
        same[b >>> 5]! |= 1 << (b & 31);
        if (code !== 0) sharedNodes += subtreeSize[c]!;
        continue;
      }
      diffNodes += subtreeSize[c]!;
      if (inSet) diffStarts.push(c);
    }
    // Worth the base's walk (made now if it is not yet) where it is at least half the set's own:
    // the root children both walk alike hold half the trie's nodes.
    if (diffNodes * 2 > numNodes || sharedNodes * 2 < numNodes) return null;
    const baseWalk = this.baseWalkOf(base);
    const baseRoots = baseWalk.contRoots;
    const baseSteps = baseWalk.rootSteps;
    if (baseWalk.mask === null || baseRoots === null || baseSteps === null) return null;
    // The base's tokens less those below the other root children, but for the subtrees there
    // that the base walks alike (keptFromBase); the set's own are walked in.
    const { keep, bitsKept } = this.keptFromBase(setId, base, diffStarts);
    const mask = baseWalk.mask.slice();
    // Cleared: the other root children's tokens but for the subtrees of both lists (disjoint
    // runs, each list in trie order), whose bits are the base's already.
    let ki = 0;
    let bi = 0;
    for (let b = 0; b < 256; b++) {
      const c = rootChild[b]!;
      if (c < 0 || ((same[b >>> 5]! >>> (b & 31)) & 1) !== 0) continue;
      let from = tokenStart[c]!;
      for (const end = c + subtreeSize[c]!; ; ) {
        const k = ki < keep.length && keep[ki]! < end ? keep[ki]! : NO_FRAME;
        const q = bi < bitsKept.length && bitsKept[bi]! < end ? bitsKept[bi]! : NO_FRAME;
        if (k === NO_FRAME && q === NO_FRAME) break;
        clearTokenRange(mask, tokenIds, from, tokenStart[Math.min(k, q)]!);
        if (k < q) {
          from = tokenStart[keep[ki + 1]!]!;
          ki += 3;
        } else {
          from = tokenStart[bitsKept[bi + 1]!]!;
          bi += 2;
        }
      }
      clearTokenRange(mask, tokenIds, from, tokenStart[c + subtreeSize[c]!]!);
    }
    const part = this.walkParts(setId, diffStarts, true, null, NO_NODES, mask, null, keep, bitsKept);
    const partRoots = part.roots!.slice();
    // Charged what the set's own walk would be: below the shared root children, the base's steps there.
    let steps = 0;
    for (let b = 0; b < 256; b++) if (((same[b >>> 5]! >>> (b & 31)) & 1) !== 0) steps += baseSteps[b]!;
    this.work.chargeNodes(steps);
    // The sets where tokens end: the base's below shared root children, the set's own below the
    // others, in the order the set's own walk meets them (by root child: each is one source's).
    const rootOf = this.rootOf;
    const found = this.foundConts;
    found.length = 0;
    const gather = (conts: readonly number[], roots: Uint32Array, keep: Uint32Array | null): void => {
      for (let i = 0; i < conts.length; i++) {
        let first = 256;
        for (let w = 0; w < 8 && first === 256; w++) {
          const x = roots[i * 8 + w]! & (keep === null ? ~0 : keep[w]!);
          if (x !== 0) first = w * 32 + 31 - Math.clz32(x & -x);
        }
        if (first < 256) found.push({ cont: conts[i]!, first, roots: roots.subarray(i * 8, i * 8 + 8), keep });
      }
    };
    gather(baseWalk.contSets, baseRoots, same);
    gather(part.contSets, partRoots, null);
    found.sort((x, y) => x.first - y.first);
    const stamp = ++this.stamp;
    this.rootsStamp = stamp;
    const contSets: number[] = [];
    const tokensByCont: number[][] = [];
    for (const f of found) {
      this.contSlot(f.cont, stamp, contSets, tokensByCont);
      const at = this.seenSlot[f.cont]! * 8;
      for (let w = 0; w < 8; w++) this.contRootWords[at + w]! |= f.roots[w]! & (f.keep === null ? ~0 : f.keep[w]!);
    }
    this.rootsStamp = -1;
    // The commits: the base's below shared root children, the set's own below the others, each
    // list in trie order and the groups in the order the set's own walk meets them.
    const sharedNode = (n: number): boolean => ((same[rootOf[n]! >>> 5]! >>> (rootOf[n]! & 31)) & 1) !== 0;
    const groupKeys: number[] = [];
    const builders: GroupBuilder[] = [];
    for (const g of baseWalk.groups) {
      const nodes = g.nodes.filter(sharedNode);
      const loops = g.loops.filter(sharedNode);
      // Plain loops: Array.from of a typed array goes through the iterator protocol.
      const dead: number[] = [];
      for (let i = 0; i < g.deadEnds.length; i++) if (sharedNode(tokenNode[g.deadEnds[i]!]!)) dead.push(g.deadEnds[i]!);
      const alive: number[] = [];
      for (let i = 0; i < g.aliveEnds.length; i++) if (sharedNode(tokenNode[g.aliveEnds[i]!]!)) alive.push(g.aliveEnds[i]!);
      const ranges: number[] = [];
      for (let r = 0; r < g.aliveRanges.length; r += 2)
        if (sharedNode(tokenNode[tokenIds[g.aliveRanges[r]!]!]!)) ranges.push(g.aliveRanges[r]!, g.aliveRanges[r + 1]!);
      if (nodes.length + loops.length + dead.length + alive.length + ranges.length === 0) continue;
      const to = builderOf(groupKeys, builders, g.commitKey);
      to.hasEnds = dead.length + alive.length + ranges.length > 0;
      to.nodes = nodes.length > 0 ? nodes : null;
      to.loops = loops.length > 0 ? loops : null;
      to.dead = dead.length > 0 ? dead : null;
      to.alive = alive.length > 0 ? alive : null;
      to.ranges = ranges.length > 0 ? ranges : null;
    }
    const nodeKey = (n: number): number => n;
    const tokenKey = (t: number): number => rootOf[tokenNode[t]!]!;
    const rangeKey = (k: number): number => k;
    for (let i = 0; i < part.groupKeys.length; i++) {
      const from = part.builders[i]!;
      const to = builderOf(groupKeys, builders, part.groupKeys[i]!);
      to.hasEnds ||= from.hasEnds;
      to.nodes = mergedInOrder(to.nodes, from.nodes, nodeKey, 1);
      to.loops = mergedInOrder(to.loops, from.loops, nodeKey, 1);
      to.dead = mergedInOrder(to.dead, from.dead, tokenKey, 1);
      to.alive = mergedInOrder(to.alive, from.alive, tokenKey, 1);
      to.ranges = mergedInOrder(to.ranges, from.ranges, rangeKey, 2);
    }
    if (builders.length > 1) {
      // A group's first element decides where the walk meets it (its lists are in trie order).
      const firstRoot = (g: GroupBuilder): number => {
        let first = 256;
        if (g.nodes !== null) first = Math.min(first, rootOf[g.nodes[0]!]!);
        if (g.loops !== null) first = Math.min(first, rootOf[g.loops[0]!]!);
        if (g.dead !== null) first = Math.min(first, tokenKey(g.dead[0]!));
        if (g.alive !== null) first = Math.min(first, tokenKey(g.alive[0]!));
        if (g.ranges !== null) first = Math.min(first, tokenKey(tokenIds[g.ranges[0]!]!));
        return first;
      };
      const order = builders.map((g, i) => ({ i, first: firstRoot(g) })).sort((x, y) => x.first - y.first);
      const keys = order.map((o) => groupKeys[o.i]!);
      const sorted = order.map((o) => builders[o.i]!);
      groupKeys.splice(0, groupKeys.length, ...keys);
      builders.splice(0, builders.length, ...sorted);
    }
    const roots = this.contRootWords.subarray(0, contSets.length * 8);
    const parts: WalkParts = { mask, tokens: null, contSets, tokensByCont, groupKeys, builders, roots, rootSteps: null };
    return this.keptWalk(setId, parts, true, false);
  }

  /**
   * The children of `starts` (the root children a derived walk walks, in order) below which its
   * set and its base's step alike: below a key's first byte the key typed so far mostly stops
   * being one of the schema's, and the set is the base's own again. Where such a child's subtree
   * loops on that set without a commit (or is one token), the base's walk has every token of it
   * in its mask, all ending in that set: the derived walk keeps those bits, notes the set and
   * charges what walking them would (the node, or its slice's region), instead of clearing and
   * walking them again, node by node. Only below root children walkParts surely steps into node
   * by node. As runs of siblings in one set: (first node, end, steps charged) each.
   *
   * The other such children (their subtrees hold exits: a key typed so far that goes on with a
   * space, below which nearly every token is the free key's again) are `bitsKept`, as runs
   * (first node, end): the base's mask has their tokens' bits as the set's walk would set them
   * (the same set at the child, the same tokens below), so a derived walk leaves them set and
   * walkParts walks them for their sets, commits and steps without setting their bits again.
   * Clearing and setting them again was most of such a mask (qwen2: 53k tokens begin with a
   * space, 0.2 ms of bits).
   * test/constraint-grammar-derived-walks.test.ts compares masks and work with plain walks.
   */
  private keptFromBase(setId: number, base: number, starts: readonly number[]): { keep: number[]; bitsKept: number[] } {
    const keep = this.keptScratch;
    keep.length = 0;
    const bits = this.bitsKeptScratch;
    bits.length = 0;
    const { subtreeSize, nodeByte } = this.trie;
    const takeUp = this.loopSlices;
    let runSet = -1;
    for (const c of starts) {
      const code = this.stepCode(setId, nodeByte[c]!);
      const baseCode = this.stepCode(base, nodeByte[c]!);
      const size = subtreeSize[c]!;
      if ((code & COMMIT) !== 0 || code === 0 || (baseCode & COMMIT) !== 0 || baseCode === 0 || size === 1) continue;
      const cont = code - 1;
      const baseCont = baseCode - 1;
      // walkParts steps below c node by node: no region taken up there, nor the subtree at once.
      if (takeUp && cont !== setId && size >= MIN_SLICED_SUBTREE && this.regionEntered(cont, c) !== null) continue;
      if (this.loopsBelow(cont, c)) continue;
      for (let q = c + 1, end = c + size; q < end; q += subtreeSize[q]!) {
        const byte = nodeByte[q]!;
        const next = this.stepCode(cont, byte);
        if ((next & COMMIT) !== 0 || next === 0 || next !== this.stepCode(baseCont, byte)) continue;
        const at = next - 1;
        const qSize = subtreeSize[q]!;
        const charged = this.keptCharge(cont, at, q, qSize);
        if (charged < 0) {
          const n = bits.length;
          if (n > 0 && bits[n - 1] === q) bits[n - 1] = q + qSize;
          else bits.push(q, q + qSize);
          this.bitsKeptSubtrees++;
          continue;
        }
        this.keptSubtrees++;
        // Siblings kept one after another in the same set are one run: the walk steps over all.
        const n = keep.length;
        if (n > 0 && keep[n - 2] === q && runSet === at) {
          keep[n - 2] = q + qSize;
          keep[n - 1]! += charged;
        } else keep.push(q, q + qSize, charged);
        runSet = at;
      }
    }
    return { keep, bitsKept: bits };
  }

  /**
   * What walking child q (reached in `at` from `cont`, as its base's walk reaches it) would charge
   * where the walk can step over it (it loops on `at` without a commit, or is one token): the
   * region's nodes or the one node; -1 where it cannot (keptFromBase keeps only its bits).
   */
  private keptCharge(cont: number, at: number, q: number, qSize: number): number {
    const tokenStart = this.trie.tokenStart;
    if (tokenStart[q + qSize]! === tokenStart[q]!) return -1;
    if (qSize > 1 && (!this.loopsBelow(at, q) || (this.loopCodes[at]! & COMMIT) !== 0)) return -1;
    // The walk would take the subtree up as its slice's region (no exit below: it loops) or
    // at once: what it charges there, the region's nodes or the one node.
    if (this.loopSlices && at !== cont && qSize >= MIN_SLICED_SUBTREE) {
      const region = this.regionEntered(at, q);
      if (region !== null) return this.regionOwner === at ? visitedBetween(region, q, q + qSize) : -1;
    }
    return 1;
  }

  /** The loop slice of a set's root walk (see LoopSlice), made on first need; null: the set walks its region. */
  private loopSliceOf(setId: number): LoopSlice | null {
    let slice = this.setSlices.get(setId);
    if (slice !== undefined) return slice;
    const key = this.loopSlices ? this.loopSliceKey(setId) : null;
    slice = key === null ? null : this.keptSlice(key, setId, 0);
    this.setSlices.set(setId, slice);
    return slice;
  }

  /**
   * The slice a budget walk (maskOf) takes a set's loop region from: its loop slice, or for a body
   * that commits as it loops (a name: every prefix is one) a slice of the same region, which only
   * these walks use (a root walk needs the commits at every node of it); null for neither.
   */
  private maskSliceOf(setId: number): LoopSlice | null {
    let slice = this.maskSlices.get(setId);
    if (slice !== undefined) return slice;
    slice = this.loopSliceOf(setId);
    if (slice === null && this.loopSlices && this.isBody(setId) && (this.loopCodes[setId]! & COMMIT) !== 0)
      slice = this.keptSlice(this.maskSliceKey(setId), setId, 0);
    this.maskSlices.set(setId, slice);
    return slice;
  }

  /** The key of a set's mask slice (maskSliceOf), for a set that has one. */
  private maskSliceKey(setId: number): string {
    const key = this.loopSliceKey(setId);
    if (key !== null) return key;
    const closure = this.utf8Closure(setId);
    return `commits/${this.loopBytes(setId).join(",")}/${closure === null ? "-" : closure.signature}`;
  }

  /** The trie's slice under `key`, walked now (below `anchor`, 0: the root) when not kept and under the cap. */
  private keptSlice(key: string, setId: number, anchor: number): LoopSlice | null {
    // Not charged here: every walk with the slice charges its steps (whoever made it first).
    return this.trieSlice(key, () =>
      walkLoopRegion(this.trie, this.loopBytes(setId), this.utf8Closure(setId), setId, (set, q) => this.loopsBelow(set, q), anchor),
    );
  }

  /**
   * The slice a budget walk takes the subtree of node `p` (`size` nodes) from, met in set `setId`
   * (its mask slice is `rooted`): the set's loop slice where its region reaches `p`; for a subtree
   * of MIN_BUDGET_SLICED_SUBTREE nodes or more, also a slice only budget walks use: `rooted` where
   * it reaches `p`, else the set's slice below the trie's anchor; null when none does.
   */
  private maskSliceEnteredAt(setId: number, rooted: LoopSlice, p: number, size: number): LoopSlice | null {
    const enters = entersAt(rooted, p);
    if (rooted === this.setSlices.get(setId) && enters) return rooted;
    if (size < MIN_BUDGET_SLICED_SUBTREE) return null;
    const slice = enters ? rooted : this.anchoredSliceAt(setId, p);
    if (slice !== null) this.budgetRegionsTaken++;
    return slice;
  }

  /** The set's slice below the trie's anchor when its region reaches node `p`, else null. */
  private anchoredSliceAt(setId: number, p: number): LoopSlice | null {
    const anchor = anchorOf(this.trie);
    if (anchor < 0 || p <= anchor + 1 || p >= anchor + this.trie.subtreeSize[anchor]!) return null;
    let slice = this.anchoredSlices.get(setId);
    if (slice === undefined) {
      slice = null;
      const b = this.trie.nodeByte[anchor]!;
      // A set that loops on the anchor's byte has it in the root region already.
      if (((this.loopBytes(setId)[b >>> 5]! >>> (b & 31)) & 1) === 0) {
        slice = this.keptSlice(`${this.maskSliceKey(setId)}@${anchor}`, setId, anchor);
      }
      this.anchoredSlices.set(setId, slice);
    }
    return slice !== null && entersAt(slice, p) ? slice : null;
  }

  /** The set of each class of a slice (see Utf8Closure) for `setId`, a set of the slice's key. */
  private classSetsOf(setId: number, slice: LoopSlice): Int32Array {
    let sets = this.classSets.get(setId);
    if (sets === undefined) {
      sets = new Int32Array(slice.paths.length);
      for (let c = 0; c < sets.length; c++) {
        let x = setId;
        for (const b of slice.paths[c]!) x = (this.stepCode(x, b) & ~COMMIT) - 1;
        sets[c] = x;
        if (c > 0 && !this.classOwners.has(x)) this.classOwners.set(x, { owner: setId, slice, cls: c });
      }
      this.classSets.set(setId, sets);
    }
    return sets;
  }

  /**
   * Whether a token below a group's nodes holds a byte of `bytes` (always the automaton's final
   * bytes: the answer is kept). The one-token search prunes by it. A scan that stops at the first
   * node found: a big group (every token that commits a name) was most of a budget mask's cost
   * when its bytes were all gathered.
   */
  anyByteBelow(group: CommitGroup, bytes: Uint32Array): boolean {
    const below = group.below;
    if (below.endsWithin === UNKNOWN) {
      below.endsWithin = NO;
      const belowBytes = this.trie.belowBytes;
      scan: for (const list of [group.nodes, group.loops])
        for (let i = 0; i < list.length; i++) {
          const at = list[i]! * 8;
          for (let w = 0; w < 8; w++)
            if ((belowBytes[at + w]! & bytes[w]!) !== 0) {
              below.endsWithin = YES;
              break scan;
            }
        }
    }
    return below.endsWithin === YES;
  }

  /**
   * Whether a token below a group's nodes goes on for at least `bytes` more bytes (trie heights);
   * the scan stops at the first, and the most is kept once every node was read.
   */
  anyTokenBelowReaches(group: CommitGroup, bytes: number): boolean {
    const below = group.below;
    if (below.maxBytes >= 0) return below.maxBytes >= bytes;
    const heights = this.trie.heights;
    let most = 0;
    for (const list of [group.nodes, group.loops])
      for (let i = 0; i < list.length; i++) {
        const h = heights[list[i]!]!;
        if (h >= bytes) return true;
        if (h > most) most = h;
      }
    below.maxBytes = most;
    return false;
  }

  /** The walk below a group's nodes from the lexer state the new token starts in. */
  subWalk(lex: number, group: CommitGroup): LexerWalk {
    const setId = this.setOfLexer(lex);
    const below = group.below;
    let w = below.set === setId ? below.walk! : below.more?.get(setId);
    if (w === undefined) {
      // Where the new token starts: children of single nodes, and nodes two levels below a loop
      // root; only those whose byte the new token can begin with (subtrees without such a byte
      // are skipped by their byte summary).
      const first = this.firstBytes(setId);
      let last = -1;
      for (let i = 7; i >= 0 && last < 0; i--) if (first[i] !== 0) last = i * 32 + 31 - Math.clz32(first[i]!);
      if (last < 0) {
        // Nothing can follow the commit (the end of the sentence, say): no token goes on below.
        w = {
          owner: setId,
          mask: null,
          tokens: null,
          contSets: [],
          tokensByCont: [],
          groups: [],
          contRoots: null,
          rootSteps: null,
          steps: 0,
        };
      } else {
        const starts = this.starts;
        starts.length = 0;
        const subtreeSize = this.trie.subtreeSize;
        // A group lists nested nodes (every prefix of a name commits it), in trie order: a node
        // without a byte of the set below it has none below the group's nodes and loops inside
        // its subtree either, so they are passed over at once (cut: the subtrees passed over).
        const cut = this.cutSubtrees;
        cut.length = 0;
        const nodes = group.nodes;
        for (let i = 0; i < nodes.length; ) {
          const n = nodes[i++]!;
          if (this.hasByteBelow(n, first)) {
            this.startsBelow(n, first, last, false);
            continue;
          }
          const end = n + subtreeSize[n]!;
          if (i < nodes.length && nodes[i]! > n && nodes[i]! < end) {
            cut.push(n, end);
            while (i < nodes.length && nodes[i]! > n && nodes[i]! < end) i++;
          }
        }
        let k = 0;
        for (const p of group.loops) {
          while (k < cut.length && cut[k + 1]! <= p) k += 2;
          if (k < cut.length && cut[k]! < p) continue;
          // The bytes below p include those below its children: most loop roots go at once.
          if (!this.hasByteBelow(p, first)) continue;
          for (let c = p + 1, end = p + subtreeSize[p]!; c < end; c += subtreeSize[c]!)
            if (this.hasByteBelow(c, first)) this.startsBelow(c, first, last, true);
        }
        w = this.walkFrom(setId, starts, false);
      }
      if (below.set < 0) {
        below.set = setId;
        below.walk = w;
      } else (below.more ??= new Map()).set(setId, w);
    }
    return w;
  }

  /** Whether a byte of `first` occurs strictly below trie node `n`. */
  private hasByteBelow(n: number, first: Uint32Array): boolean {
    const belowBytes = this.trie.belowBytes;
    for (let i = 0; i < 8; i++) if ((belowBytes[n * 8 + i]! & first[i]!) !== 0) return true;
    return false;
  }

  /** Pushes to `starts` the children of `n` whose byte is in `first` (and, `deep`, those further down). */
  private startsBelow(n: number, first: Uint32Array, last: number, deep: boolean): void {
    const { subtreeSize, nodeByte } = this.trie;
    for (let c = n + 1, end = n + subtreeSize[n]!; c < end; c += subtreeSize[c]!) {
      const b = nodeByte[c]!;
      // Children come in byte order: past the set's last byte only loops can still hit.
      if (b > last && !deep) break;
      if (((first[b >>> 5]! >>> (b & 31)) & 1) !== 0) this.starts.push(c);
      if (deep && this.hasByteBelow(c, first)) this.startsBelow(c, first, last, true);
    }
  }

  /**
   * Walks the subtrees of `starts` (nodes whose parent is in lexer-state set `setId`): the
   * commit-free tokens with the set each ends in, and every commit grouped by its kind. With a
   * `slice` (the starts are its exits), its region's tokens are there from the start and its
   * classes' sets join the walk's sets as `joins` says: (start index, set) pairs, in order.
   *
   * A dense walk that steps into a set with a slice at a node its region reaches in that set
   * takes the subtree from the slice too (a RegionFrame): the region's steps are charged as
   * walked, its tokens set at the end, and only the slice's exits below the node are walked.
   */
  private walkFrom(
    setId: number,
    starts: readonly number[],
    dense: boolean,
    slice: LoopSlice | null = null,
    joins: readonly number[] = NO_NODES,
  ): LexerWalk {
    return this.keptWalk(setId, this.walkParts(setId, starts, dense, slice, joins), dense, false);
  }

  /** walkFrom's walk, its parts not yet kept. */
  private walkParts(
    setId: number,
    starts: readonly number[],
    dense: boolean,
    slice: LoopSlice | null,
    joins: readonly number[],
    into: Uint32Array | null = null,
    startSets: readonly number[] | null = null,
    keep: readonly number[] | null = null,
    /** Runs of subtrees (first node, end) whose tokens' bits `into` has already (see keptFromBase). */
    bitsKept: readonly number[] | null = null,
  ): WalkParts {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds, depth } = this.trie;
    const rootOf = dense ? this.rootOf : null;
    // `into` (a dense walk's tokens set there), or made once the tokens are more than a few (see
    // fewRanges): many walks (a keyword's scanner) have none.
    let mask: Uint32Array | null = into ?? (slice === null || slice.pure === null ? null : slice.pure.slice());
    this.fewRanges.length = 0;
    this.fewCount = 0;
    const contSets: number[] = [];
    const tokensByCont: number[][] = [];
    // Commit groups in the order met (a walk has a few): their keys and builders, searched linearly.
    const groupKeys: number[] = [];
    const builders: GroupBuilder[] = [];
    const atDepth = this.atDepth;
    const stamp = ++this.stamp;
    this.rootsStamp = dense ? stamp : -1;
    const rootSteps = this.rootStepScratch;
    if (dense) rootSteps.fill(0);
    const frames = this.frames;
    const takeUp = dense && this.loopSlices;
    this.regionSlices.length = 0;
    let top = -1;
    /** The end of the exit subtree the innermost frame walks (NO_FRAME: none). */
    let jumpAt = NO_FRAME;
    let steps = 0;
    let ji = 0;
    // Runs of subtrees the walk keeps from its base (a derived walk's: first node, end, steps
    // charged), the next one's first node at keepAt (NO_FRAME: none).
    let ki = 0;
    let keepAt = keep !== null && keep.length > 0 ? keep[0]! : NO_FRAME;
    // The run of bitsKept the walk is in or before ([bitsFrom, bitsTo); p only grows).
    let bi = 0;
    let bitsFrom = bitsKept !== null && bitsKept.length > 0 ? bitsKept[0]! : NO_FRAME;
    let bitsTo = bitsKept !== null && bitsKept.length > 0 ? bitsKept[1]! : NO_FRAME;
    for (let si = 0; si < starts.length; si++) {
      while (ji < joins.length && joins[ji] === si) {
        this.contSlot(joins[ji + 1]!, stamp, contSets, tokensByCont);
        ji += 2;
      }
      const start = starts[si]!;
      atDepth[depth[start]! - 1] = startSets === null ? setId : startSets[si]!;
      const end = start + subtreeSize[start]!;
      const stepsBefore = steps;
      let p = start;
      for (;;) {
        if (p >= jumpAt) {
          // The innermost region's next exit, or past its subtree (and on out of finished ones).
          for (;;) {
            const f = frames[top]!;
            if (f.next < f.last) {
              const e = f.slice.exits[f.next++]!;
              this.joinBefore(f, e, stamp, contSets, tokensByCont);
              // An exit the set cannot go on with is one step (see madeWalk).
              if (this.stepCode(f.set, nodeInfo[e]! & 0xff) === 0) {
                steps++;
                continue;
              }
              atDepth[depth[e]! - 1] = f.set;
              p = e;
              jumpAt = f.at = e + subtreeSize[e]!;
              break;
            }
            this.joinBefore(f, NO_FRAME, stamp, contSets, tokensByCont);
            p = f.end;
            top--;
            if (top < 0) {
              jumpAt = NO_FRAME;
              break;
            }
            jumpAt = frames[top]!.at;
            if (p < jumpAt) break;
          }
          continue;
        }
        if (p >= end) break;
        steps++;
        const info = nodeInfo[p]!;
        const d = (info >>> 8) & 0xffff;
        const from = atDepth[d - 1]!;
        const byte = info & 0xff;
        const code = this.stepCode(from, byte);
        const isEnd = (info & 0x80000000) !== 0;
        const cont = (code & ~COMMIT) - 1;
        if ((code & COMMIT) !== 0) {
          const keys = this.commitKeysAt(from, byte);
          for (let k = 0; k < keys.length; k++) {
            const g = builderOf(groupKeys, builders, keys[k]!);
            if (subtreeSize[p]! > 1) (g.nodes ??= []).push(p);
            if (isEnd) {
              g.hasEnds = true;
              const list = cont < 0 ? (g.dead ??= []) : (g.alive ??= []);
              for (let t = tokenStart[p]!, to = tokenStart[p + 1]!; t < to; t++) list.push(tokenIds[t]!);
            }
          }
        }
        if (cont < 0) {
          p += subtreeSize[p]!;
          continue;
        }
        atDepth[d] = cont;
        const size = subtreeSize[p]!;
        if (p === keepAt) {
          // Subtrees the base's walk has walked alike (see keptFromBase): their tokens are in the
          // mask already, all ending in `cont`; the walk notes the set, charges what walking
          // them would, and steps over them.
          this.contSlot(cont, stamp, contSets, tokensByCont);
          if (rootOf !== null) this.markRoot(cont, rootOf[p]!);
          steps += keep![ki + 2]! - 1;
          p = keep![ki + 1]!;
          ki += 3;
          keepAt = ki < keep!.length ? keep![ki]! : NO_FRAME;
          continue;
        }
        while (p >= bitsTo) {
          bi += 2;
          bitsFrom = bi < bitsKept!.length ? bitsKept![bi]! : NO_FRAME;
          bitsTo = bi < bitsKept!.length ? bitsKept![bi + 1]! : NO_FRAME;
        }
        const bitsThere = p >= bitsFrom;
        if (takeUp && cont !== from && size >= MIN_SLICED_SUBTREE) {
          const region = this.regionEntered(cont, p);
          if (region !== null) {
            steps += visitedBetween(region, p, p + size) - 1;
            this.enterRegion(++top, region, this.regionOwner, p, size, bitsThere);
            jumpAt = p;
            // A derived walk's kept runs below are walked as the region's: keptFromBase went by
            // the slices made before it, and the slice taken here may have been made since (by
            // its own pass over a later root child). Their bits are the region's alike.
            while (keepAt < p + size) {
              ki += 3;
              keepAt = ki < keep!.length ? keep![ki]! : NO_FRAME;
            }
            continue;
          }
        }
        if (isEnd) {
          if (bitsThere) this.contSlot(cont, stamp, contSets, tokensByCont);
          else mask = this.addTokens(cont, tokenStart[p]!, tokenStart[p + 1]!, stamp, contSets, tokensByCont, dense, mask);
          if (rootOf !== null) this.markRoot(cont, rootOf[p]!);
        }
        if (size > 1) {
          // Everything below steps the set to itself the same way: take the subtree at once.
          if (this.loopsBelow(cont, p)) {
            const below0 = tokenStart[p + 1]!,
              below1 = tokenStart[p + size]!;
            if (!bitsThere) mask = this.addTokens(cont, below0, below1, stamp, contSets, tokensByCont, dense, mask);
            else if (below1 > below0) this.contSlot(cont, stamp, contSets, tokensByCont);
            if (rootOf !== null && below1 > below0) this.markRoot(cont, rootOf[p]!);
            const loopCode = this.loopCodes[cont]!;
            if ((loopCode & COMMIT) !== 0) {
              const keys = this.commitKeysOfLoop(cont);
              for (let k = 0; k < keys.length; k++) {
                const g = builderOf(groupKeys, builders, keys[k]!);
                (g.loops ??= []).push(p);
                if (below1 > below0) {
                  g.hasEnds = true;
                  (g.ranges ??= []).push(below0, below1);
                }
              }
            }
            p += size;
            continue;
          }
        }
        p++;
      }
      if (rootOf !== null) rootSteps[rootOf[start]!]! += steps - stepsBefore;
    }
    while (ji < joins.length) {
      this.contSlot(joins[ji + 1]!, stamp, contSets, tokensByCont);
      ji += 2;
    }
    if (this.regionSlices.length > 0) mask = this.setRegionsTaken(this.maskOfFew(mask));
    const tokens = mask === null && this.fewCount > 0 ? this.listOfFew() : null;
    // The root slice's classes join at their first tokens; their roots are every subtree they reach.
    if (rootOf !== null && slice !== null) {
      const classSets = this.classSetsOf(setId, slice);
      const classRoots = classRootsOf(this.trie, slice);
      for (let c = 0; c < classSets.length; c++) {
        const set = classSets[c]!;
        if (slice.classPositions[c] !== null && this.seen[set] === stamp) {
          const at = this.seenSlot[set]! * 8;
          for (let w = 0; w < 8; w++) this.contRootWords[at + w]! |= classRoots[c * 8 + w]!;
        }
      }
    }
    this.rootsStamp = -1;
    if (rootOf !== null && slice !== null) {
      // The region's steps, charged below as walked, by the root child they are under.
      const { rootChild } = this.trie;
      for (let b = 0; b < 256; b++) {
        const c = rootChild[b]!;
        if (c >= 0) rootSteps[b]! += visitedBetween(slice, c, c + subtreeSize[c]!);
      }
    }
    this.work.chargeNodes(steps + (slice?.regionSteps ?? 0));
    const roots = dense ? this.contRootWords.subarray(0, contSets.length * 8) : null;
    return { mask, tokens, contSets, tokensByCont, groupKeys, builders, roots, rootSteps: dense ? rootSteps : null };
  }

  /** The walk's mask: `mask`, or made now with the few tokens so far (see fewRanges). */
  private maskOfFew(mask: Uint32Array | null): Uint32Array {
    if (mask !== null) return mask;
    const made = new Uint32Array(maskWords(this.trie.vocabSize));
    const ranges = this.fewRanges;
    for (let i = 0; i < ranges.length; i += 2) setTokenRange(made, this.trie.tokenIds, ranges[i]!, ranges[i + 1]!);
    ranges.length = 0;
    this.fewCount = 0;
    return made;
  }

  /** The few tokens of a walk without a mask, ascending (as a mask's set bits read). */
  private listOfFew(): Int32Array {
    const { tokenIds } = this.trie;
    const ranges = this.fewRanges;
    const out = new Int32Array(this.fewCount);
    let n = 0;
    for (let i = 0; i < ranges.length; i += 2) for (let t = ranges[i]!; t < ranges[i + 1]!; t++) out[n++] = tokenIds[t]!;
    ranges.length = 0;
    this.fewCount = 0;
    return out.sort();
  }

  /**
   * A walk's parts as kept: its lists shared with earlier equal ones (sharedShape, sharedTokens).
   * `base`: a body's root walk, which derived walks may take from: it keeps contRoots and rootSteps.
   */
  private keptWalk(setId: number, parts: WalkParts, dense: boolean, base: boolean): LexerWalk {
    const { mask, tokens: few, contSets, tokensByCont, groupKeys, builders, roots, rootSteps } = parts;
    const out: CommitGroup[] = [];
    for (let i = 0; i < builders.length; i++) {
      const g = builders[i]!;
      out.push({ commitKey: groupKeys[i]!, hasEnds: g.hasEnds, ...this.sharedShape(g) });
    }
    const lists: Int32Array[] = [];
    if (!dense) for (let i = 0; i < tokensByCont.length; i++) lists.push(this.keptListOf(tokensByCont[i]!));
    let bytes = 200 + 8 * contSets.length + 80 * out.length;
    for (const list of lists) bytes += 64 + list.byteLength;
    this.madeBytes += bytes;
    const { dense: shared, tokens } = mask !== null ? this.sharedTokens(mask) : few !== null ? this.sharedList(few) : NO_TOKENS;
    const steps = base && rootSteps !== null ? rootSteps.slice() : null;
    const contRoots = base && roots !== null ? roots.slice() : null;
    this.madeBytes += (steps?.byteLength ?? 0) + (contRoots?.byteLength ?? 0);
    return {
      owner: setId,
      mask: shared,
      tokens,
      contSets,
      tokensByCont: lists,
      groups: out,
      contRoots,
      rootSteps: steps,
      steps: 0,
    };
  }

  /**
   * A root walk's commit-free tokens as kept: a list when few, else the mask, each the same array
   * as an earlier walk's equal one (read only once made). The sets of a keyword's prefixes in each
   * parser context allow the same few tokens: a 152k-token mask each, a few hundred bytes as lists.
   */
  private sharedTokens(mask: Uint32Array): KeptTokens {
    const h = sampledWordHash(mask);
    let bucket = this.masks.get(h);
    if (bucket === undefined) this.masks.set(h, (bucket = []));
    // Counted only as far as telling a list from a mask needs, and only once a list is compared
    // or the mask is kept (a mask is compared word for word): counting first cost the tail 4%.
    let count = -1;
    for (const kept of bucket) {
      if (kept.dense !== null) {
        if (sameWords(kept.dense, mask)) return kept;
        continue;
      }
      if (count < 0) count = popCountUpTo(mask, SPARSE_WALK_TOKENS + 1);
      if (kept.count === count && allSet(mask, kept.tokens!)) return kept;
    }
    if (count < 0) count = popCountUpTo(mask, SPARSE_WALK_TOKENS + 1);
    const kept: KeptTokens =
      count > SPARSE_WALK_TOKENS ? { count, dense: mask, tokens: null } : { count, dense: null, tokens: int32Of(setBits(mask)) };
    if (bucket.length < MAX_BUCKET) bucket.push(kept);
    this.madeBytes += 96 + (kept.dense?.byteLength ?? 0) + (kept.tokens?.byteLength ?? 0);
    return kept;
  }

  /** A walk's few tokens as kept (see sharedTokens): the same array as an earlier walk's equal list. */
  private sharedList(tokens: Int32Array): KeptTokens {
    const h = wordHash(new Uint32Array(tokens.buffer, tokens.byteOffset, tokens.length));
    let bucket = this.lists.get(h);
    if (bucket === undefined) this.lists.set(h, (bucket = []));
    for (const kept of bucket) if (sameList(kept.tokens!, tokens)) return kept;
    const kept: KeptTokens = { count: tokens.length, dense: null, tokens };
    if (bucket.length < MAX_BUCKET) bucket.push(kept);
    this.madeBytes += 96 + tokens.byteLength;
    return kept;
  }

  /**
   * A new group's lists and walks below, shared with every earlier group of the same lists (see
   * GroupShape): the states of a whitespace run each walk the trie alike past their first bytes.
   */
  private sharedShape(g: GroupBuilder): GroupShape {
    const dead = g.dead ?? NO_NODES;
    const alive = g.alive ?? NO_NODES;
    const ranges = g.ranges ?? NO_NODES;
    const nodes = g.nodes ?? NO_NODES;
    const loops = g.loops ?? NO_NODES;
    let h = 0x811c9dc5;
    for (const list of [dead, alive, ranges, nodes, loops]) {
      h = Math.imul(h ^ list.length ^ 0x5bd1e995, 0x01000193);
      for (let i = 0; i < list.length; i++) h = Math.imul(h ^ list[i]!, 0x01000193);
    }
    let bucket = this.shapes.get(h);
    if (bucket === undefined) this.shapes.set(h, (bucket = []));
    for (const shape of bucket) {
      if (sameList(shape.deadEnds, dead) && sameList(shape.aliveEnds, alive) && sameList(shape.aliveRanges, ranges))
        if (sameList(shape.nodes, nodes) && sameList(shape.loops, loops)) return shape;
    }
    const shape: GroupShape = {
      deadEnds: dead.length === 0 ? EMPTY : this.keptListOf(dead),
      aliveEnds: alive.length === 0 ? EMPTY : this.keptListOf(alive),
      aliveRanges: ranges,
      nodes,
      loops,
      below: { set: -1, walk: null, more: null, endsWithin: UNKNOWN, maxBytes: -1 },
    };
    if (bucket.length < MAX_BUCKET) bucket.push(shape);
    this.madeBytes += 200 + shape.deadEnds.byteLength + shape.aliveEnds.byteLength + 8 * (ranges.length + nodes.length + loops.length);
    return shape;
  }

  /**
   * The slice whose region a walk takes up at node `p`, met in set `cont` (walkParts, for a
   * subtree of at least MIN_SLICED_SUBTREE nodes where the set changed): a set of a slice's key
   * where its region reaches it, or one of a slice's classes inside a character where the region
   * reaches it in that class; null for none. Its owner set is left in regionOwner. A set not asked
   * before is asked only when it loops on the first byte below (the walk steps there next anyway):
   * a new set (a key name's prefix) is not asked for all its loop bytes.
   */
  private regionEntered(cont: number, p: number): LoopSlice | null {
    const asked = this.setSlices.get(cont);
    let region = asked ?? null;
    this.regionOwner = cont;
    if (asked === undefined && (this.stepCode(cont, this.trie.nodeInfo[p + 1]! & 0xff) & ~COMMIT) - 1 === cont)
      region = this.loopSliceOf(cont);
    if (region !== null) return entersAt(region, p) ? region : null;
    const cls = this.classOwners.get(cont);
    if (cls !== undefined && classEntryAt(cls.slice, p) === cls.cls) {
      this.regionOwner = cls.owner;
      return cls.slice;
    }
    return null;
  }

  /**
   * Opens frame `top` for the region of `slice` below node `p`, reached in `set` (of the slice's
   * key) or in one of `set`'s classes: its exits below `p`, and each class's set with the node of
   * its first token there, where the whole walk would meet it.
   */
  private enterRegion(top: number, slice: LoopSlice, set: number, p: number, size: number, bitsKept = false): void {
    const frames = this.frames;
    this.regionsTaken++;
    const f = (frames[top] ??= { slice, set, next: 0, last: 0, end: 0, at: 0, joins: [], ji: 0 });
    f.slice = slice;
    f.set = set;
    f.next = lowerBound(slice.exits, p + 1);
    f.last = lowerBound(slice.exits, p + size);
    f.end = p + size;
    f.ji = 0;
    const { tokenStart, tokenIds, tokenNode } = this.trie;
    const from = tokenStart[p]!;
    const to = tokenStart[p + size]!;
    const joins = f.joins;
    joins.length = 0;
    const classSets = this.classSetsOf(set, slice);
    for (let i = 0; i < slice.classOrder.length; i++) {
      const c = slice.classOrder[i]!;
      const k = firstClassPosition(slice, c, from, to);
      if (k < 0) continue;
      // By node, in trie order (a class's first token here need not come in classOrder's order).
      const node = tokenNode[tokenIds[k]!]!;
      let at2 = joins.length;
      while (at2 > 0 && joins[at2 - 2]! > node) at2 -= 2;
      joins.splice(at2, 0, node, classSets[c]!);
    }
    // Its tokens' bits are set with the walk's others once it ends, unless the mask has them.
    if (bitsKept) return;
    let slot = this.regionSlices.indexOf(slice);
    if (slot < 0) {
      slot = this.regionSlices.length;
      this.regionSlices.push(slice);
      (this.regionRanges[slot] ??= []).length = 0;
    }
    this.regionRanges[slot]!.push(from, to);
  }

  /** Enters in the walk's sets the frame's class sets whose first token comes before node `e`. */
  private joinBefore(f: RegionFrame, e: number, stamp: number, contSets: number[], tokensByCont: number[][]): void {
    const joins = f.joins;
    while (f.ji < joins.length && joins[f.ji]! < e) {
      this.contSlot(joins[f.ji + 1]!, stamp, contSets, tokensByCont);
      // A region below the root lies in one root child's subtree (the frame's).
      if (this.rootsStamp === stamp) this.markRoot(joins[f.ji + 1]!, this.rootOf[f.end - 1]!);
      f.ji += 2;
    }
  }

  /** Notes that one of `cont`'s tokens (in this dense walk's contSets) ends below root byte `byte`. */
  private markRoot(cont: number, byte: number): void {
    this.contRootWords[this.seenSlot[cont]! * 8 + (byte >>> 5)]! |= 1 << (byte & 31);
  }

  /** The tokens of the regions the walk took up below the root, set in its mask (made on the first). */
  private setRegionsTaken(mask: Uint32Array | null): Uint32Array | null {
    const scratch = (this.regionScratch ??= new Uint32Array(maskWords(this.trie.vocabSize)));
    for (let i = 0; i < this.regionSlices.length; i++)
      mask = setRegionTokens(this.regionSlices[i]!, this.regionRanges[i]!, this.trie.tokenIds, mask, scratch);
    this.regionSlices.length = 0;
    return mask;
  }

  /**
   * Tokens [from, to) of trie order end a commit-free token in set `cont`: into the walk's dense
   * mask (made on first need, returned), or into the list of `cont`'s slot in the walk.
   */
  private addTokens(
    cont: number,
    from: number,
    to: number,
    stamp: number,
    contSets: number[],
    tokensByCont: number[][],
    dense: boolean,
    mask: Uint32Array | null,
  ): Uint32Array | null {
    if (from >= to) return mask;
    this.contSlot(cont, stamp, contSets, tokensByCont);
    const tokenIds = this.trie.tokenIds;
    if (dense) {
      if (mask === null && this.fewCount + (to - from) <= SPARSE_WALK_TOKENS) {
        this.fewRanges.push(from, to);
        this.fewCount += to - from;
        return null;
      }
      mask = this.maskOfFew(mask);
      setTokenRange(mask, tokenIds, from, to);
    } else {
      const list = tokensByCont[this.seenSlot[cont]!]!;
      for (let t = from; t < to; t++) list.push(tokenIds[t]!);
    }
    return mask;
  }

  /** Enters `cont` in the walk's contSets (and an empty list of its tokens) when the walk first meets it. */
  private contSlot(cont: number, stamp: number, contSets: number[], tokensByCont: number[][]): void {
    if (cont >= this.seen.length) {
      const n = Math.max(cont + 1, this.seen.length * 2);
      this.seen = grownTo(this.seen, n);
      this.seenSlot = grownTo(this.seenSlot, n);
    }
    if (this.seen[cont] !== stamp) {
      this.seen[cont] = stamp;
      const slot = contSets.length;
      this.seenSlot[cont] = slot;
      contSets.push(cont);
      tokensByCont.push([]);
      if (this.rootsStamp === stamp) {
        if (slot * 8 + 8 > this.contRootWords.length) this.contRootWords = grownTo(this.contRootWords, this.contRootWords.length * 2);
        this.contRootWords.fill(0, slot * 8, slot * 8 + 8);
      }
    }
  }

  /**
   * A walk's token list, kept as long as the matcher: from the slab while it lasts and the list is
   * short (a typed array of its own over 64 bytes costs 1–3 µs; see TableSlab).
   */
  private keptListOf(list: readonly number[]): Int32Array {
    if (list.length <= 16 || list.length > SLAB_LIST_MAX) return listOf(list);
    const out = this.tables.int32(list.length);
    for (let i = 0; i < list.length; i++) out[i] = list[i]!;
    return out;
  }

  /**
   * Sets in `mask` the commit-free tokens of the root walk from `setId` that end in a set of
   * `keep`, taking a subtree at once where the set loops on all of it, as the walk did (budget
   * masks inside a string otherwise walked nearly the whole trie node by node). A body set with a
   * loop slice takes its region's tokens from the slice, by class, and walks only the exits; the
   * region's steps are charged as walked, as walkFrom does, so the verdicts are those of the walk.
   */
  maskOf(setId: number, keep: Set<number>, mask: Uint32Array): void {
    const slice = this.isBody(setId) ? this.maskSliceOf(setId) : null;
    this.atDepth[0] = setId;
    const { numNodes } = this.trie;
    // The kept sets marked once for the whole walk (a Set's lookups were a fifth of its time).
    let kept = this.keptMarks;
    const stamp = ++this.keptStamp;
    for (const k of keep) {
      if (k >= kept.length) kept = this.keptMarks = grownTo(kept, Math.max(k + 1, kept.length * 2));
      kept[k] = stamp;
    }
    this.work.chargeNodes(slice === null ? this.maskBelow(1, numNodes, mask) : this.maskOfRegion(setId, slice, 0, numNodes, mask));
  }

  private isKept(set: number): boolean {
    return set < this.keptMarks.length && this.keptMarks[set] === this.keptStamp;
  }

  /**
   * maskOf's tokens of the subtree [p, end) that `slice`'s region reaches in `set` (the whole trie
   * from the root): the region's by class, then its exits walked; the region's steps as walked.
   */
  private maskOfRegion(set: number, slice: LoopSlice, p: number, end: number, mask: Uint32Array): number {
    const { tokenStart, tokenIds, depth, subtreeSize } = this.trie;
    const classSets = this.classSetsOf(set, slice);
    const kept = this.keptClasses;
    kept.length = 0;
    for (let c = 0; c < classSets.length; c++) kept.push(this.isKept(classSets[c]!));
    if (slice.pure !== null) {
      const scratch = (this.regionScratch ??= new Uint32Array(maskWords(this.trie.vocabSize)));
      setClassTokensIn(slice, kept, tokenStart[p]!, tokenStart[end]!, tokenIds, mask, scratch);
    }
    let steps = visitedBetween(slice, p, end);
    const exits = slice.exits;
    for (let i = lowerBound(exits, p + 1), last = lowerBound(exits, end); i < last; i++) {
      const e = exits[i]!;
      this.atDepth[depth[e]! - 1] = set;
      steps += this.maskBelow(e, e + subtreeSize[e]!, mask);
    }
    return steps;
  }

  /**
   * maskOf's walk over trie nodes [from, to), subtrees whose parents' sets are in atDepth; returns
   * its steps. Where it steps into a body set at a node its slice's region reaches (a name's
   * letters below the start of a token), the subtree's region tokens come from the slice and only
   * its exits are walked, as walkFrom takes regions up (and charged alike).
   */
  private maskBelow(from: number, to: number, mask: Uint32Array): number {
    const { nodeInfo, subtreeSize, tokenStart, tokenIds } = this.trie;
    const kept = this.keptMarks;
    const stamp = this.keptStamp;
    const atDepth = this.atDepth;
    let p = from;
    let steps = 0;
    while (p < to) {
      steps++;
      const info = nodeInfo[p]!;
      const d = (info >>> 8) & 0xffff;
      const code = this.stepCode(atDepth[d - 1]!, info & 0xff);
      const cont = (code & ~COMMIT) - 1;
      if (cont < 0) {
        p += subtreeSize[p]!;
        continue;
      }
      atDepth[d] = cont;
      const size = subtreeSize[p]!;
      if (this.loopSlices && cont !== atDepth[d - 1] && size >= MIN_SLICED_SUBTREE) {
        let region = this.maskSlices.get(cont);
        if (region === undefined && (this.stepCode(cont, nodeInfo[p + 1]! & 0xff) & ~COMMIT) - 1 === cont) region = this.maskSliceOf(cont);
        const entered = region === undefined || region === null ? null : this.maskSliceEnteredAt(cont, region, p, size);
        if (entered !== null) {
          // `p` itself is counted above.
          steps += this.maskOfRegion(cont, entered, p, p + size, mask) - 1;
          p += size;
          continue;
        }
      }
      if ((info & 0x80000000) !== 0 && cont < kept.length && kept[cont] === stamp)
        setTokenRange(mask, tokenIds, tokenStart[p]!, tokenStart[p + 1]!);
      if (size > 1 && this.loopsBelow(cont, p)) {
        if (cont < kept.length && kept[cont] === stamp) setTokenRange(mask, tokenIds, tokenStart[p + 1]!, tokenStart[p + size]!);
        p += size;
        continue;
      }
      p++;
    }
    return steps;
  }
}
