// regex/ API: refusals (construct + position), complexity limits, ByteDfa invariants
// (live, minimal, minBytesToAccept, byte classes), UTF-8 handling, multi-pattern DFAs,
// the LRU cache and member sampling.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  REGEX_MAX_WORK,
  RegexCache,
  RegexSyntaxError,
  RegexTooComplexError,
  acceptedPatterns,
  acceptsPattern,
  canReachPattern,
  compileMultiRegex,
  compileRegex,
  matchesBytes,
  matchesString,
  sampleMember,
  sampleString,
  shortestCompletion,
  walkBytes,
  type ByteDfa,
} from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";
import { regexWorkOf } from "./support/regex-work.js";

function syntaxError(pattern: string | string[], flags?: string): RegexSyntaxError {
  try {
    compileRegex(pattern, { flags });
  } catch (err) {
    assert.ok(err instanceof RegexSyntaxError, `expected RegexSyntaxError for ${JSON.stringify(pattern)}, got ${err}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(pattern)} to be refused`);
}

test("non-regular constructs are refused with their name and position", () => {
  const cases: Array<[string, RegExp, number]> = [
    ["a\\1", /backreference/, 1],
    ["(a)b\\1", /backreference/, 4],
    ["(?P<x>a)(?P=x)", /backreference/, 8],
    ["(?<x>a)\\k<x>", /backreference/, 7],
    ["ab(?=cd)", /lookahead/, 2],
    ["(?!c|d+)d", /negative lookahead/, 0],
    ["a(?=b)(?!c)b", /lookahead combination/, 6],
    ["a(?=\\n)$\\n", /lookahead combination/, 0],
    ["x(?<=cd)", /lookbehind/, 1],
    ["x(?<!c+)", /negative lookbehind/, 1],
    ["x(?<!é)", /negative lookbehind/, 1], // only ASCII one-character lookbehind is supported
    ["(?>ab)", /atomic group/, 0],
    ["a*+", /possessive/, 2],
    ["a{2,3}+", /possessive/, 6],
    ["(a)(?(1)b|c)", /conditional/, 3],
    ["\\bfoo", /word boundary/, 0],
    ["foo\\B", /non-word boundary/, 3],
    ["😀é(?=ab)", /lookahead/, 2], // positions count code points, not UTF-16 units
    ["\\N{EM DASH}", /named character/, 0],
    ["\\p{L}", /property/, 0],
  ];
  for (const [pattern, construct, position] of cases) {
    const err = syntaxError(pattern);
    assert.match(err.construct ?? "", construct, pattern);
    assert.equal(err.position, position, pattern);
    assert.match(err.message, /not supported|supported only/, pattern);
  }
  // Single-character lookarounds are regular and supported.
  for (const [pattern, yes, no] of [
    ["a(?!b)[a-z]", "ac", "ab"],
    ['(?<!\\\\)"', '"', "x"],
    ["x(?=\\d)\\w", "x1", "xa"],
  ]) {
    const dfa = compileRegex(pattern!);
    assert.ok(matchesString(dfa, yes!), pattern);
    assert.ok(!matchesString(dfa, no!), pattern);
  }
});

test("malformed patterns are syntax errors at the positions Python reports", () => {
  const cases: Array<[string, number]> = [
    ["(ab", 0],
    ["ab)", 2],
    ["[ab", 0],
    ["*a", 0],
    ["a|?", 2],
    ["a**", 2],
    ["a{2}{3}", 4],
    ["[z-a]", 1],
    ["[\\d-z]", 1],
    ["\\q", 0],
    ["a{3,2}", 2],
    ["\\x4", 0],
    ["\\u12", 0],
    ["a\\", 1],
    ["^*", 1],
    ["a(?i)b", 1],
    ["(?z)", 1],
    ["(?P<1a>x)", 4],
    ["(?P<n>a)(?P<n>b)", 12],
    ["[]", 0],
    ["\\U00110000", 0],
  ];
  for (const [pattern, position] of cases) {
    assert.equal(syntaxError(pattern).position, position, pattern);
  }
  assert.equal(syntaxError("abc", "q").construct, "flag q");
  assert.equal(syntaxError("abc", "L").construct, "flag L");
  // An array pattern names the alternative at fault.
  assert.equal(syntaxError(["ok", "(?=xy)"]).alternative, 1);
});

test("patterns matching nothing are refused as an empty language", () => {
  for (const pattern of ["[^\\s\\S]", "a^b", "a\\Zb", "\\ud800", "[\\ud800-\\udfff]"]) {
    assert.equal(syntaxError(pattern).construct, "empty language", pattern);
  }
});

test("automata that would blow up are refused by a size cap after little counted work, never hang", () => {
  // The DFA state cap stops 2^26 subsets at 20,000 (about 1M units), far inside the work budget.
  let units = regexWorkOf(() =>
    assert.throws(
      () => compileRegex("(a|b)*a(a|b){25}"),
      (e: unknown) => e instanceof RegexTooComplexError && e.limit === "dfaStates",
    ),
  );
  assert.ok(units < REGEX_MAX_WORK / 40, `${units} units of work`);
  // The NFA state cap is checked on the syntax tree, before any automaton is built.
  units = regexWorkOf(() =>
    assert.throws(
      () => compileRegex("(?:a{1000}){1000}"),
      (e: unknown) => e instanceof RegexTooComplexError && e.limit === "nfaStates",
    ),
  );
  assert.ok(units < 1000, `${units} units of work`);
  assert.throws(() => compileRegex("((a{100}){100}){100}"), RegexTooComplexError);
  // Python also rejects stacked quantifiers: "multiple repeat".
  assert.equal(syntaxError("a{1000}{1000}").construct, "multiple repeat");
  const exponential = compileRegex("(x+x+)+y");
  assert.ok(matchesString(exponential, "xxxxy"));
  assert.ok(!matchesString(exponential, "xy"));
  assert.ok(!matchesString(exponential, "x".repeat(40)));
  // Limits are configurable.
  assert.throws(
    () => compileRegex("(a|b)*a(a|b){5}", { maxDfaStates: 16 }),
    (e: unknown) => e instanceof RegexTooComplexError && e.limit === "dfaStates",
  );
  assert.throws(() => compileRegex("a{50}", { maxNfaStates: 20 }), RegexTooComplexError);
  assert.throws(
    () => compileRegex("(a|b)*a(a|b){12}", { timeoutMs: 0 }),
    (e: unknown) => e instanceof RegexTooComplexError && e.limit === "time",
  );
  assert.equal(compileRegex("(a|b)*a(a|b){5}").numStates, 64);
  // Deep nesting is refused instead of overflowing the stack; moderate nesting works.
  assert.throws(
    () => compileRegex("(".repeat(5000) + "a" + ")".repeat(5000)),
    (e: unknown) => e instanceof RegexTooComplexError && e.limit === "nesting",
  );
  assert.ok(matchesString(compileRegex("(?:".repeat(150) + "a" + ")*".repeat(150)), "aaa"));
});

/** Checks every contract property of a ByteDfa, including minimality. */
function checkInvariants(dfa: ByteDfa, label: string): void {
  const { numStates, numClasses, next, byteClass, accepting, minBytesToAccept } = dfa;
  assert.equal(dfa.start, 0, label);
  assert.equal(byteClass.length, 256, label);
  assert.equal(next.length, numStates * numClasses, label);
  for (const c of byteClass) assert.ok(c < numClasses, label);
  for (let c = 0; c < numClasses; c++) assert.ok(byteClass.includes(c), `${label}: class ${c} unused`);
  for (const t of next) assert.ok(t >= -1 && t < numStates, label);
  // minBytesToAccept is the BFS distance to acceptance, and every state is live.
  for (let s = 0; s < numStates; s++) {
    let best = accepting[s] ? 0 : Infinity;
    for (let c = 0; c < numClasses; c++) {
      const t = next[s * numClasses + c]!;
      if (t >= 0) best = Math.min(best, minBytesToAccept[t]! + 1);
    }
    assert.equal(minBytesToAccept[s], best, `${label}: minBytesToAccept of ${s}`);
    assert.ok(best >= 0 && best < Infinity, label);
  }
  // Every state is reachable.
  const seen = new Uint8Array(numStates);
  const queue = [0];
  seen[0] = 1;
  while (queue.length) {
    const s = queue.pop()!;
    for (let c = 0; c < numClasses; c++) {
      const t = next[s * numClasses + c]!;
      if (t >= 0 && !seen[t]) {
        seen[t] = 1;
        queue.push(t);
      }
    }
  }
  assert.ok(
    seen.every((x) => x === 1),
    `${label}: unreachable state`,
  );
  // Minimal: Moore refinement from {accepting, rejecting} separates every state.
  let partition = Array.from(accepting, (a) => a);
  for (;;) {
    const keys = new Map<string, number>();
    const refined = partition.map((p, s) => {
      const key = [
        p,
        ...Array.from({ length: numClasses }, (_, c) => {
          const t = next[s * numClasses + c]!;
          return t < 0 ? -1 : partition[t];
        }),
      ].join(",");
      if (!keys.has(key)) keys.set(key, keys.size);
      return keys.get(key)!;
    });
    const done = new Set(refined).size === new Set(partition).size;
    partition = refined;
    if (done) break;
  }
  assert.equal(new Set(partition).size, numStates, `${label}: not minimal`);
  // Byte classes are not redundant: no two classes have identical columns.
  const columns = new Set<string>();
  for (let c = 0; c < numClasses; c++) {
    columns.add(Array.from({ length: numStates }, (_, s) => next[s * numClasses + c]).join(","));
  }
  assert.equal(columns.size, numClasses, `${label}: duplicate class columns`);
}

test("compiled DFAs are live, reachable, minimal, with exact minBytesToAccept", () => {
  const patterns = [
    "abc",
    "[a-z]+( [a-z]+)*",
    "[^\\n]*",
    "\\d{4}-\\d{2}-\\d{2}",
    "(?i)straße",
    "(cat|dog|bird)s?",
    ".{0,20}",
    "[\\u0100-\\U0010FFFF]+",
    "a$\\n?",
    "(?m)^a$\\n^b$",
    "(a|ab)(c|bcd)(d*)",
    "[^a]",
    "é|e",
    "x*",
  ];
  for (const p of patterns) checkInvariants(compileRegex(p), p);
});

test("the DFA runs on UTF-8 bytes: partial characters, invalid UTF-8 and surrogates", () => {
  const dfa = compileRegex("é+");
  const after = walkBytes(dfa, Uint8Array.of(0xc3));
  assert.ok(after >= 0);
  assert.equal(dfa.accepting[after], 0);
  assert.equal(dfa.minBytesToAccept[after], 1);
  assert.ok(matchesBytes(dfa, Uint8Array.of(0xc3, 0xa9, 0xc3, 0xa9)));
  const any = compileRegex("(?s).");
  assert.ok(matchesString(any, "\u{10ffff}"));
  assert.ok(matchesString(any, "\ud7ff"));
  assert.ok(matchesString(any, "\ue000"));
  for (const bad of [
    [0x80],
    [0xff],
    [0xc0, 0x80],
    [0xc1, 0xbf],
    [0xe0, 0x80, 0x80],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xf5, 0x80, 0x80, 0x80],
  ]) {
    assert.ok(!matchesBytes(any, Uint8Array.from(bad)), `accepted invalid UTF-8 ${bad.map((b) => b.toString(16))}`);
  }
  assert.ok(!matchesString(compileRegex("[^a]"), "\ud800")); // lone surrogate never matches
  assert.ok(matchesString(compileRegex("[^a]"), "😀"));
});

