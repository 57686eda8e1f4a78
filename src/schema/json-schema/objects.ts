// Objects: properties, required, additionalProperties, patternProperties, propertyNames,
// min/maxProperties, an alternative's dependencies (require/forbid) and unevaluatedProperties.
// U(S) writes the named members in the schema's order, then others (orderedObject), or, under
// `propertyOrder: "any"`, small objects' members in any order (anyOrderObject); O(S) takes
// members in any order (looseObject).

import { isEmptyLanguage, LanguageGraph, matchesString, subtractStrings, type ByteDfa, type RegexNode } from "../../regex/index.js";
import { alt, concat, dfaNode, EMPTY, hasOneSpelling, anyStringText, literal, range, repeat, stringLiteral } from "./json-text.js";
import { MAX_UNIQUE_TEXT_BYTES } from "./arrays.js";
import type { Alternative, Want, WriterContext } from "./context.js";
import type { SchemaAt } from "./document.js";
import { JsonSchemaTooComplexError } from "./errors.js";
import type { ObjectPart, Spec } from "./spec.js";
import { patternLanguage } from "./strings.js";
import { finiteTexts } from "./values.js";

/** An object's named member: its value's language, and whether it must be written. */
interface Member {
  readonly key: string;
  readonly value: RegexNode;
  readonly required: boolean;
  /** A member standing for a set of unnamed keys (bandedKeys): their JSON texts; else `key`'s. */
  readonly keyText?: RegexNode;
}

/** A member's key as JSON text. */
function keyTextOf(m: Member): RegexNode {
  return m.keyText ?? stringLiteral(m.key);
}

/** Keys no named member takes, of one patternProperties region, and their values' language. */
interface Region {
  readonly key: RegexNode;
  readonly value: RegexNode;
}

/** The largest minProperties or maxProperties an over-approximated object counts its members to. */
const MAX_COUNTED_MEMBERS = 4;
/** Unnamed keys spelled out as members of their own where minProperties needs several (texts). */
const MAX_LISTED_KEYS = 64;
/** Unnamed keys listed as members of their own in an object written without repeated keys. */
const MAX_LISTED_DUP_FREE_KEYS = 16;
/** Required keys an over-approximated object checks the presence of. */
const MAX_TRACKED_REQUIRED = 3;
/** Most `patternProperties` (over all merged parts) one object may have: regions are 2^n. */
const MAX_PATTERNS = 6;
/**
 * Most named members an object writes in any order under `propertyOrder: "any"`: the set written
 * so far is its state (2^n of them); a bigger object keeps the schema's order, with a warning.
 */
export const MAX_ANY_ORDER_MEMBERS = 8;
/** The same for the U(B) an O(S) subtracts (Want.anyOrder). */
const MAX_SUBTRAHEND_ANY_ORDER_MEMBERS = 3;

const utf8Encoder = new TextEncoder();

