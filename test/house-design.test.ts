// DESIGN.md stays a map that can be read in minutes and that is true of the tree: at most 300
// lines, and every repository path it (or a docs/ page) names exists. A path is named in prose,
// in backticks, in a code block or as a link target: `src/generate/scheduler.ts`, a stage-relative
// `generate/scheduler.ts` or `dfa/budget.ts` (resolved under src/ and under each stage), a folder
// ending in `/`, or a bare file name such as `scheduler.ts` (which must exist somewhere in the
// repository). Paths outside the repository (a `../` path that leaves it) are not checked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { REPO_ROOT } from "./support/paths.js";

const DESIGN = join(REPO_ROOT, "DESIGN.md");
const DOCS = join(REPO_ROOT, "docs");
const MAX_DESIGN_LINES = 300;

/** Extensions that make a word a file name. */
const EXTENSIONS = "ts|js|mjs|md|json|cfg|yaml|yml|cc|h|html|css|py|sh";
/** Roots that make a slashed word a path even without an extension or a trailing slash. */
const ROOTS = ["src/", "test/", "docs/", "deploy/", "native/", "bench/", "scripts/", ".ci/"];
/** Names of files outside the repository that the pages cite (Lark's sources, TypeScript's lib). */
const EXTERNAL_NAMES = new Set(["load_grammar.py", "lib.es5.d.ts"]);

// A word of path characters, not glued to another path character before it, nor followed by a
// path character or a placeholder (`test/<file>.test.ts`, `src/dashboard/*.js`).
const WORD = /(?<![\w./@<>*{}$-])(?:\.{1,2}\/)*[\w.@-]+(?:\/[\w.@-]+)*\/?(?![\w/<>*{}$-])/g;
const FILE_NAME = new RegExp(`\\.(?:${EXTENSIONS})$`);

/** The repository paths a text names (as written, deduplicated, in order). */
function namedPaths(text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(WORD)) {
    const word = match[0].replace(/\.$/, ""); // a sentence's full stop
    const slashed = word.includes("/");
    const isPath = FILE_NAME.test(word) || (slashed && (word.endsWith("/") || ROOTS.some((root) => word.startsWith(root))));
    // Not a path: a number (`1/2`), a bare extension (`.js`), a word without letters.
    if (!isPath || /^\d/.test(word) || /^\.\w+$/.test(word) || !/[a-z]/i.test(word)) continue;
    found.add(word);
  }
  return [...found];
}

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === ".git" || name === ".scratch" || name === "dist") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) filesUnder(path, out);
    else out.push(path);
  }
  return out;
}

const stageDirs = readdirSync(join(REPO_ROOT, "src"))
  .map((name) => join(REPO_ROOT, "src", name))
  .filter((path) => statSync(path).isDirectory());
const baseNames = new Set(filesUnder(REPO_ROOT).map((path) => path.slice(path.lastIndexOf(sep) + 1)));

/**
 * Whether a path a page in `pageDir` names exists: relative to the page, the repository, src/, or
 * any stage (`dfa/budget.ts` is src/constraint/dfa/budget.ts); a bare file name anywhere in the
 * repository. Null: it points outside the repository, so it is not checked.
 */
function pathExists(word: string, pageDir: string): boolean | null {
  if (word.startsWith("../")) {
    const target = resolve(pageDir, word);
    if (relative(REPO_ROOT, target).startsWith("..")) return null;
    return existsSync(target);
  }
  if (!word.includes("/")) return EXTERNAL_NAMES.has(word) || baseNames.has(word);
  const bases = [pageDir, REPO_ROOT, join(REPO_ROOT, "src"), ...stageDirs];
  return bases.some((base) => existsSync(join(base, word)));
}

/** The paths a page names that do not exist. */
function missingIn(text: string, pageDir: string): string[] {
  return namedPaths(text).filter((word) => pathExists(word, pageDir) === false);
}

const pages = [
  DESIGN,
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith(".md"))
    .map((name) => join(DOCS, name)),
];

test(`DESIGN.md is at most ${MAX_DESIGN_LINES} lines`, () => {
  const lines = readFileSync(DESIGN, "utf8").replace(/\n$/, "").split("\n").length;
  assert.ok(lines <= MAX_DESIGN_LINES, `DESIGN.md has ${lines} lines; move the long explanations to docs/`);
});

test("the extractor finds paths in prose, backticks and links, and reports a missing one", () => {
  const sample = [
    "The loop (`generate/scheduler.ts`, `src/compile/cache.ts`) reads `dfa/budget.ts` and lark/ files;",
    "see [threads](docs/threads.md), `test/house-layering.test.ts` and `scheduler.ts`.",
    "Not paths: Hermes/Qwen, stdin/stdout, `allOf`/`$ref`, v8.serialize, runtime.embed, 1/2.",
    "Outside: `../sibling/models`. Placeholders: `test/<file>.test.ts`, `src/dashboard/*.js`.",
    "Missing: `src/generate/constraint-cache.ts`, `compile/nope.ts`, `compile-task.ts`, `nowhere/`.",
  ].join("\n");
  const named = namedPaths(sample);
  for (const word of ["generate/scheduler.ts", "src/compile/cache.ts", "dfa/budget.ts", "lark/", "docs/threads.md", "scheduler.ts"])
    assert.ok(named.includes(word), `${word} not found in ${JSON.stringify(named)}`);
  for (const word of ["Hermes/Qwen", "stdin/stdout", "v8.serialize", "runtime.embed", "1/2"])
    assert.ok(!named.includes(word), `${word} taken for a path`);
  assert.equal(pathExists("../sibling/models", REPO_ROOT), null);
  assert.deepEqual(missingIn(sample, REPO_ROOT).sort(), [
    "compile-task.ts",
    "compile/nope.ts",
    "nowhere/",
    "src/generate/constraint-cache.ts",
  ]);
});

for (const page of pages) {
  const name = relative(REPO_ROOT, page);
  test(`every path ${name} names exists`, () => {
    const text = readFileSync(page, "utf8");
    const named = namedPaths(text);
    // Not vacuous: the map names dozens of files, each docs/ page several.
    assert.ok(named.length >= (page === DESIGN ? 50 : 5), `${name}: only ${named.length} paths found`);
    assert.deepEqual(missingIn(text, dirname(page)), [], `${name} names paths that do not exist`);
  });
}

test("DESIGN.md links every docs/ page", () => {
  const design = readFileSync(DESIGN, "utf8");
  for (const page of pages.slice(1))
    assert.ok(design.includes(`(docs/${relative(DOCS, page)})`), `DESIGN.md does not link ${relative(REPO_ROOT, page)}`);
});
