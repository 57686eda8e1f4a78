// Lark's ApplyTemplates with its _ReplaceSymbols (load_grammar.py 494–532): a template used with
// arguments becomes a rule of its own, `name{arg,…}`, its body a copy of the template's with the
// parameters replaced; the new rule goes at the end of the rule definitions, which Grammar.compile
// is still walking. Instances are rules (so they count against maxRules), and instances of
// templates passed instances nest their names (`a{b{c{x}}}`), so names are bounded too; a body
// copied for each instance counts its symbols, as the rules it becomes will.

import { GrammarError } from "../errors.js";
import { tree, type Node, type Sym, type Tree } from "../lark-syntax.js";
import { shortName, tooComplex, type GrammarLimits } from "../limits.js";
import type { RuleDef } from "./definitions.js";
import { deepCopy, isSym, spelledSize, transformInPlace } from "./tree.js";

export class ApplyTemplates {
  private readonly createdTemplates = new Set<string>();
  /** Each template by name (the first definition of a name: Lark's `,=` finds that one). */
  private readonly templateDefs = new Map<string, RuleDef>();
  /** Symbols a copy of each template's body spells (spelledSize), measured once per template. */
  private readonly bodySizes = new Map<string, number>();
  /** Symbols in every instance's body so far (against maxRuleSymbols). */
  private copiedSymbols = 0;

  /** `ruleDefs`: the grammar's rule definitions, which the instances are appended to. */
  constructor(
    private readonly ruleDefs: RuleDef[],
    private readonly limits: GrammarLimits,
  ) {
    for (const def of ruleDefs) if (!this.templateDefs.has(def[0])) this.templateDefs.set(def[0], def);
  }

  /** ApplyTemplates.template_usage: the instance's rule (made on first use) as a symbol. */
  templateUsage(t: Tree): Node {
    const limits = this.limits;
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
    if (!this.createdTemplates.has(resultName)) {
      if (this.ruleDefs.length >= limits.maxRules)
        throw tooComplex(
          limits,
          "maxRules",
          this.ruleDefs.length + 1,
          "rules with the template instances",
          `template '${shortName(name)}'`,
        );
      this.createdTemplates.add(resultName);
      const def = this.templateDefs.get(name)!;
      let size = this.bodySizes.get(name);
      if (size === undefined) this.bodySizes.set(name, (size = spelledSize(def[2])));
      this.copiedSymbols += size;
      if (this.copiedSymbols > limits.maxRuleSymbols)
        throw tooComplex(
          limits,
          "maxRuleSymbols",
          this.copiedSymbols,
          "symbols in the template instances' bodies",
          `template '${shortName(name)}'`,
        );
      const body = replaceSymbols(deepCopy(def[2]) as Tree, new Map<string, Node>(def[1].map((p, i) => [p, args[i]!])));
      this.ruleDefs.push([resultName, [], body, { ...def[3] }]);
    }
    return { kind: "sym", isTerm: false, name: resultName } satisfies Sym;
  }
}

/** _ReplaceSymbols: in `body` (in place), each parameter in `names` replaced by its argument. */
function replaceSymbols(body: Tree, names: ReadonlyMap<string, Node>): Tree {
  transformInPlace(body, (x) => {
    if (x.data === "value" && x.children.length === 1 && isSym(x.children[0]) && names.has((x.children[0] as Sym).name))
      return names.get((x.children[0] as Sym).name)!;
    if (x.data === "template_usage") {
      const tn = (x.children[0] as Sym).name;
      if (names.has(tn)) return tree("template_usage", [names.get(tn)!, ...x.children.slice(1)]);
    }
    return x;
  });
  return body;
}