test("array patterns compile as the union of their alternatives", () => {
  const dfa = compileRegex(["\\d+", "yes|no", "(?i)maybe"]);
  for (const s of ["123", "yes", "no", "MAYBE", "mAyBe"]) assert.ok(matchesString(dfa, s), s);
  for (const s of ["", "12a", "YES", "maybee"]) assert.ok(!matchesString(dfa, s), s);
});

test("multi-pattern DFA reports which patterns accept in each state", () => {
  const patterns = ["if", "[a-z]+", "[0-9]+", { source: "IF", flags: "i" }, "[^\\s\\S]", " +"];
  const dfa = compileMultiRegex(patterns);
  const stateAfter = (text: string): number => walkBytes(dfa, new TextEncoder().encode(text));
  assert.deepEqual(acceptedPatterns(dfa, stateAfter("if")), [0, 1, 3]);
  assert.deepEqual(acceptedPatterns(dfa, stateAfter("iF")), [3]);
  assert.deepEqual(acceptedPatterns(dfa, stateAfter("abc")), [1]);
  assert.deepEqual(acceptedPatterns(dfa, stateAfter("42")), [2]);
  assert.deepEqual(acceptedPatterns(dfa, stateAfter("   ")), [5]);
  assert.equal(stateAfter("a1"), -1);
  assert.ok(acceptsPattern(dfa, stateAfter("if"), 3));
  assert.ok(!acceptsPattern(dfa, stateAfter("if"), 2));
  assert.equal(dfa.accepting[dfa.start], 0);
  // reachMask: which patterns can still complete from a state.
  const reachable = (state: number): number[] => patterns.map((_, p) => p).filter((p) => canReachPattern(dfa, state, p));
  assert.deepEqual(reachable(dfa.start), [0, 1, 2, 3, 5]);
  assert.deepEqual(reachable(stateAfter("i")), [0, 1, 3]);
  assert.deepEqual(reachable(stateAfter("I")), [3]);
  assert.deepEqual(reachable(stateAfter("if")), [1, 3].concat([0]).sort());
  assert.deepEqual(reachable(stateAfter("ifx")), [1]);
  assert.deepEqual(reachable(stateAfter("4")), [2]);
  for (let s = 0; s < dfa.numStates; s++) {
    assert.equal(dfa.accepting[s], acceptedPatterns(dfa, s).length > 0 ? 1 : 0);
    assert.ok(dfa.minBytesToAccept[s]! >= 0);
  }
  // More than 32 patterns: acceptance spans several words; agrees with per-pattern DFAs.
  const words = Array.from({ length: 70 }, (_, i) => `w${i}(x{${i % 3}})`);
  const big = compileMultiRegex(words);
  assert.equal(big.acceptWords, 3);
  const singles = words.map((w) => compileRegex(w));
  const rng = seededRandom(5);
  for (let i = 0; i < 200; i++) {
    const text = `w${Math.floor(rng() * 80)}${"x".repeat(Math.floor(rng() * 3))}`;
    const state = walkBytes(big, new TextEncoder().encode(text));
    const expected = singles.flatMap((d, p) => (matchesString(d, text) ? [p] : []));
    assert.deepEqual(state >= 0 ? acceptedPatterns(big, state) : [], expected, text);
  }
  assert.equal(syntaxErrorMulti(["a", "b(", "c"]).alternative, 1);
});

