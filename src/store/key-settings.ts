/**
 * Per-key settings besides the quota: an expiry (an instant, stored as an ISO 8601 UTC string in
 * `expires_at`; from it on the key is refused) and a rate limit (requests per minute, `rate_limit`;
 * it replaces the service-wide limit for that key). NULL in either column: none. The last use of a
 * key is not a setting: it is usage (usage.ts), noted at authentication and written by the flush.
 */

/** Largest per-key rate limit, requests per minute (a million: beyond anything one process serves). */
export const MAX_KEY_RATE_LIMIT = 1_000_000;

/** A setting value the store refuses; `field` names it as the dashboard's API does. */
export class KeySettingError extends Error {
  constructor(
    readonly field: "expires_at" | "rate_limit",
    message: string,
  ) {
    super(message);
    this.name = "KeySettingError";
  }
}

/** The key was found, but its expiry has passed: refused like an invalid key (401). */
export class KeyExpiredError extends Error {
  constructor(
    readonly keyId: number,
    readonly expiresAt: string,
  ) {
    super(`API key expired on ${expiresAt}`);
    this.name = "KeyExpiredError";
  }
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/i;

function validCalendarDate(year: number, month: number, day: number): boolean {
  // Date would roll 2026-02-30 over to March 2; a typo must be refused instead.
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * An expiry as given (CLI, dashboard, library): null (none), a Date, "YYYY-MM-DD" (00:00 UTC of
 * that day) or an ISO 8601 date and time with its offset ("2026-12-31T18:00:00Z",
 * "…+02:00"); the stored form is the instant in UTC, `toISOString()`. A time without an offset is
 * refused: it would mean a different instant on each machine.
 */
export function checkExpiry(value: string | Date | null): string | null {
  if (value === null) return null;
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new KeySettingError("expires_at", "expires_at must be a valid date, got an invalid Date");
    return value.toISOString();
  }
  const text = value.trim();
  const match = DATE_ONLY.exec(text) ?? DATE_TIME.exec(text);
  const refuse = (): never => {
    throw new KeySettingError(
      "expires_at",
      `expires_at must be a date (YYYY-MM-DD) or an ISO 8601 date and time with its offset (2026-12-31T18:00:00Z), got ${JSON.stringify(value)}`,
    );
  };
  if (!match) return refuse();
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (!validCalendarDate(year, month, day)) return refuse();
  if (match[4] !== undefined) {
    const [hour, minute, second] = [Number(match[4]), Number(match[5]), Number(match[6] ?? 0)];
    const [offsetHour, offsetMinute] = [Number(match[7] ?? 0), Number(match[8] ?? 0)];
    if (hour > 23 || minute > 59 || second > 59 || offsetHour > 23 || offsetMinute > 59) return refuse();
  }
  const instant = new Date(match[4] === undefined ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(instant.getTime())) return refuse();
  return instant.toISOString();
}

/** An expiry as typed by an operator: a date or date and time (see checkExpiry), or "none" to clear it. */
export function parseExpiry(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed.toLowerCase() === "none" || trimmed.toLowerCase() === "never") return null;
  return checkExpiry(trimmed);
}

/** Whether a stored expiry has passed at `nowMs` (the key is refused from that instant on). */
export function isExpired(expiresAt: string | null, nowMs: number = Date.now()): boolean {
  return expiresAt !== null && Date.parse(expiresAt) <= nowMs;
}

/** Checks a rate limit: null (the service's limit) or whole requests per minute from 1 to MAX_KEY_RATE_LIMIT. */
export function checkRateLimit(limit: number | null): number | null {
  if (limit === null) return null;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_KEY_RATE_LIMIT) {
    throw new KeySettingError(
      "rate_limit",
      `rate_limit must be a whole number of requests per minute from 1 to ${MAX_KEY_RATE_LIMIT} (or none), got ${String(limit)}`,
    );
  }
  return limit;
}

/** A rate limit as typed by an operator: digits, or "none" to clear it (the service's limit again). */
export function parseRateLimit(text: string): number | null {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "none") return null;
  if (!/^\d+$/.test(trimmed)) {
    throw new KeySettingError(
      "rate_limit",
      `rate_limit must be a whole number of requests per minute (or none), got ${JSON.stringify(text)}`,
    );
  }
  return checkRateLimit(Number(trimmed));
}