export function objectLanguage(c: WriterContext, spec: Spec, alternative: Alternative, want: Want, pointer: string): RegexNode | null {
  const o = spec.objects;
  if (o.maxProperties < o.minProperties) return null;
  const depth = want.depth;
  const inner: Want = { ...want, depth: depth + 1 };
  const nameLanguages = o.propertyNames.map((at) =>
    c.operand(() => c.dfaOf(c.language([at], { depth: 0, over: want.over, dupFree: false }), at.pointer)),
  );
  // Keys failing a schema (Alternative.keyFails): the strings outside its over-approximation,
  // so no key that meets it is written; the object then has exactly one property.
  const keyFails = want.over ? [] : alternative.keyFails;
  for (const at of keyFails) {
    const strings = anyStrings(c, pointer);
    const meets = c.operand(() => c.dfaOf(c.language([at], { depth: 0, over: true, dupFree: false }), at.pointer));
    nameLanguages.push(c.subtract(strings, meets, at.pointer));
  }
  const minProperties = keyFails.length > 0 ? Math.max(1, o.minProperties) : o.minProperties;
  const required = new Set([...o.required, ...(want.over ? [] : alternative.require)]);
  const forbidden = want.over ? new Set<string>() : alternative.forbid;
  const names = [...o.names];
  for (const k of required) if (!names.includes(k)) names.push(k);
  // Keys a minuend's subtrahends mention (a `not` of propertyNames asking for "a4" and one
  // asking for "a4d3") are members of their own where the schema leaves them unnamed (see
  // listedKeys below), in code-unit order ("1" before "2").
  if (want.dupFree && alternative.subtract.length > 0) {
    for (const key of c.mentionedKeys(alternative.subtract.flat(), MAX_LISTED_DUP_FREE_KEYS).sort())
      if (!names.includes(key) && !forbidden.has(key)) names.push(key);
  }
  const members: Member[] = [];
  // Scoped unevaluatedProperties, each with the parts within its schema (none in O: a superset).
  const scopedParts = want.over
    ? []
    : o.scopedUnevaluated.map(({ at, scope }) => ({ at, parts: o.parts.filter((part) => part.within.includes(scope)) }));
  for (const key of names) {
    const isRequired = required.has(key);
    const allowed = !forbidden.has(key) && nameLanguages.every((dfa) => matchesString(dfa, JSON.stringify(key)));
    if (!allowed) {
      if (isRequired) return null;
      continue;
    }
    // A key only `required` (or a dependency's trigger) names is evaluated by nothing: it meets
    // unevaluatedProperties. An empty value language leaves its member unwritable: the
    // object's automaton drops the path.
    const matches = (pattern: { source: string; at: SchemaAt }): boolean =>
      matchesString(patternLanguage(c, pattern.source, pattern.at.pointer), JSON.stringify(key));
    const schemas = schemasForKey(o.parts, key, matches);
    const value = schemas.length === 0 && o.unevaluated !== null && !want.over ? [o.unevaluated] : schemas;
    // A scoped unevaluatedProperties: met where no part within its schema evaluates the key.
    for (const { at, parts } of scopedParts) if (schemasForKey(parts, key, matches).length === 0) value.push(at);
    members.push({ key, value: c.language(value, inner), required: isRequired });
  }
  const excluded = [...names, ...forbidden];
  const extras = extraRegions(
    c,
    o.parts,
    excluded,
    nameLanguages,
    inner,
    pointer,
    want.over ? null : o.unevaluated,
    want.over ? [] : o.scopedUnevaluated,
  );
  if (want.over) return looseObject(c, members, extras, depth, o.minProperties, o.maxProperties);
  const requiredCount = members.filter((m) => m.required).length;
  if (requiredCount > o.maxProperties) return null;
  // No key fails them all: no object of one property is left.
  if (keyFails.length > 0 && members.length + extras.length === 0) return null;
  if (minProperties > members.length + Math.min(extras.length, 1)) {
    // Counting several unnamed keys would need them distinct, which an automaton cannot check,
    // unless they are few: then each is a member of its own, written at most once, in order.
    const listed = listedKeys(extras, MAX_LISTED_KEYS);
    if (listed !== null && minProperties <= members.length + listed.length) {
      return objectOf(c, [...members, ...unnamedOnly(listed, members)], [], depth, minProperties, o.maxProperties, want, pointer);
    }
    // Otherwise keys told apart by their first character: at most one from each band of them.
    const banded = bandedKeys(c, extras, pointer);
    if (minProperties <= members.length + banded.length) {
      return objectOf(c, [...members, ...banded], [], depth, minProperties, o.maxProperties, want, pointer);
    }
    c.unsupported(
      "minProperties",
      pointer,
      `minProperties ${minProperties} needs more than one property the schema does not name; not supported yet`,
    );
    return null;
  }
  // Without repeated keys (a minuend) an object holds one unnamed key at most, which an automaton
  // cannot tell apart from another; so a schema that needs two (a `not` of propertyNames: "some key
  // is 1 or 3, some is 2 or 3") had no value we could write. A few unnamed keys are listed as
  // members instead: each at most once, any of them, in order.
  if (want.dupFree && extras.length > 0) {
    const listed = listedKeys(extras, MAX_LISTED_DUP_FREE_KEYS);
    if (listed !== null && listed.length > 1) {
      // In code-unit order ("1" before "2").
      const more = unnamedOnly(listed, members).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      return objectOf(c, [...members, ...more], [], depth, minProperties, o.maxProperties, want, pointer);
    }
    // Too many to list: one unnamed key, or, where that left no value (compile.ts asks again),
    // one per first character ("ab…" and "cd…").
    if (listed === null) {
      if (c.options.fineKeyBands === true) {
        const banded = bandedKeys(c, extras, pointer, FINE_KEY_BANDS);
        return objectOf(c, [...members, ...banded], [], depth, minProperties, o.maxProperties, want, pointer);
      }
      c.oneUnnamedKeyWritten = true;
    }
  }
  return objectOf(c, members, extras, depth, minProperties, o.maxProperties, want, pointer);
}

