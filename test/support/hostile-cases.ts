/**
 * Requests an attacker would send to blow up compile time, memory or the event loop: the
 * reproductions of the hostile probe (colliding and chained terminals, deep nesting, exponential
 * terminals and templates, slow refused patterns, huge categorize requests) and families around
 * them (catastrophic regexes, huge counted repeats, near-limit sizes, refused constructs). Each
 * states how the service answers it (`status`; a refusal in the JSON error shape naming `field`),
 * which test/server-hostile.test.ts asserts while other clients are served; bench/hostile.ts times
 * them against a /healthz client and the service's event-loop delay; bench/load.ts mixes them
 * into its load.
 *
 * Also what the suite and bench/hostile.ts share to send them: the service started as its own
 * process (`startHostileService`), one case sent (`sendHostile`), a /healthz poller on its own
 * thread (`startHealthPoller`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { REPO_ROOT, STORIES_260K } from "./paths.js";

export type HostilePath = "/v1/completion/regex" | "/v1/completion/cfg" | "/v1/categorize";

export interface HostileCase {
  readonly name: string;
  readonly path: HostilePath;
  /** The JSON body; `raw` instead sends text as it is. */
  readonly body?: unknown;
  readonly raw?: string;
  /**
   * The status it is answered with by the service at its default limits over stories260K.gguf:
   * 200 (admitted: a completion of at most `max_new_tokens`), 400 (invalid: a refused construct,
   * a size or nesting limit, a body that is not the request) or 422 (valid, but too complex to
   * compile or mask within the limits, or needing more tokens than `max_new_tokens`). The limits
   * are counted work and sizes, never the clock, and the regex and grammar cases sample with a
   * fixed seed: the same status on any machine, idle or loaded.
   */
  readonly status: 200 | 400 | 422;
  /** The request field a refusal's message names (the regex cases: pattern; the grammar cases: grammar). */
  readonly field: string;
  /** What a refusal's message must also say. */
  readonly message?: RegExp;
}

const PROMPT = "Once upon a time";
/** The generated completions' length and seed (a 200's path through the constraint is the same each run). */
const MAX_NEW_TOKENS = 8;
const SEED = 1;
type Status = HostileCase["status"];
const regex = (name: string, pattern: string | string[], status: Status, extra: Partial<HostileCase> = {}): HostileCase => ({
  name: `regex: ${name}`,
  path: "/v1/completion/regex",
  body: { prompt: PROMPT, pattern, max_new_tokens: MAX_NEW_TOKENS, seed: SEED },
  status,
  field: "pattern",
  ...extra,
});
const cfg = (name: string, grammar: string, status: Status, extra: Partial<HostileCase> & { maxIgnoredRun?: number } = {}): HostileCase => {
  const { maxIgnoredRun, ...rest } = extra;
  return {
    name: `grammar: ${name}`,
    path: "/v1/completion/cfg",
    body: {
      prompt: PROMPT,
      grammar,
      max_new_tokens: MAX_NEW_TOKENS,
      seed: SEED,
      ...(maxIgnoredRun !== undefined ? { max_ignored_run: maxIgnoredRun } : {}),
    },
    status,
    field: "grammar",
    ...rest,
  };
};

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
  for (const n of [10, 16, 20, 25, 30]) out.push(regex(`(a|b)*a(a|b){${n}}`, `(a|b)*a(a|b){${n}}`, 422));
  for (const [p, status] of [
    ["(a*)*b", 200],
    ["(a+)+$", 200],
    ["(.*a){25}", 422],
    ["((a|aa)+)+b", 200],
    ["(x+x+)+y", 200],
    ["(\\w+\\s?)+$", 200],
    ["^(([a-z])+.)+[A-Z]([a-z])+$", 200],
    [".{0,5000}", 422],
    ["[\\s\\S]{1000,4000}", 422],
    ["(?i)[a-z]{2000}", 422],
    ["(?:a{1,100}){1,100}", 422],
    ["(?:a{1000}){1000}", 422],
    ["\\d{1,65535}", 422],
    ["a{0,4294967296}", 400],
    ["x{99999999999999999999}", 400],
    ["[\\u0000-\\U0010FFFF]{500}", 422],
    ["[^a]{300}b[^b]{300}", 422],
    ["(?:[a-f0-9]{2}:){100}[a-f0-9]{2}", 422],
    ["(?:(?:a|b|c|d|e|f|g|h){8}){8}", 422],
    ["(?:.|\\n){0,3000}", 422],
    ["([a-z]+[0-9]+)+[A-Z]{2,30}", 200],
    ["(?:\\w+@\\w+\\.){50}com", 422],
    ["(?s)(?:.{0,40}\\n){0,400}", 422],
    ["(?:ab|a)*(?:ba|b)*c{20}", 422],
  ] as const) {
    out.push(regex(p, p, status));
  }
  // Its 422 is proven cheaply (nothing fits in 8 tokens); the number it would state takes more
  // than the lower bound's share of the work limit, so the message goes without it.
  out.push(
    regex("(?:[^x]{0,50}x){40}", "(?:[^x]{0,50}x){40}", 422, {
      message: /^no text matching the pattern fits within max_new_tokens \(8\)/,
    }),
  );
  out.push(
    regex(
      "64 alternatives near the length limit",
      range(64).map((i) => `(?:${"[a-z]".repeat(400)}|x${i}){1,2}`),
      422,
    ),
  );
  out.push(regex("one 4096-character class run", "[0-9a-f]".repeat(512).slice(0, 4096), 422));
  // Words of one or two base-36 digits: 2,963 characters, under the 4,096 limit.
  out.push(
    regex(
      "alternation of 1000 words",
      range(1000)
        .map((i) => i.toString(36))
        .join("|"),
      200,
    ),
  );
  out.push(regex("groups nested 100 deep", nested(100, "(", ")", "a"), 200));
  out.push(regex("groups nested 1000 deep", nested(1000, "(", ")", "a"), 422, { message: /nested/i }));
  out.push(
    regex("groups nested 2000 deep (under the length limit)", nested(2000, "(?:", ")", "a").slice(0, 4096), 422, { message: /nested/i }),
  );
  out.push(regex("quantifiers stacked", "a" + "{1,2}".repeat(600), 400));
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
  return refused.map(([name, p]) => regex(`refused ${name}`, p, 400));
}