test("sets of literal patterns (built as a trie) give the very DFA the general construction gives", () => {
  // `(?:lit){1}` is the same language through the NFA and the subset construction; the literal
  // path must agree field for field (state numbering and byte classes included).
  const dump = (d: object): string =>
    JSON.stringify(Object.entries(d).map(([k, v]) => [k, ArrayBuffer.isView(v) ? [...(v as Int32Array)] : v]));
  const pieces = ["a", "b", "ab", "\\(", "\\)", "\\.", "é", "€", "😀", "\\n", " ", "\\\\", ""];
  const rng = seededRandom(11);
  for (let i = 0; i < 400; i++) {
    const literals = Array.from({ length: 1 + Math.floor(rng() * 6) }, () => {
      let s = "";
      for (let n = Math.floor(rng() * 4); n > 0; n--) s += pieces[Math.floor(rng() * pieces.length)];
      return s;
    });
    const viaTrie = compileMultiRegex(literals);
    const general = compileMultiRegex(literals.map((l) => `(?:${l}){1}`));
    assert.equal(dump(viaTrie), dump(general), JSON.stringify(literals));
  }
  // With classes of ASCII bytes among them (a grammar's `"a".."z"`, case-folded ones included):
  // built from the trie too, and still the general construction's DFA.
  const classes = ["[a-z]", "[ab]", "[0-9a-f]", "[xyz]", "[A-Z]", "[a-z]", "[\\x00-\\x7f]", "[b-d]", "[^\\s\\S]"];
  for (let i = 0; i < 400; i++) {
    const patterns: (string | { source: string; flags: string })[] = Array.from({ length: 1 + Math.floor(rng() * 6) }, () => {
      if (rng() < 0.5) return classes[Math.floor(rng() * classes.length)]!;
      let s = "";
      for (let n = Math.floor(rng() * 4); n > 0; n--) s += pieces[Math.floor(rng() * pieces.length)];
      return s;
    });
    if (rng() < 0.2) patterns.push({ source: "[a-c]", flags: "i" });
    const general = patterns.map((p) => (typeof p === "string" ? `(?:${p}){1}` : { source: `(?:${p.source}){1}`, flags: p.flags }));
    assert.equal(dump(compileMultiRegex(patterns)), dump(compileMultiRegex(general)), JSON.stringify(patterns));
  }
  // A trie larger than the DFA limit still fails as the general construction does.
  assert.throws(() => compileMultiRegex(["x".repeat(30), "y".repeat(30)], { maxDfaStates: 40 }), RegexTooComplexError);
});

