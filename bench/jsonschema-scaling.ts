/**
 * npm run bench:jsonschema-scaling — how JSON Schema compile time grows with a schema's size, at
 * the service's defaults (compileServedSchema's choice of form, its work limit, free values at any
 * depth; no token probe: the schema → automaton part alone). Four families of synthetic schemas,
 * each doubled in size from 25 to 1,600 units:
 *   flat    — one object of n properties (string, integer, boolean, enum in turn), half required;
 *   defs    — n `$defs` (objects of three properties), the root an object naming each once by `$ref`;
 *   shared  — n properties all `$ref` to one definition (a subschema used in many places);
 *   union   — `anyOf` of n object shapes told apart by a `kind` const (a discriminated union).
 * Per size: the schema's JSON bytes, the compile's median over `--rounds` (default 3) in ms (after
 * a warm-up), the form served (or the refusal: a size, work or combination limit), and ms per KB;
 * per family, the ratio of the largest served size's ms/KB to the smallest measurable one's (1 =
 * linear; above, superlinear). Single thread. Prints one JSON object.
 *
 * Usage: npm run bench:jsonschema-scaling -- [--rounds 3] [--max 1600]
 */
import { compileServedSchema } from "../src/compile/index.js";
import { DEFAULT_JSON_SCHEMA_OPTIONS } from "../src/schema/index.js";
import { defaultConfig } from "../src/config.js";
import { argValue, round3 } from "./stats.js";

const TYPES = [{ type: "string", maxLength: 40 }, { type: "integer", minimum: 0 }, { type: "boolean" }, { enum: ["red", "green", "blue"] }];

const FAMILIES: Record<string, (n: number) => unknown> = {
  flat: (n) => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`field_${i}`, TYPES[i % TYPES.length]])),
    required: Array.from({ length: Math.floor(n / 2) }, (_, i) => `field_${2 * i}`),
    additionalProperties: false,
  }),
  defs: (n) => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`part_${i}`, { $ref: `#/$defs/def_${i}` }])),
    $defs: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [
        `def_${i}`,
        {
          type: "object",
          properties: { name: { type: "string", maxLength: 20 }, size: { type: "integer" }, [`x${i}`]: { type: "boolean" } },
          required: ["name"],
          additionalProperties: false,
        },
      ]),
    ),
    additionalProperties: false,
  }),
  shared: (n) => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`item_${i}`, { $ref: "#/$defs/item" }])),
    $defs: {
      item: {
        type: "object",
        properties: {
          id: { type: "integer" },
          label: { type: "string", maxLength: 30 },
          tags: { type: "array", items: { type: "string" } },
        },
        required: ["id"],
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  }),
  union: (n) => ({
    anyOf: Array.from({ length: n }, (_, i) => ({
      type: "object",
      properties: { kind: { const: `kind_${i}` }, value: TYPES[i % TYPES.length] },
      required: ["kind", "value"],
      additionalProperties: false,
    })),
  }),
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function main(): void {
  const rounds = Number(argValue("rounds") ?? 3);
  const max = Number(argValue("max") ?? 1600);
  const config = defaultConfig();
  const limits = { ...DEFAULT_JSON_SCHEMA_OPTIONS.limits, maxWork: config.compileMaxWork };
  const options = { whitespace: "default", strict: true, limits, freeValuesAnyDepth: config.jsonFreeAnyDepth } as const;
  const families: Record<string, unknown> = {};
  // Warm up (the first compiles include the JIT's work), then measure.
  for (const make of Object.values(FAMILIES)) for (let r = 0; r < rounds; r++) compileServedSchema(make(25), options);
  for (const [name, make] of Object.entries(FAMILIES)) {
    const sizes: Record<string, unknown>[] = [];
    for (let n = 25; n <= max; n *= 2) {
      const schema = make(n);
      const bytes = JSON.stringify(schema).length;
      const times: number[] = [];
      let form = "";
      for (let r = 0; r < rounds; r++) {
        const t = performance.now();
        try {
          form = compileServedSchema(schema, options).kind;
        } catch (error) {
          form = `refused: ${(error as Error).message.slice(0, 80)}`;
        }
        times.push(performance.now() - t);
      }
      const ms = median(times);
      sizes.push({ n, bytes, ms: round3(ms), form, msPerKb: round3(ms / (bytes / 1024)) });
      process.stderr.write(`bench:jsonschema-scaling: ${name} n=${n} ${round3(ms)} ms ${form}\n`);
    }
    // Linearity: ms/KB at the largest size served against the smallest size whose time is measurable (≥ 1 ms).
    const served = sizes.filter((s) => !String(s.form).startsWith("refused"));
    const first = served.find((s) => (s.ms as number) >= 1) ?? served[0];
    const last = served[served.length - 1];
    families[name] = {
      sizes,
      growth: first && last ? round3((last.msPerKb as number) / (first.msPerKb as number)) : null,
    };
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        node: process.version,
        rounds,
        options: { ...options, limits: { ...limits, timeoutMs: String(limits.timeoutMs) } },
        note: "growth = ms/KB at the largest size served ÷ ms/KB at the smallest measurable one: 1 is linear in the schema's JSON size",
        families,
      },
      null,
      2,
    )}\n`,
  );
}

main();
