// Differential tests: our byte DFA vs Python's re.fullmatch (Debian /usr/bin/python3, one
// long-lived process fed JSON batches) and JavaScript RegExp (u flag, anchored) where the
// dialects agree. Patterns: hand-written ones covering every construct, plus seeded random ones.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { ORACLE_PYTHON } from "./support/paths.js";
import { RegexSyntaxError, compileRegex, matchesString, sampleString, type ByteDfa } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";

// ---------- Python oracle ----------
const ORACLE_SOURCE = String.raw`
import json, re, signal, sys, warnings
warnings.simplefilter("ignore")
# Random patterns can make Python's backtracking matcher exponential on near misses;
# such strings are reported as null (not judged) instead of hanging the test.
class Slow(Exception):
    pass
def on_alarm(*_):
    raise Slow()
signal.signal(signal.SIGALRM, on_alarm)
def judge(rx, strings):
    out = []
    for s in strings:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        try:
            out.append(rx.fullmatch(s) is not None)
        except Slow:
            out.extend([None] * (len(strings) - len(out)))
            break
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return out
FLAG_BITS = {"i": re.I, "s": re.S, "m": re.M, "x": re.X, "a": re.A, "u": re.U}
for line in sys.stdin:
    batch = json.loads(line)
    out = []
    for job in batch:
        flags = 0
        for ch in job["f"]:
            flags |= FLAG_BITS[ch]
        try:
            rx = re.compile(job["p"], flags)
        except Exception as e:
            out.append({"error": str(e)})
            continue
        out.append({"ok": judge(rx, job["s"])})
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`;

class PythonOracle {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly pending: Array<(line: string) => void> = [];
  constructor() {
    this.proc = spawn(ORACLE_PYTHON, ["-c", ORACLE_SOURCE], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    this.proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    this.proc.on("exit", (code) => {
      if (code !== 0 && code !== null) console.error("python oracle exited", code, stderr);
    });
    createInterface({ input: this.proc.stdout }).on("line", (line) => this.pending.shift()?.(line));
  }
  run(jobs: Array<{ p: string; f: string; s: string[] }>): Promise<Array<{ ok?: Array<boolean | null>; error?: string }>> {
    return new Promise((resolve) => {
      this.pending.push((line) => resolve(JSON.parse(line)));
      this.proc.stdin.write(JSON.stringify(jobs) + "\n");
    });
  }
  close(): void {
    this.proc.stdin.end();
  }
}

// ---------- dialect translation for the oracles ----------
// Our \d \w \s are ASCII where the set they build stays positive, and Python's Unicode classes
// where it ends up complemented (\D, \d inside [^...]); see src/regex/index.ts. Spelled for
// Python in Unicode mode:
const CATEGORY_OUTSIDE: Record<string, string> = {
  d: "[0-9]",
  D: "\\D",
  w: "[a-zA-Z0-9_]",
  W: "\\W",
  s: "[ \\t\\n\\r\\f\\v]",
  S: "\\S",
};
const CATEGORY_IN_CLASS: Record<string, string> = { d: "0-9", w: "a-zA-Z0-9_", s: " \\t\\n\\r\\f\\v", D: "\\D", W: "\\W", S: "\\S" };
const CATEGORY_IN_NEGATED_CLASS: Record<string, string> = { d: "\\d", w: "\\w", s: "\\s" };

/**
 * Our pattern → an equivalent Python pattern + flags. With the a flag every class is ASCII, as
 * in Python's re.ASCII; otherwise the categories are spelled out as above.
 */
function toPython(pattern: string, flags: string): { p: string; f: string } {
  let p = pattern.replace(/\(\?<(?![=!])/g, "(?P<");
  if (flags.includes("a")) return { p, f: flags };
  let out = "";
  let inClass = false;
  let negated = false;
  const cps = Array.from(p);
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i]!;
    if (c === "\\" && i + 1 < cps.length) {
      const e = cps[i + 1]!;
      const rep = !inClass ? CATEGORY_OUTSIDE[e] : negated ? CATEGORY_IN_NEGATED_CLASS[e] : CATEGORY_IN_CLASS[e];
      if (inClass && negated && "DWS".includes(e)) throw new Error(`untranslatable \\${e} in negated class: ${pattern}`);
      out += rep ?? c + e;
      i++;
      continue;
    }
    if (c === "[" && !inClass) {
      inClass = true;
      negated = false;
      out += c;
      if (cps[i + 1] === "^") {
        out += cps[++i];
        negated = true;
      }
      if (cps[i + 1] === "]") out += cps[++i];
      continue;
    }
    if (c === "]" && inClass) inClass = false;
    out += c;
  }
  p = out;
  return { p, f: flags };
}

