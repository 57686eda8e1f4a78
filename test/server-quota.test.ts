// Per-key token quotas through the real HTTP server (a listening socket, the fake engine): the
// X-Quota-Remaining header on answers and errors (after this request's charge; before it on
// streams), 402 in the Thiggle and the OpenAI shapes (an exhausted key in the key check, before
// the body is read; a request whose max tokens × choices exceed what is left at admission, while
// a smaller one passes), reservations under concurrent requests never exceeding the quota, holds
// given back when clients go away or streams are cut short, and the CLI's quota commands.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CliIo } from "../src/cli.js";
import type { Engine } from "../src/generate/index.js";
import { KeyStore } from "../src/store/index.js";
import type { Config } from "../src/config.js";
import { TEST_KEY, type FakeEngine } from "./support/fake-engine.js";
import { callJson, listening, runCli, type JsonAnswer, type ListeningServer } from "./support/service.js";

type Server = ListeningServer;

function start(overrides: Partial<Config> = {}, wrap?: (engine: FakeEngine) => Engine, store?: KeyStore): Promise<Server> {
  return listening(overrides, { wrap, store });
}

interface Answer extends JsonAnswer {
  /** X-Quota-Remaining, null when absent. */
  remaining: string | null;
}

async function call(server: Server, key: string, path: string, body?: unknown, rawBody?: string): Promise<Answer> {
  const answer = await callJson(server.base, key, path, body, rawBody);
  return { ...answer, remaining: answer.headers.get("x-quota-remaining") };
}

const cfg = (maxNewTokens: number, prompt = "p") => ({ prompt, grammar: "g", max_new_tokens: maxNewTokens });

function assertThiggle402(answer: Answer, message: RegExp): void {
  assert.equal(answer.status, 402, answer.text);
  assert.deepEqual(Object.keys(answer.body).sort(), ["code", "error"]);
  assert.equal(answer.body.code, 402);
  assert.match(answer.body.error as string, message);
}

function assertOpenAI402(answer: Answer, message: RegExp): void {
  assert.equal(answer.status, 402, answer.text);
  const error = answer.body.error as Record<string, unknown>;
  assert.deepEqual(Object.keys(answer.body), ["error"]);
  assert.equal(error.type, "insufficient_quota");
  assert.equal(error.code, "insufficient_quota");
  assert.equal(error.param, null);
  assert.match(error.message as string, message);
}

