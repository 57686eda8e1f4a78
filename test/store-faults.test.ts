/**
 * The key store under storage faults: another process holding the write lock, a full disk,
 * shutdown while locked. Usage counts must never be lost, the process must never crash, and no
 * flush may stall the event loop while it waits for the lock.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import Database from "better-sqlite3";
import { FLUSH_BUSY_TIMEOUT_MS, KeyStore, formatUnwrittenUsage, type FlushFailure, type UnwrittenUsage } from "../src/store/index.js";
import { holdLock } from "./support/hold-lock.js";

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "trellis-faults-"));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** requests and tokens per key id, read through a connection of its own. */
function usageInDatabase(dataDir: string): Map<number, { requests: number; tokens: number }> {
  const raw = new Database(join(dataDir, "trellis.db"), { readonly: true });
  try {
    const rows = raw.prepare("SELECT id, requests, tokens FROM api_keys").all() as Array<{ id: number; requests: number; tokens: number }>;
    return new Map(rows.map((r) => [r.id, { requests: r.requests, tokens: r.tokens }]));
  } finally {
    raw.close();
  }
}

/** Usage as the test itself counted it, per key id. */
class Tally {
  readonly byKey = new Map<number, { requests: number; tokens: number }>();
  add(id: number, tokens: number): void {
    const entry = this.byKey.get(id) ?? { requests: 0, tokens: 0 };
    entry.requests += 1;
    entry.tokens += tokens;
    this.byKey.set(id, entry);
  }
}

test("a full disk (SQLITE_FULL): flushes fail and keep the counts; once space is back they are written exactly", () => {
  const dataDir = tmp();
  const failures: FlushFailure[] = [];
  const recovered: Array<{ failures: number }> = [];
  const store = new KeyStore({
    dataDir,
    flushIntervalMs: 0,
    onFlushError: (f) => failures.push(f),
    onFlushRecovered: (r) => recovered.push(r),
  });
  // Sequential inserts pack the table's pages full, so the first last_used_at written into each
  // row must split a page: the flush needs pages the cap below does not allow.
  const ids = Array.from({ length: 200 }, (_, i) => store.createKey(`key ${i}`).id);
  // max_page_count belongs to the connection, so it is set on the store's own (white box):
  // capped at the current size, the database cannot grow, as on a full disk.
  const connection = (store as unknown as { db: Database.Database }).db;
  const fullAt = connection.pragma("page_count", { simple: true }) as number;
  connection.pragma("max_page_count = 1");
  assert.equal(connection.pragma("max_page_count", { simple: true }), fullAt);

  const tally = new Tally();
  for (const [i, id] of ids.entries()) {
    store.recordUsage(id, i);
    tally.add(id, i);
  }
  assert.equal(store.flush(), false);
  assert.equal(failures.length, 1);
  assert.equal(failures[0]!.code, "SQLITE_FULL");
  assert.equal(failures[0]!.pendingRequests, 200);
  // More usage while the disk is full merges with the kept counts.
  for (const id of ids.slice(0, 50)) {
    store.recordUsage(id, 1000);
    tally.add(id, 1000);
  }
  assert.equal(store.flush(), false);
  let stats = store.stats();
  assert.equal(stats.flushFailuresTotal, 2);
  assert.equal(stats.consecutiveFailures, 2);
  assert.equal(stats.lastErrorCode, "SQLITE_FULL");
  assert.equal(stats.pendingKeys, 200);
  assert.equal(stats.pendingRequests, 250);
  assert.equal(
    stats.pendingTokens,
    [...tally.byKey.values()].reduce((sum, u) => sum + u.tokens, 0),
  );
  assert.ok(
    [...usageInDatabase(dataDir).values()].every((u) => u.requests === 0 && u.tokens === 0),
    "a failed flush wrote nothing",
  );
  const listed = new Map(store.listKeys().map((k) => [k.id, { requests: k.requests, tokens: k.tokens }]));
  assert.deepEqual(listed, tally.byKey, "listed usage includes the kept counts");

  connection.pragma("max_page_count = 1000000");
  assert.equal(store.flush(), true);
  stats = store.stats();
  assert.equal(stats.pendingRequests, 0);
  assert.equal(stats.consecutiveFailures, 0);
  assert.equal(stats.flushesTotal, 1);
  assert.deepEqual(
    recovered.map((r) => r.failures),
    [2],
  );
  assert.deepEqual(usageInDatabase(dataDir), tally.byKey);
  store.close();
  assert.deepEqual(usageInDatabase(dataDir), tally.byKey, "nothing counted twice at close");
});

