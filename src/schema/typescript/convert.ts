// TypeScript type declarations → a JSON Schema (draft 2020-12) whose instances, written as JSON
// texts, all type-check against the named type: `const x: T = <text>;` compiles under `strict`.
// The schema then goes through the JSON Schema front-end (../json-schema/), so what it enforces
// is what that engine enforces.
//
// How: one in-memory Program over the request's source and TypeScript's own lib files, checked
// like any file (a diagnostic is a 400), then a walk over the checker's resolved `ts.Type`s, not
// the syntax, so utility types, generics, mapped and conditional types and intersections arrive
// resolved. Each type maps to the schema of exactly the JSON values TypeScript accepts for it, or
// to fewer (never more): `a: string | undefined` is always written, since a missing required
// property would not type-check even though `undefined` is allowed; a template literal type's
// placeholder stops before its delimiter's first character, as TypeScript's own matching does.
// What no JSON value can have (functions, symbols, bigint, never, branded primitives, private
// class members) is refused, naming the type's path and the declaration's line and column.

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type * as TS from "typescript";
import { type SourcePosition, TypeScriptSchemaError } from "./errors.js";

export { TypeScriptSchemaError } from "./errors.js";

export interface TypeScriptSchemaOptions {
  /** Most schema nodes (subschemas and enum values) the conversion may build. */
  readonly maxSchemaNodes?: number;
}

export interface TypeScriptSchema {
  readonly schema: Record<string, unknown>;
  readonly warnings: string[];
}

/** Longest TypeScript source we compile. */
export const MAX_TYPESCRIPT_SOURCE_LENGTH = 100_000;
export const DEFAULT_MAX_SCHEMA_NODES = 10_000;
/** Deepest nesting of types within types; the JSON Schema engine writes no deeper values. */
export const MAX_TYPE_NESTING = 64;

const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";
const SOURCE_FILE_NAME = "/schema.ts";
// ES5's lib declares every utility type (Partial … Record, Awaited, the string mappings) and
// arrays; later libs add only types no JSON value has (Map, Promise, iterables…) and would cost
// half as much again in a worker's first conversion (~0.5 s instead of ~0.35 s) and its heap.
const LIB_FILE_NAME = "lib.es5.d.ts";
/**
 * Keys TypeScript takes as numeric (`String(Number(key)) === key`) for a number index signature,
 * restricted to integers that round-trip exactly: fewer keys than it accepts, never more.
 */
const NUMERIC_KEY_PATTERN = "^(0|-?[1-9][0-9]{0,14})$";
const MAX_SHOWN_TEXT = 200;

type Schema = Record<string, unknown>;
type TypeScriptModule = typeof TS;

// Loaded on first use: the compiler is ~10 MB of JavaScript, and every process that imports the
// grammar stage (the server, each compile worker) would otherwise load it whether or not a
// request ever sends TypeScript.
const require = createRequire(import.meta.url);
let loadedTypeScript: TypeScriptModule | undefined;

function typescript(): TypeScriptModule {
  loadedTypeScript ??= require("typescript") as TypeScriptModule;
  return loadedTypeScript;
}

// The lib files parse once per process (most of a conversion's time otherwise); a parsed and
// bound SourceFile can serve many Programs with the same options, as TypeScript's language
// service shares them.
const libSourceFiles = new Map<string, TS.SourceFile | undefined>();
let libDirectoryPath: string | undefined;

function libDirectory(ts: TypeScriptModule): string {
  libDirectoryPath ??= dirname(ts.getDefaultLibFilePath({}));
  return libDirectoryPath;
}

/** A lib file of the typescript package, parsed once; no other file is ever read. */
function libSourceFile(
  ts: TypeScriptModule,
  fileName: string,
  languageVersion: TS.ScriptTarget | TS.CreateSourceFileOptions,
): TS.SourceFile | undefined {
  if (libSourceFiles.has(fileName)) return libSourceFiles.get(fileName);
  let file: TS.SourceFile | undefined;
  if (dirname(fileName) === libDirectory(ts) && /^lib\.[a-z0-9.]+\.d\.ts$/.test(fileName.slice(libDirectory(ts).length + 1))) {
    const text = ts.sys.readFile(fileName);
    if (text !== undefined) file = ts.createSourceFile(fileName, text, languageVersion);
  }
  libSourceFiles.set(fileName, file);
  return file;
}

function compilerOptions(ts: TypeScriptModule): TS.CompilerOptions {
  return {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    moduleDetection: ts.ModuleDetectionKind.Force,
    lib: [LIB_FILE_NAME],
    types: [],
    noEmit: true,
    noResolve: true,
    skipLibCheck: true,
    libReplacement: false,
  };
}

