// Grammar completion over HTTP with the real engine (stories260K): POST /v1/completion/cfg and its
// alias /v1/completion/grammar. Completions are checked by Lark 1.1.5 (one oracle process, at the
// end); grammar errors are 400s naming `grammar` (with line and column when known); budgets no
// sentence fits are 422s.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { auth, testConfig } from "./support/fake-engine.js";
import { NO_PREFIX_CACHE, ORACLE_PYTHON, REPO_ROOT, STORIES_260K } from "./support/paths.js";

const ARITHMETIC = `?start: sum
?sum: product | sum "+" product -> add | sum "-" product -> sub
?product: atom | product "*" atom -> mul | product "/" atom -> div
?atom: NUMBER -> number | "-" atom -> neg | NAME -> var | "(" sum ")"
%import common.CNAME -> NAME
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`;
const JSON_GRAMMAR = `?start: value
?value: object | array | string | SIGNED_NUMBER -> number | "true" -> true | "false" -> false | "null" -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
`;
const AS = `start: "a"+\n`;
const LONG_LITERAL = `start: "floccinaucinihilipilification"\n`;

let engine: Engine;
let app: FastifyInstance;
let store: KeyStore;
/** Completions to show Lark at the end: grammar → texts. */
const toCheck = new Map<string, string[]>();

function check(grammar: string, text: string): void {
  let texts = toCheck.get(grammar);
  if (!texts) toCheck.set(grammar, (texts = []));
  texts.push(text);
}

before(async () => {
  engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 8, contextSize: 512, prefixCache: NO_PREFIX_CACHE });
  store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  app = await createServer({ engine, config: testConfig(), store });
  await app.ready();
});

after(async () => {
  await app.close();
  store.close();
  await engine.close();
});

const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: auth(), payload: JSON.stringify(payload) });

interface Completion {
  completion: string;
  tokens_generated: number;
  stop_reason: string;
}

function errorOf(res: { statusCode: number; body: string }, status: number): string {
  assert.equal(res.statusCode, status, res.body);
  const body = JSON.parse(res.body) as { error: string; code: number };
  assert.equal(body.code, status);
  assert.equal(typeof body.error, "string");
  return body.error;
}

test("cfg: valid grammars complete with the documented response shape", async () => {
  for (const [grammar, max] of [
    [ARITHMETIC, 12],
    [JSON_GRAMMAR, 24],
    [AS, 6],
  ] as const) {
    for (const stop of [true, false]) {
      const res = await post("/v1/completion/cfg", {
        prompt: "Once upon a time",
        grammar,
        max_new_tokens: max,
        stop_after_match: stop,
        seed: 7,
      });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as Completion;
      assert.deepEqual(Object.keys(body).sort(), ["completion", "stop_reason", "tokens_generated"]);
      assert.ok(body.tokens_generated >= 1 && body.tokens_generated <= max, res.body);
      assert.ok(body.stop_reason === "pattern_match" || body.stop_reason === "token_limit");
      check(grammar, body.completion);
    }
  }
});

test("grammar alias: same request, same seed, same completion as /cfg", async () => {
  const payload = {
    prompt: "The answer is",
    grammar: ARITHMETIC,
    max_new_tokens: 10,
    temperature: 0.8,
    seed: 1234,
    stop_after_match: false,
  };
  const a = await post("/v1/completion/cfg", payload);
  const b = await post("/v1/completion/grammar", payload);
  assert.equal(a.statusCode, 200, a.body);
  assert.equal(b.statusCode, 200, b.body);
  assert.deepEqual(b.json(), a.json());
  check(ARITHMETIC, (a.json() as Completion).completion);
});

test("defaults: max_new_tokens 5 and stop_after_match true", async () => {
  const res = await post("/v1/completion/grammar", { prompt: "Say a", grammar: AS });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json() as Completion;
  // Stopping at the first complete sentence: one token of a's (never more tokens than needed).
  assert.equal(body.tokens_generated, 1);
  assert.equal(body.stop_reason, "pattern_match");
  assert.match(body.completion, /^a+$/);
  // Without stop_after_match the default budget of 5 tokens still bounds it.
  const longer = await post("/v1/completion/cfg", { prompt: "Say a", grammar: AS, stop_after_match: false, temperature: 0 });
  assert.equal(longer.statusCode, 200, longer.body);
  assert.ok((longer.json() as Completion).tokens_generated <= 5);
  check(AS, body.completion);
  check(AS, (longer.json() as Completion).completion);
});

