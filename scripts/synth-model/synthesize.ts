/**
 * Random-weight GGUF models of real architectures, for throughput benchmarks: compute per token
 * is the same as for trained weights. The tokenizer metadata is copied from a real vocabulary
 * file, so tokenization and the vocabulary size are real too.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { GgmlType, GgufStringArray, readGguf, type GgufKv } from "../../src/vocab/index.js";
import { kv, writeGguf, type TensorSpec } from "./gguf-writer.js";

export interface ModelShape {
  architecture: "llama" | "qwen2";
  /** Vocabulary file name stem in ../shared/models/vocab (ggml-vocab-<vocab>.gguf). */
  vocab: string;
  nEmbd: number;
  nLayer: number;
  nFf: number;
  nHead: number;
  nHeadKv: number;
  ropeTheta: number;
  rmsEps: number;
  contextLength: number;
  qkvBias: boolean;
}

export const SHAPES: Record<string, ModelShape> = {
  // Qwen2-0.5B: tied embeddings, q/k/v biases, 151,936-token BPE vocabulary.
  "qwen2-0.5b": {
    architecture: "qwen2",
    vocab: "qwen2",
    nEmbd: 896,
    nLayer: 24,
    nFf: 4864,
    nHead: 14,
    nHeadKv: 2,
    ropeTheta: 1e6,
    rmsEps: 1e-6,
    contextLength: 32768,
    qkvBias: true,
  },
  // SmolLM2-135M: llama architecture, tied embeddings.
  "smollm2-135m": {
    architecture: "llama",
    vocab: "llama-spm",
    nEmbd: 576,
    nLayer: 30,
    nFf: 1536,
    nHead: 9,
    nHeadKv: 3,
    ropeTheta: 1e5,
    rmsEps: 1e-5,
    contextLength: 8192,
    qkvBias: false,
  },
  // A few-MB model for tests of the writer itself.
  "tiny-test": {
    architecture: "llama",
    vocab: "gpt-2",
    nEmbd: 64,
    nLayer: 2,
    nFf: 128,
    nHead: 4,
    nHeadKv: 2,
    ropeTheta: 1e4,
    rmsEps: 1e-5,
    contextLength: 2048,
    qkvBias: false,
  },
};

export type QuantType = "q8_0" | "q4_0";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const MODEL_CACHE_DIR = join(REPO_ROOT, ".cache", "models");
const VOCAB_DIR = resolve(REPO_ROOT, "..", "shared", "models", "vocab");

// ---- random numbers: xorshift32 per tensor, seeded from the tensor name (reproducible files).

function seedFor(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0 || 1;
}

function fillRandomBytes(out: Uint8Array, state: { s: number }): void {
  let s = state.s;
  const words = out.length >>> 2;
  const view = new Uint32Array(out.buffer, out.byteOffset, words);
  for (let i = 0; i < words; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    view[i] = s >>> 0;
  }
  for (let i = words * 4; i < out.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = s & 0xff;
  }
  state.s = s >>> 0 || 1;
}

function toHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  const mantissa = bits & 0x7fffff;
  if (exp <= 0) return sign; // our scales are never subnormal
  if (exp >= 31) return sign | 0x7c00;
  return sign | (exp << 10) | (mantissa >>> 13);
}

/**
 * Quantized tensor with uniformly random quants and one scale, giving element std ≈ `std`.
 * Q8_0 block: f16 scale + 32 int8 (uniform int8 std ≈ 73.9). Q4_0 block: f16 scale + 16 bytes of
 * nibbles q - 8 (std ≈ 4.61).
 */
function quantizedTensor(name: string, dims: number[], type: QuantType, std: number): TensorSpec {
  const blockBytes = type === "q8_0" ? 34 : 18;
  const scale = toHalf(std / (type === "q8_0" ? 73.9 : 4.61));
  const state = { s: seedFor(name) };
  return {
    name,
    dims,
    type: type === "q8_0" ? GgmlType.Q8_0 : GgmlType.Q4_0,
    fill(out) {
      fillRandomBytes(out, state);
      for (let b = 0; b < out.length; b += blockBytes) {
        out[b] = scale & 0xff;
        out[b + 1] = scale >>> 8;
      }
    },
  };
}

function f32Tensor(name: string, dims: number[], base: number, noise: number): TensorSpec {
  const state = { s: seedFor(name) };
  return {
    name,
    dims,
    type: GgmlType.F32,
    fill(out) {
      fillRandomBytes(out, state);
      const u32 = new Uint32Array(out.buffer, out.byteOffset, out.length >>> 2);
      const f32 = new Float32Array(out.buffer, out.byteOffset, out.length >>> 2);
      for (let i = 0; i < f32.length; i++) f32[i] = base + noise * (u32[i]! / 4294967296 - 0.5) * 2;
    },
  };
}

export interface SynthesizeOptions {
  /** A chat template to carry (tokenizer.chat_template) instead of the vocabulary file's own. */
  chatTemplate?: string;
  /**
   * Tokens to turn into control tokens with these texts (id → text), as another family's
   * tokenizer has them (Mistral's `[TOOL_CALLS]`): tests of formats whose markers are control tokens.
   */
  controlTokens?: Readonly<Record<number, string>>;
}

