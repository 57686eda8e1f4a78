#!/usr/bin/env node
/**
 * trellis serve              start the HTTP service (default command)
 * trellis keys create <name> create an API key and print it (shown once)
 * trellis keys list          list keys with usage
 * trellis keys revoke <id>   revoke a key
 * trellis download           fetch the default model into the cache and print its path
 */
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { ConfigError, SETTINGS, loadConfig, type Config } from "./config.js";
import { DEFAULT_MODEL, ModelDownloadError, ensureModel, progressBar, type ModelSource } from "./model/download.js";
import { RuntimeLoadError } from "./model/native.js";
import { AdminTokenError, KeyNameError, KeyNotFoundError, KeyStore, ensureAdminToken, printableKeyName } from "./store/keys.js";
import type { Engine } from "./generate/types.js";

/** What `serve` hands to `createEngine` of src/engine.ts. */
export interface EngineFactoryOptions {
  modelPath: string;
  threads: number;
  contextSize: number;
  /** Sequences decoded together (the server admits this many generations at once). */
  maxSequences: number;
  /** "" = CPU, else a node-llama-cpp GPU backend name such as "cuda". */
  gpu: string;
  regexMaxStates?: number;
  regexTimeoutMs?: number;
}

export interface CliIo {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
  /** Module exporting createEngine(options): Promise<Engine>; overridable for tests. */
  engineModule?: string;
  modelSource?: ModelSource;
}

const USAGE = `Usage: trellis <command> [options]

Commands:
  serve                 start the HTTP service (default)
  keys create <name>    create an API key; prints it once
  keys list             list API keys with usage
  keys revoke <id>      revoke an API key
  download              download the default model into the cache and print its path
  help                  this text

Options (each also an environment variable):
${SETTINGS.map((s) => `  ${`${s.flag} <value>`.padEnd(28)} ${s.env} (default ${s.defaultText})`).join("\n")}
`;

export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CliError";
  }
}

function openStore(config: Config): KeyStore {
  return new KeyStore({ dataDir: config.dataDir });
}

function keysCommand(config: Config, args: string[], io: CliIo): void {
  const [sub, ...rest] = args;
  const store = openStore(config);
  try {
    switch (sub) {
      case "create": {
        const name = rest.join(" ").trim();
        if (!name) throw new CliError("usage: trellis keys create <name>");
        const created = store.createKey(name);
        io.err(`created key ${created.id} "${created.name}" — store it now, it is not shown again:`);
        io.out(created.key);
        return;
      }
      case "list": {
        const keys = store.listKeys();
        if (keys.length === 0) {
          io.out("no keys");
          return;
        }
        const rows = keys.map((k) => [
          String(k.id),
          printableKeyName(k.name),
          `${k.prefix}…`,
          k.revokedAt ? "revoked" : "active",
          String(k.requests),
          String(k.tokens),
          k.lastUsedAt ?? "never",
          k.createdAt,
        ]);
        const header = ["id", "name", "key", "status", "requests", "tokens", "last used", "created"];
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
        const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
        io.out(line(header));
        for (const row of rows) io.out(line(row));
        return;
      }
      case "revoke": {
        const id = Number(rest[0]);
        if (!rest[0] || !Number.isSafeInteger(id) || id <= 0) throw new CliError("usage: trellis keys revoke <id> (see trellis keys list)");
        try {
          const changed = store.revokeKey(id);
          io.out(changed ? `revoked key ${id}` : `key ${id} was already revoked`);
        } catch (error) {
          if (error instanceof KeyNotFoundError) throw new CliError(error.message);
          throw error;
        }
        return;
      }
      default:
        throw new CliError("usage: trellis keys create <name> | keys list | keys revoke <id>");
    }
  } finally {
    store.close();
  }
}