function createProgram(ts: TypeScriptModule, file: TS.SourceFile): TS.Program {
  const options = compilerOptions(ts);
  const target = options.target!;
  const host: TS.CompilerHost = {
    getSourceFile: (fileName, languageVersion) => (fileName === SOURCE_FILE_NAME ? file : libSourceFile(ts, fileName, languageVersion)),
    getDefaultLibFileName: () => join(libDirectory(ts), LIB_FILE_NAME),
    writeFile: () => {},
    getCurrentDirectory: () => "/",
    getCanonicalFileName: (fileName) => fileName,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: (fileName) => fileName === SOURCE_FILE_NAME || libSourceFile(ts, fileName, target) !== undefined,
    readFile: (fileName) => (fileName === SOURCE_FILE_NAME ? file.text : libSourceFile(ts, fileName, target)?.text),
    directoryExists: (directory) => directory === "/" || directory === libDirectory(ts),
    getDirectories: () => [],
  };
  return ts.createProgram({ rootNames: [SOURCE_FILE_NAME], options, host });
}

function positionOf(file: TS.SourceFile, node: TS.Node): SourcePosition {
  const { line, character } = file.getLineAndCharacterOfPosition(node.getStart(file));
  return { line: line + 1, column: character + 1 };
}

function shown(text: string): string {
  return text.length <= MAX_SHOWN_TEXT ? text : `${text.slice(0, MAX_SHOWN_TEXT / 2)}…${text.slice(-MAX_SHOWN_TEXT / 2)}`;
}

/**
 * Loads the compiler and parses its lib files, the first conversion's fixed cost (~0.35 s), so
 * that a worker can pay it before its first request's time limit starts.
 */
export function preloadTypeScriptCompiler(): void {
  typeScriptToJsonSchema("export type Preload = string;", "Preload");
}

/** The compiler's first error, as a 400 at its position. */
function diagnosticError(ts: TypeScriptModule, file: TS.SourceFile, diagnostic: TS.Diagnostic): TypeScriptSchemaError {
  const text = shown(ts.flattenDiagnosticMessageText(diagnostic.messageText, " "));
  let position: SourcePosition | undefined;
  if (diagnostic.file === file && diagnostic.start !== undefined) {
    const { line, character } = file.getLineAndCharacterOfPosition(diagnostic.start);
    position = { line: line + 1, column: character + 1 };
  }
  return new TypeScriptSchemaError(`TypeScript error TS${diagnostic.code}: ${text}`, "schema", position);
}

function firstError(diagnostics: readonly TS.Diagnostic[], ts: TypeScriptModule): TS.Diagnostic | undefined {
  return diagnostics.find((d) => d.category === ts.DiagnosticCategory.Error);
}

function refuseReferenceDirectives(file: TS.SourceFile): void {
  const reference = file.referencedFiles[0] ?? file.typeReferenceDirectives[0] ?? file.libReferenceDirectives[0];
  if (reference !== undefined) {
    const { line, character } = file.getLineAndCharacterOfPosition(reference.pos);
    throw new TypeScriptSchemaError(
      "a triple-slash reference directive names another file: the schema must be one self-contained file",
      "schema",
      { line: line + 1, column: character + 1 },
    );
  }
}

/**
 * Declarations that would reach outside the one file: imports (there is no other file to import)
 * and global or module augmentations (they would change what the lib's types mean).
 */
function refuseOutsideReferences(ts: TypeScriptModule, file: TS.SourceFile): void {
  const visit = (node: TS.Node): void => {
    let what: string | undefined;
    if (ts.isImportDeclaration(node) || ts.isImportEqualsDeclaration(node) || ts.isImportTypeNode(node)) what = "an import";
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) what = "a re-export from another module";
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) what = "an import";
    else if (ts.isModuleDeclaration(node) && (ts.isStringLiteral(node.name) || (node.flags & ts.NodeFlags.GlobalAugmentation) !== 0))
      what = "a module or global augmentation";
    if (what !== undefined) {
      throw new TypeScriptSchemaError(
        `${what} is not supported: the schema must be one self-contained file declaring its types`,
        "schema",
        positionOf(file, node),
      );
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

/**
 * The JSON Schema of the JSON values that type-check as `typeName`, one of the types `source`
 * exports. Throws TypeScriptSchemaError (field "schema" or "type_name", with the 1-based line and
 * column of the fault in `source`).
 */
export function typeScriptToJsonSchema(source: string, typeName: string, options: TypeScriptSchemaOptions = {}): TypeScriptSchema {
  if (source.length > MAX_TYPESCRIPT_SOURCE_LENGTH) {
    throw new TypeScriptSchemaError(
      `the TypeScript source has ${source.length} characters, over the limit of ${MAX_TYPESCRIPT_SOURCE_LENGTH}`,
      "schema",
      undefined,
      "sourceLength",
    );
  }
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(typeName)) {
    throw new TypeScriptSchemaError(`type_name ${shown(JSON.stringify(typeName))} is not a TypeScript identifier`, "type_name");
  }
  try {
    return convertSource(source, typeName, options);
  } catch (error) {
    // The compiler's parser and checker recurse once per level of nesting, and 100,000
    // characters of `((((…` pass the stack: a refusal, not a crash.
    if (error instanceof RangeError && /call stack/.test(error.message)) {
      throw new TypeScriptSchemaError("the declarations nest too deeply for the TypeScript compiler", "schema", undefined, "nesting");
    }
    throw error;
  }
}

