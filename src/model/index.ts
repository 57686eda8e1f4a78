/**
 * model/ — llama.cpp through our N-API addon (native/): load a GGUF model, tokenize, create a
 * context and decode batches; the llama.cpp build is chosen at run time (CPU, a GPU package, or
 * TRELLIS_LLAMA_BINS). Also the addon's row kernels (gather, log-sum-exp) for later stages, and
 * the default model's download.
 *
 *   initRuntime({ gpu });                                   // once per process
 *   const model = loadModel(path, { threads });
 *   const ctx = model.createContext({ nCtx, nSeqMax, nBatch });
 *   await ctx.decodeAsync(batch); ctx.logits(row);
 */
export * from "./runtime.js";
export * from "./sequences.js";
export { nextBoundary, type RawTokenize, tokenCodePoints, tokenizeInPieces } from "./tokenize-pieces.js";
export {
  GPU_CHOICES,
  initRuntime,
  nativeAddon,
  nativeRowKernels,
  packageBinsDir,
  RuntimeLoadError,
  type BackendDevice,
  type GatherCandidatesKernel,
  type GpuChoice,
  type LlamaRuntimeOptions,
  type LogSumExpKernel,
  type RuntimeInfo,
} from "./native.js";
export {
  ChecksumMismatchError,
  DEFAULT_MODEL,
  ensureModel,
  ModelDownloadError,
  progressBar,
  type DownloadProgress,
  type EnsureModelOptions,
  type ModelSource,
} from "./download.js";
