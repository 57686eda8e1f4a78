/**
 * An engine module for `main(argv, { engineModule })` of src/cli.ts: `trellis serve` as it runs in
 * production (config, Postgres, Redis, HTTP, shutdown) with the fake engine of fake-engine.ts in
 * place of llama.cpp. Each request waits TRELLIS_TEST_ENGINE_DELAY_MS (default 0) before its
 * answer, as a generation would; calls are not recorded (`record = false`), so memory stays flat
 * under load. Used by replica-process.ts for the cluster test's fake-engine replicas.
 */
import type { EngineFactoryOptions } from "../../src/config.js";
import type { Engine } from "../../src/generate/index.js";
import { createFakeEngine } from "./fake-engine.js";

/** Milliseconds each fake generation takes. */
export const FAKE_ENGINE_DELAY_ENV = "TRELLIS_TEST_ENGINE_DELAY_MS";

export async function createEngine(_options: EngineFactoryOptions): Promise<Engine> {
  const engine = createFakeEngine();
  const delayMs = Number(process.env[FAKE_ENGINE_DELAY_ENV] ?? "0");
  engine.delayMs = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
  engine.record = false;
  return engine;
}
