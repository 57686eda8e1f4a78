/**
 * Key changes told to every replica over Redis pub/sub, so that a key revoked (or given a new
 * expiry, quota or rate limit) through one replica's dashboard stops working as it was on all of
 * them at once, rather than when each one's cached key row runs out.
 *
 * A message is JSON, `{"keyId":12,"change":"revoked"}`, on the channel `<prefix>key-revocations`
 * (default prefix "trellis:"); anything else on the channel is counted and ignored. Subscribing
 * takes a connection of its own (a subscribed Redis connection accepts nothing else), which this
 * class opens beside the one it is given and subscribes again each time that one reconnects.
 *
 * Pub/sub delivers only to those listening at the time: a message published while Redis or this
 * replica's subscription was down is lost. So publish() failing is logged and counted, and
 * onResubscribed() tells a replica when it may have missed some (it should drop every cached key
 * row then); a replica's key cache still needs its own bound on staleness.
 */
import type { RedisConnection, SharedLog } from "./redis.js";

export type KeyChange = "revoked" | "expiry" | "quota" | "rate-limit";

export interface KeyChangeEvent {
  keyId: number;
  change: KeyChange;
}

export interface RevocationBroadcastOptions {
  /** The channel is `<prefix>key-revocations`. Default "trellis:". */
  channelPrefix?: string;
  /**
   * The subscriber pings Redis this often, so that a connection that went silent (a half-open
   * socket, a frozen server) is noticed within about a second of a ping and replaced, rather than
   * missing changes until TCP keepalive gives up. Default 5 s.
   */
  heartbeatMs?: number;
  /** Default: the connection's log. */
  log?: SharedLog;
}

export interface RevocationBroadcastStats {
  published: number;
  publishFailures: number;
  received: number;
  /** Messages on the channel that were not a key change, ignored. */
  malformed: number;
  subscribed: boolean;
}

const KEY_CHANGES: ReadonlySet<string> = new Set<KeyChange>(["revoked", "expiry", "quota", "rate-limit"]);
/** A key change is a few dozen bytes; a longer message is not one and is not worth parsing. */
const MAX_MESSAGE_CHARS = 1024;
const SUBSCRIBE_RETRY_MS = 1000;

/** The event in a message, or null when the message is not one. */
export function parseKeyChange(message: string): KeyChangeEvent | null {
  if (message.length > MAX_MESSAGE_CHARS) return null;
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const { keyId, change } = value as { keyId?: unknown; change?: unknown };
  if (typeof keyId !== "number" || !Number.isSafeInteger(keyId) || keyId < 0) return null;
  if (typeof change !== "string" || !KEY_CHANGES.has(change)) return null;
  return { keyId, change: change as KeyChange };
}

export class RevocationBroadcast {
  readonly channel: string;
  private readonly publisher: RedisConnection;
  private readonly subscriber: RedisConnection;
  private readonly log: SharedLog;
  private readonly changeListeners = new Set<(event: KeyChangeEvent) => void>();
  private readonly resubscribeListeners = new Set<() => void>();
  private subscribedNow = false;
  /** Subscribed at least once: a later subscription follows a gap in which messages may have been lost. */
  private subscribedBefore = false;
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private published = 0;
  private publishFailures = 0;
  private received = 0;
  private malformed = 0;

  /** Publishes through `redis`; listens on a second connection to the same Redis, opened here. */
  constructor(redis: RedisConnection, options: RevocationBroadcastOptions = {}) {
    this.channel = `${options.channelPrefix ?? "trellis:"}key-revocations`;
    this.publisher = redis;
    this.log = options.log ?? redis.log;
    this.subscriber = redis.duplicate(`${redis.name}-key-changes`);
    this.subscriber.client.on("message", (channel: string, message: string) => {
      if (channel === this.channel) this.deliver(message);
    });
    this.subscriber.onStatus((up) => {
      if (up) this.subscribe();
      else this.subscribedNow = false;
    });
    if (this.subscriber.available) this.subscribe();
    // A ping without an answer arms the connection's socket timeout (redis.ts), which drops it.
    this.heartbeat = setInterval(() => {
      if (this.subscriber.available) this.subscriber.client.ping().catch(() => {});
    }, options.heartbeatMs ?? 5000);
    this.heartbeat.unref();
  }