test("close() while another process holds the lock reports exactly the unwritten counts", async () => {
  const dataDir = tmp();
  const reports: Array<{ usage: UnwrittenUsage[]; error: Error }> = [];
  const closeTimeoutMs = 300;
  const store = new KeyStore({
    dataDir,
    flushIntervalMs: 0,
    closeTimeoutMs,
    onFlushError: () => {},
    onUnwrittenUsage: (usage, error) => reports.push({ usage, error }),
  });
  const a = store.createKey("a").id;
  const b = store.createKey("b").id;
  store.recordUsage(a, 5);
  assert.equal(store.flush(), true);
  const lock = await holdLock(store.path);
  store.recordUsage(a, 7);
  store.recordUsage(a, 1);
  store.recordUsage(b, 3);
  // close() blocks this thread, and the lock is held until this test releases it: close() can
  // only come back by giving up on its own. Its deadline is a lower bound, which no machine is
  // too slow to meet: it gave up no earlier than its timeout, having kept trying until then.
  const notBefore = Date.now() + closeTimeoutMs;
  store.close();
  assert.ok(Date.now() >= notBefore, "close() gave up before its timeout");
  assert.equal(reports.length, 1);
  const byKey = new Map(reports[0]!.usage.map((u) => [u.keyId, { requests: u.requests, tokens: u.tokens }]));
  assert.deepEqual(
    byKey,
    new Map([
      [a, { requests: 2, tokens: 8 }],
      [b, { requests: 1, tokens: 3 }],
    ]),
  );
  assert.match(reports[0]!.error.message, /SQLITE_BUSY|locked/);
  await lock.release();
  // The report is the only record of those counts: the database holds what was flushed before.
  assert.deepEqual(
    usageInDatabase(dataDir),
    new Map([
      [a, { requests: 1, tokens: 5 }],
      [b, { requests: 0, tokens: 0 }],
    ]),
  );

  const lines = formatUnwrittenUsage(store.path, reports[0]!.usage, reports[0]!.error).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((l) => [l.key_id, l.requests, l.tokens, l.database]),
    [
      [a, 2, 8, store.path],
      [b, 1, 3, store.path],
    ],
  );
});

test("close() without a reporter writes one JSON line per unwritten key on stderr", async () => {
  const dataDir = tmp();
  const store = new KeyStore({ dataDir, flushIntervalMs: 0, closeTimeoutMs: 50, onFlushError: () => {} });
  const id = store.createKey("c").id;
  const lock = await holdLock(store.path);
  store.recordUsage(id, 9);
  const written: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    store.close();
  } finally {
    process.stderr.write = write;
    await lock.release();
  }
  assert.equal(written.length, 1);
  const line = JSON.parse(written[0]!) as Record<string, unknown>;
  assert.equal(line.event, "trellis_unwritten_usage");
  assert.deepEqual([line.key_id, line.requests, line.tokens], [id, 1, 9]);
});

test("close() waits for a lock released within its timeout and writes everything", async () => {
  const dataDir = tmp();
  const reports: UnwrittenUsage[][] = [];
  const store = new KeyStore({
    dataDir,
    flushIntervalMs: 0,
    closeTimeoutMs: 5000,
    onFlushError: () => {},
    onUnwrittenUsage: (u) => reports.push(u),
  });
  const id = store.createKey("d").id;
  const lock = await holdLock(store.path, 300);
  store.recordUsage(id, 4);
  store.close();
  await lock.exited;
  assert.deepEqual(reports, []);
  assert.deepEqual(usageInDatabase(dataDir).get(id), { requests: 1, tokens: 4 });
});

test("a throwing reporter does not turn a failed flush into a crash", async () => {
  const dataDir = tmp();
  const store = new KeyStore({
    dataDir,
    flushIntervalMs: 10,
    onFlushError: () => {
      throw new Error("logger is broken");
    },
  });
  const id = store.createKey("e").id;
  const lock = await holdLock(store.path);
  const write = process.stderr.write;
  const written: string[] = [];
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    store.recordUsage(id, 1);
    await sleep(100);
  } finally {
    process.stderr.write = write;
  }
  assert.ok(store.stats().flushFailuresTotal >= 1);
  assert.match(written.join(""), /logger is broken/);
  await lock.release();
  assert.equal(store.flush(), true);
  store.close();
  assert.deepEqual(usageInDatabase(dataDir).get(id), { requests: 1, tokens: 1 });
});

