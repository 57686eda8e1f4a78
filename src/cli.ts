#!/usr/bin/env node
/**
 * trellis serve                          start the HTTP service (default command)
 * trellis keys create <name> [--quota N] [--expires DATE] [--rate-limit N]
 *                                        create an API key and print it (shown once)
 * trellis keys list                      list keys with usage, quotas, expiries, rate limits
 * trellis keys quota <id> <N|none>       set or clear a key's token quota
 * trellis keys expiry <id> <DATE|none>   set or clear a key's expiry
 * trellis keys rate-limit <id> <N|none>  set or clear a key's own rate limit
 * trellis keys revoke <id>               revoke a key
 * trellis migrate                        bring the key store's schema up to date (SQLite or Postgres)
 * trellis download                       fetch the default model into the cache and print its path
 */
import { closeSync, openSync, readSync, realpathSync, statSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { fileURLToPath } from "node:url";
import { ConfigError, SETTINGS, engineOptions, loadConfig, type Config, type EngineFactoryOptions } from "./config.js";
import { DEFAULT_MODEL, ModelDownloadError, ensureModel, progressBar, type ModelSource } from "./model/index.js";
import { RuntimeLoadError } from "./model/index.js";
import {
  AdminTokenError,
  KeyNameError,
  KeyNotFoundError,
  KeyStore,
  KeyStoreError,
  PostgresKeyStore,
  asKeyBackend,
  KeySettingError,
  QuotaValueError,
  prepareSharedAdminToken,
  formatUnwrittenUsage,
  parseExpiry,
  parseQuota,
  parseRateLimit,
  printableKeyName,
  type KeyBackend,
  type KeyStoreOptions,
} from "./store/index.js";
import { GgufFormatError } from "./vocab/index.js";
import { RevocationBroadcast, connectRedis, type KeyChange } from "./server/shared/index.js";
import type { Engine } from "./generate/index.js";

export type { EngineFactoryOptions };

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
  keys create <name> [--quota N] [--expires DATE] [--rate-limit N]
                        create an API key; prints it once. --quota: the most tokens it
                        may generate in all (default: unlimited); --expires: refused from
                        then on (YYYY-MM-DD = 00:00 UTC, or an ISO date and time with its
                        offset; default: never); --rate-limit: requests per minute,
                        replacing TRELLIS_RATE_LIMIT for this key
  keys list             list API keys with usage, quotas, expiries and rate limits
  keys quota <id> <N|none>
                        set a key's token quota, or clear it (none: unlimited)
  keys expiry <id> <DATE|none>
                        set a key's expiry, or clear it (none: never expires)
  keys rate-limit <id> <N|none>
                        set a key's rate limit, or clear it (none: TRELLIS_RATE_LIMIT)
  keys revoke <id>      revoke an API key
  migrate               bring the key store's schema up to date (SQLite, or Postgres with
                        TRELLIS_DATABASE_URL) and print its version
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

/**
 * How long the server's own key and setting writes (dashboard create/revoke, the first admin
 * token) wait for another process's lock, ms: the wait blocks the event loop, so every request
 * in flight waits with it. The CLI's key commands keep the store's 5 s default (nothing else
 * waits on them); the usage flush has its own, shorter wait.
 */
const SERVE_BUSY_TIMEOUT_MS = 100;

/**
 * The key store the configuration names: Postgres when TRELLIS_DATABASE_URL is set, else SQLite
 * in TRELLIS_DATA_DIR. `migrate`: bring the schema up to date now (the default follows
 * TRELLIS_MIGRATE_ON_START); otherwise an out-of-date schema is refused.
 */
async function openStore(
  config: Config,
  options: Omit<KeyStoreOptions, "dataDir" | "migrate"> = {},
  migrate: boolean = config.migrateOnStart,
): Promise<KeyBackend> {
  try {
    if (config.databaseUrl) {
      return await PostgresKeyStore.open({
        ...options,
        url: config.databaseUrl,
        poolSize: config.databasePoolSize,
        keyCacheMs: config.keyCacheMs,
        keyStaleMs: config.keyStaleMs,
        migrate,
      });
    }
    return asKeyBackend(new KeyStore({ ...options, dataDir: config.dataDir, migrate }));
  } catch (error) {
    throw keyStoreFailure(error);
  }
}

