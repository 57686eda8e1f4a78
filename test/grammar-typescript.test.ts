// TypeScript declarations → JSON Schema → DFA, checked by the TypeScript compiler itself: every
// sampled JSON text must type-check as `const x: T = <text>;` under `strict` (zero diagnostics),
// and near misses the type rejects must be rejected by the DFA (and by the compiler). Refused
// constructs are 400s with the right field and the offending declaration's line and column.
import { test } from "node:test";
import assert from "node:assert/strict";
import ts from "typescript";
import { compileJsonSchema } from "../src/schema/index.js";
import { TypeScriptSchemaError, typeScriptToJsonSchema } from "../src/schema/typescript/convert.js";
import { type ByteDfa, matchesString, sampleString } from "../src/regex/index.js";
import { seededRandom } from "../src/support/index.js";

// ---- The oracle: the TypeScript compiler over declarations plus sampled values ----

const CHECK_FILE = "/check.ts";
const checkOptions: ts.CompilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  moduleDetection: ts.ModuleDetectionKind.Force,
  lib: ["lib.es2022.d.ts"],
  types: [],
  noEmit: true,
  noResolve: true,
  skipLibCheck: true,
};
const libFiles = new Map<string, ts.SourceFile | undefined>();

function libFile(fileName: string): ts.SourceFile | undefined {
  if (!libFiles.has(fileName)) {
    const text = ts.sys.readFile(fileName);
    libFiles.set(fileName, text === undefined ? undefined : ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022));
  }
  return libFiles.get(fileName);
}

/** The compiler's errors for one file (lib files parsed once for the whole test file). */
function compilerErrors(source: string): ts.Diagnostic[] {
  const file = ts.createSourceFile(CHECK_FILE, source, ts.ScriptTarget.ES2022, true);
  const host: ts.CompilerHost = {
    getSourceFile: (name) => (name === CHECK_FILE ? file : libFile(name)),
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    writeFile: () => {},
    getCurrentDirectory: () => "/",
    getCanonicalFileName: (name) => name,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: (name) => name === CHECK_FILE || libFile(name) !== undefined,
    readFile: (name) => (name === CHECK_FILE ? source : libFile(name)?.text),
  };
  const program = ts.createProgram({ rootNames: [CHECK_FILE], options: checkOptions, host });
  return [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)].filter(
    (d) => d.category === ts.DiagnosticCategory.Error,
  );
}

