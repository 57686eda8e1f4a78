/**
 * GGUF (v2/v3) header reader: metadata key/values and tensor infos, never tensor data.
 *
 * Model files can be gigabytes, so the file is read front to back in chunks with fs.readSync
 * and reading stops at the end of the tensor-info table. String arrays (a 262k-token vocabulary)
 * are kept as one byte buffer plus offsets: the vocabulary needs each token's exact bytes, and
 * decoding 262k strings to JS strings only to encode them back would be slow and could not
 * represent pieces that are not valid UTF-8.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** gguf_type in ggml/include/gguf.h. */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GgufValueType)[keyof typeof GgufValueType];

/** ggml_type in ggml/include/ggml.h (removed ids 4, 5, 31-33, 36-38 are absent). */
export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ3_XXS: 18,
  IQ1_S: 19,
  IQ4_NL: 20,
  IQ3_S: 21,
  IQ2_S: 22,
  IQ4_XS: 23,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  IQ1_M: 29,
  BF16: 30,
  TQ1_0: 34,
  TQ2_0: 35,
  MXFP4: 39,
  NVFP4: 40,
  Q1_0: 41,
  Q2_0: 42,
} as const;
export type GgmlType = (typeof GgmlType)[keyof typeof GgmlType];

export interface GgmlTypeInfo {
  readonly name: string;
  /** Elements per block. */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
}

/** Block layout per ggml type (ggml.c type_traits, ggml-common.h block structs). */
export const GGML_TYPE_INFO: ReadonlyMap<number, GgmlTypeInfo> = new Map<number, GgmlTypeInfo>([
  [GgmlType.F32, { name: "F32", blockSize: 1, typeSize: 4 }],
  [GgmlType.F16, { name: "F16", blockSize: 1, typeSize: 2 }],
  [GgmlType.Q4_0, { name: "Q4_0", blockSize: 32, typeSize: 18 }],
  [GgmlType.Q4_1, { name: "Q4_1", blockSize: 32, typeSize: 20 }],
  [GgmlType.Q5_0, { name: "Q5_0", blockSize: 32, typeSize: 22 }],
  [GgmlType.Q5_1, { name: "Q5_1", blockSize: 32, typeSize: 24 }],
  [GgmlType.Q8_0, { name: "Q8_0", blockSize: 32, typeSize: 34 }],
  [GgmlType.Q8_1, { name: "Q8_1", blockSize: 32, typeSize: 36 }],
  [GgmlType.Q2_K, { name: "Q2_K", blockSize: 256, typeSize: 84 }],
  [GgmlType.Q3_K, { name: "Q3_K", blockSize: 256, typeSize: 110 }],
  [GgmlType.Q4_K, { name: "Q4_K", blockSize: 256, typeSize: 144 }],
  [GgmlType.Q5_K, { name: "Q5_K", blockSize: 256, typeSize: 176 }],
  [GgmlType.Q6_K, { name: "Q6_K", blockSize: 256, typeSize: 210 }],
  [GgmlType.Q8_K, { name: "Q8_K", blockSize: 256, typeSize: 292 }],
  [GgmlType.IQ2_XXS, { name: "IQ2_XXS", blockSize: 256, typeSize: 66 }],
  [GgmlType.IQ2_XS, { name: "IQ2_XS", blockSize: 256, typeSize: 74 }],
  [GgmlType.IQ3_XXS, { name: "IQ3_XXS", blockSize: 256, typeSize: 98 }],
  [GgmlType.IQ1_S, { name: "IQ1_S", blockSize: 256, typeSize: 66 }],
  [GgmlType.IQ4_NL, { name: "IQ4_NL", blockSize: 32, typeSize: 18 }],
  [GgmlType.IQ3_S, { name: "IQ3_S", blockSize: 256, typeSize: 110 }],
  [GgmlType.IQ2_S, { name: "IQ2_S", blockSize: 256, typeSize: 82 }],
  [GgmlType.IQ4_XS, { name: "IQ4_XS", blockSize: 256, typeSize: 136 }],
  [GgmlType.I8, { name: "I8", blockSize: 1, typeSize: 1 }],
  [GgmlType.I16, { name: "I16", blockSize: 1, typeSize: 2 }],
  [GgmlType.I32, { name: "I32", blockSize: 1, typeSize: 4 }],
  [GgmlType.I64, { name: "I64", blockSize: 1, typeSize: 8 }],
  [GgmlType.F64, { name: "F64", blockSize: 1, typeSize: 8 }],
  [GgmlType.IQ1_M, { name: "IQ1_M", blockSize: 256, typeSize: 56 }],
  [GgmlType.BF16, { name: "BF16", blockSize: 1, typeSize: 2 }],
  [GgmlType.TQ1_0, { name: "TQ1_0", blockSize: 256, typeSize: 54 }],
  [GgmlType.TQ2_0, { name: "TQ2_0", blockSize: 256, typeSize: 66 }],
  [GgmlType.MXFP4, { name: "MXFP4", blockSize: 32, typeSize: 17 }],
  [GgmlType.NVFP4, { name: "NVFP4", blockSize: 64, typeSize: 36 }],
  [GgmlType.Q1_0, { name: "Q1_0", blockSize: 128, typeSize: 18 }],
  [GgmlType.Q2_0, { name: "Q2_0", blockSize: 64, typeSize: 18 }],
]);

