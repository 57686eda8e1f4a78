/**
 * The prefix cache: the KV cells of finished sequences, kept between requests so that a request
 * whose prompt begins the same way (a chat resending its history, the same system prompt, the
 * same request again) evaluates only the rest. A finished job's first sequence is kept whole
 * (prompt + the tokens it fed back); a new job takes the longest cached prefix of its prompt
 * by seq_cp (the unified KV cache shares the cells: no copy, no evaluation) and starts there.
 *
 * What it holds is never in anyone's way: the scheduler evicts entries (least recently used
 * first) whenever an admission needs their sequence ids or cells, and a running job that took
 * an entry's cells keeps them when the entry goes. So it only ever fills what is idle; its own
 * limits (TRELLIS_PREFIX_CACHE_TOKENS, _ENTRIES) bound what it keeps at all.
 *
 * Entries are few (a sequence id each, at most `maxEntries`), so the longest match is a scan
 * comparing token arrays, O(cached tokens) per admission: a microsecond per thousand tokens,
 * nothing next to evaluating one of them. An entry that another one extends is dropped (the
 * longer one answers every match it would).
 */
import type { SequenceSlots } from "../model/index.js";
import { commonPrefixLength } from "../support/index.js";

export interface PrefixCacheOptions {
  /** Most tokens (KV cells) kept over all entries; 0 turns the cache off. */
  maxTokens: number;
  /** Most entries (each holds one sequence id). */
  maxEntries: number;
}

/** Fewest tokens a match must share to be used (a shared BOS alone is no reuse worth a seq_cp). */
export const MIN_PREFIX_MATCH = 4;

interface Entry {
  readonly seq: number;
  readonly tokens: Int32Array;
  lastUsed: number;
}

/** Counters for /metrics. */
export interface PrefixCacheStats {
  /** Admissions that looked for a prefix. */
  lookups: number;
  /** Of those, how many reused one. */
  hits: number;
  /** Prompt tokens not evaluated thanks to the cache. */
  tokensReused: number;
  /** Prompt tokens looked up (the reuse rate is tokensReused over this). */
  tokensLookedUp: number;
  /** Entries dropped for room or by the limits (not those another entry extended). */
  evictions: number;
  /** Tokens held now, and entries. */
  tokens: number;
  entries: number;
}

export class PrefixCache {
  private readonly entries: Entry[] = [];
  private clock = 0;
  private heldTokens = 0;
  private readonly counters = { lookups: 0, hits: 0, tokensReused: 0, tokensLookedUp: 0, evictions: 0 };

  constructor(
    private readonly slots: SequenceSlots,
    private readonly options: PrefixCacheOptions,
  ) {}

  get enabled(): boolean {
    return this.options.maxTokens > 0 && this.options.maxEntries > 0;
  }

  /** KV cells its entries hold (shared cells counted once per entry: an upper bound). */
  get tokens(): number {
    return this.heldTokens;
  }

  get size(): number {
    return this.entries.length;
  }

  stats(): PrefixCacheStats {
    return { ...this.counters, tokens: this.heldTokens, entries: this.entries.length };
  }

  /**
   * The entry sharing the longest prefix with `prompt`, up to `maxLength` tokens (a job must
   * still evaluate its last prompt token for logits), or null below MIN_PREFIX_MATCH. Counts
   * nothing: admitted() counts the admission, use() the reuse once the cells were taken.
   */
  match(prompt: Int32Array, maxLength: number): { seq: number; length: number } | null {
    if (!this.enabled) return null;
    let best: Entry | null = null;
    let bestLength = 0;
    for (const entry of this.entries) {
      const length = Math.min(commonPrefixLength(entry.tokens, prompt), maxLength);
      if (length > bestLength) {
        best = entry;
        bestLength = length;
      }
    }
    if (best === null || bestLength < MIN_PREFIX_MATCH) return null;
    return { seq: best.seq, length: bestLength };
  }

  /** A job with a prompt of `promptLength` tokens was admitted (whether it reused a prefix or not). */
  admitted(promptLength: number): void {
    if (!this.enabled) return;
    this.counters.lookups++;
    this.counters.tokensLookedUp += promptLength;
  }

  /** `length` tokens of entry `seq` were shared with a new sequence. */
  use(seq: number, length: number): void {
    const entry = this.entries.find((e) => e.seq === seq);
    if (entry) entry.lastUsed = ++this.clock;
    this.counters.hits++;
    this.counters.tokensReused += length;
  }

  /**
   * Takes over sequence `seq` (in use, its KV holding exactly `tokens`) as an entry, or releases
   * it when an entry already covers it or the limits leave no room for it.
   */
  keep(seq: number, tokens: Int32Array): void {
    if (!this.enabled || tokens.length < MIN_PREFIX_MATCH || tokens.length > this.options.maxTokens) {
      this.slots.release(seq);
      return;
    }
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!;
      const common = commonPrefixLength(entry.tokens, tokens);
      if (common === tokens.length) {
        // Already held whole by a longer (or equal) entry.
        entry.lastUsed = ++this.clock;
        this.slots.release(seq);
        return;
      }
      if (common === entry.tokens.length) this.drop(i, false); // the new one extends it
    }
    this.entries.push({ seq, tokens, lastUsed: ++this.clock });
    this.heldTokens += tokens.length;
    while (this.entries.length > this.options.maxEntries || this.heldTokens > this.options.maxTokens) this.evictOne();
  }

  /** Drops the least recently used entry other than `except`; false when there is none. */
  evictOne(except = -1): boolean {
    let victim = -1;
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.seq === except) continue;
      if (victim < 0 || e.lastUsed < this.entries[victim]!.lastUsed) victim = i;
    }
    if (victim < 0) return false;
    this.drop(victim, true);
    return true;
  }

  /** Drops every entry (the KV cache was full: what it held goes first). */
  clear(): void {
    while (this.entries.length > 0) this.drop(this.entries.length - 1, true);
  }

  /** Whether `seq` is an entry's (it must not be handed to a job). */
  holds(seq: number): boolean {
    return this.entries.some((e) => e.seq === seq);
  }

  private drop(index: number, evicted: boolean): void {
    const [entry] = this.entries.splice(index, 1);
    this.heldTokens -= entry!.tokens.length;
    if (evicted) this.counters.evictions++;
    this.slots.release(entry!.seq);
  }
}
