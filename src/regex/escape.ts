/** Literal text → a pattern matching exactly it, the way Python writes one. */

/** The characters Python's re.escape (3.7+) escapes. */
export const PY_RE_SPECIAL = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f";

/** Python's re.escape (3.7+): only PY_RE_SPECIAL is escaped. */
export function pyReEscape(s: string): string {
  let out = "";
  for (const ch of s) out += PY_RE_SPECIAL.includes(ch) ? "\\" + ch : ch;
  return out;
}
