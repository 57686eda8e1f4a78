// JSON Schema numeric keywords as languages, checked against exact decimal arithmetic (BigInt
// fractions written here independently of numeric.ts) on texts around each bound and at random.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { integerRangeNode, multipleOfDfa, multipleOfNode, type NumericBounds, numberRangeNode } from "../src/schema/json-schema/numeric.js";
import { type ByteDfa, compileRegexNode, matchesString, type RegexNode } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";

/** value = num / 10^scale. */
interface Exact {
  num: bigint;
  scale: number;
}

function parseExact(text: string): Exact {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text);
  assert.ok(m, text);
  const fraction = m[3] ?? "";
  const exponent = Number(m[4] ?? "0");
  let num = BigInt(`${m[1]}${m[2]}${fraction}`);
  let scale = fraction.length - exponent;
  if (scale < 0) (num *= 10n ** BigInt(-scale)), (scale = 0);
  return { num, scale };
}

function compareExact(a: Exact, b: Exact): number {
  const s = Math.max(a.scale, b.scale);
  const x = a.num * 10n ** BigInt(s - a.scale);
  const y = b.num * 10n ** BigInt(s - b.scale);
  return x === y ? 0 : x > y ? 1 : -1;
}

/** Fixed-point text of x with `fractionDigits` ≥ x.scale digits after the point (none if 0). */
function formatExact(x: Exact, fractionDigits: number): string {
  const num = x.num * 10n ** BigInt(fractionDigits - x.scale);
  const digits = (num < 0n ? -num : num).toString().padStart(fractionDigits + 1, "0");
  const cut = digits.length - fractionDigits;
  return `${num < 0n ? "-" : ""}${digits.slice(0, cut)}${fractionDigits > 0 ? `.${digits.slice(cut)}` : ""}`;
}

const INTEGER_TEXT = /^-?(0|[1-9][0-9]*)$/;
const NUMBER_TEXT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

function inBounds(text: string, bounds: NumericBounds, integer: boolean): boolean {
  if (!(integer ? INTEGER_TEXT : NUMBER_TEXT).test(text)) return false;
  const v = parseExact(text);
  const cmp = (b: string | undefined, ok: (c: number) => boolean): boolean => b === undefined || ok(compareExact(v, parseExact(b)));
  return (
    cmp(bounds.minimum, (c) => c >= 0) &&
    cmp(bounds.maximum, (c) => c <= 0) &&
    cmp(bounds.exclusiveMinimum, (c) => c > 0) &&
    cmp(bounds.exclusiveMaximum, (c) => c < 0)
  );
}

function isMultiple(text: string, divisor: string, integer: boolean): boolean {
  if (!(integer ? INTEGER_TEXT : NUMBER_TEXT).test(text)) return false;
  const v = parseExact(text);
  const d = parseExact(divisor);
  return (v.num * 10n ** BigInt(d.scale)) % (d.num * 10n ** BigInt(v.scale)) === 0n;
}

const rng = seededRandom;

const BAD_SYNTAX = ["01", "1.", ".5", "+1", "1e3", "--1", "-", "", "00", "-01", "1.5.0", " 1", "1 ", "0x1", "1E3", "-.5", "1,0", "١"];

/** Texts near a value: integers around it, its own digits, one unit up and down at several precisions, zeros appended. */
function textsAround(x: Exact): string[] {
  const out: string[] = [];
  const floor = x.num / 10n ** BigInt(x.scale);
  for (let k = -3n; k <= 3n; k++) {
    const n = floor + k;
    out.push(n.toString(), `${n}.0`, `${n}.5`, `${n}.99`, `${n}.01`);
  }
  for (let digits = Math.max(x.scale, 1); digits <= x.scale + 2; digits++) {
    const unit: Exact = { num: 1n, scale: digits };
    for (const y of [x, add(x, unit), add(x, { num: -1n, scale: digits })])
      out.push(formatExact(y, Math.max(y.scale, digits)), formatExact(y, Math.max(y.scale, digits) + 1));
  }
  return out.flatMap((t) => (t.startsWith("-") ? [t, t.slice(1)] : [t, `-${t}`]));
}