/** Waits until every hold is given back (a stream's charge comes when the server sees it end). */
async function settled(store: KeyStore): Promise<void> {
  for (let i = 0; i < 200 && store.reservationsInProgress > 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(store.reservationsInProgress, 0, "every reservation was released");
}

describe("token quotas over HTTP", () => {
  let server: Server;
  before(async () => (server = await start()));
  after(async () => server.close());

  test("keys without a quota (and TRELLIS_API_KEYS keys) carry no header and are never refused", async () => {
    const open = server.store.createKey("open");
    for (const key of [open.key, TEST_KEY]) {
      const answer = await call(server, key, "/v1/completion/cfg", cfg(32));
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.remaining, null);
      assert.equal((await call(server, key, "/v1/completion/cfg", { prompt: "p" })).remaining, null);
    }
  });

  test("the header counts this request's charge; max tokens beyond what is left is a 402 while a smaller request passes", async () => {
    const { id, key } = server.store.createKey("limited", { quota: 20 });
    const prepared = server.engine.prepared.length;

    const regex = await call(server, key, "/v1/completion/regex", { prompt: "p", pattern: "abc", max_new_tokens: 8 });
    assert.equal(regex.status, 200, regex.text);
    assert.equal(regex.body.tokens_generated, 3, "reserved 8, charged the 3 generated");
    assert.equal(regex.remaining, "17");

    const tooMany = await call(server, key, "/v1/completion/cfg", cfg(18));
    assertThiggle402(
      tooMany,
      /^this request may generate up to 18 tokens .*more than the 17 left of this API key's token quota \(20 tokens, 3 used\); a request that may generate at most 17 tokens would be admitted$/,
    );
    assert.equal(tooMany.remaining, "17");
    assert.equal(server.engine.prepared.length, prepared + 1, "refused before its constraint was compiled");

    const fits = await call(server, key, "/v1/completion/cfg", cfg(17));
    assert.equal(fits.status, 200, fits.text);
    assert.equal(fits.body.tokens_generated, 17);
    assert.equal(fits.remaining, "0");
    assert.deepEqual(server.store.quotaStatus(id), { quota: 20, used: 20, reserved: 0, remaining: 0, available: 0 });

    // Exhausted: refused in the key check, before the body is read (a malformed one included).
    const exhausted = await call(server, key, "/v1/completion/regex", undefined, "{ not json");
    assertThiggle402(exhausted, /^the token quota of this API key is used up: 20 of its 20 tokens generated$/);
    assert.equal(exhausted.remaining, "0");
    assertThiggle402(await call(server, key, "/v1/categorize", { prompt: "p", categories: ["a"] }), /used up/);
    const openai = await call(server, key, "/v1/completions", { model: "trellis", prompt: "p", max_tokens: 1 });
    assertOpenAI402(openai, /^the token quota of this API key is used up/);
    assert.equal(openai.remaining, "0");
    assertOpenAI402(await call(server, key, "/v1/models"), /used up/);

    // Raised: the key works again, and the header says so on success and on errors alike.
    server.store.setQuota(id, 30);
    const unknownField = await call(server, key, "/v1/completion/cfg", { ...cfg(2), colour: "red" });
    assert.equal(unknownField.status, 400);
    assert.equal(unknownField.remaining, "10");
    const unsatisfiable = await call(server, key, "/v1/completion/cfg", cfg(2, "!unsat"));
    assert.equal(unsatisfiable.status, 422);
    assert.equal(unsatisfiable.remaining, "10");
    const badPrompt = await call(server, key, "/v1/completions", { model: "trellis", prompt: "p", max_tokens: 1, n: 99 });
    assert.equal(badPrompt.status, 400);
    assert.equal(badPrompt.remaining, "10");
    const models = await call(server, key, "/v1/models");
    assert.equal(models.status, 200);
    assert.equal(models.remaining, "10");
    const categorized = await call(server, key, "/v1/categorize", { prompt: "p", categories: ["a", "b"] });
    assert.equal(categorized.status, 200);
    assert.equal(categorized.remaining, "10");
    await settled(server.store);
  });

  test("OpenAI routes reserve max_tokens × choices (× prompts): beyond what is left a 402 insufficient_quota", async () => {
    const { key } = server.store.createKey("openai", { quota: 15 });
    const request = (maxTokens: number) => ({ model: "trellis", prompt: ["a", "b"], n: 2, max_tokens: maxTokens });
    const refused = await call(server, key, "/v1/completions", request(4));
    assertOpenAI402(refused, /^this request may generate up to 16 tokens .*more than the 15 left/);
    assert.equal(refused.remaining, "15");
    const passed = await call(server, key, "/v1/completions", request(3));
    assert.equal(passed.status, 200, passed.text);
    assert.equal((passed.body.usage as { completion_tokens: number }).completion_tokens, 4, "four choices of one token each");
    assert.equal(passed.remaining, "11");
    // Unconstrained completions default to 16 tokens: more than is left now.
    assertOpenAI402(await call(server, key, "/v1/completions", { model: "trellis", prompt: "a" }), /up to 16 tokens/);
    await settled(server.store);
  });

  test("a key check answer (429) carries the header too", async () => {
    const limited = await start({ rateLimit: 1 });
    try {
      const { key } = limited.store.createKey("rate", { quota: 9 });
      assert.equal((await call(limited, key, "/v1/completion/cfg", cfg(2))).remaining, "7");
      const throttled = await call(limited, key, "/v1/completion/cfg", cfg(2));
      assert.equal(throttled.status, 429);
      assert.equal(throttled.remaining, "7");
    } finally {
      await limited.close();
    }
  });

  test("concurrent requests never exceed the quota: the first that fit are admitted, the rest get 402", async () => {
    const { id, key } = server.store.createKey("concurrent", { quota: 50 });
    server.engine.delayMs = 300; // every admitted request is still generating when the last arrives
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call(server, key, "/v1/completion/cfg", cfg(4))));
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status === 402);
      assert.equal(ok.length, 12, "12 × 4 reserved fits 50, a 13th does not");
      assert.equal(refused.length, 8);
      for (const r of refused)
        assert.match(r.body.error as string, /up to 4 tokens .*more than the 2 left .*48 reserved by its requests in progress/);
      assert.deepEqual(server.store.quotaStatus(id), { quota: 50, used: 48, reserved: 0, remaining: 2, available: 2 });
      assert.deepEqual(
        ok
          .map((a) => Number(a.remaining))
          .sort((a, b) => b - a)
          .at(-1),
        2,
      );
    } finally {
      server.engine.delayMs = 0;
    }
    assert.equal((await call(server, key, "/v1/completion/cfg", cfg(3))).status, 402);
    const last = await call(server, key, "/v1/completion/cfg", cfg(2));
    assert.equal(last.status, 200);
    assert.equal(last.remaining, "0");

    // A mixed crowd (charges below the reservation, categorizations reserving nothing): the total
    // charged is exactly what the answers say they generated, and within the quota.
    const mixed = server.store.createKey("mixed", { quota: 100 });
    server.engine.delayMs = 20;
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          i % 5 === 4
            ? call(server, mixed.key, "/v1/categorize", { prompt: "p", categories: ["a", "b"] })
            : i % 2 === 0
              ? call(server, mixed.key, "/v1/completion/regex", { prompt: "p", pattern: "abc", max_new_tokens: 1 + (i % 9) })
              : call(server, mixed.key, "/v1/completion/cfg", cfg(1 + (i % 7))),
        ),
      );
      const generated = answers.reduce((sum, a) => sum + (a.status === 200 ? Number(a.body.tokens_generated ?? 0) : 0), 0);
      assert.ok(answers.every((a) => a.status === 200 || a.status === 402));
      const status = server.store.quotaStatus(mixed.id)!;
      assert.equal(status.used, generated);
      assert.ok(status.used <= 100);
      assert.equal(status.reserved, 0);
    } finally {
      server.engine.delayMs = 0;
    }
  });

  test("a client that goes away mid-generation: its hold is given back", async () => {
    const { id, key } = server.store.createKey("gone", { quota: 10 });
    const controller = new AbortController();
    const pending = fetch(server.base + "/v1/completion/cfg", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(cfg(10, "!slow")),
      signal: controller.signal,
    }).catch(() => null);
    for (let i = 0; i < 100 && server.store.quotaStatus(id)!.reserved === 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(server.store.quotaStatus(id)!.reserved, 10);
    assertThiggle402(await call(server, key, "/v1/completion/cfg", cfg(1)), /more than the 0 left .*10 reserved/);
    controller.abort();
    await pending;
    await settled(server.store);
    assert.deepEqual(server.store.quotaStatus(id), { quota: 10, used: 0, reserved: 0, remaining: 10, available: 10 });
    assert.equal((await call(server, key, "/v1/completion/cfg", cfg(10))).status, 200);
  });
});

