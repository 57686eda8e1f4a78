/**
 * A bound on the work one constraint operation (a mask, a budget question, an advance) may do:
 * masks are computed on the thread that serves every request, between decode steps, and some
 * patterns and grammars make one operation cost seconds of trie walks and lexer searches at a
 * 152k vocabulary ((?:[^x]{0,50}x){40}: 7 s for its first budget question).
 *
 * The bound is counted work, never the clock: each matcher has its meter, its walks and searches
 * charge it in steps as they go (trie nodes after each walk, which the trie's size bounds; lexer
 * states; search nodes), and a charge past the limit throws ConstraintTooCostlyError. So the
 * verdict is the same on an idle or a saturated machine, slow or fast, and may be kept. Work made
 * ahead of need (a grammar's walks ahead, in the time the model decodes) is charged to the first
 * operation that uses it, as if that operation had made it. A matcher that met the limit is
 * unusable afterwards (its memo may hold a half-made walk): every later operation on it throws
 * the same.
 *
 * The compile worker asks a new constraint's first operations on a fresh matcher under this
 * limit before it is accepted (compile/task.ts), so the serving thread meets it only
 * past a request's first steps, on a path of its own.
 *
 *   matcher.work.begin()      at the entry of an operation (the constraint state classes)
 *   matcher.work.charge(n)    in its walks
 */
export class ConstraintTooCostlyError extends Error {
  constructor(
    readonly limitSteps: number,
    /** What needed too much, for the message. */
    what = "one of its token masks",
  ) {
    super(`computing ${what} needs more than ${limitSteps.toLocaleString("en-US")} steps of work`);
    this.name = "ConstraintTooCostlyError";
  }
}

/** How many times the limit a budget mask's planning may add (WorkMeter.allowPlanning). */
export const PLANNING_ALLOWANCE = 3;

/**
 * The share of the limit a refusal's lower bound may use (minTokensAtLeast: "needs at least N
 * tokens"). It is asked only once the budget is known not to fit, so the verdict is already a 422;
 * past this share the message goes without the number rather than hold the serving thread for a
 * whole limit's work (an exact token distance at 152k tokens can take all of it).
 */
export const LOWER_BOUND_WORK_SHARE = 1 / 32;

/** What a grammar matcher's step counts against the limit, in trie-node steps (see WorkMeter). */
export const GRAMMAR_STEP_WEIGHT = 64;

/**
 * What a trie node of a grammar's walk counts (chargeNodes): once the lexer states it steps
 * through are known (their making is charged as lexer work), a node of a lexer-level walk is a
 * lookup in a step memo and a bit in a mask, about the regex matcher's step (25 to 50 ns a node
 * against 25 ns, measured here at 152k tokens); twice it, near the dear end. At the lexer-state
 * weight, a string of at most 60 characters (a walk of 326k nodes at qwen2's 152k tokens: 8 ms
 * walked node by node) was five times the service's limit.
 */
export const GRAMMAR_NODE_WEIGHT = 2;

export class WorkMeter {
  /** Work charged since the operation began (steps: trie nodes, lexer states, search nodes). */
  steps = 0;
  /** Set once an operation ran out: the matcher is not to be used again. */
  exhausted: ConstraintTooCostlyError | null = null;

  /**
   * `limitSteps`: Infinity (the default, for library use) is unbounded. `weight`: what one charged
   * step counts, so that one limit means about the same work for every matcher kind: a grammar's
   * lexer-state and search steps also pay for the lexer states, bounds and equivalence checks they
   * bring about, 12 to 80 trie-node steps each (measured at stories260K: a 1000-character
   * terminal, 40 colliding terminals); the weight is near the dear end, so a limit never lets a
   * grammar hold the thread much longer than a regex.
   */
  constructor(
    public limitSteps: number = Number.POSITIVE_INFINITY,
    readonly weight = 1,
    /** What a trie node of a walk counts (chargeNodes); `weight` by default. */
    readonly nodeWeight = weight,
  ) {}

  /**
   * Work done elsewhere on the operation's behalf, as a running total in unweighted steps (a
   * grammar automaton's lexer steps): each charge also counts its growth since the last one.
   */
  source: (() => number) | null = null;
  private sourceSeen = 0;

  /** The current operation is a budget mask's planning (see allowPlanning); false after begin(). */
  planning = false;
  /** The share of the limit the current operation may use (see begin). */
  private share = 1;

  /** An operation begins, under `share` of the limit (a refusal's lower bound: LOWER_BOUND_WORK_SHARE). */
  begin(share = 1): void {
    if (this.exhausted !== null) throw this.exhausted;
    this.steps = 0;
    this.planning = false;
    this.share = share;
    if (this.source !== null) this.sourceSeen = this.source();
  }

  /**
   * Budget planning inside a generation already admitted (a tight budget's mask) may take
   * PLANNING_ALLOWANCE times the limit more: its searches are bounded on their own, and ending an
   * admitted generation with a refusal for planning would break "never truncated" in spirit. Still
   * a count, so the same request meets it on every machine.
   */
  allowPlanning(): void {
    this.planning = true;
  }

  /** The steps the current operation may take under a limit of `limitSteps` (the meter's own by default). */
  operationLimit(limitSteps: number = this.limitSteps): number {
    return (this.planning ? (1 + PLANNING_ALLOWANCE) * limitSteps : limitSteps) * this.share;
  }

  /**
   * Runs `make` without charging the current operation, and returns what it would have charged
   * (weighted, with the source's growth): work made ahead on an operation's behalf is charged
   * (chargeWeighted) by the operation that would have made it.
   */
  deferred<T>(make: () => T): { value: T; steps: number } {
    const steps = this.steps;
    const limit = this.limitSteps;
    this.limitSteps = Number.POSITIVE_INFINITY;
    try {
      const value = make();
      this.charge(0);
      return { value, steps: this.steps - steps };
    } finally {
      this.limitSteps = limit;
      this.steps = steps;
    }
  }

  charge(steps: number): void {
    this.chargeAt(steps, this.weight);
  }

  /** Charges `nodes` trie nodes of a walk, at the meter's node weight. */
  chargeNodes(nodes: number): void {
    this.chargeAt(nodes, this.nodeWeight);
  }

  private chargeAt(steps: number, weight: number): void {
    let weighted = steps * weight;
    if (this.source !== null) {
      const seen = this.source();
      weighted += seen - this.sourceSeen;
      this.sourceSeen = seen;
    }
    this.chargeWeighted(weighted);
  }

  /** Charges steps already weighted (what deferred returned). */
  chargeWeighted(steps: number): void {
    this.steps += steps;
    if (this.steps > this.operationLimit()) throw (this.exhausted = new ConstraintTooCostlyError(this.limitSteps * this.share));
  }
}