test("grammar errors are 400s naming the grammar, with line and column when known", async () => {
  let msg = errorOf(await post("/v1/completion/cfg", { prompt: "x", grammar: "start: foo\n" }), 400);
  assert.match(msg, /grammar/);
  assert.match(msg, /foo/);
  msg = errorOf(await post("/v1/completion/grammar", { prompt: "x", grammar: 'start: "a"\nfoo: ("b"\n' }), 400);
  assert.match(msg, /grammar/);
  assert.match(msg, /line 2, column \d+/);
  msg = errorOf(await post("/v1/completion/cfg", { prompt: "x", grammar: 'x: "a"\n' }), 400);
  assert.match(msg, /grammar/);
  assert.match(msg, /start/);
  msg = errorOf(await post("/v1/completion/cfg", { prompt: "x", grammar: 'start: "a"\n%import common.NOPE\n' }), 400);
  assert.match(msg, /grammar/);
  // Schema level: missing or empty grammar.
  assert.match(errorOf(await post("/v1/completion/cfg", { prompt: "x" }), 400), /grammar/);
  assert.match(errorOf(await post("/v1/completion/grammar", { prompt: "x", grammar: "" }), 400), /grammar/);
  // The server keeps serving after errors.
  const ok = await post("/v1/completion/cfg", { prompt: "x", grammar: AS });
  assert.equal(ok.statusCode, 200, ok.body);
});

test("a budget no sentence fits is a 422 naming the grammar; a larger one completes", async () => {
  const msg = errorOf(await post("/v1/completion/cfg", { prompt: "Once", grammar: LONG_LITERAL, max_new_tokens: 2 }), 422);
  assert.match(msg, /grammar/);
  // The 422 says how many tokens the shortest sentence needs, and that number is exact here: one
  // token fewer is refused the same way, the number itself completes.
  const needed = Number(/needs at least (\d+) tokens but max_new_tokens is 2/.exec(msg)?.[1]);
  assert.ok(needed > 2, msg);
  const fewer = errorOf(await post("/v1/completion/cfg", { prompt: "Once", grammar: LONG_LITERAL, max_new_tokens: needed - 1 }), 422);
  assert.match(fewer, new RegExp(`needs at least ${needed} tokens but max_new_tokens is ${needed - 1}`));
  const res = await post("/v1/completion/grammar", { prompt: "Once", grammar: LONG_LITERAL, max_new_tokens: needed });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal((res.json() as Completion).completion, "floccinaucinihilipilification");
});

test("max_ignored_run bounds %ignore'd whitespace: none at 0, runs of at most n otherwise", async () => {
  // Whitespace outside string literals (inside them it is a string's own text, not ignored).
  const longestRun = (text: string): number => Math.max(0, ...Array.from(text.matchAll(/[ \t\f\r\n]+/g), (m) => m[0].length));
  const runs = new Map<number | undefined, number[]>();
  for (const maxIgnoredRun of [undefined, 0, 2]) {
    const seen: number[] = [];
    for (let seed = 0; seed < 6; seed++) {
      const payload = {
        prompt: "Data:",
        grammar: JSON_GRAMMAR,
        max_new_tokens: 24,
        stop_after_match: false,
        temperature: 1.5,
        seed,
        max_ignored_run: maxIgnoredRun,
      };
      const res = await post("/v1/completion/cfg", payload);
      assert.equal(res.statusCode, 200, res.body);
      const text = (res.json() as Completion).completion;
      check(JSON_GRAMMAR, text);
      seen.push(longestRun(text.replace(/"(?:\\.|[^"\\])*"/g, '""')));
    }
    runs.set(maxIgnoredRun, seen);
  }
  // The same seeds with the default run do produce whitespace, so the bounds below are not vacuous.
  assert.ok(Math.max(...runs.get(undefined)!) > 2, `default runs ${runs.get(undefined)}`);
  assert.ok(
    runs.get(undefined)!.every((n) => n <= 8),
    `default runs ${runs.get(undefined)}`,
  );
  assert.deepEqual(runs.get(0), [0, 0, 0, 0, 0, 0]);
  assert.ok(
    runs.get(2)!.every((n) => n <= 2),
    `runs ${runs.get(2)}`,
  );
});

test("concurrent grammar requests share the engine and all complete", async () => {
  const grammars = [ARITHMETIC, JSON_GRAMMAR, AS];
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      post(i % 2 ? "/v1/completion/cfg" : "/v1/completion/grammar", {
        prompt: `Story ${i}:`,
        grammar: grammars[i % 3],
        max_new_tokens: 8 + (i % 5) * 4,
        stop_after_match: i % 4 === 0,
        seed: i,
      }),
    ),
  );
  results.forEach((res, i) => {
    assert.equal(res.statusCode, 200, res.body);
    check(grammars[i % 3]!, (res.json() as Completion).completion);
  });
});

test("Lark accepts every completion served above", () => {
  const grammars = [...toCheck.keys()];
  assert.ok(grammars.length === 3);
  const input = grammars.map((g) => JSON.stringify({ grammar: g, texts: toCheck.get(g) })).join("\n") + "\n";
  const r = spawnSync(ORACLE_PYTHON, [resolve(REPO_ROOT, "test", "grammars", "lark_oracle.py")], { input, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const answers = r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { ok: boolean; results: boolean[] });
  grammars.forEach((g, i) => {
    assert.ok(answers[i]!.ok);
    toCheck
      .get(g)!
      .forEach((text, j) =>
        assert.ok(answers[i]!.results[j], `Lark rejects ${JSON.stringify(text)} for grammar ${JSON.stringify(g.slice(0, 30))}`),
      );
  });
});
