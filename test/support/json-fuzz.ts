import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  compileJsonSchema,
  JsonSchemaError,
  JsonSchemaTooComplexError,
  JsonSchemaUnsatisfiableError,
  type WhitespaceStyle,
} from "../../src/schema/index.js";
import type { ByteDfa } from "../../src/regex/index.js";
import type { SamplingParams } from "../../src/sampling/index.js";
import type { Vocabulary } from "../../src/vocab/index.js";
import type { GenerableTokens } from "./generate-harness.js";
import { REPO_ROOT } from "./paths.js";

export const MASKBENCH = resolve(REPO_ROOT, "..", "shared", "jsonschema", "maskbench");
export const WHITESPACE_STYLES: readonly WhitespaceStyle[] = ["default", "compact", "indented"];

export type Rng = () => number;
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;

export interface DevSchema {
  file: string;
  schema: unknown;
  /** JSON.stringify(schema), for the Python oracle. */
  schemaText: string;
  /** The one whitespace style every driver writes this schema in (one compile per schema). */
  whitespace: WhitespaceStyle;
  dfa: ByteDfa;
}

export interface DevSet {
  usable: DevSchema[];
  /** file → the compiler's refusal (class name). */
  refused: Record<string, string>;
  files: number;
  compileMs: number;
}

/**
 * Every `stride`-th MaskBench file (sorted by name), compiled as the service compiles a
 * json_schema request (forbidUnnamedProperties false, strict) in a whitespace style drawn per
 * schema. Refusals (400, too complex, unsatisfiable) are counted, anything else thrown.
 */
export function loadDevSet(stride: number, rng: Rng): DevSet {
  const names = readdirSync(MASKBENCH)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const usable: DevSchema[] = [];
  const refused: Record<string, string> = {};
  const t0 = performance.now();
  let files = 0;
  for (let i = 0; i < names.length; i += stride) {
    const file = names[i]!;
    files++;
    const schema = (JSON.parse(readFileSync(resolve(MASKBENCH, file), "utf8")) as { schema: unknown }).schema;
    const whitespace = pick(rng, WHITESPACE_STYLES);
    try {
      const { dfa } = compileSchema(schema, whitespace);
      usable.push({ file, schema, schemaText: JSON.stringify(schema), whitespace, dfa });
    } catch (error) {
      if (error instanceof JsonSchemaError || error instanceof JsonSchemaTooComplexError || error instanceof JsonSchemaUnsatisfiableError) {
        refused[file] = error.constructor.name;
      } else throw new Error(`${file}: ${(error as Error).stack}`);
    }
  }
  return { usable, refused, files, compileMs: Math.round(performance.now() - t0) };
}

export function compileSchema(schema: unknown, whitespace: WhitespaceStyle): { dfa: ByteDfa } {
  return compileJsonSchema(schema, { whitespace, forbidAdditionalProperties: false, strict: true, limits: { timeoutMs: 3000 } });
}

export function randomParams(rng: Rng): SamplingParams {
  return {
    temperature: pick(rng, [0, 0.3, 0.7, 1, 1, 1.5, 3]),
    topK: pick(rng, [0, 0, 1, 5, 50]),
    topP: pick(rng, [1, 1, 0.9, 0.5]),
    repetitionPenalty: pick(rng, [1, 1, 1.1, 1.5]),
    seed: Math.floor(rng() * 1e9),
  };
}

/** A budget between the schema's fewest tokens − 2 and + 40 (at least 1). */
export function randomBudget(rng: Rng, min: number): number {
  return Math.max(1, min - 2 + Math.floor(rng() * 43));
}

/**
 * The fewest generable tokens from the DFA's start to a full match, found by BFS over DFA states
 * where a step is any one generable token (its bytes run through the DFA's own table: nothing of
 * the trie, the matcher or its caches), with a shortest token sequence as the witness. Every
 * state within `limit − 1` tokens is expanded, so `min` is exact up to `limit`; Infinity beyond.
 */
export function shortestTokenPath(dfa: ByteDfa, generable: GenerableTokens, limit: number): { min: number; tokens: number[] } {
  const { offsets, data } = generable.vocab;
  const { next, byteClass, numClasses } = dfa;
  // Per reached state: its BFS parent and the token that reached it first.
  const parent = new Map<number, { from: number; token: number }>();
  parent.set(dfa.start, { from: -1, token: -1 });
  const path = (state: number): number[] => {
    const out: number[] = [];
    for (let s = state; s !== dfa.start; ) {
      const p = parent.get(s)!;
      out.push(p.token);
      s = p.from;
    }
    return out.reverse();
  };
  let frontier = [dfa.start];
  for (let level = 0; level <= limit && frontier.length > 0; level++) {
    for (const s of frontier) if (dfa.accepting[s] === 1) return { min: level, tokens: path(s) };
    if (level === limit) break;
    const following: number[] = [];
    for (const s of frontier) {
      for (let b = 0; b < 256; b++) {
        const first = next[s * numClasses + byteClass[b]!]!;
        if (first < 0) continue;
        const ids = generable.byFirstByte[b]!;
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i]!;
          let st = first;
          for (let p = offsets[id]! + 1, end = offsets[id + 1]!; p < end && st >= 0; p++)
            st = next[st * numClasses + byteClass[data[p]!]!]!;
          if (st >= 0 && !parent.has(st)) {
            parent.set(st, { from: s, token: id });
            following.push(st);
          }
        }
      }
    }
    frontier = following;
  }
  return { min: Number.POSITIVE_INFINITY, tokens: [] };
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The text of generated tokens (throws on bytes that are not whole UTF-8). */
export function textOf(vocab: Vocabulary, tokens: readonly number[]): string {
  const parts: number[] = [];
  for (const t of tokens) for (const b of vocab.tokenBytes(t)) parts.push(b);
  return fatalUtf8.decode(Uint8Array.from(parts));
}