function add(a: Exact, b: Exact): Exact {
  const s = Math.max(a.scale, b.scale);
  return { num: a.num * 10n ** BigInt(s - a.scale) + b.num * 10n ** BigInt(s - b.scale), scale: s };
}

function randomText(random: () => number, integer: boolean): string {
  const sign = random() < 0.4 ? "-" : "";
  const length = 1 + Math.floor(random() * 4);
  let int = String(Math.floor(random() * 10 ** length));
  if (random() < 0.05) int = `0${int}`; // a leading zero: never accepted
  const fraction =
    !integer || random() < 0.1
      ? random() < 0.5
        ? ""
        : `.${String(Math.floor(random() * 10000)).padStart(1 + Math.floor(random() * 5), "0")}`
      : "";
  return `${sign}${int}${fraction}`;
}

const FIXED_BOUNDS = [
  "0",
  "-0",
  "0.0",
  "1",
  "-1",
  "2.5",
  "-2.5",
  "0.5",
  "-1.25",
  "1e-3",
  "0.0001",
  "1E+2",
  "1e3",
  "-3.5e1",
  "25e-1",
  "99",
  "100",
  "-100",
  "999.999",
  "0.1",
  "-0.09",
  "10.01",
  "9007199254740993",
  "-9223372036854775808",
  "1e300",
  "-1e300",
  "1.7976931348623157e308",
  "5e-324",
];

function randomBoundText(random: () => number): string {
  const r = random();
  if (r < 0.25) return FIXED_BOUNDS[Math.floor(random() * FIXED_BOUNDS.length)]!;
  const sign = random() < 0.45 ? "-" : "";
  const int = String(Math.floor(random() * 10 ** (1 + Math.floor(random() * 4))));
  if (r < 0.55) return `${sign}${int}`;
  const fraction = String(Math.floor(random() * 1000)).padStart(1 + Math.floor(random() * 3), "0");
  if (r < 0.85) return `${sign}${int}.${fraction}`;
  return `${sign}${int}.${fraction}e${Math.floor(random() * 7) - 3}`;
}

function randomBounds(random: () => number): NumericBounds {
  const bounds: NumericBounds = {};
  const keys = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] as const;
  for (const key of keys) if (random() < 0.45) bounds[key] = randomBoundText(random);
  // Often a nearby pair, so that the interval is small and both ends show up in the window.
  if (random() < 0.4 && bounds.minimum !== undefined && bounds.maximum === undefined) {
    const lo = parseExact(bounds.minimum);
    bounds.maximum = formatExact(add(lo, { num: BigInt(Math.floor(random() * 2000)), scale: 2 }), Math.max(lo.scale, 2));
  }
  return bounds;
}

function compile(node: RegexNode): ByteDfa {
  return compileRegexNode(node, { maxDfaStates: 20_000 });
}

function nodeSize(node: RegexNode): number {
  switch (node.kind) {
    case "concat":
    case "alt":
      return 1 + node.items.reduce((n, item) => n + nodeSize(item), 0);
    case "repeat":
      return 1 + nodeSize(node.item);
    default:
      return 1;
  }
}

function checkRange(bounds: NumericBounds, integer: boolean, random: () => number, extra: string[] = []): void {
  const node = integer ? integerRangeNode(bounds) : numberRangeNode(bounds);
  const texts = [...BAD_SYNTAX, ...extra, "0", "-0", "0.0", "-0.000", "1", "-1"];
  for (const b of Object.values(bounds)) texts.push(...textsAround(parseExact(b)));
  for (let i = 0; i < 60; i++) texts.push(randomText(random, integer));
  const expected = texts.filter((t) => inBounds(t, bounds, integer));
  if (node === null) {
    // Empty: no window text may be in bounds (and the language must really be empty — checked below by the caller's cases).
    assert.deepEqual(expected, [], `null for ${JSON.stringify(bounds)} but ${expected[0]} is in bounds`);
    return;
  }
  const dfa = compile(node);
  for (const t of texts) {
    assert.equal(
      matchesString(dfa, t),
      inBounds(t, bounds, integer),
      `${integer ? "integer" : "number"} ${JSON.stringify(bounds)}: ${JSON.stringify(t)}`,
    );
  }
}

