/**
 * Where the JSON value starting at `from` in `text` ends, for the tool-call readers: an object,
 * array or string at its closing character (strings skipped whole, so a string may spell any
 * marker); a number or literal where `after` next occurs, or at the end of the text.
 */
export function jsonValueEnd(text: string, from: number, after?: string): number {
  const first = text[from];
  if (first !== "{" && first !== "[" && first !== '"') {
    const next = after === undefined ? -1 : text.indexOf(after, from);
    return next < 0 ? text.length : next;
  }
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      if (depth === 0) return i + 1;
    } else if (c === "{" || c === "[") depth++;
    else if ((c === "}" || c === "]") && --depth === 0) return i + 1;
  }
  throw new Error(`parseToolReply: the JSON value from ${from} does not end`);
}
