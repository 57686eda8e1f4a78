/**
 * Control tokens a constraint may write: the tool-call markers some vocabularies have as control
 * tokens (Mistral's `[TOOL_CALLS]`, `[ARGS]`, `[CALL_ID]`; Kimi-K2's `<|tool_call_begin|>` and kin;
 * Granite 3.3's `<|tool_call|>`; Apertus's `<|tools_prefix|>`, `<|tools_suffix|>`; Cohere's
 * `<|START_ACTION|>` and kin; Solar Open's `<|tool_call:begin|>` and kin), and the reasoning sections' markers where a vocabulary has them as
 * control tokens (`<|END_THINKING|>`, `[/THINK]`). A constraint is a byte automaton, and a
 * control token has no bytes of its own as text does: each marker gets a spelling no text has,
 * 0xFF (never in UTF-8) then one byte for the marker, which the token trie gives the control token
 * (constraint/trie.ts) and the tool-call languages write where the marker goes. Every other
 * automaton reads UTF-8 text only, so none of them can ever allow a marker.
 */

/** The markers, in a fixed order: a marker's spelling is its index here. Appended to, never reordered. */
export const CONTROL_MARKERS: readonly string[] = [
  // Mistral
  "[TOOL_CALLS]",
  "[ARGS]",
  "[CALL_ID]",
  // Kimi-K2
  "<|tool_calls_section_begin|>",
  "<|tool_calls_section_end|>",
  "<|tool_call_begin|>",
  "<|tool_call_argument_begin|>",
  "<|tool_call_end|>",
  // Granite 3.3
  "<|tool_call|>",
  // Apertus
  "<|tools_prefix|>",
  "<|tools_suffix|>",
  // Reasoning sections' markers (Cohere, Mistral) and Cohere's answers.
  "<|START_THINKING|>",
  "<|END_THINKING|>",
  "[THINK]",
  "[/THINK]",
  "<|START_RESPONSE|>",
  "<|END_RESPONSE|>",
  "<|START_TEXT|>",
  "<|END_TEXT|>",
  "<|START_ACTION|>",
  "<|END_ACTION|>",
  // LFM2, LFM2.5
  "<|tool_call_start|>",
  "<|tool_call_end|>",
  // Solar Open (its <|end|> is text, as llama.cpp renders it; <|calls|> and <|flush|> end the generation)
  "<|begin|>",
  "<|think|>",
  "<|content|>",
  "<|tool_calls|>",
  "<|tool_call:begin|>",
  "<|tool_call:name|>",
  "<|tool_call:args|>",
  "<|tool_call:end|>",
  // GigaChat 3, 3.1
  "<|message_sep|>",
  "<|role_sep|>",
  "<|function_call|>",
  // Kimi-K3's XTML tags
  "<|open|>",
  "<|close|>",
  "<|sep|>",
  // Muse: the end of a message whose turn goes on
  "<|eom|>",
  // Apertus's inner monologue (its reasoning section)
  "<|inner_prefix|>",
  "<|inner_suffix|>",
];

/** The byte every marker's spelling starts with (no UTF-8 text has it). */
export const MARKER_LEAD = 0xff;

/** The spelling of a marker (its bytes in constraints and in the trie), or null when it is not one. */
export function markerBytes(text: string): Uint8Array | null {
  const i = CONTROL_MARKERS.indexOf(text);
  return i < 0 ? null : Uint8Array.of(MARKER_LEAD, 0x80 + i);
}

/** The marker a spelling stands for, or null. */
export function markerOfBytes(bytes: Uint8Array): string | null {
  return bytes.length === 2 && bytes[0] === MARKER_LEAD ? (CONTROL_MARKERS[bytes[1]! - 0x80] ?? null) : null;
}
