/**
 * Tokenization of prompt segments (segments.ts): plain segments as text, markers with
 * special-token parsing, each on its own — which is what llama.cpp does with the whole string,
 * since it splits at special tokens first — with BOS in front when the model wants one.
 */
import type { PromptSegment } from "./segments.js";
import { concatInt32 } from "../support/index.js";

export interface Tokenizer {
  tokenize(text: string, opts: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array;
  /** llama_token_attr bits per token (LSTRIP 1 << 7, RSTRIP 1 << 8 are used). */
  tokenAttributes?(): Uint32Array;
}

const ATTR_LSTRIP = 1 << 7;
const ATTR_RSTRIP = 1 << 8;
const LEADING_SPACE = /^[ \t\n\r\f\v]+/;

/**
 * `text` without its trailing [ \t\n\r\f\v] (C isspace, as llama.cpp strips). Not a regex: one
 * anchored at the end retries at every start of a run, quadratic in a user's run of spaces
 * (32,000 spaces before a letter took 1.3 s).
 */
function trimTrailingSpace(text: string): string {
  let end = text.length;
  while (end > 0) {
    const c = text.charCodeAt(end - 1);
    if (c !== 0x20 && (c < 0x09 || c > 0x0d)) break;
    end--;
  }
  return text.slice(0, end);
}

/** Adjacent plain segments are one text: tokenized apart they could split differently. */
export function mergePlain(segments: readonly PromptSegment[]): PromptSegment[] {
  const out: PromptSegment[] = [];
  for (const s of segments) {
    if (s.text.length === 0) continue;
    const last = out[out.length - 1];
    if (last && !last.special && !s.special) out[out.length - 1] = { text: last.text + s.text, special: false };
    else out.push({ ...s });
  }
  return out;
}

export class PromptTokenizer {
  /** Tokens of everything before a prompt's last plain segment, by that head's key. */
  private headCache = new Map<string, Int32Array>();
  private attributes: Uint32Array | null = null;

  constructor(
    private readonly tokenizer: Tokenizer,
    /** Fallback first token for a prompt that tokenizes to nothing (no BOS). */
    private readonly startToken: number,
  ) {}

  /**
   * Tokens of the segments with `answer` appended to the last one where it is plain text (so the
   * model's own tokenization of "prompt end + answer" is what gets scored); after a prompt that
   * ends with a control token (Cohere's `<|START_THINKING|>`), the answer is tokenized on its own.
   */
  tokens(segments: readonly PromptSegment[], answer = ""): Int32Array {
    const merged = this.stripAroundMarkers(mergePlain(segments));
    let last = merged.pop();
    if (last?.special) {
      merged.push(last);
      last = undefined;
    }
    const headKey = JSON.stringify(merged);
    let head = this.headCache.get(headKey);
    if (!head) {
      const parts = merged.map((s, i) => this.tokenizer.tokenize(s.text, { addSpecial: i === 0, parseSpecial: s.special }));
      head = concatInt32(parts);
      if (this.headCache.size > 64) this.headCache.clear();
      this.headCache.set(headKey, head);
    }
    const tailText = (last?.text ?? "") + answer;
    const tail =
      tailText.length > 0 ? this.tokenizer.tokenize(tailText, { addSpecial: merged.length === 0, parseSpecial: false }) : new Int32Array(0);
    const all = head.length === 0 ? tail : concatInt32([head, tail]);
    return all.length > 0 ? all : Int32Array.of(this.startToken);
  }

  /** Tokens of a whole prompt (a rendered conversation), BOS first when the model wants one. */
  sequence(segments: readonly PromptSegment[]): Int32Array {
    const merged = this.stripAroundMarkers(mergePlain(segments)).filter((s) => s.text.length > 0);
    const all = concatInt32(merged.map((s, i) => this.tokenizer.tokenize(s.text, { addSpecial: i === 0, parseSpecial: s.special })));
    return all.length > 0 ? all : Int32Array.of(this.startToken);
  }

  /**
   * Markers with the LSTRIP / RSTRIP attribute (phi-3's <|user|>, <|end|>, ...) swallow the
   * whitespace beside them when llama.cpp tokenizes the rendered template; do the same.
   */
  private stripAroundMarkers(segments: PromptSegment[]): PromptSegment[] {
    if (!segments.some((s) => s.special) || !this.tokenizer.tokenAttributes) return segments;
    this.attributes ??= this.tokenizer.tokenAttributes();
    const out = segments.map((s) => ({ ...s }));
    out.forEach((seg, i) => {
      if (!seg.special) return;
      const ids = this.tokenizer.tokenize(seg.text, { addSpecial: false, parseSpecial: true });
      if (ids.length === 0) return;
      // The segment's first and last tokens border the plain text beside it (a segment of several
      // markers, "<|end|>\n<|assistant|>", strips as its outer ones do).
      const first = this.attributes![ids[0]!] ?? 0;
      const last = this.attributes![ids[ids.length - 1]!] ?? 0;
      const before = out[i - 1];
      const after = out[i + 1];
      if (first & ATTR_LSTRIP && before && !before.special) before.text = trimTrailingSpace(before.text);
      if (last & ATTR_RSTRIP && after && !after.special) after.text = after.text.replace(LEADING_SPACE, "");
    });
    // Keep the last plain segment even when stripped empty: the answer is appended to it.
    return out.filter((s, i) => s.text.length > 0 || i === out.length - 1);
  }
}