/** For each text, the compiler's errors on `const xN: T = <text>;` appended to the declarations. */
function errorsPerValue(declarations: string, typeText: string, texts: readonly string[]): string[][] {
  let source = `${declarations}\n`;
  const starts: number[] = [];
  for (const [i, text] of texts.entries()) {
    starts.push(source.length);
    source += `const x${i}: ${typeText} = ${text};\n`;
  }
  const perValue: string[][] = texts.map(() => []);
  for (const d of compilerErrors(source)) {
    const message = `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
    const start = d.start ?? 0;
    assert.ok(start >= (starts[0] ?? source.length), `the declarations themselves do not compile: ${message}`);
    let i = starts.length - 1;
    while (starts[i]! > start) i--;
    perValue[i]!.push(message);
  }
  return perValue;
}

let typeCheckedValues = 0;
let duplicateKeyTexts = 0;
const DUPLICATE_PROPERTY = 1117;

/**
 * Every text type-checks as `typeText`. The JSON Schema engine may write an unnamed key twice
 * (an automaton cannot check that keys are distinct; README "Repeated keys"), which an object
 * literal may not (TS1117) but JSON.parse allows, keeping the last: such a text must have no other
 * error, and the value it parses to must type-check.
 */
function assertTypeChecks(declarations: string, typeText: string, texts: readonly string[]): void {
  const perValue = errorsPerValue(declarations, typeText, texts);
  const reparsed: string[] = [];
  for (const [i, errors] of perValue.entries()) {
    const others = errors.filter((e) => !e.startsWith(`TS${DUPLICATE_PROPERTY} `));
    assert.deepEqual(others, [], `${texts[i]} does not type-check as ${typeText}`);
    if (errors.length > 0) reparsed.push(JSON.stringify(JSON.parse(texts[i]!)));
  }
  for (const [i, errors] of errorsPerValue(declarations, typeText, reparsed).entries()) {
    assert.deepEqual(errors, [], `${reparsed[i]} (a text with a repeated key, as parsed) does not type-check as ${typeText}`);
  }
  typeCheckedValues += texts.length;
  duplicateKeyTexts += reparsed.length;
}

function assertTypeRejects(declarations: string, typeText: string, texts: readonly string[]): void {
  const perValue = errorsPerValue(declarations, typeText, texts);
  for (const [i, errors] of perValue.entries()) assert.ok(errors.length > 0, `${texts[i]} unexpectedly type-checks as ${typeText}`);
}

// ---- Converting, compiling, sampling ----

interface Construct {
  readonly declarations: string;
  readonly typeName: string;
  /** The type the values are checked against, where it is not `typeName` (string enums). */
  readonly checkAs?: string;
  /** Declarations only the check needs. */
  readonly checkDeclarations?: string;
  readonly samples?: number;
  /** JSON texts (compact) the type allows and the DFA must accept. */
  readonly accepted?: readonly string[];
  /** Near misses the type rejects: the DFA must reject them too. */
  readonly rejected?: readonly string[];
  /** Values the type allows but the schema's JSDoc keywords forbid: the DFA rejects them. */
  readonly keywordRejected?: readonly string[];
}

interface Checked {
  readonly schema: Record<string, unknown>;
  readonly warnings: string[];
  readonly dfa: ByteDfa;
  readonly values: unknown[];
}

/** Distinct random members of the DFA's language. */
function sampleTexts(dfa: ByteDfa, count: number, seed: number): string[] {
  const random = seededRandom(seed);
  const texts = new Set<string>();
  for (let i = 0; i < count; i++) {
    const text = sampleString(dfa, random, { maxBytes: 400, stopProbability: 0.15 });
    assert.ok(text !== null, "the schema's language is empty");
    texts.add(text);
  }
  return [...texts];
}

let seed = 20260401;

function checkConstruct(construct: Construct): Checked {
  const { schema, warnings } = typeScriptToJsonSchema(construct.declarations, construct.typeName);
  const { dfa } = compileJsonSchema(schema);
  const texts = sampleTexts(dfa, construct.samples ?? 200, seed++);
  const values = texts.map((text) => JSON.parse(text) as unknown);
  const declarations = `${construct.declarations}\n${construct.checkDeclarations ?? ""}`;
  const typeText = construct.checkAs ?? construct.typeName;
  assertTypeChecks(declarations, typeText, texts);
  for (const text of construct.accepted ?? []) assert.ok(matchesString(dfa, text), `the DFA rejects ${text}`);
  assertTypeChecks(declarations, typeText, construct.accepted ?? []);
  for (const text of construct.rejected ?? []) assert.ok(!matchesString(dfa, text), `the DFA accepts ${text}`);
  assertTypeRejects(declarations, typeText, construct.rejected ?? []);
  for (const text of construct.keywordRejected ?? []) assert.ok(!matchesString(dfa, text), `the DFA accepts ${text}`);
  return { schema, warnings, dfa, values };
}

function record(value: unknown): Record<string, unknown> {
  assert.ok(typeof value === "object" && value !== null && !Array.isArray(value), `${JSON.stringify(value)} is not an object`);
  return value as Record<string, unknown>;
}

// ---- Supported constructs ----

test("interfaces, extends, optional and readonly properties", () => {
  const { schema, values } = checkConstruct({
    declarations: `
export interface Named {
  readonly name: string;
}
export interface Person extends Named {
  age?: number;
  readonly email: string | null;
  admin: boolean;
}`,
    typeName: "Person",
    accepted: ['{"name":"a","email":null,"admin":true}', '{"name":"a","age":-1.5e3,"email":"x","admin":false}'],
    rejected: [
      '{"name":"a","email":null}',
      '{"name":"a","email":null,"admin":true,"extra":1}',
      '{"name":1,"email":null,"admin":true}',
      '{"name":"a","email":null,"admin":"yes"}',
    ],
  });
  assert.deepEqual(schema.required, ["name", "email", "admin"]);
  assert.equal(schema.additionalProperties, false);
  assert.deepEqual(Object.keys(record(schema.properties)), ["name", "age", "email", "admin"], "properties in source order");
  assert.ok(values.some((v) => "age" in record(v)) && values.some((v) => !("age" in record(v))));
});

test("a property named __proto__ is a property like any other", () => {
  const { schema } = typeScriptToJsonSchema('export interface Odd { __proto__: string; "constructor"?: number; b: boolean }', "Odd");
  const properties = record(schema.properties);
  assert.deepEqual(Object.keys(properties), ["__proto__", "constructor", "b"]);
  assert.equal(Object.getPrototypeOf(properties), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(properties, "__proto__")?.value, { type: "string" });
  assert.deepEqual(schema.required, ["__proto__", "b"]);
  const { dfa } = compileJsonSchema(schema);
  assert.deepEqual(
    ['{"__proto__": "x", "b": true}', '{"__proto__": "x", "constructor": 1, "b": true}', '{"b": true}', '{"__proto__": 1, "b": true}'].map(
      (t) => matchesString(dfa, t),
    ),
    [true, true, false, false],
  );
});

test("type aliases of primitives, null and literal types", () => {
  const { schema, values } = checkConstruct({
    declarations: `
export type Text = string;
export type Primitives = { s: Text; n: number; b: boolean; z: null };
export type Literals = { kind: "circle"; version: 2; negative: -1.5; flag: false; on: true };`,
    typeName: "Primitives",
    accepted: ['{"s":"","n":0,"b":false,"z":null}'],
    rejected: ['{"s":"","n":"0","b":false,"z":null}', '{"s":"","n":0,"b":null,"z":null}', '{"s":"","n":0,"b":true,"z":0}'],
  });
  assert.deepEqual(record(schema.properties).n, { type: "number" }, "number is any JSON number, never assumed an integer");
  assert.ok(
    values.some((v) => !Number.isInteger(record(v).n)),
    "non-integer numbers are written",
  );
  const literals = checkConstruct({
    declarations: `export type Literals = { kind: "circle"; version: 2; negative: -1.5; flag: false; on: true };`,
    typeName: "Literals",
    samples: 5,
    accepted: ['{"kind":"circle","version":2,"negative":-1.5,"flag":false,"on":true}'],
    rejected: [
      '{"kind":"square","version":2,"negative":-1.5,"flag":false,"on":true}',
      '{"kind":"circle","version":3,"negative":-1.5,"flag":false,"on":true}',
      '{"kind":"circle","version":2,"negative":-1.5,"flag":true,"on":true}',
    ],
  });
  assert.deepEqual(record(literals.schema.properties).kind, { const: "circle" });
  assert.deepEqual(record(literals.schema.properties).on, { const: true });
});

test("unions: literal unions are enums, boolean is true | false, mixed unions are anyOf", () => {
  const { schema, values } = checkConstruct({
    declarations: `
export type Shape = { kind: "circle"; radius: number } | { kind: "square"; side: number };
export type Mixed = {
  size: "s" | "m" | "l";
  code: 1 | 2 | 3;
  value: string | number | boolean | null;
  shape: Shape | "none" | null;
  maybe: "x" | null;
};`,
    typeName: "Mixed",
    samples: 300,
    accepted: ['{"size":"m","code":3,"value":true,"shape":{"kind":"square","side":1},"maybe":null}'],
    rejected: [
      '{"size":"xl","code":3,"value":true,"shape":null,"maybe":null}',
      '{"size":"m","code":4,"value":true,"shape":null,"maybe":null}',
      '{"size":"m","code":3,"value":true,"shape":{"kind":"square","radius":1},"maybe":null}',
      '{"size":"m","code":3,"value":[],"shape":null,"maybe":null}',
    ],
  });
  const properties = record(schema.properties);
  assert.deepEqual(properties.size, { enum: ["s", "m", "l"] });
  assert.deepEqual(properties.code, { enum: [1, 2, 3] });
  assert.deepEqual(properties.value, { type: ["string", "number", "boolean", "null"] });
  assert.deepEqual(properties.maybe, { enum: ["x", null] });
  const shapes = new Set(
    values.map((v) => JSON.stringify(record(v).shape === null ? null : ((record(v).shape as { kind?: string }).kind ?? record(v).shape))),
  );
  assert.ok(shapes.size >= 4, `every branch of Shape | "none" | null is written: ${[...shapes]}`);
});

test("intersections merge object properties; string & {} is a string", () => {
  const { schema } = checkConstruct({
    declarations: `
interface A { a: string }
interface B { b?: number }
export type AB = A & B & { c: boolean };
export type Narrowed = ({ kind: "x" | "y"; v: string } & { kind: "x" }) | (string & {});`,
    typeName: "AB",
    accepted: ['{"a":"","c":true}', '{"a":"","b":1,"c":false}'],
    rejected: ['{"a":"","b":1}', '{"a":"","c":true,"d":1}'],
  });
  assert.deepEqual(schema.required, ["a", "c"]);
  assert.equal(schema.allOf, undefined);
  const narrowed = checkConstruct({
    declarations: `export type Narrowed = ({ kind: "x" | "y"; v: string } & { kind: "x" }) | (string & {});`,
    typeName: "Narrowed",
    accepted: ['{"kind":"x","v":""}', '"free text"'],
    rejected: ['{"kind":"y","v":""}'],
  });
  assert.ok(narrowed.values.some((v) => typeof v === "string") && narrowed.values.some((v) => typeof v === "object"));
});

test("string and numeric enums are enums of their values", () => {
  const declarations = `
export enum Color { Red = "red", Green = "green", Blue = "blue" }
export enum Level { Low, Mid = 5, High }
export interface Paint { color: Color; level: Level }`;
  // A string enum's member is not assignable from its string (`const c: Color = "red"` is an
  // error by design), so the values are checked against the enum's string values.
  const { schema } = checkConstruct({
    declarations,
    typeName: "Paint",
    checkDeclarations: `type PaintValues = { color: \`\${Color}\`; level: Level };`,
    checkAs: "PaintValues",
    accepted: ['{"color":"green","level":6}'],
    rejected: ['{"color":"Green","level":6}', '{"color":"red","level":1}'],
  });
  assert.deepEqual(record(schema.properties).color, { enum: ["red", "green", "blue"] });
  assert.deepEqual(record(schema.properties).level, { enum: [0, 5, 6] });
  assertTypeRejects(declarations, "Color", ['"red"']);
  const level = checkConstruct({ declarations, typeName: "Level", samples: 30, accepted: ["0", "5", "6"], rejected: ["1", '"Low"'] });
  assert.deepEqual(new Set(level.values), new Set([0, 5, 6]));
});