/** Bytes a tensor of `type` with `numElements` elements occupies (throws on unknown types). */
export function ggmlTensorBytes(type: number, numElements: number): number {
  const info = GGML_TYPE_INFO.get(type);
  if (!info) throw new GgufFormatError(`unknown ggml type ${type}`);
  if (numElements % info.blockSize !== 0) {
    throw new GgufFormatError(`${numElements} elements is not a multiple of ${info.name}'s block size ${info.blockSize}`);
  }
  return (numElements / info.blockSize) * info.typeSize;
}

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as little-endian u32
export const GGUF_DEFAULT_ALIGNMENT = 32;

export class GgufFormatError extends Error {
  constructor(
    message: string,
    readonly position?: number,
  ) {
    super(position === undefined ? message : `${message} (at byte ${position})`);
    this.name = "GgufFormatError";
  }
}

/** An array of strings kept as raw bytes: item i = bytes[offsets[i] .. offsets[i+1]). */
export class GgufStringArray {
  readonly itemType = GgufValueType.STRING;
  constructor(
    readonly offsets: Uint32Array,
    readonly bytes: Uint8Array,
  ) {}
  get length(): number {
    return this.offsets.length - 1;
  }
  /** Subarray view of item i's bytes (no copy). */
  itemBytes(i: number): Uint8Array {
    return this.bytes.subarray(this.offsets[i]!, this.offsets[i + 1]!);
  }
  /** Item i decoded as UTF-8 (lossy for invalid UTF-8). */
  item(i: number): string {
    return utf8.decode(this.itemBytes(i));
  }
  toArray(): string[] {
    const out = new Array<string>(this.length);
    for (let i = 0; i < out.length; i++) out[i] = this.item(i);
    return out;
  }
}

/** An array of numbers/bools (typed array by item type), of nested arrays, or of strings. */
export interface GgufTypedArray {
  readonly itemType: Exclude<GgufValueType, typeof GgufValueType.STRING | typeof GgufValueType.ARRAY>;
  /** UINT8 and BOOL → Uint8Array, INT8 → Int8Array, ..., UINT64 → BigUint64Array, INT64 → BigInt64Array. */
  readonly values:
    | Uint8Array
    | Int8Array
    | Uint16Array
    | Int16Array
    | Uint32Array
    | Int32Array
    | Float32Array
    | Float64Array
    | BigUint64Array
    | BigInt64Array;
}
export interface GgufNestedArray {
  readonly itemType: typeof GgufValueType.ARRAY;
  readonly values: GgufArray[];
}
export type GgufArray = GgufTypedArray | GgufStringArray | GgufNestedArray;

