/**
 * A fake Engine for the service-shell tests (server, dashboard, fuzz, load bench): no model, just
 * the contract. Prompts starting with a marker make it misbehave on purpose:
 *   "!invalid"  → InvalidRequestError(field pattern/grammar, position 3)
 *   "!unsat"    → UnsatisfiableError
 *   "!overload" → OverloadedError(retry after 7 s)
 *   "!bug"      → a plain Error (must become a 500 without internals)
 *   "!slow"     → waits until `release()` or the signal aborts
 * (for embeddings, the first string input). Embeddings are deterministic unit vectors of
 * FAKE_EMBEDDING_DIMENSIONS values (`fakeEmbedding`), usage the whitespace-separated words.
 */
import {
  InvalidRequestError,
  OverloadedError,
  UnsatisfiableError,
  type CategorizeRequest,
  type CategorizeResult,
  type CompletionResult,
  type ConstraintSpec,
  type Engine,
  type ConstrainedCompletionRequest,
  type EmbeddingInput,
  type EmbeddingRequest,
  type EmbeddingResult,
} from "../../src/generate/index.js";
import { defaultConfig, type Config } from "../../src/config.js";

export interface FakeEngine extends Engine {
  calls: Array<{ kind: string; request: unknown }>;
  /** Constraints prepared before admission, with the client that asked. */
  prepared: Array<{ spec: ConstraintSpec; client: string | undefined }>;
  /** Signals passed to the engine, to check cancellation. */
  signals: AbortSignal[];
  /** Lets every "!slow" call finish. */
  release(): void;
  ready: boolean;
  contextLength: number;
  delayMs: number;
  /** Keep calls/signals (tests); off for the load bench so memory stays flat. */
  record: boolean;
}

function misbehave(prompt: string, field: string): void {
  if (prompt.startsWith("!invalid")) throw new InvalidRequestError("unbalanced parenthesis", field, 3);
  if (prompt.startsWith("!unsat")) throw new UnsatisfiableError("no token sequence can match within max_new_tokens", field);
  if (prompt.startsWith("!overload")) throw new OverloadedError("engine queue is full", 7);
  if (prompt.startsWith("!bug")) throw new Error("secret internal detail /home/x/y.ts:12");
}

/** Length of the fake engine's embeddings. */
export const FAKE_EMBEDDING_DIMENSIONS = 8;

/**
 * A deterministic unit vector per input: FNV-1a of its text (or its token ids) seeds a xorshift
 * stream. Equal inputs give equal vectors; different ones (almost surely) differ.
 */
export function fakeEmbedding(input: EmbeddingInput): Float32Array {
  let hash = 0x811c9dc5;
  const mix = (value: number): void => {
    hash = Math.imul(hash ^ value, 0x01000193) >>> 0;
  };
  if (typeof input === "string") for (let i = 0; i < input.length; i++) mix(input.charCodeAt(i));
  else for (const id of input) mix(id + 0x10000);
  let state = hash || 1;
  const v = new Float32Array(FAKE_EMBEDDING_DIMENSIONS);
  let sum = 0;
  for (let i = 0; i < v.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    v[i] = ((state >>> 0) / 0xffffffff) * 2 - 1;
    sum += v[i]! * v[i]!;
  }
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * scale;
  return v;
}

