// The filters and methods (of strings, lists and mappings) Python Jinja2 applies differently from
// @huggingface/jinja, or that the library lacks (see jinja-compat.ts's header); each answers
// undefined where the library's own is right.

import { jinjaTitle, pyFormat, pyStrip, htmlEscape, type PyText } from "./jinja-compat-text.js";
import {
  dictKeys,
  dictLookup,
  entriesOf,
  fn,
  isDict,
  isList,
  isNone,
  isStr,
  isUndef,
  itemsOf,
  list,
  markup,
  markups,
  none,
  num,
  numberOf,
  originalKeys,
  probe,
  pyCompare,
  pyEquals,
  str,
  textOf,
  truthy,
  undef,
  type Dict,
  type NativeFunction,
  type Value,
} from "./jinja-compat-values.js";

export interface Arguments {
  readonly positional: Value[];
  readonly keyword: Dict;
}

/** Filters whose operand is only iterated after Jinja2's `if value:`. */
const SELECTING_FILTERS = new Set(["selectattr", "rejectattr", "select", "reject", "map"]);
/** Mapping methods Jinja2 finds as attributes before it looks up a key of the same name. */
export const MAPPING_METHODS = new Set(["items", "keys", "values", "get"]);

/** A filter Python Jinja2 applies differently from the library; undefined: the library's is right. */
export function pythonFilter(name: string, v: Value, args: () => Arguments, text: PyText): Value | undefined {
  const arg = (a: Arguments, index: number, key: string): Value | undefined => a.positional[index] ?? a.keyword.get(key);
  if (isUndef(v)) {
    switch (name) {
      case "length":
      case "count":
      case "wordcount":
      case "sum":
        return num(0);
      case "list":
      case "items":
      case "sort":
      case "unique":
      case "reverse":
        return list([]);
      case "string":
      case "trim":
      case "upper":
      case "lower":
      case "capitalize":
      case "title":
      case "replace":
      case "join":
      case "safe":
      case "escape":
      case "e":
      case "striptags":
      case "truncate":
        return str("");
      case "first":
      case "last":
      case "min":
      case "max":
        return undef();
    }
  }
  if (SELECTING_FILTERS.has(name) && !truthy(v)) return list([]);
  switch (name) {
    case "string":
      return markups.has(v) ? v : str(text.str(v));
    case "safe":
      return markups.has(v) ? v : markup(text.str(v));
    case "escape":
    case "e":
      return markups.has(v) ? v : markup(htmlEscape(text.str(v)));
    case "tojson":
      return str(tojson(v, args(), text));
    case "trim": {
      const chars = arg(args(), 0, "chars");
      return str(pyStrip(text.str(v), chars && !isNone(chars) ? text.str(chars) : null, true, true));
    }
    case "upper":
      return str(text.str(v).toUpperCase());
    case "lower":
      return str(text.str(v).toLowerCase());
    case "capitalize": {
      const s = text.str(v);
      return str(s.length > 0 ? [...s][0]!.toUpperCase() + [...s].slice(1).join("").toLowerCase() : s);
    }
    case "title":
      return str(jinjaTitle(text.str(v)));
    case "length":
    case "count":
      return isStr(v) ? num([...textOf(v)].length) : undefined;
    case "list":
      if (isStr(v)) return list([...textOf(v)].map(str));
      if (isDict(v)) return list(dictKeys(v));
      return isList(v) ? list([...itemsOf(v)]) : undefined;
    case "items":
      return isDict(v) ? list(pairs(v)) : undefined;
    case "dictsort":
      return isDict(v) && originalKeys.has(v) ? dictsort(v, args()) : undefined;
    case "join":
      return join(v, args(), text);
    case "min":
    case "max":
      return minMax(name, v, args(), text);
    case "unique":
      return unique(v, args(), text);
    case "first":
    case "last": {
      const items = isStr(v) ? [...textOf(v)].map(str) : isList(v) ? itemsOf(v) : isDict(v) ? dictKeys(v) : null;
      if (items === null) return undefined;
      return (name === "first" ? items[0] : items[items.length - 1]) ?? undef();
    }
    case "default":
    case "d": {
      const a = args();
      const fallback = arg(a, 0, "default_value") ?? str("");
      const boolean = arg(a, 1, "boolean");
      return isUndef(v) || (boolean !== undefined && truthy(boolean) && !truthy(v)) ? fallback : v;
    }
    default:
      return undefined;
  }
}

function tojson(v: Value, a: Arguments, text: PyText): string {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  const get = (index: number, key: string): Value | undefined => a.positional[index] ?? a.keyword.get(key);
  const ensureAscii = get(0, "ensure_ascii");
  const indent = get(1, "indent");
  const separators = get(2, "separators");
  const sortKeys = get(3, "sort_keys");
  let indentText: string | null = null;
  if (indent && !isNone(indent)) indentText = isStr(indent) ? textOf(indent) : " ".repeat(Math.max(0, numberOf(indent)));
  let separatorPair: [string, string] | null = null;
  if (separators && !isNone(separators)) {
    const [item, key] = isList(separators) ? itemsOf(separators) : [];
    if (item === undefined || key === undefined || !isStr(item) || !isStr(key) || itemsOf(separators).length !== 2) {
      throw new Error("separators must be a pair of strings");
    }
    separatorPair = [textOf(item), textOf(key)];
  }
  return text.json(v, {
    ensureAscii: ensureAscii !== undefined && truthy(ensureAscii),
    indent: indentText,
    separators: separatorPair,
    sortKeys: sortKeys !== undefined && truthy(sortKeys),
  });
}

