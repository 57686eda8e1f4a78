/**
 * MaskBench-style replay shared by bench:mask and bench:grammar-mask: per-step samples, their
 * summary, and one XGrammar (WebAssembly) round over the same target tokens.
 */
import { loadConfig } from "../src/config.js";
import type { WorkMeter } from "../src/constraint/index.js";
import { percentile, round3 } from "./stats.js";

/** The service's per-operation work limit at its defaults (TRELLIS_MASK_MAX_WORK). */
const MASK_MAX_WORK = loadConfig({}, []).config.maskMaxWork;

export interface Samples {
  compileMs: number[];
  stepUs: number[];
  /** Process CPU time per step (µs, getrusage resolution): robust to other processes' load. */
  stepCpuUs: number[];
  compileCpuMs: number[];
  maskOnlyUs: number[];
  /**
   * Per round: its compile plus every mask and accept of its targets (ms), what the constraint
   * costs one request from grammar text to the last token.
   */
  roundMs: number[];
  /**
   * Per round (grammars): the matcher's walks ahead, which the server runs while the model
   * evaluates the prompt, after the first mask; part of roundMs, not of compileMs.
   */
  walkAheadMs: number[];
  /** Per compile stage (grammars: grammar, automaton, matcher, firstMask), ms: parts of compileMs. */
  compilePhasesMs?: Record<string, number[]>;
  /** Per target: the admission question (minTokensToAccept at the target's budget), µs. */
  admissionUs: number[];
  /** Targets the admission question refused (the server's 422 "needs at least N tokens"). */
  refusedAtAdmission: number;
  /** Operations (admission, masks) that counted more work than the service's mask limit allows. */
  overMaskWorkLimit: number;
  wronglyMasked: number;
  notAccepting: number;
  tokens: number;
}

export const newSamples = (): Samples => ({
  compileMs: [],
  stepUs: [],
  stepCpuUs: [],
  compileCpuMs: [],
  maskOnlyUs: [],
  roundMs: [],
  walkAheadMs: [],
  admissionUs: [],
  refusedAtAdmission: 0,
  overMaskWorkLimit: 0,
  wronglyMasked: 0,
  notAccepting: 0,
  tokens: 0,
});

export function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

