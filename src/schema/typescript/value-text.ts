/**
 * A typed completion's JSON as TypeScript reads it. The JSON Schema engine may write an unnamed
 * key twice in one object (JSON allows it; the value then is the last one), but a TypeScript object
 * literal may not repeat a property (TS1117), so such a text is written again from its value.
 */

/** Whether some object in the JSON text repeats a key (the text is valid JSON). */
export function hasRepeatedKeys(text: string): boolean {
  const objects: Set<string>[] = [];
  /** Per open bracket: true for an object, false for an array. */
  const kinds: boolean[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (expectKey && kinds[kinds.length - 1]) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        const keys = objects[objects.length - 1]!;
        if (keys.has(key)) return true;
        keys.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === "{") {
      kinds.push(true);
      objects.push(new Set());
      expectKey = true;
    } else if (c === "[") {
      kinds.push(false);
      expectKey = false;
    } else if (c === "}" || c === "]") {
      if (kinds.pop()) objects.pop();
      expectKey = false;
    } else if (c === ",") {
      expectKey = kinds[kinds.length - 1] === true;
    }
  }
  return false;
}

/** The text, or, when an object repeats a key, its value written again (indented when it was). */
export function withoutRepeatedKeys(text: string): string {
  if (!hasRepeatedKeys(text)) return text;
  return JSON.stringify(JSON.parse(text), null, text.includes("\n") ? 2 : undefined);
}
