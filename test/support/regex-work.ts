// The regex stage's work meter (src/regex/clock.ts) as the tests read it: what a compile, or a
// refusal, cost in counted units of work, the same on every machine, where a clock would say
// how loaded the machine was.
import { regexClock } from "../../src/regex/index.js";

/**
 * Slack past a work limit at which a refusal may come: the meter is checked once per clock stride
 * (8,192 units) and a phase may count a few thousand units at once. About a millisecond of the
 * heaviest loops.
 */
export const WORK_LIMIT_SLACK = 65_536;

/** Units of work the regex clock counted while `run` ran (regexClock.used is never reset). */
export function regexWorkOf(run: () => void): number {
  const before = regexClock.used;
  run();
  return regexClock.used - before;
}

/** What `compile` threw, with the units it counted until then; fails the test when it compiled. */
export function refusalWithWork(compile: () => unknown, label = "the compile"): { error: unknown; units: number } {
  let error: unknown;
  let threw = false;
  const units = regexWorkOf(() => {
    try {
      compile();
    } catch (e) {
      error = e;
      threw = true;
    }
  });
  if (!threw) throw new Error(`${label} compiled: a refusal was expected`);
  return { error, units };
}
