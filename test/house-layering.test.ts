// The house's layering, as DESIGN.md states it: every import in src/ goes to the same stage or an
// earlier one in DESIGN.md's order (support/ to support/ only, and reachable from every stage),
// another stage only through its door (index.ts), and no module imports itself back, not even for
// a type (a type shared by two modules lives in a third, below both).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "./support/paths.js";

const SRC = join(REPO_ROOT, "src");

/** The stage order from DESIGN.md's first code block (`regex/ → grammar/ → … → cli.ts`). */
function stageOrder(): string[] {
  const design = readFileSync(join(REPO_ROOT, "DESIGN.md"), "utf8");
  const block = /```\n([^`]*→[^`]*)\n```/.exec(design);
  assert.ok(block, "DESIGN.md has no stage order block");
  return block[1]!.split("→").map((s) => s.trim().replace(/\/$/, ""));
}

interface ImportEdge {
  from: string; // file, relative to src/
  to: string; // file, relative to src/
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Every relative import, export-from and dynamic import() of a file, resolved to a src/ file. */
function importsOf(file: string): ImportEdge[] {
  const text = readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const edges: ImportEdge[] = [];
  const add = (specifier: string): void => {
    if (!specifier.startsWith(".")) return;
    const target = resolve(dirname(file), specifier.replace(/\.js$/, ".ts"));
    edges.push({ from: relative(SRC, file), to: relative(SRC, target) });
  };
  // Every import, export-from and dynamic import(), type-only ones included.
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      add(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg)) add(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return edges;
}

/** The stage of a file relative to src/: its folder, or the file itself at the top level. */
const stageOf = (file: string): string => (file.includes("/") ? file.split("/")[0]! : file);

const order = stageOrder();
const edges = sourceFiles(SRC).flatMap(importsOf);

test("DESIGN.md's order names every stage folder and top-level file of src/ (and nothing else)", () => {
  const present = new Set(sourceFiles(SRC).map((f) => stageOf(relative(SRC, f))));
  present.delete("support");
  assert.deepEqual([...present].sort(), [...order].sort());
});

test("every import goes to the same stage, an earlier one, or support/; support/ imports only support/", () => {
  const wrong: string[] = [];
  for (const e of edges) {
    const from = stageOf(e.from);
    const to = stageOf(e.to);
    if (from === to) continue;
    if (from === "support") wrong.push(`${e.from} → ${e.to}: support/ imports another stage`);
    else if (to === "support") continue;
    else if (!order.includes(to) || order.indexOf(to) > order.indexOf(from)) wrong.push(`${e.from} → ${e.to}: ${to} comes after ${from}`);
  }
  assert.deepEqual(wrong, []);
});

test("another stage is reached only through its door (index.ts)", () => {
  const wrong = edges
    .filter((e) => stageOf(e.from) !== stageOf(e.to) && e.to.includes("/") && !e.to.endsWith("/index.ts"))
    .map((e) => `${e.from} → ${e.to}`);
  assert.deepEqual(wrong, []);
});

test("a door holds re-exports and a module comment, no logic", () => {
  const wrong: string[] = [];
  for (const file of sourceFiles(SRC).filter((f) => f.endsWith("/index.ts") && relative(SRC, f).includes("/"))) {
    const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
    for (const statement of sf.statements) {
      if (!ts.isExportDeclaration(statement) || statement.moduleSpecifier === undefined)
        wrong.push(`${relative(SRC, file)}: ${statement.getText().split("\n")[0]}`);
    }
    if (!/^\/\*\*/.test(sf.getFullText().trimStart())) wrong.push(`${relative(SRC, file)}: no module comment`);
  }
  assert.deepEqual(wrong, []);
});

test("no import cycle, type-only imports included (shared types live below their users)", () => {
  const graph = new Map<string, string[]>();
  for (const e of edges) {
    if (!graph.has(e.from)) graph.set(e.from, []);
    graph.get(e.from)!.push(e.to);
  }
  // Tarjan's strongly connected components: a component of two or more modules is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  assert.deepEqual(cycles, []);
});
