// Arrays: items/prefixItems (and additionalItems), min/maxItems, contains with min/maxContains,
// uniqueItems over few values, unevaluatedItems, as one graph whose states are positions (and
// contains counts, or the set of values written so far).

import { LanguageGraph, type RegexNode } from "../../regex/index.js";
import type { Want, WriterContext } from "./context.js";
import type { SchemaAt } from "./document.js";
import { JsonSchemaTooComplexError } from "./errors.js";
import { alt, concat, dfaNode, literal, range } from "./json-text.js";
import type { ArrayPart, Spec } from "./spec.js";
import { canonicalJson, finiteTexts } from "./values.js";

/** Longest array whose positions are states (maxItems, minItems, positional items). */
const MAX_ARRAY_POSITIONS = 4096;
/** Most contains keywords counted on one array (items fall into 2^n classes). */
const MAX_CONTAINS = 3;
/** Most distinct values the items of a uniqueItems array may take (its states are their subsets). */
const MAX_UNIQUE_VALUES = 8;
/** Most texts (spellings of those values) read off the item automaton, and their longest. */
const MAX_UNIQUE_TEXTS = 1024;
export const MAX_UNIQUE_TEXT_BYTES = 1024;

/**
 * uniqueItems over items of a few values (at most MAX_UNIQUE_VALUES over every position, told
 * apart by JSON equality: `1` and `1.0` are one value, so are an object's key orders): the
 * array's states are the sets of values written so far, so no value comes twice; the count,
 * and so the position (prefixItems), is the set's size. Undefined when some position's items
 * may take more values (the caller refuses); null when minItems exceeds what can be written.
 */
function uniqueArrayLanguage(
  c: WriterContext,
  item: (i: number) => RegexNode,
  prefixLength: number,
  minItems: number,
  maxItems: number,
  depth: number,
  pointer: string,
): RegexNode | null | undefined {
  // Item languages by position: 0 … prefixLength (the rest), those an array can reach.
  const positions = Math.min(prefixLength, maxItems - 1) + 1;
  const valueIds = new Map<string, number>();
  /** Per position, per value id: the texts spelling it there. */
  const spellings: Map<number, string[]>[] = [];
  for (let k = 0; k < positions; k++) {
    const texts = finiteTexts(c.dfaOf(item(k), pointer), MAX_UNIQUE_TEXTS, MAX_UNIQUE_TEXT_BYTES);
    if (texts === null) return undefined;
    const here = new Map<number, string[]>();
    for (const text of texts) {
      const key = canonicalJson(JSON.parse(text));
      let id = valueIds.get(key);
      if (id === undefined) {
        id = valueIds.size;
        if (id === MAX_UNIQUE_VALUES) return undefined;
        valueIds.set(key, id);
      }
      const group = here.get(id);
      if (group) group.push(text);
      else here.set(id, [text]);
    }
    spellings.push(here);
  }
  const m = valueIds.size;
  // Each value's spellings (whitespace styles, "2" and "2.0") as one minimal automaton: it is
  // embedded once per set of values it may join.
  const values = spellings.map(
    (here) => new Map([...here].map(([id, texts]) => [id, dfaNode(c.compileNode(alt(texts.map((text) => literal(text))), pointer, true))])),
  );
  const s = c.syntax;
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  if (minItems === 0) graph.edge(start, end, literal("[]"));
  const states = Array.from({ length: 1 << m }, () => graph.state());
  graph.edge(start, states[0]!, range(0x5b));
  let possible = minItems === 0;
  for (let used = 0; used < 1 << m; used++) {
    let count = 0;
    for (let v = used; v !== 0; v &= v - 1) count++;
    if (count >= 1 && count >= minItems) {
      graph.edge(states[used]!, end, concat(s.close(depth), range(0x5d)));
      possible = true;
    }
    if (count >= maxItems) continue;
    const lead = count === 0 ? s.open(depth) : s.separator(depth);
    for (const [v, node] of values[Math.min(count, prefixLength)]!) {
      if ((used & (1 << v)) === 0) graph.edge(states[used]!, states[used | (1 << v)]!, concat(lead, node));
    }
  }
  return possible ? graph.node(start) : null;
}

