/**
 * What the OpenAI routes share between a validated body and the engine: the token budget (what
 * the model may still write after the prompt), the request's sampling base, a chat conversation
 * rendered and planned (Chat Completions and the Responses API both run it), and the calls of a
 * tool reply. Every refusal names the field the client sent.
 */
import type { Config } from "../../config.js";
import type { ConstrainedCompletionRequest, ConstraintSpec, Engine, ReasoningSection, ToolMode } from "../../generate/index.js";
import type { ReasoningFormat, RenderedPrompt } from "../../prompt/index.js";
import { samplingOf, stopStrings } from "../completion-fields.js";
import { ANSWER_OPEN, ANSWER_PREFILL, HARMONY_TOOLS_CLOSE, MUSE_TOOLS_CLOSE, type ToolCallStyle } from "../../schema/index.js";
import { OpenAIRequestError } from "./errors.js";
import { type ChatBody, chatMessagesOf, constraintOf, logitBiasOf, type SharedBody } from "./request.js";

export type TokenBudget = (
  promptTokens: number,
  asked: number | null | undefined,
  fallback: number,
  promptParam: string,
  tokensParam: string,
) => number;

/**
 * Tokens the model may still write after `promptTokens`: 400 naming `promptParam` when none, and
 * `tokensParam` (the field the client sent: max_tokens, max_completion_tokens, max_output_tokens)
 * when it asks too many.
 */
export function tokenBudget(engine: Engine, config: Config): TokenBudget {
  return (promptTokens, asked, fallback, promptParam, tokensParam) => {
    const room = engine.contextLength - promptTokens;
    if (room <= 0) {
      throw new OpenAIRequestError(
        400,
        `the prompt is ${promptTokens} tokens, but the model context is ${engine.contextLength} tokens`,
        promptParam,
      );
    }
    if (asked === null || asked === undefined) return Math.min(fallback, room, config.maxNewTokensLimit);
    if (asked > room) {
      throw new OpenAIRequestError(
        400,
        `${tokensParam} must be ≤ ${room}: the prompt takes ${promptTokens} of the model's ${engine.contextLength}-token context`,
        tokensParam,
      );
    }
    return asked;
  };
}

export type RequestBase = (
  body: SharedBody,
  prompt: string,
  maxNewTokens: number,
  constrained: boolean,
) => Omit<ConstrainedCompletionRequest, "constraint">;

/** The engine request of a body, all but its constraint: sampling with OpenAI's defaults, stop, logit bias, seed. */
export function requestBase(engine: Engine): RequestBase {
  return (body, prompt, maxNewTokens, constrained) => {
    const request: Omit<ConstrainedCompletionRequest, "constraint"> = {
      prompt,
      maxNewTokens,
      // A constrained answer ends when it is complete; free text when the model ends it.
      stopAfterMatch: constrained,
      ...samplingOf(body),
      stop: stopStrings(body),
      logitBias: logitBiasOf(body, engine.vocabSize),
      ...(body.fast_forward == null ? {} : { fastForward: body.fast_forward }),
    };
    return body.seed === null || body.seed === undefined ? request : { ...request, seed: body.seed };
  };
}

/** Where a reasoning section ends when the reply after it may be calls (tools on "auto"), for the styles whose reply starts with its own header. */
const TOOLS_SECTION_CLOSE: Partial<Record<ToolCallStyle, string>> = { harmony: HARMONY_TOOLS_CLOSE, muse: MUSE_TOOLS_CLOSE };

/** A chat conversation ready to run: its constraint, tool mode, rendered prompt, token budget and engine request. */
export interface PreparedChat {
  spec: ConstraintSpec;
  tools: ToolMode | null;
  rendered: RenderedPrompt;
  maxNewTokens: number;
  base: Omit<ConstrainedCompletionRequest, "constraint">;
  /** The reasoning section the answer follows (the model's template has one and it is on), or null. */
  reasoning: ReasoningSection | null;
  /** Indices of the messages whose `reasoning_content` the model's template never reads (the route warns), else empty. */
  unreadReasoning: number[];
}

/**
 * A chat body → what the engine runs: the constraint (response_format, structured_outputs,
 * tool_choice), the conversation rendered by the model's chat template (with the tools it
 * declares), the token budget after it (`tokensParam` names the client's max-tokens field), and
 * the engine request without its constraint.
 */