function convertSource(source: string, typeName: string, options: TypeScriptSchemaOptions): TypeScriptSchema {
  const ts = typescript();
  const file = ts.createSourceFile(SOURCE_FILE_NAME, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  // Before the Program: a `/// <reference lib>` would have it parse more lib files.
  refuseReferenceDirectives(file);
  const program = createProgram(ts, file);
  const syntaxError = firstError(program.getSyntacticDiagnostics(file), ts);
  if (syntaxError !== undefined) throw diagnosticError(ts, file, syntaxError);
  refuseOutsideReferences(ts, file);
  const typeError = firstError(program.getSemanticDiagnostics(file), ts);
  if (typeError !== undefined) throw diagnosticError(ts, file, typeError);

  const checker = program.getTypeChecker();
  const { symbol, declaration } = exportedType(ts, checker, file, typeName);
  const converter = new Converter(ts, checker, file, options.maxSchemaNodes ?? DEFAULT_MAX_SCHEMA_NODES);
  const site: Site = { node: ts.getNameOfDeclaration(declaration) ?? declaration, path: typeName, mayBeAbsent: false };
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  let root = converter.convert(type, site);
  // convert() documents a type by its own alias or interface; a root alias of a primitive
  // (`type Name = string`) keeps no trace of it.
  if (converter.typeDocSymbol(type) !== symbol) root = converter.withDeclarationDocs(root, declaration, site, type);
  const schema: Schema = { $schema: DRAFT_2020_12, ...root };
  const defs = converter.definitions();
  if (defs !== undefined) schema.$defs = defs;
  return { schema, warnings: converter.warnings };
}

/** The exported type named `typeName` and its declaration in the source, or a "type_name" 400. */
function exportedType(
  ts: TypeScriptModule,
  checker: TS.TypeChecker,
  file: TS.SourceFile,
  typeName: string,
): { symbol: TS.Symbol; declaration: TS.Declaration } {
  const moduleSymbol = checker.getSymbolAtLocation(file);
  const exported = moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol);
  const resolve = (symbol: TS.Symbol): TS.Symbol =>
    (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol;
  const found = exported.find((s) => s.name === typeName);
  if (found === undefined) {
    const local = file.statements.find((s) => isTypeDeclaration(ts, s) && s.name?.text === typeName);
    if (local !== undefined) {
      throw new TypeScriptSchemaError(
        `type ${typeName} is declared but not exported: only exported types can be named`,
        "type_name",
        positionOf(file, local),
      );
    }
    const types = exported.filter((s) => (resolve(s).flags & ts.SymbolFlags.Type) !== 0).map((s) => s.name);
    const known = types.length === 0 ? "the schema exports no types" : `exported types: ${shown(types.join(", "))}`;
    throw new TypeScriptSchemaError(`no exported type named ${typeName} (${known})`, "type_name");
  }
  const symbol = resolve(found);
  // A name may be a value and a type at once (`export const X = …; export type X = …`).
  const declaration = symbol.declarations?.find((d) => d.getSourceFile() === file && isTypeDeclaration(ts, d));
  if ((symbol.flags & ts.SymbolFlags.Type) === 0 || declaration === undefined) {
    throw new TypeScriptSchemaError(`${typeName} is exported as a value, not a type`, "type_name");
  }
  const generic = symbol.declarations?.find(
    (d) =>
      (ts.isInterfaceDeclaration(d) || ts.isTypeAliasDeclaration(d) || ts.isClassDeclaration(d)) && (d.typeParameters?.length ?? 0) > 0,
  );
  if (generic !== undefined) {
    throw new TypeScriptSchemaError(
      `type ${typeName} is generic: export an instantiation (e.g. \`export type ${typeName}OfString = ${typeName}<string>\`) and name that`,
      "type_name",
      positionOf(file, generic),
    );
  }
  return { symbol, declaration };
}

function isTypeDeclaration(
  ts: TypeScriptModule,
  node: TS.Node,
): node is TS.InterfaceDeclaration | TS.TypeAliasDeclaration | TS.EnumDeclaration | TS.ClassDeclaration {
  return ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node) || ts.isClassDeclaration(node);
}

/** Where the walk is: a node of the source to point an error at, and the path from the root type. */
interface Site {
  readonly node: TS.Node;
  /** As messages show it: `Order.items[].price`. */
  readonly path: string;
  /** The value may be left out (optional property or element, index signature value): `undefined` in its type says so. */
  readonly mayBeAbsent: boolean;
}

type ValueKind = "string" | "number" | "array" | "object" | "other";