/** U(S) of an object in the order the options ask: the schema's (orderedObject), or any (anyOrderObject) where it is small enough. */
function objectOf(
  c: WriterContext,
  members: readonly Member[],
  extras: readonly Region[],
  depth: number,
  minProperties: number,
  maxProperties: number,
  want: Want,
  pointer: string,
): RegexNode {
  const oneExtra = want.dupFree;
  const asked = c.options.propertyOrder === "any";
  // One named member alone has one order, unless other keys may come before it.
  if ((!asked && !want.anyOrder) || members.length === 0 || (members.length === 1 && extras.length === 0))
    return orderedObject(c, members, extras, depth, minProperties, maxProperties, oneExtra);
  // A subtrahend's any order (Want.anyOrder) is a refinement nobody asked for: only for objects of
  // a few members (its subtractions grow with the sets written), and no warning past them.
  if (!asked) {
    if (members.length <= MAX_SUBTRAHEND_ANY_ORDER_MEMBERS)
      return anyOrderObject(c, members, extras, depth, minProperties, maxProperties, oneExtra);
    return orderedObject(c, members, extras, depth, minProperties, maxProperties, oneExtra);
  }
  if (members.length <= MAX_ANY_ORDER_MEMBERS) return anyOrderObject(c, members, extras, depth, minProperties, maxProperties, oneExtra);
  c.warn(
    "properties",
    pointer,
    `written in the schema's order: any order is kept for objects of at most ${MAX_ANY_ORDER_MEMBERS} named properties, and this one has ${members.length}`,
  );
  return orderedObject(c, members, extras, depth, minProperties, maxProperties, oneExtra);
}

/**
 * The keys no named property takes, split into regions by which `patternProperties` they match
 * (a key matching several must satisfy all): per region the key language and the value's.
 */