export function prepareChat(engine: Engine, config: Config, body: ChatBody, tokensParam: string): PreparedChat {
  const { spec, tools } = constraintOf(body, true, engine.toolCallStyle ?? null);
  if (!engine.renderChat) throw new OpenAIRequestError(501, "this engine has no chat renderer");
  const withTools = body.tools && body.tools.length > 0 && body.tool_choice !== "none" ? body.tools : undefined;
  const messages = chatMessagesOf(body, config.maxPromptChars, withTools);
  const thinking = reasoningOf(engine.reasoningFormat ?? null, body);
  // gpt-oss and Muse with tools on "auto": the section ends at the next message's start, whose
  // header says whether it is the answer or calls (the tool language reads both).
  const toolsClose = tools?.kind === "auto" && tools.style !== undefined ? TOOLS_SECTION_CLOSE[tools.style] : undefined;
  if (thinking.section && toolsClose !== undefined) {
    // The tool language reads the header itself (Muse's ` to=user`): a section the model may skip
    // has no lead of its own then, and the header alone (reasoning off) is no section.
    const { skippable, ...section } = thinking.section;
    thinking.section = section.hidden ? null : { ...section, close: toolsClose, ...(skippable ? { skippable: { lead: "" } } : {}) };
  }
  // Any other answer opens with the style's header where it has one (Cohere, Solar): after the
  // reasoning's close, or alone (a section of its header only), before an answer without reasoning.
  const lead = tools?.kind === "auto" || !engine.toolCallStyle ? undefined : ANSWER_OPEN[engine.toolCallStyle];
  // Or it follows a lead in the prompt (Command R+'s `directly-answer` action).
  const prefill = tools?.kind === "auto" || !engine.toolCallStyle ? undefined : ANSWER_PREFILL[engine.toolCallStyle];
  if (lead !== undefined)
    thinking.section = thinking.section
      ? { ...thinking.section, close: thinking.section.close + lead }
      : { open: null, close: lead, hidden: true };
  const rendered = engine.renderChat({
    messages,
    tools: withTools,
    addGenerationPrompt: true,
    ...(thinking.variables ? { variables: thinking.variables } : {}),
    ...(prefill === undefined ? {} : { assistantPrefill: prefill }),
  });
  const maxNewTokens = tokenBudget(engine, config)(
    rendered.tokens.length,
    body.max_completion_tokens ?? body.max_tokens,
    config.maxNewTokensLimit,
    "messages",
    tokensParam,
  );
  const request = requestBase(engine)(body, rendered.text, maxNewTokens, spec.kind !== "text" && spec.kind !== "tool_calls");
  // A free-text answer ends where the model says its answer ends (Apriel 1.5's [END FINAL RESPONSE]).
  const answerEnd = thinking.section && spec.kind === "text" ? engine.reasoningFormat?.answerEnd : undefined;
  if (answerEnd !== undefined) request.stop = [...(request.stop ?? []), answerEnd];
  const base: Omit<ConstrainedCompletionRequest, "constraint"> = {
    // Free text and "auto" tool replies end when the model ends them.
    ...request,
    promptTokens: rendered.tokens,
    ...(body.logprobs ? { logprobs: body.top_logprobs ?? 0 } : {}),
    ...(thinking.section ? { reasoning: thinking.section } : {}),
  };
  const unreadReasoning = rendered.reasoningContentUnread ? messages.flatMap((m, i) => (m.reasoning_content !== undefined ? [i] : [])) : [];
  return { spec, tools, rendered, maxNewTokens, base, reasoning: thinking.section, unreadReasoning };
}

/**
 * Reasoning tokens each `reasoning_effort` allows (the section's closing marker included); high
 * and xhigh are bounded by the token budget only. `reasoning_budget` (Trellis's) sets it exactly.
 */
export const REASONING_EFFORT_TOKENS: Readonly<Record<string, number>> = { minimal: 256, low: 1024, medium: 4096 };

/**
 * How a chat request reasons on a model whose template has a reasoning section: the section the
 * answer follows (null: none), and the template variables to render with: its switch, and the
 * request's `reasoning_effort` itself, which some templates read (gpt-oss writes "Reasoning: low",
 * DeepSeek V4 a longer instruction for "high"). `reasoning_effort: "none"` turns the section off
 * where the template can (its switch set false writes an empty section); where the template
 * reasons only when its switch is set (`askedOnly`), a `reasoning_effort` or `reasoning_budget`
 * turns it on.
 */
function reasoningOf(
  format: ReasoningFormat | null,
  body: ChatBody,
): { section: ReasoningSection | null; variables: Record<string, boolean | string> | null } {
  if (format === null) return { section: null, variables: null };
  const effort = body.reasoning_effort ?? null;
  // "none" is not passed on: whether reasoning is off is the switch's business (a template that
  // read it as its own switch would disagree with the section planned here).
  const asked: Record<string, string> = effort === null || effort === "none" ? {} : { reasoning_effort: effort };
  if (effort === "none" && format.toggle !== null)
    return { section: null, variables: { [format.toggle]: format.toggleValues?.off ?? false } };
  // Efforts with which the template writes the empty section itself (Solar Open's minimal and low).
  if (effort !== null && format.offEfforts?.includes(effort) === true) return { section: null, variables: asked };
  // A model that reasons only when asked (Granite 3.3, Bielik, Reka, Hunyuan 3) answers at once unless asked.
  if (format.askedOnly && effort === null && body.reasoning_budget == null) return { section: null, variables: null };
  // A model that decides for itself (MiniMax-M3's adaptive mode, Muse): the template's default
  // unless the request says; "none" skips the section (its lead written instead, where it has one).
  const adaptive = format.adaptive;
  if (adaptive !== undefined && effort === "none")
    return { section: adaptive.lead === "" ? null : { open: null, close: adaptive.lead, hidden: true }, variables: null };
  if (adaptive !== undefined && effort === null && body.reasoning_budget == null)
    return { section: { open: format.open, close: format.close, skippable: { lead: adaptive.lead } }, variables: null };
  const budget = body.reasoning_budget ?? (effort === null ? undefined : REASONING_EFFORT_TOKENS[effort]);
  const section: ReasoningSection = {
    open: format.preOpened ? null : format.open,
    close: format.close,
    ...(budget === undefined ? {} : { maxTokens: budget }),
  };
  const variables: Record<string, boolean | string> = {
    ...(format.toggle !== null ? { [format.toggle]: format.toggleValues?.on ?? true } : {}),
    ...asked,
  };
  // A template's own effort variable (Kimi-K3's thinking_effort), in its words.
  const word = effort === null ? undefined : format.effortVariable?.words[effort];
  if (word !== undefined) variables[format.effortVariable!.name] = word;
  // A template whose switch is reasoning_effort itself (Hunyuan 3: "low" or "high"; any other word
  // raises). Solar Open reads the request's words as they are.
  if (format.toggle === "reasoning_effort" && format.toggleValues && format.offEfforts === undefined)
    variables.reasoning_effort = effort === "minimal" || effort === "low" ? "low" : format.toggleValues.on;
  return { section, variables: Object.keys(variables).length > 0 ? variables : null };
}
