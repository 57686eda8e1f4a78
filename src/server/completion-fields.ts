/**
 * The completion fields OpenAI named and Thiggle's /v1/completion reuses (temperature, top_p,
 * penalties, stop, and vLLM's top_k / repetition_penalty), read once for both APIs: their
 * defaults, the stop strings' checks, and the finish reason a result reports.
 */
import type { CompletionResult } from "../generate/index.js";
import { HttpError } from "./errors.js";

export interface OpenAiStyleFields {
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  repetition_penalty?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  stop?: string | string[] | null;
}

/** Sampling knobs with OpenAI's defaults (top_k and repetition_penalty off unless asked). */
export function samplingOf(body: OpenAiStyleFields) {
  const topK = body.top_k ?? 0;
  return {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: topK < 0 ? 0 : topK,
    repetitionPenalty: body.repetition_penalty ?? 1,
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
  };
}

/** The stop strings, as a list; a lone surrogate (JSON allows "\ud83d") would match half a character: 400. */
export function stopStrings(body: OpenAiStyleFields): string[] {
  const stop = body.stop;
  if (stop === undefined || stop === null) return [];
  const stops = typeof stop === "string" ? [stop] : stop;
  stops.forEach((s, i) => {
    if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s)) {
      throw new HttpError(400, `stop${typeof stop === "string" ? "" : `[${i}]`} is not well-formed Unicode (a lone surrogate)`);
    }
  });
  return stops;
}

export type FinishReason = "stop" | "length" | "tool_calls";

/** A finished text's reason: complete or ended by the model or a stop string ("stop"), or out of tokens. */
export function finishReasonOf(result: CompletionResult): FinishReason {
  return result.stopReason === "token_limit" ? "length" : "stop";
}
