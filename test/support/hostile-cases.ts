/**
 * Requests an attacker would send to blow up compile time, memory or the event loop: the
 * reproductions of the hostile probe (colliding and chained terminals, deep nesting, exponential
 * terminals and templates, slow refused patterns, huge categorize requests) and families around
 * them (catastrophic regexes, huge counted repeats, near-limit sizes, refused constructs). Each
 * must be answered fast with a 200, 400 or 422 in the JSON error shape while other clients are
 * served (test/server-hostile.test.ts); bench/load.ts mixes them into its load.
 */

export type HostilePath = "/v1/completion/regex" | "/v1/completion/cfg" | "/v1/categorize";

export interface HostileCase {
  readonly name: string;
  readonly path: HostilePath;
  /** The JSON body; `raw` instead sends text as it is. */
  readonly body?: unknown;
  readonly raw?: string;
  /** Statuses it may be answered with (default 200, 400, 422). */
  readonly expect?: readonly number[];
  /** What a refusal's message must say. */
  readonly message?: RegExp;
}

const PROMPT = "Once upon a time";
const regex = (name: string, pattern: string | string[], extra: Partial<HostileCase> = {}): HostileCase => ({
  name: `regex: ${name}`,
  path: "/v1/completion/regex",
  body: { prompt: PROMPT, pattern, max_new_tokens: 8 },
  ...extra,
});
const cfg = (name: string, grammar: string, extra: Partial<HostileCase> & { maxIgnoredRun?: number } = {}): HostileCase => ({
  name: `grammar: ${name}`,
  path: "/v1/completion/cfg",
  body: {
    prompt: PROMPT,
    grammar,
    max_new_tokens: 8,
    ...(extra.maxIgnoredRun !== undefined ? { max_ignored_run: extra.maxIgnoredRun } : {}),
  },
  ...extra,
});

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** `start: T0 | … | Tn-1` with every terminal matching the same text. */
export function collidingTerminals(n: number, pattern = "/[a-z]+/"): string {
  return `start: ${range(n)
    .map((i) => `T${i}`)
    .join(" | ")}\n${range(n)
    .map((i) => `T${i}: ${pattern}`)
    .join("\n")}`;
}

/** `T0: T1`, `T1: T2`, … `Tn-1: "a"`. */
export function chainedTerminals(n: number): string {
  return `start: T0\n${range(n)
    .map((i) => (i + 1 < n ? `T${i}: T${i + 1}` : `T${i}: "a"`))
    .join("\n")}`;
}

/** `T0: T1 T1`, … : a pattern of 2^n characters. */
export function doublingTerminals(n: number): string {
  return `start: T0\n${range(n)
    .map((i) => (i + 1 < n ? `T${i}: T${i + 1} T${i + 1}` : `T${i}: "a"`))
    .join("\n")}`;
}

/** Rules that double: a sentence of 2^n tokens, and as many rules after template expansion. */
function doublingTemplates(n: number): string {
  const lines = [`start: t0{"a"}`];
  for (let i = 0; i < n; i++) lines.push(i + 1 < n ? `t${i}{x}: t${i + 1}{x} t${i + 1}{x}` : `t${i}{x}: x`);
  return lines.join("\n");
}

function doublingRules(n: number): string {
  return `start: r0\n${range(n)
    .map((i) => (i + 1 < n ? `r${i}: r${i + 1} r${i + 1}` : `r${i}: "a"`))
    .join("\n")}`;
}

const nested = (depth: number, open: string, close: string, inner: string): string => open.repeat(depth) + inner + close.repeat(depth);

