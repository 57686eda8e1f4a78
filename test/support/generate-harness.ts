/**
 * Shared by the generate-* tests (and server-regex): Python `re.fullmatch` oracle (one process,
 * JSON batches), a recording wrapper around constraints (to see the exact generated token
 * sequence), a random-logits runtime (the real GenerationRuntime / scheduler / CompletionJob over
 * a fake llama.cpp context, for vocab-only GGUFs), and a brute-force token-distance oracle that
 * walks the compiled DFA over every generable token (independent of src/constraint's trie and
 * caches).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import assert from "node:assert/strict";
import { GenerationRuntime, MIN_TOKENS_LOOKAHEAD, UNBOUNDED } from "../../src/generate/index.js";
import type { TokenConstraint } from "../../src/constraint/index.js";
import { maskWords } from "../../src/support/index.js";
import { Sampler, type SamplingParams } from "../../src/sampling/index.js";
import { loadModel, LlamaBatch, type LlamaContext, type LlamaModel } from "../../src/model/index.js";
import { loadVocabulary, TokenKind, type Vocabulary } from "../../src/vocab/index.js";
import type { ByteDfa } from "../../src/regex/index.js";
import { ORACLE_PYTHON } from "./paths.js";

// ---------------------------------------------------------------------------------------------
// Python oracle

const ORACLE_SCRIPT = `
import json, re, sys
cache = {}
for line in sys.stdin:
    out = []
    for pats, text in json.loads(line):
        key = tuple(pats)
        rx = cache.get(key)
        if rx is None:
            rx = [re.compile(p) for p in pats]
            cache[key] = rx
        out.append(any(r.fullmatch(text) is not None for r in rx))
    sys.stdout.write(json.dumps(out) + "\\n")
    sys.stdout.flush()
`;

/** Debian python3 `re.fullmatch` over batches of (alternatives, text). */
export class FullmatchOracle {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: Array<(line: string) => void> = [];
  private chain: Promise<unknown> = Promise.resolve();
  private stderr = "";

  constructor() {
    this.proc = spawn(ORACLE_PYTHON, ["-c", ORACLE_SCRIPT], { stdio: ["pipe", "pipe", "pipe"] });
    this.proc.stderr.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.lines = createInterface({ input: this.proc.stdout });
    this.lines.on("line", (line) => this.waiting.shift()?.(line));
  }

  /** One answer per item: whether `text` fully matches at least one of `patterns`. */
  fullmatch(items: ReadonlyArray<readonly [readonly string[], string]>): Promise<boolean[]> {
    if (items.length === 0) return Promise.resolve([]);
    const run = this.chain.then(
      () =>
        new Promise<boolean[]>((resolve, reject) => {
          const onExit = () => reject(new Error(`python oracle died: ${this.stderr}`));
          this.proc.once("exit", onExit);
          this.waiting.push((line) => {
            this.proc.off("exit", onExit);
            resolve(JSON.parse(line) as boolean[]);
          });
          this.proc.stdin.write(JSON.stringify(items) + "\n");
        }),
    );
    this.chain = run.catch(() => undefined);
    return run;
  }

  close(): void {
    this.proc.stdin.end();
    this.lines.close();
  }
}

export const alternatives = (pattern: string | readonly string[]): string[] => (typeof pattern === "string" ? [pattern] : [...pattern]);

// ---------------------------------------------------------------------------------------------
// Recording constraint

/** What one request's constraint saw: the forced (healed) prefix and every token advanced over. */
export interface Recording {
  prefix: Uint8Array | undefined;
  tokens: number[];
}

/**
 * Wraps a constraint factory so the test learns the generated token sequence. The runtime calls
 * the factory for the plain constraint and, when it considers healing, again with the prefix;
 * the recording that saw advance() calls (or, with none, the last one made) is the one used.
 */
/** A constraint's mask in a new buffer (the decode loop writes into one it keeps). */
export function maskOf(c: TokenConstraint, remaining: number, vocabSize: number): Uint32Array {
  const out = new Uint32Array(maskWords(vocabSize));
  c.writeMask(remaining, out);
  return out;
}

