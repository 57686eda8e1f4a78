/**
 * Per-key token quotas: the most tokens a key may generate over its life. "Used" is the key's
 * token usage (the `tokens` column plus what the usage buffer has not written yet), so it is
 * counted exactly and survives restarts with the usage flush; the quota itself is a column
 * (`token_quota`, NULL: unlimited).
 *
 * A quota is never exceeded because generations reserve before they run: admission holds the
 * most tokens the request may generate (max tokens × choices) against what the key has left,
 * and settling charges the tokens actually generated and releases the hold in one synchronous
 * step (KeyStore.recordUsage), so no moment counts a token twice or not at all. Reservations live
 * in this process (one server per data folder, as the usage buffer already assumes).
 */

/** Largest quota accepted: integers beyond it are not exact in a JavaScript number. */
export const MAX_TOKEN_QUOTA = Number.MAX_SAFE_INTEGER;

/** A key's quota at one moment. */
export interface QuotaStatus {
  /** The most tokens the key may generate in all. */
  quota: number;
  /** Tokens the key has generated, buffered usage included. */
  used: number;
  /** Tokens held by generations of this key in progress (this process). */
  reserved: number;
  /** quota − used, at least 0 (the X-Quota-Remaining header); 0: the key is exhausted. */
  remaining: number;
  /** remaining − reserved, at least 0: the most a new generation may reserve now. */
  available: number;
}

export function quotaStatus(quota: number, used: number, reserved: number): QuotaStatus {
  const remaining = Math.max(0, quota - used);
  return { quota, used, reserved, remaining, available: Math.max(0, remaining - reserved) };
}

/** A quota value the store refuses (not a whole number from 0 to MAX_TOKEN_QUOTA). */
export class QuotaValueError extends Error {
  readonly field = "quota";
  constructor(message: string) {
    super(message);
    this.name = "QuotaValueError";
  }
}

/** Checks a quota: null (unlimited) or a whole number of tokens from 0 to MAX_TOKEN_QUOTA. */
export function checkQuota(quota: number | null): number | null {
  if (quota === null) return null;
  if (!Number.isSafeInteger(quota) || quota < 0) {
    throw new QuotaValueError(`quota must be a whole number of tokens from 0 to ${MAX_TOKEN_QUOTA} (or none), got ${String(quota)}`);
  }
  return quota;
}

/** A quota as typed by an operator: digits, or "none" (also "unlimited") to clear it. */
export function parseQuota(text: string): number | null {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "none" || trimmed === "unlimited") return null;
  if (!/^\d+$/.test(trimmed)) {
    throw new QuotaValueError(`quota must be a whole number of tokens (or none), got ${JSON.stringify(text)}`);
  }
  return checkQuota(Number(trimmed));
}

/**
 * The key's quota cannot cover a request: it is exhausted (`requested` null: nothing was asked
 * beyond the key check), or the request may generate more tokens than are available. The
 * message says how many tokens the request may use and how many the key has left.
 */
export class QuotaExceededError extends Error {
  constructor(
    readonly keyId: number,
    /** The tokens the request asked to reserve; null for the exhaustion check alone. */
    readonly requested: number | null,
    readonly status: QuotaStatus,
  ) {
    super(quotaMessage(requested, status));
    this.name = "QuotaExceededError";
  }
}

function quotaMessage(requested: number | null, s: QuotaStatus): string {
  if (s.remaining === 0) {
    return `the token quota of this API key is used up: ${s.used} of its ${s.quota} tokens generated`;
  }
  const held = s.reserved > 0 ? `, ${s.reserved} reserved by its requests in progress` : "";
  const advice =
    s.available > 0
      ? `a request that may generate at most ${s.available} tokens would be admitted`
      : "retry when its requests in progress have finished";
  return (
    `this request may generate up to ${requested ?? 0} tokens (its maximum tokens × choices), more than the ${s.available} ` +
    `left of this API key's token quota (${s.quota} tokens, ${s.used} used${held}); ${advice}`
  );
}

/** A generation's hold on part of its key's quota, from admission until its tokens are charged. */
export interface TokenReservation {
  readonly keyId: number;
  readonly tokens: number;
}

/** The tokens reserved per key by generations in progress; each hold is given back once. */
export class ReservationLedger {
  private readonly held = new Map<number, number>();
  private readonly active = new Set<TokenReservation>();

  reservedFor(keyId: number): number {
    return this.held.get(keyId) ?? 0;
  }

  /** Holds in progress, all keys together. */
  get size(): number {
    return this.active.size;
  }

  hold(keyId: number, tokens: number): TokenReservation {
    const reservation: TokenReservation = { keyId, tokens };
    this.active.add(reservation);
    if (tokens > 0) this.held.set(keyId, this.reservedFor(keyId) + tokens);
    return reservation;
  }

  /** Gives the hold back; a reservation released already (or not from this ledger) changes nothing. */
  release(reservation: TokenReservation): void {
    if (!this.active.delete(reservation) || reservation.tokens === 0) return;
    const left = this.reservedFor(reservation.keyId) - reservation.tokens;
    if (left > 0) this.held.set(reservation.keyId, left);
    else this.held.delete(reservation.keyId);
  }
}

/**
 * Admits a generation against a key's quota (both stores): holds `tokens` in the ledger, or
 * throws QuotaExceededError when the key is exhausted or fewer are available; `tokens` undefined
 * holds nothing and checks only exhaustion. Null when the key has no quota (`status()` null).
 */
export function reserveWithin(
  ledger: ReservationLedger,
  keyId: number,
  tokens: number | undefined,
  status: () => QuotaStatus | null,
): TokenReservation | null {
  if (tokens !== undefined && !(Number.isSafeInteger(tokens) && tokens >= 0)) {
    throw new RangeError(`tokens to reserve must be a whole number ≥ 0, got ${tokens}`);
  }
  const now = status();
  if (!now) return null;
  if (now.remaining === 0 || (tokens !== undefined && tokens > now.available)) throw new QuotaExceededError(keyId, tokens ?? null, now);
  return ledger.hold(keyId, tokens ?? 0);
}