/** The tokenizer's tokens and token types with `controls` made control tokens of those texts. */
function withControlTokens(kvs: GgufKv[], controls: Readonly<Record<number, string>>): GgufKv[] {
  const utf8 = new TextEncoder();
  return kvs.map((k) => {
    if (k.key === "tokenizer.ggml.tokens" && k.value instanceof GgufStringArray) {
      const items = k.value.toArray().map((t, id) => utf8.encode(controls[id] ?? t));
      const offsets = new Uint32Array(items.length + 1);
      items.forEach((b, i) => (offsets[i + 1] = offsets[i]! + b.length));
      const bytes = new Uint8Array(offsets[items.length]!);
      items.forEach((b, i) => bytes.set(b, offsets[i]!));
      return { ...k, value: new GgufStringArray(offsets, bytes) };
    }
    if (k.key === "tokenizer.ggml.token_type" && typeof k.value === "object" && "values" in k.value) {
      const values = (k.value.values as Int32Array).slice();
      for (const id of Object.keys(controls)) values[Number(id)] = 3; // LLAMA_TOKEN_TYPE_CONTROL
      return { ...k, value: { ...k.value, values } as GgufKv["value"] };
    }
    return k;
  });
}

export function synthesizeModel(
  shape: ModelShape,
  type: QuantType,
  outPath: string,
  vocabPath?: string,
  options: SynthesizeOptions = {},
): void {
  const vocabFile = readGguf(vocabPath ?? join(VOCAB_DIR, `ggml-vocab-${shape.vocab}.gguf`));
  let tokenizerKvs = vocabFile.kvs.filter(
    (k) => k.key.startsWith("tokenizer.") && !(options.chatTemplate !== undefined && k.key === "tokenizer.chat_template"),
  );
  if (options.chatTemplate !== undefined) tokenizerKvs.push(kv.str("tokenizer.chat_template", options.chatTemplate));
  if (options.controlTokens !== undefined) tokenizerKvs = withControlTokens(tokenizerKvs, options.controlTokens);
  const tokens = vocabFile.metadata.get("tokenizer.ggml.tokens");
  if (!tokens || typeof tokens !== "object" || !("length" in tokens)) throw new Error("vocabulary file has no tokens");
  const nVocab = (tokens as { length: number }).length;
  const a = shape.architecture;
  const headDim = shape.nEmbd / shape.nHead;
  const kvDim = headDim * shape.nHeadKv;
  const kvs: GgufKv[] = [
    kv.str("general.architecture", a),
    kv.str("general.name", `synthetic ${basename(outPath, ".gguf")}`),
    kv.u32("general.file_type", type === "q8_0" ? 7 : 2),
    kv.u32(`${a}.context_length`, shape.contextLength),
    kv.u32(`${a}.embedding_length`, shape.nEmbd),
    kv.u32(`${a}.block_count`, shape.nLayer),
    kv.u32(`${a}.feed_forward_length`, shape.nFf),
    kv.u32(`${a}.attention.head_count`, shape.nHead),
    kv.u32(`${a}.attention.head_count_kv`, shape.nHeadKv),
    kv.f32(`${a}.rope.freq_base`, shape.ropeTheta),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, shape.rmsEps),
    kv.u32(`${a}.rope.dimension_count`, headDim),
    kv.u32(`${a}.vocab_size`, nVocab),
    ...tokenizerKvs,
  ];
  const std = 0.02;
  const tensors: TensorSpec[] = [
    // Larger embedding scale makes the (tied) output distribution less flat than pure noise.
    quantizedTensor("token_embd.weight", [shape.nEmbd, nVocab], type, 0.05),
    f32Tensor("output_norm.weight", [shape.nEmbd], 1, 0.1),
  ];
  for (let l = 0; l < shape.nLayer; l++) {
    const p = `blk.${l}.`;
    tensors.push(f32Tensor(`${p}attn_norm.weight`, [shape.nEmbd], 1, 0.1));
    tensors.push(quantizedTensor(`${p}attn_q.weight`, [shape.nEmbd, shape.nEmbd], type, std));
    tensors.push(quantizedTensor(`${p}attn_k.weight`, [shape.nEmbd, kvDim], type, std));
    tensors.push(quantizedTensor(`${p}attn_v.weight`, [shape.nEmbd, kvDim], type, std));
    if (shape.qkvBias) {
      tensors.push(f32Tensor(`${p}attn_q.bias`, [shape.nEmbd], 0, 0.02));
      tensors.push(f32Tensor(`${p}attn_k.bias`, [kvDim], 0, 0.02));
      tensors.push(f32Tensor(`${p}attn_v.bias`, [kvDim], 0, 0.02));
    }
    tensors.push(quantizedTensor(`${p}attn_output.weight`, [shape.nEmbd, shape.nEmbd], type, std));
    tensors.push(f32Tensor(`${p}ffn_norm.weight`, [shape.nEmbd], 1, 0.1));
    tensors.push(quantizedTensor(`${p}ffn_gate.weight`, [shape.nEmbd, shape.nFf], type, std));
    tensors.push(quantizedTensor(`${p}ffn_up.weight`, [shape.nEmbd, shape.nFf], type, std));
    tensors.push(quantizedTensor(`${p}ffn_down.weight`, [shape.nFf, shape.nEmbd], type, std));
  }
  mkdirSync(dirname(outPath), { recursive: true });
  writeGguf(outPath, kvs, tensors);
}

export function syntheticModelPath(shapeName: string, type: QuantType = "q8_0"): string {
  return join(MODEL_CACHE_DIR, `synthetic-${shapeName}-${type}.gguf`);
}

/** Path of the cached synthetic model, writing it first when missing. */
export function ensureSyntheticModel(shapeName: string, type: QuantType = "q8_0"): string {
  const shape = SHAPES[shapeName];
  if (!shape) throw new Error(`unknown shape ${shapeName}; known: ${Object.keys(SHAPES).join(", ")}`);
  const path = syntheticModelPath(shapeName, type);
  if (!existsSync(path) || statSync(path).size === 0) synthesizeModel(shape, type, path);
  return path;
}
