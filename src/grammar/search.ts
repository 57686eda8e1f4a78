/**
 * A* over integer nodes with small integer step costs and an admissible lower bound, on a bucket
 * queue (f = g + h indexes the buckets). Shared by the grammar automaton's byte-level search and
 * the token layer's completion bounds.
 */
export interface CompletionSearch {
  /** Admissible lower bound on the cost to a goal; Infinity for a dead node. */
  lowerBound(node: number): number;
  isGoal(node: number): boolean;
  /** Calls `relax(next, stepCost)` per successor; `relax` is true when that is next's best cost so far. */
  expand(node: number, relax: (next: number, stepCost: number) => boolean): void;
}

/** The first goal reached and its cost, or null when none is found within `maxExpansions` nodes. */
export function searchCheapestGoal(
  starts: readonly number[],
  search: CompletionSearch,
  maxExpansions: number,
): { goal: number; cost: number } | null {
  const g = new Map<number, number>();
  const buckets: number[][] = [];
  let f = 0;
  const push = (node: number, cost: number): void => {
    const h = search.lowerBound(node);
    if (h !== Infinity) (buckets[Math.max(f, cost + h)] ??= []).push(node);
  };
  for (const s of starts) {
    g.set(s, 0);
    push(s, 0);
  }
  let cost = 0;
  const relax = (next: number, stepCost: number): boolean => {
    const nc = cost + stepCost;
    const old = g.get(next);
    if (old !== undefined && old <= nc) return false;
    g.set(next, nc);
    push(next, nc);
    return true;
  };
  let expansions = 0;
  for (; f < buckets.length; f++) {
    const bucket = buckets[f];
    if (!bucket) continue;
    while (bucket.length) {
      const node = bucket.pop()!;
      cost = g.get(node)!;
      if (Math.max(f, cost + search.lowerBound(node)) !== f) continue; // stale entry
      if (search.isGoal(node)) return { goal: node, cost };
      if (++expansions > maxExpansions) return null;
      search.expand(node, relax);
    }
  }
  return null;
}
