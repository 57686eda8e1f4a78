/**
 * The default model: downloaded once into a cache folder, checksum-verified, reused.
 *
 * The download goes to `<file>.part` (resumed with an HTTP Range request when a partial file is
 * there), is hashed while it streams, and is renamed onto the final name only once its sha256
 * matches, so a half-written or corrupt file is never mistaken for the model. A `<file>.sha256`
 * marker written after verification lets later starts skip re-hashing hundreds of megabytes.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";

export interface ModelSource {
  url: string;
  /** Lower-case hex sha256 of the file. */
  sha256: string;
  fileName: string;
  /** Expected size in bytes, when known (for the progress bar before headers arrive). */
  sizeBytes?: number;
}

/**
 * Qwen2.5-0.5B-Instruct, Q4_K_M, from a pinned commit of bartowski/Qwen2.5-0.5B-Instruct-GGUF.
 * The sha256 is the Git LFS object id Hugging Face lists for that file (398 MB).
 */
export const DEFAULT_MODEL: ModelSource = {
  url: "https://huggingface.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF/resolve/b26a58accf53b1a19fbc555d52fdb224bec473f5/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",
  sha256: "6eb923e7d26e9cea28811e1a8e852009b21242fb157b26149d3b188f3a8c8653",
  fileName: "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf",
};

export class ModelDownloadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ModelDownloadError";
  }
}

export class ChecksumMismatchError extends ModelDownloadError {
  constructor(
    readonly expected: string,
    readonly actual: string,
    url: string,
  ) {
    super(`checksum mismatch for ${url}: expected sha256 ${expected}, got ${actual}; the partial download was deleted`);
    this.name = "ChecksumMismatchError";
  }
}

export interface DownloadProgress {
  receivedBytes: number;
  totalBytes: number | null;
}

export interface EnsureModelOptions {
  source?: ModelSource;
  cacheDir: string;
  onProgress?: (progress: DownloadProgress) => void;
  /** Abort a stalled connection after this long without data, ms. */
  idleTimeoutMs?: number;
}

const SET_TRELLIS_MODEL = "Set TRELLIS_MODEL=/path/to/model.gguf to use a local GGUF model file instead (no download needed).";

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

async function fileSize(path: string): Promise<number | null> {
  try {
    return (await stat(path)).size;
  } catch {
    return null;
  }
}

