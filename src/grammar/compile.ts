// Grammar text → terminals + BNF rules, following lark/load_grammar.py step by step
// (GrammarBuilder, then Grammar.compile): imports from Lark's common library, %override,
// %extend, %ignore, templates, terminal-tree → regexp joining, anonymous terminals and their
// dedupe against named ones, EBNF → BNF expansion with Lark's rule cache, rule simplification,
// duplicate detection and removal of unused rules/terminals.

import { COMMON_LARK } from "./common-lark.js";
import { GrammarError, type BnfRule } from "./lalr.js";
import { parseLarkSyntax, regexpGroupDepth, tree, type Node, type PatternNode, type Sym, type Token, type Tree } from "./lark-syntax.js";
import { compileBudget, nestingTooDeep, shortName, tooComplex, type CompileBudget, type GrammarLimits } from "./limits.js";
import { parsePyRegex, PY_RE_SPECIAL, pyReEscape, PyRegexNestingError, regexWidth } from "./pyregex.js";

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
  /** Where its name is in the text (for messages about the definition as a whole). */
  line?: number;
  column?: number;
}

// ---------------------------------------------------------------------------------------------
// Tree helpers (Lark's Tree API semantics)

const isTree = (n: Node | undefined): n is Tree => n !== undefined && n.kind === "tree";
const isSym = (n: Node | undefined): n is Sym => n !== undefined && n.kind === "sym";
const isTok = (n: Node | undefined): n is Token => n !== undefined && n.kind === "token";

let traversal = 0;
/**
 * The budget of the compile in progress (compiles are synchronous: one at a time per thread), so
 * the tree and pattern helpers below count their work, and parse regexps under its nesting
 * limit, without every caller passing it down. Set by withCompileBudget.
 */
let active: CompileBudget | null = null;
const spend = (units: number): void => active?.clock.spend(units);

/** Runs `fn` with `budget` as the compile in progress (see `active`); its pattern caches die with it. */
export function withCompileBudget<T>(budget: CompileBudget, fn: () => T): T {
  const outer = active;
  active = budget;
  try {
    return fn();
  } finally {
    active = outer;
    // The widths are per compile: kept across compiles, every distinct regexp of every grammar
    // ever compiled stayed in this map.
    if (outer === null) widthCache.clear();
  }
}

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
  spend(queue.length);
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

/**
 * The symbols below each of `roots` into `out`, depth-first and left to right (Lark's
 * scan_values), without recursion: a terminal's tree is a DAG as deep as its chain of references.
 * A subtree met before is skipped: every symbol in it is in `out` already, so the set and its
 * insertion order are those of scanning each root on its own (Lark does, once per expansion).
 */
function scanSymbols(roots: readonly Tree[], out: Set<string>): void {
  const stamp = ++traversal;
  const stack: Node[] = [];
  for (const root of roots) {
    stack.push(root);
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (isSym(n)) { out.add(n.name); continue; }
      if (!isTree(n) || n.visited === stamp) continue;
      n.visited = stamp;
      spend(1);
      // Children pushed right to left: they come out in order, as the recursive walk meets them.
      for (let j = n.children.length - 1; j >= 0; j--) stack.push(n.children[j]!);
    }
  }
}