function grammarCases(): HostileCase[] {
  const out: HostileCase[] = [];
  for (const n of [16, 31, 32, 33, 48, 64, 65, 128, 256]) out.push(cfg(`${n} colliding terminals`, collidingTerminals(n), 200));
  out.push(cfg("40 colliding terminals of a slow pattern", collidingTerminals(40, "/(a|b)*a(a|b){8}/"), 422));
  for (const n of [200, 400, 800, 2000])
    out.push(cfg(`chain of ${n} terminal references`, chainedTerminals(n), 422, { message: /terminal references in a chain/ }));
  for (const n of [10, 20, 30, 40]) out.push(cfg(`terminal doubling ${n} times`, doublingTerminals(n), 422));
  for (const n of [10, 20, 30]) out.push(cfg(`template doubling ${n} times`, doublingTemplates(n), 422));
  for (const n of [10, 25, 40]) out.push(cfg(`rule doubling ${n} times`, doublingRules(n), 422));
  for (const depth of [100, 1000, 10_000]) {
    out.push(
      cfg(
        `parentheses nested ${depth} deep`,
        `start: ${nested(depth, "(", ")", '"a"')}`,
        depth >= 1000 ? 400 : 200,
        depth >= 1000 ? { message: /nest/i } : {},
      ),
    );
  }
  out.push(cfg("brackets nested 5000 deep", `start: ${nested(5000, "[", "]", '"a"')}`, 400, { message: /nest/i }));
  out.push(cfg("optional nested 3000 deep", `start: ${nested(3000, "(", ")?", '"a"')}`, 400, { message: /nest/i }));
  out.push(cfg("regexp groups nested 3000 deep", `start: A\nA: /${nested(3000, "(", ")", "a")}/`, 400, { message: /nest/i }));
  for (const [name, g, status] of [
    ["literal ~ 100000", 'start: "a" ~ 100000', 422],
    ["literal ~ 1..100000", 'start: "a" ~ 1..100000', 200],
    ["(literal ~ 1000) ~ 1000", 'start: ("a" ~ 1000) ~ 1000', 422],
    ["rule ~ 50000", 'start: item ~ 50000\nitem: "x" | "y"', 422],
    ["terminal ~ 100000", 'start: A\nA: "a" ~ 100000', 422],
    ["terminal (ab ~ 10..1000) ~ 50", 'start: A\nA: ("ab" ~ 10..1000) ~ 50', 422],
    ["repeat bounds past 2^31", 'start: "a" ~ 0..4294967296', 200],
    ["repeat bounds reversed", 'start: "a" ~ 10..2', 400],
  ] as const) {
    out.push(cfg(name, g, status));
  }
  out.push(cfg("a 2^15-state terminal", "start: A\nA: /(a|b)*a(a|b){14}/", 422));
  out.push(cfg("a terminal past the DFA-state limit", "start: A\nA: /(a|b)*a(a|b){25}/", 422));
  out.push(cfg("backreference in a terminal", "start: A\nA: /(a)\\1/", 400, { message: /backreference/i }));
  out.push(
    cfg(
      "64 overlapping word terminals",
      `start: (${range(64)
        .map((i) => `W${i}`)
        .join(" | ")})+\n${range(64)
        .map((i) => `W${i}: /[a-z]{1,${i + 2}}/`)
        .join("\n")}`,
      200,
    ),
  );
  out.push(
    cfg(
      "2000 keyword terminals",
      `start: (${range(2000)
        .map((i) => `"kw${i}"`)
        .join(" | ")})+`,
      422,
    ),
  );
  // 2,500 rules: 55,280 characters, under the 65,536 limit (3,000 were refused for their size).
  out.push(
    cfg(
      "2500 rules in a chain",
      `start: r0\n${range(2500)
        .map((i) => (i + 1 < 2500 ? `r${i}: "x" r${i + 1} | "y"` : `r${i}: "z"`))
        .join("\n")}`,
      422,
      { message: /LALR table cells/ },
    ),
  );
  out.push(
    cfg(
      "5000 alternatives",
      `start: ${range(5000)
        .map((i) => `"a${i}"`)
        .join(" | ")}`,
      422,
    ),
  );
  out.push(
    cfg(
      "deep left recursion",
      `start: list\nlist: list "," item | item\nitem: ${range(500)
        .map((i) => `"i${i}"`)
        .join(" | ")}`,
      200,
    ),
  );
  out.push(cfg("ambiguous grammar (reduce/reduce)", 'start: a | b\na: "x"\nb: "x"', 400, { message: /collision/i }));
  out.push(cfg("recursion in a terminal", "start: A\nA: B\nB: A", 400, { message: /recursion/i }));
  out.push(cfg("undefined terminal", "start: NOPE", 400, { message: /NOPE/ }));
  // Answered since the greedy completion searches a lexer state's token ends only as far as it
  // needs: the first budget question searched every whitespace and comment run up to 256 bytes
  // (4.6M steps, over the limit); it counts 1,152 now, and each mask about 31k.
  out.push(
    cfg(
      "comments and ignores at max_ignored_run 256",
      '%import common.WS\n%ignore WS\nCOMMENT: /#[^\\n]*/\n%ignore COMMENT\nstart: ("a" | "b")+',
      200,
      { maxIgnoredRun: 256 },
    ),
  );
  out.push(
    cfg(
      "every common terminal imported",
      "%import common (WORD, NUMBER, ESCAPED_STRING, WS, CNAME, SIGNED_NUMBER, INT, LETTER, DIGIT, HEXDIGIT, NEWLINE)\n%ignore WS\nstart: (WORD | NUMBER | ESCAPED_STRING | CNAME | SIGNED_NUMBER)+",
      200,
    ),
  );
  out.push(cfg("a terminal of any 1000 characters", "start: A\nA: /.{1000}/", 422));
  out.push(cfg("a unicode-heavy terminal", "start: A+\nA: /[^\\x00-\\x7f]{1,200}/", 200));
  // Literal alternatives up to 65,000 characters (the limit is 65,536), cut after the last whole one.
  out.push(
    cfg(
      "a grammar near the size limit",
      `start: ${range(7000)
        .map((i) => `"k${i % 100}${i}"`)
        .join("|")}`
        .slice(0, 65_000)
        .replace(/\|[^|]*$/, ""),
      422,
      { message: /terminals, more than the limit/ },
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
      422,
    ),
  );
  out.push(cfg("syntax garbage", "start: ((((( | ))) ~ ~ %ignore %import", 400));
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
      status: 400,
      field: "categories",
      message: /context/,
    },
    {
      name: "categorize: 256 categories of 256 characters, multiple",
      path: "/v1/categorize",
      body: { prompt: PROMPT, categories: categories(256, 256), allow_multiple_classes: true },
      status: 400,
      field: "categories",
      message: /context/,
    },
    {
      name: "categorize: a 32768-character prompt",
      path: "/v1/categorize",
      body: { prompt: "word ".repeat(6553), categories: ["a", "b"] },
      status: 400,
      field: "prompt",
      message: /context/,
    },
    {
      name: "categorize: duplicate categories",
      path: "/v1/categorize",
      body: { prompt: PROMPT, categories: ["a", "a"] },
      status: 400,
      field: "categories",
      message: /duplicates/,
    },
  ];
}

