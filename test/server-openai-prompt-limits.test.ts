/**
 * The size of a chat request's prompt on the OpenAI API, on the real engine (stories260K, whose
 * 512-token vocabulary spells CJK and emoji in bytes): the messages' text (contents, names, tool
 * calls) and the rendered tools are at most TRELLIS_MAX_PROMPT_CHARS characters (code points) in
 * all, else a 400 naming where the sum crosses it; a conversation under that cap whose tokens do
 * not fit the context is a 400 naming messages.
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";
import { createEngine } from "../src/engine.js";
import type { Engine } from "../src/generate/index.js";
import { STORIES_260K } from "./support/paths.js";
import { auth, testConfig } from "./support/fake-engine.js";

const MAX_CHARS = 100;

describe("OpenAI chat: the prompt's size (stories260K)", () => {
  let engine: Engine;
  let store: KeyStore;
  let capped: FastifyInstance;
  let standard: FastifyInstance;

  before(async () => {
    engine = await createEngine({ modelPath: STORIES_260K, threads: 1, maxSequences: 4 });
    store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
    capped = await createServer({ engine, config: testConfig({ maxPromptChars: MAX_CHARS }), store });
    standard = await createServer({ engine, config: testConfig(), store });
  });

  after(async () => {
    await capped.close();
    await standard.close();
    await engine.close();
    store.close();
  });

  const chat = (app: FastifyInstance, body: Record<string, unknown>) =>
    app.inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers: auth(),
      payload: { model: engine.modelId, max_tokens: 2, ...body },
    });

  const assertRefused = (res: { statusCode: number; json(): unknown }, param: string, message: RegExp): void => {
    assert.equal(res.statusCode, 400);
    const error = (res.json() as { error: { message: string; type: string; param: string | null } }).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param);
    assert.match(error.message, message);
  };

  test("a 400 names the message whose text crosses the cap", async () => {
    const messages = [
      { role: "system", content: "s".repeat(40) },
      { role: "user", content: "u".repeat(40) },
      { role: "assistant", content: "a".repeat(10) },
      {
        role: "user",
        content: [
          { type: "text", text: "x".repeat(6) },
          { type: "text", text: "y".repeat(5) },
        ],
      },
    ];
    assertRefused(
      await chat(capped, { messages }),
      "messages[3].content",
      /^messages\[3\]\.content: the messages' text is longer than 100 characters in all \(TRELLIS_MAX_PROMPT_CHARS\)$/,
    );
    // One character less and it is served.
    messages[3] = { role: "user", content: "x".repeat(10) };
    assert.equal((await chat(capped, { messages })).statusCode, 200);
  });

  test("characters are code points: 60 emoji (120 UTF-16 units) fit a cap of 100", async () => {
    assert.equal((await chat(capped, { messages: [{ role: "user", content: "😀".repeat(60) }] })).statusCode, 200);
    assertRefused(await chat(capped, { messages: [{ role: "user", content: "😀".repeat(101) }] }), "messages[0].content", /100 characters/);
  });

  test("names, tool calls' arguments and rendered tools count too", async () => {
    const call = { id: "c1", type: "function", function: { name: "look", arguments: JSON.stringify({ q: "q".repeat(80) }) } };
    assertRefused(
      await chat(capped, {
        messages: [
          { role: "user", content: "hi", name: "n".repeat(10) },
          { role: "assistant", tool_calls: [call] },
        ],
      }),
      "messages[1].tool_calls[0].function.arguments",
      /^messages\[1\]\.tool_calls\[0\]\.function\.arguments: the messages' text/,
    );
    assertRefused(
      await chat(capped, { messages: [{ role: "user", content: "hi", name: "n".repeat(99) }] }),
      "messages[0].name",
      /100 characters/,
    );
    const tools = [{ type: "function", function: { name: "look", description: "d".repeat(120) } }];
    const messages = [{ role: "user", content: "hi" }];
    assertRefused(
      await chat(capped, { messages, tools, tool_choice: "auto" }),
      "tools[0]",
      /^tools\[0\]: the messages' and tools' text is longer than 100 characters/,
    );
    // tool_choice "none": the tools are not rendered into the prompt.
    assert.equal((await chat(capped, { messages, tools, tool_choice: "none" })).statusCode, 200);
  });

  test("under the cap, a prompt whose tokens do not fit the context is a 400 naming messages", async () => {
    const units = [..."你好世界这是一个测试😀🎉🚀"];
    let text = "";
    for (let i = 0; text.length < 20_000; i++) text += units[i % units.length]!;
    const res = await chat(standard, { messages: [{ role: "user", content: text }] });
    assertRefused(res, "messages", /^the prompt is \d+ tokens, but the model context is \d+ tokens$/);
  });
});