test("arrays: T[], Array<T>, ReadonlyArray<T>, readonly T[], nested", () => {
  const { schema } = checkConstruct({
    declarations: `
export type Lists = {
  a: string[];
  b: Array<number>;
  c: ReadonlyArray<boolean>;
  d: readonly (string | null)[];
  nested: number[][];
};`,
    typeName: "Lists",
    accepted: ['{"a":[],"b":[1,2],"c":[true],"d":[null,"x"],"nested":[[],[1]]}'],
    rejected: ['{"a":[1],"b":[],"c":[],"d":[],"nested":[]}', '{"a":[],"b":[],"c":[],"d":[],"nested":[1]}'],
  });
  assert.deepEqual(record(schema.properties).c, { type: "array", items: { type: "boolean" } });
});

test("tuples: fixed, optional and rest elements", () => {
  const { schema, values } = checkConstruct({
    declarations: `
export type Tuples = {
  pair: [string, number];
  optional: [string, number?, boolean?];
  rest: [string, ...number[]];
  named: readonly [x: number, y: number];
  empty: [];
};`,
    typeName: "Tuples",
    samples: 300,
    accepted: ['{"pair":["a",1],"optional":["a"],"rest":["a",1,2,3],"named":[1,2],"empty":[]}'],
    rejected: [
      '{"pair":["a"],"optional":["a"],"rest":["a"],"named":[1,2],"empty":[]}',
      '{"pair":["a",1,2],"optional":["a"],"rest":["a"],"named":[1,2],"empty":[]}',
      '{"pair":["a",1],"optional":["a",1,true,1],"rest":["a"],"named":[1,2],"empty":[]}',
      '{"pair":["a",1],"optional":["a"],"rest":["a","b"],"named":[1,2],"empty":[]}',
      '{"pair":["a",1],"optional":["a"],"rest":["a"],"named":[1,2],"empty":[1]}',
    ],
  });
  assert.deepEqual(record(schema.properties).optional, {
    type: "array",
    prefixItems: [{ type: "string" }, { type: "number" }, { type: "boolean" }],
    minItems: 1,
    items: false,
  });
  assert.deepEqual(record(schema.properties).rest, {
    type: "array",
    prefixItems: [{ type: "string" }],
    minItems: 1,
    items: { type: "number" },
  });
  const lengths = new Set(values.map((v) => (record(v).optional as unknown[]).length));
  assert.deepEqual([...lengths].sort(), [1, 2, 3]);
});

