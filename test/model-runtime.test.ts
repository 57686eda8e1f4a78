// The llama.cpp runtime (src/model): backend package selection and its errors, vocab-only models
// (tokenize round trips, special tokens, metadata), greedy decoding on stories260K, zero-copy
// logits views, and on llama-2-tiny-random batching and KV cache operations (shared rows,
// continuous batching, seqRemove rewinds, async decode, a full KV cache).
import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  loadModel,
  initRuntime,
  packageBinsDir,
  LlamaBatch,
  SequenceSlots,
  TokenAttr,
  KvCacheFullError,
  type LlamaContext,
} from "../src/model/index.js";
import { LLAMA2_TINY_RANDOM, REPO_ROOT, STORIES_260K, vocabFile } from "./support/paths.js";

// One thread for most tests: on a busy 2-core machine ggml's spinning barriers make 2 threads
// many times slower. The batching test below also runs with 2 (threads split the rows).
const THREADS = 1;

function argmax(a: Float32Array): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[best]!) best = i;
  return best;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

function assertClose(a: Float32Array, b: Float32Array, what: string): void {
  let scale = 0;
  for (let i = 0; i < a.length; i++) scale = Math.max(scale, Math.abs(a[i]!));
  const diff = maxAbsDiff(a, b);
  assert.ok(diff <= 1e-3 * Math.max(1, scale), `${what}: max |Δ| ${diff} (scale ${scale})`);
}