/** Scalars: numbers (UINT64/INT64 as bigint), booleans, strings (UTF-8 decoded); or an array. */
export type GgufScalar = number | bigint | boolean | string;
export type GgufValue = GgufScalar | GgufArray;

export interface GgufKv {
  readonly key: string;
  readonly type: GgufValueType;
  readonly value: GgufValue;
}

export interface GgufTensorInfo {
  readonly name: string;
  /** ne[0] first (ggml order: the fastest-varying dimension first). */
  readonly dims: number[];
  readonly type: number;
  /** Relative to GgufFile.dataOffset. */
  readonly offset: number;
}

export interface GgufFile {
  readonly version: number;
  /** Key/values in file order (keeps types, so a writer can copy them faithfully). */
  readonly kvs: GgufKv[];
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: GgufTensorInfo[];
  readonly alignment: number;
  /** Absolute file offset where tensor data starts. */
  readonly dataOffset: number;
  readonly fileSize: number;
}

const utf8 = new TextDecoder("utf-8");

/** Buffered forward reader over a file descriptor. */
class ChunkReader {
  private buf: Uint8Array;
  private view: DataView;
  private start = 0; // file offset of buf[0]
  private end = 0; // valid bytes in buf
  private pos = 0; // read cursor within buf

  constructor(
    private readonly fd: number,
    private readonly fileSize: number,
    chunkSize: number,
  ) {
    this.buf = new Uint8Array(chunkSize);
    this.view = new DataView(this.buf.buffer);
  }

  get position(): number {
    return this.start + this.pos;
  }

  /** Bytes left in the file after the cursor. */
  get remaining(): number {
    return this.fileSize - this.position;
  }

  /** Makes n bytes available at the cursor. */
  private ensure(n: number): void {
    if (this.pos + n <= this.end) return;
    const remaining = this.end - this.pos;
    if (this.start + this.end + (n - remaining) > this.fileSize) {
      throw new GgufFormatError(`unexpected end of file reading ${n} bytes`, this.position);
    }
    if (n > this.buf.length) {
      const grown = new Uint8Array(Math.max(n, this.buf.length * 2));
      grown.set(this.buf.subarray(this.pos, this.end));
      this.buf = grown;
      this.view = new DataView(grown.buffer);
    } else {
      this.buf.copyWithin(0, this.pos, this.end);
    }
    this.start += this.pos;
    this.pos = 0;
    this.end = remaining;
    while (this.end < n) {
      const want = Math.min(this.buf.length - this.end, this.fileSize - (this.start + this.end));
      const got = readSync(this.fd, this.buf, this.end, want, this.start + this.end);
      if (got <= 0) throw new GgufFormatError("unexpected end of file", this.position);
      this.end += got;
    }
  }