function extraRegions(
  c: WriterContext,
  parts: readonly ObjectPart[],
  excluded: readonly string[],
  nameLanguages: readonly ByteDfa[],
  inner: Want,
  pointer: string,
  /** unevaluatedProperties: met by the keys no pattern and no additionalProperties evaluates. */
  unevaluated: SchemaAt | null,
  /** Scoped ones: met by the keys no pattern and no additionalProperties within their schema evaluates. */
  scopedUnevaluated: readonly { readonly at: SchemaAt; readonly scope: string }[],
): Region[] {
  const patterns = parts.flatMap((part, index) => part.patterns.map((p) => ({ ...p, part: index })));
  if (patterns.length > MAX_PATTERNS) {
    throw new JsonSchemaTooComplexError(`more than ${MAX_PATTERNS} patternProperties on one object`, pointer, "patternProperties");
  }
  const free = parts.every((part) => part.patterns.length === 0 && (part.additional === null || part.onlyEvaluates === true));
  if (free && c.options.forbidAdditionalProperties && !inner.over) return [];
  // The keys no property names, built on first use: where nothing but named members may be
  // written (`additionalProperties: false` without patterns: most function-calling schemas), they
  // are not needed, and building them was a tenth of such a schema's compile.
  let keys: ByteDfa | null = null;
  const unnamedKeys = (): ByteDfa => {
    const strings = anyStrings(c, pointer);
    // Objects of one shape recur (a definition used in many places, Kubernetes' metadata): the
    // keys they leave unnamed are built once.
    let unnamed =
      excluded.length === 0
        ? strings
        : c.shared(`unnamed#${JSON.stringify(excluded)}`, () =>
            // Names we write one way only (most) are taken out as bytes, through their trie.
            excluded.every((name) => hasOneSpelling(name))
              ? c.regex(pointer, (limits) =>
                  subtractStrings(
                    strings,
                    excluded.map((name) => utf8Encoder.encode(JSON.stringify(name))),
                    limits,
                  ),
                )
              : c.subtract(strings, c.compileNode(alt(excluded.map(stringLiteral)), pointer), pointer),
          );
    for (const dfa of nameLanguages) unnamed = c.intersect(unnamed, dfa, pointer);
    return unnamed;
  };
  const regions: Region[] = [];
  for (let mask = 0; mask < 1 << patterns.length; mask++) {
    // The region's values and whether it may hold a member at all, which its keys do not change.
    const values: SchemaAt[] = [];
    let unnamed = true;
    const evaluatedBy: ObjectPart[] = [];
    parts.forEach((part, index) => {
      const matched = patterns.filter((p, i) => p.part === index && mask & (1 << i));
      if (matched.length > 0) {
        values.push(...matched.map((p) => p.at));
        unnamed = false;
        evaluatedBy.push(part);
      } else if (part.additional !== null) {
        values.push(part.additional);
        if (part.onlyEvaluates !== true) unnamed = false;
        evaluatedBy.push(part);
      }
    });
    for (const scoped of scopedUnevaluated) {
      if (!evaluatedBy.some((part) => part.within.includes(scoped.scope))) values.push(scoped.at);
    }
    if (evaluatedBy.length === 0 && unevaluated !== null) values.push(unevaluated);
    const holdsNone = (unnamed && c.options.forbidAdditionalProperties && !inner.over) || values.some((v) => v.schema === false);
    // Without patterns nothing else is read for it (with them, their languages are read as before:
    // a pattern's refusal stays the schema's).
    if (holdsNone && patterns.length === 0) continue;
    keys ??= unnamedKeys();
    let key = keys;
    for (let i = 0; i < patterns.length && !isEmptyLanguage(key); i++) {
      const language = patternLanguage(c, patterns[i]!.source, patterns[i]!.at.pointer);
      key = mask & (1 << i) ? c.intersect(key, language, pointer) : c.subtract(key, language, pointer);
    }
    if (isEmptyLanguage(key) || holdsNone) continue;
    regions.push({ key: dfaNode(key), value: c.language(values, inner) });
  }
  return regions;
}

/** Every JSON string (any key), shared between compiles. */
function anyStrings(c: WriterContext, pointer: string): ByteDfa {
  return c.shared("string#0#Infinity", () => c.compileNode(anyStringText(), pointer));
}

/**
 * O(S) of an object: members in any order (repeats too), each key with its value's O, the first
 * few required keys present (a set of them is tracked: 2^k states), and a small minProperties or
 * maxProperties kept by counting members. Counting is sound because every text an O(S) is
 * subtracted from is written without repeated keys (minuends are dupFree at every level), so
 * there its members are its properties.
 */
