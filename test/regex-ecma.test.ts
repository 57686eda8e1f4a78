// regex/ecma.ts: ECMA-262 patterns (JSON Schema's dialect) against the engine itself. For
// hand-picked real-world patterns and random ones from a small grammar, the compiled search
// DFA must agree with `new RegExp(p, "u").test(s)` (and the full-match DFA with ^(?:p)$) on
// edge strings, random strings, members the DFA samples and near misses; refusals name their
// construct.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  annexBReason,
  RegexSyntaxError,
  RegexTooComplexError,
  compileRegexNode,
  ecmaFullMatchNode,
  ecmaSearchNode,
  matchesString,
  sampleString,
  type ByteDfa,
} from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";

const LIMITS = { maxDfaStates: 50_000, timeoutMs: 20_000 };

const HAND_PICKED = [
  "^[a-z0-9-]+$",
  "^\\d{4}-\\d{2}-\\d{2}$",
  "[A-Z]",
  "^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$",
  "^\\S+@\\S+$",
  "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$",
  "^https?://[^/]+(/.*)?$",
  "^[a-zA-Z_][a-zA-Z0-9_]*$",
  "^#[0-9a-fA-F]{6}$",
  "^(?:[01]\\d|2[0-3]):[0-5]\\d$",
  "^\\+?[1-9]\\d{1,14}$",
  "^[A-Z]{2}\\d{2}[A-Z0-9]{1,30}$",
  "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$",
  "^x-",
  "^x-.*$",
  "$",
  "^",
  "",
  "a$",
  "^$",
  "^.$",
  "^..$",
  ".",
  "^.*$",
  "é+",
  "^😀{2}$",
  "[😀-😂]",
  "^[^a]$",
  "^[^😀]+$",
  "\\bfoo\\b",
  "\\Bar",
  "^\\w+\\b",
  "^\\s*$",
  "^\\S*$",
  "^\\D\\W$",
  "^[\\d\\s]+$",
  "^[^\\d\\s]+$",
  "^[\\w-]+$",
  "[\\-a]",
  "^[a-]$",
  "^[-a]$",
  "^[%--]$",
  "^[]$",
  "^[^]$",
  "\\u00e9",
  "^\\u{1F600}$",
  "^\\uD83D\\uDE00$",
  "^\\x41\\cJ\\0$",
  "^\\t\\n\\v\\f\\r$",
  "^[\\b]$",
  "\\/\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\",
  "a+?b*?c??d{2,3}?",
  "(?<year>\\d{4})-(?<month>\\d{2})",
  "(a|b|)c",
  "^(ab)*$",
  "^(a{2}){2,}$",
  "^a{0}b$",
  "^a{3,}$",
  "(?=a)[a-z]",
  "a(?!b)",
  "(?<=a)b",
  '(?<!\\\\)"',
  "^(?![0-9])\\w+$",
  "^\\p{L}+$",
  "\\p{Lu}",
  "^[^\\p{N}]*$",
  "\\P{Script=Latin}",
  "^[\\p{L}\\p{N}_-]+$",
  "\\p{Emoji_Presentation}",
  "^[\\s\\S]$",
  "^[\\u{1F600}-\\u{1F64F}]+$",
  "^\\cA[\\cZ]$",
  "^\\u{10FFFF}$",
  "^[^\\W\\d]+$",
  "^\\x7f[\\x00-\\x1f]$",
  "(?<![^a])b",
  "(?=[^\\d])\\D$",
  "^[\\d-]$",
];

/** Characters the random strings are drawn from: ASCII classes, line terminators, non-BMP. */
const CHARS = [
  "a",
  "b",
  "c",
  "x",
  "A",
  "Z",
  "0",
  "9",
  "-",
  "_",
  " ",
  "\t",
  "\n",
  "\r",
  "\u2028",
  "\u00a0",
  "\ufeff",
  "é",
  "Ω",
  "ж",
  "中",
  "٣",
  "Ⅻ",
  "😀",
  "😂",
  "@",
  ".",
  "/",
  "\\",
  '"',
  "(",
  ")",
];

