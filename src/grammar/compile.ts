// Grammar text → terminals + BNF rules, following lark/load_grammar.py step by step
// (GrammarBuilder, then Grammar.compile): imports from Lark's common library, %override,
// %extend, %ignore, templates, terminal-tree → regexp joining, anonymous terminals and their
// dedupe against named ones, EBNF → BNF expansion with Lark's rule cache, rule simplification,
// duplicate detection and removal of unused rules/terminals.

import { COMMON_LARK } from "./common-lark.js";
import { GrammarError, type BnfRule } from "./lalr.js";
import { parseLarkSyntax, tree, type Node, type PatternNode, type Sym, type Token, type Tree } from "./lark-syntax.js";
import { parsePyRegex, pyReEscape, regexWidth } from "./pyregex.js";

export interface TerminalDef {
  readonly name: string;
  readonly pattern: PatternNode;
  readonly priority: number;
}

export interface CompiledGrammar {
  /** Used terminals (plus ignored ones), in Lark's definition order. */
  readonly terminals: TerminalDef[];
  readonly rules: BnfRule[];
  readonly ignore: string[];
  readonly start: string;
}

interface RuleOptions {
  keepAllTokens: boolean;
  expand1: boolean;
  priority: number | null;
}

interface Definition {
  isTerm: boolean;
  tree: Tree | null;
  params: string[];
  options: RuleOptions | number;
}

// ---------------------------------------------------------------------------------------------
// Tree helpers (Lark's Tree API semantics)

const isTree = (n: Node | undefined): n is Tree => n !== undefined && n.kind === "tree";
const isSym = (n: Node | undefined): n is Sym => n !== undefined && n.kind === "sym";
const isTok = (n: Node | undefined): n is Token => n !== undefined && n.kind === "token";

let traversal = 0;
/** lark.Tree.iter_subtrees: reversed BFS (children reversed), each node once. */
function iterSubtrees(root: Tree): Tree[] {
  const stamp = ++traversal;
  const queue: Tree[] = [root];
  root.visited = stamp;
  for (let i = 0; i < queue.length; i++) {
    const kids = queue[i]!.children;
    for (let j = kids.length - 1; j >= 0; j--) {
      const c = kids[j]!;
      if (isTree(c) && c.visited !== stamp) { c.visited = stamp; queue.push(c); }
    }
  }
  return queue.reverse();
}

/** lark.Transformer_InPlace.transform. `fn` returns the replacement for a tree (or the tree). */
function transformInPlace(root: Tree, fn: (t: Tree) => Node): Node {
  const subtrees = iterSubtrees(root);
  for (let i = 0; i < subtrees.length; i++) {
    const kids = subtrees[i]!.children;
    for (let j = 0; j < kids.length; j++) {
      const c = kids[j]!;
      if (isTree(c)) kids[j] = fn(c);
    }
  }
  return fn(root);
}

function deepCopy(n: Node): Node {
  if (isTree(n)) return tree(n.data, n.children.map(deepCopy));
  if (isSym(n)) return { ...n };
  return n;
}

/**
 * Structural key with Lark's equality (Symbols compare by kind+name, patterns by type/value/flags).
 * Values go in length-prefixed (unambiguous, and cheaper than quoting them).
 */
function keyOf(n: Node): string {
  switch (n.kind) {
    case "tree": return `${n.data}(${n.children.map(keyOf).join(",")})`;
    case "sym": return (n.isTerm ? "T:" : "N:") + n.name;
    case "pattern": return `P${n.type}:${n.flags}:${n.value.length}:${n.value}`;
    case "token": return `K:${n.value.length}:${n.value}`;
    case "empty": return "E";
  }
}

function findData(root: Tree, data: string): Tree[] {
  return iterSubtrees(root).filter((t) => t.data === data);
}

function scanSymbols(root: Tree, out: Set<string>): void {
  const seen = new Set<Tree>();
  const walk = (t: Tree): void => {
    if (seen.has(t)) return;
    seen.add(t);
    for (const c of t.children) {
      if (isTree(c)) walk(c);
      else if (isSym(c)) out.add(c.name);
    }
  };
  walk(root);
}