function looseObject(
  c: WriterContext,
  members: readonly Member[],
  extras: readonly Region[],
  depth: number,
  minProperties: number,
  maxProperties: number,
): RegexNode {
  const s = c.syntax;
  const tracked = members.filter((m) => m.required).slice(0, MAX_TRACKED_REQUIRED);
  const free = [
    ...members.filter((m) => !tracked.includes(m)).map((m) => concat(keyTextOf(m), s.colon, m.value)),
    ...extras.map((r) => concat(r.key, s.colon, r.value)),
  ];
  // Counts kept: a maximum up to MAX_COUNTED_MEMBERS, else a minimum up to it (saturating).
  const most = maxProperties <= MAX_COUNTED_MEMBERS ? maxProperties : Infinity;
  const least = minProperties <= MAX_COUNTED_MEMBERS ? minProperties : 0;
  const top = most === Infinity ? least : most;
  if (tracked.length > most) return EMPTY;
  if (tracked.length === 0 && top === 0) {
    if (most === 0 || free.length === 0) return literal("{}");
    return c.sequence(0x7b, 0x7d, alt(free), depth, Infinity);
  }
  const full = (1 << tracked.length) - 1;
  const freePair = free.length > 0 ? alt(free) : null;
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  // before[mask * (top + 1) + count], after[…]: members written so far, by required set and count.
  const before: number[] = [];
  const after: number[] = [];
  for (let i = 0; i < (full + 1) * (top + 1); i++) {
    before.push(graph.state());
    after.push(graph.state());
  }
  const at = (mask: number, count: number): number => mask * (top + 1) + count;
  const counted = (count: number): number => (most === Infinity ? Math.min(count + 1, least) : count + 1);
  if (tracked.length === 0 && least === 0) graph.edge(start, end, literal("{}"));
  graph.edge(start, before[at(0, 0)]!, concat(range(0x7b), s.open(depth)));
  for (let mask = 0; mask <= full; mask++) {
    for (let count = 0; count <= top; count++) {
      const next = counted(count);
      if (next <= top) {
        tracked.forEach((m, bit) => {
          graph.edge(before[at(mask, count)]!, after[at(mask | (1 << bit), next)]!, concat(keyTextOf(m), s.colon, m.value));
        });
        if (freePair) graph.edge(before[at(mask, count)]!, after[at(mask, next)]!, freePair);
      }
      graph.edge(after[at(mask, count)]!, before[at(mask, count)]!, s.separator(depth));
      if (mask === full && count >= least) graph.edge(after[at(mask, count)]!, end, concat(s.close(depth), range(0x7d)));
    }
  }
  return graph.node(start);
}

/** A state of the object writers: where in the members, and four counts (see orderedObject). */
type ObjectState = [at: number, nonEmpty: number, least: number, most: number, extra: number];

/**
 * The graph the object writers build: its start and accepting end, its states made on first use
 * (`stateOf`, queued in `pending` to be expanded), and one state before a value per key
 * (`middle`: what leads there shares it, so the value is embedded once per target).
 */
function objectGraph() {
  const graph = new LanguageGraph();
  const start = graph.state();
  const end = graph.state();
  graph.accept(end);
  const ids = new Map<string, number>();
  const pending: ObjectState[] = [];
  const stateOf = (...state: ObjectState): number => {
    const key = state.join(",");
    let id = ids.get(key);
    if (id === undefined) {
      id = graph.state();
      ids.set(key, id);
      pending.push(state);
    }
    return id;
  };
  const middles = new Map<string, number>();
  const middle = (key: string, to: number, rest: RegexNode): number => {
    let id = middles.get(key);
    if (id === undefined) {
      id = graph.state();
      middles.set(key, id);
      graph.edge(id, to, rest);
    }
    return id;
  };
  return { graph, start, end, pending, stateOf, middle };
}

/**
 * U(S) of an object: the named members in order (each once, required ones always), then members
 * of the other keys (at most one when `oneExtra`), between minProperties and maxProperties.
 * Towards minProperties only the first unnamed member counts (a repeated key would count twice);
 * towards maxProperties every member does.
 */