/**
 * The engine's verdict as the spec defines test(): a match attempted at each code point boundary
 * (a sticky RegExp at each). V8's own test() also tries the middle of a surrogate pair, where \B
 * can hold (`/\B/u.exec("G😀A").index` is 2); the DFA follows the spec there.
 */
function oracle(pattern: string, full: boolean): { test(s: string): boolean } {
  const rx = new RegExp(full ? `^(?:${pattern})$` : pattern, "uy");
  return {
    test(s: string): boolean {
      for (let i = 0; i <= s.length; i += i < s.length && s.codePointAt(i)! > 0xffff ? 2 : 1) {
        rx.lastIndex = i;
        if (rx.test(s)) return true;
      }
      return false;
    },
  };
}

/** Edge strings, random strings, the DFA's own members and their one-character mutations. */
function probes(dfa: ByteDfa, pattern: string, random: () => number): string[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const own = Array.from(pattern.replace(/\\[a-zA-Z]|[\\^$.*+?()[\]{}|]/g, ""));
  const alphabet = [...CHARS, ...own];
  const out = ["", "\n", "a\n", "\na", "\r\n", "😀", "x-", "2020-01-02", "a@b.c", "(555)123-4567", "foo bar", "Ωmega"];
  for (let i = 0; i < 60; i++) out.push(Array.from({ length: Math.floor(random() * 8) }, () => pick(alphabet)).join(""));
  for (let i = 0; i < 30; i++) {
    const member = sampleString(dfa, random, { maxBytes: 16 });
    if (member === null) break;
    const chars = Array.from(member);
    out.push(member);
    const at = Math.floor(random() * (chars.length + 1));
    const mutations = [
      [...chars.slice(0, at), pick(alphabet), ...chars.slice(at)],
      [...chars.slice(0, at), ...chars.slice(at + 1)],
      [...chars.slice(0, at), pick(alphabet), ...chars.slice(at + 1)],
    ];
    for (const m of mutations) out.push(m.join(""));
  }
  return out;
}

/** Compares both readings of `pattern` with the engine; false when the DFA is refused as too big. */
function agreeWithEngine(pattern: string, random: () => number): boolean {
  for (const full of [false, true]) {
    let dfa: ByteDfa;
    try {
      dfa = compileRegexNode(full ? ecmaFullMatchNode(pattern) : ecmaSearchNode(pattern), LIMITS);
    } catch (err) {
      if (err instanceof RegexTooComplexError || (err instanceof RegexSyntaxError && err.construct === "lookahead combination"))
        return false;
      throw err;
    }
    const rx = oracle(pattern, full);
    for (const s of probes(dfa, pattern, random)) {
      assert.equal(matchesString(dfa, s), rx.test(s), `${full ? "full match" : "search"} /${pattern}/u on ${JSON.stringify(s)}`);
    }
  }
  return true;
}

test("hand-picked patterns agree with RegExp(p, 'u').test", () => {
  const random = seededRandom(1);
  for (const pattern of HAND_PICKED) assert.ok(agreeWithEngine(pattern, random), `/${pattern}/ was refused`);
});

/** A random pattern from a small grammar over the constructs ecma.ts reads. */
function randomPattern(random: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  let names = 0;
  const atoms = [
    "a",
    "b",
    "x",
    "-",
    "é",
    "😀",
    ".",
    "\\d",
    "\\w",
    "\\s",
    "\\D",
    "\\W",
    "\\S",
    "[a-c]",
    "[^a]",
    "[^\\s]",
    "[\\w-]",
    "[é😀x]",
    "\\.",
    "\\n",
    "\\u{1F600}",
  ];
  const assertions = ["^", "$", "\\b", "\\B", "(?=a)", "(?!\\d)", "(?<=a)", "(?<!b)"];
  const quantifiers = ["", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "+?", "??", "{1,2}?"];
  // Groups get bounded counts: nested unbounded ones make the engine backtrack for minutes.
  const groupQuantifiers = ["", "", "?", "{2}", "{0,2}", "??", "{1,2}?"];
  const term = (depth: number): string => {
    const r = random();
    if (r < 0.12) return pick(assertions);
    if (r > 0.8 && depth < 2) {
      const inner = disjunction(depth + 1);
      return pick([`(?:${inner})`, `(${inner})`, `(?<g${names++}>${inner})`]) + pick(groupQuantifiers);
    }
    return pick(atoms) + pick(quantifiers);
  };
  const alternative = (depth: number): string => Array.from({ length: 1 + Math.floor(random() * 4) }, () => term(depth)).join("");
  const disjunction = (depth: number): string => (random() < 0.25 ? `${alternative(depth)}|${alternative(depth)}` : alternative(depth));
  return disjunction(0);
}

