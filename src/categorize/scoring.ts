/**
 * Whole-continuation log-likelihoods as one scheduler job.
 *
 * The shared prefix is evaluated once on the job's first sequence. The continuations
 * ("branches") form a token trie, cut into chains: maximal runs of nodes with a single child.
 * A chain's tokens all go into ONE decode, as consecutive positions on the sequence of one branch
 * through it (its representative), because the KV of everything above the chain is already on
 * that sequence. Only branch points cost a round: a request whose continuations diverge once
 * needs two decodes in all (prefix, then every chain side by side), however long they are.
 * After a chain is decoded its KV cells are shared (seq_cp, no copy with the unified cache) with
 * the other branches that continue below it, so their chains can be decoded on their own
 * sequences next round.
 *
 * The prefix's last chunk is decoded as rows shared by the first wave's sequences, so the first
 * wave's top chains join that same decode: one request whose continuations never branch below
 * the first token costs a single decode in all.
 *
 * More branches than the job's sequences are scored in waves over the same evaluated prefix:
 * branches are sorted so that those sharing a token prefix fall into the same wave, each wave's
 * sequences are cleared before the next one.
 */
import type { LlamaBatch, LlamaContext, SequenceSlots } from "../model/index.js";
import type { DecodeJob } from "../generate/index.js";
import { commonPrefixLength } from "../support/index.js";
import { MAX_READ_SETS, logSumExpOf, setMembership } from "./logsumexp.js";

export interface ScoringRequest {
  prefix: Int32Array;
  branches: Int32Array[];
  /** Branch tokens before this index are not scored (re-tokenized prompt text, a fixed question). */
  scoreFrom: Int32Array;
  /** Token sets whose total probability is read after each branch's last token. */
  readAfter: Int32Array[];
  /** Branch sequences held at once (the job holds one more, for the prefix). */
  maxBranchSeqs: number;
  /** KV cells the job may fill: prefix + the trie nodes of one wave. */
  maxCells: number;
  signal: AbortSignal | undefined;
}

export interface ScoringResult {
  /** Sum of the scored branch tokens' log-probabilities. */
  tokenLogProb: Float64Array;
  /** after[b * readAfter.length + k]: log-probability of set k right after branch b. */
  after: Float64Array;
}

/** Decode counters of one job, for profiling and tests. */
export interface ScoringStats {
  rounds: number;
  rows: number;
  logitRows: number;
}

/** The trie of one wave's branches; node 0 is the end of the shared prefix. */
class Wave {
  /** Request branch index of each wave-local branch. */
  readonly branches: Int32Array;
  nodeToken: Int32Array;
  nodeDepth: Int32Array;
  nodeParent: Int32Array;
  /** Children of node n: childList[childStart[n] .. childStart[n + 1]). */
  childStart: Int32Array;
  childList: Int32Array;
  /** Whether the node's logits are read (a child is scored, or a branch ends there). */
  needsLogits: Uint8Array;
  /** Wave-local branches ending at node n: endList[endStart[n] .. endStart[n + 1]). */
  endStart: Int32Array;
  endList: Int32Array;
  /** Log-probability of a node's token given its parent. */
  readonly nodeLogProb: Float64Array;
  /** Wave-local node path of each branch. */
  readonly paths: Int32Array[];
  /** Chains: nodes chainFirst..chainLast (ids are contiguous along a chain). */
  readonly chainFirst: number[] = [];
  readonly chainLast: number[] = [];
  /** Wave-local branch whose sequence decodes the chain. */
  readonly chainRep: number[] = [];
  /** Chains starting below node n (at a branch point or the root). */
  readonly chainsBelow: number[][];
  /** Wave-local branches through each node's subtree end: a range of the sorted branch order. */
  readonly firstBranch: Int32Array;
  readonly lastBranch: Int32Array;