async function resolveModelPath(config: Config, io: CliIo): Promise<string> {
  if (config.modelPath) {
    if (!existsSync(config.modelPath)) {
      throw new CliError(`TRELLIS_MODEL points to ${config.modelPath}, which does not exist`);
    }
    return config.modelPath;
  }
  const source = io.modelSource ?? DEFAULT_MODEL;
  io.err(`TRELLIS_MODEL is not set: using the default model ${source.fileName} (cache: ${config.modelCacheDir})`);
  try {
    return await ensureModel({ source, cacheDir: config.modelCacheDir, onProgress: progressBar() });
  } catch (error) {
    if (error instanceof ModelDownloadError) throw new CliError(error.message);
    throw error;
  }
}

async function loadEngineFactory(
  io: CliIo,
): Promise<(options: EngineFactoryOptions) => Promise<Engine>> {
  const specifier = io.engineModule ?? new URL("./engine.js", import.meta.url).href;
  let module: { createEngine?: unknown };
  try {
    module = (await import(specifier)) as { createEngine?: unknown };
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e.code === "ERR_MODULE_NOT_FOUND") {
      throw new CliError(`the generation engine module could not be loaded (${e.message ?? "not found"}); is the build complete?`);
    }
    throw error;
  }
  if (typeof module.createEngine !== "function") {
    throw new CliError("src/engine does not export createEngine(options)");
  }
  return module.createEngine as (options: EngineFactoryOptions) => Promise<Engine>;
}

async function serveCommand(config: Config, io: CliIo): Promise<void> {
  const createEngine = await loadEngineFactory(io);
  const modelPath = await resolveModelPath(config, io);
  const store = openStore(config);
  let admin: { hash: string; generated: string | null };
  try {
    admin = ensureAdminToken(store, config.adminToken);
  } catch (error) {
    store.close();
    throw error;
  }
  if (admin.generated) {
    io.out(`Dashboard admin token (shown once, stored hashed in ${store.path}): ${admin.generated}`);
  }
  let engine: Engine;
  try {
    engine = await createEngine({
      modelPath,
      threads: config.threads,
      contextSize: config.contextSize,
      maxSequences: config.concurrency,
      gpu: config.gpu,
      regexMaxStates: config.regexMaxStates,
      regexTimeoutMs: config.regexTimeoutMs,
    });
  } catch (error) {
    store.close();
    throw error;
  }
  const { createService } = await import("./dashboard/index.js");
  const app = await createService({
    engine,
    config,
    store,
    adminTokenHash: admin.hash,
    logger: { level: config.logLevel },
    processMetrics: true,
  });
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  io.err(`Trellis listening on http://${config.host}:${port} (dashboard: /dashboard, docs: /docs)${engine.backend ? `; model on ${engine.backend}` : ""}`);

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    io.err(`${signal}: finishing in-flight requests, refusing new ones`);
    try {
      await app.trellis.shutdown();
      await engine.close();
    } finally {
      store.close();
    }
    io.err("stopped");
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  try {
    const { config, positional } = loadConfig(io.env, argv);
    const [command = "serve", ...args] = positional;
    switch (command) {
      case "serve":
        await serveCommand(config, io);
        return 0;
      case "keys":
        keysCommand(config, args, io);
        return 0;
      case "download": {
        const path = await resolveModelPath({ ...config, modelPath: "" }, io);
        io.out(path);
        return 0;
      }
      case "help":
      case "--help":
        io.out(USAGE);
        return 0;
      default:
        throw new CliError(`unknown command "${command}"\n${USAGE}`);
    }
  } catch (error) {
    // A missing or unstartable llama.cpp build is the operator's to fix: the message says how.
    if (error instanceof CliError || error instanceof ConfigError || error instanceof KeyNameError || error instanceof AdminTokenError || error instanceof RuntimeLoadError) {
      io.err(`trellis: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) argv.splice(0, argv.length, "help");
  main(argv, {
    out: (line) => process.stdout.write(line + "\n"),
    err: (line) => process.stderr.write(line + "\n"),
    env: process.env,
  }).then(
    (code) => {
      if (code !== 0) process.exit(code);
    },
    (error: unknown) => {
      process.stderr.write(`trellis: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