/** A KeyStoreError as one line saying what to do, naming the setting to change; anything else as it is. */
function keyStoreFailure(error: unknown): unknown {
  if (!(error instanceof KeyStoreError)) return error;
  const postgres = /^postgres(ql)?:/.test(error.path);
  const elsewhere = postgres ? "check TRELLIS_DATABASE_URL (--database-url)" : "set TRELLIS_DATA_DIR (--data-dir) to another folder";
  const advice: Record<KeyStoreError["failure"], string> = {
    "not-a-directory": "fix that or set TRELLIS_DATA_DIR (--data-dir) to another folder",
    "not-writable": postgres
      ? "check the user and password in TRELLIS_DATABASE_URL (--database-url)"
      : "make it writable by this user or set TRELLIS_DATA_DIR (--data-dir) to a writable folder",
    "disk-full": postgres
      ? "free some space on the database server"
      : "free some space or set TRELLIS_DATA_DIR (--data-dir) to a folder on another disk",
    "not-a-database": "move that file away (it is not a Trellis key store) or set TRELLIS_DATA_DIR (--data-dir) to another folder",
    locked: "let the other process finish (or stop it) and try again",
    "newer-schema": `or ${elsewhere}`,
    "old-schema": `or ${elsewhere}`,
    unreachable: "start the database or check TRELLIS_DATABASE_URL (--database-url)",
    io: postgres
      ? "check the database and TRELLIS_DATABASE_URL (--database-url)"
      : "check the file and its folder, or set TRELLIS_DATA_DIR (--data-dir) to another folder",
  };
  return new CliError(`${oneLine(error.message)}; ${advice[error.failure]}`);
}

/** Multi-line causes (llama.cpp's log) folded into the one line a start-up failure prints. */
function oneLine(text: string, maxChars = 400): string {
  const line = text
    .split(/\r?\n/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .join("; ");
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

const CREATE_USAGE = "keys create <name> [--quota N] [--expires DATE] [--rate-limit N]";
const KEYS_USAGE =
  `usage: trellis ${CREATE_USAGE} | keys list | keys quota <id> <N|none> | keys expiry <id> <DATE|none> | ` +
  "keys rate-limit <id> <N|none> | keys revoke <id>";

/** The options of `keys create`, as typed; each undefined when absent. */
interface CreateOptions {
  quota?: string;
  expires?: string;
  rateLimit?: string;
}

const CREATE_OPTIONS = [
  { flag: "--quota", field: "quota", needs: "a number of tokens (or none)" },
  { flag: "--expires", field: "expires", needs: "a date, YYYY-MM-DD or an ISO date and time (or none)" },
  { flag: "--rate-limit", field: "rateLimit", needs: "a number of requests per minute (or none)" },
] as const;

/**
 * Takes `--quota N`, `--expires DATE` and `--rate-limit N` (or `--flag=value`) out of argv:
 * options of `keys create` only, unknown to the service's settings (loadConfig refuses unknown
 * flags).
 */
function takeCreateOptions(argv: string[]): CreateOptions {
  const options: CreateOptions = {};
  for (const { flag, field, needs } of CREATE_OPTIONS) {
    const at = argv.findIndex((arg) => arg === flag || arg.startsWith(`${flag}=`));
    if (at < 0) continue;
    const arg = argv[at]!;
    if (arg !== flag) {
      argv.splice(at, 1);
      options[field] = arg.slice(flag.length + 1);
      continue;
    }
    const value = argv[at + 1];
    if (value === undefined) throw new CliError(`option ${flag} needs a value: ${needs}`);
    argv.splice(at, 2);
    options[field] = value;
  }
  return options;
}

function createOptionFlags(options: CreateOptions): string[] {
  return CREATE_OPTIONS.filter((o) => options[o.field] !== undefined).map((o) => o.flag);
}

/** "--quota is an option of" / "--quota, --expires are options of". */
function optionsOfCreate(flags: string[]): string {
  return `${flags.join(", ")} ${flags.length === 1 ? "is an option" : "are options"} of`;
}

function keyId(text: string | undefined, usage: string): number {
  const id = Number(text);
  if (!text || !Number.isSafeInteger(id) || id <= 0) throw new CliError(`${usage} (see trellis keys list)`);
  return id;
}

/** An operator's value through its parser; the store's refusal (naming the field) as a CliError. */
function operatorValue<T>(parse: (text: string) => T, text: string): T {
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof QuotaValueError || error instanceof KeySettingError) throw new CliError(error.message);
    throw error;
  }
}