function syntaxErrorMulti(patterns: string[]): RegexSyntaxError {
  try {
    compileMultiRegex(patterns);
  } catch (err) {
    assert.ok(err instanceof RegexSyntaxError);
    return err;
  }
  assert.fail("expected a syntax error");
}

test("RegexCache is a bounded LRU keyed by pattern and flags, caching refusals", () => {
  const cache = new RegexCache(2);
  const a = cache.compile("[a-z]+");
  assert.equal(cache.compile("[a-z]+"), a);
  const folded = cache.compile("[a-z]+", { flags: "i" });
  assert.notEqual(folded, a);
  assert.equal(cache.compile("[a-z]+"), a); // now "[a-z]+" with i is the least recently used
  cache.compile("\\d+");
  assert.equal(cache.size, 2);
  assert.equal(cache.compile("[a-z]+"), a);
  assert.notEqual(cache.compile("[a-z]+", { flags: "i" }), folded); // was evicted, compiled afresh
  let first: unknown;
  let second: unknown;
  try {
    cache.compile("(?=x)");
  } catch (e) {
    first = e;
  }
  try {
    cache.compile("(?=x)");
  } catch (e) {
    second = e;
  }
  assert.ok(first instanceof RegexSyntaxError);
  assert.equal(second, first);
});