function bodyCases(): HostileCase[] {
  return [
    {
      name: "body: arrays nested 100000 deep",
      path: "/v1/completion/regex",
      raw: "[".repeat(100_000) + "]".repeat(100_000),
      status: 400,
      field: "body",
      message: /JSON object/,
    },
    {
      name: "body: a pattern array nested deep",
      path: "/v1/completion/regex",
      raw: `{"prompt":"x","pattern":${"[".repeat(50_000)}"a"${"]".repeat(50_000)}}`,
      status: 400,
      field: "pattern",
      message: /must be a string/,
    },
    {
      name: "body: __proto__ key",
      path: "/v1/completion/regex",
      raw: '{"prompt":"x","pattern":"a","__proto__":{"admin":true}}',
      status: 400,
      field: "__proto__",
      message: /unknown field/,
    },
    {
      name: "body: a number past float",
      path: "/v1/completion/regex",
      raw: '{"prompt":"x","pattern":"a","max_new_tokens":1e400}',
      status: 400,
      field: "max_new_tokens",
    },
    {
      name: "body: a prompt of 32768 characters",
      path: "/v1/completion/regex",
      body: { prompt: "ab ".repeat(10_922) + "ab", pattern: "[a-z]{3}", max_new_tokens: 4 },
      status: 400,
      field: "prompt",
      message: /context/,
    },
    {
      name: "body: a prompt past the limit",
      path: "/v1/completion/regex",
      body: { prompt: "a".repeat(32_769), pattern: "a" },
      status: 400,
      field: "prompt",
      message: /at most 32768 characters/,
    },
    {
      name: "body: a pattern past the length limit",
      path: "/v1/completion/regex",
      body: { prompt: PROMPT, pattern: "a".repeat(4097) },
      status: 400,
      field: "pattern",
      message: /at most 4096 characters/,
    },
    {
      name: "body: 65 patterns",
      path: "/v1/completion/regex",
      body: { prompt: PROMPT, pattern: range(65).map((i) => `a${i}`) },
      status: 400,
      field: "pattern",
      message: /at most 64 items/,
    },
    {
      name: "body: a grammar past the length limit",
      path: "/v1/completion/cfg",
      body: { prompt: PROMPT, grammar: `start: "a"\n//${"x".repeat(65_540)}` },
      status: 400,
      field: "grammar",
      message: /at most 65536 characters/,
    },
  ];
}