/** JSDoc tags that become keywords, and the kind of value each constrains. */
const TAG_KEYWORDS: ReadonlyMap<string, { kind: ValueKind; value: "number" | "count" | "regex" | "text" }> = new Map([
  ["minimum", { kind: "number", value: "number" }],
  ["maximum", { kind: "number", value: "number" }],
  ["minLength", { kind: "string", value: "count" }],
  ["maxLength", { kind: "string", value: "count" }],
  ["pattern", { kind: "string", value: "regex" }],
  ["format", { kind: "string", value: "text" }],
  ["minItems", { kind: "array", value: "count" }],
  ["maxItems", { kind: "array", value: "count" }],
]);

const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

class Converter {
  readonly warnings: string[] = [];
  private nodes = 0;
  private depth = 0;
  private readonly defs = new Map<string, Schema>();
  /** Types already in `defs`: later uses refer to them. */
  private readonly defined = new Map<TS.Type, string>();
  /** Types being converted (the walk's ancestors), with their def name once one refers back. */
  private readonly open = new Map<TS.Type, { name: string | undefined }>();
  private readonly usedNames = new Set<string>();

  constructor(
    private readonly ts: TypeScriptModule,
    private readonly checker: TS.TypeChecker,
    private readonly file: TS.SourceFile,
    private readonly maxNodes: number,
  ) {}

  definitions(): Schema | undefined {
    return this.defs.size === 0 ? undefined : Object.fromEntries(this.defs);
  }

  convert(type: TS.Type, site: Site): Schema {
    this.countNode(site);
    const definedName = this.defined.get(type);
    if (definedName !== undefined) return { $ref: defRef(definedName) };
    const ancestor = this.open.get(type);
    if (ancestor !== undefined) {
      // A type within itself: recursion, which a schema states as a $ref to a def of the type.
      ancestor.name ??= this.defName(type);
      return { $ref: defRef(ancestor.name) };
    }
    if (this.depth >= MAX_TYPE_NESTING) {
      throw this.refuse(site, `types nest deeper than ${MAX_TYPE_NESTING} levels (the limit on nesting)`, "nesting");
    }
    const entry: { name: string | undefined } = { name: undefined };
    this.open.set(type, entry);
    this.depth++;
    try {
      const schema = this.withTypeDocs(type, this.convertType(type, site), site);
      if (entry.name === undefined) return schema;
      this.defs.set(entry.name, schema);
      this.defined.set(type, entry.name);
      return { $ref: defRef(entry.name) };
    } finally {
      this.depth--;
      this.open.delete(type);
    }
  }

  private countNode(site: Site): void {
    if (++this.nodes > this.maxNodes) {
      throw this.refuse(site, `the JSON Schema would have more than ${this.maxNodes} nodes (the limit maxSchemaNodes)`, "schemaNodes");
    }
  }

  private refuse(site: Site, message: string, limit?: "schemaNodes" | "nesting"): TypeScriptSchemaError {
    return new TypeScriptSchemaError(`${shown(site.path)}: ${message}`, "schema", positionOf(this.file, site.node), limit);
  }

  private typeText(type: TS.Type): string {
    return shown(this.checker.typeToString(type));
  }

  private convertType(type: TS.Type, site: Site): Schema {
    const F = this.ts.TypeFlags;
    const flags = type.flags;
    if (flags & (F.Any | F.Unknown)) {
      this.warnings.push(
        `${shown(site.path)} has type ${this.typeText(type)}: written as any JSON value (nested at most two levels of arrays and objects)`,
      );
      return {};
    }
    if (flags & F.Boolean) return { type: "boolean" };
    if (flags & F.Union) return this.convertUnion(type as TS.UnionType, site);
    if (flags & F.String) return { type: "string" };
    if (flags & F.Number) return { type: "number" };
    if (flags & F.Null) return { type: "null" };
    if (flags & (F.StringLiteral | F.NumberLiteral)) return { const: (type as TS.LiteralType).value };
    if (flags & F.BooleanLiteral) return { const: type === this.checker.getTrueType() };
    if (flags & F.TemplateLiteral) return { type: "string", pattern: this.templatePattern(type as TS.TemplateLiteralType, site) };
    if (flags & F.Intersection) return this.convertIntersection(type as TS.IntersectionType, site);
    if (flags & F.NonPrimitive) return { type: ["object", "array"] };
    if (flags & F.Object) return this.convertObject(type as TS.ObjectType, site);
    throw this.refuse(site, this.refusal(type));
  }

  /** Why no JSON value has `type` (one of the kinds convertType does not map). */
  private refusal(type: TS.Type): string {
    const F = this.ts.TypeFlags;
    const flags = type.flags;
    const text = this.typeText(type);
    if (flags & (F.BigInt | F.BigIntLiteral)) return `type ${text} is a bigint, which JSON cannot hold`;
    if (flags & (F.ESSymbol | F.UniqueESSymbol)) return `type ${text} is a symbol, which JSON cannot hold`;
    if (flags & F.Never) return "type never has no values";
    if (flags & (F.Undefined | F.Void)) return `type ${text} is undefined, which JSON cannot hold`;
    if (flags & F.Enum) return `enum ${text} has a computed member, whose value is unknown before run time`;
    if (flags & F.TypeParameter) return `type ${text} is an unresolved type parameter (or \`this\`): name a concrete type`;
    if (flags & F.Conditional) return `conditional type ${text} cannot be resolved`;
    if (flags & F.StringMapping) return `type ${text} (an intrinsic string mapping over a non-literal) is not supported`;
    return `type ${text} cannot be resolved to a JSON type`;
  }

