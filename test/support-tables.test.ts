// The typed-array helpers the compile stages share: IntMap against a JS Map, Int32Arena's views.
import { test } from "node:test";
import assert from "node:assert/strict";
import { grownTo, IdMap, Int32Arena, IntMap, seededRandom, TableSlab } from "../src/support/index.js";

test("IntMap answers like a Map for keys up to 2^53, through growth", () => {
  const rand = seededRandom(7);
  const map = new IntMap(4);
  const reference = new Map<number, number>();
  const keyOf = (): number => {
    const kind = rand();
    if (kind < 0.3) return Math.floor(rand() * 64); // small, colliding often
    if (kind < 0.6) return Math.floor(rand() * 5000) * 0x400000 + Math.floor(rand() * 40); // stack * 2^22 + key
    return Math.floor(rand() * 2 ** 53);
  };
  for (let i = 0; i < 20_000; i++) {
    const key = keyOf();
    if (rand() < 0.5) {
      const value = Math.floor(rand() * 2 ** 32) - 2 ** 31 + 1; // any int32 but MISSING
      map.set(key, value);
      reference.set(key, value);
    } else {
      assert.equal(map.get(key), reference.get(key) ?? IntMap.MISSING, `get(${key})`);
      assert.equal(map.has(key), reference.has(key), `has(${key})`);
    }
  }
  assert.equal(map.size, reference.size);
  for (const [k, v] of reference) assert.equal(map.get(k), v);
});

test("IntMap and IdMap start empty on a slab's zeroed bytes and answer like a Map through growth", () => {
  const rand = seededRandom(11);
  const slab = new TableSlab(4096);
  const ints = new IntMap(8, slab);
  const ids = new IdMap(8, slab);
  const reference = new Map<number, number>();
  assert.equal(ints.get(0), IntMap.MISSING);
  assert.equal(ids.get(0), IntMap.MISSING);
  assert.equal(ids.get(1_000_000), IntMap.MISSING, "past the table");
  for (let i = 0; i < 5_000; i++) {
    // Ids come densely, as states and stacks do, with a few jumps ahead.
    const id = rand() < 0.9 ? Math.floor(rand() * (i + 1)) : Math.floor(rand() * 4 * (i + 1));
    if (rand() < 0.5) {
      const value = [0, -1, 0x7fffffff, Math.floor(rand() * 2 ** 32) - 2 ** 31 + 1][Math.floor(rand() * 4)]!;
      ints.set(id, value);
      ids.set(id, value);
      reference.set(id, value);
    } else {
      assert.equal(ints.get(id), reference.get(id) ?? IntMap.MISSING, `IntMap.get(${id})`);
      assert.equal(ids.get(id), reference.get(id) ?? IntMap.MISSING, `IdMap.get(${id})`);
    }
  }
  for (const [k, v] of reference) {
    assert.equal(ints.get(k), v);
    assert.equal(ids.get(k), v);
  }
});

test("Int32Arena hands out filled, disjoint views and its own arrays past its capacity", () => {
  const arena = new Int32Arena(100);
  const a = arena.take(40, -1);
  const b = arena.take(50);
  assert.deepEqual([...a], new Array(40).fill(-1));
  assert.deepEqual([...b], new Array(50).fill(0));
  b.fill(7);
  assert.ok(
    a.every((x) => x === -1),
    "views do not overlap",
  );
  const big = arena.take(30, 3); // 40 + 50 + 30 > 100: an array of its own
  assert.equal(big.length, 30);
  assert.notEqual(big.buffer, a.buffer);
  assert.ok(big.every((x) => x === 3));
  arena.reset();
  const again = arena.take(40, 5);
  assert.equal(again.buffer, a.buffer, "reset reuses the buffer");
  assert.ok(
    again.every((x) => x === 5),
    "and refills it",
  );
  assert.deepEqual([...arena.copy([4, 5, 6])], [4, 5, 6]);
});

test("grownTo keeps the entries, fills only the new ones, and keeps the array type", () => {
  const a = Int32Array.of(5, -1, 7);
  const g = grownTo(a, 6, -2);
  assert.ok(g instanceof Int32Array);
  assert.deepEqual([...g], [5, -1, 7, -2, -2, -2]);
  const u = grownTo(Uint8Array.of(1, 2), 4);
  assert.ok(u instanceof Uint8Array);
  assert.deepEqual([...u], [1, 2, 0, 0]);
});