export function arrayLanguage(c: WriterContext, spec: Spec, want: Want, pointer: string): RegexNode | null {
  const { minItems } = spec.arrays;
  let contains = spec.arrays.contains;
  let parts = spec.arrays.parts;
  // unevaluatedItems: the items no prefixItems/items of its scope evaluates (past the longest
  // prefix, when no part there has items) meet it: the merge's scope root's over every part, a
  // scoped one's over the parts within its schema. An over-approximation leaves them out: it
  // must hold documents where more branches evaluate more.
  const unevaluated: { at: SchemaAt; inScope: (part: { within: readonly string[] }) => boolean }[] = [];
  if (!want.over) {
    if (spec.arrays.unevaluated !== null) unevaluated.push({ at: spec.arrays.unevaluated, inScope: () => true });
    for (const { at, scope } of spec.arrays.scopedUnevaluated) unevaluated.push({ at, inScope: (part) => part.within.includes(scope) });
  }
  // A contains that counts nothing (minContains 0) matters only for what it evaluates.
  if (unevaluated.length === 0) contains = contains.filter((c) => c.min > 0 || c.max < Infinity);
  // Beside contains, an item a contains of the scope matches is evaluated too: the items past
  // the prefix that match none of them meet it, in itemClass below (per class of matches).
  const unevaluatedByClass: { at: SchemaAt; from: number; containsInScope: number }[] = [];
  for (const { at, inScope } of unevaluated) {
    const scoped = spec.arrays.parts.filter(inScope);
    if (scoped.some((p) => p.rest !== null)) continue;
    const longest = Math.max(0, ...scoped.map((p) => p.prefix.length));
    if (contains.length > 0) {
      let containsInScope = 0;
      contains.forEach((c, i) => {
        if (inScope(c)) containsInScope |= 1 << i;
      });
      unevaluatedByClass.push({ at, from: longest, containsInScope });
      continue;
    }
    const evaluated: SchemaAt = { ...at, schema: true };
    parts = [...parts, { prefix: Array.from({ length: longest }, () => evaluated), rest: at, within: [] }];
  }
  let maxItems = spec.arrays.maxItems;
  const depth = want.depth;
  const inner: Want = { ...want, depth: depth + 1 };
  const prefixLength = Math.max(0, ...parts.map((p) => p.prefix.length));
  // `items: false` (or additionalItems) ends arrays after the positional items.
  if (parts.some((p) => p.rest?.schema === false)) maxItems = Math.min(maxItems, prefixLength);
  if (maxItems < minItems) return null;
  const itemRefs = (i: number): SchemaAt[] =>
    parts.flatMap((p: ArrayPart) => (i < p.prefix.length ? [p.prefix[i]!] : p.rest ? [p.rest] : []));
  const items = new Map<number, RegexNode>();
  const item = (i: number): RegexNode => {
    const k = Math.min(i, prefixLength);
    let node = items.get(k);
    if (!node) {
      node = c.language(itemRefs(k), inner);
      items.set(k, node);
    }
    return node;
  };
  if (spec.arrays.unique !== null && maxItems > 1 && !want.over) {
    const unique = contains.length === 0 ? uniqueArrayLanguage(c, item, prefixLength, minItems, maxItems, depth, pointer) : undefined;
    if (unique !== undefined) return unique;
    c.unsupported(
      "uniqueItems",
      spec.arrays.unique,
      `uniqueItems is enforced only where an array's items take at most ${MAX_UNIQUE_VALUES} values in all (an enum, a const, ` +
        "booleans) and it has no contains: here two or more items may take more values",
    );
  }
  // Every contains counts the items matching it; over-approximations keep the first one's minimum
  // only (at least that many items in its O).
  const counters = want.over ? contains.slice(0, 1).map((c) => ({ ...c, max: Infinity })) : contains;
  if (counters.length > MAX_CONTAINS) {
    c.unsupported("contains", contains[MAX_CONTAINS]!.at.pointer, `more than ${MAX_CONTAINS} contains on one array are not supported`);
  }
  // Positions 0..last are states; the last loops when the length is unbounded.
  const last = maxItems === Infinity ? Math.max(prefixLength, minItems, 1) : maxItems;
  if (last > MAX_ARRAY_POSITIONS) throw new JsonSchemaTooComplexError(`arrays of up to ${last} items`, pointer, "maxItems");
  // Counter i runs 0 … its top (minContains when unbounded: more need not be told apart; else
  // maxContains): the counts are one number in mixed radix.
  const tops = counters.map((c) => (c.max === Infinity ? c.min : c.max));
  const radix = tops.map((top) => top + 1);
  const matchStates = radix.reduce((a, b) => a * b, 1);
  if (counters.length > 1 && (last + 1) * matchStates > MAX_ARRAY_POSITIONS) {
    throw new JsonSchemaTooComplexError(`arrays counting ${counters.length} contains over ${last} positions`, pointer, "maxItems");
  }
  const countsOf = (m: number): number[] => {
    const counts: number[] = [];
    for (const r of radix) {
      counts.push(m % r);
      m = Math.floor(m / r);
    }
    return counts;
  };
  const indexOf = (counts: readonly number[]): number => counts.reduceRight((m, c, i) => m * radix[i]! + c, 0);
  const satisfied = (m: number): boolean => countsOf(m).every((c, i) => c >= counters[i]!.min);
  // Items by the contains they match: class `set` (a bit per contains) is the item language
  // matching every contains in the set and none of the others (the latter minus an
  // over-approximation of each, written duplicate-free), so no item is counted wrongly.
  const classes = new Map<string, RegexNode>();
  const itemClass = (i: number, set: number): RegexNode => {
    const k = Math.min(i, prefixLength);
    const key = `${k},${set}`;
    let node = classes.get(key);
    if (!node) {
      const matched = counters.filter((_, c) => (set & (1 << c)) !== 0).map((c) => c.at);
      const unmatched = counters.filter((_, c) => (set & (1 << c)) === 0).map((c) => c.at);
      // An item past an unevaluatedItems' prefix that no contains of its scope matches meets it.
      const unevaluatedHere = unevaluatedByClass.filter((u) => k >= u.from && (set & u.containsInScope) === 0).map((u) => u.at);
      const refs = [...itemRefs(k), ...matched, ...unevaluatedHere];
      if (want.over || unmatched.length === 0) {
        // Any item may be one that does not count: the superset needs no subtraction.
        node = c.language(refs, inner);
      } else {
        const subtrahends = unmatched.map((at) => ({
          at: at.pointer,
          write: (limit: number | undefined) => c.language([at], { ...inner, over: true, limit }),
        }));
        const site = `${pointer} items ${refs.map((r) => r.pointer).join("|")} - ${unmatched.map((at) => at.pointer).join(" ")}`;
        const minuend = () => c.language(refs, { ...inner, dupFree: true });
        node = dfaNode(c.subtracted(site, minuend, subtrahends, inner.depth, unmatched[0]!.pointer));
      }
      classes.set(key, node);
    }
    return node;
  };
  // The items as the graph embeds them, once per position: the rest's item at every position
  // past the prefix, as one rule's calls where those copies would be too big (c.repeated).
  const placedItems = new Map<number, RegexNode>();
  const placed = (p: number): RegexNode => {
    const k = Math.min(p, prefixLength);
    let node = placedItems.get(k);
    if (!node) {
      const copies = k < prefixLength ? 1 : last - prefixLength + (maxItems === Infinity ? 1 : 0);
      node = c.repeated(item(k), copies, inner, pointer);
      placedItems.set(k, node);
    }
    return node;
  };
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  const ids = new Map<number, number>();
  const stateOf = (p: number, m: number): number => {
    const key = p * matchStates + m;
    let id = ids.get(key);
    if (id === undefined) {
      id = graph.state();
      ids.set(key, id);
    }
    return id;
  };
  if (minItems === 0 && satisfied(0)) graph.edge(start, end, literal("[]"));
  const middles = new Map<string, number>();
  const s = c.syntax;
  for (let p = 0; p <= last; p++) {
    for (let m = 0; m < matchStates; m++) {
      if (!ids.has(p * matchStates + m) && !(p === 0 && m === 0)) continue;
      const from = stateOf(p, m);
      if (p === 0 && m === 0) graph.edge(start, from, range(0x5b));
      if (p >= 1 && p >= minItems && satisfied(m)) graph.edge(from, end, concat(s.close(depth), range(0x5d)));
      const to = p === last ? p : p + 1;
      if (p === last && maxItems !== Infinity) continue;
      const lead = p === 0 ? s.open(depth) : s.separator(depth);
      // The first item and the others meet before the item, which is embedded once per target.
      const via = (target: number, kind: string, reads: RegexNode): void => {
        const key = `${target},${kind},${Math.min(p, prefixLength)}`;
        let mid = middles.get(key);
        if (mid === undefined) {
          mid = graph.state();
          middles.set(key, mid);
          graph.edge(mid, target, reads);
        }
        graph.edge(from, mid, lead);
      };
      if (counters.length === 0) {
        via(stateOf(to, 0), "", placed(p));
        continue;
      }
      const counts = countsOf(m);
      for (let set = 0; set < 1 << counters.length; set++) {
        // Each matched contains counts up, saturating at its minimum when unbounded; an item
        // that would pass a maxContains leads nowhere.
        const next = counts.map((c, i) => ((set & (1 << i)) === 0 ? c : counters[i]!.max === Infinity ? Math.min(c + 1, tops[i]!) : c + 1));
        if (next.some((c, i) => c > tops[i]!)) continue;
        via(stateOf(to, indexOf(next)), `class${set}`, itemClass(p, set));
      }
    }
  }
  return graph.node(start);
}