function catastrophicRegexes(): HostileCase[] {
  const out: HostileCase[] = [];
  for (const n of [10, 16, 20, 25, 30]) out.push(regex(`(a|b)*a(a|b){${n}}`, `(a|b)*a(a|b){${n}}`));
  for (const p of [
    "(a*)*b",
    "(a+)+$",
    "(.*a){25}",
    "((a|aa)+)+b",
    "(x+x+)+y",
    "(\\w+\\s?)+$",
    "^(([a-z])+.)+[A-Z]([a-z])+$",
    "(?:[^x]{0,50}x){40}",
    ".{0,5000}",
    "[\\s\\S]{1000,4000}",
    "(?i)[a-z]{2000}",
    "(?:a{1,100}){1,100}",
    "(?:a{1000}){1000}",
    "\\d{1,65535}",
    "a{0,4294967296}",
    "x{99999999999999999999}",
    "[\\u0000-\\U0010FFFF]{500}",
    "[^a]{300}b[^b]{300}",
    "(?:[a-f0-9]{2}:){100}[a-f0-9]{2}",
    "(?:(?:a|b|c|d|e|f|g|h){8}){8}",
    "(?:.|\\n){0,3000}",
    "([a-z]+[0-9]+)+[A-Z]{2,30}",
    "(?:\\w+@\\w+\\.){50}com",
    "(?s)(?:.{0,40}\\n){0,400}",
    "(?:ab|a)*(?:ba|b)*c{20}",
  ]) {
    out.push(regex(p, p));
  }
  out.push(
    regex(
      "64 alternatives near the length limit",
      range(64).map((i) => `(?:${"[a-z]".repeat(400)}|x${i}){1,2}`),
    ),
  );
  out.push(regex("one 4096-character class run", "[0-9a-f]".repeat(512).slice(0, 4096)));
  out.push(
    regex(
      "alternation of 1000 words",
      range(1000)
        .map((i) => `w${i}x`)
        .join("|"),
    ),
  );
  out.push(regex("groups nested 100 deep", nested(100, "(", ")", "a")));
  out.push(regex("groups nested 1000 deep", nested(1000, "(", ")", "a"), { expect: [400, 422] }));
  out.push(regex("groups nested 2000 deep (under the length limit)", nested(2000, "(?:", ")", "a").slice(0, 4096), { expect: [400, 422] }));
  out.push(regex("quantifiers stacked", "a" + "{1,2}".repeat(600), { expect: [400, 422] }));
  return out;
}

function refusedConstructs(): HostileCase[] {
  const refused: [string, string][] = [
    ["backreference", "(a)\\1"],
    ["named backreference", "(?P<x>a)(?P=x)"],
    ["long lookbehind", "(?<=abc)x"],
    ["word boundary", "\\bword\\b"],
    ["atomic group", "(?>a+)b"],
    ["possessive quantifier", "a++b"],
    ["conditional", "(a)?(?(1)b|c)"],
    ["unicode property", "\\p{L}+"],
    ["named character", "\\N{EM DASH}"],
    ["unbalanced", "(((a)"],
    ["empty language", "[^\\s\\S]"],
  ];
  return refused.map(([name, p]) => regex(`refused ${name}`, p, { expect: [400] }));
}

