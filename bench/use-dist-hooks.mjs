// Resolve hook for use-dist.mjs: file:///…/src/x.ts → file:///…/dist/x.js when that file exists.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const SRC = new URL("../src/", import.meta.url).href;
const DIST = new URL("../dist/", import.meta.url).href;

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith(SRC) && resolved.url.endsWith(".ts")) {
    const url = DIST + resolved.url.slice(SRC.length, -3) + ".js";
    if (existsSync(fileURLToPath(url))) return { ...resolved, url, format: "module" };
  }
  return resolved;
}
