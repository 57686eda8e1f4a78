/**
 * A model's reasoning section, recognised from its chat template: the markers it writes around
 * its thinking, whether the generation prompt already opens the section, and the template switch
 * that turns thinking off (the template then writes an empty section itself).
 */
import type { ChatRenderRequest } from "./chat-template.js";

export interface ReasoningFormat {
  readonly open: string;
  readonly close: string;
  /** The generation prompt (thinking on) ends inside an opened section: the model starts reasoning at once. */
  readonly preOpened: boolean;
  /** The template variable that turns thinking off when false (`enable_thinking`, `thinking`), or null. */
  readonly toggle: string | null;
  /** A switch of two words instead of true and false (MiniMax-M3's `thinking_mode`: "enabled", "disabled"). Absent: a boolean. */
  readonly toggleValues?: { readonly on: string; readonly off: string };
  /**
   * The model reasons only when asked: its template's switch is off unless set (Granite 3.3's
   * `thinking` adds the instructions to think), so a request without `reasoning_effort` (or with
   * "none") gets no section, and one with it sets the switch true. Absent: false.
   */
  readonly askedOnly?: true;
  /**
   * `reasoning_effort` words with which the template writes the empty section itself (Solar Open's
   * "minimal" and "low"): the request answers at once. Absent: none.
   */
  readonly offEfforts?: readonly string[];
  /**
   * A template variable of its own that the request's `reasoning_effort` sets, through these words
   * (Kimi-K3's `thinking_effort`: low, high, max; any other word raises). Absent: none.
   */
  readonly effortVariable?: { readonly name: string; readonly words: Readonly<Record<string, string>> };
  /**
   * What the model writes after a free-text answer (Apriel 1.5's `[END FINAL RESPONSE]`): a stop
   * for free-text answers, so it is not content. Absent: none.
   */
  readonly answerEnd?: string;
  /**
   * The model decides whether to reason when the request does not say (MiniMax-M3's default
   * "adaptive" mode; Muse, whose message to itself is its own choice): a request without
   * `reasoning_effort` or `reasoning_budget` keeps the template's default and lets the model skip
   * the section, writing `lead` instead ("" for nothing); `reasoning_effort: "none"` skips it.
   * Absent: the section is written unless turned off.
   */
  readonly adaptive?: { readonly lead: string };
}

/** Marker pairs of the families whose sections are plain text between two markers. */
const MARKER_PAIRS: readonly (readonly [string, string])[] = [
  ["<think>", "</think>"],
  ["<seed:think>", "</seed:think>"],
  ["[THINK]", "[/THINK]"],
  ["<|START_THINKING|>", "<|END_THINKING|>"],
  // Gemma 4: a thought channel (its markers are text tokens there).
  ["<|channel>thought\n", "<channel|>"],
  // MiniMax-M3.
  ["<mm:think>", "</mm:think>"],
  // Apertus: its inner monologue between control tokens, asked for by `enable_thinking`.
  ["<|inner_prefix|>", "<|inner_suffix|>"],
  // Apriel 1.6: the generation prompt opens the reasoning in words; a marker line ends it.
  ["Here are my reasoning steps:\n", "\n[BEGIN FINAL RESPONSE]\n"],
];

/** Whether the template's source writes `marker` (a newline in it spelled as the string escape \n, as templates write it). */
const writes = (template: string, marker: string): boolean =>
  template.includes(marker) || template.includes(marker.replaceAll("\n", "\\n"));

const TOGGLES = ["enable_thinking", "thinking"] as const;
/**
 * Switches of two words: MiniMax-M3's `thinking_mode` ("adaptive" by default lets the model choose
 * whether to think, kept where the request does not say: ReasoningFormat.adaptive; "enabled" is
 * what a request that asks for reasoning sets).
 */
const WORD_TOGGLES = [
  { name: "thinking_mode", on: "enabled", off: "disabled" },
  // Hunyuan 3: its reasoning_effort is the switch ("no_think" by default; "low", "high").
  { name: "reasoning_effort", on: "high", off: "no_think" },
] as const;

/** Hunyuan 3 writes its markers with a suffix, `'<think{}>'.format(HYTK)`: the source never spells them. */
const HUNYUAN = { source: "'<think{}>'.format(HYTK)", suffix: /HYTK = '([^']*)'/ };

/** gpt-oss's channels (their markers are control tokens: see ChatPrompter). */
const HARMONY_ANALYSIS = "<|channel|>analysis<|message|>";
const HARMONY_FINAL = "<|channel|>final<|message|>";

/**
 * Solar Open: `<|think|>` after the generation prompt's `<|begin|>assistant`, the section ending
 * with the next message's start (the model's <|end|> is text; the reply's header follows, written
 * as the answer's: ANSWER_OPEN); its switch is the `reasoning_effort` variable, whose "minimal" and
 * "low" write an empty section.
 */
const SOLAR_THINK = "<|begin|>assistant<|think|>";
const SOLAR_CONTENT = "<|begin|>assistant<|content|>";
const SOLAR: ReasoningFormat = {
  open: "<|think|>",
  close: "<|end|><|begin|>assistant",
  preOpened: false,
  toggle: "reasoning_effort",
  toggleValues: { on: "high", off: "low" },
  offEfforts: ["minimal", "low"],
};

/**
 * Kimi-K3 (XTML): the generation prompt opens `<|open|>think<|sep|>` (thinking on, the template's
 * default) or `<|open|>response<|sep|>`; the section ends with the think tag's close and the
 * response's open. Its `thinking_effort` (low, high, max) follows the request's reasoning_effort.
 */