/** Sets one setting of key `id` from `keys <sub> <id> <value>`; a missing key is a CliError. */
async function setKeySetting<T>(
  rest: string[],
  usage: string,
  parse: (text: string) => T,
  set: (id: number, value: T) => Promise<unknown>,
): Promise<[number, T]> {
  const id = keyId(rest[0], usage);
  if (rest[1] === undefined || rest.length > 2) throw new CliError(usage);
  const value = operatorValue(parse, rest[1]);
  try {
    await set(id, value);
  } catch (error) {
    if (error instanceof KeyNotFoundError) throw new CliError(error.message);
    throw error;
  }
  return [id, value];
}

async function keysCommand(config: Config, args: string[], io: CliIo, options: CreateOptions): Promise<void> {
  const [sub, ...rest] = args;
  const flags = createOptionFlags(options);
  if (flags.length > 0 && sub !== "create") throw new CliError(`${optionsOfCreate(flags)} keys create; ${KEYS_USAGE}`);
  const quota = options.quota === undefined ? null : operatorValue(parseQuota, options.quota);
  const expiresAt = options.expires === undefined ? null : operatorValue(parseExpiry, options.expires);
  const rateLimit = options.rateLimit === undefined ? null : operatorValue(parseRateLimit, options.rateLimit);
  const store = await openStore(config);
  try {
    switch (sub) {
      case "create": {
        const name = rest.join(" ").trim();
        if (!name) throw new CliError(`usage: trellis ${CREATE_USAGE}`);
        const created = await store.createKey(name, { quota, expiresAt, rateLimit });
        const settings = [
          created.quota === null ? null : `a quota of ${created.quota} tokens`,
          created.expiresAt === null ? null : `expiring on ${created.expiresAt}`,
          created.rateLimit === null ? null : `a rate limit of ${created.rateLimit} requests per minute`,
        ].filter((s) => s !== null);
        const described = settings.length === 0 ? "" : ` with ${settings.join(", ")}`;
        io.err(`created key ${created.id} "${created.name}"${described} — store it now, it is not shown again:`);
        io.out(created.key);
        return;
      }
      case "list": {
        const keys = await store.listKeys();
        if (keys.length === 0) {
          io.out("no keys");
          return;
        }
        const rows = keys.map((k) => [
          String(k.id),
          printableKeyName(k.name),
          `${k.prefix}…`,
          k.revokedAt ? "revoked" : k.expiresAt !== null && Date.parse(k.expiresAt) <= Date.now() ? "expired" : "active",
          String(k.requests),
          String(k.tokens),
          k.quota === null ? "none" : String(k.quota),
          k.quota === null ? "-" : String(Math.max(0, k.quota - k.tokens)),
          k.lastUsedAt ?? "never",
          k.expiresAt ?? "never",
          k.rateLimit === null ? "default" : `${k.rateLimit}/min`,
          k.createdAt,
        ]);
        // tokens is what the key has used: the quota bounds it, "left" is what remains. A rate
        // limit of "default" is TRELLIS_RATE_LIMIT.
        const header = [
          "id",
          "name",
          "key",
          "status",
          "requests",
          "tokens",
          "quota",
          "left",
          "last used",
          "expires",
          "rate limit",
          "created",
        ];
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
        const line = (cells: string[]) =>
          cells
            .map((c, i) => c.padEnd(widths[i]!))
            .join("  ")
            .trimEnd();
        io.out(line(header));
        for (const row of rows) io.out(line(row));
        return;
      }
      case "expiry": {
        const usage = "usage: trellis keys expiry <id> <DATE|none> (DATE: YYYY-MM-DD, 00:00 UTC, or an ISO date and time with its offset)";
        const [id] = await setKeySetting(rest, usage, parseExpiry, (keyId, value) => store.setExpiry(keyId, value));
        await tellReplicas(config, id, "expiry", io);
        const stored = (await store.listKeys()).find((k) => k.id === id)?.expiresAt ?? null;
        io.out(stored === null ? `key ${id} never expires now` : `key ${id} expires on ${stored}`);
        return;
      }
      case "rate-limit": {
        const usage = "usage: trellis keys rate-limit <id> <N|none> (N: requests per minute; none: TRELLIS_RATE_LIMIT)";
        const [id, value] = await setKeySetting(rest, usage, parseRateLimit, (keyId, limit) => store.setRateLimit(keyId, limit));
        await tellReplicas(config, id, "rate-limit", io);
        io.out(
          value === null
            ? `key ${id} has the service's rate limit now (TRELLIS_RATE_LIMIT)`
            : `key ${id} may make ${value} requests per minute`,
        );
        return;
      }
      case "quota": {
        const usage = "usage: trellis keys quota <id> <N|none> (N: the most tokens the key may generate in all)";
        const [id, value] = await setKeySetting(rest, usage, parseQuota, (keyId, quota) => store.setQuota(keyId, quota));
        await tellReplicas(config, id, "quota", io);
        const used = (await store.listKeys()).find((k) => k.id === id)?.tokens ?? 0;
        io.out(
          value === null
            ? `key ${id} has no quota now (unlimited)`
            : `key ${id} may generate ${value} tokens in all; it has used ${used}, ${Math.max(0, value - used)} left`,
        );
        return;
      }
      case "revoke": {
        const id = keyId(rest[0], "usage: trellis keys revoke <id>");
        try {
          const changed = await store.revokeKey(id);
          await tellReplicas(config, id, "revoked", io);
          io.out(changed ? `revoked key ${id}` : `key ${id} was already revoked`);
        } catch (error) {
          if (error instanceof KeyNotFoundError) throw new CliError(error.message);
          throw error;
        }
        return;
      }
      default:
        throw new CliError(KEYS_USAGE);
    }
  } catch (error) {
    throw keyStoreFailure(error);
  } finally {
    await store.close();
  }
}

