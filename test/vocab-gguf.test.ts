// The GGUF reader: every metadata value type, string arrays as exact bytes, tensor infos, the data
// offset and general.alignment on synthetic files; bad magic, versions and truncation refused with
// GgufFormatError; real model headers read without the tensor data; the ggml type table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  GGML_TYPE_INFO,
  GgmlType,
  GgufFormatError,
  GgufStringArray,
  GgufValueType,
  ggmlTensorBytes,
  readGguf,
  type GgufTypedArray,
} from "../src/vocab/index.js";
import { STORIES_260K, vocabFile } from "./support/paths.js";

/** Minimal GGUF byte builder for the reader's tests (little-endian, like the format). */
class Bytes {
  private parts: Buffer[] = [];
  u8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeUInt8(v);
    return this.push(b);
  }
  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    return this.push(b);
  }
  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return this.push(b);
  }
  u64(v: number | bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    return this.push(b);
  }
  i64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(v);
    return this.push(b);
  }
  f32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    return this.push(b);
  }
  f64(v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return this.push(b);
  }
  str(s: string | Uint8Array): this {
    const b = typeof s === "string" ? Buffer.from(s, "utf8") : Buffer.from(s);
    return this.u64(b.length).push(b);
  }
  raw(b: Uint8Array): this {
    return this.push(Buffer.from(b));
  }
  key(k: string, type: number): this {
    return this.str(k).u32(type);
  }
  private push(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  get length(): number {
    return this.parts.reduce((n, p) => n + p.length, 0);
  }
  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const dir = mkdtempSync(join(tmpdir(), "trellis-gguf-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
let fileCounter = 0;
function writeTemp(bytes: Uint8Array): string {
  const path = join(dir, `f${fileCounter++}.gguf`);
  writeFileSync(path, bytes);
  return path;
}

// A long string array forces the chunked reader across many 1 MiB refills.
const manyStrings = Array.from({ length: 70_000 }, (_, i) => `token-${i}-${"x".repeat(i % 37)}`);
const invalidUtf8 = new Uint8Array([0xe4, 0xb8]); // first two bytes of "中"

function syntheticGguf(version: number, alignment?: number): Buffer {
  const kvs: Array<(b: Bytes) => void> = [
    (b) => b.key("general.architecture", GgufValueType.STRING).str("llama"),
    (b) => b.key("u8", GgufValueType.UINT8).u8(200),
    (b) => b.key("i8", GgufValueType.INT8).u8(0xff),
    (b) => b.key("u16", GgufValueType.UINT16).raw(new Uint8Array([0x34, 0x12])),
    (b) => b.key("i16", GgufValueType.INT16).raw(new Uint8Array([0xfe, 0xff])),
    (b) => b.key("u32", GgufValueType.UINT32).u32(4_000_000_000),
    (b) => b.key("i32", GgufValueType.INT32).i32(-7),
    (b) => b.key("f32", GgufValueType.FLOAT32).f32(1.5),
    (b) => b.key("bool", GgufValueType.BOOL).u8(1),
    (b) => b.key("u64", GgufValueType.UINT64).u64(2n ** 63n + 5n),
    (b) => b.key("i64", GgufValueType.INT64).i64(-(2n ** 40n)),
    (b) => b.key("f64", GgufValueType.FLOAT64).f64(-2.25),
    (b) => b.key("unicode ключ", GgufValueType.STRING).str("значение ✓"),
    (b) => b.key("arr.i32", GgufValueType.ARRAY).u32(GgufValueType.INT32).u64(3).i32(1).i32(-2).i32(3),
    (b) => b.key("arr.f32", GgufValueType.ARRAY).u32(GgufValueType.FLOAT32).u64(2).f32(0.5).f32(-1),
    (b) => b.key("arr.bool", GgufValueType.ARRAY).u32(GgufValueType.BOOL).u64(3).u8(1).u8(0).u8(1),
    (b) => b.key("arr.u64", GgufValueType.ARRAY).u32(GgufValueType.UINT64).u64(1).u64(99),
    (b) => {
      b.key("arr.str", GgufValueType.ARRAY)
        .u32(GgufValueType.STRING)
        .u64(manyStrings.length + 1);
      for (const s of manyStrings) b.str(s);
      b.str(invalidUtf8);
    },
    (b) => {
      b.key("arr.nested", GgufValueType.ARRAY).u32(GgufValueType.ARRAY).u64(2);
      b.u32(GgufValueType.INT32).u64(1).i32(42);
      b.u32(GgufValueType.STRING).u64(2).str("a").str("");
    },
  ];
  if (alignment !== undefined) kvs.push((b) => b.key("general.alignment", GgufValueType.UINT32).u32(alignment));
  const b = new Bytes().u32(0x46554747).u32(version).u64(2).u64(kvs.length);
  for (const kv of kvs) kv(b);
  b.str("token_embd.weight").u32(2).u64(64).u64(512).u32(GgmlType.Q8_0).u64(0);
  b.str("output_norm.weight")
    .u32(1)
    .u64(64)
    .u32(GgmlType.F32)
    .u64(34 * 2 * 512);
  const headerEnd = b.length;
  const align = alignment ?? 32;
  const padded = Math.ceil(headerEnd / align) * align;
  b.raw(new Uint8Array(padded - headerEnd + 16)); // padding + a little "tensor data"
  return b.build();
}

test("reads every metadata value type, string arrays as exact bytes, tensor infos and the data offset", () => {
  for (const version of [2, 3]) {
    const bytes = syntheticGguf(version);
    const file = readGguf(writeTemp(bytes));
    assert.equal(file.version, version);
    const m = file.metadata;
    assert.equal(m.get("general.architecture"), "llama");
    assert.equal(m.get("u8"), 200);
    assert.equal(m.get("i8"), -1);
    assert.equal(m.get("u16"), 0x1234);
    assert.equal(m.get("i16"), -2);
    assert.equal(m.get("u32"), 4_000_000_000);
    assert.equal(m.get("i32"), -7);
    assert.equal(m.get("f32"), 1.5);
    assert.equal(m.get("bool"), true);
    assert.equal(m.get("u64"), 2n ** 63n + 5n);
    assert.equal(m.get("i64"), -(2n ** 40n));
    assert.equal(m.get("f64"), -2.25);
    assert.equal(m.get("unicode ключ"), "значение ✓");
    assert.deepEqual(Array.from((m.get("arr.i32") as GgufTypedArray).values as Int32Array), [1, -2, 3]);
    assert.deepEqual(Array.from((m.get("arr.f32") as GgufTypedArray).values as Float32Array), [0.5, -1]);
    assert.deepEqual(Array.from((m.get("arr.bool") as GgufTypedArray).values as Uint8Array), [1, 0, 1]);
    assert.deepEqual(Array.from((m.get("arr.u64") as GgufTypedArray).values as BigUint64Array), [99n]);
    const strs = m.get("arr.str");
    assert.ok(strs instanceof GgufStringArray);
    assert.equal(strs.length, manyStrings.length + 1);
    for (const i of [0, 1, 36, 12_345, manyStrings.length - 1]) assert.equal(strs.item(i), manyStrings[i]);
    assert.deepEqual(Array.from(strs.itemBytes(manyStrings.length)), Array.from(invalidUtf8));
    const nested = m.get("arr.nested");
    assert.ok(nested && typeof nested === "object" && !(nested instanceof GgufStringArray));
    assert.equal(nested.itemType, GgufValueType.ARRAY);
    // key order and declared types survive (a writer copies them)
    assert.deepEqual(
      file.kvs.slice(0, 3).map((kv) => [kv.key, kv.type]),
      [
        ["general.architecture", GgufValueType.STRING],
        ["u8", GgufValueType.UINT8],
        ["i8", GgufValueType.INT8],
      ],
    );
    assert.deepEqual(file.tensors, [
      { name: "token_embd.weight", dims: [64, 512], type: GgmlType.Q8_0, offset: 0 },
      { name: "output_norm.weight", dims: [64], type: GgmlType.F32, offset: 34 * 2 * 512 },
    ]);
    assert.equal(file.alignment, 32);
    assert.equal(file.dataOffset % 32, 0);
    assert.equal(file.dataOffset, bytes.length - 16);
  }
});

test("honours general.alignment", () => {
  const bytes = syntheticGguf(3, 64);
  const file = readGguf(writeTemp(bytes));
  assert.equal(file.alignment, 64);
  assert.equal(file.dataOffset % 64, 0);
  assert.equal(file.dataOffset, bytes.length - 16);
});

test("rejects bad magic, unsupported versions and truncated headers with GgufFormatError", () => {
  const good = syntheticGguf(3);
  const badMagic = Buffer.from(good);
  badMagic.write("GGML", 0, "latin1");
  assert.throws(() => readGguf(writeTemp(badMagic)), GgufFormatError);
  const v1 = Buffer.from(good);
  v1.writeUInt32LE(1, 4);
  assert.throws(() => readGguf(writeTemp(v1)), /version 1/);
  const headerEndAtLeast = readGguf(writeTemp(good)).dataOffset - 32; // padding is < 32 bytes
  for (const cut of [3, 20, 1000, 500_000, headerEndAtLeast - 1]) {
    assert.throws(() => readGguf(writeTemp(good.subarray(0, cut))), GgufFormatError, `cut at ${cut}`);
  }
  // a corrupt array length fails fast instead of allocating
  const hugeArray = new Bytes()
    .u32(0x46554747)
    .u32(3)
    .u64(0)
    .u64(1)
    .key("a", GgufValueType.ARRAY)
    .u32(GgufValueType.INT64)
    .u64(2 ** 27)
    .build();
  assert.throws(() => readGguf(writeTemp(hugeArray)), /does not fit/);
  const badType = new Bytes().u32(0x46554747).u32(3).u64(0).u64(1).key("k", 99).u32(0).build();
  assert.throws(() => readGguf(writeTemp(badType)), /unknown value type 99/);
});

test("reads real model headers without touching tensor data", () => {
  const stories = readGguf(STORIES_260K);
  assert.equal(stories.metadata.get("general.architecture"), "llama");
  assert.ok(stories.tensors.length > 0);
  // every tensor lies inside the file, at an aligned offset, with the size its type implies
  for (const t of stories.tensors) {
    assert.equal(t.offset % stories.alignment, 0);
    const numElements = t.dims.reduce((a, b) => a * b, 1);
    assert.ok(stories.dataOffset + t.offset + ggmlTensorBytes(t.type, numElements) <= stories.fileSize, t.name);
  }
  const qwen = readGguf(vocabFile("qwen2"));
  assert.equal(qwen.tensors.length, 0);
  const tokens = qwen.metadata.get("tokenizer.ggml.tokens");
  assert.ok(tokens instanceof GgufStringArray);
  assert.equal(tokens.length, 151_936);
});

test("ggml type table covers the common quantisations", () => {
  assert.equal(ggmlTensorBytes(GgmlType.F32, 10), 40);
  assert.equal(ggmlTensorBytes(GgmlType.F16, 10), 20);
  assert.equal(ggmlTensorBytes(GgmlType.Q8_0, 64), 68);
  assert.equal(ggmlTensorBytes(GgmlType.Q4_K, 512), 288);
  assert.throws(() => ggmlTensorBytes(GgmlType.Q4_0, 33), GgufFormatError);
  assert.throws(() => ggmlTensorBytes(4, 32), GgufFormatError); // removed Q4_2
  for (const [id, info] of GGML_TYPE_INFO) assert.equal(GgmlType[info.name as keyof typeof GgmlType], id);
});