export function recordingFactory(make: (prefix: Uint8Array | undefined) => TokenConstraint): {
  factory: (prefix: Uint8Array | undefined) => TokenConstraint;
  used: () => Recording;
} {
  const made: Recording[] = [];
  const factory = (prefix: Uint8Array | undefined): TokenConstraint => {
    const inner = make(prefix);
    const rec: Recording = { prefix, tokens: [] };
    made.push(rec);
    return {
      writeMask: (remaining, out) => inner.writeMask(remaining, out),
      isAccepting: () => inner.isAccepting(),
      hasAnyToken: (remaining) => inner.hasAnyToken(remaining),
      minTokensToAccept: (cap) => inner.minTokensToAccept(cap),
      ...(inner.minTokensAtLeast ? { minTokensAtLeast: (cap: number) => inner.minTokensAtLeast!(cap) } : {}),
      // Fast-forward's questions too, so a recorded completion is the one the runtime makes unwrapped.
      ...(inner.forcedBytes && inner.allowsWithin
        ? {
            forcedBytes: (max: number) => inner.forcedBytes!(max),
            allowsWithin: (token: number, remaining: number) => inner.allowsWithin!(token, remaining),
          }
        : {}),
      advance(token) {
        const ok = inner.advance(token);
        if (ok) rec.tokens.push(token);
        return ok;
      },
    };
  };
  const used = (): Recording => made.find((r) => r.tokens.length > 0) ?? made[made.length - 1]!;
  return { factory, used };
}

// ---------------------------------------------------------------------------------------------
// Random-logits runtime

/** 32-bit mixing (murmur3 finalizer). */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function seededRandom(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = mix32(s + 0x9e3779b9);
    return s / 4294967296;
  };
}

export interface RandomLogitsOptions {
  /** Probability per row that end-of-generation tokens get a huge logit. */
  eogBoost?: number;
  /** Probability per row that control / unused tokens get a huge logit (they must stay masked). */
  controlBoost?: number;
}

/**
 * A stand-in llama.cpp context: the logits of a row depend only on the tokens its sequence holds
 * so far (a running hash), so a request gets the same logits whatever else is in the batch —
 * seeds stay reproducible under continuous batching. Cheap per row: a rotation of one random base
 * vector plus a few spikes, and sometimes EOG / control tokens pushed far above everything.
 */
class RandomLogitsContext {
  readonly nCtx: number;
  readonly nSeqMax: number;
  readonly nBatch = 512;
  /** Tokens decoded per sequence (the test reads them to see what was fed back). */
  readonly fed: number[][];
  private readonly seqHash: Uint32Array;
  private readonly base: Float32Array;
  private rows: Float32Array[] = [];
  private readonly pool: Float32Array[] = [];
  private readonly eogIds: Int32Array;
  private readonly controlIds: Int32Array;
  decodes = 0;

  constructor(
    private readonly vocab: Vocabulary,
    nSeqMax: number,
    nCtx: number,
    private readonly options: RandomLogitsOptions,
  ) {
    this.nSeqMax = nSeqMax;
    this.nCtx = nCtx;
    this.seqHash = new Uint32Array(nSeqMax);
    this.fed = Array.from({ length: nSeqMax }, () => []);
    const random = seededRandom(12345);
    this.base = new Float32Array(vocab.size);
    for (let i = 0; i < vocab.size; i++) this.base[i] = (random() + random() + random() - 1.5) * 4;
    this.eogIds = vocab.eogTokens;
    const control: number[] = [];
    for (let i = 0; i < vocab.size; i++) {
      const k = vocab.kinds[i];
      if (k === TokenKind.Control || k === TokenKind.Unused) control.push(i);
    }
    this.controlIds = Int32Array.from(control);
  }

  createBatch(): LlamaBatch {
    return new LlamaBatch(this.nBatch);
  }

  async decodeAsync(batch: LlamaBatch): Promise<void> {
    this.decodes++;
    for (const row of this.rows) this.pool.push(row);
    this.rows = [];
    const v = this.vocab.size;
    for (let r = 0; r < batch.length; r++) {
      const seq = batch.seqIds[r]!;
      const pos = batch.positions[r]!;
      if (pos === 0) {
        this.seqHash[seq] = 0x811c9dc5;
        this.fed[seq] = [];
      }
      this.fed[seq]!.push(batch.tokens[r]!);
      this.seqHash[seq] = mix32(this.seqHash[seq]! ^ Math.imul(batch.tokens[r]! + 1, 0x27d4eb2d) ^ pos);
      if (batch.wantLogits[r] !== 1) {
        this.rows.push(this.pool.pop() ?? new Float32Array(v));
        continue;
      }
      const out = this.pool.pop() ?? new Float32Array(v);
      const h = this.seqHash[seq]!;
      const shift = h % v;
      out.set(this.base.subarray(shift), 0);
      out.set(this.base.subarray(0, shift), v - shift);
      const random = seededRandom(h);
      for (let k = 0; k < 24; k++) out[Math.floor(random() * v)] = 6 + random() * 10;
      if (random() < (this.options.eogBoost ?? 0)) for (const id of this.eogIds) out[id] = 60;
      if (random() < (this.options.controlBoost ?? 0)) for (const id of this.controlIds) out[id] = 80;
      this.rows.push(out);
    }
    // Let other requests interleave as with the real asynchronous decode.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  logits(row: number): Float32Array {
    return this.rows[row]!;
  }

