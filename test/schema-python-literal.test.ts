/**
 * Python literals of JSON values (schema/tool-calls/python-literal.ts), the way Seed-OSS's,
 * MiniCPM5's and LFM2's templates write object and array arguments: the language is a JSON
 * Schema's JSON texts rewritten byte by byte. Shown against Python itself (Debian's python3):
 * every sampled member is a literal `ast.literal_eval` reads, to the value our reader reads; what
 * Python's repr writes for values the schema allows is in the language (its \x escapes too);
 * values it does not allow are not.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { matchesString, sampleString } from "../src/regex/index.js";
import { compileJsonSchema } from "../src/schema/json-schema/compile.js";
import { jsonOfLiteral, pythonLiteralLanguage } from "../src/schema/tool-calls/python-literal.js";
import { seededRandom } from "./support/generate-harness.js";
import { ORACLE_PYTHON } from "./support/paths.js";

const OPTIONS = { whitespace: "default", strict: true } as const;

/** Python's answers for each line of `input`, by `script` (reading JSON lines on stdin, writing JSON lines). */
function python(script: string, lines: readonly string[]): string[] {
  const run = spawnSync(ORACLE_PYTHON, ["-c", script], { input: lines.join("\n"), encoding: "utf8", maxBuffer: 1 << 26 });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.trimEnd().split("\n");
}

const LITERAL_EVAL = `
import ast, json, sys
for line in sys.stdin:
    text = json.loads(line)
    try:
        print(json.dumps(ast.literal_eval(text), sort_keys=True))
    except Exception as e:
        print(json.dumps("ERROR " + str(e)))
`;
const REPR = `
import json, sys
for line in sys.stdin:
    print(json.dumps(repr(json.loads(line))))
`;

test("sampled members are Python literals that literal_eval reads to the value our reader reads", () => {
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 12 },
      tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      flags: { type: "object", properties: { on: { type: "boolean" }, none: { type: "null" } } },
      n: { type: "number" },
    },
    required: ["name"],
  };
  const json = compileJsonSchema(schema, OPTIONS).dfa;
  const dfa = pythonLiteralLanguage(json, {});
  const random = seededRandom(127);
  const texts = Array.from({ length: 300 }, () => sampleString(dfa, random, { maxBytes: 400, stopProbability: 0.05 })!);
  const theirs = python(
    LITERAL_EVAL,
    texts.map((t) => JSON.stringify(t)),
  );
  let quoted = 0;
  texts.forEach((t, i) => {
    assert.deepEqual(sortKeys(JSON.parse(jsonOfLiteral(t))), JSON.parse(theirs[i]!), t);
    if (t.includes("'")) quoted++;
  });
  assert.ok(quoted > 50, `${quoted} of them with single quotes`);
});

test("Python's repr of values the schema allows is in the language; of values it does not, not", () => {
  const schema = { type: "array", items: { type: ["string", "boolean", "null", "integer"], maxLength: 8 }, maxItems: 4 };
  const dfa = pythonLiteralLanguage(compileJsonSchema(schema, OPTIONS).dfa, {});
  // Control and other unprintable characters as repr escapes them: \x01, \x7f, \x08, \x0c, \x85, \xa0, \xad.
  const allowed = [
    [],
    ["it's"],
    ['say "hi"', "a'b\"c"],
    [true, null, 42, "x\ny\tz"],
    ["a\\b", "é ✓ 😀"],
    ["\u0001\u007f", "b\bf\f", "\u0085\u00a0\u00ad\u0000"],
  ];
  const refused = [[1.5], ["far too long"], [1, 2, 3, 4, 5], [{}]];
  const reprs = python(
    REPR,
    [...allowed, ...refused].map((v) => JSON.stringify(v)),
  ).map((line) => JSON.parse(line) as string);
  reprs.forEach((text, i) => assert.equal(matchesString(dfa, text), i < allowed.length, text));
  reprs.slice(0, allowed.length).forEach((text, i) => assert.deepEqual(JSON.parse(jsonOfLiteral(text)), allowed[i], text));
  assert.equal(reprs[5], "['\\x01\\x7f', 'b\\x08f\\x0c', '\\x85\\xa0\\xad\\x00']");
  // JSON's own escapes stay in the language too: `\u0001`, `\b`.
  assert.ok(matchesString(dfa, "['\\u0001', '\\b']"));
  assert.ok(!matchesString(dfa, "['\\x1']") && !matchesString(dfa, "['\\x0g']"));
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  return value;
}