/** JS verdict where the dialects agree; null where they do not (or JS rejects the syntax). */
function jsRegExpFor(pattern: string, flags: string): RegExp | null {
  if (/[imxa]/.test(flags)) return null;
  if (/\(\?[imsxau-]|\(\?P|\(\?#|\$|\\[AZaUN0-7]|\{,|\[\^?\]|\\[^\\]\{|(^|[^\\])\{(?!\d)/.test(pattern)) return null;
  try {
    return new RegExp(`^(?:${pattern})$`, flags.includes("s") ? "su" : "u");
  } catch {
    return null;
  }
}
// JS '.' also excludes \r \u2028 \u2029 and JS \s is Unicode: strings with those are not comparable.
const JS_DIVERGENT_CHARS = /[\r\u2028\u2029\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ufeff]/;

// ---------- test strings ----------
const EXTRA_CHARS = [
  "a",
  "b",
  "z",
  "A",
  "Z",
  "0",
  "9",
  "_",
  " ",
  "\n",
  "\t",
  "\r",
  "-",
  ".",
  "é",
  "É",
  "ß",
  "ẞ",
  "ſ",
  "s",
  "S",
  "K",
  "k",
  "\u212a",
  "ı",
  "İ",
  "i",
  "I",
  "µ",
  "μ",
  "Σ",
  "σ",
  "ς",
  "😀",
  "中",
  "\u0000",
  "\u00a0",
  "\u2028",
  "\u007f",
  "\u0080",
  "\uffff",
  "\u{10ffff}",
  "\u{1f600}",
  "\u001c",
];

function pick<T>(rng: () => number, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

function patternChars(pattern: string): string[] {
  return Array.from(new Set(Array.from(pattern).filter((c) => !"\\[]()|*+?{}^$".includes(c))));
}

function testStrings(dfa: ByteDfa, pattern: string, rng: () => number, count: number): string[] {
  const alphabet = [...EXTRA_CHARS, ...patternChars(pattern)];
  const members: string[] = [];
  for (let i = 0; i < Math.ceil(count / 3); i++) {
    const m = sampleString(dfa, rng, { maxBytes: 24, stopProbability: 0.3 });
    if (m !== null) members.push(m);
  }
  const out = new Set<string>(members);
  out.add("");
  for (const m of members) {
    const cps = Array.from(m);
    const at = Math.floor(rng() * (cps.length + 1));
    const variants = [
      [...cps.slice(0, at), pick(rng, alphabet), ...cps.slice(at)], // insert
      [...cps.slice(0, at), ...cps.slice(at + 1)], // delete
      [...cps.slice(0, at), pick(rng, alphabet), ...cps.slice(at + 1)], // substitute
      cps.slice(0, Math.floor(rng() * cps.length)), // truncate
      [...cps, "\n"], // trailing newline ($ semantics)
      [...cps, ...cps], // doubled
      cps.map((c) => (rng() < 0.5 ? c.toUpperCase() : c.toLowerCase())), // case flips
    ];
    for (const v of variants) out.add(v.join(""));
  }
  for (let i = 0; i < Math.ceil(count / 4); i++) {
    const len = Math.floor(rng() * 6);
    let s = "";
    for (let k = 0; k < len; k++) s += pick(rng, alphabet);
    out.add(s);
  }
  return [...out].filter((s) => Array.from(s).every((c) => (c.codePointAt(0)! & 0xfff800) !== 0xd800));
}

// ---------- patterns ----------
interface Case {
  p: string;
  f?: string;
}
const HAND_WRITTEN: Case[] = [
  // literals and escapes
  { p: "abc" },
  { p: "" },
  { p: "a\\.b" },
  { p: "\\(\\)\\[\\]\\{\\}\\*\\+\\?\\|\\^\\$\\\\" },
  { p: "\\n\\t\\r\\f\\v" },
  { p: "\\x41\\x7e" },
  { p: "\\u00e9t\\u00e9" },
  { p: "\\U0001F600+" },
  { p: "\\0" },
  { p: "\\012\\101" },
  { p: "\\a" },
  { p: "é" },
  { p: "中文" },
  { p: "😀😃?" },
  { p: "\\-\\/\\!\\@\\#\\%\\&" },
  { p: "a{" },
  { p: "a{1,x}" },
  { p: "x{}" },
  { p: "a{,3}" },
  { p: "a{,}" },
  { p: "{" },
  { p: "}" },
  { p: "]" },
  { p: "a]b" },
  { p: "\\x00" },
  // categories
  { p: "\\d+" },
  { p: "\\D+" },
  { p: "\\w+" },
  { p: "\\W+" },
  { p: "\\s+" },
  { p: "\\S+" },
  { p: "[\\d\\s]+" },
  { p: "[\\w-]+" },
  { p: "[^\\d]+" },
  { p: "[^\\w\\s]" },
  { p: "\\d\\D\\w\\W\\s\\S" },
  // classes
  { p: "[abc]" },
  { p: "[a-z]+" },
  { p: "[^a-z]+" },
  { p: "[]a]" },
  { p: "[^]a]" },
  { p: "[a-]" },
  { p: "[-a]" },
  { p: "[a-c-e]" },
  { p: "[\\]]" },
  { p: "[\\^a]" },
  { p: "[a^]" },
  { p: "[.*+?]" },
  { p: "[\\b]" },
  { p: "[\\x00-\\x1f]" },
  { p: "[à-ÿ]+" },
  { p: "[^à-ÿ]" },
  { p: "[\\u0100-\\u017f]" },
  { p: "[^\\x00-\\x7f]+" },
  { p: "[\\U00010000-\\U0010FFFF]" },
  { p: "[\\u0800-\\uffff]" },
  { p: "[^\\n]*" },
  { p: "[\\u07ff-\\u0800]" },
  { p: "[\\ud7ff\\ue000]" },
  { p: "[\\uffff\\U00010000]" },
  { p: "[ -~]*" },
  { p: "[\\x80-\\xff]" },
  { p: "[α-ω]+" },
  { p: "[^α-ω]" },
  { p: "[😀-🙏]+" },
  { p: "[\\0-\\x08]" },
  { p: "[\\1\\2]" },
  // dot
  { p: "." },
  { p: ".+" },
  { p: "a.c" },
  { p: ".", f: "s" },
  { p: "(?s).*" },
  { p: "(?s:.)." },
  // groups
  { p: "(a)(b)" },
  { p: "(?:ab)+" },
  { p: "(?P<year>\\d{4})-(?P<month>\\d{2})" },
  { p: "(?<word>[a-z]+)" },
  { p: "((a|b)c)*" },
  { p: "(?#comment)ab" },
  { p: "a(?#x)b" },
  { p: "()" },
  { p: "(?:)" },
  { p: "(|a)+" },
  { p: "((((a))))" },
  // alternation
  { p: "a|b|c" },
  { p: "cat|dog|bird|fish|cow|pig|hen|ant|bee|owl" },
  { p: "a|" },
  { p: "|" },
  { p: "ab|abc|abcd" },
  { p: "(a|ab)(c|bcd)(d*)" },
  // quantifiers
  { p: "a*" },
  { p: "a+" },
  { p: "a?" },
  { p: "a{3}" },
  { p: "a{2,}" },
  { p: "a{2,4}" },
  { p: "a{0}" },
  { p: "a{0,0}b" },
  { p: "a*?" },
  { p: "a+?b" },
  { p: "a??" },
  { p: "a{2,3}?" },
  { p: "(ab){2,3}" },
  { p: "(a*)*" },
  { p: "(a*)+b" },
  { p: "(a?){3}" },
  { p: "(?:a|b){0,5}c" },
  { p: "[a-c]{1,3}[x-z]{2}" },
  { p: "(x+x+)+y" },
  { p: "(a|aa)*" },
  { p: ".{0,10}" },
  { p: "é{2,3}" },
  // anchors
  { p: "^abc$" },
  { p: "^a" },
  { p: "a$" },
  { p: "a$\\n" },
  { p: "a$\\n?" },
  { p: "a\\n?$" },
  { p: "$" },
  { p: "^$" },
  { p: "^" },
  { p: "(a$|b)c?" },
  { p: "a$$" },
  { p: "(^a|b)+" },
  { p: "a|^b" },
  { p: "\\Aab\\Z" },
  { p: "a\\Z\\n?" },
  { p: "a$\\Z" },
  { p: "^a$", f: "m" },
  { p: "a$\\nb", f: "m" },
  { p: "(?m)(^\\w+$\\n?)+" },
  { p: "(?m)a$\\n^b" },
  { p: "(?m)^$" },
  { p: "(?m:a$)\\n" },
  { p: "(?m)$\\n$" },
  { p: "x(?m:^)y" },
  { p: "\\n(?m:^)y" },
  // one-character ASCII lookbehind (Lark's common.ESCAPED_STRING)
  { p: '".*?(?<!\\\\)(\\\\\\\\)*?"' },
  { p: "a(?<=a)b" },
  { p: "(?<!a)b" },
  { p: "x(?<![a-c])y" },
  { p: "(?<=\\n)a|b\\n(?<=\\n)c" },
  { p: '(?<!\\\\)"' },
  { p: "é(?<!a)x" },
  { p: "[ab]+(?<=b)" },
  { p: "(?:a|b(?<!b)c)+" },
  { p: "(?i)[a-z0-9]+(?<![0-9])" },
  // one-character lookahead (Lark's lark.lark OP, python.lark DEC_NUMBER)
  { p: "a(?!b)" },
  { p: "a(?=b)b" },
  { p: "a(?=b)" },
  { p: "(?!a)[a-c]+" },
  { p: "0(?![1-9])\\d*" },
  { p: "[+*]|[?](?![a-z])" },
  { p: "a(?!\\n)$" },
  { p: "a$(?!x)\\n?" },
  { p: "a(?=\\n)\\n" },
  { p: "(?=[^a])é" },
  { p: "a(?!b)$\\n?" },
  { p: "(a(?!b)|ab)+" },
  { p: "(?m)a(?!x)$\\nb" },
  { p: "x(?=\\s)\\s+" },
  { p: "(?!\\d)\\w+" },
  { p: "(?i)k(?![^a])." },
  { p: "a(?!b)(?!b)c" },
  // case-insensitive
  { p: "abc", f: "i" },
  { p: "(?i)hello" },
  { p: "(?i)straße" },
  { p: "(?i)[a-z]+" },
  { p: "(?i)[^a-z]" },
  { p: "(?i)k" },
  { p: "(?i)s" },
  { p: "(?i)ſ" },
  { p: "(?i)\u212a" },
  { p: "(?i)[k-l]" },
  { p: "(?i)i" },
  { p: "(?i)İ" },
  { p: "(?i)ı" },
  { p: "(?i)σ" },
  { p: "(?i)[σ]" },
  { p: "(?i)ς+" },
  { p: "(?i)µ" },
  { p: "(?i)é" },
  { p: "(?i)[à-ÿ]" },
  { p: "(?i)[^à-ÿ]" },
  { p: "(?i)\\w+" },
  { p: "(?i)\\W" },
  { p: "(?i)[\\w]" },
  { p: "(?i)\\d\\s\\D\\S" },
  { p: "(?i)ǅ" },
  { p: "(?i)ß" },
  { p: "(?i)ẞ" },
  { p: "(?i)[\\U00010400-\\U0001044f]" },
  { p: "(?i)\\U00010400" },
  { p: "(?i)ǰ" },
  { p: "(?i)ΐ" },
  { p: "(?i)[ͅ]" },
  { p: "a(?i:b)c" },
  { p: "(?i)a(?-i:b)c" },
  { p: "(?i:[a-c]x)y" },
  { p: "(?ai)k" },
  { p: "(?a)[a-z]+", f: "i" },
  { p: "(?i)[^\\x00-\\x7f]" },
  { p: "(?i)[\\x00-\\xff]" },
  { p: "(?i)[A-Z]{2,}" },
  { p: "(?i)cat|dog" },
  { p: "(?i)[^k]" },
  // verbose
  { p: "a b c", f: "x" },
  { p: "(?x) a + # comment\n b" },
  { p: "(?x)[ a]" },
  { p: "(?x) \\  a" },
  { p: "(?x)a{2} b?" },
  { p: "(?x:a b)c d" },
  { p: "(?x) (?i) a" },
  // flags combos
  { p: "(?s)a.b" },
  { p: "(?is).+" },
  { p: "(?smix) a . b $" },
  // realistic
  { p: "[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}" },
  { p: "\\d{4}-\\d{2}-\\d{2}" },
  { p: "\\(?\\d{3}\\)?[-. ]?\\d{3}[-. ]?\\d{4}" },
  { p: "[a-z]+( [a-z]+)*" },
  { p: '\\{"name": "[^"]*", "age": \\d+\\}' },
  { p: "(yes|no|maybe)" },
  { p: "-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?" },
  { p: '"([^"\\\\]|\\\\.)*"' },
  { p: "(true|false|null)" },
  { p: "#[0-9a-fA-F]{6}" },
  { p: "https?://[^ ]+" },
  { p: "\\d{1,3}(\\.\\d{1,3}){3}" },
  { p: "[A-Z][a-z]*( [A-Z][a-z]*)*\\." },
  { p: "(\\w+\\s?)+" },
];

/** Seeded generator of random patterns in the common dialect (Python-valid by construction). */
function randomPatterns(count: number, seed: number): Case[] {
  const rng = seededRandom(seed);
  const LITERALS = [
    "a",
    "b",
    "c",
    "x",
    "0",
    "1",
    " ",
    "é",
    "ß",
    "k",
    "s",
    "K",
    "ſ",
    "Σ",
    "σ",
    "中",
    "😀",
    "\\n",
    "\\.",
    "\\-",
    "\\*",
    "_",
    "\\x41",
    "\\u00e9",
  ];
  const CLASS_ITEMS = ["a", "b-d", "x", "0-9", "é", "à-ÿ", "α-ω", "😀-🙏", "\\n", " ", "_", "\\u0100-\\u017f", "K", "s", "\\.", "\\-"];
  let groupName = 0;
  const atom = (depth: number, ci: boolean): string => {
    const r = rng();
    if (r < 0.35 || depth > 2) return pick(rng, LITERALS);
    if (r < 0.5) {
      const items: string[] = [];
      const n = 1 + Math.floor(rng() * 3);
      for (let i = 0; i < n; i++) items.push(pick(rng, CLASS_ITEMS));
      if (rng() < 0.3) items.push(pick(rng, ["\\d", "\\w", "\\s"]));
      if (!ci && rng() < 0.15) items.push(pick(rng, ["\\D", "\\W", "\\S"]));
      return `[${rng() < 0.3 ? "^" : ""}${items.join("")}]`;
    }
    if (r < 0.6) return pick(rng, [".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S"]);
    const inner = alternation(depth + 1, ci);
    const g = rng();
    if (g < 0.4) return `(${inner})`;
    if (g < 0.7) return `(?:${inner})`;
    if (g < 0.85) return `(?P<g${groupName++}>${inner})`;
    return rng() < 0.5 ? `(?i:${inner})` : `(?s:${inner})`;
  };
  const quantified = (depth: number, ci: boolean): string => {
    if (rng() < 0.06) return pick(rng, ["^", "$", "\\A", "\\Z", "$\\n", "$\\n?", "\\n^"]);
    if (rng() < 0.04)
      return `(?${pick(rng, ["<=", "<!", "=", "!"])}${pick(rng, ["a", "b", "x", "0", "\\n", "\\\\", "[a-c]", "[^a]", "\\d", "\\s"])})`;
    const a = atom(depth, ci);
    const r = rng();
    let q = "";
    if (r < 0.15) q = "*";
    else if (r < 0.3) q = "+";
    else if (r < 0.4) q = "?";
    else if (r < 0.45) q = `{${Math.floor(rng() * 3)}}`;
    else if (r < 0.5) q = `{${Math.floor(rng() * 2)},${2 + Math.floor(rng() * 2)}}`;
    else if (r < 0.53) q = `{${Math.floor(rng() * 3)},}`;
    if (q && rng() < 0.3) q += "?";
    return a + q;
  };
  const sequence = (depth: number, ci: boolean): string => {
    const n = 1 + Math.floor(rng() * (depth === 0 ? 4 : 3));
    let s = "";
    for (let i = 0; i < n; i++) s += quantified(depth, ci);
    return s;
  };
  const alternation = (depth: number, ci: boolean): string => {
    const n = rng() < 0.7 ? 1 : 2 + Math.floor(rng() * 2);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(sequence(depth, ci));
    return parts.join("|");
  };
  const out: Case[] = [];
  for (let i = 0; i < count; i++) {
    groupName = 0;
    const ci = rng() < 0.25;
    let p = alternation(0, true); // generated with ci=true rules so scoped (?i:) is always translatable
    if (rng() < 0.1) p = `^${p}`;
    if (rng() < 0.1) p = `${p}$`;
    const extra = rng() < 0.15 ? "m" : rng() < 0.1 ? "s" : rng() < 0.05 ? "x" : "";
    // Under x an unescaped space is ignored, which could leave a quantifier with nothing to repeat.
    if (extra === "x") p = p.replace(/ /g, "\\ ");
    out.push({ p, f: (ci ? "i" : "") + extra });
  }
  return out;
}

const oracle = new PythonOracle();
after(() => oracle.close());

// Source of candidate strings for patterns whose language is empty (compileRegex refuses
// those; we then expect Python to reject every candidate).
const EMPTY_DFA: ByteDfa = compileRegex("a");

async function runDifferential(
  cases: Case[],
  seed: number,
  stringsPerPattern: number,
): Promise<{ patterns: number; strings: number; jsChecked: number; empty: number }> {
  const rng = seededRandom(seed);
  const jobs: Array<{ p: string; f: string; s: string[] }> = [];
  const dfas: Array<ByteDfa | null> = [];
  let empty = 0;
  let refused = 0;
  for (const c of cases) {
    const flags = c.f ?? "";
    let dfa: ByteDfa | null;
    try {
      dfa = compileRegex(c.p, { flags, timeoutMs: 10_000 });
    } catch (err) {
      if (err instanceof RegexSyntaxError && err.construct === "lookahead combination") {
        refused++; // a documented refusal: stacked lookaheads at one position
        dfas.push(null);
        jobs.push({ p: "(?!)", f: "", s: [] });
        continue;
      }
      if (!(err instanceof RegexSyntaxError && err.construct === "empty language")) {
        assert.fail(`compile failed for ${JSON.stringify(c.p)} flags=${flags}: ${(err as Error).message}`);
      }
      dfa = null; // Python must then reject every string we try
      empty++;
    }
    dfas.push(dfa);
    const py = toPython(c.p, flags);
    jobs.push({ p: py.p, f: py.f, s: testStrings(dfa ?? EMPTY_DFA, c.p, rng, stringsPerPattern) });
  }
  const results = await oracle.run(jobs);
  let strings = 0;
  let jsChecked = 0;
  let unjudged = 0;
  const failures: string[] = [];
  cases.forEach((c, i) => {
    const r = results[i]!;
    const job = jobs[i]!;
    if (r.error !== undefined) {
      failures.push(`python rejected ${JSON.stringify(job.p)} (${job.f}): ${r.error}`);
      return;
    }
    const js = jsRegExpFor(c.p, c.f ?? "");
    // JS complements its ASCII \d \w \s, we complement Python's Unicode ones: beyond ASCII
    // the dialects disagree there.
    const complemented = /\\[DWS]|\[\^[^\]]*\\[dws]/.test(c.p);
    job.s.forEach((s, k) => {
      if (r.ok![k] === null) {
        unjudged++;
        return;
      }
      strings++;
      const dfa = dfas[i]!;
      const ours = dfa !== null && matchesString(dfa, s);
      if (ours !== r.ok![k]) {
        failures.push(`${JSON.stringify(c.p)} flags=${c.f ?? ""} on ${JSON.stringify(s)}: ours=${ours} python=${r.ok![k]}`);
      }
      if (js && !JS_DIVERGENT_CHARS.test(s) && !(complemented && /[^\x00-\x1b\x20-\x7f]/u.test(s))) {
        jsChecked++;
        const jsVerdict = js.test(s);
        if (jsVerdict !== ours) failures.push(`${JSON.stringify(c.p)} on ${JSON.stringify(s)}: ours=${ours} js=${jsVerdict}`);
      }
    });
  });
  assert.deepEqual(failures.slice(0, 25), [], `${failures.length} disagreements`);
  assert.ok(unjudged <= strings / 20, `Python timed out on ${unjudged} strings`);
  assert.ok(refused <= cases.length / 20, `${refused} patterns refused`);
  console.log(JSON.stringify({ patterns: cases.length, strings, jsChecked, empty, unjudged, refused }));
  return { patterns: cases.length, strings, jsChecked, empty };
}

test("hand-written patterns agree with Python re.fullmatch and JS RegExp", async () => {
  const stats = await runDifferential(HAND_WRITTEN, 11, 30);
  assert.ok(stats.patterns >= 200, `only ${stats.patterns} hand-written patterns`);
  assert.ok(stats.jsChecked > 1000, `JS compared only ${stats.jsChecked} strings`);
});

test("random patterns agree with Python re.fullmatch and JS RegExp", async () => {
  // REGEX_FUZZ_SEED explores other seeds by hand; the default keeps the suite reproducible.
  const cases = randomPatterns(300, Number(process.env.REGEX_FUZZ_SEED ?? 20261122));
  const stats = await runDifferential(cases, 7, 24);
  assert.equal(stats.patterns, 300);
  assert.ok(stats.strings > 5000);
});

test("array patterns: union of alternatives agrees with Python", async () => {
  const arrays: string[][] = [
    ["abc", "[0-9]+"],
    ["(?i)yes", "no"],
    ["a$", "b\\n"],
    ["x{2}", "x{4}", "x{6}"],
    ["é+", "[^é]"],
  ];
  const rng = seededRandom(3);
  const jobs = arrays.map((alts) => {
    const dfa = compileRegex(alts);
    const strings = new Set<string>();
    for (const alt of alts) for (const s of testStrings(compileRegex(alt), alt, rng, 15)) strings.add(s);
    return { dfa, alts, strings: [...strings] };
  });
  const py = await oracle.run(jobs.flatMap((j) => j.alts.map((a) => ({ ...toPython(a, ""), s: j.strings }))));
  let k = 0;
  for (const j of jobs) {
    const verdicts = j.alts.map(() => py[k++]!.ok!);
    j.strings.forEach((s, idx) => {
      const expected = verdicts.some((v) => v[idx]);
      assert.equal(matchesString(j.dfa, s), expected, `${JSON.stringify(j.alts)} on ${JSON.stringify(s)}`);
    });
  }
});

test("(?i) agrees with Python for every cased code point (literal and negated class)", async () => {
  const cased: number[] = [];
  for (let cp = 0; cp < 0x20000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    if (ch.toLowerCase() !== ch || ch.toUpperCase() !== ch) cased.push(cp);
  }
  assert.ok(cased.length > 2500);
  const single = (s: string): boolean => Array.from(s).length === 1;
  const jobs: Array<{ p: string; f: string; s: string[] }> = [];
  const dfas: ByteDfa[] = [];
  const rng = seededRandom(17);
  for (let i = 0; i < cased.length; i++) {
    const ch = String.fromCodePoint(cased[i]!);
    const candidates = new Set<string>([
      ch,
      ch.toLowerCase(),
      ch.toUpperCase(),
      ch.toLowerCase().toUpperCase(),
      ch.toUpperCase().toLowerCase(),
    ]);
    for (const c of ["s", "k", "i", "\u212a", "\u017f", "\u0131", "\u0130", "\u03c3", "\u03c2", "\u00b5", "\u1e9e", "\u00df"])
      candidates.add(c);
    candidates.add(String.fromCodePoint(cased[Math.floor(rng() * cased.length)]!));
    const strings = [...candidates].filter(single);
    const hex = cased[i]!.toString(16).padStart(8, "0");
    // Alternate between a literal and a negated class so both paths are covered for all.
    const pattern = i % 2 === 0 ? `\\U${hex}` : `[^\\U${hex}]`;
    dfas.push(compileRegex(pattern, { flags: "i" }));
    jobs.push({ p: pattern, f: "i", s: strings });
  }
  const results = await oracle.run(jobs);
  const failures: string[] = [];
  jobs.forEach((job, i) => {
    job.s.forEach((s, k) => {
      const ours = matchesString(dfas[i]!, s);
      if (ours !== results[i]!.ok![k]) failures.push(`${job.p} on U+${s.codePointAt(0)!.toString(16)}: ours=${ours}`);
    });
  });
  assert.deepEqual(failures.slice(0, 20), [], `${failures.length} disagreements`);
});

test("patterns we reject as malformed are rejected by Python at the same position", async () => {
  const malformed = [
    "(ab",
    "ab)",
    "[ab",
    "*a",
    "a|?",
    "a**",
    "a{2}{3}",
    "[z-a]",
    "[\\d-z]",
    "\\q",
    "a{3,2}",
    "\\x4",
    "\\u12",
    "a\\",
    "^*",
    "a(?i)b",
    "(?z)",
    "(?P<1a>x)",
    "(?P<n>a)(?P<n>b)",
    "[]",
    "\\U00110000",
    "a{1000}{1000}",
    "(?i",
    "[\\8]",
  ];
  const results = await oracle.run(malformed.map((p) => ({ p, f: "", s: [] })));
  const positions = /at position (\d+)/;
  malformed.forEach((p, i) => {
    let ours: RegexSyntaxError | null = null;
    try {
      compileRegex(p);
    } catch (err) {
      if (err instanceof RegexSyntaxError) ours = err;
    }
    assert.ok(ours, `we accepted ${JSON.stringify(p)}`);
    const python = results[i]!.error;
    assert.ok(python !== undefined, `Python accepted ${JSON.stringify(p)}`);
    const pyPosition = positions.exec(python!);
    if (pyPosition) assert.equal(ours.position, Number(pyPosition[1]), `${JSON.stringify(p)}: Python says ${python}`);
  });
});
