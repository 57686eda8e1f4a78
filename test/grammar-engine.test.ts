// Unit behaviour of the grammar stage: grammar-text errors, LALR tables, Lark's lexing subtleties
// (terminal order, literal/regexp collisions, priorities), and the incremental byte automaton.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileGrammar, GrammarError } from "../src/grammar/index.js";
import { parses } from "../src/grammar/testing.js";
import { GrammarAutomaton } from "../src/grammar/index.js";
import { topAlternatives } from "../src/grammar/testing.js";
import { compileRegex, compileRegexNode, lowerSyntax, matchesString, readRegexSyntax, RegexSyntaxError } from "../src/regex/index.js";
import { parsePyRegex, regexWidth, toJsRegExp, MAXREPEAT } from "../src/grammar/testing.js";
import { evalEscaping } from "../src/grammar/testing.js";

const refusal = (source: string): GrammarError => {
  try {
    compileGrammar(source);
  } catch (e) {
    assert.ok(e instanceof GrammarError, `expected GrammarError, got ${String(e)}`);
    return e;
  }
  assert.fail("grammar was accepted");
};

test("malformed grammar text is refused with line and column", () => {
  const e = refusal('start: "a"\nfoo: ( "b"\n');
  assert.equal(e.line, 2);
  assert.equal(e.column, 11);
  const e2 = refusal('start: "a"\n  x: "b" @\n');
  assert.equal(e2.line, 2);
  assert.match(e2.message, /Unexpected input at line 2 column 10/);
  assert.match(refusal("start: b\n").message, /Rule 'b' used but not defined \(in rule start\)/);
});

test("LALR refusals name the rules as Lark does", () => {
  assert.match(refusal('start: a | b\na: "x"\nb: "x"\n').message, /Reduce\/Reduce collision in Terminal\('\$END'\)[^]*<a : X>[^]*<b : X>/);
  assert.match(refusal('start: [b] [b]\nb: "b"\n').message, /Rules defined twice/);
  assert.match(refusal("start: A\nA: /a*/\n").message, /zero-width terminals. \(A: 'a\*'\)/);
  assert.match(refusal("%declare X\nstart: X\n").message, /%declare/);
  assert.match(refusal("%import .foo.BAR\nstart: BAR\n").message, /Relative %import/);
  // Rule priority resolves the reduce/reduce collision like Lark.
  assert.equal(parses(compileGrammar('start: a | b\na.2: X\nb: X\nX: "x"\n'), "x"), true);
});

test("LALR table is typed arrays with one action row per state", () => {
  const g = compileGrammar('start: "(" start ")" | "x"\n');
  const t = g.table;
  assert.ok(t.action instanceof Int32Array && t.goto instanceof Int32Array);
  assert.equal(t.action.length, t.numStates * t.terminals.length);
  assert.equal(t.goto.length, t.numStates * t.nonterminals.length);
  assert.equal(t.terminals[0], "$END");
  assert.deepEqual(
    ["((x))", "x", "(x", "()", ""].map((s) => parses(g, s)),
    [true, true, false, false, false],
  );
});

test("palindrome with a range middle: letters that are also literals are never the middle", () => {
  const g = compileGrammar('start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "a".."z"\n');
  // MID ('[a-z]') matches "a" and "b" exactly, so Lark's unless-callback retypes those tokens to
  // the literals: the middle can only be c..z (verified against Lark 1.1.5).
  assert.deepEqual(
    ["a", "c", "aba", "aca", "bab", "bcb", "abcba", ""].map((s) => parses(g, s)),
    [false, true, false, true, false, true, true, false],
  );
});

test("keywords matched by a regexp terminal are retyped (Lark's unless) per parser state", () => {
  const g = compileGrammar('start: stmt*\nstmt: "if" NAME ":" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "\n');
  assert.equal(parses(g, "if x : y"), true);
  assert.equal(parses(g, "iff = y"), true);
  assert.equal(parses(g, "if = y"), false); // "if" is the keyword here, not a NAME
  // After "=", only NAME is acceptable: that state's lexer does not know "if" (contextual).
  assert.equal(parses(g, "x = if"), true);
});

test("first matching terminal wins with its own Python preference, not the longest match", () => {
  const g = compileGrammar("start: T+\nT: /a|ab|abc/\n");
  assert.equal(parses(g, "aaa"), true);
  assert.equal(parses(g, "ab"), false); // /a|ab|abc/ matches "a", then "b" cannot be lexed
  const lazy = compileGrammar('start: C\nC: "/*" /(.|\\n)*?/ "*/"\n');
  assert.equal(parses(lazy, "/* a */"), true);
  assert.equal(parses(lazy, "/* a */ */"), false);
});