/**
 * A key change made from the command line, told to running replicas through Redis (they forget
 * the key's cached row at once, as for a change made in their dashboard). Without Redis, or when
 * it cannot be reached, they see it within TRELLIS_KEY_CACHE_MS; SQLite has no cache to tell.
 */
async function tellReplicas(config: Config, keyId: number, change: KeyChange, io: CliIo): Promise<void> {
  if (!config.redisUrl || !config.databaseUrl) return;
  const redis = connectRedis(config.redisUrl, { log: () => {}, name: "trellis-cli" });
  try {
    if (!(await redis.waitUntilAvailable(2000))) {
      io.err(`trellis: Redis cannot be reached; running replicas see the change within TRELLIS_KEY_CACHE_MS (${config.keyCacheMs} ms)`);
      return;
    }
    const broadcast = new RevocationBroadcast(redis, { log: () => {} });
    await broadcast.publish({ keyId, change });
    await broadcast.close();
  } finally {
    await redis.close();
  }
}

/** `trellis migrate`: the schema brought up to date (under the store's lock), its version printed. */
async function migrateCommand(config: Config, io: CliIo): Promise<void> {
  const store = await openStore(config, {}, true);
  try {
    io.out(`key store schema at version ${await store.schemaVersion()} (${store.dialect}: ${store.location})`);
  } catch (error) {
    throw keyStoreFailure(error);
  } finally {
    await store.close();
  }
}

/**
 * TRELLIS_MODEL must be a readable file that starts like a GGUF model, checked here so that a
 * wrong path is one line naming it rather than a failure deep inside the model loader.
 */
