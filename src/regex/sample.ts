import type { ByteDfa } from "./dfa/types.js";

/** Runs the DFA over bytes from `state`; returns the state reached or -1 (dead). */
export function walkBytes(dfa: ByteDfa, bytes: Uint8Array, state: number = dfa.start): number {
  let s = state;
  for (let i = 0; i < bytes.length && s >= 0; i++) s = dfa.next[s * dfa.numClasses + dfa.byteClass[bytes[i]!]!]!;
  return s;
}

const encoder = new TextEncoder();
// With the u flag a surrogate class matches only unpaired surrogates.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Full match of UTF-8 bytes. */
export function matchesBytes(dfa: ByteDfa, bytes: Uint8Array): boolean {
  const s = walkBytes(dfa, bytes);
  return s >= 0 && dfa.accepting[s] === 1;
}

/** Full match of a string (encoded as UTF-8; lone surrogates never match). */
export function matchesString(dfa: ByteDfa, text: string): boolean {
  if (LONE_SURROGATE.test(text)) return false;
  return matchesBytes(dfa, encoder.encode(text));
}

/**
 * Every member of a finite language, in byte order, when it has at most `limit` of them, each of
 * at most `maxBytes`; null when it is infinite (a cycle: every state is live, so any cycle is on
 * an accepting path), larger or longer. Work is bounded by limit × maxBytes × 256.
 */
export function finiteMembers(dfa: ByteDfa, limit: number, maxBytes = 256): Uint8Array[] | null {
  if (dfa.minBytesToAccept[dfa.start]! < 0) return [];
  const out: Uint8Array[] = [];
  const path: number[] = [];
  const onPath = new Uint8Array(dfa.numStates);
  const visit = (state: number): boolean => {
    if (onPath[state] === 1 || path.length > maxBytes) return false; // a cycle: infinitely many members
    if (dfa.accepting[state] === 1) {
      if (out.length === limit) return false;
      out.push(Uint8Array.from(path));
    }
    onPath[state] = 1;
    for (let b = 0; b < 256; b++) {
      const next = dfa.next[state * dfa.numClasses + dfa.byteClass[b]!]!;
      if (next < 0) continue;
      path.push(b);
      const finite = visit(next);
      path.pop();
      if (!finite) return false;
    }
    onPath[state] = 0;
    return true;
  };
  return visit(dfa.start) ? out : null;
}

export interface SampleOptions {
  /** Upper bound on the sample's length in bytes (raised to the shortest member if lower). */
  maxBytes?: number;
  /** Probability of stopping at an accepting state when continuing is also possible. */
  stopProbability?: number;
}

/**
 * Random member of the DFA's language: a walk that only takes transitions from which
 * acceptance stays reachable within the byte budget (minBytesToAccept), so it always ends
 * accepting. Bytes are drawn uniformly within the chosen class. Returns null for an empty language.
 */
export function sampleMember(dfa: ByteDfa, random: () => number, opts: SampleOptions = {}): Uint8Array | null {
  const startDistance = dfa.minBytesToAccept[dfa.start]!;
  if (startDistance < 0) return null;
  const budget = Math.max(opts.maxBytes ?? 64, startDistance);
  const stopProbability = opts.stopProbability ?? 0.25;
  const classBytes: number[][] = Array.from({ length: dfa.numClasses }, () => []);
  for (let b = 0; b < 256; b++) classBytes[dfa.byteClass[b]!]!.push(b);
  const out: number[] = [];
  const options: number[] = [];
  let s = dfa.start;
  for (;;) {
    const remaining = budget - out.length;
    options.length = 0;
    for (let c = 0; c < dfa.numClasses; c++) {
      const t = dfa.next[s * dfa.numClasses + c]!;
      if (t >= 0 && dfa.minBytesToAccept[t]! + 1 <= remaining) options.push(c);
    }
    if (dfa.accepting[s] === 1 && (options.length === 0 || random() < stopProbability)) break;
    const cls = options[Math.floor(random() * options.length)]!;
    const bytes = classBytes[cls]!;
    out.push(bytes[Math.floor(random() * bytes.length)]!);
    s = dfa.next[s * dfa.numClasses + cls]!;
  }
  return Uint8Array.from(out);
}

/** Random member decoded as a string (the DFA accepts only valid UTF-8). */
export function sampleString(dfa: ByteDfa, random: () => number, opts?: SampleOptions): string | null {
  const bytes = sampleMember(dfa, random, opts);
  return bytes === null ? null : new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}

/**
 * The shortest byte string leading from `state` to acceptance (smallest byte at each step,
 * following minBytesToAccept), e.g. to close a constrained generation within a budget.
 * Returns null when acceptance is unreachable (state -1 or an empty language).
 */
export function shortestCompletion(dfa: ByteDfa, state: number = dfa.start): Uint8Array | null {
  if (state < 0 || dfa.minBytesToAccept[state]! < 0) return null;
  const out = new Uint8Array(dfa.minBytesToAccept[state]!);
  let s = state;
  for (let i = 0; i < out.length; i++) {
    const want = dfa.minBytesToAccept[s]! - 1;
    let chosen = -1;
    for (let b = 0; b < 256 && chosen < 0; b++) {
      const t = dfa.next[s * dfa.numClasses + dfa.byteClass[b]!]!;
      if (t >= 0 && dfa.minBytesToAccept[t] === want) chosen = b;
    }
    out[i] = chosen;
    s = dfa.next[s * dfa.numClasses + dfa.byteClass[chosen]!]!;
  }
  return out;
}