  constructor(branchIds: number[], all: Int32Array[], scoreFrom: Int32Array, readsAfter: boolean) {
    this.branches = Int32Array.from(branchIds);
    const { token, depth, parent, first, last, paths } = numberNodes(branchIds, all);
    const n = token.length;
    this.nodeToken = Int32Array.from(token);
    this.nodeDepth = Int32Array.from(depth);
    this.nodeParent = Int32Array.from(parent);
    this.firstBranch = Int32Array.from(first);
    this.lastBranch = Int32Array.from(last);
    this.paths = paths;
    this.nodeLogProb = new Float64Array(n);
    const childCount = new Int32Array(n + 1);
    for (let c = 1; c < n; c++) childCount[parent[c]!]!++;
    this.childStart = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) this.childStart[i + 1] = this.childStart[i]! + childCount[i]!;
    this.childList = new Int32Array(Math.max(0, n - 1));
    const fillAt = this.childStart.slice(0, n);
    for (let c = 1; c < n; c++) this.childList[fillAt[parent[c]!]!++] = c;
    const endCount = new Int32Array(n);
    for (const path of paths) endCount[path.length === 0 ? 0 : path[path.length - 1]!]!++;
    this.endStart = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) this.endStart[i + 1] = this.endStart[i]! + endCount[i]!;
    this.endList = new Int32Array(paths.length);
    const endAt = this.endStart.slice(0, n);
    paths.forEach((path, w) => (this.endList[endAt[path.length === 0 ? 0 : path[path.length - 1]!]!++] = w));
    this.needsLogits = new Uint8Array(n);
    this.markLogitsRead(branchIds, scoreFrom, readsAfter);
    this.chainsBelow = Array.from({ length: n }, () => []);
    this.cutChains(childCount, first);
  }

  /** needsLogits: the parent of every scored token, and each branch's end where sets are read after it. */
  private markLogitsRead(branchIds: number[], scoreFrom: Int32Array, readsAfter: boolean): void {
    this.paths.forEach((path, w) => {
      const from = scoreFrom[branchIds[w]!]!;
      for (let d = Math.max(0, from); d < path.length; d++) this.needsLogits[d === 0 ? 0 : path[d - 1]!] = 1;
      if (readsAfter) this.needsLogits[path.length === 0 ? 0 : path[path.length - 1]!] = 1;
    });
  }

  /** Cuts the trie into chains (maximal single-child runs), each decoded on its first branch's sequence. */
  private cutChains(childCount: Int32Array, first: number[]): void {
    const n = this.nodeToken.length;
    for (let c = 1; c < n; c++) {
      const p = this.nodeParent[c]!;
      if (p !== 0 && childCount[p] === 1) continue; // inside a chain
      let end = c;
      while (childCount[end] === 1) end = this.childList[this.childStart[end]!]!;
      const chain = this.chainFirst.length;
      this.chainFirst.push(c);
      this.chainLast.push(end);
      this.chainRep.push(first[end]!);
      this.chainsBelow[p]!.push(chain);
    }
  }

  get nodeCount(): number {
    return this.nodeToken.length;
  }
}

/** A wave's trie nodes (node 0 the end of the prefix), before Wave indexes them. */
interface NumberedNodes {
  token: number[];
  depth: number[];
  parent: number[];
  /** First and last wave-local branch through each node. */
  first: number[];
  last: number[];
  /** Node path of each wave-local branch. */
  paths: Int32Array[];
}

/** Numbers the trie nodes of a wave's branches (sorted, as ScoringJob orders them). */
function numberNodes(branchIds: number[], all: Int32Array[]): NumberedNodes {
  // Nodes are numbered in depth-first order, a chain's nodes consecutively: branches arrive
  // sorted, so a new node always extends the most recent path.
  const token: number[] = [-1];
  const depth: number[] = [-1];
  const parent: number[] = [-1];
  const first: number[] = [0];
  const last: number[] = [branchIds.length - 1];
  const paths: Int32Array[] = [];
  let previous: Int32Array = new Int32Array(0);
  let previousPath: Int32Array = new Int32Array(0);
  for (let w = 0; w < branchIds.length; w++) {
    const tokens = all[branchIds[w]!]!;
    const path = new Int32Array(tokens.length);
    let d = 0;
    while (d < tokens.length && d < previous.length && tokens[d] === previous[d]) {
      path[d] = previousPath[d]!;
      last[path[d]!] = w;
      d++;
    }
    let node = d === 0 ? 0 : path[d - 1]!;
    for (; d < tokens.length; d++) {
      const child = token.length;
      token.push(tokens[d]!);
      depth.push(d);
      parent.push(node);
      first.push(w);
      last.push(w);
      path[d] = child;
      node = child;
    }
    paths.push(path);
    previous = tokens;
    previousPath = path;
  }
  return { token, depth, parent, first, last, paths };
}

