/**
 * Loading of our N-API addon (native/addon.cc, built by node-gyp into build/Release) and of the
 * llama.cpp libraries it dlopen()s at run time. The backend (CPU or a GPU build) is chosen here,
 * once per process: the addon can only hold one llama.cpp build.
 */
import { createRequire } from "node:module";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Shapes of the raw addon objects; src/model/runtime.ts wraps them. */
export interface NativeModelInfo {
  nVocab: number;
  nCtxTrain: number;
  nEmbd: number;
  nLayer: number;
  description: string;
  sizeBytes: number;
  nParams: number;
  bos: number;
  eos: number;
  addBos: boolean;
  vocabType: number;
}

export interface NativeModel {
  dispose(): void;
  info(): NativeModelInfo;
  tokenize(text: string, addSpecial: boolean, parseSpecial: boolean): Int32Array;
  tokenPiece(token: number, special: boolean): Uint8Array;
  tokenAttributes(): Uint32Array;
  eogTokens(): Int32Array;
  chatTemplate(name: string | null): string | null;
  meta(key: string): string | null;
  metaKeys(): string[];
}

export interface NativeContext {
  dispose(): void;
  info(): { nCtx: number; nBatch: number; nSeqMax: number; nVocab: number; nEmbd: number; embeddings: boolean; poolingType: number };
  /** 0 ok, 1 no room in the KV cache, 2 aborted; throws on errors. */
  /** seqCounts/extraSeqs (both or neither): rows that belong to several sequences. */
  decode(
    n: number,
    tokens: Int32Array,
    positions: Int32Array,
    seqIds: Int32Array,
    wantLogits: Uint8Array,
    seqCounts?: Int32Array,
    extraSeqs?: Int32Array,
  ): number;
  decodeAsync(
    n: number,
    tokens: Int32Array,
    positions: Int32Array,
    seqIds: Int32Array,
    wantLogits: Uint8Array,
    seqCounts?: Int32Array,
    extraSeqs?: Int32Array,
  ): Promise<number>;
  logits(row: number): Float32Array;
  /** An embedding context with pooling: `seq`'s pooled vector (a copy) of the last decode; null when it had no row. */
  embeddingSeq(seq: number): Float32Array | null;
  /** An embedding context without pooling: one row's output vector (a copy) of the last decode. */
  embeddingRow(row: number): Float32Array;
  seqRemove(seq: number, p0: number, p1: number): boolean;
  seqCopy(src: number, dst: number, p0: number, p1: number): void;
  seqKeep(seq: number): void;
  seqPosRange(seq: number): [number, number];
  clearMemory(): void;
  setThreads(threads: number, threadsBatch: number): void;
}

export interface BackendDevice {
  name: string;
  description: string;
  type: "cpu" | "gpu" | "igpu" | "accel" | "other";
}

export interface RuntimeInfo {
  binsDir: string;
  devices: BackendDevice[];
  gpuOffload: boolean;
}

/** native/kernels.h: the sampler's gather pass; state = [count, maxValue, argmax, floor], in and out. */
export type GatherCandidatesKernel = (
  mode: 0 | 1 | 2,
  logits: Float32Array,
  mask: Uint32Array | null,
  exclude: Uint32Array | null,
  n: number,
  k: number,
  ids: Int32Array,
  values: Float64Array,
  heap: Float64Array,
  state: Float64Array,
) => void;

/** native/kernels.h LogSumExp: log Σ exp over logits; setLse[k] over set k (membership bit k). */
export type LogSumExpKernel = (logits: Float32Array, membership: Uint8Array | null, numSets: number, setLse: Float64Array | null) => number;