/** Every hostile case, in a fixed order. */
export function hostileCases(): HostileCase[] {
  return [...catastrophicRegexes(), ...refusedConstructs(), ...grammarCases(), ...categorizeCases(), ...bodyCases()];
}

/** The API key the hostile requests are sent with. */
export const HOSTILE_KEY = "hostile-suite-key";

export interface HostileService {
  /** http://127.0.0.1:<port> */
  readonly base: string;
  /** The service process's id (its resident memory is read from /proc/<pid>/status). */
  readonly pid: number;
  /** SIGTERM, wait for the exit, remove the data directory. */
  stop(): Promise<void>;
}

/**
 * `trellis serve` over stories260K.gguf as its own process, as the README runs it: `entry` is
 * the node arguments before `serve` (`["--import", "tsx", "src/cli.ts"]` for the sources,
 * `["dist/cli.js"]` for the build). Its defaults, except: the rate limit off (every case must
 * reach the compiler, not a 429), a fresh data directory, loopback on a free port, and `env`.
 * Resolves once its start-up line names the URL.
 */
export function startHostileService(entry: readonly string[], env: Record<string, string> = {}): Promise<HostileService> {
  const dataDir = mkdtempSync(join(tmpdir(), "trellis-hostile-"));
  const child = spawn(process.execPath, [...entry, "serve"], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TRELLIS_MODEL: STORIES_260K,
      TRELLIS_API_KEYS: HOSTILE_KEY,
      TRELLIS_DATA_DIR: dataDir,
      TRELLIS_ADMIN_TOKEN: "hostile-suite-admin-token-0123456789",
      TRELLIS_RATE_LIMIT: "0",
      HOST: "127.0.0.1",
      PORT: "0",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return new Promise((resolve, reject) => {
    // The tail of its stderr, for the error if it does not start; read to the end so it never blocks.
    let log = "";
    let started = false;
    const fail = (error: Error): void => {
      void stop().then(() => reject(error));
    };
    const timer = setTimeout(() => fail(new Error(`service did not start:\n${log}`)), 60_000);
    child.stderr!.on("data", (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-20_000);
      const match = started ? null : /listening on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ base: match[1]!, pid: child.pid!, stop });
      }
    });
    child.once("exit", (code, signal) => {
      if (started) return;
      clearTimeout(timer);
      fail(new Error(`service exited with ${code ?? signal}:\n${log}`));
    });
  });
}