test("another process holds the write lock for 30 s while usage keeps coming: no crash, no stall, exact totals", {
  timeout: 120_000,
}, async (t) => {
  const LOCK_MS = 30_000;
  const dataDir = tmp();
  const failures: FlushFailure[] = [];
  /** Per failed flush: requests recorded before it was reported, and when (epoch ms) it was. */
  const recordedBeforeFailure: number[] = [];
  const failureReportedAt: number[] = [];
  const recovered: Array<{ failures: number; failingForMs: number }> = [];
  let n = 0;
  const store = new KeyStore({
    dataDir,
    flushIntervalMs: 50,
    maxFlushRetryDelayMs: 1000,
    // The store's other statements wait for a lock longer than it is held here: a flush that
    // waited as they do would hold the thread until the lock went, and fail no attempt at all.
    busyTimeoutMs: 60_000,
    onFlushError: (f) => {
      failures.push(f);
      recordedBeforeFailure.push(n);
      failureReportedAt.push(Date.now());
    },
    onFlushRecovered: (r) => recovered.push(r),
  });
  const ids = [store.createKey("x").id, store.createKey("y").id, store.createKey("z").id];
  const tally = new Tally();
  const record = () => {
    const id = ids[n % ids.length]!;
    store.recordUsage(id, n % 7);
    tally.add(id, n % 7);
    n++;
  };
  const recorder = setInterval(record, 3);
  await sleep(200);
  assert.ok(store.stats().flushesTotal > 0, "flushing works before the lock");

  const lock = await holdLock(store.path, LOCK_MS);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  await sleep(LOCK_MS / 2);
  // Midway: flushes fail, the counts are all still there.
  assert.ok(failures.length >= 3, `failed flushes were reported (${failures.length})`);
  assert.ok(
    failures.every((f) => f.code === "SQLITE_BUSY"),
    failures.map((f) => f.code).join(", "),
  );
  const failedByMidway = failures.length;
  const listed = new Map(store.listKeys().map((k) => [k.id, { requests: k.requests, tokens: k.tokens }]));
  assert.deepEqual(listed, tally.byKey);
  await lock.exited;
  await sleep(300);
  clearInterval(recorder);
  delay.disable();

  // The kept counts are written once the lock is gone (the test's timeout bounds the wait).
  while (store.stats().pendingRequests > 0) await sleep(50);
  const stats = store.stats();
  // Speed is bench material; printed for the record, not asserted.
  t.diagnostic(
    `${n} requests, ${failures.length} failed flushes, slowest flush ${stats.maxFlushDurationMs.toFixed(1)} ms (busy wait ${FLUSH_BUSY_TIMEOUT_MS} ms), longest event-loop stall ${(delay.max / 1e6).toFixed(1)} ms`,
  );
  // No stall: the recorder (every 3 ms) ran between every two failed attempts (at least 50 ms
  // apart), so no attempt held the thread until the lock went.
  for (let i = 1; i < recordedBeforeFailure.length; i++) {
    assert.ok(
      recordedBeforeFailure[i]! > recordedBeforeFailure[i - 1]!,
      `no request was recorded between failed flushes ${i} and ${i + 1} (${recordedBeforeFailure[i]})`,
    );
  }
  assert.ok(failures.length > failedByMidway, "flushes kept failing after midway: the lock was still held");
  // Retries back off, doubling from the 50 ms interval up to the 1 s cap: far fewer attempts than
  // one per interval, and the kept counts are tried again at most 1 s after the lock goes.
  assert.deepEqual(
    failures.map((f) => f.retryInMs),
    failures.map((_, i) => Math.min(1000, 50 * 2 ** (i + 1))),
  );
  assert.equal(recovered.length, 1);
  assert.equal(recovered[0]!.failures, failures.length);
  // The recovery reports the whole failing spell: from before the first failure was reported to
  // after the last one.
  const spell = failureReportedAt.at(-1)! - failureReportedAt[0]!;
  assert.ok(
    recovered[0]!.failingForMs >= spell,
    `recovery reported ${recovered[0]!.failingForMs} ms of failing, failures spanned ${spell} ms`,
  );
  assert.equal(stats.flushFailuresTotal, failures.length);
  assert.ok(failures.length < 60, `${failures.length} failed attempts`);
  assert.deepEqual(usageInDatabase(dataDir), tally.byKey);
  store.close();
  assert.deepEqual(usageInDatabase(dataDir), tally.byKey);
});
