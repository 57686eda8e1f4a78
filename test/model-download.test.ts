/**
 * Default-model download against a local HTTP server on loopback serving a real GGUF file from
 * the shared models folder: checksum verification, resume, atomic rename, reuse, errors.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChecksumMismatchError, ModelDownloadError, ensureModel, type ModelSource } from "../src/model/index.js";
import { STORIES_260K } from "./support/paths.js";

const MODEL = readFileSync(STORIES_260K);
const SHA = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";

interface Hit {
  path: string;
  range: string | undefined;
}
const hits: Hit[] = [];
let mode: "normal" | "ignore-range" | "cut" = "normal";
let server: Server;
let base = "";
const tmpDirs: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    hits.push({ path: req.url ?? "", range: req.headers.range });
    if (req.url !== "/model.gguf") {
      res.writeHead(404).end("not found");
      return;
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    if (range && mode !== "ignore-range") {
      const start = Number(range[1]);
      if (start >= MODEL.length) {
        res.writeHead(416, { "content-range": `bytes */${MODEL.length}` }).end();
        return;
      }
      res.writeHead(206, { "content-length": MODEL.length - start, "content-range": `bytes ${start}-${MODEL.length - 1}/${MODEL.length}` });
      res.end(MODEL.subarray(start));
      return;
    }
    res.writeHead(200, { "content-length": MODEL.length });
    if (mode === "cut") {
      res.write(MODEL.subarray(0, 400_000), () => res.destroy());
      return;
    }
    res.end(MODEL);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

after(() => {
  server.close();
  for (const dir of tmpDirs) rmSync(dir, { recursive: true, force: true });
});

function cacheDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "trellis-dl-"));
  tmpDirs.push(dir);
  return dir;
}

const source = (overrides: Partial<ModelSource> = {}): ModelSource => ({
  url: `${base}/model.gguf`,
  sha256: SHA,
  fileName: "model.gguf",
  ...overrides,
});

test("downloads, verifies, renames atomically, reports progress, then reuses without network", async () => {
  mode = "normal";
  const dir = cacheDir();
  const progress: number[] = [];
  let total: number | null = null;
  const path = await ensureModel({
    source: source(),
    cacheDir: dir,
    onProgress: (p) => {
      progress.push(p.receivedBytes);
      total = p.totalBytes;
    },
  });
  assert.equal(path, join(dir, "model.gguf"));
  assert.ok(readFileSync(path).equals(MODEL));
  assert.equal(existsSync(`${path}.part`), false);
  assert.equal(progress.at(-1), MODEL.length);
  assert.equal(total, MODEL.length);
  assert.match(readFileSync(`${path}.sha256`, "utf8"), new RegExp(`^${SHA} ${MODEL.length}`));
  const before = hits.length;
  assert.equal(await ensureModel({ source: source(), cacheDir: dir }), path);
  assert.equal(hits.length, before, "second start makes no request");
});

test("resumes a partial download with a Range request", async () => {
  mode = "normal";
  const dir = cacheDir();
  writeFileSync(join(dir, "model.gguf.part"), MODEL.subarray(0, 100_000));
  const path = await ensureModel({ source: source(), cacheDir: dir });
  assert.equal(hits.at(-1)!.range, "bytes=100000-");
  assert.ok(readFileSync(path).equals(MODEL));
});

test("a server that ignores Range gets a fresh full download", async () => {
  mode = "ignore-range";
  const dir = cacheDir();
  writeFileSync(join(dir, "model.gguf.part"), Buffer.alloc(1000, 7));
  const path = await ensureModel({ source: source(), cacheDir: dir });
  assert.ok(readFileSync(path).equals(MODEL));
  mode = "normal";
});

test("an interrupted download leaves a .part that the next run resumes", async () => {
  mode = "cut";
  const dir = cacheDir();
  await assert.rejects(ensureModel({ source: source(), cacheDir: dir }), (e: unknown) => {
    assert.ok(e instanceof ModelDownloadError);
    assert.match((e as Error).message, /interrupted|TRELLIS_MODEL/);
    return true;
  });
  assert.equal(existsSync(join(dir, "model.gguf")), false, "no final file from a partial download");
  assert.ok(existsSync(join(dir, "model.gguf.part")));
  mode = "normal";
  const path = await ensureModel({ source: source(), cacheDir: dir });
  assert.match(hits.at(-1)!.range ?? "", /^bytes=\d+-$/);
  assert.ok(readFileSync(path).equals(MODEL));
});

test("a bad checksum is rejected and nothing is kept", async () => {
  mode = "normal";
  const dir = cacheDir();
  await assert.rejects(ensureModel({ source: source({ sha256: "0".repeat(64) }), cacheDir: dir }), (e: unknown) => {
    assert.ok(e instanceof ChecksumMismatchError);
    assert.equal((e as ChecksumMismatchError).actual, SHA);
    return true;
  });
  assert.equal(existsSync(join(dir, "model.gguf")), false);
  assert.equal(existsSync(join(dir, "model.gguf.part")), false);
});

test("a corrupt file under the model's name is replaced", async () => {
  mode = "normal";
  const dir = cacheDir();
  writeFileSync(join(dir, "model.gguf"), "garbage");
  const path = await ensureModel({ source: source(), cacheDir: dir });
  assert.ok(readFileSync(path).equals(MODEL));
});

test("unreachable host and HTTP errors give a clear message naming TRELLIS_MODEL", async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  await assert.rejects(
    ensureModel({ source: source({ url: `http://127.0.0.1:${port}/model.gguf` }), cacheDir: cacheDir() }),
    (e: unknown) => {
      assert.ok(e instanceof ModelDownloadError);
      assert.match(
        (e as Error).message,
        /could not download the default model from http:\/\/127\.0\.0\.1:\d+\/model\.gguf \(ECONNREFUSED\)/,
      );
      assert.match((e as Error).message, /TRELLIS_MODEL=/);
      return true;
    },
  );
  await assert.rejects(ensureModel({ source: source({ url: `${base}/missing.gguf` }), cacheDir: cacheDir() }), /HTTP 404.*TRELLIS_MODEL/);
});
