// Runs the official JSON Schema Test Suite (../shared/jsonschema/test-suite/) against the JSON
// Schema compiler in the form the service serves (compileServedSchema: a rule network where
// values nest without bound, else one DFA): each group's schema compiled once, each test's
// instance written as Python's json.dumps(data) and checked for membership.
//
// Our DFA writes JSON in one layout (properties in the schema's order, then others), so a valid
// instance it rejects is only a miss; an invalid instance it accepts is a bug.
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  DEFAULT_JSON_SCHEMA_OPTIONS,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  type JsonSchemaWarning,
} from "../../src/schema/index.js";
import { compileServedSchema } from "../../src/compile/index.js";
import { ruleNetworkAutomaton } from "../../src/grammar/index.js";
import { matchesString } from "../../src/regex/index.js";
import { REPO_ROOT } from "./paths.js";
import { parseKeepingNumbers, pythonDumps, type PyJson } from "./python-json.js";

export const SUITE_ROOT = resolve(REPO_ROOT, "..", "shared", "jsonschema", "test-suite");

export type SuiteDraft = "draft7" | "draft2020-12";

const DRAFT_07_URI = "http://json-schema.org/draft-07/schema#";

/** Files that need something beyond the schema itself (a server of remotes/). */
const SKIPPED_FILES = new Set(["refRemote.json"]);

/** A draft's test files, relative to its folder: "x.json", "optional/x.json", "optional/format/x.json". */
export function suiteFiles(draft: SuiteDraft): string[] {
  const out: string[] = [];
  for (const sub of ["", "optional/", "optional/format/"]) {
    const dir = resolve(SUITE_ROOT, draft, sub);
    const names = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".json") && !SKIPPED_FILES.has(e.name))
      .map((e) => e.name)
      .sort();
    for (const name of names) out.push(`${sub}${name}`);
  }
  return out;
}

export type GroupOutcome = "passed" | "partial" | "failed" | "notAsserted" | "refused" | "tooComplex" | "unsatisfiable" | "crashed";

/**
 * Suite files whose invalid instances are invalid only under behaviour the spec leaves optional,
 * and which the compiler (by design) does not assert: an invalid instance accepted there is
 * counted as "not asserted", not as a bug.
 */
const OPTIONAL_BEHAVIOUR: ReadonlyMap<string, string> = new Map([
  ["optional/content.json", "contentMediaType/contentEncoding are annotations (draft 7 and 2020-12)"],
  ["optional/dependencies-compatibility.json", "`dependencies` is not a 2020-12 keyword (an unknown keyword is ignored)"],
]);

/** Why an invalid instance accepted in this group is not a bug, or null (it is one). */
function notAssertedReason(file: string, warnings: readonly JsonSchemaWarning[]): string | null {
  const known = OPTIONAL_BEHAVIOUR.get(file);
  if (known !== undefined) return known;
  // An unknown format is an annotation (both drafts make format assertion optional); the
  // compiler says so with a warning. Formats it knows it asserts: there a miss is a bug.
  if (file.startsWith("optional/format/")) {
    const format = warnings.find((w) => w.keyword === "format" && /not asserted/.test(w.message));
    if (format !== undefined) return format.message;
  }
  return null;
}

export interface SuiteCase {
  readonly description: string;
  readonly text: string;
  readonly valid: boolean;
}

export interface GroupResult {
  readonly draft: SuiteDraft;
  readonly file: string;
  readonly index: number;
  readonly description: string;
  readonly schema: unknown;
  /**
   * passed: every verdict right (an unsatisfiable schema whose tests are all invalid included);
   * partial: compiled, no invalid accepted, some valid rejected; failed: some invalid accepted (a
   * bug); notAsserted: some invalid accepted where the spec leaves asserting optional (see
   * OPTIONAL_BEHAVIOUR; `detail` says why);
   * refused / tooComplex / crashed: the compile threw; unsatisfiable: declared empty although
   * some test is valid.
   */
  readonly outcome: GroupOutcome;
  /** The refusing keyword (refused: `keyword ?? "(none)"`), the limit (tooComplex), or the crash's message. */
  readonly detail: string | null;
  readonly pointer: string | null;
  readonly cases: readonly SuiteCase[];
  readonly validRejected: readonly SuiteCase[];
  readonly invalidAccepted: readonly SuiteCase[];
  readonly ms: number;
}

