/**
 * Minimal GGUF v3 writer: metadata key/values (typed as read by src/vocab/gguf.ts, so tokenizer
 * metadata copies byte-exactly) and tensors whose data is produced row-chunk by row-chunk by a
 * callback, so a 500 MB model never sits in memory at once.
 */
import { closeSync, openSync, renameSync, writeSync } from "node:fs";
import {
  GgmlType,
  GgufStringArray,
  GgufValueType,
  ggmlTensorBytes,
  type GgufArray,
  type GgufKv,
  type GgufValue,
} from "../../src/vocab/index.js";

export interface TensorSpec {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  type: number;
  /** Fills `out` (whole rows of this tensor, starting at row `firstRow`). */
  fill(out: Uint8Array, firstRow: number, rows: number): void;
}

const ALIGNMENT = 32;

class ByteSink {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    this.reserve(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }
  i8(v: number): void {
    this.reserve(1);
    this.view.setInt8(this.length, v);
    this.length += 1;
  }
  u16(v: number): void {
    this.reserve(2);
    this.view.setUint16(this.length, v, true);
    this.length += 2;
  }
  i16(v: number): void {
    this.reserve(2);
    this.view.setInt16(this.length, v, true);
    this.length += 2;
  }
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, v, true);
    this.length += 4;
  }
  f32(v: number): void {
    this.reserve(4);
    this.view.setFloat32(this.length, v, true);
    this.length += 4;
  }
  f64(v: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, v, true);
    this.length += 8;
  }
  u64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  i64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigInt64(this.length, BigInt(v), true);
    this.length += 8;
  }
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  string(s: string | Uint8Array): void {
    const b = typeof s === "string" ? new TextEncoder().encode(s) : s;
    this.u64(b.length);
    this.bytes(b);
  }
  pad(alignment: number): void {
    while (this.length % alignment !== 0) this.u8(0);
  }
  contents(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(sink: ByteSink, type: number, value: GgufValue): void {
  switch (type) {
    case GgufValueType.UINT8:
      sink.u8(Number(value));
      return;
    case GgufValueType.INT8:
      sink.i8(Number(value));
      return;
    case GgufValueType.UINT16:
      sink.u16(Number(value));
      return;
    case GgufValueType.INT16:
      sink.i16(Number(value));
      return;
    case GgufValueType.UINT32:
      sink.u32(Number(value));
      return;
    case GgufValueType.INT32:
      sink.i32(Number(value));
      return;
    case GgufValueType.FLOAT32:
      sink.f32(Number(value));
      return;
    case GgufValueType.FLOAT64:
      sink.f64(Number(value));
      return;
    case GgufValueType.BOOL:
      sink.u8(value ? 1 : 0);
      return;
    case GgufValueType.UINT64:
      sink.u64(value as bigint | number);
      return;
    case GgufValueType.INT64:
      sink.i64(value as bigint | number);
      return;
    case GgufValueType.STRING:
      sink.string(value as string);
      return;
    default:
      throw new Error(`cannot write GGUF value type ${type} as a scalar`);
  }
}

function writeArray(sink: ByteSink, array: GgufArray): void {
  sink.u32(array.itemType);
  if (array instanceof GgufStringArray) {
    sink.u64(array.length);
    for (let i = 0; i < array.length; i++) sink.string(array.itemBytes(i));
  } else if (array.itemType === GgufValueType.ARRAY) {
    sink.u64(array.values.length);
    for (const inner of array.values) writeArray(sink, inner);
  } else {
    const values = array.values;
    sink.u64(values.length);
    for (let i = 0; i < values.length; i++) writeScalar(sink, array.itemType, values[i]!);
  }
}

export function writeKv(sink: ByteSink, kv: GgufKv): void {
  sink.string(kv.key);
  sink.u32(kv.type);
  if (kv.type === GgufValueType.ARRAY) writeArray(sink, kv.value as GgufArray);
  else writeScalar(sink, kv.type, kv.value);
}

export const kv = {
  u32: (key: string, value: number): GgufKv => ({ key, type: GgufValueType.UINT32, value }),
  f32: (key: string, value: number): GgufKv => ({ key, type: GgufValueType.FLOAT32, value }),
  bool: (key: string, value: boolean): GgufKv => ({ key, type: GgufValueType.BOOL, value }),
  str: (key: string, value: string): GgufKv => ({ key, type: GgufValueType.STRING, value }),
};

function rowBytes(type: number, rowLength: number): number {
  return ggmlTensorBytes(type, rowLength);
}

/** Writes the file to `path` (via a temporary name, renamed at the end). */
export function writeGguf(path: string, kvs: GgufKv[], tensors: TensorSpec[]): void {
  const header = new ByteSink();
  header.u32(0x46554747);
  header.u32(3);
  header.u64(tensors.length);
  header.u64(kvs.length);
  for (const item of kvs) writeKv(header, item);
  let offset = 0;
  const sizes: number[] = [];
  for (const t of tensors) {
    header.string(t.name);
    header.u32(t.dims.length);
    for (const d of t.dims) header.u64(d);
    header.u32(t.type);
    header.u64(offset);
    const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
    const size = rowBytes(t.type, t.dims[0]!) * rows;
    sizes.push(size);
    offset += Math.ceil(size / ALIGNMENT) * ALIGNMENT;
  }
  header.pad(ALIGNMENT);

  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, header.contents());
    const chunkBytes = 8 << 20;
    const zeros = new Uint8Array(ALIGNMENT);
    tensors.forEach((t, i) => {
      const rowSize = rowBytes(t.type, t.dims[0]!);
      const totalRows = sizes[i]! / rowSize;
      const rowsPerChunk = Math.max(1, Math.floor(chunkBytes / rowSize));
      const chunk = new Uint8Array(Math.min(totalRows, rowsPerChunk) * rowSize);
      for (let row = 0; row < totalRows; row += rowsPerChunk) {
        const rows = Math.min(rowsPerChunk, totalRows - row);
        const out = chunk.subarray(0, rows * rowSize);
        t.fill(out, row, rows);
        writeSync(fd, out);
      }
      const padding = (ALIGNMENT - (sizes[i]! % ALIGNMENT)) % ALIGNMENT;
      if (padding) writeSync(fd, zeros.subarray(0, padding));
    });
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export { GgmlType };