test("random patterns agree with RegExp(p, 'u').test", () => {
  const random = seededRandom(42);
  let compared = 0;
  const total = 300;
  for (let i = 0; i < total; i++) {
    const pattern = randomPattern(random);
    if (agreeWithEngine(pattern, random)) compared++;
  }
  // Refusals (two lookaheads at one place, too many states) must stay the exception.
  assert.ok(compared > total * 0.85, `only ${compared} of ${total} random patterns compiled`);
});

test("V8's test() and the spec differ only where the oracle says: in a surrogate pair", () => {
  assert.equal(/\B/u.test("G😀A"), true);
  assert.equal(oracle("\\B", false).test("G😀A"), false);
  assert.equal(matchesString(compileRegexNode(ecmaSearchNode("\\B")), "G😀A"), false);
  assert.equal(oracle("^a😀", false).test("a😀"), /^a😀/u.test("a😀"));
});

test("\\s, . and \\p agree with the engine on every code point of the BMP", () => {
  for (const pattern of ["^\\s$", "^.$", "^\\w$", "^[^\\S\\n]$", "^\\p{Lu}$"]) {
    const dfa = compileRegexNode(ecmaSearchNode(pattern), LIMITS);
    const rx = oracle(pattern, false);
    for (let cp = 0; cp < 0x10000; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue; // lone surrogates are not UTF-8 text
      const s = String.fromCodePoint(cp);
      if (matchesString(dfa, s) !== rx.test(s)) assert.fail(`/${pattern}/u on U+${cp.toString(16)}`);
    }
  }
});

function refusal(pattern: string): RegexSyntaxError {
  try {
    compileRegexNode(ecmaSearchNode(pattern));
  } catch (err) {
    assert.ok(err instanceof RegexSyntaxError, `expected RegexSyntaxError for /${pattern}/, got ${err}`);
    return err;
  }
  assert.fail(`expected /${pattern}/ to be refused`);
}

test("refusals name their construct", () => {
  const cases: Array<[string, string, number]> = [
    ["(a)\\1", "backreference \\1", 3],
    ["(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", "backreference \\10", 30],
    ["(?<n>a)\\k<n>", "backreference \\k<name>", 7],
    ["(?=ab)", "lookahead (?=", 0],
    ["x(?!ab)", "negative lookahead (?!", 1],
    ["(?<=ab)c", "lookbehind (?<=", 0],
    ["(?<!é)c", "negative lookbehind (?<!", 0],
    ["\\b\\B", "lookahead combination", 2],
    ["(?<n>a)(?<n>b)", "invalid pattern", 0],
    ["a**", "invalid pattern", 0],
    // Written for the u flag (\p{…}, \u{…}): not read as Annex B's "p{…}".
    ["\\p{NotAProperty}", "invalid pattern", 0],
    ["\\-\\u{110000}", "invalid pattern", 0],
    ["(", "invalid pattern", 0],
    // Annex B readings refuse what depends on more than characters.
    ["(x)\\-\\2", "backreference \\2", 5],
    ["\\-\\uD800", "lone surrogate escape \\u", 2],
  ];
  for (const [pattern, construct, position] of cases) {
    const err = refusal(pattern);
    assert.equal(err.construct, construct, `/${pattern}/: ${err.message}`);
    assert.equal(err.position, position, `/${pattern}/: ${err.message}`);
  }
});

/** The engine's verdict without the u flag, at each UTF-16 index (the probes are BMP only). */
function oracleAnnexB(pattern: string, full: boolean): { test(s: string): boolean } {
  const rx = new RegExp(full ? `^(?:${pattern})$` : pattern, "y");
  return {
    test(s: string): boolean {
      for (let i = 0; i <= s.length; i++) {
        rx.lastIndex = i;
        if (rx.test(s)) return true;
      }
      return false;
    },
  };
}

