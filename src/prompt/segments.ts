/**
 * A prompt as the model is to read it: plain text (tokenized as text, never parsed for special
 * tokens) and template text (tokenized with special-token parsing, so its markers become tokens).
 */
export interface PromptSegment {
  text: string;
  /** Template text: tokenized with special-token parsing. */
  special: boolean;
}

/**
 * The segments with the raw text after the last control token of the last special segment made a
 * plain segment of its own ("<|im_start|>assistant\n" → "<|im_start|>" + plain "assistant\n"), so
 * an answer can be appended to it and tokenized with it. Exact: text after the last control token
 * holds none, so parsing it for them changes nothing.
 */
export function withPlainTail(segments: readonly PromptSegment[], controlTexts: readonly string[]): PromptSegment[] {
  const out = segments.map((s) => ({ ...s }));
  const last = out[out.length - 1];
  if (!last?.special) return out;
  let end = 0;
  for (const control of controlTexts) {
    if (control.length === 0) continue;
    const at = last.text.lastIndexOf(control);
    if (at >= 0) end = Math.max(end, at + control.length);
  }
  const tail = last.text.slice(end);
  if (end === 0) {
    out[out.length - 1] = { text: last.text, special: false };
    return out;
  }
  last.text = last.text.slice(0, end);
  out.push({ text: tail, special: false });
  return out;
}