function orderedObject(
  c: WriterContext,
  members: readonly Member[],
  extras: readonly Region[],
  depth: number,
  minProperties: number,
  maxProperties: number,
  oneExtra: boolean,
): RegexNode {
  const s = c.syntax;
  // A maximum no object written here can pass is not counted.
  const most = extras.length === 0 ? members.length : oneExtra ? members.length + 1 : Infinity;
  const bounded = maxProperties < most;
  // State (i, nonEmpty, least, most, extra): before member i (n: the unnamed ones), whether a
  // member was written (a separator comes next), members surely distinct so far (saturating at
  // minProperties), members written (when there is a maximum), whether an unnamed one was.
  const n = members.length;
  const { graph, start, end, pending, stateOf, middle } = objectGraph();
  const extraPairs = alt(extras.map((r) => concat(r.key, s.colon, r.value)));
  graph.edge(start, stateOf(0, 0, 0, 0, 0), range(0x7b));
  while (pending.length > 0) {
    const [i, nonEmpty, least, most, extra] = pending.pop()!;
    const from = stateOf(i, nonEmpty, least, most, extra);
    const lead = nonEmpty ? s.separator(depth) : s.open(depth);
    const moreMost = bounded ? most + 1 : 0;
    if (i < n) {
      const m = members[i]!;
      if (!m.required) graph.edge(from, stateOf(i + 1, nonEmpty, least, most, 0), null);
      if (!bounded || most + 1 <= maxProperties) {
        // Both leads meet before the value, which is embedded once per target state.
        const to = stateOf(i + 1, 1, Math.min(least + 1, minProperties), moreMost, 0);
        graph.edge(from, middle(`m${i},${to}`, to, m.value), concat(lead, keyTextOf(m), s.colon));
      }
      continue;
    }
    if (least >= minProperties) graph.edge(from, end, nonEmpty ? concat(s.close(depth), range(0x7d)) : range(0x7d));
    if (extras.length === 0 || (bounded && most + 1 > maxProperties) || (oneExtra && extra === 1)) continue;
    const to = stateOf(n, 1, extra ? least : Math.min(least + 1, minProperties), moreMost, 1);
    graph.edge(from, middle(`x${to}`, to, extraPairs), lead);
  }
  return graph.node(start);
}

/**
 * U(S) of an object under `propertyOrder: "any"`: the named members in any order (each once,
 * required ones always), members of the other keys anywhere among them (at most one when
 * `oneExtra`), between minProperties and maxProperties, counted as orderedObject counts them. The
 * set of named members written is part of the state, so only small objects are written so.
 */
function anyOrderObject(
  c: WriterContext,
  members: readonly Member[],
  extras: readonly Region[],
  depth: number,
  minProperties: number,
  maxProperties: number,
  oneExtra: boolean,
): RegexNode {
  const s = c.syntax;
  const bounded = maxProperties !== Infinity;
  let requiredSet = 0;
  members.forEach((m, i) => {
    if (m.required) requiredSet |= 1 << i;
  });
  // State (set, nonEmpty, least, most, extra): the named members written, then as orderedObject's.
  const { graph, start, end, pending, stateOf, middle } = objectGraph();
  const extraPairs = alt(extras.map((r) => concat(r.key, s.colon, r.value)));
  graph.edge(start, stateOf(0, 0, 0, 0, 0), range(0x7b));
  while (pending.length > 0) {
    const [set, nonEmpty, least, most, extra] = pending.pop()!;
    const from = stateOf(set, nonEmpty, least, most, extra);
    const lead = nonEmpty ? s.separator(depth) : s.open(depth);
    const moreMost = bounded ? most + 1 : 0;
    const roomy = !bounded || most + 1 <= maxProperties;
    if (roomy)
      members.forEach((m, i) => {
        if (set & (1 << i)) return;
        const to = stateOf(set | (1 << i), 1, Math.min(least + 1, minProperties), moreMost, extra);
        graph.edge(from, middle(`m${i},${to}`, to, m.value), concat(lead, keyTextOf(m), s.colon));
      });
    if ((set & requiredSet) === requiredSet && least >= minProperties)
      graph.edge(from, end, nonEmpty ? concat(s.close(depth), range(0x7d)) : range(0x7d));
    if (extras.length === 0 || !roomy || (oneExtra && extra === 1)) continue;
    const to = stateOf(set, 1, extra ? least : Math.min(least + 1, minProperties), moreMost, 1);
    graph.edge(from, middle(`x${to}`, to, extraPairs), lead);
  }
  return graph.node(start);
}

/**
 * The keys of `extras` as optional members, when their languages are finite and together hold at
 * most `limit` texts (a key's escaped spellings count apart, then fold into one member); null
 * otherwise.
 */