test("terminal priorities reorder the contextual lexer", () => {
  const g = compileGrammar('start: (A | B | WORD)+\nA.2: "ab"\nB: /a[a-z]/\n%import common.WORD\n%ignore " "\n');
  assert.equal(parses(g, "ab ac abc"), true);
  const low = compileGrammar('start: (IF | NAME)+\nIF.-1: "if"\nNAME: /[a-z]+/\n%ignore " "\n');
  assert.equal(parses(low, "if x"), true);
});

test("templates, %override, %extend and common imports compile", () => {
  const g = compileGrammar(
    'start: _sep{item, ","}\n_sep{x, s}: x (s x)*\nitem: WORD | NUM\n%import common.WORD\n%import common.SIGNED_NUMBER -> NUM\n%ignore " "\n',
  );
  assert.equal(parses(g, "a, -1.5e3 ,b"), true);
  assert.equal(parses(g, "a,,b"), false);
  const o = compileGrammar('start: a\na: "x"\n%override a: "y"\n');
  assert.deepEqual([parses(o, "x"), parses(o, "y")], [false, true]);
  const e = compileGrammar('start: KW+\nKW: "if"\n%extend KW: "else"\n%ignore " "\n');
  assert.equal(parses(e, "if else if"), true);
});

test("python-re helpers: widths, escapes, JS translation", () => {
  assert.deepEqual(regexWidth(parsePyRegex("ab?c{2,3}")), [3, 5]);
  assert.deepEqual(regexWidth(parsePyRegex("a+")), [1, MAXREPEAT]);
  assert.deepEqual(regexWidth(parsePyRegex("(?<!x)a")), [1, 1]);
  const re = toJsRegExp(parsePyRegex("(?i:ab)c"));
  re.lastIndex = 0;
  assert.equal(re.exec("ABc")?.[0], "ABc");
  assert.equal(evalEscaping("a\\tb\\\\"), "a\tb\\\\");
  // The scanner's alternatives, each as the probes it matches: through non-capturing and
  // scoped-flag groups (keeping the flags), not through a capturing one.
  const alternatives = (src: string, probes: string[]): string[][] =>
    topAlternatives(parsePyRegex(src).root).map((alt) => {
      const dfa = compileRegexNode(lowerSyntax(alt));
      return probes.filter((p) => matchesString(dfa, p));
    });
  assert.deepEqual(alternatives("(?:(?:a|ab)|abc)", ["a", "ab", "abc"]), [["a"], ["ab"], ["abc"]]);
  assert.deepEqual(alternatives("(?i:x|y)", ["x", "X", "y", "Y"]), [
    ["x", "X"],
    ["y", "Y"],
  ]);
  assert.deepEqual(alternatives("[|]|\\|", ["|", "\\"]), [["|"], ["|"]]);
  assert.deepEqual(alternatives("(a|b)", ["a", "b"]), [["a", "b"]]);
  assert.deepEqual(alternatives("(?x) a | b  # comment", ["a", "b"]), [["a"], ["b"]]);
});

test("one reader of Python re text: user patterns, and Lark terminals read exactly as Python 3.11", () => {
  // The JS spelling of a named group is a user-pattern extension; Python (so Lark) refuses it.
  assert.ok(matchesString(compileRegex("(?<y>a)b"), "ab"));
  assert.throws(() => parsePyRegex("(?<y>a)b"), /unknown extension \?<y/);
  // Python checks backreferences and lookbehind widths as it reads ...
  assert.throws(() => parsePyRegex("(a\\1)"), /cannot refer to an open group/);
  assert.throws(() => parsePyRegex("(a)\\2"), /invalid group reference 2/);
  assert.throws(() => parsePyRegex("(?<=a+)b"), /look-behind requires fixed-width pattern/);
  assert.equal(parsePyRegex("(?P<n>a)(?P=n)").root.k, "seq");
  // ... and in a user pattern the lowering refuses what a DFA cannot express, by name.
  assert.throws(
    () => compileRegex("(a)\\2"),
    (e: unknown) => e instanceof RegexSyntaxError && e.construct === "backreference \\2" && e.position === 3,
  );
  // The tree keeps what the automaton drops: capturing groups and lazy quantifiers.
  const { root, groupCount } = readRegexSyntax("(a+?)|b", { python: true });
  assert.equal(groupCount, 1);
  const first = root.k === "alt" ? root.alts[0] : undefined;
  assert.ok(first?.k === "group" && first.body.k === "rep" && first.body.lazy);
  // Positions count code points, as Python's re.error.pos (an astral character is one).
  assert.throws(() => parsePyRegex("\u{1F600}("), /missing \), unterminated subpattern at position 1 in/);
});

