export * from "./gguf.js";
export * from "./vocabulary.js";
