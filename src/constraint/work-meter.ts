/**
 * A bound on the time one constraint operation (a mask, a budget question, an advance) may hold
 * the thread that serves every request: masks are computed on that thread between decode steps,
 * and some patterns and grammars make one operation cost seconds of trie walks and lexer searches
 * at a 152k vocabulary ((?:[^x]{0,50}x){40}: 7 s for its first budget question).
 *
 * Each matcher has its meter; its walks and searches charge it as they go (after each trie walk,
 * which the trie's size bounds, and per lexer state or search node expanded), and a charge past
 * the operation's deadline throws ConstraintTooCostlyError. A matcher that met it is unusable
 * afterwards (its memo may hold a half-made walk): every later operation on it throws the same.
 * The verdict depends on the machine's speed and load, so a refusal for it is not kept for long
 * (see ConstraintCache), and compile workers first try the operations a request starts with, off
 * this thread, under a stricter limit.
 *
 *   matcher.work.begin()      at the entry of an operation (the constraint state classes)
 *   matcher.work.charge(n)    in its walks
 */
export class ConstraintTooCostlyError extends Error {
  constructor(
    readonly limitMs: number,
    /** What took too long, for the message. */
    what = "one of its token masks",
  ) {
    super(`computing ${what} takes longer than ${limitMs} ms`);
    this.name = "ConstraintTooCostlyError";
  }
}

export class WorkMeter {
  /** Work charged since the operation began (steps: trie nodes, lexer states, search nodes). */
  steps = 0;
  /** Set once an operation ran out: the matcher is not to be used again. */
  exhausted: ConstraintTooCostlyError | null = null;
  private deadline = Number.POSITIVE_INFINITY;

  /** Infinity (the default, for library use): unbounded, and charging reads no clock. */
  constructor(public limitMs: number = Number.POSITIVE_INFINITY) {}

  begin(): void {
    if (this.exhausted !== null) throw this.exhausted;
    this.steps = 0;
    this.deadline = performance.now() + this.limitMs;
  }

  charge(steps: number): void {
    this.steps += steps;
    if (this.deadline !== Number.POSITIVE_INFINITY && performance.now() > this.deadline)
      throw (this.exhausted = new ConstraintTooCostlyError(this.limitMs));
  }
}
