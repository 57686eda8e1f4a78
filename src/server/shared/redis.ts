/**
 * One connection to the Redis that Trellis replicas share (TRELLIS_REDIS_URL), set up so that a
 * slow, missing or restarting Redis costs a request at most one short command timeout and never
 * the process: commands are refused at once while it is down (no offline queue, no retry of a
 * command), each command gives up after `commandTimeoutMs`, and the client reconnects forever,
 * at most a second apart. Callers check `available` and fall back to local state; the errors
 * ioredis emits while Redis is away are taken here (an unhandled 'error' event would end Node),
 * and the transitions are logged once each, not once per reconnect attempt.
 */
import { Redis } from "ioredis";

/** A structured log line: an event name ("redis.down") and what goes with it. */
export type SharedLog = (event: string, detail: Record<string, unknown>) => void;

export interface RedisConnectionOptions {
  log?: SharedLog;
  /** A command without a reply by then fails (and its caller falls back). Default 250 ms. */
  commandTimeoutMs?: number;
  /** Default 1 s. */
  connectTimeoutMs?: number;
  /** The connection's name in logs and in Redis's CLIENT LIST. */
  name?: string;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 250;
const DEFAULT_CONNECT_TIMEOUT_MS = 1000;
/** Reconnect attempts back off from 50 ms, doubling, to at most this. */
const MAX_RECONNECT_DELAY_MS = 1000;

/** A TRELLIS_REDIS_URL that is not a redis:// or rediss:// URL. */
export class RedisUrlError extends Error {
  constructor(reason: string) {
    super(`TRELLIS_REDIS_URL ${reason}: expected redis://[user:password@]host[:port][/db] or rediss://… (TLS)`);
    this.name = "RedisUrlError";
  }
}

/** Checks `url` and returns it parsed; the message never repeats the URL, which may hold a password. */
export function parseRedisUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisUrlError("is not a URL");
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") throw new RedisUrlError(`has the scheme "${parsed.protocol}"`);
  if (parsed.hostname === "") throw new RedisUrlError("names no host");
  const db = parsed.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d{1,5}$/.test(db)) throw new RedisUrlError(`has "${parsed.pathname}" where a database number goes`);
  return parsed;
}

/** Where a URL points, without its credentials: for logs. */
function describeTarget(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname === "/" ? "" : url.pathname}`;
}

/** A connection to the shared Redis; see the module comment. Build it with connectRedis(). */
export class RedisConnection {
  readonly client: Redis;
  readonly name: string;
  /** host:port/db, no credentials. */
  readonly target: string;
  readonly commandTimeoutMs: number;
  readonly log: SharedLog;
  private readonly url: string;
  private readonly options: RedisConnectionOptions;
  /** What the log last said, so each transition is logged once; null: nothing yet. */
  private reported: "up" | "down" | null = null;
  private lastError: string | null = null;
  private up = false;
  private closing = false;
  private readonly statusListeners = new Set<(up: boolean) => void>();

  constructor(url: string, options: RedisConnectionOptions = {}) {
    const parsed = parseRedisUrl(url);
    this.url = url;
    this.options = options;
    this.name = options.name ?? "trellis";
    this.target = describeTarget(parsed);
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.log = options.log ?? (() => {});
    this.client = new Redis(url, {
      connectionName: this.name,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // A command cut off by a lost connection was answered locally already: resending it later
      // would only take a token no one waits for.
      autoResendUnfulfilledCommands: false,
      // Subscribers subscribe again on 'ready' themselves (revocations.ts), where a failure can
      // be caught; ioredis's own resubscribe leaves its promise unhandled.
      autoResubscribe: false,
      commandTimeout: this.commandTimeoutMs,
      connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      // A socket that stops answering (a half-open connection, a frozen server) is dropped and
      // reconnected rather than timing out every command for ever.
      socketTimeout: Math.max(1000, 4 * this.commandTimeoutMs),
      retryStrategy: (attempt) => Math.min(MAX_RECONNECT_DELAY_MS, 50 * 2 ** Math.min(attempt, 10)),
      lazyConnect: false,
    });
    this.client.on("error", (error: Error) => {
      this.lastError = error.message;
    });
    this.client.on("ready", () => this.transition(true));
    this.client.on("close", () => this.transition(false));
  }

  /** Connected and past the ready check: commands may be sent. */
  get available(): boolean {
    return this.client.status === "ready";
  }

  /** Calls `listener(true)` each time the connection becomes ready, `listener(false)` each time a ready one is lost. */
  onStatus(listener: (up: boolean) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  /**
   * Resolves true once the connection is ready, false after `timeoutMs` (it keeps trying in the
   * background either way): for a start-up that wants to wait briefly for Redis, never for ever.
   */
  waitUntilAvailable(timeoutMs: number): Promise<boolean> {
    if (this.available) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        stop();
        resolve(this.available);
      }, timeoutMs);
      const stop = this.onStatus((up) => {
        if (!up) return;
        clearTimeout(timer);
        stop();
        resolve(true);
      });
    });
  }

  /** Another connection to the same Redis with the same options (a pub/sub subscriber needs its own). */
  duplicate(name: string): RedisConnection {
    return new RedisConnection(this.url, { ...this.options, name });
  }

  /** Quits politely when connected (bounded by the command timeout), then drops the socket; idempotent. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.available) {
      try {
        await this.client.quit();
      } catch {
        // Already gone, or too slow to answer: disconnect() below ends it either way.
      }
    }
    this.client.disconnect(false);
    this.statusListeners.clear();
  }

  private transition(up: boolean): void {
    if (this.closing) return;
    const state = up ? "up" : "down";
    if (this.reported !== state) {
      this.reported = state;
      if (up) this.log("redis.up", { connection: this.name, target: this.target });
      else this.log("redis.down", { connection: this.name, target: this.target, error: this.lastError ?? "connection closed" });
    }
    if (up) this.lastError = null;
    if (this.up === up) return;
    this.up = up;
    for (const listener of this.statusListeners) {
      try {
        listener(up);
      } catch (error) {
        // It runs inside ioredis's event emission, where a throw would end the process.
        this.log("redis.listener-failed", { connection: this.name, error: error instanceof Error ? error.message : String(error) });
      }
    }
  }
}

/**
 * Connects to the shared Redis at `url` (redis:// or rediss://; a RedisUrlError otherwise). The
 * connection starts at once and keeps retrying in the background; nothing here waits for it.
 */
export function connectRedis(url: string, options: RedisConnectionOptions = {}): RedisConnection {
  return new RedisConnection(url, options);
}