function grammarCases(): HostileCase[] {
  const out: HostileCase[] = [];
  for (const n of [16, 31, 32, 33, 48, 64, 65, 128, 256]) out.push(cfg(`${n} colliding terminals`, collidingTerminals(n)));
  out.push(cfg("40 colliding terminals of a slow pattern", collidingTerminals(40, "/(a|b)*a(a|b){8}/")));
  for (const n of [200, 400, 800, 2000]) out.push(cfg(`chain of ${n} terminal references`, chainedTerminals(n)));
  for (const n of [10, 20, 30, 40])
    out.push(cfg(`terminal doubling ${n} times`, doublingTerminals(n), { expect: n <= 10 ? [200, 422] : [422] }));
  for (const n of [10, 20, 30]) out.push(cfg(`template doubling ${n} times`, doublingTemplates(n)));
  for (const n of [10, 25, 40]) out.push(cfg(`rule doubling ${n} times`, doublingRules(n)));
  for (const depth of [100, 1000, 10_000]) {
    out.push(
      cfg(
        `parentheses nested ${depth} deep`,
        `start: ${nested(depth, "(", ")", '"a"')}`,
        depth >= 1000 ? { expect: [400], message: /nest/i } : {},
      ),
    );
  }
  out.push(cfg("brackets nested 5000 deep", `start: ${nested(5000, "[", "]", '"a"')}`, { expect: [400], message: /nest/i }));
  out.push(cfg("optional nested 3000 deep", `start: ${nested(3000, "(", ")?", '"a"')}`, { expect: [400], message: /nest/i }));
  out.push(cfg("regexp groups nested 3000 deep", `start: A\nA: /${nested(3000, "(", ")", "a")}/`, { expect: [400, 422] }));
  for (const [name, g] of [
    ["literal ~ 100000", 'start: "a" ~ 100000'],
    ["literal ~ 1..100000", 'start: "a" ~ 1..100000'],
    ["(literal ~ 1000) ~ 1000", 'start: ("a" ~ 1000) ~ 1000'],
    ["rule ~ 50000", 'start: item ~ 50000\nitem: "x" | "y"'],
    ["terminal ~ 100000", 'start: A\nA: "a" ~ 100000'],
    ["terminal (ab ~ 10..1000) ~ 50", 'start: A\nA: ("ab" ~ 10..1000) ~ 50'],
    ["repeat bounds past 2^31", 'start: "a" ~ 0..4294967296'],
    ["repeat bounds reversed", 'start: "a" ~ 10..2'],
  ] as const) {
    out.push(cfg(name, g));
  }
  out.push(cfg("a 2^15-state terminal", "start: A\nA: /(a|b)*a(a|b){14}/"));
  out.push(cfg("a terminal past the DFA-state limit", "start: A\nA: /(a|b)*a(a|b){25}/", { expect: [400, 422] }));
  out.push(cfg("backreference in a terminal", "start: A\nA: /(a)\\1/", { expect: [400], message: /backreference/i }));
  out.push(
    cfg(
      "64 overlapping word terminals",
      `start: (${range(64)
        .map((i) => `W${i}`)
        .join(" | ")})+\n${range(64)
        .map((i) => `W${i}: /[a-z]{1,${i + 2}}/`)
        .join("\n")}`,
    ),
  );
  out.push(
    cfg(
      "2000 keyword terminals",
      `start: (${range(2000)
        .map((i) => `"kw${i}"`)
        .join(" | ")})+`,
    ),
  );
  out.push(
    cfg(
      "3000 rules in a chain",
      `start: r0\n${range(3000)
        .map((i) => (i + 1 < 3000 ? `r${i}: "x" r${i + 1} | "y"` : `r${i}: "z"`))
        .join("\n")}`,
    ),
  );
  out.push(
    cfg(
      "5000 alternatives",
      `start: ${range(5000)
        .map((i) => `"a${i}"`)
        .join(" | ")}`,
    ),
  );
  out.push(
    cfg(
      "deep left recursion",
      `start: list\nlist: list "," item | item\nitem: ${range(500)
        .map((i) => `"i${i}"`)
        .join(" | ")}`,
    ),
  );
  out.push(cfg("ambiguous grammar (reduce/reduce)", 'start: a | b\na: "x"\nb: "x"', { expect: [400] }));
  out.push(cfg("recursion in a terminal", "start: A\nA: B\nB: A", { expect: [400] }));
  out.push(cfg("undefined terminal", "start: NOPE", { expect: [400] }));
  out.push(
    cfg(
      "comments and ignores at max_ignored_run 256",
      '%import common.WS\n%ignore WS\nCOMMENT: /#[^\\n]*/\n%ignore COMMENT\nstart: ("a" | "b")+',
      { maxIgnoredRun: 256 },
    ),
  );
  out.push(
    cfg(
      "every common terminal imported",
      "%import common (WORD, NUMBER, ESCAPED_STRING, WS, CNAME, SIGNED_NUMBER, INT, LETTER, DIGIT, HEXDIGIT, NEWLINE)\n%ignore WS\nstart: (WORD | NUMBER | ESCAPED_STRING | CNAME | SIGNED_NUMBER)+",
    ),
  );
  out.push(cfg("a terminal of any 1000 characters", "start: A\nA: /.{1000}/"));
  out.push(cfg("a unicode-heavy terminal", "start: A+\nA: /[^\\x00-\\x7f]{1,200}/"));
  out.push(
    cfg(
      "a grammar near the size limit",
      `start: ${range(5400)
        .map((i) => `"k${i % 100}${i}"`)
        .join("|")}`
        .slice(0, 65_000)
        .replace(/\|?"[^"]*$/, ""),
    ),
  );
  out.push(
    cfg(
      "templates with many parameters",
      `start: t{${range(50)
        .map((i) => `"p${i}"`)
        .join(", ")}}\nt{${range(50)
        .map((i) => `x${i}`)
        .join(", ")}}: ${range(50)
        .map((i) => `x${i}`)
        .join(" ")}`,
    ),
  );
  out.push(cfg("syntax garbage", "start: ((((( | ))) ~ ~ %ignore %import", { expect: [400] }));
  return out;
}

