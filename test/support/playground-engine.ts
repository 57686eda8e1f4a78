/**
 * The fake engine of test/support/fake-engine.ts, with what the dashboard's playground needs on
 * top: a chat renderer and a model id (so /v1/chat/completions answers), chat answers streamed a
 * token at a time with log-probabilities (so the page can show token boundaries and their
 * probabilities), and constraints compiled for real before admission (so a bad regex, grammar or
 * schema is the service's own 400 with its position, as the real engine answers it).
 *
 * A chat whose last message contains "slowly" streams a token every 250 ms (to stop it midway); a
 * JSON Schema completion with max_new_tokens under 4 is the 422 "needs at least 4 tokens".
 */
import {
  type CompletionResult,
  type ConstrainedCompletionRequest,
  type ConstraintSpec,
  type GeneratedToken,
  UnsatisfiableError,
} from "../../src/generate/index.js";
import { refusalError, refusalOf, runCompileTask } from "../../src/compile/index.js";
import type { ChatRenderRequest, RenderedPrompt } from "../../src/prompt/index.js";
import { DEFAULT_REGEX_LIMITS } from "../../src/regex/index.js";
import { createFakeEngine, type FakeEngine } from "./fake-engine.js";

export const PLAYGROUND_MODEL = "fake-stories";

/** What the fake model says in a chat: free text, or a JSON document under a response_format. */
const STORY = ["Once", " upon", " a", " time", ",", " a", " small", " robot", " found", " a", " red", " kite", "."];
const DOCUMENT = ["{", '"', "name", '":', ' "', "Kite", '",', ' "', "legs", '":', " 0", "}"];
const ALTERNATIVES = [" the", " one", " it", " and"];

const utf8 = new TextEncoder();

/** A token with a made-up but stable probability and two alternatives below it. */
function tokenOf(text: string, index: number): GeneratedToken {
  const logprob = -0.05 - ((index * 37) % 11) / 10;
  const alt = (k: number) => ALTERNATIVES[(index + k) % ALTERNATIVES.length]!;
  return {
    id: 100 + index,
    bytes: utf8.encode(text),
    logprob,
    top: [
      { id: 100 + index, bytes: utf8.encode(text), logprob },
      { id: 7, bytes: utf8.encode(alt(0)), logprob: logprob - 1.3 },
      { id: 8, bytes: utf8.encode(alt(1)), logprob: logprob - 2.1 },
    ],
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Compiles a regex, grammar or JSON Schema as the real engine does before admission; throws its 400/422. */
function compileForReal(spec: ConstraintSpec): void {
  const limits = DEFAULT_REGEX_LIMITS;
  try {
    if (spec.kind === "regex") runCompileTask({ kind: "regex", pattern: spec.pattern, limits });
    else if (spec.kind === "grammar") runCompileTask({ kind: "grammar", grammar: spec.grammar, maxIgnoredRun: 8, limits: {} });
    else if (spec.kind === "json_schema") runCompileTask({ kind: "json_schema", schema: spec.schema, options: spec.options, limits });
  } catch (error) {
    const field = spec.kind === "regex" ? "pattern" : spec.kind === "grammar" ? "grammar" : "schema";
    const refusal = refusalOf(error, field);
    throw refusal ? refusalError(refusal) : error;
  }
}

export interface PlaygroundEngine extends FakeEngine {
  readonly modelId: string;
  renderChat(request: ChatRenderRequest): RenderedPrompt;
  /** Milliseconds between streamed chat tokens. */
  tokenDelayMs: number;
}

export function createPlaygroundEngine(): PlaygroundEngine {
  const engine = createFakeEngine();
  const fakePrepare = engine.prepare.bind(engine);
  const fakeComplete = engine.complete.bind(engine);
  const chat = Object.assign(engine, {
    modelId: PLAYGROUND_MODEL,
    tokenDelayMs: 15,
    renderChat(request: ChatRenderRequest): RenderedPrompt {
      const text = `${request.messages.map((m) => `${m.role}: ${m.content}`).join("\n")}\nassistant:`;
      return { text, tokens: Int32Array.from({ length: engine.countTokens(text) + 1 }, (_, i) => i + 1), segments: [] };
    },
    async prepare(spec: ConstraintSpec, context: { client?: string; signal?: AbortSignal }): Promise<void> {
      await fakePrepare(spec, context);
      compileForReal(spec);
    },
    async complete(req: ConstrainedCompletionRequest): Promise<CompletionResult> {
      // Chat requests come with their rendered tokens; the Thiggle routes keep the plain fake, but
      // a JSON document needs 4 tokens at least (the real engine's 422 when max_new_tokens is less).
      if (req.promptTokens === undefined) {
        if (req.constraint.kind === "json_schema" && req.maxNewTokens < 4) {
          throw new UnsatisfiableError(`schema: the schema needs at least 4 tokens but max_new_tokens is ${req.maxNewTokens}`, "schema");
        }
        return fakeComplete(req);
      }
      if (engine.record) {
        engine.calls.push({ kind: `chat:${req.constraint.kind}`, request: req });
        if (req.signal) engine.signals.push(req.signal);
      }
      const pieces = req.constraint.kind === "json_schema" ? DOCUMENT : STORY;
      const count = Math.min(pieces.length, req.maxNewTokens);
      const delayMs = /slowly/.test(req.prompt) ? 250 : chat.tokenDelayMs;
      const tokens: GeneratedToken[] = [];
      for (let i = 0; i < count; i++) {
        await sleep(delayMs, req.signal);
        const token = tokenOf(pieces[i]!, i);
        tokens.push(token);
        req.onText?.(pieces[i]!, [token]);
      }
      return {
        completion: pieces.slice(0, count).join(""),
        tokensGenerated: count,
        stopReason: count < pieces.length ? "token_limit" : "pattern_match",
        ...(req.logprobs !== undefined ? { tokens } : {}),
      };
    },
  });
  return chat;
}
