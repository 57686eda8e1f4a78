/**
 * Whole-continuation log-likelihoods as one scheduler job: a shared prefix is evaluated once, the
 * continuations ("branches") are laid out as a token trie so a prefix shared by several branches
 * is decoded once, and each trie level is one batched decode. Every branch has its own sequence;
 * a trie node is decoded on one of them and its KV cell then shared with the others (seq_cp),
 * so children on any branch of the subtree see it.
 */
import type { LlamaBatch, LlamaContext, SequenceSlots } from "../model/index.js";
import type { DecodeJob } from "../generate/scheduler.js";

export interface ScoringRequest {
  prefix: Int32Array;
  branches: Int32Array[];
  /** Branch tokens before this index are not scored (re-tokenized prompt text, a fixed question). */
  scoreFrom: Int32Array;
  /** Token sets whose total probability is read after each branch's last token. */
  readAfter: Int32Array[];
  signal: AbortSignal | undefined;
}

export interface ScoringResult {
  /** Sum of the scored branch tokens' log-probabilities. */
  tokenLogProb: Float64Array;
  /** after[b * readAfter.length + k]: log-probability of set k right after branch b. */
  after: Float64Array;
}

interface TrieLevel {
  /** Node ids at this depth. */
  nodes: number[];
}

export class ScoringJob implements DecodeJob {
  readonly seqsNeeded: number;
  readonly signal: AbortSignal | undefined;
  private readonly req: ScoringRequest;
  // Trie of branch tokens (node 0 = the shared prefix).
  private readonly nodeToken: number[] = [-1];
  private readonly nodeDepth: number[] = [-1];
  private readonly nodeBranches: number[][] = [[]];
  private readonly nodeChildren: Map<number, number>[] = [new Map()];
  /** Log-probability of a node's token given its parent. */
  private nodeLogProb: Float64Array = new Float64Array(0);
  /** Branches ending at each node. */
  private readonly nodeEnds: number[][] = [[]];
  private readonly levels: TrieLevel[] = [];
  private readonly branchNodes: Int32Array[] = [];
  private seqs: Int32Array = new Int32Array(0);
  private prefilled = 0;
  private level = -1; // -1: prefix
  private levelDone = 0; // nodes of the current level already decoded
  private rowNodes: number[] = [];
  private rows: number[] = [];
  private readonly out: ScoringResult;
  private onSettle: (error?: unknown) => void;

  constructor(req: ScoringRequest, settle: (error?: unknown) => void) {
    this.req = req;
    this.signal = req.signal;
    this.onSettle = settle;
    this.seqsNeeded = 1 + req.branches.length;
    req.branches.forEach((tokens, b) => {
      const path = new Int32Array(tokens.length);
      let node = 0;
      this.nodeBranches[0]!.push(b);
      for (let d = 0; d < tokens.length; d++) {
        const token = tokens[d]!;
        let child = this.nodeChildren[node]!.get(token);
        if (child === undefined) {
          child = this.nodeToken.length;
          this.nodeToken.push(token);
          this.nodeDepth.push(d);
          this.nodeBranches.push([]);
          this.nodeChildren.push(new Map());
          this.nodeEnds.push([]);
          this.nodeChildren[node]!.set(token, child);
          (this.levels[d] ??= { nodes: [] }).nodes.push(child);
        }
        this.nodeBranches[child]!.push(b);
        path[d] = child;
        node = child;
      }
      this.nodeEnds[node]!.push(b);
      this.branchNodes.push(path);
    });
    this.nodeLogProb = new Float64Array(this.nodeToken.length);
    this.out = {
      tokenLogProb: new Float64Array(req.branches.length),
      after: new Float64Array(req.branches.length * req.readAfter.length),
    };
  }

  get prefilling(): boolean {
    return this.level < 0;
  }

  begin(seqs: Int32Array): void {
    this.seqs = seqs;
  }

  private seqOfBranch(b: number): number {
    return this.seqs[1 + b]!;
  }

  fill(batch: LlamaBatch, slots: SequenceSlots, room: number): void {
    const prefix = this.req.prefix;
    this.rows = [];
    this.rowNodes = [];
    if (this.level < 0) {
      const end = Math.min(prefix.length, this.prefilled + room);
      const row = slots.appendTokens(batch, this.seqs[0]!, prefix.subarray(this.prefilled, end), end === prefix.length);
      this.prefilled = end;
      if (end === prefix.length) {
        this.rows.push(row);
        this.rowNodes.push(0);
      }
      return;
    }
    const nodes = this.levels[this.level]!.nodes;
    const position = prefix.length + this.level;
    while (this.levelDone < nodes.length && this.rows.length < room) {
      const node = nodes[this.levelDone++]!;
      const rep = this.seqOfBranch(this.nodeBranches[node]![0]!);
      this.rows.push(batch.add(this.nodeToken[node]!, position, rep, true));
      this.rowNodes.push(node);
    }
  }

  consume(ctx: LlamaContext): boolean {
    const prefix = this.req.prefix;
    for (let i = 0; i < this.rows.length; i++) {
      const node = this.rowNodes[i]!;
      this.readRow(ctx.logits(this.rows[i]!), node);
      if (node === 0) {
        // The prefix is in place: every branch's sequence shares it.
        for (let b = 0; b < this.req.branches.length; b++) ctx.seqCopy(this.seqs[0]!, this.seqOfBranch(b), 0, prefix.length);
      } else {
        const branches = this.nodeBranches[node]!;
        const rep = this.seqOfBranch(branches[0]!);
        const position = prefix.length + this.nodeDepth[node]!;
        for (let k = 1; k < branches.length; k++) ctx.seqCopy(rep, this.seqOfBranch(branches[k]!), position, position + 1);
      }
    }
    if (this.level < 0) {
      if (this.prefilled < prefix.length) return false;
      this.level = 0;
      this.levelDone = 0;
    } else if (this.levelDone >= this.levels[this.level]!.nodes.length) {
      this.level++;
      this.levelDone = 0;
    }
    if (this.level >= this.levels.length) {
      this.finishScores();
      return true;
    }
    return false;
  }

  private readRow(logits: Float32Array, node: number): void {
    const lse = logSumExp(logits);
    for (const [token, child] of this.nodeChildren[node]!) this.nodeLogProb[child] = logits[token]! - lse;
    const sets = this.req.readAfter;
    for (const b of this.nodeEnds[node]!) {
      for (let k = 0; k < sets.length; k++) this.out.after[b * sets.length + k] = logSumExpOf(logits, sets[k]!) - lse;
    }
  }

  private finishScores(): void {
    for (let b = 0; b < this.branchNodes.length; b++) {
      const path = this.branchNodes[b]!;
      let sum = 0;
      for (let d = this.req.scoreFrom[b]!; d < path.length; d++) sum += this.nodeLogProb[path[d]!]!;
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

/** log Σ exp(x) over all logits, in doubles (NaN counts as -Infinity). */
export function logSumExp(logits: Float32Array): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > max) max = v;
  }
  if (!Number.isFinite(max)) return max;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v === v) sum += Math.exp(v - max);
  }
  return max + Math.log(sum);
}

function logSumExpOf(logits: Float32Array, ids: Int32Array): number {
  let max = -Infinity;
  for (let i = 0; i < ids.length; i++) {
    const v = logits[ids[i]!]!;
    if (v > max) max = v;
  }
  if (!Number.isFinite(max)) return max;
  let sum = 0;
  for (let i = 0; i < ids.length; i++) {
    const v = logits[ids[i]!]!;
    if (v === v) sum += Math.exp(v - max);
  }
  return max + Math.log(sum);
}