interface Addon {
  gatherCandidates: GatherCandidatesKernel;
  logSumExp: LogSumExpKernel;
  kernelsUseAvx2: boolean;
  init(binsDir: string, logToStderr: boolean, fallbackBackend: string): RuntimeInfo;
  Model: new (path: string, vocabOnly: boolean, gpuLayers: number, useMmap: boolean) => NativeModel;
  Context: new (
    model: NativeModel,
    nCtx: number,
    nBatch: number,
    nUbatch: number,
    nSeqMax: number,
    threads: number,
    threadsBatch: number,
    flashAttn: number,
    kvUnified: boolean,
    embeddings: boolean,
    poolingType: number,
  ) => NativeContext;
}

/**
 * Which llama.cpp build to load (the @node-llama-cpp/linux-x64* packages). "auto" takes the first
 * installed GPU package (cuda, vulkan), else the CPU one, and runs on the CPU devices of that
 * build when its GPU backend cannot start (no driver, wrong CUDA runtime): check
 * RuntimeInfo.devices. Naming a GPU backend ("cuda", "vulkan") is a promise the caller relies on:
 * when no GPU device comes up, loading fails instead of running on the CPU unasked.
 * "cuda-ext" is "cuda" that requires @node-llama-cpp/linux-x64-cuda-ext, whose second
 * libggml-cuda.so is tried when the first gives no device; "cuda" and "auto" try it too when it
 * is installed.
 */
export const GPU_CHOICES = ["auto", "cpu", "cuda", "cuda-ext", "vulkan"] as const;
export type GpuChoice = (typeof GPU_CHOICES)[number];

export interface LlamaRuntimeOptions {
  /** A directory holding libllama*.so / libggml*.so; overrides `gpu`. Env TRELLIS_LLAMA_BINS. */
  binsDir?: string;
  /** Env TRELLIS_LLAMA_GPU; default "auto". */
  gpu?: GpuChoice;
  /** Forward llama.cpp's own log to stderr. Env TRELLIS_LLAMA_LOG=1. */
  log?: boolean;
}

export class RuntimeLoadError extends Error {
  override name = "RuntimeLoadError";
}

const require = createRequire(import.meta.url);
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

const PACKAGES: Record<Exclude<GpuChoice, "auto">, string> = {
  cpu: "@node-llama-cpp/linux-x64",
  cuda: "@node-llama-cpp/linux-x64-cuda",
  "cuda-ext": "@node-llama-cpp/linux-x64-cuda-ext",
  vulkan: "@node-llama-cpp/linux-x64-vulkan",
};

/**
 * libllama.so (a plain build), libllama.v0.5.0.so (a release), libllama.cuda.v0.5.0.so (a GPU
 * release); not libllama-common.so. native/llama_api.cc picks the same names.
 */
const LIBLLAMA = /^libllama(\.[\w.]+)?\.so$/;

/** The bins/ folder of an installed @node-llama-cpp/* package, or null when not installed. */
function packageBinsRoot(pkg: string): string | null {
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    return null;
  }
  const binsRoot = join(dirname(dirname(entry)), "bins");
  return existsSync(binsRoot) ? binsRoot : null;
}

/** The bins directory of an installed @node-llama-cpp/* package, or null when not installed. */
export function packageBinsDir(choice: Exclude<GpuChoice, "auto">): string | null {
  const binsRoot = packageBinsRoot(PACKAGES[choice]);
  if (binsRoot === null) return null;
  for (const sub of readdirSync(binsRoot)) {
    const dir = join(binsRoot, sub);
    try {
      if (readdirSync(dir).some((f) => LIBLLAMA.test(f))) return dir;
    } catch {
      // not a directory
    }
  }
  return null;
}

/** The second CUDA backend of @node-llama-cpp/linux-x64-cuda-ext (bins/<platform>/fallback/). */
export function cudaExtFallbackBackend(): string | null {
  const binsRoot = packageBinsRoot(PACKAGES["cuda-ext"]);
  if (binsRoot === null) return null;
  for (const sub of readdirSync(binsRoot)) {
    const lib = join(binsRoot, sub, "fallback", "libggml-cuda.so");
    if (existsSync(lib)) return lib;
  }
  return null;
}

