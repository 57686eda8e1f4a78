/**
 * Finds whether a text spells any of a vocabulary's control tokens, in time linear in the text
 * (times the longest control text), whatever their number: Gemma's vocabulary has thousands
 * (`<unused…>`), and a megabyte of user text checked against each in turn would hold the thread
 * for seconds. A trie of the texts by UTF-16 unit, walked from each position.
 */
export class ControlTextMatcher {
  /** Node → (unit → child), node 0 the root; `ends[node]` is the text ending there, or null. */
  private readonly children: Map<number, number>[] = [new Map()];
  private readonly ends: (string | null)[] = [null];
  private readonly firstUnits = new Set<number>();

  constructor(texts: Iterable<string>) {
    for (const text of texts) {
      if (text.length === 0) continue;
      let node = 0;
      for (let i = 0; i < text.length; i++) {
        const unit = text.charCodeAt(i);
        let next = this.children[node]!.get(unit);
        if (next === undefined) {
          next = this.children.length;
          this.children.push(new Map());
          this.ends.push(null);
          this.children[node]!.set(unit, next);
        }
        node = next;
      }
      this.ends[node] ??= text;
      this.firstUnits.add(text.charCodeAt(0));
    }
  }

  /** The first control text (leftmost, then shortest) that `text` contains, or null. */
  find(text: string): string | null {
    const root = this.children[0]!;
    for (let start = 0; start < text.length; start++) {
      if (!this.firstUnits.has(text.charCodeAt(start))) continue;
      let node = root.get(text.charCodeAt(start));
      for (let i = start + 1; node !== undefined; i++) {
        const end = this.ends[node];
        if (end) return end;
        if (i >= text.length) break;
        node = this.children[node]!.get(text.charCodeAt(i));
      }
    }
    return null;
  }
}