export interface HostileAnswer {
  status: number;
  /** From sending to the whole body read. */
  ms: number;
  /** The parsed JSON body; null when it is not JSON. */
  body: unknown;
  text: string;
}

/** POSTs one case (its JSON body, or `raw` as it is) with the hostile key. */
export async function sendHostile(base: string, c: HostileCase): Promise<HostileAnswer> {
  const t0 = performance.now();
  const response = await fetch(base + c.path, {
    method: "POST",
    headers: { authorization: `Bearer ${HOSTILE_KEY}`, "content-type": "application/json" },
    body: c.raw ?? JSON.stringify(c.body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await response.text();
  const ms = performance.now() - t0;
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // left null: the caller judges it
  }
  return { status: response.status, ms, body, text };
}

export interface HealthPolls {
  /** When each poll was sent: performance.timeOrigin + performance.now(), comparable across threads. */
  startedAt: number[];
  /** Each poll's latency, ms, in order (Infinity where the request failed). */
  latencies: number[];
  /** Each poll's status (0 where the request failed). */
  statuses: number[];
  /** Each poll's body as text ("" where the request failed). */
  bodies: string[];
}

/**
 * Polls `base`/healthz every `intervalMs` from its own thread, so that the caller's own work
 * (sending, parsing) does not delay it, until `stop`.
 */
export function startHealthPoller(base: string, intervalMs = 50): { stop: () => Promise<HealthPolls> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     const polls = { startedAt: [], latencies: [], statuses: [], bodies: [] };
     let stopping = false;
     async function poll() {
       while (!stopping) {
         const t0 = performance.now();
         polls.startedAt.push(performance.timeOrigin + t0);
         try {
           const r = await fetch(workerData.base + "/healthz");
           const text = await r.text();
           polls.latencies.push(performance.now() - t0);
           polls.statuses.push(r.status);
           polls.bodies.push(text);
         } catch {
           polls.latencies.push(Infinity);
           polls.statuses.push(0);
           polls.bodies.push("");
         }
         await new Promise((r) => setTimeout(r, workerData.intervalMs));
       }
       parentPort.postMessage(polls);
     }
     parentPort.once("message", () => { stopping = true; });
     poll();`,
    { eval: true, workerData: { base, intervalMs } },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once("message", (polls: HealthPolls) => {
          void worker.terminate();
          resolve(polls);
        });
        worker.postMessage("stop");
      }),
  };
}