describe("backend selection", () => {
  test("the CPU package is found and loads; a GPU package that is not installed is not picked", () => {
    const cpu = packageBinsDir("cpu");
    assert.ok(cpu?.endsWith("bins/linux-x64"), String(cpu));
    const info = initRuntime();
    if (!process.env.TRELLIS_LLAMA_BINS && packageBinsDir("cuda") === null && packageBinsDir("vulkan") === null) {
      assert.equal(info.binsDir, cpu);
    }
    assert.ok(info.devices.some((d) => d.type === "cpu"));
  });

  test("TRELLIS_LLAMA_BINS pointing at a directory without llama.cpp fails with a clear error", () => {
    const script = `import("./src/model/index.js").then((m) => m.initRuntime()).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); })`;
    let stderr = "";
    try {
      execFileSync(process.execPath, ["--import", "tsx", "-e", script], {
        cwd: REPO_ROOT,
        env: { ...process.env, TRELLIS_LLAMA_BINS: "/nonexistent-bins" },
        stdio: ["ignore", "ignore", "pipe"],
      });
      assert.fail("initRuntime should have thrown");
    } catch (e) {
      stderr = String((e as { stderr?: Buffer }).stderr ?? e);
    }
    assert.match(stderr, /no libggml\*\.so \/ libllama\*\.so in \/nonexistent-bins/);
  });

  // node-llama-cpp's GPU packages name their libraries libllama.cuda.v0.5.0.so and
  // libggml.cuda.v0.5.0.so; a directory laid out like that must load (the CPU build's files,
  // renamed, stand in for them).
  test("a bins directory named like the CUDA package (libllama.cuda.v*.so) loads; libllama-common.so is not taken for libllama", () => {
    const cpu = packageBinsDir("cpu")!;
    const dir = mkdtempSync(join(tmpdir(), "trellis-bins-"));
    try {
      for (const f of readdirSync(cpu)) {
        const renamed = f.replace(/^lib(llama|ggml)\.v/, "lib$1.cuda.v");
        if (f.endsWith(".so")) symlinkSync(join(cpu, f), join(dir, renamed));
      }
      assert.ok(existsSync(join(dir, "libllama.cuda.v0.5.0.so")) && existsSync(join(dir, "libllama-common.so")));
      const script = `import("./src/model/index.js").then((m) => { const i = m.initRuntime(); const v = m.loadModel(process.env.VOCAB, { vocabOnly: true }); console.log(JSON.stringify({ binsDir: i.binsDir, cpu: i.devices.some((d) => d.type === "cpu"), nVocab: v.nVocab })); })`;
      const out = execFileSync(process.execPath, ["--import", "tsx", "-e", script], {
        cwd: REPO_ROOT,
        env: { ...process.env, TRELLIS_LLAMA_BINS: dir, VOCAB: vocabFile("gpt-2") },
        encoding: "utf8",
      });
      assert.deepEqual(JSON.parse(out.trim().split("\n").pop()!), { binsDir: dir, cpu: true, nVocab: 50257 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("naming a GPU backend that is not installed fails at load, naming the package to install", () => {
    for (const [gpu, pkg] of [
      ["cuda", "@node-llama-cpp/linux-x64-cuda"],
      ["cuda-ext", "@node-llama-cpp/linux-x64-cuda-ext"],
      ["vulkan", "@node-llama-cpp/linux-x64-vulkan"],
    ] as const) {
      if (packageBinsDir(gpu === "cuda-ext" ? "cuda" : gpu) !== null) continue;
      const script = `import("./src/model/index.js").then((m) => m.initRuntime({ gpu: process.env.GPU })).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); })`;
      const res = spawnSync(process.execPath, ["--import", "tsx", "-e", script], {
        cwd: REPO_ROOT,
        env: { ...process.env, TRELLIS_LLAMA_BINS: "", GPU: gpu },
        encoding: "utf8",
      });
      assert.equal(res.status, 3, res.stderr);
      assert.match(res.stderr, new RegExp(`no llama\\.cpp build found for gpu=${gpu}: install ${pkg}`));
    }
  });
});

describe("vocab-only models", () => {
  test("tokenize round-trips through token pieces (gpt-2, qwen2, llama-spm)", () => {
    const text = "Hello, world! Ünïcödé 日本語 tabs\tand  spaces\n123456";
    for (const name of ["gpt-2", "qwen2", "llama-spm"]) {
      const model = loadModel(vocabFile(name), { vocabOnly: true });
      try {
        assert.ok(model.nVocab > 30000, `${name} nVocab ${model.nVocab}`);
        const ids = model.tokenize(text);
        assert.ok(ids instanceof Int32Array && ids.length > 5);
        const bytes = Buffer.concat([...ids].map((id) => Buffer.from(model.tokenPiece(id))));
        // SentencePiece renders the leading-space marker of the first piece as a space.
        const decoded = bytes.toString("utf8");
        assert.equal(name === "llama-spm" ? decoded.replace(/^ /, "") : decoded, text, name);
        assert.throws(() => model.createContext(), /vocab-only/);
      } finally {
        model.dispose();
      }
    }
  });

  test("special tokens parse only when asked; metadata and chat template are readable", () => {
    const model = loadModel(vocabFile("qwen2"), { vocabOnly: true });
    try {
      const asText = model.tokenize("<|im_start|>", { parseSpecial: false });
      const asSpecial = model.tokenize("<|im_start|>", { parseSpecial: true });
      assert.equal(asSpecial.length, 1);
      assert.ok(asText.length > 1);
      assert.ok(model.tokenAttributes()[asSpecial[0]!]! & TokenAttr.Control);
      assert.equal(model.meta("tokenizer.ggml.model"), "gpt2");
      assert.equal(model.meta("no.such.key"), null);
      assert.ok(model.metaKeys().includes("tokenizer.ggml.model"));
      assert.match(model.chatTemplate() ?? "", /im_start/);
      const eog = model.eogTokens();
      assert.ok(eog.includes(model.eosToken), "eos is an end-of-generation token");
    } finally {
      model.dispose();
    }
  });

  test("loading a missing file throws", () => {
    assert.throws(() => loadModel("/nonexistent/model.gguf", { vocabOnly: true }), /failed to load model/);
  });
});

describe("stories260K", () => {
  const model = loadModel(STORIES_260K, { threads: THREADS });
  after(() => model.dispose());

  test("greedy decoding writes fluent English", () => {
    const ctx = model.createContext({ nCtx: 256 });
    const prompt = model.tokenize("Once upon a time", { addSpecial: true });
    assert.equal(prompt[0], model.bosToken);
    let logits = ctx.evaluate(prompt, 0);
    const batch = ctx.createBatch();
    const out: number[] = [];
    for (let pos = prompt.length; out.length < 80; pos++) {
      const token = argmax(logits);
      if (model.eogTokens().includes(token)) break;
      out.push(token);
      batch.clear();
      batch.add(token, pos, 0, true);
      ctx.decode(batch);
      logits = ctx.logits(0);
    }
    const text = Buffer.concat(out.map((t) => Buffer.from(model.tokenPiece(t)))).toString("utf8");
    const words = text.toLowerCase().match(/[a-z]+/g) ?? [];
    const common = new Set(
      (
        "a an the and but to of in on at with was were is it he she they her his there one day " +
        "little girl boy named lily tim ben big red ball play played loved liked wanted saw went " +
        "very happy sad friend friends mom said time upon once park outside tree dog cat toy " +
        "for so too had have not up out be could can would all said see"
      ).split(" "),
    );
    assert.ok(words.length >= 30, `too few words: ${text}`);
    const known = words.filter((w) => common.has(w)).length;
    assert.ok(known / words.length >= 0.5, `only ${known}/${words.length} common words: ${text}`);
    assert.match(text, /[A-Z][a-z]+[^.]*\./, `no sentence in: ${text}`);
    ctx.dispose();
  });

  test("on the CPU a row's logits do not depend on how the prompt is split into decodes (of two rows or more)", () => {
    // With llama.cpp's flash attention they would: measured up to 1e-2 here (runtime.ts).
    const tokens = Array.from({ length: 120 }, (_, i) => (i === 0 ? model.bosToken : 3 + ((i * 37) % 500)));
    const ctx = model.createContext({ nCtx: 256 });
    const whole = ctx.evaluate(tokens, 0).slice();
    for (const cut of [2, 20, 64, 100, 118]) {
      ctx.clearMemory();
      ctx.evaluate(tokens.slice(0, cut), 0);
      const split = ctx.evaluate(tokens.slice(cut), 0, cut);
      assert.deepEqual(split, whole, `split after ${cut} tokens`);
    }
    ctx.dispose();
  });

  test("logits views are zero-copy over llama.cpp's buffer and detached at the next decode", () => {
    const ctx = model.createContext({ nCtx: 64 });
    const first = ctx.evaluate(model.tokenize("One day", { addSpecial: true }), 0);
    assert.equal(first.length, model.nVocab);
    const again = ctx.logits(ctx.nBatch > 0 ? 2 : 0);
    assert.equal(again.buffer, first.buffer, "same row gives a view of the same buffer");
    const batch = ctx.createBatch();
    batch.add(argmax(first), 3, 0, true);
    ctx.decode(batch);
    assert.equal(first.length, 0, "old view reads as empty after the next decode");
    assert.throws(() => ctx.logits(1), /did not ask for logits/);
    ctx.dispose();
  });
});

describe("llama-2-tiny-random: batching and KV cache operations", () => {
  const model = loadModel(LLAMA2_TINY_RANDOM, { threads: THREADS });
  after(() => model.dispose());
  const promptA = Int32Array.from([1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203]);
  const promptB = Int32Array.from([1, 3118, 2501, 263, 931, 29892, 727]);

  function singleRun(ctx: LlamaContext, tokens: Int32Array): Float32Array[] {
    // Token-by-token evaluation of one sequence: logits after each token, copied.
    ctx.clearMemory();
    const batch = ctx.createBatch();
    const out: Float32Array[] = [];
    for (let i = 0; i < tokens.length; i++) {
      batch.clear();
      batch.add(tokens[i]!, i, 0, true);
      ctx.decode(batch);
      out.push(ctx.logits(0).slice());
    }
    return out;
  }

  for (const threads of [1, 2])
    test(`many sequences in one decode give the same logits as one sequence at a time (${threads} threads)`, () => {
      const ctx = model.createContext({ nCtx: 512, nSeqMax: 4, nBatch: 64, threads });
      const refA = singleRun(ctx, promptA);
      const refB = singleRun(ctx, promptB);
      ctx.clearMemory();
      // Prompts of A (seq 0) and B (seq 2) in one batch, every row with logits.
      const batch = ctx.createBatch();
      const rowsA = [...promptA].map((t, i) => batch.add(t, i, 0, true));
      const rowsB = [...promptB].map((t, i) => batch.add(t, i, 2, true));
      ctx.decode(batch);
      rowsA.forEach((row, i) => assertClose(ctx.logits(row), refA[i]!, `A[${i}]`));
      rowsB.forEach((row, i) => assertClose(ctx.logits(row), refB[i]!, `B[${i}]`));
      ctx.dispose();
    });

  test("rows shared by several sequences: one decode of a shared prompt plus each continuation", () => {
    const ctx = model.createContext({ nCtx: 512, nSeqMax: 4, nBatch: 64 });
    // References: prompt A followed by each continuation token, one sequence at a time.
    const continuations = [29871, 3118, 450];
    const refs = continuations.map((t) => singleRun(ctx, Int32Array.from([...promptA, t])));
    ctx.clearMemory();
    // Prompt rows belong to sequences 1..3; each sequence's continuation token joins the same batch.
    const batch = ctx.createBatch();
    const seqs = [1, 2, 3];
    const last = [...promptA].map((t, i) => batch.addShared(t, i, seqs, i === promptA.length - 1)).at(-1)!;
    const rows = continuations.map((t, k) => batch.add(t, promptA.length, seqs[k]!, true));
    ctx.decode(batch);
    assertClose(ctx.logits(last), refs[0]![promptA.length - 1]!, "shared prompt");
    rows.forEach((row, k) => assertClose(ctx.logits(row), refs[k]![promptA.length]!, `continuation ${k}`));
    // The shared cells stay on every sequence: a further token on sequence 2 sees prompt + its own token.
    assert.deepEqual(ctx.seqPosRange(2), [0, promptA.length]);
    ctx.dispose();
  });

  test("continuous batching: a sequence joins mid-run and matches its solo run", () => {
    const ctx = model.createContext({ nCtx: 512, nSeqMax: 3, nBatch: 64 });
    const refA = singleRun(ctx, promptA);
    const refB = singleRun(ctx, promptB);
    ctx.clearMemory();
    const slots = new SequenceSlots(ctx);
    const a = slots.acquire();
    slots.prefill(a, promptA.subarray(0, 4));
    const batch = ctx.createBatch();
    let b = -1;
    let rowB = -1;
    for (let i = 4; i < promptA.length; i++) {
      batch.clear();
      const rowA = slots.append(batch, a, promptA[i]!, true);
      if (i === 6) {
        b = slots.acquire();
        rowB = slots.appendTokens(batch, b, promptB, true);
      }
      ctx.decode(batch);
      assertClose(ctx.logits(rowA), refA[i]!, `A[${i}]`);
      if (i === 6) assertClose(ctx.logits(rowB), refB[promptB.length - 1]!, "B joined");
    }
    assert.equal(slots.lengths[a], promptA.length);
    slots.release(b);
    assert.deepEqual(ctx.seqPosRange(b), [-1, -1]);
    assert.equal(slots.available, 2);
    ctx.dispose();
  });

  for (const kvUnified of [true, false])
    test(`seqCopy prefix reuse gives the same logits as re-evaluating (kvUnified ${kvUnified})`, () => {
      const ctx = model.createContext({ nCtx: 512, nSeqMax: 4, nBatch: 64, kvUnified });
      const prefix = promptA.subarray(0, 6);
      const suffix = promptB.subarray(1);
      const full = Int32Array.from([...prefix, ...suffix]);
      const ref = singleRun(ctx, full);
      ctx.clearMemory();
      const slots = new SequenceSlots(ctx);
      const src = slots.acquire();
      slots.prefill(src, prefix);
      const forks = [slots.fork(src), slots.fork(src), slots.fork(src, 3)];
      assert.deepEqual(ctx.seqPosRange(forks[0]!), [0, prefix.length - 1]);
      assert.deepEqual(ctx.seqPosRange(forks[2]!), [0, 2]);
      // The source goes away; the forks keep the shared cells.
      slots.release(src);
      const logits = slots.prefill(forks[1]!, suffix);
      assertClose(logits, ref[full.length - 1]!, "forked continuation");
      const logitsShort = slots.prefill(forks[2]!, full.subarray(3));
      assertClose(logitsShort, ref[full.length - 1]!, "fork of a shorter prefix");
      ctx.dispose();
    });

  test("seqRemove truncation: rewinding and re-decoding reproduces the logits", () => {
    const ctx = model.createContext({ nCtx: 512, nSeqMax: 1, nBatch: 64 });
    const ref = singleRun(ctx, promptA);
    ctx.clearMemory();
    const slots = new SequenceSlots(ctx);
    const seq = slots.acquire();
    slots.prefill(seq, promptA);
    slots.truncate(seq, 5);
    assert.deepEqual(ctx.seqPosRange(seq), [0, 4]);
    // A different continuation first, then rewind again and take the original one.
    slots.prefill(seq, promptB.subarray(1, 4));
    slots.truncate(seq, 5);
    const logits = slots.prefill(seq, promptA.subarray(5));
    assertClose(logits, ref[promptA.length - 1]!, "after truncation");
    const again = slots.prefill(seq, promptB.subarray(1, 2));
    assert.ok(maxAbsDiff(again, ref[promptA.length - 1]!) > 0, "logits depend on the input (test can fail)");
    ctx.dispose();
  });

  test("async decode gives the same logits as sync and locks the context meanwhile", async () => {
    const ctx = model.createContext({ nCtx: 128, nSeqMax: 1, nBatch: 32 });
    const ref = singleRun(ctx, promptA);
    ctx.clearMemory();
    const batch = new LlamaBatch(ctx.nBatch);
    batch.addSequence(promptA, 0, 0, true);
    const pending = ctx.decodeAsync(batch);
    assert.throws(() => ctx.seqPosRange(0), /busy/);
    await pending;
    assertClose(ctx.logits(promptA.length - 1), ref[promptA.length - 1]!, "async");
    ctx.dispose();
  });

  test("bad input is refused; a full KV cache is reported", () => {
    const ctx = model.createContext({ nCtx: 32, nSeqMax: 2, nBatch: 32 });
    const batch = ctx.createBatch();
    batch.add(model.nVocab, 0, 0, true);
    assert.throws(() => ctx.decode(batch), /out of range/);
    batch.clear();
    batch.add(1, 0, 5, true);
    assert.throws(() => ctx.decode(batch), /sequence id 5 out of range/);
    // llama.cpp may round nCtx up; fill every cell of it.
    for (let pos = 0; pos < ctx.nCtx; ) {
      batch.clear();
      while (batch.length < batch.capacity && pos < ctx.nCtx) batch.add(1, pos++, 0, false);
      ctx.decode(batch);
    }
    batch.clear();
    batch.add(1, 0, 1, true);
    assert.throws(() => ctx.decode(batch), KvCacheFullError);
    ctx.dispose();
    assert.throws(() => ctx.logits(0), /disposed/);
  });
});