interface BackendPlan {
  binsDir: string;
  fallbackBackend: string;
  /** The GPU backend the caller named, which must then give a GPU device. */
  required: string | null;
}

function chooseBackend(opts: LlamaRuntimeOptions): BackendPlan {
  const explicit = opts.binsDir ?? process.env.TRELLIS_LLAMA_BINS;
  if (explicit) return { binsDir: resolve(explicit), fallbackBackend: "", required: null };
  const gpu = opts.gpu ?? (process.env.TRELLIS_LLAMA_GPU as GpuChoice | undefined) ?? "auto";
  if (!(GPU_CHOICES as readonly string[]).includes(gpu)) {
    throw new RuntimeLoadError(`unknown GPU backend "${gpu}": use one of ${GPU_CHOICES.join(", ")}`);
  }
  const order: Exclude<GpuChoice, "auto" | "cuda-ext">[] = gpu === "auto" ? ["cuda", "vulkan", "cpu"] : [gpu === "cuda-ext" ? "cuda" : gpu];
  const extFallback = cudaExtFallbackBackend();
  if (gpu === "cuda-ext" && !extFallback) {
    throw new RuntimeLoadError(`no llama.cpp build found for gpu=cuda-ext: install ${PACKAGES["cuda-ext"]} beside ${PACKAGES.cuda}`);
  }
  for (const choice of order) {
    const dir = packageBinsDir(choice);
    if (!dir) continue;
    return {
      binsDir: dir,
      fallbackBackend: choice === "cuda" ? (extFallback ?? "") : "",
      required: gpu === "auto" || gpu === "cpu" ? null : choice,
    };
  }
  throw new RuntimeLoadError(`no llama.cpp build found for gpu=${gpu}: install ${gpu === "auto" ? PACKAGES.cpu : PACKAGES[gpu]}`);
}

let addon: Addon | null = null;
let runtime: RuntimeInfo | null = null;

function loadAddon(): Addon {
  if (addon) return addon;
  const candidates = [join(REPO_ROOT, "build", "Release", "trellis_llama.node"), join(REPO_ROOT, "build", "Debug", "trellis_llama.node")];
  const path = candidates.find((p) => existsSync(p));
  if (!path) {
    throw new RuntimeLoadError(`native addon not built (looked for ${candidates[0]}); run \`npx node-gyp rebuild\` or \`npm ci\``);
  }
  addon = require(path) as Addon;
  return addon;
}

/**
 * The addon's row kernels (native/kernels.h) when the addon is built (they need no llama.cpp),
 * else null: the sampler and the categorizer then run their TypeScript loops instead.
 */
export function nativeRowKernels(): { gather: GatherCandidatesKernel; logSumExp: LogSumExpKernel; avx2: boolean } | null {
  try {
    const a = loadAddon();
    return { gather: a.gatherCandidates, logSumExp: a.logSumExp, avx2: a.kernelsUseAvx2 };
  } catch {
    return null;
  }
}

/**
 * Loads the addon and llama.cpp (idempotent). The first call decides the backend for the whole
 * process; later calls with a different directory fail.
 */
export function initRuntime(opts: LlamaRuntimeOptions = {}): RuntimeInfo {
  if (runtime && !opts.binsDir && !opts.gpu) return runtime;
  const plan = chooseBackend(opts);
  const log = opts.log ?? process.env.TRELLIS_LLAMA_LOG === "1";
  const info = loadAddon().init(plan.binsDir, log, plan.fallbackBackend);
  if (plan.required && !info.devices.some((d) => d.type === "gpu" || d.type === "igpu")) {
    throw new RuntimeLoadError(
      `gpu=${plan.required} was asked for, but its backend in ${plan.binsDir} found no GPU device ` +
        `(no driver, or its CUDA/Vulkan runtime libraries are missing); TRELLIS_LLAMA_LOG=1 shows llama.cpp's reasons`,
    );
  }
  runtime = info;
  return runtime;
}

export function nativeAddon(): Addon {
  initRuntime();
  return loadAddon();
}