  seqRemove(): boolean {
    return true;
  }

  seqCopy(): void {}

  dispose(): void {}
}

export interface RandomLogitsRuntime {
  runtime: GenerationRuntime;
  context: { fed: number[][]; decodes: number };
  close(): Promise<void>;
}

/**
 * The real GenerationRuntime (healing, budget planning, scheduler, CompletionJob, Sampler) over a
 * vocab-only GGUF: llama.cpp tokenizes the prompt, the fake context supplies the logits.
 */
export function openRandomLogitsRuntime(
  vocabPath: string,
  options: RandomLogitsOptions & { maxSequences?: number; contextSize?: number } = {},
): RandomLogitsRuntime {
  const vocab = loadVocabulary(vocabPath);
  const model = loadModel(vocabPath, { vocabOnly: true, threads: 1 });
  const context = new RandomLogitsContext(vocab, options.maxSequences ?? 32, options.contextSize ?? 2048, options);
  // The constructor is private to keep callers on open(); the test supplies its own context.
  const Ctor = GenerationRuntime as unknown as new (
    model: LlamaModel,
    vocab: Vocabulary,
    context: LlamaContext,
    maxQueue: number,
  ) => GenerationRuntime;
  const runtime = new Ctor(model, vocab, context as unknown as LlamaContext, 100_000);
  return { runtime, context, close: () => runtime.close() };
}

// ---------------------------------------------------------------------------------------------
// Brute-force token distances

/** Generable tokens (what the decode loop may sample besides EOG), by first byte. */
export class GenerableTokens {
  readonly byFirstByte: Int32Array[];
  constructor(readonly vocab: Vocabulary) {
    const buckets: number[][] = Array.from({ length: 256 }, () => []);
    for (let id = 0; id < vocab.size; id++) {
      const k = vocab.kinds[id];
      if (k !== TokenKind.Normal && k !== TokenKind.Byte && k !== TokenKind.UserDefined) continue;
      if (vocab.offsets[id + 1]! === vocab.offsets[id]!) continue;
      buckets[vocab.data[vocab.offsets[id]!]!]!.push(id);
    }
    this.byFirstByte = buckets.map((b) => Int32Array.from(b));
  }
}

export function runDfa(dfa: ByteDfa, state: number, bytes: Uint8Array, from = 0): number {
  for (let i = from; i < bytes.length && state >= 0; i++) {
    state = dfa.next[state * dfa.numClasses + dfa.byteClass[bytes[i]!]!]!;
  }
  return state;
}

/**
 * Exact minimum token counts by BFS over (DFA state × every generable token), sharing the
 * per-state successor sets. Knows nothing of the trie or the matcher's caches.
 */
export class BruteDistances {
  private readonly successorCache = new Map<number, Int32Array>();

  constructor(
    readonly dfa: ByteDfa,
    readonly tokens: GenerableTokens,
  ) {}

  successors(state: number): Int32Array {
    let s = this.successorCache.get(state);
    if (s !== undefined) return s;
    const { dfa } = this;
    const { offsets, data } = this.tokens.vocab;
    const out = new Set<number>();
    for (let b = 0; b < 256; b++) {
      const first = dfa.next[state * dfa.numClasses + dfa.byteClass[b]!]!;
      if (first < 0) continue;
      const ids = this.tokens.byFirstByte[b]!;
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        let st = first;
        for (let p = offsets[id]! + 1, end = offsets[id + 1]!; p < end && st >= 0; p++) {
          st = dfa.next[st * dfa.numClasses + dfa.byteClass[data[p]!]!]!;
        }
        if (st >= 0) out.add(st);
      }
    }
    s = Int32Array.from(out);
    this.successorCache.set(state, s);
    return s;
  }

  /** Fewest tokens from `state` to a full match, or Infinity when more than `limit` (or never). */
  minTokens(state: number, limit = 64): number {
    if (state < 0) return Number.POSITIVE_INFINITY;
    let frontier = [state];
    const seen = new Set(frontier);
    for (let level = 0; level <= limit && frontier.length > 0; level++) {
      for (const s of frontier) if (this.dfa.accepting[s] === 1) return level;
      const next: number[] = [];
      for (const s of frontier) {
        for (const t of this.successors(s)) {
          if (!seen.has(t)) {
            seen.add(t);
            next.push(t);
          }
        }
      }
      frontier = next;
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * With healing prefix P: the first token must start with P (its rest is matched from the start
   * state). Returns the fewest tokens to a full match and whether some first token longer than P
   * can still finish within `budget` (the runtime's condition to heal at all).
   */
  healed(prefix: Uint8Array, budget: number): { min: number; longerFits: boolean } {
    const { offsets, data } = this.tokens.vocab;
    let min = Number.POSITIVE_INFINITY;
    let longerFits = false;
    const ids = this.tokens.byFirstByte[prefix[0]!]!;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const start = offsets[id]!;
      const len = offsets[id + 1]! - start;
      if (len < prefix.length) continue;
      let same = true;
      for (let k = 0; k < prefix.length && same; k++) same = data[start + k] === prefix[k];
      if (!same) continue;
      const target = runDfa(this.dfa, this.dfa.start, data.subarray(start + prefix.length, start + len));
      if (target < 0) continue;
      const d = 1 + this.minTokens(target, Math.max(0, budget));
      if (d < min) min = d;
      if (len > prefix.length && d <= budget) longerFits = true;
    }
    return { min, longerFits };
  }
}

// ---------------------------------------------------------------------------------------------
// Small utilities

export const utf8Fatal = new TextDecoder("utf-8", { fatal: true });

export function tokenBytesConcat(vocab: Vocabulary, tokens: readonly number[]): Uint8Array {
  let total = 0;
  for (const t of tokens) total += vocab.tokenBytes(t).length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const t of tokens) {
    out.set(vocab.tokenBytes(t), at);
    at += vocab.tokenBytes(t).length;
  }
  return out;
}

