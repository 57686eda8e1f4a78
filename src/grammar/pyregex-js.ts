// The Python-regex AST as a JS RegExp (sticky, unicode) with Python's match preferences: what
// `parses()` and the unless check run. Scoped flags are already folded into the AST (Node 20's
// RegExp has no inline modifiers), so each node carries its own.

import { caseClose } from "../regex/index.js";
import type { ParsedRegex, RegexSyntaxNode, SetNode } from "./pyregex.js";

const hexEsc = (c: number): string => `\\u{${c.toString(16)}}`;

function classBody(n: SetNode): string {
  const ranges = n.caseless ? caseClose(n.ranges, n.ascii) : n.ranges;
  let s = "";
  for (let i = 0; i < ranges.length; i += 2) {
    const lo = ranges[i]!,
      hi = ranges[i + 1]!;
    s += lo === hi ? hexEsc(lo) : `${hexEsc(lo)}-${hexEsc(hi)}`;
  }
  for (const c of n.classes) {
    if (c === "d") s += "\\p{Nd}";
    else if (c === "D") s += "\\P{Nd}";
    else if (c === "w") s += "\\p{L}\\p{N}_";
    else if (c === "W") s += "\\W";
    else if (c === "s") s += "\\s\\x1c-\\x1f";
    else s += "\\S";
  }
  return s;
}

function emit(n: RegexSyntaxNode): string {
  switch (n.k) {
    case "set": {
      const body = classBody(n);
      if (!n.negated && n.classes.length === 0 && n.ranges.length === 2 && n.ranges[0] === n.ranges[1] && !n.caseless)
        return hexEsc(n.ranges[0]!);
      return n.negated ? `[^${body}]` : body === "" ? "[]" : `[${body}]`;
    }
    case "any":
      return n.dotAll ? "[^]" : "[^\\n]";
    case "seq":
      return n.items.map((it) => emit(it)).join("");
    case "alt":
      return `(?:${n.alts.map((a) => emit(a)).join("|")})`;
    case "group":
      return `(${emit(n.body)})`;
    case "rep": {
      const q =
        n.min === 0 && n.max === Infinity
          ? "*"
          : n.min === 1 && n.max === Infinity
            ? "+"
            : n.min === 0 && n.max === 1
              ? "?"
              : n.max === Infinity
                ? `{${n.min},}`
                : n.min === n.max
                  ? `{${n.min}}`
                  : `{${n.min},${n.max}}`;
      return `(?:${emit(n.body)})${q}${n.lazy ? "?" : ""}`;
    }
    case "assert":
      switch (n.kind) {
        case "bol":
          return n.multiline ? "(?<![^\\n])" : "(?<![^])";
        case "eol":
          return n.multiline ? "(?=\\n|(?![^]))" : "(?=\\n?(?![^]))";
        case "bos":
          return "(?<![^])";
        case "eos":
          return "(?![^])";
        case "wordb":
          return "\\b";
        case "nwordb":
          return "\\B";
      }
      break;
    case "look":
      return `(?${n.behind ? "<" : ""}${n.negated ? "!" : "="}${emit(n.body)})`;
    case "backref":
      return `(?:\\${n.index})`;
  }
  return "";
}

/** Sticky unicode RegExp with Python's match preferences: `re.match(p, text, pos)` ≙ lastIndex = pos; exec. */
export function toJsRegExp(parsed: ParsedRegex): RegExp {
  return new RegExp(emit(parsed.root), "uy");
}