describe("integerRangeNode", () => {
  test("every integer in a window, for fixed bounds", () => {
    const dfa = compile(integerRangeNode({ minimum: "-120", exclusiveMaximum: "1050" })!);
    for (let n = -1300; n <= 1300; n++) assert.equal(matchesString(dfa, String(n)), n >= -120 && n < 1050, String(n));
    assert.equal(matchesString(dfa, "-0"), true);
  });

  test("rounding of non-integer and exclusive bounds", () => {
    const cases: [NumericBounds, number, number][] = [
      [{ minimum: "2.5" }, 3, Infinity],
      [{ exclusiveMinimum: "3" }, 4, Infinity],
      [{ exclusiveMinimum: "2.5" }, 3, Infinity],
      [{ maximum: "-2.5" }, -Infinity, -3],
      [{ exclusiveMaximum: "-3" }, -Infinity, -4],
      [{ minimum: "-0.5", maximum: "0.5" }, 0, 0],
      [{ exclusiveMinimum: "-1", exclusiveMaximum: "1" }, 0, 0],
      [{ minimum: "1e-3", maximum: "1E+2" }, 1, 100],
      [{ minimum: "25e-1", maximum: "-3.5e1" }, 1, 0],
    ];
    for (const [bounds, lo, hi] of cases) {
      const node = integerRangeNode(bounds);
      if (lo > hi) {
        assert.equal(node, null, JSON.stringify(bounds));
        continue;
      }
      const dfa = compile(node!);
      for (let n = -60; n <= 160; n++) assert.equal(matchesString(dfa, String(n)), n >= lo && n <= hi, `${JSON.stringify(bounds)} ${n}`);
      assert.equal(matchesString(dfa, "-0"), 0 >= lo && 0 <= hi);
    }
  });

  test("empty ranges are null", () => {
    assert.equal(integerRangeNode({ minimum: "2.5", maximum: "2.9" }), null);
    assert.equal(integerRangeNode({ exclusiveMinimum: "3", exclusiveMaximum: "4" }), null);
    assert.equal(integerRangeNode({ minimum: "5", maximum: "4" }), null);
    assert.equal(integerRangeNode({ minimum: "1e300", maximum: "1e299" }), null);
    assert.notEqual(integerRangeNode({ minimum: "4", maximum: "4" }), null);
  });

  test("random bounds against exact arithmetic", () => {
    const random = rng(1);
    for (let i = 0; i < 400; i++) checkRange(randomBounds(random), true, random);
  });

  test("huge bounds stay small", () => {
    for (const bounds of [
      { minimum: "1e300" },
      { maximum: "1e300" },
      { minimum: "-1e300", maximum: "1e300" },
      { minimum: "-9223372036854775808", maximum: "9223372036854775807" },
      { exclusiveMaximum: "1.7976931348623157e308" },
    ]) {
      const node = integerRangeNode(bounds)!;
      assert.ok(nodeSize(node) < 400, `${JSON.stringify(bounds)}: ${nodeSize(node)} nodes`);
      const dfa = compile(node);
      assert.ok(dfa.numStates < 1000, `${JSON.stringify(bounds)}: ${dfa.numStates} states`);
      const random = rng(2);
      checkRange(bounds, true, random, [
        "1" + "0".repeat(300),
        "-1" + "0".repeat(300),
        "9".repeat(300),
        "1" + "0".repeat(299) + "1",
        "9".repeat(301),
      ]);
    }
    const dfa = compile(integerRangeNode({ minimum: "-9223372036854775808", maximum: "9223372036854775807" })!);
    assert.equal(matchesString(dfa, "-9223372036854775808"), true);
    assert.equal(matchesString(dfa, "-9223372036854775809"), false);
    assert.equal(matchesString(dfa, "9223372036854775807"), true);
    assert.equal(matchesString(dfa, "9223372036854775808"), false);
  });

  test("bounds past the digit cap are refused, tiny fractions round", () => {
    assert.throws(() => integerRangeNode({ minimum: "1e500" }), /numeric bound too large/);
    assert.throws(() => integerRangeNode({ minimum: "1e99999999999" }), /numeric bound too large/);
    assert.throws(() => integerRangeNode({ minimum: "one" }), /not a JSON number/);
    const dfa = compile(integerRangeNode({ exclusiveMinimum: "1e-5000", maximum: "3" })!);
    assert.deepEqual(
      ["0", "1", "2", "3", "4"].filter((t) => matchesString(dfa, t)),
      ["1", "2", "3"],
    );
    // A huge bound that another bound dominates is never expanded.
    assert.notEqual(integerRangeNode({ minimum: "-1e5000", exclusiveMinimum: "0" }), null);
  });
});

