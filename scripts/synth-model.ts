/**
 * npm run synth-model -- <shape> [--type q8_0|q4_0] [--vocab <name>] [--out <path>] [--force]
 * Writes a random-weight GGUF of a real architecture into .cache/models/ (see synthesize.ts).
 */
import { existsSync } from "node:fs";
import { SHAPES, synthesizeModel, syntheticModelPath, type QuantType } from "./synth-model/synthesize.js";

const args = process.argv.slice(2);
const shapes: string[] = [];
let type: QuantType = "q8_0";
let vocab: string | undefined;
let out: string | undefined;
let force = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i]!;
  if (a === "--type") type = args[++i] as QuantType;
  else if (a === "--vocab") vocab = args[++i];
  else if (a === "--out") out = args[++i];
  else if (a === "--force") force = true;
  else shapes.push(a);
}
if (shapes.length === 0 || (type !== "q8_0" && type !== "q4_0")) {
  console.error(
    `usage: synth-model <${Object.keys(SHAPES).join("|")}> [--type q8_0|q4_0] [--vocab gpt-2|llama-spm|qwen2|...] [--out path] [--force]`,
  );
  process.exit(2);
}
for (const name of shapes) {
  const shape = SHAPES[name];
  if (!shape) {
    console.error(`unknown shape ${name}; known: ${Object.keys(SHAPES).join(", ")}`);
    process.exit(2);
  }
  const path = out ?? syntheticModelPath(vocab ? `${name}-${vocab}` : name, type);
  if (existsSync(path) && !force) {
    console.log(`${path} exists (use --force to rewrite)`);
    continue;
  }
  const started = performance.now();
  synthesizeModel(vocab ? { ...shape, vocab } : shape, type, path);
  console.log(`wrote ${path} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
