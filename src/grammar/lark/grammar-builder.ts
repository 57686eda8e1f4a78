// Lark's GrammarBuilder (load_grammar.py 1080–1381): grammar text → definitions, with %import
// (Lark's common library only), %override, %extend, %ignore and validation; `build()` hands them
// to Grammar (grammar.ts). With what it uses: PrepareGrammar (902–907), the name mangling of
// imports (_get_mangle 1024–1036, _mangle_definition_tree 1038–1047), _make_rule_tuple
// (1049–1070) and Definition (1073–1078).

import { COMMON_LARK } from "../common-lark.js";
import { GrammarError } from "../errors.js";
import { parseLarkSyntax, type Sym, type Token, type Tree } from "../lark-syntax.js";
import type { CompileBudget } from "../limits.js";
import type { Definition, RuleDef, RuleOptions, TermDef } from "./definitions.js";
import { LarkGrammar } from "./grammar.js";
import { resolveTermReferences } from "./resolve-term-references.js";
import { deepCopy, findData, isSym, isTok, isTree, iterSubtrees, transformInPlace, usedSymbols } from "./tree.js";

/** An import's renaming of the names it brings in (null: the grammar's own names). */
type Mangle = ((s: string) => string) | null;

/** _mangle_definition_tree: a copy of `t` with its symbols renamed. */
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

/**
 * The grammar's %import statements (_unpack_import, load_grammar.py 1175–1212, as load_grammar
 * groups them): per imported grammar, its names and what each is called here.
 */
function unpackImports(root: Tree): Map<string, Map<string, string>> {
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
  return imports;
}

/**
 * Lark's GrammarBuilder: `loadGrammar` per grammar text (imports load the common library into a
 * builder of their own), `build` validates and hands the definitions to Grammar.
 */
export class GrammarBuilder {
  definitions = new Map<string, Definition>();
  ignoreNames: string[] = [];
  /** Each terminal's own subtrees, before references were substituted (resolveTermReferences). */
  ownSubtrees = new Map<string, Tree[]>();

  constructor(private readonly budget: CompileBudget) {}

  /** _grammar_error: `{name}`, `{type}`, `{Type}` (then `{name2}`…) filled in for each name. */
  private error(isTerm: boolean, msg: string, ...names: string[]): never {
    let m = msg;
    names.forEach((name, i) => {
      const post = i === 0 ? "" : String(i + 1);
      const type = isTerm ? "terminal" : "rule";
      m = m
        .split(`{name${post}}`)
        .join(name)
        .split(`{type${post}}`)
        .join(type)
        .split(`{Type${post}}`)
        .join(type[0]!.toUpperCase() + type.slice(1));
    });
    throw new GrammarError(m);
  }

  private define(
    name: string,
    isTerm: boolean,
    exp: Tree | null,
    params: string[],
    options: RuleOptions | number,
    override = false,
    at?: Token,
  ): void {
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
          if (isSym(v) && v.isTerm) {
            this.ignoreNames.push(v.name);
            return;
          }
        }
      }
    }
    const name = `__IGNORE_${this.ignoreNames.length}`;
    this.ignoreNames.push(name);
    this.definitions.set(name, { isTerm: true, tree: exp, params: [], options: 0 });
  }

  /** _unpack_definition with _make_rule_tuple: a `rule` or `term` statement, its names mangled. */
  private unpackDefinition(
    t: Tree,
    mangle: Mangle,
  ): { name: string; isTerm: boolean; exp: Tree; params: string[]; opts: RuleOptions | number; at: Token } {
    let name: string, params: string[], exp: Tree, opts: RuleOptions | number, isTerm: boolean, at: Token;
    if (t.data === "rule") {
      const [mods, nameTok, paramsTree, prio, expansions] = t.children as [Tree, Token, Tree, Tree, Tree];
      name = nameTok.value;
      at = nameTok;
      let keepAllTokens = false,
        expand1 = false;
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
    const imports = unpackImports(root);
    for (const [dotted, aliases] of imports) this.doImport(dotted, aliases, mangle);

    for (const stmt of root.children as Tree[]) {
      switch (stmt.data) {
        case "term":
        case "rule": {
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

  /** do_import: the common library's definitions that `aliases` need, under their new names. */
  private doImport(dotted: string, aliases: Map<string, string>, baseMangle: Mangle): void {
    if (dotted !== "common") throw new GrammarError(`%import ${dotted}: only Lark's common library (%import common.NAME) can be imported`);
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

  /** _remove_unused: only the definitions `used` reaches through rules stay. */
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

  /** validate (load_grammar.py 1337–1367): template parameters, template uses and symbols all defined. */
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
            this.error(
              d.isTerm,
              `Wrong number of template arguments used for {name} (expected ${td!.params.length}, got ${args.length}) (in {type2} {name2})`,
              sym,
              name,
            );
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

  /** build: the validated definitions as Grammar's term_defs and rule_defs, in definition order. */
  build(): LarkGrammar {
    this.validate();
    const termDefs: TermDef[] = [];
    const ruleDefs: RuleDef[] = [];
    for (const [name, d] of this.definitions) {
      if (d.isTerm) termDefs.push([name, d.tree, d.options as number]);
      else ruleDefs.push([name, d.params, d.tree!, d.options as RuleOptions]);
    }
    return new LarkGrammar(ruleDefs, termDefs, this.ignoreNames, this.ownSubtrees, this.definitions);
  }
}
