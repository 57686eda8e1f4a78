export * from "./runtime.js";
export * from "./sequences.js";
export { initRuntime, packageBinsDir, RuntimeLoadError } from "./native.js";
export type { BackendDevice, GpuChoice, RuntimeInfo, LlamaRuntimeOptions } from "./native.js";
