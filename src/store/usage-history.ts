/**
 * Usage over time, for the dashboard's charts: the hourly rows both stores keep (usage_hourly),
 * summed into hourly buckets (the last 48 hours) or daily ones (the last 90 days, UTC), every
 * bucket present, oldest first, with the usage not written yet counted in.
 */
import { hourOf, type HourUsage } from "./usage-ledger.js";

export type UsageBucketSize = "hour" | "day";

export const USAGE_BUCKETS: Record<UsageBucketSize, { count: number; ms: number }> = {
  hour: { count: 48, ms: 3_600_000 },
  day: { count: 90, ms: 86_400_000 },
};

export interface UsagePoint {
  /** The bucket's first instant, ISO 8601 UTC ("2026-11-26T06:00:00Z"). */
  start: string;
  requests: number;
  tokens: number;
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
export function usageBuckets(bucket: UsageBucketSize, nowMs: number, hours: Iterable<readonly [string, HourUsage]>): UsagePoint[] {
  const { count, ms } = USAGE_BUCKETS[bucket];
  const startMs = historyStartMs(bucket, nowMs);
  const points: UsagePoint[] = [];
  for (let i = 0; i < count; i++) {
    // Bucket starts are whole hours (or whole days, whose hour is 00), so the hour key names them.
    points.push({ start: hourKey(startMs + i * ms), requests: 0, tokens: 0 });
  }
  for (const [hour, usage] of hours) {
    const index = Math.floor((Date.parse(hour) - startMs) / ms);
    if (index < 0 || index >= count) continue;
    points[index]!.requests += usage.requests;
    points[index]!.tokens += usage.tokens;
  }
  return points;
}