  private convertUnion(type: TS.UnionType, site: Site): Schema {
    const F = this.ts.TypeFlags;
    const typeNames: string[] = [];
    const values: (string | number | boolean | null)[] = [];
    const branches: Schema[] = [];
    let sawUndefined = false;
    let sawTrue = false;
    let sawFalse = false;
    let sawNull = false;
    for (const member of type.types) {
      const flags = member.flags;
      if (flags & (F.Undefined | F.Void)) sawUndefined = true;
      else if (flags & F.BooleanLiteral) {
        if (member === this.checker.getTrueType()) sawTrue = true;
        else sawFalse = true;
      } else if (flags & F.Null) sawNull = true;
      else if (flags & (F.StringLiteral | F.NumberLiteral)) {
        this.countNode(site);
        const value = (member as TS.LiteralType).value as string | number;
        if (!values.includes(value)) values.push(value);
      } else if (flags & F.String) typeNames.push("string");
      else if (flags & F.Number) typeNames.push("number");
      else branches.push(this.convert(member, site));
    }
    if (sawTrue && sawFalse) typeNames.push("boolean");
    else if (sawTrue || sawFalse) values.push(sawTrue);
    if (sawNull) {
      if (typeNames.length > 0 || branches.length > 0) typeNames.push("null");
      else values.push(null);
    }
    const parts: Schema[] = [];
    if (typeNames.length > 0) parts.push({ type: typeNames.length === 1 ? typeNames[0] : typeNames });
    if (values.length > 0) parts.push(values.length === 1 ? { const: values[0] } : { enum: values });
    parts.push(...branches);
    if (sawUndefined && !site.mayBeAbsent && parts.length > 0) {
      this.warnings.push(`${shown(site.path)}: undefined in ${this.typeText(type)} is not a JSON value; written without it`);
    }
    if (parts.length === 0) throw this.refuse(site, this.refusal(type.types[0]!));
    return parts.length === 1 ? parts[0]! : { anyOf: parts };
  }

  private isEmptyObject(type: TS.Type): boolean {
    return (
      (type.flags & this.ts.TypeFlags.Object) !== 0 &&
      this.checker.getPropertiesOfType(type).length === 0 &&
      this.checker.getIndexInfosOfType(type).length === 0 &&
      this.checker.getSignaturesOfType(type, this.ts.SignatureKind.Call).length === 0 &&
      this.checker.getSignaturesOfType(type, this.ts.SignatureKind.Construct).length === 0
    );
  }

  // The checker distributes intersections over unions and reduces conflicting primitives to
  // never, so what reaches here is object types (merged property by property by the checker) or
  // a primitive with object types: `string & {}` is `string`, but a brand (`string & { __b: 1 }`)
  // has no JSON value.
  private convertIntersection(type: TS.IntersectionType, site: Site): Schema {
    const F = this.ts.TypeFlags;
    const parts = type.types.filter((part) => !this.isEmptyObject(part) && (part.flags & F.NonPrimitive) === 0);
    if (parts.length === 1) return this.convert(parts[0]!, site);
    if (parts.length === 0) return this.convertObjectMembers(type, site);
    const primitive = parts.find((part) => (part.flags & F.Object) === 0);
    if (primitive !== undefined) {
      throw this.refuse(
        site,
        `type ${this.typeText(type)} intersects ${this.typeText(primitive)} with an object type (a branded type): no JSON value has it`,
      );
    }
    if (parts.some((part) => this.checker.isArrayType(part) || this.checker.isTupleType(part))) {
      throw this.refuse(site, `type ${this.typeText(type)} intersects an array with an object type: no JSON value has it`);
    }
    return this.convertObjectMembers(type, site);
  }

  private convertObject(type: TS.ObjectType, site: Site): Schema {
    if (this.checker.isArrayType(type)) {
      const element = this.checker.getTypeArguments(type as TS.TypeReference)[0]!;
      return { type: "array", items: this.convert(element, { node: site.node, path: `${site.path}[]`, mayBeAbsent: false }) };
    }
    if (this.checker.isTupleType(type)) return this.convertTuple(type as TS.TypeReference, site);
    return this.convertObjectMembers(type, site);
  }

