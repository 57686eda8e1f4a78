import { RegexTooComplexError } from "./errors.js";

/** Work units between two readings of the clock: well under a millisecond of the phases' loops. */
const CLOCK_STRIDE = 8192;

/**
 * The time limit of the compile in progress (compiles are synchronous: one at a time per thread).
 * Every phase (parse, NFA build, subset construction, pruning, minimization, distances) reports
 * its work in units, roughly one inner-loop iteration each, and the clock is read once per
 * CLOCK_STRIDE units: a check costs a subtraction and a comparison, and a limit is overshot by
 * one stride of work instead of by a phase. (Reading it every 64 new DFA states, and in no other
 * phase, overshot by 100 ms: one state of a wide pattern is thousands of units.)
 *
 * Modules keep the one instance in a const of their own (`const clock = regexClock`) and call its
 * methods: an imported function called in a hot loop costs a getter call per use when the module
 * is transpiled to CommonJS (tsx), which made small compiles a quarter slower.
 */
export class RegexClock {
  private deadline = Infinity;
  private limitMs = 0;
  private workLeft = CLOCK_STRIDE;

  /** Starts the clock of a compile allowed `timeoutMs` from now; returns the clock it replaces. */
  start(timeoutMs: number): [number, number] {
    const previous: [number, number] = [this.deadline, this.limitMs];
    this.deadline = performance.now() + timeoutMs;
    this.limitMs = timeoutMs;
    this.workLeft = CLOCK_STRIDE;
    return previous;
  }

  /** Puts back the clock `start` replaced (none, outside a compile). */
  stop(previous: [number, number]): void {
    [this.deadline, this.limitMs] = previous;
  }

  /** Counts `units` of work; reads the clock when a stride is used up. */
  tick(units: number): void {
    if ((this.workLeft -= units) <= 0) this.read();
  }

  /** Reads the clock now: RegexTooComplexError "time" past the limit. */
  read(): void {
    this.workLeft = CLOCK_STRIDE;
    if (this.deadline !== Infinity && performance.now() > this.deadline) {
      throw new RegexTooComplexError(`pattern too complex: DFA construction exceeded ${this.limitMs} ms`, "time");
    }
  }
}

export const regexClock = new RegexClock();