const KIMI_K3_SOURCE = "{{- open_tag('think' if thinking else 'response') -}}";
const KIMI_K3: ReasoningFormat = {
  open: "<|open|>think<|sep|>",
  close: "<|close|>think<|sep|><|open|>response<|sep|>",
  preOpened: true,
  toggle: "thinking",
  effortVariable: { name: "thinking_effort", words: { minimal: "low", low: "low", medium: "high", high: "high", xhigh: "max" } },
};

/**
 * Muse: the reasoning is a message to itself, ` to=self<|message|>…<|eom|>`, before the message to
 * the user (`<|start|>assistant to=user<|message|>`); the generation prompt ends with
 * `<|start|>assistant`.
 */
const MUSE_SOURCE = "'<|start|>assistant to=self<|message|>'";
const MUSE: ReasoningFormat = {
  open: " to=self<|message|>",
  close: "<|eom|><|start|>assistant to=user<|message|>",
  preOpened: false,
  toggle: null,
  adaptive: { lead: " to=user<|message|>" },
};

/**
 * Apriel 1.5: its system prompt asks for the reasoning first, then the answer between
 * `[BEGIN FINAL RESPONSE]` and `[END FINAL RESPONSE]`; the model reasons from the start of its turn.
 */
const APRIEL_15_SOURCE = "provide the final solution in the following format: [BEGIN FINAL RESPONSE] ... [END FINAL RESPONSE]";
const APRIEL_15: ReasoningFormat = {
  open: "",
  close: "[BEGIN FINAL RESPONSE]",
  preOpened: true,
  toggle: null,
  answerEnd: "[END FINAL RESPONSE]",
};

/**
 * The template's reasoning format, or null when it has none Trellis reads. `render` renders a
 * one-message conversation with the generation prompt (and the given template variables).
 */
export function reasoningFormatOf(template: string | null, render: (request: ChatRenderRequest) => string): ReasoningFormat | null {
  if (template === null) return null;
  // gpt-oss (harmony): the analysis channel, then the final one; the prompt ends with <|start|>assistant.
  if (template.includes(HARMONY_ANALYSIS) && template.includes(HARMONY_FINAL))
    return { open: HARMONY_ANALYSIS, close: `<|end|><|start|>assistant${HARMONY_FINAL}`, preOpened: false, toggle: null };
  if (template.includes(SOLAR_THINK) && template.includes(SOLAR_CONTENT)) return SOLAR;
  if (template.includes(KIMI_K3_SOURCE)) return KIMI_K3;
  if (template.includes(MUSE_SOURCE)) return MUSE;
  if (template.includes(APRIEL_15_SOURCE) && !writes(template, "Here are my reasoning steps:\n")) return APRIEL_15;
  const suffix = template.includes(HUNYUAN.source) ? HUNYUAN.suffix.exec(template)?.[1] : undefined;
  const pair: readonly [string, string] | undefined =
    suffix !== undefined
      ? [`<think${suffix}>`, `</think${suffix}>`]
      : MARKER_PAIRS.find(([o, c]) => writes(template, o) && writes(template, c));
  if (!pair) return null;
  const [open, close] = pair;
  const messages = [{ role: "user" as const, content: "hi" }];
  const tail = (variables?: Record<string, boolean | string>): string | null => {
    try {
      return render({ messages, addGenerationPrompt: true, ...(variables ? { variables } : {}) }).trimEnd();
    } catch {
      return null;
    }
  };
  const on = tail();
  if (on === null) return null;
  // A switch is one the template reads and that, set false, makes it write the empty section.
  const toggle =
    TOGGLES.find((name) => new RegExp(`\\b${name}\\b`).test(template) && tail({ [name]: false })?.endsWith(close.trimEnd()) === true) ??
    null;
  if (toggle === null) {
    const words = WORD_TOGGLES.find(
      (w) =>
        template.includes(w.name) &&
        (template.includes(`"${w.on}"`) || template.includes(`'${w.on}'`)) &&
        tail({ [w.name]: w.off })?.endsWith(close.trimEnd()) === true,
    );
    if (words !== undefined) {
      const set = tail({ [words.name]: words.on });
      if (set === null || set.endsWith(close.trimEnd())) return null;
      const format = {
        open,
        close,
        preOpened: set.endsWith(open.trimEnd()),
        toggle: words.name,
        toggleValues: { on: words.on, off: words.off },
      };
      // Off unless set (Hunyuan's default is "no_think"): the model reasons only when asked.
      if (on.endsWith(close.trimEnd())) return { ...format, askedOnly: true };
      // Neither on nor off unless set (MiniMax-M3's "adaptive"): the model decides.
      return on !== set && !on.endsWith(open.trimEnd()) ? { ...format, adaptive: { lead: "" } } : format;
    }
    // A switch that is off unless set: true changes what the template writes, false does not.
    const asked = TOGGLES.find((name) => {
      if (!new RegExp(`\\b${name}\\b`).test(template)) return false;
      const set = tail({ [name]: true });
      return set !== null && set !== on && tail({ [name]: false }) === on;
    });
    if (asked !== undefined) {
      const set = tail({ [asked]: true })!;
      if (set.endsWith(close.trimEnd())) return null;
      return { open, close, preOpened: set.endsWith(open.trimEnd()), toggle: asked, askedOnly: true };
    }
  }
  const onTail = toggle ? (tail({ [toggle]: true }) ?? on) : on;
  // Thinking off by default and no switch to turn it on: the model does not reason here. (The
  // tails are trimmed: so are the markers, where they end in a newline.)
  if (onTail.endsWith(close.trimEnd())) return null;
  return { open, close, preOpened: onTail.endsWith(open.trimEnd()), toggle };
}
