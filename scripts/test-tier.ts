// Runs the test files of one or more tiers of test/tiers.json with Node's test runner, as
// `npm test` runs all of them: `node --import tsx scripts/test-tier.ts unit` (npm run test:unit),
// or several tiers at once (`oracle services`). Options (`--name=value`, and anything after a
// `--`) go to `node --test` as they are (`npm run test:unit -- --test-name-pattern=quota`). Files
// a tier lists that do not exist yet are skipped; test/house-tiers.test.ts checks that every test
// file is in exactly one tier.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "test", "tiers.json"), "utf8")) as Record<string, unknown>;
const tierNames = Object.keys(manifest).filter((k) => k !== "//");

// npm run test:unit -- --opt=value hands the options over without the `--`: options start with "-".
const args = process.argv.slice(2);
const dashes = args.includes("--") ? args.indexOf("--") : args.length;
const tiers = args.slice(0, dashes).filter((a) => !a.startsWith("-"));
const passThrough = [...args.slice(0, dashes).filter((a) => a.startsWith("-")), ...args.slice(dashes + 1)];
if (tiers.length === 0 || tiers.some((t) => !tierNames.includes(t))) {
  console.error(
    `usage: node --import tsx scripts/test-tier.ts <tier>... [--<node --test option>=<value>...]\ntiers: ${tierNames.join(", ")}`,
  );
  process.exit(2);
}

const files = tiers
  .flatMap((t) => (manifest[t] as { files: string[] }).files)
  .map((name) => join("test", name))
  .filter((path) => existsSync(join(REPO_ROOT, path)));
console.log(`test tier ${tiers.join(" + ")}: ${files.length} files`);
if (files.length === 0) process.exit(0);

// The same node as this script, so a Node installed beside the system one (.ci/run) runs the tests too.
const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...passThrough, ...files], {
  cwd: REPO_ROOT,
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