/** Text if the bytes are whole UTF-8, else null. */
export function decodeWhole(bytes: Uint8Array): string | null {
  try {
    return utf8Fatal.decode(bytes);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The decode loop replayed with random logits around one constraint (the fuzz tests)

/**
 * Fresh-looking random logits per step at no cost: a window at a random offset into one random
 * vector twice the vocabulary's size (the sampler reads logits, never writes them).
 */
export class RandomLogits {
  private readonly base: Float32Array;
  constructor(
    readonly size: number,
    rng: () => number,
  ) {
    this.base = new Float32Array(2 * size);
    for (let i = 0; i < this.base.length; i++) this.base[i] = (rng() + rng() + rng() - 1.5) * 4;
  }

  next(rng: () => number): Float32Array {
    const at = Math.floor(rng() * this.size);
    return this.base.subarray(at, at + this.size);
  }
}

export type RandomLogitsOutcome = { tokens: number[]; stopReason: "pattern_match" | "token_limit" } | { needs: number };

/**
 * The decode loop of generate/completion.ts (and runtime.ts's budget planning) with random
 * logits instead of a model: refuses when the constraint needs more than `budget` tokens, else
 * samples with the real Sampler among the tokens the constraint allows within the remaining
 * budget (plus end-of-generation while the text is complete, unless stopAfterMatch).
 */
export function randomLogitsCompletion(
  vocab: Vocabulary,
  constraint: TokenConstraint,
  params: SamplingParams,
  budget: number,
  stopAfterMatch: boolean,
  rng: () => number,
  noise: RandomLogits,
  maskBuffer: Uint32Array,
): RandomLogitsOutcome {
  const needed = constraint.minTokensToAccept(budget);
  // As the runtime words its 422: past the budget, the proven lower bound searched a little further.
  if (needed > budget)
    return { needs: Number.isFinite(needed) ? needed : (constraint.minTokensAtLeast?.(budget + MIN_TOKENS_LOOKAHEAD) ?? needed) };
  if (constraint.isAccepting() && (stopAfterMatch || !constraint.hasAnyToken(budget))) {
    return { tokens: [], stopReason: stopAfterMatch || !constraint.hasAnyToken(UNBOUNDED) ? "pattern_match" : "token_limit" };
  }
  const sampler = new Sampler(vocab.size, params);
  sampler.reset();
  const tokens: number[] = [];
  for (;;) {
    const remaining = budget - tokens.length;
    const logits = noise.next(rng);
    // The caller's buffer, as the decode loop's: the constraint writes it, EOG is added in place.
    const mask = maskBuffer;
    constraint.writeMask(remaining, mask);
    const eogAllowed = !stopAfterMatch && constraint.isAccepting();
    if (eogAllowed) for (const id of vocab.eogTokens) mask[id >>> 5]! |= 1 << (id & 31);
    const token = sampler.sample(logits, mask);
    if (eogAllowed && vocab.isEog(token)) return { tokens, stopReason: "pattern_match" };
    assert.ok(constraint.advance(token), `sampled token ${token} outside the constraint`);
    sampler.accept(token);
    tokens.push(token);
    const left = remaining - 1;
    if (constraint.isAccepting()) {
      if (stopAfterMatch || !constraint.hasAnyToken(UNBOUNDED)) return { tokens, stopReason: "pattern_match" };
      if (left === 0 || !constraint.hasAnyToken(left)) return { tokens, stopReason: "token_limit" };
    } else {
      assert.ok(left > 0, "budget spent before a complete text");
    }
  }
}