  private convertTuple(type: TS.TypeReference, site: Site): Schema {
    const E = this.ts.ElementFlags;
    const target = type.target as TS.TupleType;
    const elements = this.checker.getTypeArguments(type);
    const prefixItems: Schema[] = [];
    let rest: Schema | undefined;
    for (let i = 0; i < target.elementFlags.length; i++) {
      const flag = target.elementFlags[i]!;
      const element = elements[i]!;
      if (flag & E.Variadic) throw this.refuse(site, `tuple ${this.typeText(type)} has an unresolved variadic element`);
      if (rest !== undefined) {
        throw this.refuse(
          site,
          `tuple ${this.typeText(type)} has elements after its rest element, which JSON Schema's prefixItems cannot state`,
        );
      }
      if (flag & E.Rest) rest = this.convert(element, { node: site.node, path: `${site.path}[]`, mayBeAbsent: false });
      else prefixItems.push(this.convert(element, { node: site.node, path: `${site.path}[${i}]`, mayBeAbsent: (flag & E.Optional) !== 0 }));
    }
    const schema: Schema = { type: "array" };
    if (prefixItems.length > 0) schema.prefixItems = prefixItems;
    if (target.minLength > 0) schema.minItems = target.minLength;
    schema.items = rest ?? false;
    return schema;
  }