function checkModelFile(path: string): void {
  const where = `TRELLIS_MODEL (--model) points to ${path}`;
  let isFile: boolean;
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) throw new CliError(`${where}, which is a directory; give the path of a .gguf file`);
    isFile = stat.isFile();
  } catch (error) {
    if (error instanceof CliError) throw error;
    const code = (error as { code?: string }).code;
    if (code === "ENOENT")
      throw new CliError(`${where}, which does not exist; give the path of a .gguf file, or unset it to use the default model`);
    throw new CliError(`${where}, which cannot be read (${code ?? (error as Error).message}); check the path and its folders' permissions`);
  }
  if (!isFile) throw new CliError(`${where}, which is not a regular file; give the path of a .gguf file`);
  const magic = Buffer.alloc(4);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    readSync(fd, magic, 0, 4, 0);
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new CliError(`${where}, which cannot be read (${code ?? (error as Error).message}); make it readable by this user`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (magic.toString("latin1") !== "GGUF") {
    throw new CliError(`${where}, which is not a GGUF model file (it does not start with "GGUF"); give the path of a .gguf file`);
  }
}

/**
 * Engine start-up failures the operator causes (a damaged or unsupported model file) as one
 * line; anything else is left to print its stack. llama.cpp's refusal has no type of its own
 * yet, so it is recognised by the addon's message.
 */
function engineFailure(error: unknown, modelPath: string): unknown {
  if (error instanceof GgufFormatError || (error as { name?: string } | null)?.name === "GgufFormatError") {
    return new CliError(`TRELLIS_MODEL ${modelPath} is not a usable GGUF model: ${oneLine((error as Error).message)}`);
  }
  const message = error instanceof Error ? error.message : "";
  if (message.startsWith("failed to load model")) {
    return new CliError(
      `llama.cpp could not load the model ${modelPath}: ${oneLine(message.replace(/^failed to load model \S*:?\s*/, "")) || "no detail"}; is it a complete GGUF file of an architecture this build supports?`,
    );
  }
  return error;
}