test("index signatures and Record<K, V>", () => {
  const declarations = `
export enum Color { Red = "red", Green = "green" }
export type Dict = { [key: string]: number };
export type Keyed = Record<"x" | "y", boolean>;
export type ByColor = Partial<Record<Color, number>>;
export type Named = { id: string; [key: string]: string };
export type Numbered = { [n: number]: string };
export type Prefixed = { [k: \`data-\${string}\`]: string };
export type Both = { [key: string]: number | string; [n: number]: number };`;
  const dict = checkConstruct({
    declarations,
    typeName: "Dict",
    accepted: ["{}", '{"a":1,"b c":-2.5}'],
    rejected: ['{"a":"1"}', '{"a":null}'],
  });
  assert.deepEqual(dict.schema.additionalProperties, { type: "number" });
  assert.ok(dict.values.some((v) => Object.keys(record(v)).length > 0));
  const keyed = checkConstruct({
    declarations,
    typeName: "Keyed",
    accepted: ['{"x":true,"y":false}'],
    rejected: ['{"x":true}', '{"x":true,"y":false,"z":true}'],
  });
  assert.deepEqual(keyed.schema.required, ["x", "y"]);
  checkConstruct({ declarations, typeName: "ByColor", accepted: ["{}", '{"green":1}'], rejected: ['{"blue":1}'] });
  checkConstruct({ declarations, typeName: "Named", accepted: ['{"id":"a","b":"c"}'], rejected: ['{"b":"c"}', '{"id":"a","b":1}'] });
  const numbered = checkConstruct({
    declarations,
    typeName: "Numbered",
    accepted: ['{"0":"a","-12":"b"}'],
    rejected: ['{"a":"b"}', '{"01":"b"}'],
  });
  assert.ok(numbered.values.some((v) => Object.keys(record(v)).length > 0));
  const prefixed = checkConstruct({
    declarations,
    typeName: "Prefixed",
    accepted: ['{"data-":"a","data-x":"b"}'],
    rejected: ['{"x":"b"}'],
  });
  assert.ok(prefixed.values.some((v) => Object.keys(record(v)).length > 0));
  checkConstruct({ declarations, typeName: "Both", accepted: ['{"a":"x","1":2}'], rejected: ['{"1":"x"}'] });
});

