// The compiler's cache of schema-independent DFAs, shared by every compile in this thread.

import { regexClock, type ByteDfa } from "../../regex/index.js";
import { ByteLruCache } from "../../support/index.js";

/**
 * DFAs that depend on no schema (any value, strings of a length, a pattern's or a format's
 * strings), kept across compiles: a compile worker builds each once. Bounded by bytes.
 */
const SHARED_DFA_BYTES = 64 * 1024 * 1024;
const sharedDfas = new ByteLruCache<SizedDfa>(SHARED_DFA_BYTES);

/**
 * A shared DFA with the work units its build counted: a compile that finds it cached is charged
 * them again (sharedDfa), so a compile's work, and the verdict of its work limit, is the same
 * whatever the worker compiled before.
 */
class SizedDfa {
  constructor(
    readonly dfa: ByteDfa,
    readonly work: number,
  ) {}

  retainedBytes(): number {
    return this.dfa.next.byteLength + this.dfa.accepting.byteLength + this.dfa.minBytesToAccept.byteLength + 512;
  }
}

/** The shared DFA under `key`, its build's work charged to the compile in progress; undefined if none. */
export function sharedDfa(key: string): ByteDfa | undefined {
  const known = sharedDfas.get(key);
  if (known === undefined) return undefined;
  regexClock.tick(known.work);
  return known.dfa;
}

/** Builds a shared DFA and keeps it with the work its build counted (since `workBefore`). */
export function keepShared(key: string, dfa: ByteDfa, workBefore: number): ByteDfa {
  sharedDfas.set(key, new SizedDfa(dfa, regexClock.used - workBefore));
  return dfa;
}