/** Compares a pattern valid only without u (read with Annex B's syntax) with the engine on BMP probes. */
function agreeWithEngineAnnexB(pattern: string, random: () => number): boolean {
  assert.ok(annexBReason(pattern) !== null, `/${pattern}/ should be read with Annex B's syntax`);
  for (const full of [false, true]) {
    let dfa: ByteDfa;
    try {
      dfa = compileRegexNode(full ? ecmaFullMatchNode(pattern) : ecmaSearchNode(pattern), LIMITS);
    } catch (err) {
      if (err instanceof RegexTooComplexError || (err instanceof RegexSyntaxError && err.construct !== "invalid pattern")) return false;
      throw err;
    }
    const rx = oracleAnnexB(pattern, full);
    for (const s of probes(dfa, pattern, random).filter((p) => !/[\u{10000}-\u{10FFFF}]/u.test(p))) {
      assert.equal(matchesString(dfa, s), rx.test(s), `${full ? "full match" : "search"} /${pattern}/ (no u) on ${JSON.stringify(s)}`);
    }
  }
  return true;
}

/** Patterns real schemas write that only the engine's reading without u accepts (MaskBench). */
const ANNEX_B_HAND_PICKED = [
  "^4\\-.*",
  "^Agenda\\:[0-9]+$",
  "^PUBMED:\\{d}",
  "^[[a-z]*[-]?[a-z]*]*$",
  "^mailto:[\\w\\_\\~\\!\\$\\&\\'\\(\\)\\*\\+\\,\\;\\=\\:.-]+@[\\w.-]+\\.[\\w.-]+?$",
  "^[ !\"#$%&\\'()*+,\\-./0-9:;<=>?@A-Z\\[\\\\\\]\\^_`a-z{\\|}]+$",
  "(^\\d{4}-\\d{2}\\:\\d{2}$)",
  "a{",
  "x{1,",
  "a}b]",
  "\\1",
  "\\012\\8",
  "[\\w-a]",
  "[a-\\d]",
  "\\x4\\uZZ\\e\\q",
  "\\c1\\cA[\\c1]",
  "\\k\\-",
];

test("patterns valid only without u are read as the engine reads them then (Annex B)", () => {
  const random = seededRandom(3);
  for (const pattern of ANNEX_B_HAND_PICKED) assert.ok(agreeWithEngineAnnexB(pattern, random), `/${pattern}/ was refused`);
  // Valid under u: read under u, whatever Annex B would say.
  assert.equal(annexBReason("^[a-z]+\\.$"), null);
  assert.equal(annexBReason("\\u{4}"), null);
  const random2 = seededRandom(77);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random2() * xs.length)]!;
  const atoms = [
    "a",
    "b",
    "-",
    ".",
    "\\d",
    "\\w",
    "[a-c]",
    "[^a]",
    "\\-",
    "\\:",
    "\\e",
    "{",
    "}",
    "]",
    "\\8",
    "\\01",
    "\\x4",
    "[\\w-b]",
    "[a-\\d]",
    "\\cA",
    "\\c-",
  ];
  const quantifiers = ["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}"];
  let compared = 0;
  for (let i = 0; i < 200; i++) {
    const length = 1 + Math.floor(random2() * 5);
    let pattern = Array.from({ length }, () => pick(atoms) + pick(quantifiers)).join("");
    if (random2() < 0.2) pattern = `(?:${pattern})|${pick(atoms)}`;
    if (annexBReason(pattern) === null) continue; // valid under u (or invalid either way)
    if (agreeWithEngineAnnexB(pattern, random2)) compared++;
  }
  assert.ok(compared > 100, `only ${compared} Annex B patterns compared`);
});

test("huge counts and deep nesting are refused as too complex", () => {
  assert.throws(
    () => compileRegexNode(ecmaSearchNode("a{99999999}")),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "nfaStates",
  );
  assert.throws(
    () => ecmaSearchNode("(".repeat(300) + "a" + ")".repeat(300)),
    (err: unknown) => err instanceof RegexTooComplexError && err.limit === "nesting",
  );
});