describe("token quotas on streams (SSE)", () => {
  let server: Server;
  let tokenDelayMs = 0;
  let produced = 0;
  before(
    async () =>
      (server = await start({}, (engine) => ({
        ...engine,
        modelId: "fake",
        renderChat: () => ({ text: "x", tokens: Int32Array.of(1, 2), segments: [] }),
        async completeChoices(req, n, onChoiceText) {
          const results = [];
          for (let i = 0; i < n; i++) {
            let count = 0;
            for (let t = 0; t < req.maxNewTokens; t++) {
              await new Promise((r) => setTimeout(r, tokenDelayMs));
              if (req.signal?.aborted) throw req.signal.reason;
              count++;
              produced++;
              onChoiceText?.(i, "a", [{ id: 1, bytes: Uint8Array.of(97) }]);
            }
            results.push({ completion: "a".repeat(count), tokensGenerated: count, stopReason: "token_limit" as const });
          }
          return results;
        },
      }))),
  );
  after(async () => server.close());

  const chat = (key: string, body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(server.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "fake", messages: [{ role: "user", content: "hi" }], ...body }),
      signal,
    });

  test("non-streamed chat: max_tokens × n reserved; the header after the charge", async () => {
    const { key } = server.store.createKey("chat", { quota: 14 });
    const refused = await chat(key, { max_tokens: 5, n: 3 });
    assert.equal(refused.status, 402);
    assert.match(((await refused.json()) as { error: { message: string } }).error.message, /up to 15 tokens .*more than the 14 left/);
    const ok = await chat(key, { max_tokens: 4, n: 3 });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get("x-quota-remaining"), "2");
    await ok.text();
  });

  test("a stream's header is what was left before it; its charge comes when it ends", async () => {
    const { id, key } = server.store.createKey("stream", { quota: 100 });
    const response = await chat(key, { max_tokens: 5, n: 2, stream: true });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.equal(response.headers.get("x-quota-remaining"), "100");
    assert.match(await response.text(), /\[DONE\]/);
    await settled(server.store);
    assert.deepEqual(server.store.quotaStatus(id), { quota: 100, used: 10, reserved: 0, remaining: 90, available: 90 });
  });

  test("a stream cut short is charged exactly what it generated, and the rest of its hold is released", async () => {
    const { id, key } = server.store.createKey("cut", { quota: 100 });
    tokenDelayMs = 15;
    produced = 0;
    try {
      const controller = new AbortController();
      const response = await chat(key, { max_tokens: 30, stream: true }, controller.signal);
      assert.equal(response.headers.get("x-quota-remaining"), "100");
      assert.equal(server.store.quotaStatus(id)!.reserved, 30);
      const reader = response.body!.getReader();
      let seen = "";
      while ((seen.match(/"content":"a"/g) ?? []).length < 3) {
        const { done, value } = await reader.read();
        assert.equal(done, false, "the stream is still going");
        seen += new TextDecoder().decode(value);
      }
      controller.abort();
      await reader.cancel().catch(() => {});
      await settled(server.store);
    } finally {
      tokenDelayMs = 0;
    }
    const status = server.store.quotaStatus(id)!;
    assert.ok(produced >= 3 && produced < 30, `stopped early (${produced} tokens)`);
    assert.equal(status.used, produced, "charged what it generated");
    assert.equal(status.reserved, 0);
  });
});