export class ScoringJob implements DecodeJob {
  readonly seqsNeeded: number;
  /** KV cells held at most (the prefix plus the largest wave): reserved with the scheduler. */
  readonly kvCells: number;
  readonly signal: AbortSignal | undefined;
  readonly stats: ScoringStats = { rounds: 0, rows: 0, logitRows: 0 };
  private readonly req: ScoringRequest;
  private readonly waves: Wave[] = [];
  private readonly out: ScoringResult;
  private seqs: Int32Array = new Int32Array(0);
  private prefilled = 0;
  private wave = -1; // -1: the prefix
  /** Chains ready to decode (their parent's KV is on every sequence below it), FIFO. */
  private ready: number[] = [];
  private readyHead = 0;
  /** Tokens of the head chain already added (a chain longer than a batch spans rounds). */
  private headDone = 0;
  /** Rows of this round: batch row → wave node (0 = the prefix's last token). */
  private rowNode: number[] = [];
  private rowIndex: number[] = [];
  /** Chains whose last token went into this round. */
  private completed: number[] = [];
  private onSettle: (error?: unknown) => void;
  /** log Σ exp over each readAfter set, for the row being read. */
  private readonly setLse = new Float64Array(MAX_READ_SETS);

  constructor(req: ScoringRequest, settle: (error?: unknown) => void) {
    this.req = req;
    this.signal = req.signal;
    this.onSettle = settle;
    if (req.prefix.length === 0) throw new RangeError("scoring needs a non-empty prefix");
    const order = req.branches.map((_, b) => b).sort((a, b) => compareTokens(req.branches[a]!, req.branches[b]!));
    // Waves: consecutive branches (in trie order) while their sequences and KV cells fit.
    const cellBudget = req.maxCells - req.prefix.length;
    let wave: number[] = [];
    let cells = 0;
    let widest = 1;
    let mostCells = 0;
    for (let i = 0; i < order.length; i++) {
      const tokens = req.branches[order[i]!]!;
      const shared = wave.length === 0 ? 0 : commonPrefixLength(tokens, req.branches[order[i - 1]!]!);
      if (wave.length > 0 && (wave.length >= req.maxBranchSeqs || cells + tokens.length - shared > cellBudget)) {
        this.waves.push(new Wave(wave, req.branches, req.scoreFrom, req.readAfter.length > 0));
        wave = [];
        cells = 0;
      }
      cells += tokens.length - (wave.length === 0 ? 0 : shared);
      if (cells > cellBudget)
        throw new RangeError(`a branch needs ${req.prefix.length + tokens.length} KV cells, the job may use ${req.maxCells}`);
      wave.push(order[i]!);
      widest = Math.max(widest, wave.length);
      mostCells = Math.max(mostCells, cells);
    }
    if (wave.length > 0) this.waves.push(new Wave(wave, req.branches, req.scoreFrom, req.readAfter.length > 0));
    this.seqsNeeded = 1 + widest;
    this.kvCells = req.prefix.length + mostCells;
    this.out = {
      tokenLogProb: new Float64Array(req.branches.length),
      after: new Float64Array(req.branches.length * req.readAfter.length),
    };
  }

  get prefilling(): boolean {
    return this.wave < 0;
  }

