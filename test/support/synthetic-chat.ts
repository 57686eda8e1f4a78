/**
 * A service over a synthetic model that carries a real chat template (random weights, a real
 * tokenizer from ../shared/models/vocab), reached through the official openai SDK.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import OpenAI from "openai";
import { createServer } from "../../src/server/index.js";
import { KeyStore } from "../../src/store/index.js";
import { createEngine } from "../../src/engine.js";
import type { Engine } from "../../src/generate/index.js";
import { SHAPES, synthesizeModel } from "../../scripts/synth-model/synthesize.js";
import { NO_PREFIX_CACHE, REPO_ROOT } from "./paths.js";
import { TEST_KEY, testConfig } from "./fake-engine.js";

export const TEMPLATES = resolve(REPO_ROOT, "..", "shared", "chat-templates");

export interface SyntheticChat {
  app: FastifyInstance;
  engine: Engine;
  store: KeyStore;
  client: OpenAI;
  /** The GGUF written into `dir`. */
  path: string;
}

/** Writes `tiny-test` with `vocab` and the template in `templateFile` into `dir`, and serves it. */
export async function serveSyntheticChat(
  dir: string,
  vocab: string,
  templateFile: string,
  maxNewTokensLimit = 200,
  /** Tokens made control tokens of these texts (another family's markers in this vocabulary). */
  controlTokens?: Readonly<Record<number, string>>,
): Promise<SyntheticChat> {
  const path = join(dir, `${vocab}.gguf`);
  const chatTemplate = readFileSync(join(TEMPLATES, templateFile), "utf8");
  synthesizeModel({ ...SHAPES["tiny-test"]!, vocab, contextLength: 4096 }, "q8_0", path, undefined, { chatTemplate, controlTokens });
  // Without the prefix cache: these tests compare a streamed answer with the whole one of the same seed.
  const engine = await createEngine({ modelPath: path, threads: 1, maxSequences: 4, prefixCache: NO_PREFIX_CACHE });
  const store = new KeyStore({ dataDir: ":memory:", flushIntervalMs: 0 });
  const app = await createServer({ engine, config: testConfig({ maxNewTokensLimit }), store });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const port = (app.server.address() as { port: number }).port;
  const client = new OpenAI({ apiKey: TEST_KEY, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  return { app, engine, store, client, path };
}

export async function stopSyntheticChat(s: SyntheticChat | undefined): Promise<void> {
  if (!s) return;
  await s.app.close();
  await s.engine.close();
  s.store.close();
}