test("utility types resolved by the checker: Partial, Pick, Omit, Required, Readonly", () => {
  const declarations = `
export interface User {
  id: number;
  name: string;
  email?: string;
  admin: boolean;
}
export type Patch = Partial<User>;
export type Summary = Pick<User, "id" | "name">;
export type NoAdmin = Omit<User, "admin">;
export type Full = Required<User>;
export type Frozen = Readonly<User>;
type IsText<T> = T extends string ? "text" : "other";
export type Derived = {
  keys: keyof User;
  name: User["name"];
  rest: Exclude<keyof User, "id" | "name">;
  a: IsText<"x">;
  b: IsText<1>;
};`;
  const patch = checkConstruct({ declarations, typeName: "Patch", accepted: ["{}", '{"admin":true}'], rejected: ['{"other":1}'] });
  assert.equal(patch.schema.required, undefined);
  const summary = checkConstruct({
    declarations,
    typeName: "Summary",
    accepted: ['{"id":1,"name":"a"}'],
    rejected: ['{"id":1,"name":"a","admin":true}'],
  });
  assert.deepEqual(Object.keys(record(summary.schema.properties)), ["id", "name"]);
  checkConstruct({ declarations, typeName: "NoAdmin", accepted: ['{"id":1,"name":"a"}'], rejected: ['{"id":1,"name":"a","admin":true}'] });
  const full = checkConstruct({
    declarations,
    typeName: "Full",
    accepted: ['{"id":1,"name":"a","email":"","admin":true}'],
    rejected: ['{"id":1,"name":"a","admin":true}'],
  });
  assert.deepEqual(full.schema.required, ["id", "name", "email", "admin"]);
  const derived = checkConstruct({
    declarations,
    typeName: "Derived",
    accepted: ['{"keys":"email","name":"","rest":"admin","a":"text","b":"other"}'],
    rejected: [
      '{"keys":"other","name":"","rest":"admin","a":"text","b":"other"}',
      '{"keys":"id","name":"","rest":"id","a":"text","b":"other"}',
    ],
  });
  assert.deepEqual(record(derived.schema.properties).keys, { enum: ["id", "name", "email", "admin"] });
  checkConstruct({ declarations, typeName: "Frozen", accepted: ['{"id":1,"name":"a","admin":true}'], rejected: ['{"id":1,"admin":true}'] });
});

test("generic instantiations", () => {
  const declarations = `
export interface Box<T> { value: T; label?: string }
export type StringBox = Box<string>;
export type Pair<A, B = A> = { first: A; second: B };
export type Boxes = { a: Box<number>; b: Box<Box<boolean>>; p: Pair<string>; q: Pair<number, null> };`;
  checkConstruct({ declarations, typeName: "StringBox", accepted: ['{"value":"a"}'], rejected: ['{"value":1}'] });
  checkConstruct({
    declarations,
    typeName: "Boxes",
    accepted: ['{"a":{"value":1},"b":{"value":{"value":true}},"p":{"first":"a","second":"b"},"q":{"first":1,"second":null}}'],
    rejected: ['{"a":{"value":1},"b":{"value":true},"p":{"first":"a","second":"b"},"q":{"first":1,"second":null}}'],
  });
});

test("recursive types: $defs and $ref named after the type", () => {
  const declarations = `
export interface Tree { value: number; children: Tree[] }
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export interface Department { name: string; head: Employee | null }
interface Employee { name: string; department?: Department }
export type List = { head: number; tail: List | null };`;
  const tree = checkConstruct({
    declarations,
    typeName: "Tree",
    accepted: ['{"value":1,"children":[{"value":2,"children":[]}]}'],
    rejected: ['{"value":1,"children":[{"value":2}]}'],
  });
  assert.equal(tree.schema.$ref, "#/$defs/Tree");
  assert.ok(record(tree.schema.$defs).Tree);
  const depth = (node: unknown): number => 1 + Math.max(0, ...((record(node).children as unknown[]).map(depth) ?? []));
  assert.ok(
    tree.values.some((v) => depth(v) >= 3),
    "recursion is unrolled",
  );
  const json = checkConstruct({
    declarations,
    typeName: "Json",
    samples: 300,
    accepted: ['{"a":[1,{}],"b":{"c":[true]}}'],
    rejected: ['{"a":undefined}'],
  });
  assert.equal(json.schema.$ref, "#/$defs/Json");
  checkConstruct({
    declarations,
    typeName: "Department",
    accepted: ['{"name":"a","head":{"name":"b","department":{"name":"c","head":null}}}'],
    rejected: ['{"name":"a","head":{"name":"b","department":{"name":"c"}}}'],
  });
  checkConstruct({ declarations, typeName: "List", accepted: ['{"head":1,"tail":{"head":2,"tail":null}}'], rejected: ['{"head":1}'] });
  // \`this\` in a non-generic interface is the interface.
  const linked = checkConstruct({
    declarations: "export interface Linked {\n  next: this | null;\n}",
    typeName: "Linked",
    accepted: ['{"next":{"next":null}}'],
  });
  assert.equal(linked.schema.$ref, "#/$defs/Linked");
});

