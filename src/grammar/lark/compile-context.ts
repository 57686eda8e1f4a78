// The compile in progress (Lark keeps nothing like it: its passes are unbounded): its budget, so
// the tree and pattern passes count their work and parse regexps under its nesting limit without
// every caller passing it down, and the memo of pattern widths that lives as long as it.

import type { CompileBudget } from "../limits.js";

/**
 * The budget of the compile in progress (compiles are synchronous: one at a time per thread).
 * Set by withCompileBudget.
 */
let active: CompileBudget | null = null;

/** Regexp → [min, max] width (patternWidth), for the compile in progress. */
export const widthCache = new Map<string, [number, number]>();

/** Counts `units` of work against the compile in progress (none outside a compile). */
export const spend = (units: number): void => active?.clock.spend(units);

/** Runs `fn` with `budget` as the compile in progress (see `active`); its pattern caches die with it. */
export function withCompileBudget<T>(budget: CompileBudget, fn: () => T): T {
  const outer = active;
  active = budget;
  try {
    return fn();
  } finally {
    active = outer;
    // The widths are per compile: kept across compiles, every distinct regexp of every grammar
    // ever compiled stayed in this map.
    if (outer === null) widthCache.clear();
  }
}

/** The nesting limit of the compile in progress (none outside a compile). */
export function activeMaxNesting(): number {
  return active?.limits.maxNesting ?? Infinity;
}
