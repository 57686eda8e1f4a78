// The byte-bounded LRU: entries evicted least recently used first when their reported sizes
// exceed the budget, growth after insertion accounted by resize, totals kept by deltas.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ByteLruCache } from "../src/support/index.js";

class Blob {
  constructor(public bytes: number) {}
  retainedBytes(): number {
    return this.bytes;
  }
}

const OVERHEAD = (key: string) => 160 + 2 * key.length;

test("the total is the sum of the entries' sizes plus overhead; least recently used go first", () => {
  const evicted: string[] = [];
  const cache = new ByteLruCache<Blob>(10_000, (key) => evicted.push(key));
  cache.set("a", new Blob(3000));
  cache.set("b", new Blob(3000));
  cache.set("c", new Blob(3000));
  assert.equal(cache.bytes, 9000 + 3 * OVERHEAD("a"));
  cache.get("a"); // a is now the most recent: b goes first
  cache.set("d", new Blob(3000));
  assert.deepEqual(evicted, ["b"]);
  assert.ok(cache.bytes <= 10_000);
  assert.deepEqual(
    [cache.peek("a"), cache.peek("b")].map((v) => v !== undefined),
    [true, false],
  );
});

test("an entry that grows is accounted by resize and pushes older ones out", () => {
  const cache = new ByteLruCache<Blob>(10_000);
  const grower = new Blob(1000);
  cache.set("old", new Blob(4000));
  cache.set("grower", grower);
  grower.bytes = 8000;
  assert.ok(cache.bytes < 6000, "growth is not counted before resize");
  cache.resize("grower");
  assert.equal(cache.peek("old"), undefined);
  assert.equal(cache.bytes, 8000 + OVERHEAD("grower"));
  assert.equal(cache.stats().evictions, 1);
});

test("an entry larger than the budget alone stays until the next insertion, then goes", () => {
  const cache = new ByteLruCache<Blob>(1000);
  cache.set("huge", new Blob(50_000));
  assert.ok(cache.peek("huge"));
  cache.set("small", new Blob(10));
  assert.equal(cache.peek("huge"), undefined);
  assert.ok(cache.peek("small"));
  assert.ok(cache.bytes <= 1000);
});

test("delete and re-set keep the total exact", () => {
  const cache = new ByteLruCache<Blob>(1e9);
  for (let i = 0; i < 100; i++) cache.set(`k${i % 10}`, new Blob(i));
  let expected = 0;
  for (let i = 90; i < 100; i++) expected += i + OVERHEAD(`k${i % 10}`);
  assert.equal(cache.bytes, expected);
  cache.delete("k3");
  assert.equal(cache.bytes, expected - 93 - OVERHEAD("k3"));
  cache.clear();
  assert.equal(cache.bytes, 0);
});

test("reads keep the least recently read first to go, with entries in the newer half left in place", () => {
  const evicted: string[] = [];
  const each = 1000 + OVERHEAD("k0");
  const cache = new ByteLruCache<Blob>(10 * each, (key) => evicted.push(key));
  for (let i = 0; i < 10; i++) cache.set(`k${i}`, new Blob(1000));
  // k0..k4 are in the older half when read: each goes to the end, then k9 (five appends behind).
  for (let i = 0; i < 5; i++) cache.get(`k${i}`);
  cache.get("k9");
  cache.set("x", new Blob(1000));
  cache.set("y", new Blob(1000));
  assert.deepEqual(evicted, ["k5", "k6"]);
  // k0 read again and again: it goes to the end once, then stays in the newer half.
  for (let i = 0; i < 100; i++) cache.get("k0");
  cache.set("z", new Blob(3000));
  assert.deepEqual(evicted, ["k5", "k6", "k7", "k8", "k1"]);
  assert.ok(cache.peek("k0") && cache.peek("k9"));
});