  /** The shared prefix: the prefix cache may hold its first tokens already. */
  get promptTokens(): Int32Array {
    return this.req.prefix;
  }

  /** `reused`: the prefix's first tokens already in the first sequence's KV (the prefix cache's). */
  begin(seqs: Int32Array, _slots?: SequenceSlots, reused = 0): void {
    this.seqs = seqs;
    this.prefilled = reused;
  }

  /** The first sequence holds the prefix fed so far (the branches are on the others). */
  keptTokens(): Int32Array {
    return this.req.prefix.slice(0, this.prefilled);
  }

  fill(batch: LlamaBatch, slots: SequenceSlots, room: number): void {
    this.rowNode.length = 0;
    this.rowIndex.length = 0;
    this.completed.length = 0;
    const start = batch.length;
    let left = room;
    if (this.wave < 0) left -= this.fillPrefix(batch, slots, room);
    if (this.wave >= 0) this.fillChains(batch, left);
    this.stats.rounds++;
    this.stats.rows += batch.length - start;
    this.stats.logitRows += this.rowIndex.length;
  }

  /**
   * The prefix's next chunk; its last chunk goes to the first wave's sequences too, which starts
   * that wave in the same round. Returns the rows added.
   */
  private fillPrefix(batch: LlamaBatch, slots: SequenceSlots, room: number): number {
    const prefix = this.req.prefix;
    const end = Math.min(prefix.length, this.prefilled + room);
    const seq = this.seqs[0]!;
    const first = this.waves[0];
    const fuse = end === prefix.length && first !== undefined && first.chainsBelow[0]!.length > 0;
    // The last chunk's cells go to the first wave's sequences too; earlier chunks are shared now.
    const owners = fuse ? this.seqs.subarray(0, 1 + first.branches.length) : null;
    if (owners !== null && this.prefilled > 0) {
      for (let k = 1; k < owners.length; k++) slots.context.seqCopy(seq, owners[k]!, 0, this.prefilled);
    }
    for (let i = this.prefilled; i < end; i++) {
      const last = i === prefix.length - 1;
      const row = owners !== null ? batch.addShared(prefix[i]!, i, owners, last) : batch.add(prefix[i]!, i, seq, last);
      if (last) {
        this.rowIndex.push(row);
        this.rowNode.push(0);
      }
    }
    const added = end - this.prefilled;
    this.prefilled = end;
    slots.lengths[seq] = end;
    if (owners !== null) {
      this.wave = 0;
      this.ready = [...first!.chainsBelow[0]!];
      this.readyHead = 0;
      this.headDone = 0;
    }
    return added;
  }

  /** The ready chains' tokens, in order, while `left` rows fit (a long chain spans rounds). */
  private fillChains(batch: LlamaBatch, left: number): void {
    const wave = this.waves[this.wave]!;
    const base = this.req.prefix.length;
    while (left > 0 && this.readyHead < this.ready.length) {
      const chain = this.ready[this.readyHead]!;
      const first = wave.chainFirst[chain]!;
      const last = wave.chainLast[chain]!;
      const seq = this.seqs[1 + wave.chainRep[chain]!]!;
      const stop = Math.min(last + 1, first + this.headDone + left);
      for (let node = first + this.headDone; node < stop; node++) {
        const wants = wave.needsLogits[node] === 1;
        const row = batch.add(wave.nodeToken[node]!, base + wave.nodeDepth[node]!, seq, wants);
        if (wants) {
          this.rowIndex.push(row);
          this.rowNode.push(node);
        }
      }
      left -= stop - (first + this.headDone);
      if (stop > last) {
        this.completed.push(chain);
        this.readyHead++;
        this.headDone = 0;
      } else {
        this.headDone = stop - first;
      }
    }
  }

