// The test tiers of test/tiers.json: every test/*.test.ts is in exactly one tier, `npm run test:<tier>`
// runs each, `npm test` runs every file, and no file is in a lighter tier than what it uses. What a
// file uses is read from its imports (followed through test/support/ and scripts/) and a few
// literal paths: the unit tier, the quick inner loop, must need nothing beyond Node and node_modules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { REPO_ROOT } from "./support/paths.js";

const TIERS = ["unit", "oracle", "services", "browser"] as const;
type Tier = (typeof TIERS)[number];
const rank = (tier: Tier): number => TIERS.indexOf(tier);
const SELF = join(REPO_ROOT, "test", "house-tiers.test.ts");

interface TierEntry {
  needs: string;
  files: string[];
}
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "test", "tiers.json"), "utf8")) as Record<string, unknown>;
const tierOf = (name: Tier): TierEntry => manifest[name] as TierEntry;
const testFiles = readdirSync(join(REPO_ROOT, "test"))
  .filter((name) => name.endsWith(".test.ts"))
  .sort();

/** A dependency that puts a file in a tier above unit. */
interface Need {
  tier: Tier;
  what: string;
}

/** Helpers named by path (relative to the repository): a whole module, or some of its exports. */
const MODULE_NEEDS: Record<string, Need> = {
  "test/support/postgres-server.ts": { tier: "services", what: "a PostgreSQL server" },
  "test/support/redis-server.ts": { tier: "services", what: "a redis-server" },
  "test/support/child-process.ts": { tier: "services", what: "throwaway server processes (HAProxy, PostgreSQL, Redis)" },
  "test/support/replica-process.ts": { tier: "services", what: "the service in a child process" },
  "test/support/fake-engine-module.ts": { tier: "services", what: "the service in a child process" },
  "test/support/json-schema-oracle.ts": { tier: "oracle", what: "Python's jsonschema (/usr/bin/python3)" },
  "test/support/json-schema-suite.ts": { tier: "oracle", what: "the JSON Schema Test Suite in ../shared/jsonschema" },
  "test/support/json-fuzz.ts": { tier: "oracle", what: "MaskBench's schemas in ../shared/jsonschema" },
};
const MODULE_PREFIX_NEEDS: Record<string, Need> = {
  "scripts/synth-model/": { tier: "services", what: "synthetic models built on the vocabularies of ../shared/models" },
};
/** Modules some of whose exports are fine anywhere; `follow`: its own imports are read as well. */
const EXPORT_NEEDS: Record<string, { free: readonly string[]; needs: (name: string) => Need | null; follow: boolean }> = {
  "test/support/paths.ts": {
    free: ["REPO_ROOT"],
    needs: (name) =>
      name === "ORACLE_PYTHON"
        ? { tier: "oracle", what: "the Python oracles (ORACLE_PYTHON)" }
        : { tier: "services", what: `model files in ../shared/models (${name})` },
    follow: false,
  },
  "test/support/generate-harness.ts": {
    free: ["seededRandom", "mix32"],
    needs: (name) => ({ tier: "services", what: `the generation harness's real models and Python re oracle (${name})` }),
    follow: false,
  },
  "test/support/service.ts": {
    free: [],
    needs: (name) => (name === "realEngineApp" ? { tier: "services", what: "a real model (realEngineApp)" } : null),
    follow: true,
  },
};
const PACKAGE_NEEDS: Record<string, Need> = {
  "playwright-core": { tier: "browser", what: "a browser (playwright-core)" },
  playwright: { tier: "browser", what: "a browser (playwright)" },
};
/** Paths in the source's string literals, one literal a line (`resolve(ROOT, "..", "shared")` → "..\nshared"). */
const TEXT_NEEDS: { pattern: RegExp; need: Need }[] = [
  { pattern: /\/usr\/bin\/chromium/, need: { tier: "browser", what: "/usr/bin/chromium" } },
  { pattern: /\.\.\/shared\/models|^\.\.\nshared\nmodels$/m, need: { tier: "services", what: "../shared/models" } },
  { pattern: /\/usr\/lib\/postgresql|^\/usr\/bin\/redis-server$|^haproxy$/m, need: { tier: "services", what: "a server program" } },
  { pattern: /^(\/usr\/bin\/)?python3$/m, need: { tier: "oracle", what: "/usr/bin/python3" } },
  { pattern: /\.\.\/shared\/|^\.\.\nshared$/m, need: { tier: "oracle", what: "a corpus in ../shared" } },
];

interface Import {
  specifier: string;
  /** Value names imported; "*" for a namespace, default or side-effect import. */
  names: string[];
}

function importsOf(path: string): Import[] {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, false);
  const out: Import[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      if (clause?.isTypeOnly) return;
      const names: string[] = [];
      if (!clause || clause.name) names.push("*");
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.push("*");
      if (bindings && ts.isNamedImports(bindings)) {
        for (const e of bindings.elements) if (!e.isTypeOnly) names.push((e.propertyName ?? e.name).text);
      }
      if (names.length > 0) out.push({ specifier: node.moduleSpecifier.text, names });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && !node.isTypeOnly) {
      out.push({ specifier: node.moduleSpecifier.text, names: ["*"] });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push({ specifier: arg.text, names: ["*"] });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The file's string literals (template parts included), one a line. */
function stringsOf(path: string): string {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) out.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out.join("\n");
}