describe("numberRangeNode", () => {
  test("exclusive bounds at zero", () => {
    const dfa = compile(numberRangeNode({ exclusiveMinimum: "0" })!);
    for (const t of ["0.0001", "1", "1.50", "0.1"]) assert.equal(matchesString(dfa, t), true, t);
    for (const t of ["0", "0.0", "-0", "-0.000", "-0.1", "0.", ".1"]) assert.equal(matchesString(dfa, t), false, t);
    const below = compile(numberRangeNode({ exclusiveMaximum: "0" })!);
    for (const t of ["-0.0001", "-1", "-1.50"]) assert.equal(matchesString(below, t), true, t);
    for (const t of ["0", "0.0", "-0", "-0.000", "0.1"]) assert.equal(matchesString(below, t), false, t);
  });

  test("decimal bounds are exact", () => {
    const dfa = compile(numberRangeNode({ minimum: "-1.25", exclusiveMaximum: "0.5" })!);
    const yes = ["-1.25", "-1.250", "-1.2499", "0.4999999", "0", "-0", "-1", "0.49"];
    const no = ["-1.2500001", "-1.26", "0.5", "0.50", "0.5000001", "1", "-2"];
    for (const t of yes) assert.equal(matchesString(dfa, t), true, t);
    for (const t of no) assert.equal(matchesString(dfa, t), false, t);
    const thousandth = compile(numberRangeNode({ minimum: "1e-3", maximum: "1e-3" })!);
    assert.deepEqual(
      ["0.001", "0.0010", "0.00100", "0.0011", "0.0009", "0.01", "1e-3"].filter((t) => matchesString(thousandth, t)),
      ["0.001", "0.0010", "0.00100"],
    );
  });

  test("empty ranges are null", () => {
    assert.equal(numberRangeNode({ exclusiveMinimum: "1", exclusiveMaximum: "1" }), null);
    assert.equal(numberRangeNode({ minimum: "1", exclusiveMaximum: "1.0" }), null);
    assert.equal(numberRangeNode({ minimum: "0.51", maximum: "0.5" }), null);
    assert.notEqual(numberRangeNode({ exclusiveMinimum: "0.5", exclusiveMaximum: "0.50001" }), null);
  });

  test("random bounds against exact arithmetic", () => {
    const random = rng(3);
    for (let i = 0; i < 400; i++) checkRange(randomBounds(random), false, random);
  });

  test("huge and tiny bounds stay small", () => {
    for (const bounds of [
      { minimum: "1e300" },
      { maximum: "-1e300" },
      { exclusiveMinimum: "5e-324" },
      { exclusiveMinimum: "1e-300", exclusiveMaximum: "2e-300" },
      { minimum: "-1.7976931348623157e308", maximum: "1.7976931348623157e308" },
    ]) {
      const node = numberRangeNode(bounds)!;
      assert.ok(nodeSize(node) < 500, `${JSON.stringify(bounds)}: ${nodeSize(node)} nodes`);
      const dfa = compile(node);
      assert.ok(dfa.numStates < 2000, `${JSON.stringify(bounds)}: ${dfa.numStates} states`);
      checkRange(bounds, false, rng(4), [
        `0.${"0".repeat(323)}5`,
        `0.${"0".repeat(323)}4`,
        `0.${"0".repeat(323)}6`,
        `0.${"0".repeat(299)}1`,
      ]);
    }
    assert.throws(() => numberRangeNode({ exclusiveMinimum: "1e-500" }), /numeric bound too large/);
  });
});