export function pairs(dict: Value): Value[] {
  const values = [...entriesOf(dict).values()];
  return dictKeys(dict).map((key, i) => list([key, values[i]!]));
}

function dictsort(dict: Value, a: Arguments): Value {
  const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
  const by = a.positional[1] ?? a.keyword.get("by");
  const reverse = a.positional[2] ?? a.keyword.get("reverse");
  const index = by && isStr(by) && textOf(by) === "value" ? 1 : 0;
  const sorted = pairs(dict).sort((x, y) =>
    pyCompare(itemsOf(x)[index]!, itemsOf(y)[index]!, caseSensitive !== undefined && truthy(caseSensitive)),
  );
  return list(reverse !== undefined && truthy(reverse) ? sorted.reverse() : sorted);
}

export function iterate(v: Value): Value[] | null {
  if (isStr(v)) return [...textOf(v)].map(str);
  if (isList(v)) return itemsOf(v);
  if (isDict(v)) return dictKeys(v);
  if (isUndef(v)) return [];
  return null;
}

function attributeAt(item: Value, path: string): Value {
  let value = item;
  for (const part of path.split(".")) {
    const next =
      isDict(value) || value.type === "NamespaceValue"
        ? entriesOf(value).get(part)
        : isList(value) && /^\d+$/.test(part)
          ? itemsOf(value)[Number(part)]
          : undefined;
    if (next === undefined) return undef();
    value = next;
  }
  return value;
}

function join(v: Value, a: Arguments, text: PyText): Value | undefined {
  const items = iterate(v);
  if (items === null) return undefined;
  const separator = a.positional[0] ?? a.keyword.get("d");
  const attribute = a.positional[1] ?? a.keyword.get("attribute");
  const picked = attribute && !isNone(attribute) ? items.map((x) => attributeAt(x, text.str(attribute))) : items;
  return str(picked.map((x) => text.str(x)).join(separator ? text.str(separator) : ""));
}

function minMax(name: string, v: Value, a: Arguments, text: PyText): Value | undefined {
  const items = iterate(v);
  if (items === null) return undefined;
  const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
  const attribute = a.positional[1] ?? a.keyword.get("attribute");
  const key = (x: Value): Value => (attribute && !isNone(attribute) ? attributeAt(x, text.str(attribute)) : x);
  const sensitive = caseSensitive !== undefined && truthy(caseSensitive);
  let best: Value | undefined;
  for (const item of items) {
    if (best === undefined) best = item;
    else {
      const order = pyCompare(key(item), key(best), sensitive);
      if (name === "min" ? order < 0 : order > 0) best = item;
    }
  }
  return best ?? undef();
}

function unique(v: Value, a: Arguments, text: PyText): Value | undefined {
  const items = iterate(v);
  if (items === null) return undefined;
  const caseSensitive = a.positional[0] ?? a.keyword.get("case_sensitive");
  const attribute = a.positional[1] ?? a.keyword.get("attribute");
  const sensitive = caseSensitive !== undefined && truthy(caseSensitive);
  const seen: Value[] = [];
  const out: Value[] = [];
  for (const item of items) {
    let key = attribute && !isNone(attribute) ? attributeAt(item, text.str(attribute)) : item;
    if (!sensitive && isStr(key)) key = str(textOf(key).toLowerCase());
    if (!seen.some((s) => pyEquals(s, key))) {
      seen.push(key);
      out.push(item);
    }
  }
  return list(out);
}

export function mappingMethod(dict: Value, name: string): Value {
  switch (name) {
    case "items":
      return fn(() => list(pairs(dict)));
    case "keys":
      return fn(() => list(dictKeys(dict)));
    case "values":
      return fn(() => list([...entriesOf(dict).values()]));
    default:
      return fn((args) => {
        const positional = args.filter((a) => a.type !== "KeywordArgumentsValue");
        const key = positional[0];
        if (key === undefined) throw new Error("get expected at least 1 argument, got 0");
        return dictLookup(dict, key) ?? positional[1] ?? none();
      });
  }
}

/** Python methods of strings and lists the library lacks or gets wrong; undefined: the library's. */
export function pythonMethod(target: Value, name: string, text: PyText): ((a: Arguments) => Value) | undefined {
  if (isStr(target)) {
    const s = textOf(target);
    switch (name) {
      case "strip":
      case "lstrip":
      case "rstrip":
        return (a) => {
          const chars = a.positional[0] ?? a.keyword.get("chars");
          return str(pyStrip(s, chars && !isNone(chars) ? text.str(chars) : null, name !== "rstrip", name !== "lstrip"));
        };
      case "format":
        return (a) => str(pyFormat(s, a.positional, a.keyword, text));
    }
  } else if (target.type === "ArrayValue") {
    const items = itemsOf(target);
    switch (name) {
      case "append":
        return (a) => {
          if (a.positional.length !== 1) throw new Error(`list.append() takes exactly one argument (${a.positional.length} given)`);
          items.push(a.positional[0]!);
          return none();
        };
      case "pop":
        return (a) => {
          if (items.length === 0) throw new Error("pop from empty list");
          const at = a.positional[0] ? numberOf(a.positional[0]) : -1;
          const index = at < 0 ? items.length + at : at;
          if (index < 0 || index >= items.length) throw new Error("pop index out of range");
          return items.splice(index, 1)[0]!;
        };
    }
  } else if (isDict(target) && MAPPING_METHODS.has(name)) {
    const method = mappingMethod(target, name);
    return (a) => (method.value as NativeFunction)([...a.positional], probe);
  }
  return undefined;
}