  u8(): number {
    this.ensure(1);
    return this.buf[this.pos++]!;
  }
  i8(): number {
    this.ensure(1);
    return this.view.getInt8(this.pos++);
  }
  u16(): number {
    this.ensure(2);
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }
  i16(): number {
    this.ensure(2);
    const v = this.view.getInt16(this.pos, true);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.ensure(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  i32(): number {
    this.ensure(4);
    const v = this.view.getInt32(this.pos, true);
    this.pos += 4;
    return v;
  }
  f32(): number {
    this.ensure(4);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }
  f64(): number {
    this.ensure(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  u64(): bigint {
    this.ensure(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }
  i64(): bigint {
    this.ensure(8);
    const v = this.view.getBigInt64(this.pos, true);
    this.pos += 8;
    return v;
  }
  /** A u64 that must fit a JS number (lengths, counts, offsets). */
  size(what: string): number {
    const at = this.position;
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufFormatError(`${what} too large: ${v}`, at);
    return Number(v);
  }
  /** Copies n raw bytes into dest at destOffset. */
  bytesInto(n: number, dest: Uint8Array, destOffset: number): void {
    this.ensure(n);
    dest.set(this.buf.subarray(this.pos, this.pos + n), destOffset);
    this.pos += n;
  }
  string(): string {
    const n = this.size("string length");
    this.ensure(n);
    const s = utf8.decode(this.buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return s;
  }
}

const MAX_ARRAY_ITEMS = 1 << 28;
const ITEM_MIN_BYTES: Record<number, number> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.STRING]: 8,
  [GgufValueType.ARRAY]: 12,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};

function readStringArray(r: ChunkReader, count: number): GgufStringArray {
  const offsets = new Uint32Array(count + 1);
  let bytes = new Uint8Array(Math.max(64, count * 8));
  let used = 0;
  for (let i = 0; i < count; i++) {
    const n = r.size("string length");
    if (used + n > bytes.length) {
      const grown = new Uint8Array(Math.max(used + n, bytes.length * 2));
      grown.set(bytes.subarray(0, used));
      bytes = grown;
    }
    r.bytesInto(n, bytes, used);
    used += n;
    if (used > 0xffffffff) throw new GgufFormatError("string array larger than 4 GiB", r.position);
    offsets[i + 1] = used;
  }
  return new GgufStringArray(offsets, bytes.slice(0, used));
}

function readArray(r: ChunkReader, depth: number): GgufArray {
  const at = r.position;
  const itemType = r.u32();
  const count = r.size("array length");
  // Every item takes at least its fixed size (8 bytes of length for a string, 12 bytes of header
  // for a nested array): a corrupt count fails here instead of allocating gigabytes.
  const minItemBytes = ITEM_MIN_BYTES[itemType] ?? 1;
  if (count > MAX_ARRAY_ITEMS || count * minItemBytes > r.remaining) {
    throw new GgufFormatError(`array of ${count} items does not fit in the file`, at);
  }
  switch (itemType) {
    case GgufValueType.STRING:
      return readStringArray(r, count);
    case GgufValueType.ARRAY: {
      if (depth > 8) throw new GgufFormatError("arrays nested too deep", at);
      const values: GgufArray[] = [];
      for (let i = 0; i < count; i++) values.push(readArray(r, depth + 1));
      return { itemType, values };
    }
    case GgufValueType.UINT8:
    case GgufValueType.BOOL: {
      const values = new Uint8Array(count);
      r.bytesInto(count, values, 0);
      return { itemType, values };
    }
    case GgufValueType.INT8: {
      const values = new Int8Array(count);
      r.bytesInto(count, new Uint8Array(values.buffer), 0);
      return { itemType, values };
    }
    case GgufValueType.UINT16: {
      const values = new Uint16Array(count);
      for (let i = 0; i < count; i++) values[i] = r.u16();
      return { itemType, values };
    }
    case GgufValueType.INT16: {
      const values = new Int16Array(count);
      for (let i = 0; i < count; i++) values[i] = r.i16();
      return { itemType, values };
    }
    case GgufValueType.UINT32: {
      const values = new Uint32Array(count);
      for (let i = 0; i < count; i++) values[i] = r.u32();
      return { itemType, values };
    }
    case GgufValueType.INT32: {
      const values = new Int32Array(count);
      for (let i = 0; i < count; i++) values[i] = r.i32();
      return { itemType, values };
    }
    case GgufValueType.FLOAT32: {
      const values = new Float32Array(count);
      for (let i = 0; i < count; i++) values[i] = r.f32();
      return { itemType, values };
    }
    case GgufValueType.FLOAT64: {
      const values = new Float64Array(count);
      for (let i = 0; i < count; i++) values[i] = r.f64();
      return { itemType, values };
    }
    case GgufValueType.UINT64: {
      const values = new BigUint64Array(count);
      for (let i = 0; i < count; i++) values[i] = r.u64();
      return { itemType, values };
    }
    case GgufValueType.INT64: {
      const values = new BigInt64Array(count);
      for (let i = 0; i < count; i++) values[i] = r.i64();
      return { itemType, values };
    }
    default:
      throw new GgufFormatError(`unknown array item type ${itemType}`, at);
  }
}

function readValue(r: ChunkReader, type: number): GgufValue {
  switch (type) {
    case GgufValueType.UINT8:
      return r.u8();
    case GgufValueType.INT8:
      return r.i8();
    case GgufValueType.UINT16:
      return r.u16();
    case GgufValueType.INT16:
      return r.i16();
    case GgufValueType.UINT32:
      return r.u32();
    case GgufValueType.INT32:
      return r.i32();
    case GgufValueType.FLOAT32:
      return r.f32();
    case GgufValueType.BOOL:
      return r.u8() !== 0;
    case GgufValueType.STRING:
      return r.string();
    case GgufValueType.ARRAY:
      return readArray(r, 0);
    case GgufValueType.UINT64:
      return r.u64();
    case GgufValueType.INT64:
      return r.i64();
    case GgufValueType.FLOAT64:
      return r.f64();
    default:
      throw new GgufFormatError(`unknown value type ${type}`, r.position);
  }
}

/** Parses the GGUF header (metadata + tensor infos) of the file at `path`. */
export function readGguf(path: string): GgufFile {
  const fd = openSync(path, "r");
  try {
    const fileSize = fstatSync(fd).size;
    const r = new ChunkReader(fd, fileSize, 1 << 20);
    const magic = r.u32();
    if (magic !== GGUF_MAGIC) throw new GgufFormatError(`${path}: not a GGUF file (bad magic)`, 0);
    const version = r.u32();
    if (version !== 2 && version !== 3) throw new GgufFormatError(`${path}: unsupported GGUF version ${version}`, 4);
    const numTensors = r.size("tensor count");
    const numKvs = r.size("metadata count");
    const kvs: GgufKv[] = [];
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < numKvs; i++) {
      const key = r.string();
      const type = r.u32() as GgufValueType;
      const value = readValue(r, type);
      kvs.push({ key, type, value });
      metadata.set(key, value);
    }
    const alignmentValue = metadata.get("general.alignment");
    const alignment = typeof alignmentValue === "number" ? alignmentValue : GGUF_DEFAULT_ALIGNMENT;
    if (!(alignment > 0 && (alignment & (alignment - 1)) === 0)) {
      throw new GgufFormatError(`${path}: general.alignment ${alignment} is not a power of two`);
    }
    const tensors: GgufTensorInfo[] = [];
    for (let i = 0; i < numTensors; i++) {
      const name = r.string();
      const numDims = r.u32();
      if (numDims > 8) throw new GgufFormatError(`tensor ${name}: ${numDims} dimensions`, r.position);
      const dims: number[] = [];
      for (let d = 0; d < numDims; d++) dims.push(r.size("tensor dimension"));
      const type = r.u32();
      const offset = r.size("tensor offset");
      tensors.push({ name, dims, type, offset });
    }
    const headerEnd = r.position;
    const dataOffset = Math.ceil(headerEnd / alignment) * alignment;
    return { version, kvs, metadata, tensors, alignment, dataOffset, fileSize };
  } finally {
    closeSync(fd);
  }
}

// Typed accessors: vocabulary loading wants clear errors, not `as` casts at every call site.

export function ggufNumber(file: GgufFile, key: string): number | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  throw new GgufFormatError(`metadata ${key} is not a number`);
}

export function ggufString(file: GgufFile, key: string): string | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v === "string") return v;
  throw new GgufFormatError(`metadata ${key} is not a string`);
}

export function ggufBool(file: GgufFile, key: string): boolean | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v === "boolean") return v;
  throw new GgufFormatError(`metadata ${key} is not a bool`);
}

export function ggufStringArray(file: GgufFile, key: string): GgufStringArray | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (v instanceof GgufStringArray) return v;
  throw new GgufFormatError(`metadata ${key} is not an array of strings`);
}

export function ggufTypedArray(file: GgufFile, key: string): GgufTypedArray | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v === "object" && !(v instanceof GgufStringArray) && v.itemType !== GgufValueType.ARRAY) return v;
  throw new GgufFormatError(`metadata ${key} is not a numeric array`);
}