test("incremental automaton: next bytes, completeness, ignore-run limit, minimal completion", () => {
  const g = compileGrammar('start: value\nvalue: "[" [value ("," value)*] "]" | INT\n%import common.INT\n%import common.WS\n%ignore WS\n');
  const a = new GrammarAutomaton(g, { maxIgnoredRun: 2 });
  const s = a.walk(a.start, "[1, [2");
  assert.ok(s >= 0);
  assert.equal(a.isComplete(s), false);
  const next = new Set(a.allowedBytes(s).map((b) => String.fromCharCode(b)));
  for (const c of ["]", ",", "3", " "]) assert.ok(next.has(c), c);
  assert.ok(!next.has("[") && !next.has("x"));
  assert.equal(a.minBytesToComplete(s), 2);
  assert.equal(a.isComplete(a.walk(s, "]]")), true);
  // States are plain integers: "cloning" is copying the number; stepping is pure and memoized.
  assert.equal(a.step(s, 0x5d), a.step(s, 0x5d));
  assert.ok(a.walk(a.start, "[1,  2]") >= 0);
  assert.equal(a.walk(a.start, "[1,   2]"), -1); // three ignored spaces exceed the limit of 2
  assert.equal(a.walk(a.start, "[1 2]"), -1);
  // Keyword retyping and first-match order hold byte by byte too.
  const kw = new GrammarAutomaton(compileGrammar('start: stmt*\nstmt: "if" NAME ":" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "\n'), {
    maxIgnoredRun: 4,
  });
  assert.equal(kw.isComplete(kw.walk(kw.start, "if x : y")), true);
  assert.equal(kw.walk(kw.start, "if ="), -1);
  assert.equal(kw.isComplete(kw.walk(kw.start, "iff = y")), true);
});

test("minBytesToComplete equals a brute-force breadth-first search", () => {
  const g = compileGrammar(
    'start: value\n?value: "{" [pair ("," pair)*] "}" | "[" [value ("," value)*] "]" | ESCAPED_STRING | "true"\npair: ESCAPED_STRING ":" value\n%import common.ESCAPED_STRING\n%import common.WS\n%ignore WS\n',
  );
  const a = new GrammarAutomaton(g, { maxIgnoredRun: 2 });
  const bfs = (s0: number): number => {
    let frontier = [s0];
    const seen = new Set(frontier);
    for (let d = 0; d < 8; d++) {
      const next: number[] = [];
      for (const s of frontier) {
        if (a.isComplete(s)) return d;
        for (let b = 0; b < 128; b++) {
          const ns = a.step(s, b);
          if (ns >= 0 && !seen.has(ns)) {
            seen.add(ns);
            next.push(ns);
          }
        }
      }
      frontier = next;
    }
    return -1;
  };
  for (const prefix of ['{"a": [tr', '[{"k', '{"a":{"b":[', "[", '["x\\', ""]) {
    const s = a.walk(a.start, prefix);
    assert.ok(s >= 0, prefix);
    const exact = bfs(s);
    assert.ok(exact >= 0, prefix);
    assert.equal(a.minBytesToComplete(s), exact, prefix);
    assert.ok(a.minBytesLowerBound(s) <= exact, prefix);
  }
});

test("scanners that surely become small DFAs wait for their first use; any other is built, or refused, at compile", () => {
  const scanners = (a: GrammarAutomaton): (unknown | undefined)[] => (a as unknown as { scannerDfas: unknown[] }).scannerDfas;
  const pal = new GrammarAutomaton(compileGrammar('start: pal\npal: "a" pal "a" | "b" pal "b" | MID\nMID: "a".."z"\n'));
  const unbuilt = scanners(pal).filter((d) => d === undefined).length;
  assert.ok(unbuilt >= 3, `palindrome: ${unbuilt} of ${scanners(pal).length} scanners left for later`);
  // Built as the walk reaches them, with Lark's answers (verified against Lark 1.1.5).
  assert.deepEqual(
    ["aca", "abcba", "abba", "aba"].map((t) => pal.isComplete(pal.walk(pal.start, t))),
    [true, true, false, false],
  );
  assert.equal(pal.walk(pal.start, "abcbb"), -1);
  pal.tokenStartLexers();
  assert.equal(scanners(pal).filter((d) => d === undefined).length, 0);
  // A terminal Lark compiles but whose DFA is too big (2^21 states) is refused when the grammar
  // is compiled, also in a scanner no first mask reaches; and a class with anything beyond plain
  // ASCII characters and ranges is built at once.
  assert.throws(() => new GrammarAutomaton(compileGrammar('start: "a" "b" X\nX: /(a|b)*a(a|b){20}/\n')), GrammarError);
  const other = new GrammarAutomaton(compileGrammar('start: "a" X Y\nX: /[^a]/\nY: /[\\t-~]/\n'));
  // Built: the start scanner, X's and Y's (the one after Y, end of text only, can wait).
  assert.equal(scanners(other).filter((d) => d !== undefined).length, 3);
});
