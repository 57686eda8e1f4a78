/**
 * Usage over time, for the dashboard's charts: the hourly rows both stores keep (usage_hourly),
 * summed into hourly buckets (the last 48 hours) or daily ones (the last 90 days, UTC), every
 * bucket present, oldest first, with the usage not written yet counted in.
 */
import { HOUR_COUNTERS, addHour, emptyHour, hourOf, type HourUsage } from "./usage-ledger.js";

export type UsageBucketSize = "hour" | "day";

export const USAGE_BUCKETS: Record<UsageBucketSize, { count: number; ms: number }> = {
  hour: { count: 48, ms: 3_600_000 },
  day: { count: 90, ms: 86_400_000 },
};

/** One bucket: its first instant, ISO 8601 UTC ("2026-11-26T06:00:00Z"), and its counts. */
export interface UsagePoint extends HourUsage {
  start: string;
}

/** A stored hour of usage, as the history query reads it. */
export type HourRow = HourUsage & { hour: string };

/** A usage history read, as both dialects run it: the query, its parameters, and what makes the points of its rows. */
export interface UsageHistoryRead {
  sql: string;
  params: unknown[];
  points(rows: readonly HourRow[]): UsagePoint[];
}

/**
 * The history of one key (`keyId`) or all, in `bucket`s ending at `nowMs`: hourly rows from the
 * oldest bucket on, summed per hour, plus the usage not written yet. `param(n)` writes the
 * dialect's n-th placeholder ("?" or "$n").
 */
export function usageHistoryRead(
  bucket: UsageBucketSize,
  options: { keyId?: number; nowMs?: number },
  pendingHours: (keyId?: number) => Iterable<readonly [string, HourUsage]>,
  param: (n: number) => string,
): UsageHistoryRead {
  const nowMs = options.nowMs ?? Date.now();
  const from = hourKey(historyStartMs(bucket, nowMs));
  const sums = HOUR_COUNTERS.map(([field, column]) => `sum(${column}) AS "${field}"`).join(", ");
  const forOneKey = options.keyId !== undefined;
  return {
    sql: `SELECT hour, ${sums} FROM usage_hourly WHERE hour >= ${param(1)}${forOneKey ? ` AND key_id = ${param(2)}` : ""} GROUP BY hour`,
    params: forOneKey ? [from, options.keyId] : [from],
    points: (rows) => usageBuckets(bucket, nowMs, rows, pendingHours(options.keyId)),
  };
}

/** The first instant of the oldest bucket shown: rows from it on are read. */
export function historyStartMs(bucket: UsageBucketSize, nowMs: number): number {
  const { count, ms } = USAGE_BUCKETS[bucket];
  return (Math.floor(nowMs / ms) - (count - 1)) * ms;
}

/** The row key of the hour an epoch-ms instant falls in, as usage_hourly stores it. */
export function hourKey(ms: number): string {
  return hourOf(new Date(ms).toISOString());
}

/** Sums stored hourly rows and pending hours into the buckets ending now. */
export function usageBuckets(
  bucket: UsageBucketSize,
  nowMs: number,
  rows: readonly HourRow[],
  pending: Iterable<readonly [string, HourUsage]>,
): UsagePoint[] {
  const { count, ms } = USAGE_BUCKETS[bucket];
  const startMs = historyStartMs(bucket, nowMs);
  const points: UsagePoint[] = [];
  for (let i = 0; i < count; i++) {
    // Bucket starts are whole hours (or whole days, whose hour is 00), so the hour key names them.
    points.push({ start: hourKey(startMs + i * ms), ...emptyHour() });
  }
  const add = (hour: string, usage: HourUsage): void => {
    const index = Math.floor((Date.parse(hour) - startMs) / ms);
    if (index >= 0 && index < count) addHour(points[index]!, usage);
  };
  for (const row of rows) add(row.hour, row);
  for (const [hour, usage] of pending) add(hour, usage);
  return points;
}