test("JSDoc tags become keywords, the comment a description", () => {
  const declarations = `
/** @maxLength 5 */
type Name = string;
/** A product in the catalogue. */
export interface Product {
  /**
   * @minLength 2
   * @maxLength 8
   */
  code: string;
  /** @minimum 0 @maximum 100 */
  price: number;
  /** @pattern ^[a-z]+(-[a-z]+)*$ */
  slug: string;
  /** @format date */
  released: string;
  /**
   * @minItems 1
   * @maxItems 3
   */
  tags: string[];
  /** The product's name. */
  name: Name;
  /** @description Stock count. */
  stock: number;
}`;
  const { schema, values, warnings } = checkConstruct({
    declarations,
    typeName: "Product",
    accepted: ['{"code":"ab","price":100,"slug":"a-b","released":"2024-02-29","tags":["x"],"name":"n","stock":1}'],
    rejected: ['{"code":"ab","price":100,"slug":"a-b","released":"2024-02-29","tags":["x"],"name":"n"}'],
    keywordRejected: [
      '{"code":"a","price":100,"slug":"a-b","released":"2024-02-29","tags":["x"],"name":"n","stock":1}',
      '{"code":"ab","price":100.5,"slug":"a-b","released":"2024-02-29","tags":["x"],"name":"n","stock":1}',
      '{"code":"ab","price":100,"slug":"A","released":"2024-02-29","tags":["x"],"name":"n","stock":1}',
      '{"code":"ab","price":100,"slug":"a-b","released":"2024-02-30","tags":["x"],"name":"n","stock":1}',
      '{"code":"ab","price":100,"slug":"a-b","released":"2024-02-29","tags":[],"name":"n","stock":1}',
      '{"code":"ab","price":100,"slug":"a-b","released":"2024-02-29","tags":["x"],"name":"nnnnnn","stock":1}',
    ],
  });
  assert.deepEqual(warnings, []);
  assert.equal(schema.description, "A product in the catalogue.");
  const properties = record(schema.properties);
  assert.deepEqual(properties.code, { type: "string", minLength: 2, maxLength: 8 });
  assert.deepEqual(properties.price, { type: "number", minimum: 0, maximum: 100 });
  assert.deepEqual(properties.slug, { type: "string", pattern: "^[a-z]+(-[a-z]+)*$" });
  assert.deepEqual(properties.released, { type: "string", format: "date" });
  assert.deepEqual(properties.tags, { type: "array", items: { type: "string" }, minItems: 1, maxItems: 3 });
  assert.deepEqual(properties.name, { type: "string", maxLength: 5, description: "The product's name." });
  assert.deepEqual(properties.stock, { type: "number", description: "Stock count." });
  for (const value of values) {
    const v = record(value);
    const codePoints = [...(v.code as string)].length;
    assert.ok(codePoints >= 2 && codePoints <= 8, "minLength and maxLength count code points");
    assert.ok((v.price as number) >= 0 && (v.price as number) <= 100);
    assert.match(v.slug as string, /^[a-z]+(-[a-z]+)*$/);
    assert.ok((v.tags as unknown[]).length >= 1 && (v.tags as unknown[]).length <= 3);
  }
  const misplaced = typeScriptToJsonSchema("export interface A {\n  /** @minLength 2 */\n  n: number;\n}", "A");
  assert.match(misplaced.warnings.join("\n"), /@minLength \(line 2, column 7\) has no effect/);
});

test("template literal types become patterns", () => {
  const { schema, values } = checkConstruct({
    declarations: `
export type Ids = {
  user: \`user-\${number}\`;
  path: \`/\${string}/\${string}\`;
  version: \`v\${number}.\${number}\`;
  size: \`\${number}px\` | \`\${number}%\` | "auto";
  range: \`\${number}-\${number}\`;
};`,
    typeName: "Ids",
    samples: 300,
    accepted: ['{"user":"user-12","path":"/a/b/c","version":"v1.2.5","size":"auto","range":"1-2"}'],
    rejected: [
      '{"user":"user-x","path":"/a/b","version":"v1.2","size":"auto","range":"1-2"}',
      '{"user":"user-1","path":"a/b","version":"v1.2","size":"auto","range":"1-2"}',
      '{"user":"user-1","path":"/a/b","version":"v1","size":"auto","range":"1-2"}',
      '{"user":"user-1","path":"/a/b","version":"v1.2","size":"1em","range":"1-2"}',
    ],
  });
  assert.deepEqual(record(schema.properties).user, { type: "string", pattern: "^user--?(0|[1-9][0-9]*)(\\.[0-9]+)?$" });
  assert.ok(values.some((v) => (record(v).path as string).split("/").length > 3 || (record(v).path as string).length > 2));
});

test("any and unknown are any JSON value, with a warning; object is any object or array", () => {
  const { schema, warnings, values } = checkConstruct({
    declarations: "export type Loose = { data: unknown; extra?: any; o: object };",
    typeName: "Loose",
    accepted: ['{"data":[1,{"a":null}],"o":[]}', '{"data":null,"extra":"x","o":{"a":1}}'],
    rejected: ['{"data":1,"o":1}', '{"extra":1,"o":{}}'],
  });
  assert.deepEqual(record(schema.properties).data, {});
  assert.deepEqual(record(schema.properties).o, { type: ["object", "array"] });
  assert.equal(warnings.length, 2);
  assert.ok(new Set(values.map((v) => typeof record(v).data)).size >= 3);
});