export function createFakeEngine(): FakeEngine {
  let releaseAll: () => void = () => {};
  let gate = new Promise<void>((resolve) => (releaseAll = resolve));
  const wait = async (prompt: string, signal: AbortSignal | undefined, delayMs: number): Promise<void> => {
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (!prompt.startsWith("!slow")) return;
    await new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      void gate.then(resolve);
    });
  };
  const engine: FakeEngine = {
    calls: [],
    prepared: [],
    signals: [],
    ready: true,
    contextLength: 64,
    delayMs: 0,
    record: true,
    release() {
      releaseAll();
      gate = new Promise<void>((resolve) => (releaseAll = resolve));
    },
    get queueDepth() {
      return 0;
    },
    async prepare(spec: ConstraintSpec, context: { client?: string }) {
      if (engine.record) engine.prepared.push({ spec, client: context.client });
    },
    countTokens(text: string) {
      return text.split(/\s+/).filter((w) => w.length > 0).length;
    },
    async complete(req: ConstrainedCompletionRequest): Promise<CompletionResult> {
      const spec = req.constraint;
      // Calls are recorded with the constraint's fields spread, as the per-kind methods took them.
      const { kind, ...fields } = spec;
      const request = { ...req, ...fields };
      if (engine.record) {
        engine.calls.push({ kind, request });
        if (req.signal) engine.signals.push(req.signal);
      }
      misbehave(req.prompt, kind === "regex" ? "pattern" : kind === "grammar" ? "grammar" : "schema");
      await wait(req.prompt, req.signal, engine.delayMs);
      if (spec.kind === "regex") {
        const first = typeof spec.pattern === "string" ? spec.pattern : spec.pattern[0]!;
        const completion = first.replace(/[^A-Za-z0-9 ]/g, "").slice(0, req.maxNewTokens);
        return { completion, tokensGenerated: Math.min(3, req.maxNewTokens), stopReason: "pattern_match" };
      }
      if (spec.kind === "grammar") return { completion: "ok", tokensGenerated: req.maxNewTokens, stopReason: "token_limit" };
      return { completion: "null", tokensGenerated: 1, stopReason: "pattern_match" };
    },
    async categorize(req: CategorizeRequest): Promise<CategorizeResult> {
      if (engine.record) {
        engine.calls.push({ kind: "categorize", request: req });
        if (req.signal) engine.signals.push(req.signal);
      }
      misbehave(req.prompt, "categories");
      await wait(req.prompt, req.signal, engine.delayMs);
      const scores: Record<string, number> = {};
      req.categories.forEach((c, i) => (scores[c] = i === 0 ? 0.9 : 0.1 / (req.categories.length - 1)));
      const result: CategorizeResult = { choices: [req.categories[0]!] };
      if (req.includeScores) result.scores = scores;
      return result;
    },
    embeddingInputTokens: 32,
    async embed(req: EmbeddingRequest): Promise<EmbeddingResult> {
      if (engine.record) {
        engine.calls.push({ kind: "embed", request: req });
        if (req.signal) engine.signals.push(req.signal);
      }
      const first = req.inputs.find((input): input is string => typeof input === "string") ?? "";
      misbehave(first, "input");
      await wait(first, req.signal, engine.delayMs);
      const promptTokens = req.inputs.reduce(
        (sum, input) => sum + (typeof input === "string" ? engine.countTokens(input) : input.length),
        0,
      );
      return { embeddings: req.inputs.map(fakeEmbedding), promptTokens };
    },
    async close() {},
  };
  return engine;
}

export const TEST_KEY = "test-key-123";

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...defaultConfig(),
    dataDir: ":memory:",
    apiKeys: [TEST_KEY],
    adminToken: "admin-secret",
    maxNewTokensLimit: 32,
    threads: 1,
    ...overrides,
  };
}

export const auth = (key: string = TEST_KEY) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
});

/**
 * A chat engine (its template renders every conversation as "x") whose generation writes "Hel"
 * and then fails with a message that must not reach the client; asked for exactly 7 tokens, it
 * refuses before any text instead (a planning refusal: an ordinary HTTP error).
 */
export function failingChatEngine(): Engine {
  return {
    ...createFakeEngine(),
    modelId: "fake",
    renderChat: () => ({ text: "x", tokens: Int32Array.of(1, 2), segments: [] }),
    async completeChoices(req, _n, onChoiceText) {
      if (req.prompt === "x" && req.maxNewTokens === 7)
        throw new UnsatisfiableError("the schema needs at least 9 tokens but max_new_tokens is 7", "schema");
      onChoiceText?.(0, "Hel", []);
      throw new Error("secret detail /home/x.ts:1");
    },
  };
}