describe("quota commands of the CLI", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "trellis-quota-cli-"));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (argv: string[], extra: Partial<CliIo> = {}) => runCli(argv, { TRELLIS_DATA_DIR: dataDir }, extra);

  test("keys create --quota, keys quota <id> <N|none>, keys list shows quota and what is left", async () => {
    const created = await run(["keys", "create", "billing", "service", "--quota", "500"]);
    assert.equal(created.code, 0, created.err.join("\n"));
    assert.match(created.out[0]!, /^trl_/);
    assert.match(created.err[0]!, /created key 1 "billing service" with a quota of 500 tokens/);
    const second = await run(["--quota=7", "keys", "create", "tiny"]);
    assert.equal(second.code, 0, second.err.join("\n"));
    const plain = await run(["keys", "create", "plain"]);
    assert.equal(plain.code, 0);

    let list = await run(["keys", "list"]);
    assert.match(
      list.out[0]!,
      /^id\s+name\s+key\s+status\s+requests\s+tokens\s+quota\s+left\s+last used\s+expires\s+rate limit\s+created$/,
    );
    assert.match(list.out[1]!, /^1\s+billing service\s+trl_\S+…\s+active\s+0\s+0\s+500\s+500\s+never/);
    assert.match(list.out[2]!, /^2\s+tiny\s+\S+\s+active\s+0\s+0\s+7\s+7\s+never/);
    assert.match(list.out[3]!, /^3\s+plain\s+\S+\s+active\s+0\s+0\s+none\s+-\s+never/);

    // Used by a server on the same data folder: the quota set by the CLI is enforced there.
    const store = new KeyStore({ dataDir, flushIntervalMs: 0 });
    const server = await start({}, undefined, store);
    try {
      const key = created.out[0]!;
      const answer = await call(server, key, "/v1/completion/cfg", cfg(30));
      assert.equal(answer.remaining, "470");
      assertThiggle402(await call(server, second.out[0]!, "/v1/completion/cfg", cfg(8)), /up to 8 tokens .*more than the 7 left/);
    } finally {
      await server.close();
      store.close();
    }

    const lowered = await run(["keys", "quota", "1", "200"]);
    assert.deepEqual(lowered.out, ["key 1 may generate 200 tokens in all; it has used 30, 170 left"]);
    const cleared = await run(["keys", "quota", "2", "none"]);
    assert.deepEqual(cleared.out, ["key 2 has no quota now (unlimited)"]);
    assert.deepEqual((await run(["keys", "quota", "3", "0"])).out, ["key 3 may generate 0 tokens in all; it has used 0, 0 left"]);
    list = await run(["keys", "list"]);
    assert.match(list.out[1]!, /^1\s+billing service\s+\S+\s+active\s+1\s+30\s+200\s+170\s+/);
    assert.match(list.out[2]!, /^2\s+tiny\s+\S+\s+active\s+1\s+0\s+none\s+-\s+/);
    assert.match(list.out[3]!, /^3\s+plain\s+\S+\s+active\s+0\s+0\s+0\s+0\s+never/);

    const refusals: Array<[string[], RegExp]> = [
      [["keys", "quota", "1", "-5"], /quota must be a whole number of tokens/],
      [["keys", "quota", "1", "lots"], /quota must be a whole number of tokens/],
      [["keys", "quota", "1"], /usage: trellis keys quota <id> <N\|none>/],
      [["keys", "quota", "abc", "5"], /usage: trellis keys quota <id> <N\|none>/],
      [["keys", "quota", "42", "5"], /no API key with id 42/],
      [["keys", "create", "x", "--quota", "1.5"], /quota must be a whole number/],
      [["keys", "create", "x", "--quota"], /--quota needs a value/],
      [["keys", "list", "--quota", "5"], /--quota is an option of keys create/],
      [["download", "--quota", "5"], /--quota is an option of trellis keys create/],
    ];
    for (const [argv, message] of refusals) {
      const res = await run(argv);
      assert.equal(res.code, 1, argv.join(" "));
      assert.match(res.err.join("\n"), message, argv.join(" "));
    }
    assert.equal((await run(["keys", "list"])).out.length, 4, "no key was created by a refused command");
  });
});
