/**
 * XGrammar's WebAssembly build (@mlc-ai/web-xgrammar) loaded in Node, as a mask baseline.
 *
 * A plain import fails (the package says "type": "module" but lib/index.js is a UMD bundle), so
 * the file is evaluated as a CommonJS function with a real `require` (see /work/shared/NOTES.md).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

/* eslint-disable @typescript-eslint/no-explicit-any */
export interface XGrammarModule {
  TokenizerInfo: any;
  GrammarCompiler: any;
  GrammarMatcher: any;
  Grammar: any;
}

let loaded: Promise<XGrammarModule> | undefined;

export function loadXGrammar(): Promise<XGrammarModule> {
  if (loaded === undefined) loaded = doLoad();
  return loaded;
}

async function doLoad(): Promise<XGrammarModule> {
  const here = dirname(fileURLToPath(import.meta.url));
  const file = resolve(here, "..", "node_modules", "@mlc-ai", "web-xgrammar", "lib", "index.js");
  const source = readFileSync(file, "utf8");
  const realRequire = createRequire(file);
  const fn = vm.compileFunction(source, ["exports", "require", "module", "__filename", "__dirname"], {
    filename: file,
    // Its glue does `import("module")`; the main context's loader serves that without flags.
    importModuleDynamically: (vm as any).constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const module = { exports: {} as Record<string, unknown> };
  fn(module.exports, realRequire, module, file, dirname(file));
  return module.exports as unknown as XGrammarModule;
}

/** GPT-2's byte → printable code point map (the "byte_level" vocabulary encoding). */
function byteToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const map = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    map[b] = keep.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + extra++);
  }
  return map;
}

/**
 * Encodes every token's exact bytes in byte-level form so XGrammar sees the same bytes we do;
 * non-generable tokens (control, end-of-generation, unused, empty) become "" which XGrammar
 * treats as special, never allowed by a grammar.
 */
export function byteLevelVocab(size: number, offsets: Uint32Array, data: Uint8Array, generable: (id: number) => boolean): string[] {
  const map = byteToUnicode();
  const out = new Array<string>(size);
  for (let id = 0; id < size; id++) {
    if (!generable(id)) {
      out[id] = "";
      continue;
    }
    let s = "";
    for (let i = offsets[id]!; i < offsets[id + 1]!; i++) s += map[data[i]!];
    out[id] = s;
  }
  return out;
}
