import { RegexTooComplexError } from "./errors.js";

/** Work units between two readings of the wall clock: well under a millisecond of the phases' loops. */
const CLOCK_STRIDE = 8192;

/** What `start` returns and `stop` puts back: the enclosing compile's limits. */
export type ClockFrame = readonly [workLimitAt: number, maxWork: number, deadline: number, timeoutMs: number];

/**
 * The limits of the compile in progress (compiles are synchronous: one at a time per thread).
 * Every phase (parse, NFA build, subset construction, pruning, minimization, distances) reports
 * its work in units, roughly one inner-loop iteration each.
 *
 * - The verdict is the work: a compile past `maxWork` units is refused ("work"), the same on an
 *   idle or a saturated machine, fast or slow, so the refusal may be kept.
 * - The wall clock is only a safety valve (`timeoutMs`, off unless set): it is read once per
 *   CLOCK_STRIDE units, so a check costs a subtraction and a comparison, and what it stops
 *   ("time") depends on load and is never kept.
 *
 * Units are counted on one running total, so a compile nested in another (a JSON Schema's
 * sub-languages, a grammar's terminals) spends its enclosing compile's budget too: its limit is
 * the smaller of its own and what the enclosing one has left.
 *
 * Modules keep the one instance in a const of their own (`const clock = regexClock`) and call its
 * methods: an imported function called in a hot loop costs a getter call per use when the module
 * is transpiled to CommonJS (tsx), which made small compiles a quarter slower.
 */
export class RegexClock {
  /** Units counted since the thread started (never reset: nested limits are points on it). */
  used = 0;
  private workLimitAt = Infinity;
  private maxWork = Infinity;
  private deadline = Infinity;
  private timeoutMs = Infinity;
  private nextRead = CLOCK_STRIDE;

  /**
   * Starts the limits of a compile allowed `maxWork` more units and, as a safety valve,
   * `timeoutMs` from now (Infinity: none); returns the frame it replaces, for `stop`.
   */
  start(maxWork: number, timeoutMs = Infinity): ClockFrame {
    const previous: ClockFrame = [this.workLimitAt, this.maxWork, this.deadline, this.timeoutMs];
    const limitAt = this.used + maxWork;
    if (limitAt < this.workLimitAt) {
      this.workLimitAt = limitAt;
      this.maxWork = maxWork;
    }
    const deadline = timeoutMs === Infinity ? Infinity : performance.now() + timeoutMs;
    if (deadline < this.deadline) {
      this.deadline = deadline;
      this.timeoutMs = timeoutMs;
    }
    this.nextRead = this.used + CLOCK_STRIDE;
    return previous;
  }

  /** Puts back the limits `start` replaced (none, outside a compile). */
  stop(previous: ClockFrame): void {
    [this.workLimitAt, this.maxWork, this.deadline, this.timeoutMs] = previous;
  }

  /** Units still allowed by the compile in progress (Infinity outside one). */
  workLeft(): number {
    return Math.max(0, this.workLimitAt - this.used);
  }

  /**
   * Runs `build` without counting its units, outside the work limit (the wall-clock valve still
   * applies): for a table kept for the thread's life whatever the request (a constant DFA the
   * compiles embed), whose build would otherwise count in the first compile that asks and in no
   * other, making a compile's count, and its verdict, depend on the ones before it.
   */
  uncounted<T>(build: () => T): T {
    const before = this.used;
    const workLimitAt = this.workLimitAt;
    this.workLimitAt = Infinity;
    try {
      return build();
    } finally {
      this.used = before;
      this.workLimitAt = workLimitAt;
      this.nextRead = before + CLOCK_STRIDE;
    }
  }

  /** Counts `units` of work: "work" past the limit; reads the wall clock once per stride. */
  tick(units: number): void {
    if ((this.used += units) >= this.nextRead) this.read();
  }

  /** Checks both limits now. */
  read(): void {
    this.nextRead = this.used + CLOCK_STRIDE;
    if (this.used > this.workLimitAt) {
      throw new RegexTooComplexError(`pattern too complex: building its automaton needs more than ${this.maxWork} units of work`, "work");
    }
    if (this.deadline !== Infinity && performance.now() > this.deadline) {
      throw new RegexTooComplexError(`pattern too complex: DFA construction exceeded ${this.timeoutMs} ms`, "time");
    }
  }
}

export const regexClock = new RegexClock();
