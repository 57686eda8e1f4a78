/**
 * The rules for key names: trimmed, at most KEY_NAME_MAX_CHARS code points, none of the
 * characters that could drive or deceive the terminal a name is printed to, at least one that
 * shows; and how names stored before the rules are printed safely.
 */

/** Longest key name, in Unicode code points (what JSON Schema's maxLength counts). */
export const KEY_NAME_MAX_CHARS = 100;

/** A key name the store refuses; the message names the field (`name`) and says why. */
export class KeyNameError extends Error {
  readonly field = "name";
  constructor(message: string) {
    super(message);
    this.name = "KeyNameError";
  }
}

/** Unicode code points in `text` (a lone surrogate counts as one). */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * Characters a key name may not hold: C0/C1 controls (a name printed by `trellis keys list`
 * must not drive the terminal), lone surrogates (not text: SQLite would store U+FFFD, so the
 * name read back would differ from the one accepted), line/paragraph separators, and bidi
 * embeddings/overrides/isolates (they make a listed name display as another).
 */
const FORBIDDEN_NAME_CHARS = "\\p{Cc}\\p{Cs}\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069";
const FORBIDDEN_NAME_CHAR = new RegExp(`[${FORBIDDEN_NAME_CHARS}]`, "u");
const FORBIDDEN_NAME_CHAR_ALL = new RegExp(`[${FORBIDDEN_NAME_CHARS}]`, "gu");

/**
 * A character that shows: not whitespace, a format character (U+200B…U+200D, U+2060, U+FEFF,
 * U+00AD, …), another default-ignorable code point (variation selectors, Hangul fillers, tags),
 * a combining mark (alone it marks nothing) or the blank Braille pattern U+2800. A name of none
 * of these would list as blank, or look like no name at all.
 */
const VISIBLE_NAME_CHAR = /[^\p{White_Space}\p{Cf}\p{Default_Ignorable_Code_Point}\p{M}\u2800]/u;

/**
 * A stored name as it may be printed to a terminal: the characters names may not hold as
 * \u{…} escapes. Rows written before names were checked may hold them, and an escape sequence
 * in a name must not drive the operator's terminal.
 */
export function printableKeyName(name: string): string {
  return name.replace(FORBIDDEN_NAME_CHAR_ALL, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** The name as stored (trimmed), or a KeyNameError saying why it is refused. */
export function normalizeKeyName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0) throw new KeyNameError("name must not be empty");
  const length = codePointLength(trimmed);
  if (length > KEY_NAME_MAX_CHARS) {
    throw new KeyNameError(`name must be at most ${KEY_NAME_MAX_CHARS} characters (got ${length})`);
  }
  const bad = FORBIDDEN_NAME_CHAR.exec(trimmed);
  if (bad) {
    const char = bad[0].codePointAt(0)!;
    const at = codePointLength(trimmed.slice(0, bad.index)) + 1;
    const what =
      char >= 0xd800 && char <= 0xdfff
        ? "a lone surrogate (not valid Unicode text)"
        : char >= 0x2028
          ? "a line separator or bidirectional formatting character"
          : "a control character";
    throw new KeyNameError(`name must not contain ${what}: U+${codePointText(char)} at character ${at}`);
  }
  if (!VISIBLE_NAME_CHAR.test(trimmed)) {
    const shown = [...trimmed].slice(0, 8).map((c) => `U+${codePointText(c.codePointAt(0)!)}`);
    if (length > shown.length) shown.push("…");
    throw new KeyNameError(`name must contain a visible character; it has only invisible ones: ${shown.join(" ")}`);
  }
  return trimmed;
}

function codePointText(char: number): string {
  return char.toString(16).toUpperCase().padStart(4, "0");
}