/** Returns the local path of the model, downloading and verifying it first if needed. */
export async function ensureModel(options: EnsureModelOptions): Promise<string> {
  const source = options.source ?? DEFAULT_MODEL;
  const expected = source.sha256.toLowerCase();
  await mkdir(options.cacheDir, { recursive: true });
  const finalPath = join(options.cacheDir, source.fileName);
  const markerPath = `${finalPath}.sha256`;
  const partPath = `${finalPath}.part`;

  const finalSize = await fileSize(finalPath);
  if (finalSize !== null) {
    const marker = await readFile(markerPath, "utf8").catch(() => "");
    const [markedHash, markedSize] = marker.trim().split(/\s+/);
    if (markedHash === expected && Number(markedSize) === finalSize) return finalPath;
    const actual = await sha256OfFile(finalPath);
    if (actual === expected) {
      await writeFile(markerPath, `${expected} ${finalSize}\n`);
      return finalPath;
    }
    // A file under our name with the wrong content: not ours to trust; fetch a fresh copy.
    await rm(finalPath, { force: true });
  }

  const hash = createHash("sha256");
  const offset = (await fileSize(partPath)) ?? 0;
  if (offset > 0) {
    // Resume: hash what is already there so the final digest covers the whole file.
    for await (const chunk of createReadStream(partPath)) hash.update(chunk as Buffer);
  }

  const controller = new AbortController();
  const idleMs = options.idleTimeoutMs ?? 30_000;
  let idleTimer = setTimeout(() => controller.abort(), idleMs);
  const bumpIdle = (): void => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => controller.abort(), idleMs);
  };

  let response: Response;
  try {
    response = await fetch(source.url, {
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
      signal: controller.signal,
      redirect: "follow",
    });
  } catch (error) {
    clearTimeout(idleTimer);
    const reason = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail = reason?.code ?? reason?.message ?? (error as Error).message;
    throw new ModelDownloadError(`could not download the default model from ${source.url} (${detail}). ${SET_TRELLIS_MODEL}`, {
      cause: error,
    });
  }

  try {
    let append = false;
    if (offset > 0 && response.status === 206) append = true;
    else if (response.status === 416 && offset > 0) {
      // The partial file is already complete (or larger than the resource): verify what we have.
      await response.body?.cancel();
      return await finish();
    } else if (response.status !== 200) {
      await response.body?.cancel();
      throw new ModelDownloadError(
        `could not download the default model from ${source.url}: HTTP ${response.status}. ${SET_TRELLIS_MODEL}`,
      );
    }
    if (!append && offset > 0) {
      // The server ignored the Range request: start over.
      hash.destroy();
      return await restart();
    }
    const lengthHeader = response.headers.get("content-length");
    const remaining = lengthHeader !== null ? Number(lengthHeader) : null;
    const total = remaining !== null ? offset + remaining : (source.sizeBytes ?? null);
    const file = createWriteStream(partPath, { flags: append ? "a" : "w" });
    let received = offset;
    options.onProgress?.({ receivedBytes: received, totalBytes: total });
    try {
      for await (const chunk of Readable.fromWeb(response.body! as import("node:stream/web").ReadableStream<Uint8Array>)) {
        bumpIdle();
        const bytes = chunk as Buffer;
        hash.update(bytes);
        received += bytes.length;
        if (!file.write(bytes)) await new Promise<void>((resolve) => file.once("drain", resolve));
        options.onProgress?.({ receivedBytes: received, totalBytes: total });
      }
    } catch (error) {
      await new Promise<void>((resolve) => file.end(resolve));
      throw new ModelDownloadError(
        `the download of ${source.url} was interrupted after ${received} bytes (${(error as Error).message}); run again to resume. ${SET_TRELLIS_MODEL}`,
        { cause: error },
      );
    }
    await new Promise<void>((resolve, reject) => file.end((error?: Error | null) => (error ? reject(error) : resolve())));
    const handle = await open(partPath, "r+");
    await handle.sync();
    await handle.close();
    const actual = hash.digest("hex");
    return await accept(actual);
  } finally {
    clearTimeout(idleTimer);
  }

  async function accept(actual: string): Promise<string> {
    if (actual !== expected) {
      await rm(partPath, { force: true });
      throw new ChecksumMismatchError(expected, actual, source.url);
    }
    await rename(partPath, finalPath);
    const size = (await fileSize(finalPath)) ?? 0;
    await writeFile(markerPath, `${expected} ${size}\n`);
    return finalPath;
  }

  async function finish(): Promise<string> {
    return accept(await sha256OfFile(partPath));
  }

  async function restart(): Promise<string> {
    await rm(partPath, { force: true });
    return ensureModel(options);
  }
}

/** A one-line progress bar on stderr (redrawn in place on a TTY, every 10% otherwise). */
export function progressBar(stream: NodeJS.WriteStream = process.stderr): (progress: DownloadProgress) => void {
  let lastShown = -1;
  let lastDraw = 0;
  return ({ receivedBytes, totalBytes }) => {
    const mb = (n: number) => (n / 1_048_576).toFixed(1);
    if (totalBytes && totalBytes > 0) {
      const fraction = Math.min(1, receivedBytes / totalBytes);
      const percent = Math.floor(fraction * 100);
      if (stream.isTTY) {
        const now = Date.now();
        if (now - lastDraw < 100 && fraction < 1) return;
        lastDraw = now;
        const width = 30;
        const filled = Math.round(fraction * width);
        stream.write(
          `\rdownloading model [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${percent}% ${mb(receivedBytes)}/${mb(totalBytes)} MB`,
        );
        if (fraction >= 1) stream.write("\n");
      } else if (percent >= lastShown + 10 || (fraction >= 1 && lastShown < 100)) {
        lastShown = percent - (percent % 10);
        stream.write(`downloading model: ${percent}% (${mb(receivedBytes)}/${mb(totalBytes)} MB)\n`);
      }
    } else if (stream.isTTY) {
      stream.write(`\rdownloading model: ${mb(receivedBytes)} MB`);
    }
  };
}
