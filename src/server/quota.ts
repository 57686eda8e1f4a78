/**
 * A store key's usage in one request, and its token quota: what the generation reserved at
 * admission (generation.ts), charged with the tokens the request generated and released in one
 * step (KeyBackend.recordUsage) once both the generation has settled and the answer is done, and
 * the X-Quota-Remaining header. Created by the key check (auth.ts) for keys of the store; keys of
 * TRELLIS_API_KEYS have no usage and no quota.
 *
 * "The answer is done" is the first of: a JSON answer about to be sent (onSend: routes set
 * `request.tokensGenerated` before they answer, so the header can count this request's charge),
 * a stream's end (onResponse), or the connection closing after a stream's headers went out (a
 * stream cut short: its generation is being cancelled, and what it generated until then counts).
 * A connection closing before any answer is not the end: the route still answers (onSend), and a
 * stream handed to a closed connection ends there.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { KeyBackend, TokenReservation } from "../store/index.js";

export const QUOTA_HEADER = "x-quota-remaining";

export class RequestUsage {
  private readonly reservations: TokenReservation[] = [];
  private running = 0;
  private answered = false;
  private settled = false;
  private closed = false;

  constructor(
    private readonly store: KeyBackend,
    private readonly request: FastifyRequest,
    reply: FastifyReply,
    readonly keyId: number,
    /** The key had a quota when it was authenticated: its generations reserve, its answers carry the header. */
    readonly limited: boolean,
  ) {
    reply.raw.once("close", () => {
      this.closed = true;
      if (reply.raw.headersSent) this.answerDone();
    });
  }

  /**
   * A generation is admitted: reserves the most tokens it may generate (`maxTokens`; undefined:
   * nothing reserved, only exhaustion checked). Throws the store's QuotaExceededError (402) when
   * the key's quota cannot cover it; otherwise generationSettled() must follow.
   */
  admit(maxTokens: number | undefined): void {
    if (this.limited) {
      const reservation = this.store.reserveTokens(this.keyId, maxTokens);
      if (reservation) this.reservations.push(reservation);
    }
    this.running++;
  }

  /** The admitted generation finished, failed or was cancelled. */
  generationSettled(): void {
    this.running--;
    // The answer ended first (a stream cut short): charge after the route's own continuation,
    // which runs in this turn's microtasks and may still count tokens; the hold stays till then.
    if (this.answered && this.running === 0) setImmediate(() => this.settle());
  }

  /** The answer is done (see the module comment); charged now, or when the generation settles. */
  answerDone(): void {
    this.answered = true;
    if (this.running === 0) this.settle();
  }

  /** A stream is handed to the connection: done already if the connection closed before it. */
  streamSent(): void {
    if (this.closed) this.answerDone();
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    this.store.recordUsage(this.keyId, this.request.tokensGenerated, this.reservations);
  }

  /** X-Quota-Remaining now: quota − used, this request's charge included once settled; null: no quota. */
  remaining(): number | null {
    return this.limited ? (this.store.quotaStatus(this.keyId)?.remaining ?? null) : null;
  }
}

function isStream(payload: unknown): boolean {
  return typeof (payload as { pipe?: unknown } | null)?.pipe === "function";
}

/**
 * The onSend step of a key's request: a JSON answer settles its usage first, so its header is the
 * quota left after this request's charge; a stream's headers go out before it generates, so its
 * header is what was left before.
 */
export function onSendUsage(request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
  const usage = request.keyUsage;
  if (!usage) return;
  if (isStream(payload)) usage.streamSent();
  else usage.answerDone();
  const remaining = usage.remaining();
  if (remaining !== null) reply.header(QUOTA_HEADER, String(remaining));
}