  private convertObjectMembers(type: TS.Type, site: Site): Schema {
    const ts = this.ts;
    const checker = this.checker;
    if (checker.getSignaturesOfType(type, ts.SignatureKind.Call).length > 0) {
      throw this.refuse(site, `type ${this.typeText(type)} is a function, which JSON cannot hold`);
    }
    if (checker.getSignaturesOfType(type, ts.SignatureKind.Construct).length > 0) {
      throw this.refuse(site, `type ${this.typeText(type)} is a constructor, which JSON cannot hold`);
    }
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const property of this.propertiesInSourceOrder(type)) {
      const declaration = declarationOf(property);
      const inSource = declaration !== undefined && declaration.getSourceFile() === this.file ? declaration : undefined;
      const propertySite: Site = { node: inSource ?? site.node, path: `${site.path}${memberPath(property.name)}`, mayBeAbsent: true };
      const escaped = property.escapedName as string;
      if (escaped.startsWith("__@")) throw this.refuse(propertySite, "a symbol-keyed property, which JSON cannot hold");
      if (escaped.startsWith("__#") || (declaration !== undefined && this.isPrivate(declaration))) {
        throw this.refuse(
          propertySite,
          "a private or protected class member: no object literal (and so no JSON value) is assignable to the class",
        );
      }
      if (property.flags & ts.SymbolFlags.Method) {
        if (inSource !== undefined) throw this.refuse(propertySite, "a method, which JSON cannot hold");
        throw this.refuse(site, `type ${this.typeText(type)} has methods (${property.name}…), which JSON cannot hold`);
      }
      const optional = (property.flags & ts.SymbolFlags.Optional) !== 0;
      const propertyType = checker.getTypeOfSymbol(property);
      if (this.isAbsentOnly(propertyType)) {
        // `b?: never` (or undefined): the property must be left out, which leaving it unnamed does.
        if (optional) continue;
        throw this.refuse(propertySite, this.refusal(propertyType));
      }
      if (!optional && this.includesUndefined(propertyType)) {
        this.warnings.push(
          `${shown(propertySite.path)} is required with type ${this.typeText(propertyType)}: always written, since JSON cannot hold undefined and a missing required property does not type-check`,
        );
      }
      let schema = this.convert(propertyType, propertySite);
      if (declaration !== undefined) schema = this.withDeclarationDocs(schema, declaration, propertySite, propertyType);
      // Defined, not assigned: assigning "__proto__" would set the object's prototype, not a property.
      Object.defineProperty(properties, property.name, { value: schema, enumerable: true, writable: true, configurable: true });
      if (!optional) required.push(property.name);
    }
    const patternProperties: Record<string, Schema> = {};
    let additionalProperties: Schema | false = false;
    for (const info of checker.getIndexInfosOfType(type)) {
      const key = info.keyType;
      const declaration = info.declaration !== undefined && info.declaration.getSourceFile() === this.file ? info.declaration : undefined;
      const valueSite = (keyText: string): Site => ({
        node: declaration ?? site.node,
        path: `${site.path}[${keyText}]`,
        mayBeAbsent: true,
      });
      if (key.flags & ts.TypeFlags.String) additionalProperties = this.convert(info.type, valueSite("string"));
      else if (key.flags & ts.TypeFlags.Number) patternProperties[NUMERIC_KEY_PATTERN] = this.convert(info.type, valueSite("number"));
      else if (key.flags & ts.TypeFlags.TemplateLiteral) {
        const keySite = valueSite(this.typeText(key));
        patternProperties[this.templatePattern(key as TS.TemplateLiteralType, keySite)] = this.convert(info.type, keySite);
      } else if ((key.flags & (ts.TypeFlags.ESSymbol | ts.TypeFlags.UniqueESSymbol)) === 0) {
        throw this.refuse(valueSite(this.typeText(key)), `an index signature keyed by ${this.typeText(key)} is not supported`);
      }
      // A symbol-keyed index signature constrains no key a JSON object can have.
    }
    const schema: Schema = { type: "object" };
    if (Object.keys(properties).length > 0) schema.properties = properties;
    if (required.length > 0) schema.required = required;
    if (Object.keys(patternProperties).length > 0) schema.patternProperties = patternProperties;
    // Without an index signature, a property the type does not name fails a fresh object literal's
    // excess-property check.
    schema.additionalProperties = additionalProperties;
    return schema;
  }

  /**
   * Properties in the order the source declares them when it declares them all (the checker
   * lists an interface's own properties before those it extends), else in the checker's order.
   */
  private propertiesInSourceOrder(type: TS.Type): TS.Symbol[] {
    const properties = this.checker.getPropertiesOfType(type);
    const positions = properties.map((property) => {
      const declaration = declarationOf(property);
      return declaration !== undefined && declaration.getSourceFile() === this.file ? declaration.pos : undefined;
    });
    if (positions.some((position) => position === undefined)) return properties;
    return properties
      .map((property, i) => ({ property, position: positions[i]! }))
      .sort((a, b) => a.position - b.position)
      .map((p) => p.property);
  }

  private isPrivate(declaration: TS.Declaration): boolean {
    const flags = this.ts.getCombinedModifierFlags(declaration);
    return (flags & (this.ts.ModifierFlags.Private | this.ts.ModifierFlags.Protected)) !== 0;
  }

  private isAbsentOnly(type: TS.Type): boolean {
    const absent = this.ts.TypeFlags.Undefined | this.ts.TypeFlags.Void | this.ts.TypeFlags.Never;
    if (type.flags & this.ts.TypeFlags.Union) return (type as TS.UnionType).types.every((t) => (t.flags & absent) !== 0);
    return (type.flags & absent) !== 0;
  }

  private includesUndefined(type: TS.Type): boolean {
    const absent = this.ts.TypeFlags.Undefined | this.ts.TypeFlags.Void;
    return (type.flags & this.ts.TypeFlags.Union) !== 0 && (type as TS.UnionType).types.some((t) => (t.flags & absent) !== 0);
  }

  /**
   * A template literal type as an anchored ECMAScript pattern. TypeScript matches a string to
   * `a${string}b${number}` left to right, each placeholder ending at the first occurrence of the
   * text after it; so a placeholder here excludes that text's first character, and then the
   * occurrence TypeScript finds is the one we wrote. Adjacent placeholders are refused.
   */
  private templatePattern(type: TS.TemplateLiteralType, site: Site): string {
    const F = this.ts.TypeFlags;
    let pattern = `^${escapeRegExp(type.texts[0]!)}`;
    for (let i = 0; i < type.types.length; i++) {
      const placeholder = type.types[i]!;
      const after = type.texts[i + 1]!;
      const last = i === type.types.length - 1;
      if (after === "" && !last) {
        throw this.refuse(site, `template literal type ${this.typeText(type)} has adjacent placeholders, which are not supported`);
      }
      const stop = after === "" ? undefined : String.fromCodePoint(after.codePointAt(0)!);
      if (placeholder.flags & F.String) pattern += stop === undefined ? "[\\s\\S]*" : `[^${classEscape(stop)}]*`;
      else if (placeholder.flags & F.Number) {
        // Numbers TypeScript accepts (`+text` finite), without the character that ends the placeholder.
        if (stop !== undefined && /[0-9]/.test(stop)) {
          throw this.refuse(
            site,
            `template literal type ${this.typeText(type)} has a digit right after a \${number} placeholder, which is not supported`,
          );
        }
        pattern += `${stop === "-" ? "" : "-?"}(0|[1-9][0-9]*)${stop === "." ? "" : "(\\.[0-9]+)?"}`;
      } else {
        throw this.refuse(
          site,
          `template literal type ${this.typeText(type)} has a \${${this.typeText(placeholder)}} placeholder; only string and number placeholders are supported`,
        );
      }
      pattern += escapeRegExp(after);
    }
    return `${pattern}$`;
  }

  private defName(type: TS.Type): string {
    const symbol = type.aliasSymbol ?? type.symbol;
    const named = symbol !== undefined && !symbol.name.startsWith("__");
    const base =
      (named ? this.checker.typeToString(type) : "Type")
        .replace(/[^A-Za-z0-9_]+/g, "_")
        .replace(/^_+|_+$/g, "")
        .slice(0, 64) || "Type";
    let name = base;
    for (let n = 2; this.usedNames.has(name); n++) name = `${base}_${n}`;
    this.usedNames.add(name);
    return name;
  }

  /** The symbol whose declarations document `type`: its alias, or its interface, class or enum. */
  typeDocSymbol(type: TS.Type): TS.Symbol | undefined {
    const T = this.ts.SymbolFlags;
    if (type.aliasSymbol !== undefined) return type.aliasSymbol;
    return type.symbol !== undefined && (type.symbol.flags & (T.Interface | T.Class | T.Enum)) !== 0 ? type.symbol : undefined;
  }

  /** The docs of the named type declared in the source. */
  private withTypeDocs(type: TS.Type, schema: Schema, site: Site): Schema {
    let result = schema;
    for (const declaration of this.typeDocSymbol(type)?.declarations ?? []) {
      if (declaration.getSourceFile() === this.file) result = this.applyDocs(result, declaration, site, type);
    }
    return result;
  }

  /**
   * `schema` with the keywords of a declaration's JSDoc (a property's, or the named root type's),
   * after those of the type aliases its type is written with: in `name: Name` where
   * `type Name = string` carries `@maxLength`, the type is plain `string`, with no trace of Name.
   */
  withDeclarationDocs(schema: Schema, declaration: TS.Node, site: Site, type: TS.Type): Schema {
    const ts = this.ts;
    const aliases: TS.Declaration[] = [];
    let node = (declaration as { type?: TS.Node }).type;
    while (node !== undefined && ts.isTypeReferenceNode(node) && aliases.length < MAX_TYPE_NESTING) {
      const alias = this.checker.getSymbolAtLocation(node.typeName)?.declarations?.find(ts.isTypeAliasDeclaration);
      if (alias === undefined || alias.getSourceFile() !== this.file) break;
      aliases.push(alias);
      node = alias.type;
    }
    let result = schema;
    for (const alias of aliases.reverse()) result = this.applyDocs(result, alias, site, type);
    return this.applyDocs(result, declaration, site, type);
  }

  private applyDocs(schema: Schema, declaration: TS.Node, site: Site, type: TS.Type | undefined): Schema {
    const ts = this.ts;
    const keywords: Schema = {};
    for (const doc of ts.getJSDocCommentsAndTags(declaration)) {
      if (!ts.isJSDoc(doc)) continue;
      const text = ts.getTextOfJSDocComment(doc.comment)?.trim();
      if (text) keywords.description = text;
      for (const tag of doc.tags ?? []) {
        const name = tag.tagName.text;
        const value = ts.getTextOfJSDocComment(tag.comment)?.trim() ?? "";
        if (name === "description") {
          if (value !== "") keywords.description = value;
          continue;
        }
        const keyword = TAG_KEYWORDS.get(name);
        if (keyword === undefined) continue;
        keywords[name] = this.tagValue(name, value, keyword.value, tag);
        if (type !== undefined && !this.valueKinds(type).has(keyword.kind)) {
          const { line, column } = positionOf(this.file, tag);
          this.warnings.push(
            `${shown(site.path)}: @${name} (line ${line}, column ${column}) has no effect: type ${this.typeText(type)} has no ${keyword.kind} values`,
          );
        }
      }
    }
    return Object.keys(keywords).length === 0 ? schema : { ...schema, ...keywords };
  }

  private tagValue(name: string, text: string, kind: "number" | "count" | "regex" | "text", tag: TS.JSDocTag): string | number {
    const fail = (what: string): TypeScriptSchemaError =>
      new TypeScriptSchemaError(`@${name} ${shown(JSON.stringify(text))}: ${what}`, "schema", positionOf(this.file, tag));
    switch (kind) {
      case "number": {
        if (!JSON_NUMBER.test(text) || !Number.isFinite(Number(text))) throw fail("expected a number");
        return Number(text);
      }
      case "count": {
        if (!/^[0-9]{1,9}$/.test(text)) throw fail("expected a non-negative integer");
        return Number(text);
      }
      case "regex": {
        try {
          new RegExp(text, "u");
        } catch (error) {
          throw fail(`not an ECMAScript regular expression (${(error as Error).message})`);
        }
        return text;
      }
      case "text": {
        if (text === "") throw fail("expected a value");
        return text;
      }
    }
  }

  /** The kinds of JSON value a type has, to tell when a tag constrains none of them. */
  private valueKinds(type: TS.Type, kinds = new Set<ValueKind>()): Set<ValueKind> {
    const F = this.ts.TypeFlags;
    const flags = type.flags;
    if (flags & (F.Any | F.Unknown)) for (const kind of ["string", "number", "array", "object", "other"] as const) kinds.add(kind);
    else if (flags & F.Union) for (const member of (type as TS.UnionType).types) this.valueKinds(member, kinds);
    else if (flags & (F.String | F.StringLiteral | F.TemplateLiteral)) kinds.add("string");
    else if (flags & (F.Number | F.NumberLiteral)) kinds.add("number");
    else if (this.checker.isArrayType(type) || this.checker.isTupleType(type)) kinds.add("array");
    else if (flags & (F.Object | F.Intersection | F.NonPrimitive)) kinds.add("object");
    else kinds.add("other");
    return kinds;
  }
}

function declarationOf(property: TS.Symbol): TS.Declaration | undefined {
  return property.valueDeclaration ?? property.declarations?.[0];
}

function defRef(name: string): string {
  return `#/$defs/${name}`;
}

function memberPath(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

/** One character for a character class, as a code point escape (valid with the `u` flag). */
function classEscape(character: string): string {
  return `\\u{${character.codePointAt(0)!.toString(16)}}`;
}