describe("multipleOfNode", () => {
  const divisors = ["3", "11", "0.01", "2.5", "1e-3", "7", "0.5", "1", "10", "0.3", "1.5e1", "12.5", "0.0625", "1e2", "4e-1"];

  function texts(integer: boolean, random: () => number): string[] {
    const out = [...BAD_SYNTAX, "-0", "0.0", "-0.00"];
    for (let n = -260; n <= 260; n++) out.push(String(n));
    if (!integer) {
      for (let i = 0; i < 600; i++) out.push(randomText(random, false));
      for (let n = -30; n <= 30; n++)
        for (const f of ["0", "5", "50", "25", "01", "001", "0010", "3", "33", "0625", "06250", "75"]) out.push(`${n}.${f}`);
    }
    return out;
  }

  function checkContract(dfa: ByteDfa): void {
    assert.equal(dfa.byteClass.length, 256);
    assert.equal(dfa.next.length, dfa.numStates * dfa.numClasses);
    for (let s = 0; s < dfa.numStates; s++) {
      const d = dfa.minBytesToAccept[s]!;
      assert.ok(d >= 0, `state ${s} is dead`);
      assert.equal(d === 0, dfa.accepting[s] === 1);
      let best = Infinity;
      for (let c = 0; c < dfa.numClasses; c++) {
        const t = dfa.next[s * dfa.numClasses + c]!;
        assert.ok(t >= -1 && t < dfa.numStates);
        if (t >= 0) best = Math.min(best, dfa.minBytesToAccept[t]! + 1);
      }
      if (d > 0) assert.equal(d, best, `state ${s}'s distance`);
    }
  }

  test("membership against exact arithmetic", () => {
    const random = rng(5);
    for (const divisor of divisors) {
      for (const integer of [true, false]) {
        const dfa = multipleOfDfa(divisor, integer);
        checkContract(dfa);
        for (const t of texts(integer, random)) {
          assert.equal(
            matchesString(dfa, t),
            isMultiple(t, divisor, integer),
            `multipleOf ${divisor} (${integer ? "integer" : "number"}): ${t}`,
          );
        }
      }
    }
  });

  test("as a node it composes with the regex stage", () => {
    const node = multipleOfNode("2.5", false);
    assert.equal(node.kind, "dfa");
    const range = numberRangeNode({ minimum: "0", maximum: "10" })!;
    const both = compile({ kind: "concat", items: [{ kind: "set", set: [0x5b, 0x5b] }, node] });
    assert.equal(matchesString(both, "[7.50"), true);
    assert.equal(matchesString(both, "[7.51"), false);
    assert.ok(compile(range).numStates > 0);
  });

  test("huge divisors are refused, 100000 is not", () => {
    assert.throws(() => multipleOfNode("100001", true), /multipleOf too large/);
    assert.throws(() => multipleOfNode("1e6", false), /multipleOf too large/);
    assert.throws(() => multipleOfNode("0.100001", false), /multipleOf too large/);
    assert.throws(() => multipleOfNode("1e9999999", false), /multipleOf too large/);
    const dfa = multipleOfDfa("100000", true);
    for (const t of ["0", "-0", "100000", "-300000", "1000000"]) assert.equal(matchesString(dfa, t), true, t);
    for (const t of ["10000", "100001", "50000"]) assert.equal(matchesString(dfa, t), false, t);
  });
});
