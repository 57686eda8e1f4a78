// Synthetic GGUF models (scripts/synth-model): a real tokenizer, the requested shape and finite
// logits when llama.cpp loads them, for q8_0 and q4_0.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadModel } from "../src/model/index.js";
import { readGguf } from "../src/vocab/index.js";
import { SHAPES, synthesizeModel } from "../scripts/synth-model/synthesize.js";
import { vocabFile } from "./support/paths.js";

test("synthetic GGUF: real tokenizer, requested shape, finite logits (q8_0 and q4_0)", () => {
  const dir = mkdtempSync(join(tmpdir(), "trellis-synth-"));
  try {
    for (const type of ["q8_0", "q4_0"] as const) {
      const path = join(dir, `tiny-${type}.gguf`);
      const shape = { ...SHAPES["tiny-test"]!, vocab: "llama-spm" };
      synthesizeModel(shape, type, path);

      const file = readGguf(path);
      assert.equal(file.metadata.get("general.architecture"), "llama");
      assert.equal(file.metadata.get("llama.block_count"), shape.nLayer);
      // 2 + 9 tensors per layer, no output.weight (tied embeddings).
      assert.equal(file.tensors.length, 2 + 9 * shape.nLayer);
      assert.ok(!file.tensors.some((t) => t.name === "output.weight"));

      const model = loadModel(path, { threads: 2 });
      const vocab = loadModel(vocabFile("llama-spm"), { vocabOnly: true });
      try {
        assert.equal(model.nLayer, shape.nLayer);
        assert.equal(model.nEmbd, shape.nEmbd);
        assert.equal(model.nVocab, vocab.nVocab);
        const text = "The quick brown fox jumps over the lazy dog.";
        assert.deepEqual(model.tokenize(text, { addSpecial: true }), vocab.tokenize(text, { addSpecial: true }));
        const ctx = model.createContext({ nCtx: 128 });
        const logits = ctx.evaluate(model.tokenize(text, { addSpecial: true }), 0);
        let min = Infinity;
        let max = -Infinity;
        for (const x of logits) {
          assert.ok(Number.isFinite(x));
          min = Math.min(min, x);
          max = Math.max(max, x);
        }
        assert.ok(max - min > 0.1, `logits nearly constant: ${min}..${max}`);
      } finally {
        vocab.dispose();
        model.dispose();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