/** listen() failures (port taken, not allowed, not an address here) as one line naming HOST/PORT. */
function listenFailure(error: unknown, host: string, port: number): unknown {
  const e = error as { code?: string; syscall?: string; message?: string };
  const where = `cannot listen on ${host}:${port}`;
  switch (e.code) {
    case "EADDRINUSE":
      return new CliError(`${where}: the port is already in use by another process; stop it or set PORT (--port) to a free port`);
    case "EACCES":
    case "EPERM":
      return new CliError(`${where}: permission denied (ports below 1024 need privileges); set PORT (--port) to 1024 or above`);
    case "EADDRNOTAVAIL":
      return new CliError(
        `${where}: ${host} is not an address of this machine; set HOST (--host) to one of its addresses, or 0.0.0.0 for all`,
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_FAIL":
    case "EAI_NONAME":
      return new CliError(`${where}: the host name ${host} does not resolve; set HOST (--host) to an IP address or a resolvable name`);
  }
  if (e.syscall === "listen" || e.syscall === "bind" || e.syscall === "getaddrinfo") {
    return new CliError(`${where}: ${oneLine(e.message ?? String(e.code))}; check HOST (--host) and PORT (--port)`);
  }
  return error;
}

async function resolveModelPath(config: Config, io: CliIo): Promise<string> {
  if (config.modelPath) {
    checkModelFile(config.modelPath);
    return config.modelPath;
  }
  const source = io.modelSource ?? DEFAULT_MODEL;
  io.err(`TRELLIS_MODEL is not set: using the default model ${source.fileName} (cache: ${config.modelCacheDir})`);
  try {
    return await ensureModel({ source, cacheDir: config.modelCacheDir, onProgress: progressBar() });
  } catch (error) {
    if (error instanceof ModelDownloadError) throw new CliError(error.message);
    // File system refusals in the cache folder (not a folder, not writable, disk full).
    const e = error as { code?: string; syscall?: string; path?: string };
    if (typeof e.code === "string" && typeof e.syscall === "string") {
      throw new CliError(
        `cannot use the model cache folder ${config.modelCacheDir}: ${e.code} on ${e.path ?? "a file in it"}; make it a writable folder, set TRELLIS_CACHE_DIR (--cache-dir) to one, or set TRELLIS_MODEL to a local .gguf file`,
      );
    }
    throw error;
  }
}

async function loadEngineFactory(io: CliIo): Promise<(options: EngineFactoryOptions) => Promise<Engine>> {
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
  // Store failures are reported through io.err until the service's logger exists.
  let report = (_level: "warn" | "info", fields: Record<string, unknown>, message: string): void =>
    io.err(`trellis: ${message} ${JSON.stringify(fields)}`);
  // The key store and the admin token first: a wrong data folder or token is reported at once,
  // not after a model download or load.
  const store = await openStore(config, {
    busyTimeoutMs: SERVE_BUSY_TIMEOUT_MS,
    onFlushError: (failure) =>
      report(
        "warn",
        {
          err: failure.error.message,
          code: failure.code,
          consecutiveFailures: failure.consecutiveFailures,
          retryInMs: failure.retryInMs,
          pendingKeys: failure.pendingKeys,
          pendingRequests: failure.pendingRequests,
          pendingTokens: failure.pendingTokens,
        },
        `writing API key usage to ${store.location} failed; the counts are kept in memory and retried`,
      ),
    onFlushRecovered: (info) => report("info", info, "writing API key usage works again"),
    onUnwrittenUsage: (usage, error) => {
      for (const line of formatUnwrittenUsage(store.location, usage, error)) io.err(line);
    },
  });
  let engine: Engine | undefined;
  let app: FastifyInstance | undefined;
  try {
    // Checked and read now, but a generated token is stored and printed only once the service
    // is serving: a start that fails (model, port) must not burn the one-time token.
    const admin = await prepareSharedAdminToken(store, config.adminToken);
    const modelPath = await resolveModelPath(config, io);
    try {
      engine = await createEngine(engineOptions(config, modelPath));
    } catch (error) {
      throw engineFailure(error, modelPath);
    }
    const { createService } = await import("./service.js");
    app = await createService({
      engine,
      config,
      store,
      adminTokenHash: admin.hash,
      logger: { level: config.logLevel },
      processMetrics: true,
    });
    const log = app.log;
    report = (level, fields, message) => log[level](fields, message);
    try {
      await app.listen({ host: config.host, port: config.port });
    } catch (error) {
      throw listenFailure(error, config.host, config.port);
    }
    const generated = await admin.claim();
    if (generated) {
      io.out(`Dashboard admin token (shown once, stored hashed in ${store.location}): ${generated}`);
    }
  } catch (error) {
    await app?.close();
    await engine?.close();
    await store.close();
    throw keyStoreFailure(error);
  }
  // The stop handler closes over these, where the narrowing above does not reach.
  const running = { app, engine };
  const address = running.app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  io.err(
    `Trellis listening on http://${config.host}:${port} (dashboard: /dashboard, docs: /docs)${running.engine.backend ? `; model on ${running.engine.backend}` : ""}`,
  );

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    io.err(`${signal}: finishing in-flight requests, refusing new ones`);
    try {
      await running.app.trellis.shutdown();
      await running.engine.close();
    } finally {
      await store.close();
    }
    io.err("stopped");
    process.exit(0);
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  try {
    const rest = [...argv];
    const createOptions = takeCreateOptions(rest);
    const { config, positional } = loadConfig(io.env, rest);
    const [command = "serve", ...args] = positional;
    const flags = createOptionFlags(createOptions);
    if (flags.length > 0 && command !== "keys") throw new CliError(`${optionsOfCreate(flags)} trellis keys create`);
    switch (command) {
      case "serve":
        await serveCommand(config, io);
        return 0;
      case "keys":
        await keysCommand(config, args, io, createOptions);
        return 0;
      case "migrate":
        await migrateCommand(config, io);
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
    if (
      error instanceof CliError ||
      error instanceof ConfigError ||
      error instanceof KeyNameError ||
      error instanceof AdminTokenError ||
      error instanceof RuntimeLoadError
    ) {
      io.err(`trellis: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/**
 * Whether this module is the script node was started with. Compared by real path, since npm runs
 * a package's bin (npx, npm link, global installs) through a symlink: argv[1] is the link's path.
 */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
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