test("classes with fields only; optional never properties; undefined in required properties", () => {
  checkConstruct({
    declarations: "export class Point {\n  x = 0;\n  y: number = 0;\n  label?: string;\n  get norm(): number { return 0; }\n}",
    typeName: "Point",
    accepted: ['{"x":1,"y":2,"norm":3}'],
    rejected: ['{"x":1,"y":2}'],
  });
  checkConstruct({
    declarations: "export type OneOf = { a: string; b?: never } | { b: number; a?: never };",
    typeName: "OneOf",
    accepted: ['{"a":""}', '{"b":1}'],
    rejected: ['{"a":"","b":1}'],
  });
  const { schema, warnings, values } = checkConstruct({
    declarations: "export type MaybeUndefined = { a: string | undefined; b?: number | undefined; c: (string | undefined)[] };",
    typeName: "MaybeUndefined",
    accepted: ['{"a":"","c":[]}'],
    rejected: ['{"c":[]}'],
  });
  assert.deepEqual(schema.required, ["a", "c"]);
  assert.equal(warnings.length, 2, warnings.join("\n"));
  assert.ok(values.every((v) => typeof record(v).a === "string"));
});

// ---- Refusals: 400s with the field and the offending declaration's position ----

/** 1-based line and column of the first occurrence of `needle` in `source`. */
function positionOf(source: string, needle: string): { line: number; column: number } {
  const index = source.indexOf(needle);
  assert.ok(index >= 0, `${needle} is not in the source`);
  const before = source.slice(0, index).split("\n");
  return { line: before.length, column: before.at(-1)!.length + 1 };
}

function refusal(source: string, typeName: string, options?: { maxSchemaNodes?: number }): TypeScriptSchemaError {
  try {
    typeScriptToJsonSchema(source, typeName, options);
  } catch (error) {
    assert.ok(error instanceof TypeScriptSchemaError, `${String(error)} is not a TypeScriptSchemaError`);
    return error;
  }
  assert.fail(`${typeName} was converted, not refused`);
}

function assertRefused(source: string, typeName: string, at: string, message: RegExp): void {
  const error = refusal(source, typeName);
  assert.equal(error.field, "schema");
  assert.match(error.message, message);
  const expected = positionOf(source, at);
  assert.deepEqual({ line: error.line, column: error.column }, expected, error.message);
  assert.ok(error.message.endsWith(`(line ${expected.line}, column ${expected.column})`), error.message);
}

test("constructs no JSON value has are refused at their declaration", () => {
  const cases: [string, string, string, RegExp][] = [
    ["export interface F {\n  ok: string;\n  cb: () => void;\n}", "F", "cb:", /F\.cb: type \(\) => void is a function/],
    ["export interface M {\n  name: string;\n  greet(): string;\n}", "M", "greet()", /M\.greet: a method/],
    ["export type S = {\n  s: symbol;\n};", "S", "s: symbol", /S\.s: type symbol is a symbol/],
    ["declare const key: unique symbol;\nexport interface K {\n  [key]: string;\n}", "K", "[key]", /symbol-keyed property/],
    ["export type B = {\n  n: bigint;\n};", "B", "n: bigint", /is a bigint/],
    ["export type N = {\n  n: never;\n};", "N", "n: never", /type never has no values/],
    ["export type U = undefined;", "U", "U =", /type undefined is undefined/],
    ["export type V = {\n  v: undefined;\n};", "V", "v: undefined", /V\.v: type undefined/],
    ["export class C {\n  x = 1;\n  move(): void {}\n}", "C", "move()", /C\.move: a method/],
    ["export class P {\n  x = 1;\n  private secret = 2;\n}", "P", "private secret", /private or protected class member/],
    ["export class Q {\n  #hidden = 1;\n}", "Q", "#hidden", /private or protected class member/],
    ['export type Id = {\n  id: string & { __brand: "id" };\n};', "Id", "id:", /branded type/],
    [`export type T = {\n  t: \`\${number}\${string}\`;\n};`, "T", "t:", /adjacent placeholders/],
    [`export type T = {\n  t: \`n\${bigint}\`;\n};`, "T", "t:", /only string and number placeholders/],
    ["export type R = {\n  r: [...string[], number];\n};", "R", "r:", /elements after its rest element/],
    ["export type D = {\n  d: Date;\n};", "D", "d: Date", /D\.d: type Date has methods \(\w+…\)/],
    ["export type A = {\n  /** @minimum zero */\n  a: number;\n};", "A", "@minimum", /@minimum "zero": expected a number/],
    ["export type A = {\n  /** @pattern ([a-z */\n  a: string;\n};", "A", "@pattern", /not an ECMAScript regular expression/],
    ["export type A = {\n  /** @maxItems -1 */\n  a: string[];\n};", "A", "@maxItems", /expected a non-negative integer/],
  ];
  for (const [source, typeName, at, message] of cases) assertRefused(source, typeName, at, message);
});