function usedSymbols(t: Tree): Set<string> {
  const out = new Set<string>();
  scanSymbols(findData(t, "expansion"), out);
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

/** `where`: what the pattern is (a terminal), for a nesting error. */
export function patternWidth(p: PatternNode, where?: string): [number, number] {
  if (p.type === "str") return [cpLength(p.value), cpLength(p.value)];
  const re = patternToRegexp(p);
  let w = widthCache.get(re);
  if (!w) {
    try {
      w = regexWidth(parsePyRegex(re, activeMaxNesting()));
    } catch (e) {
      if (e instanceof PyRegexNestingError) throw nestingTooDeep(e.maxNesting, `${where ?? "a terminal"}: regexp groups`);
      throw new GrammarError(`Cannot compile regexp ${re}: ${(e as Error).message}`);
    }
    widthCache.set(re, w);
  }
  return w;
}

/** The nesting limit of the compile in progress (none outside a compile). */
export function activeMaxNesting(): number {
  return active?.limits.maxNesting ?? Infinity;
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

// TerminalTreeToPattern: `kids` are t's children already transformed.
function terminalTreeToPattern(t: Tree, kids: Node[], name: string): Node {
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
      const keyed = ps.map((p) => ({ p, w: patternWidth(p, `terminal '${shortName(name)}'`) }));
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
  return kids === t.children ? t : tree(t.data, kids);
}

/** Children of `t` that are trees, for the DAG walks below. */
function eachTreeChild(t: Tree, fn: (c: Tree) => void): void {
  for (const c of t.children) if (isTree(c)) fn(c);
}

/**
 * Visits every tree below `root` (each once) after its children, left to right: Lark's
 * Transformer_NonRecursive order on the tree a DAG spells, where a subtree met again is already
 * done. No recursion: a terminal's DAG is as deep as its chain of references.
 */
function postOrder(root: Tree, isDone: (t: Tree) => boolean, visit: (t: Tree) => void): void {
  const trees: Tree[] = [root];
  const expanded: boolean[] = [false];
  while (trees.length > 0) {
    const i = trees.length - 1;
    const t = trees[i]!;
    if (isDone(t)) { trees.pop(); expanded.pop(); continue; }
    if (expanded[i]) {
      trees.pop();
      expanded.pop();
      visit(t);
      continue;
    }
    expanded[i] = true;
    spend(t.children.length + 1);
    for (let j = t.children.length - 1; j >= 0; j--) {
      const c = t.children[j]!;
      if (isTree(c) && !isDone(c)) { trees.push(c); expanded.push(false); }
    }
  }
}

/**
 * What a terminal tree's pattern will be, measured without building it: the length of its
 * regexp (patternToRegexp), how deep its groups nest, and its flags (which the regexp carries as
 * `(?f:…)` wrappers). References make a terminal a DAG that can spell exponentially much
 * (`A: B B`, `B: C C`, …), so the sizes are computed over the DAG and checked before any string.
 */
interface PatternShape {
  readonly length: number;
  readonly depth: number;
  readonly flags: string;
}

const NO_SHAPE: PatternShape = { length: 0, depth: 0, flags: "" };

function shapeOfPattern(p: PatternNode): PatternShape {
  let length = p.value.length;
  let depth = 0;
  if (p.type === "str") {
    for (const ch of p.value) if (RE_ESCAPED.has(ch)) length++;
  } else depth = regexpGroupDepth(p.value, p.flags.includes("x"));
  return withFlags(length, depth, p.flags);
}

const RE_ESCAPED = new Set(PY_RE_SPECIAL);
const withFlags = (valueLength: number, valueDepth: number, flags: string): PatternShape =>
  ({ length: valueLength + 5 * flags.length, depth: valueDepth + flags.length, flags });

/** The shape terminalTreeToPattern gives `t`, from its children's shapes (see PatternShape). */
function shapeOfTree(t: Tree, kids: readonly PatternShape[]): PatternShape {
  switch (t.data) {
    case "pattern": case "value": return kids[0] ?? NO_SHAPE;
    case "expansion": {
      if (kids.length === 1) return kids[0]!;
      let length = 0, depth = 0;
      for (const k of kids) { length += k.length; depth = Math.max(depth, k.depth); }
      return withFlags(length, depth, "");
    }
    case "expansions": {
      if (kids.length === 1) return kids[0]!;
      let length = 3 + kids.length, depth = 0;
      for (const k of kids) { length += k.length; depth = Math.max(depth, k.depth); }
      return withFlags(length, depth + 1, "");
    }
    case "expr": case "maybe": {
      const inner = kids[0] ?? NO_SHAPE;
      let op = 1;
      if (t.data === "expr") {
        const opTok = t.children[1] as Token | string;
        const opv = typeof opTok === "string" ? opTok : opTok.value;
        // `~ n` is written `{n}`, `~ n..m` `{n,m}` (see terminalTreeToPattern).
        op = opv === "~" ? 2 + t.children.slice(2).map((c) => String(Number((c as Token).value))).join(",").length : opv.length;
      }
      return withFlags(4 + inner.length + op, inner.depth + 1, inner.flags);
    }
  }
  return NO_SHAPE;
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
  /** Each terminal's own subtrees, before references were substituted (resolveTermReferences). */
  ownSubtrees = new Map<string, Tree[]>();

  constructor(private readonly budget: CompileBudget) {}

  private error(isTerm: boolean, msg: string, ...names: string[]): never {
    let m = msg;
    names.forEach((name, i) => {
      const post = i === 0 ? "" : String(i + 1);
      const type = isTerm ? "terminal" : "rule";
      m = m.split(`{name${post}}`).join(name).split(`{type${post}}`).join(type).split(`{Type${post}}`).join(type[0]!.toUpperCase() + type.slice(1));
    });
    throw new GrammarError(m);
  }

  private define(name: string, isTerm: boolean, exp: Tree | null, params: string[], options: RuleOptions | number, override = false, at?: Token): void {
    if (this.definitions.has(name)) {
      if (!override) this.error(isTerm, "{Type} '{name}' defined more than once", name);
    } else if (override) this.error(isTerm, "Cannot override a nonexisting {type} {name}", name);
    if (name.startsWith("__")) this.error(isTerm, "Names starting with double-underscore are reserved (Error at {name})", name);
    this.definitions.set(name, { isTerm, tree: exp, params, options, line: at?.line, column: at?.column });
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

  private unpackDefinition(t: Tree, mangle: Mangle): { name: string; isTerm: boolean; exp: Tree; params: string[]; opts: RuleOptions | number; at: Token } {
    let name: string, params: string[], exp: Tree, opts: RuleOptions | number, isTerm: boolean, at: Token;
    if (t.data === "rule") {
      const [mods, nameTok, paramsTree, prio, expansions] = t.children as [Tree, Token, Tree, Tree, Tree];
      name = nameTok.value;
      at = nameTok;
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
      at = t.children[0] as Token;
      name = at.value;
      params = [];
      opts = t.children.length === 3 ? Number((t.children[1] as Token).value) : 0;
      exp = t.children[t.children.length - 1] as Tree;
      isTerm = true;
    }
    if (mangle) {
      params = params.map(mangle);
      name = mangle(name);
    }
    return { name, isTerm, exp: renameSyms(exp, mangle), params, opts, at };
  }

  loadGrammar(text: string, mangle: Mangle): void {
    const root = prepareGrammar(parseLarkSyntax(text, this.budget.limits.maxNesting, this.budget.clock));
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
          this.define(d.name, d.isTerm, d.exp, d.params, d.opts, false, d.at);
          break;
        }
        case "override": {
          const d = this.unpackDefinition(stmt.children[0] as Tree, mangle);
          this.define(d.name, d.isTerm, d.exp, d.params, d.opts, true, d.at);
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
    this.ownSubtrees = resolveTermReferences(termDefs, this.budget);
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
    const gb = new GrammarBuilder(this.budget);
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
    const terminalsClean = this.ownTreesAreValid();
    for (const [name, d] of this.definitions) {
      const params = d.params;
      params.forEach((p, i) => {
        if (this.definitions.has(p)) throw new GrammarError(`Template Parameter conflicts with rule ${p} (in template ${name})`);
        if (params.slice(0, i).includes(p)) throw new GrammarError(`Duplicate Template Parameter ${p} (in template ${name})`);
      });
      if (!d.tree) continue;
      if (d.isTerm && terminalsClean) continue;
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

  /**
   * Whether validate surely finds nothing wrong in any terminal: no template use and no undefined
   * symbol in any terminal's own tree. A terminal's tree is a DAG over the trees it references,
   * and validate's searches of it (Lark's, each over the whole DAG) are quadratic in a chain of
   * references; every node is in some terminal's own tree, so when no own tree has anything to
   * report, no DAG has. Otherwise the full searches run, and name the terminal Lark names (which
   * can be one referencing the culprit).
   */
  private ownTreesAreValid(): boolean {
    for (const [name, d] of this.definitions) {
      if (!d.isTerm || !d.tree) continue;
      const own = this.ownSubtrees.get(name);
      if (own === undefined) return false;
      for (const t of own) {
        if (t.data === "template_usage") return false;
        for (const c of t.children) if (isSym(c) && !this.definitions.has(c.name)) return false;
      }
    }
    return true;
  }
}

/**
 * Lark's resolve_term_references: every `value` node naming a terminal gets that terminal's tree
 * (the same object, so the terminals become one DAG), then a terminal reachable from itself is
 * refused. Lark repeats whole passes over the growing DAGs until nothing changes: quadratic in a
 * chain's length (13 s for 10,000). Every value node is in one terminal's own tree, and Lark's
 * first pass visits each terminal's own tree before substituting into it (its later passes find
 * nothing left), so one pass over the own trees in Lark's order makes the same DAG and meets
 * errors in the same order. Cycles are then found on the reference graph (Tarjan's SCCs), and the
 * first terminal in definition order on one is the one Lark names.
 *
 * Returns each terminal's own subtrees (iter_subtrees order, before substitution).
 */
function resolveTermReferences(termDefs: Map<string, Tree | null>, budget: CompileBudget): Map<string, Tree[]> {
  const names = [...termDefs.keys()];
  const indexOf = new Map<string, number>();
  names.forEach((n, i) => indexOf.set(n, i));
  const refs: number[][] = names.map(() => []);
  const own = new Map<string, Tree[]>();
  names.forEach((name, i) => {
    const t = termDefs.get(name);
    if (!t) return;
    const subtrees = iterSubtrees(t);
    own.set(name, subtrees);
    for (const exp of subtrees) {
      if (exp.data !== "value") continue;
      const item = exp.children[0]!;
      if (isSym(item) && !item.isTerm) throw new GrammarError(`Rules aren't allowed inside terminals (NonTerminal('${item.name}') in ${name})`);
      if (isSym(item)) {
        const v = termDefs.get(item.name);
        if (v === undefined) throw new GrammarError(`Terminal used but not defined: ${item.name}`);
        exp.children[0] = v!;
        refs[i]!.push(indexOf.get(item.name)!);
      }
    }
  });
  const cyclic = onCycle(refs);
  for (let i = 0; i < names.length; i++) {
    if (cyclic[i] && termDefs.get(names[i]!))
      throw new GrammarError(`Recursion in terminal '${names[i]}' (recursion is only allowed in rules, not terminals)`);
  }
  const depth = longestPaths(refs);
  for (let i = 0; i < names.length; i++) {
    if (depth[i]! > budget.limits.maxReferenceDepth)
      throw tooComplex(budget.limits, "maxReferenceDepth", depth[i]!, "terminal references in a chain", `terminal '${shortName(names[i]!)}'`);
  }
  return own;
}

/** 1 for each node on a cycle of `edges` (in an SCC of two or more, or with an edge to itself). */
function onCycle(edges: readonly number[][]): Uint8Array {
  const n = edges.length;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const cyclic = new Uint8Array(n);
  const sccStack: number[] = [];
  // Tarjan without recursion: frames of (node, next edge to follow).
  const frameNode: number[] = [];
  const frameEdge: number[] = [];
  let counter = 0;
  const enter = (v: number): void => {
    index[v] = low[v] = counter++;
    sccStack.push(v);
    onStack[v] = 1;
    frameNode.push(v);
    frameEdge.push(0);
  };
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    enter(root);
    while (frameNode.length > 0) {
      const top = frameNode.length - 1;
      const v = frameNode[top]!;
      const out = edges[v]!;
      if (frameEdge[top]! < out.length) {
        const w = out[frameEdge[top]!++]!;
        spend(1);
        if (w === v) cyclic[v] = 1;
        if (index[w] === -1) enter(w);
        else if (onStack[w]) low[v] = Math.min(low[v]!, index[w]!);
        continue;
      }
      frameNode.pop();
      frameEdge.pop();
      if (frameNode.length > 0) {
        const parent = frameNode[frameNode.length - 1]!;
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] !== index[v]) continue;
      // v roots an SCC: the stack holds it from v up.
      const from = sccStack.lastIndexOf(v);
      if (sccStack.length - from > 1) for (let k = from; k < sccStack.length; k++) cyclic[sccStack[k]!] = 1;
      for (let k = from; k < sccStack.length; k++) onStack[sccStack[k]!] = 0;
      sccStack.length = from;
    }
  }
  return cyclic;
}

/** Per node of an acyclic graph, the most edges on a path from it (0 for a sink). */
function longestPaths(edges: readonly number[][]): Int32Array {
  const n = edges.length;
  const depth = new Int32Array(n).fill(-1);
  const stack: number[] = [];
  for (let root = 0; root < n; root++) {
    if (depth[root] !== -1) continue;
    stack.push(root);
    while (stack.length > 0) {
      const v = stack[stack.length - 1]!;
      if (depth[v] === -2) {
        // Every successor is done: this is the node's second visit.
        let d = 0;
        for (const w of edges[v]!) d = Math.max(d, depth[w]! + 1);
        depth[v] = d;
        stack.pop();
        continue;
      }
      if (depth[v]! >= 0) { stack.pop(); continue; }
      depth[v] = -2;
      spend(edges[v]!.length + 1);
      for (const w of edges[v]!) if (depth[w] === -1) stack.push(w);
    }
  }
  return depth;
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

/**
 * Lark's "Terminals cannot be empty" test, `len(find_data('expansion')) == 1` and that one
 * empty, without listing the DAG: the first non-empty expansion met answers no, and a
 * terminal's tree begins with one.
 */
function isOneEmptyExpansion(root: Tree): boolean {
  const stamp = ++traversal;
  const stack: Tree[] = [root];
  root.visited = stamp;
  let found = 0;
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (t.data === "expansion" && (t.children.length > 0 || ++found > 1)) return false;
    eachTreeChild(t, (c) => {
      if (c.visited !== stamp) { c.visited = stamp; stack.push(c); }
    });
  }
  return found === 1;
}

/**
 * Grammar.compile's terminals: PrepareLiterals then TerminalTreeToPattern on each terminal's
 * tree, in definition order. Lark deep-copies each tree first (a DAG spelled out as a tree: every
 * referenced terminal copied again, exponentially for `A: B B`, `B: C C`…); here the passes run
 * on the DAG, each node once, which gives the same patterns, and the same first error:
 *   - literals are checked (and turned into patterns in place: the same result in every copy)
 *     once; an invalid one is reported for the first terminal whose DAG holds one, and the one
 *     Lark's reversed-BFS order meets first there (the deepest, then leftmost, occurrence);
 *   - patterns are made in post-order, as Lark's non-recursive transformer does, memoized;
 *   - before a terminal's pattern is built, its length and group nesting are measured on the DAG
 *     (PatternShape) and checked against maxPatternChars, maxTotalPatternChars and maxNesting.
 */
function compileTerminals(termDefs: readonly [string, Tree | null, number][], builder: GrammarBuilder, budget: CompileBudget): { terminals: TerminalDef[]; patternChars: number } {
  const limits = budget.limits;
  const invalid = new Map<Tree, GrammarError>();
  for (const [name, t] of termDefs) {
    if (!t) continue;
    const own = builder.ownSubtrees.get(name) ?? iterSubtrees(t);
    for (const x of own) {
      const kids = x.children;
      for (let j = 0; j < kids.length; j++) {
        const c = kids[j]!;
        if (!isTree(c) || (c.data !== "literal" && c.data !== "range") || invalid.has(c)) continue;
        try {
          kids[j] = prepareLiterals(c);
        } catch (e) {
          if (!(e instanceof GrammarError)) throw e;
          invalid.set(c, e);
        }
      }
    }
  }
  const deepestInvalid = new Map<Tree, { depth: number; literal: Tree } | null>();
  const shapes = new Map<Tree, PatternShape>();
  const built = new Map<Tree, Node>();
  const terminals: TerminalDef[] = [];
  let patternChars = 0;
  for (const [name, t, priority] of termDefs) {
    if (!t) continue;
    if (invalid.size > 0) {
      postOrder(t, (x) => deepestInvalid.has(x), (x) => {
        let best: { depth: number; literal: Tree } | null = null;
        for (const c of x.children) {
          if (!isTree(c)) continue;
          const below = deepestInvalid.get(c);
          const here = invalid.has(c) ? { depth: 1, literal: c } : below ? { depth: below.depth + 1, literal: below.literal } : null;
          // Strictly deeper only: on a tie the leftmost stays.
          if (here !== null && (best === null || here.depth > best.depth)) best = here;
        }
        deepestInvalid.set(x, best);
      });
      const found = deepestInvalid.get(t);
      if (found) throw invalid.get(found.literal)!;
    }
    postOrder(t, (x) => shapes.has(x), (x) => {
      const kids: PatternShape[] = [];
      for (const c of x.children) {
        if (isTree(c)) kids.push(shapes.get(c)!);
        else if (c.kind === "pattern") kids.push(shapeOfPattern(c));
      }
      shapes.set(x, shapeOfTree(x, kids));
    });
    const shape = shapes.get(t)!;
    if (shape.length > limits.maxPatternChars)
      throw tooComplex(limits, "maxPatternChars", shape.length, "characters in its pattern", `terminal '${shortName(name)}'`);
    if (patternChars + shape.length > limits.maxTotalPatternChars)
      throw tooComplex(limits, "maxTotalPatternChars", patternChars + shape.length, "characters in the terminals' patterns");
    if (shape.depth > limits.maxNesting) {
      const d = builder.definitions.get(name);
      throw nestingTooDeep(limits.maxNesting, `terminal '${shortName(name)}' (its references substituted): regexp groups`, d?.line, d?.column);
    }
    patternChars += shape.length;
    postOrder(t, (x) => built.has(x), (x) => {
      const kids = x.children.map((c) => (isTree(c) ? built.get(c)! : c));
      spend(kids.length);
      built.set(x, terminalTreeToPattern(x, kids, name));
    });
    terminals.push({ name, pattern: asPattern(built.get(t)!, name), priority });
  }
  return { terminals, patternChars };
}

export function compileGrammarText(text: string, start = "start", budget: CompileBudget = compileBudget()): CompiledGrammar {
  return withCompileBudget(budget, () => compileText(text, start, budget));
}

function compileText(text: string, start: string, budget: CompileBudget): CompiledGrammar {
  const limits = budget.limits;
  const builder = new GrammarBuilder(budget);
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
    if (t && isOneEmptyExpansion(t)) throw new GrammarError(`Terminals cannot be empty (${name})`);
  }
  const { terminals, patternChars } = compileTerminals(termDefs, builder, budget);
  let totalPatternChars = patternChars;

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
      totalPatternChars += patternToRegexp(p).length;
      if (totalPatternChars > limits.maxTotalPatternChars)
        throw tooComplex(limits, "maxTotalPatternChars", totalPatternChars, "characters in the terminals' patterns");
      const td: TerminalDef = { name: termName, pattern: p, priority: 0 };
      termReverse.set(keyOf(p), td);
      terminals.push(td);
    }
    return { kind: "sym", isTerm: true, name: termName, filterOut: keepAllTokensNow ? false : p.type === "str" };
  };

  // Templates. Instances are rules (so they count against maxRules), and instances of templates
  // passed instances nest their names (`a{b{c{x}}}`), so names are bounded too; a body copied
  // for each instance counts its symbols, as the rules it becomes will.
  const createdTemplates = new Set<string>();
  const templateDefs = new Map<string, [string, string[], Tree, RuleOptions]>();
  for (const def of ruleDefs) if (!templateDefs.has(def[0])) templateDefs.set(def[0], def);
  const bodySizes = new Map<string, number>();
  let copiedSymbols = 0;
  const applyTemplate = (t: Tree): Node => {
    const name = (t.children[0] as Sym).name;
    const args = t.children.slice(1);
    const argNames = args.map((a) => {
      if (!isSym(a)) throw new GrammarError(`Template arguments must be symbols or literals (in ${name})`);
      return a.name;
    });
    let nameLength = name.length + args.length + 1;
    for (const a of argNames) nameLength += a.length;
    if (nameLength > limits.maxNameChars)
      throw tooComplex(limits, "maxNameChars", nameLength, "characters in the name of an instance", `template '${shortName(name)}'`);
    const resultName = `${name}{${argNames.join(",")}}`;
    if (!createdTemplates.has(resultName)) {
      if (ruleDefs.length >= limits.maxRules)
        throw tooComplex(limits, "maxRules", ruleDefs.length + 1, "rules with the template instances", `template '${shortName(name)}'`);
      createdTemplates.add(resultName);
      const def = templateDefs.get(name)!;
      let size = bodySizes.get(name);
      if (size === undefined) bodySizes.set(name, (size = spelledSize(def[2])));
      copiedSymbols += size;
      if (copiedSymbols > limits.maxRuleSymbols)
        throw tooComplex(limits, "maxRuleSymbols", copiedSymbols, "symbols in the template instances' bodies", `template '${shortName(name)}'`);
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
  /**
   * Refuses an EBNF operand (or what a `~` repeat spells out) larger than maxRuleSymbols before
   * it is keyed, measured or copied: nested repeats spell exponentially much from a DAG.
   */
  const boundedOperand = (node: Node, spelled: number): void => {
    if (spelled > limits.maxRuleSymbols) throw tooComplex(limits, "maxRuleSymbols", spelled, "symbols spelled out by an EBNF operator", `rule '${shortName(prefix)}'`);
    spend(spelled);
  };
  const addRecurseRule = (type: string, expr: Node): Sym => {
    boundedOperand(expr, spelledSize(expr));
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
        const size = spelledSize(rule);
        // Below REPEAT_BREAK_THRESHOLD the repeat is spelled out (mn + … + mx copies), above it
        // rules of at most SMALL_FACTOR_THRESHOLD copies each are made, keyed by the operand.
        boundedOperand(rule, mx < REPEAT_BREAK_THRESHOLD ? size * ((mn + mx) * (mx - mn + 1)) / 2 : size);
        return generateRepeats(rule, mn, mx);
      }
    }
    if (t.data === "maybe") {
      const rule = t.children[0]!;
      boundedOperand(rule, spelledSize(rule));
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

  // Simplify + compile to BNF rules. Alternatives are distributed out ([a] [b] … gives 2^n), so
  // each product is counted before it is made (see alternatives).
  const compiled: (BnfRule & { emptyOnly?: boolean })[] = [];
  let ruleSymbols = 0;
  for (const [name, t, options] of rules) {
    const alts = alternatives(t, { memo: new Map(), limits, rule: name });
    let symbols = 0;
    for (const alt of alts) symbols += alt.syms.length;
    if (compiled.length + alts.length > limits.maxRules) throw tooComplex(limits, "maxRules", compiled.length + alts.length, "BNF rules after expansion");
    ruleSymbols += symbols;
    if (ruleSymbols > limits.maxRuleSymbols) throw tooComplex(limits, "maxRuleSymbols", ruleSymbols, "symbols in the BNF rules after expansion");
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

  finalRules = withoutUnusedRules(finalRules, start, termSet);
  // Unused terminals
  const usedTerms = new Set<string>();
  for (const r of finalRules) for (const s of r.expansion) if (termSet.has(s)) usedTerms.add(s);
  const ignore = builder.ignoreNames;
  const finalTerminals = terminals.filter((t) => usedTerms.has(t.name) || ignore.includes(t.name));
  if (finalTerminals.length > limits.maxTerminals) throw tooComplex(limits, "maxTerminals", finalTerminals.length, "terminals");
  return { terminals: finalTerminals, rules: finalRules, ignore: [...ignore], start };
}

/**
 * Lark's removal of unused rules: rules whose origin no rule of another origin uses go, again
 * and again until none goes (a cycle of unused rules stays, as in Lark). Lark rescans all rules
 * per round, quadratic in a chain; peeling origins as their last user goes gives the same rules.
 */
function withoutUnusedRules(rules: BnfRule[], start: string, termSet: ReadonlySet<string>): BnfRule[] {
  const uses = new Map<string, number>();
  const byOrigin = new Map<string, BnfRule[]>();
  for (const r of rules) {
    let list = byOrigin.get(r.origin);
    if (!list) byOrigin.set(r.origin, (list = []));
    list.push(r);
    for (const s of r.expansion) if (s !== r.origin && !termSet.has(s)) uses.set(s, (uses.get(s) ?? 0) + 1);
  }
  const removed = new Set<string>();
  const queue: string[] = [];
  for (const origin of byOrigin.keys()) if (origin !== start && !uses.get(origin)) queue.push(origin);
  while (queue.length > 0) {
    const origin = queue.pop()!;
    removed.add(origin);
    for (const r of byOrigin.get(origin)!) {
      spend(r.expansion.length);
      for (const s of r.expansion) {
        if (s === r.origin || termSet.has(s)) continue;
        const n = uses.get(s)! - 1;
        uses.set(s, n);
        if (n === 0 && s !== start && byOrigin.has(s) && !removed.has(s)) queue.push(s);
      }
    }
  }
  return removed.size === 0 ? rules : rules.filter((r) => !removed.has(r.origin));
}

/** Saturated count arithmetic: past this, a count only needs to stay above every limit. */
const COUNT_CAP = 1e15;
const spelledMemo = new WeakMap<Tree, number>();

/**
 * How many nodes `n` spells as a tree (a DAG's shared subtrees counted at each use), memoized;
 * saturates at COUNT_CAP. Only asked of finished trees (EBNF operands, template bodies), which
 * are not changed afterwards.
 */
function spelledSize(n: Node): number {
  if (!isTree(n)) return 1;
  const known = spelledMemo.get(n);
  if (known !== undefined) return known;
  let size = 1;
  for (const c of n.children) size = Math.min(COUNT_CAP, size + spelledSize(c));
  spelledMemo.set(n, size);
  return size;
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

interface AlternativesContext {
  /** Per subtree: a rule's tree is a DAG after `~` repeats (the lists are never mutated). */
  readonly memo: Map<Tree, Alt[]>;
  readonly limits: GrammarLimits;
  readonly rule: string;
}

/**
 * SimplifyRule_Visitor + RuleTreeToText: the rule's alternatives, distributed and deduplicated.
 * An expansion's alternatives are the product of its children's, so each product is measured
 * (alternatives, and symbols in them) against maxRules and maxRuleSymbols before it is made.
 */
function alternatives(n: Node, ctx: AlternativesContext): Alt[] {
  if (!isTree(n)) return [{ syms: [n] }];
  let alts = ctx.memo.get(n);
  if (alts === undefined) {
    alts = alternativesOf(n, ctx);
    ctx.memo.set(n, alts);
  }
  return alts;
}

function alternativesOf(n: Tree, ctx: AlternativesContext): Alt[] {
  const dedup = (alts: Alt[]): Alt[] => {
    const seen = new Set<string>();
    return alts.filter((a) => {
      const k = (a.alias ?? "") + "|" + a.syms.map(keyOf).join(",");
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  };
  switch (n.data) {
    case "expansions": return dedup(n.children.flatMap((c) => alternatives(c, ctx)));
    case "expansion": {
      let acc: Alt[] = [{ syms: [] }];
      let accSymbols = 0;
      for (const c of n.children) {
        const opts = alternatives(c, ctx);
        let optSymbols = 0;
        for (const o of opts) optSymbols += o.syms.length;
        const count = acc.length * opts.length;
        const symbols = accSymbols * opts.length + optSymbols * acc.length;
        if (count > ctx.limits.maxRules) throw tooComplex(ctx.limits, "maxRules", count, "alternatives after expansion", `rule '${shortName(ctx.rule)}'`);
        if (symbols > ctx.limits.maxRuleSymbols) throw tooComplex(ctx.limits, "maxRuleSymbols", symbols, "symbols in its alternatives after expansion", `rule '${shortName(ctx.rule)}'`);
        spend(count + symbols);
        accSymbols = symbols;
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
      const inner = alternatives(n.children[0]!, ctx);
      const name = (n.children[1] as Sym).name;
      return inner.map((a) => {
        if (a.alias) throw new GrammarError("Double alias not allowed");
        return { syms: a.syms, alias: name };
      });
    }
  }
  throw new GrammarError(`Unexpected ${n.data} in rule`);
}