test("sampled members are accepted, within budget, and reproducible", () => {
  for (const p of ["[a-z]+@[a-z]+\\.com", "(?i)straße|[à-ÿ]{2,5}", "\\d{3}-\\d{4}", "[^\\x00-\\x7f]+", "(a|b)*c"]) {
    const dfa = compileRegex(p);
    const rng = seededRandom(42);
    for (let i = 0; i < 50; i++) {
      const bytes = sampleMember(dfa, rng, { maxBytes: 16 })!;
      assert.ok(matchesBytes(dfa, bytes), p);
      assert.ok(bytes.length <= Math.max(16, dfa.minBytesToAccept[0]!), p);
    }
    assert.equal(sampleString(dfa, seededRandom(9)), sampleString(dfa, seededRandom(9)));
  }
  const long = compileRegex("a{40}");
  assert.equal(sampleString(long, seededRandom(1), { maxBytes: 5 }), "a".repeat(40));
});

test("shortestCompletion follows minBytesToAccept to acceptance", () => {
  const dfa = compileRegex("\\d{3}-[a-z]{2}|zz");
  const decode = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));
  assert.equal(decode(shortestCompletion(dfa)), "zz");
  const state = walkBytes(dfa, new TextEncoder().encode("12"));
  assert.equal(decode(shortestCompletion(dfa, state)), "0-aa");
  assert.equal(shortestCompletion(dfa, -1), null);
  const utf8 = compileRegex("é");
  assert.deepEqual(Array.from(shortestCompletion(utf8, walkBytes(utf8, Uint8Array.of(0xc3)))!), [0xa9]);
});

test("compile options carry Python flags", () => {
  assert.ok(matchesString(compileRegex("a.b", { flags: "s" }), "a\nb"));
  assert.ok(!matchesString(compileRegex("a.b"), "a\nb"));
  assert.ok(matchesString(compileRegex("ABC", { flags: "i" }), "abc"));
  assert.ok(matchesString(compileRegex("a b # comment", { flags: "x" }), "ab"));
  assert.ok(matchesString(compileRegex("a$\\n^b", { flags: "m" }), "a\nb"));
  assert.ok(!matchesString(compileRegex("k", { flags: "ia" }), "\u212a"));
  assert.ok(matchesString(compileRegex("k", { flags: "i" }), "\u212a"));
});
