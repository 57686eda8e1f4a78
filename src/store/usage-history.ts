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

/**
 * The history query of both dialects: hourly rows from an hour on (parameter 1), of one key
 * (parameter 2) or summed over all. `param(n)` writes the dialect's placeholder.
 */
export function historyQuery(forOneKey: boolean, param: (n: number) => string): string {
  const sums = HOUR_COUNTERS.map(([field, column]) => `sum(${column}) AS "${field}"`).join(", ");
  const key = forOneKey ? ` AND key_id = ${param(2)}` : "";
  return `SELECT hour, ${sums} FROM usage_hourly WHERE hour >= ${param(1)}${key} GROUP BY hour`;
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