export function hasBit(mask: Uint32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

/** What a replay drives: a fresh constraint state per target (regex or grammar). */
export interface ReplayState {
  /** The server's admission question (runtime.ts): fewest tokens, Infinity when none fit in `cap`. */
  minTokensToAccept(cap: number): number;
  mask(remaining: number): Uint32Array;
  advance(token: number): boolean;
  isAccepting(): boolean;
}

/**
 * Replays every target from a fresh state as the server serves it: first the admission question
 * at the target's budget (runtime.ts: minTokensToAccept(max_new_tokens); a target it refuses is
 * counted and not replayed), then per step the mask, a check that the target's next token is in
 * it, and the token accepted. Budget 'large' = 1000 - step; 'tight' = exactly the tokens the
 * target has left. With the matcher's `work` meter, operations that counted more than the
 * service's default TRELLIS_MASK_MAX_WORK allows them (planning's allowance included) are counted,
 * without stopping the replay. `ahead(stepStarted, state)`: the server's work ahead in the rest
 * of the step's decode round (CompletionJob.aheadOfLogits), after the step's mask and before its
 * token; timed into the round's walkAheadMs, not into the step (the server does it while the
 * model decodes).
 */
export function replayTargets(
  newState: () => ReplayState,
  targets: readonly Int32Array[],
  budget: "large" | "tight",
  out: Samples,
  work?: WorkMeter,
  ahead?: (stepStarted: number, state: ReplayState) => void,
): void {
  let stepsMs = 0;
  let aheadMs = 0;
  const overLimit = (): void => {
    if (work !== undefined && work.steps > work.operationLimit(MASK_MAX_WORK)) out.overMaskWorkLimit++;
  };
  for (const tokens of targets) {
    const st = newState();
    const n = tokens.length;
    const cap = budget === "large" ? 1000 : n;
    const t0 = performance.now();
    const needed = st.minTokensToAccept(cap);
    const admissionMs = performance.now() - t0;
    out.admissionUs.push(admissionMs * 1000);
    stepsMs += admissionMs;
    overLimit();
    if (needed > cap) {
      out.refusedAtAdmission++;
      continue;
    }
    for (let i = 0; i < n; i++) {
      const tok = tokens[i]!;
      const remaining = budget === "large" ? 1000 - i : n - i;
      const cpu = cpuUs();
      const a = performance.now();
      const mask = st.mask(remaining);
      const b = performance.now();
      overLimit();
      const ok = hasBit(mask, tok);
      let cpuAhead = 0;
      let b2 = b;
      if (ahead !== undefined) {
        // As in a decode round: the mask, then the work ahead while the model decodes, then the
        // sampled token.
        const cpu0 = cpuUs();
        ahead(a, st);
        cpuAhead = cpuUs() - cpu0;
        b2 = performance.now();
        aheadMs += b2 - b;
      }
      st.advance(tok);
      const c = performance.now();
      out.stepCpuUs.push(cpuUs() - cpu - cpuAhead);
      out.maskOnlyUs.push((b - a) * 1000);
      out.stepUs.push((b - a + (c - b2)) * 1000);
      stepsMs += b - a + (c - b2);
      if (!ok) out.wronglyMasked++;
    }
    out.tokens += n;
    if (!st.isAccepting()) out.notAccepting++;
  }
  if (aheadMs > 0 && out.walkAheadMs.length === out.compileMs.length) out.walkAheadMs[out.walkAheadMs.length - 1]! += aheadMs;
  endRound(out, stepsMs);
}

/** Records the round whose compile was pushed last and whose steps took `stepsMs`. */
function endRound(out: Samples, stepsMs: number): void {
  const walkAhead = out.walkAheadMs.length === out.compileMs.length ? out.walkAheadMs[out.walkAheadMs.length - 1]! : 0;
  out.roundMs.push(out.compileMs[out.compileMs.length - 1]! + walkAhead + stepsMs);
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function runTheirs(
  xg: any,
  tokenizerInfo: any,
  w: { ebnf: string },
  targets: Int32Array[],
  vocabSize: number,
  out: Samples,
): Promise<void> {
  const cpu0 = cpuUs();
  const t0 = performance.now();
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(tokenizerInfo, false);
  const compiled = await compiler.compileGrammar(w.ebnf);
  const first = await xg.GrammarMatcher.createGrammarMatcher(compiled);
  const v = first.handle.GetNextTokenBitmask(vocabSize);
  v.delete();
  out.compileMs.push(performance.now() - t0);
  out.compileCpuMs.push((cpuUs() - cpu0) / 1000);
  first.dispose();
  let stepsMs = 0;
  for (const tokens of targets) {
    const matcher = await xg.GrammarMatcher.createGrammarMatcher(compiled);
    const handle = matcher.handle;
    const n = tokens.length;
    for (let i = 0; i < n; i++) {
      const tok = tokens[i]!;
      // The binding's native call only (the public wrapper adds an await and a copy).
      const cpu = cpuUs();
      const a = performance.now();
      const vec = handle.GetNextTokenBitmask(vocabSize);
      const b = performance.now();
      const word = vec.get(tok >>> 5) >>> 0;
      handle.AcceptToken(tok, false);
      const c = performance.now();
      out.stepCpuUs.push(cpuUs() - cpu);
      vec.delete();
      out.maskOnlyUs.push((b - a) * 1000);
      out.stepUs.push((c - a) * 1000 - 0); // accept included, like ours
      stepsMs += c - a;
      if (((word >>> (tok & 31)) & 1) !== 1) out.wronglyMasked++;
    }
    out.tokens += n;
    matcher.dispose();
  }
  endRound(out, stepsMs);
  compiled.dispose();
  compiler.dispose();
}

/** Our side of one workload: a round (fresh compile, or on `reuse`) returning the matcher it used. */
export type OursRound<M> = (budget: "large" | "tight", out: Samples, reuse?: M) => M;

/**
 * Tight-budget replays per round (each on a fresh matcher). A workload replays 20-70 tokens: with
 * one replay a round, its p99 over the default 3 rounds was the largest of 60-200 samples, so any
 * single collector pause (3-8 ms, a step in a few hundred meets one) became "the p99".
 */
export const TIGHT_REPLAYS_PER_ROUND = 4;

/**
 * One workload, ours against XGrammar: a warm-up round of each (JIT tiers, not recorded), then
 * `rounds` rounds alternating who goes first (so drift hits both alike); each round also replays
 * ours with tight budgets (TIGHT_REPLAYS_PER_ROUND times) and on the matcher kept from the warm-up
 * (the server's cached matcher).
 */
export async function compareWorkload<M>(
  rounds: number,
  ours: OursRound<M>,
  theirs: (out: Samples) => Promise<void>,
): Promise<Record<string, unknown>> {
  const large = newSamples();
  const tight = newSamples();
  const warmed = newSamples();
  const xgrammar = newSamples();
  const warm = ours("large", newSamples());
  ours("tight", newSamples());
  await theirs(newSamples());
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      ours("large", large);
      await theirs(xgrammar);
    } else {
      await theirs(xgrammar);
      ours("large", large);
    }
    for (let t = 0; t < TIGHT_REPLAYS_PER_ROUND; t++) ours("tight", tight);
    ours("large", warmed, warm);
  }
  const o = summarize(large);
  const w = summarize(warmed);
  const t = summarize(xgrammar);
  return {
    ours: { ...o, ...compilePhases(large) },
    oursTightBudget: summarize(tight),
    oursWarmMatcher: w,
    xgrammar: t,
    ratioOursOverTheirs: {
      compile: round3(o.compileMsMedian! / t.compileMsMedian!),
      ...pairedCompile(large.compileMs, xgrammar.compileMs),
      perTokenP50: round3(o.perTokenUsP50! / t.perTokenUsP50!),
      perTokenP99: round3(o.perTokenUsP99! / t.perTokenUsP99!),
      perTokenAvg: round3(o.perTokenUsAvg! / t.perTokenUsAvg!),
      round: round3(o.roundMsMedian! / t.roundMsMedian!),
      perTokenP50WarmMatcher: round3(w.perTokenUsP50! / t.perTokenUsP50!),
      perTokenP99WarmMatcher: round3(w.perTokenUsP99! / t.perTokenUsP99!),
    },
    oursNotAcceptingAtEnd: large.notAccepting + tight.notAccepting,
  };
}

