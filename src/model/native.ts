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
  info(): { nCtx: number; nBatch: number; nSeqMax: number; nVocab: number };
  /** 0 ok, 1 no room in the KV cache, 2 aborted; throws on errors. */
  /** seqCounts/extraSeqs (both or neither): rows that belong to several sequences. */
  decode(n: number, tokens: Int32Array, positions: Int32Array, seqIds: Int32Array, wantLogits: Uint8Array, seqCounts?: Int32Array, extraSeqs?: Int32Array): number;
  decodeAsync(n: number, tokens: Int32Array, positions: Int32Array, seqIds: Int32Array, wantLogits: Uint8Array, seqCounts?: Int32Array, extraSeqs?: Int32Array): Promise<number>;
  logits(row: number): Float32Array;
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

interface Addon {
  init(binsDir: string, logToStderr: boolean): RuntimeInfo;
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
  ) => NativeContext;
}

/**
 * Which llama.cpp build to load (the @node-llama-cpp/linux-x64* packages). "cuda" and
 * "cuda-ext" are two CUDA builds for different CUDA runtime versions (install the one that fits
 * the driver). "auto" takes the first installed GPU package (cuda, cuda-ext, vulkan), else the
 * CPU one; when that GPU backend cannot start (no driver, wrong CUDA runtime) llama.cpp runs on
 * the CPU devices of that build — check RuntimeInfo.devices.
 */
export type GpuChoice = "auto" | "cpu" | "cuda" | "cuda-ext" | "vulkan";

export interface RuntimeOptions {
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

/** The bins directory of an installed @node-llama-cpp/* package, or null when not installed. */
export function packageBinsDir(choice: Exclude<GpuChoice, "auto">): string | null {
  let entry: string;
  try {
    entry = require.resolve(PACKAGES[choice]);
  } catch {
    return null;
  }
  const binsRoot = join(dirname(dirname(entry)), "bins");
  if (!existsSync(binsRoot)) return null;
  for (const sub of readdirSync(binsRoot)) {
    const dir = join(binsRoot, sub);
    try {
      if (readdirSync(dir).some((f) => /^libllama(\.v[\d.]+)?\.so$/.test(f))) return dir;
    } catch {
      // not a directory
    }
  }
  return null;
}

function chooseBinsDir(opts: RuntimeOptions): string {
  const explicit = opts.binsDir ?? process.env.TRELLIS_LLAMA_BINS;
  if (explicit) return resolve(explicit);
  const gpu = opts.gpu ?? (process.env.TRELLIS_LLAMA_GPU as GpuChoice | undefined) ?? "auto";
  const order: Exclude<GpuChoice, "auto">[] = gpu === "auto" ? ["cuda", "cuda-ext", "vulkan", "cpu"] : [gpu];
  for (const choice of order) {
    const dir = packageBinsDir(choice);
    if (dir) return dir;
  }
  throw new RuntimeLoadError(
    `no llama.cpp build found for gpu=${gpu}: install ${gpu === "auto" ? PACKAGES.cpu : PACKAGES[gpu]}`,
  );
}

let addon: Addon | null = null;
let runtime: RuntimeInfo | null = null;

function loadAddon(): Addon {
  if (addon) return addon;
  const candidates = [
    join(REPO_ROOT, "build", "Release", "trellis_llama.node"),
    join(REPO_ROOT, "build", "Debug", "trellis_llama.node"),
  ];
  const path = candidates.find((p) => existsSync(p));
  if (!path) {
    throw new RuntimeLoadError(
      `native addon not built (looked for ${candidates[0]}); run \`npx node-gyp rebuild\` or \`npm ci\``,
    );
  }
  addon = require(path) as Addon;
  return addon;
}

/**
 * Loads the addon and llama.cpp (idempotent). The first call decides the backend for the whole
 * process; later calls with a different directory fail.
 */
export function initRuntime(opts: RuntimeOptions = {}): RuntimeInfo {
  if (runtime && !opts.binsDir && !opts.gpu) return runtime;
  const binsDir = chooseBinsDir(opts);
  const log = opts.log ?? process.env.TRELLIS_LLAMA_LOG === "1";
  runtime = loadAddon().init(binsDir, log);
  return runtime;
}

export function nativeAddon(): Addon {
  initRuntime();
  return loadAddon();
}
