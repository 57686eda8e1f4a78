/**
 * The library's front door: one loaded model serving completion under any constraint (regex,
 * grammar, JSON Schema, TypeScript type, tool calls, free text), categorization and embeddings
 * through one continuous-batching scheduler. The HTTP server wraps this.
 */
import { basename } from "node:path";
import { initRuntime, type GpuChoice } from "./model/index.js";
import type { ChatRenderRequest, RenderedPrompt } from "./prompt/index.js";
import { GenerationRuntime, type ConstraintSpec } from "./generate/index.js";
import type { CompileContext, ConstraintCacheOptions } from "./compile/index.js";
import { Categorizer } from "./categorize/index.js";
import type {
  CategorizeRequest,
  CategorizeResult,
  ChoiceTextHook,
  CompletionResult,
  ConstrainedCompletionRequest,
  EmbeddingRequest,
  EmbeddingResult,
  Engine,
} from "./generate/index.js";

export interface EngineOptions {
  modelPath: string;
  /** The id the OpenAI API serves the model under; default: the file name without ".gguf". */
  modelId?: string;
  threads?: number;
  contextSize?: number;
  /** Generation requests decoded together. */
  maxSequences?: number;
  /** "" or undefined = llama.cpp's default device choice; "cpu", "cuda", "vulkan", ... */
  gpu?: string;
  /** Queue of requests waiting for sequences before 503. */
  maxQueue?: number;
  /** Regex automaton cap (DFA states). */
  regexMaxStates?: number;
  /** Most tokens of one embedding input: the embedding context's size (default 512). */
  embeddingInputTokens?: number;
  /** The prefix cache's limits (-1 tokens: the whole context; 0: off); default on, 32 entries. */
  prefixCache?: { tokens: number; entries: number };
  /** Fast-forward through forced text unless a request turns it off (default true). */
  fastForward?: boolean;
  /** Compile workers, their limits, and the byte budget of compiled constraints. */
  constraints?: Partial<Omit<ConstraintCacheOptions, "regexLimits">>;
}

/** A model file's id: its name without the directory and the ".gguf". */
export function modelIdOf(path: string): string {
  return basename(path).replace(/\.gguf$/i, "");
}

/** Sequences a context may hold (llama.cpp's LLAMA_MAX_SEQ). */
const MAX_SEQUENCES = 256;

class TrellisEngine implements Engine {
  private readonly categorizer: Categorizer;
  private closed = false;

  constructor(
    private readonly runtime: GenerationRuntime,
    readonly modelId: string,
  ) {
    this.categorizer = new Categorizer(runtime);
  }

  get vocabSize(): number {
    return this.runtime.vocab.size;
  }

  get toolCallStyle() {
    return this.runtime.chat.toolCallStyle;
  }

  get reasoningFormat() {
    return this.runtime.chat.reasoning;
  }

  renderChat(request: ChatRenderRequest): RenderedPrompt {
    return this.runtime.chat.render(request);
  }

  get ready(): boolean {
    return !this.closed;
  }

  get contextLength(): number {
    return this.runtime.contextLength;
  }

  get kvCacheUtilization(): number {
    return this.runtime.scheduler.kvCacheUtilization;
  }

  get queueDepth(): number {
    return this.runtime.scheduler.queueDepth;
  }

  get backend(): string {
    const model = this.runtime.model;
    const gpu = initRuntime().devices.find((d) => d.type === "gpu" || d.type === "igpu");
    return model.offloaded && gpu ? `${gpu.name}: ${gpu.description}` : `CPU, ${model.threads} threads`;
  }

  countTokens(text: string): number {
    return this.runtime.countTokens(text);
  }

  prepare(spec: ConstraintSpec, context: CompileContext): Promise<void> {
    return this.runtime.prepare(spec, context);
  }

  constraintStats() {
    return this.runtime.constraints.stats();
  }

  prefixCacheStats() {
    return this.runtime.scheduler.prefixCache.stats();
  }

  complete(req: ConstrainedCompletionRequest): Promise<CompletionResult> {
    return this.runtime.complete(req);
  }

  completeChoices(req: ConstrainedCompletionRequest, n: number, onChoiceText?: ChoiceTextHook): Promise<CompletionResult[]> {
    return this.runtime.completeChoices(req, n, onChoiceText);
  }

  categorize(req: CategorizeRequest): Promise<CategorizeResult> {
    return this.categorizer.categorize(req);
  }

  get embeddingInputTokens(): number {
    return this.runtime.embeddings.inputTokens;
  }

  embed(req: EmbeddingRequest): Promise<EmbeddingResult> {
    return this.runtime.embed(req);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.runtime.close();
  }
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  const concurrency = options.maxSequences ?? 8;
  const runtime = GenerationRuntime.open({
    modelPath: options.modelPath,
    threads: options.threads,
    contextSize: options.contextSize,
    // Categorization scores every category on its own sequence next to running generations.
    maxSequences: Math.min(MAX_SEQUENCES, concurrency + 129),
    maxQueue: options.maxQueue,
    constraints: {
      ...options.constraints,
      regexLimits: { maxDfaStates: options.regexMaxStates },
    },
    gpu: options.gpu ? (options.gpu as GpuChoice) : undefined,
    embeddingInputTokens: options.embeddingInputTokens,
    prefixCache: options.prefixCache,
    fastForward: options.fastForward,
  });
  return new TrellisEngine(runtime, options.modelId ?? modelIdOf(options.modelPath));
}
