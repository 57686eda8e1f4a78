/**
 * Comparing two answers to the same categorization. llama.cpp on the CPU computes a row of a
 * decode the same way whatever else the decode holds (flash attention off, the runtime's default
 * there), but attention sums over the KV cells in their order: a reused prefix or other requests
 * put a request's tokens in other cells, and its scores move by float noise (up to 3e-4 measured
 * on stories260K). So the same request gets the same scores within a tolerance, and the same
 * choices except where two outcomes lie within that tolerance of each other.
 */
import assert from "node:assert/strict";
import type { CategorizeRequest, CategorizeResult } from "../../src/generate/index.js";

/** How far a score may move when the same request runs again over other KV cells (up to 3e-4 measured). */
export const SAME_REQUEST_TOLERANCE = 1e-3;

/**
 * Whether choices `a` and `b` may both come out of `scores` (those of either answer): in single
 * mode the two picks (the null option's share being what the categories leave) are within `tol`;
 * in multi mode every category chosen by one answer only lies within `tol` of the one-half
 * threshold, or is a fallback pick within `tol` of the best.
 */
function nearTie(req: CategorizeRequest, scores: Record<string, number>, a: string[], b: string[], tol: number): boolean {
  if (!req.allowMultipleClasses) {
    const nullShare = 1 - req.categories.reduce((sum, c) => sum + scores[c]!, 0);
    const scoreOf = (choices: string[]): number => (choices.length === 0 ? nullShare : scores[choices[0]!]!);
    return Math.abs(scoreOf(a) - scoreOf(b)) < tol;
  }
  const best = Math.max(...req.categories.map((c) => scores[c]!));
  const differing = [...a.filter((c) => !b.includes(c)), ...b.filter((c) => !a.includes(c))];
  return differing.every((c) => Math.abs(scores[c]! - 0.5) < tol || (best < 0.5 + tol && Math.abs(scores[c]! - best) < tol));
}

/**
 * Asserts that `again` answers `req` as `first` did, within `tol`. When the choices differ and
 * the answers carry no scores, `scored()` answers the request with scores to judge the tie.
 */
export async function assertSameAnswer(
  req: CategorizeRequest,
  first: CategorizeResult,
  again: CategorizeResult,
  tol: number,
  what: string,
  scored: () => Promise<CategorizeResult>,
): Promise<void> {
  assert.equal(again.scores === undefined, first.scores === undefined, what);
  if (first.scores && again.scores) {
    assert.deepEqual(Object.keys(again.scores).sort(), Object.keys(first.scores).sort(), what);
    for (const c of req.categories) {
      const [x, y] = [first.scores[c]!, again.scores[c]!];
      assert.ok(Math.abs(x - y) < tol, `${what}: ${JSON.stringify(c)} scored ${x}, then ${y}`);
    }
  }
  if (JSON.stringify(again.choices) === JSON.stringify(first.choices)) return;
  const scores = first.scores ?? (await scored()).scores!;
  assert.ok(
    nearTie(req, scores, first.choices, again.choices, tol),
    `${what}: ${JSON.stringify(first.choices)}, then ${JSON.stringify(again.choices)}, and no tie within ${tol}`,
  );
}