  consume(ctx: LlamaContext): boolean {
    if (this.wave < 0) {
      if (this.rowIndex.length > 0) this.readPrefixRow(ctx.logits(this.rowIndex[0]!));
      if (this.prefilled < this.req.prefix.length) return false;
      return this.startWave(ctx, 0);
    }
    const wave = this.waves[this.wave]!;
    for (let i = 0; i < this.rowIndex.length; i++) {
      const node = this.rowNode[i]!;
      // Node 0 here is the prefix's last row, decoded together with the first wave's chains.
      if (node === 0) this.readPrefixRow(ctx.logits(this.rowIndex[i]!));
      else this.readRow(wave, ctx.logits(this.rowIndex[i]!), node);
    }
    const base = this.req.prefix.length;
    for (const chain of this.completed) {
      const last = wave.chainLast[chain]!;
      const below = wave.chainsBelow[last]!;
      if (below.length === 0) continue;
      // Every branch through the chain's end continues on its own sequence later: share the chain.
      const rep = wave.chainRep[chain]!;
      const p0 = base + wave.nodeDepth[wave.chainFirst[chain]!]!;
      const p1 = base + wave.nodeDepth[last]! + 1;
      for (let w = wave.firstBranch[last]!; w <= wave.lastBranch[last]!; w++) {
        if (w !== rep) ctx.seqCopy(this.seqs[1 + rep]!, this.seqs[1 + w]!, p0, p1);
      }
      for (const child of below) this.ready.push(child);
    }
    if (this.readyHead < this.ready.length) return false;
    this.finishWave(wave);
    for (let w = 0; w < wave.branches.length; w++) ctx.seqRemove(this.seqs[1 + w]!, -1, -1);
    return this.startWave(ctx, this.wave + 1);
  }

  /** Shares the prefix with the wave's sequences and queues its top chains; true when all done. */
  private startWave(ctx: LlamaContext, index: number): boolean {
    this.wave = index;
    if (index >= this.waves.length) return true;
    const wave = this.waves[index]!;
    for (let w = 0; w < wave.branches.length; w++) ctx.seqCopy(this.seqs[0]!, this.seqs[1 + w]!, 0, this.req.prefix.length);
    this.ready = [...wave.chainsBelow[0]!];
    this.readyHead = 0;
    this.headDone = 0;
    // Only empty branches: nothing to decode in this wave.
    if (this.ready.length === 0) {
      this.finishWave(wave);
      return this.startWave(ctx, index + 1);
    }
    return false;
  }

  /** The prefix's last logits score every wave's first tokens (and empty branches). */
  private readPrefixRow(logits: Float32Array): void {
    for (const wave of this.waves) this.readRow(wave, logits, 0);
  }

  private readRow(wave: Wave, logits: Float32Array, node: number): void {
    const sets = this.req.readAfter;
    const ends = wave.endStart[node + 1]! - wave.endStart[node]!;
    // Where set probabilities are read, one pass over the vocabulary yields them all.
    const lse =
      ends > 0 && sets.length > 0
        ? logSumExpOf(logits, setMembership(sets, logits.length), sets.length, this.setLse)
        : logSumExpOf(logits, null, 0, null);
    for (let i = wave.childStart[node]!; i < wave.childStart[node + 1]!; i++) {
      const child = wave.childList[i]!;
      wave.nodeLogProb[child] = logits[wave.nodeToken[child]!]! - lse;
    }
    for (let i = wave.endStart[node]!; i < wave.endStart[node + 1]!; i++) {
      const b = wave.branches[wave.endList[i]!]!;
      for (let k = 0; k < sets.length; k++) this.out.after[b * sets.length + k] = this.setLse[k]! - lse;
    }
  }

  private finishWave(wave: Wave): void {
    for (let w = 0; w < wave.branches.length; w++) {
      const b = wave.branches[w]!;
      const path = wave.paths[w]!;
      let sum = 0;
      for (let d = Math.max(0, this.req.scoreFrom[b]!); d < path.length; d++) sum += wave.nodeLogProb[path[d]!]!;
      this.out.tokenLogProb[b] = sum;
    }
  }

  settle(error?: unknown): void {
    this.onSettle(error);
  }

  result(): ScoringResult {
    return this.out;
  }
}

function compareTokens(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