  /** The subscription is in place: messages published from now on arrive. */
  get subscribed(): boolean {
    return this.subscribedNow;
  }

  stats(): RevocationBroadcastStats {
    return {
      published: this.published,
      publishFailures: this.publishFailures,
      received: this.received,
      malformed: this.malformed,
      subscribed: this.subscribedNow,
    };
  }

  /** Tells every replica (this one too) that a key changed; `change` defaults to "revoked". Never throws. */
  async publish(event: { keyId: number; change?: KeyChange }): Promise<void> {
    const change = event.change ?? "revoked";
    const message = JSON.stringify({ keyId: event.keyId, change });
    if (parseKeyChange(message) === null) {
      this.publishFailed(event.keyId, change, "not a key change (keyId must be a non-negative integer)");
      return;
    }
    if (!this.publisher.available) {
      this.publishFailed(event.keyId, change, "redis unavailable");
      return;
    }
    try {
      await this.publisher.client.publish(this.channel, message);
      this.published++;
    } catch (error) {
      this.publishFailed(event.keyId, change, error instanceof Error ? error.message : String(error));
    }
  }

  /** Calls `listener` for every key change, from any replica; returns what unsubscribes it. */
  onKeyChange(listener: (event: KeyChangeEvent) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Calls `listener` for revocations only. */
  onRevoked(listener: (event: KeyChangeEvent) => void): () => void {
    return this.onKeyChange((event) => {
      if (event.change === "revoked") listener(event);
    });
  }

  /** Calls `listener` when the subscription is back after a gap: changes made meanwhile were not heard. */
  onResubscribed(listener: () => void): () => void {
    this.resubscribeListeners.add(listener);
    return () => this.resubscribeListeners.delete(listener);
  }

  /** Closes the subscriber connection (the publishing one belongs to the caller). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.changeListeners.clear();
    this.resubscribeListeners.clear();
    await this.subscriber.close();
  }

  private subscribe(): void {
    if (this.closed) return;
    this.subscriber.client.subscribe(this.channel).then(
      () => {
        if (this.closed || !this.subscriber.available) return;
        this.subscribedNow = true;
        const gap = this.subscribedBefore;
        this.subscribedBefore = true;
        this.log("key-changes.subscribed", { channel: this.channel, resubscribed: gap });
        if (gap) for (const listener of this.resubscribeListeners) this.call(listener, undefined);
      },
      // Lost with the connection: its next 'ready' subscribes again. Refused or timed out on a
      // live connection: try again in a second.
      (error: unknown) => {
        this.log("key-changes.subscribe-failed", { channel: this.channel, error: error instanceof Error ? error.message : String(error) });
        if (this.subscriber.available) setTimeout(() => this.subscriber.available && this.subscribe(), SUBSCRIBE_RETRY_MS).unref();
      },
    );
  }

  private deliver(message: string): void {
    const event = parseKeyChange(message);
    if (event === null) {
      this.malformed++;
      return;
    }
    this.received++;
    for (const listener of this.changeListeners) this.call(listener, event);
  }

  /** A listener's throw must not reach ioredis's event emission (it would end the process). */
  private call<T>(listener: (argument: T) => void, argument: T): void {
    try {
      listener(argument);
    } catch (error) {
      this.log("key-changes.listener-failed", { channel: this.channel, error: error instanceof Error ? error.message : String(error) });
    }
  }

  private publishFailed(keyId: number, change: KeyChange, reason: string): void {
    this.publishFailures++;
    this.log("key-changes.publish-failed", { channel: this.channel, keyId, change, reason });
  }
}