function categorizeCases(): HostileCase[] {
  const categories = (n: number, length: number): string[] =>
    range(n).map((i) => `c${i}-${"x".repeat(Math.max(0, length - 2 - String(i).length))}`);
  return [
    {
      name: "categorize: 256 categories of 256 characters",
      path: "/v1/categorize",
      body: { prompt: PROMPT, categories: categories(256, 256) },
    },
    {
      name: "categorize: 256 categories of 256 characters, multiple",
      path: "/v1/categorize",
      body: { prompt: PROMPT, categories: categories(256, 256), allow_multiple_classes: true },
    },
    {
      name: "categorize: a 32768-character prompt",
      path: "/v1/categorize",
      body: { prompt: "word ".repeat(6553), categories: ["a", "b"] },
    },
    { name: "categorize: duplicate categories", path: "/v1/categorize", body: { prompt: PROMPT, categories: ["a", "a"] }, expect: [400] },
  ];
}

function bodyCases(): HostileCase[] {
  return [
    {
      name: "body: arrays nested 100000 deep",
      path: "/v1/completion/regex",
      raw: "[".repeat(100_000) + "]".repeat(100_000),
      expect: [400],
    },
    {
      name: "body: a pattern array nested deep",
      path: "/v1/completion/regex",
      raw: `{"prompt":"x","pattern":${"[".repeat(50_000)}"a"${"]".repeat(50_000)}}`,
      expect: [400],
    },
    {
      name: "body: __proto__ key",
      path: "/v1/completion/regex",
      raw: '{"prompt":"x","pattern":"a","__proto__":{"admin":true}}',
      expect: [400],
    },
    {
      name: "body: a number past float",
      path: "/v1/completion/regex",
      raw: '{"prompt":"x","pattern":"a","max_new_tokens":1e400}',
      expect: [400],
    },
    {
      name: "body: a prompt of 32768 characters",
      path: "/v1/completion/regex",
      body: { prompt: "ab ".repeat(10_922) + "ab", pattern: "[a-z]{3}", max_new_tokens: 4 },
    },
    {
      name: "body: a prompt past the limit",
      path: "/v1/completion/regex",
      body: { prompt: "a".repeat(32_769), pattern: "a" },
      expect: [400],
    },
    {
      name: "body: a pattern past the length limit",
      path: "/v1/completion/regex",
      body: { prompt: PROMPT, pattern: "a".repeat(4097) },
      expect: [400],
    },
    {
      name: "body: 65 patterns",
      path: "/v1/completion/regex",
      body: { prompt: PROMPT, pattern: range(65).map((i) => `a${i}`) },
      expect: [400],
    },
    {
      name: "body: a grammar past the length limit",
      path: "/v1/completion/cfg",
      body: { prompt: PROMPT, grammar: `start: "a"\n//${"x".repeat(65_540)}` },
      expect: [400],
    },
  ];
}

/** Every hostile case, in a fixed order. */
export function hostileCases(): HostileCase[] {
  return [...catastrophicRegexes(), ...refusedConstructs(), ...grammarCases(), ...categorizeCases(), ...bodyCases()];
}