function listedKeys(extras: readonly Region[], limit: number): Member[] | null {
  const members = new Map<string, Member>();
  let texts = 0;
  for (const region of extras) {
    if (region.key.kind !== "dfa") return null;
    const found = finiteTexts(region.key.dfa, limit - texts, MAX_UNIQUE_TEXT_BYTES);
    if (found === null) return null;
    texts += found.length;
    for (const text of found) {
      const key = JSON.parse(text) as string;
      if (!members.has(key)) members.set(key, { key, value: region.value, required: false });
    }
  }
  return [...members.values()];
}

/** The listed keys no member already names. */
function unnamedOnly(listed: readonly Member[], members: readonly Member[]): Member[] {
  const named = new Set(members.map((m) => m.key));
  return listed.filter((m) => !named.has(m.key));
}

/**
 * Bands of keys by their first character, disjoint however the key is spelled (an escape starts
 * with `\`, and stands for `"`, `\`, `/` or a control): the empty key; U+0000–U+0040 and `\`;
 * the rest of ASCII in three bands; the others. A key of one band is never a key of another.
 */
const KEY_BANDS: readonly RegexNode[] = [
  literal('""'),
  concat(range(0x22), alt([range(0x20, 0x21), range(0x23, 0x40), range(0x5c)])),
  concat(range(0x22), alt([range(0x41, 0x5b), range(0x5d, 0x60)])),
  concat(range(0x22), range(0x61, 0x6d)),
  concat(range(0x22), range(0x6e, 0x7f)),
  concat(range(0x22), range(0x80, 0xff)),
];

/**
 * Finer bands: the empty key, KEY_BANDS' second (U+0000–U+0040 and `\`, where escapes land), one
 * per first character from `A` to U+007F, the others.
 */
const FINE_KEY_BANDS: readonly RegexNode[] = [
  KEY_BANDS[0]!,
  KEY_BANDS[1]!,
  ...Array.from({ length: 0x7f - 0x41 + 1 }, (_, i) => 0x41 + i)
    .filter((b) => b !== 0x5c)
    .map((b) => concat(range(0x22), range(b))),
  KEY_BANDS[5]!,
];

/**
 * Unnamed keys as members that cannot repeat one another: one per band of first characters
 * (KEY_BANDS, or FINE_KEY_BANDS) and patternProperties region (the regions' keys are disjoint
 * too), each written at most once, in band order. What minProperties counts where the unnamed
 * keys are too many to list.
 */
function bandedKeys(c: WriterContext, extras: readonly Region[], pointer: string, bands = KEY_BANDS): Member[] {
  const members: Member[] = [];
  const name = bands === KEY_BANDS ? "keyBand" : "fineKeyBand";
  bands.forEach((band, b) => {
    const prefix = c.shared(`${name}#${b}`, () => c.compileNode(concat(band, repeat(range(0, 0xff), 0, -1)), pointer));
    extras.forEach((region, r) => {
      if (region.key.kind !== "dfa") return;
      const keys = c.intersect(region.key.dfa, prefix, pointer);
      if (!isEmptyLanguage(keys))
        members.push({ key: `\u0000band ${b} region ${r}`, value: region.value, required: false, keyText: dfaNode(keys) });
    });
  });
  return members;
}

/** The schemas `parts` apply to `key`; `matches`: whether a pattern of theirs finds a match in it. */
export function schemasForKey(
  parts: readonly ObjectPart[],
  key: string,
  matches: (pattern: { source: string; at: SchemaAt }) => boolean,
): SchemaAt[] {
  const out: SchemaAt[] = [];
  for (const part of parts) {
    // A named key meets its properties schema and every pattern it matches; additionalProperties
    // applies to keys that neither names nor matches.
    const named = part.properties.get(key);
    const matched = part.patterns.filter(matches);
    if (named) out.push(named);
    if (matched.length > 0) out.push(...matched.map((p) => p.at));
    if (!named && matched.length === 0 && part.additional !== null) out.push(part.additional);
  }
  return out;
}