/** Everything above unit that a test file uses, with the chain of files that leads to it. */
function needsOf(testFile: string): { need: Need; via: string }[] {
  const found: { need: Need; via: string }[] = [];
  const seen = new Set<string>();
  const walk = (path: string, chain: string): void => {
    if (seen.has(path)) return;
    seen.add(path);
    // This file names those paths in its own messages.
    const strings = path === SELF ? "" : stringsOf(path);
    for (const { pattern, need } of TEXT_NEEDS) if (pattern.test(strings)) found.push({ need, via: chain });
    for (const { specifier, names } of importsOf(path)) {
      const pkg = PACKAGE_NEEDS[specifier];
      if (pkg) found.push({ need: pkg, via: `${chain} → ${specifier}` });
      if (!specifier.startsWith(".")) continue;
      const target = resolve(dirname(path), specifier.replace(/\.js$/, ".ts"));
      const rel = relative(REPO_ROOT, target);
      // Only the tests' own helpers and scripts/ are followed: src/ is what the tests test.
      if (!rel.startsWith("test/") && !rel.startsWith("scripts/")) continue;
      const via = `${chain} → ${rel}`;
      const whole = MODULE_NEEDS[rel] ?? Object.entries(MODULE_PREFIX_NEEDS).find(([prefix]) => rel.startsWith(prefix))?.[1];
      if (whole) {
        found.push({ need: whole, via });
        continue;
      }
      const some = EXPORT_NEEDS[rel];
      if (some) {
        for (const name of names) {
          if (some.free.includes(name)) continue;
          const need = name === "*" ? { tier: "services" as const, what: `all of ${rel}` } : some.needs(name);
          if (need) found.push({ need, via });
        }
        if (!some.follow) continue;
      }
      if (existsSync(target)) walk(target, via);
    }
  };
  walk(join(REPO_ROOT, "test", testFile), `test/${testFile}`);
  return found;
}

function lightestTier(testFile: string): { tier: Tier; because: string[] } {
  const needs = needsOf(testFile);
  const tier = needs.reduce<Tier>((t, n) => (rank(n.need.tier) > rank(t) ? n.need.tier : t), "unit");
  return { tier, because: needs.filter((n) => n.need.tier === tier).map((n) => `${n.need.what} (${n.via})`) };
}

const howToChoose = TIERS.map((t) => `  "${t}": ${tierOf(t).needs}`).join("\n");

test("test/tiers.json has the four tiers, each a list of test file names", () => {
  assert.deepEqual(
    Object.keys(manifest).filter((k) => k !== "//"),
    [...TIERS],
  );
  for (const tier of TIERS) {
    const { needs, files } = tierOf(tier);
    assert.equal(typeof needs, "string", `${tier}.needs`);
    assert.ok(Array.isArray(files), `${tier}.files`);
    for (const name of files)
      assert.match(name, /^[a-z0-9-]+\.test\.ts$/, `test/tiers.json ${tier}: a file name in test/, such as "regex-api.test.ts"`);
    assert.equal(new Set(files).size, files.length, `test/tiers.json ${tier} lists a file twice`);
  }
});

test("every test/*.test.ts is in exactly one tier", (t) => {
  const problems: string[] = [];
  for (const name of testFiles) {
    const tiers = TIERS.filter((tier) => tierOf(tier).files.includes(name));
    if (tiers.length === 1) continue;
    if (tiers.length > 1) {
      problems.push(`test/${name} is in ${tiers.map((x) => `"${x}"`).join(" and ")}: keep it in one of them in test/tiers.json.`);
      continue;
    }
    const { tier, because } = lightestTier(name);
    problems.push(
      `test/${name} is in no tier: add "${name}" to the "files" of one tier in test/tiers.json, the lightest whose needs cover ` +
        `what it uses. Its imports suggest "${tier}"${because.length > 0 ? ` (it uses ${because.join("; ")})` : ""}; ` +
        `choose a heavier one if it needs more than its imports show (a service started as a child process, a model file read by path).`,
    );
  }
  assert.equal(problems.length, 0, `${problems.join("\n")}\n\nThe tiers:\n${howToChoose}`);
  const planned = TIERS.flatMap((tier) =>
    tierOf(tier)
      .files.filter((name) => !testFiles.includes(name))
      .map((name) => `${tier}: ${name}`),
  );
  if (planned.length > 0) t.diagnostic(`listed, not written yet (skipped by the runner): ${planned.join(", ")}`);
});

test("no test file is in a lighter tier than what it uses; unit files use no service, oracle, model or browser helper", () => {
  const problems: string[] = [];
  for (const tier of TIERS) {
    for (const name of tierOf(tier).files) {
      if (!testFiles.includes(name)) continue;
      const needed = lightestTier(name);
      if (rank(needed.tier) > rank(tier)) {
        problems.push(
          `test/${name} is in "${tier}" but uses ${needed.because.join("; ")}: move it to "${needed.tier}" in test/tiers.json, ` +
            `or drop the dependency.`,
        );
      }
    }
  }
  assert.equal(problems.length, 0, `${problems.join("\n")}\n\nThe tiers:\n${howToChoose}`);
});

test("npm run test:<tier> runs each tier through scripts/test-tier.ts; npm test runs every file", () => {
  const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  for (const tier of TIERS)
    assert.equal(scripts[`test:${tier}`], `node --import tsx scripts/test-tier.ts ${tier}`, `package.json test:${tier}`);
  // Every file, whatever its tier: a file not listed yet still runs (and the test above names it).
  assert.match(scripts.test ?? "", /^npm run typecheck && npm run lint && node --import tsx --test .*test\/\*\.test\.ts$/);
});
