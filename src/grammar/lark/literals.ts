// Literals: Lark's eval_escaping (load_grammar.py 535–562), _literal_to_pattern (565–596) and
// PrepareLiterals (599–609), shared by terminals and rules; with the two pieces of Python they
// stand on, literal_eval of a u'''…''' string and repr() of a str (for messages).

import { GrammarError } from "../errors.js";
import { tree, type Node, type PatternNode, type Token, type Tree } from "../lark-syntax.js";
import { patternRe, patternStr } from "./patterns.js";

/** Lark's eval_escaping: its escape rewriting followed by Python's literal_eval of u'''…'''. */
export function evalEscaping(s: string): string {
  if (s.indexOf("\\") < 0) return s; // nothing to unescape (the quotes it touches come back as they were)
  let w = "";
  for (let i = 0; i < s.length; i++) {
    const n = s[i]!;
    w += n;
    if (n === "\\") {
      const n2 = s[++i];
      if (n2 === undefined) throw new GrammarError(`Literal ended unexpectedly (bad escaping): \`${s}\``);
      if (n2 === "\\") w += "\\\\";
      else if (!"Uuxnftr".includes(n2)) w += "\\";
      w += n2;
    }
  }
  w = w.split('\\"').join('"').split("'").join("\\'");
  return pyLiteralEval(w, s);
}

function pyLiteralEval(w: string, orig: string): string {
  let out = "";
  const bad = (): never => {
    throw new GrammarError(`Bad escape in literal: ${orig}`);
  };
  for (let i = 0; i < w.length; i++) {
    const c = w[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const d = w[++i];
    if (d === undefined) bad();
    switch (d) {
      case "\\":
        out += "\\";
        break;
      case "'":
        out += "'";
        break;
      case '"':
        out += '"';
        break;
      case "a":
        out += "\x07";
        break;
      case "b":
        out += "\b";
        break;
      case "f":
        out += "\f";
        break;
      case "n":
        out += "\n";
        break;
      case "r":
        out += "\r";
        break;
      case "t":
        out += "\t";
        break;
      case "v":
        out += "\v";
        break;
      case "\n":
        break;
      case "x":
      case "u":
      case "U": {
        const len = d === "x" ? 2 : d === "u" ? 4 : 8;
        const hex = w.slice(i + 1, i + 1 + len);
        if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) bad();
        const v = parseInt(hex, 16);
        if (v > 0x10ffff) bad();
        out += String.fromCodePoint(v);
        i += len;
        break;
      }
      case "N":
        bad();
        break;
      default:
        if (d! >= "0" && d! <= "7") {
          const m = /^[0-7]{1,3}/.exec(w.slice(i))!;
          out += String.fromCodePoint(parseInt(m[0], 8));
          i += m[0].length - 1;
        } else out += "\\" + d;
    }
  }
  return out;
}

/** Python's repr() of a str (quote choice and common escapes). */
export function pyRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of s) {
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += "\\" + q;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\r") out += "\\r";
    else out += ch;
  }
  return q + out + q;
}

/** Lark's _RE_FLAGS: the flags a literal may carry. */
const RE_FLAGS = "imslux";

/** _literal_to_pattern: a STRING or REGEXP token → PatternStr / PatternRE. */
function literalToPattern(tok: Token): PatternNode {
  const v = tok.value;
  const flagStart = Math.max(v.lastIndexOf("/"), v.lastIndexOf('"')) + 1;
  const flags = v.slice(flagStart);
  if (tok.type === "STRING" && v.includes("\n")) throw new GrammarError("You cannot put newlines in string literals", tok.line, tok.column);
  if (tok.type === "REGEXP" && v.includes("\n") && !flags.includes("x"))
    throw new GrammarError("You can only use newlines in regular expressions with the `x` (verbose) flag", tok.line, tok.column);
  const body = v.slice(1, flagStart - 1);
  let s = evalEscaping(body);
  if (s === "") throw new GrammarError(`Empty terminals are not allowed (${v})`, tok.line, tok.column);
  for (const f of flags) if (!RE_FLAGS.includes(f)) throw new GrammarError(`Unknown flag ${f} in ${v}`);
  if (tok.type === "STRING") {
    s = s.split("\\\\").join("\\");
    return patternStr(s, flags, v);
  }
  return patternRe(s, flags, v);
}

/** PrepareLiterals (shared by terminals and rules): `literal` and `range` trees → `pattern`. */
export function prepareLiterals(t: Tree): Node {
  if (t.data === "literal") return tree("pattern", [literalToPattern(t.children[0] as Token)]);
  if (t.data === "range") {
    const [a, b] = t.children as Token[];
    const start = a!.value.slice(1, -1);
    const end = b!.value.slice(1, -1);
    if ([...evalEscaping(start)].length !== 1 || [...evalEscaping(end)].length !== 1)
      throw new GrammarError(`Range endpoints must be single characters: ${a!.value}..${b!.value}`, a!.line, a!.column);
    return tree("pattern", [patternRe(`[${start}-${end}]`, "")]);
  }
  return t;
}