test("type_name that is missing, not exported, a value or generic: field type_name", () => {
  const missing = refusal("export interface A { a: string }\nexport type B = number;", "C");
  assert.equal(missing.field, "type_name");
  assert.match(missing.message, /no exported type named C \(exported types: A, B\)/);
  assert.equal(missing.line, undefined);
  const hidden = refusal("export interface A { a: string }\n\ninterface Hidden { h: number }", "Hidden");
  assert.equal(hidden.field, "type_name");
  assert.match(hidden.message, /declared but not exported/);
  assert.deepEqual([hidden.line, hidden.column], [3, 1]);
  const value = refusal("export const A = 1;", "A");
  assert.equal(value.field, "type_name");
  assert.match(value.message, /a value, not a type/);
  const generic = refusal("export interface Box<T> {\n  value: T;\n}", "Box");
  assert.equal(generic.field, "type_name");
  assert.match(generic.message, /generic/);
  assert.equal(refusal("export type A = string;", "not a name").field, "type_name");
  // Re-exported under another name: found by its exported name.
  const both = typeScriptToJsonSchema('export const Mode = 1;\n/** The mode. */\nexport type Mode = "a" | "b";', "Mode");
  assert.deepEqual(both.schema, { $schema: "https://json-schema.org/draft/2020-12/schema", enum: ["a", "b"], description: "The mode." });
  const renamed = typeScriptToJsonSchema("interface Inner { a: string }\nexport type { Inner as Outer };", "Outer");
  assert.deepEqual(renamed.schema.required, ["a"]);
});

test("TypeScript that does not parse or type-check: the compiler's first diagnostic and position", () => {
  const syntax = refusal("export interface A {\n  a: string\n  b: number;\n", "A");
  assert.equal(syntax.field, "schema");
  assert.match(syntax.message, /^TypeScript error TS1005: '}' expected/);
  assert.deepEqual([syntax.line, syntax.column], [4, 1]);
  const unknownName = "export interface A {\n  a: Missing;\n}";
  const typeError = refusal(unknownName, "A");
  assert.match(typeError.message, /^TypeScript error TS2304: Cannot find name 'Missing'/);
  assert.deepEqual({ line: typeError.line, column: typeError.column }, positionOf(unknownName, "Missing"));
  const mismatch = "export type A = { a: string };\nconst a: A = { a: 1 };";
  assert.match(refusal(mismatch, "A").message, /TS2322/);
  const importing = 'import { X } from "./x.js";\nexport type A = { a: string };';
  const imported = refusal(importing, "A");
  assert.match(imported.message, /an import is not supported/);
  assert.deepEqual([imported.line, imported.column], [1, 1]);
  const importType = 'export type A = { a: import("./x").X };';
  assert.match(refusal(importType, "A").message, /an import is not supported/);
  assert.match(refusal('/// <reference path="/etc/passwd" />\nexport type A = string;', "A").message, /triple-slash reference/);
  assert.match(refusal('/// <reference lib="dom" />\nexport type A = string;', "A").message, /triple-slash reference/);
  assert.match(
    refusal("export {};\ndeclare global {\n  interface String { x: 1 }\n}\nexport type A = string;", "A").message,
    /global augmentation/,
  );
});

test("limits: source length, schema nodes, nesting", () => {
  const long = `export type A = string;\n${"// padding\n".repeat(10_000)}`;
  const tooLong = refusal(long, "A");
  assert.equal(tooLong.limit, "sourceLength");
  assert.match(tooLong.message, /over the limit of 100000/);
  // 4^6 properties once inlined: a DAG whose tree is exponential.
  let wide = "export type L0 = { a: string; b: number; c: boolean; d: null };\n";
  for (let i = 1; i <= 6; i++) wide += `export type L${i} = { a: L${i - 1}; b: L${i - 1}; c: L${i - 1}; d: L${i - 1} };\n`;
  const nodes = refusal(wide, "L6");
  assert.equal(nodes.limit, "schemaNodes");
  assert.match(nodes.message, /more than 10000 nodes \(the limit maxSchemaNodes\)/);
  assert.equal(refusal(wide, "L3", { maxSchemaNodes: 50 }).limit, "schemaNodes");
  assert.doesNotThrow(() => typeScriptToJsonSchema(wide, "L3"));
  const deep = "type Deep<T> = { next: Deep<T[]> };\nexport type D = Deep<string>;";
  const nested = refusal(deep, "D");
  assert.equal(nested.limit, "nesting");
  assert.match(nested.message, /deeper than 64 levels/);
  const parenthesized = refusal(`export type A = ${"(".repeat(45_000)}string${")".repeat(45_000)};`.slice(0, 100_000), "A");
  assert.equal(parenthesized.limit, "nesting");
  assert.deepEqual(
    typeScriptToJsonSchema("export type A = (string);", "A").schema.type,
    "string",
    "the compiler works after a stack overflow",
  );
});

test("a typical conversion, repeated once the compiler is loaded, gives the same schema, whose values type-check", () => {
  const declarations = `
export interface Address { street: string; city: string; zip?: string }
export interface Order {
  id: \`order-\${number}\`;
  status: "pending" | "paid" | "shipped";
  items: { sku: string; quantity: number; price: number }[];
  shipping: Address | null;
  notes?: string;
  tags: Record<string, string>;
}`;
  // Conversions share the loaded compiler: none may leave anything behind that changes the next.
  // (How long one takes is bench material, not asserted here.)
  const first = typeScriptToJsonSchema(declarations, "Order");
  for (let i = 0; i < 20; i++) assert.deepEqual(typeScriptToJsonSchema(declarations, "Order"), first);
  assertTypeChecks(declarations, "Order", sampleTexts(compileJsonSchema(first.schema).dfa, 50, seed++));
  console.log(`# ${typeCheckedValues} sampled values type-checked, ${duplicateKeyTexts} of them with a repeated key`);
});
