/**
 * A Trellis replica with the fake engine, as its own process: `trellis serve` (src/cli.ts main,
 * configured by the environment like the real command) with test/support/fake-engine-module.ts as
 * its engine. TRELLIS_MODEL must still name a GGUF file (serve checks it before loading the
 * engine); TRELLIS_TEST_ENGINE_DELAY_MS sets how long each generation takes.
 *
 *   node --import tsx test/support/replica-process.ts
 */
import { main } from "../../src/cli.js";

const engineModule = new URL("./fake-engine-module.ts", import.meta.url).href;

const code = await main(["serve"], {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  engineModule,
});
// serve returns 0 once listening (its SIGTERM handler exits later); anything else is a refusal.
if (code !== 0) process.exit(code);
