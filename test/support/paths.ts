import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";

/** Repository root (this file lives in test/support/). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Read-only real GGUF files provided beside the repository (never copied into it). */
export const SHARED_MODELS = resolve(REPO_ROOT, "..", "shared", "models");
export const VOCAB_DIR = resolve(SHARED_MODELS, "vocab");
export const STORIES_260K = resolve(SHARED_MODELS, "stories260K.gguf");
export const LLAMA2_TINY_RANDOM = resolve(SHARED_MODELS, "llama-2-tiny-random.gguf");
export const vocabFile = (name: string): string => resolve(VOCAB_DIR, `ggml-vocab-${name}.gguf`);
/** Debian's python3: the only interpreter that sees python3-lark (the oracle). */
export const ORACLE_PYTHON = "/usr/bin/python3";

/**
 * Engine options for tests that check a seed reproduces a completion across requests: without the
 * prefix cache. A prefix reused from it sits in other KV cells than a fresh one, and the last
 * prompt token is evaluated in a batch of its own, so logits may move in the last bits and a
 * near tie flip (README, "Batching and reproducibility"); test/generate-prefix-cache holds those
 * within tolerance.
 */
export const NO_PREFIX_CACHE = { tokens: 0, entries: 0 } as const;
