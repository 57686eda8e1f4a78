// Resolve hook for use-dist.mjs: file:///…/src/x.ts → file:///…/dist/x.js when that file exists.
// TRELLIS_BENCH_DIST (a file: URL of another tsc output, a copy of dist/ beside it such as
// dist-base/, so that its paths to the addon and package.json resolve alike) runs a bench against
// that build instead: before/after comparisons of a change.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SRC = new URL("../src/", import.meta.url).href;
const DIST = new URL(process.env.TRELLIS_BENCH_DIST ?? "../dist/", import.meta.url).href;

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith(SRC) && resolved.url.endsWith(".ts")) {
    const url = DIST + resolved.url.slice(SRC.length, -3) + ".js";
    if (existsSync(fileURLToPath(url))) return { ...resolved, url, format: "module" };
  }
  return resolved;
}