/**
 * Round by round, ours against theirs compiled right beside it (same machine state): the median
 * of the per-round ratios, and in how many rounds ours compiled faster. The ratio of medians above
 * moves with whatever the machine does across a run; these pairs cancel most of it.
 */
function pairedCompile(
  ours: readonly number[],
  theirs: readonly number[],
): { compilePairedMedian: number; compileRoundsOursFaster: string } {
  const n = Math.min(ours.length, theirs.length);
  const ratios: number[] = [];
  let faster = 0;
  for (let r = 0; r < n; r++) {
    ratios.push(ours[r]! / theirs[r]!);
    if (ours[r]! < theirs[r]!) faster++;
  }
  ratios.sort((a, b) => a - b);
  return { compilePairedMedian: round3(percentile(ratios, 0.5)), compileRoundsOursFaster: `${faster}/${n}` };
}

/** The median of each compile stage, where the samples time them (grammars). */
function compilePhases(s: Samples): { compilePhasesMsMedian?: Record<string, number> } {
  if (s.compilePhasesMs === undefined) return {};
  const medians: Record<string, number> = {};
  for (const [name, ms] of Object.entries(s.compilePhasesMs))
    medians[name] = round3(
      percentile(
        [...ms].sort((a, b) => a - b),
        0.5,
      ),
    );
  return { compilePhasesMsMedian: medians };
}

export function summarize(s: Samples): Record<string, number> {
  const steps = [...s.stepUs].sort((a, b) => a - b);
  const masks = [...s.maskOnlyUs].sort((a, b) => a - b);
  const compile = [...s.compileMs].sort((a, b) => a - b);
  const cpuSteps = [...s.stepCpuUs].sort((a, b) => a - b);
  const cpuCompile = [...s.compileCpuMs].sort((a, b) => a - b);
  const round = [...s.roundMs].sort((a, b) => a - b);
  const walkAhead = [...s.walkAheadMs].sort((a, b) => a - b);
  const admission = [...s.admissionUs].sort((a, b) => a - b);
  const avg = steps.reduce((a, b) => a + b, 0) / Math.max(1, steps.length);
  return {
    compileMsMedian: round3(percentile(compile, 0.5)),
    compileMsMin: round3(compile[0] ?? NaN),
    compileMsMax: round3(compile[compile.length - 1] ?? NaN),
    roundMsMedian: round3(percentile(round, 0.5)),
    ...(walkAhead.length > 0 ? { walkAheadMsMedian: round3(percentile(walkAhead, 0.5)) } : {}),
    perTokenUsAvg: round3(avg),
    perTokenUsP50: round3(percentile(steps, 0.5)),
    perTokenUsP99: round3(percentile(steps, 0.99)),
    cpuCompileMsMedian: round3(percentile(cpuCompile, 0.5)),
    cpuPerTokenUsAvg: round3(cpuSteps.reduce((a, b) => a + b, 0) / Math.max(1, cpuSteps.length)),
    cpuPerTokenUsP99: round3(percentile(cpuSteps, 0.99)),
    maskOnlyUsP50: round3(percentile(masks, 0.5)),
    maskOnlyUsP99: round3(percentile(masks, 0.99)),
    ...(admission.length > 0
      ? { admissionUsP50: round3(percentile(admission, 0.5)), admissionUsP99: round3(percentile(admission, 0.99)) }
      : {}),
    refusedAtAdmission: s.refusedAtAdmission,
    overMaskWorkLimit: s.overMaskWorkLimit,
    tokensReplayed: s.tokens,
    wronglyMasked: s.wronglyMasked,
  };
}
