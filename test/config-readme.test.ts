// The README stays true to the code: its configuration table lists every setting of
// src/config.ts with its flag, default and description, and its test command is what .ci/run runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SETTINGS } from "../src/config.js";
import { REPO_ROOT } from "./support/paths.js";

const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");

test("the README's configuration table lists every setting with its flag and default", () => {
  for (const s of SETTINGS) {
    const row = `| \`${s.env}\` | \`${s.flag}\` | ${s.defaultText} | ${s.description} |`;
    assert.ok(readme.includes(row), `README row missing or stale: ${row}`);
  }
});

test("the README's test command is what .ci/run runs", () => {
  const ci = readFileSync(join(REPO_ROOT, ".ci", "run"), "utf8");
  const command = ci.trim().split("\n").at(-1)!;
  assert.equal(command, "npm ci && npm test");
  assert.ok(readme.includes("```sh\n" + command + "\n```"));
  assert.ok(readme.includes("```sh\nnpm ci && npm start\n```"));
});
