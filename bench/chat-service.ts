/**
 * The real service for the HTTP benches (bench:prefix, bench:threads): createServer over a model,
 * listening on 127.0.0.1 at the service's defaults but what a bench sets, and a streamed chat
 * completion timed as a client sees it.
 */
import { type Config, defaultConfig, engineOptions } from "../src/config.js";
import { createEngine } from "../src/engine.js";
import { createServer } from "../src/server/index.js";
import { KeyStore } from "../src/store/index.js";

export interface BenchService {
  url: string;
  /** The served model's id (the OpenAI API's `model`). */
  modelId: string;
  close(): Promise<void>;
}

/** The service over `modelPath` with API key `key`, rate limit off, `overrides` on the defaults. */
export async function startBenchService(modelPath: string, key: string, overrides: Partial<Config> = {}): Promise<BenchService> {
  const config: Config = {
    ...defaultConfig(),
    host: "127.0.0.1",
    port: 0,
    apiKeys: [key],
    rateLimit: 0,
    dataDir: ":memory:",
    requestTimeoutMs: 600_000,
    ...overrides,
  };
  const engine = await createEngine(engineOptions(config, modelPath));
  const store = new KeyStore({ dataDir: ":memory:" });
  const app = await createServer({ engine, config, store });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return {
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    modelId: engine.modelId ?? "trellis",
    async close() {
      await app.close();
      await engine.close();
      store.close();
    },
  };
}

export interface StreamedChat {
  /** From sending the request to the first event with content. */
  firstMs: number;
  /** From sending the request to the end of the stream. */
  totalMs: number;
  text: string;
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
}

/** A chat completion streamed with its usage; `body` adds to {model, stream, stream_options}. */
export async function streamedChat(s: BenchService, key: string, body: Record<string, unknown>): Promise<StreamedChat> {
  const sent = performance.now();
  const response = await fetch(`${s.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: s.modelId, stream: true, stream_options: { include_usage: true }, ...body }),
  });
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  let first = Number.NaN;
  let text = "";
  let usage: StreamedChat["usage"] = { prompt_tokens: 0, completion_tokens: 0 };
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const data = event.startsWith("data: ") ? event.slice(6) : "";
      if (data === "" || data === "[DONE]") continue;
      const parsed = JSON.parse(data) as { choices: { delta?: { content?: string } }[]; usage?: StreamedChat["usage"] | null };
      const content = parsed.choices[0]?.delta?.content ?? "";
      if (content.length > 0 && Number.isNaN(first)) first = performance.now() - sent;
      text += content;
      if (parsed.usage) usage = parsed.usage;
    }
  }
  return { firstMs: first, totalMs: performance.now() - sent, text, usage };
}