function usedSymbols(t: Tree): Set<string> {
  const out = new Set<string>();
  for (const e of findData(t, "expansion")) scanSymbols(e, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Patterns (Lark's PatternStr / PatternRE)

const widthCache = new Map<string, [number, number]>();

export function patternToRegexp(p: PatternNode): string {
  let v = p.type === "str" ? pyReEscape(p.value) : p.value;
  for (const f of p.flags) v = `(?${f}:${v})`;
  return v;
}

const cpLength = (s: string): number => [...s].length;

export function patternWidth(p: PatternNode): [number, number] {
  if (p.type === "str") return [cpLength(p.value), cpLength(p.value)];
  const re = patternToRegexp(p);
  let w = widthCache.get(re);
  if (!w) {
    try {
      w = regexWidth(parsePyRegex(re));
    } catch (e) {
      throw new GrammarError(`Cannot compile regexp ${re}: ${(e as Error).message}`);
    }
    widthCache.set(re, w);
  }
  return w;
}

const patternStr = (value: string, flags: string, raw?: string): PatternNode => ({ kind: "pattern", type: "str", value, flags: sortFlags(flags), raw });
const patternRe = (value: string, flags: string, raw?: string): PatternNode => ({ kind: "pattern", type: "re", value, flags: sortFlags(flags), raw });
const sortFlags = (f: string): string => (f.length < 2 ? f : [...new Set(f)].sort().join(""));

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
  const bad = (): never => { throw new GrammarError(`Bad escape in literal: ${orig}`); };
  for (let i = 0; i < w.length; i++) {
    const c = w[i]!;
    if (c !== "\\") { out += c; continue; }
    const d = w[++i];
    if (d === undefined) bad();
    switch (d) {
      case "\\": out += "\\"; break;
      case "'": out += "'"; break;
      case '"': out += '"'; break;
      case "a": out += "\x07"; break;
      case "b": out += "\b"; break;
      case "f": out += "\f"; break;
      case "n": out += "\n"; break;
      case "r": out += "\r"; break;
      case "t": out += "\t"; break;
      case "v": out += "\v"; break;
      case "\n": break;
      case "x": case "u": case "U": {
        const len = d === "x" ? 2 : d === "u" ? 4 : 8;
        const hex = w.slice(i + 1, i + 1 + len);
        if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) bad();
        const v = parseInt(hex, 16);
        if (v > 0x10ffff) bad();
        out += String.fromCodePoint(v);
        i += len;
        break;
      }
      case "N": bad(); break;
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

const RE_FLAGS = "imslux";

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

// PrepareLiterals (shared by terminals and rules)
function prepareLiterals(t: Tree): Node {
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

// TerminalTreeToPattern
function terminalTreeToPattern(t: Tree, name: string): Node {
  const kids = t.children;
  switch (t.data) {
    case "pattern": return kids[0]!;
    case "value": return kids[0]!;
    case "expansion": {
      if (kids.length === 0) throw new GrammarError(`Terminals cannot be empty (${name})`);
      if (kids.length === 1) return kids[0]!;
      return patternRe(kids.map((k) => patternToRegexp(asPattern(k, name))).join(""), "");
    }
    case "expansions": {
      if (kids.length === 1) return kids[0]!;
      const ps = kids.map((k) => asPattern(k, name));
      const keyed = ps.map((p) => ({ p, w: patternWidth(p) }));
      keyed.sort((x, y) => (y.w[1] - x.w[1]) || (y.w[0] - x.w[0]) || (cpLength(y.p.value) - cpLength(x.p.value)));
      return patternRe(`(?:${keyed.map((k) => patternToRegexp(k.p)).join("|")})`, "");
    }
    case "expr": {
      const inner = asPattern(kids[0]!, name);
      const opTok = kids[1] as Token | string;
      const opv = typeof opTok === "string" ? opTok : opTok.value;
      let op = opv;
      if (opv === "~") {
        if (kids.length === 3) op = `{${Number((kids[2] as Token).value)}}`;
        else {
          const mn = Number((kids[2] as Token).value), mx = Number((kids[3] as Token).value);
          if (mx < mn) throw new GrammarError(`Bad Range for ${name} (${mn}..${mx} isn't allowed)`);
          op = `{${mn},${mx}}`;
        }
      }
      return patternRe(`(?:${patternToRegexp(inner)})${op}`, inner.flags);
    }
    case "maybe": {
      const inner = asPattern(kids[0]!, name);
      return patternRe(`(?:${patternToRegexp(inner)})?`, inner.flags);
    }
    case "alias": throw new GrammarError("Aliasing not allowed in terminals (You used -> in the wrong place)");
    case "template_usage": throw new GrammarError(`Templates are not allowed inside terminals (${name})`);
  }
  return t;
}

function asPattern(n: Node, name: string): PatternNode {
  if (n.kind === "pattern") return n;
  throw new GrammarError(`Invalid terminal definition (${name})`);
}

// ---------------------------------------------------------------------------------------------
// GrammarBuilder

type Mangle = ((s: string) => string) | null;

function renameSyms(t: Tree, mangle: Mangle): Tree {
  if (!mangle) return t;
  const copy = deepCopy(t) as Tree;
  for (const sub of iterSubtrees(copy)) {
    sub.children = sub.children.map((c) => (isSym(c) ? { ...c, name: mangle(c.name) } : c));
  }
  return copy;
}

/** PrepareGrammar: terminal/nonterminal trees → symbols. */
function prepareGrammar(root: Tree): Tree {
  return transformInPlace(root, (t) => {
    if (t.data === "terminal") {
      const name = (t.children[0] as Token).value;
      return { kind: "sym", isTerm: true, name, filterOut: name.startsWith("_") } satisfies Sym;
    }
    if (t.data === "nonterminal") return { kind: "sym", isTerm: false, name: (t.children[0] as Token).value } satisfies Sym;
    return t;
  }) as Tree;
}

class GrammarBuilder {
  definitions = new Map<string, Definition>();
  ignoreNames: string[] = [];

  private error(isTerm: boolean, msg: string, ...names: string[]): never {
    let m = msg;
    names.forEach((name, i) => {
      const post = i === 0 ? "" : String(i + 1);
      const type = isTerm ? "terminal" : "rule";
      m = m.split(`{name${post}}`).join(name).split(`{type${post}}`).join(type).split(`{Type${post}}`).join(type[0]!.toUpperCase() + type.slice(1));
    });
    throw new GrammarError(m);
  }

  private define(name: string, isTerm: boolean, exp: Tree | null, params: string[], options: RuleOptions | number, override = false): void {
    if (this.definitions.has(name)) {
      if (!override) this.error(isTerm, "{Type} '{name}' defined more than once", name);
    } else if (override) this.error(isTerm, "Cannot override a nonexisting {type} {name}", name);
    if (name.startsWith("__")) this.error(isTerm, "Names starting with double-underscore are reserved (Error at {name})", name);
    this.definitions.set(name, { isTerm, tree: exp, params, options });
  }

  private extend(name: string, isTerm: boolean, exp: Tree, params: string[]): void {
    const d = this.definitions.get(name);
    if (!d) this.error(isTerm, "Can't extend {type} {name} as it wasn't defined before", name);
    if (isTerm !== d!.isTerm) this.error(isTerm, "Cannot extend {type} {name} - one is a terminal, while the other is not.", name);
    if (params.join(",") !== d!.params.join(",")) this.error(isTerm, "Cannot extend {type} with different parameters: {name}", name);
    if (d!.tree === null) this.error(isTerm, "Can't extend {type} {name} - it is abstract.", name);
    d!.tree!.children.unshift(exp);
  }

  private ignore(exp: Tree): void {
    if (exp.data === "expansions" && exp.children.length === 1) {
      const t2 = exp.children[0]!;
      if (isTree(t2) && t2.data === "expansion" && t2.children.length === 1) {
        const item = t2.children[0]!;
        if (isTree(item) && item.data === "value") {
          const v = item.children[0]!;
          if (isSym(v) && v.isTerm) { this.ignoreNames.push(v.name); return; }
        }
      }
    }
    const name = `__IGNORE_${this.ignoreNames.length}`;
    this.ignoreNames.push(name);
    this.definitions.set(name, { isTerm: true, tree: exp, params: [], options: 0 });
  }

  private unpackDefinition(t: Tree, mangle: Mangle): { name: string; isTerm: boolean; exp: Tree; params: string[]; opts: RuleOptions | number } {
    let name: string, params: string[], exp: Tree, opts: RuleOptions | number, isTerm: boolean;
    if (t.data === "rule") {
      const [mods, nameTok, paramsTree, prio, expansions] = t.children as [Tree, Token, Tree, Tree, Tree];
      name = nameTok.value;
      let keepAllTokens = false, expand1 = false;
      if (mods.children.length) {
        const m = (mods.children[0] as Token).value;
        expand1 = m.includes("?");
        if (expand1 && name.startsWith("_")) throw new GrammarError("Inlined rules (_rule) cannot use the ?rule modifier.");
        keepAllTokens = m.includes("!");
      }
      const priority = prio.children.length ? Number((prio.children[0] as Token).value) : null;
      params = paramsTree.children.map((c) => (c as Token).value);
      exp = expansions;
      opts = { keepAllTokens, expand1, priority };
      isTerm = false;
    } else {
      name = (t.children[0] as Token).value;
      params = [];
      opts = t.children.length === 3 ? Number((t.children[1] as Token).value) : 0;
      exp = t.children[t.children.length - 1] as Tree;
      isTerm = true;
    }
    if (mangle) {
      params = params.map(mangle);
      name = mangle(name);
    }
    return { name, isTerm, exp: renameSyms(exp, mangle), params, opts };
  }

  loadGrammar(text: string, mangle: Mangle): void {
    const root = prepareGrammar(parseLarkSyntax(text));
    const imports = new Map<string, Map<string, string>>();
    for (const stmt of root.children as Tree[]) {
      if (stmt.data !== "import") continue;
      const pathNode = stmt.children[0] as Tree;
      const arg1 = stmt.children[1];
      if (pathNode.data === "import_rel")
        throw new GrammarError("Relative %import of other grammar files is not supported (only Lark's common library can be imported)");
      const parts = pathNode.children.map((c) => (c as Token).value);
      let dotted: string[];
      let aliases: Map<string, string>;
      if (isTree(arg1)) {
        dotted = parts;
        aliases = new Map(arg1.children.map((c) => [(c as Token).value, (c as Token).value]));
      } else {
        dotted = parts.slice(0, -1);
        if (!dotted.length) throw new GrammarError(`Nothing was imported from grammar \`${parts[0]}\``);
        const name = parts[parts.length - 1]!;
        aliases = new Map([[name, isTok(arg1) ? arg1.value : name]]);
      }
      const key = dotted.join(".");
      const existing = imports.get(key);
      if (existing) for (const [k, v] of aliases) existing.set(k, v);
      else imports.set(key, aliases);
    }
    for (const [dotted, aliases] of imports) this.doImport(dotted, aliases, mangle);

    for (const stmt of root.children as Tree[]) {
      switch (stmt.data) {
        case "term": case "rule": {
          const d = this.unpackDefinition(stmt, mangle);
          this.define(d.name, d.isTerm, d.exp, d.params, d.opts);
          break;
        }
        case "override": {
          const d = this.unpackDefinition(stmt.children[0] as Tree, mangle);
          this.define(d.name, d.isTerm, d.exp, d.params, d.opts, true);
          break;
        }
        case "extend": {
          const d = this.unpackDefinition(stmt.children[0] as Tree, mangle);
          this.extend(d.name, d.isTerm, d.exp, d.params);
          break;
        }
        case "ignore":
          if (!mangle) this.ignore(stmt.children[0] as Tree);
          break;
        case "declare":
          throw new GrammarError("%declare'd terminals have no definition, so they cannot be generated or matched; define them instead");
        case "import":
          break;
      }
    }
    const termDefs = new Map<string, Tree | null>();
    for (const [name, d] of this.definitions) if (d.isTerm) termDefs.set(name, d.tree);
    resolveTermReferences(termDefs);
  }

  private doImport(dotted: string, aliases: Map<string, string>, baseMangle: Mangle): void {
    if (dotted !== "common")
      throw new GrammarError(`%import ${dotted}: only Lark's common library (%import common.NAME) can be imported`);
    const prefix = dotted.split(".").join("__");
    const mangle = (s: string): string => {
      let r = aliases.has(s) ? aliases.get(s)! : s[0] === "_" ? `_${prefix}__${s.slice(1)}` : `${prefix}__${s}`;
      if (baseMangle) r = baseMangle(r);
      return r;
    };
    const gb = new GrammarBuilder();
    gb.loadGrammar(COMMON_LARK, mangle);
    for (const [orig] of aliases) {
      // Lark fails in _remove_unused → later validation; report clearly instead.
      if (!gb.definitions.has(mangle(orig))) throw new GrammarError(`'${orig}' is not defined in Lark's common library`);
    }
    gb.removeUnused([...aliases.keys()].map(mangle));
    for (const name of gb.definitions.keys())
      if (this.definitions.has(name)) throw new GrammarError(`Cannot import '${name}' from 'common.lark': Symbol already defined.`);
    for (const [k, v] of gb.definitions) this.definitions.set(k, v);
  }

  removeUnused(used: string[]): void {
    const keep = new Set<string>();
    const queue = [...used];
    while (queue.length) {
      const s = queue.shift()!;
      if (keep.has(s)) continue;
      keep.add(s);
      const d = this.definitions.get(s);
      if (!d || d.isTerm || !d.tree) continue;
      for (const u of usedSymbols(d.tree)) if (!d.params.includes(u)) queue.push(u);
    }
    for (const k of [...this.definitions.keys()]) if (!keep.has(k)) this.definitions.delete(k);
  }

  validate(): void {
    for (const [name, d] of this.definitions) {
      const params = d.params;
      params.forEach((p, i) => {
        if (this.definitions.has(p)) throw new GrammarError(`Template Parameter conflicts with rule ${p} (in template ${name})`);
        if (params.slice(0, i).includes(p)) throw new GrammarError(`Duplicate Template Parameter ${p} (in template ${name})`);
      });
      if (!d.tree) continue;
      for (const temp of findData(d.tree, "template_usage")) {
        const sym = (temp.children[0] as Sym).name;
        const args = temp.children.slice(1);
        if (!params.includes(sym)) {
          const td = this.definitions.get(sym);
          if (!td) this.error(d.isTerm, `Template '${sym}' used but not defined (in {type} {name})`, name);
          if (args.length !== td!.params.length)
            this.error(d.isTerm, `Wrong number of template arguments used for {name} (expected ${td!.params.length}, got ${args.length}) (in {type2} {name2})`, sym, name);
        }
      }
      for (const sym of usedSymbols(d.tree)) {
        if (!this.definitions.has(sym) && !params.includes(sym))
          this.error(d.isTerm, "{Type} '{name}' used but not defined (in {type2} {name2})", sym, name);
      }
    }
    const missing = this.ignoreNames.filter((n) => !this.definitions.has(n));
    if (missing.length) throw new GrammarError(`Terminals {'${missing.join("', '")}'} were marked to ignore but were not defined!`);
  }
}

function resolveTermReferences(termDefs: Map<string, Tree | null>): void {
  for (let changed = true; changed; ) {
    changed = false;
    for (const [name, t] of termDefs) {
      if (!t) continue;
      for (const exp of findData(t, "value")) {
        const item = exp.children[0]!;
        if (isSym(item) && !item.isTerm) throw new GrammarError(`Rules aren't allowed inside terminals (NonTerminal('${item.name}') in ${name})`);
        if (isSym(item)) {
          const v = termDefs.get(item.name);
          if (v === undefined) throw new GrammarError(`Terminal used but not defined: ${item.name}`);
          exp.children[0] = v!;
          changed = true;
        }
      }
    }
  }
  for (const [name, t] of termDefs) {
    if (!t) continue;
    for (const child of t.children) {
      if (isTree(child) && iterSubtrees(child).includes(t))
        throw new GrammarError(`Recursion in terminal '${name}' (recursion is only allowed in rules, not terminals)`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Grammar.compile

const TERMINAL_NAMES: Record<string, string> = {
  ".": "DOT", ",": "COMMA", ":": "COLON", ";": "SEMICOLON", "+": "PLUS", "-": "MINUS", "*": "STAR",
  "/": "SLASH", "\\": "BACKSLASH", "|": "VBAR", "?": "QMARK", "!": "BANG", "@": "AT", "#": "HASH",
  $: "DOLLAR", "%": "PERCENT", "^": "CIRCUMFLEX", "&": "AMPERSAND", _: "UNDERSCORE", "<": "LESSTHAN",
  ">": "MORETHAN", "=": "EQUAL", '"': "DBLQUOTE", "'": "QUOTE", "`": "BACKQUOTE", "~": "TILDE",
  "(": "LPAR", ")": "RPAR", "{": "LBRACE", "}": "RBRACE", "[": "LSQB", "]": "RSQB", "\n": "NEWLINE",
  "\r\n": "CRLF", "\t": "TAB", " ": "SPACE",
};
const ID_START = /^[\p{L}\p{Mn}\p{Mc}\p{Pc}]$/u;
const ID_CONTINUE = /^[\p{L}\p{Mn}\p{Mc}\p{Pc}\p{Nd}\p{Nl}]+$/u;

/**
 * Python's str.isidentifier as Lark uses it to name a literal's terminal; ASCII by hand (the
 * Unicode property regexps are costly to run in a cold process, and literals are mostly ASCII).
 */
function isIdentifier(v: string): boolean {
  let ascii = true;
  for (let i = 0; i < v.length && ascii; i++) {
    const c = v.charCodeAt(i);
    if (c >= 0x80) ascii = false;
    else if (!(c === 0x5f || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (i > 0 && c >= 0x30 && c <= 0x39))) return false;
  }
  return ascii || (ID_CONTINUE.test(v) && ID_START.test([...v][0]!));
}

const EMPTY: Node = { kind: "empty" };
const SMALL_FACTOR_THRESHOLD = 5;
const REPEAT_BREAK_THRESHOLD = 50;

/** lark.utils.small_factors */
function smallFactors(n: number, maxFactor: number): [number, number][] {
  if (n <= maxFactor) return [[n, 0]];
  for (let a = maxFactor; a > 1; a--) {
    const r = Math.floor(n / a), b = n % a;
    if (a + b <= maxFactor) return [...smallFactors(r, maxFactor), [a, b]];
  }
  throw new GrammarError(`Failed to factorize ${n}`);
}

export function compileGrammarText(text: string, start = "start"): CompiledGrammar {
  const builder = new GrammarBuilder();
  builder.loadGrammar(text, null);
  builder.validate();

  const termDefs: [string, Tree | null, number][] = [];
  const ruleDefs: [string, string[], Tree, RuleOptions][] = [];
  for (const [name, d] of builder.definitions) {
    if (d.isTerm) termDefs.push([name, d.tree, d.options as number]);
    else ruleDefs.push([name, d.params, d.tree!, d.options as RuleOptions]);
  }

  // Terminals
  for (const [name, t] of termDefs) {
    if (!t) continue;
    const exps = findData(t, "expansion");
    if (exps.length === 1 && exps[0]!.children.length === 0) throw new GrammarError(`Terminals cannot be empty (${name})`);
  }
  const terminals: TerminalDef[] = [];
  for (const [name, t, priority] of termDefs) {
    if (!t) continue;
    const copy = deepCopy(t) as Tree;
    let p = transformInPlace(copy, prepareLiterals);
    if (isTree(p)) p = transformInPlace(p, (x) => terminalTreeToPattern(x, name));
    terminals.push({ name, pattern: asPattern(p, name), priority });
  }

  // Anonymous terminals
  const termSet = new Set(terminals.map((t) => t.name));
  const termReverse = new Map<string, TerminalDef>();
  for (const td of terminals) termReverse.set(keyOf(td.pattern), td);
  let anonIndex = 0;
  let keepAllTokensNow = false;
  const anonTerminal = (p: PatternNode): Sym => {
    let termName: string | null = null;
    const known = termReverse.get(keyOf(p));
    if (p.type === "str") {
      if (known) termName = known.name;
      else {
        termName = TERMINAL_NAMES[p.value] ?? null;
        if (termName === null && p.value && isIdentifier(p.value) && !termSet.has(p.value.toUpperCase()))
          termName = p.value.toUpperCase();
        if (termName !== null && termSet.has(termName)) termName = null;
      }
    } else if (known) termName = known.name;
    if (termName === null) termName = `__ANON_${anonIndex++}`;
    if (!termSet.has(termName)) {
      termSet.add(termName);
      const td: TerminalDef = { name: termName, pattern: p, priority: 0 };
      termReverse.set(keyOf(p), td);
      terminals.push(td);
    }
    return { kind: "sym", isTerm: true, name: termName, filterOut: keepAllTokensNow ? false : p.type === "str" };
  };

  // Templates
  const createdTemplates = new Set<string>();
  const applyTemplate = (t: Tree): Node => {
    const name = (t.children[0] as Sym).name;
    const args = t.children.slice(1);
    const argNames = args.map((a) => {
      if (!isSym(a)) throw new GrammarError(`Template arguments must be symbols or literals (in ${name})`);
      return a.name;
    });
    const resultName = `${name}{${argNames.join(",")}}`;
    if (!createdTemplates.has(resultName)) {
      createdTemplates.add(resultName);
      const def = ruleDefs.find((r) => r[0] === name)!;
      const names = new Map<string, Node>(def[1].map((p, i) => [p, args[i]!]));
      const body = deepCopy(def[2]) as Tree;
      transformInPlace(body, (x) => {
        if (x.data === "value" && x.children.length === 1 && isSym(x.children[0]) && names.has((x.children[0] as Sym).name))
          return names.get((x.children[0] as Sym).name)!;
        if (x.data === "template_usage") {
          const tn = (x.children[0] as Sym).name;
          if (names.has(tn)) return tree("template_usage", [names.get(tn)!, ...x.children.slice(1)]);
        }
        return x;
      });
      ruleDefs.push([resultName, [], body, { ...def[3] }]);
    }
    return { kind: "sym", isTerm: false, name: resultName } satisfies Sym;
  };

  // EBNF → BNF
  const newRules: [string, Tree, RuleOptions | null][] = [];
  const rulesCache = new Map<string, Sym>();
  let ebnfIndex = 0;
  let prefix = "anon";
  let ruleOptionsNow: RuleOptions | null = null;
  const nameRule = (inner: string): string => `__${prefix}_${inner}_${ebnfIndex++}`;
  const addRule = (key: string, name: string, expansions: Tree): Sym => {
    const t: Sym = { kind: "sym", isTerm: false, name };
    newRules.push([name, expansions, ruleOptionsNow]);
    rulesCache.set(key, t);
    return t;
  };
  const addRecurseRule = (type: string, expr: Node): Sym => {
    const key = keyOf(expr);
    const hit = rulesCache.get(key);
    if (hit) return hit;
    const name = nameRule(type);
    const t: Sym = { kind: "sym", isTerm: false, name };
    return addRule(key, name, tree("expansions", [tree("expansion", [expr]), tree("expansion", [t, expr])]));
  };
  const addRepeatRule = (a: number, b: number, target: Node, atom: Node): Sym => {
    const key = `R(${a},${b},${keyOf(target)},${keyOf(atom)})`;
    const hit = rulesCache.get(key);
    if (hit) return hit;
    const name = nameRule(`repeat_a${a}_b${b}`);
    return addRule(key, name, tree("expansions", [tree("expansion", [...Array(a).fill(target), ...Array(b).fill(atom)])]));
  };
  const addRepeatOptRule = (a: number, b: number, target: Node, targetOpt: Node, atom: Node): Sym => {
    const key = `O(${a},${b},${keyOf(target)},${keyOf(atom)})`;
    const hit = rulesCache.get(key);
    if (hit) return hit;
    const name = nameRule(`repeat_a${a}_b${b}_opt`);
    const exps: Tree[] = [];
    for (let i = 0; i < a; i++) exps.push(tree("expansion", [...Array(i).fill(target), targetOpt]));
    for (let i = 0; i < b; i++) exps.push(tree("expansion", [...Array(a).fill(target), ...Array(i).fill(atom)]));
    return addRule(key, name, tree("expansions", exps));
  };
  const generateRepeats = (rule: Node, mn: number, mx: number): Node => {
    if (mx < REPEAT_BREAK_THRESHOLD) {
      const exps: Tree[] = [];
      for (let n = mn; n <= mx; n++) exps.push(tree("expansion", Array(n).fill(rule)));
      return tree("expansions", exps);
    }
    let mnTarget: Node = rule;
    for (const [a, b] of smallFactors(mn, SMALL_FACTOR_THRESHOLD)) mnTarget = addRepeatRule(a, b, mnTarget, rule);
    if (mx === mn) return mnTarget;
    const diff = mx - mn + 1;
    const diffFactors = smallFactors(diff, SMALL_FACTOR_THRESHOLD);
    let diffTarget: Node = rule;
    let diffOptTarget: Node = tree("expansion", []);
    for (const [a, b] of diffFactors.slice(0, -1)) {
      diffOptTarget = addRepeatOptRule(a, b, diffTarget, diffOptTarget, rule);
      diffTarget = addRepeatRule(a, b, diffTarget, rule);
    }
    const [a, b] = diffFactors[diffFactors.length - 1]!;
    diffOptTarget = addRepeatOptRule(a, b, diffTarget, diffOptTarget, rule);
    return tree("expansions", [tree("expansion", [mnTarget, diffOptTarget])]);
  };
  const ruleSize = (n: Node): number => {
    if (isTree(n)) {
      const vals = n.children.map(ruleSize);
      if (n.data === "expansion") return vals.reduce((a, b) => a + b, 0);
      if (n.data === "expansions") return Math.max(...vals);
      throw new GrammarError(`Unexpected ${n.data} inside [...]`);
    }
    if (isSym(n)) {
      if (!n.isTerm) return n.name.startsWith("_") ? 0 : 1;
      return (ruleOptionsNow?.keepAllTokens || !n.filterOut) ? 1 : 0;
    }
    if (n.kind === "empty") return 0;
    throw new GrammarError("Unexpected item inside [...]");
  };
  const ebnf = (t: Tree): Node => {
    if (t.data === "expr") {
      const rule = t.children[0]!;
      const op = (t.children[1] as Token).value;
      if (op === "?") return tree("expansions", [rule, tree("expansion", [])]);
      if (op === "+") return addRecurseRule("plus", rule);
      if (op === "*") return tree("expansions", [addRecurseRule("star", rule), tree("expansion", [])]);
      if (op === "~") {
        let mn: number, mx: number;
        if (t.children.length === 3) mn = mx = Number((t.children[2] as Token).value);
        else {
          mn = Number((t.children[2] as Token).value);
          mx = Number((t.children[3] as Token).value);
          if (mx < mn || mn < 0) throw new GrammarError(`Bad Range for ${describe(rule)} (${mn}..${mx} isn't allowed)`);
        }
        return generateRepeats(rule, mn, mx);
      }
    }
    if (t.data === "maybe") {
      const rule = t.children[0]!;
      const size = ruleSize(rule);
      return tree("expansions", [rule, tree("expansion", Array(size).fill(EMPTY))]);
    }
    return t;
  };

  const rules: [string, Node, RuleOptions | null][] = [];
  for (let i = 0; i < ruleDefs.length; i++) {
    const [name, params, ruleTree, options] = ruleDefs[i]!;
    if (params.length) continue;
    const ro: RuleOptions | null = options.keepAllTokens ? { keepAllTokens: true, expand1: false, priority: null } : null;
    ruleOptionsNow = ro;
    prefix = name;
    keepAllTokensNow = !!ro?.keepAllTokens;
    let t: Node = deepCopy(ruleTree);
    t = transformInPlace(t as Tree, prepareLiterals);
    if (isTree(t)) t = transformInPlace(t, (x) => (x.data === "value" && x.children.length === 1 ? x.children[0]! : x));
    if (isTree(t)) t = transformInPlace(t, (x) => (x.data === "pattern" ? anonTerminal(x.children[0] as PatternNode) : x));
    if (isTree(t)) t = transformInPlace(t, (x) => (x.data === "template_usage" ? applyTemplate(x) : x));
    if (isTree(t)) t = transformInPlace(t, ebnf);
    rules.push([name, t, options]);
  }
  for (const r of newRules) rules.push(r);

  // Simplify + compile to BNF rules
  const compiled: (BnfRule & { emptyOnly?: boolean })[] = [];
  for (const [name, t, options] of rules) {
    const alts = alternatives(t);
    alts.forEach((alt, order) => {
      if (alt.alias && name.startsWith("_"))
        throw new GrammarError(`Rule ${name} is marked for expansion (it starts with an underscore) and isn't allowed to have aliases (alias=${alt.alias})`);
      const expansion: string[] = [];
      for (const s of alt.syms) {
        if (s.kind === "empty") continue;
        if (!isSym(s)) throw new GrammarError(`Invalid rule body in ${name}`);
        expansion.push(s.name);
      }
      compiled.push({ origin: name, expansion, priority: options?.priority ?? null, order, alias: alt.alias ?? null });
    });
  }

  // Duplicates
  const byKey = new Map<string, BnfRule[]>();
  for (const r of compiled) {
    const k = r.origin + "\0" + r.expansion.join("\0");
    const l = byKey.get(k);
    if (l) l.push(r);
    else byKey.set(k, [r]);
  }
  let finalRules: BnfRule[] = compiled;
  if (byKey.size !== compiled.length) {
    for (const dups of byKey.values()) {
      if (dups.length > 1 && dups[0]!.expansion.length)
        throw new GrammarError(`Rules defined twice: ${dups.map((d) => `\n  * <${d.origin} : ${d.expansion.join(" ")}>`).join("")}\n\n(Might happen due to colliding expansion of optionals: [] or ?)`);
    }
    finalRules = [...byKey.values()].map((l) => l[0]!);
  }

  // Unused rules
  for (;;) {
    const c = finalRules.length;
    const used = new Set<string>([start]);
    for (const r of finalRules) for (const s of r.expansion) if (s !== r.origin && !termSet.has(s)) used.add(s);
    finalRules = finalRules.filter((r) => used.has(r.origin));
    if (finalRules.length === c) break;
  }
  // Unused terminals
  const usedTerms = new Set<string>();
  for (const r of finalRules) for (const s of r.expansion) if (termSet.has(s)) usedTerms.add(s);
  const ignore = builder.ignoreNames;
  const finalTerminals = terminals.filter((t) => usedTerms.has(t.name) || ignore.includes(t.name));
  return { terminals: finalTerminals, rules: finalRules, ignore: [...ignore], start };
}

/** Python repr of a Lark symbol / tree, as it appears in Lark's messages. */
function describe(n: Node): string {
  if (isSym(n)) return `${n.isTerm ? "Terminal" : "NonTerminal"}('${n.name}')`;
  if (isTree(n)) return `Tree('${n.data}', [${n.children.map(describe).join(", ")}])`;
  if (n.kind === "pattern") return `P${n.type}:${n.flags}:${JSON.stringify(n.value)}`;
  if (n.kind === "token") return `K:${JSON.stringify(n.value)}`;
  return keyOf(n);
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

interface Alt { syms: Node[]; alias?: string; }

/** SimplifyRule_Visitor + RuleTreeToText: the rule's alternatives, distributed and deduplicated. */
function alternatives(n: Node): Alt[] {
  const dedup = (alts: Alt[]): Alt[] => {
    const seen = new Set<string>();
    return alts.filter((a) => {
      const k = (a.alias ?? "") + "|" + a.syms.map(keyOf).join(",");
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  };
  if (!isTree(n)) return [{ syms: [n] }];
  switch (n.data) {
    case "expansions": return dedup(n.children.flatMap(alternatives));
    case "expansion": {
      let acc: Alt[] = [{ syms: [] }];
      for (const c of n.children) {
        const opts = alternatives(c);
        const next: Alt[] = [];
        for (const a of acc) for (const o of opts) {
          if (o.alias) throw new GrammarError(`Aliases (->) are only allowed at the top level of a rule's alternatives (alias=${o.alias})`);
          next.push({ syms: [...a.syms, ...o.syms] });
        }
        acc = next;
      }
      return acc;
    }
    case "alias": {
      const inner = alternatives(n.children[0]!);
      const name = (n.children[1] as Sym).name;
      return inner.map((a) => {
        if (a.alias) throw new GrammarError("Double alias not allowed");
        return { syms: a.syms, alias: name };
      });
    }
  }
  throw new GrammarError(`Unexpected ${n.data} in rule`);
}