interface RawGroup {
  description: string;
  schema: unknown;
  tests: Array<{ description: string; data: unknown; valid: boolean }>;
}

/** The schema as compiled: draft-07 object schemas without `$schema` get draft-07's URI. */
export function schemaForDraft(draft: SuiteDraft, schema: unknown): unknown {
  if (draft !== "draft7" || typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  if ("$schema" in schema) return schema;
  return { $schema: DRAFT_07_URI, ...schema };
}

export interface RunOptions {
  /** Whole-compile time limit per group; past it the group counts as tooComplex. */
  readonly timeoutMs?: number;
}

/** Compiles one schema as the suite runner does, mapping the typed errors to an outcome. */
export function compileForSuite(
  schema: unknown,
  options: RunOptions = {},
):
  | { kind: "served"; accepts: (text: string) => boolean; warnings: readonly JsonSchemaWarning[] }
  | { kind: "refused"; keyword: string; pointer: string }
  | { kind: "tooComplex"; limit: string; pointer: string }
  | { kind: "unsatisfiable" }
  | { kind: "crashed"; message: string } {
  try {
    const served = compileServedSchema(schema, {
      whitespace: "default",
      strict: true,
      limits: { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, timeoutMs: options.timeoutMs ?? 2000 },
      freeValuesAnyDepth: true,
    });
    const warnings = served.warnings ?? [];
    if (served.kind === "dfa") return { kind: "served", accepts: (text) => matchesString(served.dfa, text), warnings };
    const automaton = ruleNetworkAutomaton({ rules: served.rules });
    const accepts = (text: string): boolean => {
      const state = automaton.walk(automaton.start, text);
      return state >= 0 && automaton.isComplete(state);
    };
    return { kind: "served", accepts, warnings };
  } catch (e) {
    if (e instanceof JsonSchemaError) return { kind: "refused", keyword: e.keyword ?? "(none)", pointer: e.pointer };
    if (e instanceof JsonSchemaTooComplexError) return { kind: "tooComplex", limit: e.limit, pointer: e.pointer };
    if (e instanceof JsonSchemaUnsatisfiableError) return { kind: "unsatisfiable" };
    return { kind: "crashed", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

/** Runs every group of one suite file. */
export function runSuiteFile(draft: SuiteDraft, file: string, options: RunOptions = {}): GroupResult[] {
  const text = readFileSync(resolve(SUITE_ROOT, draft, file), "utf8");
  const plain = JSON.parse(text) as RawGroup[];
  const kept = parseKeepingNumbers(text) as Array<{ tests: Array<{ data: PyJson }> }>;
  return plain.map((group, index) => {
    const keptTests = kept[index]?.tests ?? [];
    const cases: SuiteCase[] = group.tests.map((t, i) => ({
      description: t.description,
      text: pythonDumps(keptTests[i]?.data ?? null),
      valid: t.valid,
    }));
    const schema = schemaForDraft(draft, group.schema);
    const started = performance.now();
    const compiled = compileForSuite(schema, options);
    let accepted: (c: SuiteCase) => boolean = () => false;
    if (compiled.kind === "served") accepted = (c) => compiled.accepts(c.text);
    const checked = compiled.kind === "served" || compiled.kind === "unsatisfiable";
    const validRejected = checked ? cases.filter((c) => c.valid && !accepted(c)) : [];
    const invalidAccepted = checked ? cases.filter((c) => !c.valid && accepted(c)) : [];
    const ms = performance.now() - started;
    let outcome: GroupOutcome;
    let detail: string | null = null;
    let pointer: string | null = null;
    if (compiled.kind === "refused") (outcome = "refused"), (detail = compiled.keyword), (pointer = compiled.pointer);
    else if (compiled.kind === "tooComplex") (outcome = "tooComplex"), (detail = compiled.limit), (pointer = compiled.pointer);
    else if (compiled.kind === "crashed") (outcome = "crashed"), (detail = compiled.message);
    else if (invalidAccepted.length > 0) {
      detail = notAssertedReason(file, compiled.kind === "served" ? compiled.warnings : []);
      outcome = detail === null ? "failed" : "notAsserted";
    } else if (validRejected.length === 0) outcome = "passed";
    else outcome = compiled.kind === "unsatisfiable" ? "unsatisfiable" : "partial";
    return {
      draft,
      file,
      index,
      description: group.description,
      schema: group.schema,
      outcome,
      detail,
      pointer,
      cases,
      validRejected,
      invalidAccepted,
      ms,
    };
  });
}

export interface SuiteSummary {
  readonly files: number;
  readonly filesFullyPassed: string[];
  readonly groups: number;
  readonly counts: Record<GroupOutcome, number>;
  readonly refusalsByKeyword: Map<string, number>;
  readonly tooComplexByLimit: Map<string, number>;
  readonly validRejected: number;
  /** Invalid instances accepted in failed groups: bugs. */
  readonly invalidAccepted: number;
  /** Invalid instances accepted in notAsserted groups. */
  readonly invalidNotAsserted: number;
  readonly tests: number;
}

/** Totals over some groups (files as those groups' files). */
export function summarize(results: readonly GroupResult[]): SuiteSummary {
  const counts: Record<GroupOutcome, number> = {
    passed: 0,
    partial: 0,
    failed: 0,
    notAsserted: 0,
    refused: 0,
    tooComplex: 0,
    unsatisfiable: 0,
    crashed: 0,
  };
  const refusalsByKeyword = new Map<string, number>();
  const tooComplexByLimit = new Map<string, number>();
  const byFile = new Map<string, boolean>();
  let validRejected = 0;
  let invalidAccepted = 0;
  let invalidNotAsserted = 0;
  let tests = 0;
  for (const r of results) {
    counts[r.outcome]++;
    if (r.outcome === "refused") refusalsByKeyword.set(r.detail ?? "", (refusalsByKeyword.get(r.detail ?? "") ?? 0) + 1);
    if (r.outcome === "tooComplex") tooComplexByLimit.set(r.detail ?? "", (tooComplexByLimit.get(r.detail ?? "") ?? 0) + 1);
    byFile.set(r.file, (byFile.get(r.file) ?? true) && r.outcome === "passed");
    validRejected += r.validRejected.length;
    if (r.outcome === "notAsserted") invalidNotAsserted += r.invalidAccepted.length;
    else invalidAccepted += r.invalidAccepted.length;
    tests += r.cases.length;
  }
  return {
    files: byFile.size,
    filesFullyPassed: [...byFile].filter(([, ok]) => ok).map(([file]) => file),
    groups: results.length,
    counts,
    refusalsByKeyword,
    tooComplexByLimit,
    validRejected,
    invalidAccepted,
    invalidNotAsserted,
    tests,
  };
}

const sortedCounts = (m: Map<string, number>): string =>
  [...m]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k} ${n}`)
    .join(", ") || "none";

/** A few lines for a summary. */
export function formatSummary(title: string, s: SuiteSummary): string {
  const c = s.counts;
  return [
    `${title}: ${s.filesFullyPassed.length}/${s.files} files fully passed; ${s.groups} groups, ${s.tests} tests`,
    `  groups: passed ${c.passed}, partial ${c.partial}, refused ${c.refused}, too complex ${c.tooComplex}, ` +
      `unsatisfiable ${c.unsatisfiable}, not asserted ${c.notAsserted}, failed ${c.failed}, crashed ${c.crashed}`,
    `  refusals by keyword: ${sortedCounts(s.refusalsByKeyword)}`,
    `  too complex by limit: ${sortedCounts(s.tooComplexByLimit)}`,
    `  valid rejected: ${s.validRejected}; invalid accepted: ${s.invalidAccepted} (bugs), ${s.invalidNotAsserted} (not asserted, spec-optional)`,
    `  files fully passed: ${s.filesFullyPassed.join(", ") || "none"}`,
  ].join("\n");
}
